/* tests/interp/test_movement.c: shape and data-movement kernels. */
#include <stdint.h>
#include <string.h>

#include "helpers.h"

START_TEST(reshape_flatten_copy) {
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
  interp_tensor in = t_tensor(KILN_F32, x, 2, DIMS(2, 3));
  interp_tensor out = t_tensor(KILN_F32, y, 2, DIMS(3, 2));
  t_run(interp_Reshape, NOATTRS, &out, 1, &in, 1);
  CHECK_F(y, 0, 1, 2, 3, 4, 5, 6);
  out = t_tensor(KILN_F32, y, 2, DIMS(5, 1));
  t_fail(interp_Flatten, NOATTRS, &out, 1, &in, 1, KILN_INVALID_ARGUMENT);
}
END_TEST

START_TEST(transpose_default_and_perm) {
  int64_t x[6] = {1, 2, 3, 4, 5, 6}, y[6];
  interp_tensor in = t_tensor(KILN_I64, x, 2, DIMS(2, 3));
  interp_tensor out = t_tensor(KILN_I64, y, 2, DIMS(3, 2));
  t_run(interp_Transpose, NOATTRS, &out, 1, &in, 1);
  CHECK_I(y, 1, 4, 2, 5, 3, 6);
  /* [1,2,3] with perm (2,0,1) -> [3,1,2]; negative entry -1 == 2 */
  int8_t a[6] = {1, 2, 3, 4, 5, 6}, b[6];
  in = t_tensor(KILN_I8, a, 3, DIMS(1, 2, 3));
  out = t_tensor(KILN_I8, b, 3, DIMS(3, 1, 2));
  t_run(interp_Transpose, ATTRS(KILN_ATTR_IS("perm", DIMS(-1, 0, 1), 3)), &out, 1, &in, 1);
  CHECK_I(b, 1, 4, 2, 5, 3, 6);
}
END_TEST

START_TEST(expand_tile) {
  uint16_t x[3] = {7, 8, 9}, y[6];
  interp_tensor in = t_tensor(KILN_U16, x, 2, DIMS(3, 1));
  interp_tensor out = t_tensor(KILN_U16, y, 2, DIMS(3, 2));
  t_run(interp_Expand, ATTRS(KILN_ATTR_IS("shape", DIMS(1, 2), 2)), &out, 1, &in, 1);
  CHECK_I(y, 7, 7, 8, 8, 9, 9);
  uint8_t a[2] = {1, 0}, b[8];
  in = t_tensor(KILN_BOOL, a, 2, DIMS(1, 2));
  out = t_tensor(KILN_BOOL, b, 2, DIMS(2, 4));
  t_run(interp_Tile, ATTRS(KILN_ATTR_IS("repeats", DIMS(2, 2), 2)), &out, 1, &in, 1);
  CHECK_I(b, 1, 0, 1, 0, 1, 0, 1, 0);
}
END_TEST

START_TEST(slice_negative_step_and_clamp) {
  int32_t x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, y[10];
  interp_tensor in = t_tensor(KILN_I32, x, 1, DIMS(10));
  interp_tensor out = t_tensor(KILN_I32, y, 1, DIMS(4));
  t_run(interp_Slice,
        ATTRS(KILN_ATTR_IS("starts", DIMS(-1), 1), KILN_ATTR_IS("ends", DIMS(INT64_MIN), 1),
              KILN_ATTR_IS("steps", DIMS(-3), 1)),
        &out, 1, &in, 1);
  CHECK_I(y, 9, 6, 3, 0);
  out = t_tensor(KILN_I32, y, 1, DIMS(8));
  t_run(interp_Slice,
        ATTRS(KILN_ATTR_IS("starts", DIMS(2), 1), KILN_ATTR_IS("ends", DIMS(1000), 1),
              KILN_ATTR_IS("axes", DIMS(-1), 1)),
        &out, 1, &in, 1);
  CHECK_I(y, 2, 3, 4, 5, 6, 7, 8, 9);
  /* 2-D: rows reversed from 1000 (clamped to the last), columns 1..2 */
  float m[6] = {1, 2, 3, 4, 5, 6}, r[4];
  in = t_tensor(KILN_F32, m, 2, DIMS(2, 3));
  out = t_tensor(KILN_F32, r, 2, DIMS(2, 2));
  t_run(interp_Slice,
        ATTRS(KILN_ATTR_IS("starts", DIMS(1000, 1), 2), KILN_ATTR_IS("ends", DIMS(-1000, 3), 2),
              KILN_ATTR_IS("axes", DIMS(0, 1), 2), KILN_ATTR_IS("steps", DIMS(-1, 1), 2)),
        &out, 1, &in, 1);
  CHECK_F(r, 0, 5, 6, 2, 3);
  /* empty result (of the 1-D input: starts == ends) */
  in = t_tensor(KILN_I32, x, 1, DIMS(10));
  out = t_tensor(KILN_I32, y, 1, DIMS(0));
  t_run(interp_Slice, ATTRS(KILN_ATTR_IS("starts", DIMS(5), 1), KILN_ATTR_IS("ends", DIMS(5), 1)),
        &out, 1, &in, 1);
}
END_TEST

