/* passes/lower_rules.c: the rule table (one rule per node kind, each
 * rewriting a node into kinds closer to the primitive set, docs/passes.md)
 * and the rules for activations, variadic elementwise kinds, reductions,
 * normalizations and Gemm. Rules may produce non-primitive kinds
 * (Mean -> Sum -> Add); the driver repeats. */
#include <math.h>
#include <stdlib.h>

#include "lower_rules.h"
#include "pass_util.h"

/* Short names for the shared builder helpers (lower_rules.h). */
#define emit lower_emit
#define un lower_un
#define bin lower_bin
#define sc lower_sc
#define reduce lower_reduce
#define reshape lower_reshape
#define where lower_where

static kiln_value *in0(kiln_lower_ctx *c) {
  return kiln_node_input(c->n, 0);
}
static const kiln_attrs *attrs(kiln_lower_ctx *c) {
  return kiln_node_attrs(c->n);
}
static double fattr(kiln_lower_ctx *c, const char *name, double d) {
  return kiln_attrs_float_or(attrs(c), name, d);
}
static const kiln_type *out_type(kiln_lower_ctx *c) {
  return kiln_value_type(kiln_node_result(c->n, 0));
}
static bool is_float(kiln_lower_ctx *c) {
  return kiln_elem_is_float(c->elem);
}

/* ---- removals and reshapes ---- */

static bool r_identity(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = in0(c);
  return true;
}

static bool r_dropout(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = in0(c);
  if (kiln_node_result_count(c->n) > 1 && kiln_value_use_count(kiln_node_result(c->n, 1)))
    c->s = kiln_pass_const_fill(kiln_function_module(c->f),
                                kiln_value_type(kiln_node_result(c->n, 1)), 1, &r[1]);
  return true;
}

static bool r_to_reshape(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = out_type(c);
  r[0] = reshape(c, in0(c), t->dims, t->rank);
  return true;
}

static bool r_castlike(kiln_lower_ctx *c, kiln_value **r) {
  kiln_attr_desc a = KILN_ATTR_T("to", kiln_value_type(kiln_node_input(c->n, 1))->elem);
  kiln_value *x = in0(c);
  r[0] = emit(c, KILN_NODE_Cast, &x, 1, &a, 1);
  return true;
}

static bool r_shape_const(kiln_lower_ctx *c, kiln_value **r) {
  /* Shape / Size of a static type: fold knows how; run it on this node. */
  const kiln_type *it = kiln_value_type(in0(c)), *ot = out_type(c);
  int64_t vals[KILN_MAX_RANK + 1];
  if (kiln_node_get_kind(c->n) == KILN_NODE_Size) {
    vals[0] = kiln_type_numel(it);
  } else {
    int64_t start = kiln_attrs_int_or(attrs(c), "start", 0);
    if (start < 0)
      start += it->rank;
    if (start < 0)
      start = 0;
    for (int64_t i = 0; i < kiln_type_numel(ot); i++)
      vals[i] = it->dims[start + i];
  }
  c->s = kiln_module_add_constant(kiln_function_module(c->f), NULL, ot, vals, &r[0]);
  return true;
}

static bool r_constant_of_shape(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *ot = out_type(c);
  c->elem = ot->elem;
  kiln_value *v = sc(c, fattr(c, "value", 0));
  kiln_attr_desc a = KILN_ATTR_IS("shape", ot->dims, ot->rank);
  r[0] = v ? emit(c, KILN_NODE_Expand, &v, 1, &a, 1) : NULL;
  return true;
}

/* ---- variadic elementwise ---- */

static kiln_value *chain(kiln_lower_ctx *c, kiln_node_kind k) {
  kiln_value *acc = kiln_node_input(c->n, 0);
  for (uint32_t i = 1; i < kiln_node_input_count(c->n); i++)
    acc = bin(c, k, acc, kiln_node_input(c->n, i));
  return acc;
}

static bool r_sum(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = chain(c, KILN_NODE_Add);
  return true;
}

static bool r_mean(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = bin(c, KILN_NODE_Div, chain(c, KILN_NODE_Add), sc(c, kiln_node_input_count(c->n)));
  return true;
}

