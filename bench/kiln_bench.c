/* bench/kiln_bench.c: the kiln side of bench/run. Loads an ONNX model,
 * compiles it for one backend, feeds it tensors from .npy files, times
 * kiln_run with clock_gettime after warm-up runs, optionally writes the
 * outputs as .npy for the cross-check against ONNX Runtime, and prints one
 * JSON object on stdout. Living in its own process keeps start-up, Python
 * and the other frameworks out of both the timings and ru_maxrss.
 *
 *   kiln_bench --list
 *   kiln_bench MODEL.onnx|MODEL.kir --backend NAME --input NAME=FILE.npy ...
 *              [--dim NAME=VALUE ...] [--threads N] [--warmup N] [--runs N]
 *              [--budget-s S] [--over-budget skip|reduce] [--output-dir DIR]
 *              [--check-only] [--device-memory NAME=BYTES,...] [--regions]
 *
 * --check-only runs the model once (outputs written, no timing loop): the
 * zoo's correctness probe for slow backends. --dim binds a symbolic input
 * dimension, as `kiln run --dim` does. NAME may be a backend list ("cpu+opencl",
 * docs/partitioning.md); --device-memory caps its devices. --regions compiles
 * with profiling (KILN_COMPILE_PROFILE) and adds, per region of the
 * executable, what kiln_executable_region reports and the median of its
 * time in each timed run, and the median of the run time left over once
 * the regions' own times are taken off: the partitioned executable's hand-over
 * between regions (bench/run --partition).
 *
 * Built by bench/run with plain cc against build/libkiln.so; it is not part
 * of the meson build so that a broken benchmark never breaks anyone's build. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "kiln/kiln.h"

#define BENCH_MAX_INPUTS 64

typedef struct bench_args {
  const char *model, *backend, *output_dir;
  const char *in_names[BENCH_MAX_INPUTS], *in_paths[BENCH_MAX_INPUTS];
  int in_count;
  const char *dim_names[BENCH_MAX_INPUTS];
  int64_t dim_values[BENCH_MAX_INPUTS];
  int dim_count;
  int check_only;
  const char *device_memory; /* kiln_compile_options.device_memory */
  int regions;               /* profile and report per-region times */
  int threads, warmup, runs;
  double budget_s; /* 0 = no limit */
  int reduce;      /* over budget: fewer runs (1) or skip (0) */
  int list;
} bench_args;

static double bench_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* VmHWM rather than ru_maxrss: on Linux ru_maxrss survives fork + exec, so
 * it would report at least the size of the Python process that started us. */
static double bench_peak_rss_mb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (f) {
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "VmHWM: %ld", &kib) == 1)
        break;
    fclose(f);
    if (kib >= 0)
      return (double)kib / 1024.0;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0; /* Linux reports KiB */
}

/* JSON strings: kiln messages may hold quotes, backslashes and newlines. */
static void bench_json_string(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c == '\n')
      printf("\\n");
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

/* Reports a failure as JSON (so the driver can put the reason in the
 * table) and frees the status. */
static int bench_fail(const char *stage, kiln_status s) {
  printf("{\"error\": ");
  char buf[64];
  snprintf(buf, sizeof buf, "%s failed (%s)", stage, kiln_code_name(kiln_status_code(s)));
  bench_json_string(buf);
  printf(", \"message\": ");
  bench_json_string(kiln_status_message(s));
  printf(", \"peak_rss_mb\": %.1f}\n", bench_peak_rss_mb());
  kiln_status_free(s);
  return 1;
}

static int bench_usage(const char *why) {
  fprintf(stderr,
          "kiln_bench: %s\nusage: kiln_bench --list\n"
          "       kiln_bench MODEL.onnx|MODEL.kir --backend NAME --input NAME=FILE.npy ...\n"
          "                  [--dim NAME=VALUE ...] [--threads N] [--warmup N] [--runs N]\n"
          "                  [--budget-s S] [--over-budget skip|reduce] [--output-dir DIR]\n"
          "                  [--check-only] [--device-memory NAME=BYTES,...] [--regions]\n",
          why);
  return 2;
}

