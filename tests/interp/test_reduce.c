/* tests/interp/test_reduce.c: reductions, ArgMax/ArgMin, CumSum and TopK,
 * with hand-computed expectations. */
#include <stdint.h>

#include "helpers.h"

/* x = [[1, 2, 3], [4, 5, 6]] */
static float X23[6] = {1, 2, 3, 4, 5, 6};

START_TEST(reduce_sum_axes_keepdims) {
  float y[6];
  interp_tensor in = tt(KILN_F32, X23, 2, DIMS(2, 3));
  interp_tensor out = tt(KILN_F32, y, 1, DIMS(2));
  kiln_attrs *a =
      mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("axes", DIMS(1), 1), KILN_ATTR_I("keepdims", 0)}, 2);
  RUN_OK(ReduceSum, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){6, 15}, 2, 0, "ReduceSum axis 1");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("axes", DIMS(-2), 1)}, 1); /* keepdims 1 */
  out = tt(KILN_F32, y, 2, DIMS(1, 3));
  RUN_OK(ReduceSum, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){5, 7, 9}, 3, 0, "ReduceSum axis -2");
  RUN_OK(ReduceMean, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){2.5f, 3.5f, 4.5f}, 3, 0, "ReduceMean");
  RUN_OK(ReduceProd, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){4, 10, 18}, 3, 0, "ReduceProd");
  RUN_OK(ReduceMax, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){4, 5, 6}, 3, 0, "ReduceMax");
  RUN_OK(ReduceMin, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){1, 2, 3}, 3, 0, "ReduceMin");
  RUN_OK(ReduceSumSquare, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){17, 29, 45}, 3, 0, "ReduceSumSquare");
  RUN_OK(ReduceL1, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){5, 7, 9}, 3, 0, "ReduceL1");
  RUN_OK(ReduceL2, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){4.1231056f, 5.3851648f, 6.7082039f}, 3, 1e-7, "ReduceL2");
  free_attrs(a);
  /* no axes: everything, keepdims -> [1, 1] */
  out = tt(KILN_F32, y, 2, DIMS(1, 1));
  RUN_OK(ReduceSum, NULL, &out, 1, &in, 1);
  expect_f32(y, (float[]){21}, 1, 0, "ReduceSum all");
  /* noop_with_empty_axes: a copy */
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("noop_with_empty_axes", 1)}, 1);
  out = tt(KILN_F32, y, 2, DIMS(2, 3));
  RUN_OK(ReduceSum, a, &out, 1, &in, 1);
  expect_f32(y, X23, 6, 0, "ReduceSum noop");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("axes", DIMS(2), 1)}, 1);
  RUN_FAIL(ReduceSum, a, &out, 1, &in, 1, KILN_INVALID_ARGUMENT);
  free_attrs(a);
}
END_TEST

START_TEST(reduce_log_and_special) {
  double y[1];
  double l[2] = {1, 1.718281828459045}, big[2] = {1000, 1000};
  interp_tensor in = tt(KILN_F64, l, 1, DIMS(2)), out = tt(KILN_F64, y, 1, DIMS(1));
  RUN_OK(ReduceLogSum, NULL, &out, 1, &in, 1);
  expect_close(y[0], 1, 1e-15, "ReduceLogSum", 0);
  in = tt(KILN_F64, big, 1, DIMS(2));
  RUN_OK(ReduceLogSumExp, NULL, &out, 1, &in, 1); /* no overflow */
  expect_close(y[0], 1000.6931471805599, 1e-15, "ReduceLogSumExp", 0);
  double n[3] = {1, NAN, 3};
  in = tt(KILN_F64, n, 1, DIMS(3));
  RUN_OK(ReduceMax, NULL, &out, 1, &in, 1);
  ck_assert(isnan(y[0]));
  RUN_OK(ReduceMin, NULL, &out, 1, &in, 1);
  ck_assert(isnan(y[0]));
  /* empty reductions: identities */
  interp_tensor empty = tt(KILN_F64, NULL, 2, DIMS(2, 0));
  double ye[2];
  interp_tensor eout = tt(KILN_F64, ye, 2, DIMS(2, 1));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("axes", DIMS(1), 1)}, 1);
  RUN_OK(ReduceSum, a, &eout, 1, &empty, 1);
  expect_f64(ye, (double[]){0, 0}, 2, 0, "empty sum");
  RUN_OK(ReduceProd, a, &eout, 1, &empty, 1);
  expect_f64(ye, (double[]){1, 1}, 2, 0, "empty prod");
  RUN_OK(ReduceMax, a, &eout, 1, &empty, 1);
  expect_f64(ye, (double[]){-INFINITY, -INFINITY}, 2, 0, "empty max");
  RUN_OK(ReduceMin, a, &eout, 1, &empty, 1);
  expect_f64(ye, (double[]){INFINITY, INFINITY}, 2, 0, "empty min");
  RUN_OK(ReduceLogSumExp, a, &eout, 1, &empty, 1);
  expect_f64(ye, (double[]){-INFINITY, -INFINITY}, 2, 0, "empty logsumexp");
  RUN_OK(ReduceMean, a, &eout, 1, &empty, 1);
  ck_assert(isnan(ye[0]));
  free_attrs(a);
}
END_TEST

