/* tests/interp/test_elementwise.c: unary, binary, variadic, conversion and
 * Bitwise kernels, Mish and Swish, with expected values worked out by hand
 * (known closed forms of the math functions, ONNX's definitions of the
 * activations). */
#include <stdint.h>

#include "helpers.h"

#define PI 3.14159265358979323846
#define E 2.71828182845904523536

typedef struct unary_case {
  const char *name;
  interp_kernel_fn fn;
  uint32_t n;
  double x[4], y[4];
} unary_case;

START_TEST(unary_float_table) {
  const unary_case cases[] = {
      {"Abs", interp_Abs, 4, {-2, 3, -0.5, 0}, {2, 3, 0.5, 0}},
      {"Acos", interp_Acos, 4, {1, 0, -1, 0.5}, {0, PI / 2, PI, PI / 3}},
      {"Acosh", interp_Acosh, 2, {1, 1.5430806348152437}, {0, 1}},
      {"Asin", interp_Asin, 4, {0, 1, -1, 0.5}, {0, PI / 2, -PI / 2, PI / 6}},
      {"Asinh", interp_Asinh, 2, {0, 1.1752011936438014}, {0, 1}},
      {"Atan", interp_Atan, 3, {0, 1, -1}, {0, PI / 4, -PI / 4}},
      {"Atanh", interp_Atanh, 2, {0, 0.46211715726000974}, {0, 0.5}},
      {"Ceil", interp_Ceil, 4, {1.5, -1.5, 2, -0.2}, {2, -1, 2, 0}},
      {"Cos", interp_Cos, 2, {0, PI}, {1, -1}},
      {"Cosh", interp_Cosh, 2, {0, 1}, {1, 1.5430806348152437}},
      {"Erf", interp_Erf, 4, {0, INFINITY, -INFINITY, 0.5}, {0, 1, -1, 0.5204998778130465}},
      {"Exp", interp_Exp, 3, {0, 1, -INFINITY}, {1, E, 0}},
      {"Floor", interp_Floor, 4, {1.5, -1.5, 2, -0.2}, {1, -2, 2, -1}},
      {"Log", interp_Log, 3, {1, E, 0}, {0, 1, -INFINITY}},
      {"Neg", interp_Neg, 2, {1, -2}, {-1, 2}},
      {"Reciprocal", interp_Reciprocal, 3, {2, -4, 0}, {0.5, -0.25, INFINITY}},
      {"Relu", interp_Relu, 4, {-1, 2, 0, NAN}, {0, 2, 0, NAN}},
      {"Round", interp_Round, 4, {0.5, 1.5, 2.5, -2.5}, {0, 2, 2, -2}},
      {"Sigmoid", interp_Sigmoid, 3, {0, 1.0986122886681098, -1000}, {0.5, 0.75, 0}},
      {"Sign", interp_Sign, 4, {-3, 0, 2, NAN}, {-1, 0, 1, NAN}},
      {"Sin", interp_Sin, 2, {0, PI / 2}, {0, 1}},
      {"Sinh", interp_Sinh, 2, {0, 1}, {0, 1.1752011936438014}},
      {"Softplus", interp_Softplus, 3, {0, 100, -100}, {0.6931471805599453, 100, 0}},
      {"Softsign", interp_Softsign, 2, {1, -3}, {0.5, -0.75}},
      {"Sqrt", interp_Sqrt, 4, {4, 0, 2.25, -1}, {2, 0, 1.5, NAN}},
      {"Tan", interp_Tan, 2, {0, PI / 4}, {0, 1}},
      {"Tanh", interp_Tanh, 2, {0, 0.5}, {0, 0.46211715726000974}},
      {"Elu", interp_Elu, 2, {-1, 2}, {1 / E - 1, 2}},
      {"Selu", interp_Selu, 3, {0, 1, -1}, {0, 1.0507010221481323, -1.1113307412864784}},
      {"Celu", interp_Celu, 2, {-1, 2}, {1 / E - 1, 2}},
      {"HardSigmoid", interp_HardSigmoid, 4, {0, 5, -5, 1}, {0.5, 1, 0, 0.7}},
      {"HardSwish", interp_HardSwish, 4, {3, -3, 0, 1}, {3, 0, 0, 2.0 / 3}},
      {"LeakyRelu", interp_LeakyRelu, 2, {-1, 2}, {-0.01, 2}},
      {"ThresholdedRelu", interp_ThresholdedRelu, 3, {0.5, 1, 1.5}, {0, 0, 1.5}},
      {"Shrink", interp_Shrink, 3, {-1, 0.3, 2}, {-1, 0, 2}},
      {"Gelu", interp_Gelu, 3, {0, 1, -1}, {0, 0.8413447460685429, -0.15865525393145707}},
      {"Identity", interp_Identity, 3, {1, NAN, -INFINITY}, {1, NAN, -INFINITY}},
  };
  for (uint32_t c = 0; c < NELEM(cases); c++) {
    ck_assert_msg(cases[c].fn != NULL, "kernel %s missing", cases[c].name);
    double x[4], y[4] = {0};
    memcpy(x, cases[c].x, sizeof x);
    interp_tensor in = tt(KILN_F64, x, 1, DIMS(cases[c].n));
    interp_tensor out = tt(KILN_F64, y, 1, DIMS(cases[c].n));
    kiln_status s = cases[c].fn(NULL, &out, 1, &in, 1);
    ck_assert_msg(s == NULL, "%s: %s", cases[c].name, kiln_status_message(s));
    expect_f64(y, cases[c].y, cases[c].n, 1e-12, cases[c].name);
  }
}
END_TEST

