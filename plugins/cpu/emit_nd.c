/* plugins/cpu/emit_nd.c: Conv, ConvTranspose, MaxPool (with Indices) and
 * AveragePool of any spatial rank and float type (integer types for
 * MaxPool), as calls to the generic kernels of kernels/convnd.c. Window
 * geometry (strides, dilations, pads, auto_pad, output_shape) is resolved
 * here exactly as the reference interpreter does: SAME_UPPER puts the odd
 * pad at the end, and ConvTranspose's total padding is halved by floor
 * division. */
#include "emit_nd.h"

#include <string.h>

#define KCPU_ND_MAX 8

typedef struct kcpu_ndwin {
  int64_t sp, in[KCPU_ND_MAX], out[KCPU_ND_MAX], k[KCPU_ND_MAX], s[KCPU_ND_MAX], d[KCPU_ND_MAX],
      pb[KCPU_ND_MAX], pe[KCPU_ND_MAX];
} kcpu_ndwin;

static bool kcpu_nd_list(const kiln_attrs *a, const char *name, int64_t n, int64_t dflt,
                         int64_t *out) {
  const int64_t *v;
  uint32_t len = kcpu_e_ints(a, name, &v);
  if (len && len != n)
    return false;
  for (int64_t i = 0; i < n; i++)
    out[i] = len ? v[i] : dflt;
  return true;
}

static bool kcpu_nd_win(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                        const int64_t *kshape, bool transposed, kcpu_ndwin *w) {
  if (x->rank < 3 || x->rank - 2 > KCPU_ND_MAX || y->rank != x->rank)
    return false;
  int64_t sp = w->sp = x->rank - 2, pads[2 * KCPU_ND_MAX], opad[KCPU_ND_MAX];
  if (!kcpu_nd_list(a, "strides", sp, 1, w->s) || !kcpu_nd_list(a, "dilations", sp, 1, w->d) ||
      !kcpu_nd_list(a, "pads", 2 * sp, 0, pads) || !kcpu_nd_list(a, "output_padding", sp, 0, opad))
    return false;
  const char *ap = kiln_attrs_string_or(a, "auto_pad", "NOTSET");
  bool upper = !strcmp(ap, "SAME_UPPER"), lower = !strcmp(ap, "SAME_LOWER");
  bool valid = !strcmp(ap, "VALID");
  if (!upper && !lower && !valid && strcmp(ap, "NOTSET"))
    return false;
  const int64_t *osh;
  bool has_oshape = transposed && kcpu_e_ints(a, "output_shape", &osh) > 0;
  for (int64_t i = 0; i < sp; i++) {
    w->in[i] = x->dims[2 + i];
    w->out[i] = y->dims[2 + i];
    w->k[i] = kshape[i];
    if (w->s[i] < 1 || w->d[i] < 1)
      return false;
    int64_t span = (w->k[i] - 1) * w->d[i] + 1;
    if (transposed && (has_oshape || upper || lower)) {
      int64_t total = w->s[i] * (w->in[i] - 1) + opad[i] + span - w->out[i];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w->pb[i] = upper ? half : total - half;
      w->pe[i] = total - w->pb[i];
    } else if (upper || lower) {
      int64_t total = (w->out[i] - 1) * w->s[i] + span - w->in[i];
      if (total < 0)
        total = 0;
      w->pb[i] = upper ? total / 2 : total - total / 2;
      w->pe[i] = total - w->pb[i];
    } else if (valid) {
      w->pb[i] = w->pe[i] = 0;
    } else {
      w->pb[i] = pads[i];
      w->pe[i] = pads[sp + i];
    }
  }
  return true;
}

static bool kcpu_nd_float(kiln_elem e) {
  return e == KILN_F32 || e == KILN_F64 || e == KILN_F16 || e == KILN_BF16;
}

