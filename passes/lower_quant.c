/* passes/lower_quant.c: lowering rules for quantized arithmetic:
 * MatMulInteger, ConvInteger, QuantizeLinear, DequantizeLinear,
 * QLinearMatMul, QLinearConv and DynamicQuantizeLinear, onto float and
 * integer arithmetic on the dequantized values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)

/* x - zp in element type e (zp may be absent). zp of rank 1 and length
 * x.dims[axis] (axis of rank `rank`) is shaped to broadcast along axis. */
static kiln_value *minus_zp(kiln_lower_ctx *c, kiln_value *x, kiln_value *zp, kiln_elem e,
                            uint32_t rank, int64_t axis) {
  kiln_value *y = lower_cast(c, x, e);
  if (!zp)
    return y;
  kiln_value *z = lower_cast(c, zp, e);
  const kiln_type *zt = kiln_value_type(zp);
  if (zt->rank == 1 && kiln_type_numel(zt) > 1) {
    int64_t dims[KILN_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++)
      dims[i] = (int64_t)i == axis ? zt->dims[0] : 1;
    z = lower_reshape(c, z, dims, rank);
  }
  return lower_bin(c, KILN_NODE_Sub, y, z);
}

bool kiln_lower_MatMulInteger(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *at = lower_tin(c, 0);
  if (at->rank < 2)
    return false;
  kiln_value *a = minus_zp(c, X0, lower_in(c, 2), KILN_I32, at->rank, at->rank - 2);
  kiln_value *b = minus_zp(c, kiln_node_input(c->n, 1), lower_in(c, 3), KILN_I32,
                           lower_tin(c, 1)->rank, lower_tin(c, 1)->rank - 1);
  r[0] = lower_bin(c, KILN_NODE_MatMul, a, b);
  return true;
}

bool kiln_lower_ConvInteger(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *xt = lower_tin(c, 0), *wt = lower_tin(c, 1);
  /* f64 holds every u8/i8 product sum exactly, so the Cast back is exact. */
  kiln_value *in[2] = {
      minus_zp(c, X0, lower_in(c, 2), KILN_F64, xt->rank, 1),
      minus_zp(c, kiln_node_input(c->n, 1), lower_in(c, 3), KILN_F64, wt->rank, 0)};
  kiln_attr_desc *d = NULL;
  uint32_t nd = 0;
  if (!c->s)
    c->s = kiln_pass_attrs_descs(kiln_node_attrs(c->n), 0, &d, &nd);
  kiln_value *y = lower_emit(c, KILN_NODE_Conv, in, 2, d, nd);
  free(d);
  r[0] = lower_cast(c, y, KILN_I32);
  return true;
}

/* A per-axis parameter (rank 1, more than one element) shaped to
 * broadcast along axis of a rank-`rank` tensor; scalars pass through. */
static kiln_value *along(kiln_lower_ctx *c, kiln_value *p, uint32_t rank, int64_t axis) {
  const kiln_type *pt = p ? kiln_value_type(p) : NULL;
  if (!pt || pt->rank == 0 || kiln_type_numel(pt) == 1)
    return p;
  int64_t dims[KILN_MAX_RANK];
  for (uint32_t i = 0; i < rank; i++)
    dims[i] = (int64_t)i == axis ? pt->dims[0] : 1;
  return lower_reshape(c, p, dims, rank);
}

/* A blocked parameter (x's rank; along axis one entry per block_size
 * elements) repeated along axis to x's shape by a Gather with the
 * constant index table i / block_size; the other dims already match. */
static kiln_value *blocked(kiln_lower_ctx *c, kiln_value *p, int64_t axis, int64_t block) {
  if (!p || c->s)
    return NULL;
  int64_t n = lower_tin(c, 0)->dims[axis];
  double *col = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!col) {
    c->s = kiln_status_make(KILN_OUT_OF_MEMORY, "lower %s '%s': block index table of %lld",
                            kiln_node_kind_name(kiln_node_get_kind(c->n)), kiln_node_name(c->n),
                            (long long)n);
    return NULL;
  }
  for (int64_t i = 0; i < n; i++)
    col[i] = (double)(i / block);
  kiln_value *in[2] = {p, kiln_lower_const_vals(c, KILN_I64, 1, &n, col)};
  free(col);
  kiln_attr_desc a = KILN_ATTR_I("axis", axis);
  return lower_emit(c, KILN_NODE_Gather, in, 2, &a, 1);
}

