/* tests/cpu_kernels/test_rowwise.c: the row-wise kernels of several families
 * (reductions and ArgMax, Softmax, LayerNorm and BatchNorm, strided copies for
 * transpose / slice, Gather, Where, Cast and index-mapped Pad), with
 * hand-computed or naive expected values. */
#include "tk.h"

#include <math.h>
#include <string.h>

START_TEST(reduce_axes) {
  /* x [2,3,4] = 0..23 */
  float x[24], y[12];
  for (int i = 0; i < 24; i++)
    x[i] = (float)i;
  int64_t dims[3] = {2, 3, 4};
  ck_assert_int_eq(kcpu_k_reduce(KCPU_F32, KCPU_RED_SUM, x, y, 3, dims, 2), 0); /* axis 1 */
  /* y[0][0] = 0+4+8, y[1][3] = 15+19+23 */
  ck_assert_float_eq(y[0], 12);
  ck_assert_float_eq(y[7], 57);
  ck_assert_int_eq(kcpu_k_reduce(KCPU_F32, KCPU_RED_MAX, x, y, 3, dims, 5), 0); /* axes 0,2 */
  ck_assert_float_eq(y[0], 15);
  ck_assert_float_eq(y[2], 23);
  ck_assert_int_eq(kcpu_k_reduce(KCPU_F32, KCPU_RED_MEAN, x, y, 3, dims, 4), 0); /* last */
  ck_assert_float_eq(y[0], 1.5f);
  ck_assert_float_eq(y[5], 21.5f);
  ck_assert_int_eq(kcpu_k_reduce(KCPU_F32, KCPU_RED_MIN, x, y, 3, dims, 7), 0);
  ck_assert_float_eq(y[0], 0);
  int64_t xi[24], yi[4];
  for (int i = 0; i < 24; i++)
    xi[i] = i - 5;
  ck_assert_int_eq(kcpu_k_reduce(KCPU_I64, KCPU_RED_SUM, xi, yi, 3, dims, 3), 0);
  /* sum over axes 0,1 of column 0: (0+4+...+20) - 6*5 = 60 - 30 */
  ck_assert_int_eq(yi[0], 30);
  /* u8 sums wrap: column 0 holds 0, 80, 160, 240, 64, 144 (i * 20 mod 256),
   * total 688 = 176 (mod 256) */
  uint8_t xu[24], yu[4];
  for (int i = 0; i < 24; i++)
    xu[i] = (uint8_t)(i * 20);
  ck_assert_int_eq(kcpu_k_reduce(KCPU_U8, KCPU_RED_SUM, xu, yu, 3, dims, 3), 0);
  ck_assert_int_eq(yu[0], 176);
  /* bool has only max (any) and min (all) */
  ck_assert_int_eq(kcpu_k_reduce(KCPU_BOOL, KCPU_RED_SUM, xu, yu, 3, dims, 3), -1);
}
END_TEST

START_TEST(reduce_long_rows) {
  /* 1000-long rows exercise the partial accumulators */
  int64_t dims[2] = {3, 1000};
  float *x = tk_alloc(3000), y[3];
  tk_fill(x, 3000, 21);
  ck_assert_int_eq(kcpu_k_reduce(KCPU_F32, KCPU_RED_L2, x, y, 2, dims, 2), 0);
  for (int r = 0; r < 3; r++) {
    double s = 0;
    for (int i = 0; i < 1000; i++)
      s += (double)x[r * 1000 + i] * x[r * 1000 + i];
    ck_assert_double_eq_tol(y[r], sqrt(s), 1e-3);
  }
  ck_assert_int_eq(kcpu_k_reduce(KCPU_F32, KCPU_RED_LOGSUMEXP, x, y, 2, dims, 2), 0);
  double s = 0;
  for (int i = 0; i < 1000; i++)
    s += exp(x[i]);
  ck_assert_double_eq_tol(y[0], log(s), 1e-4);
  free(x);
}
END_TEST

