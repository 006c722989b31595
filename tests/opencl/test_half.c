/* tests/opencl/test_half.c: f16 and bf16 as storage types on opencl. Casts
 * are checked against hand-rounded values (round to nearest even, ties and
 * subnormals included); elementwise and data-movement kinds on f16/bf16
 * must match the interpreter bit for bit. */
#include <math.h>

#include "helpers.h"

static const int64_t d8[] = {8}, d23[] = {2, 3}, d3[] = {3};

/* f32 -> e -> f32; the rounding shows in the f32 result. */
static void roundtrip(kiln_elem e, const float *want) {
  tg t;
  tg_init(&t);
  kiln_value *x = tg_input(&t, "x", KILN_F32, 1, d8);
  kiln_attr_desc to_h = KILN_ATTR_T("to", e), to_f = KILN_ATTR_T("to", KILN_F32);
  kiln_value *h = tg_node(&t, KILN_NODE_Cast, &x, 1, &to_h, 1);
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Cast, &h, 1, &to_f, 1));
  tg_output(&t, "h", h);
  /* 1, the ties 1+2^-11 and 1+3*2^-11 (f16), 65519, -2.5, the ties
   * 1+2^-8 and 1+3*2^-8 (bf16), and 1.5*2^-25 (rounds up to the smallest
   * f16 subnormal 2^-24). */
  const float xv[] = {1.0f,  1.00048828125f, 1.00146484375f, 65519.0f,
                      -2.5f, 1.00390625f,    1.01171875f,    4.470348358154297e-08f};
  const void *ins[] = {xv};
  tg_check(&t, ins, 0, want, 8);
  tg_free(&t);
}

START_TEST(cast_f16) {
  const float want[] = {1.0f,  1.0f,        1.001953125f, 65504.0f,
                        -2.5f, 1.00390625f, 1.01171875f,  5.9604644775390625e-08f};
  roundtrip(KILN_F16, want);
}
END_TEST

START_TEST(cast_bf16) {
  const float want[] = {1.0f, 1.0f, 1.0f, 65536.0f, -2.5f, 1.0f, 1.015625f, 4.470348358154297e-08f};
  roundtrip(KILN_BF16, want);
}
END_TEST

/* Elementwise and movement kinds on one half type, checked against the
 * interpreter on filled inputs. */
static void elementwise(kiln_elem e) {
  tg t;
  tg_init(&t);
  kiln_value *a = tg_input(&t, "a", e, 2, d23), *b = tg_input(&t, "b", e, 1, d3);
  kiln_value *ab[] = {a, b};
  kiln_value *sum = tg_node(&t, KILN_NODE_Add, ab, 2, NULL, 0);
  tg_output(&t, "add", sum);
  tg_output(&t, "mul", tg_node(&t, KILN_NODE_Mul, ab, 2, NULL, 0));
  tg_output(&t, "max", tg_node(&t, KILN_NODE_Max, ab, 2, NULL, 0));
  tg_output(&t, "less", tg_node(&t, KILN_NODE_Less, ab, 2, NULL, 0));
  tg_output(&t, "exp", tg_node(&t, KILN_NODE_Exp, &a, 1, NULL, 0));
  tg_output(&t, "neg", tg_node(&t, KILN_NODE_Neg, &a, 1, NULL, 0));
  int64_t perm[] = {1, 0};
  kiln_attr_desc pa = KILN_ATTR_IS("perm", perm, 2);
  tg_output(&t, "tr", tg_node(&t, KILN_NODE_Transpose, &sum, 1, &pa, 1));
  kiln_attr_desc to = KILN_ATTR_T("to", KILN_I32);
  tg_output(&t, "cast", tg_node(&t, KILN_NODE_Cast, &a, 1, &to, 1));
  tg_check(&t, NULL, 0, NULL, 0);
  tg_free(&t);
}

START_TEST(elementwise_f16) {
  elementwise(KILN_F16);
}
END_TEST

START_TEST(elementwise_bf16) {
  elementwise(KILN_BF16);
}
END_TEST

Suite *ocl_half_suite(void) {
  Suite *s = suite_create("opencl_half");
  TCase *tc = tcase_create("half");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, cast_f16);
  tcase_add_test(tc, cast_bf16);
  tcase_add_test(tc, elementwise_f16);
  tcase_add_test(tc, elementwise_bf16);
  suite_add_tcase(s, tc);
  return s;
}
