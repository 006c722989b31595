/* plugins/cpu/kernels/linalg_gemm.c: SGEMM with packed panels, cache blocking
 * (KC x MC blocks of A in L2, KC x NR micro-panels of B in L1) and a
 * register-blocked micro-kernel written with vector extensions, one variant
 * per target vector width, plus the MatMul and Gemm entry points.
 *
 * Every C element is reduced over k in the same order (KC blocks, then k
 * within a block) whatever the tile it falls in, so results are identical
 * for any thread count. */
#include "gemm_impl.h"
#include "kcpu_act.h"
#include "kcpu_math.h"

#include <string.h>

#define KCPU_MC 144  /* multiple of every MR below */
#define KCPU_NC 1536 /* multiple of every NR below (48, 16, 8) */

typedef float v16f __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef float v4u __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline int64_t kcpu_min(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/* alpha is folded into A here, once per element. */
static void kcpu_pack_a(const kcpu_gemm_desc *d, float *dst, int64_t m0, int64_t mc, int64_t k0,
                        int64_t kc, int64_t MR) {
  float alpha = d->alpha;
  for (int64_t i = 0; i < mc; i += MR) {
    int64_t mr = kcpu_min(MR, mc - i);
    if (!d->trans_a) {
      for (int64_t r = 0; r < mr; r++) {
        const float *src = d->A + (m0 + i + r) * d->lda + k0;
        for (int64_t k = 0; k < kc; k++)
          dst[k * MR + r] = alpha * src[k];
      }
    } else {
      for (int64_t k = 0; k < kc; k++) {
        const float *src = d->A + (k0 + k) * d->lda + m0 + i;
        for (int64_t r = 0; r < mr; r++)
          dst[k * MR + r] = alpha * src[r];
      }
    }
    for (int64_t r = mr; r < MR; r++)
      for (int64_t k = 0; k < kc; k++)
        dst[k * MR + r] = 0.0f;
    dst += kc * MR;
  }
}

static void kcpu_pack_b_dense(const kcpu_gemm_desc *d, float *dst, int64_t k0, int64_t kc,
                              int64_t n0, int64_t nc, int64_t NR) {
  for (int64_t j = 0; j < nc; j += NR) {
    int64_t nr = kcpu_min(NR, nc - j);
    if (!d->trans_b) {
      for (int64_t k = 0; k < kc; k++) {
        memcpy(dst + k * NR, d->B + (k0 + k) * d->ldb + n0 + j, (size_t)nr * sizeof(float));
        for (int64_t c = nr; c < NR; c++)
          dst[k * NR + c] = 0.0f;
      }
    } else {
      for (int64_t c = 0; c < nr; c++) {
        const float *src = d->B + (n0 + j + c) * d->ldb + k0;
        for (int64_t k = 0; k < kc; k++)
          dst[k * NR + c] = src[k];
      }
      for (int64_t k = 0; k < kc; k++)
        for (int64_t c = nr; c < NR; c++)
          dst[k * NR + c] = 0.0f;
    }
    dst += kc * NR;
  }
}

/* The micro-kernel's rows are spelled out by these macros rather than
 * looped over: the library is compiled with -fno-unroll-loops, which marks
 * every loop unroll-disabled, and a rolled row loop would keep the
 * accumulators in memory (a load and a store around every FMA). Spelled
 * out, they are MR x 2 named vectors that stay in registers. */
#define KCPU_ROWS6(X, A) X(A, 0) X(A, 1) X(A, 2) X(A, 3) X(A, 4) X(A, 5)
#define KCPU_UKR_DECL(VT, r) VT c0_##r = {0}, c1_##r = {0};
#define KCPU_UKR_FMA(MR, r)                                                                        \
  {                                                                                                \
    float av_##r = a[k * (MR) + (r)];                                                              \
    c0_##r += av_##r * b0;                                                                         \
    c1_##r += av_##r * b1;                                                                         \
  }
#define KCPU_UKR_SPILL(unused, r)                                                                  \
  acc0[r] = c0_##r;                                                                                \
  acc1[r] = c1_##r;

/* One micro-kernel + blocked driver per (vector type, lanes, rows). */
#define KCPU_GEMM_UKR(SUF, VT, VU, VI, L, MR, ROWS)                                                \
  static void kcpu_ukr_##SUF(int64_t kc, const float *restrict a, const float *restrict b,         \
                             float *restrict c, int64_t ldc, int64_t mr, int64_t nr, int load_c,   \
                             const kcpu_gemm_desc *ep, int64_t m0, int64_t n0) {                   \
    ROWS(KCPU_UKR_DECL, VT)                                                                        \
    for (int64_t k = 0; k < kc; k++) {                                                             \
      VT b0 = *(const VT *)(b + k * 2 * L), b1 = *(const VT *)(b + k * 2 * L + L);                 \
      ROWS(KCPU_UKR_FMA, MR)                                                                       \
    }                                                                                              \
    VT acc0[MR], acc1[MR];                                                                         \
    ROWS(KCPU_UKR_SPILL, 0)                                                                        \
    if (mr == MR && nr == 2 * L) {                                                                 \
      for (int r = 0; r < MR; r++) {                                                               \
        float *cr = c + r * ldc;                                                                   \
        VT v0 = acc0[r], v1 = acc1[r];                                                             \
        if (load_c) {                                                                              \
          v0 += *(const VU *)cr;                                                                   \
          v1 += *(const VU *)(cr + L);                                                             \
        }                                                                                          \
        if (ep) {                                                                                  \
          int64_t m = m0 + r;                                                                      \
          if (ep->bias_col) {                                                                      \
            v0 += *(const VU *)(ep->bias_col + n0);                                                \
            v1 += *(const VU *)(ep->bias_col + n0 + L);                                            \
          }                                                                                        \
          if (ep->bias_row) {                                                                      \
            v0 += ep->bias_row[m];                                                                 \
            v1 += ep->bias_row[m];                                                                 \
          }                                                                                        \
          if (ep->res) {                                                                           \
            v0 += *(const VU *)(ep->res + m * ep->ldr + n0);                                       \
            v1 += *(const VU *)(ep->res + m * ep->ldr + n0 + L);                                   \
          }                                                                                        \
          if (ep->act == KCPU_ACT_RELU) {                                                          \
            VT z = {0};                                                                            \
            v0 = (VT)((VI)v0 & (VI)(v0 > z));                                                      \
            v1 = (VT)((VI)v1 & (VI)(v1 > z));                                                      \
          }                                                                                        \
          KCPU_ACT_VEC_HARD(VT, VI, v0, ep->act, ep->act_a, ep->act_b);                            \
          KCPU_ACT_VEC_HARD(VT, VI, v1, ep->act, ep->act_a, ep->act_b);                            \
        }                                                                                          \
        *(VU *)cr = v0;                                                                            \
        *(VU *)(cr + L) = v1;                                                                      \
      }                                                                                            \
    } else {                                                                                       \
      float tmp[MR * 2 * L] __attribute__((aligned(64)));                                          \
      for (int r = 0; r < MR; r++) {                                                               \
        *(VT *)(tmp + r * 2 * L) = acc0[r];                                                        \
        *(VT *)(tmp + r * 2 * L + L) = acc1[r];                                                    \
      }                                                                                            \
      for (int64_t r = 0; r < mr; r++)                                                             \
        for (int64_t j = 0; j < nr; j++) {                                                         \
          float v = tmp[r * 2 * L + j];                                                            \
          if (load_c)                                                                              \
            v += c[r * ldc + j];                                                                   \
          if (ep)                                                                                  \
            v = kcpu_gemm_epi1(ep, v, m0 + r, n0 + j);                                             \
          c[r * ldc + j] = v;                                                                      \
        }                                                                                          \
    }                                                                                              \
    if (ep && ep->act == KCPU_ACT_SWISH)                                                           \
      for (int64_t r = 0; r < mr; r++)                                                             \
        kcpu_act_swish_row(ep->act_a, c + r * ldc, nr);                                            \
  }

