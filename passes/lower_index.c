/* passes/lower_index.c: lowering rules for the indexing kinds OneHot,
 * GatherElements and GatherND. Index arithmetic is done on i64 constants
 * computed here from the static shapes, so the only runtime gathers are
 * plain flat Gathers. */
#include <stdlib.h>
#include <string.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)

/* Index tensor made int64, with negative entries wrapped by `dim` (a value
 * broadcasting against it). */
static kiln_value *wrap_index(kiln_lower_ctx *c, kiln_value *idx, kiln_value *dim) {
  kiln_value *i = kiln_value_type(idx)->elem == KILN_I64 ? idx : lower_cast(c, idx, KILN_I64);
  kiln_value *zero = lower_sce(c, KILN_I64, 0);
  return lower_where(c, lower_bin(c, KILN_NODE_Less, i, zero), lower_bin(c, KILN_NODE_Add, i, dim),
                     i);
}

static kiln_value *gather0(kiln_lower_ctx *c, kiln_value *data, kiln_value *idx) {
  kiln_value *in[2] = {data, idx};
  kiln_attr_desc a = KILN_ATTR_I("axis", 0);
  return lower_emit(c, KILN_NODE_Gather, in, 2, &a, 1);
}

bool kiln_lower_OneHot(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *it = lower_tin(c, 0), *ot = lower_tout(c, 0);
  int64_t axis = lower_iattr(c, "axis", -1);
  if (axis < 0)
    axis += ot->rank;
  int64_t depth = ot->dims[axis];
  kiln_value *ind = X0;
  if (kiln_elem_is_float(it->elem)) /* ONNX casts float indices to int */
    ind = lower_cast(c, ind, KILN_I64);
  ind = wrap_index(c, ind, lower_sce(c, KILN_I64, (double)depth));
  int64_t dims[KILN_MAX_RANK];
  for (uint32_t i = 0, j = 0; i < ot->rank; i++)
    dims[i] = (int64_t)i == axis ? 1 : it->dims[j++];
  ind = lower_reshape(c, ind, dims, ot->rank);
  kiln_value *hit =
      lower_bin(c, KILN_NODE_Equal, ind, kiln_lower_iota_along(c, ot->rank, (uint32_t)axis, depth));
  kiln_value *vals = kiln_node_input(c->n, 1);
  r[0] = lower_where(c, hit, lower_slice(c, vals, 0, 1, 2), lower_slice(c, vals, 0, 0, 1));
  return true;
}

typedef struct base_fill {
  int64_t rank, skip; /* skip: the gathered axis, -1 none */
  int64_t dims[KILN_MAX_RANK], mul[KILN_MAX_RANK];
} base_fill;
/* sum over axes k != skip of (coordinate k of i in dims) * mul[k] */
static double fill_base(int64_t i, const void *u) {
  const base_fill *b = u;
  int64_t s = 0;
  for (int64_t k = b->rank - 1; k >= 0; k--) {
    int64_t coord = b->dims[k] ? i % b->dims[k] : 0;
    i = b->dims[k] ? i / b->dims[k] : 0;
    if (k != b->skip)
      s += coord * b->mul[k];
  }
  return (double)s;
}

bool kiln_lower_GatherElements(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *dt = lower_tin(c, 0), *it = lower_tin(c, 1);
  int64_t axis = lower_iattr(c, "axis", 0);
  if (axis < 0)
    axis += dt->rank;
  int64_t strides[KILN_MAX_RANK], numel = kiln_type_numel(dt);
  kiln_type_strides(dt, strides);
  base_fill b = {.rank = it->rank, .skip = axis};
  for (uint32_t k = 0; k < it->rank; k++) {
    b.dims[k] = it->dims[k];
    b.mul[k] = strides[k];
  }
  kiln_type bt;
  if (!c->s)
    c->s = kiln_type_make(KILN_I64, it->rank, it->dims, &bt);
  kiln_value *base = c->s ? NULL : kiln_lower_const_fn(c, &bt, fill_base, &b);
  kiln_value *idx =
      wrap_index(c, kiln_node_input(c->n, 1), lower_sce(c, KILN_I64, (double)dt->dims[axis]));
  idx = lower_bin(c, KILN_NODE_Add,
                  lower_bin(c, KILN_NODE_Mul, idx, lower_sce(c, KILN_I64, (double)strides[axis])),
                  base);
  r[0] = gather0(c, lower_reshape(c, X0, &numel, 1), idx);
  return true;
}

bool kiln_lower_GatherND(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *dt = lower_tin(c, 0), *it = lower_tin(c, 1);
  int64_t bd = lower_iattr(c, "batch_dims", 0);
  if (it->rank < 1)
    return false;
  int64_t k = it->dims[it->rank - 1];
  if (bd < 0 || bd + k > dt->rank || k < 1)
    return false;
  /* data as [prod(d[0 .. bd+k)), d[bd+k ..]] */
  int64_t flat[KILN_MAX_RANK], lead = 1, block = 1;
  for (int64_t i = 0; i < bd + k; i++)
    lead *= dt->dims[i];
  for (int64_t i = bd; i < bd + k; i++)
    block *= dt->dims[i];
  flat[0] = lead;
  uint32_t fr = 1;
  for (uint32_t i = (uint32_t)(bd + k); i < dt->rank; i++)
    flat[fr++] = dt->dims[i];
  double dimv[KILN_MAX_RANK], strv[KILN_MAX_RANK];
  for (int64_t j = k - 1, s = 1; j >= 0; j--) {
    dimv[j] = (double)dt->dims[bd + j];
    strv[j] = (double)s;
    s *= dt->dims[bd + j];
  }
  kiln_value *dimc = kiln_lower_const_vals(c, KILN_I64, 1, &k, dimv);
  kiln_value *strc = kiln_lower_const_vals(c, KILN_I64, 1, &k, strv);
  kiln_value *idx = wrap_index(c, kiln_node_input(c->n, 1), dimc);
  int64_t last = it->rank - 1;
  idx = lower_reduce(c, KILN_NODE_ReduceSum, lower_bin(c, KILN_NODE_Mul, idx, strc), &last, 1, 0);
  if (bd > 0) {
    /* plus (flat batch position) * block over the batch dims of indices */
    base_fill b = {.rank = last, .skip = -1};
    int64_t s = block;
    for (int64_t i = last - 1; i >= 0; i--) {
      b.dims[i] = it->dims[i];
      b.mul[i] = i < bd ? s : 0;
      if (i < bd)
        s *= it->dims[i];
    }
    kiln_type bt;
    if (!c->s)
      c->s = kiln_type_make(KILN_I64, (uint32_t)last, it->dims, &bt);
    idx =
        lower_bin(c, KILN_NODE_Add, idx, c->s ? NULL : kiln_lower_const_fn(c, &bt, fill_base, &b));
  }
  r[0] = gather0(c, lower_reshape(c, X0, flat, fr), idx);
  return true;
}
