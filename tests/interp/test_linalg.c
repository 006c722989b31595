/* tests/interp/test_linalg.c: MatMul, Gemm, Einsum, Det and the integer and
 * qlinear matrix products. */
#include <stdint.h>

#include "helpers.h"

START_TEST(matmul_2d_batch_vector) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, y[8];
  interp_tensor ins[2] = {t_tensor(KILN_F32, a, 2, DIMS(2, 3)),
                          t_tensor(KILN_F32, b, 2, DIMS(3, 2))};
  interp_tensor out = t_tensor(KILN_F32, y, 2, DIMS(2, 2));
  t_run(interp_MatMul, NOATTRS, &out, 1, ins, 2);
  CHECK_F(y, 0, 58, 64, 139, 154);
  /* vector times matrix: [1,2,3] . B */
  ins[0] = t_tensor(KILN_F32, a, 1, DIMS(3));
  out = t_tensor(KILN_F32, y, 1, DIMS(2));
  t_run(interp_MatMul, NOATTRS, &out, 1, ins, 2);
  CHECK_F(y, 0, 58, 64);
  /* batch broadcast: A [2,1,2] x B [2,2] -> [2,1,2] */
  int32_t p[4] = {1, 2, 3, 4}, q[4] = {1, 0, 1, 1}, r[4];
  ins[0] = t_tensor(KILN_I32, p, 3, DIMS(2, 1, 2));
  ins[1] = t_tensor(KILN_I32, q, 2, DIMS(2, 2));
  out = t_tensor(KILN_I32, r, 3, DIMS(2, 1, 2));
  t_run(interp_MatMul, NOATTRS, &out, 1, ins, 2);
  CHECK_I(r, 3, 2, 7, 4);
}
END_TEST

START_TEST(matmul_fused_activations) {
  /* [[1,-2],[3,-4]] . I = itself; then the fused activation. */
  float a[4] = {1, -2, 3, -4}, b[4] = {1, 0, 0, 1}, y[4];
  interp_tensor ins[2] = {t_tensor(KILN_F32, a, 2, DIMS(2, 2)),
                          t_tensor(KILN_F32, b, 2, DIMS(2, 2))};
  interp_tensor out = t_tensor(KILN_F32, y, 2, DIMS(2, 2));
  t_run(interp_MatMul, ATTRS(KILN_ATTR_S("activation", "Relu")), &out, 1, ins, 2);
  CHECK_F(y, 0, 1, 0, 3, 0);
  t_run(interp_MatMul,
        ATTRS(KILN_ATTR_S("activation", "LeakyRelu"), KILN_ATTR_F("activation_alpha", 0.5)), &out,
        1, ins, 2);
  CHECK_F(y, 0, 1, -1, 3, -2);
  t_run(interp_Gemm, ATTRS(KILN_ATTR_S("activation", "Tanh")), &out, 1, ins, 2);
  CHECK_F(y, 1e-6, 0.76159416f, -0.96402758f, 0.99505475f, -0.99932930f);
  t_run(interp_MatMul, ATTRS(KILN_ATTR_S("activation", "Sigmoid")), &out, 1, ins, 2);
  CHECK_F(y, 1e-6, 0.73105858f, 0.11920292f, 0.95257413f, 0.01798621f);
  /* the ABI 1.4 activations, values worked out by hand from ONNX's formulas */
  t_run(interp_MatMul,
        ATTRS(KILN_ATTR_S("activation", "Clip"), KILN_ATTR_F("activation_alpha", -1),
              KILN_ATTR_F("activation_beta", 2)),
        &out, 1, ins, 2);
  CHECK_F(y, 0, 1, -1, 2, -1);
  t_run(interp_Gemm, ATTRS(KILN_ATTR_S("activation", "Clip"), KILN_ATTR_F("activation_beta", 2)),
        &out, 1, ins, 2);
  CHECK_F(y, 0, 1, -2, 2, -4);
  t_run(interp_MatMul, ATTRS(KILN_ATTR_S("activation", "HardSigmoid")), &out, 1, ins, 2);
  CHECK_F(y, 1e-6, 0.7f, 0.1f, 1, 0);
  t_run(interp_MatMul, ATTRS(KILN_ATTR_S("activation", "HardSwish")), &out, 1, ins, 2);
  CHECK_F(y, 1e-6, 0.66666667f, -0.33333333f, 3, 0);
  t_run(interp_Gemm, ATTRS(KILN_ATTR_S("activation", "Swish")), &out, 1, ins, 2);
  CHECK_F(y, 1e-6, 0.73105858f, -0.23840584f, 2.85772239f, -0.07194484f);
  t_run(interp_MatMul,
        ATTRS(KILN_ATTR_S("activation", "Swish"), KILN_ATTR_F("activation_alpha", 0.5)), &out, 1,
        ins, 2);
  CHECK_F(y, 1e-6, 0.62245933f, -0.53788284f, 2.45272344f, -0.47681168f);
}
END_TEST

