/* plugins/cpu/emit_quant_linalg.c: QLinearMatMul and QLinearConv on 8-bit
 * integers, as calls to the int8 GEMM kernels of kernels/quant_gemm.c
 * (vpdpbusd where the target has AVX512-VNNI, a portable widening loop
 * elsewhere), bit-exact with the interpreter. Constant weights are packed
 * here, once, into the kernels' layouts (kernels/quant_gemm.h: B for
 * QLinearMatMul, A for QLinearConv's filters); weights
 * that are not constants, or live in a bundle's region, are packed by the
 * kernel at each call. Scales and zero points are read at run time, so
 * they need not be constants. Nodes outside what the kernels take (other
 * element types, per-row A parameters, broadcast batches, 3-D and wider
 * convolutions, K so large that an int32 sum could overflow) are declined
 * and lowered to float by the core as before. */
#include "emit_window.h"

#include <stdlib.h>

#include "quant_gemm.h"

/* sum over k of (a - za)(b - zb) with |a - za|, |b - zb| <= 255 stays
 * below 2^31 for K up to this */
#define KCPU_QG_MAX_K 32768

static bool kcpu_ql_8bit(const kiln_type *t) {
  return kcpu_e_plain(t) && (t->elem == KILN_U8 || t->elem == KILN_I8);
}

static bool kcpu_ql_float(const kiln_type *t) {
  return kcpu_e_plain(t) && (t->elem == KILN_F32 || t->elem == KILN_F64 || t->elem == KILN_F16 ||
                             t->elem == KILN_BF16);
}

/* A scale (float) and its zero point (absent, or of the operand's element
 * type), with one value, or `per` values along a rank-1 shape when per > 1. */
static bool kcpu_ql_params(const kiln_node *n, uint32_t si, kiln_elem elem, int64_t per) {
  const kiln_type *s = kcpu_n_in(n, si), *z = kcpu_n_in(n, si + 1);
  if (!kcpu_ql_float(s))
    return false;
  int64_t ns = kiln_type_numel(s);
  if (ns != 1 && !(per > 1 && s->rank == 1 && ns == per))
    return false;
  if (!z)
    return true;
  int64_t nz = kiln_type_numel(z);
  return kcpu_e_plain(z) && z->elem == elem && (nz == 1 || (per > 1 && z->rank == 1 && nz == per));
}

/* How constant weights are packed (kernels/quant_gemm.h). */
typedef enum kcpu_ql_form {
  KCPU_QL_B,        /* QLinearMatMul: K x N matrices as B */
  KCPU_QL_A,        /* QLinearConv through im2col: M x K filters as A */
  KCPU_QL_A_DIRECT, /* QLinearConv read in place: [M, Cg, KH, KW] filters as A */
} kcpu_ql_form;

/* The weights packed for the GEMM, `mats` matrices of `rows` x `cols`
 * (matrix i at w + i*mstride, row-major; for KCPU_QL_A_DIRECT rows = M and
 * cols = Cg * taps with Cg, KH, KW given). NULL (a C NULL) when w is not a
 * constant with data, the weights live in a bundle's region, or memory
 * runs out: the kernel then packs at run time. */
static LLVMValueRef kcpu_ql_prepack(kcpu_emit *e, const kiln_buffer *w, kcpu_ql_form form,
                                    int64_t mats, int64_t mstride, int64_t rows, int64_t cols,
                                    int64_t Cg, int64_t KH, int64_t KW) {
  if (!w || kiln_buffer_get_kind(w) != KILN_BUFFER_WEIGHT)
    return NULL;
  const uint8_t *src = kiln_buffer_data(w);
  if (!src)
    return NULL;
  int64_t one = form == KCPU_QL_B   ? kcpu_qg_packed_bytes(rows, cols)
                : form == KCPU_QL_A ? kcpu_qg_apacked_bytes(rows, cols)
                                    : kcpu_qg_apacked_bytes(rows, kcpu_qg_direct_k(Cg, KH, KW));
  uint8_t *dst = aligned_alloc(64, (size_t)(mats * one));
  if (!dst)
    return NULL;
  bool s8 = kiln_buffer_type(w)->elem == KILN_I8;
  for (int64_t i = 0; i < mats; i++) {
    if (form == KCPU_QL_B)
      kcpu_qg_pack_b(src + i * mstride, !s8, rows, cols, cols, 1, (int8_t *)dst + i * one);
    else if (form == KCPU_QL_A)
      kcpu_qg_pack_a(src + i * mstride, s8, rows, cols, cols, dst + i * one);
    else
      kcpu_qg_pack_a_direct(src + i * mstride, s8, rows, Cg, KH, KW, dst + i * one);
  }
  LLVMValueRef at = kcpu_packed_weight(e, dst); /* dst is the table's now */
  if (at)
    kcpu_weight_packed(e, w);
  return at;
}

/* The scale / zero point arguments from input si on: (type, ptr) of the
 * scale, (type, ptr) of the zero point; with `per` the count for a
 * per-column one. Writes 4 or 6 values. */
