/* onnx_ops_generator.c: importers of the ONNX operators that make a
 * tensor from attributes and compile-time inputs: Constant (a module
 * constant, no node), ConstantOfShape, EyeLike, Range and the windows
 * (Hann, Hamming, Blackman), whose shapes, bounds and sizes become
 * attributes. */
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

kiln_status onnx_imp_constant(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  (void)op;
  if (n->n_attribute != 1)
    return kiln_status_make(KILN_PARSE_ERROR, "%s: node %s needs exactly one value attribute",
                            L->file, onnx_node_desc(n));
  const Onnx__AttributeProto *a = n->attribute[0];
  const char *an = a->name ? a->name : "";
  kiln_type t;
  if (!strcmp(an, "value") && a->t) {
    char what[320];
    snprintf(what, sizeof what, "%s: node %s", L->file, onnx_node_desc(n));
    kiln_tensor kt;
    KILN_TRY(onnx_tensor_from_proto(a->t, L->base_dir, what, &kt));
    kiln_status s = onnx_bind_constant(L, n, &kt.type, kt.data);
    kiln_tensor_free(&kt);
    return s;
  }
  if (!strcmp(an, "value_float") || !strcmp(an, "value_int")) {
    bool f = an[6] == 'f';
    KILN_TRY(kiln_type_make(f ? KILN_F32 : KILN_I64, 0, NULL, &t));
    float fv = a->f;
    int64_t iv = a->i;
    return onnx_bind_constant(L, n, &t, f ? (const void *)&fv : (const void *)&iv);
  }
  if (!strcmp(an, "value_floats")) {
    int64_t d = (int64_t)a->n_floats;
    KILN_TRY(kiln_type_make(KILN_F32, 1, &d, &t));
    return onnx_bind_constant(L, n, &t, a->floats);
  }
  if (!strcmp(an, "value_ints")) {
    int64_t d = (int64_t)a->n_ints;
    KILN_TRY(kiln_type_make(KILN_I64, 1, &d, &t));
    return onnx_bind_constant(L, n, &t, a->ints);
  }
  if (!strcmp(an, "value_string") || !strcmp(an, "value_strings") || !strcmp(an, "sparse_value"))
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: node %s: %s constants are not supported",
                            L->file, onnx_node_desc(n), an[0] == 's' ? "sparse tensor" : "string");
  return kiln_status_make(KILN_PARSE_ERROR, "%s: node %s: unknown or empty attribute '%s'", L->file,
                          onnx_node_desc(n), an);
}

kiln_status onnx_imp_eyelike(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_with_type_attr(L, n, op, "dtype", false);
}

kiln_status onnx_imp_constant_of_shape(onnx_loader *L, const Onnx__NodeProto *n,
                                       const onnx_op *op) {
  onnx_attr_list al = {0};
  kiln_status s = onnx_ints_attr_from_input(L, n, 0, "shape", true, &al);
  const Onnx__AttributeProto *a = onnx_node_attr(n, "value");
  if (!s && a && a->t) {
    char what[320];
    snprintf(what, sizeof what, "%s: node %s: attribute 'value'", L->file, onnx_node_desc(n));
    kiln_tensor kt;
    s = onnx_tensor_from_proto(a->t, L->base_dir, what, &kt);
    if (!s) {
      if (kiln_type_numel(&kt.type) != 1)
        s = kiln_status_make(KILN_INVALID_ARGUMENT, "%s must hold one value", what);
      else {
        s = onnx_attrs_set_float(&al, "value", kiln_elem_load_f64(kt.type.elem, kt.data, 0));
        if (!s)
          s = onnx_attrs_set_type(&al, "dtype", kt.type.elem);
      }
      kiln_tensor_free(&kt);
    }
  }
  if (!s)
    s = onnx_emit(L, n, op->kind, NULL, 0, &al, 0);
  onnx_attrs_free(&al);
  return s;
}

kiln_status onnx_imp_range(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  static const char *const names[] = {"start", "limit", "delta"};
  onnx_attr_list al = {0};
  kiln_status s = NULL;
  kiln_elem e = KILN_F32;
  for (uint32_t i = 0; i < 3 && !s; i++) {
    double v = 0;
    s = onnx_scalar_input(L, n, i, names[i], &v, &e);
    if (!s)
      s = onnx_attrs_set_float(&al, names[i], v);
  }
  if (!s)
    s = onnx_attrs_set_type(&al, "dtype", e);
  if (!s)
    s = onnx_emit(L, n, op->kind, NULL, 0, &al, 0);
  onnx_attrs_free(&al);
  return s;
}

/* HannWindow, HammingWindow, BlackmanWindow: the size input (known at
 * compile time) becomes the `size` attribute. */
kiln_status onnx_imp_window(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  double size = 0;
  KILN_TRY(onnx_scalar_input(L, n, 0, "size", &size, NULL));
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, NULL, &al);
  if (!s)
    s = onnx_attrs_set_int(&al, "size", (int64_t)size);
  if (!s)
    s = onnx_emit(L, n, op->kind, NULL, 0, &al, 0);
  onnx_attrs_free(&al);
  return s;
}
