/* onnx_ops_index.c: importer of OneHot, whose depth input must be known
 * at compile time and becomes an attribute. The other indexing kinds use
 * the plain row. */
#include "onnx_internal.h"

kiln_status onnx_imp_onehot(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  kiln_value *ins[2];
  KILN_TRY(onnx_input(L, n, 0, &ins[0]));
  KILN_TRY(onnx_input(L, n, 2, &ins[1]));
  if (!ins[0] || !ins[1])
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: indices or values missing",
                            L->file, onnx_node_desc(n));
  double depth = 0;
  KILN_TRY(onnx_scalar_input(L, n, 1, "depth", &depth, NULL));
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, NULL, &al);
  if (!s)
    s = onnx_attrs_set_int(&al, "depth", (int64_t)depth);
  if (!s)
    s = onnx_emit(L, n, op->kind, ins, 2, &al, 0);
  onnx_attrs_free(&al);
  return s;
}
