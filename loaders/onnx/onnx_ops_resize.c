/* onnx_ops_resize.c: importers of Resize (opset 10 on) and Upsample
 * (opsets 7 to 9), whose roi, scales and sizes inputs must be known at
 * compile time and become attributes. */
#include <stdlib.h>

#include "onnx_internal.h"

static kiln_status floats_from_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                                     const char *name, onnx_attr_list *al, bool *present) {
  *present = false;
  if (!onnx_input_present(n, i))
    return NULL;
  double *v;
  uint32_t len;
  KILN_TRY(onnx_const_input_list(L, n, i, name, NULL, &v, &len));
  kiln_status s = NULL;
  if (len) /* an empty tensor stands for an absent input (Resize) */
    s = onnx_attrs_set_floats(al, name, v, len);
  *present = len > 0;
  free(v);
  return s;
}

static kiln_status fill_resize(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  bool present;
  if (L->opset < 11) {
    /* Opset 10: (X, scales); nearest sampling in asymmetric coordinates. */
    KILN_TRY(floats_from_input(L, n, 1, "scales", al, &present));
    KILN_TRY(onnx_attrs_set_string(al, "coordinate_transformation_mode", "asymmetric"));
    return onnx_attrs_set_string(al, "nearest_mode", "floor");
  }
  KILN_TRY(floats_from_input(L, n, 1, "roi", al, &present));
  KILN_TRY(floats_from_input(L, n, 2, "scales", al, &present));
  if (!present && onnx_input_present(n, 3))
    KILN_TRY(onnx_ints_attr_from_input(L, n, 3, "sizes", true, al));
  return NULL;
}
kiln_status onnx_imp_resize(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_filled(L, n, op, fill_resize, NULL, 0);
}

static kiln_status fill_upsample(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  bool present = false;
  if (onnx_input_present(n, 1))
    KILN_TRY(floats_from_input(L, n, 1, "scales", al, &present));
  if (!onnx_attrs_has(al, "scales"))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: scales are missing", L->file,
                            onnx_node_desc(n));
  return NULL;
}
kiln_status onnx_imp_upsample(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_filled(L, n, op, fill_upsample, NULL, 0);
}
