/* passes/lower_reduce.c: lowering rules for the reductions: ReduceMean,
 * ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp (onto
 * ReduceSum and ReduceMax), the min-like ArgMin and ReduceMin (through an
 * order-reversing map onto ArgMax and ReduceMax), ReduceProd and CumSum (a
 * MatMul by a triangular constant). */
#include <math.h>
#include <stdlib.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)

static bool is_float(kiln_lower_ctx *c) {
  return kiln_elem_is_float(c->elem);
}

/* ---- reductions ---- */

/* The reduction attributes of the node, read back as axes + keepdims. */
static uint32_t node_axes(kiln_lower_ctx *c, int64_t *axes) {
  const kiln_type *t = kiln_value_type(X0);
  const kiln_attr *a = kiln_attrs_find(kiln_node_attrs(c->n), "axes");
  uint32_t n = a ? kiln_attr_len(a) : 0;
  if (n == 0) {
    if (kiln_attrs_int_or(kiln_node_attrs(c->n), "noop_with_empty_axes", 0))
      return 0;
    for (uint32_t i = 0; i < t->rank; i++)
      axes[i] = i;
    return t->rank;
  }
  for (uint32_t i = 0; i < n && i < KILN_MAX_RANK; i++)
    axes[i] = kiln_attr_ints(a)[i] < 0 ? kiln_attr_ints(a)[i] + t->rank : kiln_attr_ints(a)[i];
  return n;
}

static kiln_value *same_reduce(kiln_lower_ctx *c, kiln_node_kind k, kiln_value *x) {
  int64_t axes[KILN_MAX_RANK];
  uint32_t n = node_axes(c, axes);
  if (n == 0)
    return x; /* noop_with_empty_axes: identity */
  return lower_reduce(c, k, x, axes, n, kiln_attrs_int_or(kiln_node_attrs(c->n), "keepdims", 1));
}

bool kiln_lower_ReduceMean(kiln_lower_ctx *c, kiln_value **r) {
  int64_t in_n = kiln_type_numel(kiln_value_type(X0)), out_n = kiln_type_numel(lower_tout(c, 0));
  kiln_value *s = same_reduce(c, KILN_NODE_ReduceSum, X0);
  r[0] = lower_bin(c, KILN_NODE_Div, s, lower_sc(c, out_n ? (double)(in_n / out_n) : 1));
  return true;
}
bool kiln_lower_ReduceSumSquare(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = same_reduce(c, KILN_NODE_ReduceSum, lower_bin(c, KILN_NODE_Mul, X0, X0));
  return true;
}
bool kiln_lower_ReduceL1(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = same_reduce(c, KILN_NODE_ReduceSum, lower_un(c, KILN_NODE_Abs, X0));
  return true;
}
bool kiln_lower_ReduceL2(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = lower_un(c, KILN_NODE_Sqrt,
                  same_reduce(c, KILN_NODE_ReduceSum, lower_bin(c, KILN_NODE_Mul, X0, X0)));
  return true;
}
bool kiln_lower_ReduceLogSum(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = lower_un(c, KILN_NODE_Log, same_reduce(c, KILN_NODE_ReduceSum, X0));
  return true;
}
bool kiln_lower_ReduceLogSumExp(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  int64_t axes[KILN_MAX_RANK];
  uint32_t n = node_axes(c, axes);
  kiln_value *x = X0;
  if (n == 0) {
    r[0] = lower_un(c, KILN_NODE_Log, lower_un(c, KILN_NODE_Exp, x));
    return true;
  }
  int64_t keep = kiln_attrs_int_or(kiln_node_attrs(c->n), "keepdims", 1);
  /* Subtracting the max keeps exp from overflowing. */
  kiln_value *m = lower_reduce(c, KILN_NODE_ReduceMax, x, axes, n, 1);
  kiln_value *s =
      lower_reduce(c, KILN_NODE_ReduceSum,
                   lower_un(c, KILN_NODE_Exp, lower_bin(c, KILN_NODE_Sub, x, m)), axes, n, keep);
  kiln_value *mk = keep ? m : lower_reduce(c, KILN_NODE_ReduceMax, x, axes, n, 0);
  r[0] = lower_bin(c, KILN_NODE_Add, lower_un(c, KILN_NODE_Log, s), mk);
  return true;
}

/* ---- min-like reductions through an order-reversing map ---- */

/* An order-reversing bijection of the element type: -x for floats,
 * -1 - x (bitwise not, no overflow) for signed ints, MAX - x for unsigned
 * below 64 bits, Not for bool. NULL when there is none (u64). */
static kiln_value *reverse_order(kiln_lower_ctx *c, kiln_value *x) {
  kiln_elem e = kiln_value_type(x)->elem;
  if (kiln_elem_is_float(e))
    return lower_un(c, KILN_NODE_Neg, x);
  if (kiln_elem_is_signed_int(e))
    return lower_bin(c, KILN_NODE_Sub, lower_sce(c, e, -1), x);
  if (e == KILN_BOOL)
    return lower_un(c, KILN_NODE_Not, x);
  if (e == KILN_U64)
    return NULL;
  double max = ldexp(1, 8 * (int)kiln_elem_size(e)) - 1;
  return lower_bin(c, KILN_NODE_Sub, lower_sce(c, e, max), x);
}

