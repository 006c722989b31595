/* plugins/cpu/emit_conv.c: Conv and ConvTranspose. f32 Conv of 1-D, 2-D
 * and 3-D (groups, pads, strides, dilations, auto_pad) goes to the
 * GEMM-based kernels of kernels/conv.c: constant filters are packed here, once, and a
 * fused activation (`activation`) and residual (input 3) ride on the GEMM
 * epilogue. f32 1-D and 2-D ConvTranspose is a GEMM and a scatter
 * (kernels/conv.c). Other spatial ranks and float types go to the
 * type-generic kernels of kernels/conv_nd.c. Window geometry: emit_window.c. */
#include "emit_window.h"

#include "conv_blocked.h"
#include "emit_perf.h"
#include "gemm_impl.h"
#include <stdlib.h>

/* ---- type-generic N-D Conv and ConvTranspose ---- */
static bool kcpu_nd_conv_ok(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *w = kcpu_n_in(n, 1);
  return x && w && x->rank >= 3 && x->rank - 2 <= KCPU_ND_MAX && w->rank == x->rank &&
         kcpu_nd_float(x->elem) && kcpu_nd_same(n, x->elem, 3) && kiln_node_result_count(n) == 1;
}

static kiln_status kcpu_nd_conv_any(kcpu_emit *e, const kiln_instr *in, bool transposed) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *wt = kcpu_i_in_type(in, 1);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  kcpu_ndwin w;
  if (!x || !wt || !y || !kcpu_nd_win(a, x, y, wt->dims + 2, transposed, &w))
    return kcpu_e_fail(in, "unsupported shapes or strides/dilations/pads/auto_pad");
  int64_t group = kiln_attrs_int_or(a, "group", 1);
  if (group < 1 || x->dims[1] % group || y->dims[1] % group)
    return kcpu_e_fail(in, "group %lld does not divide the channels", (long long)group);
  LLVMValueRef args[16] = {kcpu_i64(e, x->elem),
                           kcpu_addr(e, kcpu_i_in(in, 0)),
                           kcpu_addr(e, kcpu_i_in(in, 1)),
                           kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->dims[0]),
                           kcpu_i64(e, x->dims[1]),
                           kcpu_i64(e, y->dims[1]),
                           kcpu_i64(e, group)};
  kcpu_ndwin_args(e, &w, args + 9);
  return kcpu_e_call(e, in, transposed ? "kcpu_k_convtransposend" : "kcpu_k_convnd", args, 16);
}

static kiln_status kcpu_nd_conv_emit(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_nd_conv_any(e, in, false);
}

bool kcpu_supports_ConvTranspose(const kiln_node *n) {
  return kcpu_nd_conv_ok(n);
}

/* The geometry arguments of kcpu_k_conv3d and kcpu_k_convtranspose2d
 * from dst[0] on: the input sizes, M, then the output sizes, kernel,
 * strides, dilations and leading pads, each run over w's sp axes.
 * Returns how many it wrote. */
static uint32_t kcpu_ndwin_geometry(kcpu_emit *e, const kcpu_ndwin *w, int64_t M,
                                    LLVMValueRef *dst) {
  uint32_t i = 0;
  for (int64_t r = 0; r < w->sp; r++)
    dst[i++] = kcpu_i64(e, w->in[r]);
  dst[i++] = kcpu_i64(e, M);
  const int64_t *runs[] = {w->out, w->k, w->s, w->d, w->pb};
  for (int q = 0; q < 5; q++)
    for (int64_t r = 0; r < w->sp; r++)
      dst[i++] = kcpu_i64(e, runs[q][r]);
  return i;
}

/* f32 1-D and 2-D ConvTranspose: a GEMM per (image, group) with the
 * filters, packed here, as A, then a scatter into the output
 * (kernels/conv.c); 1-D as 2-D with one row (vocoders' upsampling). */
