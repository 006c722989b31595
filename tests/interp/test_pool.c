/* tests/interp/test_pool.c: AveragePool, LpPool, MaxPool, the global pools
 * and MaxUnpool. */
#include <stdint.h>

#include "helpers.h"

START_TEST(average_pool_pads) {
  float x[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, y[4];
  interp_tensor in = t_tensor(KILN_F32, x, 4, DIMS(1, 1, 3, 3));
  interp_tensor out = t_tensor(KILN_F32, y, 4, DIMS(1, 1, 2, 2));
  t_run(interp_AveragePool, ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2, 2), 2)), &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 2, 3, 5, 6);
  t_run(interp_AveragePool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2, 2), 2),
              KILN_ATTR_IS("pads", DIMS(1, 1, 1, 1), 4), KILN_ATTR_IS("strides", DIMS(2, 2), 2)),
        &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 0, 1.5, 4.5, 6);
  t_run(interp_AveragePool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2, 2), 2),
              KILN_ATTR_IS("pads", DIMS(1, 1, 1, 1), 4), KILN_ATTR_IS("strides", DIMS(2, 2), 2),
              KILN_ATTR_I("count_include_pad", 1)),
        &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 0, 0.75, 2.25, 6);
}
END_TEST

START_TEST(average_pool_ceil_mode) {
  float x[5] = {1, 2, 3, 4, 5}, y[3];
  interp_tensor in = t_tensor(KILN_F32, x, 3, DIMS(1, 1, 5));
  interp_tensor out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 3));
  t_run(interp_AveragePool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2), 1), KILN_ATTR_IS("strides", DIMS(2), 1),
              KILN_ATTR_I("ceil_mode", 1)),
        &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 1.5, 3.5, 5);
  /* the cell past the end is not padding, so it is not counted either */
  t_run(interp_AveragePool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2), 1), KILN_ATTR_IS("strides", DIMS(2), 1),
              KILN_ATTR_I("ceil_mode", 1), KILN_ATTR_I("count_include_pad", 1)),
        &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 1.5, 3.5, 5);
}
END_TEST

START_TEST(max_pool_indices) {
  float x[9] = {1, 9, 2, 4, 3, 8, 7, 5, 6}, y[4];
  int64_t idx[4];
  interp_tensor in = t_tensor(KILN_F32, x, 4, DIMS(1, 1, 3, 3));
  interp_tensor outs[2] = {t_tensor(KILN_F32, y, 4, DIMS(1, 1, 2, 2)),
                           t_tensor(KILN_I64, idx, 4, DIMS(1, 1, 2, 2))};
  t_run(interp_MaxPool, ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2, 2), 2)), outs, 2, &in, 1);
  CHECK_F(y, 0, 9, 9, 7, 8);
  CHECK_I(idx, 1, 1, 6, 5);
  t_run(interp_MaxPool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2, 2), 2), KILN_ATTR_I("storage_order", 1)), outs,
        2, &in, 1);
  CHECK_I(idx, 3, 3, 2, 7);
  /* int8 and ceil_mode in 1-D */
  int8_t a[5] = {1, 5, -2, 4, 3}, b[3];
  in = t_tensor(KILN_I8, a, 3, DIMS(1, 1, 5));
  outs[0] = t_tensor(KILN_I8, b, 3, DIMS(1, 1, 3));
  t_run(interp_MaxPool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2), 1), KILN_ATTR_IS("strides", DIMS(2), 1),
              KILN_ATTR_I("ceil_mode", 1)),
        outs, 1, &in, 1);
  CHECK_I(b, 5, 4, 3);
}
END_TEST

/* LpPool: (sum |x|^p)^(1/p) over each window; padding adds nothing. */
START_TEST(lp_pool) {
  float x[5] = {3, -4, 1, 2, 2}, y[3];
  interp_tensor in = t_tensor(KILN_F32, x, 3, DIMS(1, 1, 5));
  interp_tensor out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 2));
  t_run(interp_LpPool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2), 1), KILN_ATTR_IS("strides", DIMS(2), 1)), &out,
        1, &in, 1);
  CHECK_F(y, 1e-6, 5, sqrt(5.0));
  t_run(interp_LpPool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2), 1), KILN_ATTR_IS("strides", DIMS(2), 1),
              KILN_ATTR_I("p", 1)),
        &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 7, 3);
  out = t_tensor(KILN_F32, y, 3, DIMS(1, 1, 3));
  t_run(interp_LpPool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(2), 1), KILN_ATTR_IS("strides", DIMS(2), 1),
              KILN_ATTR_IS("pads", DIMS(1, 1), 2)),
        &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 3, sqrt(17.0), sqrt(8.0));
}
END_TEST

