/* plugins/cpu/emit_conv_winograd.c: when an f32 Conv runs by Winograd's
 * F(2x2, 3x3) (kernels/conv_winograd.c) and a BlockedConv by F(2x2, 3x3)
 * or F(4x4, 3x3) (kernels/conv_blocked_wino.c), and the filters'
 * transforms, computed and packed here once at compile time. */
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

/* G of F(4x4, 3x3) at the points 0, 1, -1, 1/2, -2
 * (kernels/conv_blocked_wino.c); the transform works in double and rounds
 * once. F(2x2, 3x3)'s G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] is
 * written out in float below. */
static const double kcpu_wino_G4[6][3] = {{1, 0, 0},
                                          {1.0 / 3, 1.0 / 3, 1.0 / 3},
                                          {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                                          {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                                          {1.0 / 15, -2.0 / 15, 4.0 / 15},
                                          {0, 0, 1}};

/* The transformed filters G g G^T of g [M, C, 3, 3] for F(tile x tile,
 * 3x3) as (tile + 2)^2 matrices M x C, position-major, in a malloc'd buffer
 * (returned), and *dst, an aligned buffer of `packed` floats for their
 * packed form; NULL (nothing allocated) when memory runs out. */
static float *kcpu_wino_transform(const float *g, int64_t M, int64_t C, int64_t tile,
                                  int64_t packed, float **dst) {
  int64_t np = (tile + 2) * (tile + 2);
  float *t = malloc((size_t)(np * M * C) * sizeof *t);
  size_t bytes = (size_t)packed * sizeof(float);
  *dst = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!t || !*dst) {
    free(t);
    free(*dst);
    return NULL;
  }
  /* one output channel at a time, its C filters' taps gathered tap-major
   * (gd[k * C + c]) so that each step below is a loop over c that
   * vectorizes (a loop over the filters one at a time took most of a
   * cached compile of ResNet-18); each value is still G g G^T with the
   * row step first, its terms in the same order. */
  double *gd = malloc((size_t)(27 * C) * sizeof *gd);
  if (!gd) {
    free(t);
    free(*dst);
    *dst = NULL;
    return NULL;
  }
  double *td = gd + 9 * C;
  float *gf = (float *)gd, *tf = gf + 9 * C; /* tile 2 works in float */
  for (int64_t m = 0; m < M; m++) {
    const float *gm = g + m * C * 9;
    if (tile == 4) {
      for (int k = 0; k < 9; k++)
        for (int64_t c = 0; c < C; c++)
          gd[k * C + c] = gm[c * 9 + k];
      for (int i = 0; i < 6; i++)
        for (int j = 0; j < 3; j++) {
          double *o = td + (i * 3 + j) * C;
          const double *a = gd + j * C, *b = gd + (3 + j) * C, *d = gd + (6 + j) * C;
          for (int64_t c = 0; c < C; c++)
            o[c] =
                kcpu_wino_G4[i][0] * a[c] + kcpu_wino_G4[i][1] * b[c] + kcpu_wino_G4[i][2] * d[c];
        }
      for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
          float *o = t + ((i * 6 + j) * M + m) * C;
          const double *a = td + i * 3 * C, *b = a + C, *d = b + C;
          for (int64_t c = 0; c < C; c++)
            o[c] = (float)(a[c] * kcpu_wino_G4[j][0] + b[c] * kcpu_wino_G4[j][1] +
                           d[c] * kcpu_wino_G4[j][2]);
        }
    } else {
      for (int k = 0; k < 9; k++)
        for (int64_t c = 0; c < C; c++)
          gf[k * C + c] = gm[c * 9 + k];
      /* tf[(i * 3 + j) * C + c]: row i, column j of the first step */
      for (int j = 0; j < 3; j++) {
        const float *a = gf + j * C, *b = gf + (3 + j) * C, *d = gf + (6 + j) * C;
        float *t0 = tf + j * C, *t1 = tf + (3 + j) * C, *t2 = tf + (6 + j) * C,
              *t3 = tf + (9 + j) * C;
        for (int64_t c = 0; c < C; c++) {
          t0[c] = a[c];
          t1[c] = 0.5f * (a[c] + b[c] + d[c]);
          t2[c] = 0.5f * (a[c] - b[c] + d[c]);
          t3[c] = d[c];
        }
      }
      for (int i = 0; i < 4; i++) {
        const float *a = tf + i * 3 * C, *b = a + C, *d = b + C;
        float *o0 = t + ((i * 4 + 0) * M + m) * C, *o1 = t + ((i * 4 + 1) * M + m) * C,
              *o2 = t + ((i * 4 + 2) * M + m) * C, *o3 = t + ((i * 4 + 3) * M + m) * C;
        for (int64_t c = 0; c < C; c++) {
          o0[c] = a[c];
          o1[c] = 0.5f * (a[c] + b[c] + d[c]);
          o2[c] = 0.5f * (a[c] - b[c] + d[c]);
          o3[c] = d[c];
        }
      }
    }
  }
  free(gd);
  return t;
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
  float *dst, *t = kcpu_wino_transform(g, M, C, 2, 16 * one, &dst);
  if (!t)
    return NULL;
  kcpu_pack_job job = {t, dst, 16, M * C, M, C, C, 1, U, wb, false};
  kcpu_pack_run(&job);
  free(t);
  LLVMValueRef at = kcpu_packed_weight(e, dst); /* dst is the table's now */
  if (at)
    kcpu_weight_packed(e, wb);
  return at;
}

/* The arguments both Winograd kernels begin with: X, the transformed
 * filters, bias, residual, Y, N, C, H, W, M, OH, OW and the leading pads
 * (args[0..13]). */
