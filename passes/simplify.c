/* passes/simplify.c: local algebraic simplifications. Each rule looks at
 * one node and either returns a value to use instead of its result or
 * leaves it alone. A rule only fires when the replacement has exactly the
 * result's type, so broadcasting (x * ones[4,4] with x[4]) never fires. */
#include <stdlib.h>

#include "pass_util.h"

static bool same_type(const kiln_value *a, const kiln_value *b) {
  return kiln_type_equal(kiln_value_type(a), kiln_value_type(b));
}

/* x*1, 1*x, x+0, 0+x, x-0, x/1, x^1. */
static kiln_value *rule_neutral(const kiln_node *n) {
  kiln_node_kind k = kiln_node_get_kind(n);
  kiln_value *a = kiln_node_input(n, 0), *b = kiln_node_input(n, 1), *y = kiln_node_result(n, 0);
  double one = 1, zero = 0;
  bool commutes = k == KILN_NODE_Mul || k == KILN_NODE_Add;
  double unit;
  if (k == KILN_NODE_Mul || k == KILN_NODE_Div || k == KILN_NODE_Pow)
    unit = one;
  else if (k == KILN_NODE_Add || k == KILN_NODE_Sub)
    unit = zero;
  else
    return NULL;
  if (kiln_pass_const_is(b, unit) && same_type(a, y))
    return a;
  if (commutes && kiln_pass_const_is(a, unit) && same_type(b, y))
    return b;
  return NULL;
}

static bool perm_is_identity(const int64_t *p, uint32_t r) {
  for (uint32_t i = 0; i < r; i++)
    if (p[i] != (int64_t)i)
      return false;
  return true;
}

static kiln_status rule_transpose(kiln_function *f, kiln_node *n, kiln_value **out) {
  kiln_value *x = kiln_node_input(n, 0);
  const kiln_type *xt = kiln_value_type(x);
  uint32_t r = xt->rank;
  int64_t p2[KILN_MAX_RANK];
  kiln_pass_transpose_perm(n, r, p2);
  if (perm_is_identity(p2, r)) {
    *out = x;
    return NULL;
  }
  if (kiln_value_get_kind(x) == KILN_VALUE_CONSTANT) {
    const kiln_type *yt = kiln_value_type(kiln_node_result(n, 0));
    size_t bytes = (size_t)kiln_type_bytes(yt);
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "simplify: no memory for %zu bytes", bytes);
    kiln_pass_transpose_data(kiln_value_data(x), buf, xt, p2, kiln_elem_size(xt->elem));
    kiln_status s = kiln_module_add_constant(kiln_function_module(f), NULL, yt, buf, out);
    free(buf);
    return s;
  }
  kiln_node *inner = kiln_value_producer(x, NULL);
  if (!inner || kiln_node_get_kind(inner) != KILN_NODE_Transpose) {
    /* Moving only axes of size 1 moves no data: the axes of other sizes
     * keep their order, so the result is a Reshape (a view after IRGen).
     * Exporters write these around batch-1 tensors ([1, T, E] -> [T, 1,
     * E]). */
    const kiln_type *yt = kiln_value_type(kiln_node_result(n, 0));
    int64_t last = -1;
    for (uint32_t j = 0; j < r; j++) {
      if (yt->dims[j] == 1)
        continue;
      if (p2[j] < last)
        return NULL;
      last = p2[j];
    }
    kiln_attr_desc a[2] = {KILN_ATTR_I("allowzero", 0), KILN_ATTR_IS("shape", yt->dims, yt->rank)};
    for (uint32_t j = 0; j < yt->rank; j++)
      if (yt->dims[j] == 0)
        a[0].i = 1;
    return kiln_pass_emit(f, n, KILN_NODE_Reshape, &x, 1, a, 2, out);
  }
  kiln_value *src = kiln_node_input(inner, 0);
  int64_t p1[KILN_MAX_RANK], pc[KILN_MAX_RANK];
  kiln_pass_transpose_perm(inner, r, p1);
  /* y2[j] = y1[p2[j]] = x[p1[p2[j]]] (dimension-wise). */
  for (uint32_t j = 0; j < r; j++)
    pc[j] = p1[p2[j]];
  if (perm_is_identity(pc, r)) {
    *out = src;
    return NULL;
  }
  kiln_attr_desc a = KILN_ATTR_IS("perm", pc, r);
  return kiln_pass_emit(f, n, KILN_NODE_Transpose, &src, 1, &a, 1, out);
}

/* Gather of one constant index (a scalar) along axis a of Transpose(x,
 * perm) is the same Gather of x along perm[a], then the remaining axes
 * transposed. torch's MultiheadAttention writes Q, K and V as Gathers 0, 1
 * and 2 of Transpose([B, S, 3, H, D] -> [3, B, H, S, D]): moved before
 * the Transpose, each Gather copies a third of the tensor and what follows
 * is a Transpose that attention fusion reads through strides, where the
 * whole tensor was transposed before. Only where every use of the
 * Transpose is such a Gather, so that it dies. */
static bool gather_scalar_index(const kiln_node *g) {
  if (kiln_node_get_kind(g) != KILN_NODE_Gather || kiln_node_input_count(g) != 2)
    return false;
  const kiln_value *i = kiln_node_input(g, 1);
  if (!i)
    return false;
  const kiln_type *it = kiln_value_type(i);
  double v;
  return it->rank == 0 && (it->elem == KILN_I64 || it->elem == KILN_I32) &&
         kiln_pass_const_splat(i, &v);
}

