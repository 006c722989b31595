/* onnx_load.c: kiln_onnx_load / kiln_onnx_load_memory. Parses a ModelProto,
 * checks every operator against the importer table (one error listing all
 * unsupported nodes), turns initializers into constants and graph inputs
 * into module inputs (binding symbolic dims), imports the nodes in order and
 * binds the graph outputs. */
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"

/* ---- growable string ---- */
void onnx_sb_printf(onnx_sb *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = true;
      return;
    }
    if (b->s && (size_t)k < room) {
      b->len += (size_t)k;
      return;
    }
    size_t ncap = (b->cap ? b->cap * 2 : 256) + (size_t)k;
    char *ns = realloc(b->s, ncap);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns;
    b->cap = ncap;
  }
}

void onnx_sb_free(onnx_sb *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}

/* ---- name map (FNV-1a, linear probing) ---- */
static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

onnx_entry *onnx_map_find(onnx_loader *L, const char *name) {
  if (!L->map_cap)
    return NULL;
  for (uint32_t i = hash_name(name) & (L->map_cap - 1);; i = (i + 1) & (L->map_cap - 1)) {
    if (!L->map[i].name)
      return NULL;
    if (!strcmp(L->map[i].name, name))
      return &L->map[i];
  }
}

kiln_status onnx_map_put(onnx_loader *L, const char *name, kiln_value *v, int32_t known) {
  if (onnx_map_find(L, name))
    return kiln_status_make(KILN_PARSE_ERROR, "%s: value '%s' is defined more than once", L->file,
                            name);
  if ((L->map_count + 1) * 2 > L->map_cap) {
    uint32_t ncap = L->map_cap ? L->map_cap * 2 : 64;
    onnx_entry *nm = calloc(ncap, sizeof *nm);
    if (!nm)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", L->file);
    for (uint32_t i = 0; i < L->map_cap; i++) {
      if (!L->map[i].name)
        continue;
      uint32_t j = hash_name(L->map[i].name) & (ncap - 1);
      while (nm[j].name)
        j = (j + 1) & (ncap - 1);
      nm[j] = L->map[i];
    }
    free(L->map);
    L->map = nm;
    L->map_cap = ncap;
  }
  uint32_t j = hash_name(name) & (L->map_cap - 1);
  while (L->map[j].name)
    j = (j + 1) & (L->map_cap - 1);
  L->map[j] = (onnx_entry){.name = name, .value = v, .known = known};
  L->map_count++;
  return NULL;
}

const char *onnx_node_desc(const Onnx__NodeProto *n) {
  static _Thread_local char buf[320];
  const char *name = n->name && *n->name           ? n->name
                     : n->n_output && n->output[0] ? n->output[0]
                                                   : "";
  snprintf(buf, sizeof buf, "'%.200s' (%.80s)", name, n->op_type ? n->op_type : "?");
  return buf;
}

/* ---- emitting nodes ---- */
/* A value name used neither by the module nor by any ONNX name seen so far;
 * the "onnx." prefix keeps it apart from names exporters generate. */
void onnx_fresh_name(onnx_loader *L, char *buf, size_t n) {
  do
    snprintf(buf, n, "onnx.%u", L->auto_id++);
  while (kiln_module_find_value(L->m, buf) || onnx_map_find(L, buf));
}

kiln_status onnx_bind_output(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i, kiln_value *v) {
  if (i >= n->n_output || !n->output[i][0])
    return NULL;
  return onnx_map_put(L, n->output[i], v, -1);
}

