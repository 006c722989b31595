/* plugins/cpu/kernels/gemm_impl.h: the blocked SGEMM engine shared by
 * gemm.c and conv.c (private to the kernel library). B is reached through a
 * packing callback so that convolution can pack its im2col matrix straight
 * from the image without materializing it. */
#ifndef KCPU_GEMM_IMPL_H
#define KCPU_GEMM_IMPL_H

#include "kcpu_runtime.h"

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
  kcpu_pack_b_fn pack_b; /* NULL = dense B above */
  const void *bctx;      /* for custom packers */
  float *C;
  int64_t ldc, accumulate;
  const float *bias_col, *bias_row, *res;
  int64_t ldr, act, lanes;
};

/* Compute the tile C[m0:m1, n0:n1] on the calling thread. */
void kcpu_gemm_tile(const kcpu_gemm_desc *d, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
/* Whole GEMM, split over the pool's threads. */
void kcpu_gemm_run(const kcpu_gemm_desc *d, struct kcpu_pool *pool);

#endif
