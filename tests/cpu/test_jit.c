/* tests/cpu/test_jit.c: graphs compiled and run on "cpu" through kiln.h,
 * checked against hand-computed values and against the interpreter: odd
 * sizes around the vector width, broadcasting, every elementwise kind,
 * threads 1 vs 2 bit for bit, concurrent-safe repeated runs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

static void kt_vs_interp(const char *text, double rtol, double atol) {
  kt_run a, b;
  kt_run_text(text, "cpu", 2, &a);
  kt_run_text(text, "interpreter", 0, &b);
  kt_assert_close(&a, &b, rtol, atol);
  kt_run_free(&a);
  kt_run_free(&b);
}

START_TEST(add_hand_computed) {
  const char *text = "module @t\n"
                     "const %a : f32[3] = [1, 2, 3]\n"
                     "const %b : f32[1] = [10]\n"
                     "func @main {\n"
                     "  %s : f32[3] = Add(%a, %b)\n"
                     "  %m : f32[3] = Mul(%s, %a)\n"
                     "  %r : f32[3] = Relu(%m)\n"
                     "  output %y = %s\n"
                     "  output %z = %r\n"
                     "}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  ck_assert_float_eq(r.out[0][0], 11.0f);
  ck_assert_float_eq(r.out[0][1], 12.0f);
  ck_assert_float_eq(r.out[0][2], 13.0f);
  ck_assert_float_eq(r.out[1][0], 11.0f);
  ck_assert_float_eq(r.out[1][1], 24.0f);
  ck_assert_float_eq(r.out[1][2], 39.0f);
  kt_run_free(&r);
}
END_TEST

/* Every sizes' loop tail: 1, 7, 17 and the vector widths +-1. */
static const int64_t kt_sizes[] = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100003};

START_TEST(unary_kinds_sizes) {
  static const char *const kinds[] = {"Abs",   "Ceil", "Cos",  "Erf",      "Exp",
                                      "Floor", "Neg",  "Relu", "Round",    "Sigmoid",
                                      "Sign",  "Sin",  "Tanh", "Softsign", "Softplus"};
  for (size_t s = 0; s < sizeof kt_sizes / sizeof *kt_sizes; s++)
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
      if (kt_sizes[s] > 1000 && k > 2)
        continue; /* the big size once per family is enough */
      char text[512];
      snprintf(text, sizeof text,
               "module @t\ninput %%x : f32[%lld]\nfunc @main {\n"
               "  %%y : f32[%lld] = %s(%%x)\n  output %%o = %%y\n}\n",
               (long long)kt_sizes[s], (long long)kt_sizes[s], kinds[k]);
      kt_vs_interp(text, 1e-6, 1e-6);
    }
}
END_TEST

START_TEST(positive_domain_kinds) {
  /* Log, Sqrt, Reciprocal on |x| + 0.5 (inputs are in [-3, 3)). */
  static const char *const kinds[] = {"Log", "Sqrt", "Reciprocal"};
  for (size_t k = 0; k < 3; k++)
    for (size_t s = 0; s < sizeof kt_sizes / sizeof *kt_sizes; s++) {
      char text[512];
      long long n = (long long)kt_sizes[s];
      snprintf(text, sizeof text,
               "module @t\ninput %%x : f32[%lld]\nconst %%h : f32[] = [0.5]\nfunc @main {\n"
               "  %%a : f32[%lld] = Abs(%%x)\n  %%p : f32[%lld] = Add(%%a, %%h)\n"
               "  %%y : f32[%lld] = %s(%%p)\n  output %%o = %%y\n}\n",
               n, n, n, n, kinds[k]);
      kt_vs_interp(text, 1e-6, 1e-7);
    }
}
END_TEST

START_TEST(binary_broadcast) {
  static const char *const kinds[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"};
  static const char *const shapes[][3] = {{"[3,1,5]", "[1,4,1]", "[3,4,5]"},
                                          {"[2,17]", "[17]", "[2,17]"},
                                          {"[7]", "[]", "[7]"},
                                          {"[1]", "[9,1]", "[9,1]"},
                                          {"[4,1,33]", "[4,6,33]", "[4,6,33]"},
                                          /* rows of 16 over three outer dims
                                           * (a blocked layout's per-channel
                                           * constant), enough elements for 2
                                           * threads, split inside a row */
                                          {"[3,5,173,16]", "[1,5,1,16]", "[3,5,173,16]"}};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
      char text[768];
      /* Pow: a positive base keeps the reference finite. */
      snprintf(text, sizeof text,
               "module @t\ninput %%a : f32%s\ninput %%b : f32%s\nfunc @main {\n"
               "  %%p : f32%s = Abs(%%a)\n"
               "  %%y : f32%s = %s(%s, %%b)\n  output %%o = %%y\n}\n",
               shapes[s][0], shapes[s][1], shapes[s][0], shapes[s][2], kinds[k],
               k == 6 ? "%p" : "%a");
      kt_vs_interp(text, 1e-5, 1e-6);
    }
}
END_TEST

