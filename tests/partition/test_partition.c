/* tests/partition/test_partition.c: the partitioner (`--backend A+B`),
 * end to end through kiln_compile and kiln_run.
 *
 * cases/NAME.kir: text in, text out. A case holds "# BACKENDS: LIST", any
 * number of "# ENV: KEY=VALUE" lines (what the test backends ta, tb, tc of
 * listed.c declare, cost and report), an optional "# DEVICE-MEMORY: ..."
 * line, the module, then "# EXPECT" and the regions as this file prints
 * them (one line per region: "region I on ENTRY level L: NODES", then its
 * weight bytes and the bytes it reads from and hands to other regions), or
 * "whole function on ENTRY" when no partition was made; or "# EXPECT-ERROR"
 * and a part of the compile error's message; or "# EXPECT-RUN-ERROR" and a
 * part of the message of a run on zero inputs, which must leave the
 * outputs as they were.
 *
 * The C tests below run partitioned executables: the results equal the
 * interpreter's, a failing region leaves the outputs untouched and the
 * message names the region, and bad lists get clear messages. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

#define EXPECT_OK(expr)                                                                            \
  do {                                                                                             \
    kiln_status s_ = (expr);                                                                       \
    ck_assert_msg(s_ == NULL, "%s failed: %s", #expr, s_ ? kiln_status_message(s_) : "");         \
  } while (0)

#define EXPECT_FAIL(expr, part)                                                                    \
  do {                                                                                             \
    kiln_status s_ = (expr);                                                                       \
    ck_assert_msg(s_ != NULL, "expected a failure containing '%s'", part);                         \
    ck_assert_msg(strstr(kiln_status_message(s_), part) != NULL, "message '%s' lacks '%s'",        \
                  kiln_status_message(s_), part);                                                  \
    kiln_status_free(s_);                                                                          \
  } while (0)

#define MAX_CASES 64
static char *names[MAX_CASES];
static int n_names;

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan(void) {
  DIR *d = opendir(TEST_CASES_DIR);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) && n_names < MAX_CASES) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".kir") == 0)
      names[n_names++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n_names, sizeof *names, cmp);
}

static void clear_env(void) {
  static const char *const be[] = {"TA", "TB", "TC"};
  static const char *const what[] = {"DECLARES", "COST", "MEMORY"};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      char k[64];
      snprintf(k, sizeof k, "KILN_TEST_%s_%s", be[i], what[j]);
      unsetenv(k);
    }
  unsetenv("KILN_PARTITION_SEED");
}

static kiln_context *context(void) {
  setenv("KILN_PLUGIN_PATH", TEST_PLUGIN_DIRS, 1);
  unsetenv("KILN_PLUGIN_PATH_ONLY");
  kiln_context *ctx = NULL;
  EXPECT_OK(kiln_context_create(&ctx));
  return ctx;
}

static kiln_module *parse(const char *text) {
  kiln_module *m = NULL;
  EXPECT_OK(kiln_module_parse(text, strlen(text), "test.kir", NULL, &m));
  return m;
}

/* The regions of exe as the cases write them. */
static void format_regions(const kiln_executable *exe, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
#define OUT(...)                                                                                   \
  do {                                                                                             \
    int w_ = snprintf(buf + used, n - used, __VA_ARGS__);                                          \
    ck_assert(w_ >= 0 && (size_t)w_ < n - used);                                                   \
    used += (size_t)w_;                                                                            \
  } while (0)
  uint32_t nr = kiln_executable_region_count(exe);
  for (uint32_t r = 0; r < nr; r++) {
    kiln_region_info ri = {.struct_size = sizeof ri};
    EXPECT_OK(kiln_executable_region(exe, r, &ri));
    if (ri.node_count == 0) {
      OUT("whole function on %s\n", ri.placement);
      continue;
    }
    OUT("region %u on %s level %u:", r, ri.placement, ri.level);
    for (uint32_t k = 0; k < ri.node_count; k++)
      OUT(" %s", ri.nodes[k]);
    OUT("\n  weights %llu B, in %llu B, out %llu B\n", (unsigned long long)ri.weight_bytes,
        (unsigned long long)ri.bytes_in, (unsigned long long)ri.bytes_out);
  }
#undef OUT
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = 0;
  fclose(f);
  return buf;
}

/* Trailing blanks and newlines off. */
static void trim(char *s) {
  size_t l = strlen(s);
  while (l && (s[l - 1] == '\n' || s[l - 1] == ' ' || s[l - 1] == '\r'))
    s[--l] = 0;
}

