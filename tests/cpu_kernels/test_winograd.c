/* tests/cpu_kernels/test_winograd.c: the F(2x2, 3x3) Winograd convolutions
 * on the plain layout (kernels/conv_winograd.c) and on the channel-blocked
 * one (kernels/conv_blocked_wino.c) against a naive 3x3 convolution in
 * double. The transformed filters are made here from the algorithm's
 * definition (G g G^T) and packed by the layouts gemm_impl.h and
 * conv_blocked.h document, not by the emitter's code. This suite's build sets small block sizes
 * (KCPU_WINO_BLOCK_BYTES, KCPU_WINO_MIN_TILES), so that images split into
 * blocks of tiles that start and end inside tile rows. */
#include "tk.h"

#include "conv_blocked.h"
#include "gemm_impl.h"

#include <math.h>
#include <string.h>

void kcpu_k_conv2d_wino(const float *X, const float *Upk, const float *bias, const float *res,
                        float *Y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, int64_t OH,
                        int64_t OW, int64_t pt, int64_t pl, int64_t act, float act_a, float act_b,
                        int64_t trans, int64_t lanes, struct kcpu_pool *pool);

typedef struct wc {
  int64_t N, C, H, W, M, pt, pl, pb, pr;
} wc;

/* G g G^T for one 3x3 filter, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
 * by the matrix products themselves. */
static void wt_transform(const float *g, float *u) {
  static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  double t[4][3];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) {
      t[i][j] = 0;
      for (int k = 0; k < 3; k++)
        t[i][j] += G[i][k] * g[k * 3 + j];
    }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      double s = 0;
      for (int k = 0; k < 3; k++)
        s += t[i][k] * G[j][k];
      u[i * 4 + j] = (float)s;
    }
}

/* G g G^T for F(4x4, 3x3) at the points 0, 1, -1, 1/2, -2, G = [1 0 0;
 * 1/3 1/3 1/3; -1/3 1/3 -1/3; -16/15 -8/15 -4/15; 1/15 -2/15 4/15;
 * 0 0 1], by the matrix products in double:
 * the 6x6 result row-major in u. */
static void wt_transform4(const float *g, float *u) {
  static const double G[6][3] = {{1, 0, 0},
                                 {1.0 / 3, 1.0 / 3, 1.0 / 3},
                                 {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                                 {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                                 {1.0 / 15, -2.0 / 15, 4.0 / 15},
                                 {0, 0, 1}};
  double t[6][3];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 3; j++) {
      t[i][j] = 0;
      for (int k = 0; k < 3; k++)
        t[i][j] += G[i][k] * g[k * 3 + j];
    }
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      double s = 0;
      for (int k = 0; k < 3; k++)
        s += t[i][k] * G[j][k];
      u[i * 6 + j] = (float)s;
    }
}

/* The 16 transformed M x C matrices (position xi = 4i + j of G g G^T),
 * packed one after the other: the GEMM's A with U = MR, its B (op(B)'s n
 * = m) with U = NR. */
static float *wt_pack(const float *Wt, int64_t M, int64_t C, int64_t U) {
  float *t = tk_alloc(16 * M * C);
  for (int64_t m = 0; m < M; m++)
    for (int64_t c = 0; c < C; c++) {
      float u[16];
      wt_transform(Wt + (m * C + c) * 9, u);
      for (int xi = 0; xi < 16; xi++)
        t[(xi * M + m) * C + c] = u[xi];
    }
  float *p = tk_pack(t, 16, M, C, U);
  free(t);
  return p;
}

/* The convolution, then bias, residual and activation, in double; bound:
 * the sum of the terms' magnitudes, for the tolerance. */
static void wt_ref(const wc *c, const float *X, const float *Wt, const float *b, const float *R,
                   const tk_act *act, double *Y, double *bound) {
  int64_t OH = c->H + c->pt + c->pb - 2, OW = c->W + c->pl + c->pr - 2;
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t m = 0; m < c->M; m++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double s = b ? b[m] : 0, a = b ? fabs(b[m]) : 0;
          for (int64_t ci = 0; ci < c->C; ci++)
            for (int64_t kh = 0; kh < 3; kh++)
              for (int64_t kw = 0; kw < 3; kw++) {
                int64_t ih = oh - c->pt + kh, iw = ow - c->pl + kw;
                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W)
                  continue;
                double v = (double)X[((n * c->C + ci) * c->H + ih) * c->W + iw] *
                           Wt[((m * c->C + ci) * 3 + kh) * 3 + kw];
                s += v;
                a += fabs(v);
              }
          int64_t at = ((n * c->M + m) * OH + oh) * OW + ow;
          if (R) {
            s += R[at];
            a += fabs(R[at]);
          }
          Y[at] = tk_ref_act(act->act, act->a, act->b, s);
          bound[at] = a;
        }
}