static bool kcpu_nd_same(const kiln_node *n, kiln_elem el, uint32_t n_in) {
  for (uint32_t i = 0; i < n_in && i < kcpu_n_inputs(n); i++) {
    const kiln_type *t = kcpu_n_in(n, i);
    if (t && (t->elem != el || t->quantized))
      return false;
  }
  const kiln_type *y = kcpu_n_out(n, 0);
  return y && y->elem == el && !y->quantized;
}

bool kcpu_nd_conv_ok(const kiln_node *n) {
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
  uint32_t sp = (uint32_t)w.sp;
  LLVMValueRef args[] = {kcpu_i64(e, x->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, x->dims[0]),
                         kcpu_i64(e, x->dims[1]),
                         kcpu_i64(e, y->dims[1]),
                         kcpu_i64(e, group),
                         kcpu_i64(e, w.sp),
                         kcpu_i64_array(e, w.in, sp),
                         kcpu_i64_array(e, w.out, sp),
                         kcpu_i64_array(e, w.k, sp),
                         kcpu_i64_array(e, w.s, sp),
                         kcpu_i64_array(e, w.d, sp),
                         kcpu_i64_array(e, w.pb, sp)};
  return kcpu_e_call(e, in, transposed ? "kcpu_k_convtransposend" : "kcpu_k_convnd", args, 16);
}

kiln_status kcpu_nd_conv_emit(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_nd_conv_any(e, in, false);
}

bool kcpu_supports_ConvTranspose(const kiln_node *n) {
  return kcpu_nd_conv_ok(n);
}
kiln_status kcpu_emit_ConvTranspose(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_nd_conv_any(e, in, true);
}

bool kcpu_nd_pool_ok(const kiln_node *n, int mode) {
  const kiln_type *x = kcpu_n_in(n, 0);
  const int64_t *ks;
  if (!x || x->rank < 3 || x->rank - 2 > KCPU_ND_MAX || x->quantized ||
      kcpu_e_ints(kiln_node_attrs(n), "kernel_shape", &ks) != x->rank - 2)
    return false;
  bool ok_elem = kcpu_nd_float(x->elem) ||
                 (mode == 0 && (x->elem == KILN_U8 || x->elem == KILN_I8 || x->elem == KILN_I32 ||
                                x->elem == KILN_I16 || x->elem == KILN_U16));
  if (!ok_elem || !kcpu_nd_same(n, x->elem, 1))
    return false;
  if (kiln_node_result_count(n) > 1) {
    const kiln_type *ind = kcpu_n_out(n, 1);
    if (mode != 0 || (ind && ind->elem != KILN_I64))
      return false;
  }
  return true;
}

kiln_status kcpu_nd_pool_emit(kcpu_emit *e, const kiln_instr *in, int mode) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  const int64_t *ks;
  kcpu_ndwin w;
  if (!x || !y || kcpu_e_ints(a, "kernel_shape", &ks) != x->rank - 2 ||
      !kcpu_nd_win(a, x, y, ks, false, &w))
    return kcpu_e_fail(in, "unsupported window attributes");
  uint32_t sp = (uint32_t)w.sp;
  const kiln_buffer *ind = kiln_instr_result_count(in) > 1 ? kcpu_i_out(in, 1) : NULL;
  LLVMValueRef args[] = {kcpu_i64(e, x->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_e_ptr(e, ind),
                         kcpu_i64(e, x->dims[0] * x->dims[1]),
                         kcpu_i64(e, w.sp),
                         kcpu_i64_array(e, w.in, sp),
                         kcpu_i64_array(e, w.out, sp),
                         kcpu_i64_array(e, w.k, sp),
                         kcpu_i64_array(e, w.s, sp),
                         kcpu_i64_array(e, w.d, sp),
                         kcpu_i64_array(e, w.pb, sp),
                         kcpu_i64_array(e, w.pe, sp),
                         kcpu_i64(e, mode),
                         kcpu_i64(e, kiln_attrs_int_or(a, "count_include_pad", 0) != 0),
                         kcpu_i64(e, kiln_attrs_int_or(a, "storage_order", 0) != 0)};
  return kcpu_e_call(e, in, "kcpu_k_poolnd", args, 16);
}