START_TEST(run_case) {
  ck_assert_int_lt(_i, n_names);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", TEST_CASES_DIR, names[_i]);
  char *text = slurp(path);
  ck_assert_msg(text != NULL, "cannot read %s", path);
  clear_env();
  char backends[512] = "", devmem[512] = "";
  for (char *line = text; line && *line;) {
    char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    char l[512];
    snprintf(l, sizeof l, "%.*s", (int)(len < sizeof l ? len : sizeof l - 1), line);
    if (strncmp(l, "# BACKENDS: ", 12) == 0)
      snprintf(backends, sizeof backends, "%s", l + 12);
    else if (strncmp(l, "# DEVICE-MEMORY: ", 17) == 0)
      snprintf(devmem, sizeof devmem, "%s", l + 17);
    else if (strncmp(l, "# ENV: ", 7) == 0) {
      char *eq = strchr(l + 7, '=');
      ck_assert_msg(eq != NULL, "%s: ENV line without '='", names[_i]);
      *eq = 0;
      setenv(l + 7, eq + 1, 1);
    } else if (strncmp(l, "# EXPECT", 8) == 0)
      break;
    line = nl ? nl + 1 : NULL;
  }
  ck_assert_msg(backends[0], "%s: no '# BACKENDS:' line", names[_i]);
  char *sep = strstr(text, "# EXPECT");
  ck_assert_msg(sep != NULL, "%s: no '# EXPECT' line", names[_i]);
  bool want_error = strncmp(sep, "# EXPECT-ERROR", 14) == 0;
  bool want_run_error = strncmp(sep, "# EXPECT-RUN-ERROR", 18) == 0;
  char *expected = strchr(sep, '\n');
  expected = expected ? expected + 1 : sep + strlen(sep);
  *sep = 0;
  trim(expected);

  kiln_context *ctx = context();
  kiln_module *m = parse(text);
  kiln_compile_options o = {.struct_size = sizeof o, .device = -1};
  o.device_memory = devmem[0] ? devmem : NULL;
  kiln_executable *exe = NULL;
  kiln_status s = kiln_compile(ctx, m, NULL, backends, &o, &exe);
  if (want_error) {
    ck_assert_msg(s != NULL, "%s: compiled, but the case expects an error", names[_i]);
    ck_assert_msg(strstr(kiln_status_message(s), expected) != NULL,
                  "%s: the error\n  %s\nlacks\n  %s", names[_i], kiln_status_message(s), expected);
    kiln_status_free(s);
  } else if (want_run_error) {
    ck_assert_msg(s == NULL, "%s: %s", names[_i], s ? kiln_status_message(s) : "");
    uint32_t ni = kiln_executable_input_count(exe), no = kiln_executable_output_count(exe);
    const void **in = calloc(ni + 1, sizeof *in);
    void **out = calloc(no + 1, sizeof *out);
    unsigned char **bufs = calloc(ni + no + 1, sizeof *bufs);
    size_t *sizes = calloc(ni + no + 1, sizeof *sizes);
    for (uint32_t i = 0; i < ni + no; i++) {
      kiln_io_info io;
      if (i < ni)
        kiln_executable_input(exe, i, &io);
      else
        kiln_executable_output(exe, i - ni, &io);
      sizes[i] = (size_t)kiln_type_bytes(&io.type);
      bufs[i] = malloc(sizes[i] + 1);
      memset(bufs[i], i < ni ? 0 : 0x5a, sizes[i] + 1);
      if (i < ni)
        in[i] = bufs[i];
      else
        out[i - ni] = bufs[i];
    }
    kiln_status rs = kiln_run(exe, in, out);
    ck_assert_msg(rs != NULL, "%s: ran, but the case expects a run-time error", names[_i]);
    ck_assert_msg(strstr(kiln_status_message(rs), expected) != NULL,
                  "%s: the run's error\n  %s\nlacks\n  %s", names[_i], kiln_status_message(rs),
                  expected);
    kiln_status_free(rs);
    for (uint32_t i = ni; i < ni + no; i++)
      for (size_t b = 0; b < sizes[i]; b++)
        ck_assert_msg(bufs[i][b] == 0x5a, "%s: output %u was written by a failed run", names[_i],
                      i - ni);
    for (uint32_t i = 0; i < ni + no; i++)
      free(bufs[i]);
    free(bufs);
    free(sizes);
    free(in);
    free(out);
  } else {
    ck_assert_msg(s == NULL, "%s: %s", names[_i], s ? kiln_status_message(s) : "");
    char got[8192];
    format_regions(exe, got, sizeof got);
    trim(got);
    ck_assert_msg(strcmp(got, expected) == 0, "%s: regions\n%s\n-- expected --\n%s", names[_i],
                  got, expected);
  }
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  clear_env();
  free(text);
}
END_TEST