/* trans: the products turned around, the filters packed as the GEMM's B. */
static void wt_case(const wc *c, int bias, int resid, const tk_act *act, int64_t trans,
                    struct kcpu_pool *p2) {
  int64_t OH = c->H + c->pt + c->pb - 2, OW = c->W + c->pl + c->pr - 2;
  int64_t nx = c->N * c->C * c->H * c->W, ny = c->N * c->M * OH * OW;
  float *X = tk_alloc(nx), *Wt = tk_alloc(c->M * c->C * 9), *b = tk_alloc(c->M);
  float *R = tk_alloc(ny), *Y1 = tk_alloc(ny), *Y2 = tk_alloc(ny);
  double *ref = calloc((size_t)ny, sizeof *ref), *bound = calloc((size_t)ny, sizeof *bound);
  tk_fill(X, nx, 31);
  tk_fill(Wt, c->M * c->C * 9, 32);
  tk_fill(b, c->M, 33);
  tk_fill(R, ny, 34);
  float *Upk = wt_pack(Wt, c->M, c->C, trans ? kcpu_gemm_nr(16) : kcpu_gemm_mr(16));
  wt_ref(c, X, Wt, bias ? b : NULL, resid ? R : NULL, act, ref, bound);
  kcpu_k_conv2d_wino(X, Upk, bias ? b : NULL, resid ? R : NULL, Y1, c->N, c->C, c->H, c->W, c->M,
                     OH, OW, c->pt, c->pl, act->act, act->a, act->b, trans, 16, NULL);
  kcpu_k_conv2d_wino(X, Upk, bias ? b : NULL, resid ? R : NULL, Y2, c->N, c->C, c->H, c->W, c->M,
                     OH, OW, c->pt, c->pl, act->act, act->a, act->b, trans, 16, p2);
  for (int64_t i = 0; i < ny; i++) {
    /* the 16-term transformed sums against the 9-term direct ones: a few
     * ulps of the terms' magnitudes */
    double tol = 2e-6 * bound[i] + 1e-6;
    ck_assert_msg(fabs(Y1[i] - ref[i]) <= tol,
                  "wino N%lld C%lld %lldx%lld M%lld pads %lld %lld %lld %lld bias %d res %d act "
                  "%lld trans %lld: element %lld: %.9g, want %.9g (tolerance %.3g)",
                  (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W,
                  (long long)c->M, (long long)c->pt, (long long)c->pl, (long long)c->pb,
                  (long long)c->pr, bias, resid, (long long)act->act, (long long)trans,
                  (long long)i, (double)Y1[i], ref[i], tol);
  }
  ck_assert_msg(memcmp(Y1, Y2, (size_t)ny * sizeof *Y1) == 0,
                "wino C%lld %lldx%lld M%lld: 2 threads differ from 1", (long long)c->C,
                (long long)c->H, (long long)c->W, (long long)c->M);
  free(X), free(Wt), free(b), free(R), free(Y1), free(Y2), free(ref), free(bound), free(Upk);
}

/* Channel counts off the vector and panel widths, planes from one tile
 * to several blocks, odd and even output sizes, every pad from 0 to 2 on
 * each side. */
START_TEST(wino_shapes) {
  static const wc cases[] = {
      {1, 1, 3, 3, 1, 0, 0, 0, 0},     {1, 3, 4, 4, 7, 1, 1, 1, 1},
      {1, 17, 7, 7, 24, 1, 1, 1, 1},   {2, 24, 9, 8, 17, 1, 1, 1, 1},
      {1, 40, 15, 17, 40, 0, 1, 2, 0}, {1, 16, 16, 16, 16, 1, 1, 1, 1},
      {1, 7, 33, 35, 9, 1, 1, 1, 1},   {1, 64, 14, 14, 64, 1, 1, 1, 1},
      {2, 5, 40, 37, 3, 2, 0, 1, 2},   {1, 9, 56, 56, 8, 1, 1, 1, 1},
      {1, 300, 6, 5, 9, 1, 1, 1, 1},
  };
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int64_t trans = 0; trans < 2; trans++)
      wt_case(&cases[i], (int)(i % 2 == 0), 0, &tk_acts()[0], trans, p2);
  kcpu_pool_destroy(p2);
}
END_TEST

/* The epilogue: bias, residual and each fused activation, in that order. */
START_TEST(wino_epilogue) {
  wc c = {1, 19, 13, 18, 21, 1, 1, 1, 1};
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  for (size_t a = 0; a < TK_N_ACTS; a++)
    for (int resid = 0; resid < 2; resid++)
      for (int64_t trans = 0; trans < 2; trans++)
        wt_case(&c, 1, resid, &tk_acts()[a], trans, p2);
  kcpu_pool_destroy(p2);
}
END_TEST

