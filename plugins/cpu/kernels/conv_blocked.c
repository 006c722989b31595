/* plugins/cpu/kernels/conv_blocked.c: 2-D convolution into the
 * channel-blocked layout (conv_blocked.h), group 1, from a blocked or a
 * plain input; the depthwise case is conv_blocked_dw.c's. */
#include "conv_blocked.h"
#include "kcpu_act.h"

/* One output element: the plain (obviously correct) loop. */
static float kcpu_convb_one(const float *X, int64_t x_blocked, const float *Wpk, int64_t n,
                            int64_t m, int64_t oh, int64_t ow, int64_t C, int64_t H, int64_t W,
                            int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                            int64_t pt, int64_t pl) {
  int64_t Cb = (C + KCPU_CB - 1) / KCPU_CB, mb = m / KCPU_CB, ml = m % KCPU_CB;
  float acc = 0.0f;
  for (int64_t c = 0; c < C; c++)
    for (int64_t kh = 0; kh < KH; kh++) {
      int64_t ih = oh * sh - pt + kh * dh;
      if (ih < 0 || ih >= H)
        continue;
      for (int64_t kw = 0; kw < KW; kw++) {
        int64_t iw = ow * sw - pl + kw * dw;
        if (iw < 0 || iw >= W)
          continue;
        float x = x_blocked ? X[(((n * Cb + c / KCPU_CB) * H + ih) * W + iw) * KCPU_CB +
                                c % KCPU_CB]
                            : X[((n * C + c) * H + ih) * W + iw];
        acc += x * Wpk[(((mb * C + c) * KH + kh) * KW + kw) * KCPU_CB + ml];
      }
    }
  return acc;
}

KCPU_PREBUILT void kcpu_k_conv2d_blocked(const float *X, int64_t x_blocked, const float *Wt,
                                         const float *Wpk, const float *bias, const float *res,
                                         float *Y, int64_t N, int64_t C, int64_t H, int64_t W,
                                         int64_t M, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                         int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                         int64_t pt, int64_t pl, int64_t depthwise, int64_t act,
                                         float act_a, float act_b, struct kcpu_pool *pool) {
  float *own = NULL;
  if (!Wpk) {
    own = kcpu_alloc(kcpu_convb_packed_size(M, C, KH, KW, depthwise, x_blocked) *
                     (int64_t)sizeof(float));
    if (!own)
      return; /* out of memory: the output is left unwritten, like any failed allocation here */
    kcpu_convb_pack(Wt, own, M, C, KH, KW, depthwise, x_blocked);
    Wpk = own;
  }
  if (depthwise) {
    kcpu_convb_depthwise(X, Wpk, bias, res, Y, N, C, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl,
                         act, act_a, act_b, pool);
    kcpu_free(own);
    return;
  }
  int64_t Mb = (M + KCPU_CB - 1) / KCPU_CB;
  for (int64_t n = 0; n < N; n++)
    for (int64_t mb = 0; mb < Mb; mb++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++)
          for (int64_t l = 0; l < KCPU_CB; l++) {
            int64_t m = mb * KCPU_CB + l, o = (((n * Mb + mb) * OH + oh) * OW + ow) * KCPU_CB + l;
            if (m >= M) {
              Y[o] = 0.0f;
              continue;
            }
            float v = kcpu_convb_one(X, x_blocked, Wpk, n, m, oh, ow, C, H, W, KH, KW, sh, sw, dh,
                                     dw, pt, pl);
            if (bias)
              v += bias[m];
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
  kcpu_free(own);
}
