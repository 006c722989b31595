/* onnx_const.c: node inputs, and the values a node needs at compile time
 * (constants, known inputs, or cones evaluated on the interpreter). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

bool onnx_input_present(const Onnx__NodeProto *n, uint32_t i) {
  return i < n->n_input && n->input[i] && n->input[i][0];
}

kiln_status onnx_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i, kiln_value **out) {
  *out = NULL;
  if (!onnx_input_present(n, i))
    return NULL;
  onnx_entry *e = onnx_map_find(L, n->input[i]);
  if (!e)
    return kiln_status_make(KILN_NOT_FOUND,
                            "%s: node %s: input %u '%s' is not defined by an initializer, a "
                            "graph input or an earlier node (nodes must be topologically sorted)",
                            L->file, onnx_node_desc(n), i, n->input[i]);
  if (!e->value && e->known >= 0)
    return kiln_status_make(KILN_INTERNAL, "%s: node %s: input '%s' has no value", L->file,
                            onnx_node_desc(n), n->input[i]);
  *out = e->value;
  return NULL;
}

static int32_t known_index(const onnx_loader *L, const char *name) {
  for (uint32_t i = 0; i < L->opts->known_input_count; i++)
    if (L->opts->known_inputs[i].name && !strcmp(L->opts->known_inputs[i].name, name))
      return (int32_t)i;
  return -1;
}

bool onnx_is_promoted(const onnx_loader *L, const char *name) {
  for (uint32_t i = 0; i < L->n_promote; i++)
    if (!strcmp(L->promote[i], name))
      return true;
  return false;
}

/* Find the module inputs in the cone of v. Known ones are promoted to
 * constants by restarting the load; an unknown one makes v unknowable. */
static kiln_status promote_cone(onnx_loader *L, const Onnx__NodeProto *n, uint32_t idx,
                                kiln_value *v) {
  uint32_t cap = 256, top = 0, n_seen = 0, seen_cap = 1024;
  kiln_value **stack = malloc(cap * sizeof *stack);
  const kiln_node **seen = calloc(seen_cap, sizeof *seen);
  kiln_status s = NULL;
  bool added = false;
  if (!stack || !seen) {
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", L->file);
    goto done;
  }
  stack[top++] = v;
  while (top && !s) {
    kiln_value *x = stack[--top];
    if (kiln_value_get_kind(x) == KILN_VALUE_INPUT) {
      const char *name = kiln_value_name(x);
      if (known_index(L, name) < 0)
        s = kiln_status_make(KILN_UNIMPLEMENTED,
                             "%s: node %s: input %u '%s' must be known at compile time, but it "
                             "depends on graph input '%s', which has no known value",
                             L->file, onnx_node_desc(n), idx, n->input[idx], name);
      else if (!onnx_is_promoted(L, name) && L->n_promote < 64) {
        L->promote[L->n_promote] = strdup(name);
        if (!L->promote[L->n_promote])
          s = kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", L->file);
        else
          L->n_promote++, added = true;
      }
      continue;
    }
    kiln_node *p = kiln_value_producer(x, NULL);
    if (!p)
      continue;
    /* Open-addressing set of visited nodes. */
    uint32_t h = (uint32_t)(((uintptr_t)p >> 4) * 2654435761u) & (seen_cap - 1);
    while (seen[h] && seen[h] != p)
      h = (h + 1) & (seen_cap - 1);
    if (seen[h])
      continue;
    seen[h] = p;
    if (++n_seen * 2 > seen_cap) {
      uint32_t ncap = seen_cap * 2;
      const kiln_node **ns = calloc(ncap, sizeof *ns);
      if (!ns) {
        s = kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", L->file);
        break;
      }
      for (uint32_t k = 0; k < seen_cap; k++) {
        if (!seen[k])
          continue;
        uint32_t j = (uint32_t)(((uintptr_t)seen[k] >> 4) * 2654435761u) & (ncap - 1);
        while (ns[j])
          j = (j + 1) & (ncap - 1);
        ns[j] = seen[k];
      }
      free(seen);
      seen = ns;
      seen_cap = ncap;
    }
    for (uint32_t k = 0; k < kiln_node_input_count(p); k++) {
      kiln_value *in = kiln_node_input(p, k);
      if (!in)
        continue;
      if (top == cap) {
        kiln_value **nst = realloc(stack, cap * 2 * sizeof *nst);
        if (!nst) {
          s = kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", L->file);
          break;
        }
        stack = nst;
        cap *= 2;
      }
      stack[top++] = in;
    }
  }
  if (!s && added) {
    L->restart = true;
    s = kiln_status_make(KILN_FAILED_PRECONDITION,
                         "%s: node %s: restarting with known inputs as constants", L->file,
                         onnx_node_desc(n));
  }
done:
  free(stack);
  free(seen);
  return s;
}