static int bench_parse(int argc, char **argv, bench_args *a) {
  memset(a, 0, sizeof *a);
  a->warmup = 10;
  a->runs = 50;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "--list")) {
      a->list = 1;
      continue;
    }
    if (!strcmp(o, "--check-only")) {
      a->check_only = 1;
      continue;
    }
    if (!strcmp(o, "--regions")) {
      a->regions = 1;
      continue;
    }
    if (o[0] != '-') {
      a->model = o;
      continue;
    }
    if (!v)
      return bench_usage("an option lacks its value");
    i++;
    if (!strcmp(o, "--backend"))
      a->backend = v;
    else if (!strcmp(o, "--output-dir"))
      a->output_dir = v;
    else if (!strcmp(o, "--device-memory"))
      a->device_memory = v;
    else if (!strcmp(o, "--threads"))
      a->threads = atoi(v);
    else if (!strcmp(o, "--warmup"))
      a->warmup = atoi(v);
    else if (!strcmp(o, "--runs"))
      a->runs = atoi(v);
    else if (!strcmp(o, "--budget-s"))
      a->budget_s = atof(v);
    else if (!strcmp(o, "--over-budget"))
      a->reduce = !strcmp(v, "reduce");
    else if (!strcmp(o, "--input")) {
      const char *eq = strchr(v, '=');
      if (!eq || a->in_count == BENCH_MAX_INPUTS)
        return bench_usage("--input wants NAME=FILE.npy");
      /* argv is writable: split in place. */
      ((char *)eq)[0] = '\0';
      a->in_names[a->in_count] = v;
      a->in_paths[a->in_count++] = eq + 1;
    } else if (!strcmp(o, "--dim")) {
      const char *eq = strchr(v, '=');
      char *end = NULL;
      if (!eq || a->dim_count == BENCH_MAX_INPUTS)
        return bench_usage("--dim wants NAME=VALUE");
      errno = 0;
      long long val = strtoll(eq + 1, &end, 10);
      if (errno || end == eq + 1 || *end || val < 0)
        return bench_usage("--dim wants NAME=VALUE with VALUE a non-negative integer");
      ((char *)eq)[0] = '\0';
      a->dim_names[a->dim_count] = v;
      a->dim_values[a->dim_count++] = (int64_t)val;
    } else
      return bench_usage("unknown option");
  }
  if (!a->list && (!a->model || !a->backend))
    return bench_usage("MODEL and --backend are required");
  if (a->runs < 1 || a->warmup < 0)
    return bench_usage("--runs must be >= 1 and --warmup >= 0");
  return 0;
}

static int bench_list(void) {
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  if (s)
    return bench_fail("context", s);
  printf("{\"backends\": [");
  uint32_t n = kiln_context_backend_count(ctx);
  for (uint32_t i = 0; i < n; i++) {
    kiln_backend_info bi;
    s = kiln_context_backend(ctx, i, &bi);
    if (s) {
      kiln_status_free(s);
      continue;
    }
    printf("%s{\"name\": ", i ? ", " : "");
    bench_json_string(bi.name);
    printf(", \"version\": ");
    bench_json_string(bi.version);
    printf(", \"path\": ");
    bench_json_string(bi.path);
    printf(", \"devices\": %u}", bi.device_count);
  }
  printf("], \"refused\": [");
  uint32_t r = kiln_context_refused_count(ctx);
  for (uint32_t i = 0; i < r; i++) {
    const char *path = NULL, *reason = NULL;
    kiln_context_refused(ctx, i, &path, &reason);
    printf("%s{\"path\": ", i ? ", " : "");
    bench_json_string(path);
    printf(", \"reason\": ");
    bench_json_string(reason);
    printf("}");
  }
  printf("]}\n");
  kiln_context_destroy(ctx);
  return 0;
}

static int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Linear interpolation between order statistics, as numpy's default. */
static double bench_quantile(const double *sorted, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)pos;
  int hi = lo + 1 < n ? lo + 1 : lo;
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

typedef struct bench_state {
  kiln_context *ctx;
  kiln_module *mod;
  kiln_executable *exe;
  kiln_tensor inputs[BENCH_MAX_INPUTS];
  const void **in_ptrs;
  void **out_ptrs;
  uint32_t n_in, n_out;
  double *times;
  uint32_t n_regions;
  double *region_ms; /* [run][region]: each region's time in each timed run */
  double *left_ms;   /* [run]: run time minus the regions' critical path */
} bench_state;