kiln_status onnx_emit(onnx_loader *L, const Onnx__NodeProto *n, kiln_node_kind kind,
                      kiln_value *const *inputs, uint32_t n_inputs, const onnx_attr_list *al,
                      uint32_t n_results) {
  const kiln_node_kind_info *info = kiln_node_kind_get_info(kind);
  if (!info)
    return kiln_status_make(KILN_INTERNAL, "%s: node %s: bad kind", L->file, onnx_node_desc(n));
  uint32_t nr = n_results;
  if (!nr)
    nr = n->n_output > info->min_results ? (uint32_t)n->n_output : info->min_results;
  if (nr > info->max_results || n->n_output > nr)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: node %s has %zu outputs; kiln's %s makes at most %u", L->file,
                            onnx_node_desc(n), n->n_output, info->name, info->max_results);
  const char *names[64] = {0};
  char fresh[64][32];
  for (uint32_t i = 0; i < nr; i++) {
    if (i >= n->n_output || !n->output[i][0]) {
      /* Unbound results get names that cannot collide with later ONNX names. */
      onnx_fresh_name(L, fresh[i], sizeof fresh[i]);
      names[i] = fresh[i];
      continue;
    }
    if (onnx_map_find(L, n->output[i]) || kiln_module_find_value(L->m, n->output[i]))
      return kiln_status_make(KILN_PARSE_ERROR, "%s: node %s: output '%s' is defined twice",
                              L->file, onnx_node_desc(n), n->output[i]);
    names[i] = n->output[i];
  }
  kiln_node *node;
  kiln_status s =
      kiln_function_add_node_named(L->f, kind, n->name && *n->name ? n->name : NULL, inputs,
                                   n_inputs, al ? al->d : NULL, al ? al->n : 0, nr, names, &node);
  /* the IR's message already names the node (by its name, else its first
   * result, as onnx_node_desc does) */
  if (s)
    return kiln_status_wrap(s, "%s", L->file);
  for (uint32_t i = 0; i < nr && i < n->n_output; i++)
    if (n->output[i][0])
      KILN_TRY(onnx_map_put(L, names[i], kiln_node_result(node, i), -1));
  return NULL;
}

kiln_status onnx_emit_helper(onnx_loader *L, const Onnx__NodeProto *n, kiln_node_kind kind,
                             kiln_value *const *inputs, uint32_t n_inputs,
                             const kiln_attr_desc *attrs, uint32_t n_attrs, kiln_node **out) {
  const kiln_node_kind_info *info = kiln_node_kind_get_info(kind);
  uint32_t nr = info ? info->min_results : 1;
  char fresh[4][32];
  const char *names[4] = {0};
  for (uint32_t i = 0; i < nr && i < 4; i++) {
    onnx_fresh_name(L, fresh[i], sizeof fresh[i]);
    names[i] = fresh[i];
  }
  kiln_status s = kiln_function_add_node_named(L->f, kind, NULL, inputs, n_inputs, attrs, n_attrs,
                                               nr, names, out);
  if (s)
    return kiln_status_wrap(s, "%s: node %s (helper %s)", L->file, onnx_node_desc(n),
                            kiln_node_kind_name(kind));
  return NULL;
}

kiln_status onnx_emit_value(onnx_loader *L, const Onnx__NodeProto *n, kiln_node_kind kind,
                            kiln_value *a, kiln_value *b, const kiln_attr_desc *attrs,
                            uint32_t n_attrs, kiln_value **out) {
  kiln_value *in[2] = {a, b};
  kiln_node *r;
  KILN_TRY(onnx_emit_helper(L, n, kind, in, b ? 2 : 1, attrs, n_attrs, &r));
  *out = kiln_node_result(r, 0);
  return NULL;
}

kiln_status onnx_emit_ints(onnx_loader *L, const Onnx__NodeProto *n, kiln_node_kind kind,
                           const char *attr, kiln_value *x, const int64_t *v, uint32_t len,
                           kiln_value **out) {
  kiln_attr_desc a = KILN_ATTR_IS(attr, v, len);
  return onnx_emit_value(L, n, kind, x, NULL, &a, 1, out);
}

/* ---- the model ---- */
static bool is_default_domain(const char *d) {
  return !d || !*d || !strcmp(d, "ai.onnx");
}

