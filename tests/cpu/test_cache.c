/* tests/cpu/test_cache.c: the cpu backend's compile cache of the model's
 * object file. A second compile of the same model loads the object
 * (the plugin's exported counters: one build, then a hit) and still runs
 * correctly; every change the object depends on (input shape, threads
 * where the code uses them, cpu features, profiling timers) makes a new
 * entry; --no-cache and KILN_CACHE_DIR=off neither read nor write; damaged
 * entries, and a whole entry whose object does not link, are rebuilt; a
 * folder that cannot be made only costs the cache; concurrent processes
 * compiling the same model leave one entry. Outputs are checked against
 * values worked out here: y = sqrt(x*x) = |x| and z = x.w for a w of
 * ones and (j%3)-1 columns, on inputs that are multiples of 0.25 (every
 * sum exact in float). */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kiln/plugin.h>

#include "suites.h"
#include "../core/test_files.h"

#define HDR 56 /* magic 8, key 32, size 8, checksum 8 */

/* ---- the model ---- */

/* x : f32[rows, cols]; y = Sqrt(Mul(x, x)); z = MatMul(x, w), w : [cols, 2]
 * with w[j][0] = 1, w[j][1] = j%3 - 1. At 256x128 the elementwise loop is
 * big enough (32768) for code that splits it over threads. */
static char *model_text(int rows, int cols) {
  size_t cap = 512 + (size_t)cols * 16;
  char *t = malloc(cap);
  if (!t) /* no Check macro: child processes use it too */
    return NULL;
  int n = snprintf(t, cap, "module @cached\ninput %%x : f32[%d,%d]\nconst %%w : f32[%d,2] = [",
                   rows, cols, cols);
  for (int j = 0; j < cols; j++)
    n += snprintf(t + n, cap - (size_t)n, "%s1, %d", j ? ", " : "", j % 3 - 1);
  snprintf(t + n, cap - (size_t)n,
           "]\nfunc @main {\n  %%m : f32[%d,%d] = Mul(%%x, %%x)\n"
           "  %%s : f32[%d,%d] = Sqrt(%%m)\n  %%z : f32[%d,2] = MatMul(%%x, %%w)\n"
           "  output %%y = %%s\n  output %%zz = %%z\n}\n",
           rows, cols, rows, cols, rows);
  return t;
}

static kiln_module *model(int rows, int cols) {
  char *text = model_text(rows, cols);
  ck_assert_ptr_nonnull(text);
  kiln_module *m = NULL;
  kiln_status s = kiln_module_parse(text, strlen(text), "cached.kir", NULL, &m);
  free(text);
  ck_assert_msg(!s, "parse: %s", kiln_status_message(s));
  return m;
}

static float input_at(int i) {
  return (float)((i * 7) % 23 - 11) * 0.25f;
}

/* Compile with opts (NULL: defaults) and run once; 0 when the outputs are
 * the hand-computed ones, else the number of wrong values (-1: the compile
 * or the run failed, message into err). No Check macros: child processes
 * use it too. */
static int compile_run_check(kiln_context *ctx, const kiln_module *m, int rows, int cols,
                             const kiln_compile_options *opts, char *err, size_t errn) {
  kiln_executable *e = NULL;
  kiln_status s = kiln_compile(ctx, m, NULL, "cpu", opts, &e);
  if (s) {
    snprintf(err, errn, "compile: %s", kiln_status_message(s));
    kiln_status_free(s);
    return -1;
  }
  size_t n = (size_t)rows * (size_t)cols;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y),
        *z = malloc((size_t)rows * 2 * sizeof *z);
  int bad = -1;
  if (!x || !y || !z) {
    snprintf(err, errn, "no memory");
    goto done;
  }
  for (size_t i = 0; i < n; i++)
    x[i] = input_at((int)i);
  const void *in[] = {x};
  void *out[] = {y, z};
  s = kiln_run(e, in, out);
  if (s) {
    snprintf(err, errn, "run: %s", kiln_status_message(s));
    kiln_status_free(s);
    goto done;
  }
  bad = 0;
  for (size_t i = 0; i < n; i++)
    if (y[i] != fabsf(x[i])) {
      if (!bad++)
        snprintf(err, errn, "y[%zu] = %g, expected %g", i, y[i], fabsf(x[i]));
    }
  for (int r = 0; r < rows; r++) {
    double s0 = 0, s1 = 0;
    for (int j = 0; j < cols; j++) {
      s0 += x[r * cols + j];
      s1 += (j % 3 - 1) * (double)x[r * cols + j];
    }
    if (z[2 * r] != (float)s0 || z[2 * r + 1] != (float)s1) {
      if (!bad++)
        snprintf(err, errn, "z[%d] = (%g, %g), expected (%g, %g)", r, z[2 * r], z[2 * r + 1], s0,
                 s1);
    }
  }
