/* onnx_ops_basic.c: importers that map an ONNX node onto one kiln node with
 * its attributes (plain), or onto module constants (Constant, Shape, Size),
 * and those with small attribute conversions (Cast, EyeLike, Dropout,
 * BatchNormalization). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* Collect the data inputs of n (absent ones NULL), dropping trailing
 * absent ones and any position whose bit is set in `skip_mask`. */
static kiln_status gather_inputs(onnx_loader *L, const Onnx__NodeProto *n, uint32_t skip_mask,
                                 uint32_t limit, kiln_value **ins, uint32_t *n_ins) {
  uint32_t k = 0, last = 0;
  if (n->n_input > 64)
    return kiln_status_make(KILN_OUT_OF_RANGE, "%s: node %s has %zu inputs (at most 64)", L->file,
                            onnx_node_desc(n), n->n_input);
  for (uint32_t i = 0; i < n->n_input && i < limit; i++) {
    if (i < 32 && (skip_mask >> i) & 1)
      continue;
    KILN_TRY(onnx_input(L, n, i, &ins[k]));
    k++;
    if (ins[k - 1])
      last = k;
  }
  *n_ins = last;
  return NULL;
}

kiln_status onnx_imp_plain(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  kiln_value *ins[64];
  uint32_t n_ins = 0;
  KILN_TRY(gather_inputs(L, n, 0, 64, ins, &n_ins));
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, NULL, &al);
  if (!s)
    s = onnx_emit(L, n, op->kind, ins, n_ins, &al, 0);
  onnx_attrs_free(&al);
  return s;
}

/* Shared by importers that keep input 0 only and add attributes. */
kiln_status onnx_imp_identity_like(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  kiln_value *x;
  KILN_TRY(onnx_input(L, n, 0, &x));
  return onnx_emit(L, n, op->kind, &x, 1, NULL, 0);
}

static kiln_status bind_constant(onnx_loader *L, const Onnx__NodeProto *n, const kiln_type *t,
                                 const void *data) {
  if (n->n_output < 1 || !n->output[0][0])
    return kiln_status_make(KILN_PARSE_ERROR, "%s: node %s has no output", L->file,
                            onnx_node_desc(n));
  if (onnx_map_find(L, n->output[0]) || kiln_module_find_value(L->m, n->output[0]))
    return kiln_status_make(KILN_PARSE_ERROR, "%s: node %s: output '%s' is defined twice", L->file,
                            onnx_node_desc(n), n->output[0]);
  kiln_value *v;
  KILN_TRY_CTX(kiln_module_add_constant(L->m, n->output[0], t, data, &v), "%s: node %s", L->file,
               onnx_node_desc(n));
  return onnx_map_put(L, n->output[0], v, -1);
}

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
    kiln_status s = bind_constant(L, n, &kt.type, kt.data);
    kiln_tensor_free(&kt);
    return s;
  }
  if (!strcmp(an, "value_float") || !strcmp(an, "value_int")) {
    bool f = an[6] == 'f';
    KILN_TRY(kiln_type_make(f ? KILN_F32 : KILN_I64, 0, NULL, &t));
    float fv = a->f;
    int64_t iv = a->i;
    return bind_constant(L, n, &t, f ? (const void *)&fv : (const void *)&iv);
  }
  if (!strcmp(an, "value_floats")) {
    int64_t d = (int64_t)a->n_floats;
    KILN_TRY(kiln_type_make(KILN_F32, 1, &d, &t));
    return bind_constant(L, n, &t, a->floats);
  }
  if (!strcmp(an, "value_ints")) {
    int64_t d = (int64_t)a->n_ints;
    KILN_TRY(kiln_type_make(KILN_I64, 1, &d, &t));
    return bind_constant(L, n, &t, a->ints);
  }
  if (!strcmp(an, "value_string") || !strcmp(an, "value_strings") || !strcmp(an, "sparse_value"))
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: node %s: %s constants are not supported",
                            L->file, onnx_node_desc(n), an[0] == 's' ? "sparse tensor" : "string");
  return kiln_status_make(KILN_PARSE_ERROR, "%s: node %s: unknown or empty attribute '%s'", L->file,
                          onnx_node_desc(n), an);
}

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
  return bind_constant(L, n, &t, xt->dims + start);
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
  return bind_constant(L, n, &t, &numel);
}

static kiln_status type_attr(onnx_loader *L, const Onnx__NodeProto *n, const char *name,
                             onnx_attr_list *al, bool required) {
  const Onnx__AttributeProto *a = onnx_node_attr(n, name);
  if (!a) {
    if (required)
      return kiln_status_make(KILN_PARSE_ERROR, "%s: node %s: attribute '%s' is missing", L->file,
                              onnx_node_desc(n), name);
    return NULL;
  }
  char what[320];
  snprintf(what, sizeof what, "%s: node %s: attribute '%s'", L->file, onnx_node_desc(n), name);
  kiln_elem e;
  KILN_TRY(onnx_elem_from_dtype((int32_t)a->i, what, &e));
  return onnx_attrs_set_type(al, name, e);
}

static kiln_status emit_with_type(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op,
                                  const char *attr, bool required) {
  kiln_value *x;
  KILN_TRY(onnx_input(L, n, 0, &x));
  const char *skip[] = {attr, NULL};
  onnx_attr_list al = {0};
  kiln_status s = onnx_attrs_from_node(L, n, skip, &al);
  if (!s)
    s = type_attr(L, n, attr, &al, required);
  if (!s)
    s = onnx_emit(L, n, op->kind, &x, 1, &al, 0);
  onnx_attrs_free(&al);
  return s;
}

kiln_status onnx_imp_cast(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_with_type(L, n, op, "to", true);
}

kiln_status onnx_imp_eyelike(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return emit_with_type(L, n, op, "dtype", false);
}

kiln_status onnx_imp_dropout(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  if (onnx_input_present(n, 2)) {
    onnx_cval c;
    KILN_TRY(onnx_const_input(L, n, 2, "training_mode", &c));
    bool training = kiln_type_numel(&c.t.type) > 0 && kiln_elem_load_f64(c.t.type.elem, c.t.data, 0);
    onnx_cval_release(&c);
    if (training)
      return kiln_status_make(KILN_UNIMPLEMENTED,
                              "%s: node %s: training-mode Dropout (random masks) is not supported",
                              L->file, onnx_node_desc(n));
  }
  if (onnx_attr_int_or(n, "is_test", 1) == 0 && L->opset < 7)
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: node %s: training-mode Dropout (is_test=0)",
                            L->file, onnx_node_desc(n));
  kiln_value *x;
  KILN_TRY(onnx_input(L, n, 0, &x));
  return onnx_emit(L, n, op->kind, &x, 1, NULL, 0);
}

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
