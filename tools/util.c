/* tools/util.c: helpers shared by the kiln subcommands: the error and
 * usage conventions (exit codes 1 and 2, "kiln: ..." messages), option
 * values, --dim lists, model loading by file extension, seeded random
 * tensors, JSON strings, and clocks. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "commands.h"

int tool_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "kiln %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nsee kiln %s --help\n", cmd);
  return KILN_EXIT_USAGE;
}

int tool_fail(kiln_status s) {
  fprintf(stderr, "kiln: %s\n", kiln_status_message(s));
  kiln_status_free(s);
  return KILN_EXIT_FAIL;
}

int tool_opt_value(int argc, char **argv, int *i, const char *name, const char **value) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0)
    return 0;
  if (a[n] == '=') {
    *value = a + n + 1;
    return 1;
  }
  if (a[n] != '\0')
    return 0;
  if (*i + 1 >= argc)
    return -1;
  *value = argv[++*i];
  return 1;
}

bool tool_parse_i64(const char *s, int64_t *out) {
  if (!s || !*s)
    return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

bool tool_parse_u64(const char *s, uint64_t *out) {
  int64_t v;
  if (!tool_parse_i64(s, &v) || v < 0)
    return false;
  *out = (uint64_t)v;
  return true;
}

bool tool_dims_add(tool_dims *d, const char *cmd, const char *text) {
  const char *eq = strchr(text, '=');
  int64_t v;
  if (!eq || eq == text || !tool_parse_i64(eq + 1, &v) || v < 0) {
    tool_usage_error(cmd, "--dim wants NAME=VALUE with VALUE >= 0, got '%s'", text);
    return false;
  }
  if (d->count == 64) {
    tool_usage_error(cmd, "at most 64 --dim options");
    return false;
  }
  /* The name is the text before '='; argv strings are writable. */
  ((char *)eq)[0] = '\0';
  d->names[d->count] = text;
  d->values[d->count] = v;
  d->count++;
  return true;
}

