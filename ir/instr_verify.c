/* ir/instr_verify.c: kiln_ir_verify. Checks the shape of every
 * instruction (operand counts, directions, kinds), compute results against
 * shape inference, and buffer lifetimes along the list (alloc before use,
 * no use after dealloc, no double alloc, views inside their base). Every
 * problem is reported, one line each. */
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

enum { ST_NONE = 0, ST_LIVE = 1, ST_DEAD = 2 };

/* The buffer whose storage a buffer uses (views resolved). */
static const kiln_buffer *root_of(const kiln_buffer *b) {
  uint32_t guard = 0;
  while (b->kind == KILN_BUFFER_VIEW && b->base && guard++ < 1000000)
    b = b->base;
  return b;
}

static void fmt_type(const kiln_type *t, char *buf, size_t n) {
  kiln_type_format(t, buf, n);
}

static void check_use(const kiln_instr *in, uint32_t i, const kiln_buffer *b,
                      const unsigned char *state, kiln_ir_sb *sb) {
  const char *kn = kiln_instr_kind_name(in->kind);
  if (b->kind == KILN_BUFFER_VIEW) {
    if (state[b->id] == ST_NONE)
      kiln_ir_sb_line(sb, "instruction %u (%s): operand %u: view '%s' is used before its view",
                      in->index, kn, i, b->name);
  }
  const kiln_buffer *r = root_of(b);
  if (r->kind != KILN_BUFFER_ACTIVATION)
    return;
  if (state[r->id] == ST_NONE)
    kiln_ir_sb_line(sb, "instruction %u (%s): operand %u: '%s' is used before its alloc", in->index,
                    kn, i, b->name);
  else if (state[r->id] == ST_DEAD)
    kiln_ir_sb_line(sb, "instruction %u (%s): operand %u: '%s' is used after its dealloc",
                    in->index, kn, i, b->name);
}

static void check_memory_instr(const kiln_instr *in, unsigned char *state, kiln_ir_sb *sb) {
  const char *kn = kiln_instr_kind_name(in->kind);
  static const uint32_t want_n[] = {1, 1, 2, 2};
  static const kiln_operand_dir want_dir[][2] = {
      {KILN_OUT, KILN_IN}, {KILN_IN, KILN_IN}, {KILN_OUT, KILN_IN}, {KILN_OUT, KILN_IN}};
  if (in->n != want_n[in->kind]) {
    kiln_ir_sb_line(sb, "instruction %u (%s): has %u operands, takes %u", in->index, kn, in->n,
                    want_n[in->kind]);
    return;
  }
  for (uint32_t i = 0; i < in->n; i++) {
    if (!in->operands[i]) {
      kiln_ir_sb_line(sb, "instruction %u (%s): operand %u is absent", in->index, kn, i);
      return;
    }
    if (in->dirs[i] != want_dir[in->kind][i])
      kiln_ir_sb_line(sb, "instruction %u (%s): operand %u '%s' must be %s", in->index, kn, i,
                      in->operands[i]->name, want_dir[in->kind][i] == KILN_IN ? "in" : "out");
  }
  kiln_buffer *a = in->operands[0];
  switch (in->kind) {
  case KILN_INSTR_Alloc:
    if (a->kind != KILN_BUFFER_ACTIVATION) {
      kiln_ir_sb_line(sb, "instruction %u (alloc): '%s' is not an activation", in->index, a->name);
    } else if (state[a->id] != ST_NONE) {
      kiln_ir_sb_line(sb, "instruction %u (alloc): '%s' is allocated twice", in->index, a->name);
    } else {
      state[a->id] = ST_LIVE;
    }
    break;
  case KILN_INSTR_Dealloc:
    if (a->kind != KILN_BUFFER_ACTIVATION) {
      kiln_ir_sb_line(sb, "instruction %u (dealloc): '%s' is not an activation", in->index,
                      a->name);
    } else if (state[a->id] == ST_NONE) {
      kiln_ir_sb_line(sb, "instruction %u (dealloc): '%s' is deallocated before its alloc",
                      in->index, a->name);
    } else if (state[a->id] == ST_DEAD) {
      kiln_ir_sb_line(sb, "instruction %u (dealloc): '%s' is deallocated twice", in->index,
                      a->name);
    } else {
      state[a->id] = ST_DEAD;
    }
    break;
  case KILN_INSTR_Copy: {
    kiln_buffer *src = in->operands[1];
    check_use(in, 0, a, state, sb);
    check_use(in, 1, src, state, sb);
    if (a->type.elem != src->type.elem ||
        kiln_type_bytes(&a->type) != kiln_type_bytes(&src->type)) {
      char x[160], y[160];
      fmt_type(&a->type, x, sizeof x);
      fmt_type(&src->type, y, sizeof y);
      kiln_ir_sb_line(sb, "instruction %u (copy): '%s' (%s) and '%s' (%s) differ in type or size",
                      in->index, a->name, x, src->name, y);
    }
    if (a->kind == KILN_BUFFER_WEIGHT || a->kind == KILN_BUFFER_INPUT)
      kiln_ir_sb_line(sb, "instruction %u (copy): writes to read-only '%s'", in->index, a->name);
    break;
  }
  case KILN_INSTR_View: {
    kiln_buffer *base = in->operands[1];
    check_use(in, 1, base, state, sb);
    if (a->kind != KILN_BUFFER_VIEW)
      kiln_ir_sb_line(sb, "instruction %u (view): '%s' is not a view buffer", in->index, a->name);
    else if (a->base != base)
      kiln_ir_sb_line(sb, "instruction %u (view): '%s' is a view of '%s', not of '%s'", in->index,
                      a->name, a->base ? a->base->name : "?", base->name);
    else if (state[a->id] != ST_NONE)
      kiln_ir_sb_line(sb, "instruction %u (view): '%s' is defined twice", in->index, a->name);
    if (a->kind == KILN_BUFFER_VIEW)
      state[a->id] = ST_LIVE;
    break;
  }
  default:
    break;
  }
}

