/* passes/concatelim.c: concat elimination. A Concat whose inputs each fill
 * one contiguous byte range of its result (every dim before the axis is 1)
 * copies nothing it could not have avoided: when each input is an
 * activation that dies at the Concat and starts at a 64-byte-aligned
 * offset of the result, the input becomes a view of its range, made before
 * its first use, so its producer writes the result in place; the result's
 * alloc moves up before those views and the Concat goes. The result is an
 * activation or a caller output that nothing before the Concat touches;
 * an activation result is taken only where its longer life does not raise
 * the most bytes alive at once. */
#include <stdlib.h>

#include "ir_internal.h"
#include "kiln/passes.h"
#include "mem_live.h"

#define CONCAT_ALIGN 64
#define CONCAT_MAX_INPUTS 256 /* wider Concats are left as they are */

/* Does any instruction before position i mention b? */
static bool mentioned_before(const kiln_ir *ir, const kiln_buffer *b, uint32_t i) {
  for (uint32_t j = 0; j < i; j++) {
    const kiln_instr *in = kiln_ir_instr(ir, j);
    for (uint32_t o = 0; o < kiln_instr_operand_count(in); o++)
      if (kiln_instr_operand(in, o) == b)
        return true;
  }
  return false;
}

/* Can Concat instruction i (result y, inputs a_k) be removed? On true,
 * off[k] holds each input's byte offset in y. */
static bool qualifies(const kiln_ir *ir, const kiln_mem_live *l, uint32_t i, uint64_t *off) {
  const kiln_instr *in = kiln_ir_instr(ir, i);
  uint32_t n = kiln_instr_operand_count(in);
  if (n < 2 || n - 1 > CONCAT_MAX_INPUTS || kiln_instr_operand_dir(in, 0) != KILN_OUT)
    return false;
  const kiln_buffer *y = kiln_instr_operand(in, 0);
  if (!y)
    return false;
  /* views of the result (a Reshape after the Concat) are fine: their uses
   * count as the result's, so none comes before the Concat */
  bool act = kiln_buffer_get_kind(y) == KILN_BUFFER_ACTIVATION;
  if (act ? l->first_ref[kiln_buffer_id(y)] != (int64_t)i
          : kiln_buffer_get_kind(y) != KILN_BUFFER_OUTPUT || mentioned_before(ir, y, i))
    return false;
  const kiln_type *yt = kiln_buffer_type(y);
  int64_t axis = kiln_attrs_int_or(kiln_instr_attrs(in), "axis", 0);
  if (axis < 0)
    axis += yt->rank;
  if (axis < 0 || axis >= (int64_t)yt->rank || yt->quantized)
    return false;
  for (int64_t d = 0; d < axis; d++)
    if (yt->dims[d] != 1)
      return false;
  uint64_t at = 0;
  for (uint32_t k = 1; k < n; k++) {
    const kiln_buffer *a = kiln_instr_operand(in, k);
    if (!kiln_mem_plain_activation(a, l) || a == y ||
        l->last_ref[kiln_buffer_id(a)] != (int64_t)i || l->first_ref[kiln_buffer_id(a)] < 0 ||
        at % CONCAT_ALIGN != 0)
      return false;
    for (uint32_t j = 1; j < k; j++)
      if (kiln_instr_operand(in, j) == a)
        return false;
    const kiln_type *t = kiln_buffer_type(a);
    if (t->elem != yt->elem || t->quantized)
      return false;
    off[k - 1] = at;
    at += (uint64_t)kiln_type_bytes(t);
  }
  return at == (uint64_t)kiln_type_bytes(yt);
}

static uint64_t aligned_bytes(const kiln_buffer *b) {
  return ((uint64_t)kiln_type_bytes(kiln_buffer_type(b)) + CONCAT_ALIGN - 1) / CONCAT_ALIGN *
         CONCAT_ALIGN;
}

/* An activation result lives from its inputs' first writes on instead of
 * from the Concat: its whole size is reserved while the inputs are made
 * one after another. Allowed only where that does not raise the most bytes
 * alive at once (DenseNet's block-final Concats would: their first input
 * is made long before the others). */