START_TEST(pad_modes) {
  float x[3] = {1, 2, 3}, y[7];
  interp_tensor in = t_tensor(KILN_F32, x, 1, DIMS(3));
  interp_tensor out = t_tensor(KILN_F32, y, 1, DIMS(7));
  t_run(interp_Pad, ATTRS(KILN_ATTR_IS("pads", DIMS(2, 2), 2), KILN_ATTR_F("value", 9.0)), &out, 1,
        &in, 1);
  CHECK_F(y, 0, 9, 9, 1, 2, 3, 9, 9);
  t_run(interp_Pad, ATTRS(KILN_ATTR_IS("pads", DIMS(2, 2), 2), KILN_ATTR_S("mode", "reflect")),
        &out, 1, &in, 1);
  CHECK_F(y, 0, 3, 2, 1, 2, 3, 2, 1);
  t_run(interp_Pad, ATTRS(KILN_ATTR_IS("pads", DIMS(2, 2), 2), KILN_ATTR_S("mode", "edge")), &out,
        1, &in, 1);
  CHECK_F(y, 0, 1, 1, 1, 2, 3, 3, 3);
  t_run(interp_Pad, ATTRS(KILN_ATTR_IS("pads", DIMS(2, 2), 2), KILN_ATTR_S("mode", "wrap")), &out,
        1, &in, 1);
  CHECK_F(y, 0, 2, 3, 1, 2, 3, 1, 2);
  /* negative pad crops; axes selects the padded axis */
  int16_t a[4] = {1, 2, 3, 4}, b[4];
  in = t_tensor(KILN_I16, a, 2, DIMS(2, 2));
  out = t_tensor(KILN_I16, b, 2, DIMS(2, 2));
  t_run(interp_Pad,
        ATTRS(KILN_ATTR_IS("pads", DIMS(-1, 1), 2), KILN_ATTR_IS("axes", DIMS(-1), 1),
              KILN_ATTR_F("value", -5)),
        &out, 1, &in, 1);
  CHECK_I(b, 2, -5, 4, -5);
}
END_TEST

START_TEST(concat_split) {
  double a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, y[6];
  interp_tensor ins[2] = {t_tensor(KILN_F64, a, 2, DIMS(2, 1)),
                          t_tensor(KILN_F64, b, 2, DIMS(2, 2))};
  interp_tensor out = t_tensor(KILN_F64, y, 2, DIMS(2, 3));
  t_run(interp_Concat, ATTRS(KILN_ATTR_I("axis", -1)), &out, 1, ins, 2);
  ck_assert(y[0] == 1 && y[1] == 3 && y[2] == 4 && y[3] == 2 && y[4] == 5 && y[5] == 6);
  double p[2], q[4];
  interp_tensor outs[2] = {t_tensor(KILN_F64, p, 2, DIMS(2, 1)),
                           t_tensor(KILN_F64, q, 2, DIMS(2, 2))};
  t_run(interp_Split, ATTRS(KILN_ATTR_I("axis", 1), KILN_ATTR_IS("split", DIMS(1, 2), 2)), outs, 2,
        &out, 1);
  ck_assert(p[0] == 1 && p[1] == 2 && q[0] == 3 && q[1] == 4 && q[2] == 5 && q[3] == 6);
}
END_TEST

