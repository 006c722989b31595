/* passes/inplace.c: in-place reuse. An elementwise compute instruction
 * whose input activation dies there and has exactly the result's type
 * writes its result into that input's buffer (operand 0 becomes the input,
 * direction inout). Elementwise kernels read element i before writing
 * element i, so the aliasing is safe; other kinds are never touched. */
#include "kiln/passes.h"
#include "mem_live.h"

static bool elementwise(kiln_instr_kind k) {
  int nk = kiln_instr_kind_node(k);
  if (nk < 0)
    return false;
  const kiln_node_kind_info *ki = kiln_node_kind_get_info((kiln_node_kind)nk);
  return ki && (ki->flags & (KILN_NK_UNARY | KILN_NK_BINARY | KILN_NK_VARIADIC));
}

static kiln_status reuse_one(kiln_ir *ir, bool *found) {
  *found = false;
  kiln_mem_live l;
  KILN_TRY(kiln_mem_live_compute(ir, &l));
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++) {
    kiln_instr *in = kiln_ir_instr(ir, i);
    if (!elementwise(kiln_instr_get_kind(in)) || kiln_instr_result_count(in) != 1 ||
        kiln_instr_operand_dir(in, 0) != KILN_OUT)
      continue;
    kiln_buffer *r = kiln_instr_operand(in, 0);
    if (!kiln_mem_plain_activation(r, &l) || l.first_ref[kiln_buffer_id(r)] != (int64_t)i)
      continue;
    for (uint32_t o = 1; o < kiln_instr_operand_count(in); o++) {
      kiln_buffer *a = kiln_instr_operand(in, o);
      if (!kiln_mem_plain_activation(a, &l) || a == r ||
          l.last_ref[kiln_buffer_id(a)] != (int64_t)i ||
          !kiln_type_equal(kiln_buffer_type(a), kiln_buffer_type(r)))
        continue;
      kiln_mem_live_free(&l);
      kiln_mem_remove_markers(ir, KILN_INSTR_Dealloc, a);
      kiln_mem_remove_markers(ir, KILN_INSTR_Alloc, r);
      kiln_mem_rename(ir, r, a);
      kiln_instr_set_operand(in, 0, a, KILN_INOUT);
      *found = true;
      return NULL;
    }
  }
  kiln_mem_live_free(&l);
  return NULL;
}

kiln_status kiln_pass_inplace(kiln_ir *ir, const kiln_pass_options *o, uint32_t *changes) {
  (void)o;
  return kiln_mem_until_done(ir, reuse_one, changes);
}