static void kcpu_wino_args(kcpu_emit *e, const kiln_instr *in, const kcpu_win *w, LLVMValueRef upk,
                           int64_t C, int64_t M, LLVMValueRef *args) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  args[0] = kcpu_addr(e, kcpu_i_in(in, 0));
  args[1] = upk;
  args[2] = kcpu_e_ptr(e, kcpu_i_in(in, 2));
  args[3] = kcpu_e_ptr(e, kcpu_i_in(in, 3));
  args[4] = kcpu_addr(e, kcpu_i_out(in, 0));
  args[5] = kcpu_i64(e, x->dims[0]);
  args[6] = kcpu_i64(e, C);
  args[7] = kcpu_i64(e, w->in[0]);
  args[8] = kcpu_i64(e, w->in[1]);
  args[9] = kcpu_i64(e, M);
  args[10] = kcpu_i64(e, w->out[0]);
  args[11] = kcpu_i64(e, w->out[1]);
  args[12] = kcpu_i64(e, w->pb[0]);
  args[13] = kcpu_i64(e, w->pb[1]);
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
  LLVMValueRef args[20];
  kcpu_wino_args(e, in, w, upk, x->dims[1], M, args);
  args[14] = kcpu_i64(e, act);
  args[15] = kcpu_f32(e, act_a);
  args[16] = kcpu_f32(e, act_b);
  args[17] = kcpu_i64(e, trans);
  args[18] = kcpu_i64(e, lanes);
  args[19] = kcpu_pool(e);
  *done = true;
  return kcpu_e_call(e, in, "kcpu_k_conv2d_wino", args, 20);
}

/* ---- BlockedConv (kernels/conv_blocked_wino.c) ---- */

/* Which F(m x m, 3x3) pays on the blocked layout, m = 4 or 2, or 0 for
 * none (measured per layer against the blocked direct kernel, Zen 5, 1
 * and 2 threads): 3x3, stride and dilation 1, group 1, non-negative pads.
 * F(4x4, 3x3) (36 products per 16 outputs where the direct form has 144)
 * from 16 input channels on planes of at least 7x7, where its 36 filter
 * sets (36 C M floats) stay in cache: C M up to 288 x 288 from 14x14, up
 * to 200 x 200 below; it ran 1.5-3x faster than direct (ResNet's 64
 * channels at 56x56 2.7x, 128 at 28x28 2.3-3x, 256 at 14x14 2-2.3x;
 * Inception's 80 -> 192 at 71x71 2.1x; 16 -> 64 at 112x112 1.6x), and
 * F(2x2, 3x3) 1.1-2x. Larger filter sets (384 or 512 channels) and
 * smaller planes take F(2x2, 3x3): at least 24 input channels (16 to 20
 * ran up to 20% slower) on planes of at least 5x5 and, under 10x10, at
 * least 64 output channels (7x7 planes with 32 outputs ran 4-8% slower).
 * Under 16 input channels neither pays (8 ran 1-11% slower by F(4x4)). */
static int64_t kcpu_convb_wino_tile(const kcpu_win *w, int64_t C, int64_t M) {
  if (w->k[0] != 3 || w->k[1] != 3 || w->s[0] != 1 || w->s[1] != 1 || w->d[0] != 1 || w->d[1] != 1)
    return 0;
  if (w->pb[0] < 0 || w->pb[1] < 0 || w->pe[0] < 0 || w->pe[1] < 0)
    return 0;
  int64_t oh = w->out[0], ow = w->out[1];
  if (C >= 16 && oh >= 7 && ow >= 7 && C * M <= (oh >= 14 && ow >= 14 ? 288 * 288 : 200 * 200))
    return 4;
  if (C >= 24 && oh >= 5 && ow >= 5 && (oh * ow >= 100 || M >= 64))
    return 2;
  return 0;
}

/* The transformed filters of weight wb [M, C, 3, 3] for F(tile x tile,
 * 3x3): (tile + 2)^2 sets of 1x1 filters packed by kcpu_convb_pack, in a
 * buffer the executable owns; NULL as kcpu_wino_pack. */
static LLVMValueRef kcpu_convb_wino_pack(kcpu_emit *e, const kiln_buffer *wb, int64_t M, int64_t C,
                                         int64_t tile) {
  if (!wb || kiln_buffer_get_kind(wb) != KILN_BUFFER_WEIGHT)
    return NULL;
  const float *g = kiln_buffer_data(wb);
  if (!g || kiln_buffer_type(wb)->elem != KILN_F32)
    return NULL;
  int64_t one = kcpu_convb_packed_size(M, C, 1, 1, 1, 1), np = (tile + 2) * (tile + 2);
  float *dst, *t = kcpu_wino_transform(g, M, C, tile, np * one, &dst);
  if (!t)
    return NULL;
  for (int64_t xi = 0; xi < np; xi++)
    kcpu_convb_pack(t + xi * M * C, dst + xi * one, M, C, 1, 1, 1, 1);
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
  int64_t tile = kcpu_convb_wino_tile(w, C, M);
  if (x->rank != 5 || kiln_attrs_int_or(kiln_instr_attrs(in), "group", 1) != 1 || !tile)
    return NULL;
  LLVMValueRef upk = kcpu_convb_wino_pack(e, kcpu_i_in(in, 1), M, C, tile);
  if (!upk)
    return NULL;
  LLVMValueRef args[19];
  kcpu_wino_args(e, in, w, upk, C, M, args);
  args[14] = kcpu_i64(e, tile);
  args[15] = kcpu_i64(e, act);
  args[16] = kcpu_f32(e, act_a);
  args[17] = kcpu_f32(e, act_b);
  args[18] = kcpu_pool(e);
  *done = true;
  return kcpu_e_call(e, in, "kcpu_k_conv2d_blocked_wino", args, 19);
}
