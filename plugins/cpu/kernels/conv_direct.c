/* plugins/cpu/kernels/conv_direct.c: direct 2-D convolution (f32, NCHW,
 * any strides, AVX-512 tiles) with no im2col matrix.
 *
 * The image of one (n, group) is copied once into zero-bordered planes:
 * with strides sh x sw, the padded image split into sh x sw phases, phase
 * (a, b) holding padded pixels (r*sh + a, j*sw + b), each Hq x Wq with
 * Hq = OH + (KH-1)*dh/sh and Wq = OW + (KW-1)*dw/sw (stride 1: one phase,
 * the padded image itself; every padded pixel is in at most one phase, so
 * the copy is about the image's size). Output pixel (oh, ow), at flat
 * index q = oh*Wq + ow, reads tap (c, kh, kw) in phase
 * (kh*dh % sh, kw*dw % sw) at q + (kh*dh/sh)*Wq + kw*dw/sw: a constant
 * shift of q per tap. So the GEMM's
 * B matrix, B(k, q) for k = (c, kh, kw), is the phase planes read at one
 * offset per k, and the micro-kernel loads its vectors straight from them:
 * what the im2col packer wrote (K x N floats, 27% of a 3x3 layer's time at
 * 56 x 56) is never written. The Wq - OW columns of each row are computed
 * and dropped (3% of the work at 56 x 56, 22% at 7 x 7, about what
 * 48-column panels already padded there).
 *
 * Filters are the prepacked A of the GEMM engine (gemm_impl.h), so the
 * reduction over k runs in the engine's order: KCPU_KC blocks, then k
 * within a block, summed in registers over the whole of K before the
 * epilogue (bias, residual, activation: kcpu_gemm_epi1, and Swish over
 * the segment) writes each row segment of the tile to its output row.
 * Results are the same for any thread count. */
#include "gemm_impl.h"

typedef float kd_v16 __attribute__((vector_size(64)));
typedef float kd_v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t kd_v16i __attribute__((vector_size(64)));

#define KD_MR 8
#define KD_NR 48
#define KD_AMAX (256 * 1024) /* bytes of filter rows a thread keeps hot in L2 */

typedef struct kcpu_dconv {
  const kcpu_gemm_desc *d;
  const kcpu_conv_geo *g;
  float *xp;         /* per channel sh*sw phase planes of Hq x Wq, then KD_NR zeros */
  const int64_t *bo; /* B row offsets into xp, one per k */
  int64_t Cg, OH, Hq, Wq, NQ, RP, tm, tn;
} kcpu_dconv;

/* The rows of the 8 x 48 tile, spelled out so that the accumulators stay
 * in registers (the library is built with -fno-unroll-loops). */
#define KD_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define KD_DECL(r) kd_v16 c0_##r = {0}, c1_##r = {0}, c2_##r = {0};
#define KD_FMA3(r)                                                                                 \
  {                                                                                                \
    float av = a[k * KD_MR + (r)];                                                                 \
    c0_##r += av * b0;                                                                             \
    c1_##r += av * b1;                                                                             \
    c2_##r += av * b2;                                                                             \
  }
#define KD_FMA2(r)                                                                                 \
  {                                                                                                \
    float av = a[k * KD_MR + (r)];                                                                 \
    c0_##r += av * b0;                                                                             \
    c1_##r += av * b1;                                                                             \
  }
#define KD_FMA1(r) c0_##r += a[k * KD_MR + (r)] * b0;
#define KD_SPILL(r)                                                                                \
  *(kd_v16 *)(t + (r)*KD_NR) = c0_##r;                                                             \
  *(kd_v16 *)(t + (r)*KD_NR + 16) = c1_##r;                                                        \
  *(kd_v16 *)(t + (r)*KD_NR + 32) = c2_##r;

/* t[8][48] = A rows [i0, i0+8) x B columns [q0, q0+48) over all of K.
 * Columns past nq are computed from the plane's zero tail or the next
 * row's data and ignored by the caller; nq picks 1, 2 or 3 vectors. */