static bool r_minmax(kiln_lower_ctx *c, kiln_value **r) {
  kiln_node_kind k = kiln_node_get_kind(c->n);
  kiln_value *acc = kiln_node_input(c->n, 0);
  uint32_t n = kiln_node_input_count(c->n);
  if (n == 1) {
    r[0] = acc;
    return true;
  }
  if (n == 2)
    return false; /* already the primitive form */
  /* Pairs (a, b) stay binary Max / Min, the primitive form. */
  for (uint32_t i = 1; i < n; i++) {
    kiln_value *in[2] = {acc, kiln_node_input(c->n, i)};
    acc = emit(c, k, in, 2, NULL, 0);
  }
  r[0] = acc;
  return true;
}

static bool r_clip(kiln_lower_ctx *c, kiln_value **r) {
  kiln_value *y = in0(c);
  uint32_t n = kiln_node_input_count(c->n);
  kiln_value *lo = n > 1 ? kiln_node_input(c->n, 1) : NULL,
             *hi = n > 2 ? kiln_node_input(c->n, 2) : NULL;
  if (lo)
    y = bin(c, KILN_NODE_Max, y, lo);
  if (hi)
    y = bin(c, KILN_NODE_Min, y, hi);
  if (!lo && !hi)
    y = un(c, KILN_NODE_Identity, y);
  r[0] = y;
  return true;
}

/* ---- activations (float) ---- */

static bool r_softplus(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* max(x, 0) + log(1 + exp(-|x|)): exp never overflows, and large x
   * stays x instead of becoming inf. */
  kiln_value *x = in0(c);
  kiln_value *t = un(c, KILN_NODE_Exp, un(c, KILN_NODE_Neg, un(c, KILN_NODE_Abs, x)));
  r[0] = bin(c, KILN_NODE_Add, bin(c, KILN_NODE_Max, x, sc(c, 0)),
             un(c, KILN_NODE_Log, bin(c, KILN_NODE_Add, t, sc(c, 1))));
  return true;
}

static bool r_softsign(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  r[0] = bin(c, KILN_NODE_Div, x, bin(c, KILN_NODE_Add, un(c, KILN_NODE_Abs, x), sc(c, 1)));
  return true;
}

/* alpha * (exp(x) - 1) */
static kiln_value *expm1_scaled(kiln_lower_ctx *c, kiln_value *x, double alpha) {
  return bin(c, KILN_NODE_Mul, bin(c, KILN_NODE_Sub, un(c, KILN_NODE_Exp, x), sc(c, 1)),
             sc(c, alpha));
}

static bool r_elu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  r[0] = where(c, bin(c, KILN_NODE_Less, x, sc(c, 0)), expm1_scaled(c, x, fattr(c, "alpha", 1)), x);
  return true;
}

static bool r_selu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  double alpha = fattr(c, "alpha", 1.67326319217681884765625),
         gamma = fattr(c, "gamma", 1.05070102214813232421875);
  kiln_value *inner =
      where(c, bin(c, KILN_NODE_Greater, x, sc(c, 0)), x, expm1_scaled(c, x, alpha));
  r[0] = bin(c, KILN_NODE_Mul, inner, sc(c, gamma));
  return true;
}

static bool r_celu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  double alpha = fattr(c, "alpha", 1);
  kiln_value *neg = expm1_scaled(c, bin(c, KILN_NODE_Div, x, sc(c, alpha)), alpha);
  r[0] = bin(c, KILN_NODE_Add, bin(c, KILN_NODE_Max, x, sc(c, 0)),
             bin(c, KILN_NODE_Min, neg, sc(c, 0)));
  return true;
}

static kiln_value *hard_sigmoid(kiln_lower_ctx *c, kiln_value *x, double alpha, double beta) {
  kiln_value *lin = bin(c, KILN_NODE_Add, bin(c, KILN_NODE_Mul, x, sc(c, alpha)), sc(c, beta));
  return bin(c, KILN_NODE_Max, bin(c, KILN_NODE_Min, lin, sc(c, 1)), sc(c, 0));
}

static bool r_hardsigmoid(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = hard_sigmoid(c, in0(c), fattr(c, "alpha", 0.2), fattr(c, "beta", 0.5));
  return true;
}

