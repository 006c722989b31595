/* plugins/cpu/kernels/conv_blocked_dw.c: depthwise 2-D convolution
 * (group = C = M) on the channel-blocked layout (conv_blocked.h): the 16
 * channels of a block are one vector, so every plane size and stride runs
 * at full width.
 *
 * Work items are a few output rows of one (image, block), a band of rows
 * of every block of an image to a thread (kcpu_dwb_fn); rows clip their kh
 * range to the input. With the filters of KDWB_SHAPES (3x3 and 5x5 at
 * strides 1 and 2, 7x7, 3x3 and 5x5 dilated by 2) and rows of at least 8
 * pixels (kcpu_dwb_rows8: every depthwise layer of the zoo's models with
 * rows that long), every pixel of a row goes in a run of 8: independent
 * accumulators sharing each tap's weight vector, the first and last runs
 * of the row skipping the taps outside it (decided at compile time), runs
 * that overlap storing only the pixels not yet stored. Otherwise the
 * interior columns go in runs of 8 (then 4, then 1) and the few columns
 * at the edges clip their tap range one pixel at a time; where those
 * one-pixel chains would be a large part of the row (rows under 8
 * pixels), each plane is copied into a zero-bordered one first and goes
 * in runs of 8 throughout. Every output sums its taps in (kh, kw) order,
 * skipping the ones outside the input, then adds the bias, the residual, and applies the activation
 * (Relu / Clip / HardSigmoid / HardSwish in registers, Swish and Gelu over the finished row),
 * whatever run it falls in: the same bits whatever the thread count. Lanes past C are computed like
 * the others (the input's padding lanes may hold anything, the filters' are zero) and written as
 * zero. */
#include "conv_blocked.h"
#include "kcpu_act.h"

typedef float kdwb_v __attribute__((vector_size(64)));
typedef int32_t kdwb_vi __attribute__((vector_size(64)));
/* loads and stores through this type make no alignment promise */
typedef float kdwb_vu __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t kdwb_viu __attribute__((vector_size(64), aligned(4), may_alias));

#define KDWB_L KCPU_CB
#define KDWB_LD(p) (*(const kdwb_vu *)(p))

struct kcpu_dwb_row;

typedef struct kcpu_dwb {
  const float *X, *Wpk, *bias, *res;
  float *Y;
  int64_t C, Cb, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, act;
  float act_a, act_b;
  int64_t owl, owr; /* interior output columns [owl, owr) */
  /* every row in runs of 8 by this function (kcpu_dwb_rows8), or NULL */
  void (*runs8)(const struct kcpu_dwb *a, const struct kcpu_dwb_row *rw, const float *x, float *y,
                const float *r, int64_t right, int64_t k, int64_t st);
} kcpu_dwb;

/* What a row's runs share: the weights of its first valid tap, the tap
 * steps (in floats), the bias and the lanes kept. */
typedef struct kcpu_dwb_row {
  const float *w;
  int64_t nkh, xs, xkh, xkw, wkh;
  int64_t vact;
  float bias[KDWB_L];
  int32_t keep[KDWB_L];
} kcpu_dwb_row;

/* Output value v of one pixel: bias, residual at r (or none), the
 * activations done in registers, padding lanes zeroed, stored at y. */
#define KDWB_OUT(rw, a, vact, v, y, r)                                                             \
  do {                                                                                             \
    kdwb_v v_ = (v) + KDWB_LD((rw)->bias), z_ = {0};                                               \
    if ((a)->res)                                                                                  \
      v_ += KDWB_LD(r);                                                                            \
    if ((vact) == KCPU_ACT_RELU) /* keep what is not below 0 (NaN and -0 included) */              \
      v_ = (kdwb_v)((kdwb_vi)v_ & ~(kdwb_vi)(v_ < z_));                                            \
    KCPU_ACT_VEC_HARD(kdwb_v, kdwb_vi, v_, (vact), (a)->act_a, (a)->act_b);                        \
    *(kdwb_vu *)(y) = (kdwb_v)((kdwb_vi)v_ & *(const kdwb_viu *)(rw)->keep);                       \
  } while (0)

/* 8 pixels of a row, xs floats apart in the input: x is the first one's
 * first valid tap; every tap valid for all (interior columns). Inlined
 * with constant steps xs and xkw where it can: loads then take constant
 * offsets instead of a chain of address additions. */
