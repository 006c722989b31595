/* tests/interp/test_conv.c: Conv, ConvTranspose, ConvInteger, QLinearConv,
 * Col2Im. */
#include <stdint.h>

#include "helpers.h"

static float x9[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
static float ones4[4] = {1, 1, 1, 1};

START_TEST(conv_plain_pad_stride_dilation) {
  float y[4];
  interp_tensor ins[2] = {t_tensor(KILN_F32, x9, 4, DIMS(1, 1, 3, 3)),
                          t_tensor(KILN_F32, ones4, 4, DIMS(1, 1, 2, 2))};
  interp_tensor out = t_tensor(KILN_F32, y, 4, DIMS(1, 1, 2, 2));
  t_run(interp_Conv, NOATTRS, &out, 1, ins, 2);
  CHECK_F(y, 0, 8, 12, 20, 24);
  t_run(interp_Conv,
        ATTRS(KILN_ATTR_IS("pads", DIMS(1, 1, 1, 1), 4), KILN_ATTR_IS("strides", DIMS(2, 2), 2)),
        &out, 1, ins, 2);
  CHECK_F(y, 0, 0, 3, 9, 24);
  out = t_tensor(KILN_F32, y, 4, DIMS(1, 1, 1, 1));
  t_run(interp_Conv, ATTRS(KILN_ATTR_IS("dilations", DIMS(2, 2), 2)), &out, 1, ins, 2);
  CHECK_F(y, 0, 16);
}
END_TEST

START_TEST(conv_groups_bias_1d) {
  /* 2 channels, group 2: each output channel sees only its own input */
  float x[4] = {1, 2, 3, 4}, w[2] = {2, 3}, b[2] = {1, -1}, y[4];
  interp_tensor ins[3] = {t_tensor(KILN_F32, x, 3, DIMS(1, 2, 2)),
                          t_tensor(KILN_F32, w, 3, DIMS(2, 1, 1)),
                          t_tensor(KILN_F32, b, 1, DIMS(2))};
  interp_tensor out = t_tensor(KILN_F32, y, 3, DIMS(1, 2, 2));
  t_run(interp_Conv, ATTRS(KILN_ATTR_I("group", 2)), &out, 1, ins, 3);
  CHECK_F(y, 0, 3, 5, 8, 11);
}
END_TEST

START_TEST(conv_auto_pad) {
  float x[4] = {1, 2, 3, 4}, w[3] = {1, 1, 1}, y[4];
  interp_tensor ins[2] = {t_tensor(KILN_F32, x, 3, DIMS(1, 1, 4)),
                          t_tensor(KILN_F32, w, 3, DIMS(1, 1, 3))};
  interp_tensor out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 4));
  t_run(interp_Conv, ATTRS(KILN_ATTR_S("auto_pad", "SAME_UPPER")), &out, 1, ins, 2);
  CHECK_F(y, 0, 3, 6, 9, 7);
  out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 2));
  t_run(interp_Conv,
        ATTRS(KILN_ATTR_S("auto_pad", "SAME_LOWER"), KILN_ATTR_IS("strides", DIMS(2), 1)), &out, 1,
        ins, 2);
  CHECK_F(y, 0, 3, 9);
  t_run(interp_Conv,
        ATTRS(KILN_ATTR_S("auto_pad", "SAME_UPPER"), KILN_ATTR_IS("strides", DIMS(2), 1)), &out, 1,
        ins, 2);
  CHECK_F(y, 0, 6, 7);
}
END_TEST

START_TEST(conv_transpose) {
  float x[3] = {1, 2, 3}, w[3] = {1, 1, 1}, y[8];
  interp_tensor ins[2] = {t_tensor(KILN_F32, x, 3, DIMS(1, 1, 3)),
                          t_tensor(KILN_F32, w, 3, DIMS(1, 1, 3))};
  interp_tensor out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 5));
  t_run(interp_ConvTranspose, NOATTRS, &out, 1, ins, 2);
  CHECK_F(y, 0, 1, 3, 6, 5, 3);
  out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 7));
  t_run(interp_ConvTranspose, ATTRS(KILN_ATTR_IS("strides", DIMS(2), 1)), &out, 1, ins, 2);
  CHECK_F(y, 0, 1, 1, 3, 2, 5, 3, 3);
  out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 5));
  t_run(interp_ConvTranspose,
        ATTRS(KILN_ATTR_IS("strides", DIMS(2), 1), KILN_ATTR_IS("pads", DIMS(1, 1), 2)), &out, 1,
        ins, 2);
  CHECK_F(y, 0, 1, 3, 2, 5, 3);
  out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 8));
  t_run(interp_ConvTranspose,
        ATTRS(KILN_ATTR_IS("strides", DIMS(2), 1), KILN_ATTR_IS("output_padding", DIMS(1), 1)),
        &out, 1, ins, 2);
  CHECK_F(y, 0, 1, 1, 3, 2, 5, 3, 3, 0);
}
END_TEST