static bool r_hardswish(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  r[0] = bin(c, KILN_NODE_Mul, x, hard_sigmoid(c, x, 1.0 / 6.0, 0.5));
  return true;
}

static bool r_leakyrelu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  r[0] = where(c, bin(c, KILN_NODE_Less, x, sc(c, 0)),
               bin(c, KILN_NODE_Mul, x, sc(c, fattr(c, "alpha", 0.01))), x);
  return true;
}

static bool r_prelu(kiln_lower_ctx *c, kiln_value **r) {
  kiln_value *x = in0(c), *slope = kiln_node_input(c->n, 1);
  r[0] = where(c, bin(c, KILN_NODE_Less, x, sc(c, 0)), bin(c, KILN_NODE_Mul, x, slope), x);
  return true;
}

static bool r_thresholdedrelu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  kiln_value *zeros = bin(c, KILN_NODE_Mul, x, sc(c, 0));
  r[0] = where(c, bin(c, KILN_NODE_Greater, x, sc(c, fattr(c, "alpha", 1))), x, zeros);
  return true;
}

static bool r_shrink(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  double b = fattr(c, "bias", 0), l = fattr(c, "lambd", 0.5);
  kiln_value *zeros = bin(c, KILN_NODE_Mul, x, sc(c, 0));
  kiln_value *hi =
      where(c, bin(c, KILN_NODE_Greater, x, sc(c, l)), bin(c, KILN_NODE_Sub, x, sc(c, b)), zeros);
  r[0] = where(c, bin(c, KILN_NODE_Less, x, sc(c, -l)), bin(c, KILN_NODE_Add, x, sc(c, b)), hi);
  return true;
}

static bool r_gelu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c), *inner;
  const char *approx = kiln_attrs_string_or(attrs(c), "approximate", "none");
  if (approx[0] == 't') {
    kiln_value *x3 = bin(c, KILN_NODE_Mul, bin(c, KILN_NODE_Mul, x, x), x);
    kiln_value *arg =
        bin(c, KILN_NODE_Mul, bin(c, KILN_NODE_Add, x, bin(c, KILN_NODE_Mul, x3, sc(c, 0.044715))),
            sc(c, sqrt(2.0 / 3.14159265358979323846)));
    inner = un(c, KILN_NODE_Tanh, arg);
  } else {
    inner = un(c, KILN_NODE_Erf, bin(c, KILN_NODE_Mul, x, sc(c, 1.0 / sqrt(2.0))));
  }
  r[0] = bin(c, KILN_NODE_Mul, bin(c, KILN_NODE_Mul, x, sc(c, 0.5)),
             bin(c, KILN_NODE_Add, inner, sc(c, 1)));
  return true;
}

/* ---- reductions ---- */

