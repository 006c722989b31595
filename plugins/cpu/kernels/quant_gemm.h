/* plugins/cpu/kernels/quant_gemm.h: the packed operand layouts of the int8
 * GEMM (quant_gemm.c), shared by the kernels (which pack operands that are
 * not constants at each call) and the emitters (which pack constant
 * weights once, at compile time, emit_quant_linalg.c). QLinearMatMul's
 * weights are the B side; QLinearConv's are the A side (rows = output
 * channels), its im2col the B side.
 *
 * A (M x K) is stored as u8 (an s8 value a becomes a ^ 0x80 = a + 128, and
 * its zero point moves by the same 128, so a - zp is unchanged): rows
 * padded to KCPU_QG_MR with zeros, each K padded to 4 with zeros, then one
 * int32 per (padded) row, the sum of its bytes.
 *
 * B (K x N, u8 or s8) is stored as s8 (an u8 value b becomes b ^ 0x80 =
 * b - 128, its zero point likewise). Columns
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

static inline int64_t kcpu_qg_rows_pad(int64_t M) {
  return (M + KCPU_QG_MR - 1) / KCPU_QG_MR * KCPU_QG_MR;
}

/* Bytes of one packed M x K A, row sums included (a multiple of 64). */
static inline int64_t kcpu_qg_apacked_bytes(int64_t M, int64_t K) {
  int64_t b = kcpu_qg_rows_pad(M) * (kcpu_qg_k4(K) + 4);
  return (b + 63) / 64 * 64;
}

/* Pack A, row m at src + m*lda (s8 when a_s8, else u8), into dst
 * (kcpu_qg_apacked_bytes(M, K) bytes). */
static inline void kcpu_qg_pack_a(const void *src, int64_t a_s8, int64_t M, int64_t K, int64_t lda,
                                  uint8_t *dst) {
  int64_t K4 = kcpu_qg_k4(K), MP = kcpu_qg_rows_pad(M);
  int32_t *sums = (int32_t *)(void *)(dst + MP * K4);
  uint8_t flip = a_s8 ? 0x80 : 0;
  for (int64_t m = 0; m < MP; m++) {
    uint8_t *d = dst + m * K4;
    uint32_t s = 0;
    for (int64_t k = 0; k < K4; k++) {
      uint8_t v = m < M && k < K ? (uint8_t)(((const uint8_t *)src)[m * lda + k] ^ flip) : 0;
      d[k] = v;
      s += v;
    }
    sums[m] = (int32_t)s;
  }
  for (int64_t i = MP * (K4 + 4); i < kcpu_qg_apacked_bytes(M, K); i++)
    dst[i] = 0;
}

/* QLinearConv reads its input in place (kcpu_k_qlinear_conv's direct
 * form) at stride 1 with more than one tap, unless depthwise (a 1x1
 * convolution's im2col is only an interleave of whole rows, which measured
 * faster); its filters are then packed with k running over (quad of 4
 * channels, kh, kw, channel in the quad), the channels padded to a
 * multiple of 4 with zeros: K = kcpu_qg_direct_k. */
static inline int kcpu_qg_conv_direct(int64_t sh, int64_t sw, int64_t taps, int64_t Cg,
                                      int64_t Mg) {
  return sh == 1 && sw == 1 && taps > 1 && !(Cg == 1 && Mg == 1);
}

static inline int64_t kcpu_qg_direct_k(int64_t Cg, int64_t KH, int64_t KW) {
  return (Cg + 3) / 4 * 4 * KH * KW;
}

/* Pack a group's filters w [Mg, Cg, KH, KW] (s8 when w_s8, else u8) as A
 * in the direct form's k order into dst
 * (kcpu_qg_apacked_bytes(Mg, kcpu_qg_direct_k(Cg, KH, KW)) bytes). */
static inline void kcpu_qg_pack_a_direct(const void *w, int64_t w_s8, int64_t Mg, int64_t Cg,
                                         int64_t KH, int64_t KW, uint8_t *dst) {
  int64_t K = kcpu_qg_direct_k(Cg, KH, KW), MP = kcpu_qg_rows_pad(Mg), taps = KH * KW;
  int32_t *sums = (int32_t *)(void *)(dst + MP * K);
  const uint8_t *src = (const uint8_t *)w;
  uint8_t flip = w_s8 ? 0x80 : 0;
  for (int64_t m = 0; m < MP; m++) {
    uint8_t *d = dst + m * K;
    uint32_t s = 0;
    for (int64_t c4 = 0; c4 < K / (4 * taps); c4++)
      for (int64_t t = 0; t < taps; t++)
        for (int64_t q = 0; q < 4; q++) {
          int64_t c = c4 * 4 + q;
          uint8_t v = m < Mg && c < Cg ? (uint8_t)(src[(m * Cg + c) * taps + t] ^ flip) : 0;
          *d++ = v;
          s += v;
        }
    sums[m] = (int32_t)s;
  }
  for (int64_t i = MP * (K + 4); i < kcpu_qg_apacked_bytes(Mg, K); i++)
    dst[i] = 0;
}

#endif