START_TEST(unary_attrs) {
  double x[3] = {-2, 0.5, 1}, y[3];
  interp_tensor in = tt(KILN_F64, x, 1, DIMS(3)), out = tt(KILN_F64, y, 1, DIMS(3));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("alpha", 0.5)}, 1);
  RUN_OK(LeakyRelu, a, &out, 1, &in, 1);
  expect_f64(y, (double[]){-1, 0.5, 1}, 3, 1e-15, "LeakyRelu alpha");
  RUN_OK(ThresholdedRelu, a, &out, 1, &in, 1);
  expect_f64(y, (double[]){0, 0, 1}, 3, 1e-15, "ThresholdedRelu alpha");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("bias", 1), KILN_ATTR_F("lambd", 1.5)}, 2);
  RUN_OK(Shrink, a, &out, 1, &in, 1);
  expect_f64(y, (double[]){-1, 0, 0}, 3, 1e-15, "Shrink");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_S("approximate", "tanh")}, 1);
  RUN_OK(Gelu, a, &out, 1, &in, 1);
  /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) at x = 1 */
  expect_close(y[2], 0.8411919906082768, 1e-12, "Gelu tanh", 2);
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_S("approximate", "bogus")}, 1);
  RUN_FAIL(Gelu, a, &out, 1, &in, 1, KILN_INVALID_ARGUMENT);
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("alpha", 2.0)}, 1);
  RUN_OK(Celu, a, &out, 1, &in, 1); /* 2 (exp(-1) - 1) */
  expect_close(y[0], 2 * (1 / E - 1), 1e-12, "Celu alpha", 0);
  free_attrs(a);
}
END_TEST

START_TEST(unary_integers) {
  int32_t x[3] = {-5, INT32_MIN, 7}, y[3];
  interp_tensor in = tt(KILN_I32, x, 1, DIMS(3)), out = tt(KILN_I32, y, 1, DIMS(3));
  RUN_OK(Abs, NULL, &out, 1, &in, 1);
  ck_assert_int_eq(y[0], 5);
  ck_assert_int_eq(y[1], INT32_MIN); /* wraps, like two's complement hardware */
  RUN_OK(Neg, NULL, &out, 1, &in, 1);
  ck_assert_int_eq(y[0], 5);
  ck_assert_int_eq(y[2], -7);
  RUN_OK(Sign, NULL, &out, 1, &in, 1);
  ck_assert_int_eq(y[0], -1);
  ck_assert_int_eq(y[2], 1);
  RUN_OK(Relu, NULL, &out, 1, &in, 1);
  ck_assert_int_eq(y[0], 0);
  ck_assert_int_eq(y[2], 7);
  int8_t b[2] = {-128, 3}, c[2];
  interp_tensor bi = tt(KILN_I8, b, 1, DIMS(2)), co = tt(KILN_I8, c, 1, DIMS(2));
  RUN_OK(Neg, NULL, &co, 1, &bi, 1);
  ck_assert_int_eq(c[0], -128);
  ck_assert_int_eq(c[1], -3);
  RUN_FAIL(Exp, NULL, &out, 1, &in, 1, KILN_UNIMPLEMENTED);
}
END_TEST