done:
  free(x);
  free(y);
  free(z);
  kiln_executable_destroy(e);
  return bad;
}

static void compile_run(const kiln_module *m, int rows, int cols,
                        const kiln_compile_options *opts) {
  char err[1024] = "";
  int bad = compile_run_check(kt_ctx(), m, rows, cols, opts, err, sizeof err);
  ck_assert_msg(bad == 0, "%d wrong: %s", bad, err);
}

/* ---- the plugin's counters and the cache folder ---- */

typedef uint64_t (*counter_fn)(void);
static counter_fn g_builds, g_hits;

/* The counters of the cpu plugin ctx loaded; false when it has none (no
 * Check macros: child processes use it too). */
static bool find_counters(kiln_context *ctx, counter_fn *builds, counter_fn *hits) {
  const char *path = NULL;
  for (uint32_t i = 0; i < kiln_context_backend_count(ctx); i++) {
    kiln_backend_info info;
    kiln_status s = kiln_context_backend(ctx, i, &info);
    if (!s && !strcmp(info.name, "cpu"))
      path = info.path;
    kiln_status_free(s);
  }
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (!h)
    return false;
  *builds = (counter_fn)(uintptr_t)dlsym(h, "kiln_cpu_object_builds");
  *hits = (counter_fn)(uintptr_t)dlsym(h, "kiln_cpu_cache_hits");
  dlclose(h); /* NOLOAD took a reference of its own; the context keeps one */
  return *builds && *hits;
}

static void counters(void) {
  ck_assert_msg(find_counters(kt_ctx(), &g_builds, &g_hits),
                "the cpu backend is not loaded or exports no cache counters");
}

static char g_dir[64];
static char *g_saved_dir, *g_saved_level;
static bool g_had_dir, g_had_level;

