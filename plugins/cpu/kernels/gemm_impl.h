/* plugins/cpu/kernels/gemm_impl.h: the blocked SGEMM engine shared by
 * linalg_gemm.c and conv.c (private to the kernel library), and the prepacked
 * operand layout that the emitters (plugins/cpu/emit_perf_pack.c) produce
 * at compile time for constant weights. B is reached through a packing
 * callback so that convolution can pack its im2col matrix straight from
 * the image without materializing it. */
#ifndef KCPU_GEMM_IMPL_H
#define KCPU_GEMM_IMPL_H

#include "kcpu_act.h"
#include "kcpu_runtime.h"

/* Blocking shared by the engine and the compile-time packer. */
#define KCPU_KC 256
#define KCPU_NR_MAX 48 /* the widest NR (3 x 16 lanes) */
static inline int64_t kcpu_gemm_lanes(int64_t lanes) {
  return lanes >= 16 ? 16 : lanes >= 8 ? 8 : 4;
}
/* Micro-tile MR x NR per vector width: 8 x 48 (AVX-512), 6 x 16, 6 x 8. */
static inline int64_t kcpu_gemm_mr(int64_t lanes) {
  return kcpu_gemm_lanes(lanes) == 16 ? 8 : 6;
}
static inline int64_t kcpu_gemm_nr(int64_t lanes) {
  return kcpu_gemm_lanes(lanes) == 16 ? 48 : 2 * kcpu_gemm_lanes(lanes);
}

/* Prepacked operand layout (A with unit MR, op(B) with unit NR): for rows
 * i < R (A's m, or op(B)'s n) and k < K, element (i, k) lives at
 *   k0*RP + (i/U)*U*kc + (k-k0)*U + i%U
 * where k0 = k rounded down to KCPU_KC, kc = min(KCPU_KC, K-k0) and RP is R
 * rounded up to U (padding rows are zero). Size K*RP floats. It is exactly
 * what the engine's per-block packers would produce, so a prepacked
 * operand gives the same bits as a packed-at-run-time one (A's alpha
 * excepted: prepacked A must already be scaled). */
static inline int64_t kcpu_prepacked_size(int64_t R, int64_t K, int64_t U) {
  return K * ((R + U - 1) / U * U);
}

typedef struct kcpu_gemm_desc kcpu_gemm_desc;
/* Pack op(B)[k0:k0+kc, n0:n0+nc] into panels of NR columns: for each panel,
 * kc rows of NR floats, columns past nc zero-filled. */
typedef void (*kcpu_pack_b_fn)(const kcpu_gemm_desc *d, float *dst, int64_t k0, int64_t kc,
                               int64_t n0, int64_t nc, int64_t NR);

struct kcpu_gemm_desc {
  int64_t M, N, K;
  float alpha;
  const float *A;
  int64_t lda, trans_a;
  const float *B;
  int64_t ldb, trans_b;
  kcpu_pack_b_fn pack_b;  /* NULL = dense B above */
  const float *Apk, *Bpk; /* prepacked A (alpha applied) / op(B), or NULL */
  const void *bctx;       /* for custom packers */
  float *C;
  int64_t ldc, accumulate;
  const float *bias_col, *bias_row, *res;
  int64_t ldr, act, lanes;
  float act_a, act_b; /* the activation's parameters (kcpu_act.h) */
};

/* The epilogue of one element C(m, n), in the order documented above:
 * bias per column, bias per row, residual, and the activations applied in
 * registers (kcpu_act1: not Swish or Gelu, which callers apply over a
 * finished tile). The register epilogues of the micro-kernels do the same
 * operations in the same order; this scalar form serves edge tiles and
 * kernels that store C element by element. */
static inline float kcpu_gemm_epi1(const kcpu_gemm_desc *d, float v, int64_t m, int64_t n) {
  if (d->bias_col)
    v += d->bias_col[n];
  if (d->bias_row)
    v += d->bias_row[m];
  if (d->res)
    v += d->res[m * d->ldr + n];
  return kcpu_act1(d->act, d->act_a, d->act_b, v);
}