START_TEST(unary_f32_f16_and_empty) {
  float x[2] = {-1.5f, 4.0f}, y[2];
  interp_tensor in = tt(KILN_F32, x, 1, DIMS(2)), out = tt(KILN_F32, y, 1, DIMS(2));
  RUN_OK(Abs, NULL, &out, 1, &in, 1);
  expect_f32(y, (float[]){1.5f, 4.0f}, 2, 0, "Abs f32");
  uint16_t h[2] = {0x4400 /* 4.0 */, 0xBC00 /* -1.0 */}, hy[2];
  interp_tensor hi = tt(KILN_F16, h, 1, DIMS(2)), ho = tt(KILN_F16, hy, 1, DIMS(2));
  RUN_OK(Sqrt, NULL, &ho, 1, &hi, 1);
  ck_assert_uint_eq(hy[0], 0x4000);          /* 2.0 */
  ck_assert_uint_eq(hy[1] & 0x7C00, 0x7C00); /* NaN */
  ck_assert_uint_ne(hy[1] & 0x03FF, 0);
  interp_tensor e_in = tt(KILN_F32, NULL, 2, DIMS(0, 3)), e_out = tt(KILN_F32, NULL, 2, DIMS(0, 3));
  RUN_OK(Exp, NULL, &e_out, 1, &e_in, 1);
}
END_TEST

START_TEST(predicates_and_copies) {
  double x[4] = {INFINITY, -INFINITY, NAN, 1};
  bool y[4];
  interp_tensor in = tt(KILN_F64, x, 1, DIMS(4)), out = tt(KILN_BOOL, y, 1, DIMS(4));
  RUN_OK(IsInf, NULL, &out, 1, &in, 1);
  ck_assert(y[0] && y[1] && !y[2] && !y[3]);
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("detect_positive", 0)}, 1);
  RUN_OK(IsInf, a, &out, 1, &in, 1);
  ck_assert(!y[0] && y[1] && !y[2] && !y[3]);
  free_attrs(a);
  RUN_OK(IsNaN, NULL, &out, 1, &in, 1);
  ck_assert(!y[0] && !y[1] && y[2] && !y[3]);
  bool b[2] = {true, false}, nb[2];
  interp_tensor bi = tt(KILN_BOOL, b, 1, DIMS(2)), bo = tt(KILN_BOOL, nb, 1, DIMS(2));
  RUN_OK(Not, NULL, &bo, 1, &bi, 1);
  ck_assert(!nb[0] && nb[1]);
  int16_t d[3] = {1, -2, 3}, dy[3];
  bool mask[3] = {false, false, false};
  interp_tensor di = tt(KILN_I16, d, 1, DIMS(3));
  interp_tensor douts[2] = {tt(KILN_I16, dy, 1, DIMS(3)), tt(KILN_BOOL, mask, 1, DIMS(3))};
  RUN_OK(Dropout, NULL, douts, 2, &di, 1);
  ck_assert_int_eq(dy[1], -2);
  ck_assert(mask[0] && mask[1] && mask[2]);
}
END_TEST

