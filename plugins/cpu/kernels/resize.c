/* plugins/cpu/kernels/resize.c: Resize driven by per-axis tap tables that
 * the emitter computes at compile time (shapes and scales are static): a
 * result cell is the weighted sum over the product of its axes' taps, so
 * every mode and coordinate transformation is only a different table.
 * f32 resizes of the last two axes only (images, NCHW) take a separable
 * path on the pool instead: rows blended first, then columns. */
#include <math.h>

#include "kcpu_elem.h"

/* For axis d and result index o, taps t < ntaps[d] are at
 * toff[d] + o*ntaps[d] + t in tidx (input index; -1 = outside the input:
 * the cell is extrap) and tw (weights as the bits of doubles). nearest:
 * copy the single tap's element bit-exactly. Integer results round half to
 * even. */
void kcpu_k_resize(int64_t elem, const void *x, void *y, int64_t rank, const int64_t *idims,
                   const int64_t *odims, const int64_t *ntaps, const int64_t *toff,
                   const int64_t *tidx, const int64_t *tw, int64_t nearest, double extrap) {
  int64_t ist[16], oc[16], tc[16], n = 1, es = kcpu_e_size(elem);
  for (int64_t d = rank - 1, s = 1; d >= 0; d--) {
    ist[d] = s;
    s *= idims[d];
  }
  for (int64_t d = 0; d < rank; d++)
    n *= odims[d];
  int fl = kcpu_e_is_float(elem);
  for (int64_t o = 0; o < n; o++) {
    int64_t r = o, outside = 0;
    for (int64_t d = rank - 1; d >= 0; d--) {
      oc[d] = r % odims[d];
      r /= odims[d];
      tc[d] = 0;
    }
    for (int64_t d = 0; d < rank && !outside; d++)
      outside = tidx[toff[d] + oc[d] * ntaps[d]] < 0;
    if (outside) {
      kcpu_e_stf(elem, y, o, extrap);
      continue;
    }
    if (nearest) {
      int64_t src = 0;
      for (int64_t d = 0; d < rank; d++)
        src += tidx[toff[d] + oc[d] * ntaps[d]] * ist[d];
      memcpy((char *)y + o * es, (const char *)x + src * es, (size_t)es);
      continue;
    }
    double acc = 0.0;
    for (;;) {
      double wt = 1.0;
      int64_t src = 0;
      for (int64_t d = 0; d < rank; d++) {
        int64_t k = toff[d] + oc[d] * ntaps[d] + tc[d];
        double w;
        memcpy(&w, &tw[k], sizeof w);
        wt *= w;
        src += tidx[k] * ist[d];
      }
      if (wt != 0.0)
        acc += wt * kcpu_e_ldf(elem, x, src);
      int64_t d = rank - 1;
      for (; d >= 0; d--) {
        if (++tc[d] < ntaps[d])
          break;
        tc[d] = 0;
      }
      if (d < 0)
        break;
    }
    kcpu_e_stf(elem, y, o, fl ? acc : nearbyint(acc));
  }
}

/* The separable f32 path: y[p, oh, ow] = sum over the taps i of oh and j
 * of ow of wh[oh, i] * ww[ow, j] * x[p, hidx[oh, i], widx[ow, j]], in one
 * of two orders, whichever touches fewer elements through the column taps
 * (a gather, one element at a time, where the row blend is contiguous and
 * vectorizes):
 * - rows first (shrinking): each output row blends its input rows into
 *   one input-wide row, whose columns are then gathered;
 * - columns first (growing, as segmentation heads do 8x): the input rows
 *   an output row block needs are gathered to output width once, then each
 *   output row blends those rows.
 * The weights are converted to float and the indices narrowed once per
 * call. Zero weights are skipped, as the generic path skips them, so an
 * inf or NaN outside the taps stays out. Taps must all be inside the input
 * (no extrapolation). Tasks are (plane, block of output rows); the result
 * of a cell does not depend on the split. */
typedef struct kcpu_rs2 {
  const float *x;
  float *y;
  int64_t IH, IW, OH, OW, nth, ntw, rb, nrb, cols_first, maxrows;
  const int32_t *hidx, *widx;
  const float *hw, *ww;
} kcpu_rs2;