static kiln_status kcpu_emit_convt2d(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *wt = kcpu_i_in_type(in, 1);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  kcpu_ndwin w;
  if (!kcpu_nd_win(a, x, y, wt->dims + 2, true, &w) || w.sp < 1 || w.sp > 2)
    return kcpu_e_fail(in, "unsupported shapes or strides/dilations/pads/auto_pad");
  if (w.sp == 1) { /* one row: the 2-D window with H = OH = KH = 1 */
    int64_t *runs[] = {w.in, w.out, w.k, w.s, w.d, w.pb, w.pe};
    int64_t one[] = {1, 1, 1, 1, 1, 0, 0};
    for (int r = 0; r < 7; r++)
      runs[r][1] = runs[r][0], runs[r][0] = one[r];
    w.sp = 2;
  }
  int64_t group = kiln_attrs_int_or(a, "group", 1);
  int64_t C = x->dims[1], M = y->dims[1], lanes = kcpu_vector_lanes(e);
  if (group < 1 || C % group || M % group || wt->dims[0] != C || wt->dims[1] * group != M)
    return kcpu_e_fail(in, "group %lld does not divide the channels", (long long)group);
  int64_t Cg = C / group, R = M / group * w.k[0] * w.k[1];
  /* inputs of a few pixels: the GEMM turned around (kernels/conv.c) */
  int64_t swap = w.in[0] * w.in[1] <= 16;
  /* (i, k) = Wt[(g*Cg + k)*R + i]: groups Cg*R apart, rows 1, k R */
  LLVMValueRef apk = kcpu_perf_prepack(e, kcpu_i_in(in, 1), group, Cg * R, R, Cg, 1, R,
                                       swap ? kcpu_gemm_nr(lanes) : kcpu_gemm_mr(lanes));
  LLVMValueRef args[24] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           apk ? kcpu_e_null(e) : kcpu_addr(e, kcpu_i_in(in, 1)),
                           apk ? apk : kcpu_e_null(e),
                           kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->dims[0]),
                           kcpu_i64(e, C)};
  uint32_t i = 7 + kcpu_ndwin_geometry(e, &w, M, args + 7);
  args[i++] = kcpu_i64(e, group);
  args[i++] = kcpu_i64(e, swap);
  args[i++] = kcpu_i64(e, lanes);
  args[i++] = kcpu_pool(e);
  return kcpu_e_call(e, in, "kcpu_k_convtranspose2d", args, i);
}

kiln_status kcpu_emit_ConvTranspose(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *wt = kcpu_i_in_type(in, 1);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  if (x && wt && y && (x->rank == 3 || x->rank == 4) && wt->rank == x->rank &&
      y->rank == x->rank && x->elem == KILN_F32 &&
      wt->elem == KILN_F32 && y->elem == KILN_F32 &&
      (!kcpu_i_in(in, 2) || kcpu_i_in_type(in, 2)->elem == KILN_F32))
    return kcpu_emit_convt2d(e, in);
  return kcpu_nd_conv_any(e, in, true);
}

/* ---- f32 1-D / 2-D Conv ---- */
static bool kcpu_conv_fast(const kiln_type *x, const kiln_type *w, const kiln_type *y) {
  return x && w && y && (x->rank == 3 || x->rank == 4) && w->rank == x->rank &&
         x->elem == KILN_F32 && w->elem == KILN_F32 && y->elem == KILN_F32;
}

bool kcpu_supports_Conv(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *w = kcpu_n_in(n, 1);
  bool fast = x && w && x->rank >= 3 && x->rank <= 5 && w->rank == x->rank &&
              kcpu_n_all_elem(n, KILN_F32);
  /* the fused residual (input 3) is added by the f32 kernels only */
  if (kiln_node_input_count(n) > 3 && kiln_node_input(n, 3))
    return fast;
  return fast || kcpu_nd_conv_ok(n);
}

/* f32 3-D Conv: GEMMs on an im2col packed from the volume
 * (kernels/conv.c, kcpu_k_conv3d), filters prepacked here. */
static kiln_status kcpu_emit_conv3d(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *wt = kcpu_i_in_type(in, 1);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  kcpu_ndwin w;
  if (!kcpu_nd_win(a, x, y, wt->dims + 2, false, &w) || w.sp != 3 || w.pb[0] < 0 ||
      w.pb[1] < 0 || w.pb[2] < 0)
    return kcpu_e_fail(in, "unsupported strides/dilations/pads/auto_pad");
  int64_t group = kiln_attrs_int_or(a, "group", 1), act;
  float act_a, act_b;
  if (group < 1 || x->dims[1] % group || y->dims[1] % group)
    return kcpu_e_fail(in, "group %lld does not divide the channels", (long long)group);
  if (!kcpu_perf_act(a, &act, &act_a, &act_b))
    return kcpu_e_fail(in, "activation '%s' is not supported",
                       kiln_attrs_string_or(a, "activation", ""));
  int64_t C = x->dims[1], M = y->dims[1], lanes = kcpu_vector_lanes(e);
  int64_t Mg = M / group, Kg = C / group * w.k[0] * w.k[1] * w.k[2];
  LLVMValueRef wpk =
      kcpu_perf_prepack(e, kcpu_i_in(in, 1), group, Mg * Kg, Mg, Kg, Kg, 1, kcpu_gemm_mr(lanes));
  LLVMValueRef args[34] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           wpk ? kcpu_e_null(e) : kcpu_addr(e, kcpu_i_in(in, 1)),
                           wpk ? wpk : kcpu_e_null(e),
                           kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                           kcpu_e_ptr(e, kcpu_i_in(in, 3)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->dims[0]),
                           kcpu_i64(e, C)};
  uint32_t i = 8 + kcpu_ndwin_geometry(e, &w, M, args + 8);
  args[i++] = kcpu_i64(e, group);
  args[i++] = kcpu_i64(e, act);
  args[i++] = kcpu_f32(e, act_a);
  args[i++] = kcpu_f32(e, act_b);
  args[i++] = kcpu_i64(e, lanes);
  args[i++] = kcpu_pool(e);
  return kcpu_e_call(e, in, "kcpu_k_conv3d", args, i);
}