static void bench_state_free(bench_state *st) {
  if (st->out_ptrs)
    for (uint32_t i = 0; i < st->n_out; i++)
      free(st->out_ptrs[i]);
  free(st->out_ptrs);
  free((void *)st->in_ptrs);
  free(st->times);
  free(st->region_ms);
  free(st->left_ms);
  for (int i = 0; i < BENCH_MAX_INPUTS; i++)
    kiln_tensor_free(&st->inputs[i]);
  kiln_executable_destroy(st->exe);
  kiln_module_destroy(st->mod);
  kiln_context_destroy(st->ctx);
}

/* Matches every executable input with a --input file, by name, and checks
 * that type and shape agree. */
static kiln_status bench_bind(bench_state *st, const bench_args *a) {
  st->n_in = kiln_executable_input_count(st->exe);
  st->n_out = kiln_executable_output_count(st->exe);
  st->in_ptrs = calloc(st->n_in ? st->n_in : 1, sizeof *st->in_ptrs);
  st->out_ptrs = calloc(st->n_out ? st->n_out : 1, sizeof *st->out_ptrs);
  if (!st->in_ptrs || !st->out_ptrs)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "kiln_bench: no memory for %u inputs", st->n_in);
  for (uint32_t i = 0; i < st->n_in; i++) {
    kiln_io_info io;
    kiln_executable_input(st->exe, i, &io);
    int k = 0;
    while (k < a->in_count && strcmp(a->in_names[k], io.name) != 0)
      k++;
    if (k == a->in_count)
      return kiln_status_make(KILN_NOT_FOUND, "kiln_bench: model input '%s' has no --input",
                              io.name);
    KILN_TRY(kiln_tensor_read_npy(a->in_paths[k], &st->inputs[i]));
    if (!kiln_type_equal(&st->inputs[i].type, &io.type)) {
      char want[160], got[160];
      kiln_type_format(&io.type, want, sizeof want);
      kiln_type_format(&st->inputs[i].type, got, sizeof got);
      return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_bench: input '%s' wants %s, %s holds %s",
                              io.name, want, a->in_paths[k], got);
    }
    st->in_ptrs[i] = st->inputs[i].data;
  }
  for (uint32_t i = 0; i < st->n_out; i++) {
    kiln_io_info io;
    kiln_executable_output(st->exe, i, &io);
    int64_t bytes = kiln_type_bytes(&io.type);
    st->out_ptrs[i] = calloc((size_t)(bytes > 0 ? bytes : 1), 1);
    if (!st->out_ptrs[i])
      return kiln_status_make(KILN_OUT_OF_MEMORY, "kiln_bench: no memory for output '%s'", io.name);
  }
  return NULL;
}

static kiln_status bench_write_outputs(const bench_state *st, const char *dir) {
  for (uint32_t i = 0; i < st->n_out; i++) {
    kiln_io_info io;
    kiln_executable_output(st->exe, i, &io);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, io.name);
    for (char *c = path + strlen(dir) + 1; *c; c++)
      if (*c == '/')
        *c = '_';
    kiln_tensor t = {io.type, st->out_ptrs[i], NULL};
    KILN_TRY(kiln_tensor_write_npy(path, &t));
  }
  return NULL;
}

/* After timed run `run` (wall time wall_ms): each region's time, and what
 * is left of the run once the regions' critical path is taken off. Regions
 * of one level on different entries run side by side, those of one entry
 * one after another (core/partition.c), so the path is, over the levels,
 * the largest per-entry sum. */
static kiln_status bench_region_sample(bench_state *st, int run, double wall_ms) {
  double path = 0;
  double *row = st->region_ms + (size_t)run * st->n_regions;
  uint32_t max_level = 0;
  kiln_region_info info[256];
  for (uint32_t r = 0; r < st->n_regions; r++) {
    memset(&info[r], 0, sizeof info[r]);
    info[r].struct_size = sizeof info[r];
    KILN_TRY(kiln_executable_region(st->exe, r, &info[r]));
    row[r] = (double)info[r].last_run_ns * 1e-6;
    max_level = info[r].level > max_level ? info[r].level : max_level;
  }
  for (uint32_t L = 0; L <= max_level; L++) {
    double worst = 0;
    for (uint32_t r = 0; r < st->n_regions; r++) {
      if (info[r].level != L)
        continue;
      double sum = 0; /* this region's entry, at this level */
      for (uint32_t q = 0; q < st->n_regions; q++)
        if (info[q].level == L && !strcmp(info[q].placement, info[r].placement))
          sum += row[q];
      worst = sum > worst ? sum : worst;
    }
    path += worst;
  }
  st->left_ms[run] = wall_ms - path;
  return NULL;
}