START_TEST(variadic_and_int) {
  kt_vs_interp("module @t\ninput %a : f32[5,7]\ninput %b : f32[7]\ninput %c : f32[5,1]\n"
               "func @main {\n  %s : f32[5,7] = Sum(%a, %b, %c)\n"
               "  %m : f32[5,7] = Mean(%a, %b, %c)\n  %x : f32[5,7] = Max(%a, %b, %c)\n"
               "  output %o = %s\n  output %p = %m\n  output %q = %x\n}\n",
               1e-6, 1e-6);
  /* integer arithmetic, hand-computed: a = [-5, -2, 1, 4] */
  const char *text = "module @t\ninput %a : i32[4]\nconst %b : i32[4] = [2, 2, -3, 3]\n"
                     "func @main {\n  %q : i32[4] = Div(%a, %b)\n  %s : i32[4] = Sub(%q, %b)\n"
                     "  output %o = %s\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  /* a / b truncates: [-2, -1, 0, 1]; minus b: [-4, -3, 3, -2] */
  const int32_t *o = (const int32_t *)(const void *)r.out[0];
  ck_assert_int_eq(o[0], -4);
  ck_assert_int_eq(o[1], -3);
  ck_assert_int_eq(o[2], 3);
  ck_assert_int_eq(o[3], -2);
  kt_run_free(&r);
}
END_TEST

START_TEST(threads_bit_identical) {
  const char *text = "module @t\ninput %a : f32[300,517]\ninput %b : f32[517]\nfunc @main {\n"
                     "  %s : f32[300,517] = Add(%a, %b)\n  %e : f32[300,517] = Tanh(%s)\n"
                     "  %m : f32[300,517] = Mul(%e, %a)\n  output %o = %m\n}\n";
  kt_run a, b, c;
  kt_run_text(text, "cpu", 1, &a);
  kt_run_text(text, "cpu", 2, &b);
  kt_run_text(text, "cpu", 2, &c);
  ck_assert_int_eq(a.n[0], 300 * 517);
  ck_assert(memcmp(a.out[0], b.out[0], (size_t)a.n[0] * sizeof(float)) == 0);
  ck_assert(memcmp(b.out[0], c.out[0], (size_t)a.n[0] * sizeof(float)) == 0);
  kt_run_free(&a);
  kt_run_free(&b);
  kt_run_free(&c);
}
END_TEST

START_TEST(mlp_example) {
  /* examples/models/mlp.kir worked out by hand there. */
  const char *text =
      "module @mlp\ninput %x : f32[1,4]\n"
      "const %w1 : f32[4,3] = [0.5, -1, 0.25, 0.25, 0.5, -0.5, 1, 0, 0.5, -2, 1, 1]\n"
      "const %b1 : f32[3] = [1.5, 0.5, -0.25]\nconst %w2 : f32[3,2] = [2, -1, 1, 1, 5, 5]\n"
      "const %b2 : f32[2] = [0, 0.5]\nconst %xv : f32[1,4] = [1, 2, -1, 0.5]\nfunc @main {\n"
      "  %h : f32[1,3] = MatMul(%xv, %w1)\n  %hb : f32[1,3] = Add(%h, %b1)\n"
      "  %r : f32[1,3] = Relu(%hb)\n  %o : f32[1,2] = MatMul(%r, %w2)\n"
      "  %ob : f32[1,2] = Add(%o, %b2)\n  %p : f32[1,2] = Softmax(%ob)\n  output %y = %p\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 2, &r);
  ck_assert_double_lt(fabs(r.out[0][0] - 0.7310586), 1e-6);
  ck_assert_double_lt(fabs(r.out[0][1] - 0.2689414), 1e-6);
  kt_run_free(&r);
}
END_TEST

START_TEST(compile_error_names_kind) {
  /* Erf of an integer type has no cpu code and no lowering rule: the
   * message names the type and the backend. */
  const char *text = "module @t\ninput %x : i16[4]\nfunc @main {\n  %y : i16[4] = Erf(%x)\n"
                     "  output %o = %y\n}\n";
  kiln_module *m = NULL;
  kiln_executable *exe = NULL;
  kiln_status s = kiln_module_parse(text, strlen(text), "t.kir", NULL, &m);
  ck_assert_ptr_null(s);
  s = kiln_compile(kt_ctx(), m, NULL, "cpu", NULL, &exe);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "i16"));
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "cpu"));
  kiln_status_free(s);
  kiln_module_destroy(m);
}
END_TEST

Suite *kcpu_jit_suite(void) {
  Suite *s = suite_create("cpu-jit");
  TCase *tc = tcase_create("jit");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, add_hand_computed);
  tcase_add_test(tc, unary_kinds_sizes);
  tcase_add_test(tc, positive_domain_kinds);
  tcase_add_test(tc, binary_broadcast);
  tcase_add_test(tc, variadic_and_int);
  tcase_add_test(tc, threads_bit_identical);
  tcase_add_test(tc, mlp_example);
  tcase_add_test(tc, compile_error_names_kind);
  suite_add_tcase(s, tc);
  return s;
}
