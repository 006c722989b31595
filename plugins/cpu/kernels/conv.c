/* plugins/cpu/kernels/conv.c: 2-D and 3-D convolution (NCHW, NCDHW, f32;
 * 3-D: GEMMs with the im2col packer below, nothing else). Pointwise
 * convolutions are plain GEMMs on the image; general ones are GEMMs whose B
 * matrix (im2col) is packed straight from the image by a custom packer, so
 * no column buffer is ever materialized (on AVX-512, with prepacked
 * filters, they skip even that: conv_direct.c; 3x3 ones with many
 * channels go by Winograd, conv_winograd.c, chosen at compile time);
 * depthwise convolutions use a direct loop vectorized along output rows in
 * blocks of rows (planes narrower than a vector: across channels,
 * conv_depthwise.c). Bias and activation ride on the GEMM epilogue (a
 * fused residual too), and on the depthwise kernels' last step over each
 * block of rows. */
#include "gemm_impl.h"
#include "kcpu_act.h"

#include <math.h>
#include <string.h>

typedef float kcpu_v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef float kcpu_v4u __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t kcpu_v16m __attribute__((vector_size(64))); /* comparison masks */
typedef float kcpu_v16 __attribute__((vector_size(64)));

/* B(k, p) with k = (c, kd, kh, kw) and p = (od, oh, ow) (2-D: one depth
 * slice, kd = od = 0): the input pixel under filter tap k for output
 * pixel p, zero in the padding. Everything that needs a division is
 * computed once per call: per tap k (its plane, depth and row offsets and
 * the output columns whose input column is inside), and per panel its
 * runs of pixels within one output row. Each (tap, run) is then a leading
 * pad, a valid part (a plain copy when the stride is 1) and a trailing
 * pad, with no per-element bounds test. */
typedef struct kcpu_im2col_tap {
  int64_t plane, kdd, khd, off, lo, hi;
} kcpu_im2col_tap;