static kiln_status check_operators(onnx_loader *L, const Onnx__GraphProto *g) {
  onnx_sb sb = {0};
  uint32_t bad = 0;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    if (!n->op_type || !*n->op_type) {
      onnx_sb_free(&sb);
      return kiln_status_make(KILN_PARSE_ERROR, "%s: node %zu has no op_type", L->file, i);
    }
    if (is_default_domain(n->domain) && onnx_op_find(n->op_type, L->opset))
      continue;
    onnx_sb_printf(&sb, "\n  node '%s': %s (domain '%s', opset %lld)",
                   n->name && *n->name ? n->name : (n->n_output ? n->output[0] : ""), n->op_type,
                   n->domain && *n->domain ? n->domain : "ai.onnx", (long long)L->opset);
    bad++;
  }
  if (!bad)
    return NULL;
  kiln_status s = kiln_status_make(KILN_UNIMPLEMENTED, "%s: %u unsupported operator%s:%s", L->file,
                                   bad, bad == 1 ? "" : "s", sb.oom ? " (out of memory)" : sb.s);
  onnx_sb_free(&sb);
  return s;
}

static int32_t find_known(const kiln_onnx_options *o, const char *name) {
  for (uint32_t i = 0; o && i < o->known_input_count; i++)
    if (o->known_inputs[i].name && !strcmp(o->known_inputs[i].name, name))
      return (int32_t)i;
  return -1;
}

static bool find_dim(const kiln_onnx_options *o, const char *name, int64_t *out) {
  for (uint32_t i = 0; o && i < o->dim_count; i++)
    if (o->dim_names[i] && !strcmp(o->dim_names[i], name)) {
      *out = o->dim_values[i];
      return true;
    }
  return false;
}

/* Is graph input `name` used where its data is needed at run time? */
static bool used_as_data(const Onnx__GraphProto *g, const char *name, int64_t opset) {
  for (size_t i = 0; i < g->n_output; i++)
    if (g->output[i]->name && !strcmp(g->output[i]->name, name))
      return true;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    const onnx_op *op = onnx_op_find(n->op_type, opset);
    for (size_t j = 0; j < n->n_input; j++)
      if (!strcmp(n->input[j], name) && !(j < 32 && op && (op->ct_inputs >> j) & 1))
        return true;
  }
  return false;
}

static bool is_initializer(const Onnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name))
      return true;
  return false;
}

/* Graph input i's declared shape, where it is a tensor input with one
 * and not an initializer (whose default kiln keeps); else NULL. */
static const Onnx__TensorShapeProto *input_shape(const Onnx__GraphProto *g, size_t i) {
  const Onnx__ValueInfoProto *vi = g->input[i];
  if (!vi->name || !*vi->name || is_initializer(g, vi->name) || !vi->type ||
      vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type)
    return NULL;
  return vi->type->tensor_type->shape;
}

/* Dim d's name, where it is a named symbolic dim; else NULL. */
static const char *dim_name(const Onnx__TensorShapeProto *sh, size_t d) {
  const Onnx__TensorShapeProto__Dimension *dim = sh->dim[d];
  return dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                 dim->dim_param && *dim->dim_param
             ? dim->dim_param
             : NULL;
}

/* The type of graph input vi: declared shape, with symbolic dims bound by
 * options or by the known tensor; unbound names go to `unbound`. */
