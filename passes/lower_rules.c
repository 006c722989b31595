/* passes/lower_rules.c: the rule table (one rule per node kind, each
 * rewriting a node into kinds closer to the primitive set, docs/passes.md)
 * and the constant builders the family rule files share (lower_rules.h).
 * The rules themselves live in passes/lower_<family>.c. */
#include <stdlib.h>

#include "lower_rules.h"
#include "pass_util.h"

kiln_value *kiln_lower_const_fn(kiln_lower_ctx *c, const kiln_type *t,
                                double (*fill)(int64_t i, const void *user), const void *user) {
  if (c->s)
    return NULL;
  int64_t n = kiln_type_numel(t);
  void *buf = calloc((size_t)kiln_type_bytes(t) + 1, 1);
  if (!buf) {
    c->s = kiln_status_make(KILN_OUT_OF_MEMORY, "lower: constant of %lld elements", (long long)n);
    return NULL;
  }
  for (int64_t i = 0; i < n; i++)
    kiln_pass_elem_set(buf, t->elem, i, fill(i, user));
  kiln_value *v = NULL;
  c->s = kiln_module_add_constant(kiln_function_module(c->f), NULL, t, buf, &v);
  free(buf);
  return v;
}

static double fill_from_array(int64_t i, const void *user) {
  return ((const double *)user)[i];
}

kiln_value *kiln_lower_const_vals(kiln_lower_ctx *c, kiln_elem e, uint32_t rank,
                                  const int64_t *dims, const double *vals) {
  if (c->s)
    return NULL;
  kiln_type t;
  c->s = kiln_type_make(e, rank, dims, &t);
  return c->s ? NULL : kiln_lower_const_fn(c, &t, fill_from_array, vals);
}

double kiln_lower_fill_tri(int64_t idx, const void *u) {
  const kiln_lower_tri_fill *t = u;
  int64_t i = (idx / t->m) % t->n, j = idx % t->m;
  switch (t->mode) {
  case 0:
    return i <= j;
  case 1:
    return i < j;
  case 2:
    return i >= j;
  case 3:
    return i > j;
  case 4:
    return j - i >= t->k;
  case 5:
    return j - i <= t->k;
  default:
    return j - i == t->k;
  }
}

/* An i64 constant of `rank` dims, all 1 except `dim` at `axis`, counting
 * 0..dim-1 along it. */
kiln_value *kiln_lower_iota_along(kiln_lower_ctx *c, uint32_t rank, uint32_t axis, int64_t dim) {
  int64_t dims[KILN_MAX_RANK];
  double *v = calloc((size_t)(dim > 0 ? dim : 1), sizeof *v);
  if (!v) {
    if (!c->s)
      c->s = kiln_status_make(KILN_OUT_OF_MEMORY, "lower: index constant of %lld", (long long)dim);
    return NULL;
  }
  for (uint32_t i = 0; i < rank; i++)
    dims[i] = i == axis ? dim : 1;
  for (int64_t i = 0; i < dim; i++)
    v[i] = (double)i;
  kiln_value *k = kiln_lower_const_vals(c, KILN_I64, rank, dims, v);
  free(v);
  return k;
}

double kiln_lower_fill_zero(int64_t i, const void *u) {
  (void)i, (void)u;
  return 0;
}

/* ---- the table ---- */

/* Rules shared by several kinds are named for what they do; every other
 * kind's rule is kiln_lower_<Kind> (KILN_LOWER_RULES_EXTERN). */
static const kiln_lower_rule rules[KILN_NODE_KIND_COUNT] = {
    [KILN_NODE_Flatten] = kiln_lower_to_reshape,
    [KILN_NODE_Squeeze] = kiln_lower_to_reshape,
    [KILN_NODE_Unsqueeze] = kiln_lower_to_reshape,
    [KILN_NODE_Shape] = kiln_lower_shape_const,
    [KILN_NODE_Size] = kiln_lower_shape_const,
    [KILN_NODE_Max] = kiln_lower_minmax,
    [KILN_NODE_Min] = kiln_lower_minmax,
    [KILN_NODE_Softmax] = kiln_lower_softmax,
    [KILN_NODE_LogSoftmax] = kiln_lower_softmax,
    [KILN_NODE_GlobalAveragePool] = kiln_lower_global_pool,
    [KILN_NODE_GlobalMaxPool] = kiln_lower_global_pool,
#define KILN_LOWER_ROW(k) [KILN_NODE_##k] = kiln_lower_##k,
    KILN_LOWER_RULES_EXTERN(KILN_LOWER_ROW)
#undef KILN_LOWER_ROW
};

kiln_lower_rule kiln_lower_rule_for(kiln_node_kind k) {
  return (unsigned)k < KILN_NODE_KIND_COUNT ? rules[k] : NULL;
}
