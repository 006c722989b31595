/* plugins/cpu/kernels/conv_depthwise.c: depthwise 2-D convolution of small
 * planes (f32, NCHW), vectorized across channels.
 *
 * The row kernels of conv.c put 16 outputs of one row in a vector; a 7x7
 * plane (the last stage of MobileNets and EfficientNet) fills 7 of the 16
 * lanes and spends the rest of its time copying rows in and out. Here 16
 * channels share a vector instead: their planes are interleaved into a
 * zero-bordered [Hp][Wp][16] buffer, every output pixel is then KH*KW full
 * vector multiply-adds against the 16 channels' taps, and the [OH*OW][16]
 * result is written back plane by plane. No lane is wasted whatever the
 * plane's size, strides, dilations or pads. Taps are summed in (kh, kw)
 * order and the bias added last, as in the row kernels, and the epilogue
 * follows theirs: without a residual, Relu / Clip / HardSigmoid /
 * HardSwish in registers; with one, the residual and then the activation
 * over each finished plane; Swish and Gelu over each finished plane. */
#include "gemm_impl.h"
#include "kcpu_act.h"
#include "kcpu_transpose.h"

typedef kcpu_t16v kdw_v16;
typedef int32_t kdw_v16i __attribute__((vector_size(64)));

#define KDW_L 16
#define KDW_MAXK 49 /* taps per filter: up to 7 x 7 */

typedef struct kcpu_dws {
  const float *X, *Wt, *bias, *res;
  float *Y;
  int64_t C, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, act, Hp, Wp, nb;
  float act_a, act_b;
} kcpu_dws;

typedef float kdw_v16u __attribute__((vector_size(64), aligned(4), may_alias));


/* All OH x OW output pixels of the block, 8 at a time in flat order (a
 * step may span rows: each pixel has its own base, the taps are one
 * offset table): 8 independent chains of multiply-adds, enough to keep two
 * pipes of 4-cycle multiply-adds busy, sharing each tap's weight vector.
 * The last step is shifted back to end at the plane's last pixel (OH x OW
 * under 8: pixels past it repeat it); outputs computed twice get the
 * same bits. toff: the KH*KW tap offsets, in vectors. */
#define KDW_PX 8
static void kcpu_dws_plane(const kcpu_dws *a, const kdw_v16 *P, const kdw_v16 *wv,
                           const int64_t *toff, const kdw_v16 *bias, kdw_v16 *O) {
  int64_t OW = a->OW, OHW = a->OH * OW, khw = a->KH * a->KW;
  /* with a residual, it and the activation come once the plane is out */
  int64_t vact = a->res ? KCPU_ACT_NONE : a->act;
  kdw_v16 z = {0};
  for (int64_t p0 = 0; p0 < OHW; p0 += KDW_PX) {
    int64_t q0 = p0 + KDW_PX <= OHW ? p0 : (OHW >= KDW_PX ? OHW - KDW_PX : 0);
    int64_t q[KDW_PX];
    const kdw_v16 *b[KDW_PX];
    for (int64_t i = 0; i < KDW_PX; i++) {
      q[i] = q0 + i < OHW ? q0 + i : OHW - 1;
      b[i] = P + q[i] / OW * a->sh * a->Wp + q[i] % OW * a->sw;
    }
    kdw_v16 c0 = z, c1 = z, c2 = z, c3 = z, c4 = z, c5 = z, c6 = z, c7 = z;
    for (int64_t t = 0; t < khw; t++) {
      kdw_v16 w = wv[t];
      int64_t o = toff[t];
      c0 += b[0][o] * w;
      c1 += b[1][o] * w;
      c2 += b[2][o] * w;
      c3 += b[3][o] * w;
      c4 += b[4][o] * w;
      c5 += b[5][o] * w;
      c6 += b[6][o] * w;
      c7 += b[7][o] * w;
    }
    kdw_v16 bv = *bias,
            r[KDW_PX] = {c0 + bv, c1 + bv, c2 + bv, c3 + bv, c4 + bv, c5 + bv, c6 + bv, c7 + bv};
    for (int64_t i = 0; i < KDW_PX; i++) {
      kdw_v16 v = r[i];
      if (vact == KCPU_ACT_RELU) /* keep what is not below 0 (NaN and -0 included) */
        v = (kdw_v16)((kdw_v16i)v & ~(kdw_v16i)(v < z));
      KCPU_ACT_VEC_HARD(kdw_v16, kdw_v16i, v, vact, a->act_a, a->act_b);
      O[q[i]] = v;
    }
  }
}

