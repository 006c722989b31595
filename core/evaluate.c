/* core/evaluate.c: kiln_evaluate_value, used by constant folding and the
 * ONNX loader. The cone of nodes that feeds one value is run node by node
 * on the reference kernels (the interpreter's, linked into libkiln), so no
 * plugin and no context are needed. Only a cone with a node those kernels
 * do not take as it is (quantized types) is copied into a fresh module and
 * compiled for the interpreter backend, which lowers it first; that needs
 * a context. Every leaf of the cone must be a constant; a module input
 * makes the value unknowable at compile time and is reported as such. */
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "interp.h"

/* Old value -> new value, by linear probing on the pointer. */
typedef struct eval_map {
  const kiln_value **keys;
  void **vals; /* what each key maps to: a copied value or a buffer */
  size_t cap;
} eval_map;

static size_t eval_hash(const void *p, size_t cap) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 7) & (cap - 1);
}

static void *eval_get(const eval_map *m, const kiln_value *k) {
  for (size_t i = eval_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i])
      return NULL;
    if (m->keys[i] == k)
      return m->vals[i];
  }
}

static void eval_put(eval_map *m, const kiln_value *k, void *v) {
  size_t i = eval_hash(k, m->cap);
  while (m->keys[i] && m->keys[i] != k)
    i = (i + 1) & (m->cap - 1);
  m->keys[i] = k;
  m->vals[i] = v;
}

/* Copy a node's attributes into builder descriptors (borrowing their
 * storage, which lives as long as the source module). */
static kiln_attr_desc *eval_attr_descs(const kiln_attrs *as, uint32_t *n) {
  *n = kiln_attrs_count(as);
  kiln_attr_desc *d = calloc(*n ? *n : 1, sizeof *d);
  if (!d)
    return NULL;
  for (uint32_t i = 0; i < *n; i++) {
    const kiln_attr *a = kiln_attrs_at(as, i);
    d[i].name = kiln_attr_name(a);
    d[i].kind = kiln_attr_get_kind(a);
    switch (d[i].kind) {
    case KILN_ATTR_INT:
      d[i].i = kiln_attr_int(a);
      break;
    case KILN_ATTR_FLOAT:
      d[i].f = kiln_attr_float(a);
      break;
    case KILN_ATTR_STRING:
      d[i].s = kiln_attr_string(a);
      break;
    case KILN_ATTR_INTS:
      d[i].ints = kiln_attr_ints(a);
      d[i].len = kiln_attr_len(a);
      break;
    case KILN_ATTR_FLOATS:
      d[i].floats = kiln_attr_floats(a);
      d[i].len = kiln_attr_len(a);
      break;
    case KILN_ATTR_TYPE:
      d[i].type = kiln_attr_type(a);
      break;
    }
  }
  return d;
}

/* Mark the nodes of f that feed v (in_cone[i] for node i); fails naming
 * the first module input found among the leaves. */
static kiln_status eval_mark_cone(const kiln_function *f, const kiln_value *v, bool *in_cone,
                                  eval_map *pos) {
  uint32_t n = kiln_function_node_count(f);
  /* Walk backwards in topological order: a node is in the cone when one
   * of its results is v or is used by a node already in the cone. */
  eval_map need = {0};
  need.cap = pos->cap;
  need.keys = calloc(need.cap, sizeof *need.keys);
  need.vals = calloc(need.cap, sizeof *need.vals);
  kiln_status s = NULL;
  if (!need.keys || !need.vals) {
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory evaluating a value");
    goto done;
  }
  eval_put(&need, v, (kiln_value *)v);
  for (uint32_t i = n; i-- > 0 && !s;) {
    const kiln_node *nd = kiln_function_node(f, i);
    bool needed = false;
    for (uint32_t r = 0; r < kiln_node_result_count(nd) && !needed; r++)
      needed = eval_get(&need, kiln_node_result(nd, r)) != NULL;
    if (!needed)
      continue;
    in_cone[i] = true;
    for (uint32_t j = 0; j < kiln_node_input_count(nd); j++) {
      kiln_value *in = kiln_node_input(nd, j);
      if (!in)
        continue;
      if (kiln_value_get_kind(in) == KILN_VALUE_INPUT) {
        s = kiln_status_make(KILN_FAILED_PRECONDITION,
                             "value '%s' is not known at compile time: it depends on module "
                             "input '%s' (through node '%s')",
                             kiln_value_name(v), kiln_value_name(in), kiln_node_name(nd));
        break;
      }
      eval_put(&need, in, in);
    }
  }
done:
  free(need.keys);
  free(need.vals);
  return s;
}

