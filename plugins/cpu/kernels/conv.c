/* plugins/cpu/kernels/conv.c: 2-D convolution (NCHW, f32). Pointwise
 * convolutions are plain GEMMs on the image; general ones are GEMMs whose B
 * matrix (im2col) is packed straight from the image by a custom packer, so
 * no column buffer is ever materialized; depthwise convolutions use a direct
 * loop vectorized along output rows. Bias and activation ride on the GEMM
 * epilogue. */
#include "gemm_impl.h"

#include <string.h>

typedef struct kcpu_conv_geo {
  const float *x; /* image of this (n, group) at its first channel */
  int64_t H, W, OW, KH, KW, sh, sw, dh, dw, pt, pl;
} kcpu_conv_geo;

/* B(k, p) with k = (c, kh, kw) and p = (oh, ow): the input pixel under
 * filter tap k for output pixel p, zero in the padding. A panel's pixels
 * are walked one output row at a time, so that each row splits into a
 * leading pad run, a valid run (a plain copy when the stride is 1) and a
 * trailing pad run, with no per-element bounds test. */
static void kcpu_pack_b_im2col(const kcpu_gemm_desc *d, float *dst, int64_t k0, int64_t kc,
                               int64_t n0, int64_t nc, int64_t NR) {
  const kcpu_conv_geo *g = d->bctx;
  int64_t khw = g->KH * g->KW, sw = g->sw;
  for (int64_t j = 0; j < nc; j += NR) {
    int64_t nr = nc - j < NR ? nc - j : NR;
    int64_t p0 = n0 + j, oh0 = p0 / g->OW, ow0 = p0 % g->OW;
    for (int64_t k = 0; k < kc; k++) {
      int64_t kk = k0 + k, c = kk / khw, r = kk % khw, kh = r / g->KW, kw = r % g->KW;
      const float *plane = g->x + c * g->H * g->W;
      float *out = dst + k * NR;
      int64_t off = kw * g->dw - g->pl;
      /* output columns whose input column is inside: lo <= ow < hi */
      int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
      int64_t hi = g->W - off <= 0 ? 0 : (g->W - off - 1) / sw + 1;
      if (hi > g->OW)
        hi = g->OW;
      int64_t q = 0, oh = oh0, ow = ow0;
      while (q < nr) {
        int64_t len = g->OW - ow < nr - q ? g->OW - ow : nr - q, end = ow + len;
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        float *o = out + q - ow; /* o[x] is the cell of output column x */
        if (ih < 0 || ih >= g->H || lo >= hi) {
          for (int64_t x = ow; x < end; x++)
            o[x] = 0.0f;
        } else {
          const float *row = plane + ih * g->W + off;
          int64_t a = ow > lo ? ow : lo, b = end < hi ? end : hi;
          for (int64_t x = ow; x < a && x < end; x++)
            o[x] = 0.0f;
          if (sw == 1) {
            if (b > a)
              memcpy(o + a, row + a, (size_t)(b - a) * sizeof(float));
          } else {
            for (int64_t x = a; x < b; x++)
              o[x] = row[x * sw];
          }
          for (int64_t x = b > ow ? b : ow; x < end; x++)
            o[x] = 0.0f;
        }
        q += len;
        ow = 0;
        oh++;
      }
      for (int64_t x = nr; x < NR; x++)
        out[x] = 0.0f;
    }
    dst += kc * NR;
  }
}

typedef struct kcpu_conv_args {
  const float *X, *Wt, *Wpk, *bias;
  float *Y;
  int64_t N, C, H, W, M, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, group, act, lanes;
} kcpu_conv_args;

static void kcpu_conv_one(const kcpu_conv_args *a, int64_t n, int64_t g, struct kcpu_pool *pool) {
  int64_t Cg = a->C / a->group, Mg = a->M / a->group, Kg = Cg * a->KH * a->KW;
  int64_t P = a->OH * a->OW;
  kcpu_conv_geo geo = {a->X + (n * a->C + g * Cg) * a->H * a->W,
                       a->H,
                       a->W,
                       a->OW,
                       a->KH,
                       a->KW,
                       a->sh,
                       a->sw,
                       a->dh,
                       a->dw,
                       a->pt,
                       a->pl};
  int pointwise = a->KH == 1 && a->KW == 1 && a->sh == 1 && a->sw == 1 && a->pt == 0 &&
                  a->pl == 0 && a->OH == a->H && a->OW == a->W;
  kcpu_gemm_desc d = {.M = Mg,
                      .N = P,
                      .K = Kg,
                      .alpha = 1.0f,
                      .A = a->Wt + g * Mg * Kg,
                      .lda = Kg,
                      .Apk = a->Wpk ? a->Wpk + g * kcpu_prepacked_size(Mg, Kg, kcpu_gemm_mr(a->lanes))
                                    : NULL,
                      .B = geo.x,
                      .ldb = a->H * a->W,
                      .pack_b = pointwise ? NULL : kcpu_pack_b_im2col,
                      .bctx = &geo,
                      .C = a->Y + (n * a->M + g * Mg) * P,
                      .ldc = P,
                      .bias_row = a->bias ? a->bias + g * Mg : NULL,
                      .act = a->act,
                      .lanes = a->lanes};
  kcpu_gemm_run(&d, pool);
}

