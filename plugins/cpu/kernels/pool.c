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

static void kcpu_pool_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_pool_args *a = ctx;
  for (int64_t i = b; i < e; i++) {
    const float *x = a->X + i * a->H * a->W;
    float *y = a->Y + i * a->OH * a->OW;
    for (int64_t oh = 0; oh < a->OH; oh++)
      for (int64_t ow = 0; ow < a->OW; ow++) {
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

KCPU_PREBUILT void kcpu_k_pool2d(const float *X, float *Y, int64_t NC, int64_t H, int64_t W, int64_t OH,
                   int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh,
                   int64_t dw, int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t mode,
                   int64_t count_include_pad, struct kcpu_pool *pool) {
  kcpu_pool_args a = {X,  Y,  H,  W,  OH, OW, KH, KW,   sh,
                      sw, dh, dw, pt, pl, pb, pr, mode, count_include_pad};
  kcpu_parallel_for(pool, NC, kcpu_pool_fn, &a);
}
