/* plugins/cpu/kernels/quant_gemm.h: the packed weight layout of the int8
 * GEMM (quant_gemm.c), shared by the kernels (which pack weights that are
 * not constants at each call) and the emitters (which pack constant
 * weights once, at compile time, emit_quant_linalg.c).
 *
 * B (K x N, u8 or s8) is stored as s8: an u8 weight b becomes b - 128 and
 * its zero point moves by the same 128, so b - zp is unchanged. Columns
 * go in panels of KCPU_QG_NR (64: four vectors of 16 int32 lanes); in a
 * panel, each group of 4 consecutive k holds, column after column, that
 * column's 4 bytes (what vpdpbusd multiplies with 4 bytes of a row of A
 * and adds into one int32 lane). K is padded to a multiple of 4 and N to
 * one of 64 with zeros. After the panels: one int32 per (padded) column,
 * the sum over k of its s8 values (the zero-point correction's term). */
#ifndef KCPU_QUANT_GEMM_H
#define KCPU_QUANT_GEMM_H

#include <stdint.h>

#define KCPU_QG_NR 64 /* columns per panel */
#define KCPU_QG_MR 6  /* rows per micro-tile */

static inline int64_t kcpu_qg_k4(int64_t K) {
  return (K + 3) / 4 * 4;
}

static inline int64_t kcpu_qg_npad(int64_t N) {
  return (N + KCPU_QG_NR - 1) / KCPU_QG_NR * KCPU_QG_NR;
}

/* Bytes of one packed K x N matrix, column sums included (a multiple of
 * 64, so that matrices packed one after another stay aligned). */
static inline int64_t kcpu_qg_packed_bytes(int64_t K, int64_t N) {
  return kcpu_qg_k4(K) * kcpu_qg_npad(N) + 4 * kcpu_qg_npad(N);
}

/* Pack B, element (k, n) at B[k*rs + n*cs] (u8 when b_u8, else s8), into
 * dst (kcpu_qg_packed_bytes(K, N) bytes, every one written). */
static inline void kcpu_qg_pack_b(const void *B, int64_t b_u8, int64_t K, int64_t N, int64_t rs,
                                  int64_t cs, int8_t *dst) {
  const uint8_t *src = (const uint8_t *)B;
  int64_t K4 = kcpu_qg_k4(K), NP = kcpu_qg_npad(N);
  int32_t *sums = (int32_t *)(void *)(dst + K4 * NP);
  uint8_t flip = b_u8 ? 0x80 : 0; /* u8 b - 128 as s8 is b ^ 0x80 */
  for (int64_t n = 0; n < NP; n++)
    sums[n] = 0;
  for (int64_t p = 0; p < NP; p += KCPU_QG_NR) {
    int8_t *panel = dst + p * K4;
    for (int64_t k = 0; k < K4; k++) {
      int8_t *g = panel + (k / 4) * 4 * KCPU_QG_NR + (k % 4);
      for (int64_t c = 0; c < KCPU_QG_NR; c++) {
        int64_t n = p + c;
        int8_t v = 0;
        if (k < K && n < N)
          v = (int8_t)(src[k * rs + n * cs] ^ flip);
        g[c * 4] = v;
        sums[n] += v;
      }
    }
  }
}

#endif
