/* tests/opencl/test_cache.c: the program cache (a second compile of a model
 * loads the binary instead of building from source; a damaged entry is
 * rebuilt with a warning), device selection, and the "no device" path (in
 * a fresh process whose ICD loader sees an empty vendor folder). */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define OK(expr)                                                                                   \
  do {                                                                                             \
    kiln_status s_ = (expr);                                                                       \
    ck_assert_msg(!s_, "%s: %s", #expr, kiln_status_message(s_));                                  \
  } while (0)

typedef uint64_t (*counter_fn)(void);

/* The plugin's exported counters, from the copy the context loaded. */
static void counters(counter_fn *builds, counter_fn *hits) {
  kiln_context *ctx = tg_ctx();
  const char *path = NULL;
  for (uint32_t i = 0; i < kiln_context_backend_count(ctx); i++) {
    kiln_backend_info info;
    OK(kiln_context_backend(ctx, i, &info));
    if (!strcmp(info.name, "opencl"))
      path = info.path;
  }
  ck_assert_msg(path != NULL, "opencl backend not loaded");
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  ck_assert_msg(h != NULL, "plugin %s not loaded: %s", path, dlerror());
  *builds = (counter_fn)(uintptr_t)dlsym(h, "kiln_opencl_source_builds");
  *hits = (counter_fn)(uintptr_t)dlsym(h, "kiln_opencl_cache_hits");
  ck_assert(*builds && *hits);
}

static void model(tg *t) {
  static const int64_t d[] = {3, 5};
  tg_init(t);
  kiln_value *x = tg_input(t, "x", KILN_F32, 2, d);
  kiln_value *xx[] = {x, x};
  kiln_value *m = tg_node(t, KILN_NODE_Mul, xx, 2, NULL, 0);
  tg_output(t, "y", tg_node(t, KILN_NODE_Sqrt, &m, 1, NULL, 0));
}

/* Compile and run; y = sqrt(x*x) = |x|. */
static void compile_run(tg *t) {
  kiln_executable *e;
  OK(kiln_compile(tg_ctx(), t->m, NULL, "opencl", NULL, &e));
  float x[15], y[15];
  for (int i = 0; i < 15; i++)
    x[i] = (float)(i - 7);
  const void *in[] = {x};
  void *out[] = {y};
  OK(kiln_run(e, in, out));
  for (int i = 0; i < 15; i++)
    ck_assert_float_eq(y[i], (float)abs(i - 7));
  kiln_executable_destroy(e);
}

static int cache_files(const char *dir, char *one, size_t n) {
  DIR *d = opendir(dir);
  int count = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strstr(de->d_name, ".clbin") && !strstr(de->d_name, ".tmp")) {
      count++;
      snprintf(one, n, "%s/%s", dir, de->d_name);
    }
  if (d)
    closedir(d);
  return count;
}

