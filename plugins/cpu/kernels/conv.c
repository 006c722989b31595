/* plugins/cpu/kernels/conv.c: 2-D convolution (NCHW, f32). Pointwise
 * convolutions are plain GEMMs on the image; general ones are GEMMs whose B
 * matrix (im2col) is packed straight from the image by a custom packer, so
 * no column buffer is ever materialized (on AVX-512, with prepacked
 * filters, they skip even that: conv_direct.c); depthwise convolutions use
 * a direct loop vectorized along output rows (planes narrower than a
 * vector: across channels, conv_depthwise.c). Bias and activation ride on
 * the GEMM epilogue (a fused residual too), and on the depthwise kernels'
 * last step over each row. */
#include "gemm_impl.h"
#include "kcpu_act.h"

#include <string.h>

typedef float kcpu_v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef float kcpu_v4u __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t kcpu_v16m __attribute__((vector_size(64))); /* comparison masks */

/* B(k, p) with k = (c, kh, kw) and p = (oh, ow): the input pixel under
 * filter tap k for output pixel p, zero in the padding. Everything that
 * needs a division is computed once per call: per tap k (its plane, row
 * offset and the output columns whose input column is inside), and per
 * panel its runs of pixels within one output row. Each (tap, run) is then
 * a leading pad, a valid part (a plain copy when the stride is 1) and a
 * trailing pad, with no per-element bounds test. */
typedef struct kcpu_im2col_tap {
  int64_t plane, khd, off, lo, hi;
} kcpu_im2col_tap;

static void kcpu_pack_b_im2col(const kcpu_gemm_desc *d, float *dst, int64_t k0, int64_t kc,
                               int64_t n0, int64_t nc, int64_t NR) {
  const kcpu_conv_geo *g = d->bctx;
  int64_t khw = g->KH * g->KW, sw = g->sw;
  kcpu_im2col_tap taps[KCPU_KC];
  if (kc > KCPU_KC)
    return; /* the engine never asks for more */
  for (int64_t k = 0; k < kc; k++) {
    int64_t kk = k0 + k, c = kk / khw, r = kk % khw, kh = r / g->KW, kw = r % g->KW;
    int64_t off = kw * g->dw - g->pl;
    int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
    int64_t hi = g->W - off <= 0 ? 0 : (g->W - off - 1) / sw + 1;
    taps[k] =
        (kcpu_im2col_tap){c * g->H * g->W, kh * g->dh - g->pt, off, lo, hi > g->OW ? g->OW : hi};
  }
  int64_t run_oh[KCPU_NR_MAX + 1], run_ow[KCPU_NR_MAX + 1], run_len[KCPU_NR_MAX + 1];
  if (NR > KCPU_NR_MAX)
    return;
  for (int64_t j = 0; j < nc; j += NR) {
    int64_t nr = nc - j < NR ? nc - j : NR, nrun = 0;
    int64_t p0 = n0 + j, oh = p0 / g->OW, ow = p0 % g->OW;
    for (int64_t q = 0; q < nr; nrun++) {
      int64_t len = g->OW - ow < nr - q ? g->OW - ow : nr - q;
      run_oh[nrun] = oh;
      run_ow[nrun] = ow;
      run_len[nrun] = len;
      q += len;
      ow = 0;
      oh++;
    }
    for (int64_t k = 0; k < kc; k++) {
      const kcpu_im2col_tap *t = &taps[k];
      float *o = dst + k * NR;
      for (int64_t u = 0; u < nrun; u++) {
        int64_t ow0 = run_ow[u], end = ow0 + run_len[u];
        int64_t ih = run_oh[u] * g->sh + t->khd;
        float *oo = o - ow0; /* oo[x] is the cell of output column x */
        o += run_len[u];
        if (ih < 0 || ih >= g->H || t->lo >= t->hi) {
          for (int64_t x = ow0; x < end; x++)
            oo[x] = 0.0f;
          continue;
        }
        const float *row = g->x + t->plane + ih * g->W + t->off;
        int64_t a = ow0 > t->lo ? ow0 : t->lo, b = end < t->hi ? end : t->hi;
        for (int64_t x = ow0; x < a && x < end; x++)
          oo[x] = 0.0f;
        if (sw == 1) {
          /* runs are short (a few dozen floats): copied inline */
          int64_t x = a;
          for (; x + 16 <= b; x += 16)
            *(kcpu_v16u *)(oo + x) = *(const kcpu_v16u *)(row + x);
          for (; x + 4 <= b; x += 4)
            *(kcpu_v4u *)(oo + x) = *(const kcpu_v4u *)(row + x);
          for (; x < b; x++)
            oo[x] = row[x];
        } else {
          for (int64_t x = a; x < b; x++)
            oo[x] = row[x * sw];
        }
        for (int64_t x = b > ow0 ? b : ow0; x < end; x++)
          oo[x] = 0.0f;
      }
      for (int64_t x = nr; x < NR; x++)
        dst[k * NR + x] = 0.0f;
    }
    dst += kc * NR;
  }
}

