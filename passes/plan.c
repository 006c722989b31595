/* passes/plan.c: the static memory plan. Every activation gets a 64-byte
 * aligned offset in one arena such that activations alive at the same time
 * never share bytes. Several placement orders are tried and the smallest
 * arena kept; the lower bound (most bytes alive at once) says how far from
 * optimal the winner is. */
#include <stdlib.h>
#include <string.h>

#include "kiln/passes.h"
#include "mem_live.h"

#define ALIGN 64u

typedef struct item {
  kiln_buffer *b;
  uint64_t size; /* aligned */
  int64_t s, e;  /* lifetime; s > e: never alive */
  uint64_t off;
} item;

typedef struct range {
  uint64_t lo, hi;
} range;

static int by_size_desc(const void *x, const void *y) {
  const item *a = *(item *const *)x, *b = *(item *const *)y;
  if (a->size != b->size)
    return a->size > b->size ? -1 : 1;
  return (a->s > b->s) - (a->s < b->s);
}

static int by_start(const void *x, const void *y) {
  const item *a = *(item *const *)x, *b = *(item *const *)y;
  if (a->s != b->s)
    return (a->s > b->s) - (a->s < b->s);
  return a->size > b->size ? -1 : a->size < b->size;
}

static int by_length_desc(const void *x, const void *y) {
  const item *a = *(item *const *)x, *b = *(item *const *)y;
  int64_t la = a->e - a->s, lb = b->e - b->s;
  if (la != lb)
    return la > lb ? -1 : 1;
  return by_size_desc(x, y);
}

static int by_lo(const void *x, const void *y) {
  const range *a = x, *b = y;
  return (a->lo > b->lo) - (a->lo < b->lo);
}

/* Place items in the given order; best: best-fit gap, else first fit.
 * Returns the arena size. */
static uint64_t place(item **order, uint32_t n, bool best, range *scratch) {
  uint64_t peak = 0;
  for (uint32_t i = 0; i < n; i++) {
    item *it = order[i];
    it->off = 0;
    if (it->size == 0 || it->s > it->e)
      continue;
    uint32_t nr = 0;
    for (uint32_t j = 0; j < i; j++) {
      item *o = order[j];
      if (o->size == 0 || o->s > o->e || o->e < it->s || it->e < o->s)
        continue;
      scratch[nr++] = (range){o->off, o->off + o->size};
    }
    qsort(scratch, nr, sizeof *scratch, by_lo);
    uint64_t cur = 0, best_off = UINT64_MAX, best_len = UINT64_MAX;
    for (uint32_t j = 0; j < nr; j++) {
      uint64_t gap_end = scratch[j].lo;
      if (gap_end > cur && gap_end - cur >= it->size) {
        if (!best) {
          best_off = cur;
          break;
        }
        if (gap_end - cur < best_len) {
          best_len = gap_end - cur;
          best_off = cur;
        }
      }
      if (scratch[j].hi > cur)
        cur = scratch[j].hi;
    }
    if (best_off == UINT64_MAX)
      best_off = cur; /* above everything alive at the same time */
    it->off = best_off;
    if (it->off + it->size > peak)
      peak = it->off + it->size;
  }
  return peak;
}

kiln_status kiln_pass_plan_lower_bound(const kiln_ir *ir, uint64_t *out) {
  *out = 0;
  kiln_mem_live l;
  KILN_TRY(kiln_mem_live_compute(ir, &l));
  int64_t *live;
  kiln_status s = kiln_mem_live_bytes(ir, &l, &live, out);
  free(live);
  kiln_mem_live_free(&l);
  return s;
}

kiln_status kiln_pass_plan_memory(kiln_ir *ir, kiln_mem_plan_report *report) {
  kiln_mem_live l;
  KILN_TRY(kiln_mem_live_compute(ir, &l));
  uint32_t nb = kiln_ir_buffer_count(ir), n = 0;
  item *items = calloc(nb ? nb : 1, sizeof *items);
  item **order = calloc(nb ? nb : 1, sizeof *order);
  range *scratch = calloc(nb ? nb : 1, sizeof *scratch);
  uint64_t *best_off = calloc(nb ? nb : 1, sizeof *best_off);
  if (!items || !order || !scratch || !best_off) {
    free(items);
    free(order);
    free(scratch);
    free(best_off);
    kiln_mem_live_free(&l);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "memory plan: no memory for %u buffers", nb);
  }
  for (uint32_t id = 0; id < nb; id++) {
    kiln_buffer *b = kiln_ir_buffer(ir, id);
    if (kiln_buffer_get_kind(b) != KILN_BUFFER_ACTIVATION)
      continue;
    item *it = &items[n++];
    it->b = b;
    uint64_t bytes = (uint64_t)kiln_type_bytes(kiln_buffer_type(b));
    it->size = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    if (!kiln_mem_live_interval(&l, id, &it->s, &it->e)) {
      it->s = 1;
      it->e = 0;
    }
  }
  /* Lower bound: the most aligned bytes alive at one instruction. */
  uint64_t lower = 0;
  for (uint32_t p = 0; p < kiln_ir_instr_count(ir); p++) {
    uint64_t live = 0;
    for (uint32_t i = 0; i < n; i++)
      if (items[i].s <= (int64_t)p && (int64_t)p <= items[i].e)
        live += items[i].size;
    if (live > lower)
      lower = live;
  }
  static const struct {
    const char *name;
    int (*cmp)(const void *, const void *);
    bool best;
  } heur[] = {{"size-desc best-fit", by_size_desc, true},
              {"program-order first-fit", by_start, false},
              {"lifetime-desc first-fit", by_length_desc, false},
              {"size-desc first-fit", by_size_desc, false}};
  uint64_t best_peak = UINT64_MAX;
  const char *winner = heur[0].name;
  for (size_t h = 0; h < sizeof heur / sizeof heur[0]; h++) {
    for (uint32_t i = 0; i < n; i++)
      order[i] = &items[i];
    qsort(order, n, sizeof *order, heur[h].cmp);
    uint64_t peak = place(order, n, heur[h].best, scratch);
    if (peak < best_peak) {
      best_peak = peak;
      winner = heur[h].name;
      for (uint32_t i = 0; i < n; i++)
        best_off[i] = items[i].off;
    }
  }
  if (n == 0)
    best_peak = 0;
  for (uint32_t i = 0; i < n; i++)
    kiln_buffer_set_offset(items[i].b, best_off[i]);
  kiln_ir_set_activation_bytes(ir, best_peak);
  if (report) {
    report->peak_bytes = best_peak;
    report->lower_bound = lower;
    report->heuristic = winner;
    report->activations = n;
  }
  free(items);
  free(order);
  free(scratch);
  free(best_off);
  kiln_mem_live_free(&l);
  return NULL;
}
