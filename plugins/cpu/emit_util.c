/* plugins/cpu/emit_util.c: helpers shared by the per-kind emitters (see
 * emit_util.h). */
#include "emit_util.h"

#include <stdarg.h>

const kiln_type *kcpu_n_in(const kiln_node *n, uint32_t i) {
  const kiln_value *v = i < kiln_node_input_count(n) ? kiln_node_input(n, i) : NULL;
  return v ? kiln_value_type(v) : NULL;
}

const kiln_type *kcpu_n_out(const kiln_node *n, uint32_t i) {
  const kiln_value *v = i < kiln_node_result_count(n) ? kiln_node_result(n, i) : NULL;
  return v ? kiln_value_type(v) : NULL;
}

uint32_t kcpu_n_inputs(const kiln_node *n) {
  return kiln_node_input_count(n);
}

const kiln_buffer *kcpu_i_in(const kiln_instr *in, uint32_t i) {
  uint32_t r = kiln_instr_result_count(in);
  return r + i < kiln_instr_operand_count(in) ? kiln_instr_operand(in, r + i) : NULL;
}

const kiln_buffer *kcpu_i_out(const kiln_instr *in, uint32_t i) {
  return i < kiln_instr_result_count(in) ? kiln_instr_operand(in, i) : NULL;
}

uint32_t kcpu_i_inputs(const kiln_instr *in) {
  return kiln_instr_operand_count(in) - kiln_instr_result_count(in);
}

const kiln_type *kcpu_i_in_type(const kiln_instr *in, uint32_t i) {
  const kiln_buffer *b = kcpu_i_in(in, i);
  return b ? kiln_buffer_type(b) : NULL;
}

const kiln_type *kcpu_i_out_type(const kiln_instr *in, uint32_t i) {
  const kiln_buffer *b = kcpu_i_out(in, i);
  return b ? kiln_buffer_type(b) : NULL;
}

bool kcpu_n_all_elem(const kiln_node *n, kiln_elem e) {
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
    const kiln_type *t = kcpu_n_in(n, i);
    if (t && (t->elem != e || t->quantized))
      return false;
  }
  for (uint32_t i = 0; i < kiln_node_result_count(n); i++) {
    const kiln_type *t = kcpu_n_out(n, i);
    if (t && (t->elem != e || t->quantized))
      return false;
  }
  return true;
}

bool kcpu_n_plain(const kiln_node *n) {
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
    const kiln_type *t = kcpu_n_in(n, i);
    if (t && t->quantized)
      return false;
  }
  return true;
}

kiln_status kcpu_e_fail(const kiln_instr *in, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = kiln_status_makev(KILN_UNIMPLEMENTED, fmt, ap);
  va_end(ap);
  return kiln_status_wrap(s, "cpu: instruction %u (%s)", kiln_instr_index(in),
                          kiln_instr_kind_name(kiln_instr_get_kind(in)));
}

LLVMValueRef kcpu_e_null(kcpu_emit *e) {
  return LLVMConstPointerNull(LLVMPointerTypeInContext(kcpu_context(e), 0));
}

LLVMValueRef kcpu_e_ptr(kcpu_emit *e, const kiln_buffer *b) {
  return b ? kcpu_addr(e, b) : kcpu_e_null(e);
}

kiln_status kcpu_e_call(kcpu_emit *e, const kiln_instr *in, const char *fn, LLVMValueRef *args,
                        unsigned n) {
  KILN_TRY_CTX(kcpu_call(e, fn, args, n, NULL), "cpu: instruction %u (%s)", kiln_instr_index(in),
               kiln_instr_kind_name(kiln_instr_get_kind(in)));
  return NULL;
}

unsigned kcpu_e_fault_args(kcpu_emit *e, const kiln_instr *in, LLVMValueRef *args) {
  args[0] = kcpu_fault_ptr(e);
  args[1] = kcpu_i64(e, kiln_instr_index(in));
  return 2;
}

void kcpu_e_strides(const kiln_type *t, int64_t *st) {
  int64_t s = 1;
  for (int i = (int)t->rank - 1; i >= 0; i--) {
    st[i] = s;
    s *= t->dims[i];
  }
}

bool kcpu_e_axis(int64_t axis, uint32_t rank, int64_t *out) {
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= (int64_t)rank)
    return false;
  *out = axis;
  return true;
}

int64_t kcpu_e_prod(const int64_t *dims, uint32_t from, uint32_t to) {
  int64_t p = 1;
  for (uint32_t i = from; i < to; i++)
    p *= dims[i];
  return p;
}

uint32_t kcpu_e_ints(const kiln_attrs *a, const char *name, const int64_t **out) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  *out = NULL;
  if (!at || kiln_attr_get_kind(at) != KILN_ATTR_INTS)
    return 0;
  *out = kiln_attr_ints(at);
  return kiln_attr_len(at);
}

bool kcpu_e_numeric(kiln_elem e) {
  return e != KILN_BOOL && e < KILN_ELEM_COUNT;
}

bool kcpu_e_index(kiln_elem e) {
  return e == KILN_I32 || e == KILN_I64;
}

bool kcpu_e_plain(const kiln_type *t) {
  return t && !t->quantized;
}
