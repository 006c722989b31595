/* plugins/cpu/emit_norm.c: Softmax / LogSoftmax along any axis,
 * LayerNormalization, RMSNormalization and inference BatchNormalization, as calls to the
 * kernel library: f32 to kernels/norm.c, f64 / f16 / bf16 to
 * kernels/norm_generic.c. */
#include "emit_util.h"

/* f64, f16 and bf16 go to the generic kernels (kernels/norm_generic.c). */
static bool kcpu_other_float(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  return x && (x->elem == KILN_F64 || x->elem == KILN_F16 || x->elem == KILN_BF16) &&
         kcpu_n_all_elem(n, x->elem);
}

static bool kcpu_sm_ok(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  return x && x->rank >= 1 && (kcpu_n_all_elem(n, KILN_F32) || kcpu_other_float(n));
}

static kiln_status kcpu_sm_emit(kcpu_emit *e, const kiln_instr *in, int64_t log) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  int64_t ax;
  if (!kcpu_e_axis(kiln_attrs_int_or(kiln_instr_attrs(in), "axis", -1), x->rank, &ax))
    return kcpu_e_fail(in, "axis out of range");
  if (x->elem != KILN_F32) {
    LLVMValueRef gargs[] = {kcpu_i64(e, x->elem),
                            kcpu_addr(e, kcpu_i_in(in, 0)),
                            kcpu_addr(e, kcpu_i_out(in, 0)),
                            kcpu_i64(e, kcpu_e_prod(x->dims, 0, (uint32_t)ax)),
                            kcpu_i64(e, x->dims[ax]),
                            kcpu_i64(e, kcpu_e_prod(x->dims, (uint32_t)ax + 1, x->rank)),
                            kcpu_i64(e, log)};
    return kcpu_e_call(e, in, "kcpu_k_softmax_any", gargs, 7);
  }
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, kcpu_e_prod(x->dims, 0, (uint32_t)ax)),
                         kcpu_i64(e, x->dims[ax]),
                         kcpu_i64(e, kcpu_e_prod(x->dims, (uint32_t)ax + 1, x->rank)),
                         kcpu_i64(e, log),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_softmax", args, 7);
}

bool kcpu_supports_Softmax(const kiln_node *n) {
  return kcpu_sm_ok(n);
}
kiln_status kcpu_emit_Softmax(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_sm_emit(e, in, 0);
}
bool kcpu_supports_LogSoftmax(const kiln_node *n) {
  return kcpu_sm_ok(n);
}
kiln_status kcpu_emit_LogSoftmax(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_sm_emit(e, in, 1);
}

bool kcpu_supports_LayerNormalization(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *s = kcpu_n_in(n, 1), *b = kcpu_n_in(n, 2);
  int64_t ax;
  if (!x || !s || x->rank == 0 ||
      !kcpu_e_axis(kiln_attrs_int_or(kiln_node_attrs(n), "axis", -1), x->rank, &ax))
    return false;
  if (!kcpu_n_all_elem(n, KILN_F32)) { /* f64 / f16: the generic kernel */
    if ((x->elem != KILN_F64 && x->elem != KILN_F16 && x->elem != KILN_BF16) || x->quantized ||
        s->elem != x->elem || (b && b->elem != x->elem) || kcpu_n_out(n, 0)->elem != x->elem)
      return false;
    for (uint32_t i = 1; i < kiln_node_result_count(n); i++) {
      const kiln_type *t = kcpu_n_out(n, i);
      if (t && t->elem != KILN_F32 && t->elem != KILN_F64 && t->elem != KILN_F16 &&
          t->elem != KILN_BF16)
        return false;
    }
  }
  int64_t len = kcpu_e_prod(x->dims, (uint32_t)ax, x->rank);
  return kiln_type_numel(s) == len && (!b || kiln_type_numel(b) == len);
}