bool kiln_lower_ArgMin(kiln_lower_ctx *c, kiln_value **r) {
  if (c->elem == KILN_U64 || c->elem == KILN_BOOL)
    return false;
  kiln_value *x = reverse_order(c, X0);
  kiln_attr_desc *d = NULL;
  uint32_t nd = 0;
  if (!c->s)
    c->s = kiln_pass_attrs_descs(kiln_node_attrs(c->n), 0, &d, &nd);
  r[0] = lower_emit(c, KILN_NODE_ArgMax, &x, 1, d, nd);
  free(d);
  return true;
}

/* Reduction attributes: axes (normalized; all when absent) and keepdims.
 * Returns the number of axes; 0 with noop_with_empty_axes = identity. */
static uint32_t reduce_axes(kiln_lower_ctx *c, int64_t *axes) {
  const kiln_type *t = lower_tin(c, 0);
  uint32_t n = lower_ints(c, "axes", axes, KILN_MAX_RANK);
  if (n == 0) {
    if (lower_iattr(c, "noop_with_empty_axes", 0))
      return 0;
    for (uint32_t i = 0; i < t->rank; i++)
      axes[i] = i;
    return t->rank;
  }
  for (uint32_t i = 0; i < n; i++)
    if (axes[i] < 0)
      axes[i] += t->rank;
  return n;
}

bool kiln_lower_ReduceMin(kiln_lower_ctx *c, kiln_value **r) {
  if (c->elem == KILN_U64 || c->elem == KILN_BOOL)
    return false;
  int64_t axes[KILN_MAX_RANK];
  uint32_t n = reduce_axes(c, axes);
  if (n == 0) {
    r[0] = X0;
    return true;
  }
  kiln_value *m = lower_reduce(c, KILN_NODE_ReduceMax, reverse_order(c, X0), axes, n,
                               lower_iattr(c, "keepdims", 1));
  r[0] = reverse_order(c, m);
  return true;
}

/* Product: multiply the slices of each reduced axis together (exact for
 * every type, unlike exp-sum-log). */
bool kiln_lower_ReduceProd(kiln_lower_ctx *c, kiln_value **r) {
  int64_t axes[KILN_MAX_RANK];
  uint32_t n = reduce_axes(c, axes);
  const kiln_type *t = lower_tin(c, 0), *ot = lower_tout(c, 0);
  if (c->elem == KILN_BOOL)
    return false;
  kiln_value *y = X0;
  for (uint32_t a = 0; a < n; a++) {
    int64_t d = t->dims[axes[a]];
    if (d == 0)
      return false; /* an empty product is 1; rare enough to leave */
    kiln_value *acc = d > 1 ? lower_slice(c, y, axes[a], 0, 1) : y;
    for (int64_t i = 1; i < d; i++)
      acc = lower_bin(c, KILN_NODE_Mul, acc, lower_slice(c, y, axes[a], i, i + 1));
    y = acc;
  }
  r[0] = lower_reshape(c, y, ot->dims, ot->rank);
  return true;
}

/* CumSum: move the axis last, multiply by a triangular 0/1 matrix. */
bool kiln_lower_CumSum(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t axis = lower_iattr(c, "axis", 0);
  if (axis < 0)
    axis += t->rank;
  if (t->rank == 0 || c->elem == KILN_BOOL)
    return false;
  int64_t d = t->dims[axis];
  kiln_lower_tri_fill tf = {
      d, d, 0, (lower_iattr(c, "exclusive", 0) ? 1 : 0) + (lower_iattr(c, "reverse", 0) ? 2 : 0)};
  kiln_type mt;
  int64_t md[2] = {d, d};
  if (!c->s)
    c->s = kiln_type_make(c->elem, 2, md, &mt);
  kiln_value *tri = c->s ? NULL : kiln_lower_const_fn(c, &mt, kiln_lower_fill_tri, &tf);
  uint32_t last = t->rank - 1;
  int64_t perm[KILN_MAX_RANK];
  for (uint32_t i = 0; i < t->rank; i++)
    perm[i] = i;
  perm[axis] = last;
  perm[last] = axis;
  kiln_value *x = X0;
  if ((uint32_t)axis != last)
    x = lower_transpose(c, x, perm, t->rank);
  if (t->rank == 1) /* MatMul promotes a vector; keep it a row */
    x = lower_reshape(c, x, (int64_t[]){1, d}, 2);
  kiln_value *y = lower_bin(c, KILN_NODE_MatMul, x, tri);
  if (t->rank == 1)
    y = lower_reshape(c, y, &d, 1);
  if ((uint32_t)axis != last)
    y = lower_transpose(c, y, perm, t->rank);
  r[0] = y;
  return true;
}
