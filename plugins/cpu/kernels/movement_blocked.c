/* plugins/cpu/kernels/movement_blocked.c: conversions between the plain
 * channel layout [N, C, S] and the blocked one [N, Cb, S, 16]
 * (conv_blocked.h), inserted by the layout pass where a region of blocked
 * operations meets one that needs plain tensors. */
#include "conv_blocked.h"

KCPU_PREBUILT void kcpu_k_block_channels(const float *X, float *Y, int64_t N, int64_t C, int64_t S,
                                         struct kcpu_pool *pool) {
  (void)pool;
  int64_t Cb = (C + KCPU_CB - 1) / KCPU_CB;
  for (int64_t n = 0; n < N; n++)
    for (int64_t cb = 0; cb < Cb; cb++)
      for (int64_t s = 0; s < S; s++)
        for (int64_t l = 0; l < KCPU_CB; l++) {
          int64_t c = cb * KCPU_CB + l;
          Y[((n * Cb + cb) * S + s) * KCPU_CB + l] = c < C ? X[(n * C + c) * S + s] : 0.0f;
        }
}

KCPU_PREBUILT void kcpu_k_unblock_channels(const float *X, float *Y, int64_t N, int64_t C,
                                           int64_t S, struct kcpu_pool *pool) {
  (void)pool;
  int64_t Cb = (C + KCPU_CB - 1) / KCPU_CB;
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t s = 0; s < S; s++)
        Y[(n * C + c) * S + s] = X[((n * Cb + c / KCPU_CB) * S + s) * KCPU_CB + c % KCPU_CB];
}
