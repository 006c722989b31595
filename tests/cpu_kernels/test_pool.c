/* tests/cpu_kernels/test_pool.c: 2-D MaxPool / AveragePool against naive
 * loops, over odd channel counts and plane sizes, strides, kernels, pads,
 * ceil_mode, dilation and count_include_pad, windows reaching far past
 * the input, the 8-bit MaxPool, and the global pools against the
 * reduction kernel; 1 and 2 threads give the same bits. */
#include "tk.h"

#include <math.h>
#include <string.h>

typedef struct pc {
  int64_t C, H, W, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, ceil;
} pc;

/* ONNX output size: floor or ceil, and with ceil_mode a last window that
 * would start past the input and its leading pad is dropped. */
static int64_t pc_out(int64_t n, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1,
                      int64_t ceil) {
  int64_t span = n + p0 + p1 - ((k - 1) * d + 1);
  int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (o - 1) * s >= n + p0)
    o--;
  return o;
}

/* Cells inside the input take part; with count_include_pad, cells inside
 * the declared pads count too. Sums in double: the kernel's order differs. */
static void ref_pool(const pc *c, int64_t mode, int64_t cip, const float *X, float *Y, int64_t OH,
                     int64_t OW) {
  for (int64_t i = 0; i < c->C; i++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double sum = 0;
        float mx = -INFINITY;
        int64_t cnt = 0;
        for (int64_t kh = 0; kh < c->KH; kh++)
          for (int64_t kw = 0; kw < c->KW; kw++) {
            int64_t ih = oh * c->sh - c->pt + kh * c->dh, iw = ow * c->sw - c->pl + kw * c->dw;
            if (ih >= 0 && ih < c->H && iw >= 0 && iw < c->W) {
              float v = X[(i * c->H + ih) * c->W + iw];
              if (v > mx || isnan(v))
                mx = isnan(mx) ? mx : v;
              sum += v;
              cnt++;
            } else if (cip && ih >= -c->pt && ih < c->H + c->pb && iw >= -c->pl &&
                       iw < c->W + c->pr) {
              cnt++;
            }
          }
        Y[(i * OH + oh) * OW + ow] = mode == 0 ? mx : cnt ? (float)(sum / (double)cnt) : NAN;
      }
}

static struct kcpu_pool *pool2(void) {
  static struct kcpu_pool *p;
  if (!p)
    p = kcpu_pool_create(2);
  return p;
}

/* nan_every: a NaN every so many input elements (0: none) */
static void pool_case(pc c, int64_t mode, int64_t cip, int64_t nan_every) {
  int64_t OH = pc_out(c.H, c.KH, c.sh, c.dh, c.pt, c.pb, c.ceil);
  int64_t OW = pc_out(c.W, c.KW, c.sw, c.dw, c.pl, c.pr, c.ceil);
  int64_t xn = c.C * c.H * c.W, yn = c.C * OH * OW;
  float *X = tk_alloc(xn), *Y = tk_alloc(yn), *Y2 = tk_alloc(yn), *R = tk_alloc(yn);
  tk_fill(X, xn, (uint32_t)(c.H * 31 + c.W + c.KH));
  for (int64_t i = nan_every ? nan_every / 2 : xn; i < xn; i += nan_every)
    X[i] = NAN;
  kcpu_k_pool2d(X, Y, c.C, c.H, c.W, OH, OW, c.KH, c.KW, c.sh, c.sw, c.dh, c.dw, c.pt, c.pl, c.pb,
                c.pr, mode, cip, NULL);
  kcpu_k_pool2d(X, Y2, c.C, c.H, c.W, OH, OW, c.KH, c.KW, c.sh, c.sw, c.dh, c.dw, c.pt, c.pl, c.pb,
                c.pr, mode, cip, pool2());
  ref_pool(&c, mode, cip, X, R, OH, OW);
  ck_assert_msg(memcmp(Y, Y2, (size_t)yn * sizeof(float)) == 0,
                "pool C%ld %ldx%ld k%ldx%ld s%ld mode %ld: 1 and 2 threads differ", (long)c.C,
                (long)c.H, (long)c.W, (long)c.KH, (long)c.KW, (long)c.sh, (long)mode);
  for (int64_t i = 0; i < yn; i++) {
    int ok = mode == 0 ? (Y[i] == R[i] || (isnan(Y[i]) && isnan(R[i])))
                       : (isnan(R[i]) ? isnan(Y[i]) : fabsf(Y[i] - R[i]) <= 2e-6f);
    ck_assert_msg(ok,
                  "pool C%ld %ldx%ld k%ldx%ld s%ldx%ld d%ldx%ld pads %ld,%ld,%ld,%ld ceil %ld "
                  "mode %ld cip %ld: y[%ld] = %g, want %g",
                  (long)c.C, (long)c.H, (long)c.W, (long)c.KH, (long)c.KW, (long)c.sh, (long)c.sw,
                  (long)c.dh, (long)c.dw, (long)c.pt, (long)c.pl, (long)c.pb, (long)c.pr,
                  (long)c.ceil, (long)mode, (long)cip, (long)i, Y[i], R[i]);
  }
  free(X);
  free(Y);
  free(Y2);
  free(R);
}