/* Compute the tile C[m0:m1, n0:n1] on the calling thread. */
void kcpu_gemm_tile(const kcpu_gemm_desc *d, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
/* Whole GEMM, split over the pool's threads. */
void kcpu_gemm_run(const kcpu_gemm_desc *d, struct kcpu_pool *pool);

/* Splitting work over threads: the start of part i of `parts` of
 * [0, total) in whole units; and the tm x tn grid of T tiles of an M x N
 * output in MR x NR micro-tiles that gives the busiest thread the least
 * work, a saying how the tiles get A: packed at run time, prepacked (rows
 * split in whole micro-tiles either way), or read in place (rows split
 * anywhere, the last ones run by narrower kernels); b_packed: B is
 * prepacked (no tile packs its columns). */
enum { KCPU_A_PACKS = 0, KCPU_A_PREPACKED = 1, KCPU_A_IN_PLACE = 2 };
int64_t kcpu_split(int64_t total, int64_t parts, int64_t i, int64_t unit);
void kcpu_gemm_grid(int64_t M, int64_t N, int64_t MR, int64_t NR, int64_t L, int a, int b_packed,
                    int64_t T, int64_t *out_tm, int64_t *out_tn);

/* The geometry of one (image, group) of a 2-D convolution, for the B
 * operand: the GEMM's K runs over (channel, kh, kw), N over output pixels. */
typedef struct kcpu_conv_geo {
  const float *x; /* image of this (n, group) at its first channel */
  int64_t H, W, OW, KH, KW, sh, sw, dh, dw, pt, pl;
  /* the depth axis of a 3-D convolution (D = KD = sd = dd = 1, pd = 0 for
   * 2-D) and the output rows per output depth slice */
  int64_t D, KD, sd, dd, pd, OH;
} kcpu_conv_geo;

/* The convolution of one (image, group) as GEMM d (A = its prepacked
 * filters, C = its output rows, N = OH * OW pixels) computed directly on a
 * padded copy of the image (conv_direct.c). Returns 0, having done
 * nothing, where that kernel does not apply (a 1x1 filter, no prepacked A,
 * narrower vectors than 16 lanes, Gelu, out of memory): the caller then
 * runs d as a GEMM. */
int kcpu_conv_direct(const kcpu_gemm_desc *d, const kcpu_conv_geo *g, struct kcpu_pool *pool);

/* Depthwise convolution (group = C = M) of planes narrower than 16
 * outputs, 16 channels to a vector (conv_depthwise.c), with bias, the
 * residual res (Y's shape, or NULL) and activation act (a, b) as in
 * kcpu_k_conv2d_ex. Returns 0, having done nothing, where it does not
 * apply (wider planes, filters over 7x7 taps, a buffer over 4 MiB): the
 * caller then runs its row kernels. */
int kcpu_dw_small(const float *X, const float *Wt, const float *bias, const float *res, float *Y,
                  int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t KH,
                  int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                  int64_t pl, int64_t act, float act_a, float act_b, struct kcpu_pool *pool);

/* Entry points beyond kcpu_runtime.h (called by name from the emitters in
 * emit_linalg.c / emit_conv.c). Bpk / Wpk: prepacked op(B) / filters (per
 * group, each kcpu_prepacked_size(M/group, K, MR) floats) or NULL; act as
 * in kcpu_k_sgemm, with its parameters act_a, act_b (KCPU_ACT_* in
 * kcpu_runtime.h; 0 where the activation has none). Conv's res: a residual
 * of Y's shape added after the bias, before the activation, or NULL. */
void kcpu_k_matmul_ex(int64_t batch, const int64_t *a_off, const int64_t *b_off, int64_t M,
                      int64_t N, int64_t K, const float *A, const float *B, const float *Bpk,
                      float *C, int64_t act, float act_a, float act_b, int64_t lanes,
                      struct kcpu_pool *pool);
void kcpu_k_gemm_ex(int64_t M, int64_t N, int64_t K, float alpha, float beta, const float *A,
                    int64_t trans_a, const float *B, int64_t trans_b, const float *Bpk,
                    const float *Cb, int64_t c_rs, int64_t c_cs, float *Y, int64_t act, float act_a,
                    float act_b, int64_t lanes, struct kcpu_pool *pool);
void kcpu_k_conv2d_ex(const float *X, const float *Wt, const float *Wpk, const float *bias,
                      const float *res, float *Y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, int64_t OH,
                      int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh,
                      int64_t dw, int64_t pt, int64_t pl, int64_t group, int64_t act, float act_a,
                      float act_b, int64_t lanes, struct kcpu_pool *pool);
/* 2-D ConvTranspose (X [N, C, H, W], Wt [C, M/group, KH, KW], Y [N, M,
 * OH, OW]; pt, pl: the leading pads, which may be negative). Wpk: the
 * filters packed per group, matrix g's element (i = (m, kh, kw), k = c)
 * being Wt[(g * C/group + c) * M/group * KH * KW + i], with unit MR as the
 * GEMM's A, or (swap) with unit NR as its B (op(B)(k, i)), matrices
 * kcpu_prepacked_size(M/group * KH * KW, C/group, unit) floats apart; or
 * NULL: then Wt. swap: the GEMM turned around, for inputs of a few
 * pixels. bias [M] or NULL. */
void kcpu_k_convtranspose2d(const float *X, const float *Wt, const float *Wpk, const float *bias,
                            float *Y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t M,
                            int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                            int64_t dh, int64_t dw, int64_t pt, int64_t pl, int64_t group,
                            int64_t swap, int64_t lanes, struct kcpu_pool *pool);
/* The same for 3-D (NCDHW, X [N, C, D, H, W], Y [N, M, OD, OH, OW]):
 * depth, rows, columns in that order in each group of geometry
 * arguments; Wpk per group as above with K = C/group * KD * KH * KW. */
void kcpu_k_conv3d(const float *X, const float *Wt, const float *Wpk, const float *bias,
                   const float *res, float *Y, int64_t N, int64_t C, int64_t D, int64_t H,
                   int64_t W, int64_t M, int64_t OD, int64_t OH, int64_t OW, int64_t KD,
                   int64_t KH, int64_t KW, int64_t sd, int64_t sh, int64_t sw, int64_t dd,
                   int64_t dh, int64_t dw, int64_t pd, int64_t pt, int64_t pl, int64_t group,
                   int64_t act, float act_a, float act_b, int64_t lanes, struct kcpu_pool *pool);

#endif