/* Residual and activation over channel c's finished plane of image n;
 * in_regs: the activations kcpu_act1 covers were applied in registers
 * already (only where there is no residual). */
static void kcpu_dws_epilogue(const kcpu_dws *a, int64_t n, int64_t c, int in_regs) {
  int64_t OHW = a->OH * a->OW;
  float *y = a->Y + (n * a->C + c) * OHW;
  if (!a->res && !in_regs) {
    for (int64_t p = 0; p < OHW; p++)
      y[p] = kcpu_act1(a->act, a->act_a, a->act_b, y[p]);
  } else if (a->res) {
    const float *r = a->res + (n * a->C + c) * OHW;
    for (int64_t p = 0; p < OHW; p++)
      y[p] = kcpu_act1(a->act, a->act_a, a->act_b, y[p] + r[p]);
  }
  if (a->act == KCPU_ACT_SWISH)
    kcpu_act_swish_row(a->act_a, y, OHW);
  else if (a->act == KCPU_ACT_GELU)
    for (int64_t p = 0; p < OHW; p++)
      y[p] = kcpu_m_gelu(y[p]);
}

/* Without memory for the buffers: the same sums, one output at a time
 * (the activations in kcpu_dws_epilogue, always after the plane). */
static void kcpu_dws_plain(const kcpu_dws *a, int64_t b, int64_t e) {
  for (int64_t t = b; t < e; t++) {
    int64_t n = t / a->nb, c0 = t % a->nb * KDW_L;
    for (int64_t c = c0; c < a->C && c < c0 + KDW_L; c++) {
      const float *x = a->X + (n * a->C + c) * a->H * a->W, *w = a->Wt + c * a->KH * a->KW;
      float *y = a->Y + (n * a->C + c) * a->OH * a->OW;
      for (int64_t oh = 0; oh < a->OH; oh++)
        for (int64_t ow = 0; ow < a->OW; ow++) {
          float v = 0.0f;
          for (int64_t kh = 0; kh < a->KH; kh++)
            for (int64_t kw = 0; kw < a->KW; kw++) {
              int64_t ih = oh * a->sh + kh * a->dh - a->pt, iw = ow * a->sw + kw * a->dw - a->pl;
              float xv = ih >= 0 && ih < a->H && iw >= 0 && iw < a->W ? x[ih * a->W + iw] : 0.0f;
              v += xv * w[kh * a->KW + kw];
            }
          v += a->bias ? a->bias[c] : 0.0f;
          y[oh * a->OW + ow] = v;
        }
      kcpu_dws_epilogue(a, n, c, 0);
    }
  }
}