static const int64_t pool_planes[][2] = {{1, 1},   {7, 7},     {13, 13},   {13, 17}, {55, 55},
                                         {56, 56}, {111, 111}, {112, 112}, {3, 40},  {9, 47}};
static const int64_t pool_chans[] = {1, 3, 7, 17, 24, 40};

/* Window settings: (K, stride, pad, dilation, ceil) on both axes. */
static const int64_t pool_wins[][5] = {
    {3, 2, 0, 1, 1}, {3, 2, 1, 1, 0}, {3, 1, 1, 1, 0}, {2, 2, 0, 1, 0}, {5, 1, 2, 1, 0},
    {3, 3, 1, 1, 1}, {3, 1, 0, 2, 0}, {5, 2, 2, 1, 1}, {2, 1, 0, 1, 1}, {3, 2, 1, 1, 1},
    {2, 2, 0, 1, 1}, {2, 2, 1, 1, 0}, {5, 2, 0, 1, 0}};

static void pool_sweep(int64_t mode, int64_t cip) {
  int np = (int)(sizeof pool_planes / sizeof pool_planes[0]);
  int nw = (int)(sizeof pool_wins / sizeof pool_wins[0]);
  for (int p = 0; p < np; p++)
    for (int w = 0; w < nw; w++) {
      const int64_t *q = pool_wins[w];
      int64_t H = pool_planes[p][0], W = pool_planes[p][1];
      int64_t ext = (q[0] - 1) * q[3] + 1;
      if (H + 2 * q[2] < ext || W + 2 * q[2] < ext)
        continue;
      /* fewer channels on the big planes, so the sweep stays quick */
      int64_t C = pool_chans[(p + w) % 6];
      if (H * W > 3000 && C > 3)
        C = 3;
      pool_case((pc){C, H, W, q[0], q[0], q[1], q[1], q[3], q[3], q[2], q[2], q[2], q[2], q[4]},
                mode, cip, 0);
    }
}

START_TEST(pool_max) {
  pool_sweep(0, 0);
}
END_TEST

START_TEST(pool_avg) {
  pool_sweep(1, 0);
  pool_sweep(1, 1);
}
END_TEST

START_TEST(pool_uneven) {
  for (int64_t mode = 0; mode < 2; mode++)
    for (int64_t cip = 0; cip < 2; cip++) {
      /* asymmetric pads, different windows and strides per axis */
      pool_case((pc){5, 13, 17, 3, 2, 2, 1, 1, 1, 0, 1, 2, 0, 0}, mode, cip, 0);
      pool_case((pc){4, 20, 33, 2, 3, 1, 3, 2, 1, 1, 2, 0, 1, 1}, mode, cip, 0);
      /* pads as large as the window: whole windows in the pad */
      pool_case((pc){3, 6, 9, 3, 3, 2, 2, 1, 1, 2, 2, 2, 2, 1}, mode, cip, 0);
      /* 1-D, as the emitter passes it (H = KH = OH = 1) */
      pool_case((pc){6, 1, 37, 1, 4, 1, 3, 1, 1, 0, 1, 0, 2, 1}, mode, cip, 0);
      /* stride 4, dilation 3, wide rows */
      pool_case((pc){2, 19, 150, 3, 3, 4, 4, 3, 3, 1, 1, 1, 1, 0}, mode, cip, 0);
    }
}
END_TEST

START_TEST(pool_nan) {
  /* NaN in a window wins over any number, in every position of the window */
  pool_case((pc){3, 13, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0}, 0, 0, 7);
  pool_case((pc){3, 56, 56, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1}, 0, 0, 29);
  pool_case((pc){17, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0}, 0, 0, 11);
  pool_case((pc){3, 13, 17, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0}, 1, 0, 13);
  /* stride 2 with a left pad and with ceil_mode: NaN in the first and last
   * columns and every other place */
  for (int64_t every = 3; every <= 7; every += 2) {
    pool_case((pc){2, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0}, 0, 0, every * 37);
    pool_case((pc){3, 55, 55, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1}, 0, 0, every);
    pool_case((pc){3, 33, 35, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1}, 0, 0, every);
  }
}
END_TEST

