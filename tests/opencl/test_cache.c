/* tests/opencl/test_cache.c: the program cache, which is the host's shared
 * compile cache (a second compile of a model loads the binary instead of
 * building from source; a damaged entry, or one the driver refuses, is
 * rebuilt with a warning; --no-cache, KILN_CACHE_DIR=off and a folder that
 * cannot be written compile without it), device selection, and the "no
 * device" path (in a fresh process whose ICD loader sees an empty vendor
 * folder). */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "../core/test_files.h"

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

/* Compile (with opts, which may be NULL) and run; y = sqrt(x*x) = |x|. */
static void compile_run_opts(tg *t, const kiln_compile_options *opts) {
  kiln_executable *e;
  OK(kiln_compile(tg_ctx(), t->m, NULL, "opencl", opts, &e));
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

static void compile_run(tg *t) {
  compile_run_opts(t, NULL);
}

/* compile_run, with what it wrote to stderr into log (n bytes). */
static void compile_run_log(tg *t, char *log, size_t n) {
  capture c;
  cap_begin(&c);
  compile_run(t);
  char *text = cap_end(&c);
  snprintf(log, n, "%s", text);
  free(text);
}

/* Overwrite bytes of a file at offset (negative: from the middle). */
static void damage(const char *path, long offset, const char *bytes) {
  FILE *f = fopen(path, "r+b");
  ck_assert(f);
  if (offset < 0) {
    fseek(f, 0, SEEK_END);
    offset = ftell(f) / 2;
  }
  fseek(f, offset, SEEK_SET);
  fputs(bytes, f);
  fclose(f);
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* An entry's file is named by its 32-byte key in lowercase hex plus
 * ".clbin"; the key out of the name (false when the name is not that). */
static bool key_of_name(const char *path, kiln_cache_key *k) {
  const char *name = strrchr(path, '/');
  name = name ? name + 1 : path;
  if (strlen(name) != 64 + strlen(".clbin") || strcmp(name + 64, ".clbin"))
    return false;
  for (int i = 0; i < 32; i++) {
    int hi = hexval(name[2 * i]), lo = hexval(name[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    k->bytes[i] = (unsigned char)(hi * 16 + lo);
  }
  return true;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static void remove_tree(const char *dir) {
  nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
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
  /* the entry's name is its key; the header (8 bytes of magic, then the
   * key) repeats it */
  kiln_cache_key k;
  ck_assert_msg(key_of_name(entry, &k), "entry name %s", entry);
  unsigned char head[40];
  FILE *f = fopen(entry, "rb");
  ck_assert(f);
  ck_assert_uint_eq(fread(head, 1, sizeof head, f), sizeof head);
  fclose(f);
  ck_assert(!memcmp(head + 8, k.bytes, 32));
  /* second compile: from the cache, no build from source */
  compile_run(&t);
  ck_assert_uint_eq(builds(), b0 + 1);
  ck_assert_uint_eq(hits(), h0 + 1);
  /* damage the entry: bytes in the middle of the binary (the checksum),
   * then bytes of the key in the header; each time the compile warns,
   * builds from source and the rebuilt entry is good again */
  const long where[] = {-1, 8 + 5};
  for (int i = 0; i < 2; i++) {
    damage(entry, where[i], "garbage");
    char log[4096];
    compile_run_log(&t, log, sizeof log);
    ck_assert_msg(strstr(log, "damaged") && strstr(log, "compiling again"),
                  "no warning (damage at %ld); stderr: %s", where[i], log);
    ck_assert_uint_eq(builds(), b0 + 2 + (uint64_t)i);
    ck_assert_int_eq(cache_files(dir, entry, sizeof entry), 1);
    compile_run(&t);
    ck_assert_uint_eq(builds(), b0 + 2 + (uint64_t)i);
    ck_assert_uint_eq(hits(), h0 + 2 + (uint64_t)i);
  }
  tg_free(&t);
  unlink(entry);
  rmdir(dir);
}
END_TEST

/* An entry whose header and checksum are right but whose binary the driver
 * refuses: the warning names the entry (its key's first 16 bytes in hex),
 * the program is built from source and the entry replaced. */
START_TEST(cache_refused_binary) {
  char dir[] = "/tmp/kiln-ocl-cache-XXXXXX";
  ck_assert(mkdtemp(dir));
  setenv("KILN_CACHE_DIR", dir, 1);
  counter_fn builds, hits;
  counters(&builds, &hits);
  uint64_t b0 = builds(), h0 = hits();
  tg t;
  model(&t);
  compile_run(&t);
  char entry[4200];
  ck_assert_int_eq(cache_files(dir, entry, sizeof entry), 1);
  kiln_cache_key k;
  ck_assert_msg(key_of_name(entry, &k), "entry name %s", entry);
  static const char junk[] = "not a device binary, but a well-formed cache entry";
  ck_assert(kiln_cache_store("opencl", "clbin", &k, junk, sizeof junk));
  char log[4096];
  compile_run_log(&t, log, sizeof log);
  char prefix[33];
  memcpy(prefix, strrchr(entry, '/') + 1, 32);
  prefix[32] = 0;
  ck_assert_msg(strstr(log, "did not load") && strstr(log, prefix),
                "no warning naming %s; stderr: %s", prefix, log);
  ck_assert_uint_eq(builds(), b0 + 2);
  ck_assert_uint_eq(hits(), h0);
  compile_run(&t);
  ck_assert_uint_eq(builds(), b0 + 2);
  ck_assert_uint_eq(hits(), h0 + 1);
  tg_free(&t);
  unlink(entry);
  rmdir(dir);
}
END_TEST

/* KILN_COMPILE_NO_CACHE (kiln --no-cache): no entry is written, and an
 * entry that is there is not read. */
START_TEST(cache_no_cache_flag) {
  char dir[] = "/tmp/kiln-ocl-cache-XXXXXX";
  ck_assert(mkdtemp(dir));
  setenv("KILN_CACHE_DIR", dir, 1);
  counter_fn builds, hits;
  counters(&builds, &hits);
  uint64_t b0 = builds(), h0 = hits();
  kiln_compile_options o = {.struct_size = sizeof o, .device = -1, .flags = KILN_COMPILE_NO_CACHE};
  tg t;
  model(&t);
  char entry[4200];
  compile_run_opts(&t, &o);
  ck_assert_uint_eq(builds(), b0 + 1);
  ck_assert_int_eq(cache_files(dir, entry, sizeof entry), 0);
  compile_run(&t); /* writes the entry */
  ck_assert_uint_eq(builds(), b0 + 2);
  ck_assert_int_eq(cache_files(dir, entry, sizeof entry), 1);
  struct stat before, after;
  ck_assert_int_eq(stat(entry, &before), 0);
  compile_run_opts(&t, &o);
  ck_assert_uint_eq(builds(), b0 + 3);
  ck_assert_uint_eq(hits(), h0);
  ck_assert_int_eq(cache_files(dir, entry, sizeof entry), 1);
  ck_assert_int_eq(stat(entry, &after), 0);
  ck_assert_uint_eq((uint64_t)after.st_ino, (uint64_t)before.st_ino); /* not replaced */
  compile_run(&t);                                                    /* the entry is still good */
  ck_assert_uint_eq(builds(), b0 + 3);
  ck_assert_uint_eq(hits(), h0 + 1);
  tg_free(&t);
  unlink(entry);
  rmdir(dir);
}
END_TEST

/* KILN_CACHE_DIR=off: nothing read or written, neither in a folder named
 * "off" nor in the XDG_CACHE_HOME / HOME fallbacks. */
START_TEST(cache_dir_off) {
  char home[] = "/tmp/kiln-ocl-home-XXXXXX";
  ck_assert(mkdtemp(home));
  char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
  /* PoCL keeps its kernel cache under the same variables: pin it where it
   * was, or it recompiles its builtins (slow, and its LLVM's leaks then
   * fail a sanitizer build). */
  bool set_pocl = !getenv("POCL_CACHE_DIR");
  if (set_pocl) {
    char pocl[4200];
    if (old_xdg && *old_xdg)
      snprintf(pocl, sizeof pocl, "%s/pocl/kcache", old_xdg);
    else
      snprintf(pocl, sizeof pocl, "%s/.cache/pocl/kcache", old_home ? old_home : "/tmp");
    setenv("POCL_CACHE_DIR", pocl, 1);
  }
  setenv("HOME", home, 1);
  setenv("XDG_CACHE_HOME", home, 1);
  setenv("KILN_CACHE_DIR", "off", 1);
  bool had_off = access("off", F_OK) == 0;
  counter_fn builds, hits;
  counters(&builds, &hits);
  uint64_t b0 = builds(), h0 = hits();
  tg t;
  model(&t);
  compile_run(&t);
  compile_run(&t);
  ck_assert_uint_eq(builds(), b0 + 2);
  ck_assert_uint_eq(hits(), h0);
  ck_assert_msg(had_off || access("off", F_OK) != 0, "a folder named off was made");
  /* (the OpenCL driver may keep its own cache there: PoCL's "pocl") */
  char kiln_xdg[4200], kiln_home[4200];
  snprintf(kiln_xdg, sizeof kiln_xdg, "%s/kiln", home);
  snprintf(kiln_home, sizeof kiln_home, "%s/.cache/kiln", home);
  ck_assert_msg(access(kiln_xdg, F_OK) != 0, "%s was made", kiln_xdg);
  ck_assert_msg(access(kiln_home, F_OK) != 0, "%s was made", kiln_home);
  old_home ? setenv("HOME", old_home, 1) : unsetenv("HOME");
  old_xdg ? setenv("XDG_CACHE_HOME", old_xdg, 1) : unsetenv("XDG_CACHE_HOME");
  if (set_pocl)
    unsetenv("POCL_CACHE_DIR");
  free(old_home);
  free(old_xdg);
  tg_free(&t);
  remove_tree(home);
}
END_TEST

/* A cache folder that cannot be written: compiles still build and run. A
 * read-only folder for a user; for root, who may write anyway, a folder
 * that cannot be made (under a regular file). */
START_TEST(cache_unwritable) {
  char dir[] = "/tmp/kiln-ocl-ro-XXXXXX", file[] = "/tmp/kiln-ocl-file-XXXXXX", where[4200];
  ck_assert(mkdtemp(dir));
  ck_assert_int_eq(chmod(dir, 0555), 0);
  int fd = -1;
  if (access(dir, W_OK) == 0) {
    fd = mkstemp(file);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(where, sizeof where, "%s/sub", file);
  } else {
    snprintf(where, sizeof where, "%s", dir);
  }
  setenv("KILN_CACHE_DIR", where, 1);
  counter_fn builds, hits;
  counters(&builds, &hits);
  uint64_t b0 = builds(), h0 = hits();
  tg t;
  model(&t);
  char log[4096], entry[4200];
  compile_run_log(&t, log, sizeof log);
  /* The host warns once per process; under CK_FORK=no an earlier test may
   * have had the warning already. */
  const char *fork = getenv("CK_FORK");
  if (!fork || strcmp(fork, "no"))
    ck_assert_msg(strstr(log, "compile cache: cannot"), "no warning; stderr: %s", log);
  compile_run(&t);
  ck_assert_uint_eq(builds(), b0 + 2);
  ck_assert_uint_eq(hits(), h0);
  ck_assert_int_eq(cache_files(dir, entry, sizeof entry), 0);
  tg_free(&t);
  if (fd >= 0)
    unlink(file);
  chmod(dir, 0755);
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
  tcase_add_test(tc, cache_refused_binary);
  tcase_add_test(tc, cache_no_cache_flag);
  tcase_add_test(tc, cache_dir_off);
  tcase_add_test(tc, cache_unwritable);
  tcase_add_test(tc, device_selection);
  tcase_add_test(tc, no_device);
  suite_add_tcase(s, tc);
  return s;
}