static inline __attribute__((always_inline)) void
kcpu_dwb_run8n(const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *x, float *y, const float *r,
               int64_t xs, int64_t xkw, int64_t vact, int64_t n) {
  kdwb_v c0 = {0}, c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  int64_t KW = a->KW;
#define KDWB_TAP8(kw)                                                                              \
  do {                                                                                             \
    kdwb_v w = KDWB_LD(wr + (kw)*KDWB_L);                                                          \
    const float *p = xr + (kw)*xkw;                                                                \
    c0 += KDWB_LD(p) * w;                                                                          \
    c1 += KDWB_LD(p + xs) * w;                                                                     \
    c2 += KDWB_LD(p + 2 * xs) * w;                                                                 \
    c3 += KDWB_LD(p + 3 * xs) * w;                                                                 \
    c4 += KDWB_LD(p + 4 * xs) * w;                                                                 \
    c5 += KDWB_LD(p + 5 * xs) * w;                                                                 \
    c6 += KDWB_LD(p + 6 * xs) * w;                                                                 \
    c7 += KDWB_LD(p + 7 * xs) * w;                                                                 \
  } while (0)
  /* 3 and 5 taps written out: no branch inside a filter row, and loads
   * shared between neighbouring taps at stride 1 */
  for (int64_t kh = 0; kh < rw->nkh; kh++) {
    const float *xr = x + kh * rw->xkh, *wr = rw->w + kh * rw->wkh;
    if (KW == 3) {
      KDWB_TAP8(0);
      KDWB_TAP8(1);
      KDWB_TAP8(2);
    } else if (KW == 5) {
      KDWB_TAP8(0);
      KDWB_TAP8(1);
      KDWB_TAP8(2);
      KDWB_TAP8(3);
      KDWB_TAP8(4);
    } else {
      for (int64_t kw = 0; kw < KW; kw++)
        KDWB_TAP8(kw);
    }
  }
#undef KDWB_TAP8
  /* the first n pixels are stored (n = 8 but for a padded plane's row
   * tail, whose other pixels read the plane's slack) */
  KDWB_OUT(rw, a, vact, c0, y, r);
  if (n > 1)
    KDWB_OUT(rw, a, vact, c1, y + KDWB_L, r + KDWB_L);
  if (n > 2)
    KDWB_OUT(rw, a, vact, c2, y + 2 * KDWB_L, r + 2 * KDWB_L);
  if (n > 3)
    KDWB_OUT(rw, a, vact, c3, y + 3 * KDWB_L, r + 3 * KDWB_L);
  if (n > 4)
    KDWB_OUT(rw, a, vact, c4, y + 4 * KDWB_L, r + 4 * KDWB_L);
  if (n > 5)
    KDWB_OUT(rw, a, vact, c5, y + 5 * KDWB_L, r + 5 * KDWB_L);
  if (n > 6)
    KDWB_OUT(rw, a, vact, c6, y + 6 * KDWB_L, r + 6 * KDWB_L);
  if (n > 7)
    KDWB_OUT(rw, a, vact, c7, y + 7 * KDWB_L, r + 7 * KDWB_L);
}

static inline __attribute__((always_inline)) void
kcpu_dwb_run8(const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *x, float *y, const float *r,
              int64_t xs, int64_t xkw, int64_t vact) {
  kcpu_dwb_run8n(a, rw, x, y, r, xs, xkw, vact, 8);
}

/* kcpu_dwb_run8 for 4 pixels. */
static inline __attribute__((always_inline)) void
kcpu_dwb_run4(const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *x, float *y, const float *r,
              int64_t xs, int64_t xkw, int64_t vact) {
  kdwb_v c0 = {0}, c1 = c0, c2 = c0, c3 = c0;
  int64_t KW = a->KW;
  for (int64_t kh = 0; kh < rw->nkh; kh++) {
    const float *xr = x + kh * rw->xkh, *wr = rw->w + kh * rw->wkh;
    for (int64_t kw = 0; kw < KW; kw++) {
      kdwb_v w = KDWB_LD(wr + kw * KDWB_L);
      const float *p = xr + kw * xkw;
      c0 += KDWB_LD(p) * w;
      c1 += KDWB_LD(p + xs) * w;
      c2 += KDWB_LD(p + 2 * xs) * w;
      c3 += KDWB_LD(p + 3 * xs) * w;
    }
  }
  KDWB_OUT(rw, a, vact, c0, y, r);
  KDWB_OUT(rw, a, vact, c1, y + KDWB_L, r + KDWB_L);
  KDWB_OUT(rw, a, vact, c2, y + 2 * KDWB_L, r + 2 * KDWB_L);
  KDWB_OUT(rw, a, vact, c3, y + 3 * KDWB_L, r + 3 * KDWB_L);
}