/* Inputs big enough to be split over two threads (smaller ones run on
 * the calling thread), split mid-plane and mid-row-block. */
START_TEST(pool_threads) {
  for (int64_t mode = 0; mode < 2; mode++) {
    pool_case((pc){23, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0}, mode, 0, 0);
    pool_case((pc){67, 55, 55, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1}, mode, 0, mode ? 0 : 1001);
    pool_case((pc){41, 56, 56, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0}, mode, 0, 0);
    pool_case((pc){301, 17, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0}, mode, mode, 0);
    pool_case((pc){5, 150, 151, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 1}, mode, mode, 0);
  }
}
END_TEST

/* Windows and pads reaching far past the input (the kernel then walks
 * only the taps inside it): against the naive loops where those stay
 * cheap, and windows of 10^7 x 10^7 taps, where walking every tap would
 * not finish, against their closed-form answer. */
START_TEST(pool_far_windows) {
  for (int64_t mode = 0; mode < 2; mode++)
    for (int64_t cip = 0; cip <= mode; cip++) {
      pool_case((pc){3, 7, 9, 101, 101, 5, 5, 1, 1, 50, 50, 50, 50, 0}, mode, cip, 0);
      pool_case((pc){2, 9, 9, 3, 3, 1, 1, 100, 100, 100, 100, 100, 100, 0}, mode, cip, 0);
      pool_case((pc){2, 5, 6, 2, 2, 90, 90, 1, 1, 90, 90, 0, 0, 1}, mode, cip, 0);
      pool_case((pc){4, 6, 70, 1, 150, 1, 7, 1, 1, 0, 75, 0, 74, 0}, mode, cip, 0);
    }
  const int64_t H = 4, W = 5, K = 10000001, P = 5000000;
  float X[20], Y[20];
  tk_fill(X, H * W, 7);
  double sum = 0;
  float mx = -INFINITY;
  for (int i = 0; i < H * W; i++)
    sum += X[i], mx = X[i] > mx ? X[i] : mx;
  for (int64_t mode = 0; mode < 2; mode++)
    for (int64_t cip = 0; cip <= mode; cip++) {
      /* every window covers the whole plane and lies inside the pads */
      kcpu_k_pool2d(X, Y, 1, H, W, H, W, K, K, 1, 1, 1, 1, P, P, P, P, mode, cip, pool2());
      double want = mode == 0 ? mx : cip ? sum / ((double)K * (double)K) : sum / (double)(H * W);
      for (int i = 0; i < H * W; i++)
        ck_assert_msg(fabs(Y[i] - want) <= 1e-6 * fabs(want),
                      "far window mode %ld cip %ld: "
                      "y[%d] = %.9g, want %.9g",
                      (long)mode, (long)cip, i, Y[i], want);
    }
}
END_TEST

/* 8-bit MaxPool against naive loops (an empty window gives the type's
 * least value), including outputs whose last tap lands just past the row. */
/* Fills the stack below the caller with 0xff bytes, so that a kernel
 * reading a scratch byte it never wrote sees a large value, not a lucky 0. */
static __attribute__((noinline)) void poison_stack(void) {
  volatile uint8_t junk[16384];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = 0xff;
}

static void pool8_case(int64_t sgn, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t s,
                       int64_t d, int64_t pt, int64_t pl, int64_t pb, int64_t pr) {
  int64_t OH = pc_out(H, KH, s, d, pt, pb, 0), OW = pc_out(W, KW, s, d, pl, pr, 0), NC = 3;
  uint8_t X[3 * 40 * 40], Y[3 * 40 * 40];
  uint32_t st = (uint32_t)(H * 131 + W * 7 + KW);
  for (int64_t i = 0; i < NC * H * W; i++)
    st = st * 1664525u + 1013904223u, X[i] = (uint8_t)(st >> 24);
  poison_stack();
  kcpu_k_pool2d_8(X, Y, sgn, NC, H, W, OH, OW, KH, KW, s, s, d, d, pt, pl, NULL);
  for (int64_t i = 0; i < NC * OH * OW; i++) {
    int64_t c = i / (OH * OW), oh = i / OW % OH, ow = i % OW, best = sgn ? -128 : 0;
    for (int64_t kh = 0; kh < KH; kh++)
      for (int64_t kw = 0; kw < KW; kw++) {
        int64_t ih = oh * s - pt + kh * d, iw = ow * s - pl + kw * d;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W)
          continue;
        uint8_t b = X[(c * H + ih) * W + iw];
        int64_t v = sgn ? (int64_t)(int8_t)b : (int64_t)b;
        best = v > best ? v : best;
      }
    int64_t got = sgn ? (int64_t)(int8_t)Y[i] : (int64_t)Y[i];
    ck_assert_msg(got == best,
                  "pool8 sgn %ld %ldx%ld k%ldx%ld s%ld d%ld pads %ld,%ld,%ld,%ld: y[%ld] = %ld, "
                  "want %ld",
                  (long)sgn, (long)H, (long)W, (long)KH, (long)KW, (long)s, (long)d, (long)pt,
                  (long)pl, (long)pb, (long)pr, (long)i, (long)got, (long)best);
  }
}