START_TEST(argmax) {
  float x[6] = {1, 5, 5, 2, 0, 2}; /* [2,3], along axis 1 */
  int64_t y[3];
  kcpu_k_argminmax(KCPU_F32, 1, 0, x, y, 2, 3, 1);
  ck_assert_int_eq(y[0], 1);
  ck_assert_int_eq(y[1], 0);
  kcpu_k_argminmax(KCPU_F32, 1, 1, x, y, 2, 3, 1);
  ck_assert_int_eq(y[0], 2);
  ck_assert_int_eq(y[1], 2);
  kcpu_k_argminmax(KCPU_F32, 0, 0, x, y, 1, 2, 3); /* axis 0 of [2,3] */
  ck_assert_int_eq(y[0], 0);
}
END_TEST

START_TEST(softmax) {
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  float x[6] = {1, 2, 3, 1, 1, 1}, y[6], z[6];
  kcpu_k_softmax(x, y, 2, 3, 1, 0, p2);
  double e = exp(1) + exp(2) + exp(3);
  ck_assert_double_eq_tol(y[0], exp(1) / e, 1e-6);
  ck_assert_double_eq_tol(y[2], exp(3) / e, 1e-6);
  ck_assert_double_eq_tol(y[4], 1.0 / 3, 1e-6);
  kcpu_k_softmax(x, z, 2, 3, 1, 1, NULL);
  ck_assert_double_eq_tol(z[2], 3 - log(e), 1e-5);
  /* axis 0 of [2,3]: pairs (x[i], x[3+i]) */
  kcpu_k_softmax(x, y, 1, 2, 3, 0, NULL);
  ck_assert_double_eq_tol(y[0], 0.5, 1e-6);
  ck_assert_double_eq_tol(y[2], exp(3) / (exp(3) + exp(1)), 1e-6);
  kcpu_pool_destroy(p2);
}
END_TEST

START_TEST(layernorm) {
  float x[4] = {1, 2, 3, 4}, sc[4] = {1, 1, 2, 2}, b[4] = {0, 0, 0, 1}, y[4], m, r;
  kcpu_k_layernorm(x, sc, b, y, &m, &r, 1, 4, 0.0f, NULL);
  /* mean 2.5, var 1.25 */
  double rs = 1 / sqrt(1.25);
  ck_assert_double_eq_tol(m, 2.5, 1e-6);
  ck_assert_double_eq_tol(r, rs, 1e-6);
  ck_assert_double_eq_tol(y[0], -1.5 * rs, 1e-6);
  ck_assert_double_eq_tol(y[3], 1.5 * rs * 2 + 1, 1e-6);
  /* RMSNorm of two rows [3, 4] and [0, 0]: mean squares 12.5 and 0 */
  float rx[4] = {3, 4, 0, 0}, rsc[2] = {1, 2}, ry[4];
  kcpu_k_rmsnorm(rx, rsc, ry, 2, 2, 0.5f, NULL);
  ck_assert_double_eq_tol(ry[0], 3 / sqrt(13.0), 1e-6);
  ck_assert_double_eq_tol(ry[1], 8 / sqrt(13.0), 1e-6);
  ck_assert_float_eq(ry[2], 0);
  ck_assert_float_eq(ry[3], 0);
  float bx[4] = {1, 2, 3, 4}, s2[2] = {2, 1}, b2[2] = {1, 0}, mu[2] = {1, 3}, v[2] = {4, 1};
  kcpu_k_batchnorm(bx, s2, b2, mu, v, y, 1, 2, 2, 0.0f);
  ck_assert_float_eq(y[0], 1); /* (1-1)/2*2+1 */
  ck_assert_float_eq(y[1], 2);
  ck_assert_float_eq(y[3], 1);
}
END_TEST

