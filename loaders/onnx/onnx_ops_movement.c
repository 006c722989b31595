/* onnx_ops_movement.c: importers of data-movement kinds. Shape and Size
 * become module constants (shapes are static in kiln); Reshape, Slice,
 * Pad, Split, Expand, Tile and CenterCropPad take shapes, starts, pads or
 * counts from inputs that must be known at compile time and pass them as
 * attributes; Pad before opset 11 renames its attribute. Squeeze /
 * Unsqueeze and Trilu use the generic importers in onnx_ops_reduce.c. */
#include <string.h>

#include "onnx_internal.h"

kiln_status onnx_imp_shape(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  (void)op;
  kiln_value *x;
  KILN_TRY(onnx_input(L, n, 0, &x));
  if (!x)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s has no input", L->file,
                            onnx_node_desc(n));
  /* Shapes are static in kiln: the result is a constant, which lets Shape ->
   * Gather -> Concat chains feed compile-time inputs. */
  const kiln_type *xt = kiln_value_type(x);
  int64_t r = xt->rank;
  int64_t start = onnx_attr_int_or(n, "start", 0), end = onnx_attr_int_or(n, "end", r);
  if (start < 0)
    start += r;
  if (end < 0)
    end += r;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t len = end > start ? end - start : 0;
  kiln_type t;
  KILN_TRY(kiln_type_make(KILN_I64, 1, &len, &t));
  return onnx_bind_constant(L, n, &t, xt->dims + start);
}

kiln_status onnx_imp_size(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  (void)op;
  kiln_value *x;
  KILN_TRY(onnx_input(L, n, 0, &x));
  if (!x)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s has no input", L->file,
                            onnx_node_desc(n));
  int64_t numel = kiln_type_numel(kiln_value_type(x));
  kiln_type t;
  KILN_TRY(kiln_type_make(KILN_I64, 0, NULL, &t));
  return onnx_bind_constant(L, n, &t, &numel);
}

static kiln_status fill_reshape(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  return onnx_ints_attr_from_input(L, n, 1, "shape", true, al);
}
kiln_status onnx_imp_reshape(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_filled(L, n, op, fill_reshape, NULL, 0);
}

static kiln_status fill_slice(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  KILN_TRY(onnx_ints_attr_from_input(L, n, 1, "starts", true, al));
  KILN_TRY(onnx_ints_attr_from_input(L, n, 2, "ends", true, al));
  KILN_TRY(onnx_ints_attr_from_input(L, n, 3, "axes", false, al));
  return onnx_ints_attr_from_input(L, n, 4, "steps", false, al);
}
kiln_status onnx_imp_slice(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_filled(L, n, op, fill_slice, NULL, 0);
}

static kiln_status fill_pad(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  KILN_TRY(onnx_ints_attr_from_input(L, n, 1, "pads", true, al));
  if (onnx_input_present(n, 2)) {
    double v = 0;
    KILN_TRY(onnx_scalar_input(L, n, 2, "constant_value", &v, NULL));
    KILN_TRY(onnx_attrs_set_float(al, "value", v));
  }
  return onnx_ints_attr_from_input(L, n, 3, "axes", false, al);
}
kiln_status onnx_imp_pad(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_filled(L, n, op, fill_pad, NULL, 0);
}

/* Pad before opset 11: pads (opset 1: paddings), mode, value attributes. */
kiln_status onnx_imp_pad_old(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  kiln_value *x;
  KILN_TRY(onnx_input(L, n, 0, &x));
  static const char *const skip[] = {"paddings", NULL};
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, skip, &al);
  const Onnx__AttributeProto *p = onnx_node_attr(n, "paddings");
  if (!s && p && !onnx_attrs_has(&al, "pads"))
    s = onnx_attrs_set_ints(&al, "pads", p->ints, (uint32_t)p->n_ints);
  if (!s)
    s = onnx_emit(L, n, op->kind, &x, 1, &al, 0);
  onnx_attrs_free(&al);
  return s;
}

static kiln_status fill_split(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  if (L->opset >= 13)
    KILN_TRY(onnx_ints_attr_from_input(L, n, 1, "split", false, al));
  if (!onnx_attrs_has(al, "split") && !onnx_attrs_has(al, "num_outputs"))
    KILN_TRY(onnx_attrs_set_int(al, "num_outputs", (int64_t)n->n_output));
  return NULL;
}
kiln_status onnx_imp_split(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  if (n->n_output < 1 || n->n_output > 64)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s has %zu outputs (1 to 64)", L->file,
                            onnx_node_desc(n), n->n_output);
  return onnx_emit_filled(L, n, op, fill_split, NULL, (uint32_t)n->n_output);
}

static kiln_status fill_expand_tile(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  return onnx_ints_attr_from_input(L, n, 1, !strcmp(n->op_type, "Tile") ? "repeats" : "shape", true,
                                   al);
}
kiln_status onnx_imp_expand_tile(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_filled(L, n, op, fill_expand_tile, NULL, 0);
}

kiln_status onnx_imp_center_crop_pad(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  static const char *const ct[] = {"shape"};
  if (!onnx_input_present(n, 1))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input 1 (shape) is missing",
                            L->file, onnx_node_desc(n));
  return onnx_emit_const_inputs_as_attrs(L, n, op, 1, ct, 1);
}
