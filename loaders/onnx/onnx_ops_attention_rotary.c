/* onnx_ops_attention_rotary.c: attention family, importer of ONNX
 * RotaryEmbedding (opset 23), expanded into Gather, Slice, Mul, Add, Sub,
 * Concat, Transpose and Reshape as the ONNX function body computes it. The
 * input is brought to [B, S, H, D]; the first rotary_embedding_dim entries
 * of each head are rotated in pairs, either halves (x[i], x[i + d/2]) or
 * neighbours (x[2i], x[2i + 1]) when interleaved, and the rest pass through
 * unchanged. */
#include "onnx_internal.h"

static kiln_status rope_err(const onnx_expand *c, const char *why) {
  return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: RotaryEmbedding: %s", c->L->file,
                          onnx_node_desc(c->n), why);
}

/* x[..., start : end : step] on the last axis (axis `axis`). */
static kiln_status rope_slice(onnx_expand *c, kiln_value *x, int64_t axis, int64_t start,
                              int64_t end, int64_t step, kiln_value **out) {
  kiln_attr_desc a[4] = {KILN_ATTR_IS("starts", &start, 1), KILN_ATTR_IS("ends", &end, 1),
                         KILN_ATTR_IS("axes", &axis, 1), KILN_ATTR_IS("steps", &step, 1)};
  return onnx_expand_op(c, KILN_NODE_Slice, x, NULL, a, 4, out);
}

/* The cos or sin factors for every (batch, position) as [B, S, 1, half]:
 * gathered by position_ids from a [max_pos, >= half] cache, or given
 * directly as [B, S, >= half]. */
static kiln_status rope_factor(onnx_expand *c, kiln_value *cache, kiln_value *pos, int64_t b,
                               int64_t s, int64_t half, kiln_value **out) {
  const kiln_type *t = kiln_value_type(cache);
  kiln_value *v = cache;
  if (pos) {
    if (t->rank != 2)
      return rope_err(c, "with position_ids, cos_cache and sin_cache must be 2-D");
    kiln_attr_desc ax = KILN_ATTR_I("axis", 0);
    KILN_TRY(onnx_expand_op(c, KILN_NODE_Gather, cache, pos, &ax, 1, &v));
  } else if (t->rank != 3) {
    return rope_err(c, "without position_ids, cos_cache and sin_cache must be 3-D");
  }
  const kiln_type *vt = kiln_value_type(v);
  if (vt->rank != 3 || vt->dims[0] != b || vt->dims[1] != s || vt->dims[2] < half)
    return rope_err(c, "cos_cache / sin_cache do not cover [batch, sequence, rotary_dim / 2]");
  if (vt->dims[2] > half)
    KILN_TRY(rope_slice(c, v, 2, 0, half, 1, &v));
  static const int64_t axis2[1] = {2};
  return onnx_expand_ints(c, KILN_NODE_Unsqueeze, "axes", v, axis2, 1, out);
}