/* Windows of 10^7 x 10^7 taps, each covering the whole plane and lying
 * inside the pads, and dilated windows whose only tap inside the input is
 * their centre: only the taps inside the input are walked, so these finish
 * at once. */
START_TEST(far_windows) {
  float x[6] = {1, -2, 3, 4, 5, -6}, y[6];
  int64_t idx[6];
  const double K = 10000001;
  interp_tensor in = t_tensor(KILN_F32, x, 4, DIMS(1, 1, 2, 3));
  interp_tensor outs[2] = {t_tensor(KILN_F32, y, 4, DIMS(1, 1, 2, 3)),
                           t_tensor(KILN_I64, idx, 4, DIMS(1, 1, 2, 3))};
#define FAR_WINDOW                                                                                 \
  KILN_ATTR_IS("kernel_shape", DIMS(10000001, 10000001), 2),                                       \
      KILN_ATTR_IS("pads", DIMS(5000000, 5000000, 5000000, 5000000), 4)
  t_run(interp_MaxPool, ATTRS(FAR_WINDOW), outs, 2, &in, 1);
  CHECK_F(y, 0, 5, 5, 5, 5, 5, 5);
  CHECK_I(idx, 4, 4, 4, 4, 4, 4);
  t_run(interp_AveragePool, ATTRS(FAR_WINDOW), outs, 1, &in, 1);
  CHECK_F(y, 1e-6, 5 / 6.0, 5 / 6.0, 5 / 6.0, 5 / 6.0, 5 / 6.0, 5 / 6.0);
  t_run(interp_AveragePool, ATTRS(FAR_WINDOW, KILN_ATTR_I("count_include_pad", 1)), outs, 1, &in,
        1);
  double tiny = 5 / (K * K);
  CHECK_F(y, 1e-19, tiny, tiny, tiny, tiny, tiny, tiny);
  t_run(interp_LpPool, ATTRS(FAR_WINDOW, KILN_ATTR_I("p", 1)), outs, 1, &in, 1);
  CHECK_F(y, 1e-5, 21, 21, 21, 21, 21, 21);
#undef FAR_WINDOW
  t_run(interp_MaxPool,
        ATTRS(KILN_ATTR_IS("kernel_shape", DIMS(3, 3), 2),
              KILN_ATTR_IS("dilations", DIMS(100, 100), 2),
              KILN_ATTR_IS("pads", DIMS(100, 100, 100, 100), 4)),
        outs, 1, &in, 1);
  CHECK_F(y, 0, 1, -2, 3, 4, 5, -6);
}
END_TEST

START_TEST(global_pools) {
  float x[4] = {1, 2, 3, 6}, y[2];
  interp_tensor in = t_tensor(KILN_F32, x, 4, DIMS(1, 2, 2, 1));
  interp_tensor out = t_tensor(KILN_F32, y, 4, DIMS(1, 2, 1, 1));
  t_run(interp_GlobalAveragePool, NOATTRS, &out, 1, &in, 1);
  CHECK_F(y, 1e-6, 1.5, 4.5);
  t_run(interp_GlobalMaxPool, NOATTRS, &out, 1, &in, 1);
  CHECK_F(y, 0, 2, 6);
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

TCase *interp_tcase_pool(void) {
  TCase *tc = tcase_create("pool");
  tcase_add_test(tc, average_pool_pads);
  tcase_add_test(tc, average_pool_ceil_mode);
  tcase_add_test(tc, max_pool_indices);
  tcase_add_test(tc, global_pools);
  tcase_add_test(tc, lp_pool);
  tcase_add_test(tc, max_unpool);
  tcase_add_test(tc, far_windows);
  return tc;
}
