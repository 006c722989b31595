/* tests/interp/test_index.c: Gather*, Scatter* and OneHot kernels. */
#include <stdint.h>

#include "helpers.h"

START_TEST(gather_axes_and_negative) {
  float x[6] = {1, 2, 3, 4, 5, 6}, y[4];
  int64_t idx[2] = {-1, 0};
  interp_tensor ins[2] = {t_tensor(KILN_F32, x, 2, DIMS(3, 2)),
                          t_tensor(KILN_I64, idx, 1, DIMS(2))};
  interp_tensor out = t_tensor(KILN_F32, y, 2, DIMS(2, 2));
  t_run(interp_Gather, NOATTRS, &out, 1, ins, 2);
  CHECK_F(y, 0, 5, 6, 1, 2);
  int32_t i1[1] = {1};
  ins[1] = t_tensor(KILN_I32, i1, 1, DIMS(1));
  out = t_tensor(KILN_F32, y, 2, DIMS(3, 1));
  t_run(interp_Gather, ATTRS(KILN_ATTR_I("axis", -1)), &out, 1, ins, 2);
  CHECK_F(y, 0, 2, 4, 6);
  i1[0] = 2;
  t_fail(interp_Gather, ATTRS(KILN_ATTR_I("axis", 1)), &out, 1, ins, 2, KILN_OUT_OF_RANGE);
}
END_TEST

START_TEST(gather_elements) {
  int32_t x[4] = {1, 2, 3, 4}, y[4];
  int64_t idx[4] = {0, 0, 1, 0};
  interp_tensor ins[2] = {t_tensor(KILN_I32, x, 2, DIMS(2, 2)),
                          t_tensor(KILN_I64, idx, 2, DIMS(2, 2))};
  interp_tensor out = t_tensor(KILN_I32, y, 2, DIMS(2, 2));
  t_run(interp_GatherElements, ATTRS(KILN_ATTR_I("axis", 1)), &out, 1, ins, 2);
  CHECK_I(y, 1, 1, 4, 3);
}
END_TEST