static void check_compute_instr(const kiln_instr *in, const unsigned char *state, kiln_ir_sb *sb) {
  const char *kn = kiln_instr_kind_name(in->kind);
  kiln_node_kind nk = (kiln_node_kind)kiln_instr_kind_node(in->kind);
  const kiln_node_kind_info *info = kiln_node_kind_get_info(nk);
  uint32_t r = kiln_instr_result_count(in);
  uint32_t n_in = in->n - r;
  bool ok = true;
  if (r < info->min_results || r > info->max_results) {
    kiln_ir_sb_line(sb, "instruction %u (%s): has %u result operands, the kind has %u to %u",
                    in->index, kn, r, info->min_results, info->max_results);
    ok = false;
  }
  if (n_in < info->min_inputs || n_in > info->max_inputs) {
    kiln_ir_sb_line(sb, "instruction %u (%s): has %u input operands, the kind takes %u to %u",
                    in->index, kn, n_in, info->min_inputs, info->max_inputs);
    ok = false;
  }
  for (uint32_t i = 0; i < in->n; i++) {
    const kiln_buffer *b = in->operands[i];
    if (i >= r && in->dirs[i] != KILN_IN) {
      kiln_ir_sb_line(sb, "instruction %u (%s): operand %u is written but follows the inputs",
                      in->index, kn, i);
      ok = false;
    }
    if (!b) {
      if (i < r || i - r < info->min_inputs) {
        kiln_ir_sb_line(sb, "instruction %u (%s): required operand %u is absent", in->index, kn, i);
        ok = false;
      }
      continue;
    }
    check_use(in, i, b, state, sb);
    if (i < r && (b->kind == KILN_BUFFER_WEIGHT || b->kind == KILN_BUFFER_INPUT))
      kiln_ir_sb_line(sb, "instruction %u (%s): result operand %u writes to read-only '%s'",
                      in->index, kn, i, b->name);
  }
  if (!ok || r > 64 || n_in > 64)
    return;
  const kiln_type *in_types[64];
  for (uint32_t i = 0; i < n_in; i++)
    in_types[i] = in->operands[r + i] ? &in->operands[r + i]->type : NULL;
  kiln_type types[64];
  uint32_t got = 0;
  kiln_status s = kiln_infer_types(nk, in_types, n_in, in->attrs, r, types, &got);
  if (s) {
    kiln_ir_sb_line(sb, "instruction %u (%s): %s", in->index, kn, kiln_status_message(s));
    kiln_status_free(s);
    return;
  }
  for (uint32_t i = 0; i < r && i < got; i++) {
    if (!kiln_type_equal(&types[i], &in->operands[i]->type)) {
      char a[160], b[160];
      fmt_type(&in->operands[i]->type, a, sizeof a);
      fmt_type(&types[i], b, sizeof b);
      kiln_ir_sb_line(sb, "instruction %u (%s): result '%s' has type %s, inference gives %s",
                      in->index, kn, in->operands[i]->name, a, b);
    }
  }
}

