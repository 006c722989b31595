/* ir/module.c: modules, values, functions and nodes: the graph builder and
 * the edits passes make (replace uses, remove, insert point), and cloning.
 *
 * Every builder call checks everything and reserves all memory it needs
 * before it links anything in, so a failure (bad input or a failing
 * allocator) leaves the module exactly as it was. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

#define MAX_RESULTS 64

#define blob_ref kiln_ir_blob_ref
#define blob_unref kiln_ir_blob_unref

static kiln_status oom(const char *what) {
  return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory %s", what);
}

/* ---- modules ---- */

kiln_status kiln_module_create(const kiln_allocator *alloc, const char *name, kiln_module **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_module_create: no output");
  *out = NULL;
  kiln_arena *a = kiln_arena_create(alloc ? alloc : kiln_default_allocator());
  if (!a)
    return oom("creating a module");
  kiln_module *m = kiln_arena_alloc(a, sizeof *m);
  const char *nm = m ? kiln_arena_strdup(a, name ? name : "module") : NULL;
  if (!nm) {
    kiln_arena_destroy(a);
    return oom("creating a module");
  }
  m->arena = a;
  m->alloc = kiln_arena_allocator(a);
  m->name = nm;
  kiln_ir_names_init(&m->names, a);
  *out = m;
  return NULL;
}

void kiln_module_destroy(kiln_module *m) {
  if (!m)
    return;
  for (uint32_t i = 0; i < m->n_constants; i++)
    blob_unref(m->constants[i]->blob);
  kiln_arena_destroy(m->arena);
}

const char *kiln_module_name(const kiln_module *m) {
  return m->name;
}

const kiln_allocator *kiln_module_allocator(const kiln_module *m) {
  return m->alloc;
}

/* A free automatic name ("0", "1", ...) not in the table nor in `pending`. */
static const char *auto_name(kiln_module *m, const char *const *pending, uint32_t n_pending,
                             char *buf, size_t size) {
  for (;;) {
    snprintf(buf, size, "%u", m->next_auto++);
    if (kiln_ir_names_find(&m->names, buf))
      continue;
    bool clash = false;
    for (uint32_t i = 0; i < n_pending; i++)
      if (pending[i] && strcmp(pending[i], buf) == 0)
        clash = true;
    if (!clash)
      return buf;
  }
}

/* ---- shared constant storage ----
 * One allocation per constant: this header, then the data at the next
 * 64-byte boundary. Reference counts are atomic because modules sharing a
 * block (a user's module and an executable's copy) may live on different
 * threads. */
struct kiln_blob {
  atomic_uint refs;
  const kiln_allocator *alloc;
  size_t size; /* of the whole allocation */
  void *data;
};

static kiln_blob *blob_create(const kiln_allocator *alloc, size_t bytes) {
  if (bytes > SIZE_MAX - sizeof(kiln_blob) - 64)
    return NULL;
  size_t size = sizeof(kiln_blob) + 64 + bytes;
  kiln_blob *b = alloc->alloc(alloc->user, size);
  if (!b)
    return NULL;
  atomic_init(&b->refs, 1);
  b->alloc = alloc;
  b->size = size;
  uintptr_t at = ((uintptr_t)(b + 1) + 63) & ~(uintptr_t)63;
  b->data = (void *)at;
  return b;
}

kiln_blob *kiln_ir_blob_ref(kiln_blob *b) {
  if (b)
    atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  return b;
}

