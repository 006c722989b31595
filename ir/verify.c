/* ir/verify.c: kiln_module_verify. Walks every function and reports every
 * broken invariant, one line each, naming function and node, so that a
 * pass that corrupted the graph can be found from one message. Per node:
 * arity from node_kinds.def, re-inference, and the attribute rows of
 * node_schema.def. */
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

static int cmp_str_ptr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void check_node(const kiln_module *m, const kiln_function *f, const kiln_node *n,
                       uint32_t pos, kiln_ir_sb *sb) {
  char label[200];
  const char *nm = kiln_node_name(n);
  if (nm)
    snprintf(label, sizeof label, "function '%s', node '%s' (%s)", f->name, nm,
             kiln_node_kind_name(n->kind));
  else
    snprintf(label, sizeof label, "function '%s', node #%u (%s)", f->name, pos,
             kiln_node_kind_name(n->kind));
  const kiln_node_kind_info *info = kiln_node_kind_get_info(n->kind);
  if (!info) {
    kiln_ir_sb_line(sb, "%s: invalid node kind %d", label, (int)n->kind);
    return;
  }
  bool arity_ok = true;
  if (n->n_inputs < info->min_inputs || n->n_inputs > info->max_inputs) {
    kiln_ir_sb_line(sb, "%s: has %u inputs, the kind takes %u to %u", label, n->n_inputs,
                    info->min_inputs, info->max_inputs);
    arity_ok = false;
  }
  if (n->n_results < info->min_results || n->n_results > info->max_results || n->n_results > 64) {
    kiln_ir_sb_line(sb, "%s: has %u results, the kind has %u to %u", label, n->n_results,
                    info->min_results, info->max_results);
    arity_ok = false;
  }
  if (n->pos != pos || n->function != f || n->removed)
    kiln_ir_sb_line(sb, "%s: node bookkeeping is inconsistent (position %u, listed at %u)", label,
                    n->pos, pos);
  bool inputs_ok = true;
  const kiln_type *in_types[64];
  for (uint32_t i = 0; i < n->n_inputs && i < 64; i++) {
    const kiln_value *v = n->inputs[i];
    in_types[i] = v ? &v->type : NULL;
    if (!v) {
      if (i < info->min_inputs) {
        kiln_ir_sb_line(sb, "%s: required input %u is absent", label, i);
        inputs_ok = false;
      }
      continue;
    }
    if (v->module != m) {
      kiln_ir_sb_line(sb, "%s: input %u '%s' belongs to another module", label, i, v->name);
      inputs_ok = false;
      continue;
    }
    if (v->kind != KILN_VALUE_RESULT)
      continue;
    const kiln_node *p = v->producer;
    if (p->removed) {
      kiln_ir_sb_line(sb, "%s: input %u '%s' is the result of a removed node", label, i, v->name);
      inputs_ok = false;
    } else if (p->function != f) {
      kiln_ir_sb_line(sb, "%s: input %u '%s' is a result in function '%s'", label, i, v->name,
                      p->function->name);
      inputs_ok = false;
    } else if (p->pos >= pos) {
      kiln_ir_sb_line(sb,
                      "%s: input %u '%s' is used before its definition (a cycle or a "
                      "misordered node)",
                      label, i, v->name);
    }
  }
  if (!arity_ok || !inputs_ok)
    return; /* re-inference would only repeat these problems */
  kiln_type types[64];
  uint32_t got = 0;
  kiln_status s =
      kiln_infer_types(n->kind, in_types, n->n_inputs, n->attrs, n->n_results, types, &got);
  if (s) {
    kiln_ir_sb_line(sb, "%s: %s", label, kiln_status_message(s));
    kiln_status_free(s);
    return;
  }
  /* After inference, whose messages say more where both apply: the generic
   * check adds the attribute rules of node_schema.def that inference does
   * not state (an attribute of the wrong type, read as its default). */
  s = kiln_node_kind_check_attrs(n->kind, n->attrs);
  if (s) {
    kiln_ir_sb_line(sb, "%s: %s", label, kiln_status_message(s));
    kiln_status_free(s);
  }
  if (got != n->n_results) {
    kiln_ir_sb_line(sb, "%s: has %u results, inference gives %u", label, n->n_results, got);
    return;
  }
  for (uint32_t r = 0; r < got; r++) {
    if (!kiln_type_equal(&types[r], &n->results[r].type)) {
      char a[160], b[160];
      kiln_type_format(&n->results[r].type, a, sizeof a);
      kiln_type_format(&types[r], b, sizeof b);
      kiln_ir_sb_line(sb, "%s: result %u '%s' has type %s, inference gives %s", label, r,
                      n->results[r].name, a, b);
    }
  }
}

