/* tools/conformance.c: `kiln conformance`, the ONNX backend-test runner,
 * and its generated suite (--generate: random graphs from tools/graphgen.c,
 * each backend compared with the interpreter's outputs).
 * A case is a folder with model.onnx and test_data_set_N/{input,output}_K.pb.
 * Each case runs in a forked child (a crash or hang costs one case, not the
 * run); the child reports one line per backend through a pipe: PASS, FAIL
 * with the first mismatch, or SKIP with the reason (unsupported operator or
 * type). The parent schedules --jobs children, enforces --timeout, prints
 * progress and a per-backend summary, and checks an expected-failures list
 * that may only shrink. A "backend" here is a configuration: one backend or
 * a list the core partitions the model over (vendor+cpu, opencl:0+cpu). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "graphgen.h"

#define CONF_MAX_BACKENDS 8
#define CONF_MAX_IO 64
#define CONF_MAX_DEVICE_MEMORY 1024 /* bytes of --device-memory */

typedef enum { R_PASS, R_FAIL, R_SKIP, R_CRASH, R_TIMEOUT, R_COUNT } conf_rc;
static const char *const conf_rc_names[R_COUNT] = {"PASS", "FAIL", "SKIP", "CRASH", "TIMEOUT"};

typedef struct conf_result {
  conf_rc rc;
  char *detail;
} conf_result;

typedef struct conf_case {
  char *name, *dir, *suite; /* dir is NULL for a generated case */
  conf_result res[CONF_MAX_BACKENDS];
  bool done;
  bool generated;
  uint32_t index; /* graph number within the --seed family */
} conf_case;

typedef struct conf_tol {
  char *name;
  double rtol, atol;
} conf_tol;

typedef struct conf_xfail {
  char *backend, *name, *reason;
  bool seen;
} conf_xfail;

typedef struct conf_args {
  const char *backends[CONF_MAX_BACKENDS];
  uint32_t n_backends;
  const char *suites[64];
  uint32_t n_suites;
  const char *filter, *json, *xfail_path, *tol_path, *against;
  uint64_t jobs, timeout;
  char *backend_list; /* owned copy split in place */
  /* The generated suite. */
  bool generate;
  uint64_t n_generate, seed;
  const char *repro_dir;
  tool_compile_args compile; /* --threads, --cpu, ... (backend is unused) */
} conf_args;

typedef struct conf_run {
  conf_args a;
  conf_case *cases;
  size_t n_cases, cap_cases;
  conf_tol *tols;
  size_t n_tols;
  conf_xfail *xf;
  size_t n_xf;
  kiln_context *ctx;
} conf_run;

/* ---------------------------------------------------------------------
 * Small helpers. */
static char *conf_strdup(const char *s) {
  char *r = strdup(s ? s : "");
  if (!r) {
    fprintf(stderr, "kiln conformance: out of memory\n");
    _exit(KILN_EXIT_FAIL);
  }
  return r;
}

static char *conf_path(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = malloc(n);
  if (!p) {
    fprintf(stderr, "kiln conformance: out of memory\n");
    _exit(KILN_EXIT_FAIL);
  }
  snprintf(p, n, "%s/%s", a, b);
  return p;
}

static bool conf_is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int conf_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A message on one line, without tabs (the pipe protocol is line based). */
static void conf_flatten(char *s) {
  for (; *s; s++)
    if (*s == '\n' || *s == '\t' || *s == '\r')
      *s = ' ';
}

/* ---------------------------------------------------------------------
 * Configurations: a backend, or a `+` list of entries NAME[:DEVICE] that
 * the core partitions the model over. */

/* Does NAME (nl bytes) of --device-memory name list entry e (el bytes)?
 * As the core reads it: as written, or "opencl" for "opencl:0" and back. */
static bool conf_entry_match(const char *name, size_t nl, const char *e, size_t el) {
  if (nl == el && !memcmp(name, e, nl))
    return true;
  if (el == nl + 2 && !memcmp(e, name, nl) && !memcmp(e + nl, ":0", 2))
    return true;
  return nl == el + 2 && !memcmp(name, e, el) && !memcmp(name + el, ":0", 2);
}

static bool conf_config_has(const char *config, const char *name, size_t nl) {
  for (const char *p = config;;) {
    const char *end = strchr(p, '+');
    if (conf_entry_match(name, nl, p, end ? (size_t)(end - p) : strlen(p)))
      return true;
    if (!end)
      return false;
    p = end + 1;
  }
}

/* The items of --device-memory (dm) that name entries of config, into buf
 * (CONF_MAX_DEVICE_MEMORY bytes); NULL when none does. One --device-memory
 * serves every configuration and the interpreter reference, while the
 * core refuses a name that is not in the list it compiles for. */
static const char *conf_device_memory(const char *dm, const char *config, char *buf) {
  size_t len = 0;
  for (const char *q = dm; q && *q;) {
    const char *end = strchr(q, ',');
    size_t sl = end ? (size_t)(end - q) : strlen(q);
    const char *eq = memchr(q, '=', sl);
    if (eq && conf_config_has(config, q, (size_t)(eq - q)) &&
        len + sl + 2 <= CONF_MAX_DEVICE_MEMORY) {
      if (len)
        buf[len++] = ',';
      memcpy(buf + len, q, sl);
      len += sl;
      buf[len] = '\0';
    }
    if (!end)
      break;
    q = end + 1;
  }
  return len ? buf : NULL;
}

/* Before any case runs, so that a typo is one usage error rather than a
 * failure per case: every entry of the configuration names a loaded
 * backend, with an optional :DEVICE number (whether that device exists is
 * the core's to say, at compile time). */
static int conf_check_config(kiln_context *ctx, const char *config) {
  for (const char *p = config;;) {
    const char *end = strchr(p, '+');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *colon = memchr(p, ':', len);
    size_t nl = colon ? (size_t)(colon - p) : len;
    char name[128];
    if (nl == 0 || nl >= sizeof name)
      return tool_usage_error("conformance",
                              "configuration '%s' has an empty or overlong entry (write A+B, "
                              "each a backend name with an optional :DEVICE)",
                              config);
    memcpy(name, p, nl);
    name[nl] = '\0';
    if (colon) {
      size_t dl = len - nl - 1;
      bool digits = dl > 0 && dl < 10;
      for (size_t i = 0; digits && i < dl; i++)
        digits = colon[1 + i] >= '0' && colon[1 + i] <= '9';
      if (!digits)
        return tool_usage_error("conformance",
                                "configuration '%s': the device after '%s:' must be a number "
                                "(e.g. %s:0)",
                                config, name, name);
    }
    if (!kiln_context_find_backend(ctx, name))
      return strcmp(name, config) == 0
                 ? tool_usage_error("conformance", "unknown backend '%s' (see kiln backends)",
                                    name)
                 : tool_usage_error("conformance",
                                    "unknown backend '%s' in configuration '%s' (see kiln "
                                    "backends)",
                                    name, config);
    if (!end)
      return 0;
    p = end + 1;
  }
}

/* "12", "64K", "3M", "1G", as the core reads a device's bytes. */
static bool conf_is_bytes(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9')
    i++;
  if (i == 0)
    return false;
  return i == n || (i + 1 == n && strchr("KkMG", s[i]));
}

/* Each item of --device-memory is NAME=BYTES and names an entry of some
 * configuration (else the cap would silently apply to nothing). */
static int conf_check_device_memory(const conf_args *a) {
  const char *dm = a->compile.opts.device_memory;
  if (dm && strlen(dm) >= CONF_MAX_DEVICE_MEMORY)
    return tool_usage_error("conformance", "--device-memory is longer than %d bytes",
                            CONF_MAX_DEVICE_MEMORY - 1);
  for (const char *q = dm; q && *q;) {
    const char *end = strchr(q, ',');
    size_t sl = end ? (size_t)(end - q) : strlen(q);
    const char *eq = memchr(q, '=', sl);
    if (!eq || eq == q || !conf_is_bytes(eq + 1, sl - (size_t)(eq - q) - 1))
      return tool_usage_error("conformance",
                              "--device-memory '%.*s': write NAME=BYTES, e.g. cpu=64M (K, M, G "
                              "are powers of 1024)",
                              (int)sl, q);
    bool found = false;
    for (uint32_t b = 0; b < a->n_backends && !found; b++)
      found = conf_config_has(a->backends[b], q, (size_t)(eq - q));
    if (!found)
      return tool_usage_error("conformance",
                              "--device-memory '%.*s': no configuration of --backend has an "
                              "entry '%.*s'",
                              (int)sl, q, (int)(eq - q), q);
    if (!end)
      break;
    q = end + 1;
  }
  return 0;
}