/* Whether a blocked parameter fits x: same rank, the same dims off the
 * axis, and an entry for every block along it. */
static bool blocked_fits(kiln_lower_ctx *c, uint32_t i, int64_t axis, int64_t block) {
  const kiln_value *v = lower_in(c, i);
  if (!v)
    return true;
  const kiln_type *xt = lower_tin(c, 0), *pt = kiln_value_type(v);
  if (pt->rank != xt->rank)
    return false;
  for (uint32_t d = 0; d < xt->rank; d++)
    if ((int64_t)d == axis ? xt->dims[d] > 0 && (xt->dims[d] - 1) / block >= pt->dims[d]
                           : pt->dims[d] != xt->dims[d])
      return false;
  return true;
}

/* A per-tensor parameter (one element, broadcasting to x's shape) or a
 * per-axis one (rank 1). */
static bool quant_simple(const kiln_type *t, uint32_t rank, int64_t axis_dim) {
  return kiln_type_numel(t) == 1 ? t->rank <= rank : t->rank == 1 && t->dims[0] == axis_dim;
}

/* The scale (*s) and zero point (*z, NULL when absent) of a quantize or
 * dequantize node shaped to broadcast against x: scalars as they are,
 * per-axis ones reshaped along the axis, blocked ones repeated to x's
 * shape. False when the parameters match none of these forms. */
static bool quant_params(kiln_lower_ctx *c, kiln_value **s, kiln_value **z) {
  uint32_t rank = lower_tin(c, 0)->rank;
  int64_t axis = lower_iattr(c, "axis", 1), block = lower_iattr(c, "block_size", 0);
  if (axis < 0)
    axis += rank;
  kiln_value *sv = kiln_node_input(c->n, 1), *zv = lower_in(c, 2);
  const kiln_type *st = kiln_value_type(sv);
  if (block < 0 || (kiln_type_numel(st) != 1 && (axis < 0 || axis >= (int64_t)rank)))
    return false;
  if (block > 0 && kiln_type_numel(st) != 1) {
    if (!blocked_fits(c, 1, axis, block) || !blocked_fits(c, 2, axis, block))
      return false;
    *s = blocked(c, sv, axis, block), *z = blocked(c, zv, axis, block);
    return true;
  }
  int64_t ad = kiln_type_numel(st) == 1 ? 1 : lower_tin(c, 0)->dims[axis];
  if (!quant_simple(st, rank, ad) || (zv && !quant_simple(kiln_value_type(zv), rank, ad)))
    return false;
  *s = along(c, sv, rank, axis), *z = zv ? along(c, zv, rank, axis) : NULL;
  return true;
}

bool kiln_lower_DequantizeLinear(kiln_lower_ctx *c, kiln_value **r) {
  kiln_value *scale = NULL, *zp = NULL;
  if (!quant_params(c, &scale, &zp))
    return false;
  const kiln_type *ot = lower_tout(c, 0);
  kiln_value *d = lower_cast(c, X0, ot->elem);
  if (zp)
    d = lower_bin(c, KILN_NODE_Sub, d, lower_cast(c, zp, ot->elem));
  r[0] = lower_bin(c, KILN_NODE_Mul, d, scale);
  return true;
}

/* Saturating range of an 8/16-bit integer type; false for others. */
static bool int_range(kiln_elem e, double *lo, double *hi) {
  switch (e) {
  case KILN_U8:
    *lo = 0, *hi = 255;
    return true;
  case KILN_I8:
    *lo = -128, *hi = 127;
    return true;
  case KILN_U16:
    *lo = 0, *hi = 65535;
    return true;
  case KILN_I16:
    *lo = -32768, *hi = 32767;
    return true;
  default:
    return false;
  }
}

