/* tests/interp/test_other.c: normalizations, quantization and losses, with
 * hand-computed expectations (the DynamicQuantizeLinear case is the ONNX
 * specification's own example). */
#include <stdint.h>

#include "helpers.h"

START_TEST(batch_and_instance_norm) {
  /* x [1, 2, 1, 1] = channels {1}, {2} */
  float x[2] = {1, 2}, scale[2] = {2, 1}, b[2] = {0, 1}, mean[2] = {0, 1}, var[2] = {1, 4}, y[2];
  interp_tensor in[5] = {tt(KILN_F32, x, 4, DIMS(1, 2, 1, 1)), tt(KILN_F32, scale, 1, DIMS(2)),
                         tt(KILN_F32, b, 1, DIMS(2)), tt(KILN_F32, mean, 1, DIMS(2)),
                         tt(KILN_F32, var, 1, DIMS(2))};
  interp_tensor out = tt(KILN_F32, y, 4, DIMS(1, 2, 1, 1));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("epsilon", 0)}, 1);
  RUN_OK(BatchNormalization, a, &out, 1, in, 5);
  /* 2 (1 - 0) / 1 + 0, 1 (2 - 1) / 2 + 1 */
  expect_f32(y, (float[]){2, 1.5f}, 2, 0, "BatchNormalization");
  /* instance norm of one channel {1, 3}: mean 2, variance 1 */
  float ix[2] = {1, 3}, is[1] = {3}, ib[1] = {1}, iy[2];
  interp_tensor iin[3] = {tt(KILN_F32, ix, 3, DIMS(1, 1, 2)), tt(KILN_F32, is, 1, DIMS(1)),
                          tt(KILN_F32, ib, 1, DIMS(1))};
  interp_tensor iout = tt(KILN_F32, iy, 3, DIMS(1, 1, 2));
  RUN_OK(InstanceNormalization, a, &iout, 1, iin, 3);
  expect_f32(iy, (float[]){-2, 4}, 2, 1e-7, "InstanceNormalization");
  free_attrs(a);
}
END_TEST

START_TEST(layer_norm) {
  /* rows {1, 3}: mean 2, var 1; {4, 8}: mean 6, var 4 */
  float x[4] = {1, 3, 4, 8}, s[2] = {1, 2}, b[2] = {0, 1}, y[4], m[2], inv[2];
  interp_tensor in[3] = {tt(KILN_F32, x, 2, DIMS(2, 2)), tt(KILN_F32, s, 1, DIMS(2)),
                         tt(KILN_F32, b, 1, DIMS(2))};
  interp_tensor outs[3] = {tt(KILN_F32, y, 2, DIMS(2, 2)), tt(KILN_F32, m, 2, DIMS(2, 1)),
                           tt(KILN_F32, inv, 2, DIMS(2, 1))};
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("epsilon", 0)}, 1);
  RUN_OK(LayerNormalization, a, outs, 3, in, 3);
  expect_f32(y, (float[]){-1, 3, -1, 3}, 4, 1e-7, "LayerNormalization");
  expect_f32(m, (float[]){2, 6}, 2, 0, "LayerNormalization mean");
  expect_f32(inv, (float[]){1, 0.5f}, 2, 0, "LayerNormalization invstddev");
  RUN_OK(LayerNormalization, a, outs, 1, in, 2); /* no bias, one result */
  expect_f32(y, (float[]){-1, 2, -1, 2}, 4, 1e-7, "LayerNormalization no bias");
  free_attrs(a);
  /* axis 0: the whole tensor, mean 4, var (9 + 1 + 0 + 16) / 4 = 6.5 */
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("epsilon", 0), KILN_ATTR_I("axis", 0)}, 2);
  float s4[4] = {1, 1, 1, 1};
  interp_tensor in0[2] = {in[0], tt(KILN_F32, s4, 2, DIMS(2, 2))};
  RUN_OK(LayerNormalization, a, outs, 1, in0, 2);
  expect_close(y[3], 4 / sqrt(6.5), 1e-6, "LayerNormalization axis 0", 3);
  free_attrs(a);
}
END_TEST

START_TEST(mvn_and_lrn) {
  double x[4] = {1, 3, 10, 10}, y[4];
  /* [1, 2, 1, 2]: channel 0 {1, 3} -> {-1, 1}; channel 1 constant -> 0 */
  interp_tensor in = tt(KILN_F64, x, 4, DIMS(1, 2, 1, 2));
  interp_tensor out = tt(KILN_F64, y, 4, DIMS(1, 2, 1, 2));
  RUN_OK(MeanVarianceNormalization, NULL, &out, 1, &in, 1);
  expect_f64(y, (double[]){-1, 1, 0, 0}, 4, 1e-8, "MeanVarianceNormalization");
  /* LRN size 2 over channels {1}, {2}: windows {0, 1} and {1}; alpha =
   * beta = bias = 1: 1 / (1 + 5/2), 2 / (1 + 4/2) */
  double l[2] = {1, 2}, ly[2];
  interp_tensor lin = tt(KILN_F64, l, 4, DIMS(1, 2, 1, 1));
  interp_tensor lout = tt(KILN_F64, ly, 4, DIMS(1, 2, 1, 1));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("alpha", 1), KILN_ATTR_F("beta", 1),
                                              KILN_ATTR_F("bias", 1), KILN_ATTR_I("size", 2)},
                           4);
  RUN_OK(LRN, a, &lout, 1, &lin, 1);
  expect_f64(ly, (double[]){1 / 3.5, 2.0 / 3}, 2, 1e-15, "LRN");
  free_attrs(a);
  RUN_FAIL(LRN, NULL, &lout, 1, &lin, 1, KILN_INVALID_ARGUMENT); /* size missing */
}
END_TEST

