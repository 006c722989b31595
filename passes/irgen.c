/* passes/irgen.c: IRGen, graph function -> instruction IR.
 *
 * One compute instruction per node. Results bound to function outputs are
 * written straight into OUTPUT buffers; other results are activations with
 * an `alloc` right before their producer and a `dealloc` right after the
 * last use of their storage (views included). Pure reshapes become views
 * (or a copy when the result is an output). The memory plan here is the
 * trivial one, sequential 64-byte aligned offsets; the planner in passes/
 * replaces it. */
#include <stdio.h>
#include <string.h>

#include "ir_internal.h"

#define NONE UINT32_MAX

typedef struct irgen {
  const kiln_function *f;
  const kiln_module *m;
  kiln_ir *ir;
  kiln_buffer **map;   /* value id -> buffer holding it */
  uint32_t *first_out; /* value id -> first output binding, NONE if not bound */
  uint32_t *root;      /* value id -> value id owning its activation storage, NONE if none */
  uint32_t *last_use;  /* root value id -> position of its last use */
  uint32_t *next_dead; /* root value id -> next root freed at the same position */
  uint32_t *dead_head; /* node position -> first root to free after it */
  kiln_buffer **outputs;
  uint64_t act_bytes;
} irgen;

static bool is_view_node(const kiln_node *n) {
  switch (n->kind) {
  case KILN_NODE_Reshape:
  case KILN_NODE_Flatten:
  case KILN_NODE_Squeeze:
  case KILN_NODE_Unsqueeze:
  case KILN_NODE_Identity:
    return true;
  case KILN_NODE_Dropout:
    /* the mask would still need computing */
    return n->n_results == 1 || n->results[1].uses == 0;
  default:
    return false;
  }
}

/* `base` if no buffer has that name yet, else "base.1", "base.2", ... */
static const char *unique_name(const kiln_ir *ir, const char *base, char *buf, size_t n) {
  if (!kiln_ir_find_buffer(ir, base))
    return base;
  for (uint32_t k = 1;; k++) {
    snprintf(buf, n, "%s.%u", base, k);
    if (!kiln_ir_find_buffer(ir, buf))
      return buf;
  }
}

static kiln_status add_named(irgen *g, kiln_buffer_kind kind, const char *name, const kiln_type *t,
                             const void *data, uint32_t io, kiln_buffer *base, uint64_t off,
                             kiln_buffer **out) {
  char buf[512];
  const char *nm = name;
  if (strlen(name) < sizeof buf - 16)
    nm = unique_name(g->ir, name, buf, sizeof buf);
  else if (kiln_ir_find_buffer(g->ir, name))
    nm = NULL; /* an absurdly long clashing name: fall back to an automatic one */
  return kiln_ir_add_buffer(g->ir, kind, nm, t, data, io, base, off, out);
}

static kiln_status emit(irgen *g, kiln_instr_kind kind, kiln_buffer *a, kiln_operand_dir da,
                        kiln_buffer *b) {
  kiln_buffer *ops[2] = {a, b};
  kiln_operand_dir dirs[2] = {da, KILN_IN};
  return kiln_ir_add_instr(g->ir, kind, ops, dirs, b ? 2 : 1, NULL, 0, NULL, NULL);
}

static void *temp(irgen *g, size_t count, size_t size, bool fill_none) {
  void *p = kiln_arena_alloc(g->ir->arena, count * size + 1);
  if (p && fill_none)
    memset(p, 0xff, count * size);
  return p;
}

static kiln_status plan_lifetimes(irgen *g) {
  const kiln_function *f = g->f;
  for (uint32_t i = 0; i < f->n_nodes; i++) {
    const kiln_node *n = f->nodes[i];
    bool view = is_view_node(n);
    for (uint32_t r = 0; r < n->n_results; r++) {
      const kiln_value *v = &n->results[r];
      if (g->first_out[v->id] != NONE)
        continue;
      if (view && r == 0)
        g->root[v->id] = n->inputs[0] ? g->root[n->inputs[0]->id] : NONE;
      else if (!view)
        g->root[v->id] = v->id;
      if (g->root[v->id] == v->id)
        g->last_use[v->id] = i;
    }
    for (uint32_t j = 0; j < n->n_inputs; j++) {
      const kiln_value *v = n->inputs[j];
      if (v && g->root[v->id] != NONE && i > g->last_use[g->root[v->id]])
        g->last_use[g->root[v->id]] = i;
    }
  }
  /* Chain roots by the position they die at, lowest id first. */
  for (uint32_t id = g->m->n_values; id-- > 0;) {
    if (g->root[id] != id)
      continue;
    uint32_t pos = g->last_use[id];
    g->next_dead[id] = g->dead_head[pos];
    g->dead_head[pos] = id;
  }
  return NULL;
}