static void cache_setup(void) {
  const char *d = getenv("KILN_CACHE_DIR"), *l = getenv("KILN_LOG_LEVEL");
  g_had_dir = d != NULL, g_had_level = l != NULL;
  g_saved_dir = d ? strdup(d) : NULL;
  g_saved_level = l ? strdup(l) : NULL;
  unsetenv("KILN_LOG_LEVEL"); /* warnings shown: some tests read them */
  snprintf(g_dir, sizeof g_dir, "/tmp/kiln-cpu-cache-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(g_dir));
  setenv("KILN_CACHE_DIR", g_dir, 1);
  counters();
}

static void rm_flat(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  char p[512];
  while (d && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    remove(p);
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

static void cache_teardown(void) {
  rm_flat(g_dir);
  if (g_had_dir)
    setenv("KILN_CACHE_DIR", g_saved_dir, 1);
  else
    unsetenv("KILN_CACHE_DIR");
  if (g_had_level)
    setenv("KILN_LOG_LEVEL", g_saved_level, 1);
  else
    unsetenv("KILN_LOG_LEVEL");
  free(g_saved_dir);
  free(g_saved_level);
  g_saved_dir = g_saved_level = NULL;
}

/* The .o entries in the folder (the last one's path into one, when
 * given) and the temporaries. */
static int entries(char *one, size_t n, int *tmp) {
  DIR *d = opendir(g_dir);
  int c = 0, t = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (strstr(de->d_name, ".tmp."))
      t++;
    else if (strlen(de->d_name) == 64 + 2 && !strcmp(de->d_name + 64, ".o")) {
      c++;
      if (one)
        snprintf(one, n, "%s/%s", g_dir, de->d_name);
    }
  }
  if (d)
    closedir(d);
  if (tmp)
    *tmp = t;
  return c;
}

static int n_entries(void) {
  return entries(NULL, 0, NULL);
}

static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

/* The entry is whole: magic, its size field matching the file, the
 * checksum over the data, and an ELF object inside. */
static void assert_valid_entry(const char *path) {
  size_t n;
  unsigned char *raw = slurp(path, &n);
  ck_assert_uint_gt(n, HDR + 4);
  ck_assert_msg(!memcmp(raw, "KILNCCH1", 8), "%s: bad magic", path);
  uint64_t size, sum;
  memcpy(&size, raw + 40, 8);
  memcpy(&sum, raw + 48, 8);
  ck_assert_uint_eq(size, n - HDR);
  ck_assert_uint_eq(sum, fnv1a(raw + HDR, n - HDR));
#ifdef __linux__
  ck_assert_msg(!memcmp(raw + HDR,
                        "\x7f"
                        "ELF",
                        4),
                "%s: the data is not an ELF object", path);
#endif
  free(raw);
}


/* Expect the counters to have moved by builds/hits since b0/h0. */
#define EXPECT_COUNTS(b0, h0, db, dh, what)                                                        \
  do {                                                                                             \
    uint64_t b_ = g_builds() - (b0), h_ = g_hits() - (h0);                                         \
    ck_assert_msg(b_ == (uint64_t)(db) && h_ == (uint64_t)(dh),                                    \
                  "%s: %llu builds and %llu hits, expected %d and %d", what,                       \
                  (unsigned long long)b_, (unsigned long long)h_, db, dh);                         \
  } while (0)

static kiln_compile_options opts_threads(uint32_t threads) {
  return (kiln_compile_options){
      .struct_size = sizeof(kiln_compile_options), .threads = threads, .device = -1};
}

/* ---- tests ---- */

START_TEST(second_compile_hits) {
  kiln_module *m = model(256, 128);
  kiln_compile_options o = opts_threads(1);
  uint64_t b0 = g_builds(), h0 = g_hits();
  compile_run(m, 256, 128, &o);
  EXPECT_COUNTS(b0, h0, 1, 0, "first compile");
  char path[256];
  int tmp;
  ck_assert_int_eq(entries(path, sizeof path, &tmp), 1);
  ck_assert_int_eq(tmp, 0);
  assert_valid_entry(path);
  compile_run(m, 256, 128, &o);
  EXPECT_COUNTS(b0, h0, 1, 1, "second compile");
  ck_assert_int_eq(n_entries(), 1);
  /* A fresh module of the same text: the same key. */
  kiln_module *again = model(256, 128);
  compile_run(again, 256, 128, &o);
  EXPECT_COUNTS(b0, h0, 1, 2, "the same model parsed again");
  kiln_module_destroy(again);
  kiln_module_destroy(m);
}
END_TEST

START_TEST(key_changes_miss) {
  kiln_module *m = model(256, 128);
  kiln_compile_options o = opts_threads(1);
  uint64_t b0 = g_builds(), h0 = g_hits();
  compile_run(m, 256, 128, &o);
  EXPECT_COUNTS(b0, h0, 1, 0, "first compile");
  ck_assert_int_eq(n_entries(), 1);

  /* Another input shape. */
  kiln_module *wide = model(256, 129);
  compile_run(wide, 256, 129, &o);
  EXPECT_COUNTS(b0, h0, 2, 0, "another input shape");
  ck_assert_int_eq(n_entries(), 2);
  kiln_module_destroy(wide);

  /* Two threads: the big elementwise loop is split over the pool. */
  kiln_compile_options o2 = opts_threads(2);
  compile_run(m, 256, 128, &o2);
  EXPECT_COUNTS(b0, h0, 3, 0, "two threads");
  ck_assert_int_eq(n_entries(), 3);

  /* Profiling timers. */
  kiln_compile_options op = opts_threads(1);
  op.flags = KILN_COMPILE_PROFILE;
  compile_run(m, 256, 128, &op);
  EXPECT_COUNTS(b0, h0, 4, 0, "profiling");
  ck_assert_int_eq(n_entries(), 4);

  /* Each again: all hits. */
  compile_run(m, 256, 128, &o);
  compile_run(m, 256, 128, &o2);
  compile_run(m, 256, 128, &op);
  EXPECT_COUNTS(b0, h0, 4, 3, "each again");
  ck_assert_int_eq(n_entries(), 4);
  kiln_module_destroy(m);
}
END_TEST

/* Features that only remove from the host's, so that the code still runs
 * here: without avx512f where the host has it (its vectors are 8 lanes
 * then, not 16), else without avx2. */
START_TEST(cpu_features_miss) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const char *feat = __builtin_cpu_supports("avx512f") ? "+avx2,-avx512f" : "-avx2";
  kiln_module *m = model(256, 128);
  kiln_compile_options o = opts_threads(1);
  uint64_t b0 = g_builds(), h0 = g_hits();
  compile_run(m, 256, 128, &o);
  kiln_compile_options of = opts_threads(1);
  of.cpu_features = feat;
  compile_run(m, 256, 128, &of);
  EXPECT_COUNTS(b0, h0, 2, 0, feat);
  ck_assert_int_eq(n_entries(), 2);
  compile_run(m, 256, 128, &of);
  EXPECT_COUNTS(b0, h0, 2, 1, feat);
  ck_assert_int_eq(n_entries(), 2);
  kiln_module_destroy(m);
#else
  fprintf(stderr, "cpu_features_miss: skipped, not an x86 host (no feature set known to run)\n");
#endif
}
END_TEST

/* JIT compiles for this host start from the library with the native
 * kernels declared, or its stubs (made at build time): a miss and a hit
 * both, with two threads so that the elementwise loop calls the pool's
 * declared parallel_for; other features than the host's, or
 * KILN_CPU_NATIVE=0, start from the whole library. Outputs right in every
 * case. */
typedef uint64_t (*loads_fn)(int declared);
START_TEST(declared_library_for_native) {
  kiln_backend_info info = {0};
  for (uint32_t i = 0; i < kiln_context_backend_count(kt_ctx()); i++) {
    kiln_backend_info bi;
    kiln_status s = kiln_context_backend(kt_ctx(), i, &bi);
    if (!s && !strcmp(bi.name, "cpu"))
      info = bi;
    kiln_status_free(s);
  }
  void *h = info.path ? dlopen(info.path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  ck_assert_ptr_nonnull(h);
  loads_fn loads = (loads_fn)(uintptr_t)dlsym(h, "kiln_cpu_library_loads");
  int (*has)(void) = (int (*)(void))(uintptr_t)dlsym(h, "kiln_cpu_has_declared_library");
  dlclose(h);
  ck_assert_ptr_nonnull(loads);
  ck_assert_ptr_nonnull(has);
  if (!has()) {
    fprintf(stderr, "declared_library_for_native: skipped, this build has no native kernel "
                    "library (mknative could not make one)\n");
    return;
  }
  kiln_module *m = model(256, 128);
  kiln_compile_options o = opts_threads(2);
  uint64_t w0 = loads(0), d0 = loads(1), b0 = g_builds(), h0 = g_hits();
  compile_run(m, 256, 128, &o);
  ck_assert_uint_eq(loads(0) - w0, 0);
  ck_assert_uint_eq(loads(1) - d0, 1);
  compile_run(m, 256, 128, &o);
  EXPECT_COUNTS(b0, h0, 1, 1, "host target, twice");
  ck_assert_uint_eq(loads(1) - d0, 2);
  ck_assert_uint_eq(loads(0) - w0, 0);
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  kiln_compile_options of = opts_threads(2);
  of.cpu_features = __builtin_cpu_supports("avx512f") ? "+avx2,-avx512f" : "-avx2";
  compile_run(m, 256, 128, &of);
  ck_assert_uint_eq(loads(0) - w0, 1);
  ck_assert_uint_eq(loads(1) - d0, 2);
#endif
  const char *old = getenv("KILN_CPU_NATIVE");
  char *saved = old ? strdup(old) : NULL;
  setenv("KILN_CPU_NATIVE", "0", 1);
  uint64_t w1 = loads(0);
  compile_run(m, 256, 128, &o);
  if (saved)
    setenv("KILN_CPU_NATIVE", saved, 1);
  else
    unsetenv("KILN_CPU_NATIVE");
  free(saved);
  ck_assert_uint_eq(loads(0) - w1, 1);
  ck_assert_uint_eq(loads(1) - d0, 2);
  kiln_module_destroy(m);
}
END_TEST

START_TEST(no_cache_neither_reads_nor_writes) {
  kiln_module *m = model(256, 128);
  kiln_compile_options o = opts_threads(1);
  uint64_t b0 = g_builds(), h0 = g_hits();
  compile_run(m, 256, 128, &o); /* the entry exists from here on */
  EXPECT_COUNTS(b0, h0, 1, 0, "first compile");
  char path[256];
  ck_assert_int_eq(entries(path, sizeof path, NULL), 1);
  struct stat st0, st1;
  ck_assert_int_eq(stat(path, &st0), 0);

  kiln_compile_options on = opts_threads(1);
  on.flags = KILN_COMPILE_NO_CACHE;
  compile_run(m, 256, 128, &on);
  EXPECT_COUNTS(b0, h0, 2, 0, "KILN_COMPILE_NO_CACHE");
  kiln_module *other = model(8, 3); /* not cached yet: must not be written */
  compile_run(other, 8, 3, &on);
  EXPECT_COUNTS(b0, h0, 3, 0, "KILN_COMPILE_NO_CACHE, another model");
  ck_assert_int_eq(n_entries(), 1);

  bool off_existed = access("off", F_OK) == 0;
  setenv("KILN_CACHE_DIR", "off", 1);
  compile_run(m, 256, 128, &o);
  compile_run(other, 8, 3, &o);
  EXPECT_COUNTS(b0, h0, 5, 0, "KILN_CACHE_DIR=off");
  setenv("KILN_CACHE_DIR", g_dir, 1);
  ck_assert_int_eq(n_entries(), 1);
  if (!off_existed)
    ck_assert_msg(access("off", F_OK) != 0, "KILN_CACHE_DIR=off made a folder named off");
  /* The entry was left as it was. */
  ck_assert_int_eq(stat(path, &st1), 0);
  ck_assert(st0.st_ino == st1.st_ino && st0.st_mtime == st1.st_mtime);
  /* And still serves a compile that may use it. */
  compile_run(m, 256, 128, &o);
  EXPECT_COUNTS(b0, h0, 5, 1, "with the cache again");
  kiln_module_destroy(other);
  kiln_module_destroy(m);
}
END_TEST

typedef enum damage { FLIP, TRUNCATE, GARBAGE_OBJECT } damage;

/* Damage the one entry, compile: rebuilt (with a warning containing
 * `warning`), rewritten whole, then a hit. */
static void damaged_rebuilt(damage d, const char *warning) {
  kiln_module *m = model(256, 128);
  kiln_compile_options o = opts_threads(1);
  uint64_t b0 = g_builds(), h0 = g_hits();
  compile_run(m, 256, 128, &o);
  char path[256];
  ck_assert_int_eq(entries(path, sizeof path, NULL), 1);
  size_t n;
  unsigned char *raw = slurp(path, &n), *orig = malloc(n);
  size_t orig_n = n;
  ck_assert_ptr_nonnull(orig);
  memcpy(orig, raw, n);
  int dh = 0; /* a garbage object is a hit of the store, then a link failure */
  if (d == FLIP) {
    raw[HDR + (n - HDR) / 2] ^= 0x10;
  } else if (d == TRUNCATE) {
    n = HDR + (n - HDR) / 2;
  } else {
    uint32_t s = 12345;
    for (size_t i = HDR; i < n; i++) {
      s = s * 1664525u + 1013904223u;
      raw[i] = (unsigned char)(s >> 24);
    }
    uint64_t sum = fnv1a(raw + HDR, n - HDR);
    memcpy(raw + 48, &sum, 8);
    dh = 1;
  }
  spill(path, raw, n);
  free(raw);
  capture c;
  cap_begin(&c);
  char err[1024] = "";
  int bad = compile_run_check(kt_ctx(), m, 256, 128, &o, err, sizeof err);
  char *log = cap_end(&c);
  ck_assert_msg(bad == 0, "%d wrong after damage: %s", bad, err);
  ck_assert_msg(strstr(log, warning) != NULL, "no warning '%s'; stderr: %s", warning, log);
  free(log);
  EXPECT_COUNTS(b0, h0, 2, dh, "compile after damage");
  char again[256];
  int tmp;
  ck_assert_int_eq(entries(again, sizeof again, &tmp), 1);
  ck_assert_int_eq(tmp, 0);
  ck_assert_str_eq(again, path);
  assert_valid_entry(path);
  /* The same object as the first time (the compile is deterministic), not
   * what was written over it. */
  size_t n2;
  unsigned char *now = slurp(path, &n2);
  ck_assert_uint_eq(n2, orig_n);
  ck_assert_msg(!memcmp(now, orig, n2), "the rewritten entry differs from the first");
  free(now);
  free(orig);
  compile_run(m, 256, 128, &o);
  EXPECT_COUNTS(b0, h0, 2, dh + 1, "compile after the repair");
  kiln_module_destroy(m);
}

START_TEST(flipped_entry_rebuilt) {
  damaged_rebuilt(FLIP, "damaged");
}
END_TEST

START_TEST(truncated_entry_rebuilt) {
  damaged_rebuilt(TRUNCATE, "damaged");
}
END_TEST

START_TEST(garbage_object_rebuilt) {
  damaged_rebuilt(GARBAGE_OBJECT, "did not link");
}
END_TEST

START_TEST(unwritable_folder_still_compiles) {
  char file[128], dir[160];
  snprintf(file, sizeof file, "%s/regular", g_dir);
  spill(file, "x", 1);
  snprintf(dir, sizeof dir, "%s/sub", file);
  setenv("KILN_CACHE_DIR", dir, 1);
  kiln_module *m = model(256, 128);
  kiln_compile_options o = opts_threads(1);
  uint64_t b0 = g_builds(), h0 = g_hits();
  capture c;
  cap_begin(&c);
  char err[1024] = "";
  int bad = compile_run_check(kt_ctx(), m, 256, 128, &o, err, sizeof err);
  if (!bad)
    bad = compile_run_check(kt_ctx(), m, 256, 128, &o, err, sizeof err);
  free(cap_end(&c));
  ck_assert_msg(bad == 0, "%d wrong: %s", bad, err);
  EXPECT_COUNTS(b0, h0, 2, 0, "two compiles without a usable folder");
  setenv("KILN_CACHE_DIR", g_dir, 1);
  ck_assert_int_eq(n_entries(), 0);
  kiln_module_destroy(m);
}
END_TEST

/* Exit codes of a compile child: right outputs from a build of its own or
 * from the cache; else what went wrong. */
enum {
  CHILD_BUILT = 0,
  CHILD_HIT = 10,
  CHILD_NO_CONTEXT = 2,
  CHILD_NO_MODEL = 3,
  CHILD_WRONG = 4,
  CHILD_COUNTS = 5
};

/* Run by a fresh process (test_main.c: --cache-compile-child FD): waits
 * until FD reads end of file (the parent's start signal), compiles and
 * runs the model with the inherited KILN_CACHE_DIR. A fresh process, not
 * a fork, so that nothing of the parent's LLVM or threads is shared, and
 * its own counters say whether it built the object or loaded it. */
int kcpu_cache_compile_child(int start_fd) {
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  if (s) {
    fprintf(stderr, "cache child: %s\n", kiln_status_message(s));
    kiln_status_free(s);
    return CHILD_NO_CONTEXT;
  }
  counter_fn builds, hits;
  if (!find_counters(ctx, &builds, &hits)) {
    fprintf(stderr, "cache child: no cpu plugin counters\n");
    kiln_context_destroy(ctx);
    return CHILD_COUNTS;
  }
  char *text = model_text(256, 128);
  kiln_module *m = NULL;
  s = text ? kiln_module_parse(text, strlen(text), "cached.kir", NULL, &m)
           : kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for the model");
  free(text);
  if (s) {
    fprintf(stderr, "cache child: %s\n", kiln_status_message(s));
    kiln_status_free(s);
    kiln_context_destroy(ctx);
    return CHILD_NO_MODEL;
  }
  char c;
  while (read(start_fd, &c, 1) > 0) {
  }
  close(start_fd);
  kiln_compile_options o = {.struct_size = sizeof o, .threads = 1, .device = -1};
  char err[1024] = "";
  int bad = compile_run_check(ctx, m, 256, 128, &o, err, sizeof err);
  uint64_t b = builds(), h = hits();
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  if (bad) {
    fprintf(stderr, "cache child: %d wrong: %s\n", bad, err);
    return CHILD_WRONG;
  }
  if (b + h != 1) {
    fprintf(stderr, "cache child: %llu builds and %llu hits for one compile\n",
            (unsigned long long)b, (unsigned long long)h);
    return CHILD_COUNTS;
  }
  return b ? CHILD_BUILT : CHILD_HIT;
}

/* Start n compile children together (after their contexts are made);
 * their exit codes into codes. */
static void run_children(int n, int *codes) {
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  ck_assert_int_gt(len, 0);
  self[len] = 0;
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  char fdarg[16];
  snprintf(fdarg, sizeof fdarg, "%d", p[0]);
  pid_t pids[8];
  ck_assert_int_le(n, 8);
  fflush(NULL);
  for (int i = 0; i < n; i++) {
    pids[i] = fork();
    ck_assert_int_ge(pids[i], 0);
    if (pids[i] == 0) {
      close(p[1]);
      execl(self, self, "--cache-compile-child", fdarg, (char *)NULL);
      _exit(127);
    }
  }
  close(p[0]);
  usleep(300 * 1000);
  close(p[1]); /* the start signal: end of file on every child's end */
  for (int i = 0; i < n; i++) {
    int st = 0;
    ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
    ck_assert_msg(WIFEXITED(st), "child %d: status %d", i, st);
    codes[i] = WEXITSTATUS(st);
  }
}

START_TEST(concurrent_processes_one_entry) {
  enum { N = 4 };
  int codes[N], built = 0;
  run_children(N, codes);
  for (int i = 0; i < N; i++) {
    ck_assert_msg(codes[i] == CHILD_BUILT || codes[i] == CHILD_HIT,
                  "child %d: exit code %d (4: wrong outputs, 5: counters)", i, codes[i]);
    built += codes[i] == CHILD_BUILT;
  }
  ck_assert_int_ge(built, 1);
  char path[256];
  int tmp;
  ck_assert_int_eq(entries(path, sizeof path, &tmp), 1);
  ck_assert_msg(tmp == 0, "%d temporary files left", tmp);
  assert_valid_entry(path);
  /* A later process loads what they stored. */
  run_children(1, codes);
  ck_assert_msg(codes[0] == CHILD_HIT, "a later process: exit code %d, not a hit", codes[0]);
  ck_assert_int_eq(entries(NULL, 0, &tmp), 1);
}
END_TEST

Suite *kcpu_cache_suite(void) {
  Suite *s = suite_create("cpu-cache");
  TCase *tc = tcase_create("cache");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, cache_setup, cache_teardown);
  tcase_add_test(tc, second_compile_hits);
  tcase_add_test(tc, key_changes_miss);
  tcase_add_test(tc, cpu_features_miss);
  tcase_add_test(tc, declared_library_for_native);
  tcase_add_test(tc, no_cache_neither_reads_nor_writes);
  tcase_add_test(tc, flipped_entry_rebuilt);
  tcase_add_test(tc, truncated_entry_rebuilt);
  tcase_add_test(tc, garbage_object_rebuilt);
  tcase_add_test(tc, unwritable_folder_still_compiles);
  tcase_add_test(tc, concurrent_processes_one_entry);
  suite_add_tcase(s, tc);
  return s;
}