void kiln_ir_blob_unref(kiln_blob *b) {
  if (b && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
    b->alloc->free(b->alloc->user, b, b->size);
}

/* Where a constant's data comes from: copied from `data`, written by
 * `fill`, or shared from `share`. */
typedef struct const_source {
  const void *data;
  kiln_constant_fill_fn fill;
  void *user;
  kiln_blob *share;
} const_source;

static kiln_status add_module_value(kiln_module *m, kiln_value_kind kind, const char *name,
                                    const kiln_type *type, const const_source *src,
                                    kiln_value **out) {
  const char *what = kind == KILN_VALUE_INPUT ? "input" : "constant";
  if (out)
    *out = NULL;
  if (!m || !type)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "module: adding %s '%s': %s is NULL", what,
                            name ? name : "?", m ? "type" : "module");
  if (name && !name[0])
    return kiln_status_make(KILN_INVALID_ARGUMENT, "module '%s': %s with an empty name", m->name,
                            what);
  if (name && kiln_ir_names_find(&m->names, name))
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "module '%s': %s '%s': the name is already taken", m->name, what, name);
  kiln_type check;
  kiln_status s = type->quantized ? kiln_type_make_quantized(type->elem, type->rank, type->dims,
                                                             type->scale, type->zero_point, &check)
                                  : kiln_type_make(type->elem, type->rank, type->dims, &check);
  if (s)
    return kiln_status_wrap(s, "module '%s': %s '%s'", m->name, what, name ? name : "?");
  int64_t bytes = kiln_type_bytes(&check);
  bool has_source = src && (src->data || src->fill || src->share);
  if (kind == KILN_VALUE_CONSTANT && !has_source && bytes > 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "module '%s': constant '%s' has no data",
                            m->name, name ? name : "?");
  if ((uint64_t)bytes > SIZE_MAX)
    return kiln_status_make(KILN_OUT_OF_RANGE, "module '%s': constant '%s' too large", m->name,
                            name ? name : "?");
  char buf[16];
  const char *nm = name ? name : auto_name(m, NULL, 0, buf, sizeof buf);
  kiln_value ***arr = kind == KILN_VALUE_INPUT ? &m->inputs : &m->constants;
  uint32_t *cnt = kind == KILN_VALUE_INPUT ? &m->n_inputs : &m->n_constants;
  uint32_t *cap = kind == KILN_VALUE_INPUT ? &m->cap_inputs : &m->cap_constants;
  kiln_value *v = kiln_arena_alloc(m->arena, sizeof *v);
  const char *copy = v ? kiln_arena_strdup(m->arena, nm) : NULL;
  if (!copy || !kiln_ir_grow(m->arena, (void **)arr, cap, *cnt + 1, sizeof(kiln_value *)) ||
      !kiln_ir_names_reserve(&m->names, 1))
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory adding %s '%s' to module '%s'", what,
                            nm, m->name);
  kiln_blob *blob = NULL;
  if (kind == KILN_VALUE_CONSTANT && bytes > 0) {
    if (src->share) {
      blob = blob_ref(src->share);
    } else {
      blob = blob_create(m->alloc, (size_t)bytes);
      if (!blob)
        return kiln_status_make(KILN_OUT_OF_MEMORY,
                                "out of memory for the %lld bytes of constant '%s' in module '%s'",
                                (long long)bytes, nm, m->name);
      s = src->fill ? src->fill(src->user, blob->data, (size_t)bytes) : NULL;
      if (!src->fill)
        memcpy(blob->data, src->data, (size_t)bytes);
      if (s) {
        blob_unref(blob);
        return kiln_status_wrap(s, "module '%s': constant '%s'", m->name, nm);
      }
    }
  }
  v->kind = kind;
  v->name = copy;
  v->type = check;
  v->blob = blob;
  /* Empty constants still get a non-NULL pointer: readers test for data. */
  static const max_align_t empty;
  v->data = blob ? blob->data : kind == KILN_VALUE_CONSTANT ? (const void *)&empty : NULL;
  v->module = m;
  v->id = m->n_values++;
  (*arr)[(*cnt)++] = v;
  kiln_ir_names_insert(&m->names, copy, v);
  if (out)
    *out = v;
  return NULL;
}

kiln_status kiln_module_add_input(kiln_module *m, const char *name, const kiln_type *type,
                                  kiln_value **out) {
  return add_module_value(m, KILN_VALUE_INPUT, name, type, NULL, out);
}