static kiln_status gen_node(irgen *g, const kiln_node *n, uint32_t pos) {
  char label[200];
  kiln_ir_node_label(n, label, sizeof label);
  kiln_buffer *ins[64];
  kiln_operand_dir dirs[128];
  kiln_buffer *ops[128];
  for (uint32_t j = 0; j < n->n_inputs; j++) {
    const kiln_value *v = n->inputs[j];
    ins[j] = v ? g->map[v->id] : NULL;
    if (v && !ins[j])
      return kiln_status_make(KILN_FAILED_PRECONDITION,
                              "irgen: function '%s', %s: input %u '%s' has no buffer yet (verify "
                              "the module first)",
                              g->f->name, label, j, v->name);
  }
  if (is_view_node(n)) {
    const kiln_value *v = &n->results[0];
    uint32_t o = g->first_out[v->id];
    if (o != NONE) {
      KILN_TRY(emit(g, KILN_INSTR_Copy, g->outputs[o], KILN_OUT, ins[0]));
      g->map[v->id] = g->outputs[o];
    } else {
      kiln_buffer *b;
      KILN_TRY(add_named(g, KILN_BUFFER_VIEW, v->name, &v->type, NULL, 0, ins[0], 0, &b));
      KILN_TRY(emit(g, KILN_INSTR_View, b, KILN_OUT, ins[0]));
      g->map[v->id] = b;
    }
  } else {
    for (uint32_t r = 0; r < n->n_results; r++) {
      const kiln_value *v = &n->results[r];
      uint32_t o = g->first_out[v->id];
      kiln_buffer *b;
      if (o != NONE) {
        b = g->outputs[o];
      } else {
        uint64_t off = (g->act_bytes + 63) & ~(uint64_t)63;
        KILN_TRY(add_named(g, KILN_BUFFER_ACTIVATION, v->name, &v->type, NULL, 0, NULL, off, &b));
        g->act_bytes = off + (uint64_t)kiln_type_bytes(&v->type);
        KILN_TRY(emit(g, KILN_INSTR_Alloc, b, KILN_OUT, NULL));
      }
      g->map[v->id] = b;
      ops[r] = b;
      dirs[r] = KILN_OUT;
    }
    for (uint32_t j = 0; j < n->n_inputs; j++) {
      ops[n->n_results + j] = ins[j];
      dirs[n->n_results + j] = KILN_IN;
    }
    kiln_instr *in = NULL;
    KILN_TRY(kiln_ir_add_instr_attrs(g->ir, kiln_instr_kind_for_node(n->kind), ops, dirs,
                                     n->n_results + n->n_inputs, n->attrs, NULL, &in));
    /* The node's name, so that profiles and messages can say which model
     * node an instruction computes. */
    KILN_TRY(kiln_instr_set_name(in, kiln_node_name(n)));
  }
  for (uint32_t id = g->dead_head[pos]; id != NONE; id = g->next_dead[id])
    KILN_TRY(emit(g, KILN_INSTR_Dealloc, g->map[id], KILN_IN, NULL));
  return NULL;
}