kiln_status kcpu_emit_Conv(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *wt = kcpu_i_in_type(in, 1);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  if (x && wt && y && x->rank == 5 && wt->rank == 5 && y->rank == 5 && x->elem == KILN_F32 &&
      wt->elem == KILN_F32 && y->elem == KILN_F32)
    return kcpu_emit_conv3d(e, in);
  if (!kcpu_conv_fast(x, wt, y))
    return kcpu_nd_conv_emit(e, in);
  uint32_t sp = x->rank - 2;
  kcpu_win w;
  if (!kcpu_win_make(a, x, y, wt->dims + 2, sp, &w))
    return kcpu_e_fail(in, "unsupported strides/dilations/pads/auto_pad");
  int64_t group = kiln_attrs_int_or(a, "group", 1);
  if (group < 1 || x->dims[1] % group || y->dims[1] % group)
    return kcpu_e_fail(in, "group %lld does not divide the channels", (long long)group);
  int64_t act;
  float act_a, act_b;
  if (!kcpu_perf_act(a, &act, &act_a, &act_b))
    return kcpu_e_fail(in, "activation '%s' is not supported",
                       kiln_attrs_string_or(a, "activation", ""));
  bool wino;
  KILN_TRY(kcpu_emit_conv_winograd(e, in, &w, group, act, act_a, act_b, &wino));
  if (wino)
    return NULL;
  int64_t C = x->dims[1], M = y->dims[1], lanes = kcpu_vector_lanes(e);
  LLVMValueRef wpk = NULL;
  if (!(group == C && M == C && group > 1)) { /* not depthwise: GEMM with A = filters */
    int64_t Mg = M / group, Kg = C / group * w.k[0] * w.k[1];
    wpk =
        kcpu_perf_prepack(e, kcpu_i_in(in, 1), group, Mg * Kg, Mg, Kg, Kg, 1, kcpu_gemm_mr(lanes));
  }
  LLVMValueRef args[27] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           wpk ? kcpu_e_null(e) : kcpu_addr(e, kcpu_i_in(in, 1)),
                           wpk ? wpk : kcpu_e_null(e),
                           kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                           kcpu_e_ptr(e, kcpu_i_in(in, 3)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->dims[0]),
                           kcpu_i64(e, x->dims[1]),
                           kcpu_i64(e, w.in[0]),
                           kcpu_i64(e, w.in[1]),
                           kcpu_i64(e, y->dims[1]),
                           kcpu_i64(e, w.out[0]),
                           kcpu_i64(e, w.out[1])};
  kcpu_win_args(e, &w, args + 13);
  args[13 + KCPU_WIN_ARGS] = kcpu_i64(e, group);
  args[14 + KCPU_WIN_ARGS] = kcpu_i64(e, act);
  args[15 + KCPU_WIN_ARGS] = kcpu_f32(e, act_a);
  args[16 + KCPU_WIN_ARGS] = kcpu_f32(e, act_b);
  args[17 + KCPU_WIN_ARGS] = kcpu_i64(e, lanes);
  args[18 + KCPU_WIN_ARGS] = kcpu_pool(e);
  return kcpu_e_call(e, in, "kcpu_k_conv2d_ex", args, 27);
}

/* ---- the channel-blocked Conv (kernels/conv_blocked.c) ---- */
/* The window of a BlockedConv, decoded on the plain views of X and Y
 * ([N, C, H, W], [N, M, OH, OW]; C = W's dims[1] x group, M = W's dims[0]). */
static bool kcpu_convb_win(const kiln_attrs *a, const kiln_type *x, const kiln_type *w,
                           const kiln_type *y, kcpu_win *win) {
  kiln_type xp = *x, yp = *y;
  xp.rank = yp.rank = 4;
  xp.dims[1] = w->dims[1] * kiln_attrs_int_or(a, "group", 1);
  yp.dims[1] = w->dims[0];
  return kcpu_win_make(a, &xp, &yp, w->dims + 2, 2, win);
}

