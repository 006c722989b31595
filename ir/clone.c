/* ir/clone.c: kiln_module_clone, a deep copy into a fresh arena, except
 * constant data, which is immutable and shared (a reference, not a copy:
 * the weights of a model exist once however many clones there are). Nodes
 * are copied without re-running inference, so that even a module a pass has
 * left invalid is copied as it is (the verifier then reports the same). */
#include <string.h>

#include "ir_internal.h"

static kiln_status clone_function(const kiln_function *f, kiln_module *dst, kiln_value **map) {
  kiln_function *g;
  KILN_TRY(kiln_module_add_function(dst, f->name, &g));
  kiln_type types[64];
  const char *names[64];
  kiln_node **made = kiln_arena_alloc(dst->arena, (size_t)f->n_nodes * sizeof *made);
  if (!made)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory cloning function '%s'", f->name);
  /* Pass 1: nodes and results; inputs are linked in pass 2 because a
   * broken module may use a value before its definition. */
  for (uint32_t i = 0; i < f->n_nodes; i++) {
    const kiln_node *n = f->nodes[i];
    for (uint32_t r = 0; r < n->n_results; r++) {
      types[r] = n->results[r].type;
      names[r] = n->results[r].name;
    }
    kiln_attrs *as = NULL;
    kiln_status s = kiln_ir_attrs_copy(dst->arena, n->attrs, &as);
    if (!s)
      s = kiln_ir_node_insert(g, n->kind, n->name, NULL, n->n_inputs, as, n->n_results, types,
                              names, &made[i]);
    if (s)
      return kiln_status_wrap(s, "cloning module '%s'", f->module->name);
    for (uint32_t r = 0; r < n->n_results; r++)
      map[n->results[r].id] = &made[i]->results[r];
  }
  for (uint32_t i = 0; i < f->n_nodes; i++) {
    const kiln_node *n = f->nodes[i];
    for (uint32_t j = 0; j < n->n_inputs; j++) {
      kiln_value *v = n->inputs[j] ? map[n->inputs[j]->id] : NULL;
      made[i]->inputs[j] = v;
      if (v)
        v->uses++;
    }
  }
  for (uint32_t i = 0; i < f->n_outputs; i++) {
    kiln_value *v = map[f->out_values[i]->id];
    if (!v)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "cloning module '%s': function '%s': output '%s' is bound to a value "
                              "outside the function",
                              f->module->name, f->name, f->out_names[i]);
    KILN_TRY(kiln_function_add_output(g, f->out_names[i], v));
  }
  return NULL;
}

static kiln_status clone_into(const kiln_module *m, kiln_module *c) {
  kiln_value **map = kiln_arena_alloc(c->arena, (size_t)m->n_values * sizeof *map + 1);
  if (!map)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory cloning module '%s'", m->name);
  for (uint32_t i = 0; i < m->n_inputs; i++) {
    const kiln_value *v = m->inputs[i];
    KILN_TRY(kiln_module_add_input(c, v->name, &v->type, &map[v->id]));
  }
  for (uint32_t i = 0; i < m->n_constants; i++) {
    const kiln_value *v = m->constants[i];
    KILN_TRY(kiln_module_add_constant_from(c, v->name, v, &map[v->id]));
  }
  for (uint32_t i = 0; i < m->n_functions; i++)
    KILN_TRY(clone_function(m->functions[i], c, map));
  c->next_auto = m->next_auto;
  return NULL;
}

kiln_status kiln_module_clone(const kiln_module *m, kiln_module **out) {
  if (!out || !m)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_module_clone: NULL argument");
  *out = NULL;
  kiln_module *c;
  KILN_TRY(kiln_module_create(m->alloc, m->name, &c));
  kiln_status s = clone_into(m, c);
  if (s) {
    kiln_module_destroy(c);
    return s;
  }
  *out = c;
  return NULL;
}
