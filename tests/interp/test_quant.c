/* tests/interp/test_quant.c: QuantizeLinear, DequantizeLinear and
 * DynamicQuantizeLinear, with hand-computed expectations (the
 * DynamicQuantizeLinear case is the ONNX specification's own example). The
 * integer and qlinear matrix products and convolutions are tested with
 * their kernels, in test_linalg.c and test_conv.c. */
#include <stdint.h>

#include "helpers.h"

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

TCase *interp_tcase_quant(void) {
  TCase *tc = tcase_create("quant");
  tcase_add_test(tc, quantize);
  tcase_add_test(tc, dequantize);
  tcase_add_test(tc, dynamic_quantize);
  return tc;
}