bool kiln_lower_QuantizeLinear(kiln_lower_ctx *c, kiln_value **r) {
  double lo, hi;
  const kiln_type *ot = lower_tout(c, 0);
  kiln_value *scale = NULL, *zp = NULL;
  if (!int_range(ot->elem, &lo, &hi) || !kiln_elem_is_float(c->elem) || ot->quantized ||
      !quant_params(c, &scale, &zp))
    return false;
  kiln_value *q = lower_un(c, KILN_NODE_Round, lower_bin(c, KILN_NODE_Div, X0, scale));
  if (zp)
    q = lower_bin(c, KILN_NODE_Add, q, lower_cast(c, zp, c->elem));
  q = lower_bin(c, KILN_NODE_Min, lower_bin(c, KILN_NODE_Max, q, lower_sc(c, lo)), lower_sc(c, hi));
  r[0] = lower_cast(c, q, ot->elem);
  return true;
}

/* The integer kinds' result from their int32 accumulator acc (bias
 * included), exactly as the interpreter and the ONNX reference compute
 * it: the multiplier f32(f32(x_scale * w_scale) / y_scale), then
 * round_half_even((double)acc * multiplier) + y_zero_point, saturated. The
 * f64 product of an int32 and an f32 is the one the reference rounds, so
 * every backend that lowers this gets the same integers. xs and ys are
 * per tensor (or x per row of a MatMul); ws per tensor or per output
 * channel, along axis `axis` of the rank-`rank` result. Only where
 * requantizable(): 8/16-bit results, f32 scales (with an f64 scale the
 * reference works in f64 throughout; no lowering here). */
static bool requantizable(kiln_lower_ctx *c) {
  double lo, hi;
  return int_range(lower_tout(c, 0)->elem, &lo, &hi) && lower_tin(c, 1)->elem == KILN_F32 &&
         lower_tin(c, 4)->elem == KILN_F32 && lower_tin(c, 6)->elem == KILN_F32;
}

static kiln_value *requantize(kiln_lower_ctx *c, kiln_value *acc, uint32_t xs, uint32_t ws,
                              uint32_t ys, uint32_t yzp, uint32_t rank, int64_t w_axis,
                              int64_t x_axis) {
  double lo = 0, hi = 0;
  const kiln_type *ot = lower_tout(c, 0);
  int_range(ot->elem, &lo, &hi);
  kiln_value *sx = along(c, kiln_node_input(c->n, xs), rank, x_axis);
  kiln_value *sw = along(c, kiln_node_input(c->n, ws), rank, w_axis);
  kiln_value *m = lower_bin(c, KILN_NODE_Div, lower_bin(c, KILN_NODE_Mul, sx, sw),
                            kiln_node_input(c->n, ys));
  kiln_value *v = lower_bin(c, KILN_NODE_Mul, lower_cast(c, acc, KILN_F64),
                            lower_cast(c, m, KILN_F64));
  v = lower_un(c, KILN_NODE_Round, v);
  kiln_value *zp = lower_in(c, yzp);
  if (zp)
    v = lower_bin(c, KILN_NODE_Add, v, lower_cast(c, zp, KILN_F64));
  v = lower_bin(c, KILN_NODE_Min, lower_bin(c, KILN_NODE_Max, v, lower_sce(c, KILN_F64, lo)),
               lower_sce(c, KILN_F64, hi));
  return lower_cast(c, v, ot->elem);
}

bool kiln_lower_QLinearMatMul(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *at = lower_tin(c, 0), *bt = lower_tin(c, 3), *yt = lower_tout(c, 0);
  if (at->rank < 2 || bt->rank < 2 || kiln_type_numel(lower_tin(c, 6)) != 1 ||
      !requantizable(c))
    return false;
  /* per-row a / per-column b parameters must be plain vectors */
  for (uint32_t i = 1; i < 6; i++)
    if (i != 3 && kiln_node_input(c->n, i) && lower_tin(c, i)->rank > 1)
      return false;
  kiln_value *in[4] = {X0, kiln_node_input(c->n, 3), lower_in(c, 2), lower_in(c, 5)};
  uint32_t n = in[3] ? 4 : in[2] ? 3 : 2;
  if (!in[2] && in[3]) /* MatMulInteger's zero points are positional */
    in[2] = lower_sce(c, kiln_value_type(X0)->elem, 0), n = 4;
  kiln_value *acc = lower_emit(c, KILN_NODE_MatMulInteger, in, n, NULL, 0);
  r[0] = requantize(c, acc, 1, 4, 6, 7, yt->rank, yt->rank - 1, yt->rank - 2);
  return true;
}