START_TEST(quantize) {
  float x[6] = {0, 1, 2.5f, -1, 300, 3.5f}, sc[1] = {1};
  uint8_t zp[1] = {128}, y[6];
  interp_tensor in[3] = {tt(KILN_F32, x, 1, DIMS(6)), tt(KILN_F32, sc, 0, NULL),
                         tt(KILN_U8, zp, 0, NULL)};
  interp_tensor out = tt(KILN_U8, y, 1, DIMS(6));
  RUN_OK(QuantizeLinear, NULL, &out, 1, in, 3);
  /* 2.5 -> 2 and 3.5 -> 4 (half to even), 300 saturates */
  uint8_t want[6] = {128, 129, 130, 127, 255, 132};
  for (int i = 0; i < 6; i++)
    ck_assert_uint_eq(y[i], want[i]);
  /* no zero point: i8 result, saturating low */
  int8_t s8[6];
  x[3] = -1000;
  interp_tensor out8 = tt(KILN_I8, s8, 1, DIMS(6));
  RUN_OK(QuantizeLinear, NULL, &out8, 1, in, 2);
  ck_assert_int_eq(s8[3], -128);
  ck_assert_int_eq(s8[4], 127);
  /* per axis 0 of [[1, 2], [3, 4]] with scales {1, 2}: 3/2 = 1.5 -> 2 */
  float px[4] = {1, 2, 3, 4}, ps[2] = {1, 2};
  int8_t py[4];
  interp_tensor pin[2] = {tt(KILN_F32, px, 2, DIMS(2, 2)), tt(KILN_F32, ps, 1, DIMS(2))};
  interp_tensor pout = tt(KILN_I8, py, 2, DIMS(2, 2));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("axis", 0)}, 1);
  RUN_OK(QuantizeLinear, a, &pout, 1, pin, 2);
  ck_assert(py[0] == 1 && py[1] == 2 && py[2] == 2 && py[3] == 2);
  free_attrs(a);
  /* blocked: [1, 4] with block 2 along axis 1, scales [1, 2] of shape [1, 2] */
  interp_tensor bin[2] = {tt(KILN_F32, px, 2, DIMS(1, 4)), tt(KILN_F32, ps, 2, DIMS(1, 2))};
  interp_tensor bout = tt(KILN_I8, py, 2, DIMS(1, 4));
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("axis", 1), KILN_ATTR_I("block_size", 2)}, 2);
  RUN_OK(QuantizeLinear, a, &bout, 1, bin, 2);
  ck_assert(py[0] == 1 && py[1] == 2 && py[2] == 2 && py[3] == 2);
  free_attrs(a);
}
END_TEST

START_TEST(dequantize) {
  uint8_t x[3] = {0, 128, 255}, zp[1] = {128};
  float sc[1] = {0.5f}, y[3];
  interp_tensor in[3] = {tt(KILN_U8, x, 1, DIMS(3)), tt(KILN_F32, sc, 0, NULL),
                         tt(KILN_U8, zp, 0, NULL)};
  interp_tensor out = tt(KILN_F32, y, 1, DIMS(3));
  RUN_OK(DequantizeLinear, NULL, &out, 1, in, 3);
  expect_f32(y, (float[]){-64, 0, 63.5f}, 3, 0, "DequantizeLinear");
  /* per axis 1 of i8 [[1, -2], [3, -4]], scales {2, 0.25}, zero points {1, 0} */
  int8_t px[4] = {1, -2, 3, -4}, pz[2] = {1, 0};
  float ps[2] = {2, 0.25f}, py[4];
  interp_tensor pin[3] = {tt(KILN_I8, px, 2, DIMS(2, 2)), tt(KILN_F32, ps, 1, DIMS(2)),
                          tt(KILN_I8, pz, 1, DIMS(2))};
  interp_tensor pout = tt(KILN_F32, py, 2, DIMS(2, 2));
  RUN_OK(DequantizeLinear, NULL, &pout, 1, pin, 3); /* axis defaults to 1 */
  expect_f32(py, (float[]){0, -0.5f, 4, -1}, 4, 0, "DequantizeLinear per axis");
  interp_tensor bad[2] = {pout, in[1]};
  RUN_FAIL(DequantizeLinear, NULL, &out, 1, bad, 2, KILN_UNIMPLEMENTED);
}
END_TEST

