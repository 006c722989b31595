/* ir/infer/infer.c: kiln_infer_types, the dispatcher. It owns the checks that
 * every kind shares (input and result counts from node_kinds.def, absent
 * required inputs as the `inputs` column of node_schema.def says) so that
 * each kind's function only checks its semantics. */
#include <string.h>

#include "infer.h"

typedef kiln_status (*infer_fn)(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                uint32_t n_results, kiln_type *out);

/* One inference function per kind; the arity and names come from the kind
 * table (kiln_node_kind_get_info). */
static const infer_fn infer_fns[KILN_NODE_KIND_COUNT] = {
#define KILN_NODE(name, min_in, max_in, min_out, max_out, flags) kiln_infer_##name,
#include "kiln/node_kinds.def"
#undef KILN_NODE
};

/* Split's result count comes from `split` or `num_outputs` when the caller
 * asks for the default (0). */
static kiln_status split_count(const kiln_attrs *attrs, uint32_t requested, uint32_t *n) {
  const kiln_attr *sp = kiln_attrs_find(attrs, "split");
  const kiln_attr *no = kiln_attrs_find(attrs, "num_outputs");
  int64_t want = 0;
  if (sp && no)
    return kiln_infer_fail("Split", "attributes 'split' and 'num_outputs' are both set");
  if (sp)
    want = kiln_attr_len(sp);
  else if (no)
    want = kiln_attr_int(no);
  if (want == 0 && requested == 0)
    return kiln_infer_fail("Split", "the number of results is unknown: set 'split', "
                                    "'num_outputs' or ask for a result count");
  if (want != 0 && (want < 1 || want > 64))
    return kiln_infer_fail("Split", "%lld results requested by '%s'; expected 1..64",
                           (long long)want, sp ? "split" : "num_outputs");
  if (want != 0 && requested != 0 && want != (int64_t)requested)
    return kiln_infer_fail("Split", "%u results requested but '%s' gives %lld", requested,
                           sp ? "split" : "num_outputs", (long long)want);
  *n = requested ? requested : (uint32_t)want;
  return NULL;
}

kiln_status kiln_infer_types(kiln_node_kind kind, const kiln_type *const *inputs, uint32_t n_inputs,
                             const kiln_attrs *attrs, uint32_t n_results, kiln_type *out,
                             uint32_t *out_n) {
  if ((unsigned)kind >= KILN_NODE_KIND_COUNT)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_infer_types: invalid node kind %d",
                            (int)kind);
  const kiln_node_kind_info *row = kiln_node_kind_get_info(kind);
  if (!out || (n_inputs && !inputs))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: kiln_infer_types needs %s", row->name,
                            out ? "an inputs array" : "an output array");
  if (n_inputs < row->min_inputs || n_inputs > row->max_inputs) {
    if (row->min_inputs == row->max_inputs)
      return kiln_infer_fail(row->name, "takes %u input%s, got %u", row->min_inputs,
                             row->min_inputs == 1 ? "" : "s", n_inputs);
    return kiln_infer_fail(row->name, "takes %u to %u inputs, got %u", row->min_inputs, row->max_inputs,
                           n_inputs);
  }
  bool all_req = kiln_node_kind_inputs_are_list(kind); /* node_schema.def */
  for (uint32_t i = 0; i < n_inputs; i++) {
    if (!inputs[i] && (all_req || i < row->min_inputs))
      return kiln_infer_fail(row->name, "input %u is absent but required", i);
  }
  uint32_t n = n_results;
  if (kind == KILN_NODE_Split) {
    KILN_TRY(split_count(attrs, n_results, &n));
  } else if (n == 0) {
    n = row->min_results;
  }
  if (n < row->min_results || n > row->max_results) {
    if (row->min_results == row->max_results)
      return kiln_infer_fail(row->name, "has %u result%s, %u requested", row->min_results,
                             row->min_results == 1 ? "" : "s", n);
    return kiln_infer_fail(row->name, "has %u to %u results, %u requested", row->min_results,
                           row->max_results, n);
  }
  memset(out, 0, sizeof *out * n);
  kiln_status s = infer_fns[kind](inputs, n_inputs, attrs, n, out);
  if (s) {
    memset(out, 0, sizeof *out * n);
    return s;
  }
  if (out_n)
    *out_n = n;
  return NULL;
}