/* The blocked loops around micro-kernel kcpu_ukr_<SUF> of MR x NR tiles. */
#define KCPU_GEMM_BLOCKED(SUF, MR, NR)                                                             \
  static void kcpu_gemm_blocked_##SUF(const kcpu_gemm_desc *d, int64_t m0, int64_t m1, int64_t n0, \
                                      int64_t n1, float *Ap, float *Bp) {                          \
    int64_t K = d->K, nkb = K > 0 ? (K + KCPU_KC - 1) / KCPU_KC : 1;                               \
    kcpu_pack_b_fn pack_b = d->pack_b ? d->pack_b : kcpu_pack_b_dense;                             \
    for (int64_t jc = n0; jc < n1; jc += KCPU_NC) {                                                \
      int64_t nc = kcpu_min(KCPU_NC, n1 - jc);                                                     \
      for (int64_t kb = 0; kb < nkb; kb++) {                                                       \
        int64_t k0 = kb * KCPU_KC, kc = kcpu_min(KCPU_KC, K - k0);                                 \
        int load_c = kb > 0 || d->accumulate;                                                      \
        const kcpu_gemm_desc *ep = kb == nkb - 1 ? d : NULL;                                       \
        const float *Bb = Bp;                                                                      \
        if (d->Bpk)                                                                                \
          Bb = d->Bpk + k0 * ((d->N + NR - 1) / NR * NR) + jc * kc;                                \
        else                                                                                       \
          pack_b(d, Bp, k0, kc, jc, nc, NR);                                                       \
        for (int64_t ic = m0; ic < m1; ic += KCPU_MC) {                                            \
          int64_t mc = kcpu_min(KCPU_MC, m1 - ic);                                                 \
          const float *Ab = Ap;                                                                    \
          if (d->Apk)                                                                              \
            Ab = d->Apk + k0 * ((d->M + MR - 1) / MR * MR) + ic * kc;                              \
          else                                                                                     \
            kcpu_pack_a(d, Ap, ic, mc, k0, kc, MR);                                                \
          for (int64_t jr = 0; jr < nc; jr += NR)                                                  \
            for (int64_t ir = 0; ir < mc; ir += MR)                                                \
              kcpu_ukr_##SUF(kc, Ab + ir * kc, Bb + jr * kc, d->C + (ic + ir) * d->ldc + jc + jr,  \
                             d->ldc, kcpu_min(MR, mc - ir), kcpu_min(NR, nc - jr), load_c, ep,     \
                             ic + ir, jc + jr);                                                    \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

KCPU_GEMM_UKR(8, v8f, v8u, v8i, 8, 6, KCPU_ROWS6)
KCPU_GEMM_BLOCKED(8, 6, 16)
KCPU_GEMM_UKR(4, v4f, v4u, v4i, 4, 6, KCPU_ROWS6)
KCPU_GEMM_BLOCKED(4, 6, 8)

/* AVX-512: 8 x 48 tiles (24 accumulators, 3 B vectors and 8 broadcasts per
 * k). Measured on Zen 5 in L1: 250 GFLOP/s per core against 215 for 12 x 32,
 * which needs 12 broadcasts for the same 24 FMAs; and 8 rows divide the
 * usual channel counts exactly. Panels narrower than 33 / 17 columns run
 * a 2- / 1-vector loop instead of multiplying padding. */
#define KCPU_ROWS8(X, A) X(A, 0) X(A, 1) X(A, 2) X(A, 3) X(A, 4) X(A, 5) X(A, 6) X(A, 7)
#define KCPU_U16_DECL(u, r) v16f c0_##r = {0}, c1_##r = {0}, c2_##r = {0};
/* Row r of A at step k: packed, the micro-panel's column k; direct, row r
 * of A itself (rows past mr read row mr - 1 again: in bounds, discarded). */
#define KCPU_U16_ROW(u, r)                                                                         \
  const float *ap_##r = direct ? a + ((r) < mr ? (r) : mr - 1) * lda : a + (r);                  \
  const int64_t ks_##r = direct ? 1 : 8;
#define KCPU_U16_FMA3(u, r)                                                                        \
  if ((r) < R) {                                                                                   \
    float av_##r = ap_##r[k * ks_##r];                                                             \
    c0_##r += av_##r * b0;                                                                         \
    c1_##r += av_##r * b1;                                                                         \
    c2_##r += av_##r * b2;                                                                         \
  }
#define KCPU_U16_FMA2(u, r)                                                                        \
  if ((r) < R) {                                                                                   \
    float av_##r = ap_##r[k * ks_##r];                                                             \
    c0_##r += av_##r * b0;                                                                         \
    c1_##r += av_##r * b1;                                                                         \
  }
#define KCPU_U16_FMA1(u, r)                                                                        \
  if ((r) < R)                                                                                     \
    c0_##r += ap_##r[k * ks_##r] * b0;
#define KCPU_U16_SPILL(u, r)                                                                       \
  acc[r][0] = c0_##r;                                                                              \
  acc[r][1] = c1_##r;                                                                              \
  acc[r][2] = c2_##r;

/* The AVX-512 micro-kernel, specialized by its callers on two constants:
 * direct (A read in place, row-major with leading dimension lda, instead
 * of from a packed micro-panel) and R, the rows it computes (8, or 4 / 2 /
 * 1 for the last rows of a direct A: M = 49 would otherwise spend 1/8 of
 * its time on padding rows). */
static inline __attribute__((always_inline)) void
kcpu_ukr_16_body(int direct, int R, int64_t kc, const float *restrict a, int64_t lda,
                 const float *restrict b, float *restrict c, int64_t ldc, int64_t mr, int64_t nr,
                 int load_c, const kcpu_gemm_desc *ep, int64_t m0, int64_t n0,
                 const float *pfb, int64_t pfn) {
  KCPU_ROWS8(KCPU_U16_DECL, 0)
  KCPU_ROWS8(KCPU_U16_ROW, 0)
  /* The next A micro-panel (8 x kc floats on): a prepacked A is one
   * sequential stream in the engine's order, which the hardware
   * prefetchers lose at every 4 KiB page; weights that stream from memory
   * (a late 1x1 convolution's 4 MB) are fetched a micro-panel ahead, a
   * line every other k. Prefetches never fault, so reading past the end
   * of A is harmless. A direct A's rows are sequential streams already;
   * there the full-width loop prefetches pfn lines from pfb instead, a
   * share of the next B panel (kcpu_gemm_direct_16). */
  const float *pf = a + 8 * kc;
  if (nr > 32) {
    for (int64_t k = 0; k < kc; k++) {
      if (!direct)
        __builtin_prefetch(pf + k * 8);
      else if (k < pfn)
        __builtin_prefetch(pfb + k * 16);
      v16f b0 = *(const v16f *)(b + k * 48), b1 = *(const v16f *)(b + k * 48 + 16);
      v16f b2 = *(const v16f *)(b + k * 48 + 32);
      KCPU_ROWS8(KCPU_U16_FMA3, 0)
    }
  } else if (nr > 16) {
    for (int64_t k = 0; k < kc; k++) {
      if (!direct)
        __builtin_prefetch(pf + k * 8);
      v16f b0 = *(const v16f *)(b + k * 48), b1 = *(const v16f *)(b + k * 48 + 16);
      KCPU_ROWS8(KCPU_U16_FMA2, 0)
    }
  } else {
    for (int64_t k = 0; k < kc; k++) {
      if (!direct)
        __builtin_prefetch(pf + k * 8);
      v16f b0 = *(const v16f *)(b + k * 48);
      KCPU_ROWS8(KCPU_U16_FMA1, 0)
    }
  }
  v16f acc[8][3];
  KCPU_ROWS8(KCPU_U16_SPILL, 0)
  if (nr == 48) {
    for (int r = 0; r < mr; r++) {
      float *cr = c + r * ldc;
      int64_t m = m0 + r;
      for (int v = 0; v < 3; v++) {
        v16f x = acc[r][v];
        if (load_c)
          x += *(const v16u *)(cr + 16 * v);
        if (ep) {
          if (ep->bias_col)
            x += *(const v16u *)(ep->bias_col + n0 + 16 * v);
          if (ep->bias_row)
            x += ep->bias_row[m];
          if (ep->res)
            x += *(const v16u *)(ep->res + m * ep->ldr + n0 + 16 * v);
          if (ep->act == KCPU_ACT_RELU) {
            v16f z = {0};
            x = (v16f)((v16i)x & (v16i)(x > z));
          }
          KCPU_ACT_VEC_HARD(v16f, v16i, x, ep->act, ep->act_a, ep->act_b);
        }
        *(v16u *)(cr + 16 * v) = x;
      }
    }
  } else {
    for (int64_t r = 0; r < mr; r++)
      for (int64_t j = 0; j < nr; j++) {
        float v = acc[r][j / 16][j % 16];
        if (load_c)
          v += c[r * ldc + j];
        if (ep)
          v = kcpu_gemm_epi1(ep, v, m0 + r, n0 + j);
        c[r * ldc + j] = v;
      }
  }
  if (ep && ep->act == KCPU_ACT_SWISH)
    for (int64_t r = 0; r < mr; r++)
      kcpu_act_swish_row(ep->act_a, c + r * ldc, nr);
}

static void kcpu_ukr_16(int64_t kc, const float *restrict a, const float *restrict b,
                        float *restrict c, int64_t ldc, int64_t mr, int64_t nr, int load_c,
                        const kcpu_gemm_desc *ep, int64_t m0, int64_t n0) {
  kcpu_ukr_16_body(0, 8, kc, a, 0, b, c, ldc, mr, nr, load_c, ep, m0, n0, NULL, 0);
}

/* A read in place: rows [0, mr) of a, lda apart. */
static void kcpu_ukr_16_direct(int64_t kc, const float *restrict a, int64_t lda,
                               const float *restrict b, float *restrict c, int64_t ldc, int64_t mr,
                               int64_t nr, int load_c, const kcpu_gemm_desc *ep, int64_t m0,
                               int64_t n0, const float *pfb, int64_t pfn) {
  if (mr > 4)
    kcpu_ukr_16_body(1, 8, kc, a, lda, b, c, ldc, mr, nr, load_c, ep, m0, n0, pfb, pfn);
  else if (mr > 2)
    kcpu_ukr_16_body(1, 4, kc, a, lda, b, c, ldc, mr, nr, load_c, ep, m0, n0, pfb, pfn);
  else if (mr == 2)
    kcpu_ukr_16_body(1, 2, kc, a, lda, b, c, ldc, mr, nr, load_c, ep, m0, n0, pfb, pfn);
  else
    kcpu_ukr_16_body(1, 1, kc, a, lda, b, c, ldc, mr, nr, load_c, ep, m0, n0, pfb, pfn);
}

/* The blocked loops of KCPU_GEMM_BLOCKED without packing A: the
 * micro-kernel reads A's rows where they are. Packing costs a pass over
 * A per (K block, N block), as much as the multiply itself when N is
 * small (ConvNeXt's 384 -> 96 projection: 190 -> 255 GFLOP/s on one core
 * without it); unpacked, the 8 rows are 8 sequential streams, which the
 * hardware prefetchers follow.
 *
 * Prepacked weights (B) that no longer sit in L2 come from L3 or memory
 * on the first row block of each panel, at a demand rate of 3 lines per
 * k step, and that block stalls on them. While the first M block runs
 * over one panel, its row blocks prefetch the next one (or the next K
 * block's first), a line per k step shared out between them, so that it
 * is in L2 when they reach it. Zen 5, 2 threads, 50-row projections with
 * 4 MB weights each: 24 MB of them (L3) 1.52 -> 1.41 ms, ViT-B/16 82.4 ->
 * 79.3 ms; weights that stay in L2 are unchanged. */
static void kcpu_gemm_direct_16(const kcpu_gemm_desc *d, int64_t m0, int64_t m1, int64_t n0,
                                int64_t n1, float *Bp) {
  const int64_t MR = 8, NR = 48;
  int64_t K = d->K, nkb = K > 0 ? (K + KCPU_KC - 1) / KCPU_KC : 1;
  kcpu_pack_b_fn pack_b = d->pack_b ? d->pack_b : kcpu_pack_b_dense;
  for (int64_t jc = n0; jc < n1; jc += KCPU_NC) {
    int64_t nc = kcpu_min(KCPU_NC, n1 - jc);
    for (int64_t kb = 0; kb < nkb; kb++) {
      int64_t k0 = kb * KCPU_KC, kc = kcpu_min(KCPU_KC, K - k0);
      int load_c = kb > 0 || d->accumulate;
      const kcpu_gemm_desc *ep = kb == nkb - 1 ? d : NULL;
      const float *Bb = Bp;
      if (d->Bpk)
        Bb = d->Bpk + k0 * ((d->N + NR - 1) / NR * NR) + jc * kc;
      else
        pack_b(d, Bp, k0, kc, jc, nc, NR);
      for (int64_t ic = m0; ic < m1; ic += KCPU_MC) {
        int64_t mc = kcpu_min(KCPU_MC, m1 - ic), nblk = (mc + MR - 1) / MR;
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const float *next = NULL;
          int64_t lines = 0;
          if (d->Bpk && ic == m0 && jr + NR < nc) {
            next = Bb + (jr + NR) * kc;
            lines = kcpu_min(NR, nc - jr - NR) * kc / 16;
          } else if (d->Bpk && ic == m0 && kb + 1 < nkb) {
            int64_t k1 = k0 + KCPU_KC, kc1 = kcpu_min(KCPU_KC, K - k1);
            next = d->Bpk + k1 * ((d->N + NR - 1) / NR * NR) + jc * kc1;
            lines = kcpu_min(NR, nc) * kc1 / 16;
          }
          int64_t per = (lines + nblk - 1) / nblk;
          for (int64_t ir = 0, i = 0; ir < mc; ir += MR, i++) {
            int64_t pfn = kcpu_min(per, lines - i * per);
            kcpu_ukr_16_direct(kc, d->A + (ic + ir) * d->lda + k0, d->lda, Bb + jr * kc,
                               d->C + (ic + ir) * d->ldc + jc + jr, d->ldc,
                               kcpu_min(MR, mc - ir), kcpu_min(NR, nc - jr), load_c, ep, ic + ir,
                               jc + jr, pfn > 0 ? next + i * per * 16 : NULL, pfn > 0 ? pfn : 0);
          }
        }
      }
    }
  }
}
KCPU_GEMM_BLOCKED(16, 8, 48)

static int64_t kcpu_lanes_norm(int64_t lanes) {
  return lanes >= 16 ? 16 : lanes >= 8 ? 8 : 4;
}
static int64_t kcpu_mr_of(int64_t L) {
  return kcpu_gemm_mr(L);
}

/* Whether A is read in place (kcpu_gemm_direct_16): AVX-512, not
 * prepacked, not transposed, and alpha 1 (packing is where alpha is
 * applied; with alpha 1 both paths compute the same bits). */
static int kcpu_gemm_a_direct(const kcpu_gemm_desc *d, int64_t L) {
  return L == 16 && !d->Apk && !d->trans_a && d->alpha == 1.0f;
}

KCPU_PREBUILT void kcpu_gemm_tile(const kcpu_gemm_desc *d, int64_t m0, int64_t m1, int64_t n0,
                                  int64_t n1) {
  if (m0 >= m1 || n0 >= n1)
    return;
  int64_t L = kcpu_lanes_norm(d->lanes), NR = kcpu_gemm_nr(L), MR = kcpu_gemm_mr(L);
  int64_t kc = d->K < KCPU_KC ? d->K : KCPU_KC;
  int64_t nc = kcpu_min(KCPU_NC, (n1 - n0 + NR - 1) / NR * NR);
  int64_t mc = kcpu_min(KCPU_MC, (m1 - m0 + MR - 1) / MR * MR);
  int direct = kcpu_gemm_a_direct(d, L);
  float *Ap = direct ? NULL : kcpu_alloc((mc + MR) * (kc + 1) * (int64_t)sizeof(float));
  float *Bp = kcpu_alloc(nc * (kc + 1) * (int64_t)sizeof(float));
  if ((Ap || direct) && Bp) {
    if (direct)
      kcpu_gemm_direct_16(d, m0, m1, n0, n1, Bp);
    else if (L == 16)
      kcpu_gemm_blocked_16(d, m0, m1, n0, n1, Ap, Bp);
    else if (L == 8)
      kcpu_gemm_blocked_8(d, m0, m1, n0, n1, Ap, Bp);
    else
      kcpu_gemm_blocked_4(d, m0, m1, n0, n1, Ap, Bp);
    /* GELU over the finished tile, while it is still in cache: a loop of
     * the inlined erf that vectorizes, which the register epilogue's
     * explicit vectors would not */
    if (d->act == KCPU_ACT_GELU)
      for (int64_t m = m0; m < m1; m++) {
        float *cr = d->C + m * d->ldc;
        for (int64_t n = n0; n < n1; n++)
          cr[n] = kcpu_m_gelu(cr[n]);
      }
  }
  kcpu_free(Ap);
  kcpu_free(Bp);
}

/* Tile boundaries are multiples of MR / NR so that tiles do not split
 * micro-tiles (not needed for correctness, only for speed). */
int64_t kcpu_split(int64_t total, int64_t parts, int64_t i, int64_t unit) {
  int64_t units = (total + unit - 1) / unit;
  int64_t u = units * i / parts * unit;
  return u < total ? u : total;
}

/* The time of a tile's rows in tenths of a row of MR-row micro-tiles: A
 * read in place runs its last rows with the 4-, 2- or 1-row kernel
 * (kcpu_ukr_16_direct). Measured on one Zen 4 core (K 512 or 2048, N 2048
 * or 512, against 8-row tiles): 1 or 2 last rows cost 2.2 to 2.3 rows, 3
 * or 4 rows 4.1, 5 to 7 rows 8.2 (a whole tile). */
static int64_t kcpu_grid_rows(int64_t rows, int64_t MR, int a) {
  if (a != KCPU_A_IN_PLACE)
    return (rows + MR - 1) / MR * MR * 10;
  static const int64_t last[8] = {0, 22, 23, 41, 41, 82, 82, 82};
  return rows / 8 * 80 + last[rows % 8];
}

/* The row unit of a split: whole micro-tiles, or any row where A is read
 * in place. */
static int64_t kcpu_grid_unit(int64_t MR, int a) {
  return a == KCPU_A_IN_PLACE ? 1 : MR;
}

/* The T = tm * tn grid whose busiest thread has the least work: its rows
 * (kcpu_grid_rows) times its columns as the micro-kernel runs them
 * (whole NR panels, a narrow last panel in vectors of L lanes on
 * AVX-512), plus the packing it does (its B columns unless B is
 * prepacked, and its A rows unless A is prepacked or read in place). Tiles
 * follow kcpu_split, so a 49-column conv output on 2 threads would be 48 +
 * 1 columns: that grid loses to splitting the rows. A read in place splits
 * at any row: 50 rows of a 2048 -> 512 projection (prepacked weights, 11
 * panels) run as 25 + 25 rows, 490 us on two cores, where 5 + 6 panels
 * took 530. Ties go to splitting N, where each thread packs only its own
 * B columns. */
void kcpu_gemm_grid(int64_t M, int64_t N, int64_t MR, int64_t NR, int64_t L, int a, int b_packed,
                    int64_t T, int64_t *out_tm, int64_t *out_tn) {
  int64_t best_tm = 1, best_tn = T, best_cost = -1, mu = kcpu_grid_unit(MR, a);
  for (int64_t tn = T; tn >= 1; tn--) {
    if (T % tn)
      continue;
    int64_t tm = T / tn, cost = 0;
    for (int64_t im = 0; im < tm; im++) {
      int64_t rows = kcpu_split(M, tm, im + 1, mu) - kcpu_split(M, tm, im, mu);
      int64_t rt = kcpu_grid_rows(rows, MR, a);
      for (int64_t in = 0; in < tn; in++) {
        int64_t cols = kcpu_split(N, tn, in + 1, NR) - kcpu_split(N, tn, in, NR);
        int64_t rem = cols % NR, step = L == 16 ? L : NR;
        int64_t eff = cols - rem + (rem + step - 1) / step * step;
        /* in place, a last panel of one or two vectors counts as 1.5 or
         * 2.5 (fewer FMAs per load of B) */
        if (a == KCPU_A_IN_PLACE && L == 16 && rem)
          eff += 8;
        int64_t c = rt * eff + 80 * ((b_packed ? 0 : eff) + (a == KCPU_A_PACKS ? rows : 0));
        cost = c > cost ? c : cost;
      }
    }
    /* in place, leaving the N split (each thread reads only its own
     * columns of B) takes a 2% gain by this count */
    if (a == KCPU_A_IN_PLACE && best_cost >= 0 && tn < T)
      cost += cost / 50;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_tm = tm;
      best_tn = tn;
    }
  }
  *out_tm = best_tm;
  *out_tn = best_tn;
}

typedef struct kcpu_gemm_task {
  const kcpu_gemm_desc *d;
  int64_t tm, tn, mu, NR; /* mu: the row unit of the split */
} kcpu_gemm_task;

static void kcpu_gemm_task_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_gemm_task *t = ctx;
  for (int64_t i = b; i < e; i++) {
    int64_t im = i / t->tn, in = i % t->tn;
    kcpu_gemm_tile(t->d, kcpu_split(t->d->M, t->tm, im, t->mu),
                   kcpu_split(t->d->M, t->tm, im + 1, t->mu), kcpu_split(t->d->N, t->tn, in, t->NR),
                   kcpu_split(t->d->N, t->tn, in + 1, t->NR));
  }
}

