/* passes/lower_norm.c: lowering rules for the normalizations: Softmax and
 * LogSoftmax, Hardmax (a one-hot of ArgMax), BatchNormalization,
 * InstanceNormalization, LayerNormalization, MeanVarianceNormalization, LRN
 * (its channel window sum as a Conv), RMSNormalization, LpNormalization and
 * GroupNormalization. */
#include <math.h>
#include <stdlib.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)
#define X1 kiln_node_input(c->n, 1)

static bool is_float(kiln_lower_ctx *c) {
  return kiln_elem_is_float(c->elem);
}

bool kiln_lower_softmax(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  int64_t axis = kiln_attrs_int_or(kiln_node_attrs(c->n), "axis", -1);
  if (axis < 0)
    axis += kiln_value_type(x)->rank;
  kiln_value *d =
      lower_bin(c, KILN_NODE_Sub, x, lower_reduce(c, KILN_NODE_ReduceMax, x, &axis, 1, 1));
  kiln_value *e = lower_un(c, KILN_NODE_Exp, d);
  kiln_value *s = lower_reduce(c, KILN_NODE_ReduceSum, e, &axis, 1, 1);
  if (kiln_node_get_kind(c->n) == KILN_NODE_LogSoftmax)
    r[0] = lower_bin(c, KILN_NODE_Sub, d, lower_un(c, KILN_NODE_Log, s));
  else
    r[0] = lower_bin(c, KILN_NODE_Div, e, s);
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
  return lower_reshape(c, v, dims, r > 1 ? r - 1 : 1);
}

bool kiln_lower_BatchNormalization(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  uint32_t rank = kiln_value_type(x)->rank;
  kiln_value *p[5];
  for (uint32_t i = 1; i < 5; i++)
    p[i] = per_channel(c, kiln_node_input(c->n, i), rank);
  kiln_value *inv = lower_bin(
      c, KILN_NODE_Div, p[1],
      lower_un(c, KILN_NODE_Sqrt,
               lower_bin(c, KILN_NODE_Add, p[4], lower_sc(c, lower_fattr(c, "epsilon", 1e-5)))));
  r[0] = lower_bin(c, KILN_NODE_Add,
                   lower_bin(c, KILN_NODE_Mul, lower_bin(c, KILN_NODE_Sub, x, p[3]), inv), p[2]);
  return true;
}

/* (x - mean) / sqrt(var + eps) over axes, plus mean and 1/sqrt(var+eps). */
static kiln_value *normalize(kiln_lower_ctx *c, kiln_value *x, const int64_t *axes, uint32_t n,
                             double eps, kiln_value **mean, kiln_value **invstd) {
  kiln_value *m = lower_reduce(c, KILN_NODE_ReduceMean, x, axes, n, 1);
  kiln_value *d = lower_bin(c, KILN_NODE_Sub, x, m);
  kiln_value *v =
      lower_reduce(c, KILN_NODE_ReduceMean, lower_bin(c, KILN_NODE_Mul, d, d), axes, n, 1);
  kiln_value *inv =
      lower_un(c, KILN_NODE_Reciprocal,
               lower_un(c, KILN_NODE_Sqrt, lower_bin(c, KILN_NODE_Add, v, lower_sc(c, eps))));
  if (mean)
    *mean = m;
  if (invstd)
    *invstd = inv;
  return lower_bin(c, KILN_NODE_Mul, d, inv);
}

bool kiln_lower_InstanceNormalization(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  uint32_t rank = kiln_value_type(x)->rank;
  int64_t axes[KILN_MAX_RANK];
  for (uint32_t i = 2; i < rank; i++)
    axes[i - 2] = i;
  kiln_value *y = normalize(c, x, axes, rank - 2, lower_fattr(c, "epsilon", 1e-5), NULL, NULL);
  y = lower_bin(c, KILN_NODE_Mul, y, per_channel(c, kiln_node_input(c->n, 1), rank));
  r[0] = lower_bin(c, KILN_NODE_Add, y, per_channel(c, kiln_node_input(c->n, 2), rank));
  return true;
}