/* The interior columns [ow, owr) of a row: runs of 8, then 4; xs, xkw:
 * the row's steps, vact: the activation in registers (constants where
 * inlined). Returns the first column left. */
static inline __attribute__((always_inline)) int64_t
kcpu_dwb_interior_v(const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *xr, float *y,
                    const float *r, int64_t ow, int64_t xs, int64_t xkw, int64_t vact) {
  int64_t L = KDWB_L;
  for (; ow + 8 <= a->owr; ow += 8)
    kcpu_dwb_run8(a, rw, xr + (ow * a->sw - a->pl) * L, y + ow * L, r ? r + ow * L : NULL, xs, xkw,
                  vact);
  for (; ow + 4 <= a->owr; ow += 4)
    kcpu_dwb_run4(a, rw, xr + (ow * a->sw - a->pl) * L, y + ow * L, r ? r + ow * L : NULL, xs, xkw,
                  vact);
  return ow;
}

/* kcpu_dwb_interior_v with the common activations as constants: the
 * epilogue then has no test per pixel. */
static inline __attribute__((always_inline)) int64_t
kcpu_dwb_interior(const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *xr, float *y,
                  const float *r, int64_t ow, int64_t xs, int64_t xkw) {
  if (rw->vact == KCPU_ACT_NONE)
    return kcpu_dwb_interior_v(a, rw, xr, y, r, ow, xs, xkw, KCPU_ACT_NONE);
  if (rw->vact == KCPU_ACT_RELU)
    return kcpu_dwb_interior_v(a, rw, xr, y, r, ow, xs, xkw, KCPU_ACT_RELU);
  return kcpu_dwb_interior_v(a, rw, xr, y, r, ow, xs, xkw, rw->vact);
}

/* One pixel whose valid taps are kw in [kw0, kw1) of each valid row; x:
 * its tap (first valid kh, kw0). */
static void kcpu_dwb_run1(const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *x, int64_t kw0,
                          int64_t kw1, float *y, const float *r) {
  kdwb_v c0 = {0};
  for (int64_t kh = 0; kh < rw->nkh; kh++) {
    const float *xr = x + kh * rw->xkh, *wr = rw->w + kh * rw->wkh + kw0 * KDWB_L;
    for (int64_t kw = 0; kw < kw1 - kw0; kw++)
      c0 += KDWB_LD(xr + kw * rw->xkw) * KDWB_LD(wr + kw * KDWB_L);
  }
  KDWB_OUT(rw, a, rw->vact, c0, y, r);
}

/* Whole-row runs for the common filters (3x3 and 5x5 at strides 1 and
 * 2, 7x7 at stride 1, 3x3 and 5x5 dilated by 2 at stride 1): every pixel
 * of a row goes in a run of 8, the edge pixels included, so no pixel is a
 * chain of dependent multiply-adds of its own and no plane is copied
 * first (the copy was 40% of a 28x28 layer's time). Pixel i of a run
 * reads input column i * SW + kw * DW - LO from x for tap kw: the first
 * run of a row starts at column 0 with LO = pl, and skips the taps left
 * of the row; the last run ends at the row's last pixel and skips the
 * taps past its end (RO: how many columns the last pixel's window
 * overhangs it). With KW, SW, DW, LO and RO constants every skip is
 * decided at compile time; a skipped tap is never loaded. Runs that
 * overlap pixels already done store from pixel st on (the residual may
 * be the output itself, so no pixel is stored twice). The sums are those
 * of kcpu_dwb_run1 over the valid taps, in (kh, kw) order. */