/* One row of A (M = 1, a classifier head, a decoder step): a matrix-vector
 * product that streams B once. With B prepacked, panel p holds columns
 * [p*NR, p*NR + NR) as kc rows of NR floats per k block, so a panel's
 * columns accumulate in NR lanes; a dense row-major B is read a row at a
 * time the same way. Panels are split over the pool. The sum, C (when
 * accumulating) and the epilogue come in the tiled engine's order. */
typedef struct kcpu_gemv_ctx {
  const kcpu_gemm_desc *d;
  int64_t NR, NP; /* NP: N rounded up to NR (the prepacked width) */
} kcpu_gemv_ctx;

/* The epilogue of one row-of-A product's column n, v its sum over k. */
static inline float kcpu_gemv_epi(const kcpu_gemm_desc *d, float v, int64_t n) {
  if (d->accumulate)
    v += d->C[n];
  v = kcpu_gemm_epi1(d, v, 0, n);
  if (d->act == KCPU_ACT_GELU)
    v = kcpu_m_gelu(v);
  else if (d->act == KCPU_ACT_SWISH)
    v = v * kcpu_m_sigmoid(d->act_a * v);
  return v;
}

static void kcpu_gemv_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_gemv_ctx *g = ctx;
  const kcpu_gemm_desc *d = g->d;
  int64_t NR = g->NR, K = d->K, N = d->N;
  const float *a = d->A;
  int64_t as = d->trans_a ? d->lda : 1; /* A(0, k) = a[k * as] */
  for (int64_t p = b; p < e; p++) {
    float acc[KCPU_NR_MAX] = {0}, acc2[KCPU_NR_MAX] = {0};
    /* with prepacked B, two panels at once: two streams of B keep more
     * loads in flight (the product is bound by reading B); each column's
     * terms are still summed in k order */
    int two = d->Bpk && p + 1 < e;
    int64_t n0 = p * NR, w = N - n0 < NR ? N - n0 : NR;
    for (int64_t k0 = 0; k0 < K; k0 += KCPU_KC) {
      int64_t kc = K - k0 < KCPU_KC ? K - k0 : KCPU_KC;
      if (two) {
        const float *panel = d->Bpk + k0 * g->NP + p * NR * kc, *panel2 = panel + NR * kc;
        for (int64_t k = 0; k < kc; k++) {
          float av = d->alpha * a[(k0 + k) * as];
          for (int64_t j = 0; j < NR; j++) {
            acc[j] += av * panel[k * NR + j];
            acc2[j] += av * panel2[k * NR + j];
          }
        }
      } else if (d->Bpk) {
        const float *panel = d->Bpk + k0 * g->NP + p * NR * kc;
        for (int64_t k = 0; k < kc; k++) {
          float av = d->alpha * a[(k0 + k) * as];
          for (int64_t j = 0; j < NR; j++)
            acc[j] += av * panel[k * NR + j];
        }
      } else {
        for (int64_t k = 0; k < kc; k++) {
          float av = d->alpha * a[(k0 + k) * as];
          const float *row = d->B + (k0 + k) * d->ldb + n0;
          for (int64_t j = 0; j < w; j++)
            acc[j] += av * row[j];
        }
      }
    }
    for (int q = 0; q <= two; q++) {
      const float *ac = q ? acc2 : acc;
      n0 = (p + q) * NR;
      w = N - n0 < NR ? N - n0 : NR;
      for (int64_t j = 0; j < w; j++)
        d->C[n0 + j] = kcpu_gemv_epi(d, ac[j], n0 + j);
    }
    p += two; /* the second panel is done too */
  }
}