START_TEST(cache_hit_and_repair) {
  char dir[] = "/tmp/kiln-ocl-cache-XXXXXX";
  ck_assert(mkdtemp(dir));
  setenv("KILN_CACHE_DIR", dir, 1);
  counter_fn builds, hits;
  counters(&builds, &hits);
  uint64_t b0 = builds(), h0 = hits();
  tg t;
  model(&t);
  compile_run(&t);
  ck_assert_uint_eq(builds(), b0 + 1);
  char entry[4200];
  ck_assert_int_eq(cache_files(dir, entry, sizeof entry), 1);
  /* second compile: from the cache, no build from source */
  compile_run(&t);
  ck_assert_uint_eq(builds(), b0 + 1);
  ck_assert_uint_eq(hits(), h0 + 1);
  /* damage the entry: flip bytes in its middle */
  FILE *f = fopen(entry, "r+b");
  ck_assert(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, size / 2, SEEK_SET);
  fputs("garbage", f);
  fclose(f);
  char logp[] = "/tmp/kiln-ocl-log-XXXXXX";
  int fd = mkstemp(logp);
  ck_assert_int_ge(fd, 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  compile_run(&t);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char log[4096] = {0};
  lseek(fd, 0, SEEK_SET);
  ck_assert_int_ge(read(fd, log, sizeof log - 1), 0);
  close(fd);
  unlink(logp);
  ck_assert_msg(strstr(log, "damaged") && strstr(log, "rebuilding"), "no warning; stderr: %s", log);
  ck_assert_uint_eq(builds(), b0 + 2);
  /* the rebuilt entry is good again */
  compile_run(&t);
  ck_assert_uint_eq(builds(), b0 + 2);
  ck_assert_uint_eq(hits(), h0 + 2);
  tg_free(&t);
  unlink(entry);
  rmdir(dir);
}
END_TEST

START_TEST(device_selection) {
  tg t;
  model(&t);
  kiln_compile_options o = {.struct_size = sizeof o, .device = 999};
  kiln_executable *e = NULL;
  kiln_status s = kiln_compile(tg_ctx(), t.m, NULL, "opencl", &o, &e);
  ck_assert_int_eq(kiln_status_code(s), KILN_OUT_OF_RANGE);
  ck_assert_msg(strstr(kiln_status_message(s), "device 999"), "%s", kiln_status_message(s));
  kiln_status_free(s);
  o.device = 0;
  OK(kiln_compile(tg_ctx(), t.m, NULL, "opencl", &o, &e));
  kiln_executable_destroy(e);
  setenv("KILN_OPENCL_DEVICE", "998", 1);
  s = kiln_compile(tg_ctx(), t.m, NULL, "opencl", NULL, &e);
  unsetenv("KILN_OPENCL_DEVICE");
  ck_assert_int_eq(kiln_status_code(s), KILN_OUT_OF_RANGE);
  kiln_status_free(s);
  tg_free(&t);
}
END_TEST

/* Runs in a fresh process (see no_device): 0 when compile reported
 * UNAVAILABLE "no OpenCL device" and the backend listed no devices. */
int ocl_no_device_child(void) {
  kiln_context *ctx;
  kiln_status cs = kiln_context_create(&ctx);
  if (cs) {
    fprintf(stderr, "no-device child: %s\n", kiln_status_message(cs));
    kiln_status_free(cs);
    return 2;
  }
  int rc = 3;
  for (uint32_t i = 0; i < kiln_context_backend_count(ctx); i++) {
    kiln_backend_info info;
    kiln_status_free(kiln_context_backend(ctx, i, &info));
    if (!strcmp(info.name, "opencl"))
      rc = info.device_count == 0 ? 0 : 4;
  }
  if (rc)
    return rc;
  /* No Check macros here: this process is not a Check runner. */
  static const int64_t d[] = {4};
  kiln_module *m = NULL;
  kiln_function *f;
  kiln_value *x;
  kiln_node *n;
  kiln_type ty;
  kiln_status s = kiln_type_make(KILN_F32, 1, d, &ty);
  if (!s)
    s = kiln_module_create(NULL, "nodev", &m);
  if (!s)
    s = kiln_module_add_input(m, "x", &ty, &x);
  if (!s)
    s = kiln_module_add_function(m, "main", &f);
  if (!s)
    s = kiln_function_add_node(f, KILN_NODE_Relu, NULL, &x, 1, NULL, 0, 0, &n);
  if (!s)
    s = kiln_function_add_output(f, "y", kiln_node_result(n, 0));
  kiln_executable *e = NULL;
  if (!s)
    s = kiln_compile(ctx, m, NULL, "opencl", NULL, &e);
  fprintf(stderr, "no-device compile: %s\n", kiln_status_message(s));
  rc = kiln_status_code(s) == KILN_UNAVAILABLE && strstr(kiln_status_message(s), "no OpenCL device")
           ? 0
           : 5;
  kiln_status_free(s);
  kiln_executable_destroy(e);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  return rc;
}

START_TEST(no_device) {
  char dir[] = "/tmp/kiln-ocl-novendors-XXXXXX";
  ck_assert(mkdtemp(dir));
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    setenv("OCL_ICD_VENDORS", dir, 1);
    execl("/proc/self/exe", "test_opencl", "--no-device-child", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  rmdir(dir);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}
END_TEST

Suite *ocl_cache_suite(void) {
  Suite *s = suite_create("opencl_cache");
  TCase *tc = tcase_create("cache");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, cache_hit_and_repair);
  tcase_add_test(tc, device_selection);
  tcase_add_test(tc, no_device);
  suite_add_tcase(s, tc);
  return s;
}
