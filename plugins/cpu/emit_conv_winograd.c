/* plugins/cpu/emit_conv_winograd.c: when an f32 Conv or BlockedConv runs
 * by Winograd's F(2x2, 3x3) (kernels/conv_winograd.c on the plain layout,
 * kernels/conv_blocked_wino.c on the channel-blocked one), and its
 * filters' transform, computed and packed here once at compile time. */
#include <stdlib.h>

#include "conv_blocked.h"
#include "cpu.h"
#include "emit_perf.h"
#include "emit_util.h"
#include "emit_window.h"
#include "gemm_impl.h"

/* Where it pays (measured per layer on the zoo's 3x3 layers, Zen 5, one
 * thread): 16 lanes (the transforms are written for them), 3x3, stride
 * and dilation 1, one group, and at least 64 input and 64 output channels
 * and 7x7 outputs. With fewer channels the products are too thin for what
 * the transforms move (V and Mx are 4x the input and output): SqueezeNet's
 * 16 to 64 input channels, DenseNet's 32 output channels and Inception's
 * 32-channel 147x147 layers ran 5-90% slower by Winograd; ResNet's 64 to
 * 512 channels at 56x56 to 7x7 ran 1.15-1.6x faster, GoogLeNet's 96 to 192
 * input channels 1.3-1.6x, Inception's 80 -> 192 at 71x71 1.27x. */
static bool kcpu_wino_applies(const kiln_type *x, const kcpu_win *w, int64_t group, int64_t M,
                              uint32_t lanes) {
  if (lanes != 16 || x->rank != 4 || group != 1)
    return false;
  if (w->k[0] != 3 || w->k[1] != 3 || w->s[0] != 1 || w->s[1] != 1 || w->d[0] != 1 || w->d[1] != 1)
    return false;
  if (w->pb[0] < 0 || w->pb[1] < 0 || w->pe[0] < 0 || w->pe[1] < 0)
    return false;
  int64_t C = x->dims[1];
  return C >= 64 && M >= 64 && w->out[0] >= 7 && w->out[1] >= 7;
}

/* G g G^T of one 3x3 filter g (row-major), G = [1 0 0; 1/2 1/2 1/2;
 * 1/2 -1/2 1/2; 0 0 1]: the 4x4 result row-major in u. */
static void kcpu_wino_filter(const float *g, float *u) {
  float t[4][3];
  for (int j = 0; j < 3; j++) {
    t[0][j] = g[j];
    t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
    t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
    t[3][j] = g[6 + j];
  }
  for (int i = 0; i < 4; i++) {
    u[i * 4 + 0] = t[i][0];
    u[i * 4 + 1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
    u[i * 4 + 2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
    u[i * 4 + 3] = t[i][2];
  }
}

/* The transformed filters of weight wb [M, C, 3, 3] as 16 matrices M x C
 * in the GEMM's prepacked A layout, in a buffer the executable owns; NULL
 * when the weight is not constant data, the weights mode packs nothing
 * (bundles) or memory runs out. */
static LLVMValueRef kcpu_wino_pack(kcpu_emit *e, const kiln_buffer *wb, int64_t M, int64_t C,
                                   int64_t U) {
  if (!wb || kiln_buffer_get_kind(wb) != KILN_BUFFER_WEIGHT)
    return NULL;
  const float *g = kiln_buffer_data(wb);
  if (!g || kiln_buffer_type(wb)->elem != KILN_F32)
    return NULL;
  int64_t one = kcpu_prepacked_size(M, C, U);
  float *t = malloc((size_t)(16 * M * C) * sizeof *t);
  size_t bytes = (size_t)(16 * one) * sizeof(float);
  float *dst = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!t || !dst) {
    free(t);
    free(dst);
    return NULL;
  }
  for (int64_t m = 0; m < M; m++)
    for (int64_t c = 0; c < C; c++) {
      float u[16];
      kcpu_wino_filter(g + (m * C + c) * 9, u);
      for (int xi = 0; xi < 16; xi++)
        t[(xi * M + m) * C + c] = u[xi];
    }
  kcpu_pack_job job = {t, dst, 16, M * C, M, C, C, 1, U, wb, false};
  kcpu_pack_run(&job);
  free(t);
  LLVMValueRef at = kcpu_packed_weight(e, dst); /* dst is the table's now */
  if (at)
    kcpu_weight_packed(e, wb);
  return at;
}

kiln_status kcpu_emit_conv_winograd(kcpu_emit *e, const kiln_instr *in, const kcpu_win *w,
                                    int64_t group, int64_t act, float act_a, float act_b,
                                    bool *done) {
  *done = false;
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  uint32_t lanes = kcpu_vector_lanes(e);
  int64_t M = y->dims[1];
  if (!kcpu_wino_applies(x, w, group, M, lanes))
    return NULL;
  /* The products' orientation by the cells the GEMM computes, padding
   * included: M x T in panels of MR rows and NR columns, or transposed
   * (kernels/conv_winograd.c) */
  int64_t MR = kcpu_gemm_mr(lanes), NR = kcpu_gemm_nr(lanes);
  int64_t T = (w->out[0] + 1) / 2 * ((w->out[1] + 1) / 2);
  int64_t plain = (M + MR - 1) / MR * MR * ((T + NR - 1) / NR * NR);
  int64_t turned = (T + MR - 1) / MR * MR * ((M + NR - 1) / NR * NR);
  int64_t trans = turned < plain;
  LLVMValueRef upk = kcpu_wino_pack(e, kcpu_i_in(in, 1), M, x->dims[1], trans ? NR : MR);
  if (!upk)
    return NULL;
  LLVMValueRef args[20] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           upk,
                           kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                           kcpu_e_ptr(e, kcpu_i_in(in, 3)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->dims[0]),
                           kcpu_i64(e, x->dims[1]),
                           kcpu_i64(e, w->in[0]),
                           kcpu_i64(e, w->in[1]),
                           kcpu_i64(e, M),
                           kcpu_i64(e, w->out[0]),
                           kcpu_i64(e, w->out[1]),
                           kcpu_i64(e, w->pb[0]),
                           kcpu_i64(e, w->pb[1]),
                           kcpu_i64(e, act),
                           kcpu_f32(e, act_a),
                           kcpu_f32(e, act_b),
                           kcpu_i64(e, trans),
                           kcpu_i64(e, lanes),
                           kcpu_pool(e)};
  *done = true;
  return kcpu_e_call(e, in, "kcpu_k_conv2d_wino", args, 20);
}