/* With B prepacked for AVX-512 (NR = 48), the panels [b, e) are read in
 * the order they lie in memory: for each k block, the task's panels one
 * after another, one sequential stream (a panel at a time would jump to
 * the next k block every 48 KiB and restart the hardware prefetchers),
 * with a software prefetch 4 KiB ahead. Up to KCPU_GEMV_PANELS panels'
 * sums stay in vectors across the k blocks. Each column's terms are added
 * in k order, as in kcpu_gemv_fn: the same bits. Weights streamed from
 * memory, one core: 2048 x 1000 (ResNet-50's classifier) 310 -> 203 us,
 * 1280 x 1000 (MobileNetV2's) 169 -> 122 us; two cores share the memory
 * bandwidth and gain little either way. */
#define KCPU_GEMV_PANELS 32
static void kcpu_gemv48_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_gemv_ctx *g = ctx;
  const kcpu_gemm_desc *d = g->d;
  int64_t K = d->K, N = d->N, as = d->trans_a ? d->lda : 1;
  const float *a = d->A;
  v16f acc[KCPU_GEMV_PANELS][3];
  for (int64_t p0 = b; p0 < e; p0 += KCPU_GEMV_PANELS) {
    int64_t np = e - p0 < KCPU_GEMV_PANELS ? e - p0 : KCPU_GEMV_PANELS;
    for (int64_t i = 0; i < np; i++)
      acc[i][0] = acc[i][1] = acc[i][2] = (v16f){0};
    for (int64_t k0 = 0; k0 < K; k0 += KCPU_KC) {
      int64_t kc = K - k0 < KCPU_KC ? K - k0 : KCPU_KC;
      const float *panel = d->Bpk + k0 * g->NP + p0 * 48 * kc;
      for (int64_t i = 0; i < np; i++, panel += 48 * kc) {
        v16f c0 = acc[i][0], c1 = acc[i][1], c2 = acc[i][2];
        for (int64_t k = 0; k < kc; k++) {
          const float *r = panel + k * 48;
          __builtin_prefetch(r + 1024); /* never faults past the end */
          float av = d->alpha * a[(k0 + k) * as];
          c0 += av * *(const v16u *)r;
          c1 += av * *(const v16u *)(r + 16);
          c2 += av * *(const v16u *)(r + 32);
        }
        acc[i][0] = c0, acc[i][1] = c1, acc[i][2] = c2;
      }
    }
    for (int64_t i = 0; i < np; i++) {
      int64_t n0 = (p0 + i) * 48, w = N - n0 < 48 ? N - n0 : 48;
      for (int64_t j = 0; j < w; j++)
        d->C[n0 + j] = kcpu_gemv_epi(d, acc[i][j / 16][j % 16], n0 + j);
    }
  }
}

