/* tests/core/test_runtime.c: the compile driver, executables, bindings and
 * kiln_evaluate_value, end to end on the interpreter (and on the "picky"
 * test plugin for the support check). Expected values are worked out by
 * hand in the comments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

/* y = Relu(x + c); with x = [-5, 0, -1, 1]: x + c = [-4, 2, 2, 5], y = [0, 2, 2, 5]. */
static const char add_relu_kir[] = "module @addrelu\n"
                                   "input %x : f32[2,2]\n"
                                   "const %c : f32[2,2] = [1, 2, 3, 4]\n"
                                   "func @main {\n"
                                   "  %a : f32[2,2] = Add(%x, %c)\n"
                                   "  %r : f32[2,2] = Relu(%a)\n"
                                   "  output %y = %r\n"
                                   "}\n";

static const float add_relu_x[4] = {-5, 0, -1, 1};
static const float add_relu_y[4] = {0, 2, 2, 5};

static kiln_module *parse(const char *text) {
  kiln_module *m = NULL;
  EXPECT_OK(kiln_module_parse(text, strlen(text), "test.kir", NULL, &m));
  return m;
}

static kiln_context *default_context(void) {
  unsetenv("KILN_PLUGIN_PATH");
  unsetenv("KILN_PLUGIN_PATH_ONLY");
  kiln_context *ctx = NULL;
  EXPECT_OK(kiln_context_create(&ctx));
  return ctx;
}

