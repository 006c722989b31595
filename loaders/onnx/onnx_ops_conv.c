/* onnx_ops_conv.c: importers of Conv, whose inputs ONNX limits to X, W
 * and B (kiln's Conv has a fourth, the residual that the fusebias pass
 * folds in, which no model may supply), and of Col2Im, whose image_shape
 * and block_shape inputs must be known at compile time and become
 * attributes. ConvTranspose uses the plain row. */
#include "onnx_internal.h"

kiln_status onnx_imp_conv(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  if (n->n_input > 3)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: node %s: Conv takes at most 3 inputs (X, W, B), not %zu", L->file,
                            onnx_node_desc(n), n->n_input);
  return onnx_imp_plain(L, n, op);
}

kiln_status onnx_imp_col2im(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  static const char *const ct[] = {"image_shape", "block_shape"};
  for (uint32_t i = 1; i < 3; i++)
    if (!onnx_input_present(n, i))
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input %u (%s) is missing",
                              L->file, onnx_node_desc(n), i, ct[i - 1]);
  return onnx_emit_const_inputs_as_attrs(L, n, op, 1, ct, 2);
}