/* ---------------------------------------------------------------------
 * Argument parsing. */
static const char conf_help[] =
    "usage: kiln conformance --backend CONFIG[,CONFIG...] --suite DIR [--suite DIR...]\n"
    "                        [--filter REGEX] [--json FILE] [--jobs N] [--timeout SEC]\n"
    "                        [--expected-failures FILE] [--tolerances FILE]\n"
    "                        [--against interpreter]\n"
    "       kiln conformance --backend CONFIG[,CONFIG...] --generate N [--seed S]\n"
    "                        [--repro-dir DIR] [--threads N] [--jobs N] [--json FILE] ...\n"
    "Runs ONNX backend test cases (folders with model.onnx and test_data_set_N/)\n"
    "found in each suite folder, or N random generated graphs, each case in a\n"
    "child process.\n"
    "  --backend CONFIGS   configurations to test, comma-separated; each is a\n"
    "                      backend (cpu), a backend on a device (opencl:1) or a\n"
    "                      priority list the model is partitioned over\n"
    "                      (vendor+cpu, opencl:0+opencl:1+cpu)\n"
    "  --suite DIR         folder of case folders (repeatable)\n"
    "  --filter REGEX      only cases whose name matches (POSIX extended)\n"
    "  --json FILE         write every case's result per backend\n"
    "  --jobs N            run N cases at once (default 1)\n"
    "  --timeout SEC       per case (default 60); overruns count as TIMEOUT\n"
    "  --expected-failures FILE  lines 'backend case  # reason'; the exit status\n"
    "                      is nonzero when an unlisted case fails or a listed case\n"
    "                      passes\n"
    "  --tolerances FILE   lines 'case rtol atol  # reason' (default rtol 1e-3,\n"
    "                      atol 1e-7; NaN matches NaN)\n"
    "  --against interpreter  compare each backend with the interpreter's outputs\n"
    "                      on the test inputs instead of the stored outputs\n"
    "  --generate N        instead of suites: graphs 0..N-1 of the random family\n"
    "                      --seed S (default 1), each run on every backend and\n"
    "                      compared with the interpreter (rtol 1e-3, atol 1e-5;\n"
    "                      f16 rtol 1e-2, bf16 rtol 5e-2)\n"
    "  --seed S            the generated family (default 1)\n"
    "  --repro-dir DIR     where a failing generated case is written as NAME.kir\n"
    "                      and NAME.INPUT.npy (default ./kiln-repro)\n"
    "Compile options passed to every backend (as in kiln compile):\n"
    "  --threads N         worker threads (0 = backend default), e.g. cpu at 1 and 2\n"
    "  --cpu NAME, --cpu-features F, --device N\n"
    "  --device-memory NAME=BYTES,...  cap the memory of list entries (cpu=64K,\n"
    "                      opencl:0=1G); each configuration gets the caps of the\n"
    "                      entries it has, and every NAME must be in one of them\n"
    "  --no-cache          compile every case without the backends' compile cache\n";

static bool conf_is_compile_opt(const char *arg) {
  static const char *const names[] = {"--threads", "--cpu",           "--cpu-features",
                                      "--device",  "--device-memory", "--no-cache"};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    size_t n = strlen(names[k]);
    if (!strncmp(arg, names[k], n) && (arg[n] == '\0' || arg[n] == '='))
      return true;
  }
  return false;
}