START_TEST(copy_transpose_slice) {
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  /* transpose [3,5] -> [5,3] for 1-, 2-, 4-, 8- and 3-byte elements */
  static const int64_t es[] = {1, 2, 4, 8, 3};
  for (int e = 0; e < 5; e++) {
    int64_t E = es[e];
    uint8_t src[15 * 8], dst[15 * 8];
    for (int i = 0; i < 15 * 8; i++)
      src[i] = (uint8_t)(i * 7 + 1);
    int64_t dims[2] = {5, 3}, dst_st[2] = {3, 1}, src_st[2] = {1, 5};
    kcpu_k_copy_strided(dst, dst_st, src, src_st, 2, dims, E, p2);
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 3; j++)
        ck_assert_int_eq(memcmp(dst + (i * 3 + j) * E, src + (j * 5 + i) * E, (size_t)E), 0);
  }
  /* tiled transposes: y[a, c, d, b] = x[a, b, c, d] (torch's K^T in
   * attention) for shapes whose sides are not multiples of the tile, one
   * plane or several, small (one thread) and large (the pool), 4- and
   * 2-byte elements, against the index formula */
  static const int64_t shp[][4] = {
      {2, 17, 3, 33}, {1, 40, 5, 16}, {3, 16, 1, 17}, {1, 128, 6, 64}};
  for (int c = 0; c < 4; c++)
    for (int e = 0; e < 2; e++) {
      int64_t A = shp[c][0], B = shp[c][1], C = shp[c][2], D = shp[c][3], E = e ? 2 : 4;
      int64_t n = A * B * C * D;
      uint8_t *xs8 = malloc((size_t)(n * E)), *ys8 = malloc((size_t)(n * E));
      for (int64_t i = 0; i < n * E; i++)
        xs8[i] = (uint8_t)(i * 13 + 5);
      int64_t yd[4] = {A, C, D, B}, ys[4] = {C * D * B, D * B, B, 1},
              xs[4] = {B * C * D, D, 1, C * D};
      kcpu_k_copy_strided(ys8, ys, xs8, xs, 4, yd, E, p2);
      for (int64_t a = 0; a < A; a++)
        for (int64_t b = 0; b < B; b++)
          for (int64_t cc = 0; cc < C; cc++)
            for (int64_t d = 0; d < D; d++) {
              int64_t xi = ((a * B + b) * C + cc) * D + d, yi = ((a * C + cc) * D + d) * B + b;
              ck_assert_msg(memcmp(ys8 + yi * E, xs8 + xi * E, (size_t)E) == 0,
                            "shape %d esize %d at (%d,%d,%d,%d)", c, (int)E, (int)a, (int)b,
                            (int)cc, (int)d);
            }
      free(xs8);
      free(ys8);
    }
  /* slice x[0..10) step -3 from 9: 9, 6, 3, 0 */
  int32_t x[10], y[4];
  for (int i = 0; i < 10; i++)
    x[i] = i * 10;
  int64_t d1[1] = {4}, one[1] = {1}, neg[1] = {-3};
  kcpu_k_copy_strided(y, one, x + 9, neg, 1, d1, 4, NULL);
  ck_assert_int_eq(y[0], 90);
  ck_assert_int_eq(y[3], 0);
  /* large copy goes through the pool: expand a row [1000] to [300,1000] */
  float *row = tk_alloc(1000), *big = tk_alloc(300000);
  tk_fill(row, 1000, 3);
  int64_t bd[2] = {300, 1000}, bst[2] = {1000, 1}, rst[2] = {0, 1};
  kcpu_k_copy_strided(big, bst, row, rst, 2, bd, 4, p2);
  ck_assert_float_eq(big[299 * 1000 + 999], row[999]);
  ck_assert_float_eq(big[150 * 1000 + 7], row[7]);
  free(row), free(big);
  /* one contiguous run (a Concat's input) is cut into rows for the pool:
   * 70001 floats (17 whole pieces and a tail), written at an offset
   * between two untouched guards, and a 3-byte element run */
  for (int e = 0; e < 2; e++) {
    int64_t E = e ? 3 : 4, n = e ? 30011 : 70001;
    uint8_t *src = malloc((size_t)(n * E)), *dst = malloc((size_t)((n + 2) * E));
    for (int64_t i = 0; i < n * E; i++)
      src[i] = (uint8_t)(i * 31 + 7);
    memset(dst, 0xAB, (size_t)((n + 2) * E));
    int64_t cd[1] = {n}, cst[1] = {1};
    kcpu_k_copy_strided(dst + E, cst, src, cst, 1, cd, E, p2);
    ck_assert_int_eq(memcmp(dst + E, src, (size_t)(n * E)), 0);
    ck_assert_int_eq(dst[0], 0xAB);
    ck_assert_int_eq(dst[(n + 1) * E], 0xAB);
    free(src);
    free(dst);
  }
  kcpu_pool_destroy(p2);
}
END_TEST

