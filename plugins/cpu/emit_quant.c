/* plugins/cpu/emit_quant.c: QuantizeLinear / DequantizeLinear (per
 * tensor, axis or block) and DynamicQuantizeLinear, as calls to the
 * type-generic kernels of kernels/quant.c. */
#include "emit_util.h"

/* ---- DynamicQuantizeLinear ---- */
bool kcpu_supports_DynamicQuantizeLinear(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *y = kcpu_n_out(n, 0), *s = kcpu_n_out(n, 1),
                  *z = kcpu_n_out(n, 2);
  return kcpu_e_plain(x) && x->elem == KILN_F32 && kcpu_e_plain(y) && y->elem == KILN_U8 && s &&
         s->elem == KILN_F32 && z && z->elem == KILN_U8 && !z->quantized;
}

kiln_status kcpu_emit_DynamicQuantizeLinear(kcpu_emit *e, const kiln_instr *in) {
  if (kiln_instr_result_count(in) != 3)
    return kcpu_e_fail(in, "needs y, y_scale and y_zero_point");
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)), kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 1)), kcpu_addr(e, kcpu_i_out(in, 2)),
                         kcpu_i64(e, kiln_type_numel(kcpu_i_in_type(in, 0)))};
  return kcpu_e_call(e, in, "kcpu_k_dynquant", args, 5);
}

/* ---- QuantizeLinear, DequantizeLinear (any granularity, blocked too) ---- */
static bool kcpu_q_int(kiln_elem e) {
  return e == KILN_I8 || e == KILN_U8 || e == KILN_I16 || e == KILN_U16 || e == KILN_I32;
}

static bool kcpu_q_float(kiln_elem e) {
  return e == KILN_F32 || e == KILN_F64 || e == KILN_F16 || e == KILN_BF16;
}

/* mode 0 tensor, 1 axis, 2 blocked; false when the shapes do not fit. */
static bool kcpu_q_mode(const kiln_attrs *a, const kiln_type *x, const kiln_type *s, int64_t *mode,
                        int64_t *axis, int64_t *block) {
  *block = kiln_attrs_int_or(a, "block_size", 0);
  *axis = 0;
  if (s->rank == 0 || (kiln_type_numel(s) == 1 && *block == 0)) {
    *mode = 0;
    return true;
  }
  if (!kcpu_e_axis(kiln_attrs_int_or(a, "axis", 1), x->rank, axis))
    return false;
  if (*block > 0) {
    *mode = 2;
    if (s->rank != x->rank)
      return false;
    for (uint32_t d = 0; d < x->rank; d++)
      if ((int64_t)d == *axis ? (x->dims[d] + *block - 1) / *block > s->dims[d]
                              : s->dims[d] != x->dims[d])
        return false;
    return true;
  }
  *mode = 1;
  return s->rank == 1 && s->dims[0] == x->dims[*axis];
}

static bool kcpu_q_ok(const kiln_node *n, bool dequant) {
  const kiln_type *x = kcpu_n_in(n, 0), *s = kcpu_n_in(n, 1), *z = kcpu_n_in(n, 2),
                  *y = kcpu_n_out(n, 0);
  int64_t mode, axis, block;
  if (!x || !s || !y || x->quantized || s->quantized || y->quantized || (z && z->quantized) ||
      x->rank > 16 || !kcpu_q_float(s->elem) ||
      !kcpu_q_mode(kiln_node_attrs(n), x, s, &mode, &axis, &block))
    return false;
  if (z && (!kcpu_q_int(z->elem) || kiln_type_numel(z) != kiln_type_numel(s)))
    return false;
  return dequant ? kcpu_q_int(x->elem) && kcpu_q_float(y->elem)
                 : kcpu_q_float(x->elem) && kcpu_q_int(y->elem);
}

static kiln_status kcpu_q_emit(kcpu_emit *e, const kiln_instr *in, bool dequant) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *s = kcpu_i_in_type(in, 1),
                  *z = kcpu_i_in_type(in, 2), *y = kcpu_i_out_type(in, 0);
  int64_t mode, axis, block, one = 1;
  if (!kcpu_q_mode(kiln_instr_attrs(in), x, s, &mode, &axis, &block))
    return kcpu_e_fail(in, "scale shape does not fit the input");
  uint32_t r = x->rank;
  LLVMValueRef xd = r ? kcpu_i64_array(e, x->dims, r) : kcpu_i64_array(e, &one, 1);
  LLVMValueRef sd = mode == 2 ? kcpu_i64_array(e, s->dims, r) : xd;
  LLVMValueRef args[] = {kcpu_i64(e, dequant),
                         kcpu_i64(e, x->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_i64(e, s->elem),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_i64(e, z ? z->elem : KILN_U8),
                         kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                         kcpu_i64(e, y->elem),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, kiln_type_numel(x)),
                         kcpu_i64(e, r ? r : 1),
                         xd,
                         sd,
                         kcpu_i64(e, mode),
                         kcpu_i64(e, axis),
                         kcpu_i64(e, block > 0 ? block : 1)};
  return kcpu_e_call(e, in, "kcpu_k_quant", args, 16);
}

bool kcpu_supports_QuantizeLinear(const kiln_node *n) {
  return kcpu_q_ok(n, false);
}
kiln_status kcpu_emit_QuantizeLinear(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_q_emit(e, in, false);
}
bool kcpu_supports_DequantizeLinear(const kiln_node *n) {
  return kcpu_q_ok(n, true);
}
kiln_status kcpu_emit_DequantizeLinear(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_q_emit(e, in, true);
}