kiln_status kiln_module_add_constant(kiln_module *m, const char *name, const kiln_type *type,
                                     const void *data, kiln_value **out) {
  const_source src = {.data = data};
  return add_module_value(m, KILN_VALUE_CONSTANT, name, type, &src, out);
}

kiln_status kiln_module_add_constant_fill(kiln_module *m, const char *name, const kiln_type *type,
                                          kiln_constant_fill_fn fill, void *user,
                                          kiln_value **out) {
  if (!fill) {
    if (out)
      *out = NULL;
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_module_add_constant_fill: fill is NULL");
  }
  const_source src = {.fill = fill, .user = user};
  return add_module_value(m, KILN_VALUE_CONSTANT, name, type, &src, out);
}

kiln_status kiln_module_add_constant_from(kiln_module *m, const char *name, const kiln_value *src,
                                          kiln_value **out) {
  if (!src || src->kind != KILN_VALUE_CONSTANT) {
    if (out)
      *out = NULL;
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "kiln_module_add_constant_from: the source is not a constant");
  }
  const_source cs = {.data = src->data, .share = src->blob};
  return add_module_value(m, KILN_VALUE_CONSTANT, name, &src->type, &cs, out);
}

void kiln_module_set_release_constants(kiln_module *m, bool on) {
  if (m)
    m->release_constants = on;
}

bool kiln_module_releases_constants(const kiln_module *m) {
  return m && m->release_constants;
}

uint32_t kiln_module_remove_unused_constants(kiln_module *m) {
  if (!m)
    return 0;
  /* Function outputs bound to constants count as uses; node inputs are
   * counted in uses already. */
  uint32_t kept = 0, removed = 0;
  for (uint32_t i = 0; i < m->n_constants; i++) {
    kiln_value *v = m->constants[i];
    bool used = v->uses > 0;
    for (uint32_t f = 0; f < m->n_functions && !used; f++)
      for (uint32_t o = 0; o < m->functions[f]->n_outputs && !used; o++)
        used = m->functions[f]->out_values[o] == v;
    if (used) {
      m->constants[kept++] = v;
      continue;
    }
    kiln_ir_names_remove(&m->names, v->name);
    blob_unref(v->blob);
    v->blob = NULL;
    v->data = NULL;
    removed++;
  }
  m->n_constants = kept;
  return removed;
}

uint32_t kiln_module_input_count(const kiln_module *m) {
  return m->n_inputs;
}

kiln_value *kiln_module_input(const kiln_module *m, uint32_t i) {
  return i < m->n_inputs ? m->inputs[i] : NULL;
}

uint32_t kiln_module_constant_count(const kiln_module *m) {
  return m->n_constants;
}

kiln_value *kiln_module_constant(const kiln_module *m, uint32_t i) {
  return i < m->n_constants ? m->constants[i] : NULL;
}

kiln_value *kiln_module_find_value(const kiln_module *m, const char *name) {
  return m ? kiln_ir_names_find(&m->names, name) : NULL;
}

kiln_value_kind kiln_value_get_kind(const kiln_value *v) {
  return v->kind;
}

const char *kiln_value_name(const kiln_value *v) {
  return v->name;
}

const kiln_type *kiln_value_type(const kiln_value *v) {
  return &v->type;
}

const void *kiln_value_data(const kiln_value *v) {
  return v->kind == KILN_VALUE_CONSTANT ? v->data : NULL;
}

kiln_node *kiln_value_producer(const kiln_value *v, uint32_t *out_index) {
  if (v->kind != KILN_VALUE_RESULT)
    return NULL;
  if (out_index)
    *out_index = v->result_index;
  return v->producer;
}

uint32_t kiln_value_use_count(const kiln_value *v) {
  return v->uses;
}

/* ---- functions ---- */