static unsigned kcpu_ql_param_args(kcpu_emit *e, const kiln_instr *in, uint32_t si, bool per,
                                   kiln_elem zelem, LLVMValueRef *args) {
  const kiln_type *s = kcpu_i_in_type(in, si), *z = kcpu_i_in_type(in, si + 1);
  unsigned k = 0;
  args[k++] = kcpu_i64(e, s->elem);
  args[k++] = kcpu_addr(e, kcpu_i_in(in, si));
  if (per)
    args[k++] = kcpu_i64(e, kiln_type_numel(s));
  args[k++] = kcpu_i64(e, z ? z->elem : zelem);
  args[k++] = kcpu_e_ptr(e, kcpu_i_in(in, si + 1));
  if (per)
    args[k++] = kcpu_i64(e, z ? kiln_type_numel(z) : 1);
  return k;
}

/* ---- QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) ---- */

/* M, K, N, the batch count and whether B is batched; false for shapes the
 * kernel does not take (B broadcast against A's batch, or rank < 2). */
static bool kcpu_qmm_shape(const kiln_type *a, const kiln_type *b, int64_t *M, int64_t *K,
                           int64_t *N, int64_t *batch, bool *b_batched) {
  if (a->rank < 1 || b->rank < 2)
    return false;
  *K = a->dims[a->rank - 1];
  *M = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
  *N = b->dims[b->rank - 1];
  if (b->dims[b->rank - 2] != *K)
    return false;
  *batch = a->rank > 2 ? kcpu_e_prod(a->dims, 0, a->rank - 2) : 1;
  *b_batched = b->rank > 2;
  if (*b_batched) { /* the same batch dimensions, nothing broadcast */
    if (a->rank != b->rank)
      return false;
    for (uint32_t i = 0; i + 2 < a->rank; i++)
      if (a->dims[i] != b->dims[i])
        return false;
  }
  return *K >= 1 && *K <= KCPU_QG_MAX_K && *M >= 1 && *N >= 1;
}

bool kcpu_supports_QLinearMatMul(const kiln_node *n) {
  const kiln_type *a = kcpu_n_in(n, 0), *b = kcpu_n_in(n, 3), *y = kcpu_n_out(n, 0);
  int64_t M, K, N, batch;
  bool bb;
  return kcpu_n_inputs(n) == 8 && kcpu_ql_8bit(a) && kcpu_ql_8bit(b) && kcpu_ql_8bit(y) &&
         kcpu_qmm_shape(a, b, &M, &K, &N, &batch, &bb) && kiln_type_numel(y) == batch * M * N &&
         kcpu_ql_params(n, 1, a->elem, 1) && kcpu_ql_params(n, 4, b->elem, N) &&
         kcpu_ql_params(n, 6, y->elem, 1) && !kiln_attrs_find(kiln_node_attrs(n), "activation");
}

kiln_status kcpu_emit_QLinearMatMul(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *a = kcpu_i_in_type(in, 0), *b = kcpu_i_in_type(in, 3);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  int64_t M, K, N, batch;
  bool bb;
  if (!a || !b || !y || kcpu_i_inputs(in) < 8 || !kcpu_qmm_shape(a, b, &M, &K, &N, &batch, &bb))
    return kcpu_e_fail(in, "operands the int8 GEMM does not take");
  const kiln_buffer *bw = kcpu_i_in(in, 3);
  LLVMValueRef bpk = kcpu_ql_prepack(e, bw, KCPU_QL_B, bb ? batch : 1, K * N, K, N, 0, 0, 0);
  LLVMValueRef args[28];
  unsigned k = 0;
  args[k++] = kcpu_i64(e, batch);
  args[k++] = kcpu_i64(e, bb);
  args[k++] = kcpu_i64(e, M);
  args[k++] = kcpu_i64(e, N);
  args[k++] = kcpu_i64(e, K);
  args[k++] = kcpu_addr(e, kcpu_i_in(in, 0));
  args[k++] = kcpu_i64(e, a->elem == KILN_I8);
  args[k++] = bpk ? bpk : kcpu_e_null(e);
  args[k++] = bpk ? kcpu_e_null(e) : kcpu_addr(e, bw);
  args[k++] = kcpu_i64(e, b->elem == KILN_U8);
  k += kcpu_ql_param_args(e, in, 1, false, a->elem, args + k);
  k += kcpu_ql_param_args(e, in, 4, true, b->elem, args + k);
  k += kcpu_ql_param_args(e, in, 6, false, y->elem, args + k);
  args[k++] = kcpu_addr(e, kcpu_i_out(in, 0));
  args[k++] = kcpu_i64(e, y->elem == KILN_I8);
  args[k++] = kcpu_i64(e, kcpu_target_vnni(e));
  args[k++] = kcpu_pool(e);
  return kcpu_e_call(e, in, "kcpu_k_qlinear_matmul", args, k);
}

/* ---- QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?) ---- */

