/* tests/interp/test_later.c: kernels of the kinds appended later
 * (RMSNormalization, Bitwise*, Mish, Swish, LpNormalization, windows, Det,
 * GroupNormalization, CenterCropPad, MaxUnpool, Col2Im),
 * with hand-computed expectations. */
#include <stdint.h>

#include "helpers.h"

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

START_TEST(windows) {
  float y[5];
  interp_tensor out = tt(KILN_F32, y, 1, DIMS(4));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("size", 4)}, 1);
  RUN_OK(HannWindow, a, &out, 1, NULL, 0);
  expect_f32(y, (float[]){0, 0.5f, 1, 0.5f}, 4, 1e-7, "HannWindow periodic");
  RUN_OK(HammingWindow, a, &out, 1, NULL, 0);
  expect_f32(y, (float[]){4.0f / 46, 25.0f / 46, 1, 25.0f / 46}, 4, 1e-7, "HammingWindow");
  RUN_OK(BlackmanWindow, a, &out, 1, NULL, 0);
  expect_f32(y, (float[]){0, 0.34f, 1, 0.34f}, 4, 1e-7, "BlackmanWindow");
  free_attrs(a);
  /* symmetric: N = size - 1 */
  out = tt(KILN_F32, y, 1, DIMS(5));
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("periodic", 0), KILN_ATTR_I("size", 5)}, 2);
  RUN_OK(HannWindow, a, &out, 1, NULL, 0);
  expect_f32(y, (float[]){0, 0.5f, 1, 0.5f, 0}, 5, 1e-7, "HannWindow symmetric");
  free_attrs(a);
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

START_TEST(center_crop_pad) {
  /* [3,4] -> [2,6]: rows cropped from offset 0, one zero column each side */
  int32_t x[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, y[12];
  interp_tensor in = tt(KILN_I32, x, 2, DIMS(3, 4)), out = tt(KILN_I32, y, 2, DIMS(2, 6));
  RUN_OK(CenterCropPad, NULL, &out, 1, &in, 1);
  int32_t want[12] = {0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 7, 0};
  for (int i = 0; i < 12; i++)
    ck_assert_int_eq(y[i], want[i]);
  /* [3,4] -> [1,3]: row 1, columns from offset 0 */
  out = tt(KILN_I32, y, 2, DIMS(1, 3));
  RUN_OK(CenterCropPad, NULL, &out, 1, &in, 1);
  ck_assert(y[0] == 4 && y[1] == 5 && y[2] == 6);
}
END_TEST

START_TEST(max_unpool) {
  float x[4] = {1, 2, 3, 4}, y[25];
  int64_t idx[4] = {5, 7, 13, 15};
  interp_tensor ins[2] = {tt(KILN_F32, x, 4, DIMS(1, 1, 2, 2)),
                          tt(KILN_I64, idx, 4, DIMS(1, 1, 2, 2))};
  interp_tensor out = tt(KILN_F32, y, 4, DIMS(1, 1, 4, 4));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("kernel_shape", DIMS(2, 2), 2),
                                              KILN_ATTR_IS("strides", DIMS(2, 2), 2)},
                           2);
  RUN_OK(MaxUnpool, a, &out, 1, ins, 2);
  float want[16] = {0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4};
  expect_f32(y, want, 16, 0, "MaxUnpool");
  /* a 5x5 result keeps the 4x4 block at the top left: (1,1) is 6 */
  out = tt(KILN_F32, y, 4, DIMS(1, 1, 5, 5));
  RUN_OK(MaxUnpool, a, &out, 1, ins, 2);
  for (int i = 0; i < 25; i++)
    ck_assert(y[i] == (i == 6 ? 1 : i == 8 ? 2 : i == 16 ? 3 : i == 18 ? 4 : 0));
  idx[3] = 16;
  RUN_FAIL(MaxUnpool, a, &out, 1, ins, 2, KILN_OUT_OF_RANGE);
  free_attrs(a);
}
END_TEST

START_TEST(col2im) {
  /* image [4], block [2], stride 1: block l covers l, l+1 */
  float x[6] = {1, 2, 3, 10, 20, 30}, y[4];
  interp_tensor in = tt(KILN_F32, x, 3, DIMS(1, 2, 3)), out = tt(KILN_F32, y, 3, DIMS(1, 1, 4));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("block_shape", DIMS(2), 1)}, 1);
  RUN_OK(Col2Im, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){1, 12, 23, 30}, 4, 0, "Col2Im");
  free_attrs(a);
  /* image [3], stride 2, pads [1,0]: block 0 covers -1 (dropped) and 0,
   * block 1 covers 1 and 2 */
  float x2[4] = {1, 2, 10, 20};
  in = tt(KILN_F32, x2, 3, DIMS(1, 2, 2));
  out = tt(KILN_F32, y, 3, DIMS(1, 1, 3));
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("block_shape", DIMS(2), 1),
                                  KILN_ATTR_IS("pads", DIMS(1, 0), 2),
                                  KILN_ATTR_IS("strides", DIMS(2), 1)},
               3);
  RUN_OK(Col2Im, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){10, 2, 20}, 3, 0, "Col2Im padded");
  free_attrs(a);
}
END_TEST

TCase *interp_tcase_later(void) {
  TCase *tc = tcase_create("later");
  tcase_add_test(tc, rms_normalization);
  tcase_add_test(tc, bitwise);
  tcase_add_test(tc, mish_swish);
  tcase_add_test(tc, lp_normalization);
  tcase_add_test(tc, windows);
  tcase_add_test(tc, det);
  tcase_add_test(tc, group_normalization);
  tcase_add_test(tc, center_crop_pad);
  tcase_add_test(tc, max_unpool);
  tcase_add_test(tc, col2im);
  return tc;
}