kiln_status kiln_module_add_function(kiln_module *m, const char *name, kiln_function **out) {
  if (out)
    *out = NULL;
  if (!m || !name || !name[0])
    return kiln_status_make(KILN_INVALID_ARGUMENT, "module: a function needs a name");
  if (kiln_module_find_function(m, name))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "module '%s': function '%s' already exists",
                            m->name, name);
  kiln_function *f = kiln_arena_alloc(m->arena, sizeof *f);
  const char *nm = f ? kiln_arena_strdup(m->arena, name) : NULL;
  if (!nm || !kiln_ir_grow(m->arena, (void **)&m->functions, &m->cap_functions, m->n_functions + 1,
                           sizeof(kiln_function *)))
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory adding function '%s'", name);
  f->module = m;
  f->name = nm;
  m->functions[m->n_functions++] = f;
  if (out)
    *out = f;
  return NULL;
}

uint32_t kiln_module_function_count(const kiln_module *m) {
  return m->n_functions;
}

kiln_function *kiln_module_function(const kiln_module *m, uint32_t i) {
  return i < m->n_functions ? m->functions[i] : NULL;
}

kiln_function *kiln_module_find_function(const kiln_module *m, const char *name) {
  for (uint32_t i = 0; name && i < m->n_functions; i++)
    if (strcmp(m->functions[i]->name, name) == 0)
      return m->functions[i];
  return NULL;
}

const char *kiln_function_name(const kiln_function *f) {
  return f->name;
}

kiln_module *kiln_function_module(const kiln_function *f) {
  return f->module;
}

/* ---- nodes ---- */

void kiln_ir_node_label(const kiln_node *n, char *buf, size_t size) {
  const char *kn = kiln_node_kind_name(n->kind);
  const char *nm = kiln_node_name(n);
  if (nm)
    snprintf(buf, size, "node '%s' (%s)", nm, kn);
  else
    snprintf(buf, size, "node #%u (%s)", n->pos, kn);
}

static uint32_t insert_position(const kiln_function *f) {
  if (f->insert_point && !f->insert_point->removed && f->insert_point->function == f)
    return f->insert_point->pos;
  return f->n_nodes;
}

kiln_status kiln_ir_node_insert(kiln_function *f, kiln_node_kind kind, const char *name,
                                kiln_value *const *inputs, uint32_t n_inputs, kiln_attrs *attrs,
                                uint32_t n_results, const kiln_type *types,
                                const char *const *result_names, kiln_node **out) {
  kiln_module *m = f->module;
  char label[160];
  if (name)
    snprintf(label, sizeof label, "function '%s', node '%s' (%s)", f->name, name,
             kiln_node_kind_name(kind));
  else if (result_names && n_results && result_names[0])
    snprintf(label, sizeof label, "function '%s', node '%s' (%s)", f->name, result_names[0],
             kiln_node_kind_name(kind));
  else
    snprintf(label, sizeof label, "function '%s', node #%u (%s)", f->name, insert_position(f),
             kiln_node_kind_name(kind));
  /* Result names: given ones must be free and distinct; the rest automatic. */
  const char *names[MAX_RESULTS];
  char autobuf[MAX_RESULTS][16];
  for (uint32_t i = 0; i < n_results; i++) {
    const char *rn = result_names ? result_names[i] : NULL;
    names[i] = rn;
    if (!rn)
      continue;
    if (!rn[0])
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: result %u has an empty name", label, i);
    if (kiln_ir_names_find(&m->names, rn))
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "%s: result %u name '%s' is already taken in module '%s'", label, i,
                              rn, m->name);
    for (uint32_t j = 0; j < i; j++)
      if (names[j] && strcmp(names[j], rn) == 0)
        return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: result name '%s' given twice", label,
                                rn);
  }
  for (uint32_t i = 0; i < n_results; i++)
    if (!names[i])
      names[i] = auto_name(m, names, n_results, autobuf[i], sizeof autobuf[i]);

  kiln_node *n = kiln_arena_alloc(m->arena, sizeof *n);
  kiln_value **ins = n ? kiln_arena_alloc(m->arena, (size_t)n_inputs * sizeof *ins) : NULL;
  kiln_value *res = ins ? kiln_arena_alloc(m->arena, (size_t)n_results * sizeof *res) : NULL;
  const char *nm = NULL;
  bool ok = res != NULL;
  if (ok && name) {
    nm = kiln_arena_strdup(m->arena, name);
    ok = nm != NULL;
  }
  for (uint32_t i = 0; ok && i < n_results; i++) {
    res[i].name = kiln_arena_strdup(m->arena, names[i]);
    ok = res[i].name != NULL;
  }
  ok = ok &&
       kiln_ir_grow(m->arena, (void **)&f->nodes, &f->cap_nodes, f->n_nodes + 1,
                    sizeof(kiln_node *)) &&
       kiln_ir_names_reserve(&m->names, n_results);
  if (!ok)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", label);

  /* Commit: nothing below can fail. */
  n->kind = kind;
  n->name = nm;
  n->function = f;
  n->n_inputs = n_inputs;
  n->n_results = n_results;
  n->inputs = ins;
  n->results = res;
  n->attrs = attrs;
  for (uint32_t i = 0; i < n_inputs; i++) {
    ins[i] = inputs ? inputs[i] : NULL;
    if (ins[i])
      ins[i]->uses++;
  }
  for (uint32_t i = 0; i < n_results; i++) {
    res[i].kind = KILN_VALUE_RESULT;
    res[i].type = types[i];
    res[i].module = m;
    res[i].producer = n;
    res[i].result_index = i;
    res[i].id = m->n_values++;
    kiln_ir_names_insert(&m->names, res[i].name, &res[i]);
  }
  uint32_t pos = insert_position(f);
  memmove(&f->nodes[pos + 1], &f->nodes[pos], (size_t)(f->n_nodes - pos) * sizeof(kiln_node *));
  f->nodes[pos] = n;
  f->n_nodes++;
  for (uint32_t i = pos; i < f->n_nodes; i++)
    f->nodes[i]->pos = i;
  if (out)
    *out = n;
  return NULL;
}