START_TEST(gather_where) {
  /* data [2,3] gather axis 1 with [2,-1,5]: row 0 gets d2, d2, then 5 is
   * out of [-3, 3): a fault naming the value, bound and position, and the
   * kernel stops there (y[2] untouched). */
  float d[6] = {1, 2, 3, 4, 5, 6}, y[6] = {-7, -7, -7, -7, -7, -7};
  int64_t idx[3] = {2, -1, 5};
  kcpu_fault f = {0};
  kcpu_k_gather(d, idx, 0, y, 2, 3, 1, 3, 4, &f, 9);
  ck_assert_float_eq(y[0], 3);
  ck_assert_float_eq(y[1], 3);
  ck_assert_float_eq(y[2], -7);
  ck_assert_float_eq(y[3], -7);
  ck_assert_int_eq(f.claimed, 1);
  ck_assert_int_eq(f.code, KCPU_FAULT_INDEX);
  ck_assert_int_eq(f.site, 9);
  ck_assert_int_eq(f.value, 5);
  ck_assert_int_eq(f.bound, 3);
  ck_assert_int_eq(f.at, 2);
  /* the first fault wins: a second one leaves the record as it is */
  kcpu_fault_index(&f, 11, -4, 3, 0);
  ck_assert_int_eq(f.site, 9);
  ck_assert_int_eq(f.value, 5);
  kcpu_fault_index(NULL, 11, -4, 3, 0); /* no record: nothing happens */
  int64_t ok[3] = {2, -1, -3};
  kcpu_fault g = {0};
  kcpu_k_gather(d, ok, 0, y, 2, 3, 1, 3, 4, &g, 0);
  ck_assert_int_eq(g.claimed, 0);
  ck_assert_float_eq(y[2], 1);
  ck_assert_float_eq(y[5], 4);
  int32_t i32[2] = {1, 0};
  kcpu_k_gather(d, i32, 1, y, 1, 2, 3, 2, 4, &g, 0); /* axis 0 of [2,3] */
  ck_assert_float_eq(y[0], 4);
  ck_assert_float_eq(y[5], 3);
  ck_assert_int_eq(g.claimed, 0);
  int32_t neg[1] = {-3};
  kcpu_k_gather(d, neg, 1, y, 1, 2, 3, 1, 4, &g, 4); /* -3 is outside [-2, 2) */
  ck_assert_int_eq(g.claimed, 1);
  ck_assert_int_eq(g.value, -3);
  ck_assert_int_eq(g.bound, 2);
  /* where(cond [2,1], x [2,2], y scalar) */
  uint8_t c[2] = {1, 0};
  float xv[4] = {1, 2, 3, 4}, yv = 9, out[4];
  int64_t dims[2] = {2, 2}, cst[2] = {1, 0}, xst[2] = {2, 1}, yst[2] = {0, 0};
  kcpu_k_where(out, c, cst, xv, xst, &yv, yst, 2, dims, 4);
  ck_assert_float_eq(out[0], 1);
  ck_assert_float_eq(out[1], 2);
  ck_assert_float_eq(out[2], 9);
  ck_assert_float_eq(out[3], 9);
}
END_TEST