START_TEST(dynamic_quantize) {
  float x[6] = {0, 2, -3, -2.5f, 1.34f, 0.5f}, scale[1];
  uint8_t y[6], zp[1];
  interp_tensor in = tt(KILN_F32, x, 1, DIMS(6));
  interp_tensor outs[3] = {tt(KILN_U8, y, 1, DIMS(6)), tt(KILN_F32, scale, 0, NULL),
                           tt(KILN_U8, zp, 0, NULL)};
  RUN_OK(DynamicQuantizeLinear, NULL, outs, 3, &in, 1);
  expect_close(scale[0], 0.019607844, 1e-7, "scale", 0); /* 5 / 255 */
  ck_assert_uint_eq(zp[0], 153);
  uint8_t want[6] = {153, 255, 0, 26, 221, 179};
  for (int i = 0; i < 6; i++)
    ck_assert_msg(y[i] == want[i], "y[%d] = %u, want %u", i, y[i], want[i]);
}
END_TEST

START_TEST(nll_loss) {
  /* log-probabilities [[-1, -2, -3], [-4, -5, -6]], targets {0, 2} */
  float lp[6] = {-1, -2, -3, -4, -5, -6}, w[3] = {1, 1, 2}, y[2];
  int64_t t[2] = {0, 2};
  interp_tensor in[3] = {tt(KILN_F32, lp, 2, DIMS(2, 3)), tt(KILN_I64, t, 1, DIMS(2)),
                         tt(KILN_F32, w, 1, DIMS(3))};
  interp_tensor scalar = tt(KILN_F32, y, 0, NULL);
  RUN_OK(NegativeLogLikelihoodLoss, NULL, &scalar, 1, in, 2);
  expect_f32(y, (float[]){3.5f}, 1, 0, "NLL mean");
  RUN_OK(NegativeLogLikelihoodLoss, NULL, &scalar, 1, in, 3);
  expect_f32(y, (float[]){13.0f / 3}, 1, 1e-7, "NLL weighted mean");
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_S("reduction", "sum")}, 1);
  RUN_OK(NegativeLogLikelihoodLoss, a, &scalar, 1, in, 3);
  expect_f32(y, (float[]){13}, 1, 0, "NLL sum");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_S("reduction", "none")}, 1);
  interp_tensor vec = tt(KILN_F32, y, 1, DIMS(2));
  RUN_OK(NegativeLogLikelihoodLoss, a, &vec, 1, in, 2);
  expect_f32(y, (float[]){1, 6}, 2, 0, "NLL none");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("ignore_index", 2)}, 1);
  RUN_OK(NegativeLogLikelihoodLoss, a, &scalar, 1, in, 3);
  expect_f32(y, (float[]){1}, 1, 0, "NLL ignore_index");
  free_attrs(a);
  t[1] = 3;
  RUN_FAIL(NegativeLogLikelihoodLoss, NULL, &scalar, 1, in, 2, KILN_INVALID_ARGUMENT);
}
END_TEST

START_TEST(softmax_cross_entropy) {
  /* scores [[0, 0], [0, log 3]]: log-probs [[-ln2, -ln2], [-ln4, ln(3/4)]] */
  double s[4] = {0, 0, 0, log(3.0)}, y[1], lp[4];
  int32_t labels[2] = {1, 0};
  interp_tensor in[2] = {tt(KILN_F64, s, 2, DIMS(2, 2)), tt(KILN_I32, labels, 1, DIMS(2))};
  interp_tensor outs[2] = {tt(KILN_F64, y, 0, NULL), tt(KILN_F64, lp, 2, DIMS(2, 2))};
  RUN_OK(SoftmaxCrossEntropyLoss, NULL, outs, 2, in, 2);
  expect_close(y[0], (log(2.0) + log(4.0)) / 2, 1e-14, "SCE mean", 0);
  expect_f64(lp, (double[]){-log(2.0), -log(2.0), -log(4.0), log(0.75)}, 4, 1e-14, "log_prob");
  kiln_attrs *a = mk_attrs(
      (kiln_attr_desc[]){KILN_ATTR_S("reduction", "sum"), KILN_ATTR_I("ignore_index", 0)}, 2);
  RUN_OK(SoftmaxCrossEntropyLoss, a, outs, 1, in, 2);
  expect_close(y[0], log(2.0), 1e-14, "SCE sum ignore", 0);
  free_attrs(a);
}
END_TEST

TCase *interp_tcase_other(void) {
  TCase *tc = tcase_create("norm_quant_loss");
  tcase_add_test(tc, batch_and_instance_norm);
  tcase_add_test(tc, layer_norm);
  tcase_add_test(tc, mvn_and_lrn);
  tcase_add_test(tc, quantize);
  tcase_add_test(tc, dequantize);
  tcase_add_test(tc, dynamic_quantize);
  tcase_add_test(tc, nll_loss);
  tcase_add_test(tc, softmax_cross_entropy);
  return tc;
}
