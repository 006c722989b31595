/* plugins/cpu/kernels/pool.c: MaxPool and AveragePool on [NC, H, W] f32.
 * Windows are clipped to the input (output sizes already include ceil_mode
 * and padding); AveragePool with count_include_pad counts pad cells inside
 * the declared pads but not cells past them. Max propagates NaN. */
#include "kcpu_runtime.h"

#include <math.h>

typedef struct kcpu_pool_args {
  const float *X;
  float *Y;
  int64_t H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, mode, cip;
} kcpu_pool_args;

/* The outputs [ow0, ow1) of row oh whose windows lie inside the row
 * horizontally (every kw tap in bounds): taps accumulated a whole kernel
 * row at a time across the outputs, so the innermost loop runs over ow
 * (stride sw), with no bounds checks, and vectorizes. Max uses a select
 * that keeps the first NaN (as the edge code does); average divides by the
 * window's rows in bounds (or within the pads, count_include_pad) times KW. */
static void kcpu_pool_interior(const kcpu_pool_args *a, const float *x, float *y, int64_t oh,
                               int64_t ow0, int64_t ow1) {
  int64_t rows = 0, padrows = 0;
  for (int64_t ow = ow0; ow < ow1; ow++)
    y[ow] = a->mode == 0 ? -INFINITY : 0.0f;
  for (int64_t kh = 0; kh < a->KH; kh++) {
    int64_t ih = oh * a->sh - a->pt + kh * a->dh;
    padrows += ih >= -a->pt && ih < a->H + a->pb;
    if (ih < 0 || ih >= a->H)
      continue;
    rows++;
    for (int64_t kw = 0; kw < a->KW; kw++) {
      const float *xr = x + ih * a->W + kw * a->dw - a->pl;
      if (a->mode == 0) {
        for (int64_t ow = ow0; ow < ow1; ow++) {
          float v = xr[ow * a->sw], m = y[ow];
          y[ow] = (v > m || v != v) && m == m ? v : m;
        }
      } else {
        for (int64_t ow = ow0; ow < ow1; ow++)
          y[ow] += xr[ow * a->sw];
      }
    }
  }
  if (a->mode != 0) {
    int64_t div = (a->cip ? padrows : rows) * a->KW;
    float inv = div ? 1.0f / (float)div : NAN;
    for (int64_t ow = ow0; ow < ow1; ow++)
      y[ow] = div ? y[ow] * inv : NAN;
  }
}

static void kcpu_pool_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_pool_args *a = ctx;
  /* Outputs whose every kw tap is inside the row: iw = ow*sw - pl + kw*dw
   * in [0, W) for kw = 0 and kw = KW-1. */
  int64_t ow0 = a->sw > 0 ? (a->pl + a->sw - 1) / a->sw : a->OW;
  int64_t last = a->W - 1 + a->pl - (a->KW - 1) * a->dw; /* ow*sw <= last */
  int64_t ow1 = last < 0 || a->sw <= 0 ? 0 : last / a->sw + 1;
  ow0 = ow0 > a->OW ? a->OW : ow0;
  ow1 = ow1 > a->OW ? a->OW : ow1 < ow0 ? ow0 : ow1;
  for (int64_t i = b; i < e; i++) {
    const float *x = a->X + i * a->H * a->W;
    float *y = a->Y + i * a->OH * a->OW;
    for (int64_t oh = 0; oh < a->OH; oh++) {
      if (ow1 > ow0)
        kcpu_pool_interior(a, x, y + oh * a->OW, oh, ow0, ow1);
      for (int64_t ow = 0; ow < a->OW; ow++) {
        if (ow == ow0 && ow1 > ow0)
          ow = ow1; /* done above */
        if (ow >= a->OW)
          break;
        float mx = -INFINITY, sum = 0.0f;
        int64_t cnt = 0, padcnt = 0;
        for (int64_t kh = 0; kh < a->KH; kh++) {
          int64_t ih = oh * a->sh - a->pt + kh * a->dh;
          int in_h = ih >= 0 && ih < a->H;
          int pad_h = ih >= -a->pt && ih < a->H + a->pb;
          for (int64_t kw = 0; kw < a->KW; kw++) {
            int64_t iw = ow * a->sw - a->pl + kw * a->dw;
            if (in_h && iw >= 0 && iw < a->W) {
              float v = x[ih * a->W + iw];
              if (v > mx || (isnan(v) && !isnan(mx)))
                mx = v;
              sum += v;
              cnt++;
            } else if (pad_h && iw >= -a->pl && iw < a->W + a->pr) {
              padcnt++;
            }
          }
        }
        float r;
        if (a->mode == 0) {
          r = mx;
        } else {
          int64_t div = a->cip ? cnt + padcnt : cnt;
          r = div ? sum / (float)div : NAN;
        }
        y[oh * a->OW + ow] = r;
      }
    }
  }
}

KCPU_PREBUILT void kcpu_k_pool2d(const float *X, float *Y, int64_t NC, int64_t H, int64_t W, int64_t OH,
                   int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh,
                   int64_t dw, int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t mode,
                   int64_t count_include_pad, struct kcpu_pool *pool) {
  kcpu_pool_args a = {X,  Y,  H,  W,  OH, OW, KH, KW,   sh,
                      sw, dh, dw, pt, pl, pb, pr, mode, count_include_pad};
  kcpu_parallel_for(pool, NC, kcpu_pool_fn, &a);
}