static bool kcpu_qconv_geometry(const kiln_attrs *at, const kiln_type *x, const kiln_type *w,
                                const kiln_type *y, kcpu_win *win, int64_t *group) {
  if ((x->rank != 3 && x->rank != 4) || w->rank != x->rank || y->rank != x->rank ||
      !kcpu_win_make(at, x, y, w->dims + 2, x->rank - 2, win) || win->pb[0] < 0 || win->pb[1] < 0)
    return false;
  *group = kiln_attrs_int_or(at, "group", 1);
  int64_t C = x->dims[1], M = y->dims[1];
  return *group >= 1 && C % *group == 0 && M % *group == 0 && w->dims[0] == M &&
         w->dims[1] == C / *group && y->dims[0] == x->dims[0] &&
         C / *group * win->k[0] * win->k[1] <= KCPU_QG_MAX_K;
}

bool kcpu_supports_QLinearConv(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *w = kcpu_n_in(n, 3), *y = kcpu_n_out(n, 0),
                  *bias = kcpu_n_in(n, 8);
  kcpu_win win;
  int64_t group;
  if (kcpu_n_inputs(n) < 8 || kcpu_n_inputs(n) > 9 || !kcpu_ql_8bit(x) || !kcpu_ql_8bit(w) ||
      !kcpu_ql_8bit(y) || !kcpu_qconv_geometry(kiln_node_attrs(n), x, w, y, &win, &group) ||
      kiln_attrs_find(kiln_node_attrs(n), "activation"))
    return false;
  int64_t M = y->dims[1];
  if (bias &&
      !(kcpu_e_plain(bias) && bias->elem == KILN_I32 && bias->rank == 1 && bias->dims[0] == M))
    return false;
  return kcpu_ql_params(n, 1, x->elem, 1) && kcpu_ql_params(n, 4, w->elem, M) &&
         kcpu_ql_params(n, 6, y->elem, 1);
}

kiln_status kcpu_emit_QLinearConv(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *w = kcpu_i_in_type(in, 3);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  kcpu_win win;
  int64_t group;
  if (!x || !w || !y || kcpu_i_inputs(in) < 8 ||
      !kcpu_qconv_geometry(kiln_instr_attrs(in), x, w, y, &win, &group))
    return kcpu_e_fail(in, "shapes or window attributes the int8 convolution does not take");
  int64_t C = x->dims[1], M = y->dims[1], Mg = M / group;
  int64_t K = C / group * win.k[0] * win.k[1];
  /* group g's filters are rows g*Mg.. of [M, K], the A side; depthwise
   * filters stay as they are (the kernel's direct loop reads them) */
  const kiln_buffer *ww = kcpu_i_in(in, 3);
  /* the direct depthwise loop wants the window inside the unpadded input
   * (a window wider than a 1-wide input at stride 2, padded at the end
   * only, came out wrong there: graphgen seed 1 cases 130 and 189); other
   * shapes take the grouped GEMM, exact for all */
  bool fits = (win.k[0] - 1) * win.d[0] + 1 <= win.in[0] &&
              (win.k[1] - 1) * win.d[1] + 1 <= win.in[1];
  bool depthwise = Mg == 1 && C == group && fits;
  int64_t Cg = C / group;
  kcpu_ql_form form = kcpu_qg_conv_direct(win.s[0], win.s[1], win.k[0] * win.k[1], Cg, Mg)
                          ? KCPU_QL_A_DIRECT
                          : KCPU_QL_A;
  LLVMValueRef wpk =
      depthwise ? NULL : kcpu_ql_prepack(e, ww, form, group, Mg * K, Mg, K, Cg, win.k[0], win.k[1]);
  LLVMValueRef args[40];
  unsigned k = 0;
  args[k++] = kcpu_addr(e, kcpu_i_in(in, 0));
  args[k++] = kcpu_i64(e, x->elem == KILN_I8);
  args[k++] = wpk ? wpk : kcpu_e_null(e);
  args[k++] = wpk ? kcpu_e_null(e) : kcpu_addr(e, ww);
  args[k++] = kcpu_i64(e, w->elem == KILN_I8);
  args[k++] = kcpu_e_ptr(e, kcpu_i_in(in, 8));
  args[k++] = kcpu_addr(e, kcpu_i_out(in, 0));
  args[k++] = kcpu_i64(e, x->dims[0]);
  args[k++] = kcpu_i64(e, C);
  args[k++] = kcpu_i64(e, win.in[0]);
  args[k++] = kcpu_i64(e, win.in[1]);
  args[k++] = kcpu_i64(e, M);
  args[k++] = kcpu_i64(e, win.out[0]);
  args[k++] = kcpu_i64(e, win.out[1]);
  kcpu_win_args(e, &win, args + k);
  k += KCPU_WIN_ARGS;
  args[k++] = kcpu_i64(e, group);
  k += kcpu_ql_param_args(e, in, 1, false, x->elem, args + k);
  k += kcpu_ql_param_args(e, in, 4, true, w->elem, args + k);
  k += kcpu_ql_param_args(e, in, 6, false, y->elem, args + k);
  args[k++] = kcpu_i64(e, y->elem == KILN_I8);
  args[k++] = kcpu_i64(e, kcpu_target_vnni(e));
  args[k++] = kcpu_pool(e);
  return kcpu_e_call(e, in, "kcpu_k_qlinear_conv", args, k);
}