static bool tool_ends_with(const char *s, const char *suffix) {
  size_t ls = strlen(s), lx = strlen(suffix);
  return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

kiln_status tool_load_module(const char *path, const tool_dims *dims, kiln_context *ctx,
                             kiln_module **out) {
  *out = NULL;
  kiln_module *m = NULL;
  if (tool_ends_with(path, ".onnx")) {
    kiln_onnx_options o;
    memset(&o, 0, sizeof o);
    if (dims) {
      o.dim_names = dims->names;
      o.dim_values = dims->values;
      o.dim_count = dims->count;
    }
    o.ctx = ctx;
    KILN_TRY(kiln_onnx_load(path, &o, &m));
  } else {
    KILN_TRY(kiln_module_load_text(path, NULL, &m));
  }
  kiln_status s = kiln_module_verify(m);
  if (s) {
    kiln_module_destroy(m);
    return kiln_status_wrap(s, "%s", path);
  }
  *out = m;
  return NULL;
}

bool tool_exe_partitioned(const kiln_executable *exe) {
  if (kiln_executable_region_count(exe) != 1)
    return true;
  /* One region can still be a partition (KILN_PARTITION_SEED runs even
   * a one-region plan through it): then it is not the executable itself. */
  kiln_region_info r = {.struct_size = sizeof r};
  kiln_status s = kiln_executable_region(exe, 0, &r);
  if (s) {
    kiln_status_free(s);
    return kiln_executable_ir(exe) == NULL;
  }
  return r.exe != exe;
}

void tool_region_names(const kiln_region_info *r, uint32_t max, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (uint32_t k = 0; k < r->node_count && k < max && used + 1 < size; k++) {
    int w = snprintf(buf + used, size - used, "%s%s", k ? ", " : "",
                     r->nodes[k] ? r->nodes[k] : "?");
    if (w < 0)
      break;
    used += (size_t)w;
  }
  if (r->node_count > max && used + 1 < size)
    snprintf(buf + used, size - used, " and %u more", r->node_count - max);
}

double tool_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

uint64_t tool_peak_rss_bytes(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return (uint64_t)ru.ru_maxrss * 1024u; /* Linux reports KiB */
}

const char tool_compile_args_help[] =
    "  --backend LIST        backend to compile for (required; see kiln backends): a\n"
    "                        NAME, NAME:DEVICE (that backend on device DEVICE), or a\n"
    "                        priority list A+B+... of those: each node goes to the\n"
    "                        first entry that runs it natively, else the first that\n"
    "                        runs it after lowering, and the executable runs the\n"
    "                        regions so formed (e.g. picky+cpu, opencl:0+opencl:1;\n"
    "                        docs/partitioning.md)\n"
    "  --function NAME       function of the module to compile (default: the first)\n"
    "  --threads N           worker threads for backends that use them (0 = backend default)\n"
    "  --cpu NAME            target CPU for code-generating backends (default: host)\n"
    "  --cpu-features F      target features, e.g. +avx2,-avx512f (default: host)\n"
    "  --device N            device index for backends with devices (default: backend's)\n"
    "  --device-memory NAME=BYTES[,NAME=BYTES...]\n"
    "                        cap the memory of a device of the backend list (NAME:\n"
    "                        an entry as written, e.g. cpu or opencl:1; BYTES with\n"
    "                        an optional K, M or G, powers of 1024); a node that does\n"
    "                        not fit goes to the next entry that runs it\n"
    "  --dim NAME=VALUE      give symbolic dimension NAME of an ONNX model a value\n"
    "                        (repeatable)\n"
    "  --no-cache            neither read nor write the compile cache (backends that\n"
    "                        keep one: cpu, opencl; folder $KILN_CACHE_DIR, else\n"
    "                        ~/.cache/kiln/BACKEND; KILN_CACHE_DIR=off also disables it)\n";

void tool_compile_args_init(tool_compile_args *a) {
  memset(a, 0, sizeof *a);
  a->opts.struct_size = sizeof a->opts;
  a->opts.device = -1;
}

int tool_compile_arg(const char *cmd, int argc, char **argv, int *i, tool_compile_args *a) {
  static const char *const names[] = {"--backend",      "--function", "--threads", "--cpu",
                                      "--cpu-features", "--device",   "--dim",
                                      "--device-memory"};
  if (strcmp(argv[*i], "--no-cache") == 0) {
    a->opts.flags |= KILN_COMPILE_NO_CACHE;
    return 1;
  }
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    const char *v = NULL;
    int r = tool_opt_value(argc, argv, i, names[k], &v);
    if (r == 0)
      continue;
    if (r < 0)
      return tool_usage_error(cmd, "%s needs a value", names[k]);
    uint64_t u;
    int64_t d;
    switch (k) {
    case 0:
      a->backend = v;
      break;
    case 1:
      a->function = v;
      break;
    case 2:
      if (!tool_parse_u64(v, &u) || u > 4096)
        return tool_usage_error(cmd, "--threads wants a number from 0 to 4096, got '%s'", v);
      a->opts.threads = (uint32_t)u;
      break;
    case 3:
      a->opts.cpu = v;
      break;
    case 4:
      a->opts.cpu_features = v;
      break;
    case 5:
      if (!tool_parse_i64(v, &d) || d < 0 || d > INT32_MAX)
        return tool_usage_error(cmd, "--device wants a device index >= 0, got '%s'", v);
      a->opts.device = (int32_t)d;
      break;
    case 6:
      if (!tool_dims_add(&a->dims, cmd, v))
        return KILN_EXIT_USAGE;
      break;
    case 7:
      /* The list is checked against the backend list by the compile, which
       * knows the entries; here only that there is one. */
      if (!*v)
        return tool_usage_error(cmd, "--device-memory wants NAME=BYTES[,NAME=BYTES...]");
      a->opts.device_memory = v;
      break;
    }
    return 1;
  }
  return 0;
}

/* splitmix64: small, seeded, the same sequence on every machine. */
static uint64_t tool_random_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

kiln_status tool_random_tensor(const char *name, const kiln_type *type, uint64_t *state,
                               kiln_tensor *t) {
  int64_t bytes = kiln_type_bytes(type);
  t->type = *type;
  t->data = malloc(bytes > 0 ? (size_t)bytes : 1);
  if (!t->data)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory for random input '%s' (%lld bytes)",
                            name, (long long)bytes);
  int64_t n = kiln_type_numel(type);
  size_t es = kiln_elem_size(type->elem);
  unsigned char *p = t->data;
  for (int64_t i = 0; i < n; i++, p += es) {
    uint64_t r = tool_random_next(state);
    double u = (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0; /* [-1, 1) */
    switch (type->elem) {
    case KILN_F64:
      memcpy(p, &u, sizeof u);
      break;
    case KILN_F32: {
      float f = (float)u;
      memcpy(p, &f, sizeof f);
      break;
    }
    case KILN_F16: {
      uint16_t h = kiln_f32_to_f16((float)u);
      memcpy(p, &h, sizeof h);
      break;
    }
    case KILN_BF16: {
      uint16_t h = kiln_f32_to_bf16((float)u);
      memcpy(p, &h, sizeof h);
      break;
    }
    default: {
      /* Every integer width and bool: the low byte first (little-endian). */
      memset(p, 0, es);
      p[0] = (unsigned char)(r & 1);
      break;
    }
    }
  }
  return NULL;
}

void tool_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}
