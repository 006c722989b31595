/* tests/interp/test_generator.c: ConstantOfShape, EyeLike, Range and the
 * Hann, Hamming and Blackman windows. */
#include <stdint.h>

#include "helpers.h"

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

START_TEST(constant_eye_range) {
  int32_t y[9];
  interp_tensor out = t_tensor(KILN_I32, y, 2, DIMS(2, 2));
  t_run(interp_ConstantOfShape,
        ATTRS(KILN_ATTR_IS("shape", DIMS(2, 2), 2), KILN_ATTR_F("value", 7),
              KILN_ATTR_T("dtype", KILN_I32)),
        &out, 1, NULL, 0);
  CHECK_I(y, 7, 7, 7, 7);
  float x[9], e[9];
  interp_tensor in = t_tensor(KILN_F32, x, 2, DIMS(3, 3));
  out = t_tensor(KILN_F32, e, 2, DIMS(3, 3));
  t_run(interp_EyeLike, ATTRS(KILN_ATTR_I("k", 1)), &out, 1, &in, 1);
  CHECK_F(e, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0);
  out = t_tensor(KILN_I32, y, 1, DIMS(3));
  t_run(interp_Range,
        ATTRS(KILN_ATTR_F("start", 1), KILN_ATTR_F("limit", 10), KILN_ATTR_F("delta", 3),
              KILN_ATTR_T("dtype", KILN_I32)),
        &out, 1, NULL, 0);
  CHECK_I(y, 1, 4, 7);
  out = t_tensor(KILN_F32, e, 1, DIMS(4));
  t_run(interp_Range,
        ATTRS(KILN_ATTR_F("start", 1), KILN_ATTR_F("limit", -1), KILN_ATTR_F("delta", -0.5),
              KILN_ATTR_T("dtype", KILN_F32)),
        &out, 1, NULL, 0);
  CHECK_F(e, 0, 1, 0.5, 0, -0.5);
}
END_TEST

TCase *interp_tcase_generator(void) {
  TCase *tc = tcase_create("generator");
  tcase_add_test(tc, windows);
  tcase_add_test(tc, constant_eye_range);
  return tc;
}
