/* passes/copyelim.c: copy elimination. `copy dst, src` where src is an
 * activation that dies at the copy is a rename: if dst is an activation
 * first used by this copy, dst's later uses read src instead; if dst is a
 * caller output used by nothing else, src is computed straight into the
 * output (through a view of it where the output is a Reshape of src).
 * Buffers with views are left alone (a view's base is fixed). */
#include "ir_internal.h"
#include "kiln/passes.h"
#include "mem_live.h"

/* Same elements in the same order, other dims. */
static bool reshaped(const kiln_type *a, const kiln_type *b) {
  return a->elem == b->elem && !a->quantized && !b->quantized &&
         kiln_type_numel(a) == kiln_type_numel(b);
}

/* One elimination; *found false when no copy qualifies. */
static kiln_status elim_one(kiln_ir *ir, bool *found) {
  *found = false;
  kiln_mem_live l;
  KILN_TRY(kiln_mem_live_compute(ir, &l));
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++) {
    kiln_instr *in = kiln_ir_instr(ir, i);
    if (kiln_instr_get_kind(in) != KILN_INSTR_Copy || kiln_instr_operand_count(in) != 2)
      continue;
    kiln_buffer *dst = kiln_instr_operand(in, 0), *src = kiln_instr_operand(in, 1);
    if (!kiln_mem_plain_activation(src, &l) || dst == src || !dst ||
        l.last_ref[kiln_buffer_id(src)] != (int64_t)i)
      continue;
    bool same = kiln_type_equal(kiln_buffer_type(dst), kiln_buffer_type(src));
    uint32_t did = kiln_buffer_id(dst);
    kiln_buffer_kind dk = kiln_buffer_get_kind(dst);
    if (same && kiln_mem_plain_activation(dst, &l) && l.first_ref[did] == (int64_t)i) {
      kiln_mem_live_free(&l);
      kiln_mem_remove_markers(ir, KILN_INSTR_Dealloc, src);
      kiln_mem_remove_markers(ir, KILN_INSTR_Alloc, dst);
      kiln_ir_remove_instr(ir, in);
      kiln_mem_rename(ir, dst, src);
      *found = true;
      return NULL;
    }
    if (same && dk == KILN_BUFFER_OUTPUT && l.refs[did] == 1) {
      kiln_mem_live_free(&l);
      kiln_mem_remove_markers(ir, KILN_INSTR_Alloc, src);
      kiln_mem_remove_markers(ir, KILN_INSTR_Dealloc, src);
      kiln_ir_remove_instr(ir, in);
      kiln_mem_rename(ir, src, dst);
      *found = true;
      return NULL;
    }
    /* The output is a Reshape of src (same elements, other dims): src
     * becomes a view of the output, made before src's first use, so its
     * producer writes the caller's memory. */
    if (!same && dk == KILN_BUFFER_OUTPUT && l.refs[did] == 1 &&
        reshaped(kiln_buffer_type(dst), kiln_buffer_type(src))) {
      /* src is used (its last use is this copy), so it has a first use */
      kiln_instr *first = kiln_ir_instr(ir, (uint32_t)l.first_ref[kiln_buffer_id(src)]);
      kiln_mem_live_free(&l);
      kiln_mem_remove_markers(ir, KILN_INSTR_Alloc, src);
      kiln_mem_remove_markers(ir, KILN_INSTR_Dealloc, src);
      kiln_ir_remove_instr(ir, in);
      src->kind = KILN_BUFFER_VIEW;
      src->base = dst;
      src->offset = 0;
      kiln_buffer *ops[2] = {src, dst};
      kiln_operand_dir dirs[2] = {KILN_OUT, KILN_IN};
      KILN_TRY(kiln_ir_add_instr(ir, KILN_INSTR_View, ops, dirs, 2, NULL, 0, first, NULL));
      *found = true;
      return NULL;
    }
  }
  kiln_mem_live_free(&l);
  return NULL;
}

kiln_status kiln_pass_copy_elim(kiln_ir *ir, const kiln_pass_options *o, uint32_t *changes) {
  (void)o;
  return kiln_mem_until_done(ir, elim_one, changes);
}