START_TEST(cast) {
  float f[5] = {1.5f, -2.7f, 0.0f, 65504.0f, 1e-7f};
  int32_t i[5];
  ck_assert_int_eq(kcpu_k_cast(f, KCPU_F32, i, KCPU_I32, 5), 0);
  ck_assert_int_eq(i[0], 1);
  ck_assert_int_eq(i[1], -2);
  uint16_t h[5];
  kcpu_k_cast(f, KCPU_F32, h, KCPU_F16, 5);
  ck_assert_uint_eq(h[0], 0x3e00); /* 1.5 */
  ck_assert_uint_eq(h[3], 0x7bff); /* 65504 */
  float back[5];
  kcpu_k_cast(h, KCPU_F16, back, KCPU_F32, 5);
  ck_assert_float_eq(back[1], -2.69921875f);
  ck_assert_float_eq_tol(back[4], 1.1920929e-7f, 1e-12f); /* subnormal half: 2 * 2^-24 */
  uint8_t b[5];
  kcpu_k_cast(f, KCPU_F32, b, KCPU_BOOL, 5);
  ck_assert_int_eq(b[0], 1);
  ck_assert_int_eq(b[2], 0);
  double dd[5];
  kcpu_k_cast(b, KCPU_BOOL, dd, KCPU_F64, 5);
  ck_assert_double_eq(dd[4], 1.0);
  int64_t big = 300;
  int8_t s8;
  kcpu_k_cast(&big, KCPU_I64, &s8, KCPU_I8, 1);
  ck_assert_int_eq(s8, 44); /* wraps modulo 256 */
  uint16_t bf;
  float one = 1.0f;
  kcpu_k_cast(&one, KCPU_F32, &bf, KCPU_BF16, 1);
  ck_assert_uint_eq(bf, 0x3f80);
}
END_TEST

START_TEST(pad_modes) {
  float x[3] = {1, 2, 3}, y[7];
  int64_t id[1] = {3}, od[1] = {7}, pb[1] = {2};
  kcpu_k_pad_index(x, y, 1, id, od, pb, 2, 4); /* reflect: 3 2 1 2 3 2 1 */
  ck_assert_float_eq(y[0], 3);
  ck_assert_float_eq(y[1], 2);
  ck_assert_float_eq(y[5], 2);
  ck_assert_float_eq(y[6], 1);
  kcpu_k_pad_index(x, y, 1, id, od, pb, 1, 4); /* edge: 1 1 1 2 3 3 3 */
  ck_assert_float_eq(y[0], 1);
  ck_assert_float_eq(y[6], 3);
  kcpu_k_pad_index(x, y, 1, id, od, pb, 3, 4); /* wrap: 2 3 1 2 3 1 2 */
  ck_assert_float_eq(y[0], 2);
  ck_assert_float_eq(y[6], 2);
  float v = 7, z[3];
  kcpu_k_fill(z, 3, &v, 4);
  ck_assert_float_eq(z[2], 7);
}
END_TEST

Suite *tk_rowwise_suite(void) {
  Suite *s = suite_create("cpu_kernels_rowwise");
  TCase *tc = tcase_create("rowwise");
  tcase_add_test(tc, reduce_axes);
  tcase_add_test(tc, reduce_long_rows);
  tcase_add_test(tc, argmax);
  tcase_add_test(tc, softmax);
  tcase_add_test(tc, layernorm);
  tcase_add_test(tc, copy_transpose_slice);
  tcase_add_test(tc, gather_where);
  tcase_add_test(tc, cast);
  tcase_add_test(tc, pad_modes);
  suite_add_tcase(s, tc);
  return s;
}