kiln_status onnx_const_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i, const char *role,
                             onnx_cval *out) {
  memset(out, 0, sizeof *out);
  if (!onnx_input_present(n, i))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input %u (%s) is missing", L->file,
                            onnx_node_desc(n), i, role);
  onnx_entry *e = onnx_map_find(L, n->input[i]);
  if (!e)
    return kiln_status_make(KILN_NOT_FOUND,
                            "%s: node %s: input %u '%s' is not defined by an initializer, a "
                            "graph input or an earlier node (nodes must be topologically sorted)",
                            L->file, onnx_node_desc(n), i, n->input[i]);
  if (e->known >= 0) {
    out->t = L->opts->known_inputs[e->known];
    out->t.name = NULL;
    return NULL;
  }
  kiln_value *v = e->value;
  if (kiln_value_get_kind(v) == KILN_VALUE_CONSTANT) {
    out->t.type = *kiln_value_type(v);
    out->t.data = (void *)kiln_value_data(v);
    return NULL;
  }
  if (kiln_value_get_kind(v) == KILN_VALUE_INPUT)
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "%s: node %s: input %u '%s' (%s) must be known at compile time, but "
                            "it is a graph input without a known value",
                            L->file, onnx_node_desc(n), i, n->input[i], role);
  KILN_TRY(promote_cone(L, n, i, v));
  kiln_status s = kiln_evaluate_value(L->opts ? L->opts->ctx : NULL, L->m, v, &out->t);
  if (s)
    return kiln_status_wrap(s, "%s: node %s: evaluating input %u '%s' (%s) at compile time",
                            L->file, onnx_node_desc(n), i, n->input[i], role);
  out->owned = true;
  return NULL;
}

void onnx_cval_release(onnx_cval *c) {
  if (c->owned)
    kiln_tensor_free(&c->t);
  memset(c, 0, sizeof *c);
}

kiln_status onnx_cval_ints(const onnx_cval *c, int64_t **out, uint32_t *len) {
  int64_t n = kiln_type_numel(&c->t.type);
  if (n > 1 << 20)
    return kiln_status_make(KILN_OUT_OF_RANGE, "compile-time list of %lld values is too long",
                            (long long)n);
  int64_t *v = malloc(n ? (size_t)n * sizeof *v : 1);
  if (!v)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
  kiln_elem e = c->t.type.elem;
  for (int64_t i = 0; i < n; i++) {
    if (e == KILN_I64)
      v[i] = ((const int64_t *)c->t.data)[i];
    else if (e == KILN_U64)
      v[i] = (int64_t)((const uint64_t *)c->t.data)[i];
    else {
      double d = kiln_elem_load_f64(e, c->t.data, i);
      v[i] = onnx_f64_to_i64(d);
    }
  }
  *out = v;
  *len = (uint32_t)n;
  return NULL;
}

kiln_status onnx_cval_floats(const onnx_cval *c, double **out, uint32_t *len) {
  int64_t n = kiln_type_numel(&c->t.type);
  if (n > 1 << 20)
    return kiln_status_make(KILN_OUT_OF_RANGE, "compile-time list of %lld values is too long",
                            (long long)n);
  double *v = malloc(n ? (size_t)n * sizeof *v : 1);
  if (!v)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
  for (int64_t i = 0; i < n; i++)
    v[i] = kiln_elem_load_f64(c->t.type.elem, c->t.data, i);
  *out = v;
  *len = (uint32_t)n;
  return NULL;
}

kiln_status onnx_add_constant(onnx_loader *L, const kiln_type *t, const void *data,
                              kiln_value **out) {
  char name[32];
  onnx_fresh_name(L, name, sizeof name);
  return kiln_module_add_constant(L->m, name, t, data, out);
}