KCPU_PREBUILT void kcpu_gemm_run(const kcpu_gemm_desc *d, struct kcpu_pool *pool) {
  if (d->M <= 0 || d->N <= 0)
    return;
  /* A residual held in C itself (an in-place fused add) would be
   * overwritten by the first of several K blocks before the last one adds
   * it: C is accumulated onto instead, the residual going in first. */
  if (d->res && d->res == d->C && d->ldr == d->ldc && !d->accumulate && d->K > KCPU_KC) {
    kcpu_gemm_desc a = *d;
    a.res = NULL;
    a.accumulate = 1;
    kcpu_gemm_run(&a, pool);
    return;
  }
  int64_t T = kcpu_pool_threads(pool);
  int64_t L = kcpu_lanes_norm(d->lanes), MR = kcpu_mr_of(L), NR = kcpu_gemm_nr(L);
  if (d->M == 1 && d->K > 0 && !d->pack_b && !d->Apk && (d->Bpk || !d->trans_b)) {
    kcpu_gemv_ctx g = {d, NR, (d->N + NR - 1) / NR * NR};
    int64_t panels = (d->N + NR - 1) / NR;
    void (*fn)(void *, int64_t, int64_t) = d->Bpk && NR == 48 ? kcpu_gemv48_fn : kcpu_gemv_fn;
    if (T <= 1 || d->N * d->K < 65536)
      fn(&g, 0, panels);
    else
      kcpu_parallel_for(pool, panels, fn, &g);
    return;
  }
  if (T <= 1 || d->M * d->N * (d->K + 1) < 65536) {
    kcpu_gemm_tile(d, 0, d->M, 0, d->N);
    return;
  }
  int64_t best_tm, best_tn;
  int a = kcpu_gemm_a_direct(d, L) ? KCPU_A_IN_PLACE : d->Apk ? KCPU_A_PREPACKED : KCPU_A_PACKS;
  kcpu_gemm_grid(d->M, d->N, MR, NR, L, a, d->Bpk != NULL, T, &best_tm, &best_tn);
  kcpu_gemm_task t = {d, best_tm, best_tn, kcpu_grid_unit(MR, a), NR};
  kcpu_parallel_for(pool, best_tm * best_tn, kcpu_gemm_task_fn, &t);
}