START_TEST(gemm_trans_alpha_beta) {
  /* A^T with A = [[1,3],[2,4]] (so op(A) = [[1,2],[3,4]]), B^T with B = I */
  float a[4] = {1, 3, 2, 4}, b[4] = {1, 0, 0, 1}, c[2] = {10, 20}, y[4];
  interp_tensor ins[3] = {t_tensor(KILN_F32, a, 2, DIMS(2, 2)),
                          t_tensor(KILN_F32, b, 2, DIMS(2, 2)), t_tensor(KILN_F32, c, 1, DIMS(2))};
  interp_tensor out = t_tensor(KILN_F32, y, 2, DIMS(2, 2));
  t_run(interp_Gemm,
        ATTRS(KILN_ATTR_I("transA", 1), KILN_ATTR_I("transB", 1), KILN_ATTR_F("alpha", 2),
              KILN_ATTR_F("beta", 0.5)),
        &out, 1, ins, 3);
  CHECK_F(y, 0, 7, 14, 11, 18);
  ins[2].data = NULL;
  t_run(interp_Gemm, NOATTRS, &out, 1, ins, 3);
  CHECK_F(y, 0, 1, 3, 2, 4);
}
END_TEST

START_TEST(matmul_integer) {
  uint8_t a[12] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, b[6] = {1, 4, 2, 5, 3, 6}, azp = 12,
          bzp = 0;
  int32_t y[8];
  interp_tensor ins[4] = {t_tensor(KILN_U8, a, 2, DIMS(4, 3)), t_tensor(KILN_U8, b, 2, DIMS(3, 2)),
                          t_tensor(KILN_U8, &azp, 0, NULL), t_tensor(KILN_U8, &bzp, 0, NULL)};
  interp_tensor out = t_tensor(KILN_I32, y, 2, DIMS(4, 2));
  t_run(interp_MatMulInteger, NOATTRS, &out, 1, ins, 4);
  CHECK_I(y, -38, -83, -44, -98, -50, -113, -56, -128);
}
END_TEST

START_TEST(qlinear_matmul) {
  /* acc = (2-0)*(1-1) + (4-0)*(3-1) = 8; 8 * 0.5 * 1 / 2 = 2; + 10 = 12 */
  uint8_t a[2] = {2, 4}, b[2] = {1, 3}, azp = 0, bzp = 1, yzp = 10, y[1];
  float as = 0.5f, bs = 1.0f, ys = 2.0f;
  interp_tensor ins[8] = {t_tensor(KILN_U8, a, 2, DIMS(1, 2)), t_tensor(KILN_F32, &as, 0, NULL),
                          t_tensor(KILN_U8, &azp, 0, NULL),    t_tensor(KILN_U8, b, 2, DIMS(2, 1)),
                          t_tensor(KILN_F32, &bs, 0, NULL),    t_tensor(KILN_U8, &bzp, 0, NULL),
                          t_tensor(KILN_F32, &ys, 0, NULL),    t_tensor(KILN_U8, &yzp, 0, NULL)};
  interp_tensor out = t_tensor(KILN_U8, y, 2, DIMS(1, 1));
  t_run(interp_QLinearMatMul, NOATTRS, &out, 1, ins, 8);
  ck_assert_int_eq(y[0], 12);
  /* 4 / 1.6 = 2.5 rounds to even 2, then + 10; saturation: y_zp 254 -> 255 */
  ys = 1.6f;
  t_run(interp_QLinearMatMul, NOATTRS, &out, 1, ins, 8);
  ck_assert_int_eq(y[0], 12);
  yzp = 254;
  t_run(interp_QLinearMatMul, NOATTRS, &out, 1, ins, 8);
  ck_assert_int_eq(y[0], 255);
}
END_TEST

