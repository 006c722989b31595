/* passes/lower_movement.c: lowering rules for data movement: Flatten,
 * Squeeze and Unsqueeze (onto Reshape), Shape and Size (constants from the
 * static shape), Split, Tile, DepthToSpace, SpaceToDepth, Trilu (a Where by
 * a constant mask), ReverseSequence and CenterCropPad. Index arithmetic is
 * done on i64 constants computed here from the static shapes. */
#include <stdlib.h>
#include <string.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)

bool kiln_lower_to_reshape(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tout(c, 0);
  r[0] = lower_reshape(c, X0, t->dims, t->rank);
  return true;
}

bool kiln_lower_shape_const(kiln_lower_ctx *c, kiln_value **r) {
  /* Shape / Size of a static type: fold knows how; run it on this node. */
  const kiln_type *it = kiln_value_type(X0), *ot = lower_tout(c, 0);
  int64_t vals[KILN_MAX_RANK + 1];
  if (kiln_node_get_kind(c->n) == KILN_NODE_Size) {
    vals[0] = kiln_type_numel(it);
  } else {
    int64_t start = kiln_attrs_int_or(kiln_node_attrs(c->n), "start", 0);
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
  kiln_value *tt = kiln_lower_iota_along(c, t->rank, (uint32_t)ta, t->dims[ta]);
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

bool kiln_lower_Trilu(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  if (t->rank < 2)
    return false;
  int64_t n = t->dims[t->rank - 2], m = t->dims[t->rank - 1];
  kiln_lower_tri_fill tf = {n ? n : 1, m ? m : 1, lower_iattr(c, "k", 0),
                            lower_iattr(c, "upper", 1) ? 4 : 5};
  kiln_type mt;
  int64_t md[2] = {n, m};
  if (!c->s)
    c->s = kiln_type_make(KILN_BOOL, 2, md, &mt);
  kiln_value *mask = c->s ? NULL : kiln_lower_const_fn(c, &mt, kiln_lower_fill_tri, &tf);
  /* Where, not Mul by the mask: inf * 0 would be NaN. */
  r[0] = lower_where(c, mask, X0, lower_sc(c, 0));
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

/* BlockChannels: zero channels up to a whole number of blocks (Concat),
 * [N, Cb, B, S...] (Reshape), the block moved last (Transpose). */
bool kiln_lower_BlockChannels(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *xt = lower_tin(c, 0), *yt = lower_tout(c, 0);
  uint32_t R = xt->rank;
  int64_t B = yt->dims[R], Cb = yt->dims[1], C = xt->dims[1];
  kiln_value *x = kiln_node_input(c->n, 0);
  if (Cb * B > C) {
    kiln_type zt = *xt;
    zt.dims[1] = Cb * B - C;
    kiln_value *parts[2] = {x, kiln_lower_const_fn(c, &zt, kiln_lower_fill_zero, NULL)};
    x = parts[1] ? lower_concat(c, parts, 2, 1) : NULL;
  }
  int64_t dims[KILN_MAX_RANK + 1], perm[KILN_MAX_RANK + 1];
  dims[0] = xt->dims[0], dims[1] = Cb, dims[2] = B;
  for (uint32_t i = 2; i < R; i++)
    dims[i + 1] = xt->dims[i];
  x = lower_reshape(c, x, dims, R + 1);
  perm[0] = 0, perm[1] = 1, perm[R] = 2;
  for (uint32_t i = 2; i < R; i++)
    perm[i] = i + 1;
  r[0] = lower_transpose(c, x, perm, R + 1);
  return true;
}

/* UnblockChannels: the block moved after the block index (Transpose),
 * [N, Cb*B, S...] (Reshape), the first C channels (Slice). */
bool kiln_lower_UnblockChannels(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *xt = lower_tin(c, 0), *yt = lower_tout(c, 0);
  uint32_t R = xt->rank;
  int64_t B = xt->dims[R - 1], Cb = xt->dims[1], C = yt->dims[1];
  int64_t dims[KILN_MAX_RANK], perm[KILN_MAX_RANK];
  perm[0] = 0, perm[1] = 1, perm[2] = R - 1;
  for (uint32_t i = 3; i < R; i++)
    perm[i] = i - 1;
  kiln_value *x = lower_transpose(c, kiln_node_input(c->n, 0), perm, R);
  dims[0] = xt->dims[0], dims[1] = Cb * B;
  for (uint32_t i = 2; i + 1 < R; i++)
    dims[i] = xt->dims[i];
  x = lower_reshape(c, x, dims, R - 1);
  r[0] = Cb * B > C ? lower_slice(c, x, 1, 0, C) : x;
  return true;
}