kiln_status onnx_imp_rotary_embedding(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  (void)op;
  onnx_expand c = {.L = L, .n = n};
  kiln_value *x, *cosc, *sinc, *pos;
  KILN_TRY(onnx_input(L, n, 0, &x));
  KILN_TRY(onnx_input(L, n, 1, &cosc));
  KILN_TRY(onnx_input(L, n, 2, &sinc));
  KILN_TRY(onnx_input(L, n, 3, &pos));
  if (!x || !cosc || !sinc)
    return rope_err(&c, "inputs X, cos_cache and sin_cache are required");
  if (n->n_input > 4 || n->n_output != 1)
    return rope_err(&c, "expects at most 4 inputs and exactly 1 output");
  const kiln_type *xt = kiln_value_type(x);
  if (!kiln_elem_is_float(xt->elem) || kiln_value_type(cosc)->elem != xt->elem ||
      kiln_value_type(sinc)->elem != xt->elem)
    return rope_err(&c, "X, cos_cache and sin_cache must have one float type");
  if (pos && kiln_value_type(pos)->elem != KILN_I64)
    return rope_err(&c, "position_ids must be int64");

  /* To [B, S, H, D]. */
  kiln_value *x4;
  static const int64_t swap12[4] = {0, 2, 1, 3};
  if (xt->rank == 4) {
    KILN_TRY(onnx_expand_ints(&c, KILN_NODE_Transpose, "perm", x, swap12, 4, &x4));
  } else if (xt->rank == 3) {
    int64_t heads = onnx_attr_int_or(n, "num_heads", 0);
    if (heads <= 0 || xt->dims[2] % heads)
      return rope_err(&c, "3-D input needs num_heads dividing its last dimension");
    int64_t shape[4] = {xt->dims[0], xt->dims[1], heads, xt->dims[2] / heads};
    KILN_TRY(onnx_expand_ints(&c, KILN_NODE_Reshape, "shape", x, shape, 4, &x4));
  } else {
    return rope_err(&c, "X must be 3-D or 4-D");
  }
  const kiln_type *t4 = kiln_value_type(x4);
  int64_t b = t4->dims[0], s = t4->dims[1], d = t4->dims[3];
  int64_t rd = onnx_attr_int_or(n, "rotary_embedding_dim", 0);
  if (rd == 0)
    rd = d;
  if (rd < 0 || rd > d || rd % 2)
    return rope_err(&c, "rotary_embedding_dim must be even and at most the head size");
  int64_t half = rd / 2;
  bool inter = onnx_attr_int_or(n, "interleaved", 0) != 0;

  kiln_value *cs, *sn;
  KILN_TRY(rope_factor(&c, cosc, pos, b, s, half, &cs));
  KILN_TRY(rope_factor(&c, sinc, pos, b, s, half, &sn));

  kiln_value *rot = x4, *keep = NULL;
  if (rd < d) {
    KILN_TRY(rope_slice(&c, x4, 3, 0, rd, 1, &rot));
    KILN_TRY(rope_slice(&c, x4, 3, rd, d, 1, &keep));
  }
  kiln_value *x1, *x2;
  if (inter) {
    KILN_TRY(rope_slice(&c, rot, 3, 0, rd, 2, &x1));
    KILN_TRY(rope_slice(&c, rot, 3, 1, rd, 2, &x2));
  } else {
    KILN_TRY(rope_slice(&c, rot, 3, 0, half, 1, &x1));
    KILN_TRY(rope_slice(&c, rot, 3, half, rd, 1, &x2));
  }
  /* (x1 + i x2) * (cos + i sin) */
  kiln_value *a, *bb, *re, *im;
  KILN_TRY(onnx_expand_op(&c, KILN_NODE_Mul, cs, x1, NULL, 0, &a));
  KILN_TRY(onnx_expand_op(&c, KILN_NODE_Mul, sn, x2, NULL, 0, &bb));
  KILN_TRY(onnx_expand_op(&c, KILN_NODE_Sub, a, bb, NULL, 0, &re));
  KILN_TRY(onnx_expand_op(&c, KILN_NODE_Mul, sn, x1, NULL, 0, &a));
  KILN_TRY(onnx_expand_op(&c, KILN_NODE_Mul, cs, x2, NULL, 0, &bb));
  KILN_TRY(onnx_expand_op(&c, KILN_NODE_Add, a, bb, NULL, 0, &im));

  kiln_value *y;
  kiln_attr_desc last = KILN_ATTR_I("axis", -1);
  if (inter) {
    static const int64_t axis4[1] = {4};
    int64_t shape[4] = {b, s, t4->dims[2], rd};
    KILN_TRY(onnx_expand_ints(&c, KILN_NODE_Unsqueeze, "axes", re, axis4, 1, &re));
    KILN_TRY(onnx_expand_ints(&c, KILN_NODE_Unsqueeze, "axes", im, axis4, 1, &im));
    KILN_TRY(onnx_expand_op(&c, KILN_NODE_Concat, re, im, &last, 1, &y));
    KILN_TRY(onnx_expand_ints(&c, KILN_NODE_Reshape, "shape", y, shape, 4, &y));
  } else {
    KILN_TRY(onnx_expand_op(&c, KILN_NODE_Concat, re, im, &last, 1, &y));
  }
  if (keep)
    KILN_TRY(onnx_expand_op(&c, KILN_NODE_Concat, y, keep, &last, 1, &y));

  /* Back to the input's layout; the last node carries the ONNX output. */
  onnx_attr_list al = {0};
  kiln_status st;
  if (xt->rank == 4) {
    st = onnx_attrs_set_ints(&al, "perm", swap12, 4);
    if (!st)
      st = onnx_emit(L, n, KILN_NODE_Transpose, &y, 1, &al, 1);
  } else {
    st = onnx_attrs_set_ints(&al, "shape", xt->dims, xt->rank);
    if (!st)
      st = onnx_emit(L, n, KILN_NODE_Reshape, &y, 1, &al, 1);
  }
  onnx_attrs_free(&al);
  return st;
}