/* One run of the blocked kernel into Y (nyb floats): the residual none,
 * Rb apart (res 1) or a copy of Rb in Y itself (res 2). */
static void wtb_run(const wc *c, const float *Xb, const float *Upk, const float *bias,
                    const float *Rb, int res, float *Y, int64_t nyb, int64_t OH, int64_t OW,
                    const tk_act *act, int64_t tile, struct kcpu_pool *pool) {
  if (res == 2)
    memcpy(Y, Rb, (size_t)nyb * sizeof *Y);
  kcpu_k_conv2d_blocked_wino(Xb, Upk, bias, res == 1 ? Rb : res == 2 ? Y : NULL, Y, c->N, c->C,
                             c->H, c->W, c->M, OH, OW, c->pt, c->pl, tile, act->act, act->a,
                             act->b, pool);
}

/* The blocked kernel with output tiles of `tile` (2 or 4) on case c: X
 * blocked with NaN in its padding lanes (never data), a random residual
 * in Y's layout (its padding lanes must not reach Y) apart or in place
 * (res 1, 2), 1 thread and each pool of pools[0..npools) (same bits: the
 * thread count decides how a block of tiles is cut into pieces), padding
 * lanes of Y zero. */
static void wtb_case(const wc *c, int bias, int res, const tk_act *act, int64_t tile,
                     struct kcpu_pool *const *pools, int npools) {
  int np = (int)((tile + 2) * (tile + 2));
  int64_t OH = c->H + c->pt + c->pb - 2, OW = c->W + c->pl + c->pr - 2;
  int64_t Cb = (c->C + 15) / 16, Mb = (c->M + 15) / 16, HW = c->H * c->W, OHW = OH * OW;
  int64_t nx = c->N * c->C * HW, ny = c->N * c->M * OHW, nyb = c->N * Mb * 16 * OHW;
  float *X = tk_alloc(nx), *Xb = tk_alloc(c->N * Cb * 16 * HW), *Wt = tk_alloc(c->M * c->C * 9);
  float *b = tk_alloc(c->M), *R = tk_alloc(ny), *Rb = tk_alloc(nyb);
  float *Y1 = tk_alloc(nyb), *Y2 = tk_alloc(nyb), *t = tk_alloc(36 * c->M * c->C);
  double *ref = calloc((size_t)ny, sizeof *ref), *bound = calloc((size_t)ny, sizeof *bound);
  tk_fill(X, nx, 41);
  tk_fill(Wt, c->M * c->C * 9, 42);
  tk_fill(b, c->M, 43);
  tk_fill(Rb, nyb, 44);
  for (int64_t i = 0; i < c->N * Cb * 16 * HW; i++)
    Xb[i] = NAN;
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t ch = 0; ch < c->C; ch++)
      for (int64_t q = 0; q < HW; q++)
        Xb[((n * Cb + ch / 16) * HW + q) * 16 + ch % 16] = X[(n * c->C + ch) * HW + q];
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t m = 0; m < c->M; m++)
      for (int64_t q = 0; q < OHW; q++)
        R[(n * c->M + m) * OHW + q] = Rb[((n * Mb + m / 16) * OHW + q) * 16 + m % 16];
  int64_t one = kcpu_convb_packed_size(c->M, c->C, 1, 1, 1, 1);
  float *Upk = tk_alloc(np * one);
  for (int64_t m = 0; m < c->M; m++)
    for (int64_t ci = 0; ci < c->C; ci++) {
      float u[36];
      if (tile == 4)
        wt_transform4(Wt + (m * c->C + ci) * 9, u);
      else
        wt_transform(Wt + (m * c->C + ci) * 9, u);
      for (int xi = 0; xi < np; xi++)
        t[(xi * c->M + m) * c->C + ci] = u[xi];
    }
  for (int xi = 0; xi < np; xi++)
    kcpu_convb_pack(t + xi * c->M * c->C, Upk + xi * one, c->M, c->C, 1, 1, 1, 1);
  wt_ref(c, X, Wt, bias ? b : NULL, res ? R : NULL, act, ref, bound);
  wtb_run(c, Xb, Upk, bias ? b : NULL, Rb, res, Y1, nyb, OH, OW, act, tile, NULL);
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t m = 0; m < Mb * 16; m++)
      for (int64_t q = 0; q < OHW; q++) {
        int64_t o = ((n * Mb + m / 16) * OHW + q) * 16 + m % 16;
        if (m >= c->M) {
          ck_assert_msg(Y1[o] == 0.0f, "blocked wino: padding lane %lld is %g", (long long)m,
                        (double)Y1[o]);
          continue;
        }
        int64_t i = (n * c->M + m) * OHW + q;
        /* F(4x4, 3x3): constants up to 8 in the transforms, thirds and
         * fifteenths rounded in the filters */
        double tol = (tile == 4 ? 4e-6 : 2e-6) * bound[i] + 1e-6;
        ck_assert_msg(fabs(Y1[o] - ref[i]) <= tol,
                      "blocked wino F%lld N%lld C%lld %lldx%lld M%lld pads %lld %lld %lld %lld "
                      "bias %d res %d act %lld: n %lld m %lld (%lld, %lld): %.9g, want %.9g (tol "
                      "%.3g)",
                      (long long)tile, (long long)c->N, (long long)c->C, (long long)c->H,
                      (long long)c->W, (long long)c->M, (long long)c->pt, (long long)c->pl,
                      (long long)c->pb, (long long)c->pr, bias, res, (long long)act->act,
                      (long long)n, (long long)m, (long long)(q / OW), (long long)(q % OW),
                      (double)Y1[o], ref[i], tol);
      }
  for (int k = 0; k < npools; k++) {
    wtb_run(c, Xb, Upk, bias ? b : NULL, Rb, res, Y2, nyb, OH, OW, act, tile, pools[k]);
    ck_assert_msg(memcmp(Y1, Y2, (size_t)nyb * sizeof *Y1) == 0,
                  "blocked wino F%lld C%lld %lldx%lld M%lld: %d threads differ from 1",
                  (long long)tile, (long long)c->C, (long long)c->H, (long long)c->W,
                  (long long)c->M, kcpu_pool_threads(pools[k]));
  }
  free(X), free(Xb), free(Wt), free(b), free(R), free(Rb), free(Y1), free(Y2), free(t);
  free(ref), free(bound), free(Upk);
}

