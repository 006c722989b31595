/* plugins/cpu/kernels/conv_blocked_dw.c: depthwise 2-D convolution
 * (group = C = M) on the channel-blocked layout (conv_blocked.h): the 16
 * channels of a block are one vector, so every plane size and stride runs
 * at full width. */
#include "conv_blocked.h"
#include "kcpu_act.h"

void kcpu_convb_depthwise(const float *X, const float *Wpk, const float *bias, const float *res,
                          float *Y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH,
                          int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh,
                          int64_t dw, int64_t pt, int64_t pl, int64_t act, float act_a,
                          float act_b, struct kcpu_pool *pool) {
  (void)pool;
  int64_t Cb = (C + KCPU_CB - 1) / KCPU_CB;
  for (int64_t n = 0; n < N; n++)
    for (int64_t cb = 0; cb < Cb; cb++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++)
          for (int64_t l = 0; l < KCPU_CB; l++) {
            int64_t c = cb * KCPU_CB + l, o = (((n * Cb + cb) * OH + oh) * OW + ow) * KCPU_CB + l;
            if (c >= C) {
              Y[o] = 0.0f;
              continue;
            }
            float v = 0.0f;
            for (int64_t kh = 0; kh < KH; kh++) {
              int64_t ih = oh * sh - pt + kh * dh;
              if (ih < 0 || ih >= H)
                continue;
              for (int64_t kw = 0; kw < KW; kw++) {
                int64_t iw = ow * sw - pl + kw * dw;
                if (iw < 0 || iw >= W)
                  continue;
                v += X[(((n * Cb + cb) * H + ih) * W + iw) * KCPU_CB + l] *
                     Wpk[((cb * KH + kh) * KW + kw) * KCPU_CB + l];
              }
            }
            if (bias)
              v += bias[c];
            if (res)
              v += res[o];
            if (act == KCPU_ACT_GELU)
              v = kcpu_m_gelu(v);
            else if (act == KCPU_ACT_SWISH)
              v = v * kcpu_m_sigmoid(act_a * v);
            else
              v = kcpu_act1(act, act_a, act_b, v);
            Y[o] = v;
          }
}