static kiln_status input_type(onnx_loader *L, const Onnx__ValueInfoProto *vi, int32_t known,
                              onnx_sb *unbound, uint32_t *n_unbound, kiln_type *out) {
  const char *name = vi->name;
  const Onnx__TypeProto *tp = vi->type;
  if (!tp)
    return kiln_status_make(KILN_PARSE_ERROR, "%s: graph input '%s' has no type", L->file, name);
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "%s: graph input '%s' is a sequence, map, optional or sparse tensor "
                            "(kiln supports dense tensors only)",
                            L->file, name);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  char what[256];
  snprintf(what, sizeof what, "%s: graph input '%.200s'", L->file, name);
  kiln_elem e;
  KILN_TRY(onnx_elem_from_dtype(tt->has_elem_type ? tt->elem_type : 0, what, &e));
  const kiln_tensor *kt = known >= 0 ? &L->opts->known_inputs[known] : NULL;
  /* Test data often stores bfloat16 as uint16: the bits are what matter. */
  if (kt && kt->type.elem != e && !(kt->type.elem == KILN_U16 && (e == KILN_BF16 || e == KILN_F16)))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: known value has type %s, declared %s", what,
                            kiln_elem_name(kt->type.elem), kiln_elem_name(e));
  if (!tt->shape) {
    if (kt) {
      *out = kt->type;
      return NULL;
    }
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: has no shape (unknown rank) and no known value", what);
  }
  size_t rank = tt->shape->n_dim;
  if (rank > KILN_MAX_RANK)
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: rank %zu exceeds kiln's maximum of %d", what,
                            rank, KILN_MAX_RANK);
  if (kt && kt->type.rank != rank) {
    /* Declared shapes are informational in ONNX: the given data wins. */
    KILN_TRY_CTX(kiln_type_make(e, kt->type.rank, kt->type.dims, out), "%s", what);
    return NULL;
  }
  int64_t dims[KILN_MAX_RANK] = {0};
  uint32_t unbound_before = *n_unbound;
  for (size_t d = 0; d < rank; d++) {
    const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
    if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (dim->dim_value < 0)
        return kiln_status_make(KILN_PARSE_ERROR, "%s: dim %zu is negative (%lld)", what, d,
                                (long long)dim->dim_value);
      dims[d] = kt ? kt->type.dims[d] : dim->dim_value;
      continue;
    }
    const char *named = dim_name(tt->shape, d);
    if (named && find_dim(L->opts, named, &dims[d])) {
      if (dims[d] < 0)
        return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: --dim %s=%lld is negative", what,
                                dim->dim_param, (long long)dims[d]);
      continue;
    }
    if (kt) {
      dims[d] = kt->type.dims[d];
      continue;
    }
    onnx_sb_printf(unbound, "%s'%s' (input '%s' dim %zu)", *n_unbound ? ", " : "",
                   named ? named : "?", name, d);
    (*n_unbound)++;
  }
  /* Only this input's own unbound dims leave *out unset: an earlier
   * input's must not, or the caller would read an unset type. */
  if (*n_unbound != unbound_before)
    return NULL;
  KILN_TRY_CTX(kiln_type_make(e, (uint32_t)rank, dims, out), "%s", what);
  return NULL;
}

typedef struct fill_ctx {
  const Onnx__TensorProto *t;
  const onnx_raw *raw;
  const char *base_dir, *what;
  const kiln_type *ty;
  bool failed; /* the status is the decoder's, which names the tensor */
} fill_ctx;

static kiln_status fill_constant(void *user, void *dst, size_t bytes) {
  fill_ctx *c = user;
  (void)bytes;
  kiln_status s = onnx_tensor_fill(c->t, c->raw, c->base_dir, c->what, c->ty, dst);
  c->failed = s != NULL;
  return s;
}

static kiln_status load_constants(onnx_loader *L, const Onnx__GraphProto *g) {
  for (size_t i = 0; i < g->n_initializer; i++) {
    const Onnx__TensorProto *t = g->initializer[i];
    if (!t->name || !*t->name)
      return kiln_status_make(KILN_PARSE_ERROR, "%s: initializer %zu has no name", L->file, i);
    char what[256];
    snprintf(what, sizeof what, "%s: initializer '%.200s'", L->file, t->name);
    const onnx_raw *raw = L->raws && L->raws[i].offset != UINT64_MAX ? &L->raws[i] : NULL;
    kiln_type ty;
    KILN_TRY(onnx_tensor_type(t, raw, what, &ty));
    /* Decoded (or read from the file) straight into the constant. */
    fill_ctx fc = {.t = t, .raw = raw, .base_dir = L->base_dir, .what = what, .ty = &ty};
    kiln_value *v;
    kiln_status s = kiln_module_add_constant_fill(L->m, t->name, &ty, fill_constant, &fc, &v);
    if (s)
      return fc.failed ? s : kiln_status_wrap(s, "%s", what);
    KILN_TRY(onnx_map_put(L, t->name, v, -1));
  }
  if (g->n_sparse_initializer)
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: sparse initializers are not supported",
                            L->file);
  return NULL;
}

