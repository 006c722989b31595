/* onnx_ops_shape.c: importers whose ONNX inputs must be known at compile
 * time (shapes, axes, counts, scales): they read those inputs as values and
 * pass them to kiln as attributes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* Read compile-time input i of n as an int list attribute `name`; absent
 * optional inputs add nothing. */
static kiln_status ints_from_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                                   const char *name, bool required, onnx_attr_list *al) {
  if (!onnx_input_present(n, i)) {
    if (required)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input %u (%s) is missing",
                              L->file, onnx_node_desc(n), i, name);
    return NULL;
  }
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

static kiln_status floats_from_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                                     const char *name, onnx_attr_list *al, bool *present) {
  *present = false;
  if (!onnx_input_present(n, i))
    return NULL;
  onnx_cval c;
  KILN_TRY(onnx_const_input(L, n, i, name, &c));
  double *v;
  uint32_t len;
  kiln_status s = onnx_cval_floats(&c, &v, &len);
  onnx_cval_release(&c);
  if (s)
    return kiln_status_wrap(s, "%s: node %s: input %u (%s)", L->file, onnx_node_desc(n), i, name);
  if (len) /* an empty tensor stands for an absent input (Resize) */
    s = onnx_attrs_set_floats(al, name, v, len);
  *present = len > 0;
  free(v);
  return s;
}

/* A scalar compile-time input as a double. */
static kiln_status scalar_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                                const char *role, double *out, kiln_elem *elem) {
  onnx_cval c;
  KILN_TRY(onnx_const_input(L, n, i, role, &c));
  if (kiln_type_numel(&c.t.type) != 1) {
    onnx_cval_release(&c);
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input %u (%s) must hold one value",
                            L->file, onnx_node_desc(n), i, role);
  }
  *out = kiln_elem_load_f64(c.t.type.elem, c.t.data, 0);
  if (elem)
    *elem = c.t.type.elem;
  onnx_cval_release(&c);
  return NULL;
}

/* Emit op->kind on input 0 with the node's attributes plus those that
 * `fill` adds from compile-time inputs. */
typedef kiln_status (*fill_fn)(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al);

static kiln_status emit_filled(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op,
                               fill_fn fill, const char *const *skip, uint32_t n_results) {
  kiln_value *x;
  KILN_TRY(onnx_input(L, n, 0, &x));
  if (!x)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input 0 is missing", L->file,
                            onnx_node_desc(n));
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, skip, &al);
  if (!s)
    s = fill(L, n, &al);
  if (!s)
    s = onnx_emit(L, n, op->kind, &x, 1, &al, n_results);
  onnx_attrs_free(&al);
  return s;
}

static kiln_status fill_reshape(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  return ints_from_input(L, n, 1, "shape", true, al);
}
kiln_status onnx_imp_reshape(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_filled(L, n, op, fill_reshape, NULL, 0);
}

static kiln_status fill_axes(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  return ints_from_input(L, n, 1, "axes", false, al);
}
kiln_status onnx_imp_axes_input(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_filled(L, n, op, fill_axes, NULL, 0);
}

static kiln_status fill_slice(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  KILN_TRY(ints_from_input(L, n, 1, "starts", true, al));
  KILN_TRY(ints_from_input(L, n, 2, "ends", true, al));
  KILN_TRY(ints_from_input(L, n, 3, "axes", false, al));
  return ints_from_input(L, n, 4, "steps", false, al);
}
kiln_status onnx_imp_slice(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_filled(L, n, op, fill_slice, NULL, 0);
}

static kiln_status fill_pad(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  KILN_TRY(ints_from_input(L, n, 1, "pads", true, al));
  if (onnx_input_present(n, 2)) {
    double v = 0;
    KILN_TRY(scalar_input(L, n, 2, "constant_value", &v, NULL));
    KILN_TRY(onnx_attrs_set_float(al, "value", v));
  }
  return ints_from_input(L, n, 3, "axes", false, al);
}
kiln_status onnx_imp_pad(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_filled(L, n, op, fill_pad, NULL, 0);
}

static kiln_status fill_split(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  if (L->opset >= 13)
    KILN_TRY(ints_from_input(L, n, 1, "split", false, al));
  if (!onnx_attrs_has(al, "split") && !onnx_attrs_has(al, "num_outputs"))
    KILN_TRY(onnx_attrs_set_int(al, "num_outputs", (int64_t)n->n_output));
  return NULL;
}
kiln_status onnx_imp_split(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  if (n->n_output < 1 || n->n_output > 64)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s has %zu outputs (1 to 64)", L->file,
                            onnx_node_desc(n), n->n_output);
  return emit_filled(L, n, op, fill_split, NULL, (uint32_t)n->n_output);
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
  KILN_TRY(scalar_input(L, n, 1, name, &v, NULL));
  return onnx_attrs_set_int(al, name, onnx_f64_to_i64(v));
}
kiln_status onnx_imp_int_input(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_filled(L, n, op, fill_int_input, NULL, 0);
}
kiln_status onnx_imp_topk(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_filled(L, n, op, fill_int_input, NULL, 0);
}

static kiln_status fill_expand_tile(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al) {
  return ints_from_input(L, n, 1, !strcmp(n->op_type, "Tile") ? "repeats" : "shape", true, al);
}
kiln_status onnx_imp_expand_tile(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_filled(L, n, op, fill_expand_tile, NULL, 0);
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
    KILN_TRY(ints_from_input(L, n, 3, "sizes", true, al));
  return NULL;
}
kiln_status onnx_imp_resize(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_filled(L, n, op, fill_resize, NULL, 0);
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
  return emit_filled(L, n, op, fill_upsample, NULL, 0);
}

kiln_status onnx_imp_constant_of_shape(onnx_loader *L, const Onnx__NodeProto *n,
                                       const onnx_op *op) {
  onnx_attr_list al = {0};
  kiln_status s = ints_from_input(L, n, 0, "shape", true, &al);
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
    s = scalar_input(L, n, i, names[i], &v, &e);
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

kiln_status onnx_imp_onehot(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  kiln_value *ins[2];
  KILN_TRY(onnx_input(L, n, 0, &ins[0]));
  KILN_TRY(onnx_input(L, n, 2, &ins[1]));
  if (!ins[0] || !ins[1])
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: indices or values missing",
                            L->file, onnx_node_desc(n));
  double depth = 0;
  KILN_TRY(scalar_input(L, n, 1, "depth", &depth, NULL));
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, NULL, &al);
  if (!s)
    s = onnx_attrs_set_int(&al, "depth", (int64_t)depth);
  if (!s)
    s = onnx_emit(L, n, op->kind, ins, 2, &al, 0);
  onnx_attrs_free(&al);
  return s;
}

/* HannWindow, HammingWindow, BlackmanWindow: the size input (known at
 * compile time) becomes the `size` attribute. */
kiln_status onnx_imp_window(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  double size = 0;
  KILN_TRY(scalar_input(L, n, 0, "size", &size, NULL));
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, NULL, &al);
  if (!s)
    s = onnx_attrs_set_int(&al, "size", (int64_t)size);
  if (!s)
    s = onnx_emit(L, n, op->kind, NULL, 0, &al, 0);
  onnx_attrs_free(&al);
  return s;
}
