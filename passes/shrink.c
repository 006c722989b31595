/* passes/shrink.c: lifetime shrinking. Each activation's alloc moves down
 * to just before its first use and its dealloc up to just after its last
 * use, so the markers say what the planner assumes and a backend that
 * allocates dynamically holds memory no longer than needed. */
#include "kiln/passes.h"
#include "mem_live.h"

/* Is there a non-marker instruction strictly between a and b? */
static bool work_between(const kiln_ir *ir, int64_t a, int64_t b) {
  for (int64_t i = a + 1; i < b; i++)
    if (!kiln_mem_is_marker(kiln_instr_get_kind(kiln_ir_instr(ir, (uint32_t)i))))
      return true;
  return false;
}

static kiln_instr *only_marker(const kiln_ir *ir, kiln_instr_kind k, const kiln_buffer *b) {
  kiln_instr *found = NULL;
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++) {
    kiln_instr *in = kiln_ir_instr(ir, i);
    if (kiln_instr_get_kind(in) == k && kiln_instr_operand_count(in) > 0 &&
        kiln_instr_operand(in, 0) == b) {
      if (found)
        return NULL;
      found = in;
    }
  }
  return found;
}

static kiln_status move(kiln_ir *ir, kiln_instr *old, kiln_instr *before) {
  kiln_buffer *op = kiln_instr_operand(old, 0);
  kiln_operand_dir dir = kiln_instr_operand_dir(old, 0);
  kiln_instr *nw;
  KILN_TRY(kiln_ir_add_instr_attrs(ir, kiln_instr_get_kind(old), &op, &dir, 1,
                                   kiln_instr_attrs(old), before, &nw));
  kiln_ir_remove_instr(ir, old);
  return NULL;
}

static kiln_status shrink_one(kiln_ir *ir, bool *found) {
  *found = false;
  kiln_mem_live l;
  KILN_TRY(kiln_mem_live_compute(ir, &l));
  kiln_status s = NULL;
  for (uint32_t id = 0; id < l.nbuf && !*found && !s; id++) {
    kiln_buffer *b = kiln_ir_buffer(ir, id);
    if (kiln_buffer_get_kind(b) != KILN_BUFFER_ACTIVATION || l.first_ref[id] < 0)
      continue;
    kiln_instr *al = only_marker(ir, KILN_INSTR_Alloc, b);
    kiln_instr *de = only_marker(ir, KILN_INSTR_Dealloc, b);
    if (al && (int64_t)kiln_instr_index(al) < l.first_ref[id] &&
        work_between(ir, kiln_instr_index(al), l.first_ref[id])) {
      s = move(ir, al, kiln_ir_instr(ir, (uint32_t)l.first_ref[id]));
      *found = true;
    } else if (de && (int64_t)kiln_instr_index(de) > l.last_ref[id] &&
               work_between(ir, l.last_ref[id], kiln_instr_index(de))) {
      s = move(ir, de, kiln_ir_instr(ir, (uint32_t)l.last_ref[id] + 1));
      *found = true;
    }
  }
  kiln_mem_live_free(&l);
  return s;
}

kiln_status kiln_pass_shrink_lifetimes(kiln_ir *ir, const kiln_pass_options *o, uint32_t *changes) {
  (void)o;
  return kiln_mem_until_done(ir, shrink_one, changes);
}
