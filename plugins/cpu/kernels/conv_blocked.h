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

/* How a Conv of `group` groups, C input and M output channels is blocked:
 * each output block reads the gin input blocks from block
 * (its index / gout) * gin, gout output blocks sharing them, over cr
 * channels (the filters' packed depth). Group 1: every output block reads
 * every input channel (gout = Mb, cr = C). A grouped Conv (not depthwise)
 * either has whole blocks per group (C / group and M / group multiples of
 * 16: ResNeXt's 16- and 32-channel groups) or groups that tile a block
 * (C / group = M / group dividing 16: RegNet's and ResNeXt's 4- and
 * 8-channel groups), where each output block reads the input block of the
 * same index (gin = gout = 1, cr = 16; kcpu_convb_tiled, whose kernel and
 * filter layout are their own). Returns 0 for any other grouping
 * (depthwise has its own kernel). */
static inline int kcpu_convb_grouping(int64_t C, int64_t M, int64_t group, int64_t *gin,
                                      int64_t *gout, int64_t *cr) {
  int64_t Mb = (M + KCPU_CB - 1) / KCPU_CB, ci = group > 0 ? C / group : 0;
  int64_t co = group > 0 ? M / group : 0;
  if (group == 1) {
    *gin = (C + KCPU_CB - 1) / KCPU_CB, *gout = Mb, *cr = C;
    return 1;
  }
  if (group < 1 || ci * group != C || co * group != M)
    return 0;
  if (ci % KCPU_CB == 0 && co % KCPU_CB == 0) {
    *gin = ci / KCPU_CB, *gout = co / KCPU_CB, *cr = ci;
    return 1;
  }
  if (ci == co && ci > 1 && KCPU_CB % ci == 0) {
    *gin = *gout = 1, *cr = KCPU_CB;
    return 1;
  }
  return 0;
}

/* Groups that tile a block (2, 4 or 8 channels a group, as many in as
 * out): conv_blocked.c runs them with the grouped Conv's own multiply-adds
 * from filters packed per group channel (kcpu_convb_pack), not as dense
 * blocks with zeros. */
static inline int kcpu_convb_tiled(int64_t C, int64_t M, int64_t group) {
  int64_t gin, gout, cr;
  return group > 1 && C / group < KCPU_CB && kcpu_convb_grouping(C, M, group, &gin, &gout, &cr);
}

/* A depthwise Conv: one input and one output channel per group. */
static inline int kcpu_convb_is_depthwise(int64_t C, int64_t M, int64_t group) {
  return group > 1 && C == group && M == group;
}

/* Dense filters are packed in groups of up to 4 output-channel blocks
 * (the blocks one micro-kernel call accumulates, conv_blocked.c) inside
 * each run of gout blocks that read the same input (above): a run makes
 * ceil(gout / 4) groups of near-equal size, group l of run s starting at
 * block s * gout + gout * l / ceil(gout / 4). With gout = Mb (group 1):
 * ceil(Mb / 4) groups, group g at block Mb * g / groups. */
static inline int64_t kcpu_convb_groups(int64_t Mb, int64_t gout) {
  return Mb / gout * ((gout + 3) / 4);
}
static inline int64_t kcpu_convb_group_start(int64_t gout, int64_t g) {
  int64_t per = (gout + 3) / 4;
  return g / per * gout + gout * (g % per) / per;
}

/* Floats in the packed filters of a blocked convolution: M output and C
 * input channels, KH x KW taps, `group` groups (depthwise: group = C = M,
 * Wt is [C, 1, KH, KW]); x_blocked: the input is blocked (else plain
 * NCHW). 0 for a grouping kcpu_convb_grouping refuses. */
static inline int64_t kcpu_convb_packed_size(int64_t M, int64_t C, int64_t KH, int64_t KW,
                                             int64_t group, int64_t x_blocked) {
  int64_t Mb = (M + KCPU_CB - 1) / KCPU_CB, gin, gout, cr;
  (void)x_blocked;
  if (kcpu_convb_is_depthwise(C, M, group))
    return Mb * KH * KW * KCPU_CB;
  if (kcpu_convb_tiled(C, M, group))
    return Mb * KH * KW * (C / group) * KCPU_CB;
  if (!kcpu_convb_grouping(C, M, group, &gin, &gout, &cr))
    return 0;
  return Mb * cr * KH * KW * KCPU_CB;
}