static int conf_parse(int argc, char **argv, conf_args *a) {
  a->jobs = 1;
  a->timeout = 60;
  a->seed = 1;
  a->repro_dir = "./kiln-repro";
  tool_compile_args_init(&a->compile);
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(conf_help, stdout);
      return -1;
    }
    if ((r = tool_opt_value(argc, argv, &i, "--generate", &v)) != 0) {
      if (r < 0 || !tool_parse_u64(v, &a->n_generate) || a->n_generate > 10000000)
        return tool_usage_error("conformance", "--generate needs a count from 0 to 10000000");
      a->generate = true;
      continue;
    }
    if ((r = tool_opt_value(argc, argv, &i, "--seed", &v)) != 0) {
      if (r < 0 || !tool_parse_u64(v, &a->seed))
        return tool_usage_error("conformance", "--seed needs a non-negative integer");
      continue;
    }
    if ((r = tool_opt_value(argc, argv, &i, "--repro-dir", &v)) != 0) {
      if (r < 0 || !v[0])
        return tool_usage_error("conformance", "--repro-dir needs a folder");
      a->repro_dir = v;
      continue;
    }
    /* Compile options shared with kiln compile / run (--backend here is
     * a list, and --function / --dim have no meaning for these cases). */
    if (conf_is_compile_opt(argv[i])) {
      r = tool_compile_arg("conformance", argc, argv, &i, &a->compile);
      if (r == 1)
        continue;
      if (r != 0)
        return r;
    }
    if ((r = tool_opt_value(argc, argv, &i, "--backend", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("conformance", "--backend needs a value");
      free(a->backend_list);
      a->backend_list = conf_strdup(v);
      a->n_backends = 0;
      for (char *save = NULL, *t = strtok_r(a->backend_list, ",", &save); t;
           t = strtok_r(NULL, ",", &save)) {
        if (a->n_backends == CONF_MAX_BACKENDS)
          return tool_usage_error("conformance", "at most %d backends", CONF_MAX_BACKENDS);
        /* Results are matched to configurations by name. */
        for (uint32_t b = 0; b < a->n_backends; b++)
          if (!strcmp(a->backends[b], t))
            return tool_usage_error("conformance", "--backend lists '%s' twice", t);
        a->backends[a->n_backends++] = t;
      }
    } else if ((r = tool_opt_value(argc, argv, &i, "--suite", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("conformance", "--suite needs a value");
      if (a->n_suites == 64)
        return tool_usage_error("conformance", "at most 64 suites");
      a->suites[a->n_suites++] = v;
    } else if ((r = tool_opt_value(argc, argv, &i, "--filter", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("conformance", "--filter needs a value");
      a->filter = v;
    } else if ((r = tool_opt_value(argc, argv, &i, "--json", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("conformance", "--json needs a value");
      a->json = v;
    } else if ((r = tool_opt_value(argc, argv, &i, "--expected-failures", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("conformance", "--expected-failures needs a value");
      a->xfail_path = v;
    } else if ((r = tool_opt_value(argc, argv, &i, "--tolerances", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("conformance", "--tolerances needs a value");
      a->tol_path = v;
    } else if ((r = tool_opt_value(argc, argv, &i, "--against", &v)) != 0) {
      if (r < 0 || strcmp(v, "interpreter") != 0)
        return tool_usage_error("conformance", "--against takes 'interpreter'");
      a->against = v;
    } else if ((r = tool_opt_value(argc, argv, &i, "--jobs", &v)) != 0) {
      if (r < 0 || !tool_parse_u64(v, &a->jobs) || a->jobs < 1 || a->jobs > 256)
        return tool_usage_error("conformance", "--jobs needs a number from 1 to 256");
    } else if ((r = tool_opt_value(argc, argv, &i, "--timeout", &v)) != 0) {
      if (r < 0 || !tool_parse_u64(v, &a->timeout) || a->timeout < 1 || a->timeout > 86400)
        return tool_usage_error("conformance", "--timeout needs seconds from 1 to 86400");
    } else {
      return tool_usage_error("conformance", "unknown argument '%s'", argv[i]);
    }
  }
  if (!a->n_backends)
    return tool_usage_error("conformance", "--backend is required");
  if (a->generate && a->n_suites)
    return tool_usage_error("conformance", "--generate and --suite do not go together");
  if (a->generate && a->against)
    return tool_usage_error("conformance",
                            "--generate always compares with the interpreter; drop --against");
  if (!a->n_suites && !a->generate)
    return tool_usage_error("conformance", "at least one --suite (or --generate N) is required");
  return conf_check_device_memory(a);
}

/* ---------------------------------------------------------------------
 * Cases, tolerances, expected failures. */
static int conf_collect(conf_run *R) {
  regex_t re;
  if (R->a.filter && regcomp(&re, R->a.filter, REG_EXTENDED | REG_NOSUB) != 0)
    return tool_usage_error("conformance", "--filter '%s' is not a valid regex", R->a.filter);
  int rc = 0;
  for (uint32_t s = 0; s < R->a.n_suites && !rc; s++) {
    const char *suite = R->a.suites[s];
    DIR *d = opendir(suite);
    if (!d) {
      fprintf(stderr, "kiln conformance: cannot open suite '%s': %s\n", suite, strerror(errno));
      rc = KILN_EXIT_FAIL;
      break;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.')
        continue;
      if (R->a.filter && regexec(&re, e->d_name, 0, NULL, 0) != 0)
        continue;
      char *dir = conf_path(suite, e->d_name);
      char *model = conf_path(dir, "model.onnx");
      bool ok = conf_is_file(model);
      free(model);
      free(dir);
      if (!ok)
        continue;
      if (n == cap) {
        cap = cap ? cap * 2 : 256;
        char **nn = realloc(names, cap * sizeof *nn);
        if (!nn)
          _exit(KILN_EXIT_FAIL);
        names = nn;
      }
      names[n++] = conf_strdup(e->d_name);
    }
    closedir(d);
    if (n)
      qsort(names, n, sizeof *names, conf_cmp_str);
    for (size_t i = 0; i < n; i++) {
      if (R->n_cases == R->cap_cases) {
        R->cap_cases = R->cap_cases ? R->cap_cases * 2 : 1024;
        conf_case *nc = realloc(R->cases, R->cap_cases * sizeof *nc);
        if (!nc)
          _exit(KILN_EXIT_FAIL);
        R->cases = nc;
      }
      conf_case *c = &R->cases[R->n_cases++];
      memset(c, 0, sizeof *c);
      c->name = names[i];
      c->dir = conf_path(suite, names[i]);
      c->suite = conf_strdup(suite);
    }
    free(names);
  }
  if (R->a.filter)
    regfree(&re);
  return rc;
}

/* The generated suite: one case per graph index, named after seed and
 * index so that a failure names what to regenerate. */
static int conf_collect_generated(conf_run *R) {
  regex_t re;
  if (R->a.filter && regcomp(&re, R->a.filter, REG_EXTENDED | REG_NOSUB) != 0)
    return tool_usage_error("conformance", "--filter '%s' is not a valid regex", R->a.filter);
  char suite[64];
  snprintf(suite, sizeof suite, "generated seed %llu", (unsigned long long)R->a.seed);
  for (uint64_t i = 0; i < R->a.n_generate; i++) {
    char name[64];
    snprintf(name, sizeof name, "gen_s%llu_%llu", (unsigned long long)R->a.seed,
             (unsigned long long)i);
    if (R->a.filter && regexec(&re, name, 0, NULL, 0) != 0)
      continue;
    if (R->n_cases == R->cap_cases) {
      R->cap_cases = R->cap_cases ? R->cap_cases * 2 : 1024;
      conf_case *nc = realloc(R->cases, R->cap_cases * sizeof *nc);
      if (!nc)
        _exit(KILN_EXIT_FAIL);
      R->cases = nc;
    }
    conf_case *c = &R->cases[R->n_cases++];
    memset(c, 0, sizeof *c);
    c->name = conf_strdup(name);
    c->suite = conf_strdup(suite);
    c->generated = true;
    c->index = (uint32_t)i;
  }
  if (R->a.filter)
    regfree(&re);
  return 0;
}

/* Read "WORD WORD ...  # comment" lines; calls fn with the words. */
typedef int (*conf_line_fn)(conf_run *R, char **w, int nw, const char *comment, const char *where);

static int conf_read_table(conf_run *R, const char *path, conf_line_fn fn) {
  FILE *fp = fopen(path, "r");
  if (!fp) {
    fprintf(stderr, "kiln conformance: cannot open '%s': %s\n", path, strerror(errno));
    return KILN_EXIT_FAIL;
  }
  char line[2048];
  int lineno = 0, rc = 0;
  while (!rc && fgets(line, sizeof line, fp)) {
    lineno++;
    char *hash = strchr(line, '#');
    const char *comment = "";
    if (hash) {
      *hash = '\0';
      comment = hash + 1;
      while (*comment == ' ')
        comment++;
    }
    char *w[8];
    int nw = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t\r\n", &save); t && nw < 8;
         t = strtok_r(NULL, " \t\r\n", &save))
      w[nw++] = t;
    if (!nw)
      continue;
    char where[1100];
    snprintf(where, sizeof where, "%.1000s:%d", path, lineno);
    char *c = conf_strdup(comment);
    conf_flatten(c);
    size_t cl = strlen(c);
    while (cl && c[cl - 1] == ' ')
      c[--cl] = '\0';
    rc = fn(R, w, nw, c, where);
    free(c);
  }
  fclose(fp);
  return rc;
}

static int conf_tol_line(conf_run *R, char **w, int nw, const char *comment, const char *where) {
  (void)comment;
  char *end1, *end2;
  double rtol = nw == 3 ? strtod(w[1], &end1) : 0, atol = nw == 3 ? strtod(w[2], &end2) : 0;
  if (nw != 3 || *end1 || *end2 || rtol < 0 || atol < 0) {
    fprintf(stderr, "kiln conformance: %s: expected 'case rtol atol  # reason'\n", where);
    return KILN_EXIT_USAGE;
  }
  conf_tol *nt = realloc(R->tols, (R->n_tols + 1) * sizeof *nt);
  if (!nt)
    _exit(KILN_EXIT_FAIL);
  R->tols = nt;
  R->tols[R->n_tols++] = (conf_tol){conf_strdup(w[0]), rtol, atol};
  return 0;
}

static int conf_xf_line(conf_run *R, char **w, int nw, const char *comment, const char *where) {
  if (nw != 2) {
    fprintf(stderr, "kiln conformance: %s: expected 'backend case-name  # reason'\n", where);
    return KILN_EXIT_USAGE;
  }
  conf_xfail *nx = realloc(R->xf, (R->n_xf + 1) * sizeof *nx);
  if (!nx)
    _exit(KILN_EXIT_FAIL);
  R->xf = nx;
  R->xf[R->n_xf++] =
      (conf_xfail){conf_strdup(w[0]), conf_strdup(w[1]), conf_strdup(comment), false};
  return 0;
}

static conf_xfail *conf_find_xf(conf_run *R, const char *backend, const char *name) {
  for (size_t i = 0; i < R->n_xf; i++)
    if (!strcmp(R->xf[i].backend, backend) && !strcmp(R->xf[i].name, name))
      return &R->xf[i];
  return NULL;
}

/* ---------------------------------------------------------------------
 * The child: one case, every backend. */
typedef struct conf_data {
  kiln_tensor in[CONF_MAX_IO], out[CONF_MAX_IO];
  uint32_t n_in, n_out;
} conf_data;

static void conf_data_free(conf_data *d) {
  for (uint32_t i = 0; i < d->n_in; i++)
    kiln_tensor_free(&d->in[i]);
  for (uint32_t i = 0; i < d->n_out; i++)
    kiln_tensor_free(&d->out[i]);
  memset(d, 0, sizeof *d);
}

/* Read input_K.pb / output_K.pb of one data set. */
static kiln_status conf_read_set(const char *set_dir, conf_data *d) {
  memset(d, 0, sizeof *d);
  for (int kind = 0; kind < 2; kind++) {
    for (uint32_t k = 0; k < CONF_MAX_IO; k++) {
      char file[64];
      snprintf(file, sizeof file, "%s_%u.pb", kind ? "output" : "input", k);
      char *p = conf_path(set_dir, file);
      if (!conf_is_file(p)) {
        free(p);
        break;
      }
      kiln_tensor *t = kind ? &d->out[d->n_out] : &d->in[d->n_in];
      kiln_status s = kiln_tensor_read_pb(p, t);
      free(p);
      if (s)
        return s;
      if (kind)
        d->n_out++;
      else
        d->n_in++;
    }
  }
  return NULL;
}

/* Generated graphs are compared with the interpreter, whose float results
 * differ from another backend's by rounding only: atol 1e-5 absorbs values
 * that cancel to near zero (ONNX test data is exact enough for 1e-7). */
static void conf_tolerance(const conf_run *R, const conf_case *c, double *rtol, double *atol) {
  const char *name = c->name;
  *rtol = 1e-3;
  *atol = c->generated ? 1e-5 : 1e-7;
  for (size_t i = 0; i < R->n_tols; i++)
    if (!strcmp(R->tols[i].name, name)) {
      *rtol = R->tols[i].rtol;
      *atol = R->tols[i].atol;
    }
}

/* Compare one output; on mismatch write the reason to msg and return false. */
/* Same element type and dims; test data stores bfloat16 (and sometimes
 * float16) as uint16, which matches bit for bit. */
static bool conf_same_type(const kiln_type *t, const kiln_type *data) {
  kiln_type d = *data;
  if (d.elem == KILN_U16 && (t->elem == KILN_BF16 || t->elem == KILN_F16))
    d.elem = t->elem;
  return kiln_type_same_shape(t, &d);
}

static bool conf_compare(const char *oname, const kiln_type *t, const void *got,
                         const kiln_tensor *want, double rtol, double atol, char *msg, size_t msz) {
  char a[128], b[128];
  if (!conf_same_type(t, &want->type)) {
    kiln_type_format(&want->type, a, sizeof a);
    kiln_type_format(t, b, sizeof b);
    snprintf(msg, msz, "output '%s': expected type %s, got %s", oname, a, b);
    return false;
  }
  int64_t n = kiln_type_numel(t);
  kiln_elem e = t->elem;
  bool fl = kiln_elem_is_float(e);
  int64_t first = -1;
  double fe = 0, fg = 0, maxerr = 0;
  for (int64_t i = 0; i < n; i++) {
    bool ok;
    double x = kiln_elem_load_f64(e, got, i), y = kiln_elem_load_f64(e, want->data, i);
    if (e == KILN_I64 || e == KILN_U64) {
      ok = e == KILN_I64 ? ((const int64_t *)got)[i] == ((const int64_t *)want->data)[i]
                         : ((const uint64_t *)got)[i] == ((const uint64_t *)want->data)[i];
    } else if (!fl) {
      ok = x == y;
    } else if (isnan(y) || isnan(x)) {
      ok = isnan(x) && isnan(y);
    } else if (isinf(y) || isinf(x)) {
      ok = x == y;
    } else {
      double err = fabs(x - y);
      if (err > maxerr)
        maxerr = err;
      ok = err <= atol + rtol * fabs(y);
    }
    if (!ok && first < 0) {
      first = i;
      fe = y;
      fg = x;
    }
    if (!fl && !ok)
      maxerr = fabs(x - y) > maxerr ? fabs(x - y) : maxerr;
  }
  if (first < 0)
    return true;
  snprintf(msg, msz, "output '%s' index %lld: expected %.9g, got %.9g (max abs error %.3g)", oname,
           (long long)first, fe, fg, maxerr);
  return false;
}

/* Load the model for one data set: inputs named in the .pb files are known
 * (their shapes bind symbolic dims; compile-time uses become constants). */
static kiln_status conf_load(conf_run *R, const char *model, const conf_data *d, kiln_module **m) {
  kiln_onnx_options o = {0};
  bool named = d->n_in > 0;
  for (uint32_t i = 0; i < d->n_in; i++)
    named = named && d->in[i].name && d->in[i].name[0];
  if (named) {
    o.known_inputs = d->in;
    o.known_input_count = d->n_in;
  }
  o.ctx = R->ctx;
  KILN_TRY(kiln_onnx_load(model, &o, m));
  kiln_status s = kiln_module_verify(*m);
  if (s) {
    kiln_module_destroy(*m);
    *m = NULL;
  }
  return s;
}

/* Compile and run on configuration `backend`, or for the reference (the
 * interpreter, without device memory caps) when it is NULL; outputs into
 * *outs (malloc'd buffers). */
static kiln_status conf_execute(conf_run *R, const kiln_module *m, const char *backend,
                                const conf_data *d, kiln_executable **exe_out, void ***outs_out) {
  *exe_out = NULL;
  *outs_out = NULL;
  kiln_executable *exe;
  kiln_compile_options opts = R->a.compile.opts;
  char dm[CONF_MAX_DEVICE_MEMORY];
  opts.device_memory = backend ? conf_device_memory(opts.device_memory, backend, dm) : NULL;
  if (!backend)
    backend = "interpreter";
  KILN_TRY(kiln_compile(R->ctx, m, NULL, backend, &opts, &exe));
  uint32_t ni = kiln_executable_input_count(exe), no = kiln_executable_output_count(exe);
  const void *ins[CONF_MAX_IO];
  kiln_status s = NULL;
  if (ni > CONF_MAX_IO || no > CONF_MAX_IO)
    s = kiln_status_make(KILN_OUT_OF_RANGE, "too many inputs or outputs");
  for (uint32_t i = 0; !s && i < ni; i++) {
    kiln_io_info info;
    kiln_executable_input(exe, i, &info);
    const kiln_tensor *t = NULL;
    for (uint32_t k = 0; k < d->n_in; k++)
      if (d->in[k].name && !strcmp(d->in[k].name, info.name))
        t = &d->in[k];
    if (!t && i < d->n_in && (!d->in[i].name || !d->in[i].name[0]))
      t = &d->in[i];
    if (!t) {
      s = kiln_status_make(KILN_NOT_FOUND, "no test data for input '%s'", info.name);
      break;
    }
    if (!conf_same_type(&info.type, &t->type)) {
      char a[128], b[128];
      kiln_type_format(&info.type, a, sizeof a);
      kiln_type_format(&t->type, b, sizeof b);
      s = kiln_status_make(KILN_INVALID_ARGUMENT, "input '%s' is %s but the test data is %s",
                           info.name, a, b);
      break;
    }
    ins[i] = t->data;
  }
  void **outs = calloc(no ? no : 1, sizeof *outs);
  for (uint32_t i = 0; !s && outs && i < no; i++) {
    kiln_io_info info;
    kiln_executable_output(exe, i, &info);
    int64_t bytes = kiln_type_bytes(&info.type);
    outs[i] = calloc(1, bytes > 0 ? (size_t)bytes : 1);
    if (!outs[i])
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "output buffers");
  }
  if (!outs && !s)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "output buffers");
  if (!s)
    s = kiln_run(exe, ins, (void *const *)outs);
  if (s) {
    for (uint32_t i = 0; outs && i < no; i++)
      free(outs[i]);
    free(outs);
    kiln_executable_destroy(exe);
    return s;
  }
  *exe_out = exe;
  *outs_out = outs;
  return NULL;
}

static void conf_free_outs(kiln_executable *exe, void **outs) {
  if (!exe)
    return;
  for (uint32_t i = 0; i < kiln_executable_output_count(exe); i++)
    free(outs[i]);
  free(outs);
  kiln_executable_destroy(exe);
}

static void conf_report(int fd, const char *backend, conf_rc rc, const char *detail) {
  char *d = conf_strdup(detail);
  conf_flatten(d);
  dprintf(fd, "%s\t%s\t%s\n", backend, conf_rc_names[rc], d);
  free(d);
}

/* Compare an executable's outputs with reference tensors (by name, else by
 * position). */
static bool conf_check(conf_run *R, const conf_case *c, kiln_executable *exe, void **outs,
                       const kiln_tensor *want, uint32_t n_want, char *msg, size_t msz) {
  double rtol, atol;
  conf_tolerance(R, c, &rtol, &atol);
  uint32_t no = kiln_executable_output_count(exe);
  for (uint32_t k = 0; k < n_want; k++) {
    int32_t idx = -1;
    if (want[k].name && want[k].name[0])
      idx = kiln_executable_find_output(exe, want[k].name);
    else if (k < no)
      idx = (int32_t)k;
    if (idx < 0) {
      snprintf(msg, msz, "the model has no output '%s'", want[k].name ? want[k].name : "?");
      return false;
    }
    kiln_io_info info;
    kiln_executable_output(exe, (uint32_t)idx, &info);
    /* A generated f16 / bf16 result is rounded to its few mantissa bits on
     * each backend after different float sequences: allow a few units in
     * the last place (2^-10 and 2^-7 relative). */
    double rt = rtol;
    if (c->generated && info.type.elem == KILN_F16)
      rt = fmax(rtol, 1e-2);
    else if (c->generated && info.type.elem == KILN_BF16)
      rt = fmax(rtol, 5e-2);
    if (!conf_compare(info.name, &info.type, outs[idx], &want[k], rt, atol, msg, msz))
      return false;
  }
  return true;
}

/* The inputs of generated graph c: the same for every backend and every
 * run, drawn from seed and index. Moves them into d. */
static uint64_t conf_gen_input_seed(const conf_run *R, const conf_case *c) {
  return R->a.seed * 0x9E3779B97F4A7C15ull + c->index;
}

static kiln_status conf_gen_inputs(const conf_run *R, const conf_case *c, const kiln_module *m,
                                   conf_data *d) {
  memset(d, 0, sizeof *d);
  kiln_tensor *t = NULL;
  uint32_t n = 0;
  KILN_TRY(kiln_graphgen_inputs(m, conf_gen_input_seed(R, c), &t, &n));
  if (n > CONF_MAX_IO) {
    kiln_graphgen_inputs_free(t, n);
    return kiln_status_make(KILN_OUT_OF_RANGE, "%u inputs (at most %d)", n, CONF_MAX_IO);
  }
  for (uint32_t i = 0; i < n; i++)
    d->in[i] = t[i];
  d->n_in = n;
  kiln_free(t); /* the tensors now belong to d */
  return NULL;
}

static conf_rc conf_skip_or_fail(kiln_status s) {
  kiln_code k = kiln_status_code(s);
  return k == KILN_UNIMPLEMENTED || k == KILN_UNAVAILABLE ? R_SKIP : R_FAIL;
}

/* One generated graph on every backend, against the interpreter. The
 * interpreter itself, when listed, passes when the graph compiles and runs:
 * it is its own reference. */
static void conf_gen_child(conf_run *R, const conf_case *c, int fd) {
  conf_rc rc[CONF_MAX_BACKENDS];
  char detail[CONF_MAX_BACKENDS][4096];
  kiln_module *m = NULL;
  conf_data data = {0};
  kiln_status s = kiln_graphgen(R->a.seed, c->index, &m);
  if (!s)
    s = conf_gen_inputs(R, c, m, &data);
  if (s) {
    for (uint32_t b = 0; b < R->a.n_backends; b++) {
      snprintf(detail[b], sizeof detail[b], "graphgen: %s", kiln_status_message(s));
      conf_report(fd, R->a.backends[b], R_FAIL, detail[b]);
    }
    kiln_status_free(s);
    kiln_module_destroy(m);
    conf_data_free(&data);
    return;
  }
  kiln_executable *ref_exe = NULL;
  void **ref_outs = NULL;
  kiln_tensor ref[CONF_MAX_IO];
  uint32_t n_ref = 0;
  kiln_status ref_s = conf_execute(R, m, NULL, &data, &ref_exe, &ref_outs);
  for (uint32_t i = 0; !ref_s && i < kiln_executable_output_count(ref_exe) && i < CONF_MAX_IO;
       i++) {
    kiln_io_info info;
    kiln_executable_output(ref_exe, i, &info);
    ref[n_ref++] = (kiln_tensor){info.type, ref_outs[i], (char *)info.name};
  }
  for (uint32_t b = 0; b < R->a.n_backends; b++) {
    const char *be = R->a.backends[b];
    rc[b] = R_PASS;
    if (!strcmp(be, "interpreter")) {
      if (ref_s) {
        rc[b] = conf_skip_or_fail(ref_s);
        snprintf(detail[b], sizeof detail[b], "%s", kiln_status_message(ref_s));
      } else {
        snprintf(detail[b], sizeof detail[b], "reference: compiled and ran (%u outputs)", n_ref);
      }
      continue;
    }
    if (ref_s) {
      rc[b] = conf_skip_or_fail(ref_s);
      snprintf(detail[b], sizeof detail[b], "interpreter reference: %s",
               kiln_status_message(ref_s));
      continue;
    }
    kiln_executable *exe;
    void **outs;
    s = conf_execute(R, m, be, &data, &exe, &outs);
    if (s) {
      rc[b] = conf_skip_or_fail(s);
      snprintf(detail[b], sizeof detail[b], "%s", kiln_status_message(s));
      kiln_status_free(s);
      continue;
    }
    char msg[1024];
    if (!conf_check(R, c, exe, outs, ref, n_ref, msg, sizeof msg)) {
      rc[b] = R_FAIL;
      snprintf(detail[b], sizeof detail[b], "%s", msg);
    } else {
      snprintf(detail[b], sizeof detail[b], "%u outputs match", n_ref);
    }
    conf_free_outs(exe, outs);
  }
  for (uint32_t b = 0; b < R->a.n_backends; b++)
    conf_report(fd, R->a.backends[b], rc[b], detail[b]);
  kiln_status_free(ref_s);
  conf_free_outs(ref_exe, ref_outs);
  kiln_module_destroy(m);
  conf_data_free(&data);
}

static void conf_child(conf_run *R, const conf_case *c, int fd) {
  if (c->generated) {
    conf_gen_child(R, c, fd);
    return;
  }
  char *model = conf_path(c->dir, "model.onnx");
  /* Data sets, sorted. */
  char *sets[64];
  uint32_t n_sets = 0;
  DIR *d = opendir(c->dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (!strncmp(e->d_name, "test_data_set_", 14) && n_sets < 64)
      sets[n_sets++] = conf_strdup(e->d_name);
  if (d)
    closedir(d);
  qsort(sets, n_sets, sizeof *sets, conf_cmp_str);
  conf_rc rc[CONF_MAX_BACKENDS];
  char detail[CONF_MAX_BACKENDS][4096];
  for (uint32_t b = 0; b < R->a.n_backends; b++) {
    rc[b] = R_PASS;
    snprintf(detail[b], sizeof detail[b], "%u data set%s", n_sets, n_sets == 1 ? "" : "s");
  }
  if (!n_sets) {
    for (uint32_t b = 0; b < R->a.n_backends; b++)
      conf_report(fd, R->a.backends[b], R_SKIP, "no test_data_set_N folders");
    goto out;
  }
  for (uint32_t si = 0; si < n_sets; si++) {
    char *set_dir = conf_path(c->dir, sets[si]);
    conf_data data;
    kiln_status s = conf_read_set(set_dir, &data);
    free(set_dir);
    if (s && kiln_status_code(s) != KILN_UNIMPLEMENTED) {
      /* Sequence and optional test data are not TensorProtos: when the
       * model itself is unsupported, that is the reason to report. */
      kiln_module *probe = NULL;
      kiln_onnx_options po = {.ctx = R->ctx};
      kiln_status ls = kiln_onnx_load(model, &po, &probe);
      kiln_module_destroy(probe);
      if (ls && kiln_status_code(ls) == KILN_UNIMPLEMENTED) {
        kiln_status_free(s);
        s = kiln_status_wrap(ls, "model");
      } else {
        kiln_status_free(ls);
      }
    }
    if (s) {
      for (uint32_t b = 0; b < R->a.n_backends; b++)
        if (rc[b] == R_PASS) {
          rc[b] = kiln_status_code(s) == KILN_UNIMPLEMENTED ? R_SKIP : R_FAIL;
          snprintf(detail[b], sizeof detail[b], "test data: %s", kiln_status_message(s));
        }
      kiln_status_free(s);
      conf_data_free(&data);
      break;
    }
    kiln_module *m = NULL;
    s = conf_load(R, model, &data, &m);
    if (s) {
      for (uint32_t b = 0; b < R->a.n_backends; b++)
        if (rc[b] == R_PASS) {
          rc[b] = kiln_status_code(s) == KILN_UNIMPLEMENTED ? R_SKIP : R_FAIL;
          snprintf(detail[b], sizeof detail[b], "load: %s", kiln_status_message(s));
        }
      kiln_status_free(s);
      conf_data_free(&data);
      break;
    }
    /* The reference: stored outputs, or the interpreter's (--against). */
    kiln_executable *ref_exe = NULL;
    void **ref_outs = NULL;
    kiln_tensor ref[CONF_MAX_IO];
    uint32_t n_ref = 0;
    kiln_status ref_s = NULL;
    if (R->a.against) {
      ref_s = conf_execute(R, m, NULL, &data, &ref_exe, &ref_outs);
      for (uint32_t i = 0; !ref_s && i < kiln_executable_output_count(ref_exe) && i < CONF_MAX_IO;
           i++) {
        kiln_io_info info;
        kiln_executable_output(ref_exe, i, &info);
        ref[n_ref++] = (kiln_tensor){info.type, ref_outs[i], (char *)info.name};
      }
    }
    for (uint32_t b = 0; b < R->a.n_backends; b++) {
      if (rc[b] != R_PASS)
        continue;
      const char *be = R->a.backends[b];
      bool vs_interp = R->a.against && strcmp(be, "interpreter") != 0;
      if (vs_interp && ref_s) {
        rc[b] = kiln_status_code(ref_s) == KILN_UNIMPLEMENTED ? R_SKIP : R_FAIL;
        snprintf(detail[b], sizeof detail[b], "interpreter reference: %s",
                 kiln_status_message(ref_s));
        continue;
      }
      kiln_executable *exe;
      void **outs;
      s = conf_execute(R, m, be, &data, &exe, &outs);
      if (s) {
        rc[b] = kiln_status_code(s) == KILN_UNIMPLEMENTED ? R_SKIP : R_FAIL;
        snprintf(detail[b], sizeof detail[b], "%s", kiln_status_message(s));
        kiln_status_free(s);
        continue;
      }
      char msg[1024];
      bool ok = vs_interp ? conf_check(R, c, exe, outs, ref, n_ref, msg, sizeof msg)
                          : conf_check(R, c, exe, outs, data.out, data.n_out, msg, sizeof msg);
      if (!ok) {
        rc[b] = R_FAIL;
        snprintf(detail[b], sizeof detail[b], "data set %u: %s", si, msg);
      }
      conf_free_outs(exe, outs);
    }
    kiln_status_free(ref_s);
    conf_free_outs(ref_exe, ref_outs);
    kiln_module_destroy(m);
    conf_data_free(&data);
  }
  for (uint32_t b = 0; b < R->a.n_backends; b++)
    conf_report(fd, R->a.backends[b], rc[b], detail[b]);
out:
  for (uint32_t i = 0; i < n_sets; i++)
    free(sets[i]);
  free(model);
}

/* ---------------------------------------------------------------------
 * The parent: scheduling, timeouts, collecting. */
typedef struct conf_slot {
  pid_t pid;
  int fd;
  size_t case_idx;
  double deadline;
  char *buf;
  size_t len, cap;
} conf_slot;

/* ---------------------------------------------------------------------
 * Reproducers of failed generated cases: DIR/NAME.kir and one
 * DIR/NAME.INPUT.npy per input, so that `kiln run` replays the case. */
static kiln_status conf_mkdirs(const char *path) {
  char *p = conf_strdup(path);
  for (char *q = p + 1; *q; q++) {
    if (*q != '/')
      continue;
    *q = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      kiln_status s = kiln_status_make(KILN_IO_ERROR, "cannot create '%s': %s", p, strerror(errno));
      free(p);
      return s;
    }
    *q = '/';
  }
  kiln_status s = NULL;
  if (mkdir(p, 0777) != 0 && errno != EEXIST)
    s = kiln_status_make(KILN_IO_ERROR, "cannot create '%s': %s", p, strerror(errno));
  free(p);
  return s;
}

/* Writes the files; the --input arguments go to `args` (one line). */
static kiln_status conf_gen_write(const conf_run *R, const conf_case *c, FILE *args) {
  KILN_TRY(conf_mkdirs(R->a.repro_dir));
  kiln_module *m = NULL;
  KILN_TRY(kiln_graphgen(R->a.seed, c->index, &m));
  char *text = NULL, *path = NULL;
  kiln_tensor *in = NULL;
  uint32_t n_in = 0;
  kiln_status s = kiln_module_print(m, &text);
  if (!s) {
    char file[128];
    snprintf(file, sizeof file, "%s.kir", c->name);
    path = conf_path(R->a.repro_dir, file);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0)
      s = kiln_status_make(KILN_IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
    if (f && fclose(f) != 0 && !s)
      s = kiln_status_make(KILN_IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
    kiln_module_free_string(m, text);
  }
  if (!s)
    s = kiln_graphgen_inputs(m, conf_gen_input_seed(R, c), &in, &n_in);
  for (uint32_t i = 0; !s && i < n_in; i++) {
    char file[192];
    snprintf(file, sizeof file, "%s.%s.npy", c->name, in[i].name);
    char *ip = conf_path(R->a.repro_dir, file);
    s = kiln_tensor_write_npy(ip, &in[i]);
    fprintf(args, " --input %s=%s", in[i].name, ip);
    free(ip);
  }
  kiln_graphgen_inputs_free(in, n_in);
  free(path);
  kiln_module_destroy(m);
  return s;
}

/* Written in a child of its own: the graph that crashed a case's child
 * must not take the runner down with it. Appends the command line that
 * reproduces the failure to each failed backend's detail. */
static void conf_gen_repro(conf_run *R, conf_case *c) {
  int p[2];
  if (pipe(p) != 0)
    return;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    FILE *args = fdopen(p[1], "w");
    kiln_status s = args ? conf_gen_write(R, c, args) : NULL;
    if (s)
      fprintf(stderr, "kiln conformance: %s: repro: %s\n", c->name, kiln_status_message(s));
    int code = s || !args ? 1 : 0;
    kiln_status_free(s);
    if (args)
      fclose(args);
    _exit(code);
  }
  close(p[1]);
  char buf[4096];
  size_t len = 0;
  ssize_t k;
  while (pid > 0 && len + 1 < sizeof buf &&
         ((k = read(p[0], buf + len, sizeof buf - 1 - len)) > 0 || (k < 0 && errno == EINTR)))
    len += k > 0 ? (size_t)k : 0;
  buf[len] = '\0';
  close(p[0]);
  int status = 0;
  bool ok =
      pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const kiln_compile_options *o = &R->a.compile.opts;
  for (uint32_t b = 0; b < R->a.n_backends; b++) {
    conf_result *r = &c->res[b];
    if (r->rc != R_FAIL && r->rc != R_CRASH && r->rc != R_TIMEOUT)
      continue;
    char extra[256] = "";
    int e = 0;
    if (o->threads)
      e += snprintf(extra + e, sizeof extra - (size_t)e, " --threads %u", o->threads);
    if (o->device >= 0)
      e += snprintf(extra + e, sizeof extra - (size_t)e, " --device %d", o->device);
    if (o->cpu)
      e += snprintf(extra + e, sizeof extra - (size_t)e, " --cpu %.64s", o->cpu);
    if (o->cpu_features)
      e += snprintf(extra + e, sizeof extra - (size_t)e, " --cpu-features %.64s", o->cpu_features);
    char dm[CONF_MAX_DEVICE_MEMORY];
    const char *dmb = conf_device_memory(o->device_memory, R->a.backends[b], dm);
    if (dmb)
      snprintf(extra + e, sizeof extra - (size_t)e, " --device-memory %.100s", dmb);
    size_t n = strlen(r->detail) + strlen(R->a.repro_dir) + strlen(c->name) + len + 512;
    char *d = malloc(n);
    if (!d)
      continue;
    if (ok)
      snprintf(d, n, "%s; repro: %s/%s.kir (kiln run %s/%s.kir --backend %s%s%s)", r->detail,
               R->a.repro_dir, c->name, R->a.repro_dir, c->name, R->a.backends[b], extra, buf);
    else
      snprintf(d, n, "%s; repro: not written (see the message above)", r->detail);
    free(r->detail);
    r->detail = d;
  }
}

static double conf_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void conf_set_result(conf_case *c, uint32_t b, conf_rc rc, const char *detail) {
  free(c->res[b].detail);
  c->res[b].rc = rc;
  c->res[b].detail = conf_strdup(detail);
}

/* Parse the child's lines; backends it never reported get `missing`. */
static void conf_finish(conf_run *R, conf_slot *s, conf_rc missing, const char *why) {
  conf_case *c = &R->cases[s->case_idx];
  bool got[CONF_MAX_BACKENDS] = {0};
  char *p = s->buf;
  while (p && p < s->buf + s->len) {
    char *nl = memchr(p, '\n', (size_t)(s->buf + s->len - p));
    if (!nl)
      break;
    *nl = '\0';
    char *t1 = strchr(p, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (t1 && t2) {
      *t1 = *t2 = '\0';
      for (uint32_t b = 0; b < R->a.n_backends; b++)
        if (!strcmp(p, R->a.backends[b]))
          for (int k = 0; k < R_COUNT; k++)
            if (!strcmp(t1 + 1, conf_rc_names[k])) {
              conf_set_result(c, b, (conf_rc)k, t2 + 1);
              got[b] = true;
            }
    }
    p = nl + 1;
  }
  for (uint32_t b = 0; b < R->a.n_backends; b++)
    if (!got[b])
      conf_set_result(c, b, missing, why);
  c->done = true;
  free(s->buf);
  s->buf = NULL;
  s->len = s->cap = 0;
}

static bool conf_read_some(conf_slot *s) {
  if (s->cap - s->len < 4096) {
    size_t ncap = s->cap ? s->cap * 2 : 8192;
    char *nb = realloc(s->buf, ncap);
    if (!nb)
      return false;
    s->buf = nb;
    s->cap = ncap;
  }
  ssize_t k = read(s->fd, s->buf + s->len, s->cap - s->len - 1);
  if (k > 0) {
    s->len += (size_t)k;
    return true;
  }
  if (k < 0 && errno == EINTR)
    return true;
  return false; /* EOF or error */
}

static void conf_progress(conf_run *R, size_t done, bool tty, const conf_case *c) {
  if (tty) {
    size_t counts[R_COUNT] = {0};
    for (size_t i = 0; i < R->n_cases; i++)
      if (R->cases[i].done)
        for (uint32_t b = 0; b < R->a.n_backends; b++)
          counts[R->cases[i].res[b].rc]++;
    fprintf(stderr, "\r\033[K[%zu/%zu] pass %zu fail %zu skip %zu  %.40s", done, R->n_cases,
            counts[R_PASS], counts[R_FAIL] + counts[R_CRASH] + counts[R_TIMEOUT], counts[R_SKIP],
            c->name);
    fflush(stderr);
  } else {
    for (uint32_t b = 0; b < R->a.n_backends; b++) {
      const conf_result *r = &c->res[b];
      if (r->rc == R_PASS)
        printf("%-7s %s %s\n", conf_rc_names[r->rc], R->a.backends[b], c->name);
      else
        printf("%-7s %s %s: %s\n", conf_rc_names[r->rc], R->a.backends[b], c->name, r->detail);
    }
    fflush(stdout);
  }
}

static void conf_schedule(conf_run *R) {
  bool tty = isatty(STDERR_FILENO) && isatty(STDOUT_FILENO);
  size_t jobs = (size_t)R->a.jobs, next = 0, done = 0;
  conf_slot *slots = calloc(jobs, sizeof *slots);
  if (!slots)
    _exit(KILN_EXIT_FAIL);
  for (size_t j = 0; j < jobs; j++)
    slots[j].pid = -1;
  fflush(stdout);
  fflush(stderr);
  while (done < R->n_cases) {
    /* Fill free slots. */
    for (size_t j = 0; j < jobs && next < R->n_cases; j++) {
      if (slots[j].pid >= 0)
        continue;
      int p[2];
      if (pipe(p) != 0)
        break; /* out of descriptors: retry once a child finishes */
      fflush(stdout);
      fflush(stderr);
      pid_t pid = fork();
      if (pid == 0) {
        close(p[0]);
        /* Plugins' chatter stays out of the report. */
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
          dup2(devnull, STDOUT_FILENO);
          close(devnull);
        }
        conf_child(R, &R->cases[next], p[1]);
        close(p[1]);
        _exit(0);
      }
      close(p[1]);
      if (pid < 0) {
        close(p[0]);
        for (uint32_t b = 0; b < R->a.n_backends; b++)
          conf_set_result(&R->cases[next], b, R_CRASH, "fork failed");
        R->cases[next].done = true;
        done++;
        next++;
        continue;
      }
      slots[j] = (conf_slot){
          .pid = pid, .fd = p[0], .case_idx = next, .deadline = conf_now() + (double)R->a.timeout};
      next++;
    }
    /* Wait for output, an exit, or a deadline. */
    struct pollfd pf[256];
    size_t map[256], np = 0;
    double now = conf_now(), soonest = now + 1;
    for (size_t j = 0; j < jobs; j++)
      if (slots[j].pid >= 0) {
        pf[np] = (struct pollfd){.fd = slots[j].fd, .events = POLLIN};
        map[np++] = j;
        if (slots[j].deadline < soonest)
          soonest = slots[j].deadline;
      }
    int wait_ms = (int)((soonest - now) * 1000) + 1;
    if (wait_ms < 0)
      wait_ms = 0;
    if (np)
      poll(pf, np, wait_ms);
    now = conf_now();
    for (size_t k = 0; k < np; k++) {
      conf_slot *s = &slots[map[k]];
      bool eof = false;
      if (pf[k].revents & (POLLIN | POLLHUP | POLLERR))
        eof = !conf_read_some(s);
      bool late = now > s->deadline;
      if (!eof && !late)
        continue;
      if (late && !eof)
        kill(s->pid, SIGKILL);
      int status = 0;
      waitpid(s->pid, &status, 0);
      close(s->fd);
      char why[128];
      conf_rc missing = R_CRASH;
      if (late && !eof) {
        missing = R_TIMEOUT;
        snprintf(why, sizeof why, "no result within %llu s", (unsigned long long)R->a.timeout);
        /* Whatever was reported before the hang is dropped: the case timed out. */
        s->len = 0;
      } else if (WIFSIGNALED(status)) {
        snprintf(why, sizeof why, "child killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
      } else {
        snprintf(why, sizeof why, "child exited with status %d before reporting",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      }
      conf_finish(R, s, missing, why);
      s->pid = -1;
      conf_case *fc = &R->cases[s->case_idx];
      bool failed = false;
      for (uint32_t b = 0; b < R->a.n_backends; b++)
        failed = failed || fc->res[b].rc == R_FAIL || fc->res[b].rc == R_CRASH ||
                 fc->res[b].rc == R_TIMEOUT;
      if (fc->generated && failed)
        conf_gen_repro(R, fc);

      done++;
      conf_progress(R, done, tty, &R->cases[s->case_idx]);
    }
  }
  if (tty)
    fprintf(stderr, "\r\033[K");
  free(slots);
}

/* ---------------------------------------------------------------------
 * Reporting. */
static void conf_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static int conf_write_json(conf_run *R) {
  FILE *f = fopen(R->a.json, "w");
  if (!f) {
    fprintf(stderr, "kiln conformance: cannot write '%s': %s\n", R->a.json, strerror(errno));
    return KILN_EXIT_FAIL;
  }
  fprintf(f, "{\n  \"backends\": [");
  for (uint32_t b = 0; b < R->a.n_backends; b++) {
    fprintf(f, "%s", b ? ", " : "");
    conf_json_str(f, R->a.backends[b]);
  }
  fprintf(f, "],\n  \"cases\": [\n");
  for (size_t i = 0; i < R->n_cases; i++) {
    conf_case *c = &R->cases[i];
    fprintf(f, "    {\"name\": ");
    conf_json_str(f, c->name);
    fprintf(f, ", \"suite\": ");
    conf_json_str(f, c->suite);
    fprintf(f, ", \"results\": {");
    for (uint32_t b = 0; b < R->a.n_backends; b++) {
      fprintf(f, "%s", b ? ", " : "");
      conf_json_str(f, R->a.backends[b]);
      fprintf(f, ": {\"status\": \"%s\", \"detail\": ", conf_rc_names[c->res[b].rc]);
      conf_json_str(f, c->res[b].detail);
      conf_xfail *x = conf_find_xf(R, R->a.backends[b], c->name);
      fprintf(f, ", \"expected_failure\": %s}", x ? "true" : "false");
    }
    fprintf(f, "}}%s\n", i + 1 < R->n_cases ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  return fclose(f) == 0 ? 0 : KILN_EXIT_FAIL;
}

static int conf_summarize(conf_run *R) {
  size_t tot[R_COUNT] = {0};
  size_t unexpected_fail = 0, unexpected_pass = 0;
  int w = 14; /* a list (cpu+interpreter) may be longer */
  for (uint32_t b = 0; b < R->a.n_backends; b++)
    if ((int)strlen(R->a.backends[b]) > w)
      w = (int)strlen(R->a.backends[b]);
  printf("\n%-*s %7s %7s %7s %7s %7s %7s\n", w, "backend", "cases", "pass", "fail", "skip",
         "crash", "timeout");
  for (uint32_t b = 0; b < R->a.n_backends; b++) {
    size_t cnt[R_COUNT] = {0};
    for (size_t i = 0; i < R->n_cases; i++)
      cnt[R->cases[i].res[b].rc]++;
    printf("%-*s %7zu %7zu %7zu %7zu %7zu %7zu\n", w, R->a.backends[b], R->n_cases, cnt[R_PASS],
           cnt[R_FAIL], cnt[R_SKIP], cnt[R_CRASH], cnt[R_TIMEOUT]);
    for (int k = 0; k < R_COUNT; k++)
      tot[k] += cnt[k];
  }
  bool have_list = R->a.xfail_path != NULL;
  for (size_t i = 0; i < R->n_cases; i++)
    for (uint32_t b = 0; b < R->a.n_backends; b++) {
      conf_case *c = &R->cases[i];
      conf_rc rc = c->res[b].rc;
      conf_xfail *x = conf_find_xf(R, R->a.backends[b], c->name);
      if (x)
        x->seen = true;
      bool failed = rc == R_FAIL || rc == R_CRASH || rc == R_TIMEOUT;
      if (failed && !x) {
        if (!unexpected_fail++)
          printf("\n%s:\n", have_list ? "UNEXPECTED FAILURES (not in the expected-failures list)"
                                      : "FAILURES");
        printf("  %s %s %s: %s\n", conf_rc_names[rc], R->a.backends[b], c->name, c->res[b].detail);
      }
    }
  for (size_t i = 0; i < R->n_cases; i++)
    for (uint32_t b = 0; b < R->a.n_backends; b++) {
      conf_xfail *x = conf_find_xf(R, R->a.backends[b], R->cases[i].name);
      if (x && R->cases[i].res[b].rc == R_PASS) {
        if (!unexpected_pass++)
          printf("\nUNEXPECTED PASSES (listed as expected failures; remove them from %s):\n",
                 R->a.xfail_path);
        printf("  PASS %s %s  # was: %s\n", R->a.backends[b], R->cases[i].name, x->reason);
      }
    }
  size_t xfailed = 0;
  for (size_t i = 0; i < R->n_cases; i++)
    for (uint32_t b = 0; b < R->a.n_backends; b++) {
      conf_rc rc = R->cases[i].res[b].rc;
      if ((rc == R_FAIL || rc == R_CRASH || rc == R_TIMEOUT) &&
          conf_find_xf(R, R->a.backends[b], R->cases[i].name))
        xfailed++;
    }
  if (have_list)
    printf("\n%zu expected failure%s, %zu unexpected failure%s, %zu unexpected pass%s\n", xfailed,
           xfailed == 1 ? "" : "s", unexpected_fail, unexpected_fail == 1 ? "" : "s",
           unexpected_pass, unexpected_pass == 1 ? "" : "es");
  printf("%zu passed, %zu failed, %zu skipped\n", tot[R_PASS],
         tot[R_FAIL] + tot[R_CRASH] + tot[R_TIMEOUT], tot[R_SKIP]);
  return unexpected_fail || unexpected_pass ? KILN_EXIT_FAIL : KILN_EXIT_OK;
}

static void conf_free(conf_run *R) {
  for (size_t i = 0; i < R->n_cases; i++) {
    free(R->cases[i].name);
    free(R->cases[i].dir);
    free(R->cases[i].suite);
    for (uint32_t b = 0; b < CONF_MAX_BACKENDS; b++)
      free(R->cases[i].res[b].detail);
  }
  free(R->cases);
  for (size_t i = 0; i < R->n_tols; i++)
    free(R->tols[i].name);
  free(R->tols);
  for (size_t i = 0; i < R->n_xf; i++) {
    free(R->xf[i].backend);
    free(R->xf[i].name);
    free(R->xf[i].reason);
  }
  free(R->xf);
  free(R->a.backend_list);
  kiln_context_destroy(R->ctx);
}

int kiln_cmd_conformance(int argc, char **argv) {
  conf_run R;
  memset(&R, 0, sizeof R);
  int rc = conf_parse(argc, argv, &R.a);
  if (rc) {
    free(R.a.backend_list);
    return rc < 0 ? KILN_EXIT_OK : rc;
  }
  if (!rc && R.a.tol_path)
    rc = conf_read_table(&R, R.a.tol_path, conf_tol_line);
  if (!rc && R.a.xfail_path)
    rc = conf_read_table(&R, R.a.xfail_path, conf_xf_line);
  if (!rc)
    rc = R.a.generate ? conf_collect_generated(&R) : conf_collect(&R);
  if (!rc) {
    kiln_status s = kiln_context_create(&R.ctx);
    if (s)
      rc = tool_fail(s);
  }
  for (uint32_t b = 0; !rc && b < R.a.n_backends; b++)
    rc = conf_check_config(R.ctx, R.a.backends[b]);
  if (!rc && R.a.against && !kiln_context_find_backend(R.ctx, "interpreter"))
    rc = tool_usage_error("conformance", "--against needs the interpreter backend");
  if (!rc && R.a.generate && !kiln_context_find_backend(R.ctx, "interpreter"))
    rc =
        tool_usage_error("conformance", "--generate needs the interpreter backend (the reference)");
  if (!rc && R.a.generate && R.a.n_backends == 1 && !strcmp(R.a.backends[0], "interpreter"))
    printf("note: the interpreter is the reference; run alone, each generated graph is only "
           "checked to compile and run on it\n");
  if (!rc) {
    if (!R.n_cases)
      fprintf(stderr, "kiln conformance: no cases found\n");
    conf_schedule(&R);
    if (R.a.json)
      rc = conf_write_json(&R);
    int s = conf_summarize(&R);
    if (!rc)
      rc = s;
  }
  conf_free(&R);
  return rc;
}