/* dst[0..n) = the taps of each column j of src (one input row). Two
 * taps (linear modes) without a branch, zero weights dropped by a select:
 * a loop the JIT vectorizes with gathers, where the branchy general one
 * ran one tap at a time and was most of a segmentation head's 8x resize.
 * The sum starts from 0 as the general loop's does (-0 taps give +0). */
static inline void kcpu_rs2_cols(const kcpu_rs2 *a, const float *restrict src,
                                 float *restrict dst, int64_t n) {
  int64_t ntw = a->ntw;
  if (ntw == 2) {
    const int32_t *restrict ix = a->widx;
    const float *restrict w = a->ww;
    for (int64_t j = 0; j < n; j++) {
      float w0 = w[2 * j], w1 = w[2 * j + 1];
      float v0 = src[ix[2 * j]], v1 = src[ix[2 * j + 1]];
      float t0 = w0 != 0.0f ? w0 * v0 : 0.0f, t1 = w1 != 0.0f ? w1 * v1 : 0.0f;
      dst[j] = (0.0f + t0) + t1;
    }
    return;
  }
  for (int64_t j = 0; j < n; j++) {
    float acc = 0.0f;
    for (int64_t t = 0; t < ntw; t++) {
      float wt = a->ww[j * ntw + t];
      if (wt != 0.0f)
        acc += wt * src[a->widx[j * ntw + t]];
    }
    dst[j] = acc;
  }
}

/* dst[0..n) = the taps of output row oh over rows row(i) of n floats. */
#define KCPU_RS2_BLEND(a, oh, dst, n, ROW)                                                         \
  do {                                                                                             \
    if ((a)->nth == 2) { /* one pass; the same sums as the loop below */                           \
      float w0_ = (a)->hw[(oh)*2], w1_ = (a)->hw[(oh)*2 + 1];                                      \
      const float *restrict r0_ = ROW((a)->hidx[(oh)*2]);                                          \
      const float *restrict r1_ = ROW((a)->hidx[(oh)*2 + 1]);                                      \
      float *restrict d_ = (dst);                                                                  \
      for (int64_t j_ = 0; j_ < (n); j_++) {                                                       \
        float t0_ = w0_ != 0.0f ? w0_ * r0_[j_] : 0.0f, t1_ = w1_ != 0.0f ? w1_ * r1_[j_] : 0.0f;  \
        d_[j_] = (0.0f + t0_) + t1_;                                                               \
      }                                                                                            \
      break;                                                                                       \
    }                                                                                              \
    for (int64_t j_ = 0; j_ < (n); j_++)                                                           \
      (dst)[j_] = 0.0f;                                                                            \
    for (int64_t t_ = 0; t_ < (a)->nth; t_++) {                                                    \
      float wt_ = (a)->hw[(oh) * (a)->nth + t_];                                                   \
      const float *row_ = ROW((a)->hidx[(oh) * (a)->nth + t_]);                                    \
      if (wt_ != 0.0f)                                                                             \
        for (int64_t j_ = 0; j_ < (n); j_++)                                                       \
          (dst)[j_] += wt_ * row_[j_];                                                             \
    }                                                                                              \
  } while (0)

/* The input rows that output rows [oh0, oh1) reach: [*lo, *hi]. */
static void kcpu_rs2_reach(const kcpu_rs2 *a, int64_t oh0, int64_t oh1, int64_t *lo, int64_t *hi) {
  *lo = a->IH;
  *hi = -1;
  for (int64_t k = oh0 * a->nth; k < oh1 * a->nth; k++) {
    *lo = a->hidx[k] < *lo ? a->hidx[k] : *lo;
    *hi = a->hidx[k] > *hi ? a->hidx[k] : *hi;
  }
}