START_TEST(compile_and_run_on_interpreter) {
  kiln_context *ctx = default_context();
  kiln_module *m = parse(add_relu_kir);
  kiln_executable *exe = NULL;
  EXPECT_OK(kiln_compile(ctx, m, NULL, "interpreter", NULL, &exe));
  kiln_module_destroy(m); /* the executable holds its own share of the data */
  ck_assert_str_eq(kiln_executable_backend(exe), "interpreter");
  ck_assert_uint_eq(kiln_executable_input_count(exe), 1);
  ck_assert_uint_eq(kiln_executable_output_count(exe), 1);
  kiln_io_info io;
  kiln_executable_input(exe, 0, &io);
  ck_assert_str_eq(io.name, "x");
  ck_assert_int_eq(io.type.elem, KILN_F32);
  ck_assert_uint_eq(io.type.rank, 2);
  kiln_executable_output(exe, 0, &io);
  ck_assert_str_eq(io.name, "y");
  ck_assert_int_eq(kiln_executable_find_input(exe, "x"), 0);
  ck_assert_int_eq(kiln_executable_find_output(exe, "y"), 0);
  ck_assert_int_eq(kiln_executable_find_input(exe, "y"), -1);
  ck_assert_ptr_nonnull(kiln_executable_ir(exe));

  float y[4] = {0};
  const void *in[] = {add_relu_x};
  void *out[] = {y};
  for (int round = 0; round < 2; round++) {
    memset(y, 0xff, sizeof y);
    EXPECT_OK(kiln_run(exe, in, out));
    ck_assert_mem_eq(y, add_relu_y, sizeof y);
  }
  EXPECT_FAIL(kiln_run(exe, NULL, out), KILN_INVALID_ARGUMENT, "inputs is NULL");
  EXPECT_FAIL(kiln_run(NULL, in, out), KILN_INVALID_ARGUMENT, "executable is NULL");
  kiln_executable_destroy(exe);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(bindings_check_names_sizes_and_completeness) {
  kiln_context *ctx = default_context();
  kiln_module *m = parse(add_relu_kir);
  kiln_executable *exe = NULL;
  EXPECT_OK(kiln_compile(ctx, m, "main", "interpreter", NULL, &exe));
  kiln_bindings *b = NULL;
  EXPECT_OK(kiln_bindings_create(exe, &b));
  float y[4] = {0};
  EXPECT_FAIL(kiln_run_bindings(exe, b), KILN_FAILED_PRECONDITION,
              "unbound inputs: 'x' f32[2,2]; unbound outputs: 'y' f32[2,2]");
  EXPECT_FAIL(kiln_bind_input(b, "z", add_relu_x, sizeof add_relu_x), KILN_NOT_FOUND,
              "no input 'z' (its inputs: 'x' f32[2,2])");
  EXPECT_FAIL(kiln_bind_input(b, "x", add_relu_x, 12), KILN_INVALID_ARGUMENT,
              "input 'x' is f32[2,2] (16 bytes) but the bound buffer has 12 bytes");
  EXPECT_OK(kiln_bind_input(b, "x", add_relu_x, sizeof add_relu_x));
  EXPECT_FAIL(kiln_run_bindings(exe, b), KILN_FAILED_PRECONDITION, "unbound outputs: 'y'");
  EXPECT_OK(kiln_bind_output(b, "y", y, sizeof y));
  EXPECT_OK(kiln_run_bindings(exe, b));
  ck_assert_mem_eq(y, add_relu_y, sizeof y);
  kiln_bindings_destroy(b);
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(compile_errors_name_the_culprit) {
  kiln_context *ctx = default_context();
  kiln_module *m = parse(add_relu_kir);
  kiln_executable *exe = NULL;
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "nope", NULL, &exe), KILN_NOT_FOUND, "no backend 'nope'");
  EXPECT_FAIL(kiln_compile(ctx, m, "other", "interpreter", NULL, &exe), KILN_NOT_FOUND,
              "no function 'other' (it has: main)");
  ck_assert_ptr_null(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(unsupported_node_is_reported_with_types) {
  test_use_fake_plugins();
  kiln_context *ctx = NULL;
  EXPECT_OK(kiln_context_create(&ctx));
  kiln_module *m = parse(add_relu_kir);
  kiln_executable *exe = NULL;
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "picky", NULL, &exe), KILN_UNIMPLEMENTED,
              "node 'a' (Add) with inputs (f32[2,2], f32[2,2]): backend 'picky' does not run it "
              "and no lowering rule exists for it");
  /* A refused plugin asked for by name says why it is missing. */
  EXPECT_FAIL(kiln_compile(ctx, m, NULL, "badabi", NULL, &exe), KILN_NOT_FOUND,
              "plugin built for ABI 99.3");
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(picky_plugin_runs_end_to_end) {
  test_use_fake_plugins();
  kiln_context *ctx = NULL;
  EXPECT_OK(kiln_context_create(&ctx));
  kiln_module *m = parse("module @r\ninput %x : f32[3]\nfunc @main {\n"
                         "  %r : f32[3] = Relu(%x)\n  output %y = %r\n}\n");
  kiln_executable *exe = NULL;
  EXPECT_OK(kiln_compile(ctx, m, NULL, "picky", NULL, &exe));
  const float x[3] = {-1, 2, -0.5f}, want[3] = {0, 2, 0};
  float y[3];
  const void *in[] = {x};
  void *out[] = {y};
  EXPECT_OK(kiln_run(exe, in, out));
  ck_assert_mem_eq(y, want, sizeof y);
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

/* s = c * c = [1, 4, 9, 16] is known at compile time; t = s + x is not. */
START_TEST(evaluate_constant_cone) {
  kiln_context *ctx = default_context();
  kiln_module *m = parse("module @e\ninput %x : f32[2,2]\n"
                         "const %c : f32[2,2] = [1, 2, 3, 4]\n"
                         "func @main {\n"
                         "  %s : f32[2,2] = Mul(%c, %c)\n"
                         "  %t : f32[2,2] = Add(%s, %x)\n"
                         "  output %y = %t\n}\n");
  kiln_tensor t;
  EXPECT_OK(kiln_evaluate_value(ctx, m, kiln_module_find_value(m, "s"), &t));
  const float want[4] = {1, 4, 9, 16};
  ck_assert_int_eq(t.type.elem, KILN_F32);
  ck_assert_uint_eq(t.type.rank, 2);
  ck_assert_mem_eq(t.data, want, sizeof want);
  kiln_tensor_free(&t);
  EXPECT_FAIL(kiln_evaluate_value(ctx, m, kiln_module_find_value(m, "t"), &t),
              KILN_FAILED_PRECONDITION, "depends on module input 'x'");
  EXPECT_FAIL(kiln_evaluate_value(ctx, m, kiln_module_find_value(m, "x"), &t),
              KILN_FAILED_PRECONDITION, "'x' is a module input");
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

/* examples/models/mlp.kir on x = [1, 2, -1, 0.5]:
 * x.W1 = [-1, 0.5, -0.75]; + b1 [1.5, 0.5, -0.25] = [0.5, 1, -1]; Relu: [0.5, 1, 0]
 * .W2 ([[2,-1],[1,1],[5,5]]) = [2, 0.5]; + b2 [0, 0.5] = [2, 1]
 * Softmax: [e/(e+1), 1/(e+1)] = [0.7310586, 0.2689414]. */
START_TEST(mlp_example_model) {
  kiln_context *ctx = default_context();
  kiln_module *m = NULL;
  EXPECT_OK(kiln_module_load_text(KILN_SOURCE_ROOT "/examples/models/mlp.kir", NULL, &m));
  kiln_tensor x;
  EXPECT_OK(kiln_tensor_read_npy(KILN_SOURCE_ROOT "/examples/models/mlp_input.npy", &x));
  kiln_executable *exe = NULL;
  EXPECT_OK(kiln_compile(ctx, m, NULL, "interpreter", NULL, &exe));
  float y[2];
  const void *in[] = {x.data};
  void *out[] = {y};
  EXPECT_OK(kiln_run(exe, in, out));
  double e = exp(1.0);
  ck_assert_double_eq_tol(y[0], e / (e + 1), 1e-6);
  ck_assert_double_eq_tol(y[1], 1 / (e + 1), 1e-6);
  kiln_tensor_free(&x);
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST


/* Conv + BatchNormalization, which bnfold turns into new weights
 * (W' = [1, 2, 9, 12], B' = [0.5, 9]: see tests/passes/cases/bnfold_conv.kir).
 * x channel 0 = [1, 2, 3, 4], channel 1 = [0, 1, 0, 1]:
 *   y0 = x0 + 2 x1 + 0.5        = [1.5, 4.5, 3.5, 6.5]
 *   y1 = 9 x0 + 12 x1 + 9       = [18, 39, 36, 57]
 * (unfolded: c1 = 3 x0 + 4 x1 + 2 = [5, 12, 11, 18]; (c1 + 1) * 3 = y1). */
static const char conv_bn_kir[] =
    "module @convbn\n"
    "input %x : f32[1,2,2,2]\n"
    "const %w : f32[2,2,1,1] = [1, 2, 3, 4]\n"
    "const %b : f32[2] = [1, 2]\n"
    "const %scale : f32[2] = [2, 3]\n"
    "const %bias : f32[2] = [0.5, 0]\n"
    "const %mean : f32[2] = [1, -1]\n"
    "const %var : f32[2] = [3, 0]\n"
    "func @main {\n"
    "  %c : f32[1,2,2,2] = Conv(%x, %w, %b) {kernel_shape = [1, 1]}\n"
    "  %n : f32[1,2,2,2] = BatchNormalization(%c, %scale, %bias, %mean, %var) {epsilon = 1}\n"
    "  output %y = %n\n"
    "}\n";
static const float conv_bn_x[8] = {1, 2, 3, 4, 0, 1, 0, 1};
static const float conv_bn_y[8] = {1.5f, 4.5f, 3.5f, 6.5f, 18, 39, 36, 57};

static void run_conv_bn(kiln_executable *exe) {
  float y[8];
  memset(y, 0xff, sizeof y);
  const void *in[] = {conv_bn_x};
  void *out[] = {y};
  EXPECT_OK(kiln_run(exe, in, out));
  for (int i = 0; i < 8; i++)
    ck_assert_float_eq_tol(y[i], conv_bn_y[i], 1e-5f);
}

/* Passes work on a copy that shares the module's constant data: bnfold
 * makes new constants and leaves the shared ones as they were; the
 * executable runs after the module is gone. On every backend present. */
START_TEST(shared_constants_survive_passes_and_module) {
  kiln_context *ctx = default_context();
  static const char *const backends[] = {"interpreter", "cpu"};
  for (int k = 0; k < 2; k++) {
    if (!kiln_context_find_backend(ctx, backends[k]))
      continue;
    kiln_module *m = parse(conv_bn_kir);
    kiln_value *w = kiln_module_find_value(m, "w");
    const void *wdata = kiln_value_data(w);
    kiln_executable *exe = NULL;
    EXPECT_OK(kiln_compile(ctx, m, NULL, backends[k], NULL, &exe));
    /* the user's module is unchanged: same constants, same bytes, at the
     * same place */
    ck_assert_uint_eq(kiln_module_constant_count(m), 6);
    ck_assert_ptr_eq(kiln_value_data(kiln_module_find_value(m, "w")), wdata);
    static const float w0[4] = {1, 2, 3, 4};
    ck_assert_mem_eq(wdata, w0, sizeof w0);
    ck_assert_ptr_null(kiln_module_verify(m));
    kiln_module_destroy(m);
    run_conv_bn(exe);
    run_conv_bn(exe);
    kiln_executable_destroy(exe);
  }
  kiln_context_destroy(ctx);
}
END_TEST

/* kiln_compile_take: the module is taken (and NULLed) on success and on
 * failure alike, and the executable computes what kiln_compile's does. */
START_TEST(compile_take_consumes_the_module) {
  kiln_context *ctx = default_context();
  static const char *const backends[] = {"interpreter", "cpu"};
  for (int k = 0; k < 2; k++) {
    if (!kiln_context_find_backend(ctx, backends[k]))
      continue;
    kiln_module *m = parse(conv_bn_kir);
    kiln_executable *exe = NULL;
    EXPECT_OK(kiln_compile_take(ctx, &m, NULL, backends[k], NULL, &exe));
    ck_assert_ptr_null(m);
    run_conv_bn(exe);
    kiln_executable_destroy(exe);
  }
  kiln_module *m = parse(conv_bn_kir);
  kiln_executable *exe = NULL;
  EXPECT_FAIL(kiln_compile_take(ctx, &m, NULL, "no-such-backend", NULL, &exe), KILN_NOT_FOUND,
              "no-such-backend");
  ck_assert_ptr_null(m);
  ck_assert_ptr_null(exe);
  m = parse(conv_bn_kir);
  EXPECT_FAIL(kiln_compile_take(ctx, &m, "nope", "interpreter", NULL, &exe), KILN_NOT_FOUND,
              "nope");
  ck_assert_ptr_null(m);
  kiln_context_destroy(ctx);
}
END_TEST

Suite *runtime_suite(void) {
  Suite *s = suite_create("runtime");
  TCase *tc = tcase_create("runtime");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, compile_and_run_on_interpreter);
  tcase_add_test(tc, bindings_check_names_sizes_and_completeness);
  tcase_add_test(tc, compile_errors_name_the_culprit);
  tcase_add_test(tc, unsupported_node_is_reported_with_types);
  tcase_add_test(tc, picky_plugin_runs_end_to_end);
  tcase_add_test(tc, evaluate_constant_cone);
  tcase_add_test(tc, mlp_example_model);
  tcase_add_test(tc, shared_constants_survive_passes_and_module);
  tcase_add_test(tc, compile_take_consumes_the_module);
  suite_add_tcase(s, tc);
  return s;
}