KCPU_PREBUILT void kcpu_k_sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                                int64_t lda, int64_t trans_a, const float *B, int64_t ldb,
                                int64_t trans_b, float *C, int64_t ldc, int64_t accumulate,
                                const float *bias_col, const float *bias_row, const float *res,
                                int64_t ldr, int64_t act, int64_t lanes, struct kcpu_pool *pool) {
  /* (this entry point has no parameters: Relu and Gelu only) */
  kcpu_gemm_desc d = {.M = M,
                      .N = N,
                      .K = K,
                      .alpha = alpha,
                      .A = A,
                      .lda = lda,
                      .trans_a = trans_a,
                      .B = B,
                      .ldb = ldb,
                      .trans_b = trans_b,
                      .C = C,
                      .ldc = ldc,
                      .accumulate = accumulate,
                      .bias_col = bias_col,
                      .bias_row = bias_row,
                      .res = res,
                      .ldr = ldr,
                      .act = act,
                      .lanes = lanes};
  kcpu_gemm_run(&d, pool);
}

typedef struct kcpu_matmul_ctx {
  const int64_t *a_off, *b_off;
  int64_t M, N, K, act, lanes;
  const float *A, *B, *Bpk;
  float *C;
  float act_a, act_b;
} kcpu_matmul_ctx;

