/* plugins/cpu/kernels/conv_blocked.h: the channel-blocked convolution's
 * filter layout, shared by the kernels (conv_blocked.c, conv_blocked_dw.c)
 * and the emitter that packs constant filters once at compile time
 * (plugins/cpu/emit_conv.c); header-only so that both sides compile the
 * same packing code.
 *
 * The blocked layout of a plain [N, C, H, W] tensor is [N, Cb, H, W, 16],
 * Cb = ceil(C / 16): channel c sits in block c / 16, lane c % 16. Lanes of
 * the last block past C ("padding") are written as zero by every kernel
 * that writes a blocked tensor and are never read as data by a
 * convolution (docs/cpu.md, "Channel-blocked layout"). */
#ifndef KCPU_CONV_BLOCKED_H
#define KCPU_CONV_BLOCKED_H

#include <stdint.h>

#include "kcpu_runtime.h"

#define KCPU_CB 16 /* channels per block */

/* Dense filters are packed in groups of up to 4 output-channel blocks
 * (the blocks one micro-kernel call accumulates, conv_blocked.c): Mb
 * blocks make ceil(Mb / 4) groups of near-equal size, group g starting at
 * block Mb * g / groups. */
static inline int64_t kcpu_convb_groups(int64_t Mb) {
  return (Mb + 3) / 4;
}
static inline int64_t kcpu_convb_group_start(int64_t Mb, int64_t g) {
  return Mb * g / kcpu_convb_groups(Mb);
}

/* Floats in the packed filters of a blocked convolution: M output and C
 * input channels, KH x KW taps; depthwise: group = C = M (Wt is
 * [C, 1, KH, KW]); x_blocked: the input is blocked (else plain NCHW). */
static inline int64_t kcpu_convb_packed_size(int64_t M, int64_t C, int64_t KH, int64_t KW,
                                             int64_t depthwise, int64_t x_blocked) {
  int64_t Mb = (M + KCPU_CB - 1) / KCPU_CB;
  if (depthwise)
    return Mb * KH * KW * KCPU_CB;
  (void)x_blocked;
  return Mb * C * KH * KW * KCPU_CB;
}

/* Packs Wt [M, C/group, KH, KW] (group 1, or depthwise) into Wpk of
 * kcpu_convb_packed_size floats; lanes past M are zero.
 *   depthwise: Wpk[cb][kh][kw][lane] = Wt[cb*16 + lane][0][kh][kw].
 *   dense: group g of J blocks from block b0 (above) at Wpk + b0*C*KH*KW*16
 *   holds [kh][kw][c][j][lane] = Wt[(b0 + j)*16 + lane][c][kh][kw]: the
 *   order in which the kernel reads it, one vector per block j for each
 *   tap and input channel. */
static inline void kcpu_convb_pack(const float *Wt, float *Wpk, int64_t M, int64_t C, int64_t KH,
                                   int64_t KW, int64_t depthwise, int64_t x_blocked) {
  int64_t Mb = (M + KCPU_CB - 1) / KCPU_CB, T = KH * KW;
  (void)x_blocked;
  if (depthwise) {
    for (int64_t mb = 0; mb < Mb; mb++)
      for (int64_t t = 0; t < T; t++)
        for (int64_t l = 0; l < KCPU_CB; l++) {
          int64_t m = mb * KCPU_CB + l;
          Wpk[(mb * T + t) * KCPU_CB + l] = m < M ? Wt[m * T + t] : 0.0f;
        }
    return;
  }
  for (int64_t g = 0; g < kcpu_convb_groups(Mb); g++) {
    int64_t b0 = kcpu_convb_group_start(Mb, g), J = kcpu_convb_group_start(Mb, g + 1) - b0;
    float *wg = Wpk + b0 * C * T * KCPU_CB;
    for (int64_t t = 0; t < T; t++)
      for (int64_t c = 0; c < C; c++)
        for (int64_t j = 0; j < J; j++)
          for (int64_t l = 0; l < KCPU_CB; l++) {
            int64_t m = (b0 + j) * KCPU_CB + l;
            wg[((t * C + c) * J + j) * KCPU_CB + l] = m < M ? Wt[(m * C + c) * T + t] : 0.0f;
          }
  }
}

/* Winograd's products (conv_blocked_wino.c): y = the 1x1 convolution of
 * the blocked image x of npix pixels ([ceil(C/16)][npix][16]) by filters
 * w packed by kcpu_convb_pack (1x1, dense), no bias or activation (zeros:
 * ceil(M/16) * 16 zero floats), into y [ceil(M/16)][npix][16]. Runs tasks
 * [b, e) of nbands * kcpu_convb_groups(ceil(M/16)) (bands of pixels times
 * groups of output blocks) in the calling thread; nbands is at most
 * ceil(npix / 12). Sums in channel order, whichever task. */
void kcpu_convb_products(const float *x, const float *w, const float *zeros, float *y, int64_t C,
                         int64_t M, int64_t npix, int64_t nbands, int64_t b, int64_t e);

/* The depthwise case of kcpu_k_conv2d_blocked (conv_blocked_dw.c); Wpk
 * packed as above. */
void kcpu_convb_depthwise(const float *X, const float *Wpk, const float *bias, const float *res,
                          float *Y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH,
                          int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh,
                          int64_t dw, int64_t pt, int64_t pl, int64_t act, float act_a, float act_b,
                          struct kcpu_pool *pool);

#endif