START_TEST(cast_pairs) {
  double x[6] = {2.7, -2.7, NAN, 300, 0.0, -0.5};
  interp_tensor in = tt(KILN_F64, x, 1, DIMS(6));
  int8_t i8[6];
  interp_tensor o = tt(KILN_I8, i8, 1, DIMS(6));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_T("to", KILN_I8)}, 1);
  RUN_OK(Cast, a, &o, 1, &in, 1);
  free_attrs(a);
  ck_assert_int_eq(i8[0], 2); /* toward zero */
  ck_assert_int_eq(i8[1], -2);
  ck_assert_int_eq(i8[2], 0);  /* NaN -> 0 */
  ck_assert_int_eq(i8[3], 44); /* 300 wraps modulo 256 */
  ck_assert_int_eq(i8[5], 0);
  bool bo[6];
  interp_tensor ob = tt(KILN_BOOL, bo, 1, DIMS(6));
  RUN_OK(Cast, NULL, &ob, 1, &in, 1);
  ck_assert(bo[0] && bo[1] && bo[2] && bo[3] && !bo[4] && bo[5]);
  /* bool -> f32, u8 -> i8 (wrap), i32 -> u64 (sign extend then wrap) */
  float f[6];
  interp_tensor of = tt(KILN_F32, f, 1, DIMS(6));
  RUN_OK(Cast, NULL, &of, 1, &ob, 1);
  expect_f32(f, (float[]){1, 1, 1, 1, 0, 1}, 6, 0, "bool->f32");
  uint8_t u[2] = {200, 5};
  int8_t s[2];
  interp_tensor iu = tt(KILN_U8, u, 1, DIMS(2)), os = tt(KILN_I8, s, 1, DIMS(2));
  RUN_OK(Cast, NULL, &os, 1, &iu, 1);
  ck_assert_int_eq(s[0], -56);
  int32_t neg[1] = {-1};
  uint64_t big[1];
  interp_tensor in32 = tt(KILN_I32, neg, 1, DIMS(1)), o64 = tt(KILN_U64, big, 1, DIMS(1));
  RUN_OK(Cast, NULL, &o64, 1, &in32, 1);
  ck_assert(big[0] == UINT64_MAX);
  /* f64 -> f16 / bf16 round to nearest even */
  double fx[3] = {1.0 / 3.0, 1.0 + 1.0 / 256, 1.0 + 3.0 / 256};
  uint16_t h[3], bf[3];
  interp_tensor fin = tt(KILN_F64, fx, 1, DIMS(3));
  interp_tensor oh = tt(KILN_F16, h, 1, DIMS(3)), obf = tt(KILN_BF16, bf, 1, DIMS(3));
  RUN_OK(Cast, NULL, &oh, 1, &fin, 1);
  ck_assert_uint_eq(h[0], 0x3555);
  RUN_OK(Cast, NULL, &obf, 1, &fin, 1);
  ck_assert_uint_eq(bf[1], 0x3F80); /* tie -> even (1.0) */
  ck_assert_uint_eq(bf[2], 0x3F82); /* tie -> even (1 + 2^-6) */
  /* CastLike takes the element type from input 1 */
  int64_t like[1];
  int16_t ly[3];
  interp_tensor cl_in[2] = {tt(KILN_F64, fx, 1, DIMS(3)), tt(KILN_I16, like, 1, DIMS(1))};
  fx[0] = -7.9;
  interp_tensor cl_out = tt(KILN_I16, ly, 1, DIMS(3));
  RUN_OK(CastLike, NULL, &cl_out, 1, cl_in, 2);
  ck_assert_int_eq(ly[0], -7);
  ck_assert_int_eq(ly[1], 1);
}
END_TEST

START_TEST(binary_arith_broadcast) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, y[6];
  interp_tensor in[2] = {tt(KILN_F32, a, 2, DIMS(2, 3)), tt(KILN_F32, b, 1, DIMS(3))};
  interp_tensor out = tt(KILN_F32, y, 2, DIMS(2, 3));
  RUN_OK(Add, NULL, &out, 1, in, 2);
  expect_f32(y, (float[]){11, 22, 33, 14, 25, 36}, 6, 0, "Add");
  RUN_OK(Sub, NULL, &out, 1, in, 2);
  expect_f32(y, (float[]){-9, -18, -27, -6, -15, -24}, 6, 0, "Sub");
  RUN_OK(Mul, NULL, &out, 1, in, 2);
  expect_f32(y, (float[]){10, 40, 90, 40, 100, 180}, 6, 0, "Mul");
  RUN_OK(Div, NULL, &out, 1, in, 2);
  expect_f32(y, (float[]){0.1f, 0.1f, 0.1f, 0.4f, 0.25f, 0.2f}, 6, 1e-7, "Div");
  /* a column [2,1] against a row [3] makes [2,3] */
  float col[2] = {1, 2}, row[3] = {0, NAN, INFINITY};
  interp_tensor in2[2] = {tt(KILN_F32, col, 2, DIMS(2, 1)), tt(KILN_F32, row, 1, DIMS(3))};
  RUN_OK(Add, NULL, &out, 1, in2, 2);
  expect_f32(y, (float[]){1, NAN, INFINITY, 2, NAN, INFINITY}, 6, 0, "Add 2-way broadcast");
  float z[1] = {0}, one[1] = {1};
  interp_tensor dz[2] = {tt(KILN_F32, one, 0, NULL), tt(KILN_F32, z, 0, NULL)};
  interp_tensor dzo = tt(KILN_F32, y, 0, NULL);
  RUN_OK(Div, NULL, &dzo, 1, dz, 2);
  ck_assert(isinf(y[0]) && y[0] > 0);
}
END_TEST

