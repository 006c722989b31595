/* tests/interp2/test_resize.c: Resize modes and Upsample. */
#include <stdint.h>

#include "helpers.h"

static void resize(kiln_attrs *a, float *x, int64_t n_in, float *y, int64_t n_out) {
  interp_tensor in = t_tensor(KILN_F32, x, 1, DIMS(n_in));
  interp_tensor out = t_tensor(KILN_F32, y, 1, DIMS(n_out));
  t_run(interp_Resize, a, &out, 1, &in, 1);
}

START_TEST(resize_nearest_modes) {
  float x2[2] = {1, 2}, x4[4] = {1, 2, 3, 4}, y[4];
  resize(ATTRS(KILN_ATTR_FS("scales", ((const double[]){2}), 1),
               KILN_ATTR_S("coordinate_transformation_mode", "asymmetric"),
               KILN_ATTR_S("nearest_mode", "floor")),
         x2, 2, y, 4);
  CHECK_F(y, 0, 1, 1, 2, 2);
  /* half_pixel, scale 0.5: sources 0.5 and 2.5, ties go down or up */
  resize(ATTRS(KILN_ATTR_IS("sizes", DIMS(2), 1)), x4, 4, y, 2);
  CHECK_F(y, 0, 1, 3);
  resize(ATTRS(KILN_ATTR_IS("sizes", DIMS(2), 1), KILN_ATTR_S("nearest_mode", "round_prefer_ceil")),
         x4, 4, y, 2);
  CHECK_F(y, 0, 2, 4);
  resize(ATTRS(KILN_ATTR_IS("sizes", DIMS(2), 1), KILN_ATTR_S("nearest_mode", "ceil"),
               KILN_ATTR_S("coordinate_transformation_mode", "align_corners")),
         x4, 4, y, 2);
  CHECK_F(y, 0, 1, 4);
}
END_TEST

START_TEST(resize_linear_1d_2d) {
  float x2[2] = {1, 2}, y[16];
  resize(ATTRS(KILN_ATTR_FS("scales", ((const double[]){2}), 1), KILN_ATTR_S("mode", "linear")), x2,
         2, y, 4);
  CHECK_F(y, 1e-6, 1, 1.25, 1.75, 2);
  resize(ATTRS(KILN_ATTR_IS("sizes", DIMS(4), 1), KILN_ATTR_S("mode", "linear"),
               KILN_ATTR_S("coordinate_transformation_mode", "align_corners")),
         x2, 2, y, 4);
  CHECK_F(y, 1e-6, 1, 4.0 / 3, 5.0 / 3, 2);
  float m[4] = {1, 2, 3, 4};
  interp_tensor in = t_tensor(KILN_F32, m, 2, DIMS(2, 2));
  interp_tensor out = t_tensor(KILN_F32, y, 2, DIMS(4, 4));
  t_run(interp_Resize,
        ATTRS(KILN_ATTR_FS("scales", ((const double[]){2, 2}), 2), KILN_ATTR_S("mode", "linear"),
              KILN_ATTR_S("coordinate_transformation_mode", "asymmetric")),
        &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4);
  /* axes: only the last axis is resized */
  out = t_tensor(KILN_F32, y, 2, DIMS(2, 4));
  t_run(interp_Resize,
        ATTRS(KILN_ATTR_FS("scales", ((const double[]){2}), 1), KILN_ATTR_IS("axes", DIMS(-1), 1),
              KILN_ATTR_S("mode", "linear"),
              KILN_ATTR_S("coordinate_transformation_mode", "asymmetric")),
        &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 1, 1.5, 2, 2, 3, 3.5, 4, 4);
}
END_TEST

START_TEST(resize_cubic) {
  /* asymmetric, scale 2: result 1 samples 0.5 with taps -1,0,1,2 and
   * weights (-0.09375, 0.59375, 0.59375, -0.09375) for a = -0.75 */
  float x[4] = {1, 2, 3, 4}, y[8];
  resize(ATTRS(KILN_ATTR_FS("scales", ((const double[]){2}), 1), KILN_ATTR_S("mode", "cubic"),
               KILN_ATTR_S("coordinate_transformation_mode", "asymmetric")),
         x, 4, y, 8);
  CHECK_F(y, 1e-6, 1, 1.40625, 2, 2.5);
  resize(ATTRS(KILN_ATTR_FS("scales", ((const double[]){2}), 1), KILN_ATTR_S("mode", "cubic"),
               KILN_ATTR_S("coordinate_transformation_mode", "asymmetric"),
               KILN_ATTR_I("exclude_outside", 1)),
         x, 4, y, 8);
  CHECK_F(y, 1e-6, 1, 1.5 / 1.09375, 2, 2.5);
}
END_TEST

START_TEST(resize_tf_crop) {
  /* roi [0, 1.5]: sources 0, 2.25, 4.5; the last is outside -> 10 */
  float x[4] = {1, 2, 3, 4}, y[3];
  resize(ATTRS(KILN_ATTR_IS("sizes", DIMS(3), 1), KILN_ATTR_S("mode", "linear"),
               KILN_ATTR_S("coordinate_transformation_mode", "tf_crop_and_resize"),
               KILN_ATTR_FS("roi", ((const double[]){0, 1.5}), 2),
               KILN_ATTR_F("extrapolation_value", 10)),
         x, 4, y, 3);
  CHECK_F(y, 1e-6, 1, 3.25, 10);
}
END_TEST

START_TEST(upsample) {
  float x[2] = {1, 2}, y[4];
  interp_tensor in = t_tensor(KILN_F32, x, 1, DIMS(2));
  interp_tensor out = t_tensor(KILN_F32, y, 1, DIMS(4));
  t_run(interp_Upsample, ATTRS(KILN_ATTR_FS("scales", ((const double[]){2}), 1)), &out, 1, &in, 1);
  CHECK_F(y, 0, 1, 1, 2, 2);
  t_run(interp_Upsample,
        ATTRS(KILN_ATTR_FS("scales", ((const double[]){2}), 1), KILN_ATTR_S("mode", "linear")),
        &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 1, 1.5, 2, 2);
}
END_TEST

TCase *interp2_resize_tcase(void) {
  TCase *tc = tcase_create("resize");
  tcase_add_test(tc, resize_nearest_modes);
  tcase_add_test(tc, resize_linear_1d_2d);
  tcase_add_test(tc, resize_cubic);
  tcase_add_test(tc, resize_tf_crop);
  tcase_add_test(tc, upsample);
  return tc;
}