kiln_status kiln_function_add_node_named(kiln_function *f, kiln_node_kind kind, const char *name,
                                         kiln_value *const *inputs, uint32_t n_inputs,
                                         const kiln_attr_desc *attrs, uint32_t n_attrs,
                                         uint32_t n_results, const char *const *result_names,
                                         kiln_node **out) {
  if (out)
    *out = NULL;
  if (!f)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "add node: function is NULL");
  kiln_module *m = f->module;
  const kiln_node_kind_info *info = kiln_node_kind_get_info(kind);
  const char *nn = name                                             ? name
                   : (result_names && n_results && result_names[0]) ? result_names[0]
                                                                    : NULL;
  char label[160];
  if (nn)
    snprintf(label, sizeof label, "function '%s', node '%s' (%s)", f->name, nn,
             kiln_node_kind_name(kind));
  else
    snprintf(label, sizeof label, "function '%s', node #%u (%s)", f->name, insert_position(f),
             kiln_node_kind_name(kind));
  if (!info)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: invalid node kind %d", label, (int)kind);
  if (n_inputs < info->min_inputs || n_inputs > info->max_inputs) {
    if (info->min_inputs == info->max_inputs)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: takes %u input(s), %u given", label,
                              info->min_inputs, n_inputs);
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: takes %u to %u inputs, %u given", label,
                            info->min_inputs, info->max_inputs, n_inputs);
  }
  if (n_results && (n_results < info->min_results || n_results > info->max_results))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: has %u to %u results, %u asked for", label,
                            info->min_results, info->max_results, n_results);
  if (n_inputs && !inputs)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: %u inputs but the array is NULL", label,
                            n_inputs);
  uint32_t pos = insert_position(f);
  const kiln_type *in_types[64];
  for (uint32_t i = 0; i < n_inputs; i++) {
    kiln_value *v = inputs[i];
    in_types[i] = v ? &v->type : NULL;
    if (!v) {
      if (i < info->min_inputs)
        return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: required input %u is absent", label, i);
      continue;
    }
    if (v->module != m)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: input %u '%s' belongs to another module",
                              label, i, v->name);
    if (v->kind == KILN_VALUE_RESULT) {
      const kiln_node *p = v->producer;
      if (p->removed)
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "%s: input %u '%s' is the result of a removed node", label, i,
                                v->name);
      if (p->function != f)
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "%s: input %u '%s' is a result in function '%s'", label, i, v->name,
                                p->function->name);
      if (p->pos >= pos)
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "%s: input %u '%s' is defined after the insertion point", label, i,
                                v->name);
    }
  }
  kiln_attrs *as = NULL;
  kiln_status s = kiln_ir_attrs_build(kiln_ir_arena_block, m->arena, attrs, n_attrs, &as);
  if (s)
    return kiln_status_wrap(s, "%s", label);
  kiln_type types[MAX_RESULTS];
  uint32_t got = 0;
  s = kiln_infer_types(kind, in_types, n_inputs, as, n_results, types, &got);
  if (s)
    return kiln_status_wrap(s, "%s", label);
  if (got < info->min_results || got > info->max_results || (n_results && got != n_results))
    return kiln_status_make(KILN_INTERNAL, "%s: inference produced %u results", label, got);
  return kiln_ir_node_insert(f, kind, name, inputs, n_inputs, as, got, types, result_names, out);
}