/* y = Relu(Relu(x) @ W) + Relu(x), W the 4x4 matrix below. With
 * x = [-1, 2, -3, 4]: Relu(x) = r = [0, 2, 0, 4]; r @ W = [2*W10 + 4*W30,
 * ...] = [2*1 + 4*(-1), 2*0 + 4*2, 2*(-2) + 4*0, 2*3 + 4*1] = [-2, 8, -4,
 * 10]; Relu of that = [0, 8, 0, 10]; + r = [0, 10, 0, 14]. */
static const char chain_kir[] = "module @chain\n"
                                "input %x : f32[1,4]\n"
                                "const %w : f32[4,4] = [5, 6, 7, 8, 1, 0, -2, 3, 9, 9, 9, 9, -1, "
                                "2, 0, 1]\n"
                                "func @main {\n"
                                "  %a : f32[1,4] = Relu(%x)\n"
                                "  %b : f32[1,4] = MatMul(%a, %w)\n"
                                "  %c : f32[1,4] = Relu(%b)\n"
                                "  %d : f32[1,4] = Add(%c, %a)\n"
                                "  output %y = %d\n"
                                "}\n";

START_TEST(partitioned_run_is_exact) {
  clear_env();
  kiln_context *ctx = context();
  kiln_module *m = parse(chain_kir);
  const float x[4] = {-1, 2, -3, 4}, want[4] = {0, 10, 0, 14};
  /* picky (tests/core) runs only the Relus: four regions, two of them
   * on picky, which must each get an executable of their own. */
  kiln_executable *exe = NULL;
  EXPECT_OK(kiln_compile(ctx, m, NULL, "picky+interpreter", NULL, &exe));
  ck_assert_uint_eq(kiln_executable_region_count(exe), 4);
  ck_assert_str_eq(kiln_executable_backend(exe), "picky+interpreter");
  float y[4] = {0};
  const void *in[] = {x};
  void *out[] = {y};
  EXPECT_OK(kiln_run(exe, in, out));
  ck_assert_mem_eq(y, want, sizeof y);
  /* again, through bindings */
  kiln_bindings *b = NULL;
  float y2[4] = {0};
  EXPECT_OK(kiln_bindings_create(exe, &b));
  EXPECT_OK(kiln_bind_input(b, "x", x, sizeof x));
  EXPECT_OK(kiln_bind_output(b, "y", y2, sizeof y2));
  EXPECT_OK(kiln_run_bindings(exe, b));
  ck_assert_mem_eq(y2, want, sizeof y2);
  kiln_bindings_destroy(b);
  kiln_executable_destroy(exe);

  /* Random placements between two backends that run everything. */
  for (int seed = 1; seed <= 6; seed++) {
    char sv[8];
    snprintf(sv, sizeof sv, "%d", seed);
    setenv("KILN_PARTITION_SEED", sv, 1);
    EXPECT_OK(kiln_compile(ctx, m, NULL, "interpreter+picky", NULL, &exe));
    float y3[4] = {0};
    void *out3[] = {y3};
    EXPECT_OK(kiln_run(exe, in, out3));
    ck_assert_mem_eq(y3, want, sizeof y3);
    kiln_executable_destroy(exe);
  }
  unsetenv("KILN_PARTITION_SEED");
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

/* Outputs bound to an input, to a constant and twice to one value, beside
 * one made across two regions: r = Relu(x) = [0, 2, 0, 4] on picky, then
 * s = r + k = [1, 3, 1, 5] on the interpreter. */
START_TEST(outputs_of_every_kind) {
  clear_env();
  kiln_context *ctx = context();
  kiln_module *m = parse("module @outs\n"
                         "input %x : f32[4]\n"
                         "const %k : f32[4] = [1, 1, 1, 1]\n"
                         "func @main {\n"
                         "  %r : f32[4] = Relu(%x)\n"
                         "  %s : f32[4] = Add(%r, %k)\n"
                         "  output %y = %s\n"
                         "  output %same = %s\n"
                         "  output %echo = %x\n"
                         "  output %konst = %k\n"
                         "}\n");
  kiln_executable *exe = NULL;
  EXPECT_OK(kiln_compile(ctx, m, NULL, "picky+interpreter", NULL, &exe));
  ck_assert_uint_eq(kiln_executable_region_count(exe), 2);
  ck_assert_uint_eq(kiln_executable_output_count(exe), 4);
  kiln_io_info io;
  kiln_executable_output(exe, 2, &io);
  ck_assert_str_eq(io.name, "echo");
  const float x[4] = {-1, 2, -3, 4}, s[4] = {1, 3, 1, 5}, k[4] = {1, 1, 1, 1};
  float y[4], same[4], echo[4], konst[4];
  const void *in[] = {x};
  void *out[] = {y, same, echo, konst};
  EXPECT_OK(kiln_run(exe, in, out));
  ck_assert_mem_eq(y, s, sizeof y);
  ck_assert_mem_eq(same, s, sizeof same);
  ck_assert_mem_eq(echo, x, sizeof echo);
  ck_assert_mem_eq(konst, k, sizeof konst);
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

typedef struct runner {
  kiln_executable *exe;
  float x[4];
  int bad;
} runner;

/* Runs exe 200 times on its own input and counts wrong results: Relu(x)
 * @ W etc. as in chain_kir, for x = r->x, whose result is worked out from
 * scale: x = s * [-1, 2, -3, 4] gives s * [0, 10, 0, 14] for s > 0. */
static void *run_many(void *arg) {
  runner *r = arg;
  float s = r->x[1] / 2;
  for (int i = 0; i < 200; i++) {
    float y[4] = {0};
    const void *in[] = {r->x};
    void *out[] = {y};
    kiln_status st = kiln_run(r->exe, in, out);
    if (st || y[0] != 0 || y[1] != 10 * s || y[2] != 0 || y[3] != 14 * s)
      r->bad++;
    kiln_status_free(st);
  }
  return NULL;
}

START_TEST(concurrent_runs) {
  clear_env();
  kiln_context *ctx = context();
  kiln_module *m = parse(chain_kir);
  kiln_executable *exe = NULL;
  EXPECT_OK(kiln_compile(ctx, m, NULL, "picky+interpreter", NULL, &exe));
  runner a = {exe, {-1, 2, -3, 4}, 0}, b = {exe, {-2, 4, -6, 8}, 0};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, run_many, &b), 0);
  run_many(&a);
  pthread_join(t, NULL);
  ck_assert_int_eq(a.bad, 0);
  ck_assert_int_eq(b.bad, 0);
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(failing_region_writes_no_output) {
  clear_env();
  setenv("KILN_TEST_TA_DECLARES", "MatMul", 1);
  kiln_context *ctx = context();
  kiln_module *m = parse(chain_kir);
  kiln_executable *exe = NULL;
  EXPECT_OK(kiln_compile(ctx, m, NULL, "ta+interpreter", NULL, &exe));
  ck_assert_uint_eq(kiln_executable_region_count(exe), 3);
  const float x[4] = {-1, 2, -3, 4};
  float y[4] = {7, 7, 7, 7};
  const void *in[] = {x};
  void *out[] = {y};
  kiln_status s = kiln_run(exe, in, out);
  ck_assert_ptr_nonnull(s);
  const char *msg = kiln_status_message(s);
  ck_assert_msg(strstr(msg, "region 1 of 3 on 'ta' (nodes b) failed") != NULL, "message: %s", msg);
  ck_assert_msg(strstr(msg, "ta: a test backend that runs nothing") != NULL, "message: %s", msg);
  kiln_status_free(s);
  for (int i = 0; i < 4; i++)
    ck_assert_float_eq(y[i], 7);
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  clear_env();
}
END_TEST

START_TEST(bad_lists_are_named) {
  clear_env();
  setenv("KILN_TEST_TA_DECLARES", "*", 1);
  kiln_context *ctx = context();
  kiln_module *m = parse(chain_kir);
  kiln_executable *exe = NULL;
  kiln_compile_options o = {.struct_size = sizeof o, .device = -1};
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "ta+", NULL, &exe), "has an empty entry");
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "ta+nosuch", NULL, &exe), "no backend 'nosuch'");
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "ta:2", NULL, &exe),
              "'ta:2': backend 'ta' has 2 devices (0 to 1)");
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "ta:x", NULL, &exe), "the device after ':' must be");
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "ta+ta:0", NULL, &exe), "names the same device twice");
  o.device_memory = "tz=1K";
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "ta+tb", &o, &exe), "no entry 'tz' in the backend list");
  o.device_memory = "ta=12Q";
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "ta+tb", &o, &exe), "write NAME=BYTES");
  o.device_memory = NULL;
  EXPECT_FAIL(kiln_compile_bundle(ctx, m, NULL, "ta+tb", NULL, "/tmp", "b"),
              "a bundle is made by one backend");
  ck_assert_ptr_null(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  clear_env();
}
END_TEST

int main(void) {
  scan();
  Suite *s = suite_create("partition");
  TCase *tc = tcase_create("cases");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, run_case, 0, n_names);
  suite_add_tcase(s, tc);
  TCase *rt = tcase_create("run");
  tcase_set_timeout(rt, 60);
  tcase_add_test(rt, partitioned_run_is_exact);
  tcase_add_test(rt, outputs_of_every_kind);
  tcase_add_test(rt, concurrent_runs);
  tcase_add_test(rt, failing_region_writes_no_output);
  tcase_add_test(rt, bad_lists_are_named);
  suite_add_tcase(s, rt);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  for (int i = 0; i < n_names; i++)
    free(names[i]);
  if (n_names == 0) {
    fprintf(stderr, "no cases in %s\n", TEST_CASES_DIR);
    return EXIT_FAILURE;
  }
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
