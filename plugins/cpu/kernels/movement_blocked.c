/* plugins/cpu/kernels/movement_blocked.c: conversions between the plain
 * channel layout [N, C, S] and the blocked one [N, Cb, S, 16]
 * (conv_blocked.h), inserted by the layout pass where a region of blocked
 * operations meets one that needs plain tensors.
 *
 * Both directions move 16 channels x 16 pixels at a time through a
 * transpose in registers (16 vector loads, 64 shuffles, 16 vector
 * stores, kcpu_transpose.h); pixels left over at a plane's end (fewer than 16) go one
 * element at a time. Work items are (run of pixels, image, block): pure
 * copies, so any split gives the same bits. */
#include "conv_blocked.h"
#include "kcpu_transpose.h"

typedef kcpu_t16v kmb_v;
/* loads and stores through this type make no alignment promise */
typedef float kmb_vu __attribute__((vector_size(64), aligned(4), may_alias));

#define KMB_L KCPU_CB
#define KMB_RUN 256 /* pixels per work item (a multiple of 16) */
/* floats below which a conversion runs on the calling thread alone (it
 * costs less than waking the others) */
#define KMB_SERIAL (1 << 17)

typedef struct kcpu_mb_args {
  const float *X;
  float *Y;
  int64_t N, C, Cb, S, nrun;
} kcpu_mb_args;

/* Items [b, e) = (run * N + n) * Cb + cb, plain -> blocked: a thread's
 * share is a band of pixels (image rows) of every image and block, the
 * rows that its bands of a convolution next read. */
static void kcpu_block_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_mb_args *a = ctx;
  int64_t S = a->S;
  for (int64_t t = b; t < e; t++) {
    int64_t nc = t % (a->N * a->Cb), s0 = t / (a->N * a->Cb) * KMB_RUN, cb = nc % a->Cb,
            n = nc / a->Cb;
    int64_t s1 = s0 + KMB_RUN < S ? s0 + KMB_RUN : S, nl = a->C - cb * KMB_L;
    if (nl > KMB_L)
      nl = KMB_L;
    const float *x = a->X + (n * a->C + cb * KMB_L) * S;
    float *y = a->Y + nc * S * KMB_L;
    int64_t s = s0;
    for (; s + KMB_L <= s1; s += KMB_L) {
      kmb_v r[KMB_L];
      KCPU_UNROLL16 for (int64_t l = 0; l < KMB_L; l++) {
        r[l] = l < nl ? (kmb_v) * (const kmb_vu *)(x + l * S + s) : (kmb_v){0};
      }
      kcpu_transpose16(r);
      KCPU_UNROLL16 for (int64_t j = 0; j < KMB_L; j++) {
        *(kmb_vu *)(y + (s + j) * KMB_L) = r[j];
      }
    }
    for (; s < s1; s++)
      for (int64_t l = 0; l < KMB_L; l++)
        y[s * KMB_L + l] = l < nl ? x[l * S + s] : 0.0f;
  }
}

/* Items as kcpu_block_fn's, blocked -> plain. */
static void kcpu_unblock_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_mb_args *a = ctx;
  int64_t S = a->S;
  for (int64_t t = b; t < e; t++) {
    int64_t nc = t % (a->N * a->Cb), s0 = t / (a->N * a->Cb) * KMB_RUN, cb = nc % a->Cb,
            n = nc / a->Cb;
    int64_t s1 = s0 + KMB_RUN < S ? s0 + KMB_RUN : S, nl = a->C - cb * KMB_L;
    if (nl > KMB_L)
      nl = KMB_L;
    const float *x = a->X + nc * S * KMB_L;
    float *y = a->Y + (n * a->C + cb * KMB_L) * S;
    int64_t s = s0;
    for (; s + KMB_L <= s1; s += KMB_L) {
      kmb_v r[KMB_L];
      KCPU_UNROLL16 for (int64_t j = 0; j < KMB_L; j++) {
        r[j] = *(const kmb_vu *)(x + (s + j) * KMB_L);
      }
      kcpu_transpose16(r);
      KCPU_UNROLL16 for (int64_t l = 0; l < KMB_L; l++) {
        if (l < nl)
          *(kmb_vu *)(y + l * S + s) = r[l];
      }
    }
    for (; s < s1; s++)
      for (int64_t l = 0; l < nl; l++)
        y[l * S + s] = x[s * KMB_L + l];
  }
}

KCPU_PREBUILT void kcpu_k_block_channels(const float *X, float *Y, int64_t N, int64_t C, int64_t S,
                                         struct kcpu_pool *pool) {
  kcpu_mb_args a = {X, Y, N, C, (C + KMB_L - 1) / KMB_L, S, (S + KMB_RUN - 1) / KMB_RUN};
  if (N * a.Cb * KMB_L * S < KMB_SERIAL)
    kcpu_block_fn(&a, 0, N * a.Cb * a.nrun);
  else
    kcpu_parallel_for(pool, N * a.Cb * a.nrun, kcpu_block_fn, &a);
}

KCPU_PREBUILT void kcpu_k_unblock_channels(const float *X, float *Y, int64_t N, int64_t C,
                                           int64_t S, struct kcpu_pool *pool) {
  kcpu_mb_args a = {X, Y, N, C, (C + KMB_L - 1) / KMB_L, S, (S + KMB_RUN - 1) / KMB_RUN};
  if (N * a.Cb * KMB_L * S < KMB_SERIAL)
    kcpu_unblock_fn(&a, 0, N * a.Cb * a.nrun);
  else
    kcpu_parallel_for(pool, N * a.Cb * a.nrun, kcpu_unblock_fn, &a);
}