/* The reduction attributes of the node, read back as axes + keepdims. */
static uint32_t node_axes(kiln_lower_ctx *c, int64_t *axes) {
  const kiln_type *t = kiln_value_type(in0(c));
  const kiln_attr *a = kiln_attrs_find(attrs(c), "axes");
  uint32_t n = a ? kiln_attr_len(a) : 0;
  if (n == 0) {
    if (kiln_attrs_int_or(attrs(c), "noop_with_empty_axes", 0))
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
  return reduce(c, k, x, axes, n, kiln_attrs_int_or(attrs(c), "keepdims", 1));
}

static bool r_reducemean(kiln_lower_ctx *c, kiln_value **r) {
  int64_t in_n = kiln_type_numel(kiln_value_type(in0(c))), out_n = kiln_type_numel(out_type(c));
  kiln_value *s = same_reduce(c, KILN_NODE_ReduceSum, in0(c));
  r[0] = bin(c, KILN_NODE_Div, s, sc(c, out_n ? (double)(in_n / out_n) : 1));
  return true;
}
static bool r_reducesumsquare(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = same_reduce(c, KILN_NODE_ReduceSum, bin(c, KILN_NODE_Mul, in0(c), in0(c)));
  return true;
}
static bool r_reducel1(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = same_reduce(c, KILN_NODE_ReduceSum, un(c, KILN_NODE_Abs, in0(c)));
  return true;
}
static bool r_reducel2(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = un(c, KILN_NODE_Sqrt,
            same_reduce(c, KILN_NODE_ReduceSum, bin(c, KILN_NODE_Mul, in0(c), in0(c))));
  return true;
}
static bool r_reducelogsum(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = un(c, KILN_NODE_Log, same_reduce(c, KILN_NODE_ReduceSum, in0(c)));
  return true;
}
static bool r_reducelogsumexp(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  int64_t axes[KILN_MAX_RANK];
  uint32_t n = node_axes(c, axes);
  kiln_value *x = in0(c);
  if (n == 0) {
    r[0] = un(c, KILN_NODE_Log, un(c, KILN_NODE_Exp, x));
    return true;
  }
  int64_t keep = kiln_attrs_int_or(attrs(c), "keepdims", 1);
  /* Subtracting the max keeps exp from overflowing. */
  kiln_value *m = reduce(c, KILN_NODE_ReduceMax, x, axes, n, 1);
  kiln_value *s = reduce(c, KILN_NODE_ReduceSum, un(c, KILN_NODE_Exp, bin(c, KILN_NODE_Sub, x, m)),
                         axes, n, keep);
  kiln_value *mk = keep ? m : reduce(c, KILN_NODE_ReduceMax, x, axes, n, 0);
  r[0] = bin(c, KILN_NODE_Add, un(c, KILN_NODE_Log, s), mk);
  return true;
}

static bool r_softmax(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  int64_t axis = kiln_attrs_int_or(attrs(c), "axis", -1);
  if (axis < 0)
    axis += kiln_value_type(x)->rank;
  kiln_value *d = bin(c, KILN_NODE_Sub, x, reduce(c, KILN_NODE_ReduceMax, x, &axis, 1, 1));
  kiln_value *e = un(c, KILN_NODE_Exp, d);
  kiln_value *s = reduce(c, KILN_NODE_ReduceSum, e, &axis, 1, 1);
  if (kiln_node_get_kind(c->n) == KILN_NODE_LogSoftmax)
    r[0] = bin(c, KILN_NODE_Sub, d, un(c, KILN_NODE_Log, s));
  else
    r[0] = bin(c, KILN_NODE_Div, e, s);
  return true;
}

static bool r_global_pool(kiln_lower_ctx *c, kiln_value **r) {
  uint32_t rank = kiln_value_type(in0(c))->rank;
  int64_t axes[KILN_MAX_RANK];
  for (uint32_t i = 2; i < rank; i++)
    axes[i - 2] = i;
  kiln_node_kind k = kiln_node_get_kind(c->n) == KILN_NODE_GlobalMaxPool ? KILN_NODE_ReduceMax
                                                                         : KILN_NODE_ReduceMean;
  r[0] = rank > 2 ? reduce(c, k, in0(c), axes, rank - 2, 1) : un(c, KILN_NODE_Identity, in0(c));
  return true;
}

/* ---- normalizations ---- */

/* Parameter v of shape [C] as [C, 1, ..., 1] so it broadcasts over x
 * (channel axis 1, rank r). */
static kiln_value *per_channel(kiln_lower_ctx *c, kiln_value *v, uint32_t r) {
  int64_t dims[KILN_MAX_RANK];
  dims[0] = kiln_type_numel(kiln_value_type(v));
  for (uint32_t i = 1; i + 1 < r; i++)
    dims[i] = 1;
  return reshape(c, v, dims, r > 1 ? r - 1 : 1);
}

static bool r_batchnorm(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  uint32_t rank = kiln_value_type(x)->rank;
  kiln_value *p[5];
  for (uint32_t i = 1; i < 5; i++)
    p[i] = per_channel(c, kiln_node_input(c->n, i), rank);
  kiln_value *inv =
      bin(c, KILN_NODE_Div, p[1],
          un(c, KILN_NODE_Sqrt, bin(c, KILN_NODE_Add, p[4], sc(c, fattr(c, "epsilon", 1e-5)))));
  r[0] = bin(c, KILN_NODE_Add, bin(c, KILN_NODE_Mul, bin(c, KILN_NODE_Sub, x, p[3]), inv), p[2]);
  return true;
}

/* (x - mean) / sqrt(var + eps) over axes, plus mean and 1/sqrt(var+eps). */
static kiln_value *normalize(kiln_lower_ctx *c, kiln_value *x, const int64_t *axes, uint32_t n,
                             double eps, kiln_value **mean, kiln_value **invstd) {
  kiln_value *m = reduce(c, KILN_NODE_ReduceMean, x, axes, n, 1);
  kiln_value *d = bin(c, KILN_NODE_Sub, x, m);
  kiln_value *v = reduce(c, KILN_NODE_ReduceMean, bin(c, KILN_NODE_Mul, d, d), axes, n, 1);
  kiln_value *inv =
      un(c, KILN_NODE_Reciprocal, un(c, KILN_NODE_Sqrt, bin(c, KILN_NODE_Add, v, sc(c, eps))));
  if (mean)
    *mean = m;
  if (invstd)
    *invstd = inv;
  return bin(c, KILN_NODE_Mul, d, inv);
}

static bool r_instancenorm(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  uint32_t rank = kiln_value_type(x)->rank;
  int64_t axes[KILN_MAX_RANK];
  for (uint32_t i = 2; i < rank; i++)
    axes[i - 2] = i;
  kiln_value *y = normalize(c, x, axes, rank - 2, fattr(c, "epsilon", 1e-5), NULL, NULL);
  y = bin(c, KILN_NODE_Mul, y, per_channel(c, kiln_node_input(c->n, 1), rank));
  r[0] = bin(c, KILN_NODE_Add, y, per_channel(c, kiln_node_input(c->n, 2), rank));
  return true;
}

static bool r_layernorm(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = in0(c);
  uint32_t rank = kiln_value_type(x)->rank;
  int64_t axis = kiln_attrs_int_or(attrs(c), "axis", -1), axes[KILN_MAX_RANK];
  if (axis < 0)
    axis += rank;
  for (uint32_t i = (uint32_t)axis; i < rank; i++)
    axes[i - axis] = i;
  kiln_value *mean, *inv;
  kiln_value *y =
      normalize(c, x, axes, rank - (uint32_t)axis, fattr(c, "epsilon", 1e-5), &mean, &inv);
  y = bin(c, KILN_NODE_Mul, y, kiln_node_input(c->n, 1));
  if (kiln_node_input_count(c->n) > 2 && kiln_node_input(c->n, 2))
    y = bin(c, KILN_NODE_Add, y, kiln_node_input(c->n, 2));
  r[0] = y;
  if (kiln_node_result_count(c->n) > 1)
    r[1] = mean;
  if (kiln_node_result_count(c->n) > 2)
    r[2] = inv;
  /* Mean / InvStdDev of another type (stash_type) cannot be matched here. */
  for (uint32_t i = 1; i < kiln_node_result_count(c->n) && !c->s; i++)
    if (r[i] && kiln_value_use_count(kiln_node_result(c->n, i)) &&
        !kiln_type_equal(kiln_value_type(r[i]), kiln_value_type(kiln_node_result(c->n, i))))
      return false;
  for (uint32_t i = 1; i < kiln_node_result_count(c->n); i++)
    if (!kiln_value_use_count(kiln_node_result(c->n, i)))
      r[i] = NULL;
  return true;
}

static bool r_mvn(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  int64_t axes[KILN_MAX_RANK] = {0, 2, 3};
  uint32_t n = 3;
  const kiln_attr *a = kiln_attrs_find(attrs(c), "axes");
  if (a) {
    n = kiln_attr_len(a) < KILN_MAX_RANK ? kiln_attr_len(a) : KILN_MAX_RANK;
    for (uint32_t i = 0; i < n; i++)
      axes[i] = kiln_attr_ints(a)[i];
  }
  r[0] = normalize(c, in0(c), axes, n, 1e-9, NULL, NULL);
  return true;
}

/* ---- linear algebra ---- */

static bool r_gemm(kiln_lower_ctx *c, kiln_value **r) {
  kiln_value *a = in0(c), *b = kiln_node_input(c->n, 1),
             *cc = kiln_node_input_count(c->n) > 2 ? kiln_node_input(c->n, 2) : NULL;
  int64_t perm[2] = {1, 0};
  kiln_attr_desc pa = KILN_ATTR_IS("perm", perm, 2);
  if (kiln_attrs_int_or(attrs(c), "transA", 0))
    a = emit(c, KILN_NODE_Transpose, &a, 1, &pa, 1);
  if (kiln_attrs_int_or(attrs(c), "transB", 0))
    b = emit(c, KILN_NODE_Transpose, &b, 1, &pa, 1);
  kiln_value *y = bin(c, KILN_NODE_MatMul, a, b);
  double alpha = fattr(c, "alpha", 1), beta = fattr(c, "beta", 1);
  if (alpha != 1)
    y = bin(c, KILN_NODE_Mul, y, sc(c, alpha));
  if (cc && beta != 0) {
    if (beta != 1)
      cc = bin(c, KILN_NODE_Mul, cc, sc(c, beta));
    y = bin(c, KILN_NODE_Add, y, cc);
  }
  r[0] = y;
  return true;
}

/* ---- the table ---- */

static const kiln_lower_rule rules[KILN_NODE_KIND_COUNT] = {
    [KILN_NODE_Identity] = r_identity,
    [KILN_NODE_Dropout] = r_dropout,
    [KILN_NODE_Flatten] = r_to_reshape,
    [KILN_NODE_Squeeze] = r_to_reshape,
    [KILN_NODE_Unsqueeze] = r_to_reshape,
    [KILN_NODE_CastLike] = r_castlike,
    [KILN_NODE_Shape] = r_shape_const,
    [KILN_NODE_Size] = r_shape_const,
    [KILN_NODE_ConstantOfShape] = r_constant_of_shape,
    [KILN_NODE_Sum] = r_sum,
    [KILN_NODE_Mean] = r_mean,
    [KILN_NODE_Max] = r_minmax,
    [KILN_NODE_Min] = r_minmax,
    [KILN_NODE_Clip] = r_clip,
    [KILN_NODE_Softplus] = r_softplus,
    [KILN_NODE_Softsign] = r_softsign,
    [KILN_NODE_Elu] = r_elu,
    [KILN_NODE_Selu] = r_selu,
    [KILN_NODE_Celu] = r_celu,
    [KILN_NODE_HardSigmoid] = r_hardsigmoid,
    [KILN_NODE_HardSwish] = r_hardswish,
    [KILN_NODE_LeakyRelu] = r_leakyrelu,
    [KILN_NODE_PRelu] = r_prelu,
    [KILN_NODE_ThresholdedRelu] = r_thresholdedrelu,
    [KILN_NODE_Shrink] = r_shrink,
    [KILN_NODE_Gelu] = r_gelu,
    [KILN_NODE_ReduceMean] = r_reducemean,
    [KILN_NODE_ReduceSumSquare] = r_reducesumsquare,
    [KILN_NODE_ReduceL1] = r_reducel1,
    [KILN_NODE_ReduceL2] = r_reducel2,
    [KILN_NODE_ReduceLogSum] = r_reducelogsum,
    [KILN_NODE_ReduceLogSumExp] = r_reducelogsumexp,
    [KILN_NODE_Softmax] = r_softmax,
    [KILN_NODE_LogSoftmax] = r_softmax,
    [KILN_NODE_GlobalAveragePool] = r_global_pool,
    [KILN_NODE_GlobalMaxPool] = r_global_pool,
    [KILN_NODE_BatchNormalization] = r_batchnorm,
    [KILN_NODE_InstanceNormalization] = r_instancenorm,
    [KILN_NODE_LayerNormalization] = r_layernorm,
    [KILN_NODE_MeanVarianceNormalization] = r_mvn,
    [KILN_NODE_Gemm] = r_gemm,
#define KILN_LOWER_ROW(k) [KILN_NODE_##k] = kiln_lower_##k,
    KILN_LOWER_RULES_EXTERN(KILN_LOWER_ROW)
#undef KILN_LOWER_ROW
};

kiln_lower_rule kiln_lower_rule_for(kiln_node_kind k) {
  return (unsigned)k < KILN_NODE_KIND_COUNT ? rules[k] : NULL;
}