START_TEST(einsum_forms) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, y[9];
  interp_tensor ins[2] = {t_tensor(KILN_F32, a, 2, DIMS(2, 3)),
                          t_tensor(KILN_F32, b, 2, DIMS(3, 2))};
  interp_tensor out = t_tensor(KILN_F32, y, 2, DIMS(2, 2));
  t_run(interp_Einsum, ATTRS(KILN_ATTR_S("equation", "ij,jk->ik")), &out, 1, ins, 2);
  CHECK_F(y, 0, 58, 64, 139, 154);
  t_run(interp_Einsum, ATTRS(KILN_ATTR_S("equation", "ij,jk")), &out, 1, ins, 2);
  CHECK_F(y, 0, 58, 64, 139, 154);
  out = t_tensor(KILN_F32, y, 0, NULL);
  t_run(interp_Einsum, ATTRS(KILN_ATTR_S("equation", "ij->")), &out, 1, ins, 1);
  CHECK_F(y, 0, 21);
  float m[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  ins[0] = t_tensor(KILN_F32, m, 2, DIMS(3, 3));
  out = t_tensor(KILN_F32, y, 1, DIMS(3));
  t_run(interp_Einsum, ATTRS(KILN_ATTR_S("equation", "ii->i")), &out, 1, ins, 1);
  CHECK_F(y, 0, 1, 5, 9);
  ins[0] = t_tensor(KILN_F32, a, 3, DIMS(1, 2, 3));
  out = t_tensor(KILN_F32, y, 3, DIMS(1, 3, 2));
  t_run(interp_Einsum, ATTRS(KILN_ATTR_S("equation", "...ij->...ji")), &out, 1, ins, 1);
  CHECK_F(y, 0, 1, 4, 2, 5, 3, 6);
}
END_TEST

START_TEST(det) {
  /* [[2, 1], [4, 3]] -> 2; [[0, 1], [1, 0]] -> -1 (needs a row swap);
   * a 3x3 with two equal rows -> 0 */
  double x[8] = {2, 1, 4, 3, 0, 1, 1, 0}, y[2];
  interp_tensor in = tt(KILN_F64, x, 3, DIMS(2, 2, 2)), out = tt(KILN_F64, y, 1, DIMS(2));
  RUN_OK(Det, NULL, &out, 1, &in, 1);
  expect_f64(y, (double[]){2, -1}, 2, 1e-15, "Det 2x2");
  float s[9] = {1, 2, 3, 4, 5, 6, 1, 2, 3}, t[9] = {2, 0, 0, 1, 3, 0, 5, 7, 4}, ys;
  in = tt(KILN_F32, s, 2, DIMS(3, 3));
  out = tt(KILN_F32, &ys, 0, NULL);
  RUN_OK(Det, NULL, &out, 1, &in, 1);
  ck_assert(ys == 0);
  in = tt(KILN_F32, t, 2, DIMS(3, 3)); /* triangular: 2 * 3 * 4 */
  RUN_OK(Det, NULL, &out, 1, &in, 1);
  expect_f32(&ys, (float[]){24}, 1, 1e-6, "Det triangular");
}
END_TEST

TCase *interp_tcase_linalg(void) {
  TCase *tc = tcase_create("linalg");
  tcase_add_test(tc, matmul_2d_batch_vector);
  tcase_add_test(tc, gemm_trans_alpha_beta);
  tcase_add_test(tc, matmul_fused_activations);
  tcase_add_test(tc, matmul_integer);
  tcase_add_test(tc, qlinear_matmul);
  tcase_add_test(tc, einsum_forms);
  tcase_add_test(tc, det);
  return tc;
}