/* Tasks [b, e): (image, block of 16 channels). */
static void kcpu_dws_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_dws *a = ctx;
  int64_t H = a->H, W = a->W, Wp = a->Wp, khw = a->KH * a->KW, OHW = a->OH * a->OW;
  int64_t np = a->Hp * Wp;
  kdw_v16 *P = kcpu_alloc((np + OHW + khw) * (int64_t)sizeof(kdw_v16));
  int64_t toff[KDW_MAXK];
  if (!P) {
    kcpu_dws_plain(a, b, e);
    return;
  }
  kdw_v16 *O = P + np, *wv = O + OHW;
  float *Pf = (float *)P;
  for (int64_t i = 0; i < np * KDW_L; i++)
    Pf[i] = 0.0f;
  for (int64_t kh = 0; kh < a->KH; kh++)
    for (int64_t kw = 0; kw < a->KW; kw++)
      toff[kh * a->KW + kw] = kh * a->dh * Wp + kw * a->dw;
  for (int64_t t = b; t < e; t++) {
    int64_t n = t / a->nb, c0 = t % a->nb * KDW_L;
    int64_t nl = a->C - c0 < KDW_L ? a->C - c0 : KDW_L;
    float *wf = (float *)wv, bias[KDW_L] = {0};
    for (int64_t k = 0; k < khw; k++)
      for (int64_t l = 0; l < KDW_L; l++)
        wf[k * KDW_L + l] = l < nl ? a->Wt[(c0 + l) * khw + k] : 0.0f;
    for (int64_t l = 0; l < nl && a->bias; l++)
      bias[l] = a->bias[c0 + l];
    kdw_v16 bv;
    __builtin_memcpy(&bv, bias, sizeof bv);
    /* interleave the block's planes, 16 pixels of 16 channels at a time
     * through a register transpose; the border stays zero from the start
     * (every task writes the same interior pixels). A last group of fewer
     * than 16 pixels goes element by element, so nothing past a plane is
     * read. */
    const float *xb = a->X + (n * a->C + c0) * H * W;
    int64_t HW = H * W, p = 0, pr = a->pt, pc = a->pl; /* pixel p's padded place */
    for (; p + KDW_L <= HW; p += KDW_L) {
      kdw_v16 r[KDW_L];
      KCPU_UNROLL16 for (int64_t l = 0; l < KDW_L; l++) {
        r[l] = l < nl ? (kdw_v16) * (const kdw_v16u *)(xb + l * HW + p) : (kdw_v16){0};
      }
      kcpu_transpose16(r);
      KCPU_UNROLL16 for (int64_t j = 0; j < KDW_L; j++) {
        if (pr < a->Hp && pc < Wp)
          P[pr * Wp + pc] = r[j];
        if (++pc == a->pl + W) /* no division per pixel */
          pc = a->pl, pr++;
      }
    }
    for (; p < HW; p++) {
      int64_t pr = p / W + a->pt, pc = p % W + a->pl;
      if (pr < a->Hp && pc < Wp)
        for (int64_t l = 0; l < KDW_L; l++)
          Pf[(pr * Wp + pc) * KDW_L + l] = l < nl ? xb[l * HW + p] : 0.0f;
    }
    kcpu_dws_plane(a, P, wv, toff, &bv, O);
    /* and back to planes, 16 pixels at a time likewise */
    float *yb = a->Y + (n * a->C + c0) * OHW;
    for (p = 0; p + KDW_L <= OHW; p += KDW_L) {
      kdw_v16 r[KDW_L];
      KCPU_UNROLL16 for (int64_t j = 0; j < KDW_L; j++) {
        r[j] = O[p + j];
      }
      kcpu_transpose16(r);
      KCPU_UNROLL16 for (int64_t l = 0; l < KDW_L; l++) {
        if (l < nl)
          *(kdw_v16u *)(yb + l * OHW + p) = r[l];
      }
    }
    const float *Of = (const float *)O;
    for (; p < OHW; p++)
      for (int64_t l = 0; l < nl; l++)
        yb[l * OHW + p] = Of[p * KDW_L + l];
    if (a->res || a->act == KCPU_ACT_SWISH || a->act == KCPU_ACT_GELU)
      for (int64_t l = 0; l < nl; l++)
        kcpu_dws_epilogue(a, n, c0 + l, 1);
  }
  kcpu_free(P);
}

int kcpu_dw_small(const float *X, const float *Wt, const float *bias, const float *res, float *Y,
                  int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t KH,
                  int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                  int64_t pl, int64_t act, float act_a, float act_b, struct kcpu_pool *pool) {
  if (OW >= KDW_L || KH * KW > KDW_MAXK || pt < 0 || pl < 0)
    return 0;
  kcpu_dws a = {.X = X, .Wt = Wt, .bias = bias, .res = res, .Y = Y, .C = C, .H = H, .W = W,
                .OH = OH, .OW = OW, .KH = KH, .KW = KW, .sh = sh, .sw = sw, .dh = dh, .dw = dw,
                .pt = pt, .pl = pl, .act = act, .nb = (C + KDW_L - 1) / KDW_L, .act_a = act_a,
                .act_b = act_b};
  /* the padded extent the windows reach (the input beyond it is unused) */
  a.Hp = (OH - 1) * sh + (KH - 1) * dh + 1;
  a.Wp = (OW - 1) * sw + (KW - 1) * dw + 1;
  /* too large a buffer: the row kernels (this is for small planes) */
  if ((a.Hp * a.Wp + OH * OW + KH * KW) * KDW_L > (1 << 20))
    return 0;
  kcpu_parallel_for(pool, N * a.nb, kcpu_dws_fn, &a);
  return 1;
}
