/* tests/interp/test_resize.c: Resize modes and Upsample. */
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

/* Downsampling 4 cells by 0.6 gives floor(2.4) = 2 cells, but align_corners
 * maps over the unfloored length 2.4: result 1 samples 1 * 3 / 1.4 = 15/7. */
START_TEST(resize_align_corners_downsample) {
  float x[4] = {1, 2, 3, 4}, y[2];
  resize(ATTRS(KILN_ATTR_FS("scales", ((const double[]){0.6}), 1), KILN_ATTR_S("mode", "linear"),
               KILN_ATTR_S("coordinate_transformation_mode", "align_corners")),
         x, 4, y, 2);
  CHECK_F(y, 1e-6, 1, 1 + 15.0 / 7);
  /* cubic at 15/7 = 2 + 1/7: taps 1..4 (4 clamps to 3) with Keys weights
   * for a = -0.75 at distances 8/7, 1/7, 6/7, 13/7 */
  double t = 1.0 / 7, A = -0.75, u = 1 + t, v = 1 - t, z = 2 - t;
  double w0 = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
  double w1 = ((A + 2) * t - (A + 3)) * t * t + 1;
  double w2 = ((A + 2) * v - (A + 3)) * v * v + 1;
  double w3 = ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
  resize(ATTRS(KILN_ATTR_FS("scales", ((const double[]){0.6}), 1), KILN_ATTR_S("mode", "cubic"),
               KILN_ATTR_S("coordinate_transformation_mode", "align_corners")),
         x, 4, y, 2);
  CHECK_F(y, 1e-5, 1, 2 * w0 + 3 * w1 + 4 * (w2 + w3));
  ck_assert(fabs(y[1] - 3.19970845) < 1e-5);
}
END_TEST

/* tf_half_pixel_for_nn: source (x + 0.5) / scale, no -0.5; 4 -> 3 cells
 * (scale 0.75) samples 2/3, 2, 10/3, rounded to 1, 2, 3. */
START_TEST(resize_tf_half_pixel_for_nn) {
  float x[4] = {1, 2, 3, 4}, y[3];
  resize(ATTRS(KILN_ATTR_IS("sizes", DIMS(3), 1),
               KILN_ATTR_S("coordinate_transformation_mode", "tf_half_pixel_for_nn")),
         x, 4, y, 3);
  CHECK_F(y, 0, 2, 3, 4);
}
END_TEST

/* antialias at scale 0.5 widens the linear filter to 2 cells each side:
 * source 0.5 takes cells -1..2 (clamped to 0) at distances 0.75, 0.25,
 * 0.25, 0.75 scaled, weights 0.25, 0.75, 0.75, 0.25 over a sum of 2. */
START_TEST(resize_antialias_linear) {
  float x[4] = {1, 2, 3, 4}, y[2];
  resize(ATTRS(KILN_ATTR_FS("scales", ((const double[]){0.5}), 1), KILN_ATTR_S("mode", "linear"),
               KILN_ATTR_I("antialias", 1)),
         x, 4, y, 2);
  CHECK_F(y, 1e-6, (0.25 * 1 + 0.75 * 1 + 0.75 * 2 + 0.25 * 3) / 2,
          (0.25 * 2 + 0.75 * 3 + 0.75 * 4 + 0.25 * 4) / 2);
  /* exclude_outside drops the clamped cells and renormalizes */
  resize(ATTRS(KILN_ATTR_FS("scales", ((const double[]){0.5}), 1), KILN_ATTR_S("mode", "linear"),
               KILN_ATTR_I("antialias", 1), KILN_ATTR_I("exclude_outside", 1)),
         x, 4, y, 2);
  CHECK_F(y, 1e-6, (0.75 * 1 + 0.75 * 2 + 0.25 * 3) / 1.75,
          (0.25 * 2 + 0.75 * 3 + 0.75 * 4) / 1.75);
  /* upsampling: antialias changes nothing */
  float x2[2] = {1, 2}, y4[4];
  resize(ATTRS(KILN_ATTR_FS("scales", ((const double[]){2}), 1), KILN_ATTR_S("mode", "linear"),
               KILN_ATTR_I("antialias", 1)),
         x2, 2, y4, 4);
  CHECK_F(y4, 1e-6, 1, 1.25, 1.75, 2);
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

TCase *interp_tcase_resize(void) {
  TCase *tc = tcase_create("resize");
  tcase_add_test(tc, resize_nearest_modes);
  tcase_add_test(tc, resize_linear_1d_2d);
  tcase_add_test(tc, resize_cubic);
  tcase_add_test(tc, resize_tf_crop);
  tcase_add_test(tc, resize_align_corners_downsample);
  tcase_add_test(tc, resize_tf_half_pixel_for_nn);
  tcase_add_test(tc, resize_antialias_linear);
  tcase_add_test(tc, upsample);
  return tc;
}