/* The --regions part of the JSON line: one object per region, then the
 * medians of the leftover time. */
static kiln_status bench_print_regions(const bench_state *st, int runs) {
  double *col = malloc(sizeof(double) * (size_t)runs);
  if (!col)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "kiln_bench: no memory for region times");
  printf(", \"regions\": [");
  for (uint32_t r = 0; r < st->n_regions; r++) {
    kiln_region_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    kiln_status s = kiln_executable_region(st->exe, r, &info);
    if (s) {
      free(col);
      return s;
    }
    for (int i = 0; i < runs; i++)
      col[i] = st->region_ms[(size_t)i * st->n_regions + r];
    qsort(col, (size_t)runs, sizeof(double), bench_cmp_double);
    printf("%s{\"backend\": ", r ? ", " : "");
    bench_json_string(info.backend);
    printf(", \"placement\": ");
    bench_json_string(info.placement);
    printf(", \"level\": %u, \"nodes\": %u, \"weight_bytes\": %llu, "
           "\"activation_bytes\": %llu, \"bytes_in\": %llu, \"bytes_out\": %llu, "
           "\"median_ms\": %.4f}",
           info.level, info.node_count, (unsigned long long)info.weight_bytes,
           (unsigned long long)info.activation_bytes, (unsigned long long)info.bytes_in,
           (unsigned long long)info.bytes_out, bench_quantile(col, runs, 0.5));
  }
  memcpy(col, st->left_ms, sizeof(double) * (size_t)runs);
  qsort(col, (size_t)runs, sizeof(double), bench_cmp_double);
  printf("], \"left_median_ms\": %.4f, \"left_min_ms\": %.4f, \"left_max_ms\": %.4f",
         bench_quantile(col, runs, 0.5), col[0], col[runs - 1]);
  free(col);
  return NULL;
}

