/* passes/pass_util.c: helpers shared by graph passes and lowering rules. */
#include "pass_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Integers saturate instead of overflowing: converting an out-of-range
 * double is undefined behaviour in C. */
static int64_t clamp_i(double v, double lo, double hi) {
  if (isnan(v))
    return 0;
  if (v < lo)
    v = lo;
  if (v > hi)
    v = hi;
  return (int64_t)v;
}

void kiln_pass_elem_set(void *data, kiln_elem e, int64_t i, double v) {
  unsigned char *p = data;
  switch (e) {
  case KILN_F64:
    memcpy(p + i * 8, &v, 8);
    break;
  case KILN_F32: {
    float f = (float)v;
    memcpy(p + i * 4, &f, 4);
    break;
  }
  case KILN_F16: {
    uint16_t h = kiln_f32_to_f16((float)v);
    memcpy(p + i * 2, &h, 2);
    break;
  }
  case KILN_BF16: {
    uint16_t h = kiln_f32_to_bf16((float)v);
    memcpy(p + i * 2, &h, 2);
    break;
  }
  case KILN_I8:
    ((int8_t *)data)[i] = (int8_t)clamp_i(v, -128, 127);
    break;
  case KILN_U8:
    p[i] = (unsigned char)clamp_i(v, 0, 255);
    break;
  case KILN_BOOL:
    p[i] = v != 0;
    break;
  case KILN_I16: {
    int16_t x = (int16_t)clamp_i(v, -32768, 32767);
    memcpy(p + i * 2, &x, 2);
    break;
  }
  case KILN_U16: {
    uint16_t x = (uint16_t)clamp_i(v, 0, 65535);
    memcpy(p + i * 2, &x, 2);
    break;
  }
  case KILN_I32: {
    int32_t x = (int32_t)clamp_i(v, -2147483648.0, 2147483647.0);
    memcpy(p + i * 4, &x, 4);
    break;
  }
  case KILN_U32: {
    uint32_t x = (uint32_t)clamp_i(v, 0, 4294967295.0);
    memcpy(p + i * 4, &x, 4);
    break;
  }
  case KILN_I64: {
    int64_t x = clamp_i(v, -9.2e18, 9.2e18);
    memcpy(p + i * 8, &x, 8);
    break;
  }
  case KILN_U64: {
    uint64_t x = (uint64_t)clamp_i(v, 0, 9.2e18);
    memcpy(p + i * 8, &x, 8);
    break;
  }
  default:
    break;
  }
}

bool kiln_pass_const_splat(const kiln_value *v, double *out) {
  if (!v || kiln_value_get_kind(v) != KILN_VALUE_CONSTANT)
    return false;
  const kiln_type *t = kiln_value_type(v);
  if (t->quantized)
    return false;
  int64_t n = kiln_type_numel(t);
  const void *d = kiln_value_data(v);
  if (n == 0 || !d)
    return false;
  double first = kiln_elem_load_f64(t->elem, d, 0);
  for (int64_t i = 1; i < n; i++)
    if (kiln_elem_load_f64(t->elem, d, i) != first)
      return false;
  *out = first;
  return true;
}

bool kiln_pass_const_is(const kiln_value *v, double x) {
  double s;
  return kiln_pass_const_splat(v, &s) && s == x;
}

kiln_status kiln_pass_const_fill(kiln_module *m, const kiln_type *t, double fill,
                                 kiln_value **out) {
  int64_t n = kiln_type_numel(t);
  size_t bytes = (size_t)kiln_type_bytes(t);
  void *buf = calloc(1, bytes ? bytes : 1);
  if (!buf)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "passes: no memory for a %zu-byte constant", bytes);
  for (int64_t i = 0; i < n; i++)
    kiln_pass_elem_set(buf, t->elem, i, fill);
  kiln_status s = kiln_module_add_constant(m, NULL, t, buf, out);
  free(buf);
  return s;
}

kiln_status kiln_pass_const_scalar(kiln_module *m, kiln_elem e, double x, kiln_value **out) {
  kiln_type t;
  KILN_TRY(kiln_type_make(e, 0, NULL, &t));
  return kiln_pass_const_fill(m, &t, x, out);
}

kiln_status kiln_pass_replace_node(kiln_function *f, kiln_node *n, kiln_value *const *repl) {
  uint32_t nr = kiln_node_result_count(n);
  for (uint32_t i = 0; i < nr; i++) {
    kiln_value *r = kiln_node_result(n, i);
    if (repl[i] && repl[i] != r && kiln_value_use_count(r) > 0)
      KILN_TRY_CTX(kiln_function_replace_uses(f, r, repl[i]), "replacing node '%s' (%s)",
                   kiln_node_name(n), kiln_node_kind_name(kiln_node_get_kind(n)));
  }
  return kiln_function_remove_node(f, n);
}