static kiln_status load_inputs(onnx_loader *L, const Onnx__GraphProto *g) {
  onnx_sb unbound = {0};
  uint32_t n_unbound = 0;
  kiln_status s = NULL;
  for (size_t i = 0; i < g->n_input && !s; i++) {
    const Onnx__ValueInfoProto *vi = g->input[i];
    if (!vi->name || !*vi->name) {
      s = kiln_status_make(KILN_PARSE_ERROR, "%s: graph input %zu has no name", L->file, i);
      break;
    }
    if (is_initializer(g, vi->name))
      continue; /* an initializer with a default: kiln keeps it constant */
    int32_t known = find_known(L->opts, vi->name);
    uint32_t before = n_unbound;
    kiln_type t;
    s = input_type(L, vi, known, &unbound, &n_unbound, &t);
    if (s || n_unbound != before)
      continue;
    kiln_value *v;
    if (known >= 0 && (!used_as_data(g, vi->name, L->opset) || onnx_is_promoted(L, vi->name))) {
      /* Needed at compile time (directly or through computed values). */
      s = kiln_module_add_constant(L->m, vi->name, &t, L->opts->known_inputs[known].data, &v);
      if (s)
        s = kiln_status_wrap(s, "%s: graph input '%s'", L->file, vi->name);
      else
        s = onnx_map_put(L, vi->name, v, known);
      continue;
    }
    s = kiln_module_add_input(L->m, vi->name, &t, &v);
    if (s)
      s = kiln_status_wrap(s, "%s: graph input '%s'", L->file, vi->name);
    else
      s = onnx_map_put(L, vi->name, v, -1);
  }
  if (!s && n_unbound)
    s = kiln_status_make(KILN_INVALID_ARGUMENT,
                         "%s: %u unbound symbolic dim%s: %s; bind each with --dim NAME=VALUE, or "
                         "give the inputs that have them (kiln run --input)",
                         L->file, n_unbound, n_unbound == 1 ? "" : "s",
                         unbound.oom ? "(out of memory)" : unbound.s);
  onnx_sb_free(&unbound);
  return s;
}

static kiln_status load_nodes(onnx_loader *L, const Onnx__GraphProto *g) {
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    const onnx_op *op = onnx_op_find(n->op_type, L->opset);
    KILN_TRY(op->fn(L, n, op));
  }
  return NULL;
}

static kiln_status load_outputs(onnx_loader *L, const Onnx__GraphProto *g) {
  if (!g->n_output)
    return kiln_status_make(KILN_PARSE_ERROR, "%s: the graph has no outputs", L->file);
  for (size_t i = 0; i < g->n_output; i++) {
    const char *name = g->output[i]->name;
    if (!name || !*name)
      return kiln_status_make(KILN_PARSE_ERROR, "%s: graph output %zu has no name", L->file, i);
    onnx_entry *e = onnx_map_find(L, name);
    if (!e || !e->value)
      return kiln_status_make(KILN_NOT_FOUND,
                              "%s: graph output '%s' is not produced by any node, initializer or "
                              "input",
                              L->file, name);
    KILN_TRY_CTX(kiln_function_add_output(L->f, name, e->value), "%s: graph output '%s'", L->file,
                 name);
  }
  return NULL;
}

