/* plugins/cpu/kernels/kcpu_transpose.h: a 16 x 16 f32 transpose in
 * registers (16 vectors in, 64 two-source shuffles, 16 vectors out), shared
 * by the layout conversions (movement_blocked.c), the tiled Transpose
 * (movement.c) and the depthwise kernel of small plain planes
 * (conv_depthwise.c), plus the loop pragma their 16-row loops need.
 *
 * The kernel library is compiled with -fno-unroll-loops, which leaves every
 * loop rolled unless it asks otherwise; a rolled loop over an array of
 * vectors keeps the array in memory (a store and a load around each
 * shuffle), which measured at a third of the speed of these conversions.
 * KCPU_UNROLL16 asks for the loop to be unrolled whole, so the rows stay in
 * registers. */
#ifndef KCPU_TRANSPOSE_H
#define KCPU_TRANSPOSE_H

#ifdef __clang__
#define KCPU_UNROLL16 _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define KCPU_UNROLL16 _Pragma("GCC unroll 16")
#else
#define KCPU_UNROLL16
#endif

typedef float kcpu_t16v __attribute__((vector_size(64)));

/* One butterfly stage: rows i and i+B (i & B == 0) exchange their B-wide
 * blocks, so that after the stages for B = 8, 4, 2, 1, element (i, j) is
 * at (j, i). The masks read, for the low row: row i's j where j is in an
 * even B-block, else row i+B's j - B; for the high row: row i's j + B,
 * else row i+B's j. */
#define KCPU_T16_LO8 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define KCPU_T16_HI8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define KCPU_T16_LO4 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define KCPU_T16_HI4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define KCPU_T16_LO2 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define KCPU_T16_HI2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define KCPU_T16_LO1 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define KCPU_T16_HI1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
#define KCPU_T16_STAGE(r, B)                                                                       \
  KCPU_UNROLL16 for (int i_ = 0; i_ < 16; i_++) if (!(i_ & (B))) {                                 \
    kcpu_t16v lo_ = __builtin_shufflevector(r[i_], r[i_ + (B)], KCPU_T16_LO##B);                   \
    kcpu_t16v hi_ = __builtin_shufflevector(r[i_], r[i_ + (B)], KCPU_T16_HI##B);                   \
    r[i_] = lo_;                                                                                   \
    r[i_ + (B)] = hi_;                                                                             \
  }

/* r[i][j] becomes r[j][i]. */
static inline void kcpu_transpose16(kcpu_t16v *r) {
  KCPU_T16_STAGE(r, 8)
  KCPU_T16_STAGE(r, 4)
  KCPU_T16_STAGE(r, 2)
  KCPU_T16_STAGE(r, 1)
}

#endif