kiln_status kcpu_emit_LayerNormalization(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  int64_t ax;
  if (!kcpu_e_axis(kiln_attrs_int_or(a, "axis", -1), x->rank, &ax))
    return kcpu_e_fail(in, "axis out of range");
  if (x->elem != KILN_F32) {
    uint32_t nr = kiln_instr_result_count(in);
    const kiln_type *mt = nr > 1 && kcpu_i_out(in, 1)   ? kcpu_i_out_type(in, 1)
                          : nr > 2 && kcpu_i_out(in, 2) ? kcpu_i_out_type(in, 2)
                                                        : x;
    LLVMValueRef gargs[] = {kcpu_i64(e, x->elem),
                            kcpu_addr(e, kcpu_i_in(in, 0)),
                            kcpu_addr(e, kcpu_i_in(in, 1)),
                            kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                            kcpu_addr(e, kcpu_i_out(in, 0)),
                            kcpu_i64(e, mt->elem),
                            nr > 1 ? kcpu_e_ptr(e, kcpu_i_out(in, 1)) : kcpu_e_null(e),
                            nr > 2 ? kcpu_e_ptr(e, kcpu_i_out(in, 2)) : kcpu_e_null(e),
                            kcpu_i64(e, kcpu_e_prod(x->dims, 0, (uint32_t)ax)),
                            kcpu_i64(e, kcpu_e_prod(x->dims, (uint32_t)ax, x->rank)),
                            kcpu_f64(e, kiln_attrs_float_or(a, "epsilon", 1e-5))};
    return kcpu_e_call(e, in, "kcpu_k_layernorm_any", gargs, 11);
  }
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_e_ptr(e, kcpu_i_out(in, 1)),
                         kcpu_e_ptr(e, kcpu_i_out(in, 2)),
                         kcpu_i64(e, kcpu_e_prod(x->dims, 0, (uint32_t)ax)),
                         kcpu_i64(e, kcpu_e_prod(x->dims, (uint32_t)ax, x->rank)),
                         kcpu_f32(e, (float)kiln_attrs_float_or(a, "epsilon", 1e-5)),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_layernorm", args, 10);
}

bool kcpu_supports_RMSNormalization(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *s = kcpu_n_in(n, 1);
  int64_t ax;
  if (!x || !s || x->rank == 0 || !kcpu_n_all_elem(n, KILN_F32) ||
      !kcpu_e_axis(kiln_attrs_int_or(kiln_node_attrs(n), "axis", -1), x->rank, &ax))
    return false;
  return kiln_type_numel(s) == kcpu_e_prod(x->dims, (uint32_t)ax, x->rank);
}

kiln_status kcpu_emit_RMSNormalization(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  int64_t ax;
  if (!kcpu_e_axis(kiln_attrs_int_or(a, "axis", -1), x->rank, &ax))
    return kcpu_e_fail(in, "axis out of range");
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, kcpu_e_prod(x->dims, 0, (uint32_t)ax)),
                         kcpu_i64(e, kcpu_e_prod(x->dims, (uint32_t)ax, x->rank)),
                         kcpu_f32(e, (float)kiln_attrs_float_or(a, "epsilon", 1e-5)),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_rmsnorm", args, 7);
}

bool kcpu_supports_BatchNormalization(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  if (!x || x->rank < 2 || kiln_node_result_count(n) != 1 ||
      !(kcpu_n_all_elem(n, KILN_F32) || kcpu_other_float(n)))
    return false;
  for (uint32_t i = 1; i < 5; i++) {
    const kiln_type *p = kcpu_n_in(n, i);
    if (!p || kiln_type_numel(p) != x->dims[1])
      return false;
  }
  return true;
}

kiln_status kcpu_emit_BatchNormalization(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  if (x->elem != KILN_F32) {
    LLVMValueRef gargs[] = {
        kcpu_i64(e, x->elem),
        kcpu_addr(e, kcpu_i_in(in, 0)),
        kcpu_addr(e, kcpu_i_in(in, 1)),
        kcpu_addr(e, kcpu_i_in(in, 2)),
        kcpu_addr(e, kcpu_i_in(in, 3)),
        kcpu_addr(e, kcpu_i_in(in, 4)),
        kcpu_addr(e, kcpu_i_out(in, 0)),
        kcpu_i64(e, x->dims[0]),
        kcpu_i64(e, x->dims[1]),
        kcpu_i64(e, kcpu_e_prod(x->dims, 2, x->rank)),
        kcpu_f64(e, kiln_attrs_float_or(kiln_instr_attrs(in), "epsilon", 1e-5))};
    return kcpu_e_call(e, in, "kcpu_k_batchnorm_any", gargs, 11);
  }
  LLVMValueRef args[] = {
      kcpu_addr(e, kcpu_i_in(in, 0)),
      kcpu_addr(e, kcpu_i_in(in, 1)),
      kcpu_addr(e, kcpu_i_in(in, 2)),
      kcpu_addr(e, kcpu_i_in(in, 3)),
      kcpu_addr(e, kcpu_i_in(in, 4)),
      kcpu_addr(e, kcpu_i_out(in, 0)),
      kcpu_i64(e, x->dims[0]),
      kcpu_i64(e, x->dims[1]),
      kcpu_i64(e, kcpu_e_prod(x->dims, 2, x->rank)),
      kcpu_f32(e, (float)kiln_attrs_float_or(kiln_instr_attrs(in), "epsilon", 1e-5))};
  return kcpu_e_call(e, in, "kcpu_k_batchnorm", args, 10);
}