kiln_status kiln_function_add_node(kiln_function *f, kiln_node_kind kind, const char *name,
                                   kiln_value *const *inputs, uint32_t n_inputs,
                                   const kiln_attr_desc *attrs, uint32_t n_attrs,
                                   uint32_t n_results, kiln_node **out) {
  return kiln_function_add_node_named(f, kind, name, inputs, n_inputs, attrs, n_attrs, n_results,
                                      NULL, out);
}

/* ---- outputs ---- */

kiln_status kiln_function_add_output(kiln_function *f, const char *name, kiln_value *v) {
  if (!f || !v)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "add output '%s': %s is NULL", name ? name : "?",
                            f ? "value" : "function");
  if (!name)
    name = v->name;
  if (!name[0])
    return kiln_status_make(KILN_INVALID_ARGUMENT, "function '%s': output with an empty name",
                            f->name);
  if (v->module != f->module)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "function '%s': output '%s': value '%s' belongs to another module",
                            f->name, name, v->name);
  if (v->kind == KILN_VALUE_RESULT && (v->producer->removed || v->producer->function != f))
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "function '%s': output '%s': value '%s' is not a result in this "
                            "function",
                            f->name, name, v->name);
  for (uint32_t i = 0; i < f->n_outputs; i++)
    if (strcmp(f->out_names[i], name) == 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "function '%s': output '%s' bound twice",
                              f->name, name);
  kiln_arena *a = f->module->arena;
  const char *nm = kiln_arena_strdup(a, name);
  uint32_t cap = f->cap_outputs;
  if (!nm || !kiln_ir_grow(a, (void **)&f->out_names, &cap, f->n_outputs + 1, sizeof(char *)))
    return kiln_status_make(KILN_OUT_OF_MEMORY, "function '%s': out of memory adding output '%s'",
                            f->name, name);
  uint32_t cap2 = f->cap_outputs;
  if (!kiln_ir_grow(a, (void **)&f->out_values, &cap2, f->n_outputs + 1, sizeof(kiln_value *)))
    return kiln_status_make(KILN_OUT_OF_MEMORY, "function '%s': out of memory adding output '%s'",
                            f->name, name);
  f->cap_outputs = cap < cap2 ? cap : cap2;
  f->out_names[f->n_outputs] = nm;
  f->out_values[f->n_outputs] = v;
  f->n_outputs++;
  v->uses++;
  return NULL;
}

uint32_t kiln_function_output_count(const kiln_function *f) {
  return f->n_outputs;
}

const char *kiln_function_output_name(const kiln_function *f, uint32_t i) {
  return i < f->n_outputs ? f->out_names[i] : NULL;
}

kiln_value *kiln_function_output_value(const kiln_function *f, uint32_t i) {
  return i < f->n_outputs ? f->out_values[i] : NULL;
}

