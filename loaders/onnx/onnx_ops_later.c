/* onnx_ops_later.c: importers of GroupNormalization (opset 18's per-group
 * scale and bias become opset 21's per-channel ones), and of CenterCropPad,
 * MaxUnpool and Col2Im, whose shape inputs must be known at compile time
 * and become attributes. */
#include <stdlib.h>

#include "onnx_ops_later.h"

/* Compile-time input i of n as the int list attribute `name`. */
static kiln_status later_ints_attr(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                                   const char *name, onnx_attr_list *al) {
  onnx_cval c;
  KILN_TRY(onnx_const_input(L, n, i, name, &c));
  int64_t *v;
  uint32_t len;
  kiln_status s = onnx_cval_ints(&c, &v, &len);
  onnx_cval_release(&c);
  if (s)
    return kiln_status_wrap(s, "%s: node %s: input %u (%s)", L->file, onnx_node_desc(n), i, name);
  s = onnx_attrs_set_ints(al, name, v, len);
  free(v);
  return s;
}

/* Emit op->kind on the first n_data inputs, with the node's attributes
 * plus the compile-time inputs named in ct (index n_data + j is ct[j]; NULL
 * entries and absent optional inputs are skipped). */
static kiln_status later_emit(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op,
                              uint32_t n_data, const char *const *ct, uint32_t n_ct) {
  kiln_value *in[4] = {0};
  for (uint32_t i = 0; i < n_data; i++) {
    KILN_TRY(onnx_input(L, n, i, &in[i]));
    if (!in[i])
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input %u is missing", L->file,
                              onnx_node_desc(n), i);
  }
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, NULL, &al);
  for (uint32_t j = 0; !s && j < n_ct; j++)
    if (ct[j] && onnx_input_present(n, n_data + j))
      s = later_ints_attr(L, n, n_data + j, ct[j], &al);
  if (!s)
    s = onnx_emit(L, n, op->kind, in, n_data, &al, 1);
  onnx_attrs_free(&al);
  return s;
}

kiln_status onnx_imp_center_crop_pad(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  static const char *const ct[] = {"shape"};
  if (!onnx_input_present(n, 1))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input 1 (shape) is missing",
                            L->file, onnx_node_desc(n));
  return later_emit(L, n, op, 1, ct, 1);
}

kiln_status onnx_imp_maxunpool(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  static const char *const ct[] = {"output_shape"};
  return later_emit(L, n, op, 2, ct, 1);
}

kiln_status onnx_imp_col2im(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  static const char *const ct[] = {"image_shape", "block_shape"};
  for (uint32_t i = 1; i < 3; i++)
    if (!onnx_input_present(n, i))
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input %u (%s) is missing",
                              L->file, onnx_node_desc(n), i, ct[i - 1]);
  return later_emit(L, n, op, 1, ct, 2);
}

/* Opset 18 gives scale and bias per group: repeat each entry C/G times
 * (Reshape [G,1], Expand [G,C/G], Reshape [C]) to get opset 21's form. */
static kiln_status later_per_channel(onnx_loader *L, const Onnx__NodeProto *n, kiln_value *v,
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
    KILN_TRY(later_per_channel(L, n, in[i], groups, x->dims[1], &in[i]));
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, NULL, &al);
  if (!s)
    s = onnx_emit(L, n, op->kind, in, 3, &al, 1);
  onnx_attrs_free(&al);
  return s;
}