static void kcpu_dconv_ukr(const kcpu_dconv *c, int64_t i0, int64_t q0, int64_t nq,
                           float *restrict t) {
  const float *Apk = c->d->Apk, *x = c->xp + q0;
  const int64_t *bo = c->bo;
  int64_t K = c->d->K;
  KD_ROWS(KD_DECL)
  for (int64_t k0 = 0; k0 < K; k0 += KCPU_KC) {
    int64_t kc = K - k0 < KCPU_KC ? K - k0 : KCPU_KC;
    const float *restrict a = Apk + k0 * c->RP + i0 * kc;
    const int64_t *o = bo + k0;
    /* The filters' next block for these rows (or the next rows' first
     * block) lies a whole packed block away, where no hardware prefetcher
     * follows: it is fetched while this one is used, a line every other k
     * (8 floats a k), so filters that stream from memory (ResNet's last
     * stage: 9 MB a layer) arrive in time. */
    const float *pf = k0 + KCPU_KC < K
                          ? Apk + (k0 + KCPU_KC) * c->RP +
                                i0 * (K - k0 - KCPU_KC < KCPU_KC ? K - k0 - KCPU_KC : KCPU_KC)
                          : Apk + (i0 + KD_MR) * (K < KCPU_KC ? K : KCPU_KC);
    if (nq > 32) {
      for (int64_t k = 0; k < kc; k++) {
        __builtin_prefetch(pf + k * KD_MR);
        const float *b = x + o[k];
        kd_v16 b0 = *(const kd_v16u *)b, b1 = *(const kd_v16u *)(b + 16);
        kd_v16 b2 = *(const kd_v16u *)(b + 32);
        KD_ROWS(KD_FMA3)
      }
    } else if (nq > 16) {
      for (int64_t k = 0; k < kc; k++) {
        __builtin_prefetch(pf + k * KD_MR);
        const float *b = x + o[k];
        kd_v16 b0 = *(const kd_v16u *)b, b1 = *(const kd_v16u *)(b + 16);
        KD_ROWS(KD_FMA2)
      }
    } else {
      for (int64_t k = 0; k < kc; k++) {
        __builtin_prefetch(pf + k * KD_MR);
        kd_v16 b0 = *(const kd_v16u *)(x + o[k]);
        KD_ROWS(KD_FMA1)
      }
    }
  }
  KD_ROWS(KD_SPILL)
}

/* Rows [m0, m0+mr) of tile t (columns q0 .. q0+nq on the padded grid)
 * through the epilogue into the output rows they belong to. */
static void kcpu_dconv_store(const kcpu_dconv *c, const float *t, int64_t m0, int64_t mr,
                             int64_t q0, int64_t nq) {
  const kcpu_gemm_desc *d = c->d;
  int64_t Wp = c->Wq, OW = c->g->OW;
  for (int64_t q = q0; q < q0 + nq;) {
    int64_t oh = q / Wp, ow = q - oh * Wp;
    if (ow >= OW) { /* a padding column: skip to the next row */
      q = (oh + 1) * Wp;
      continue;
    }
    int64_t len = OW - ow < q0 + nq - q ? OW - ow : q0 + nq - q, n = oh * OW + ow;
    for (int64_t r = 0; r < mr; r++) {
      const float *tr = t + r * KD_NR + (q - q0);
      float *y = d->C + (m0 + r) * d->ldc + n;
      int64_t j = 0;
      /* whole vectors: the GEMM's register epilogue (same operations, same
       * order as kcpu_gemm_epi1, which takes the rest) */
      if (!d->bias_col) {
        float br = d->bias_row ? d->bias_row[m0 + r] : 0.0f;
        const float *res = d->res ? d->res + (m0 + r) * d->ldr + n : NULL;
        kd_v16 z = {0};
        for (; j + 16 <= len; j += 16) {
          kd_v16 v = *(const kd_v16u *)(tr + j);
          if (d->bias_row)
            v += br;
          if (res)
            v += *(const kd_v16u *)(res + j);
          if (d->act == KCPU_ACT_RELU)
            v = (kd_v16)((kd_v16i)v & (kd_v16i)(v > z));
          KCPU_ACT_VEC_HARD(kd_v16, kd_v16i, v, d->act, d->act_a, d->act_b);
          *(kd_v16u *)(y + j) = v;
        }
      }
      for (; j < len; j++)
        y[j] = kcpu_gemm_epi1(d, tr[j], m0 + r, n + j);
      if (d->act == KCPU_ACT_SWISH) /* the one kcpu_gemm_epi1 leaves to a row pass */
        kcpu_act_swish_row(d->act_a, y, len);
    }
    q += len;
  }
}

/* Channels [b, e) of the padded image, as sh x sw phase planes: pixels
 * outside the input are zero. */
static void kcpu_dconv_pad_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_dconv *c = ctx;
  const kcpu_conv_geo *g = c->g;
  int64_t sh = g->sh, s = g->sw, Wq = c->Wq, plane = c->Hq * Wq;
  for (int64_t ch = b; ch < e; ch++) {
    const float *x = g->x + ch * g->H * g->W;
    for (int64_t ph = 0; ph < sh * s; ph++) {
      int64_t pa = ph / s, pb = ph % s;
      float *p = c->xp + (ch * sh * s + ph) * plane;
      /* input columns: iw = j*s + pb - pl for j in [lo, hi) */
      int64_t q = g->pl - pb, lo = q <= 0 ? 0 : (q + s - 1) / s;
      int64_t hi = g->W + q <= 0 ? 0 : (g->W + q - 1) / s + 1;
      hi = hi < Wq ? hi : Wq;
      lo = lo < hi ? lo : hi;
      for (int64_t r = 0; r < c->Hq; r++) {
        float *row = p + r * Wq;
        int64_t ih = r * sh + pa - g->pt;
        if (ih < 0 || ih >= g->H) {
          for (int64_t j = 0; j < Wq; j++)
            row[j] = 0.0f;
          continue;
        }
        const float *src = x + ih * g->W - q; /* src[j*s] is input column j*s - q */
        for (int64_t j = 0; j < lo; j++)
          row[j] = 0.0f;
        if (s == 1)
          for (int64_t j = lo; j < hi; j++)
            row[j] = src[j];
        else
          for (int64_t j = lo; j < hi; j++)
            row[j] = src[j * s];
        for (int64_t j = hi; j < Wq; j++)
          row[j] = 0.0f;
      }
    }
  }
}