static kiln_status eval_copy_value(kiln_module *dst, eval_map *map, const kiln_value *old) {
  if (eval_get(map, old))
    return NULL;
  kiln_value *nv = NULL;
  KILN_TRY(kiln_module_add_constant_from(dst, kiln_value_name(old), old, &nv));
  eval_put(map, old, nv);
  return NULL;
}

static kiln_status eval_build(const kiln_function *f, const kiln_value *v, const bool *in_cone,
                              kiln_module *dst, eval_map *map) {
  kiln_function *nf = NULL;
  KILN_TRY(kiln_module_add_function(dst, "evaluate", &nf));
  if (kiln_value_get_kind(v) == KILN_VALUE_CONSTANT)
    KILN_TRY(eval_copy_value(dst, map, v));
  for (uint32_t i = 0; f && i < kiln_function_node_count(f); i++) {
    if (!in_cone[i])
      continue;
    const kiln_node *nd = kiln_function_node(f, i);
    uint32_t ni = kiln_node_input_count(nd), nr = kiln_node_result_count(nd);
    kiln_value **ins = calloc(ni ? ni : 1, sizeof *ins);
    const char **names = calloc(nr ? nr : 1, sizeof *names);
    uint32_t na = 0;
    kiln_attr_desc *attrs = eval_attr_descs(kiln_node_attrs(nd), &na);
    kiln_status s = NULL;
    if (!ins || !names || !attrs)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory evaluating a value");
    for (uint32_t j = 0; j < ni && !s; j++) {
      const kiln_value *in = kiln_node_input(nd, j);
      if (!in)
        continue;
      if (kiln_value_get_kind(in) == KILN_VALUE_CONSTANT)
        s = eval_copy_value(dst, map, in);
      if (!s)
        ins[j] = eval_get(map, in);
    }
    for (uint32_t r = 0; r < nr; r++)
      names[r] = kiln_value_name(kiln_node_result(nd, r));
    kiln_node *nn = NULL;
    if (!s)
      s = kiln_function_add_node_named(nf, kiln_node_get_kind(nd), kiln_node_name(nd), ins, ni,
                                       attrs, na, nr, names, &nn);
    for (uint32_t r = 0; r < nr && !s; r++)
      eval_put(map, kiln_node_result(nd, r), kiln_node_result(nn, r));
    free(ins);
    free(names);
    free(attrs);
    KILN_TRY(s);
  }
  kiln_value *out = eval_get(map, v);
  if (!out)
    return kiln_status_make(KILN_INTERNAL, "evaluate: value '%s' was not copied",
                            kiln_value_name(v));
  return kiln_function_add_output(nf, "value", out);
}

/* Whether the reference kernels run node nd as it is (the interpreter
 * backend would declare it): otherwise only lowering makes it runnable. */
static bool eval_direct_ok(const kiln_node *nd) {
  kiln_node_kind kind = kiln_node_get_kind(nd);
  if (!interp_kernel_for(kind))
    return false;
  for (uint32_t i = 0; i < kiln_node_input_count(nd); i++) {
    const kiln_value *in = kiln_node_input(nd, i);
    if (in && kiln_value_type(in)->quantized)
      return false;
  }
  for (uint32_t r = 0; r < kiln_node_result_count(nd); r++)
    if (kiln_value_type(kiln_node_result(nd, r))->quantized)
      return false;
  const kiln_value *x = kiln_node_input_count(nd) ? kiln_node_input(nd, 0) : NULL;
  return !x || interp_elem_supported(kind, kiln_value_type(x)->elem);
}

/* Values computed at compile time are shapes, masks and small tables;
 * a model that asks for more (a huge ConstantOfShape feeding a Shape,
 * say) is refused with a message instead of exhausting memory. */