START_TEST(shape_size) {
  float x[1];
  int64_t y[4], n;
  interp_tensor in = t_tensor(KILN_F32, x, 4, DIMS(2, 3, 0, 5));
  interp_tensor out = t_tensor(KILN_I64, y, 1, DIMS(2));
  t_run(interp_Shape, ATTRS(KILN_ATTR_I("start", -2)), &out, 1, &in, 1);
  CHECK_I(y, 0, 5);
  out = t_tensor(KILN_I64, &n, 0, NULL);
  t_run(interp_Size, NOATTRS, &out, 1, &in, 1);
  ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(depth_space) {
  float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, y[8], z[8];
  interp_tensor in = t_tensor(KILN_F32, x, 4, DIMS(1, 8, 1, 1));
  interp_tensor out = t_tensor(KILN_F32, y, 4, DIMS(1, 2, 2, 2));
  t_run(interp_DepthToSpace, ATTRS(KILN_ATTR_I("blocksize", 2)), &out, 1, &in, 1);
  CHECK_F(y, 0, 0, 2, 4, 6, 1, 3, 5, 7);
  interp_tensor back = t_tensor(KILN_F32, z, 4, DIMS(1, 8, 1, 1));
  t_run(interp_SpaceToDepth, ATTRS(KILN_ATTR_I("blocksize", 2)), &back, 1, &out, 1);
  CHECK_F(z, 0, 0, 1, 2, 3, 4, 5, 6, 7);
  t_run(interp_DepthToSpace, ATTRS(KILN_ATTR_I("blocksize", 2), KILN_ATTR_S("mode", "CRD")), &out,
        1, &in, 1);
  CHECK_F(y, 0, 0, 1, 2, 3, 4, 5, 6, 7);
}
END_TEST

START_TEST(trilu) {
  int32_t x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y[9];
  interp_tensor in = t_tensor(KILN_I32, x, 2, DIMS(3, 3));
  interp_tensor out = t_tensor(KILN_I32, y, 2, DIMS(3, 3));
  t_run(interp_Trilu, NOATTRS, &out, 1, &in, 1);
  CHECK_I(y, 1, 2, 3, 0, 5, 6, 0, 0, 9);
  t_run(interp_Trilu, ATTRS(KILN_ATTR_I("upper", 0), KILN_ATTR_I("k", -1)), &out, 1, &in, 1);
  CHECK_I(y, 0, 0, 0, 4, 0, 0, 7, 8, 0);
}
END_TEST

START_TEST(reverse_sequence) {
  float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, y[8]; /* [time 4, batch 2] */
  int64_t lens[2] = {4, 2};
  interp_tensor ins[2] = {t_tensor(KILN_F32, x, 2, DIMS(4, 2)),
                          t_tensor(KILN_I64, lens, 1, DIMS(2))};
  interp_tensor out = t_tensor(KILN_F32, y, 2, DIMS(4, 2));
  t_run(interp_ReverseSequence, NOATTRS, &out, 1, ins, 2);
  CHECK_F(y, 0, 6, 3, 4, 1, 2, 5, 0, 7);
}
END_TEST

START_TEST(empty_dims) {
  /* a [2,0] piece contributes nothing to a concatenation */
  float a[2] = {1, 2}, y[2] = {0, 0};
  interp_tensor ins[2] = {t_tensor(KILN_F32, a, 2, DIMS(2, 1)),
                          t_tensor(KILN_F32, y, 2, DIMS(2, 0))};
  float r[2];
  interp_tensor out = t_tensor(KILN_F32, r, 2, DIMS(2, 1));
  t_run(interp_Concat, ATTRS(KILN_ATTR_I("axis", 1)), &out, 1, ins, 2);
  CHECK_F(r, 0, 1, 2);
  interp_tensor e = t_tensor(KILN_F32, a, 2, DIMS(0, 3)), eo = t_tensor(KILN_F32, r, 2, DIMS(3, 0));
  t_run(interp_Transpose, NOATTRS, &eo, 1, &e, 1);
  CHECK_F(r, 0, 1, 2); /* untouched */
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

TCase *interp_tcase_movement(void) {
  TCase *tc = tcase_create("movement");
  tcase_add_test(tc, empty_dims);
  tcase_add_test(tc, reshape_flatten_copy);
  tcase_add_test(tc, transpose_default_and_perm);
  tcase_add_test(tc, expand_tile);
  tcase_add_test(tc, slice_negative_step_and_clamp);
  tcase_add_test(tc, pad_modes);
  tcase_add_test(tc, concat_split);
  tcase_add_test(tc, shape_size);
  tcase_add_test(tc, depth_space);
  tcase_add_test(tc, trilu);
  tcase_add_test(tc, reverse_sequence);
  tcase_add_test(tc, center_crop_pad);
  return tc;
}
