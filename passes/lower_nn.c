/* passes/lower_nn.c: lowering rules for data movement (Split, Tile,
 * DepthToSpace, SpaceToDepth, OneHot, GatherElements, GatherND,
 * ReverseSequence, Upsample), grouped convolution and pooling (Conv with
 * groups, AveragePool, LRN), and quantized arithmetic (MatMulInteger,
 * ConvInteger, Quantize/DequantizeLinear, QLinearMatMul/Conv). Index
 * arithmetic is done on i64 constants computed here from the static
 * shapes, so the only runtime gathers are plain flat Gathers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)

/* ---- data movement ---- */

bool kiln_lower_Split(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t axis = lower_iattr(c, "axis", 0);
  if (axis < 0)
    axis += t->rank;
  int64_t at = 0;
  for (uint32_t i = 0; i < kiln_node_result_count(c->n); i++) {
    int64_t len = lower_tout(c, i)->dims[axis];
    r[i] = lower_slice(c, X0, axis, at, at + len);
    at += len;
  }
  return true;
}

bool kiln_lower_Tile(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t reps[KILN_MAX_RANK];
  uint32_t n = lower_ints(c, "repeats", reps, KILN_MAX_RANK);
  kiln_value *y = X0;
  for (uint32_t a = 0; a < n && a < t->rank; a++) {
    if (reps[a] == 1)
      continue;
    if (reps[a] <= 0) {
      y = lower_slice(c, y, a, 0, 0);
      continue;
    }
    if (reps[a] > 64) /* Concat takes at most 64 inputs */
      return false;
    kiln_value *copies[64];
    for (int64_t i = 0; i < reps[a]; i++)
      copies[i] = y;
    y = lower_concat(c, copies, (uint32_t)reps[a], a);
  }
  r[0] = y;
  return true;
}

bool kiln_lower_DepthToSpace(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0), *ot = lower_tout(c, 0);
  int64_t b = lower_iattr(c, "blocksize", 1);
  if (t->rank != 4 || b <= 0)
    return false;
  int64_t n = t->dims[0], ch = t->dims[1], h = t->dims[2], w = t->dims[3], co = ch / (b * b);
  bool crd = strcmp(kiln_attrs_string_or(kiln_node_attrs(c->n), "mode", "DCR"), "CRD") == 0;
  int64_t d_dcr[6] = {n, b, b, co, h, w}, p_dcr[6] = {0, 3, 4, 1, 5, 2};
  int64_t d_crd[6] = {n, co, b, b, h, w}, p_crd[6] = {0, 1, 4, 2, 5, 3};
  kiln_value *y = lower_reshape(c, X0, crd ? d_crd : d_dcr, 6);
  y = lower_transpose(c, y, crd ? p_crd : p_dcr, 6);
  r[0] = lower_reshape(c, y, ot->dims, 4);
  return true;
}

bool kiln_lower_SpaceToDepth(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0), *ot = lower_tout(c, 0);
  int64_t b = lower_iattr(c, "blocksize", 1);
  if (t->rank != 4 || b <= 0)
    return false;
  int64_t d[6] = {t->dims[0], t->dims[1], t->dims[2] / b, b, t->dims[3] / b, b};
  int64_t p[6] = {0, 3, 5, 1, 2, 4};
  r[0] = lower_reshape(c, lower_transpose(c, lower_reshape(c, X0, d, 6), p, 6), ot->dims, 4);
  return true;
}

/* An i64 constant of `rank` dims, all 1 except `dim` at `axis`, counting
 * 0..dim-1 along it. */