START_TEST(binary_integers) {
  int8_t a[3] = {127, -128, 5}, b[3] = {1, -1, -3}, y[3];
  interp_tensor in[2] = {tt(KILN_I8, a, 1, DIMS(3)), tt(KILN_I8, b, 1, DIMS(3))};
  interp_tensor out = tt(KILN_I8, y, 1, DIMS(3));
  RUN_OK(Add, NULL, &out, 1, in, 2);
  ck_assert_int_eq(y[0], -128); /* wraps */
  ck_assert_int_eq(y[1], 127);
  RUN_OK(Mul, NULL, &out, 1, in, 2);
  ck_assert_int_eq(y[1], -128); /* -128 * -1 wraps */
  ck_assert_int_eq(y[2], -15);
  uint8_t ua[1] = {0}, ub[1] = {1}, uy[1];
  interp_tensor uin[2] = {tt(KILN_U8, ua, 1, DIMS(1)), tt(KILN_U8, ub, 1, DIMS(1))};
  interp_tensor uout = tt(KILN_U8, uy, 1, DIMS(1));
  RUN_OK(Sub, NULL, &uout, 1, uin, 2);
  ck_assert_uint_eq(uy[0], 255);
  int32_t n[4] = {-7, 7, -7, 7}, d[4] = {2, -2, 3, -3}, q[4];
  interp_tensor din[2] = {tt(KILN_I32, n, 1, DIMS(4)), tt(KILN_I32, d, 1, DIMS(4))};
  interp_tensor dout = tt(KILN_I32, q, 1, DIMS(4));
  RUN_OK(Div, NULL, &dout, 1, din, 2);
  ck_assert_int_eq(q[0], -3); /* toward zero */
  ck_assert_int_eq(q[1], -3);
  RUN_OK(Mod, NULL, &dout, 1, din, 2); /* fmod = 0: the divisor's sign */
  ck_assert_int_eq(q[0], 1);
  ck_assert_int_eq(q[1], -1);
  ck_assert_int_eq(q[2], 2);
  ck_assert_int_eq(q[3], -2);
  kiln_attrs *fm = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("fmod", 1)}, 1);
  RUN_OK(Mod, fm, &dout, 1, din, 2); /* fmod = 1: the dividend's sign */
  ck_assert_int_eq(q[0], -1);
  ck_assert_int_eq(q[1], 1);
  ck_assert_int_eq(q[2], -1);
  ck_assert_int_eq(q[3], 1);
  double fa[2] = {-7.5, 7.5}, fb[2] = {2, 2}, fy[2];
  interp_tensor fin[2] = {tt(KILN_F64, fa, 1, DIMS(2)), tt(KILN_F64, fb, 1, DIMS(2))};
  interp_tensor fout = tt(KILN_F64, fy, 1, DIMS(2));
  RUN_OK(Mod, fm, &fout, 1, fin, 2);
  expect_f64(fy, (double[]){-1.5, 1.5}, 2, 0, "Mod fmod float");
  free_attrs(fm);
  d[0] = 0;
  RUN_FAIL(Div, NULL, &dout, 1, din, 2, KILN_INVALID_ARGUMENT);
  RUN_FAIL(Mod, NULL, &dout, 1, din, 2, KILN_INVALID_ARGUMENT);
}
END_TEST

START_TEST(pow_kinds) {
  int32_t a[4] = {2, 2, -3, 5}, e[4] = {10, -1, 3, 0}, y[4];
  interp_tensor in[2] = {tt(KILN_I32, a, 1, DIMS(4)), tt(KILN_I32, e, 1, DIMS(4))};
  interp_tensor out = tt(KILN_I32, y, 1, DIMS(4));
  RUN_OK(Pow, NULL, &out, 1, in, 2);
  ck_assert_int_eq(y[0], 1024);
  ck_assert_int_eq(y[1], 0);
  ck_assert_int_eq(y[2], -27);
  ck_assert_int_eq(y[3], 1);
  float fb[2] = {4, 2}, fy[2];
  double fe[1] = {0.5};
  interp_tensor fin[2] = {tt(KILN_F32, fb, 1, DIMS(2)), tt(KILN_F64, fe, 0, NULL)};
  interp_tensor fout = tt(KILN_F32, fy, 1, DIMS(2));
  RUN_OK(Pow, NULL, &fout, 1, fin, 2);
  expect_f32(fy, (float[]){2, 1.41421356f}, 2, 1e-7, "Pow float");
}
END_TEST

