/* plugins/cpu/kernels/gemm_impl.h: the blocked SGEMM engine shared by
 * linalg_gemm.c and conv.c (private to the kernel library), and the prepacked
 * operand layout that the emitters (plugins/cpu/emit_perf_pack.c) produce
 * at compile time for constant weights. B is reached through a packing
 * callback so that convolution can pack its im2col matrix straight from
 * the image without materializing it. */
#ifndef KCPU_GEMM_IMPL_H
#define KCPU_GEMM_IMPL_H

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

/* Compute the tile C[m0:m1, n0:n1] on the calling thread. */
void kcpu_gemm_tile(const kcpu_gemm_desc *d, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
/* Whole GEMM, split over the pool's threads. */
void kcpu_gemm_run(const kcpu_gemm_desc *d, struct kcpu_pool *pool);

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

#endif
