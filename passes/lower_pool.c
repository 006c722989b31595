/* passes/lower_pool.c: lowering rules for the pools: GlobalAveragePool and
 * GlobalMaxPool (a reduction over the spatial axes), AveragePool and LpPool
 * (a Conv by a ones kernel, its window from kiln_window_decode) and
 * MaxUnpool (a ScatterND into zeros). */
#include <stdlib.h>

#include "kiln/ops.h"
#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)

bool kiln_lower_global_pool(kiln_lower_ctx *c, kiln_value **r) {
  uint32_t rank = kiln_value_type(X0)->rank;
  int64_t axes[KILN_MAX_RANK];
  for (uint32_t i = 2; i < rank; i++)
    axes[i - 2] = i;
  kiln_node_kind k = kiln_node_get_kind(c->n) == KILN_NODE_GlobalMaxPool ? KILN_NODE_ReduceMax
                                                                         : KILN_NODE_ReduceMean;
  r[0] = rank > 2 ? lower_reduce(c, k, X0, axes, rank - 2, 1) : lower_un(c, KILN_NODE_Identity, X0);
  return true;
}

/* AveragePool (p = 0) and LpPool (p > 0) as a window sum: a Conv with a
 * ones kernel over [N*C, 1, ...], of x or of |x|^p. */
static bool pool_by_conv(kiln_lower_ctx *c, kiln_value **r, int64_t p) {
  const kiln_type *t = lower_tin(c, 0), *ot = lower_tout(c, 0);
  if (t->rank < 3 || !kiln_elem_is_float(t->elem) || p < 0)
    return false;
  /* the window with auto_pad resolved; a node it declines is left alone */
  kiln_window w;
  kiln_status st = kiln_window_decode(kiln_node_kind_name(kiln_node_get_kind(c->n)),
                                      kiln_node_attrs(c->n), t, ot, NULL, false, &w);
  if (st) {
    kiln_status_free(st);
    return false;
  }
  uint32_t sr = w.rank;
  int64_t *k = w.kernel, *s = w.stride, *d = w.dilation, pads[2 * KILN_MAX_RANK];
  for (uint32_t i = 0; i < sr; i++)
    pads[i] = w.pad_begin[i], pads[i + sr] = w.pad_end[i];
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

/* zeros(block).flat[indices] = x, a ScatterND into a flat zero tensor;
 * block is the shape MaxPool's window attributes give back, and a larger
 * output_shape pads it with zeros at the end of each dimension. */
bool kiln_lower_MaxUnpool(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0), *o = lower_tout(c, 0);
  uint32_t nd = t->rank - 2;
  int64_t kern[KILN_MAX_RANK], st[KILN_MAX_RANK], pads[2 * KILN_MAX_RANK];
  if (t->rank < 3 || lower_ints(c, "kernel_shape", kern, KILN_MAX_RANK) != nd)
    return false;
  uint32_t ns = lower_ints(c, "strides", st, KILN_MAX_RANK);
  uint32_t np = lower_ints(c, "pads", pads, 2 * KILN_MAX_RANK);
  int64_t block[KILN_MAX_RANK] = {t->dims[0], t->dims[1]}, extra[2 * KILN_MAX_RANK] = {0};
  bool padded = false;
  for (uint32_t d = 0; d < nd; d++) {
    block[2 + d] = (t->dims[2 + d] - 1) * (ns == nd ? st[d] : 1) + kern[d] -
                   (np == 2 * nd ? pads[d] + pads[nd + d] : 0);
    extra[t->rank + 2 + d] = o->dims[2 + d] - block[2 + d];
    padded |= extra[t->rank + 2 + d] != 0;
  }
  int64_t n = kiln_type_numel(t), total = 1, idx_dims[2] = {n, 1};
  for (uint32_t d = 0; d < t->rank; d++)
    total *= block[d];
  kiln_type flat;
  c->s = c->s ? c->s : kiln_type_make(o->elem, 1, &total, &flat);
  if (c->s)
    return true;
  kiln_value *in[3] = {kiln_lower_const_fn(c, &flat, kiln_lower_fill_zero, NULL),
                       lower_reshape(c, kiln_node_input(c->n, 1), idx_dims, 2),
                       lower_reshape(c, X0, &n, 1)};
  kiln_value *y = lower_emit(c, KILN_NODE_ScatterND, in, 3, NULL, 0);
  y = lower_reshape(c, y, block, t->rank);
  if (padded) {
    kiln_attr_desc a[3] = {KILN_ATTR_IS("pads", extra, 2 * t->rank),
                           KILN_ATTR_S("mode", "constant"), KILN_ATTR_F("value", 0)};
    y = lower_emit(c, KILN_NODE_Pad, &y, 1, a, 3);
  }
  r[0] = y;
  return true;
}