/* No output channels: an empty result, at once, though the kernel window
 * has 10^7 taps for each of the 6105 input cells. */
START_TEST(conv_transpose_no_channels) {
  float x[6105], y[1] = {42};
  for (int i = 0; i < 6105; i++)
    x[i] = (float)i;
  interp_tensor ins[2] = {t_tensor(KILN_F32, x, 5, DIMS(1, 1, 37, 33, 5)),
                          t_tensor(KILN_F32, NULL, 5, DIMS(1, 0, 1000, 1000, 10))};
  interp_tensor out = t_tensor(KILN_F32, y, 5, DIMS(1, 0, 1036, 1032, 14));
  t_run(interp_ConvTranspose, NOATTRS, &out, 1, ins, 2);
  ck_assert(y[0] == 42); /* nothing written */
}
END_TEST

/* output_shape fixes the result size and the pads follow from it: the full
 * result of x * w at stride 2 is [1, 1, 3, 2, 5, 3, 3] (7 cells). */
START_TEST(conv_transpose_output_shape) {
  float x[3] = {1, 2, 3}, w[3] = {1, 1, 1}, y[8];
  interp_tensor ins[2] = {t_tensor(KILN_F32, x, 3, DIMS(1, 1, 3)),
                          t_tensor(KILN_F32, w, 3, DIMS(1, 1, 3))};
  /* 8 cells: total padding 2*2 + 3 - 8 = -1 splits as begin 0 (floor
   * division), end -1, so the extra cell is a zero at the end */
  interp_tensor out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 8));
  t_run(interp_ConvTranspose,
        ATTRS(KILN_ATTR_IS("strides", DIMS(2), 1), KILN_ATTR_IS("output_shape", DIMS(8), 1)), &out,
        1, ins, 2);
  CHECK_F(y, 0, 1, 1, 3, 2, 5, 3, 3, 0);
  /* 6 cells: total 1; NOTSET puts the odd cell at the beginning */
  out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 6));
  t_run(interp_ConvTranspose,
        ATTRS(KILN_ATTR_IS("strides", DIMS(2), 1), KILN_ATTR_IS("output_shape", DIMS(6), 1)), &out,
        1, ins, 2);
  CHECK_F(y, 0, 1, 3, 2, 5, 3, 3);
  /* SAME_UPPER puts it at the end */
  t_run(interp_ConvTranspose,
        ATTRS(KILN_ATTR_IS("strides", DIMS(2), 1), KILN_ATTR_IS("output_shape", DIMS(6), 1),
              KILN_ATTR_S("auto_pad", "SAME_UPPER")),
        &out, 1, ins, 2);
  CHECK_F(y, 0, 1, 1, 3, 2, 5, 3);
}
END_TEST