static void kcpu_conv_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_conv_args *a = ctx;
  for (int64_t i = b; i < e; i++)
    kcpu_conv_one(a, i / a->group, i % a->group, NULL);
}

/* Depthwise: one filter per channel; each output row accumulates the taps
 * in (kh, kw) order over the valid column range. */
static void kcpu_dw_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_conv_args *a = ctx;
  for (int64_t i = b; i < e; i++) {
    int64_t c = i % a->C;
    const float *x = a->X + i * a->H * a->W, *w = a->Wt + c * a->KH * a->KW;
    float *y = a->Y + i * a->OH * a->OW;
    float b0 = a->bias ? a->bias[c] : 0.0f;
    for (int64_t oh = 0; oh < a->OH; oh++) {
      float *yr = y + oh * a->OW;
      for (int64_t ow = 0; ow < a->OW; ow++)
        yr[ow] = 0.0f;
      for (int64_t kh = 0; kh < a->KH; kh++) {
        int64_t ih = oh * a->sh - a->pt + kh * a->dh;
        if (ih < 0 || ih >= a->H)
          continue;
        const float *xr = x + ih * a->W;
        for (int64_t kw = 0; kw < a->KW; kw++) {
          float wv = w[kh * a->KW + kw];
          int64_t off = kw * a->dw - a->pl;
          /* valid ow: 0 <= ow*sw + off < W */
          int64_t lo = off >= 0 ? 0 : (-off + a->sw - 1) / a->sw;
          int64_t hi = a->W - off <= 0 ? 0 : (a->W - off - 1) / a->sw + 1;
          if (hi > a->OW)
            hi = a->OW;
          if (a->sw == 1) {
            const float *xs = xr + off;
            for (int64_t ow = lo; ow < hi; ow++)
              yr[ow] += wv * xs[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ow++)
              yr[ow] += wv * xr[ow * a->sw + off];
          }
        }
      }
      for (int64_t ow = 0; ow < a->OW; ow++) {
        float v = yr[ow] + b0;
        if (a->act == KCPU_ACT_RELU)
          v = v > 0.0f ? v : 0.0f;
        yr[ow] = v;
      }
    }
  }
}

/* Wpk: the filters prepacked per group (gemm_impl.h), or NULL. */
void kcpu_k_conv2d_ex(const float *X, const float *Wt, const float *Wpk, const float *bias,
                      float *Y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, int64_t OH,
                      int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh,
                      int64_t dw, int64_t pt, int64_t pl, int64_t group, int64_t act,
                      int64_t lanes, struct kcpu_pool *pool) {
  kcpu_conv_args a = {X,  Wt, Wpk, bias, Y,  N,  C,  H,  W,     M,   OH,   OW,
                      KH, KW, sh,  sw,   dh, dw, pt, pl, group, act, lanes};
  if (N <= 0 || M <= 0 || OH <= 0 || OW <= 0)
    return;
  if (group == C && M == C && group > 1) {
    kcpu_parallel_for(pool, N * C, kcpu_dw_fn, &a);
    return;
  }
  int64_t T = kcpu_pool_threads(pool), jobs = N * group;
  if (T > 1 && (jobs >= 2 * T || (jobs >= T && jobs % T == 0))) {
    kcpu_parallel_for(pool, jobs, kcpu_conv_fn, &a);
    return;
  }
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < group; g++)
      kcpu_conv_one(&a, n, g, pool);
}

void kcpu_k_conv2d(const float *X, const float *Wt, const float *bias, float *Y, int64_t N,
                   int64_t C, int64_t H, int64_t W, int64_t M, int64_t OH, int64_t OW, int64_t KH,
                   int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                   int64_t pl, int64_t group, int64_t act, int64_t lanes, struct kcpu_pool *pool) {
  kcpu_k_conv2d_ex(X, Wt, NULL, bias, Y, N, C, H, W, M, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl,
                   group, act, lanes, pool);
}