START_TEST(logic_compare_shift) {
  bool a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1}, y[4];
  interp_tensor in[2] = {tt(KILN_BOOL, a, 1, DIMS(4)), tt(KILN_BOOL, b, 1, DIMS(4))};
  interp_tensor out = tt(KILN_BOOL, y, 1, DIMS(4));
  RUN_OK(And, NULL, &out, 1, in, 2);
  ck_assert(!y[0] && !y[1] && !y[2] && y[3]);
  RUN_OK(Or, NULL, &out, 1, in, 2);
  ck_assert(!y[0] && y[1] && y[2] && y[3]);
  RUN_OK(Xor, NULL, &out, 1, in, 2);
  ck_assert(!y[0] && y[1] && y[2] && !y[3]);
  RUN_OK(Equal, NULL, &out, 1, in, 2);
  ck_assert(y[0] && !y[1] && !y[2] && y[3]);
  float fa[4] = {1, NAN, 3, -1}, fb[1] = {1};
  interp_tensor fin[2] = {tt(KILN_F32, fa, 1, DIMS(4)), tt(KILN_F32, fb, 1, DIMS(1))};
  RUN_OK(Equal, NULL, &out, 1, fin, 2);
  ck_assert(y[0] && !y[1] && !y[2] && !y[3]);
  RUN_OK(Greater, NULL, &out, 1, fin, 2);
  ck_assert(!y[0] && !y[1] && y[2] && !y[3]);
  RUN_OK(GreaterOrEqual, NULL, &out, 1, fin, 2);
  ck_assert(y[0] && !y[1] && y[2] && !y[3]);
  RUN_OK(Less, NULL, &out, 1, fin, 2);
  ck_assert(!y[0] && !y[1] && !y[2] && y[3]);
  RUN_OK(LessOrEqual, NULL, &out, 1, fin, 2);
  ck_assert(y[0] && !y[1] && !y[2] && y[3]);
  uint64_t ua[2] = {UINT64_MAX, 1}, ub[2] = {1, UINT64_MAX};
  interp_tensor uin[2] = {tt(KILN_U64, ua, 1, DIMS(2)), tt(KILN_U64, ub, 1, DIMS(2))};
  interp_tensor out2 = tt(KILN_BOOL, y, 1, DIMS(2));
  RUN_OK(Greater, NULL, &out2, 1, uin, 2); /* unsigned order, not signed */
  ck_assert(y[0] && !y[1]);
  RUN_FAIL(And, NULL, &out, 1, fin, 2, KILN_UNIMPLEMENTED);
  RUN_FAIL(Add, NULL, &out, 1, in, 2, KILN_UNIMPLEMENTED);
  uint8_t s[3] = {1, 3, 255}, sh[3] = {7, 7, 9}, sy[3];
  interp_tensor sin[2] = {tt(KILN_U8, s, 1, DIMS(3)), tt(KILN_U8, sh, 1, DIMS(3))};
  interp_tensor sout = tt(KILN_U8, sy, 1, DIMS(3));
  kiln_attrs *l = mk_attrs((kiln_attr_desc[]){KILN_ATTR_S("direction", "LEFT")}, 1);
  RUN_OK(BitShift, l, &sout, 1, sin, 2);
  ck_assert_uint_eq(sy[0], 128);
  ck_assert_uint_eq(sy[1], 128);
  ck_assert_uint_eq(sy[2], 0);
  free_attrs(l);
  kiln_attrs *r = mk_attrs((kiln_attr_desc[]){KILN_ATTR_S("direction", "RIGHT")}, 1);
  RUN_OK(BitShift, r, &sout, 1, sin, 2);
  ck_assert_uint_eq(sy[0], 0);
  ck_assert_uint_eq(sy[2], 0);
  sh[1] = 1;
  RUN_OK(BitShift, r, &sout, 1, sin, 2);
  ck_assert_uint_eq(sy[1], 1);
  free_attrs(r);
}
END_TEST

START_TEST(prelu) {
  float x[4] = {-2, 3, -4, 0}, slope[2] = {0.5f, 0.25f}, y[4];
  interp_tensor in[2] = {tt(KILN_F32, x, 2, DIMS(2, 2)), tt(KILN_F32, slope, 1, DIMS(2))};
  interp_tensor out = tt(KILN_F32, y, 2, DIMS(2, 2));
  RUN_OK(PRelu, NULL, &out, 1, in, 2);
  expect_f32(y, (float[]){-1, 3, -2, 0}, 4, 0, "PRelu");
  int32_t xi[2] = {-6, 6}, si[1] = {2}, yi[2];
  interp_tensor iin[2] = {tt(KILN_I32, xi, 1, DIMS(2)), tt(KILN_I32, si, 1, DIMS(1))};
  interp_tensor iout = tt(KILN_I32, yi, 1, DIMS(2));
  RUN_OK(PRelu, NULL, &iout, 1, iin, 2);
  ck_assert_int_eq(yi[0], -12);
  ck_assert_int_eq(yi[1], 6);
}
END_TEST

