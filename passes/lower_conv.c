/* passes/lower_conv.c: lowering rules for the convolutions: Conv with
 * groups (one Conv per group, concatenated), Conv with kiln's fused
 * residual (Conv, Add, activation) and Col2Im (a ScatterND with
 * addition, the primitive set's only data-dependent write, through an index
 * table computed here at compile time from its static shapes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/ops.h"

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)

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

/* A Conv carrying the fused residual (input 3) for a backend that does not
 * take it: the Conv without residual and activation, the Add, then the
 * activation as a node of its own. */
static bool lower_conv_epilogue(kiln_lower_ctx *c, kiln_value *x, kiln_value *res, kiln_value **r);
static bool lower_conv_residual(kiln_lower_ctx *c, kiln_value **r) {
  return lower_conv_epilogue(c, X0, kiln_node_input(c->n, 3), r);
}

/* Conv of x with the node's filters and bias, plus residual res (or
 * NULL), then the fused activation as a node of its own; the attributes
 * other than activation* and block are the node's. */
static bool lower_conv_epilogue(kiln_lower_ctx *c, kiln_value *x, kiln_value *res, kiln_value **r) {
  const kiln_attrs *at = kiln_node_attrs(c->n);
  kiln_fused_act_params act;
  c->s = kiln_fused_act_decode_params("Conv", at, &act);
  if (c->s)
    return true;
  kiln_attr_desc *d = NULL;
  uint32_t n = 0;
  c->s = kiln_pass_attrs_descs(at, 0, &d, &n);
  if (c->s)
    return true;
  uint32_t k = 0; /* the attributes without activation* and block */
  for (uint32_t i = 0; i < n; i++)
    if (strncmp(d[i].name, "activation", 10) != 0 && strcmp(d[i].name, "block") != 0)
      d[k++] = d[i];
  kiln_value *in[3] = {x, kiln_node_input(c->n, 1), lower_in(c, 2)};
  kiln_value *y = lower_emit(c, KILN_NODE_Conv, in, in[2] ? 3 : 2, d, k);
  free(d);
  if (res)
    y = lower_bin(c, KILN_NODE_Add, y, res);
  kiln_node_kind ak = kiln_fused_act_node_kind(act.kind);
  if (act.kind == KILN_FUSED_ACT_NONE) {
    r[0] = y;
  } else if (act.kind == KILN_FUSED_ACT_CLIP) {
    kiln_value *lo = isinf(act.alpha) ? NULL : lower_sc(c, act.alpha);
    kiln_value *hi = isinf(act.beta) ? NULL : lower_sc(c, act.beta);
    kiln_value *ci[3] = {y, lo, hi};
    r[0] = lower_emit(c, KILN_NODE_Clip, ci, 3, NULL, 0);
  } else {
    kiln_attr_desc ad[2];
    uint32_t na = 0;
    if (act.kind == KILN_FUSED_ACT_LEAKY_RELU || act.kind == KILN_FUSED_ACT_SWISH ||
        act.kind == KILN_FUSED_ACT_HARD_SIGMOID)
      ad[na++] = KILN_ATTR_F("alpha", act.alpha);
    if (act.kind == KILN_FUSED_ACT_HARD_SIGMOID)
      ad[na++] = KILN_ATTR_F("beta", act.beta);
    r[0] = lower_emit(c, ak, &y, 1, ad, na);
  }
  return true;
}

bool kiln_lower_Conv(kiln_lower_ctx *c, kiln_value **r) {
  if (kiln_node_input_count(c->n) > 3 && kiln_node_input(c->n, 3))
    return lower_conv_residual(c, r);
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
  kiln_value *in[3] = {kiln_lower_const_fn(c, &acc_t, kiln_lower_fill_zero, NULL),
                       kiln_lower_const_fn(c, &idx_t, col2im_target, &g), cols};
  kiln_attr_desc add = KILN_ATTR_S("reduction", "add");
  kiln_value *acc = lower_emit(c, KILN_NODE_ScatterND, in, 3, &add, 1);
  acc = lower_slice(c, acc, 0, 0, acc_dims[0] - 1);
  kiln_value *img = lower_transpose(c, acc, perm, 2);
  r[0] = lower_reshape(c, img, o->dims, o->rank);
  return true;
}

/* BlockedConv: the input and the residual unblocked, Conv (Add,
 * activation), the result blocked again. */
static kiln_value *lower_unblock(kiln_lower_ctx *c, kiln_value *x, int64_t channels) {
  if (!x || kiln_value_type(x)->rank != 5)
    return x;
  kiln_attr_desc a = KILN_ATTR_I("channels", channels);
  return lower_emit(c, KILN_NODE_UnblockChannels, &x, 1, &a, 1);
}

bool kiln_lower_BlockedConv(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *wt = lower_tin(c, 1);
  int64_t group = lower_iattr(c, "group", 1), block = lower_iattr(c, "block", 16);
  kiln_value *x = lower_unblock(c, X0, wt->dims[1] * group);
  kiln_value *res = lower_unblock(c, lower_in(c, 3), wt->dims[0]);
  kiln_value *y = NULL;
  lower_conv_epilogue(c, x, res, &y);
  kiln_attr_desc a = KILN_ATTR_I("block", block);
  r[0] = lower_emit(c, KILN_NODE_BlockChannels, &y, 1, &a, 1);
  return true;
}