bool kiln_lower_LayerNormalization(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  uint32_t rank = kiln_value_type(x)->rank;
  int64_t axis = kiln_attrs_int_or(kiln_node_attrs(c->n), "axis", -1), axes[KILN_MAX_RANK];
  if (axis < 0)
    axis += rank;
  for (uint32_t i = (uint32_t)axis; i < rank; i++)
    axes[i - axis] = i;
  kiln_value *mean, *inv;
  kiln_value *y =
      normalize(c, x, axes, rank - (uint32_t)axis, lower_fattr(c, "epsilon", 1e-5), &mean, &inv);
  y = lower_bin(c, KILN_NODE_Mul, y, kiln_node_input(c->n, 1));
  if (kiln_node_input_count(c->n) > 2 && kiln_node_input(c->n, 2))
    y = lower_bin(c, KILN_NODE_Add, y, kiln_node_input(c->n, 2));
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

bool kiln_lower_MeanVarianceNormalization(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  int64_t axes[KILN_MAX_RANK] = {0, 2, 3};
  uint32_t n = 3;
  const kiln_attr *a = kiln_attrs_find(kiln_node_attrs(c->n), "axes");
  if (a) {
    n = kiln_attr_len(a) < KILN_MAX_RANK ? kiln_attr_len(a) : KILN_MAX_RANK;
    for (uint32_t i = 0; i < n; i++)
      axes[i] = kiln_attr_ints(a)[i];
  }
  r[0] = normalize(c, X0, axes, n, 1e-9, NULL, NULL);
  return true;
}

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

bool kiln_lower_LRN(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t size = lower_iattr(c, "size", 1);
  if (t->rank < 2 || size < 1 || !kiln_elem_is_float(t->elem))
    return false;
  double alpha = lower_fattr(c, "alpha", 1e-4), beta = lower_fattr(c, "beta", 0.75),
         bias = lower_fattr(c, "bias", 1);
  int64_t sp = 1;
  for (uint32_t i = 2; i < t->rank; i++)
    sp *= t->dims[i];
  /* The channel window sum as a Conv over [N, 1, C, S] with a ones kernel
   * padded floor((size-1)/2) before and the rest after. Either side past
   * C - 1 channels only adds padding, so each is cut to C - 1: the kernel
   * then has at most 2C - 1 taps however large size is. */
  int64_t C = t->dims[1], before = (size - 1) / 2, after = size - 1 - before;
  before = before < C - 1 ? before : C - 1 > 0 ? C - 1 : 0;
  after = after < C - 1 ? after : C - 1 > 0 ? C - 1 : 0;
  int64_t kn = before + after + 1;
  int64_t xd[4] = {t->dims[0], 1, C, sp}, wd[4] = {1, 1, kn, 1};
  int64_t pads[4] = {before, 0, after, 0}, k[2] = {kn, 1};
  kiln_type wt;
  kiln_value *ones = NULL;
  if (!c->s)
    c->s = kiln_type_make(t->elem, 4, wd, &wt);
  if (!c->s)
    c->s = kiln_pass_const_fill(kiln_function_module(c->f), &wt, 1, &ones);
  kiln_value *sq = lower_bin(c, KILN_NODE_Mul, X0, X0);
  kiln_attr_desc ca[2] = {KILN_ATTR_IS("kernel_shape", k, 2), KILN_ATTR_IS("pads", pads, 4)};
  kiln_value *in[2] = {lower_reshape(c, sq, xd, 4), ones};
  kiln_value *sum = lower_reshape(c, lower_emit(c, KILN_NODE_Conv, in, 2, ca, 2), t->dims, t->rank);
  kiln_value *base = lower_bin(c, KILN_NODE_Add, lower_sc(c, bias),
                               lower_bin(c, KILN_NODE_Mul, sum, lower_sc(c, alpha / (double)size)));
  r[0] = lower_bin(c, KILN_NODE_Div, X0, lower_bin(c, KILN_NODE_Pow, base, lower_sc(c, beta)));
  return true;
}

bool kiln_lower_RMSNormalization(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  if (!kiln_elem_is_float(c->elem) || t->rank == 0)
    return false;
  int64_t axis = lower_iattr(c, "axis", -1), axes[KILN_MAX_RANK];
  if (axis < 0)
    axis += t->rank;
  uint32_t n = 0;
  for (int64_t i = axis; i < (int64_t)t->rank; i++)
    axes[n++] = i;
  kiln_value *ms =
      lower_reduce(c, KILN_NODE_ReduceMean, lower_bin(c, KILN_NODE_Mul, X0, X0), axes, n, 1);
  kiln_value *rms =
      lower_un(c, KILN_NODE_Sqrt,
               lower_bin(c, KILN_NODE_Add, ms, lower_sc(c, lower_fattr(c, "epsilon", 1e-5))));
  r[0] = lower_bin(c, KILN_NODE_Mul, lower_bin(c, KILN_NODE_Div, X0, rms), X1);
  return true;
}

bool kiln_lower_LpNormalization(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t p = lower_iattr(c, "p", 2), axis = lower_iattr(c, "axis", -1);
  if (!kiln_elem_is_float(c->elem) || t->rank == 0 || (p != 1 && p != 2))
    return false;
  if (axis < 0)
    axis += t->rank;
  kiln_value *norm =
      p == 1 ? lower_reduce(c, KILN_NODE_ReduceSum, lower_un(c, KILN_NODE_Abs, X0), &axis, 1, 1)
             : lower_un(c, KILN_NODE_Sqrt,
                        lower_reduce(c, KILN_NODE_ReduceSum, lower_bin(c, KILN_NODE_Mul, X0, X0),
                                     &axis, 1, 1));
  /* A line of zeros stays zeros: divide it by 1 instead of 0. */
  kiln_value *zero = lower_sc(c, 0);
  norm = lower_where(c, lower_bin(c, KILN_NODE_Equal, norm, zero), lower_sc(c, 1), norm);
  r[0] = lower_bin(c, KILN_NODE_Div, X0, norm);
  return true;
}

/* stash_type: a TYPE attribute, or an ONNX data type code; f32 when absent. */
static kiln_elem stash_elem(kiln_lower_ctx *c) {
  const kiln_attr *a = kiln_attrs_find(kiln_node_attrs(c->n), "stash_type");
  if (!a)
    return KILN_F32;
  if (kiln_attr_get_kind(a) == KILN_ATTR_TYPE)
    return kiln_attr_type(a);
  switch (kiln_attr_int(a)) {
  case 10:
    return KILN_F16;
  case 11:
    return KILN_F64;
  case 16:
    return KILN_BF16;
  default:
    return KILN_F32;
  }
}

/* Normalize [N, G, C/G * spatial] over its last axis in the stash type,
 * then per-channel scale and bias in the input's type (as the ONNX
 * function body does). */
bool kiln_lower_GroupNormalization(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t g = lower_iattr(c, "num_groups", 0);
  if (!kiln_elem_is_float(c->elem) || t->rank < 2 || g <= 0 || t->dims[1] % g)
    return false;
  kiln_elem st = stash_elem(c);
  int64_t len = t->dims[1] / g;
  for (uint32_t d = 2; d < t->rank; d++)
    len *= t->dims[d];
  int64_t grouped[3] = {t->dims[0], g, len}, axis = 2;
  kiln_value *x = st == c->elem ? X0 : lower_cast(c, X0, st);
  x = lower_reshape(c, x, grouped, 3);
  kiln_value *mean = lower_reduce(c, KILN_NODE_ReduceMean, x, &axis, 1, 1);
  kiln_value *d = lower_bin(c, KILN_NODE_Sub, x, mean);
  kiln_value *var =
      lower_reduce(c, KILN_NODE_ReduceMean, lower_bin(c, KILN_NODE_Mul, d, d), &axis, 1, 1);
  kiln_value *sd =
      lower_un(c, KILN_NODE_Sqrt,
               lower_bin(c, KILN_NODE_Add, var, lower_sce(c, st, lower_fattr(c, "epsilon", 1e-5))));
  kiln_value *y = lower_reshape(c, lower_bin(c, KILN_NODE_Div, d, sd), t->dims, t->rank);
  if (st != c->elem)
    y = lower_cast(c, y, c->elem);
  int64_t per_channel[KILN_MAX_RANK];
  per_channel[0] = t->dims[1];
  for (uint32_t i = 1; i + 1 < t->rank; i++)
    per_channel[i] = 1;
  kiln_value *scale = lower_reshape(c, kiln_node_input(c->n, 1), per_channel, t->rank - 1);
  kiln_value *bias = lower_reshape(c, kiln_node_input(c->n, 2), per_channel, t->rank - 1);
  r[0] = lower_bin(c, KILN_NODE_Add, lower_bin(c, KILN_NODE_Mul, y, scale), bias);
  return true;
}
