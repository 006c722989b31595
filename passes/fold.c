/* passes/fold.c: constant folding. A node whose inputs are all constants
 * becomes constants. Data movement that shape computations are made of
 * (Shape, Size, reshapes, Concat, Gather, Transpose, Identity) is folded here
 * without help, so Shape -> Gather -> Concat chains fold even with no
 * evaluator; everything else goes through the evaluator in the options. */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"

static bool all_inputs_constant(const kiln_node *n) {
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
    kiln_value *v = kiln_node_input(n, i);
    if (v && kiln_value_get_kind(v) != KILN_VALUE_CONSTANT)
      return false;
  }
  return true;
}

static void fold_concat(const kiln_node *n, const kiln_type *ot, unsigned char *out) {
  int64_t axis = kiln_attrs_int_or(kiln_node_attrs(n), "axis", 0);
  if (axis < 0)
    axis += ot->rank;
  size_t es = kiln_elem_size(ot->elem);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; d++)
    outer *= ot->dims[d];
  for (int64_t o = 0; o < outer; o++)
    for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
      const kiln_value *v = kiln_node_input(n, i);
      const kiln_type *t = kiln_value_type(v);
      int64_t block = 1;
      for (uint32_t d = (uint32_t)axis; d < t->rank; d++)
        block *= t->dims[d];
      size_t bytes = (size_t)block * es;
      memcpy(out, (const unsigned char *)kiln_value_data(v) + (size_t)o * bytes, bytes);
      out += bytes;
    }
}

/* False when an index is out of range (left for the runtime to report). */
static bool fold_gather(const kiln_node *n, unsigned char *out) {
  const kiln_value *data = kiln_node_input(n, 0), *idx = kiln_node_input(n, 1);
  const kiln_type *dt = kiln_value_type(data), *it = kiln_value_type(idx);
  if (it->elem != KILN_I64 && it->elem != KILN_I32)
    return false;
  int64_t axis = kiln_attrs_int_or(kiln_node_attrs(n), "axis", 0);
  if (axis < 0)
    axis += dt->rank;
  if (axis < 0 || axis >= (int64_t)dt->rank)
    return false;
  size_t es = kiln_elem_size(dt->elem);
  int64_t outer = 1, inner = 1, ni = kiln_type_numel(it), da = dt->dims[axis];
  for (int64_t d = 0; d < axis; d++)
    outer *= dt->dims[d];
  for (uint32_t d = (uint32_t)axis + 1; d < dt->rank; d++)
    inner *= dt->dims[d];
  const unsigned char *src = kiln_value_data(data);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < ni; j++) {
      int64_t k = (int64_t)kiln_elem_load_f64(it->elem, kiln_value_data(idx), j);
      if (k < 0)
        k += da;
      if (k < 0 || k >= da)
        return false;
      memcpy(out, src + (size_t)((o * da + k) * inner) * es, (size_t)inner * es);
      out += (size_t)inner * es;
    }
  return true;
}

static void fold_shape(const kiln_node *n, const kiln_type *ot, unsigned char *out) {
  const kiln_type *in = kiln_value_type(kiln_node_input(n, 0));
  int64_t start = kiln_attrs_int_or(kiln_node_attrs(n), "start", 0);
  if (start < 0)
    start += in->rank;
  if (start < 0)
    start = 0;
  for (int64_t i = 0; i < kiln_type_numel(ot); i++)
    kiln_pass_elem_set(out, KILN_I64, i, (double)in->dims[start + i]);
}