const char *kiln_pass_given_name(const kiln_node *n) {
  const char *name = n ? kiln_node_name(n) : NULL;
  const char *first = n && kiln_node_result_count(n) ? kiln_value_name(kiln_node_result(n, 0)) : NULL;
  return name && first && strcmp(name, first) == 0 ? NULL : name;
}

const char *kiln_pass_merged_name(const kiln_node *first, uint32_t extra, char *buf, size_t size) {
  const char *given = kiln_pass_given_name(first);
  if (!given || !extra)
    return kiln_node_name(first);
  /* A node merged again ("conv+1" taking its activation) counts on. */
  size_t len = strlen(given), d = len;
  while (d > 0 && given[d - 1] >= '0' && given[d - 1] <= '9')
    d--;
  if (d > 1 && d < len && given[d - 1] == '+' && len - d < 9) {
    snprintf(buf, size, "%.*s+%u", (int)(d - 1), given, (unsigned)(atoi(given + d) + extra));
    return buf;
  }
  snprintf(buf, size, "%s+%u", given, (unsigned)extra);
  return buf;
}

kiln_status kiln_pass_emit_named(kiln_function *f, kiln_node *before, const char *name,
                                 kiln_node_kind k, kiln_value *const *in, uint32_t n_in,
                                 const kiln_attr_desc *attrs, uint32_t n_attrs, kiln_value **out) {
  kiln_node *n = NULL;
  kiln_function_set_insert_point(f, before);
  kiln_status s = kiln_function_add_node(f, k, name, in, n_in, attrs, n_attrs, 0, &n);
  kiln_function_set_insert_point(f, NULL);
  if (s)
    return s;
  *out = kiln_node_result(n, 0);
  return NULL;
}

kiln_status kiln_pass_emit(kiln_function *f, kiln_node *before, kiln_node_kind k,
                           kiln_value *const *in, uint32_t n_in, const kiln_attr_desc *attrs,
                           uint32_t n_attrs, kiln_value **out) {
  return kiln_pass_emit_named(f, before, kiln_pass_given_name(before), k, in, n_in, attrs, n_attrs,
                              out);
}

kiln_status kiln_pass_snapshot(const kiln_function *f, kiln_node ***out, uint32_t *n) {
  uint32_t c = kiln_function_node_count(f);
  kiln_node **a = malloc(sizeof *a * (c ? c : 1));
  if (!a)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "passes: no memory for %u nodes", c);
  for (uint32_t i = 0; i < c; i++)
    a[i] = kiln_function_node(f, i);
  *out = a;
  *n = c;
  return NULL;
}

kiln_status kiln_pass_each_node(kiln_function *f, const kiln_pass_options *o,
                                kiln_pass_node_rewrite rw, uint32_t *changes) {
  kiln_node **nodes = NULL; /* set by the snapshot; -O3 cannot see it across the call */
  uint32_t n = 0;
  KILN_TRY(kiln_pass_snapshot(f, &nodes, &n));
  uint32_t replaced = 0;
  kiln_status s = NULL;
  for (uint32_t i = 0; i < n && !s; i++) {
    bool done = false;
    s = rw(f, nodes[i], o, &done);
    replaced += done;
  }
  free(nodes);
  if (changes)
    *changes += replaced;
  return s;
}

static bool attr_equal(const kiln_attr *x, const kiln_attr *y) {
  if (strcmp(kiln_attr_name(x), kiln_attr_name(y)) != 0)
    return false;
  kiln_attr_kind k = kiln_attr_get_kind(x);
  if (k != kiln_attr_get_kind(y))
    return false;
  switch (k) {
  case KILN_ATTR_INT:
    return kiln_attr_int(x) == kiln_attr_int(y);
  case KILN_ATTR_FLOAT:
    return kiln_attr_float(x) == kiln_attr_float(y);
  case KILN_ATTR_STRING:
    return strcmp(kiln_attr_string(x), kiln_attr_string(y)) == 0;
  case KILN_ATTR_TYPE:
    return kiln_attr_type(x) == kiln_attr_type(y);
  case KILN_ATTR_INTS:
  case KILN_ATTR_FLOATS: {
    uint32_t l = kiln_attr_len(x);
    if (l != kiln_attr_len(y))
      return false;
    if (k == KILN_ATTR_INTS)
      return l == 0 || memcmp(kiln_attr_ints(x), kiln_attr_ints(y), l * sizeof(int64_t)) == 0;
    for (uint32_t i = 0; i < l; i++)
      if (kiln_attr_floats(x)[i] != kiln_attr_floats(y)[i])
        return false;
    return true;
  }
  }
  return false;
}