static void check_function(const kiln_module *m, const kiln_function *f, uint32_t *uses,
                           kiln_ir_sb *sb) {
  for (uint32_t i = 0; i < f->n_nodes; i++) {
    const kiln_node *n = f->nodes[i];
    check_node(m, f, n, i, sb);
    if (uses)
      for (uint32_t j = 0; j < n->n_inputs; j++)
        if (n->inputs[j] && n->inputs[j]->module == m && n->inputs[j]->id < m->n_values)
          uses[n->inputs[j]->id]++;
  }
  for (uint32_t i = 0; i < f->n_outputs; i++) {
    const kiln_value *v = f->out_values[i];
    const char *on = f->out_names[i];
    if (!v) {
      kiln_ir_sb_line(sb, "function '%s', output '%s': not bound to a value", f->name, on);
      continue;
    }
    if (v->module != m) {
      kiln_ir_sb_line(sb, "function '%s', output '%s': value '%s' belongs to another module",
                      f->name, on, v->name);
      continue;
    }
    if (uses && v->id < m->n_values)
      uses[v->id]++;
    if (v->kind == KILN_VALUE_RESULT && (v->producer->removed || v->producer->function != f))
      kiln_ir_sb_line(sb,
                      "function '%s', output '%s': value '%s' is not a live result of this "
                      "function",
                      f->name, on, v->name);
    for (uint32_t j = 0; j < i; j++)
      if (strcmp(f->out_names[j], on) == 0)
        kiln_ir_sb_line(sb, "function '%s': output name '%s' is bound twice", f->name, on);
  }
}

static void check_use_counts(const kiln_module *m, const uint32_t *uses, kiln_ir_sb *sb) {
  for (uint32_t i = 0; i < m->n_inputs; i++)
    if (m->inputs[i]->uses != uses[m->inputs[i]->id])
      kiln_ir_sb_line(sb, "module '%s': input '%s' records %u uses, the functions make %u", m->name,
                      m->inputs[i]->name, m->inputs[i]->uses, uses[m->inputs[i]->id]);
  for (uint32_t i = 0; i < m->n_constants; i++)
    if (m->constants[i]->uses != uses[m->constants[i]->id])
      kiln_ir_sb_line(sb, "module '%s': constant '%s' records %u uses, the functions make %u",
                      m->name, m->constants[i]->name, m->constants[i]->uses,
                      uses[m->constants[i]->id]);
  for (uint32_t fi = 0; fi < m->n_functions; fi++) {
    const kiln_function *f = m->functions[fi];
    for (uint32_t i = 0; i < f->n_nodes; i++)
      for (uint32_t r = 0; r < f->nodes[i]->n_results; r++) {
        const kiln_value *v = &f->nodes[i]->results[r];
        if (v->uses != uses[v->id])
          kiln_ir_sb_line(sb, "function '%s', value '%s': records %u uses, the functions make %u",
                          f->name, v->name, v->uses, uses[v->id]);
      }
  }
}

static void check_names(const kiln_module *m, kiln_ir_sb *sb) {
  uint64_t count = (uint64_t)m->n_inputs + m->n_constants;
  for (uint32_t fi = 0; fi < m->n_functions; fi++)
    for (uint32_t i = 0; i < m->functions[fi]->n_nodes; i++)
      count += m->functions[fi]->nodes[i]->n_results;
  const char **names = malloc((size_t)count * sizeof *names + 1);
  if (!names) {
    kiln_ir_sb_line(sb, "module '%s': out of memory checking names", m->name);
    return;
  }
  size_t k = 0;
  for (uint32_t i = 0; i < m->n_inputs; i++)
    names[k++] = m->inputs[i]->name;
  for (uint32_t i = 0; i < m->n_constants; i++)
    names[k++] = m->constants[i]->name;
  for (uint32_t fi = 0; fi < m->n_functions; fi++)
    for (uint32_t i = 0; i < m->functions[fi]->n_nodes; i++)
      for (uint32_t r = 0; r < m->functions[fi]->nodes[i]->n_results; r++)
        names[k++] = m->functions[fi]->nodes[i]->results[r].name;
  qsort(names, k, sizeof *names, cmp_str_ptr);
  for (size_t i = 0; i < k; i++) {
    if (!names[i][0])
      kiln_ir_sb_line(sb, "module '%s': a value has an empty name", m->name);
    if (i && strcmp(names[i - 1], names[i]) == 0 && (i < 2 || strcmp(names[i - 2], names[i])))
      kiln_ir_sb_line(sb, "module '%s': value name '%s' is used more than once", m->name, names[i]);
  }
  free(names);
}

kiln_status kiln_module_verify(const kiln_module *m) {
  if (!m)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "verify: module is NULL");
  kiln_ir_sb sb = {0};
  uint32_t *uses = calloc((size_t)m->n_values + 1, sizeof *uses);
  for (uint32_t i = 0; i < m->n_functions; i++)
    check_function(m, m->functions[i], uses, &sb);
  if (uses)
    check_use_counts(m, uses, &sb);
  free(uses);
  check_names(m, &sb);
  return kiln_ir_sb_finish(&sb, KILN_VERIFY_ERROR);
}