static kiln_status gen(irgen *g) {
  const kiln_function *f = g->f;
  const kiln_module *m = g->m;
  uint32_t nv = m->n_values;
  g->map = temp(g, nv, sizeof *g->map, false);
  g->first_out = temp(g, nv, sizeof(uint32_t), true);
  g->root = temp(g, nv, sizeof(uint32_t), true);
  g->last_use = temp(g, nv, sizeof(uint32_t), true);
  g->next_dead = temp(g, nv, sizeof(uint32_t), true);
  g->dead_head = temp(g, f->n_nodes, sizeof(uint32_t), true);
  g->outputs = temp(g, f->n_outputs, sizeof *g->outputs, false);
  if (!g->map || !g->first_out || !g->root || !g->last_use || !g->next_dead || !g->dead_head ||
      !g->outputs)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "irgen: out of memory for function '%s'", f->name);
  for (uint32_t i = 0; i < f->n_nodes; i++)
    if (f->nodes[i]->n_inputs > 64 || f->nodes[i]->n_results > 64)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "irgen: function '%s': node too wide",
                              f->name);
  /* Side tables are indexed by value id: refuse foreign values up front. */
  for (uint32_t i = 0; i < f->n_nodes; i++)
    for (uint32_t j = 0; j < f->nodes[i]->n_inputs; j++)
      if (f->nodes[i]->inputs[j] && f->nodes[i]->inputs[j]->module != m)
        return kiln_status_make(KILN_FAILED_PRECONDITION,
                                "irgen: function '%s': node %u input %u belongs to another module",
                                f->name, i, j);
  for (uint32_t i = 0; i < f->n_outputs; i++)
    if (!f->out_values[i] || f->out_values[i]->module != m)
      return kiln_status_make(KILN_FAILED_PRECONDITION,
                              "irgen: function '%s': output '%s' is not bound to a value of the "
                              "module",
                              f->name, f->out_names[i]);
  for (uint32_t i = 0; i < f->n_outputs; i++) {
    const kiln_value *v = f->out_values[i];
    if (v->kind == KILN_VALUE_RESULT && g->first_out[v->id] == NONE)
      g->first_out[v->id] = i;
  }
  for (uint32_t i = 0; i < m->n_inputs; i++) {
    const kiln_value *v = m->inputs[i];
    KILN_TRY(add_named(g, KILN_BUFFER_INPUT, v->name, &v->type, NULL, i, NULL, 0, &g->map[v->id]));
  }
  /* Weights only for constants this function reads. */
  bool *used = temp(g, nv, sizeof(bool), false);
  if (!used)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "irgen: out of memory for function '%s'", f->name);
  for (uint32_t i = 0; i < f->n_nodes; i++)
    for (uint32_t j = 0; j < f->nodes[i]->n_inputs; j++)
      if (f->nodes[i]->inputs[j])
        used[f->nodes[i]->inputs[j]->id] = true;
  for (uint32_t i = 0; i < f->n_outputs; i++)
    used[f->out_values[i]->id] = true;
  for (uint32_t i = 0; i < m->n_constants; i++) {
    const kiln_value *v = m->constants[i];
    if (!used[v->id])
      continue;
    KILN_TRY(
        add_named(g, KILN_BUFFER_WEIGHT, v->name, &v->type, v->data, 0, NULL, 0, &g->map[v->id]));
    /* The IR holds its own share of the data: an executable keeps the
     * IR, not the module it came from. */
    g->map[v->id]->blob = kiln_ir_blob_ref(v->blob);
  }
  for (uint32_t i = 0; i < f->n_outputs; i++)
    KILN_TRY(add_named(g, KILN_BUFFER_OUTPUT, f->out_names[i], &f->out_values[i]->type, NULL, i,
                       NULL, 0, &g->outputs[i]));
  KILN_TRY(plan_lifetimes(g));
  for (uint32_t i = 0; i < f->n_nodes; i++)
    KILN_TRY(gen_node(g, f->nodes[i], i));
  /* Outputs not written by their producer: bound to a module value, or a
   * second binding of the same result. */
  for (uint32_t i = 0; i < f->n_outputs; i++) {
    const kiln_value *v = f->out_values[i];
    kiln_buffer *src = NULL;
    if (v->kind != KILN_VALUE_RESULT)
      src = g->map[v->id];
    else if (g->first_out[v->id] != i)
      src = g->outputs[g->first_out[v->id]];
    if (src)
      KILN_TRY(emit(g, KILN_INSTR_Copy, g->outputs[i], KILN_OUT, src));
  }
  kiln_ir_set_activation_bytes(g->ir, (g->act_bytes + 63) & ~(uint64_t)63);
  return NULL;
}

kiln_status kiln_irgen(const kiln_function *f, kiln_ir **out) {
  if (!f || !out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "irgen: NULL argument");
  *out = NULL;
  irgen g = {.f = f, .m = f->module};
  KILN_TRY(kiln_ir_create(f->module->alloc, f->name, &g.ir));
  kiln_status s = gen(&g);
  if (s) {
    kiln_ir_destroy(g.ir);
    return kiln_status_wrap(s, "irgen of function '%s'", f->name);
  }
  *out = g.ir;
  return NULL;
}