typedef struct kcpu_conv_args {
  const float *X, *Wt, *Wpk, *bias, *res; /* res: the fused residual, Y's shape, or NULL */
  float *Y;
  int64_t N, C, H, W, M, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, group, act, lanes;
  float act_a, act_b;
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
  kcpu_gemm_desc d = {
      .M = Mg,
      .N = P,
      .K = Kg,
      .alpha = 1.0f,
      .A = a->Wpk ? NULL : a->Wt + g * Mg * Kg, /* Wt may be NULL given Wpk */
      .lda = Kg,
      .Apk = a->Wpk ? a->Wpk + g * kcpu_prepacked_size(Mg, Kg, kcpu_gemm_mr(a->lanes)) : NULL,
      .B = geo.x,
      .ldb = a->H * a->W,
      .pack_b = pointwise ? NULL : kcpu_pack_b_im2col,
      .bctx = &geo,
      .C = a->Y + (n * a->M + g * Mg) * P,
      .ldc = P,
      .bias_row = a->bias ? a->bias + g * Mg : NULL,
      .res = a->res ? a->res + (n * a->M + g * Mg) * P : NULL,
      .ldr = P,
      .act = a->act,
      .act_a = a->act_a,
      .act_b = a->act_b,
      .lanes = a->lanes};
  if (!pointwise && kcpu_conv_direct(&d, &geo, pool))
    return;
  kcpu_gemm_run(&d, pool);
}

static void kcpu_conv_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_conv_args *a = ctx;
  for (int64_t i = b; i < e; i++)
    kcpu_conv_one(a, i / a->group, i % a->group, NULL);
}

/* The depthwise kernels' activations that need a math function, over a
 * channel's finished output plane, still in cache (a row is too short for
 * the vectorized loop: its tail would run scalar); kcpu_act1 and the
 * vector form do the rest. */
static inline void kcpu_dw_act_plane(const kcpu_conv_args *a, float *y, int64_t n) {
  if (a->act == KCPU_ACT_SWISH) {
    kcpu_act_swish_row(a->act_a, y, n);
  } else if (a->act == KCPU_ACT_GELU) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) /* whole vectors, as kcpu_act_swish_row */
      for (int64_t j = i; j < i + 16; j++)
        y[j] = kcpu_m_gelu(y[j]);
    for (; i < n; i++)
      y[i] = kcpu_m_gelu(y[i]);
  }
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
      const float *rr = a->res ? a->res + i * a->OH * a->OW + oh * a->OW : NULL;
      for (int64_t ow = 0; ow < a->OW; ow++) {
        float v = yr[ow] + b0;
        if (rr)
          v += rr[ow];
        yr[ow] = kcpu_act1(a->act, a->act_a, a->act_b, v);
      }
    }
    kcpu_dw_act_plane(a, y, a->OH * a->OW);
  }
}