uint32_t kiln_function_node_count(const kiln_function *f) {
  return f->n_nodes;
}

kiln_node *kiln_function_node(const kiln_function *f, uint32_t i) {
  return i < f->n_nodes ? f->nodes[i] : NULL;
}

kiln_node_kind kiln_node_get_kind(const kiln_node *n) {
  return n->kind;
}

const char *kiln_node_name(const kiln_node *n) {
  if (n->name)
    return n->name;
  return n->n_results ? n->results[0].name : NULL;
}

kiln_function *kiln_node_function(const kiln_node *n) {
  return n->function;
}

uint32_t kiln_node_input_count(const kiln_node *n) {
  return n->n_inputs;
}

kiln_value *kiln_node_input(const kiln_node *n, uint32_t i) {
  return i < n->n_inputs ? n->inputs[i] : NULL;
}

uint32_t kiln_node_result_count(const kiln_node *n) {
  return n->n_results;
}

kiln_value *kiln_node_result(const kiln_node *n, uint32_t i) {
  return i < n->n_results ? &n->results[i] : NULL;
}

const kiln_attrs *kiln_node_attrs(const kiln_node *n) {
  return n->attrs;
}

/* ---- edits ---- */

kiln_status kiln_function_replace_uses(kiln_function *f, kiln_value *from, kiln_value *to) {
  if (!f || !from || !to)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "replace uses: NULL argument");
  if (from->module != f->module || to->module != f->module)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "function '%s': replace uses of '%s' by '%s': value of another module",
                            f->name, from->name, to->name);
  if (!kiln_type_equal(&from->type, &to->type)) {
    char a[128], b[128];
    kiln_type_format(&from->type, a, sizeof a);
    kiln_type_format(&to->type, b, sizeof b);
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "function '%s': replace uses of '%s' (%s) by '%s' (%s): types differ",
                            f->name, from->name, a, to->name, b);
  }
  if (from == to)
    return NULL;
  for (uint32_t i = 0; i < f->n_nodes; i++) {
    kiln_node *n = f->nodes[i];
    for (uint32_t j = 0; j < n->n_inputs; j++) {
      if (n->inputs[j] == from) {
        n->inputs[j] = to;
        from->uses--;
        to->uses++;
      }
    }
  }
  for (uint32_t i = 0; i < f->n_outputs; i++) {
    if (f->out_values[i] == from) {
      f->out_values[i] = to;
      from->uses--;
      to->uses++;
    }
  }
  return NULL;
}

kiln_status kiln_function_remove_node(kiln_function *f, kiln_node *n) {
  if (!f || !n)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "remove node: NULL argument");
  char label[160];
  kiln_ir_node_label(n, label, sizeof label);
  if (n->function != f || n->removed)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "function '%s': %s is not in this function",
                            f->name, label);
  for (uint32_t i = 0; i < n->n_results; i++)
    if (n->results[i].uses)
      return kiln_status_make(KILN_FAILED_PRECONDITION,
                              "function '%s': %s: result '%s' still has %u use(s)", f->name, label,
                              n->results[i].name, n->results[i].uses);
  for (uint32_t i = 0; i < n->n_inputs; i++)
    if (n->inputs[i])
      n->inputs[i]->uses--;
  for (uint32_t i = 0; i < n->n_results; i++)
    kiln_ir_names_remove(&f->module->names, n->results[i].name);
  uint32_t pos = n->pos;
  memmove(&f->nodes[pos], &f->nodes[pos + 1], (size_t)(f->n_nodes - pos - 1) * sizeof(kiln_node *));
  f->n_nodes--;
  for (uint32_t i = pos; i < f->n_nodes; i++)
    f->nodes[i]->pos = i;
  n->removed = true;
  if (f->insert_point == n)
    f->insert_point = pos < f->n_nodes ? f->nodes[pos] : NULL;
  return NULL;
}

void kiln_function_set_insert_point(kiln_function *f, kiln_node *n) {
  f->insert_point = (n && n->function == f && !n->removed) ? n : NULL;
}