static kiln_value *iota_along(kiln_lower_ctx *c, uint32_t rank, uint32_t axis, int64_t dim) {
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
      lower_bin(c, KILN_NODE_Equal, ind, iota_along(c, ot->rank, (uint32_t)axis, depth));
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

bool kiln_lower_ReverseSequence(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t ba = lower_iattr(c, "batch_axis", 1), ta = lower_iattr(c, "time_axis", 0);
  if (t->rank < 2 || ba == ta || ba < 0 || ta < 0 || ba > 1 || ta > 1)
    return false;
  int64_t ldims[KILN_MAX_RANK];
  for (uint32_t i = 0; i < t->rank; i++)
    ldims[i] = (int64_t)i == ba ? t->dims[ba] : 1;
  kiln_value *len =
      lower_reshape(c, lower_cast(c, kiln_node_input(c->n, 1), KILN_I64), ldims, t->rank);
  kiln_value *tt = iota_along(c, t->rank, (uint32_t)ta, t->dims[ta]);
  kiln_value *rev =
      lower_bin(c, KILN_NODE_Sub, lower_bin(c, KILN_NODE_Sub, len, lower_sce(c, KILN_I64, 1)), tt);
  kiln_value *src = lower_where(c, lower_bin(c, KILN_NODE_Less, tt, len), rev, tt);
  kiln_attr_desc ea = KILN_ATTR_IS("shape", t->dims, t->rank);
  src = lower_emit(c, KILN_NODE_Expand, &src, 1, &ea, 1);
  kiln_value *in[2] = {X0, src};
  kiln_attr_desc ga = KILN_ATTR_I("axis", ta);
  r[0] = lower_emit(c, KILN_NODE_GatherElements, in, 2, &ga, 1);
  return true;
}

bool kiln_lower_Upsample(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_attr *s = kiln_attrs_find(kiln_node_attrs(c->n), "scales");
  if (!s || !kiln_attr_floats(s))
    return false;
  const char *mode = kiln_attrs_string_or(kiln_node_attrs(c->n), "mode", "nearest");
  kiln_attr_desc a[4] = {KILN_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                         KILN_ATTR_S("mode", mode), KILN_ATTR_S("nearest_mode", "floor"),
                         KILN_ATTR_FS("scales", kiln_attr_floats(s), kiln_attr_len(s))};
  kiln_value *x = X0;
  r[0] = lower_emit(c, KILN_NODE_Resize, &x, 1, a, 4);
  return true;
}

/* ---- convolution and pooling ---- */

/* A copy of the node's attributes with `name` set to integer v (added when
 * absent). Caller frees *out. */
static kiln_attr_desc *attrs_with(kiln_lower_ctx *c, const char *name, int64_t v, uint32_t *n) {
  kiln_attr_desc *d = NULL;
  *n = 0;
  if (c->s)
    return NULL;
  c->s = kiln_pass_attrs_descs(kiln_node_attrs(c->n), 1, &d, n);
  if (c->s)
    return NULL;
  uint32_t i = 0;
  while (i < *n && strcmp(d[i].name, name) != 0)
    i++;
  d[i] = KILN_ATTR_I(name, v);
  if (i == *n)
    (*n)++;
  return d;
}

bool kiln_lower_Conv(kiln_lower_ctx *c, kiln_value **r) {
  int64_t g = lower_iattr(c, "group", 1);
  const kiln_type *xt = lower_tin(c, 0), *wt = lower_tin(c, 1);
  if (g <= 1 || g > 64 || xt->rank < 3 || xt->dims[1] % g || wt->dims[0] % g)
    return false;
  int64_t ci = xt->dims[1] / g, co = wt->dims[0] / g;
  kiln_value *b = lower_in(c, 2);
  uint32_t na = 0;
  kiln_attr_desc *a = attrs_with(c, "group", 1, &na);
  kiln_value *ys[64];
  for (int64_t i = 0; i < g && !c->s; i++) {
    kiln_value *in[3] = {lower_slice(c, X0, 1, i * ci, (i + 1) * ci),
                         lower_slice(c, kiln_node_input(c->n, 1), 0, i * co, (i + 1) * co),
                         b ? lower_slice(c, b, 0, i * co, (i + 1) * co) : NULL};
    ys[i] = lower_emit(c, KILN_NODE_Conv, in, b ? 3 : 2, a, na);
  }
  free(a);
  r[0] = c->s ? NULL : lower_concat(c, ys, (uint32_t)g, 1);
  return true;
}

/* Explicit begin/end pads of a pooling node for spatial rank sr (auto_pad
 * resolved against the input and the expected output dims). */
static void pool_pads(kiln_lower_ctx *c, uint32_t sr, const int64_t *in, const int64_t *out,
                      const int64_t *k, const int64_t *s, const int64_t *d, int64_t *pads) {
  const char *ap = kiln_attrs_string_or(kiln_node_attrs(c->n), "auto_pad", "NOTSET");
  for (uint32_t i = 0; i < 2 * sr; i++)
    pads[i] = 0;
  if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    for (uint32_t i = 0; i < sr; i++) {
      int64_t total = (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in[i];
      if (total < 0)
        total = 0;
      int64_t small = total / 2;
      pads[i] = !strcmp(ap, "SAME_UPPER") ? small : total - small;
      pads[i + sr] = total - pads[i];
    }
  } else if (strcmp(ap, "VALID") != 0) {
    lower_ints(c, "pads", pads, 2 * sr);
  }
}

/* AveragePool (p = 0) and LpPool (p > 0) as a window sum: a Conv with a
 * ones kernel over [N*C, 1, ...], of x or of |x|^p. */
static bool pool_by_conv(kiln_lower_ctx *c, kiln_value **r, int64_t p) {
  const kiln_type *t = lower_tin(c, 0), *ot = lower_tout(c, 0);
  if (t->rank < 3 || !kiln_elem_is_float(t->elem) || p < 0)
    return false;
  uint32_t sr = t->rank - 2;
  int64_t k[KILN_MAX_RANK], s[KILN_MAX_RANK], d[KILN_MAX_RANK], pads[2 * KILN_MAX_RANK];
  if (lower_ints(c, "kernel_shape", k, sr) != sr)
    return false;
  for (uint32_t i = 0; i < sr; i++)
    s[i] = d[i] = 1;
  lower_ints(c, "strides", s, sr);
  lower_ints(c, "dilations", d, sr);
  pool_pads(c, sr, t->dims + 2, ot->dims + 2, k, s, d, pads);
  bool any_pad = false;
  for (uint32_t i = 0; i < sr; i++) {
    int64_t span = t->dims[2 + i] + pads[i] + pads[i + sr] - (k[i] - 1) * d[i] - 1;
    if (span < 0 || span / s[i] + 1 != ot->dims[2 + i])
      return false; /* ceil_mode windows past the end: no Conv equivalent */
    any_pad |= pads[i] || pads[i + sr];
  }
  /* [N, C, ...] as [N*C, 1, ...], summed by a ones kernel. */
  int64_t xd[KILN_MAX_RANK], wd[KILN_MAX_RANK], od[KILN_MAX_RANK], kn = 1;
  xd[0] = t->dims[0] * t->dims[1];
  xd[1] = wd[0] = wd[1] = od[1] = 1;
  od[0] = xd[0];
  for (uint32_t i = 0; i < sr; i++) {
    xd[2 + i] = t->dims[2 + i];
    wd[2 + i] = k[i];
    od[2 + i] = ot->dims[2 + i];
    kn *= k[i];
  }
  kiln_type wt, ct;
  if (!c->s)
    c->s = kiln_type_make(t->elem, t->rank, wd, &wt);
  kiln_value *ones = NULL;
  if (!c->s)
    c->s = kiln_pass_const_fill(kiln_function_module(c->f), &wt, 1, &ones);
  kiln_attr_desc ca[4] = {KILN_ATTR_IS("dilations", d, sr), KILN_ATTR_IS("kernel_shape", k, sr),
                          KILN_ATTR_IS("pads", pads, 2 * sr), KILN_ATTR_IS("strides", s, sr)};
  kiln_value *x = X0;
  if (p == 2)
    x = lower_bin(c, KILN_NODE_Mul, x, x);
  else if (p > 0)
    x = lower_bin(c, KILN_NODE_Pow, lower_un(c, KILN_NODE_Abs, x), lower_sc(c, (double)p));
  kiln_value *in[2] = {lower_reshape(c, x, xd, t->rank), ones};
  kiln_value *sum = lower_emit(c, KILN_NODE_Conv, in, 2, ca, 4);
  kiln_value *y;
  if (p == 1)
    y = sum;
  else if (p == 2)
    y = lower_un(c, KILN_NODE_Sqrt, sum);
  else if (p > 0)
    y = lower_bin(c, KILN_NODE_Pow, sum, lower_sc(c, 1.0 / (double)p));
  else if (!any_pad || lower_iattr(c, "count_include_pad", 0)) {
    y = lower_bin(c, KILN_NODE_Div, sum, lower_sce(c, t->elem, (double)kn));
  } else {
    /* Divide each window by how many real (unpadded) elements it covers:
     * the same Conv over a ones image. */
    int64_t cd[KILN_MAX_RANK];
    cd[0] = cd[1] = 1;
    for (uint32_t i = 0; i < sr; i++)
      cd[2 + i] = t->dims[2 + i];
    kiln_value *img = NULL;
    if (!c->s)
      c->s = kiln_type_make(t->elem, t->rank, cd, &ct);
    if (!c->s)
      c->s = kiln_pass_const_fill(kiln_function_module(c->f), &ct, 1, &img);
    kiln_value *cin[2] = {img, ones};
    y = lower_bin(c, KILN_NODE_Div, sum, lower_emit(c, KILN_NODE_Conv, cin, 2, ca, 4));
  }
  (void)od;
  r[0] = lower_reshape(c, y, ot->dims, ot->rank);
  return true;
}

bool kiln_lower_AveragePool(kiln_lower_ctx *c, kiln_value **r) {
  return pool_by_conv(c, r, 0);
}

bool kiln_lower_LpPool(kiln_lower_ctx *c, kiln_value **r) {
  int64_t p = lower_iattr(c, "p", 2);
  return p >= 1 && pool_by_conv(c, r, p);
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
  /* The channel window sum as a Conv over [N, 1, C, S] with a [size, 1]
   * ones kernel, padded floor((size-1)/2) before and the rest after. */
  int64_t xd[4] = {t->dims[0], 1, t->dims[1], sp}, wd[4] = {1, 1, size, 1};
  int64_t pads[4] = {(size - 1) / 2, 0, size - 1 - (size - 1) / 2, 0}, k[2] = {size, 1};
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

/* ---- quantized arithmetic ---- */

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

static kiln_value *dq(kiln_lower_ctx *c, uint32_t x, uint32_t s, uint32_t zp, int64_t axis) {
  kiln_value *in[3] = {kiln_node_input(c->n, x), kiln_node_input(c->n, s),
                       kiln_node_input(c->n, zp)};
  kiln_attr_desc a = KILN_ATTR_I("axis", axis);
  return lower_emit(c, KILN_NODE_DequantizeLinear, in, in[2] ? 3 : 2, &a, 1);
}
static kiln_value *q(kiln_lower_ctx *c, kiln_value *y, uint32_t s, uint32_t zp) {
  kiln_value *in[3] = {y, kiln_node_input(c->n, s), kiln_node_input(c->n, zp)};
  return lower_emit(c, KILN_NODE_QuantizeLinear, in, in[2] ? 3 : 2, NULL, 0);
}
static bool all_scalar(kiln_lower_ctx *c, const uint32_t *which, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (!kiln_node_input(c->n, which[i]) || kiln_type_numel(lower_tin(c, which[i])) != 1)
      return false;
  return true;
}

bool kiln_lower_QLinearMatMul(kiln_lower_ctx *c, kiln_value **r) {
  static const uint32_t params[6] = {1, 2, 4, 5, 6, 7};
  if (!all_scalar(c, params, 6))
    return false;
  r[0] = q(c, lower_bin(c, KILN_NODE_MatMul, dq(c, 0, 1, 2, 1), dq(c, 3, 4, 5, 1)), 6, 7);
  return true;
}

bool kiln_lower_QLinearConv(kiln_lower_ctx *c, kiln_value **r) {
  static const uint32_t params[5] = {1, 2, 6, 7, 5};
  if (!all_scalar(c, params, 4) || !kiln_node_input(c->n, 5))
    return false;
  const kiln_type *wt = lower_tin(c, 3);
  kiln_value *x = dq(c, 0, 1, 2, 1), *w = dq(c, 3, 4, 5, 0);
  kiln_value *b = lower_in(c, 8);
  if (b) {
    /* Bias is i32 at scale x_scale * w_scale (per output channel). */
    kiln_value *sw = kiln_node_input(c->n, 4);
    if (kiln_value_type(sw)->rank > 1)
      return false;
    kiln_value *scale = lower_bin(c, KILN_NODE_Mul, kiln_node_input(c->n, 1), sw);
    b = lower_bin(c, KILN_NODE_Mul, lower_cast(c, b, kiln_value_type(sw)->elem), scale);
  }
  (void)wt;
  kiln_attr_desc *d = NULL;
  uint32_t nd = 0;
  if (!c->s)
    c->s = kiln_pass_attrs_descs(kiln_node_attrs(c->n), 0, &d, &nd);
  kiln_value *in[3] = {x, w, b};
  kiln_value *y = lower_emit(c, KILN_NODE_Conv, in, b ? 3 : 2, d, nd);
  free(d);
  r[0] = q(c, y, 6, 7);
  return true;
}