static void kcpu_pack_b_im2col(const kcpu_gemm_desc *d, float *dst, int64_t k0, int64_t kc,
                               int64_t n0, int64_t nc, int64_t NR) {
  const kcpu_conv_geo *g = d->bctx;
  int64_t khw = g->KH * g->KW, kdhw = g->KD * khw, sw = g->sw;
  kcpu_im2col_tap taps[KCPU_KC];
  if (kc > KCPU_KC)
    return; /* the engine never asks for more */
  for (int64_t k = 0; k < kc; k++) {
    int64_t kk = k0 + k, c = kk / kdhw, kd = kk % kdhw / khw, r = kk % khw;
    int64_t kh = r / g->KW, kw = r % g->KW, off = kw * g->dw - g->pl;
    int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
    int64_t hi = g->W - off <= 0 ? 0 : (g->W - off - 1) / sw + 1;
    taps[k] = (kcpu_im2col_tap){c * g->D * g->H * g->W, kd * g->dd - g->pd, kh * g->dh - g->pt,
                                off, lo, hi > g->OW ? g->OW : hi};
  }
  int64_t run_od[KCPU_NR_MAX + 1], run_oh[KCPU_NR_MAX + 1], run_ow[KCPU_NR_MAX + 1];
  int64_t run_len[KCPU_NR_MAX + 1];
  if (NR > KCPU_NR_MAX)
    return;
  for (int64_t j = 0; j < nc; j += NR) {
    int64_t nr = nc - j < NR ? nc - j : NR, nrun = 0;
    int64_t p0 = n0 + j, oh = p0 / g->OW, ow = p0 % g->OW, od = oh / g->OH;
    oh %= g->OH;
    for (int64_t q = 0; q < nr; nrun++) {
      int64_t len = g->OW - ow < nr - q ? g->OW - ow : nr - q;
      run_od[nrun] = od;
      run_oh[nrun] = oh;
      run_ow[nrun] = ow;
      run_len[nrun] = len;
      q += len;
      ow = 0;
      if (++oh == g->OH)
        oh = 0, od++;
    }
    for (int64_t k = 0; k < kc; k++) {
      const kcpu_im2col_tap *t = &taps[k];
      float *o = dst + k * NR;
      for (int64_t u = 0; u < nrun; u++) {
        int64_t ow0 = run_ow[u], end = ow0 + run_len[u];
        int64_t ih = run_oh[u] * g->sh + t->khd, id = run_od[u] * g->sd + t->kdd;
        float *oo = o - ow0; /* oo[x] is the cell of output column x */
        o += run_len[u];
        if (ih < 0 || ih >= g->H || id < 0 || id >= g->D || t->lo >= t->hi) {
          for (int64_t x = ow0; x < end; x++)
            oo[x] = 0.0f;
          continue;
        }
        const float *row = g->x + t->plane + (id * g->H + ih) * g->W + t->off;
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

/* The GEMM of image n, group g of a 2-D or 3-D convolution: A the group's
 * filters (Mg rows of Kg, prepacked or from Wt), B the image (ldb floats
 * per channel) through geo's im2col packer unless pointwise, C its P
 * output pixels per channel with bias, residual and activation. */
static kcpu_gemm_desc kcpu_conv_desc(const float *Wt, const float *Wpk, const float *bias,
                                     const float *res, float *Y, int64_t n, int64_t g, int64_t M,
                                     int64_t Mg, int64_t Kg, int64_t P, const kcpu_conv_geo *geo,
                                     int64_t ldb, int pointwise, int64_t act, float act_a,
                                     float act_b, int64_t lanes) {
  int64_t co = (n * M + g * Mg) * P;
  return (kcpu_gemm_desc){
      .M = Mg,
      .N = P,
      .K = Kg,
      .alpha = 1.0f,
      .A = Wpk ? NULL : Wt + g * Mg * Kg, /* Wt may be NULL given Wpk */
      .lda = Kg,
      .Apk = Wpk ? Wpk + g * kcpu_prepacked_size(Mg, Kg, kcpu_gemm_mr(lanes)) : NULL,
      .B = geo->x,
      .ldb = ldb,
      .pack_b = pointwise ? NULL : kcpu_pack_b_im2col,
      .bctx = geo,
      .C = Y + co,
      .ldc = P,
      .bias_row = bias ? bias + g * Mg : NULL,
      .res = res ? res + co : NULL,
      .ldr = P,
      .act = act,
      .act_a = act_a,
      .act_b = act_b,
      .lanes = lanes};
}

/* Whether a convolution's (image, group) jobs go one per thread (each
 * GEMM then inline) rather than one after another with the threads
 * inside each GEMM: enough jobs to keep every thread busy. */
static int kcpu_conv_jobs_split(struct kcpu_pool *pool, int64_t jobs) {
  int64_t T = kcpu_pool_threads(pool);
  return T > 1 && (jobs >= 2 * T || (jobs >= T && jobs % T == 0));
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
                       a->pl,
                       1,
                       1,
                       1,
                       1,
                       0,
                       a->OH};
  int pointwise = a->KH == 1 && a->KW == 1 && a->sh == 1 && a->sw == 1 && a->pt == 0 &&
                  a->pl == 0 && a->OH == a->H && a->OW == a->W;
  kcpu_gemm_desc d = kcpu_conv_desc(a->Wt, a->Wpk, a->bias, a->res, a->Y, n, g, a->M, Mg, Kg, P,
                                    &geo, a->H * a->W, pointwise, a->act, a->act_a, a->act_b,
                                    a->lanes);
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
 * dilation 1, stride 1 or 2, output rows of 16 or more (3x3 rows of 8 to
 * 15: kcpu_dwk_block1). A sum of taps in one vector is a chain of KH*KW
 * dependent multiply-adds, so a vector at a time waits on the multiply-add
 * latency (about 36 cycles per 16 outputs at 3x3); instead a block of
 * KCPU_DW_R output rows x 2 vectors is summed at once, 8 independent
 * chains that keep both multiply-add pipes busy, and each input vector
 * loaded serves every row of the block that reads it. The input rows are
 * first copied into a small ring of zero-bordered rows (stride 2: even
 * and odd columns apart, deinterleaved two vectors at a time), each row
 * once per channel, while it is still in L1; rows above or below the image
 * point at one shared zero row. A row's last pair of
 * vectors and the plane's last block of rows are shifted back to end at
 * the row's and the plane's end, so nothing is written past the plane and
 * no scalar remainder is left (the few outputs computed twice get the same
 * bits twice: same operations, same order). Taps are summed in (kh, kw)
 * order and the bias added last, as in kcpu_dw_fn; then Relu and Clip in
 * registers, the residual and the other activations over each block's
 * finished rows, in L1 (kcpu_dwk_post). */
#define KCPU_DW_MAXK 7
#define KCPU_DW_R 4   /* output rows per block */
#define KCPU_DW_R1 7  /* output rows per block of rows narrower than 16 */
#define KCPU_DW_NS 32 /* ring rows: at least (R1 - 1) * 2 + KCPU_DW_MAXK */
/* The row copies below are a few dozen floats: as memmove / memset calls
 * (clang's loop idioms) the calls cost more than the copies. */
#ifdef __clang__
#define KCPU_NO_MEM_CALLS __attribute__((no_builtin("memcpy", "memmove", "memset")))
#else
#define KCPU_NO_MEM_CALLS
#endif

typedef struct kcpu_dwk {
  const kcpu_conv_args *a;
  const float *x, *w, *res; /* this channel's input plane, filter, residual plane */
  const float *xend;        /* the end of X (narrow rows read a vector from a row's start) */
  float *y, b0, lo, hi;     /* the bias; kcpu_dwk_store's clamp */
  int post;                 /* a residual or an activation for kcpu_dwk_post */
  float *ring, *zero;       /* KCPU_DW_NS rows of s * Wh floats, and a zero row */
  int64_t Wh;               /* a phase row's width: OW + (KW - 1) / s */
} kcpu_dwk;

/* Input columns [i, i + 32), i + pl even, into the phases: even and odd
 * lanes of two vectors apart; columns from i + cnt on as zeros. */
static inline void kcpu_dwk_deint(float *const *ph, const float *xr, int64_t i, int64_t pl,
                                  int64_t cnt) {
  kcpu_v16 lo = *(const kcpu_v16u *)(xr + i), hi = *(const kcpu_v16u *)(xr + i + 16);
  if (cnt < 32) { /* only cnt columns are the row's: the rest cleared */
    kcpu_v16m lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    lo = (kcpu_v16)((kcpu_v16m)lo & (kcpu_v16m)(lane < (int32_t)cnt));
    hi = (kcpu_v16)((kcpu_v16m)hi & (kcpu_v16m)(lane + 16 < (int32_t)cnt));
  }
  int64_t j = (i + pl) >> 1;
  *(kcpu_v16u *)(ph[0] + j) =
      __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  *(kcpu_v16u *)(ph[1] + j) =
      __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

/* Input row ih into ring row dst: input column i goes to phase (i + pl) % s,
 * column (i + pl) / s; the columns past a phase's width are not read. The
 * border columns are never written, so they stay zero. */
KCPU_NO_MEM_CALLS static void kcpu_dwk_copy(const kcpu_dwk *k, float *dst, int64_t ih, int64_t s) {
  const kcpu_conv_args *a = k->a;
  const float *xr = k->x + ih * a->W;
  int64_t pl = a->pl, n = s * k->Wh - pl < a->W ? s * k->Wh - pl : a->W, i = 0;
  if (a->W < 16 && xr + 16 <= k->xend) {
    /* a narrow row: one vector, the lanes past it cleared (they land on
     * the right border, which stays zero; rows are wide enough) */
    kcpu_v16 v = *(const kcpu_v16u *)xr, z = {0};
    kcpu_v16m lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    v = (kcpu_v16)((kcpu_v16m)v & (kcpu_v16m)(lane < (int32_t)a->W));
    if (s == 1) {
      *(kcpu_v16u *)(dst + pl) = v;
      return;
    }
    /* phase p: input columns i = p - pl (mod 2) from column (i + pl) / 2 */
    kcpu_v16 ev =
        __builtin_shufflevector(v, z, 0, 2, 4, 6, 8, 10, 12, 14, 16, 16, 16, 16, 16, 16, 16, 16);
    kcpu_v16 od =
        __builtin_shufflevector(v, z, 1, 3, 5, 7, 9, 11, 13, 15, 16, 16, 16, 16, 16, 16, 16, 16);
    *(kcpu_v16u *)(dst + (pl & 1) * k->Wh + pl / 2) = ev;
    *(kcpu_v16u *)(dst + (1 - (pl & 1)) * k->Wh + (pl + 1) / 2) = od;
    return;
  }
  if (s == 1) {
    float *d = dst + pl;
    if (n >= 16) { /* the last vector shifted back to end at n */
      for (; i + 16 < n; i += 16)
        *(kcpu_v16u *)(d + i) = *(const kcpu_v16u *)(xr + i);
      *(kcpu_v16u *)(d + n - 16) = *(const kcpu_v16u *)(xr + n - 16);
      return;
    }
    for (; i < n; i++)
      d[i] = xr[i];
    return;
  }
  float *ph[2] = {dst, dst + k->Wh};
  int64_t i0 = pl & 1; /* the first input column of phase 0 */
  if (n - i0 >= 32) {
    for (; i < i0; i++)
      ph[1][(i + pl) >> 1] = xr[i];
    for (; i + 32 <= n; i += 32)
      kcpu_dwk_deint(ph, xr, i, pl, 32);
    if (i < n) { /* the last pair shifted back to end at n (or n - 1: phase 0 first) */
      i = n - 32 - ((n - 32 + pl) & 1);
      kcpu_dwk_deint(ph, xr, i, pl, 32);
      i += 32;
    }
  } else if (n - i0 >= 16 && xr + i0 + 32 <= k->xend && (i0 + pl) / 2 + 16 <= k->Wh) {
    /* rows of 16 to 31 (28 -> 14): one pair, the lanes past the row
     * cleared (they land on the right border, which stays zero) */
    for (; i < i0; i++)
      ph[1][(i + pl) >> 1] = xr[i];
    kcpu_dwk_deint(ph, xr, i0, pl, n - i0);
    return;
  }
  for (; i < n; i++)
    ph[(i + pl) & 1][(i + pl) >> 1] = xr[i];
}

/* Full unrolling of the loops whose trip counts are constants once
 * inlined (the library is built with -fno-unroll-loops, which a pragma
 * overrides), so that the accumulators stay in registers. */
#ifdef __clang__
#define KCPU_DW_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define KCPU_DW_UNROLL _Pragma("GCC unroll 64")
#else
#define KCPU_DW_UNROLL
#endif
#define KCPU_DW_INLINE static inline __attribute__((always_inline))

/* Tap column kw of padded input row i (of the block) for the vectors at
 * columns c and o1 of each of the R output rows that read that row. */
KCPU_DW_INLINE void kcpu_dwk_taps(kcpu_v16 (*acc)[2], const kcpu_dwk *k, const float *row,
                                  int64_t c, int64_t o1, int64_t i, int64_t kw, int64_t R,
                                  int64_t s, int64_t KH, int64_t KW) {
  const float *t = row + (kw % s) * k->Wh + kw / s;
  kcpu_v16 x0 = *(const kcpu_v16u *)(t + c), x1 = *(const kcpu_v16u *)(t + o1);
  KCPU_DW_UNROLL
  for (int64_t r = 0; r < R; r++) {
    int64_t kh = i - r * s;
    if (kh >= 0 && kh < KH) {
      float wv = k->w[kh * KW + kw];
      acc[r][0] += wv * x0;
      acc[r][1] += wv * x1;
    }
  }
}

/* The bias and the clamp to [lo, hi] (Relu, Clip, or none: -inf, inf), and
 * the stores of output rows [oh0, oh0 + R) at columns c and o1. Nothing
 * else here: a branch among the stores would split the block, and the
 * compiler then sinks each accumulator's chain next to its store. */
KCPU_DW_INLINE void kcpu_dwk_store(kcpu_v16 (*acc)[2], const kcpu_dwk *k, int64_t oh0, int64_t c,
                                   int64_t o1, int64_t R) {
  kcpu_v16 lo = (kcpu_v16){0} + k->lo, hi = (kcpu_v16){0} + k->hi;
  KCPU_DW_UNROLL
  for (int64_t r = 0; r < R; r++)
    KCPU_DW_UNROLL
  for (int64_t v = 0; v < 2; v++) {
    kcpu_v16 y = acc[r][v] + k->b0;
    /* compares and selects, so that NaN and -0 stay as they are */
    kcpu_v16m m = (kcpu_v16m)(y < lo);
    y = (kcpu_v16)(((kcpu_v16m)y & ~m) | ((kcpu_v16m)lo & m));
    m = (kcpu_v16m)(y > hi);
    y = (kcpu_v16)(((kcpu_v16m)y & ~m) | ((kcpu_v16m)hi & m));
    *(kcpu_v16u *)(k->y + (oh0 + r) * k->a->OW + (v ? o1 : c)) = y;
  }
}

/* What kcpu_dwk_store leaves, over n finished outputs y (in L1): the
 * residual r (or NULL) and then the activation, if not done there. */
static void kcpu_dwk_post(const kcpu_dwk *k, float *y, const float *r, int64_t n) {
  const kcpu_conv_args *a = k->a;
  int64_t act = a->act, i = 0;
  if (k->post) {
    for (; i + 16 <= n; i += 16) {
      kcpu_v16 v = *(kcpu_v16u *)(y + i);
      if (r)
        v += *(const kcpu_v16u *)(r + i);
      if (act == KCPU_ACT_RELU) /* keep what is not below 0 (NaN and -0 included) */
        v = (kcpu_v16)((kcpu_v16m)v & ~(kcpu_v16m)(v < 0.0f));
      KCPU_ACT_VEC_HARD(kcpu_v16, kcpu_v16m, v, act, a->act_a, a->act_b);
      *(kcpu_v16u *)(y + i) = v;
    }
    for (; i < n; i++) {
      float v = r ? y[i] + r[i] : y[i];
      y[i] = act == KCPU_ACT_RELU ? (v < 0.0f ? 0.0f : v) : kcpu_act1(act, a->act_a, a->act_b, v);
    }
  }
  kcpu_dw_act_plane(a, y, n);
}

/* The first column of pair c0 / 32: the last pair shifted back to end at OW. */
static inline int64_t kcpu_dwk_pair(int64_t c0, int64_t OW) {
  return c0 + 32 <= OW ? c0 : (OW >= 32 ? OW - 32 : 0);
}
KCPU_DW_INLINE void kcpu_dwk_block(const kcpu_dwk *k, const float *const *rows, int64_t oh0,
                                   int64_t R, int64_t s, int64_t KH, int64_t KW) {
  for (int64_t c0 = 0, OW = k->a->OW; c0 < OW; c0 += 32) {
    int64_t c = kcpu_dwk_pair(c0, OW), o1 = c + 16 <= OW - 16 ? c + 16 : OW - 16;
    kcpu_v16 acc[KCPU_DW_R][2];
    KCPU_DW_UNROLL
    for (int64_t r = 0; r < R; r++)
      acc[r][0] = acc[r][1] = (kcpu_v16){0};
    KCPU_DW_UNROLL
    for (int64_t i = 0; i < (R - 1) * s + KH; i++)
      KCPU_DW_UNROLL
    for (int64_t kw = 0; kw < KW; kw++)
      kcpu_dwk_taps(acc, k, rows[i], c, o1, i, kw, R, s, KH, KW);
    kcpu_dwk_store(acc, k, oh0, c, o1, R);
  }
}

KCPU_DW_INLINE void kcpu_dwk_block_any(const kcpu_dwk *k, const float *const *rows, int64_t oh0,
                                       int64_t R, int64_t s, int64_t KH, int64_t KW) {
  for (int64_t c0 = 0, OW = k->a->OW; c0 < OW; c0 += 32) {
    int64_t c = kcpu_dwk_pair(c0, OW), o1 = c + 16 <= OW - 16 ? c + 16 : OW - 16;
    kcpu_v16 acc[KCPU_DW_R][2];
    KCPU_DW_UNROLL
    for (int64_t r = 0; r < R; r++)
      acc[r][0] = acc[r][1] = (kcpu_v16){0};
    for (int64_t i = 0; i < (R - 1) * s + KH; i++)
      for (int64_t kw = 0; kw < KW; kw++)
        kcpu_dwk_taps(acc, k, rows[i], c, o1, i, kw, R, s, KH, KW);
    kcpu_dwk_store(acc, k, oh0, c, o1, R);
  }
}

/* Output rows [oh0, oh0 + R) narrower than 16 (8 to 15: 14 x 14 planes),
 * one vector each, as kcpu_dwk_block. A row's store runs into the next
 * row, which is stored after it; the plane's last row goes through a
 * buffer. */
KCPU_DW_INLINE void kcpu_dwk_block1(const kcpu_dwk *k, const float *const *rows, int64_t oh0,
                                    int64_t R, int64_t s, int64_t KH, int64_t KW) {
  int64_t OW = k->a->OW, OH = k->a->OH;
  kcpu_v16 acc[KCPU_DW_R1], lo = (kcpu_v16){0} + k->lo, hi = (kcpu_v16){0} + k->hi;
  KCPU_DW_UNROLL
  for (int64_t r = 0; r < R; r++)
    acc[r] = (kcpu_v16){0};
  KCPU_DW_UNROLL
  for (int64_t i = 0; i < (R - 1) * s + KH; i++)
    KCPU_DW_UNROLL
  for (int64_t kw = 0; kw < KW; kw++) {
    kcpu_v16 x = *(const kcpu_v16u *)(rows[i] + (kw % s) * k->Wh + kw / s);
    KCPU_DW_UNROLL
    for (int64_t r = 0; r < R; r++) {
      int64_t kh = i - r * s;
      if (kh >= 0 && kh < KH)
        acc[r] += k->w[kh * KW + kw] * x;
    }
  }
  KCPU_DW_UNROLL
  for (int64_t r = 0; r < R; r++) {
    kcpu_v16 y = acc[r] + k->b0;
    kcpu_v16m m = (kcpu_v16m)(y < lo);
    y = (kcpu_v16)(((kcpu_v16m)y & ~m) | ((kcpu_v16m)lo & m));
    m = (kcpu_v16m)(y > hi);
    y = (kcpu_v16)(((kcpu_v16m)y & ~m) | ((kcpu_v16m)hi & m));
    acc[r] = y;
  }
  KCPU_DW_UNROLL
  for (int64_t r = 0; r < R; r++)
    if (oh0 + r < OH - 1) {
      *(kcpu_v16u *)(k->y + (oh0 + r) * OW) = acc[r];
    } else {
      float t[16];
      __builtin_memcpy(t, &acc[r], sizeof t);
      for (int64_t j = 0; j < OW; j++)
        k->y[(oh0 + r) * OW + j] = t[j];
    }
}

/* Channels [b, e) with filter KH x KW and stride s (constants where
 * inlined with them). */
KCPU_DW_INLINE void kcpu_dwk_body(kcpu_dwk *k, int64_t b, int64_t e, int64_t s, int64_t KH,
                                  int64_t KW, int any) {
  const kcpu_conv_args *a = k->a;
  int64_t OH = a->OH, OW = a->OW, RB = OW >= 16 ? KCPU_DW_R : KCPU_DW_R1;
  int64_t R = OH >= RB ? RB : 1;
  int64_t span = (R - 1) * s + KH, rw = s * k->Wh;
  for (int64_t ch = b; ch < e; ch++) {
    int64_t c = ch % a->C, done = 0; /* ring rows filled: padded rows [0, done) */
    k->x = a->X + ch * a->H * a->W;
    k->w = a->Wt + c * KH * KW;
    k->y = a->Y + ch * OH * OW;
    k->res = a->res ? a->res + ch * OH * OW : NULL;
    k->b0 = a->bias ? a->bias[c] : 0.0f;
    for (int64_t oh = 0; oh < OH; oh += R) {
      int64_t oh0 = oh + R <= OH ? oh : OH - R; /* the last block shifted back */
      const float *rows[(KCPU_DW_R1 - 1) * 2 + KCPU_DW_MAXK];
      for (int64_t i = 0; i < span; i++) {
        int64_t pr = oh0 * s + i, ih = pr - a->pt;
        if (ih < 0 || ih >= a->H) {
          rows[i] = k->zero;
          continue;
        }
        float *slot = k->ring + pr % KCPU_DW_NS * rw;
        for (; done <= pr; done++) /* rows are filled in order, each once */
          if (done - a->pt >= 0 && done - a->pt < a->H)
            kcpu_dwk_copy(k, k->ring + done % KCPU_DW_NS * rw, done - a->pt, s);
        rows[i] = slot;
      }
      if (!any && OW < 16 && R == KCPU_DW_R1)
        kcpu_dwk_block1(k, rows, oh0, KCPU_DW_R1, s, KH, KW);
      else if (!any && OW < 16)
        kcpu_dwk_block1(k, rows, oh0, 1, s, KH, KW);
      else if (any && R == KCPU_DW_R)
        kcpu_dwk_block_any(k, rows, oh0, KCPU_DW_R, s, KH, KW);
      else if (any)
        kcpu_dwk_block_any(k, rows, oh0, 1, s, KH, KW);
      else if (R == KCPU_DW_R)
        kcpu_dwk_block(k, rows, oh0, KCPU_DW_R, s, KH, KW);
      else
        kcpu_dwk_block(k, rows, oh0, 1, s, KH, KW);
      kcpu_dwk_post(k, k->y + oh0 * OW, k->res ? k->res + oh0 * OW : NULL, R * OW);
    }
  }
}

static void kcpu_dwk_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_conv_args *a = ctx;
  int64_t s = a->sh;
  kcpu_dwk k = {.a = a, .Wh = a->OW + (a->KW - 1) / s, .lo = -INFINITY, .hi = INFINITY};
  k.xend = a->X + a->N * a->C * a->H * a->W;
  if (a->OW < 16 || a->W < 16) /* room for a narrow row's vector, written and read */
    k.Wh = k.Wh > 16 + KCPU_DW_MAXK + a->pl ? k.Wh : 16 + KCPU_DW_MAXK + a->pl;
  /* Relu and Clip are a clamp, done in registers unless a residual
   * comes first */
  k.post = a->res || a->act == KCPU_ACT_HARD_SIGMOID || a->act == KCPU_ACT_HARD_SWISH;
  if (!a->res && a->act == KCPU_ACT_RELU)
    k.lo = 0.0f;
  else if (!a->res && a->act == KCPU_ACT_CLIP)
    k.lo = a->act_a, k.hi = a->act_b;
  else if (a->act == KCPU_ACT_RELU || a->act == KCPU_ACT_CLIP)
    k.post = 1;
  int64_t n = (KCPU_DW_NS + 1) * s * k.Wh;
  float *buf = kcpu_alloc(n * (int64_t)sizeof(float));
  if (!buf) {
    kcpu_dw_fn(ctx, b, e);
    return;
  }
  for (int64_t i = 0; i < n; i++) /* the borders, and the zero row */
    buf[i] = 0.0f;
  k.zero = buf;
  k.ring = buf + s * k.Wh;
  /* the common filters with constant trip counts, so the loops unroll */
  if (a->KH == 3 && a->KW == 3 && s == 1)
    kcpu_dwk_body(&k, b, e, 1, 3, 3, 0);
  else if (a->KH == 3 && a->KW == 3)
    kcpu_dwk_body(&k, b, e, 2, 3, 3, 0);
  else if (a->KH == 5 && a->KW == 5 && s == 1)
    kcpu_dwk_body(&k, b, e, 1, 5, 5, 0);
  else if (a->KH == 5 && a->KW == 5)
    kcpu_dwk_body(&k, b, e, 2, 5, 5, 0);
  else if (s == 1)
    kcpu_dwk_body(&k, b, e, 1, a->KH, a->KW, 1);
  else
    kcpu_dwk_body(&k, b, e, 2, a->KH, a->KW, 1);
  kcpu_free(buf);
}

/* Wpk: the filters prepacked per group (gemm_impl.h), or NULL. */
KCPU_PREBUILT void kcpu_k_conv2d_ex(const float *X, const float *Wt, const float *Wpk,
                                    const float *bias, const float *res, float *Y, int64_t N,
                                    int64_t C, int64_t H, int64_t W, int64_t M, int64_t OH,
                                    int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                                    int64_t dh, int64_t dw, int64_t pt, int64_t pl, int64_t group,
                                    int64_t act, float act_a, float act_b, int64_t lanes,
                                    struct kcpu_pool *pool) {
  kcpu_conv_args a = {X,  Wt, Wpk, bias, res, Y,  N,  C,  H,     W,   M,     OH,    OW,
                      KH, KW, sh,  sw,   dh,  dw, pt, pl, group, act, lanes, act_a, act_b};
  if (N <= 0 || M <= 0 || OH <= 0 || OW <= 0)
    return;
  if (group == C && M == C && group > 1) {
    int dwk = KH <= KCPU_DW_MAXK && KW <= KCPU_DW_MAXK && dh == 1 && dw == 1 && sh == sw &&
              (sh == 1 || sh == 2) && pt >= 0 && pl >= 0;
    /* rows of 8 to 15 (14 x 14 planes) at 3 x 3: a vector a row beats
     * transposing channels into vectors (measured; not at 5 x 5, whose
     * 7-row blocks run out of registers) */
    if (dwk && OW >= 8 && OW < 16 && KH == 3 && KW == 3) {
      kcpu_parallel_for(pool, N * C, kcpu_dwk_fn, &a);
      return;
    }
    if (kcpu_dw_small(X, Wt, bias, res, Y, N, C, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, act,
                      act_a, act_b, pool))
      return;
    kcpu_parallel_for(pool, N * C, dwk && OW >= 16 ? kcpu_dwk_fn : kcpu_dw_fn, &a);
    return;
  }
  if (kcpu_conv_jobs_split(pool, N * group)) {
    kcpu_parallel_for(pool, N * group, kcpu_conv_fn, &a);
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

/* 3-D convolution (NCDHW, f32) as kcpu_k_conv2d_ex's GEMMs, one per
 * (image, group): A the filters [Mg, Cg * KD * KH * KW] (prepacked, or
 * Wt), B the im2col matrix of the volume packed straight from it (no
 * column buffer), C the output [Mg, OD * OH * OW]; a 1x1x1 stride-1
 * unpadded layer is a plain GEMM on the volume. Bias, residual and
 * activation in the GEMM's epilogue. Video models (torchvision's R3D-18,
 * R(2+1)D) ran through the type-generic N-D loop at 2 GFLOP/s. */
typedef struct kcpu_conv3d_args {
  const float *X, *Wt, *Wpk, *bias, *res;
  float *Y;
  int64_t N, C, D, H, W, M, OD, OH, OW, KD, KH, KW, sd, sh, sw, dd, dh, dw, pd, pt, pl, group;
  int64_t act, lanes;
  float act_a, act_b;
} kcpu_conv3d_args;

static void kcpu_conv3d_one(const kcpu_conv3d_args *a, int64_t n, int64_t g,
                            struct kcpu_pool *pool) {
  int64_t Cg = a->C / a->group, Mg = a->M / a->group, Kg = Cg * a->KD * a->KH * a->KW;
  int64_t V = a->D * a->H * a->W, P = a->OD * a->OH * a->OW;
  kcpu_conv_geo geo = {.x = a->X + (n * a->C + g * Cg) * V, .H = a->H, .W = a->W, .OW = a->OW,
                       .KH = a->KH, .KW = a->KW, .sh = a->sh, .sw = a->sw, .dh = a->dh,
                       .dw = a->dw, .pt = a->pt, .pl = a->pl, .D = a->D, .KD = a->KD,
                       .sd = a->sd, .dd = a->dd, .pd = a->pd, .OH = a->OH};
  int pointwise = a->KD == 1 && a->KH == 1 && a->KW == 1 && a->sd == 1 && a->sh == 1 &&
                  a->sw == 1 && a->pd == 0 && a->pt == 0 && a->pl == 0 && a->OD == a->D &&
                  a->OH == a->H && a->OW == a->W;
  kcpu_gemm_desc d = kcpu_conv_desc(a->Wt, a->Wpk, a->bias, a->res, a->Y, n, g, a->M, Mg, Kg, P,
                                    &geo, V, pointwise, a->act, a->act_a, a->act_b, a->lanes);
  if (!pointwise && kcpu_conv_direct(&d, &geo, pool))
    return;
  kcpu_gemm_run(&d, pool);
}

static void kcpu_conv3d_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_conv3d_args *a = ctx;
  for (int64_t i = b; i < e; i++)
    kcpu_conv3d_one(a, i / a->group, i % a->group, NULL);
}

KCPU_PREBUILT void kcpu_k_conv3d(const float *X, const float *Wt, const float *Wpk,
                                 const float *bias, const float *res, float *Y, int64_t N,
                                 int64_t C, int64_t D, int64_t H, int64_t W, int64_t M, int64_t OD,
                                 int64_t OH, int64_t OW, int64_t KD, int64_t KH, int64_t KW,
                                 int64_t sd, int64_t sh, int64_t sw, int64_t dd, int64_t dh,
                                 int64_t dw, int64_t pd, int64_t pt, int64_t pl, int64_t group,
                                 int64_t act, float act_a, float act_b, int64_t lanes,
                                 struct kcpu_pool *pool) {
  kcpu_conv3d_args a = {X,  Wt, Wpk, bias, res, Y,  N,  C,  D,  H,  W,  M,     OD,  OH,
                        OW, KD, KH,  KW,   sd,  sh, sw, dd, dh, dw, pd, pt, pl,    group,
                        act, lanes, act_a, act_b};
  if (N <= 0 || M <= 0 || OD <= 0 || OH <= 0 || OW <= 0 || group < 1)
    return;
  if (kcpu_conv_jobs_split(pool, N * group)) {
    kcpu_parallel_for(pool, N * group, kcpu_conv3d_fn, &a);
    return;
  }
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < group; g++)
      kcpu_conv3d_one(&a, n, g, pool);
}

/* 2-D ConvTranspose (NCHW, f32) as a GEMM and a scatter (col2im): per
 * (image, group), cols[(m, kh, kw), (ih, iw)] = sum over the group's
 * input channels c of W[c][m][kh][kw] * X[c][ih][iw] (A = the filters
 * seen as [C/group, M/group x KH x KW], transposed, packed at compile
 * time; B = the image as it lies), then each output pixel (oh, ow) =
 * bias + the cols of the (tap, input pixel) pairs with oh = ih * sh - pt
 * + kh * dh (ow likewise), taps in (kh, kw) order. UNet's and GANs'
 * upsampling layers ran through the type-generic N-D loop (a 4-layer
 * DCGAN generator: 1.1 s against ONNX Runtime's 1.6 ms). On tiny inputs
 * (swap: a GAN's 1x1 latent and 4x4 maps) the GEMM is turned around,
 * cols^T = X^T W with the filters as its (packed) B, so that the long
 * side is the GEMM's N instead of a single column; a 1x1 input does all
 * images in one GEMM (X is then [N, C]). */
typedef struct kcpu_convt_scatter_args {
  const float *bias, *cols;
  float *Y;
  int64_t H, W, M, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, group, n, g;
  int64_t ci, cp; /* floats between cols of consecutive (m, kh, kw) and input pixels */
} kcpu_convt_scatter_args;

/* Output row oh of one channel, built in the scratch row r (r[pl + ow]
 * is output column ow; r spans every column a tap reaches, so no tap
 * needs a bound): the bias, then for each kh whose input row ih lands on
 * oh, each tap's input row, kh and kw ascending (the per-element order of
 * the general path). At stride 2 and dilation 1, taps kw and kw + 1 write
 * alternate columns: their rows interleave into one contiguous run, a
 * vector pair at a time. */
typedef float kcpu_v8 __attribute__((vector_size(32)));
typedef float kcpu_v8u __attribute__((vector_size(32), aligned(4), may_alias));
static void kcpu_convt_row(const kcpu_convt_scatter_args *a, const float *cm, int64_t ci,
                           float bv, int64_t oh, float *r, int64_t rn, float *yrow) {
  for (int64_t i = 0; i < rn; i++)
    r[i] = bv;
  int64_t W = a->W;
  for (int64_t kh = 0; kh < a->KH; kh++) {
    int64_t t = oh + a->pt - kh * a->dh;
    if (t < 0 || t % a->sh || t / a->sh >= a->H)
      continue;
    int64_t ih = t / a->sh;
    for (int64_t kw = 0; kw < a->KW; kw++) {
      const float *c0 = cm + (kh * a->KW + kw) * ci + ih * W;
      float *ro = r + kw * a->dw;
      if (a->sw == 2 && a->dw == 1 && kw + 1 < a->KW) {
        const float *c1 = c0 + ci;
        int64_t iw = 0;
        for (; iw + 8 <= W; iw += 8) {
          kcpu_v8 x = *(const kcpu_v8u *)(c0 + iw), y = *(const kcpu_v8u *)(c1 + iw);
          *(kcpu_v8u *)(ro + 2 * iw) +=
              __builtin_shufflevector(x, y, 0, 8, 1, 9, 2, 10, 3, 11);
          *(kcpu_v8u *)(ro + 2 * iw + 8) +=
              __builtin_shufflevector(x, y, 4, 12, 5, 13, 6, 14, 7, 15);
        }
        for (; iw < W; iw++)
          ro[2 * iw] += c0[iw], ro[2 * iw + 1] += c1[iw];
        kw++; /* kw + 1 done too */
      } else if (a->sw == 1) {
        for (int64_t iw = 0; iw < W; iw++)
          ro[iw] += c0[iw];
      } else {
        for (int64_t iw = 0; iw < W; iw++)
          ro[iw * a->sw] += c0[iw];
      }
    }
  }
  memcpy(yrow, r + a->pl, (size_t)a->OW * sizeof(float));
}

#define KCPU_CONVT_GATHER 4096 /* floats of gathered taps, on the stack */
#define KCPU_CONVT_ROW 2048    /* floats of a scratch row, on the stack */

/* The scratch row's length for kcpu_convt_row, or 0 where that path does
 * not apply (taps before the output's first column, or too wide a row). */
static int64_t kcpu_convt_row_len(const kcpu_convt_scatter_args *a) {
  int64_t rn = (a->W - 1) * a->sw + (a->KW - 1) * a->dw + 1;
  rn = rn > a->pl + a->OW ? rn : a->pl + a->OW;
  return a->pl >= 0 && rn <= KCPU_CONVT_ROW ? rn : 0;
}

/* Output channels [b, e) of group g of image n from the cols. Per output
 * element, the taps are added in (kh, kw) order whatever the path. With
 * the GEMM turned around (cp != 1), a channel's taps lie R apart for each
 * input pixel: they are gathered first into rows of `ci` = H * W, so that
 * the row path applies to them too. */
static void kcpu_convt_scatter(void *ctx, int64_t b, int64_t e) {
  const kcpu_convt_scatter_args *a = ctx;
  int64_t Mg = a->M / a->group, OHW = a->OH * a->OW, KK = a->KH * a->KW, HW = a->H * a->W;
  float gath[KCPU_CONVT_GATHER], row[KCPU_CONVT_ROW];
  int gather = a->cp != 1 && KK * HW <= KCPU_CONVT_GATHER;
  int64_t ci = gather ? HW : a->ci, cp = gather ? 1 : a->cp;
  int64_t rn = kcpu_convt_row_len(a);
  int rows = gather && rn > 0;
  for (int64_t mi = b; mi < e; mi++) {
    int64_t m = a->g * Mg + mi;
    float *y = a->Y + (a->n * a->M + m) * OHW;
    float bv = a->bias ? a->bias[m] : 0.0f;
    const float *cm = a->cols + mi * KK * a->ci; /* tap 0 of this channel */
    if (gather) {
      cm = a->cols + mi * KK;
      for (int64_t p = 0; p < HW; p++)
        for (int64_t t = 0; t < KK; t++)
          gath[t * HW + p] = cm[p * a->cp + t];
      cm = gath;
    }
    if (rows) {
      for (int64_t oh = 0; oh < a->OH; oh++)
        kcpu_convt_row(a, cm, ci, bv, oh, row, rn, y + oh * a->OW);
      continue;
    }
    for (int64_t i = 0; i < OHW; i++)
      y[i] = bv;
    for (int64_t kh = 0; kh < a->KH; kh++)
      for (int64_t kw = 0; kw < a->KW; kw++) {
        const float *col = cm + (kh * a->KW + kw) * ci;
        /* input columns whose output column is inside: ow = iw * sw + o */
        int64_t o = kw * a->dw - a->pl;
        int64_t lo = o >= 0 ? 0 : (-o + a->sw - 1) / a->sw;
        int64_t hi = a->OW - o <= 0 ? 0 : (a->OW - o - 1) / a->sw + 1;
        hi = hi < a->W ? hi : a->W;
        for (int64_t ih = 0; ih < a->H; ih++) {
          int64_t oh = ih * a->sh - a->pt + kh * a->dh;
          if (oh < 0 || oh >= a->OH)
            continue;
          float *yr = y + oh * a->OW + o;
          const float *cr = col + ih * a->W * cp;
          if (cp != 1)
            for (int64_t iw = lo; iw < hi; iw++)
              yr[iw * a->sw] += cr[iw * cp];
          else if (a->sw == 1)
            for (int64_t iw = lo; iw < hi; iw++)
              yr[iw] += cr[iw];
          else
            for (int64_t iw = lo; iw < hi; iw++)
              yr[iw * a->sw] += cr[iw];
        }
      }
  }
}

/* Output rows [b, e) of group g of image n, rows of all its channels in
 * turn (item = channel * OH + oh), cols read in place (cp = 1): a layer
 * of few channels (an RGB output) still splits over the pool. */
static void kcpu_convt_scatter_rows(void *ctx, int64_t b, int64_t e) {
  const kcpu_convt_scatter_args *a = ctx;
  int64_t Mg = a->M / a->group, KK = a->KH * a->KW, rn = kcpu_convt_row_len(a);
  float row[KCPU_CONVT_ROW];
  for (int64_t t = b; t < e; t++) {
    int64_t mi = t / a->OH, oh = t % a->OH, m = a->g * Mg + mi;
    kcpu_convt_row(a, a->cols + mi * KK * a->ci, a->ci, a->bias ? a->bias[m] : 0.0f, oh, row,
                   rn, a->Y + ((a->n * a->M + m) * a->OH + oh) * a->OW);
  }
}

KCPU_PREBUILT void kcpu_k_convtranspose2d(const float *X, const float *Wt, const float *Wpk,
                                          const float *bias, float *Y, int64_t N, int64_t C,
                                          int64_t H, int64_t W, int64_t M, int64_t OH, int64_t OW,
                                          int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                                          int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                                          int64_t group, int64_t swap, int64_t lanes,
                                          struct kcpu_pool *pool) {
  if (N <= 0 || M <= 0 || OH <= 0 || OW <= 0 || group < 1)
    return;
  int64_t Cg = C / group, Mg = M / group, KK = KH * KW, R = Mg * KK, HW = H * W;
  int64_t all = swap && HW == 1 ? N : 1; /* images per GEMM */
  float *cols = kcpu_alloc(all * R * HW * (int64_t)sizeof(float));
  if (!cols)
    return; /* out of memory: the output is left unwritten, like any failed allocation here */
  kcpu_convt_scatter_args a = {.bias = bias, .Y = Y, .H = H, .W = W, .M = M, .OH = OH,
                               .OW = OW, .KH = KH, .KW = KW, .sh = sh, .sw = sw, .dh = dh,
                               .dw = dw, .pt = pt, .pl = pl, .group = group,
                               .ci = swap ? 1 : HW, .cp = swap ? R : 1};
  int64_t mr = kcpu_gemm_mr(lanes), nr = kcpu_gemm_nr(lanes);
  for (int64_t g = 0; g < group; g++)
    for (int64_t n = 0; n < N; n += all) {
      kcpu_gemm_desc d = {.K = Cg, .alpha = 1.0f, .C = cols, .lanes = lanes};
      const float *wg = Wt ? Wt + g * Cg * R : NULL;
      if (swap) { /* cols^T [pixels, R] = X^T W */
        d.M = all * HW, d.N = R;
        d.A = X + (n * C + g * Cg) * HW;
        d.lda = HW == 1 ? C : HW;
        d.trans_a = HW != 1;
        d.B = wg, d.ldb = R;
        d.Bpk = Wpk ? Wpk + g * kcpu_prepacked_size(R, Cg, nr) : NULL;
        d.ldc = R;
      } else { /* cols [R, pixels] = W^T X */
        d.M = R, d.N = HW;
        d.A = wg, d.lda = R, d.trans_a = 1;
        d.Apk = Wpk ? Wpk + g * kcpu_prepacked_size(R, Cg, mr) : NULL;
        d.B = X + (n * C + g * Cg) * HW, d.ldb = HW;
        d.ldc = HW;
      }
      if (Cg > 0) {
        kcpu_gemm_run(&d, pool);
      } else {
        for (int64_t i = 0; i < all * R * HW; i++)
          cols[i] = 0.0f;
      }
      a.g = g;
      for (int64_t j = 0; j < all; j++) {
        a.n = n + j;
        a.cols = cols + j * R;
        if (!swap && kcpu_convt_row_len(&a) > 0)
          kcpu_parallel_for(pool, Mg * OH, kcpu_convt_scatter_rows, &a);
        else
          kcpu_parallel_for(pool, Mg, kcpu_convt_scatter, &a);
      }
    }
  kcpu_free(cols);
}
