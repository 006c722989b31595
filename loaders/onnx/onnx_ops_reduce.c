/* onnx_ops_reduce.c: importers of reduce kinds whose parameters became
 * compile-time inputs: Reduce* (axes, opset 13 / 18 on), CumSum (axis) and
 * TopK (k). The same two generic importers serve Squeeze / Unsqueeze
 * (axes input) and Trilu (k input) of the movement family, which differ
 * only in the attribute name. */
#include <string.h>

#include "onnx_internal.h"

static kiln_status fill_axes(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  return onnx_ints_attr_from_input(L, n, 1, "axes", false, al);
}
kiln_status onnx_imp_axes_input(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_filled(L, n, op, fill_axes, NULL, 0);
}

static kiln_status fill_int_input(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  const char *name = !strcmp(n->op_type, "CumSum") ? "axis" : "k";
  if (!onnx_input_present(n, 1)) {
    if (!strcmp(n->op_type, "Trilu"))
      return NULL;
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input 1 (%s) is missing", L->file,
                            onnx_node_desc(n), name);
  }
  double v = 0;
  KILN_TRY(onnx_scalar_input(L, n, 1, name, &v, NULL));
  return onnx_attrs_set_int(al, name, onnx_f64_to_i64(v));
}
kiln_status onnx_imp_int_input(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_filled(L, n, op, fill_int_input, NULL, 0);
}