static kiln_status find_opset(onnx_loader *L, const Onnx__ModelProto *mp) {
  L->opset = -1;
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
    if (is_default_domain(o->domain))
      L->opset = o->has_version ? o->version : 1;
  }
  if (L->opset < 0) {
    /* Models older than IR version 3 carry no opset import: opset 1. */
    if (mp->n_opset_import == 0 && mp->has_ir_version && mp->ir_version < 3)
      L->opset = 1;
    else if (mp->n_opset_import == 0)
      return kiln_status_make(KILN_PARSE_ERROR,
                              "%s: the model imports no opset for the default domain", L->file);
    else
      L->opset = 1; /* only custom domains: every node will be reported below */
  }
  return NULL;
}

static kiln_status load_model(onnx_loader *L, const Onnx__ModelProto *mp) {
  if (!mp->graph)
    return kiln_status_make(KILN_PARSE_ERROR, "%s: the model has no graph", L->file);
  KILN_TRY(find_opset(L, mp));
  const Onnx__GraphProto *g = mp->graph;
  KILN_TRY(check_operators(L, g));
  KILN_TRY(kiln_module_create(NULL, g->name && *g->name ? g->name : "onnx", &L->m));
  KILN_TRY(load_constants(L, g));
  KILN_TRY(load_inputs(L, g));
  KILN_TRY(kiln_module_add_function(L->m, "main", &L->f));
  KILN_TRY(load_nodes(L, g));
  KILN_TRY(load_outputs(L, g));
  return NULL;
}

/* protobuf-c unpacks nested messages recursively with no depth limit, so a
 * small file of deeply nested graphs (If/Loop bodies) could exhaust the
 * stack. Walk the wire format first, following only message-typed fields. */
#define ONNX_MAX_DEPTH 64

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

/* false only when nesting is too deep; malformed input is left to unpack. */
static bool depth_ok(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                     int depth) {
  if (depth > ONNX_MAX_DEPTH)
    return false;
  while (p < end) {
    uint64_t key, len;
    if (!read_varint(&p, end, &key))
      return true;
    switch (key & 7) {
    case 0:
      if (!read_varint(&p, end, &len))
        return true;
      break;
    case 1:
      if (end - p < 8)
        return true;
      p += 8;
      break;
    case 5:
      if (end - p < 4)
        return true;
      p += 4;
      break;
    case 2: {
      if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p))
        return true;
      const ProtobufCFieldDescriptor *f =
          key >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3))
                                 : NULL;
      if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
          !depth_ok(f->descriptor, p, p + len, depth + 1))
        return false;
      p += len;
      break;
    }
    default:
      return true;
    }
  }
  return true;
}

/* Unpack the model in data, without copying its initializers' bytes
 * where they can be located (*raws_out then says where each one is, else
 * it is NULL). src_fd >= 0: data is the mapped model file, whose weights
 * are later read from the file descriptor instead of the mapping (so the
 * mapping's pages holding them are never touched). On success the caller
 * frees *mp_out and *raws_out. */