/* Packs Wt [M, C/group, KH, KW] into Wpk of kcpu_convb_packed_size
 * floats; lanes past M are zero.
 *   depthwise: Wpk[cb][kh][kw][lane] = Wt[cb*16 + lane][0][kh][kw].
 *   tiled groups (kcpu_convb_tiled, G = C / group channels a group):
 *   Wpk[mb][kh][kw][r][j], for rotation r < G and lane j, is the weight
 *   from input channel c = j % G of j's group to the output channel m =
 *   mb*16 + (j / G) * G + (j - r) mod G of the same group, Wt[m][c][kh][kw]
 *   (0 where m >= M): the kernel multiplies the input vector as it is by
 *   it and rotates the sums within each group once per run
 *   (conv_blocked.c).
 *   dense: group g of J blocks from block b0 (above), reading input blocks
 *   from x0 = b0 / gout * gin, at Wpk + b0*cr*KH*KW*16, holds
 *   [kh][kw][c][j][lane] for the cg = min(cr, C - 16 x0) input channels c
 *   from channel 16 x0 on: Wt[m][16 x0 + c - (m / (M/group)) (C/group)]
 *   [kh][kw] for output channel m = (b0 + j)*16 + lane where that channel
 *   is in m's group, else 0 (group 1: Wt[m][c][kh][kw]). The order in
 *   which the kernel reads it: one vector per block j for each tap and
 *   input channel. */
static inline void kcpu_convb_pack(const float *Wt, float *Wpk, int64_t M, int64_t C, int64_t KH,
                                   int64_t KW, int64_t group, int64_t x_blocked) {
  int64_t Mb = (M + KCPU_CB - 1) / KCPU_CB, T = KH * KW, gin, gout, cr;
  (void)x_blocked;
  if (kcpu_convb_is_depthwise(C, M, group)) {
    for (int64_t mb = 0; mb < Mb; mb++)
      for (int64_t t = 0; t < T; t++)
        for (int64_t l = 0; l < KCPU_CB; l++) {
          int64_t m = mb * KCPU_CB + l;
          Wpk[(mb * T + t) * KCPU_CB + l] = m < M ? Wt[m * T + t] : 0.0f;
        }
    return;
  }
  if (kcpu_convb_tiled(C, M, group)) {
    int64_t G = C / group;
    for (int64_t mb = 0; mb < Mb; mb++)
      for (int64_t t = 0; t < T; t++)
        for (int64_t r = 0; r < G; r++)
          for (int64_t j = 0; j < KCPU_CB; j++) {
            int64_t m = mb * KCPU_CB + j / G * G + (j % G - r + G) % G;
            Wpk[((mb * T + t) * G + r) * KCPU_CB + j] = m < M ? Wt[(m * G + j % G) * T + t] : 0.0f;
          }
    return;
  }
  if (!kcpu_convb_grouping(C, M, group, &gin, &gout, &cr))
    return;
  int64_t ci = C / group, co = M / group;
  for (int64_t g = 0; g < kcpu_convb_groups(Mb, gout); g++) {
    int64_t b0 = kcpu_convb_group_start(gout, g);
    int64_t J = kcpu_convb_group_start(gout, g + 1) - b0, x0 = b0 / gout * gin;
    int64_t cg = C - x0 * KCPU_CB < cr ? C - x0 * KCPU_CB : cr;
    float *wg = Wpk + b0 * cr * T * KCPU_CB;
    for (int64_t t = 0; t < T; t++)
      for (int64_t c = 0; c < cg; c++)
        for (int64_t j = 0; j < J; j++)
          for (int64_t l = 0; l < KCPU_CB; l++) {
            int64_t m = (b0 + j) * KCPU_CB + l, ic = x0 * KCPU_CB + c - m / co * ci;
            wg[((t * cg + c) * J + j) * KCPU_CB + l] =
                m < M && ic >= 0 && ic < ci ? Wt[(m * ci + ic) * T + t] : 0.0f;
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