#define KDWB_OVER(i, SW, RO) ((RO) - (7 - (i)) * (SW) > 0 ? (RO) - (7 - (i)) * (SW) : 0)
#define KDWB_OK(i, kw, KW, SW, DW, LO, RO)                                                         \
  ((i) * (SW) + (kw) * (DW) >= (LO) && (kw) * (DW) <= ((KW)-1) * (DW)-KDWB_OVER(i, SW, RO))

static inline __attribute__((always_inline)) void
kcpu_dwb_run8x(const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *x, float *y, const float *r,
               int64_t KW, int64_t SW, int64_t DW, int64_t LO, int64_t RO, int64_t st) {
  kdwb_v c0 = {0}, c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
#define KDWB_PIX(i, ci, kw)                                                                        \
  do {                                                                                             \
    if (KDWB_OK(i, kw, KW, SW, DW, LO, RO))                                                        \
      ci += KDWB_LD(xr + ((i) * SW + (kw) * DW - LO) * KDWB_L) * w;                                \
  } while (0)
#define KDWB_TAPX(kw)                                                                              \
  do {                                                                                             \
    if ((kw) < KW) {                                                                               \
      kdwb_v w = KDWB_LD(wr + (kw) * KDWB_L);                                                      \
      KDWB_PIX(0, c0, kw);                                                                         \
      KDWB_PIX(1, c1, kw);                                                                         \
      KDWB_PIX(2, c2, kw);                                                                         \
      KDWB_PIX(3, c3, kw);                                                                         \
      KDWB_PIX(4, c4, kw);                                                                         \
      KDWB_PIX(5, c5, kw);                                                                         \
      KDWB_PIX(6, c6, kw);                                                                         \
      KDWB_PIX(7, c7, kw);                                                                         \
    }                                                                                              \
  } while (0)
  for (int64_t kh = 0; kh < rw->nkh; kh++) {
    const float *xr = x + kh * rw->xkh, *wr = rw->w + kh * rw->wkh;
    KDWB_TAPX(0);
    KDWB_TAPX(1);
    KDWB_TAPX(2);
    KDWB_TAPX(3);
    KDWB_TAPX(4);
    KDWB_TAPX(5);
    KDWB_TAPX(6);
  }
#undef KDWB_TAPX
#undef KDWB_PIX
#define KDWB_ST(i, ci)                                                                             \
  do {                                                                                             \
    if ((i) >= st)                                                                                 \
      KDWB_OUT(rw, a, rw->vact, ci, y + (i) * KDWB_L, r ? r + (i) * KDWB_L : NULL);                    \
  } while (0)
  KDWB_ST(0, c0);
  KDWB_ST(1, c1);
  KDWB_ST(2, c2);
  KDWB_ST(3, c3);
  KDWB_ST(4, c4);
  KDWB_ST(5, c5);
  KDWB_ST(6, c6);
  KDWB_ST(7, c7);
#undef KDWB_ST
}

/* The filters whose rows go in runs of 8, as (KW, SW, DW, E): the 3x3
 * and 5x5 of MobileNet-style models at strides 1 and 2, ConvNeXt's 7x7,
 * the dilated 3x3 and 5x5 of segmentation heads; E, the padding and
 * overhang they take, (KW - 1) * DW / 2 columns at most (a "same"
 * padding). Each is one function (kcpu_dwb_runs_K_S_D) holding a run per
 * edge width, called for every run of a row: the library is compiled with
 * the model for other targets than the build host, where every copy of a
 * run costs compile time (MobileNetV2 for a non-host target: 2.1 s before
 * the runs, 4.4 s with edges of up to 4 columns for every shape and the
 * interior runs inlined per activation, 2.2-2.3 s as here, within noise
 * of before). */
#define KDWB_SHAPES(X)                                                                             \
  X(3, 1, 1, 1) X(3, 2, 1, 1) X(5, 1, 1, 2) X(5, 2, 1, 2) X(7, 1, 1, 3) X(3, 1, 2, 2) X(5, 1, 2, 4)

/* A run of a row of shape (K, S, D): LO = k (the first run, right = 0),
 * RO = k (the last run, right = 1), or neither (k = 0), storing from
 * pixel st on. */
typedef void (*kdwb_runs_fn)(const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *x, float *y,
                             const float *r, int64_t right, int64_t k, int64_t st);
