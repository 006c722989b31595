/* passes/mem_live.c: liveness of activations on the instruction IR. */
#include "mem_live.h"

#include <stdlib.h>

bool kiln_mem_is_marker(kiln_instr_kind k) {
  return k == KILN_INSTR_Alloc || k == KILN_INSTR_Dealloc;
}

static int32_t root_of(const kiln_buffer *b) {
  for (int guard = 0; b && kiln_buffer_get_kind(b) == KILN_BUFFER_VIEW && guard < 64; guard++)
    b = kiln_buffer_base(b);
  if (!b || kiln_buffer_get_kind(b) != KILN_BUFFER_ACTIVATION)
    return -1;
  return (int32_t)kiln_buffer_id(b);
}

kiln_status kiln_mem_live_compute(const kiln_ir *ir, kiln_mem_live *l) {
  uint32_t n = kiln_ir_buffer_count(ir);
  l->nbuf = n;
  size_t c = n ? n : 1;
  l->root = malloc(c * sizeof *l->root);
  l->first_ref = malloc(c * sizeof(int64_t));
  l->last_ref = malloc(c * sizeof(int64_t));
  l->first_any = malloc(c * sizeof(int64_t));
  l->last_any = malloc(c * sizeof(int64_t));
  l->refs = calloc(c, sizeof *l->refs);
  l->has_views = calloc(c, sizeof *l->has_views);
  if (!l->root || !l->first_ref || !l->last_ref || !l->first_any || !l->last_any || !l->refs ||
      !l->has_views) {
    kiln_mem_live_free(l);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "liveness: no memory for %u buffers", n);
  }
  for (uint32_t i = 0; i < n; i++) {
    kiln_buffer *b = kiln_ir_buffer(ir, i);
    l->root[i] = root_of(b);
    l->first_ref[i] = l->last_ref[i] = l->first_any[i] = l->last_any[i] = -1;
    if (kiln_buffer_get_kind(b) == KILN_BUFFER_VIEW && l->root[i] >= 0)
      l->has_views[l->root[i]] = true;
  }
  uint32_t ni = kiln_ir_instr_count(ir);
  for (uint32_t i = 0; i < ni; i++) {
    kiln_instr *in = kiln_ir_instr(ir, i);
    bool marker = kiln_mem_is_marker(kiln_instr_get_kind(in));
    for (uint32_t o = 0; o < kiln_instr_operand_count(in); o++) {
      kiln_buffer *b = kiln_instr_operand(in, o);
      if (!b)
        continue;
      l->refs[kiln_buffer_id(b)]++;
      int32_t r = l->root[kiln_buffer_id(b)];
      if (r < 0)
        continue;
      if (l->first_any[r] < 0)
        l->first_any[r] = i;
      l->last_any[r] = i;
      if (marker)
        continue;
      if (l->first_ref[r] < 0)
        l->first_ref[r] = i;
      l->last_ref[r] = i;
    }
  }
  return NULL;
}

void kiln_mem_live_free(kiln_mem_live *l) {
  free(l->root);
  free(l->first_ref);
  free(l->last_ref);
  free(l->first_any);
  free(l->last_any);
  free(l->refs);
  free(l->has_views);
  l->root = NULL;
  l->first_ref = l->last_ref = l->first_any = l->last_any = NULL;
  l->refs = NULL;
  l->has_views = NULL;
}

bool kiln_mem_live_interval(const kiln_mem_live *l, uint32_t id, int64_t *s, int64_t *e) {
  if (l->first_ref[id] >= 0) {
    *s = l->first_ref[id];
    *e = l->last_ref[id];
    return true;
  }
  if (l->first_any[id] >= 0) {
    *s = l->first_any[id];
    *e = l->last_any[id];
    return true;
  }
  return false;
}

bool kiln_mem_plain_activation(const kiln_buffer *b, const kiln_mem_live *l) {
  return b && kiln_buffer_get_kind(b) == KILN_BUFFER_ACTIVATION && !l->has_views[kiln_buffer_id(b)];
}

kiln_status kiln_mem_live_bytes(const kiln_ir *ir, const kiln_mem_live *l, int64_t **out,
                                uint64_t *peak) {
  uint32_t ni = kiln_ir_instr_count(ir);
  int64_t *live = *out = calloc((size_t)ni + 1, sizeof *live);
  *peak = 0;
  if (!live)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "memory plan: no memory for %u instructions", ni);
  for (uint32_t id = 0; id < kiln_ir_buffer_count(ir); id++) {
    const kiln_buffer *b = kiln_ir_buffer(ir, id);
    int64_t st, en;
    if (kiln_buffer_get_kind(b) != KILN_BUFFER_ACTIVATION ||
        !kiln_mem_live_interval(l, id, &st, &en))
      continue;
    int64_t size = (kiln_type_bytes(kiln_buffer_type(b)) + 63) / 64 * 64;
    live[st] += size; /* differences, summed below */
    live[en + 1] -= size;
  }
  for (uint32_t p = 0; p < ni; p++) {
    live[p + 1] += live[p];
    if ((uint64_t)live[p] > *peak)
      *peak = (uint64_t)live[p];
  }
  return NULL;
}

kiln_status kiln_mem_until_done(kiln_ir *ir, kiln_status (*step)(kiln_ir *ir, bool *found),
                                uint32_t *changes) {
  uint32_t done = 0;
  for (;;) {
    bool found;
    KILN_TRY(step(ir, &found));
    if (!found)
      break;
    done++;
  }
  if (changes)
    *changes += done;
  return NULL;
}

void kiln_mem_rename(kiln_ir *ir, kiln_buffer *from, kiln_buffer *to) {
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++) {
    kiln_instr *in = kiln_ir_instr(ir, i);
    for (uint32_t o = 0; o < kiln_instr_operand_count(in); o++)
      if (kiln_instr_operand(in, o) == from)
        kiln_instr_set_operand(in, o, to, kiln_instr_operand_dir(in, o));
  }
}

void kiln_mem_remove_markers(kiln_ir *ir, kiln_instr_kind k, const kiln_buffer *b) {
  for (uint32_t i = kiln_ir_instr_count(ir); i-- > 0;) {
    kiln_instr *in = kiln_ir_instr(ir, i);
    if (kiln_instr_get_kind(in) == k && kiln_instr_operand_count(in) > 0 &&
        kiln_instr_operand(in, 0) == b)
      kiln_ir_remove_instr(ir, in);
  }
}