static void check_buffers(const kiln_ir *ir, kiln_ir_sb *sb) {
  for (uint32_t i = 0; i < ir->n_buffers; i++) {
    const kiln_buffer *b = ir->buffers[i];
    if (b->id != i)
      kiln_ir_sb_line(sb, "buffer '%s': id %u listed at %u", b->name, b->id, i);
    if (b->kind == KILN_BUFFER_VIEW) {
      if (!b->base) {
        kiln_ir_sb_line(sb, "view '%s' has no base", b->name);
        continue;
      }
      uint64_t vb = (uint64_t)kiln_type_bytes(&b->type);
      uint64_t bb = (uint64_t)kiln_type_bytes(&b->base->type);
      if (b->offset > bb || vb > bb - b->offset)
        kiln_ir_sb_line(sb,
                        "view '%s' (%llu bytes at offset %llu) does not fit inside '%s' (%llu "
                        "bytes)",
                        b->name, (unsigned long long)vb, (unsigned long long)b->offset,
                        b->base->name, (unsigned long long)bb);
    }
    if (b->kind == KILN_BUFFER_ACTIVATION &&
        (b->offset % 64 != 0 ||
         (ir->activation_bytes &&
          b->offset + (uint64_t)kiln_type_bytes(&b->type) > ir->activation_bytes)))
      kiln_ir_sb_line(sb, "activation '%s' at offset %llu is misaligned or outside the arena",
                      b->name, (unsigned long long)b->offset);
    if (b->kind == KILN_BUFFER_INPUT || b->kind == KILN_BUFFER_OUTPUT)
      for (uint32_t j = 0; j < i; j++)
        if (ir->buffers[j]->kind == b->kind && ir->buffers[j]->io_index == b->io_index)
          kiln_ir_sb_line(sb, "%s '%s' and '%s' share io index %u",
                          b->kind == KILN_BUFFER_INPUT ? "inputs" : "outputs", ir->buffers[j]->name,
                          b->name, b->io_index);
  }
}

kiln_status kiln_ir_verify(const kiln_ir *ir) {
  if (!ir)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "IR verify: IR is NULL");
  kiln_ir_sb sb = {0};
  unsigned char *state = calloc((size_t)ir->n_buffers + 1, 1);
  unsigned char *written = calloc((size_t)ir->n_buffers + 1, 1);
  if (!state || !written) {
    free(state);
    free(written);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "IR '%s': out of memory verifying", ir->name);
  }
  check_buffers(ir, &sb);
  for (uint32_t i = 0; i < ir->n_instrs; i++) {
    const kiln_instr *in = ir->instrs[i];
    if (in->index != i)
      kiln_ir_sb_line(&sb, "instruction %u: records index %u", i, in->index);
    if (in->kind < KILN_INSTR_COMPUTE_FIRST)
      check_memory_instr(in, state, &sb);
    else if (in->kind < KILN_INSTR_KIND_COUNT)
      check_compute_instr(in, state, &sb);
    else
      kiln_ir_sb_line(&sb, "instruction %u: invalid kind %d", i, (int)in->kind);
    bool writes = in->kind == KILN_INSTR_Copy || in->kind >= KILN_INSTR_COMPUTE_FIRST;
    for (uint32_t j = 0; writes && j < in->n; j++)
      if (in->operands[j] && in->dirs[j] != KILN_IN)
        written[root_of(in->operands[j])->id] = 1;
  }
  for (uint32_t i = 0; i < ir->n_buffers; i++)
    if (ir->buffers[i]->kind == KILN_BUFFER_OUTPUT && !written[i])
      kiln_ir_sb_line(&sb, "output '%s' is never written", ir->buffers[i]->name);
  free(state);
  free(written);
  return kiln_ir_sb_finish(&sb, KILN_VERIFY_ERROR);
}
