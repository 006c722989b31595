/* passes/lower_math.c: lowering rules for elementwise math, comparisons,
 * logic, min-like reductions, and kinds whose result is a compile-time
 * constant (EyeLike, Range) or a constant mask (Trilu, Hardmax, CumSum).
 * Every rule keeps the result's element type and shape exactly. */
#include <math.h>
#include <stdlib.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)
#define X1 kiln_node_input(c->n, 1)

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

static bool is_float(kiln_lower_ctx *c) {
  return kiln_elem_is_float(c->elem);
}

/* ---- unary math (floats) ---- */

bool kiln_lower_Sigmoid(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* exp(-x) overflows to inf for very negative x, and 1/inf = 0 is right. */
  r[0] = lower_bin(c, KILN_NODE_Div, lower_sc(c, 1),
                   lower_bin(c, KILN_NODE_Add,
                             lower_un(c, KILN_NODE_Exp, lower_un(c, KILN_NODE_Neg, X0)),
                             lower_sc(c, 1)));
  return true;
}

bool kiln_lower_Relu(kiln_lower_ctx *c, kiln_value **r) {
  if (c->elem == KILN_BOOL)
    return false;
  r[0] = lower_bin(c, KILN_NODE_Max, X0, lower_sc(c, 0));
  return true;
}

bool kiln_lower_Reciprocal(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = lower_bin(c, KILN_NODE_Div, lower_sc(c, 1), X0);
  return true;
}

bool kiln_lower_Tan(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] =
      lower_bin(c, KILN_NODE_Div, lower_un(c, KILN_NODE_Sin, X0), lower_un(c, KILN_NODE_Cos, X0));
  return true;
}

static bool sinh_cosh(kiln_lower_ctx *c, kiln_value **r, kiln_node_kind k) {
  if (!is_float(c))
    return false;
  kiln_value *a = lower_un(c, KILN_NODE_Exp, X0),
             *b = lower_un(c, KILN_NODE_Exp, lower_un(c, KILN_NODE_Neg, X0));
  r[0] = lower_bin(c, KILN_NODE_Mul, lower_bin(c, k, a, b), lower_sc(c, 0.5));
  return true;
}
bool kiln_lower_Sinh(kiln_lower_ctx *c, kiln_value **r) {
  return sinh_cosh(c, r, KILN_NODE_Sub);
}
bool kiln_lower_Cosh(kiln_lower_ctx *c, kiln_value **r) {
  return sinh_cosh(c, r, KILN_NODE_Add);
}

/* 1 - x*x, or x*x + s */
static kiln_value *sq_plus(kiln_lower_ctx *c, kiln_value *x, double s, bool neg) {
  kiln_value *sq = lower_bin(c, KILN_NODE_Mul, x, x);
  return neg ? lower_bin(c, KILN_NODE_Sub, lower_sc(c, s), sq)
             : lower_bin(c, KILN_NODE_Add, sq, lower_sc(c, s));
}

bool kiln_lower_Asin(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* asin x = atan(x / sqrt(1 - x^2)); at |x| = 1 the quotient is +-inf. */
  r[0] = lower_un(
      c, KILN_NODE_Atan,
      lower_bin(c, KILN_NODE_Div, X0, lower_un(c, KILN_NODE_Sqrt, sq_plus(c, X0, 1, true))));
  return true;
}

bool kiln_lower_Acos(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* acos x = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near 1. */
  kiln_value *q = lower_bin(c, KILN_NODE_Div, lower_bin(c, KILN_NODE_Sub, lower_sc(c, 1), X0),
                            lower_bin(c, KILN_NODE_Add, lower_sc(c, 1), X0));
  r[0] = lower_bin(c, KILN_NODE_Mul, lower_un(c, KILN_NODE_Atan, lower_un(c, KILN_NODE_Sqrt, q)),
                   lower_sc(c, 2));
  return true;
}

bool kiln_lower_Asinh(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* Odd function: computing on |x| avoids cancellation for negative x. */
  kiln_value *a = lower_un(c, KILN_NODE_Abs, X0);
  kiln_value *y = lower_un(
      c, KILN_NODE_Log,
      lower_bin(c, KILN_NODE_Add, a, lower_un(c, KILN_NODE_Sqrt, sq_plus(c, a, 1, false))));
  r[0] = lower_where(c, lower_bin(c, KILN_NODE_Less, X0, lower_sc(c, 0)),
                     lower_un(c, KILN_NODE_Neg, y), y);
  return true;
}

bool kiln_lower_Acosh(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = lower_un(
      c, KILN_NODE_Log,
      lower_bin(c, KILN_NODE_Add, X0, lower_un(c, KILN_NODE_Sqrt, sq_plus(c, X0, -1, false))));
  return true;
}

bool kiln_lower_Atanh(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *q = lower_bin(c, KILN_NODE_Div, lower_bin(c, KILN_NODE_Add, lower_sc(c, 1), X0),
                            lower_bin(c, KILN_NODE_Sub, lower_sc(c, 1), X0));
  r[0] = lower_bin(c, KILN_NODE_Mul, lower_un(c, KILN_NODE_Log, q), lower_sc(c, 0.5));
  return true;
}

