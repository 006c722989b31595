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

/* The separable f32 path: y[p, oh, ow] = sum_j ww[ow, j] * (sum_i wh[oh, i]
 * * x[p, hidx[oh, i], widx[ow, j]]), each output row from one blended input
 * row (contiguous, vectorized). Zero weights are skipped, as the generic
 * path skips them, so an inf or NaN outside the taps stays out. Taps must
 * all be inside the input (no extrapolation). */
typedef struct kcpu_rs2 {
  const float *x;
  float *y;
  int64_t IH, IW, OH, OW, nth, ntw;
  const int64_t *hidx, *widx, *hw, *ww;
} kcpu_rs2;

static double kcpu_rs2_w(const int64_t *bits, int64_t k) {
  double w;
  memcpy(&w, &bits[k], sizeof w);
  return w;
}

static void kcpu_rs2_rows(void *ctx, int64_t b, int64_t e) {
  const kcpu_rs2 *a = ctx;
  int64_t IW = a->IW, OW = a->OW;
  float tmp[KCPU_RS2_MAX_W];
  for (int64_t r = b; r < e; r++) {
    int64_t plane = r / a->OH, oh = r % a->OH;
    const float *xp = a->x + plane * a->IH * IW;
    float *yp = a->y + plane * a->OH * OW + oh * OW;
    for (int64_t w = 0; w < IW; w++)
      tmp[w] = 0.0f;
    for (int64_t t = 0; t < a->nth; t++) {
      float wt = (float)kcpu_rs2_w(a->hw, oh * a->nth + t);
      const float *row = xp + a->hidx[oh * a->nth + t] * IW;
      if (wt != 0.0f)
        for (int64_t w = 0; w < IW; w++)
          tmp[w] += wt * row[w];
    }
    for (int64_t ow = 0; ow < OW; ow++) {
      float acc = 0.0f;
      for (int64_t t = 0; t < a->ntw; t++) {
        float wt = (float)kcpu_rs2_w(a->ww, ow * a->ntw + t);
        if (wt != 0.0f)
          acc += wt * tmp[a->widx[ow * a->ntw + t]];
      }
      yp[ow] = acc;
    }
  }
}

KCPU_PREBUILT void kcpu_k_resize2d_f32(const float *x, float *y, int64_t planes, int64_t IH,
                                       int64_t IW, int64_t OH, int64_t OW, int64_t nth,
                                       int64_t ntw, const int64_t *hidx, const int64_t *hw,
                                       const int64_t *widx, const int64_t *ww,
                                       struct kcpu_pool *pool) {
  kcpu_rs2 a = {x, y, IH, IW, OH, OW, nth, ntw, hidx, widx, hw, ww};
  if (IW > KCPU_RS2_MAX_W)
    return; /* the emitter never sends these */
  kcpu_parallel_for(pool, planes * OH, kcpu_rs2_rows, &a);
}