/* ---- BlockedConv (kernels/conv_blocked_wino.c) ---- */

/* Where it pays on the blocked layout (measured per layer against the
 * blocked direct kernel, Zen 5, 1 and 2 threads): 3x3, stride and
 * dilation 1, group 1, a blocked input, non-negative pads, and at least
 * 24 input channels (16 to 20 ran 4-30% slower: the products are too thin
 * for what the transforms move) on planes of at least 5x5; under 10x10,
 * at least 64 output channels too (7x7 planes with 32 outputs and 4x4 or
 * 3x3 planes ran 4-17% slower, the tiles there overhang the plane). Where
 * it applies it ran 1.1-2x faster: ResNet's 64 to 512 channels at 56x56
 * to 7x7 1.2-2x, DenseNet's 128 -> 32 at 56x56 1.2-1.3x, Inception's 64 ->
 * 32 at 147x147 1.7x, SqueezeNet's 32 to 64 -> 128 to 256 1.3x. */
static bool kcpu_convb_wino_applies(const kcpu_win *w, int64_t C, int64_t M) {
  if (w->k[0] != 3 || w->k[1] != 3 || w->s[0] != 1 || w->s[1] != 1 || w->d[0] != 1 || w->d[1] != 1)
    return false;
  if (w->pb[0] < 0 || w->pb[1] < 0 || w->pe[0] < 0 || w->pe[1] < 0)
    return false;
  if (C < 24 || w->out[0] < 5 || w->out[1] < 5)
    return false;
  return w->out[0] * w->out[1] >= 100 || M >= 64;
}

/* The transformed filters of weight wb [M, C, 3, 3]: 16 sets of 1x1
 * filters packed by kcpu_convb_pack, in a buffer the executable owns;
 * NULL as kcpu_wino_pack. */
static LLVMValueRef kcpu_convb_wino_pack(kcpu_emit *e, const kiln_buffer *wb, int64_t M,
                                         int64_t C) {
  if (!wb || kiln_buffer_get_kind(wb) != KILN_BUFFER_WEIGHT)
    return NULL;
  const float *g = kiln_buffer_data(wb);
  if (!g || kiln_buffer_type(wb)->elem != KILN_F32)
    return NULL;
  int64_t one = kcpu_convb_packed_size(M, C, 1, 1, 0, 1);
  float *t = malloc((size_t)(16 * M * C) * sizeof *t);
  size_t bytes = (size_t)(16 * one) * sizeof(float);
  float *dst = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!t || !dst) {
    free(t);
    free(dst);
    return NULL;
  }
  for (int64_t m = 0; m < M; m++)
    for (int64_t c = 0; c < C; c++) {
      float u[16];
      kcpu_wino_filter(g + (m * C + c) * 9, u);
      for (int xi = 0; xi < 16; xi++)
        t[(xi * M + m) * C + c] = u[xi];
    }
  for (int xi = 0; xi < 16; xi++)
    kcpu_convb_pack(t + xi * M * C, dst + xi * one, M, C, 1, 1, 0, 1);
  free(t);
  LLVMValueRef at = kcpu_packed_weight(e, dst); /* dst is the table's now */
  if (at)
    kcpu_weight_packed(e, wb);
  return at;
}

kiln_status kcpu_emit_convb_winograd(kcpu_emit *e, const kiln_instr *in, const kcpu_win *w,
                                     int64_t C, int64_t M, int64_t act, float act_a, float act_b,
                                     bool *done) {
  *done = false;
  const kiln_type *x = kcpu_i_in_type(in, 0);
  if (x->rank != 5 || kiln_attrs_int_or(kiln_instr_attrs(in), "group", 1) != 1 ||
      !kcpu_convb_wino_applies(w, C, M))
    return NULL;
  LLVMValueRef upk = kcpu_convb_wino_pack(e, kcpu_i_in(in, 1), M, C);
  if (!upk)
    return NULL;
  LLVMValueRef args[18] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           upk,
                           kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                           kcpu_e_ptr(e, kcpu_i_in(in, 3)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->dims[0]),
                           kcpu_i64(e, C),
                           kcpu_i64(e, w->in[0]),
                           kcpu_i64(e, w->in[1]),
                           kcpu_i64(e, M),
                           kcpu_i64(e, w->out[0]),
                           kcpu_i64(e, w->out[1]),
                           kcpu_i64(e, w->pb[0]),
                           kcpu_i64(e, w->pb[1]),
                           kcpu_i64(e, act),
                           kcpu_f32(e, act_a),
                           kcpu_f32(e, act_b),
                           kcpu_pool(e)};
  *done = true;
  return kcpu_e_call(e, in, "kcpu_k_conv2d_blocked_wino", args, 18);
}