START_TEST(reduce_integers) {
  int32_t x[4] = {-3, 5, 7, -9}, y[2];
  interp_tensor in = tt(KILN_I32, x, 2, DIMS(2, 2));
  interp_tensor out = tt(KILN_I32, y, 1, DIMS(2));
  kiln_attrs *a =
      mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("axes", DIMS(0), 1), KILN_ATTR_I("keepdims", 0)}, 2);
  RUN_OK(ReduceSum, a, &out, 1, &in, 1);
  ck_assert(y[0] == 4 && y[1] == -4);
  RUN_OK(ReduceProd, a, &out, 1, &in, 1);
  ck_assert(y[0] == -21 && y[1] == -45);
  RUN_OK(ReduceMax, a, &out, 1, &in, 1);
  ck_assert(y[0] == 7 && y[1] == 5);
  RUN_OK(ReduceMin, a, &out, 1, &in, 1);
  ck_assert(y[0] == -3 && y[1] == -9);
  RUN_OK(ReduceL1, a, &out, 1, &in, 1);
  ck_assert(y[0] == 10 && y[1] == 14);
  RUN_OK(ReduceMean, a, &out, 1, &in, 1);
  ck_assert(y[0] == 2 && y[1] == -2);
  free_attrs(a);
  uint8_t u[3] = {200, 100, 7}, uy[1];
  interp_tensor uin = tt(KILN_U8, u, 1, DIMS(3)), uout = tt(KILN_U8, uy, 1, DIMS(1));
  RUN_OK(ReduceMax, NULL, &uout, 1, &uin, 1);
  ck_assert_uint_eq(uy[0], 200);
  RUN_OK(ReduceSum, NULL, &uout, 1, &uin, 1);
  ck_assert_uint_eq(uy[0], 51); /* 307 mod 256 */
}
END_TEST

START_TEST(argmax_argmin) {
  float x[4] = {1, 3, 3, 2};
  int64_t y[2];
  interp_tensor in = tt(KILN_F32, x, 1, DIMS(4)), out = tt(KILN_I64, y, 1, DIMS(1));
  RUN_OK(ArgMax, NULL, &out, 1, &in, 1);
  ck_assert_int_eq(y[0], 1);
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("select_last_index", 1)}, 1);
  RUN_OK(ArgMax, a, &out, 1, &in, 1);
  ck_assert_int_eq(y[0], 2);
  free_attrs(a);
  RUN_OK(ArgMin, NULL, &out, 1, &in, 1);
  ck_assert_int_eq(y[0], 0);
  /* [[4, 1], [2, 8]] along axis -1, keepdims 0 */
  int32_t m[4] = {4, 1, 2, 8};
  interp_tensor min = tt(KILN_I32, m, 2, DIMS(2, 2)), mout = tt(KILN_I64, y, 1, DIMS(2));
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("axis", -1), KILN_ATTR_I("keepdims", 0)}, 2);
  RUN_OK(ArgMax, a, &mout, 1, &min, 1);
  ck_assert(y[0] == 0 && y[1] == 1);
  RUN_OK(ArgMin, a, &mout, 1, &min, 1);
  ck_assert(y[0] == 1 && y[1] == 0);
  free_attrs(a);
  float n[3] = {1, NAN, 5};
  interp_tensor nin = tt(KILN_F32, n, 1, DIMS(3));
  RUN_OK(ArgMax, NULL, &out, 1, &nin, 1);
  ck_assert_int_eq(y[0], 1); /* NaN wins */
}
END_TEST

START_TEST(cumsum) {
  float x[4] = {1, 2, 3, 4}, y[4];
  interp_tensor in = tt(KILN_F32, x, 1, DIMS(4)), out = tt(KILN_F32, y, 1, DIMS(4));
  RUN_OK(CumSum, NULL, &out, 1, &in, 1);
  expect_f32(y, (float[]){1, 3, 6, 10}, 4, 0, "CumSum");
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("exclusive", 1)}, 1);
  RUN_OK(CumSum, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){0, 1, 3, 6}, 4, 0, "CumSum exclusive");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("reverse", 1)}, 1);
  RUN_OK(CumSum, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){10, 9, 7, 4}, 4, 0, "CumSum reverse");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("exclusive", 1), KILN_ATTR_I("reverse", 1)}, 2);
  RUN_OK(CumSum, a, &out, 1, &in, 1);
  expect_f32(y, (float[]){9, 7, 4, 0}, 4, 0, "CumSum exclusive reverse");
  free_attrs(a);
  /* int64 along axis 1 of [[1, 2], [3, 4]] */
  int64_t ix[4] = {1, 2, 3, 4}, iy[4];
  interp_tensor iin = tt(KILN_I64, ix, 2, DIMS(2, 2)), iout = tt(KILN_I64, iy, 2, DIMS(2, 2));
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("axis", 1)}, 1);
  RUN_OK(CumSum, a, &iout, 1, &iin, 1);
  ck_assert(iy[0] == 1 && iy[1] == 3 && iy[2] == 3 && iy[3] == 7);
  free_attrs(a);
}
END_TEST