static bool fits(const kiln_ir *ir, const kiln_mem_live *l, uint32_t i, const int64_t *live,
                 uint64_t peak, int64_t earliest) {
  const kiln_instr *in = kiln_ir_instr(ir, i);
  const kiln_buffer *y = kiln_instr_operand(in, 0);
  if (kiln_buffer_get_kind(y) != KILN_BUFFER_ACTIVATION)
    return true;
  for (int64_t p = earliest; p < (int64_t)i; p++) {
    int64_t after = live[p] + (int64_t)aligned_bytes(y);
    for (uint32_t k = 1; k < kiln_instr_operand_count(in); k++) {
      const kiln_buffer *a = kiln_instr_operand(in, k);
      if (l->first_ref[kiln_buffer_id(a)] <= p)
        after -= (int64_t)aligned_bytes(a);
    }
    if (after > (int64_t)peak)
      return false;
  }
  return true;
}

/* One elimination; *found false when no Concat qualifies. */
static kiln_status elim_one(kiln_ir *ir, bool *found) {
  *found = false;
  kiln_mem_live l;
  KILN_TRY(kiln_mem_live_compute(ir, &l));
  int64_t *live;
  uint64_t peak;
  kiln_status s = kiln_mem_live_bytes(ir, &l, &live, &peak);
  if (s) {
    kiln_mem_live_free(&l);
    return s;
  }
  const kiln_instr_kind concat = kiln_instr_kind_for_node(KILN_NODE_Concat);
  uint64_t off[CONCAT_MAX_INPUTS];
  kiln_instr *first[CONCAT_MAX_INPUTS];
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++) {
    kiln_instr *in = kiln_ir_instr(ir, i);
    if (kiln_instr_get_kind(in) != concat || !qualifies(ir, &l, i, off))
      continue;
    uint32_t n = kiln_instr_operand_count(in) - 1;
    kiln_buffer *y = kiln_instr_operand(in, 0);
    kiln_instr *earliest = NULL;
    int64_t earliest_at = -1;
    for (uint32_t k = 0; k < n; k++) {
      int64_t f = l.first_ref[kiln_buffer_id(kiln_instr_operand(in, k + 1))];
      first[k] = kiln_ir_instr(ir, (uint32_t)f);
      if (earliest_at < 0 || f < earliest_at)
        earliest_at = f, earliest = first[k];
    }
    if (!fits(ir, &l, i, live, peak, earliest_at))
      continue;
    bool act = kiln_buffer_get_kind(y) == KILN_BUFFER_ACTIVATION;
    kiln_mem_live_free(&l);
    free(live);
    /* the result lives from before its inputs' first writes */
    if (act) {
      kiln_mem_remove_markers(ir, KILN_INSTR_Alloc, y);
      kiln_operand_dir out = KILN_OUT;
      KILN_TRY(kiln_ir_add_instr(ir, KILN_INSTR_Alloc, &y, &out, 1, NULL, 0, earliest, NULL));
    }
    for (uint32_t k = 0; k < n; k++) {
      kiln_buffer *a = kiln_instr_operand(in, k + 1);
      kiln_mem_remove_markers(ir, KILN_INSTR_Alloc, a);
      kiln_mem_remove_markers(ir, KILN_INSTR_Dealloc, a);
      a->kind = KILN_BUFFER_VIEW;
      a->base = y;
      a->offset = off[k];
      kiln_buffer *ops[2] = {a, y};
      kiln_operand_dir dirs[2] = {KILN_OUT, KILN_IN};
      KILN_TRY(kiln_ir_add_instr(ir, KILN_INSTR_View, ops, dirs, 2, NULL, 0, first[k], NULL));
    }
    kiln_ir_remove_instr(ir, in);
    *found = true;
    return NULL;
  }
  kiln_mem_live_free(&l);
  free(live);
  return NULL;
}

kiln_status kiln_pass_concat_elim(kiln_ir *ir, const kiln_pass_options *o, uint32_t *changes) {
  (void)o;
  return kiln_mem_until_done(ir, elim_one, changes);
}