/* 2-D, f32, blocks of 16 (the kernels' vector), group 1 (from a blocked or
 * a plain input), depthwise or grouped as kcpu_convb_grouping allows
 * (blocked input), non-negative pads, an activation the kernels apply.
 * Groups of 2, 4 and 8 channels have a kernel of their own (conv_blocked.c:
 * ResNeXt-50's 4-channel 3x3 layers at 92 GFLOP/s on one core, against 35
 * for the plain grouped kernel). */
bool kcpu_supports_BlockedConv(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *w = kcpu_n_in(n, 1), *y = kcpu_n_out(n, 0);
  const kiln_attrs *a = kiln_node_attrs(n);
  if (!x || !w || !y || y->rank != 5 || y->dims[4] != 16 || !kcpu_n_all_elem(n, KILN_F32))
    return false;
  int64_t group = kiln_attrs_int_or(a, "group", 1), act;
  float aa, ab;
  if ((group != 1 && x->rank != 5) || !kcpu_perf_act(a, &act, &aa, &ab))
    return false;
  int64_t C = w->dims[1] * group, M = w->dims[0], gin, gout, cr;
  if (!kcpu_convb_is_depthwise(C, M, group) &&
      !kcpu_convb_grouping(C, M, group, &gin, &gout, &cr))
    return false;
  kcpu_win win;
  return kcpu_convb_win(a, x, w, y, &win) && win.pb[0] >= 0 && win.pb[1] >= 0 && win.pe[0] >= 0 &&
         win.pe[1] >= 0;
}

/* The filters packed for the kernel once, here, when they are constant
 * data and the weights mode packs (not bundles); NULL otherwise, and the
 * kernel then packs them at each call. */
static LLVMValueRef kcpu_convb_prepack(kcpu_emit *e, const kiln_buffer *wb, int64_t M, int64_t C,
                                       int64_t KH, int64_t KW, int64_t group, int64_t xb) {
  if (!wb || kiln_buffer_get_kind(wb) != KILN_BUFFER_WEIGHT)
    return NULL;
  const float *src = kiln_buffer_data(wb);
  if (!src || kiln_buffer_type(wb)->elem != KILN_F32)
    return NULL;
  size_t bytes = (size_t)kcpu_convb_packed_size(M, C, KH, KW, group, xb) * sizeof(float);
  float *dst = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!dst)
    return NULL;
  kcpu_convb_pack(src, dst, M, C, KH, KW, group, xb);
  LLVMValueRef at = kcpu_packed_weight(e, dst); /* dst is the table's now */
  if (at)
    kcpu_weight_packed(e, wb);
  return at;
}

kiln_status kcpu_emit_BlockedConv(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *wt = kcpu_i_in_type(in, 1);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  int64_t group = kiln_attrs_int_or(a, "group", 1), C = wt->dims[1] * group, M = wt->dims[0];
  kcpu_win w;
  if (!kcpu_convb_win(a, x, wt, y, &w))
    return kcpu_e_fail(in, "unsupported strides/dilations/pads/auto_pad");
  int64_t act;
  float act_a, act_b;
  if (!kcpu_perf_act(a, &act, &act_a, &act_b))
    return kcpu_e_fail(in, "activation '%s' is not supported",
                       kiln_attrs_string_or(a, "activation", ""));
  bool wino;
  KILN_TRY(kcpu_emit_convb_winograd(e, in, &w, C, M, act, act_a, act_b, &wino));
  if (wino)
    return NULL;
  int64_t xb = x->rank == 5;
  LLVMValueRef wpk = kcpu_convb_prepack(e, kcpu_i_in(in, 1), M, C, w.k[0], w.k[1], group, xb);
  LLVMValueRef args[27] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           kcpu_i64(e, xb),
                           wpk ? kcpu_e_null(e) : kcpu_addr(e, kcpu_i_in(in, 1)),
                           wpk ? wpk : kcpu_e_null(e),
                           kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                           kcpu_e_ptr(e, kcpu_i_in(in, 3)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->dims[0]),
                           kcpu_i64(e, C),
                           kcpu_i64(e, w.in[0]),
                           kcpu_i64(e, w.in[1]),
                           kcpu_i64(e, M),
                           kcpu_i64(e, w.out[0]),
                           kcpu_i64(e, w.out[1])};
  kcpu_win_args(e, &w, args + 14);
  args[14 + KCPU_WIN_ARGS] = kcpu_i64(e, group);
  args[15 + KCPU_WIN_ARGS] = kcpu_i64(e, act);
  args[16 + KCPU_WIN_ARGS] = kcpu_f32(e, act_a);
  args[17 + KCPU_WIN_ARGS] = kcpu_f32(e, act_b);
  args[18 + KCPU_WIN_ARGS] = kcpu_pool(e);
  return kcpu_e_call(e, in, "kcpu_k_conv2d_blocked", args, 27);
}