#define EVAL_MAX_BYTES ((int64_t)1 << 30)

static void *eval_alloc_bytes(const kiln_type *t) {
  int64_t bytes = kiln_type_bytes(t);
  return calloc(bytes > 0 ? (size_t)bytes : 1, 1);
}

/* Run the cone of v (in_cone over f's nodes) on the reference kernels;
 * map takes each computed value to its buffer. */
static kiln_status eval_direct(const kiln_function *f, const kiln_value *v, const bool *in_cone,
                               eval_map *map, kiln_tensor *out) {
  uint32_t n = f ? kiln_function_node_count(f) : 0, n_bufs = 0, cap_bufs = 0;
  void **bufs = NULL; /* every buffer allocated here, freed at the end */
  kiln_status s = NULL;
  for (uint32_t i = 0; i < n && !s; i++) {
    if (!in_cone[i])
      continue;
    const kiln_node *nd = kiln_function_node(f, i);
    uint32_t ni = kiln_node_input_count(nd), nr = kiln_node_result_count(nd);
    interp_tensor *ins = calloc(ni ? ni : 1, sizeof *ins), *outs = calloc(nr ? nr : 1, sizeof *outs);
    if (cap_bufs < n_bufs + nr) {
      uint32_t nc = 2 * (n_bufs + nr) + 8;
      void **nb = realloc(bufs, nc * sizeof *nb);
      if (nb)
        bufs = nb, cap_bufs = nc;
    }
    if (!ins || !outs || cap_bufs < n_bufs + nr)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory evaluating a value");
    for (uint32_t j = 0; j < ni && !s; j++) {
      const kiln_value *in = kiln_node_input(nd, j);
      if (!in)
        continue;
      ins[j].type = *kiln_value_type(in);
      ins[j].data = kiln_value_get_kind(in) == KILN_VALUE_CONSTANT
                        ? (void *)(uintptr_t)kiln_value_data(in)
                        : (void *)eval_get(map, in);
      if (!ins[j].data && kiln_type_bytes(&ins[j].type) > 0)
        s = kiln_status_make(KILN_INTERNAL, "evaluate: input %u of node '%s' was not computed", j,
                             kiln_node_name(nd));
    }
    for (uint32_t r = 0; r < nr && !s; r++) {
      outs[r].type = *kiln_value_type(kiln_node_result(nd, r));
      int64_t bytes = kiln_type_bytes(&outs[r].type);
      if (bytes < 0 || bytes > EVAL_MAX_BYTES) {
        char ty[160];
        kiln_type_format(&outs[r].type, ty, sizeof ty);
        s = kiln_status_make(KILN_OUT_OF_RANGE,
                             "evaluate: node '%s' (%s) result %u is %s (%lld bytes); values "
                             "computed at compile time are limited to %lld bytes",
                             kiln_node_name(nd), kiln_node_kind_name(kiln_node_get_kind(nd)), r,
                             ty, (long long)bytes, (long long)EVAL_MAX_BYTES);
        break;
      }
      outs[r].data = bufs[n_bufs++] = eval_alloc_bytes(&outs[r].type);
      if (!outs[r].data) {
        n_bufs--;
        s = kiln_status_make(KILN_OUT_OF_MEMORY, "evaluate: out of memory for node '%s'",
                             kiln_node_name(nd));
      }
    }
    if (!s) {
      s = interp_kernel_for(kiln_node_get_kind(nd))(kiln_node_attrs(nd), outs, nr, ins, ni);
      if (s)
        s = kiln_status_wrap(s, "node '%s' (%s)", kiln_node_name(nd),
                             kiln_node_kind_name(kiln_node_get_kind(nd)));
    }
    for (uint32_t r = 0; r < nr && !s; r++)
      eval_put(map, kiln_node_result(nd, r), outs[r].data);
    free(ins);
    free(outs);
  }
  const void *src = NULL;
  if (!s) {
    src = kiln_value_get_kind(v) == KILN_VALUE_CONSTANT ? kiln_value_data(v) : eval_get(map, v);
    out->type = *kiln_value_type(v);
    out->data = eval_alloc_bytes(&out->type);
    if (!out->data)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "evaluate: out of memory for the result");
    else if (src && kiln_type_bytes(&out->type) > 0)
      memcpy(out->data, src, (size_t)kiln_type_bytes(&out->type));
  }
  for (uint32_t b = 0; b < n_bufs; b++)
    free(bufs[b]);
  free(bufs);
  return s;
}