#define KDWB_E1(K, S, D, E, n)                                                                     \
  else if ((n) <= (E) && !right && k == n) kcpu_dwb_run8x(a, rw, x, y, r, K, S, D, n, 0, st);      \
  else if ((n) <= (E) && right && k == n) kcpu_dwb_run8x(a, rw, x, y, r, K, S, D, 0, n, st);
#define KDWB_RUNS(K, S, D, E)                                                                      \
  static __attribute__((noinline)) void kcpu_dwb_runs_##K##_##S##_##D(                             \
      const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *x, float *y, const float *r,         \
      int64_t right, int64_t k, int64_t st) {                                                      \
    if (k == 0)                                                                                    \
      kcpu_dwb_run8x(a, rw, x, y, r, K, S, D, 0, 0, st);                                           \
    KDWB_E1(K, S, D, E, 1) KDWB_E1(K, S, D, E, 2) KDWB_E1(K, S, D, E, 3) KDWB_E1(K, S, D, E, 4)    \
  }
KDWB_SHAPES(KDWB_RUNS)
#undef KDWB_RUNS
#undef KDWB_E1

/* How many columns the last pixel's window overhangs the row's end (0 if
 * none). */
static int64_t kcpu_dwb_overhang(const kcpu_dwb *a) {
  int64_t o = (a->OW - 1) * a->sw - a->pl + (a->KW - 1) * a->dw - (a->W - 1);
  return o > 0 ? o : 0;
}

/* The runs of a's rows where they all go in runs of 8: a filter of
 * KDWB_SHAPES with no more padding or overhang than its E, rows of at
 * least 8 pixels, the first run's pixels clear of the row's end, the
 * last run's clear of its start, and an interior run ending at owr
 * (kcpu_dwb_row8's gap run) clear of both; NULL otherwise. */
static kdwb_runs_fn kcpu_dwb_rows8(const kcpu_dwb *a) {
  if (a->OW < 8 || a->owl > a->OW - 8 || a->owr < 8 || a->owr - 8 < a->owl || a->owr < a->OW - 8)
    return NULL;
#define KDWB_IS(K, S, D, E)                                                                        \
  if (a->KW == K && a->sw == S && a->dw == D && a->pl <= E && kcpu_dwb_overhang(a) <= E)           \
    return kcpu_dwb_runs_##K##_##S##_##D;
  KDWB_SHAPES(KDWB_IS)
#undef KDWB_IS
  return NULL;
}

/* One row by runs of 8: the first run from column 0, interior runs while
 * they stay clear of the end, where a gap of under 8 pixels is left
 * before the last run the interior run ending at owr (a run ending at
 * OW - 8 would start left of owl on rows of 17 or 18 with 3 columns of
 * padding, and read before the row), and the last run ending at OW. xr:
 * the input row (column 0). */
static void kcpu_dwb_row8(const kcpu_dwb *a, const kcpu_dwb_row *rw, const float *xr, float *y,
                          const float *r) {
  int64_t L = KDWB_L, OW = a->OW, SW = a->sw;
  kdwb_runs_fn run = a->runs8;
#define KDWB_RR(ow) (r ? r + (ow) * L : NULL)
  run(a, rw, xr, y, r, 0, a->pl, 0);
  int64_t ow = 8, end = 8 + (a->owr - 8) / 8 * 8;
  for (; ow < end; ow += 8)
    run(a, rw, xr + (ow * SW - a->pl) * L, y + ow * L, KDWB_RR(ow), 0, 0, 0);
  if (OW - 8 > ow) { /* a gap: the interior run ending at owr (>= OW - 4) */
    int64_t g = a->owr - 8;
    run(a, rw, xr + (g * SW - a->pl) * L, y + g * L, KDWB_RR(g), 0, 0, ow - g);
    ow = a->owr;
  }
  if (ow < OW)
    run(a, rw, xr + ((OW - 8) * SW - a->pl) * L, y + (OW - 8) * L, KDWB_RR(OW - 8), 1,
        kcpu_dwb_overhang(a), ow - (OW - 8));
#undef KDWB_RR
}

/* First tap index k in [0, K) with o + k*d >= 0, and one past the last
 * with o + k*d < n (the valid taps of a window starting at o). */