static kiln_status rule_gather(kiln_function *f, kiln_node *n, kiln_value **out) {
  *out = NULL;
  kiln_value *t = kiln_node_input(n, 0);
  kiln_node *tr = kiln_value_producer(t, NULL);
  if (!gather_scalar_index(n) || !tr || kiln_node_get_kind(tr) != KILN_NODE_Transpose)
    return NULL;
  uint32_t uses = 0;
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++) {
    kiln_node *u = kiln_function_node(f, i);
    for (uint32_t j = 0; j < kiln_node_input_count(u); j++)
      if (kiln_node_input(u, j) == t) {
        if (j != 0 || !gather_scalar_index(u))
          return NULL;
        uses++;
      }
  }
  if (uses != kiln_value_use_count(t)) /* a function output reads it */
    return NULL;
  kiln_value *x = kiln_node_input(tr, 0);
  const kiln_type *xt = kiln_value_type(x);
  uint32_t r = xt->rank;
  int64_t a = kiln_attrs_int_or(kiln_node_attrs(n), "axis", 0), perm[KILN_MAX_RANK];
  if (r < 2 || a < -(int64_t)r || a >= (int64_t)r)
    return NULL;
  a = a < 0 ? a + r : a;
  kiln_pass_transpose_perm(tr, r, perm);
  int64_t xa = perm[a], rest[KILN_MAX_RANK];
  /* the remaining axes of the result, as positions in Gather(x)'s result */
  for (uint32_t i = 0, j = 0; i < r; i++)
    if ((int64_t)i != a)
      rest[j++] = perm[i] - (perm[i] > xa);
  kiln_value *ins[2] = {x, kiln_node_input(n, 1)}, *g = NULL;
  kiln_attr_desc ga = KILN_ATTR_I("axis", xa), ta = KILN_ATTR_IS("perm", rest, r - 1);
  KILN_TRY(kiln_pass_emit(f, n, KILN_NODE_Gather, ins, 2, &ga, 1, &g));
  return kiln_pass_emit(f, n, KILN_NODE_Transpose, &g, 1, &ta, 1, out);
}

static kiln_status rule_reshape(kiln_function *f, kiln_node *n, kiln_value **out) {
  kiln_value *x = kiln_node_input(n, 0), *y = kiln_node_result(n, 0);
  if (same_type(x, y)) {
    *out = x;
    return NULL;
  }
  kiln_node *inner = kiln_value_producer(x, NULL);
  if (!inner || !kiln_pass_is_reshape_like(kiln_node_get_kind(inner)))
    return NULL;
  kiln_value *src = kiln_node_input(inner, 0);
  if (same_type(src, y)) {
    *out = src;
    return NULL;
  }
  const kiln_type *yt = kiln_value_type(y);
  bool has_zero = false;
  for (uint32_t i = 0; i < yt->rank; i++)
    has_zero |= yt->dims[i] == 0;
  kiln_attr_desc a[2] = {KILN_ATTR_I("allowzero", has_zero ? 1 : 0),
                         KILN_ATTR_IS("shape", yt->dims, yt->rank)};
  return kiln_pass_emit(f, n, KILN_NODE_Reshape, &src, 1, a, 2, out);
}

static kiln_status simplify_node(kiln_function *f, kiln_node *n, kiln_value **out) {
  *out = NULL;
  kiln_node_kind k = kiln_node_get_kind(n);
  switch (k) {
  case KILN_NODE_Add:
  case KILN_NODE_Sub:
  case KILN_NODE_Mul:
  case KILN_NODE_Div:
  case KILN_NODE_Pow:
    *out = rule_neutral(n);
    return NULL;
  case KILN_NODE_Identity:
    *out = kiln_node_input(n, 0);
    return NULL;
  case KILN_NODE_Dropout:
    if (kiln_node_result_count(n) < 2 || kiln_value_use_count(kiln_node_result(n, 1)) == 0)
      *out = kiln_node_input(n, 0);
    return NULL;
  case KILN_NODE_Cast:
  case KILN_NODE_Expand:
    if (same_type(kiln_node_input(n, 0), kiln_node_result(n, 0)))
      *out = kiln_node_input(n, 0);
    return NULL;
  case KILN_NODE_Transpose:
    return rule_transpose(f, n, out);
  case KILN_NODE_Gather:
    return rule_gather(f, n, out);
  case KILN_NODE_Reshape:
  case KILN_NODE_Flatten:
  case KILN_NODE_Squeeze:
  case KILN_NODE_Unsqueeze:
    return rule_reshape(f, n, out);
  default:
    return NULL;
  }
}

/* simplify_node, then the node's replacement, with the node named in a
 * failure of the rules. */
static kiln_status simplify_one(kiln_function *f, kiln_node *nd, const kiln_pass_options *o,
                                bool *done) {
  (void)o;
  kiln_value *repl = NULL;
  kiln_status s = simplify_node(f, nd, &repl);
  if (s)
    return kiln_status_wrap(s, "simplify: node '%s' (%s)", kiln_node_name(nd),
                            kiln_node_kind_name(kiln_node_get_kind(nd)));
  if (!repl)
    return NULL;
  kiln_value *all[2] = {repl, NULL};
  *done = true;
  return kiln_pass_replace_node(f, nd, all);
}

kiln_status kiln_pass_simplify(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  return kiln_pass_each_node(f, o, simplify_one, changes);
}