static kiln_status eval_run(kiln_context *ctx, kiln_module *dst, kiln_tensor *out) {
  kiln_executable *exe = NULL;
  KILN_TRY(kiln_core_compile(ctx, dst, NULL, "interpreter", NULL, false, &exe));
  kiln_status s = NULL;
  if (kiln_executable_output_count(exe) != 1 || kiln_executable_input_count(exe) != 0)
    s = kiln_status_make(KILN_INTERNAL, "evaluate: expected 0 inputs and 1 output, got %u and %u",
                         kiln_executable_input_count(exe), kiln_executable_output_count(exe));
  kiln_io_info info;
  void *data = NULL;
  if (!s) {
    kiln_executable_output(exe, 0, &info);
    int64_t bytes = kiln_type_bytes(&info.type);
    data = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (!data)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "evaluate: out of memory for %lld bytes",
                           (long long)bytes);
  }
  if (!s) {
    void *outs[1] = {data};
    s = kiln_run(exe, NULL, outs);
  }
  if (!s) {
    out->type = info.type;
    out->data = data;
    data = NULL;
  }
  free(data);
  kiln_executable_destroy(exe);
  return s;
}

kiln_status kiln_evaluate_value(kiln_context *ctx, const kiln_module *m, const kiln_value *v,
                                kiln_tensor *out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_evaluate_value: out is NULL");
  memset(out, 0, sizeof *out);
  if (!m || !v)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_evaluate_value: %s is NULL",
                            !m ? "module" : "value");
  kiln_value_kind vk = kiln_value_get_kind(v);
  if (vk == KILN_VALUE_INPUT)
    return kiln_status_make(KILN_FAILED_PRECONDITION,
                            "value '%s' is a module input, not known at compile time",
                            kiln_value_name(v));
  const kiln_function *f = NULL;
  uint32_t n = 0;
  if (vk == KILN_VALUE_RESULT) {
    kiln_node *prod = kiln_value_producer(v, NULL);
    f = prod ? kiln_node_function(prod) : NULL;
    if (!f)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "value '%s' has no producing node",
                              kiln_value_name(v));
    n = kiln_function_node_count(f);
  }
  /* Room for every value the cone can touch (all results of f and all
   * constants) at most half full. */
  size_t values = (size_t)kiln_module_constant_count(m) + 1;
  for (uint32_t i = 0; i < n; i++)
    values += kiln_node_result_count(kiln_function_node(f, i));
  size_t cap = 64;
  while (cap < 2 * values)
    cap *= 2;
  eval_map map = {calloc(cap, sizeof(kiln_value *)), calloc(cap, sizeof(kiln_value *)), cap};
  bool *in_cone = calloc(n ? n : 1, sizeof *in_cone);
  kiln_module *dst = NULL;
  kiln_status s = NULL;
  if (!map.keys || !map.vals || !in_cone)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory evaluating a value");
  if (!s && f)
    s = eval_mark_cone(f, v, in_cone, &map);
  bool direct = true;
  for (uint32_t i = 0; i < n && direct; i++)
    direct = !in_cone[i] || eval_direct_ok(kiln_function_node(f, i));
  if (!s && direct)
    s = eval_direct(f, v, in_cone, &map, out);
  else if (!s && !ctx)
    s = kiln_status_make(KILN_FAILED_PRECONDITION,
                         "its cone has quantized nodes, which only the interpreter backend runs "
                         "(after lowering), and no context was given to load it");
  if (!s && !direct)
    s = kiln_module_create(kiln_module_allocator(m), "evaluate", &dst);
  if (!s && !direct)
    s = eval_build(f, v, in_cone, dst, &map);
  if (!s && !direct)
    s = eval_run(ctx, dst, out);
  kiln_module_destroy(dst);
  free(map.keys);
  free(map.vals);
  free(in_cone);
  if (s)
    return kiln_status_wrap(s, "evaluating value '%s'", kiln_value_name(v));
  return NULL;
}