static inline void kcpu_dwb_clip(int64_t o, int64_t d, int64_t K, int64_t n, int64_t *k0,
                                 int64_t *k1) {
  int64_t lo = o < 0 ? (-o + d - 1) / d : 0, hi = n - 1 - o < 0 ? 0 : (n - 1 - o) / d + 1;
  *k0 = lo < K ? lo : K;
  *k1 = hi < K ? hi : K;
  if (*k1 < *k0)
    *k1 = *k0;
}

/* Swish or Gelu over a finished output row y of block cb (the registers
 * held the sum with bias and residual), lanes past C cleared again. */
static void kcpu_dwb_row_act(const kcpu_dwb *a, float *y, int64_t cb) {
  int64_t L = KDWB_L, OW = a->OW;
  if (a->act == KCPU_ACT_SWISH) {
    kcpu_act_swish_row(a->act_a, y, OW * L);
  } else if (a->act == KCPU_ACT_GELU) {
    for (int64_t i = 0; i < OW * L; i += L)
      for (int64_t l = 0; l < L; l++)
        y[i + l] = kcpu_m_gelu(y[i + l]);
  }
  if ((a->act == KCPU_ACT_SWISH || a->act == KCPU_ACT_GELU) && (cb + 1) * L > a->C)
    for (int64_t i = 0; i < OW * L; i += L)
      for (int64_t l = a->C - cb * L; l < L; l++)
        y[i + l] = 0.0f;
}

/* Output rows [oh0, oh1) of (image, block) nc = n * Cb + cb. */
static void kcpu_dwb_rows(const kcpu_dwb *a, int64_t nc, int64_t oh0, int64_t oh1) {
  int64_t L = KDWB_L, W = a->W, OW = a->OW, KW = a->KW, cb = nc % a->Cb, nl = a->C - cb * L;
  kcpu_dwb_row rw;
  rw.xs = a->sw * L;
  rw.xkh = a->dh * W * L;
  rw.xkw = a->dw * L;
  rw.wkh = KW * L;
  /* with Swish or Gelu, registers hold the sum with bias and residual */
  rw.vact = a->act == KCPU_ACT_SWISH || a->act == KCPU_ACT_GELU ? KCPU_ACT_NONE : a->act;
  for (int64_t l = 0; l < L; l++) {
    rw.bias[l] = a->bias && l < nl ? a->bias[cb * L + l] : 0.0f;
    rw.keep[l] = l < nl ? -1 : 0;
  }
  for (int64_t oh = oh0; oh < oh1; oh++) {
    int64_t ih0 = oh * a->sh - a->pt, kh0, kh1;
    kcpu_dwb_clip(ih0, a->dh, a->KH, a->H, &kh0, &kh1);
    rw.nkh = kh1 - kh0;
    rw.w = a->Wpk + cb * a->KH * KW * L + kh0 * KW * L;
    /* the input at row ih0 + kh0*dh, column 0 */
    const float *xr = a->X + (nc * a->H + ih0 + kh0 * a->dh) * W * L;
    /* the input rows that the next output row reads first of all (sh of
     * them): rows are 1.8 to 7 kB apart, so the hardware's prefetchers
     * (which stop at 4 kB pages) fall behind on planes not in cache */
    for (int64_t ir = ih0 + (a->KH - 1) * a->dh + 1;
         oh + 1 < a->OH && ir <= ih0 + a->sh + (a->KH - 1) * a->dh; ir++) {
      if (ir < 0 || ir >= a->H)
        continue;
      const char *pf = (const char *)(a->X + (nc * a->H + ir) * W * L);
      for (int64_t i = 0; i < W; i++)
        __builtin_prefetch(pf + i * L * (int64_t)sizeof(float));
    }
    int64_t yo = (nc * a->OH + oh) * OW * L;
    float *y = a->Y + yo;
    const float *r = a->res ? a->res + yo : NULL;
    if (a->runs8) {
      kcpu_dwb_row8(a, &rw, xr, y, r);
      kcpu_dwb_row_act(a, y, cb);
      continue;
    }
#define KDWB_R(ow) (r ? r + (ow)*L : NULL)
    int64_t ow = 0;
    for (; ow < a->owl; ow++) {
      int64_t iw0 = ow * a->sw - a->pl, kw0, kw1;
      kcpu_dwb_clip(iw0, a->dw, KW, W, &kw0, &kw1);
      kcpu_dwb_run1(a, &rw, xr + (iw0 + kw0 * a->dw) * L, kw0, kw1, y + ow * L, KDWB_R(ow));
    }
    if (a->sw == 1 && a->dw == 1)
      ow = kcpu_dwb_interior(a, &rw, xr, y, r, ow, L, L);
    else if (a->sw == 2 && a->dw == 1)
      ow = kcpu_dwb_interior(a, &rw, xr, y, r, ow, 2 * L, L);
    else
      ow = kcpu_dwb_interior(a, &rw, xr, y, r, ow, rw.xs, rw.xkw);
    for (; ow < a->owr; ow++)
      kcpu_dwb_run1(a, &rw, xr + (ow * a->sw - a->pl) * L, 0, KW, y + ow * L, KDWB_R(ow));
    for (; ow < OW; ow++) {
      int64_t iw0 = ow * a->sw - a->pl, kw0, kw1;
      kcpu_dwb_clip(iw0, a->dw, KW, W, &kw0, &kw1);
      kcpu_dwb_run1(a, &rw, xr + (iw0 + kw0 * a->dw) * L, kw0, kw1, y + ow * L, KDWB_R(ow));
    }
#undef KDWB_R
    kcpu_dwb_row_act(a, y, cb);
  }
}