static void kcpu_matmul_one(const kcpu_matmul_ctx *c, int64_t b, struct kcpu_pool *pool) {
  int64_t ao = c->a_off ? c->a_off[b] : b * c->M * c->K;
  int64_t bo = c->b_off ? c->b_off[b] : b * c->K * c->N;
  kcpu_gemm_desc d = {.M = c->M,
                      .N = c->N,
                      .K = c->K,
                      .alpha = 1.0f,
                      .A = c->A + ao,
                      .lda = c->K,
                      .B = c->Bpk ? NULL : c->B + bo, /* B may be NULL given Bpk */
                      .ldb = c->N,
                      .Bpk = c->Bpk,
                      .C = c->C + b * c->M * c->N,
                      .ldc = c->N,
                      .act = c->act,
                      .act_a = c->act_a,
                      .act_b = c->act_b,
                      .lanes = c->lanes};
  kcpu_gemm_run(&d, pool);
}

static void kcpu_matmul_fn(void *ctx, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; i++)
    kcpu_matmul_one(ctx, i, NULL);
}

/* Bpk (only with one B for every batch) is op(B) prepacked. */
KCPU_PREBUILT void kcpu_k_matmul_ex(int64_t batch, const int64_t *a_off, const int64_t *b_off,
                                    int64_t M, int64_t N, int64_t K, const float *A, const float *B,
                                    const float *Bpk, float *C, int64_t act, float act_a,
                                    float act_b, int64_t lanes, struct kcpu_pool *pool) {
  kcpu_matmul_ctx c = {a_off, b_off, M, N, K, act, lanes, A, B, Bpk, C, act_a, act_b};
  int64_t T = kcpu_pool_threads(pool);
  if (batch >= 2 * T || (batch >= T && batch % T == 0)) {
    kcpu_parallel_for(pool, batch, kcpu_matmul_fn, &c);
    return;
  }
  for (int64_t b = 0; b < batch; b++)
    kcpu_matmul_one(&c, b, pool);
}