bool kiln_pass_attrs_equal(const kiln_attrs *a, const kiln_attrs *b) {
  uint32_t n = kiln_attrs_count(a);
  if (n != kiln_attrs_count(b))
    return false;
  for (uint32_t i = 0; i < n; i++)
    if (!attr_equal(kiln_attrs_at(a, i), kiln_attrs_at(b, i)))
      return false;
  return true;
}

kiln_status kiln_pass_attrs_descs(const kiln_attrs *a, uint32_t extra, kiln_attr_desc **out,
                                  uint32_t *n) {
  uint32_t c = kiln_attrs_count(a);
  kiln_attr_desc *d = calloc(c + extra + 1, sizeof *d);
  if (!d)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "passes: no memory for attributes");
  for (uint32_t i = 0; i < c; i++) {
    const kiln_attr *x = kiln_attrs_at(a, i);
    d[i].name = kiln_attr_name(x);
    d[i].kind = kiln_attr_get_kind(x);
    switch (d[i].kind) {
    case KILN_ATTR_INT:
      d[i].i = kiln_attr_int(x);
      break;
    case KILN_ATTR_FLOAT:
      d[i].f = kiln_attr_float(x);
      break;
    case KILN_ATTR_STRING:
      d[i].s = kiln_attr_string(x);
      break;
    case KILN_ATTR_INTS:
      d[i].ints = kiln_attr_ints(x);
      d[i].len = kiln_attr_len(x);
      break;
    case KILN_ATTR_FLOATS:
      d[i].floats = kiln_attr_floats(x);
      d[i].len = kiln_attr_len(x);
      break;
    case KILN_ATTR_TYPE:
      d[i].type = kiln_attr_type(x);
      break;
    }
  }
  *out = d;
  *n = c;
  return NULL;
}

void kiln_pass_transpose_data(const void *src, void *dst, const kiln_type *in_t,
                              const int64_t *perm, size_t es) {
  uint32_t r = in_t->rank;
  int64_t in_strides[KILN_MAX_RANK], out_dims[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
  kiln_type_strides(in_t, in_strides);
  for (uint32_t i = 0; i < r; i++)
    out_dims[i] = in_t->dims[perm[i]];
  int64_t n = kiln_type_numel(in_t);
  const unsigned char *s = src;
  unsigned char *d = dst;
  for (int64_t o = 0; o < n; o++) {
    int64_t off = 0;
    for (uint32_t i = 0; i < r; i++)
      off += idx[i] * in_strides[perm[i]];
    memcpy(d + o * (int64_t)es, s + off * (int64_t)es, es);
    for (int32_t i = (int32_t)r - 1; i >= 0; i--) {
      if (++idx[i] < out_dims[i])
        break;
      idx[i] = 0;
    }
  }
}

void kiln_pass_transpose_perm(const kiln_node *n, uint32_t rank, int64_t *perm) {
  const kiln_attr *a = kiln_attrs_find(kiln_node_attrs(n), "perm");
  if (a && kiln_attr_len(a) == rank) {
    for (uint32_t i = 0; i < rank; i++)
      perm[i] = kiln_attr_ints(a)[i];
    return;
  }
  for (uint32_t i = 0; i < rank; i++)
    perm[i] = rank - 1 - i;
}

bool kiln_pass_is_reshape_like(kiln_node_kind k) {
  return k == KILN_NODE_Reshape || k == KILN_NODE_Flatten || k == KILN_NODE_Squeeze ||
         k == KILN_NODE_Unsqueeze;
}

bool kiln_pass_gather_scalar(const kiln_node *g, int64_t *index) {
  if (!g || kiln_node_get_kind(g) != KILN_NODE_Gather || kiln_node_input_count(g) != 2)
    return false;
  const kiln_value *i = kiln_node_input(g, 1);
  if (!i)
    return false;
  const kiln_type *it = kiln_value_type(i);
  double v;
  if (it->rank != 0 || (it->elem != KILN_I64 && it->elem != KILN_I32) ||
      !kiln_pass_const_splat(i, &v))
    return false;
  if (index)
    *index = (int64_t)v;
  return true;
}