/* Tile i of the tm x tn grid: rows in blocks whose filters fit KD_AMAX
 * (read once from memory, then from L2 for every column panel), each block
 * swept over the tile's column panels. */
static void kcpu_dconv_tile_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_dconv *c = ctx;
  const kcpu_gemm_desc *d = c->d;
  float t[KD_MR * KD_NR] __attribute__((aligned(64)));
  int64_t mb = KD_AMAX / (d->K * (int64_t)sizeof(float)) / KD_MR * KD_MR;
  if (mb < KD_MR)
    mb = KD_MR;
  for (int64_t i = b; i < e; i++) {
    int64_t im = i / c->tn, in = i % c->tn;
    int64_t m0 = kcpu_split(d->M, c->tm, im, KD_MR), m1 = kcpu_split(d->M, c->tm, im + 1, KD_MR);
    int64_t q0 = kcpu_split(c->NQ, c->tn, in, KD_NR), q1 = kcpu_split(c->NQ, c->tn, in + 1, KD_NR);
    for (int64_t ic = m0; ic < m1; ic += mb) {
      int64_t ie = ic + mb < m1 ? ic + mb : m1;
      for (int64_t q = q0; q < q1; q += KD_NR) {
        int64_t nq = q1 - q < KD_NR ? q1 - q : KD_NR;
        for (int64_t ir = ic; ir < ie; ir += KD_MR) {
          kcpu_dconv_ukr(c, ir, q, nq, t);
          kcpu_dconv_store(c, t, ir, ie - ir < KD_MR ? ie - ir : KD_MR, q, nq);
        }
      }
    }
  }
}

int kcpu_conv_direct(const kcpu_gemm_desc *d, const kcpu_conv_geo *g, struct kcpu_pool *pool) {
  int64_t khw = g->KH * g->KW;
  if (kcpu_gemm_lanes(d->lanes) != 16 || !d->Apk || g->sh < 1 || g->sw < 1 || khw < 2 ||
      d->act == KCPU_ACT_GELU || d->K % khw || d->N % g->OW)
    return 0;
  kcpu_dconv c = {.d = d, .g = g, .Cg = d->K / khw, .OH = d->N / g->OW};
  c.Hq = c.OH + (g->KH - 1) * g->dh / g->sh;
  c.Wq = g->OW + (g->KW - 1) * g->dw / g->sw;
  c.NQ = (c.OH - 1) * c.Wq + g->OW;
  c.RP = (d->M + KD_MR - 1) / KD_MR * KD_MR;
  /* The last panel's vectors read up to KD_NR - 1 floats past the last
   * tap's last pixel, at most (Cg-1)*chs + (sh*sw-1)*plane + (Hq-1)*Wq +
   * Wq-1: a zero tail keeps every read inside the buffer. */
  int64_t plane = c.Hq * c.Wq, chs = g->sh * g->sw * plane;
  float *xp = kcpu_alloc((c.Cg * chs + KD_NR) * (int64_t)sizeof(float));
  int64_t *bo = kcpu_alloc(d->K * (int64_t)sizeof(int64_t));
  if (!xp || !bo) {
    kcpu_free(xp);
    kcpu_free(bo);
    return 0;
  }
  for (int64_t j = 0; j < KD_NR; j++)
    xp[c.Cg * chs + j] = 0.0f;
  for (int64_t k = 0; k < d->K; k++) {
    int64_t ch = k / khw, r = k % khw, ry = r / g->KW * g->dh, rx = r % g->KW * g->dw;
    bo[k] = ch * chs + (ry % g->sh * g->sw + rx % g->sw) * plane + ry / g->sh * c.Wq + rx / g->sw;
  }
  c.xp = xp;
  c.bo = bo;
  int64_t T = kcpu_pool_threads(pool);
  if (T > 1 && c.Cg * chs >= 16384)
    kcpu_parallel_for(pool, c.Cg, kcpu_dconv_pad_fn, &c);
  else
    kcpu_dconv_pad_fn(&c, 0, c.Cg);
  c.tm = 1;
  c.tn = 1;
  if (T > 1 && d->M * c.NQ * d->K >= 65536)
    kcpu_gemm_grid(d->M, c.NQ, KD_MR, KD_NR, 16, 1, T, &c.tm, &c.tn);
  if (c.tm * c.tn > 1)
    kcpu_parallel_for(pool, c.tm * c.tn, kcpu_dconv_tile_fn, &c);
  else
    kcpu_dconv_tile_fn(&c, 0, 1);
  kcpu_free(xp);
  kcpu_free(bo);
  return 1;
}