static int bench_model(const bench_args *a) {
  bench_state st;
  memset(&st, 0, sizeof st);
  kiln_status s = kiln_context_create(&st.ctx);
  if (s)
    return bench_fail("context", s);

  double t0 = bench_now_ms();
  kiln_onnx_options lo;
  memset(&lo, 0, sizeof lo);
  lo.ctx = st.ctx;
  lo.dim_names = a->dim_names;
  lo.dim_values = a->dim_values;
  lo.dim_count = (uint32_t)a->dim_count;
  size_t ml = strlen(a->model);
  if (ml > 4 && strcmp(a->model + ml - 4, ".kir") == 0) /* a quantized model, say */
    s = kiln_module_load_text(a->model, NULL, &st.mod);
  else
    s = kiln_onnx_load(a->model, &lo, &st.mod);
  const char *stage = s ? "load" : "compile";
  double t1 = bench_now_ms();
  kiln_compile_options co;
  memset(&co, 0, sizeof co);
  co.struct_size = sizeof co;
  co.threads = (uint32_t)(a->threads > 0 ? a->threads : 0);
  co.device = -1;
  co.device_memory = a->device_memory;
  if (a->regions)
    co.flags |= KILN_COMPILE_PROFILE;
  /* The module is not needed after the compile: handing it over lets the
   * compile free each weight it folds or packs, as `kiln run` does. */
  if (!s)
    s = kiln_compile_take(st.ctx, &st.mod, NULL, a->backend, &co, &st.exe);
  double t2 = bench_now_ms();
  if (s) {
    bench_state_free(&st);
    return bench_fail(stage, s);
  }
  double rss_compiled = bench_peak_rss_mb();
  s = bench_bind(&st, a);
  if (s) {
    bench_state_free(&st);
    return bench_fail("bind", s);
  }

  /* One probe run decides whether the budget allows the full protocol:
   * the interpreter is far too slow for the large models. */
  double p0 = bench_now_ms();
  s = kiln_run(st.exe, st.in_ptrs, st.out_ptrs);
  double probe = bench_now_ms() - p0;
  if (s) {
    bench_state_free(&st);
    return bench_fail("run", s);
  }
  if (a->output_dir) {
    s = bench_write_outputs(&st, a->output_dir);
    if (s) {
      bench_state_free(&st);
      return bench_fail("writing outputs", s);
    }
  }
  if (a->check_only) {
    printf("{\"backend\": ");
    bench_json_string(a->backend);
    printf(", \"checked\": true, \"probe_ms\": %.3f, \"load_ms\": %.3f, \"compile_ms\": %.3f, "
           "\"peak_rss_compiled_mb\": %.1f, \"peak_rss_mb\": %.1f}\n",
           probe, t1 - t0, t2 - t1, rss_compiled, bench_peak_rss_mb());
    bench_state_free(&st);
    return 0;
  }
  int warmup = a->warmup, runs = a->runs;
  double need_s = probe * (warmup + runs) / 1e3;
  if (a->budget_s > 0 && need_s > a->budget_s && a->reduce) {
    /* A slow compiled backend still gets a number, from fewer runs (the
     * report shows the count), rather than none. */
    warmup = warmup < 2 ? warmup : 2;
    runs = (int)(a->budget_s * 1e3 / (probe > 0 ? probe : 1)) - warmup;
    runs = runs < 5 ? 5 : runs > a->runs ? a->runs : runs;
  } else if (a->budget_s > 0 && need_s > a->budget_s) {
    printf("{\"skipped\": \"one run took %.1f ms; %d runs would need %.0f s, over the %.0f s "
           "budget\", \"probe_ms\": %.3f, \"load_ms\": %.3f, \"compile_ms\": %.3f, "
           "\"peak_rss_mb\": %.1f}\n",
           probe, a->warmup + a->runs, need_s, a->budget_s, probe, t1 - t0, t2 - t1,
           bench_peak_rss_mb());
    bench_state_free(&st);
    return 0;
  }

  st.times = malloc(sizeof(double) * (size_t)runs);
  if (a->regions) {
    st.n_regions = kiln_executable_region_count(st.exe);
    if (st.n_regions > 256) {
      bench_state_free(&st);
      return bench_fail("regions", kiln_status_make(KILN_OUT_OF_RANGE,
                                                    "kiln_bench: %u regions (at most 256)",
                                                    kiln_executable_region_count(st.exe)));
    }
    st.region_ms = malloc(sizeof(double) * (size_t)runs * (st.n_regions ? st.n_regions : 1));
    st.left_ms = malloc(sizeof(double) * (size_t)runs);
  }
  if (!st.times || (a->regions && (!st.region_ms || !st.left_ms))) {
    bench_state_free(&st);
    return bench_fail("timing", kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for times"));
  }
  for (int i = 0; i < warmup + runs; i++) {
    double r0 = bench_now_ms();
    s = kiln_run(st.exe, st.in_ptrs, st.out_ptrs);
    double r1 = bench_now_ms();
    if (s) {
      bench_state_free(&st);
      return bench_fail("run", s);
    }
    if (i >= warmup)
      st.times[i - warmup] = r1 - r0;
    if (i >= warmup && a->regions) {
      s = bench_region_sample(&st, i - warmup, r1 - r0);
      if (s) {
        bench_state_free(&st);
        return bench_fail("regions", s);
      }
    }
  }
  qsort(st.times, (size_t)runs, sizeof(double), bench_cmp_double);
  const double *t = st.times;
  int n = runs;
  printf("{\"backend\": ");
  bench_json_string(a->backend);
  printf(", \"load_ms\": %.3f, \"compile_ms\": %.3f, \"runs\": %d, \"warmup\": %d, "
         "\"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, \"p25_ms\": %.4f, "
         "\"p75_ms\": %.4f, \"peak_rss_compiled_mb\": %.1f, \"peak_rss_mb\": %.1f",
         t1 - t0, t2 - t1, n, warmup, bench_quantile(t, n, 0.5), t[0], t[n - 1],
         bench_quantile(t, n, 0.25), bench_quantile(t, n, 0.75), rss_compiled, bench_peak_rss_mb());
  if (a->regions) {
    s = bench_print_regions(&st, n);
    if (s) {
      /* the line so far is no JSON object: end it as one that says why */
      printf(", \"error\": ");
      bench_json_string(kiln_status_message(s));
      kiln_status_free(s);
    }
  }
  printf("}\n");
  bench_state_free(&st);
  return 0;
}

int main(int argc, char **argv) {
  bench_args a;
  int rc = bench_parse(argc, argv, &a);
  if (rc)
    return rc;
  return a.list ? bench_list() : bench_model(&a);
}
