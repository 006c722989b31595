/* onnx_ops_common.c: what the per-family importers (onnx_ops_<family>.c)
 * share: the plain importer that most table rows use (one ONNX node onto
 * one kiln node, attributes as they are), binding an ONNX output to a
 * module constant, emitting the helper nodes of an expanded node
 * (onnx_expand), reading compile-time inputs as lists, and turning
 * compile-time inputs and type attributes into kiln attributes before
 * emitting the node. */
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

kiln_status onnx_bind_constant(onnx_loader *L, const Onnx__NodeProto *n, const kiln_type *t,
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

kiln_status onnx_emit_with_type_attr(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op,
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

kiln_status onnx_const_input_list(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                                  const char *name, int64_t **ints, double **floats,
                                  uint32_t *len) {
  onnx_cval c;
  KILN_TRY(onnx_const_input(L, n, i, name, &c));
  kiln_status s = ints ? onnx_cval_ints(&c, ints, len) : onnx_cval_floats(&c, floats, len);
  onnx_cval_release(&c);
  if (s)
    return kiln_status_wrap(s, "%s: node %s: input %u (%s)", L->file, onnx_node_desc(n), i, name);
  return NULL;
}

kiln_status onnx_expand_op(const onnx_expand *x, kiln_node_kind kind, kiln_value *a, kiln_value *b,
                           const kiln_attr_desc *attrs, uint32_t n_attrs, kiln_value **out) {
  return onnx_emit_value(x->L, x->n, kind, a, b, attrs, n_attrs, out);
}

kiln_status onnx_expand_ints(const onnx_expand *x, kiln_node_kind kind, const char *attr,
                             kiln_value *in, const int64_t *v, uint32_t len, kiln_value **out) {
  return onnx_emit_ints(x->L, x->n, kind, attr, in, v, len, out);
}

/* Read compile-time input i of n as an int list attribute `name`; absent
 * optional inputs add nothing. */
kiln_status onnx_ints_attr_from_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                                      const char *name, bool required, onnx_attr_list *al) {
  if (!onnx_input_present(n, i)) {
    if (required)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input %u (%s) is missing",
                              L->file, onnx_node_desc(n), i, name);
    return NULL;
  }
  int64_t *v;
  uint32_t len;
  KILN_TRY(onnx_const_input_list(L, n, i, name, &v, NULL, &len));
  kiln_status s = onnx_attrs_set_ints(al, name, v, len);
  free(v);
  return s;
}

/* A scalar compile-time input as a double. */
kiln_status onnx_scalar_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
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

kiln_status onnx_emit_filled(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op,
                             onnx_fill_fn fill, const char *const *skip, uint32_t n_results) {
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

/* Emit op->kind on the first n_data inputs, with the node's attributes
 * plus the compile-time inputs named in ct (index n_data + j is ct[j]; NULL
 * entries and absent optional inputs are skipped). */
kiln_status onnx_emit_const_inputs_as_attrs(onnx_loader *L, const Onnx__NodeProto *n,
                                            const onnx_op *op, uint32_t n_data,
                                            const char *const *ct, uint32_t n_ct) {
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
      s = onnx_ints_attr_from_input(L, n, n_data + j, ct[j], false, &al);
  if (!s)
    s = onnx_emit(L, n, op->kind, in, n_data, &al, 1);
  onnx_attrs_free(&al);
  return s;
}