START_TEST(topk) {
  float x[5] = {3, 1, 3, 2, NAN}, v[2];
  int64_t idx[2];
  interp_tensor in = tt(KILN_F32, x, 1, DIMS(4));
  interp_tensor outs[2] = {tt(KILN_F32, v, 1, DIMS(2)), tt(KILN_I64, idx, 1, DIMS(2))};
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("k", 2)}, 1);
  RUN_OK(TopK, a, outs, 2, &in, 1);
  ck_assert(v[0] == 3 && v[1] == 3 && idx[0] == 0 && idx[1] == 2); /* ties: lower index first */
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("k", 2), KILN_ATTR_I("largest", 0)}, 2);
  RUN_OK(TopK, a, outs, 2, &in, 1);
  ck_assert(v[0] == 1 && v[1] == 2 && idx[0] == 1 && idx[1] == 3);
  free_attrs(a);
  /* axis 0 of [[1, 9], [5, 4]], k = 1 */
  int32_t m[4] = {1, 9, 5, 4}, mv[2];
  interp_tensor min = tt(KILN_I32, m, 2, DIMS(2, 2));
  interp_tensor mouts[2] = {tt(KILN_I32, mv, 2, DIMS(1, 2)), tt(KILN_I64, idx, 2, DIMS(1, 2))};
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("k", 1), KILN_ATTR_I("axis", 0)}, 2);
  RUN_OK(TopK, a, mouts, 2, &min, 1);
  ck_assert(mv[0] == 5 && mv[1] == 9 && idx[0] == 1 && idx[1] == 0);
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("k", 9)}, 1);
  RUN_FAIL(TopK, a, outs, 2, &in, 1, KILN_INVALID_ARGUMENT);
  free_attrs(a);
  /* NaN ranks above every number */
  interp_tensor nin = tt(KILN_F32, x, 1, DIMS(5));
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("k", 1)}, 1);
  interp_tensor nouts[2] = {tt(KILN_F32, v, 1, DIMS(1)), tt(KILN_I64, idx, 1, DIMS(1))};
  RUN_OK(TopK, a, nouts, 2, &nin, 1);
  ck_assert(isnan(v[0]) && idx[0] == 4);
  free_attrs(a);
}
END_TEST

/* bool: ReduceMax is "any", ReduceMin "all"; an empty reduction gives
 * false and true; the other reductions refuse bool. */
START_TEST(reduce_bool_max_min) {
  uint8_t x[6] = {0, 1, 0, 0, 1, 1}, y[3]; /* [[F, T], [F, F], [T, T]] */
  interp_tensor in = tt(KILN_BOOL, x, 2, DIMS(3, 2)), out = tt(KILN_BOOL, y, 2, DIMS(3, 1));
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("axes", DIMS(1), 1)}, 1);
  RUN_OK(ReduceMax, a, &out, 1, &in, 1);
  ck_assert(y[0] == 1 && y[1] == 0 && y[2] == 1);
  RUN_OK(ReduceMin, a, &out, 1, &in, 1);
  ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 1);
  RUN_FAIL(ReduceSum, a, &out, 1, &in, 1, KILN_UNIMPLEMENTED);
  free_attrs(a);
  in = tt(KILN_BOOL, x, 2, DIMS(0, 2));
  out = tt(KILN_BOOL, y, 2, DIMS(1, 2));
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_IS("axes", DIMS(0), 1)}, 1);
  RUN_OK(ReduceMax, a, &out, 1, &in, 1);
  ck_assert(y[0] == 0 && y[1] == 0);
  RUN_OK(ReduceMin, a, &out, 1, &in, 1);
  ck_assert(y[0] == 1 && y[1] == 1);
  free_attrs(a);
  ck_assert(interp_elem_supported(KILN_NODE_ReduceMax, KILN_BOOL));
  ck_assert(!interp_elem_supported(KILN_NODE_ReduceSum, KILN_BOOL));
}
END_TEST

TCase *interp_tcase_reduce(void) {
  TCase *tc = tcase_create("reduce");
  tcase_add_test(tc, reduce_sum_axes_keepdims);
  tcase_add_test(tc, reduce_log_and_special);
  tcase_add_test(tc, reduce_integers);
  tcase_add_test(tc, reduce_bool_max_min);
  tcase_add_test(tc, argmax_argmin);
  tcase_add_test(tc, cumsum);
  tcase_add_test(tc, topk);
  return tc;
}