/* Output rows per work item: a few, so that a thread's share of an
 * image's items is a band of rows of every block (the rows that the
 * convolutions before and after, split by row bands, write and read on
 * that thread), while an item's rows reuse its block's bias and filters. */
#define KDWB_ROWS 4

/* Work items [b, e): t = (n * nq + q) * Cb + cb, rows [q, q + 1) *
 * KDWB_ROWS of (image n, block cb), nq chunks of rows. The image stays
 * outermost: a batch splits by images first. Rows outermost across the
 * images ran slower on MobileNetV3-small at batch 2 (4% on one die, 10%
 * with the threads on two dies), whose small layers split by channels. */
static void kcpu_dwb_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_dwb *a = ctx;
  int64_t nq = (a->OH + KDWB_ROWS - 1) / KDWB_ROWS;
  for (int64_t t = b; t < e; t++) {
    int64_t cb = t % a->Cb, q = t / a->Cb % nq, n = t / (a->Cb * nq);
    int64_t oh1 = (q + 1) * KDWB_ROWS < a->OH ? (q + 1) * KDWB_ROWS : a->OH;
    kcpu_dwb_rows(a, n * a->Cb + cb, q * KDWB_ROWS, oh1);
  }
}

/* Small planes, where most columns are edge ones: each (image, block) of
 * items [b, e) (item = n * Cb + cb) is first copied into a zero-bordered
 * plane, with slack on the right up to a whole run of 8 output columns,
 * so that every output pixel reads every tap: each row goes in runs of 8,
 * the last one storing what is left of the row. Same sums in the same
 * order as kcpu_dwb_fn (the padding taps add 0 * w). */
