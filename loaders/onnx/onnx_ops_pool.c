/* onnx_ops_pool.c: importer of MaxUnpool, whose optional output_shape
 * input must be known at compile time and becomes an attribute. The other
 * pooling kinds use the plain row. */
#include "onnx_internal.h"

kiln_status onnx_imp_maxunpool(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  static const char *const ct[] = {"output_shape"};
  return onnx_emit_const_inputs_as_attrs(L, n, op, 2, ct, 1);
}