START_TEST(pool_8bit) {
  for (int64_t sgn = 0; sgn < 2; sgn++) {
    pool8_case(sgn, 13, 17, 3, 3, 2, 1, 1, 1, 1, 1);
    pool8_case(sgn, 8, 8, 2, 2, 2, 1, 0, 0, 0, 0);
    pool8_case(sgn, 9, 11, 3, 3, 1, 2, 2, 2, 2, 2);
    /* the last tap of output 0 is column W: no output is whole inside */
    pool8_case(sgn, 4, 4, 5, 5, 2, 1, 0, 0, 1, 1);
    pool8_case(sgn, 6, 6, 4, 4, 3, 2, 0, 0, 2, 2);
    /* a window far wider than the row */
    pool8_case(sgn, 5, 7, 3, 1000, 1, 1, 1, 500, 1, 499);
  }
}
END_TEST

/* Global pools give kcpu_k_reduce's bits over the spatial axis. */
static void gpool_case(int64_t NC, int64_t n, int64_t mode) {
  float *X = tk_alloc(NC * n), *Y = tk_alloc(NC), *Y2 = tk_alloc(NC), *R = tk_alloc(NC);
  tk_fill(X, NC * n, (uint32_t)(n + 3));
  /* full mantissas, so that sums in another order round differently */
  for (int64_t i = 0; i < NC * n; i++)
    X[i] = X[i] * 3.14159265f + 1e-3f;
  if (n > 5)
    X[n + 5] = NAN;
  kcpu_k_gpool(X, Y, NC, n, mode, NULL);
  kcpu_k_gpool(X, Y2, NC, n, mode, pool2());
  int64_t dims[2] = {NC, n};
  ck_assert_int_eq(
      kcpu_k_reduce(KCPU_F32, mode == 0 ? KCPU_RED_MAX : KCPU_RED_MEAN, X, R, 2, dims, 2), 0);
  ck_assert_msg(memcmp(Y, Y2, (size_t)NC * sizeof(float)) == 0, "gpool %ldx%ld: threads differ",
                (long)NC, (long)n);
  for (int64_t i = 0; i < NC; i++)
    ck_assert_msg(memcmp(&Y[i], &R[i], sizeof(float)) == 0,
                  "gpool %ldx%ld mode %ld: y[%ld] = %.9g, reduce %.9g", (long)NC, (long)n,
                  (long)mode, (long)i, Y[i], R[i]);
  free(X);
  free(Y);
  free(Y2);
  free(R);
}

START_TEST(pool_global) {
  static const int64_t sizes[][2] = {{1, 1},   {7, 1},    {3, 15},    {5, 16},   {4, 17},
                                     {17, 49}, {40, 169}, {24, 3136}, {2, 12544}};
  for (int m = 0; m < 2; m++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      gpool_case(sizes[s][0], sizes[s][1], m);
  /* big enough to use both threads */
  gpool_case(2048, 144, 0);
  gpool_case(2048, 144, 1);
}
END_TEST

Suite *tk_pool_suite(void) {
  Suite *s = suite_create("cpu_kernels_pool");
  TCase *tc = tcase_create("pool");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, pool_max);
  tcase_add_test(tc, pool_avg);
  tcase_add_test(tc, pool_uneven);
  tcase_add_test(tc, pool_nan);
  tcase_add_test(tc, pool_threads);
  tcase_add_test(tc, pool_global);
  tcase_add_test(tc, pool_far_windows);
  tcase_add_test(tc, pool_8bit);
  suite_add_tcase(s, tc);
  return s;
}