bool kiln_lower_Ceil(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = lower_un(c, KILN_NODE_Neg, lower_un(c, KILN_NODE_Floor, lower_un(c, KILN_NODE_Neg, X0)));
  return true;
}

bool kiln_lower_Sign(kiln_lower_ctx *c, kiln_value **r) {
  if (c->elem == KILN_BOOL)
    return false;
  kiln_value *zero = lower_sc(c, 0);
  kiln_value *pos = lower_where(c, lower_bin(c, KILN_NODE_Less, zero, X0), lower_sc(c, 1), zero);
  if (kiln_elem_is_unsigned_int(c->elem)) {
    r[0] = pos;
    return true;
  }
  /* NaN fails both comparisons; Sign(NaN) is NaN, so keep x there. */
  kiln_value *neg = lower_where(c, lower_bin(c, KILN_NODE_Less, X0, zero), lower_sc(c, -1), pos);
  if (is_float(c))
    neg = lower_where(c, lower_un(c, KILN_NODE_IsNaN, X0), X0, neg);
  r[0] = neg;
  return true;
}

bool kiln_lower_IsInf(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  bool neg = lower_iattr(c, "detect_negative", 1), pos = lower_iattr(c, "detect_positive", 1);
  kiln_value *y = NULL;
  if (pos)
    y = lower_bin(c, KILN_NODE_Equal, X0, lower_sc(c, INFINITY));
  if (neg) {
    kiln_value *n = lower_bin(c, KILN_NODE_Equal, X0, lower_sc(c, -INFINITY));
    y = y ? lower_bin(c, KILN_NODE_Or, y, n) : n;
  }
  if (!y) /* detects nothing: all false */
    y = lower_un(c, KILN_NODE_Not, lower_bin(c, KILN_NODE_Equal, X0, X0));
  if (!pos && !neg)
    y = lower_bin(c, KILN_NODE_And, y, lower_bin(c, KILN_NODE_Equal, X0, X0));
  r[0] = y;
  return true;
}

/* ---- comparisons and logic ---- */

