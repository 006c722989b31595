/* passes/mem_live.h: liveness of activation buffers on the instruction IR
 * (private to passes/). A view is part of its root activation: its uses
 * extend the root's life. */
#ifndef KILN_PASS_MEM_LIVE_H
#define KILN_PASS_MEM_LIVE_H

#include "kiln/instr.h"

typedef struct kiln_mem_live {
  uint32_t nbuf;
  int32_t *root;      /* buffer id -> root activation id, or -1 */
  int64_t *first_ref; /* per buffer id (roots): first non-alloc/dealloc use; -1 none */
  int64_t *last_ref;  /* last non-alloc/dealloc use; -1 none */
  int64_t *first_any; /* including alloc / dealloc */
  int64_t *last_any;
  uint32_t *refs;  /* operand references to this very buffer (not views), markers too */
  bool *has_views; /* some view's root is this buffer */
} kiln_mem_live;

KILN_NODISCARD kiln_status kiln_mem_live_compute(const kiln_ir *ir, kiln_mem_live *out);
void kiln_mem_live_free(kiln_mem_live *l);

/* The interval the planner and validator use: [first_ref, last_ref], or
 * the markers' span when the buffer is never used; false when never
 * mentioned at all. */
bool kiln_mem_live_interval(const kiln_mem_live *l, uint32_t id, int64_t *s, int64_t *e);

/* Is instruction kind a marker (alloc / dealloc)? */
bool kiln_mem_is_marker(kiln_instr_kind k);

/* An activation that no view has as its root (the memory passes rename
 * and re-place only these). */
bool kiln_mem_plain_activation(const kiln_buffer *b, const kiln_mem_live *l);

/* *live (allocated here, the caller frees it), one entry per instruction
 * p and one past the end (0): the 64-byte-aligned bytes of the activations
 * alive at p; the maximum, the plan's lower bound, in *peak. */
KILN_NODISCARD kiln_status kiln_mem_live_bytes(const kiln_ir *ir, const kiln_mem_live *l,
                                               int64_t **live, uint64_t *peak);

/* Runs step (one rewrite, *found false when it finds none) until it finds
 * nothing more; adds the number of rewrites to *changes when not NULL. */
KILN_NODISCARD kiln_status kiln_mem_until_done(kiln_ir *ir,
                                               kiln_status (*step)(kiln_ir *ir, bool *found),
                                               uint32_t *changes);

/* Replace every operand `from` by `to` (directions kept). */
void kiln_mem_rename(kiln_ir *ir, kiln_buffer *from, kiln_buffer *to);
/* Remove every instruction of kind k whose operand 0 is b. */
void kiln_mem_remove_markers(kiln_ir *ir, kiln_instr_kind k, const kiln_buffer *b);

#endif