static void kcpu_dwb_pad_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_dwb *a = ctx;
  int64_t L = KDWB_L, KW = a->KW, OW = a->OW;
  int64_t Hp = (a->OH - 1) * a->sh + (a->KH - 1) * a->dh + 1;
  int64_t Wp = ((OW + 7) / 8 * 8 - 1) * a->sw + (KW - 1) * a->dw + 1;
  float *P = kcpu_alloc(Hp * Wp * L * (int64_t)sizeof(float));
  if (!P) { /* the clipping path needs no buffer */
    for (int64_t nc = b; nc < e; nc++)
      kcpu_dwb_rows(a, nc, 0, a->OH);
    return;
  }
  kcpu_dwb_row rw;
  rw.xs = a->sw * L;
  rw.xkh = a->dh * Wp * L;
  rw.xkw = a->dw * L;
  rw.wkh = KW * L;
  rw.nkh = a->KH;
  rw.vact = a->act == KCPU_ACT_SWISH || a->act == KCPU_ACT_GELU ? KCPU_ACT_NONE : a->act;
  int64_t n = a->W < Wp - a->pl ? a->W : Wp - a->pl; /* input columns read */
  n = n < 0 ? 0 : n;
  for (int64_t nc = b; nc < e; nc++) {
    int64_t cb = nc % a->Cb, nl = a->C - cb * L;
    for (int64_t l = 0; l < L; l++) {
      rw.bias[l] = a->bias && l < nl ? a->bias[cb * L + l] : 0.0f;
      rw.keep[l] = l < nl ? -1 : 0;
    }
    rw.w = a->Wpk + cb * a->KH * KW * L;
    for (int64_t r = 0; r < Hp; r++) {
      float *d = P + r * Wp * L;
      int64_t ih = r - a->pt;
      if (ih < 0 || ih >= a->H) {
        for (int64_t i = 0; i < Wp * L; i++)
          d[i] = 0.0f;
        continue;
      }
      for (int64_t i = 0; i < a->pl * L && i < Wp * L; i++)
        d[i] = 0.0f;
      for (int64_t i = (a->pl + n) * L; i < Wp * L; i++)
        d[i] = 0.0f;
      const float *src = a->X + (nc * a->H + ih) * a->W * L;
      for (int64_t i = 0; i < n * L; i++)
        d[a->pl * L + i] = src[i];
    }
    for (int64_t oh = 0; oh < a->OH; oh++) {
      const float *xr = P + oh * a->sh * Wp * L;
      int64_t yo = (nc * a->OH + oh) * OW * L;
      float *y = a->Y + yo;
      const float *r = a->res ? a->res + yo : NULL;
      for (int64_t ow = 0; ow < OW; ow += 8) {
        int64_t k = OW - ow < 8 ? OW - ow : 8;
        const float *x = xr + ow * a->sw * L;
        const float *ro = r ? r + ow * L : NULL;
        if (a->sw == 1 && a->dw == 1)
          kcpu_dwb_run8n(a, &rw, x, y + ow * L, ro, L, L, rw.vact, k);
        else if (a->sw == 2 && a->dw == 1)
          kcpu_dwb_run8n(a, &rw, x, y + ow * L, ro, 2 * L, L, rw.vact, k);
        else
          kcpu_dwb_run8n(a, &rw, x, y + ow * L, ro, rw.xs, rw.xkw, rw.vact, k);
      }
      kcpu_dwb_row_act(a, y, cb);
    }
  }
  kcpu_free(P);
}

void kcpu_convb_depthwise(const float *X, const float *Wpk, const float *bias, const float *res,
                          float *Y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH,
                          int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh,
                          int64_t dw, int64_t pt, int64_t pl, int64_t act, float act_a, float act_b,
                          struct kcpu_pool *pool) {
  kcpu_dwb a = {X,     Wpk, bias, res, Y,  C,   (C + KCPU_CB - 1) / KCPU_CB,
                H,     W,   OH,   OW,  KH, KW,  sh,
                sw,    dh,  dw,   pt,  pl, act, act_a,
                act_b, 0,   0,     NULL};
  /* interior columns: ow*sw - pl >= 0 and ow*sw - pl + (KW-1)*dw <= W-1 */
  int64_t lo = (pl + sw - 1) / sw, last = W - 1 - (KW - 1) * dw + pl;
  int64_t hi = last < 0 ? 0 : last / sw + 1;
  a.owl = lo < OW ? lo : OW;
  a.owr = hi < OW ? hi : OW;
  if (a.owr < a.owl)
    a.owr = a.owl;
  /* Rows not in runs of 8 throughout: pixels per row that go one at a
   * time (edges, and interior ones past the runs of 8 and 4) are
   * latency-bound chains of taps; where they are more than an eighth of
   * the row, the zero-bordered copy pays, at stride 1 (Zen 5, one core:
   * 1152 channels 5x5 at 7x7 57 -> 26 us); at stride 2 the copy moves 4x
   * the output and paid only for rows of up to 8 (672 5x5 14 -> 7 24 ->
   * 18 us; 28 -> 14 and 56 -> 28 ran 40-70% slower) */
  a.runs8 = kcpu_dwb_rows8(&a);
  int64_t single = a.owl + (OW - a.owr) + (a.owr - a.owl) % 4;
  if (!a.runs8 && single * 8 > OW && (sw == 1 || OW <= 8))
    kcpu_parallel_for(pool, N * a.Cb, kcpu_dwb_pad_fn, &a);
  else
    kcpu_parallel_for(pool, N * ((OH + KDWB_ROWS - 1) / KDWB_ROWS) * a.Cb, kcpu_dwb_fn, &a);
}