START_TEST(conv_integer_qlinear) {
  uint8_t x[9] = {2, 3, 4, 5, 6, 7, 8, 9, 10}, w[4] = {1, 1, 1, 1}, xzp = 1;
  int32_t y[4];
  interp_tensor ins[3] = {t_tensor(KILN_U8, x, 4, DIMS(1, 1, 3, 3)),
                          t_tensor(KILN_U8, w, 4, DIMS(1, 1, 2, 2)),
                          t_tensor(KILN_U8, &xzp, 0, NULL)};
  interp_tensor out = t_tensor(KILN_I32, y, 4, DIMS(1, 1, 2, 2));
  t_run(interp_ConvInteger, NOATTRS, &out, 1, ins, 3);
  CHECK_I(y, 12, 16, 24, 28);
  /* x real [0, 5], w real 4, bias 4 (scale 1): acc [4, 24] * 0.25 + 5 */
  uint8_t qx[2] = {10, 20}, qxzp = 10, qw[1] = {3}, qwzp = 1, yzp = 5, qy[2];
  float xs = 0.5f, ws = 2.0f, ys = 4.0f;
  int32_t bias[1] = {4};
  interp_tensor q[9] = {
      t_tensor(KILN_U8, qx, 4, DIMS(1, 1, 1, 2)), t_tensor(KILN_F32, &xs, 0, NULL),
      t_tensor(KILN_U8, &qxzp, 0, NULL),          t_tensor(KILN_U8, qw, 4, DIMS(1, 1, 1, 1)),
      t_tensor(KILN_F32, &ws, 0, NULL),           t_tensor(KILN_U8, &qwzp, 0, NULL),
      t_tensor(KILN_F32, &ys, 0, NULL),           t_tensor(KILN_U8, &yzp, 0, NULL),
      t_tensor(KILN_I32, bias, 1, DIMS(1))};
  out = t_tensor(KILN_U8, qy, 4, DIMS(1, 1, 1, 2));
  t_run(interp_QLinearConv, NOATTRS, &out, 1, q, 9);
  CHECK_I(qy, 6, 11);
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

/* The channel-blocked kinds (kiln/node_kinds.def), by hand: 3 channels in
 * blocks of 2, so the last block has one padding lane. */
START_TEST(blocked_layout) {
  float x[6] = {1, 2, 3, 4, 5, 6}, xb[8], back[6], y[8];
  interp_tensor in = t_tensor(KILN_F32, x, 3, DIMS(1, 3, 2));
  interp_tensor out = t_tensor(KILN_F32, xb, 4, DIMS(1, 2, 2, 2));
  t_run(interp_BlockChannels, ATTRS(KILN_ATTR_I("block", 2)), &out, 1, &in, 1);
  CHECK_F(xb, 0, 1, 3, 2, 4, 5, 0, 6, 0);
  in = out;
  out = t_tensor(KILN_F32, back, 3, DIMS(1, 3, 2));
  t_run(interp_UnblockChannels, ATTRS(KILN_ATTR_I("channels", 3)), &out, 1, &in, 1);
  CHECK_F(back, 0, 1, 2, 3, 4, 5, 6);
  /* depthwise 1x1 of the blocked x: 2x+1, 3x+1, 4x+1 per channel */
  float w[3] = {2, 3, 4}, b[3] = {1, 1, 1}, r[8] = {-10, -10, -10, -10, -10, -10, -10, -10};
  interp_tensor ins[4] = {
      t_tensor(KILN_F32, xb, 5, DIMS(1, 2, 1, 2, 2)), t_tensor(KILN_F32, w, 4, DIMS(3, 1, 1, 1)),
      t_tensor(KILN_F32, b, 1, DIMS(3)), t_tensor(KILN_F32, r, 5, DIMS(1, 2, 1, 2, 2))};
  out = t_tensor(KILN_F32, y, 5, DIMS(1, 2, 1, 2, 2));
  t_run(interp_BlockedConv, ATTRS(KILN_ATTR_I("block", 2), KILN_ATTR_I("group", 3)), &out, 1, ins,
        3);
  CHECK_F(y, 0, 3, 10, 5, 13, 21, 0, 25, 0);
  /* with the residual (-10) and Relu: the padding lane stays 0 */
  t_run(interp_BlockedConv,
        ATTRS(KILN_ATTR_S("activation", "Relu"), KILN_ATTR_I("block", 2), KILN_ATTR_I("group", 3)),
        &out, 1, ins, 4);
  CHECK_F(y, 0, 0, 0, 0, 3, 11, 0, 15, 0);
  /* group 1 from a plain input: the channels summed */
  float ones[3] = {1, 1, 1}, y2[4];
  interp_tensor pins[2] = {t_tensor(KILN_F32, x, 4, DIMS(1, 3, 1, 2)),
                           t_tensor(KILN_F32, ones, 4, DIMS(1, 3, 1, 1))};
  out = t_tensor(KILN_F32, y2, 5, DIMS(1, 1, 1, 2, 2));
  t_run(interp_BlockedConv, ATTRS(KILN_ATTR_I("block", 2)), &out, 1, pins, 2);
  CHECK_F(y2, 0, 9, 0, 12, 0);
}
END_TEST

TCase *interp_tcase_conv(void) {
  TCase *tc = tcase_create("conv");
  tcase_add_test(tc, conv_plain_pad_stride_dilation);
  tcase_add_test(tc, conv_transpose_no_channels);
  tcase_add_test(tc, conv_groups_bias_1d);
  tcase_add_test(tc, conv_auto_pad);
  tcase_add_test(tc, conv_transpose);
  tcase_add_test(tc, conv_transpose_output_shape);
  tcase_add_test(tc, conv_integer_qlinear);
  tcase_add_test(tc, col2im);
  tcase_add_test(tc, blocked_layout);
  return tc;
}