/* Builtin fold of result 0 into out; false when this kind is not builtin. */
static bool fold_builtin(const kiln_node *n, bool inputs_const, unsigned char *out) {
  kiln_node_kind k = kiln_node_get_kind(n);
  const kiln_type *ot = kiln_value_type(kiln_node_result(n, 0));
  if (k == KILN_NODE_Shape) {
    fold_shape(n, ot, out);
    return true;
  }
  if (k == KILN_NODE_Size) {
    int64_t v = kiln_type_numel(kiln_value_type(kiln_node_input(n, 0)));
    memcpy(out, &v, sizeof v);
    return true;
  }
  if (!inputs_const || kiln_node_input_count(n) == 0 || !kiln_node_input(n, 0))
    return false;
  const kiln_value *x = kiln_node_input(n, 0);
  if (kiln_pass_is_reshape_like(k) || k == KILN_NODE_Identity) {
    memcpy(out, kiln_value_data(x), (size_t)kiln_type_bytes(ot));
    return true;
  }
  if (k == KILN_NODE_Concat) {
    fold_concat(n, ot, out);
    return true;
  }
  if (k == KILN_NODE_Gather)
    return fold_gather(n, out);
  if (k == KILN_NODE_Transpose) {
    const kiln_type *it = kiln_value_type(x);
    int64_t perm[KILN_MAX_RANK];
    kiln_pass_transpose_perm(n, it->rank, perm);
    kiln_pass_transpose_data(kiln_value_data(x), out, it, perm, kiln_elem_size(it->elem));
    return true;
  }
  return false;
}

static kiln_status fold_node(kiln_function *f, kiln_node *n, const kiln_pass_options *o,
                             bool *done) {
  *done = false;
  kiln_node_kind k = kiln_node_get_kind(n);
  bool inputs_const = all_inputs_constant(n);
  bool static_shape = k == KILN_NODE_Shape || k == KILN_NODE_Size;
  if (!inputs_const && !static_shape)
    return NULL;
  uint32_t nr = kiln_node_result_count(n), used = 0;
  for (uint32_t r = 0; r < nr; r++)
    used += kiln_value_use_count(kiln_node_result(n, r));
  if (used == 0)
    return NULL; /* dead: dce's business, and folding it would only add a constant */
  for (uint32_t r = 0; r < nr; r++) {
    const kiln_type *t = kiln_value_type(kiln_node_result(n, r));
    if (o && o->fold_max_bytes && (uint64_t)kiln_type_bytes(t) > o->fold_max_bytes)
      return NULL;
  }
  kiln_module *m = kiln_function_module(f);
  kiln_value *repl[64] = {0};
  if (nr > 64)
    return NULL;
  const kiln_type *t0 = kiln_value_type(kiln_node_result(n, 0));
  size_t b0 = (size_t)kiln_type_bytes(t0);
  unsigned char *buf = malloc(b0 ? b0 : 1);
  if (!buf)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "fold: no memory for %zu bytes", b0);
  bool builtin = nr == 1 && fold_builtin(n, inputs_const, buf);
  if (builtin) {
    kiln_status s = kiln_module_add_constant(m, NULL, t0, buf, &repl[0]);
    free(buf);
    KILN_TRY(s);
  } else {
    free(buf);
    if (!inputs_const || !o || !o->evaluate)
      return NULL;
    for (uint32_t r = 0; r < nr; r++) {
      kiln_value *res = kiln_node_result(n, r);
      if (kiln_value_use_count(res) == 0)
        continue;
      kiln_tensor t;
      memset(&t, 0, sizeof t);
      KILN_TRY_CTX(o->evaluate(o->evaluate_user, m, res, &t),
                   "fold: evaluating result %u of node '%s' (%s)", r, kiln_node_name(n),
                   kiln_node_kind_name(k));
      kiln_status s = NULL;
      if (!kiln_type_same_shape(&t.type, kiln_value_type(res)))
        s = kiln_status_make(KILN_INTERNAL,
                             "fold: evaluator returned the wrong type for node '%s' (%s)",
                             kiln_node_name(n), kiln_node_kind_name(k));
      else
        s = kiln_module_add_constant(m, NULL, kiln_value_type(res), t.data, &repl[r]);
      kiln_free(t.data);
      kiln_free(t.name);
      KILN_TRY(s);
    }
  }
  KILN_TRY(kiln_pass_replace_node(f, n, repl));
  *done = true;
  return NULL;
}

kiln_status kiln_pass_fold(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  return kiln_pass_each_node(f, o, fold_node, changes);
}
