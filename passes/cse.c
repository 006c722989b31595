/* passes/cse.c: common subexpression elimination. Two nodes of the same
 * kind, with the same inputs (same values, in order), equal attributes and
 * the same number of results compute the same thing (every kind is
 * deterministic), so the later one's uses move to the earlier one. A hash
 * of (kind, inputs) keeps this linear on big graphs. */
#include <stdlib.h>

#include "pass_util.h"

static uint64_t node_hash(const kiln_node *n) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)kiln_node_get_kind(n);
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
    h ^= (uint64_t)(uintptr_t)kiln_node_input(n, i);
    h *= 1099511628211ull;
  }
  return h ^ kiln_node_result_count(n);
}

static bool same_node(const kiln_node *a, const kiln_node *b) {
  if (kiln_node_get_kind(a) != kiln_node_get_kind(b) ||
      kiln_node_input_count(a) != kiln_node_input_count(b) ||
      kiln_node_result_count(a) != kiln_node_result_count(b))
    return false;
  for (uint32_t i = 0; i < kiln_node_input_count(a); i++)
    if (kiln_node_input(a, i) != kiln_node_input(b, i))
      return false;
  for (uint32_t i = 0; i < kiln_node_result_count(a); i++)
    if (!kiln_type_equal(kiln_value_type(kiln_node_result(a, i)),
                         kiln_value_type(kiln_node_result(b, i))))
      return false;
  return kiln_pass_attrs_equal(kiln_node_attrs(a), kiln_node_attrs(b));
}

kiln_status kiln_pass_cse(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  (void)o;
  kiln_node **nodes;
  uint32_t n;
  KILN_TRY(kiln_pass_snapshot(f, &nodes, &n));
  uint32_t cap = 16;
  while (cap < 2 * n)
    cap *= 2;
  kiln_node **slots = calloc(cap, sizeof *slots);
  if (!slots) {
    free(nodes);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "cse: no memory for %u nodes", n);
  }
  uint32_t merged = 0;
  kiln_status s = NULL;
  for (uint32_t i = 0; i < n && !s; i++) {
    kiln_node *nd = nodes[i];
    uint32_t h = (uint32_t)(node_hash(nd) & (cap - 1));
    kiln_node *twin = NULL;
    while (slots[h]) {
      if (same_node(slots[h], nd)) {
        twin = slots[h];
        break;
      }
      h = (h + 1) & (cap - 1);
    }
    if (!twin) {
      slots[h] = nd;
      continue;
    }
    kiln_value *repl[64];
    uint32_t nr = kiln_node_result_count(nd);
    for (uint32_t r = 0; r < nr && r < 64; r++)
      repl[r] = kiln_node_result(twin, r);
    s = kiln_pass_replace_node(f, nd, repl);
    merged++;
  }
  free(slots);
  free(nodes);
  if (changes)
    *changes += merged;
  return s ? kiln_status_wrap(s, "cse") : NULL;
}