bool kiln_lower_Greater(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_bin(c, KILN_NODE_Less, X1, X0);
  return true;
}
/* Or of strict and equal (not Not(Less)): NaN compares false both ways. */
bool kiln_lower_GreaterOrEqual(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_bin(c, KILN_NODE_Or, lower_bin(c, KILN_NODE_Less, X1, X0),
                   lower_bin(c, KILN_NODE_Equal, X0, X1));
  return true;
}
bool kiln_lower_LessOrEqual(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_bin(c, KILN_NODE_Or, lower_bin(c, KILN_NODE_Less, X0, X1),
                   lower_bin(c, KILN_NODE_Equal, X0, X1));
  return true;
}
bool kiln_lower_Or(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_un(
      c, KILN_NODE_Not,
      lower_bin(c, KILN_NODE_And, lower_un(c, KILN_NODE_Not, X0), lower_un(c, KILN_NODE_Not, X1)));
  return true;
}
bool kiln_lower_Xor(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_un(c, KILN_NODE_Not, lower_bin(c, KILN_NODE_Equal, X0, X1));
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

/* ---- masks and constants ---- */

typedef struct axis_fill {
  int64_t stride, dim; /* value = (i / stride) % dim */
} axis_fill;
static double fill_axis_index(int64_t i, const void *u) {
  const axis_fill *a = u;
  return (double)((i / a->stride) % a->dim);
}
/* i64 constant of the given rank with dims 1 except `dim` at `axis`,
 * holding 0..dim-1: broadcasts as "the index along axis". */
static kiln_value *axis_iota(kiln_lower_ctx *c, uint32_t rank, uint32_t axis, int64_t dim,
                             kiln_elem e) {
  int64_t dims[KILN_MAX_RANK];
  for (uint32_t i = 0; i < rank; i++)
    dims[i] = i == axis ? dim : 1;
  kiln_type t;
  if (!c->s)
    c->s = kiln_type_make(e, rank, dims, &t);
  axis_fill f = {1, dim ? dim : 1};
  return c->s ? NULL : kiln_lower_const_fn(c, &t, fill_axis_index, &f);
}

bool kiln_lower_Hardmax(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t axis = lower_iattr(c, "axis", -1);
  if (axis < 0)
    axis += t->rank;
  if (t->rank == 0 || !is_float(c))
    return false;
  kiln_value *x = X0;
  kiln_attr_desc a[3] = {KILN_ATTR_I("axis", axis), KILN_ATTR_I("keepdims", 1),
                         KILN_ATTR_I("select_last_index", 0)};
  kiln_value *am = lower_emit(c, KILN_NODE_ArgMax, &x, 1, a, 3);
  kiln_value *hit = lower_bin(c, KILN_NODE_Equal, am,
                              axis_iota(c, t->rank, (uint32_t)axis, t->dims[axis], KILN_I64));
  r[0] = lower_where(c, hit, lower_sc(c, 1), lower_sc(c, 0));
  return true;
}

typedef struct tri_fill {
  int64_t n, m, k;
  int mode; /* CumSum: 0 inclusive, 1 exclusive, +2 reverse; Trilu: 4 upper, 5 lower; 6 eye */
} tri_fill;
static double fill_tri(int64_t idx, const void *u) {
  const tri_fill *t = u;
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

/* CumSum: move the axis last, multiply by a triangular 0/1 matrix. */
bool kiln_lower_CumSum(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t axis = lower_iattr(c, "axis", 0);
  if (axis < 0)
    axis += t->rank;
  if (t->rank == 0 || c->elem == KILN_BOOL)
    return false;
  int64_t d = t->dims[axis];
  tri_fill tf = {d, d, 0,
                 (lower_iattr(c, "exclusive", 0) ? 1 : 0) + (lower_iattr(c, "reverse", 0) ? 2 : 0)};
  kiln_type mt;
  int64_t md[2] = {d, d};
  if (!c->s)
    c->s = kiln_type_make(c->elem, 2, md, &mt);
  kiln_value *tri = c->s ? NULL : kiln_lower_const_fn(c, &mt, fill_tri, &tf);
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

bool kiln_lower_Trilu(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  if (t->rank < 2)
    return false;
  int64_t n = t->dims[t->rank - 2], m = t->dims[t->rank - 1];
  tri_fill tf = {n ? n : 1, m ? m : 1, lower_iattr(c, "k", 0), lower_iattr(c, "upper", 1) ? 4 : 5};
  kiln_type mt;
  int64_t md[2] = {n, m};
  if (!c->s)
    c->s = kiln_type_make(KILN_BOOL, 2, md, &mt);
  kiln_value *mask = c->s ? NULL : kiln_lower_const_fn(c, &mt, fill_tri, &tf);
  /* Where, not Mul by the mask: inf * 0 would be NaN. */
  r[0] = lower_where(c, mask, X0, lower_sc(c, 0));
  return true;
}

bool kiln_lower_EyeLike(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tout(c, 0);
  if (t->rank != 2)
    return false;
  tri_fill tf = {t->dims[0] ? t->dims[0] : 1, t->dims[1] ? t->dims[1] : 1, lower_iattr(c, "k", 0),
                 6};
  r[0] = kiln_lower_const_fn(c, t, fill_tri, &tf);
  return true;
}

typedef struct range_fill {
  double start, delta;
} range_fill;
static double fill_range(int64_t i, const void *u) {
  const range_fill *f = u;
  return f->start + (double)i * f->delta;
}
bool kiln_lower_Range(kiln_lower_ctx *c, kiln_value **r) {
  range_fill f = {lower_fattr(c, "start", 0), lower_fattr(c, "delta", 1)};
  r[0] = kiln_lower_const_fn(c, lower_tout(c, 0), fill_range, &f);
  return true;
}

/* ---- FusedElementwise: the body back into nodes ---- */

bool kiln_lower_FusedElementwise(kiln_lower_ctx *c, kiln_value **r) {
  const char *body = kiln_attrs_string_or(kiln_node_attrs(c->n), "body", "");
  kiln_fused_op ops[KILN_FUSED_MAX_OPS];
  uint32_t n = 0, nin = kiln_node_input_count(c->n);
  if (!c->s)
    c->s = kiln_fused_parse(body, nin, ops, KILN_FUSED_MAX_OPS, &n);
  if (c->s)
    return true;
  const kiln_type *ot = lower_tout(c, 0);
  c->elem = ot->elem;
  kiln_value *stack[KILN_FUSED_MAX_OPS];
  uint32_t sp = 0;
  for (uint32_t i = 0; i < n && !c->s; i++) {
    if (ops[i].kind == KILN_FUSED_INPUT) {
      stack[sp++] = kiln_node_input(c->n, ops[i].input);
    } else if (ops[i].kind == KILN_FUSED_CONST) {
      stack[sp++] = lower_sc(c, ops[i].value);
    } else if (kiln_fused_arity((kiln_node_kind)ops[i].kind) == 1 && sp >= 1) {
      stack[sp - 1] = lower_un(c, (kiln_node_kind)ops[i].kind, stack[sp - 1]);
    } else if (sp >= 2) {
      stack[sp - 2] = lower_bin(c, (kiln_node_kind)ops[i].kind, stack[sp - 2], stack[sp - 1]);
      sp--;
    }
  }
  if (c->s)
    return true;
  if (sp != 1) {
    c->s = kiln_status_make(KILN_INTERNAL, "lower: fused body '%s' left %u values", body, sp);
    return true;
  }
  kiln_value *y = stack[0];
  /* The body may not touch the widest input; the result still has the
   * broadcast shape. */
  if (!kiln_type_equal(kiln_value_type(y), ot)) {
    kiln_attr_desc a = KILN_ATTR_IS("shape", ot->dims, ot->rank);
    y = lower_emit(c, KILN_NODE_Expand, &y, 1, &a, 1);
  }
  r[0] = y;
  return true;
}