/* Depthwise KH x KW (up to 7 x 7; MobileNetV3 and EfficientNet use 5 x 5),
 * dilation 1, stride 1 or 2: each channel is first copied into a
 * zero-bordered plane (stride 2: split into even and odd columns), so that
 * every output row is KH*KW contiguous, unconditional multiply-adds per
 * element. Rows are computed 16 outputs at a time in vector registers
 * over a plane padded to a multiple of 16 columns, so a 7, 14 or 28 wide
 * row runs in vector code rather than in a scalar remainder loop; the
 * border is zeroed once per task and each channel copies only its valid
 * ranges. Taps are summed in (kh, kw) order and the bias added last, as in
 * kcpu_dw_fn. */
#define KCPU_DW_V 16
#define KCPU_DW_MAXK 7
/* The row copies below are a few dozen floats: as memmove / memset calls
 * (clang's loop idioms) the calls cost more than the copies. */
#ifdef __clang__
#define KCPU_NO_MEM_CALLS __attribute__((no_builtin("memcpy", "memmove", "memset")))
#else
#define KCPU_NO_MEM_CALLS
#endif
KCPU_NO_MEM_CALLS static inline void kcpu_dwk_body(const kcpu_conv_args *a, int64_t b, int64_t e,
                                                   int64_t KH, int64_t KW, float *buf) {
  int64_t s = a->sh, OW = a->OW, OH = a->OH, W = a->W;
  int64_t OWp = (OW + KCPU_DW_V - 1) / KCPU_DW_V * KCPU_DW_V;
  int64_t Hp = (OH - 1) * s + KH, Wh = OWp + (KW - 1) / s;
  float *row_out = buf + Hp * s * Wh;
  /* the border is the same for every channel: zero it once */
  for (int64_t j = 0; j < Hp * s * Wh; j++)
    buf[j] = 0.0f;
  for (int64_t i = b; i < e; i++) {
    int64_t c = i % a->C;
    const float *x = a->X + i * a->H * W, *w = a->Wt + c * KH * KW;
    float *y = a->Y + i * OH * OW;
    float b0 = a->bias ? a->bias[c] : 0.0f;
    /* phase p of padded row r: column j holds input column (j*s + p) - pl */
    for (int64_t r = 0; r < Hp; r++) {
      int64_t ih = r - a->pt;
      if (ih < 0 || ih >= a->H)
        continue; /* a zero row */
      for (int64_t p = 0; p < s; p++) {
        float *dst = buf + (r * s + p) * Wh;
        /* valid j: 0 <= j*s + p - pl < W */
        int64_t q = a->pl - p, lo = q <= 0 ? 0 : (q + s - 1) / s;
        int64_t hi = W + q <= 0 ? 0 : (W + q - 1) / s + 1;
        if (hi > Wh)
          hi = Wh;
        if (lo > hi)
          lo = hi;
        const float *xr = x + ih * W - q;
        if (s == 1) {
          for (int64_t j = lo; j < hi; j++)
            dst[j] = xr[j];
        } else {
          for (int64_t j = lo; j < hi; j++)
            dst[j] = xr[j * 2];
        }
      }
    }
    /* with a residual, it and the activation come once the row is out:
     * the padded row's last vector would read past the residual's plane */
    int64_t vact = a->res ? KCPU_ACT_NONE : a->act;
    int relu = vact == KCPU_ACT_RELU;
    for (int64_t oh = 0; oh < OH; oh++) {
      /* tap (kh, kw) of output ow is padded (oh*s+kh, ow*s+kw): phase kw % s,
       * column ow + kw / s */
      const float *tap[KCPU_DW_MAXK * KCPU_DW_MAXK];
      for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = 0; kw < KW; kw++)
          tap[kh * KW + kw] = buf + ((oh * s + kh) * s + kw % s) * Wh + kw / s;
      float *yr = OWp == OW ? y + oh * OW : row_out;
      for (int64_t o = 0; o < OWp; o += KCPU_DW_V) {
        kcpu_v16u v = w[0] * *(const kcpu_v16u *)(tap[0] + o);
        for (int64_t t = 1; t < KH * KW; t++)
          v += w[t] * *(const kcpu_v16u *)(tap[t] + o);
        v += b0;
        if (relu) /* keep what is not below 0 (NaN and -0 included), as kcpu_dw_fn */
          v = (kcpu_v16u)((kcpu_v16m)v & ~(kcpu_v16m)(v < 0.0f));
        KCPU_ACT_VEC_HARD(kcpu_v16u, kcpu_v16m, v, vact, a->act_a, a->act_b);
        *(kcpu_v16u *)(yr + o) = v;
      }
      if (yr == row_out)
        for (int64_t j = 0; j < OW; j++)
          y[oh * OW + j] = row_out[j];
      if (a->res) {
        const float *rr = a->res + i * OH * OW + oh * OW;
        float *yo = y + oh * OW;
        for (int64_t j = 0; j < OW; j++)
          yo[j] = kcpu_act1(a->act, a->act_a, a->act_b, yo[j] + rr[j]);
      }
    }
    kcpu_dw_act_plane(a, y, OH * OW);
  }
}