START_TEST(variadic) {
  float a[2] = {1, 5}, b[2] = {3, NAN}, c[1] = {2}, y[2];
  interp_tensor in[3] = {tt(KILN_F32, a, 1, DIMS(2)), tt(KILN_F32, b, 1, DIMS(2)),
                         tt(KILN_F32, c, 1, DIMS(1))};
  interp_tensor out = tt(KILN_F32, y, 1, DIMS(2));
  RUN_OK(Max, NULL, &out, 1, in, 3);
  expect_f32(y, (float[]){3, NAN}, 2, 0, "Max");
  RUN_OK(Min, NULL, &out, 1, in, 3);
  expect_f32(y, (float[]){1, NAN}, 2, 0, "Min");
  RUN_OK(Sum, NULL, &out, 1, in, 3);
  expect_f32(y, (float[]){6, NAN}, 2, 0, "Sum");
  RUN_OK(Mean, NULL, &out, 1, in, 3);
  expect_f32(y, (float[]){2, NAN}, 2, 0, "Mean");
  RUN_OK(Max, NULL, &out, 1, in, 1);
  expect_f32(y, (float[]){1, 5}, 2, 0, "Max of one");
  int32_t ia[2] = {-1, 4}, ib[2] = {-3, 9}, iy[2];
  interp_tensor iin[2] = {tt(KILN_I32, ia, 1, DIMS(2)), tt(KILN_I32, ib, 1, DIMS(2))};
  interp_tensor iout = tt(KILN_I32, iy, 1, DIMS(2));
  RUN_OK(Min, NULL, &iout, 1, iin, 2);
  ck_assert_int_eq(iy[0], -3);
  ck_assert_int_eq(iy[1], 4);
  RUN_OK(Max, NULL, &iout, 1, iin, 2);
  ck_assert_int_eq(iy[0], -1);
  ck_assert_int_eq(iy[1], 9);
  uint8_t ua[1] = {200}, uy[1];
  interp_tensor uin[2] = {tt(KILN_U8, ua, 1, DIMS(1)), tt(KILN_U8, ua, 1, DIMS(1))};
  interp_tensor uout = tt(KILN_U8, uy, 1, DIMS(1));
  RUN_OK(Sum, NULL, &uout, 1, uin, 2);
  ck_assert_uint_eq(uy[0], 144); /* 400 mod 256 */
  RUN_FAIL(Mean, NULL, &iout, 1, iin, 2, KILN_UNIMPLEMENTED);
}
END_TEST

START_TEST(where_and_clip) {
  bool cond[2] = {true, false};
  int64_t x[4] = {1, 2, 3, 4}, yv[1] = {-9}, out_v[4];
  interp_tensor in[3] = {tt(KILN_BOOL, cond, 1, DIMS(2)), tt(KILN_I64, x, 2, DIMS(2, 2)),
                         tt(KILN_I64, yv, 0, NULL)};
  interp_tensor out = tt(KILN_I64, out_v, 2, DIMS(2, 2));
  RUN_OK(Where, NULL, &out, 1, in, 3);
  ck_assert(out_v[0] == 1 && out_v[1] == -9 && out_v[2] == 3 && out_v[3] == -9);
  float cx[4] = {-5, 0.5f, 5, NAN}, lo[1] = {-1}, hi[1] = {1}, cy[4];
  interp_tensor cin[3] = {tt(KILN_F32, cx, 1, DIMS(4)), tt(KILN_F32, lo, 0, NULL),
                          tt(KILN_F32, hi, 0, NULL)};
  interp_tensor cout = tt(KILN_F32, cy, 1, DIMS(4));
  RUN_OK(Clip, NULL, &cout, 1, cin, 3);
  expect_f32(cy, (float[]){-1, 0.5f, 1, NAN}, 4, 0, "Clip");
  RUN_OK(Clip, NULL, &cout, 1, cin, 1); /* no bounds */
  expect_f32(cy, (float[]){-5, 0.5f, 5, NAN}, 4, 0, "Clip unbounded");
  lo[0] = 2; /* min > max: everything becomes max */
  RUN_OK(Clip, NULL, &cout, 1, cin, 3);
  expect_f32(cy, (float[]){1, 1, 1, NAN}, 4, 0, "Clip min>max");
  int32_t ix[3] = {-5, 0, 5}, ihi[1] = {2}, iy[3];
  interp_tensor iin[3] = {tt(KILN_I32, ix, 1, DIMS(3)), {0}, tt(KILN_I32, ihi, 0, NULL)};
  interp_tensor iout = tt(KILN_I32, iy, 1, DIMS(3));
  RUN_OK(Clip, NULL, &iout, 1, iin, 3); /* absent min */
  ck_assert(iy[0] == -5 && iy[1] == 0 && iy[2] == 2);
}
END_TEST