START_TEST(gather_nd) {
  int32_t x[4] = {0, 1, 2, 3}, y[4];
  int64_t idx[4] = {0, 0, 1, 1};
  interp_tensor ins[2] = {t_tensor(KILN_I32, x, 2, DIMS(2, 2)),
                          t_tensor(KILN_I64, idx, 2, DIMS(2, 2))};
  interp_tensor out = t_tensor(KILN_I32, y, 1, DIMS(2));
  t_run(interp_GatherND, NOATTRS, &out, 1, ins, 2);
  CHECK_I(y, 0, 3);
  int64_t i2[2] = {1, 0};
  ins[1] = t_tensor(KILN_I64, i2, 2, DIMS(2, 1));
  out = t_tensor(KILN_I32, y, 2, DIMS(2, 2));
  t_run(interp_GatherND, NOATTRS, &out, 1, ins, 2);
  CHECK_I(y, 2, 3, 0, 1);
  /* batch_dims 1 (the ONNX example): data [2,2,2], indices [[1],[0]] */
  int32_t d3[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  ins[0] = t_tensor(KILN_I32, d3, 3, DIMS(2, 2, 2));
  t_run(interp_GatherND, ATTRS(KILN_ATTR_I("batch_dims", 1)), &out, 1, ins, 2);
  CHECK_I(y, 2, 3, 4, 5);
}
END_TEST

START_TEST(scatter_nd) {
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, u[4] = {9, 10, 11, 12}, y[8];
  int64_t idx[4] = {4, 3, 1, 7};
  interp_tensor ins[3] = {t_tensor(KILN_F32, x, 1, DIMS(8)), t_tensor(KILN_I64, idx, 2, DIMS(4, 1)),
                          t_tensor(KILN_F32, u, 1, DIMS(4))};
  interp_tensor out = t_tensor(KILN_F32, y, 1, DIMS(8));
  t_run(interp_ScatterND, NOATTRS, &out, 1, ins, 3);
  CHECK_F(y, 0, 1, 11, 3, 10, 9, 6, 7, 12);
  t_run(interp_ScatterND, ATTRS(KILN_ATTR_S("reduction", "add")), &out, 1, ins, 3);
  CHECK_F(y, 0, 1, 13, 3, 14, 14, 6, 7, 20);
  t_run(interp_ScatterND, ATTRS(KILN_ATTR_S("reduction", "mul")), &out, 1, ins, 3);
  CHECK_F(y, 0, 1, 22, 3, 40, 45, 6, 7, 96);
}
END_TEST

START_TEST(scatter_elements_reductions) {
  int32_t x[5] = {1, 2, 3, 4, 5}, u[2] = {10, 20}, y[5];
  int64_t idx[2] = {1, -4};
  interp_tensor ins[3] = {t_tensor(KILN_I32, x, 2, DIMS(1, 5)),
                          t_tensor(KILN_I64, idx, 2, DIMS(1, 2)),
                          t_tensor(KILN_I32, u, 2, DIMS(1, 2))};
  interp_tensor out = t_tensor(KILN_I32, y, 2, DIMS(1, 5));
  t_run(interp_ScatterElements, ATTRS(KILN_ATTR_I("axis", 1)), &out, 1, ins, 3);
  CHECK_I(y, 1, 20, 3, 4, 5);
  t_run(interp_ScatterElements, ATTRS(KILN_ATTR_I("axis", 1), KILN_ATTR_S("reduction", "add")),
        &out, 1, ins, 3);
  CHECK_I(y, 1, 32, 3, 4, 5);
  t_run(interp_ScatterElements, ATTRS(KILN_ATTR_I("axis", 1), KILN_ATTR_S("reduction", "mul")),
        &out, 1, ins, 3);
  CHECK_I(y, 1, 400, 3, 4, 5);
  t_run(interp_ScatterElements, ATTRS(KILN_ATTR_I("axis", 1), KILN_ATTR_S("reduction", "max")),
        &out, 1, ins, 3);
  CHECK_I(y, 1, 20, 3, 4, 5);
  t_run(interp_ScatterElements, ATTRS(KILN_ATTR_I("axis", 1), KILN_ATTR_S("reduction", "min")),
        &out, 1, ins, 3);
  CHECK_I(y, 1, 2, 3, 4, 5);
  t_fail(interp_ScatterElements, ATTRS(KILN_ATTR_S("reduction", "avg")), &out, 1, ins, 3,
         KILN_INVALID_ARGUMENT);
}
END_TEST

START_TEST(onehot) {
  int64_t idx[3] = {0, 2, -1};
  float vals[2] = {0, 5}, y[9];
  interp_tensor ins[2] = {t_tensor(KILN_I64, idx, 1, DIMS(3)),
                          t_tensor(KILN_F32, vals, 1, DIMS(2))};
  interp_tensor out = t_tensor(KILN_F32, y, 2, DIMS(3, 3));
  t_run(interp_OneHot, ATTRS(KILN_ATTR_I("depth", 3)), &out, 1, ins, 2);
  CHECK_F(y, 0, 5, 0, 0, 0, 0, 5, 0, 0, 5);
  /* axis 0: the depth axis comes first, so the result is the transpose */
  t_run(interp_OneHot, ATTRS(KILN_ATTR_I("depth", 3), KILN_ATTR_I("axis", 0)), &out, 1, ins, 2);
  CHECK_F(y, 0, 5, 0, 0, 0, 0, 0, 0, 5, 5);
}
END_TEST

TCase *interp_tcase_index(void) {
  TCase *tc = tcase_create("index");
  tcase_add_test(tc, gather_axes_and_negative);
  tcase_add_test(tc, gather_elements);
  tcase_add_test(tc, gather_nd);
  tcase_add_test(tc, scatter_nd);
  tcase_add_test(tc, scatter_elements_reductions);
  tcase_add_test(tc, onehot);
  return tc;
}