static kiln_status parse_model(const void *data, size_t size, int src_fd, const char *file,
                               Onnx__ModelProto **mp_out, onnx_raw **raws_out,
                               size_t *n_raws_out) {
  /* The message without the initializers' bytes: unpacking it copies no
   * weights. Where the walk cannot read the bytes, protobuf-c gets them as
   * they are (and says what is wrong). */
  uint8_t *stripped = NULL;
  size_t stripped_len = 0, n_raws = 0;
  onnx_raw *raws = NULL;
  if (size && onnx_strip_raw_data(data, size, &stripped, &stripped_len, &raws, &n_raws)) {
    for (size_t i = 0; i < n_raws; i++) {
      raws[i].base = data;
      raws[i].fd = src_fd;
    }
  }
  const uint8_t *msg = stripped ? stripped : data;
  size_t msg_len = stripped ? stripped_len : size;
  Onnx__ModelProto *mp = NULL;
  kiln_status s = NULL;
  if (!depth_ok(&onnx__model_proto__descriptor, msg, msg + msg_len, 0))
    s = kiln_status_make(KILN_PARSE_ERROR,
                         "%s: messages nested deeper than %d levels (corrupt or hostile model)",
                         file, ONNX_MAX_DEPTH);
  else if (!(mp = onnx__model_proto__unpack(NULL, msg_len, msg)))
    s = kiln_status_make(KILN_PARSE_ERROR,
                         "%s: not a valid ONNX model (truncated or corrupt protobuf, or wrong "
                         "field types)",
                         file);
  bool use_raws = stripped != NULL;
  free(stripped);
  if (!s && use_raws && (!mp->graph || mp->graph->n_initializer != n_raws)) {
    /* protobuf-c read the initializers otherwise than the walk (repeated
     * graph fields, say): unpack the bytes as they are. */
    onnx__model_proto__free_unpacked(mp, NULL);
    free(raws);
    raws = NULL;
    use_raws = false;
    if (!(mp = onnx__model_proto__unpack(NULL, size, data)))
      s = kiln_status_make(KILN_PARSE_ERROR,
                           "%s: not a valid ONNX model (truncated or corrupt protobuf, or wrong "
                           "field types)",
                           file);
  }
  if (s) {
    free(raws);
    if (mp)
      onnx__model_proto__free_unpacked(mp, NULL);
    return s;
  }
  if (!use_raws) {
    free(raws);
    raws = NULL;
  }
  *mp_out = mp;
  *raws_out = raws;
  *n_raws_out = n_raws;
  return NULL;
}

/* Unpack and load (src_fd as in parse_model). */
static kiln_status load_bytes(const void *data, size_t size, int src_fd, const char *base_dir,
                              const char *name_for_errors, const kiln_onnx_options *opts,
                              kiln_module **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_onnx_load_memory: out is NULL");
  *out = NULL;
  const char *file = name_for_errors ? name_for_errors : "<memory>";
  if (!data && size)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: data is NULL", file);
  static const kiln_onnx_options no_opts = {0};
  if (!opts)
    opts = &no_opts;
  if ((opts->dim_count && (!opts->dim_names || !opts->dim_values)) ||
      (opts->known_input_count && !opts->known_inputs))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: options have counts without arrays", file);
  Onnx__ModelProto *mp;
  onnx_raw *raws;
  size_t n_raws;
  KILN_TRY(parse_model(data, size, src_fd, file, &mp, &raws, &n_raws));
  kiln_status s = NULL;
  onnx_loader L = {
      .opts = opts, .file = file, .base_dir = base_dir, .raws = raws, .n_raws = n_raws};
  for (;;) {
    s = load_model(&L, mp);
    if (!s || !L.restart)
      break;
    /* A compile-time value needs known inputs as constants: start over. */
    kiln_status_free(s);
    kiln_module_destroy(L.m);
    free(L.map);
    L.m = NULL;
    L.f = NULL;
    L.map = NULL;
    L.map_cap = L.map_count = L.auto_id = 0;
    L.restart = false;
  }
  for (uint32_t i = 0; i < L.n_promote; i++)
    free(L.promote[i]);
  free(L.map);
  free(raws);
  onnx__model_proto__free_unpacked(mp, NULL);
  if (s) {
    kiln_module_destroy(L.m);
    return s;
  }
  *out = L.m;
  return NULL;
}

kiln_status kiln_onnx_load_memory(const void *data, size_t size, const char *base_dir,
                                  const char *name_for_errors, const kiln_onnx_options *opts,
                                  kiln_module **out) {
  return load_bytes(data, size, -1, base_dir, name_for_errors, opts, out);
}

/* What a model file is read for: the bytes go to fn with the file's
 * folder (for external data). */
typedef kiln_status (*onnx_file_fn)(void *user, const void *data, size_t size, int fd,
                                    const char *dir, const char *path);

/* A regular file is mapped (only the parts that are not weights are read
 * through the mapping; weights are read from the file into their
 * constants); anything else (a pipe, an empty file) is read whole. */
