/* onnx_ops_norm.c: importers of normalization kinds that need more than
 * the plain row: BatchNormalization (training outputs refused, inference
 * attributes only), Softmax / LogSoftmax / Hardmax before opset 13 (2-D
 * flattening semantics), and GroupNormalization opset 18 (per-group scale
 * and bias become opset 21's per-channel ones). */
#include "onnx_internal.h"

kiln_status onnx_imp_batchnorm(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  if (n->n_output > 1 || onnx_attr_int_or(n, "training_mode", 0) != 0)
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "%s: node %s: BatchNormalization training outputs (running mean/var) "
                            "are not supported",
                            L->file, onnx_node_desc(n));
  if (onnx_attr_int_or(n, "spatial", 1) != 1)
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "%s: node %s: BatchNormalization with spatial=0 is not supported",
                            L->file, onnx_node_desc(n));
  kiln_value *ins[5];
  for (uint32_t i = 0; i < 5; i++) {
    KILN_TRY(onnx_input(L, n, i, &ins[i]));
    if (!ins[i])
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input %u is missing", L->file,
                              onnx_node_desc(n), i);
  }
  static const char *const skip[] = {"momentum", "spatial", "training_mode", "is_test", NULL};
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, skip, &al);
  if (!s)
    s = onnx_emit(L, n, op->kind, ins, 5, &al, 1);
  onnx_attrs_free(&al);
  return s;
}

/* Softmax, LogSoftmax, Hardmax before opset 13 work on the input flattened
 * to 2-D at `axis` (default 1): flatten, normalize the last axis, reshape
 * back. When axis is already the last one the two meanings agree. */
kiln_status onnx_imp_softmax_old(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  kiln_value *x;
  KILN_TRY(onnx_input(L, n, 0, &x));
  if (!x)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input 0 is missing", L->file,
                            onnx_node_desc(n));
  const kiln_type *xt = kiln_value_type(x);
  int64_t r = xt->rank, axis = onnx_attr_int_or(n, "axis", 1);
  if (axis < 0)
    axis += r;
  if (axis < 0 || axis > r || (r > 0 && axis == r))
    return kiln_status_make(
        KILN_INVALID_ARGUMENT, "%s: node %s: axis %lld out of range for rank %lld", L->file,
        onnx_node_desc(n), (long long)onnx_attr_int_or(n, "axis", 1), (long long)r);
  onnx_attr_list al = {0};
  kiln_status s;
  if (r == 0 || axis == r - 1) {
    s = onnx_attrs_set_int(&al, "axis", -1);
    if (!s)
      s = onnx_emit(L, n, op->kind, &x, 1, &al, 0);
    onnx_attrs_free(&al);
    return s;
  }
  kiln_node *flat, *norm;
  kiln_attr_desc fa = KILN_ATTR_I("axis", axis);
  KILN_TRY(onnx_emit_helper(L, n, KILN_NODE_Flatten, &x, 1, &fa, 1, &flat));
  kiln_value *fv = kiln_node_result(flat, 0);
  kiln_attr_desc sa = KILN_ATTR_I("axis", 1);
  KILN_TRY(onnx_emit_helper(L, n, op->kind, &fv, 1, &sa, 1, &norm));
  kiln_value *nv = kiln_node_result(norm, 0);
  s = onnx_attrs_set_ints(&al, "shape", xt->dims, xt->rank);
  if (!s)
    s = onnx_emit(L, n, KILN_NODE_Reshape, &nv, 1, &al, 0);
  onnx_attrs_free(&al);
  return s;
}

/* Opset 18 gives scale and bias per group: repeat each entry C/G times
 * (Reshape [G,1], Expand [G,C/G], Reshape [C]) to get opset 21's form. */
static kiln_status groupnorm_per_channel(onnx_loader *L, const Onnx__NodeProto *n, kiln_value *v,
                                         int64_t groups, int64_t channels, kiln_value **out) {
  const kiln_type *t = kiln_value_type(v);
  if (t->rank != 1 || t->dims[0] != groups)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: node %s: opset-18 GroupNormalization scale and bias must have "
                            "num_groups = %lld entries",
                            L->file, onnx_node_desc(n), (long long)groups);
  if (channels % groups)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: node %s: num_groups = %lld does not divide the %lld channels",
                            L->file, onnx_node_desc(n), (long long)groups, (long long)channels);
  int64_t col[2] = {groups, 1}, wide[2] = {groups, channels / groups};
  kiln_attr_desc a1[1] = {KILN_ATTR_IS("shape", col, 2)};
  kiln_attr_desc a2[1] = {KILN_ATTR_IS("shape", wide, 2)};
  kiln_attr_desc a3[1] = {KILN_ATTR_IS("shape", &channels, 1)};
  kiln_node *r;
  KILN_TRY(onnx_emit_helper(L, n, KILN_NODE_Reshape, &v, 1, a1, 1, &r));
  v = kiln_node_result(r, 0);
  KILN_TRY(onnx_emit_helper(L, n, KILN_NODE_Expand, &v, 1, a2, 1, &r));
  v = kiln_node_result(r, 0);
  KILN_TRY(onnx_emit_helper(L, n, KILN_NODE_Reshape, &v, 1, a3, 1, &r));
  *out = kiln_node_result(r, 0);
  return NULL;
}

kiln_status onnx_imp_groupnorm_18(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  kiln_value *in[3];
  for (uint32_t i = 0; i < 3; i++) {
    KILN_TRY(onnx_input(L, n, i, &in[i]));
    if (!in[i])
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input %u is missing", L->file,
                              onnx_node_desc(n), i);
  }
  const kiln_type *x = kiln_value_type(in[0]);
  int64_t groups = onnx_attr_int_or(n, "num_groups", 0);
  if (x->rank < 2 || groups <= 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: node %s: needs input 0 of rank >= 2 and a positive num_groups",
                            L->file, onnx_node_desc(n));
  for (uint32_t i = 1; i < 3; i++)
    KILN_TRY(groupnorm_per_channel(L, n, in[i], groups, x->dims[1], &in[i]));
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, NULL, &al);
  if (!s)
    s = onnx_emit(L, n, op->kind, in, 3, &al, 1);
  onnx_attrs_free(&al);
  return s;
}