START_TEST(bitwise) {
  int8_t a[2] = {-1, 12}, b = 10, y[2];
  interp_tensor ins[2] = {tt(KILN_I8, a, 1, DIMS(2)), tt(KILN_I8, &b, 0, NULL)};
  interp_tensor out = tt(KILN_I8, y, 1, DIMS(2));
  RUN_OK(BitwiseAnd, NULL, &out, 1, ins, 2);
  ck_assert(y[0] == 10 && y[1] == 8);
  RUN_OK(BitwiseOr, NULL, &out, 1, ins, 2);
  ck_assert(y[0] == -1 && y[1] == 14);
  RUN_OK(BitwiseXor, NULL, &out, 1, ins, 2);
  ck_assert(y[0] == -11 && y[1] == 6);
  uint8_t u[3] = {0, 255, 12}, uy[3];
  interp_tensor uin = tt(KILN_U8, u, 1, DIMS(3)), uout = tt(KILN_U8, uy, 1, DIMS(3));
  RUN_OK(BitwiseNot, NULL, &uout, 1, &uin, 1);
  ck_assert(uy[0] == 255 && uy[1] == 0 && uy[2] == 243);
  float f[2] = {1, 2};
  ins[0] = tt(KILN_F32, f, 1, DIMS(2));
  ins[1] = tt(KILN_F32, f, 1, DIMS(2));
  RUN_FAIL(BitwiseAnd, NULL, &out, 1, ins, 2, KILN_UNIMPLEMENTED);
  ck_assert(!interp_elem_supported(KILN_NODE_BitwiseOr, KILN_F32));
  ck_assert(interp_elem_supported(KILN_NODE_BitwiseOr, KILN_U16));
}
END_TEST

START_TEST(mish_swish) {
  double x[3] = {0, 1, -1}, y[3];
  interp_tensor in = tt(KILN_F64, x, 1, DIMS(3)), out = tt(KILN_F64, y, 1, DIMS(3));
  RUN_OK(Mish, NULL, &out, 1, &in, 1);
  /* 1 * tanh(log(1 + e)); -1 * tanh(log(1 + 1/e)) */
  expect_f64(y, (double[]){0, 0.86509838826731, -0.30340146137411}, 3, 1e-12, "Mish");
  RUN_OK(Swish, NULL, &out, 1, &in, 1);
  expect_f64(y, (double[]){0, 0.73105857863001, -0.26894142136999}, 3, 1e-12, "Swish");
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("alpha", 2)}, 1);
  RUN_OK(Swish, a, &out, 1, &in, 1);
  /* x * sigmoid(2x): sigmoid(2) = 0.88079707797788 */
  expect_f64(y, (double[]){0, 0.88079707797788, -0.11920292202212}, 3, 1e-12, "Swish alpha 2");
  free_attrs(a);
}
END_TEST

TCase *interp_tcase_elementwise(void) {
  TCase *tc = tcase_create("elementwise");
  tcase_add_test(tc, unary_float_table);
  tcase_add_test(tc, unary_attrs);
  tcase_add_test(tc, unary_integers);
  tcase_add_test(tc, unary_f32_f16_and_empty);
  tcase_add_test(tc, predicates_and_copies);
  tcase_add_test(tc, cast_pairs);
  tcase_add_test(tc, binary_arith_broadcast);
  tcase_add_test(tc, binary_integers);
  tcase_add_test(tc, pow_kinds);
  tcase_add_test(tc, logic_compare_shift);
  tcase_add_test(tc, prelu);
  tcase_add_test(tc, variadic);
  tcase_add_test(tc, where_and_clip);
  tcase_add_test(tc, bitwise);
  tcase_add_test(tc, mish_swish);
  return tc;
}