/* Channels around the blocks and the products' groups of 4 blocks (1, 3,
 * 7, 17, 24, 40, 70), planes from one tile to several blocks of tiles
 * (this build's blocks are small), odd and even sizes, pads 0 to 2; on 2,
 * 3 and 4 threads, so that blocks go in 1 to 4 pieces of unequal sizes
 * (few channels and many tiles) or in one (many channels, few tiles). */
START_TEST(wino_blocked_shapes) {
  static const wc cases[] = {
      {1, 1, 3, 3, 1, 0, 0, 0, 0},     {1, 3, 4, 4, 7, 1, 1, 1, 1},
      {1, 17, 7, 7, 24, 1, 1, 1, 1},   {2, 24, 9, 8, 17, 1, 1, 1, 1},
      {1, 40, 15, 17, 40, 0, 1, 2, 0}, {1, 16, 16, 16, 16, 1, 1, 1, 1},
      {1, 7, 33, 35, 70, 1, 1, 1, 1},  {1, 64, 14, 14, 64, 1, 1, 1, 1},
      {2, 5, 40, 37, 3, 2, 0, 1, 2},   {1, 70, 56, 56, 80, 1, 1, 1, 1},
      {1, 300, 6, 5, 9, 1, 1, 1, 1},   {1, 33, 2, 2, 33, 1, 1, 1, 1},
      {1, 1, 17, 15, 2, 1, 1, 1, 1},   {1, 2, 30, 29, 1, 1, 1, 1, 1},
  };
  struct kcpu_pool *pools[3] = {kcpu_pool_create(2), kcpu_pool_create(3), kcpu_pool_create(4)};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int64_t tile = 2; tile <= 4; tile += 2)
      wtb_case(&cases[i], (int)(i % 2 == 0), 0, &tk_acts()[0], tile, pools, 3);
  for (int k = 0; k < 3; k++)
    kcpu_pool_destroy(pools[k]);
}
END_TEST

/* Bias, residual (apart, in place) and each fused activation. */
START_TEST(wino_blocked_epilogue) {
  wc c = {1, 19, 13, 18, 21, 1, 1, 1, 1};
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  for (size_t a = 0; a < TK_N_ACTS; a++)
    for (int res = 0; res < 3; res++)
      for (int64_t tile = 2; tile <= 4; tile += 2)
        wtb_case(&c, 1, res, &tk_acts()[a], tile, &p2, 1);
  kcpu_pool_destroy(p2);
}
END_TEST

Suite *tk_winograd_suite(void) {
  Suite *s = suite_create("winograd");
  TCase *tc = tcase_create("winograd");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, wino_shapes);
  tcase_add_test(tc, wino_epilogue);
  tcase_add_test(tc, wino_blocked_shapes);
  tcase_add_test(tc, wino_blocked_epilogue);
  suite_add_tcase(s, tc);
  return s;
}