static kiln_status with_model_file(const char *path, onnx_file_fn fn, void *user) {
  char *dir_copy = strdup(path);
  if (!dir_copy)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", path);
  kiln_status s = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  void *map = MAP_FAILED;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      (uint64_t)st.st_size <= SIZE_MAX)
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map != MAP_FAILED) {
    s = fn(user, map, (size_t)st.st_size, fd, dirname(dir_copy), path);
    munmap(map, (size_t)st.st_size);
  } else {
    void *buf;
    size_t len;
    s = kiln_file_read(path, &buf, &len);
    if (!s) {
      s = fn(user, buf, len, -1, dirname(dir_copy), path);
      kiln_free(buf);
    }
  }
  if (fd >= 0)
    close(fd);
  free(dir_copy);
  return s;
}

typedef struct load_file_ctx {
  const kiln_onnx_options *opts;
  kiln_module **out;
} load_file_ctx;

static kiln_status load_file(void *user, const void *data, size_t size, int fd, const char *dir,
                             const char *path) {
  load_file_ctx *c = user;
  return load_bytes(data, size, fd, dir, path, c->opts, c->out);
}

kiln_status kiln_onnx_load(const char *path, const kiln_onnx_options *opts, kiln_module **out) {
  if (!path || !out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_onnx_load: NULL argument");
  *out = NULL;
  load_file_ctx c = {opts, out};
  return with_model_file(path, load_file, &c);
}

typedef struct sym_dims_ctx {
  kiln_onnx_symbolic_dim *list;
  uint32_t count;
} sym_dims_ctx;

/* Count the uses and their names' bytes, then fill one allocation: the
 * records, then the strings they point to. */
static kiln_status sym_dims_file(void *user, const void *data, size_t size, int fd,
                                 const char *dir, const char *path) {
  (void)dir;
  sym_dims_ctx *c = user;
  Onnx__ModelProto *mp;
  onnx_raw *raws;
  size_t n_raws;
  KILN_TRY(parse_model(data, size, fd, path, &mp, &raws, &n_raws));
  free(raws);
  const Onnx__GraphProto *g = mp->graph;
  size_t n = 0, bytes = 0;
  for (size_t i = 0; g && i < g->n_input; i++) {
    const Onnx__TensorShapeProto *sh = input_shape(g, i);
    for (size_t d = 0; sh && d < sh->n_dim; d++)
      if (dim_name(sh, d)) {
        n++;
        bytes += strlen(dim_name(sh, d)) + strlen(g->input[i]->name) + 2;
      }
  }
  kiln_onnx_symbolic_dim *list = NULL;
  if (n && (n > UINT32_MAX || !(list = malloc(n * sizeof *list + bytes)))) {
    onnx__model_proto__free_unpacked(mp, NULL);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory listing symbolic dims", path);
  }
  char *str = list ? (char *)(list + n) : NULL;
  for (size_t i = 0, k = 0; list && i < g->n_input; i++) {
    const Onnx__TensorShapeProto *sh = input_shape(g, i);
    for (size_t d = 0; sh && d < sh->n_dim; d++) {
      const char *name = dim_name(sh, d);
      if (!name)
        continue;
      size_t ln = strlen(name) + 1, li = strlen(g->input[i]->name) + 1;
      memcpy(str, name, ln);
      memcpy(str + ln, g->input[i]->name, li);
      list[k++] = (kiln_onnx_symbolic_dim){str, str + ln, (uint32_t)d, (uint32_t)sh->n_dim};
      str += ln + li;
    }
  }
  onnx__model_proto__free_unpacked(mp, NULL);
  c->list = list;
  c->count = (uint32_t)n;
  return NULL;
}

kiln_status kiln_onnx_symbolic_dims(const char *path, kiln_onnx_symbolic_dim **out,
                                    uint32_t *count) {
  if (!path || !out || !count)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_onnx_symbolic_dims: NULL argument");
  *out = NULL;
  *count = 0;
  sym_dims_ctx c = {NULL, 0};
  KILN_TRY(with_model_file(path, sym_dims_file, &c));
  *out = c.list;
  *count = c.count;
  return NULL;
}