KCPU_PREBUILT void kcpu_k_matmul(int64_t batch, const int64_t *a_off, const int64_t *b_off,
                                 int64_t M, int64_t N, int64_t K, const float *A, const float *B,
                                 float *C, int64_t lanes, struct kcpu_pool *pool) {
  kcpu_k_matmul_ex(batch, a_off, b_off, M, N, K, A, B, NULL, C, KCPU_ACT_NONE, 0, 0, lanes, pool);
}

KCPU_PREBUILT void kcpu_k_gemm_ex(int64_t M, int64_t N, int64_t K, float alpha, float beta,
                                  const float *A, int64_t trans_a, const float *B, int64_t trans_b,
                                  const float *Bpk, const float *Cb, int64_t c_rs, int64_t c_cs,
                                  float *Y, int64_t act, float act_a, float act_b, int64_t lanes,
                                  struct kcpu_pool *pool) {
  int64_t acc = 0;
  const float *bias_col = NULL, *res = NULL;
  if (Cb && beta != 0.0f) {
    if (beta == 1.0f && c_rs == 0 && c_cs == 1) {
      bias_col = Cb;
    } else if (beta == 1.0f && c_rs == N && c_cs == 1) {
      res = Cb; /* a full C (a residual): added in the epilogue too */
    } else {
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++)
          Y[m * N + n] = beta * Cb[m * c_rs + n * c_cs];
      acc = 1;
    }
  }
  kcpu_gemm_desc d = {.M = M,
                      .N = N,
                      .K = K,
                      .alpha = alpha,
                      .A = A,
                      .lda = trans_a ? M : K,
                      .trans_a = trans_a,
                      .B = B,
                      .ldb = trans_b ? K : N,
                      .trans_b = trans_b,
                      .Bpk = Bpk,
                      .C = Y,
                      .ldc = N,
                      .accumulate = acc,
                      .bias_col = bias_col,
                      .res = res,
                      .ldr = N,
                      .act = act,
                      .act_a = act_a,
                      .act_b = act_b,
                      .lanes = lanes};
  kcpu_gemm_run(&d, pool);
}

KCPU_PREBUILT void kcpu_k_gemm(int64_t M, int64_t N, int64_t K, float alpha, float beta,
                               const float *A, int64_t trans_a, const float *B, int64_t trans_b,
                               const float *Cb, int64_t c_rs, int64_t c_cs, float *Y, int64_t lanes,
                               struct kcpu_pool *pool) {
  kcpu_k_gemm_ex(M, N, K, alpha, beta, A, trans_a, B, trans_b, NULL, Cb, c_rs, c_cs, Y,
                 KCPU_ACT_NONE, 0, 0, lanes, pool);
}