static void kcpu_rs2_task(void *ctx, int64_t b, int64_t e) {
  const kcpu_rs2 *a = ctx;
  int64_t IW = a->IW, OW = a->OW;
  /* one buffer for the range's tasks (columns first), of the most rows a
   * block reaches */
  float *rows = a->cols_first ? kcpu_alloc(a->maxrows * OW * (int64_t)sizeof(float)) : NULL;
  for (int64_t task = b; task < e; task++) {
    int64_t plane = task / a->nrb, oh0 = task % a->nrb * a->rb;
    int64_t oh1 = oh0 + a->rb < a->OH ? oh0 + a->rb : a->OH;
    const float *xp = a->x + plane * a->IH * IW;
    float *yp = a->y + plane * a->OH * OW;
    if (!rows) { /* rows first, or no memory for the other order's buffer */
      float tmp[KCPU_RS2_MAX_W];
#define KCPU_RS2_IN_ROW(i) (xp + (int64_t)(i)*IW)
      for (int64_t oh = oh0; oh < oh1; oh++) {
        KCPU_RS2_BLEND(a, oh, tmp, IW, KCPU_RS2_IN_ROW);
        kcpu_rs2_cols(a, tmp, yp + oh * OW, OW);
      }
      continue;
    }
    /* the input rows this block's taps reach, each gathered to width OW */
    int64_t lo, hi;
    kcpu_rs2_reach(a, oh0, oh1, &lo, &hi);
    for (int64_t i = lo; i <= hi; i++)
      kcpu_rs2_cols(a, xp + i * IW, rows + (i - lo) * OW, OW);
#define KCPU_RS2_OUT_ROW(i) (rows + ((int64_t)(i)-lo) * OW)
    for (int64_t oh = oh0; oh < oh1; oh++)
      KCPU_RS2_BLEND(a, oh, yp + oh * OW, OW, KCPU_RS2_OUT_ROW);
  }
  kcpu_free(rows);
}

KCPU_PREBUILT void kcpu_k_resize2d_f32(const float *x, float *y, int64_t planes, int64_t IH,
                                       int64_t IW, int64_t OH, int64_t OW, int64_t nth, int64_t ntw,
                                       const int64_t *hidx, const int64_t *hw, const int64_t *widx,
                                       const int64_t *ww, struct kcpu_pool *pool) {
  if (IW > KCPU_RS2_MAX_W || planes <= 0 || OH <= 0 || OW <= 0)
    return; /* the emitter never sends these */
  int64_t nh = OH * nth, nw = OW * ntw;
  float *wf = kcpu_alloc((nh + nw) * (int64_t)(sizeof(float) + sizeof(int32_t)));
  if (!wf)
    return; /* out of memory: the output is left unwritten, like any failed allocation here */
  int32_t *ix = (int32_t *)(wf + nh + nw);
  for (int64_t k = 0; k < nh; k++) {
    double w;
    memcpy(&w, &hw[k], sizeof w);
    wf[k] = (float)w;
    ix[k] = (int32_t)hidx[k];
  }
  for (int64_t k = 0; k < nw; k++) {
    double w;
    memcpy(&w, &ww[k], sizeof w);
    wf[nh + k] = (float)w;
    ix[nh + k] = (int32_t)widx[k];
  }
  kcpu_rs2 a = {.x = x,
                .y = y,
                .IH = IH,
                .IW = IW,
                .OH = OH,
                .OW = OW,
                .nth = nth,
                .ntw = ntw,
                .hidx = ix,
                .widx = ix + nh,
                .hw = wf,
                .ww = wf + nh};
  /* gathered elements (weighted 8: one at a time) plus blended ones */
  int64_t rows_first = OH * IW * nth + 8 * OH * OW * ntw;
  int64_t cols_first = 8 * IH * OW * ntw + OH * OW * nth;
  a.cols_first = cols_first < rows_first;
  /* blocks of output rows: whole planes where there are planes enough
   * for 8 tasks a thread (each input row then gathered once), else
   * smaller blocks, at least 8 rows so that the gathered rows are shared */
  int64_t want = 8 * kcpu_pool_threads(pool), per = (want + planes - 1) / planes;
  a.rb = (OH + per - 1) / per;
  a.rb = a.rb > 8 ? a.rb : 8;
  a.nrb = (OH + a.rb - 1) / a.rb;
  for (int64_t oh0 = 0; oh0 < OH; oh0 += a.rb) {
    int64_t lo, hi;
    kcpu_rs2_reach(&a, oh0, oh0 + a.rb < OH ? oh0 + a.rb : OH, &lo, &hi);
    a.maxrows = hi - lo + 1 > a.maxrows ? hi - lo + 1 : a.maxrows;
  }
  kcpu_parallel_for(pool, planes * a.nrb, kcpu_rs2_task, &a);
  kcpu_free(wf);
}
