/* tests/interp/test_norm.c: the normalizations and the softmax kinds, with
 * hand-computed expectations. */
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

START_TEST(softmax_family) {
  double x[3] = {1, 2, 3}, y[3];
  interp_tensor in = tt(KILN_F64, x, 1, DIMS(3)), out = tt(KILN_F64, y, 1, DIMS(3));
  RUN_OK(Softmax, NULL, &out, 1, &in, 1);
  expect_f64(y, (double[]){0.09003057317038046, 0.24472847105479767, 0.6652409557748219}, 3, 1e-14,
             "Softmax");
  RUN_OK(LogSoftmax, NULL, &out, 1, &in, 1);
  expect_f64(
      y, (double[]){log(0.09003057317038046), log(0.24472847105479767), log(0.6652409557748219)}, 3,
      1e-14, "LogSoftmax");
  double h[3] = {1, 3, 3};
  interp_tensor hin = tt(KILN_F64, h, 1, DIMS(3));
  RUN_OK(Hardmax, NULL, &out, 1, &hin, 1);
  expect_f64(y, (double[]){0, 1, 0}, 3, 0, "Hardmax first max");
  /* axis 0 of [[0, 1000], [0, 1000]]: each column is uniform */
  float s[4] = {0, 1000, 0, 1000}, sy[4];
  interp_tensor sin = tt(KILN_F32, s, 2, DIMS(2, 2)), sout = tt(KILN_F32, sy, 2, DIMS(2, 2));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("axis", 0)}, 1);
  RUN_OK(Softmax, a, &sout, 1, &sin, 1);
  expect_f32(sy, (float[]){0.5f, 0.5f, 0.5f, 0.5f}, 4, 0, "Softmax axis 0");
  free_attrs(a);
  RUN_OK(Softmax, NULL, &sout, 1, &sin, 1); /* axis -1: large values stay finite */
  expect_f32(sy, (float[]){0, 1, 0, 1}, 4, 0, "Softmax stable");
}
END_TEST

START_TEST(rms_normalization) {
  /* rows [3, 4] (mean square 12.5) and [1, 1] (1); scale [1, 2]; eps 0 */
  float x[4] = {3, 4, 1, 1}, g[2] = {1, 2}, y[4];
  interp_tensor ins[2] = {tt(KILN_F32, x, 2, DIMS(2, 2)), tt(KILN_F32, g, 1, DIMS(2))};
  interp_tensor out = tt(KILN_F32, y, 2, DIMS(2, 2));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("epsilon", 0)}, 1);
  RUN_OK(RMSNormalization, a, &out, 1, ins, 2);
  double r = sqrt(12.5);
  expect_f32(y, (float[]){(float)(3 / r), (float)(8 / r), 1, 2}, 4, 1e-6, "RMSNormalization");
  free_attrs(a);
  /* axis 0: one group of all four, mean square (9 + 16 + 1 + 1) / 4 */
  float g4[4] = {1, 1, 1, 1};
  ins[1] = tt(KILN_F32, g4, 2, DIMS(2, 2));
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("axis", 0), KILN_ATTR_F("epsilon", 0)}, 2);
  RUN_OK(RMSNormalization, a, &out, 1, ins, 2);
  r = sqrt(27.0 / 4);
  expect_f32(y, (float[]){(float)(3 / r), (float)(4 / r), (float)(1 / r), (float)(1 / r)}, 4, 1e-6,
             "RMSNormalization axis 0");
  free_attrs(a);
  int32_t xi[2] = {1, 2};
  ins[0] = tt(KILN_I32, xi, 1, DIMS(2));
  RUN_FAIL(RMSNormalization, NULL, &out, 1, ins, 2, KILN_UNIMPLEMENTED);
}
END_TEST

START_TEST(lp_normalization) {
  float x[4] = {3, 4, 0, 0}, y[4];
  interp_tensor in = tt(KILN_F32, x, 2, DIMS(2, 2)), out = tt(KILN_F32, y, 2, DIMS(2, 2));
  RUN_OK(LpNormalization, NULL, &out, 1, &in, 1);
  expect_f32(y, (float[]){0.6f, 0.8f, 0, 0}, 4, 1e-7, "LpNormalization p 2 (zero row stays 0)");
  float x2[4] = {1, -3, 3, 1};
  in = tt(KILN_F32, x2, 2, DIMS(2, 2));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("axis", 0), KILN_ATTR_I("p", 1)}, 2);
  RUN_OK(LpNormalization, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){0.25f, -0.75f, 0.75f, 0.25f}, 4, 1e-7, "LpNormalization p 1 axis 0");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("p", 3)}, 1);
  RUN_FAIL(LpNormalization, a, &out, 1, &in, 1, KILN_INVALID_ARGUMENT);
  free_attrs(a);
}
END_TEST

START_TEST(group_normalization) {
  /* channels [1,3] [5,7] | [0,0] [2,-2]: group 0 mean 4 var 5, group 1
   * mean 0 var 2; scale [1,2,1,-1], bias [0,0,1,0.5], eps 0 */
  float x[8] = {1, 3, 5, 7, 0, 0, 2, -2}, g[4] = {1, 2, 1, -1}, b[4] = {0, 0, 1, 0.5f}, y[8];
  interp_tensor ins[3] = {tt(KILN_F32, x, 3, DIMS(1, 4, 2)), tt(KILN_F32, g, 1, DIMS(4)),
                          tt(KILN_F32, b, 1, DIMS(4))};
  interp_tensor out = tt(KILN_F32, y, 3, DIMS(1, 4, 2));
  kiln_attrs *a =
      mk_attrs((kiln_attr_desc[]){KILN_ATTR_F("epsilon", 0), KILN_ATTR_I("num_groups", 2)}, 2);
  RUN_OK(GroupNormalization, a, &out, 1, ins, 3);
  double r5 = sqrt(5.0), r2 = sqrt(2.0);
  expect_f32(y,
             (float[]){(float)(-3 / r5), (float)(-1 / r5), (float)(2 / r5), (float)(6 / r5), 1, 1,
                       (float)(0.5 - r2), (float)(0.5 + r2)},
             8, 1e-6, "GroupNormalization");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("num_groups", 3)}, 1);
  RUN_FAIL(GroupNormalization, a, &out, 1, ins, 3, KILN_INVALID_ARGUMENT);
  free_attrs(a);
}
END_TEST

TCase *interp_tcase_norm(void) {
  TCase *tc = tcase_create("norm");
  tcase_add_test(tc, batch_and_instance_norm);
  tcase_add_test(tc, layer_norm);
  tcase_add_test(tc, mvn_and_lrn);
  tcase_add_test(tc, softmax_family);
  tcase_add_test(tc, rms_normalization);
  tcase_add_test(tc, lp_normalization);
  tcase_add_test(tc, group_normalization);
  return tc;
}