static void kcpu_dwk_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_conv_args *a = ctx;
  int64_t s = a->sh, OWp = (a->OW + KCPU_DW_V - 1) / KCPU_DW_V * KCPU_DW_V;
  int64_t Hp = (a->OH - 1) * s + a->KH, Wh = OWp + (a->KW - 1) / s;
  float *buf = kcpu_alloc((Hp * s * Wh + OWp) * (int64_t)sizeof(float));
  if (!buf) {
    kcpu_dw_fn(ctx, b, e);
    return;
  }
  /* the common sizes with constant trip counts, so the tap loop unrolls */
  if (a->KH == 3 && a->KW == 3)
    kcpu_dwk_body(a, b, e, 3, 3, buf);
  else if (a->KH == 5 && a->KW == 5)
    kcpu_dwk_body(a, b, e, 5, 5, buf);
  else
    kcpu_dwk_body(a, b, e, a->KH, a->KW, buf);
  kcpu_free(buf);
}

/* Wpk: the filters prepacked per group (gemm_impl.h), or NULL. */
KCPU_PREBUILT void kcpu_k_conv2d_ex(const float *X, const float *Wt, const float *Wpk, const float *bias,
                      const float *res, float *Y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, int64_t OH,
                      int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh,
                      int64_t dw, int64_t pt, int64_t pl, int64_t group, int64_t act, float act_a,
                      float act_b, int64_t lanes, struct kcpu_pool *pool) {
  kcpu_conv_args a = {X,  Wt, Wpk, bias, res, Y,  N,  C,  H,     W,   M,     OH,    OW,
                      KH, KW, sh,  sw,   dh,  dw, pt, pl, group, act, lanes, act_a, act_b};
  if (N <= 0 || M <= 0 || OH <= 0 || OW <= 0)
    return;
  if (group == C && M == C && group > 1) {
    if (kcpu_dw_small(X, Wt, bias, res, Y, N, C, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl,
                      act, act_a, act_b, pool))
      return;
    int dwk = KH <= KCPU_DW_MAXK && KW <= KCPU_DW_MAXK && dh == 1 && dw == 1 && sh == sw &&
              (sh == 1 || sh == 2);
    kcpu_parallel_for(pool, N * C, dwk ? kcpu_dwk_fn : kcpu_dw_fn, &a);
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

KCPU_PREBUILT void kcpu_k_conv2d(const float *X, const float *Wt, const float *bias, float *Y, int64_t N,
                   int64_t C, int64_t H, int64_t W, int64_t M, int64_t OH, int64_t OW, int64_t KH,
                   int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                   int64_t pl, int64_t group, int64_t act, int64_t lanes, struct kcpu_pool *pool) {
  kcpu_k_conv2d_ex(X, Wt, NULL, bias, NULL, Y, N, C, H, W, M, OH, OW, KH, KW, sh, sw, dh, dw, pt,
                   pl, group, act, 0, 0, lanes, pool);
}
