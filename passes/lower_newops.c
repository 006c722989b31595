/* passes/lower_newops.c: lowering rules for GroupNormalization,
 * CenterCropPad, MaxUnpool and Col2Im. The two scatters (MaxUnpool, Col2Im)
 * end in ScatterND, the primitive set's only data-dependent write; Col2Im's
 * index table is computed here at compile time from its static shapes. */
#include <stdlib.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)

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

/* A Slice per cropped axis, then one zero Pad for the padded ones; the
 * window is centred with the odd element at the end. */
bool kiln_lower_CenterCropPad(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0), *o = lower_tout(c, 0);
  int64_t pads[2 * KILN_MAX_RANK] = {0};
  bool any_pad = false;
  kiln_value *y = X0;
  for (uint32_t d = 0; d < t->rank; d++) {
    int64_t in = t->dims[d], out = o->dims[d];
    if (in > out) {
      int64_t start = (in - out) / 2;
      y = lower_slice(c, y, d, start, start + out);
    } else if (in < out) {
      pads[d] = (out - in) / 2;
      pads[t->rank + d] = out - in - pads[d];
      any_pad = true;
    }
  }
  if (any_pad) {
    kiln_attr_desc a[3] = {KILN_ATTR_IS("pads", pads, 2 * t->rank), KILN_ATTR_S("mode", "constant"),
                           KILN_ATTR_F("value", 0)};
    y = lower_emit(c, KILN_NODE_Pad, &y, 1, a, 3);
  }
  if (y == X0) /* same shape: an Identity keeps the result a new value */
    y = lower_un(c, KILN_NODE_Identity, y);
  r[0] = y;
  return true;
}

static double zero_fill(int64_t i, const void *u) {
  (void)i, (void)u;
  return 0;
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
  kiln_value *in[3] = {kiln_lower_const_fn(c, &flat, zero_fill, NULL),
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

/* Where each column entry (channel-major row c*K + k, block l) lands in
 * one channel's image, or `dump` (one past the image) when it falls into
 * the padding. */
typedef struct col2im_geom {
  uint32_t nd;
  int64_t img[KILN_MAX_RANK], blk[KILN_MAX_RANK], st[KILN_MAX_RANK], dil[KILN_MAX_RANK];
  int64_t pad[KILN_MAX_RANK], nblk[KILN_MAX_RANK], kprod, lprod, img_size, channels;
} col2im_geom;

static double col2im_target(int64_t i, const void *u) {
  const col2im_geom *g = u;
  int64_t per_ch = g->kprod * g->lprod, ch = i / per_ch, rest = i % per_ch;
  int64_t k = rest / g->lprod, l = rest % g->lprod, pos = 0, stride = 1;
  for (int d = (int)g->nd - 1; d >= 0; d--) {
    int64_t kd = k % g->blk[d], ld = l % g->nblk[d];
    k /= g->blk[d], l /= g->nblk[d];
    int64_t p = ld * g->st[d] - g->pad[d] + kd * g->dil[d];
    if (p < 0 || p >= g->img[d])
      return (double)(g->channels * g->img_size);
    pos += p * stride;
    stride *= g->img[d];
  }
  return (double)(ch * g->img_size + pos);
}

/* x [N, C*K, L] -> rows [C*K*L, N] scattered with addition into
 * [C*image + 1, N] (the last row collects the padding), then back to
 * [N, C, image...]. */
bool kiln_lower_Col2Im(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0), *o = lower_tout(c, 0);
  col2im_geom g = {.nd = o->rank - 2, .kprod = 1, .lprod = 1, .img_size = 1};
  int64_t blk[KILN_MAX_RANK], st[KILN_MAX_RANK], pad[2 * KILN_MAX_RANK], dil[KILN_MAX_RANK];
  if (lower_ints(c, "block_shape", blk, KILN_MAX_RANK) != g.nd)
    return false;
  uint32_t ns = lower_ints(c, "strides", st, KILN_MAX_RANK);
  uint32_t np = lower_ints(c, "pads", pad, 2 * KILN_MAX_RANK);
  uint32_t ndl = lower_ints(c, "dilations", dil, KILN_MAX_RANK);
  for (uint32_t d = 0; d < g.nd; d++) {
    g.img[d] = o->dims[2 + d];
    g.blk[d] = blk[d];
    g.st[d] = ns == g.nd ? st[d] : 1;
    g.dil[d] = ndl == g.nd ? dil[d] : 1;
    g.pad[d] = np == 2 * g.nd ? pad[d] : 0;
    int64_t pe = np == 2 * g.nd ? pad[g.nd + d] : 0;
    g.nblk[d] = (g.img[d] + g.pad[d] + pe - g.dil[d] * (g.blk[d] - 1) - 1) / g.st[d] + 1;
    g.kprod *= g.blk[d];
    g.lprod *= g.nblk[d];
    g.img_size *= g.img[d];
  }
  g.channels = o->dims[1];
  int64_t batch = t->dims[0], rows = t->dims[1] * t->dims[2];
  int64_t as_rows[2] = {batch, rows}, perm[2] = {1, 0};
  kiln_value *cols = lower_transpose(c, lower_reshape(c, X0, as_rows, 2), perm, 2);
  int64_t idx_dims[2] = {rows, 1}, acc_dims[2] = {g.channels * g.img_size + 1, batch};
  kiln_type idx_t, acc_t;
  if (!c->s)
    c->s = kiln_type_make(KILN_I64, 2, idx_dims, &idx_t);
  if (!c->s)
    c->s = kiln_type_make(o->elem, 2, acc_dims, &acc_t);
  if (c->s)
    return true;
  kiln_value *in[3] = {kiln_lower_const_fn(c, &acc_t, zero_fill, NULL),
                       kiln_lower_const_fn(c, &idx_t, col2im_target, &g), cols};
  kiln_attr_desc add = KILN_ATTR_S("reduction", "add");
  kiln_value *acc = lower_emit(c, KILN_NODE_ScatterND, in, 3, &add, 1);
  acc = lower_slice(c, acc, 0, 0, acc_dims[0] - 1);
  kiln_value *img = lower_transpose(c, acc, perm, 2);
  r[0] = lower_reshape(c, img, o->dims, o->rank);
  return true;
}