bool kiln_lower_QLinearConv(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *yt = lower_tout(c, 0);
  if (kiln_type_numel(lower_tin(c, 1)) != 1 || kiln_type_numel(lower_tin(c, 6)) != 1 ||
      lower_tin(c, 4)->rank > 1 || !requantizable(c))
    return false;
  kiln_attr_desc *d = NULL;
  uint32_t nd = 0;
  if (!c->s)
    c->s = kiln_pass_attrs_descs(kiln_node_attrs(c->n), 0, &d, &nd);
  kiln_value *in[4] = {X0, kiln_node_input(c->n, 3), lower_in(c, 2), lower_in(c, 5)};
  uint32_t n = in[3] ? 4 : in[2] ? 3 : 2;
  if (!in[2] && in[3]) /* ConvInteger's zero points are positional */
    in[2] = lower_sce(c, kiln_value_type(X0)->elem, 0), n = 4;
  kiln_value *acc = lower_emit(c, KILN_NODE_ConvInteger, in, n, d, nd);
  free(d);
  kiln_value *b = lower_in(c, 8);
  if (b) /* the int32 bias joins the accumulator, as in the reference */
    acc = lower_bin(c, KILN_NODE_Add, acc, along(c, lower_cast(c, b, KILN_I32), yt->rank, 1));
  r[0] = requantize(c, acc, 1, 4, 6, 7, yt->rank, 1, 1);
  return true;
}

/* f32 only, as ONNX defines it: range [min(x, 0), max(x, 0)], scale =
 * range / 255 in float32, zero point and values rounded half to even and
 * clamped to [0, 255]; an all-zero input (scale 0) divides by 1 instead,
 * which gives the interpreter's zero point 0 and values 0. */
bool kiln_lower_DynamicQuantizeLinear(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  if (t->elem != KILN_F32 || lower_tout(c, 0)->elem != KILN_U8 || t->rank > KILN_MAX_RANK)
    return false;
  int64_t all[KILN_MAX_RANK];
  for (uint32_t d = 0; d < t->rank; d++)
    all[d] = d;
  kiln_value *x = kiln_node_input(c->n, 0), *zero = lower_sc(c, 0), *top = lower_sc(c, 255);
  kiln_value *mn =
      lower_bin(c, KILN_NODE_Min, lower_reduce(c, KILN_NODE_ReduceMin, x, all, t->rank, 0), zero);
  kiln_value *mx =
      lower_bin(c, KILN_NODE_Max, lower_reduce(c, KILN_NODE_ReduceMax, x, all, t->rank, 0), zero);
  kiln_value *scale = lower_bin(c, KILN_NODE_Div, lower_bin(c, KILN_NODE_Sub, mx, mn), top);
  kiln_value *is0 = lower_bin(c, KILN_NODE_Equal, scale, zero);
  kiln_value *safe = lower_where(c, is0, lower_sc(c, 1), scale);
  kiln_value *zp = lower_un(
      c, KILN_NODE_Round, lower_bin(c, KILN_NODE_Sub, zero, lower_bin(c, KILN_NODE_Div, mn, safe)));
  zp = lower_bin(c, KILN_NODE_Min, lower_bin(c, KILN_NODE_Max, zp, zero), top);
  zp = lower_where(c, is0, zero, zp);
  kiln_value *y = lower_bin(c, KILN_NODE_Add,
                            lower_un(c, KILN_NODE_Round, lower_bin(c, KILN_NODE_Div, x, safe)), zp);
  y = lower_bin(c, KILN_NODE_Min, lower_bin(c, KILN_NODE_Max, y, zero), top);
  r[0] = lower_cast(c, y, KILN_U8);
  r[1] = scale;
  r[2] = lower_cast(c, zp, KILN_U8);
  return true;
}
