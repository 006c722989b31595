/* onnx_save.c: kiln_onnx_save / kiln_onnx_save_memory. Writes one function
 * of a module as an ONNX ModelProto at one opset (onnx_save.h): module
 * inputs become graph inputs, constants initializers (raw_data, sharing the
 * module's bytes until packed), nodes the ONNX operators of
 * onnx_save_forms.c, with the attributes that ONNX takes as inputs written
 * as initializers of their own. A node with no ONNX form, an attribute ONNX
 * does not have, or a quantized tensor type is an error naming it: nothing
 * is dropped. The message is built with protobuf-c's generated code (as the
 * loader reads it) and packed straight into the file, which appears under
 * its name only when complete. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx_internal.h"
#include "onnx_save.h"

/* Protobuf messages are limited to 2 GiB; larger models need external
 * data, which the writer does not produce. */
#define ONNX_SAVE_MAX_BYTES 0x7fffffffu

typedef struct saver {
  const kiln_module *m;
  const kiln_function *f;
  const char *where; /* the path, or "<memory>", for messages */
  int64_t opset;
  /* Everything allocated for the message, freed together at the end. */
  void **owned;
  size_t n_owned, cap_owned;
  bool oom;
  Onnx__NodeProto **nodes;
  size_t n_nodes, cap_nodes;
  Onnx__TensorProto **inits;
  size_t n_inits, cap_inits;
  /* Names the writer made up or bound (initializers of attribute inputs,
   * outputs written through Identity), apart from the module's values:
   * open addressing, borrowed strings. */
  const char **names;
  uint32_t names_cap, names_count;
} saver;

static void *sv_alloc(saver *S, size_t size) {
  if (S->oom)
    return NULL;
  if (S->n_owned == S->cap_owned) {
    size_t ncap = S->cap_owned ? S->cap_owned * 2 : 256;
    void **no = realloc(S->owned, ncap * sizeof *no);
    if (!no) {
      S->oom = true;
      return NULL;
    }
    S->owned = no;
    S->cap_owned = ncap;
  }
  void *p = calloc(1, size ? size : 1);
  if (!p) {
    S->oom = true;
    return NULL;
  }
  S->owned[S->n_owned++] = p;
  return p;
}

static kiln_status sv_oom(const saver *S) {
  return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory writing the ONNX model", S->where);
}

static char *sv_strdup(saver *S, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = sv_alloc(S, n);
  if (p)
    memcpy(p, s, n);
  return p;
}

/* Append p to a growable array of pointers of one message type. */
#define SV_PUSH(S, arr, n, cap, p)                                                                 \
  do {                                                                                             \
    if ((n) == (cap)) {                                                                            \
      size_t ncap_ = (cap) ? (cap)*2 : 64;                                                         \
      void *na_ = realloc((arr), ncap_ * sizeof *(arr));                                           \
      if (!na_) {                                                                                  \
        (S)->oom = true;                                                                           \
        break;                                                                                     \
      }                                                                                            \
      (arr) = na_;                                                                                 \
      (cap) = ncap_;                                                                               \
    }                                                                                              \
    (arr)[(n)++] = (p);                                                                            \
  } while (0)

static void sv_free(saver *S) {
  for (size_t i = 0; i < S->n_owned; i++)
    free(S->owned[i]);
  free(S->owned);
  free(S->nodes);
  free(S->inits);
  free(S->names);
}

/* ---- names ---- */
static uint32_t sv_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

static bool sv_name_taken(const saver *S, const char *name) {
  if (kiln_module_find_value(S->m, name))
    return true;
  if (!S->names_cap)
    return false;
  for (uint32_t i = sv_hash(name) & (S->names_cap - 1);; i = (i + 1) & (S->names_cap - 1)) {
    if (!S->names[i])
      return false;
    if (!strcmp(S->names[i], name))
      return true;
  }
}

static bool sv_name_add(saver *S, const char *name) {
  if ((S->names_count + 1) * 2 > S->names_cap) {
    uint32_t ncap = S->names_cap ? S->names_cap * 2 : 64;
    const char **nn = calloc(ncap, sizeof *nn);
    if (!nn) {
      S->oom = true;
      return false;
    }
    for (uint32_t i = 0; i < S->names_cap; i++) {
      if (!S->names[i])
        continue;
      uint32_t j = sv_hash(S->names[i]) & (ncap - 1);
      while (nn[j])
        j = (j + 1) & (ncap - 1);
      nn[j] = S->names[i];
    }
    free(S->names);
    S->names = nn;
    S->names_cap = ncap;
  }
  uint32_t j = sv_hash(name) & (S->names_cap - 1);
  while (S->names[j])
    j = (j + 1) & (S->names_cap - 1);
  S->names[j] = name;
  S->names_count++;
  return true;
}

/* "<base>.<role>", or with a number after it when taken: a name no value
 * of the module and nothing written so far has. */
static char *sv_fresh_name(saver *S, const char *base, const char *role) {
  size_t n = strlen(base) + strlen(role) + 24;
  char *p = sv_alloc(S, n);
  if (!p)
    return NULL;
  snprintf(p, n, "%s.%s", base, role);
  for (uint32_t k = 1; sv_name_taken(S, p); k++)
    snprintf(p, n, "%s.%s.%u", base, role, k);
  return sv_name_add(S, p) ? p : NULL;
}

/* ---- messages ---- */
static const char *node_desc(const kiln_node *n) {
  static _Thread_local char buf[320];
  snprintf(buf, sizeof buf, "node '%.200s' (%s)", kiln_node_name(n),
           kiln_node_kind_name(kiln_node_get_kind(n)));
  return buf;
}

/* ---- tensors and types ---- */
static Onnx__TensorProto *sv_tensor(saver *S, const char *name, const kiln_type *t,
                                    const void *data) {
  Onnx__TensorProto *p = sv_alloc(S, sizeof *p);
  int64_t *dims = sv_alloc(S, sizeof(int64_t) * (t->rank ? t->rank : 1));
  if (!p || !dims)
    return NULL;
  onnx__tensor_proto__init(p);
  memcpy(dims, t->dims, sizeof(int64_t) * t->rank);
  p->n_dims = t->rank;
  p->dims = dims;
  p->has_data_type = 1;
  p->data_type = onnx_dtype_from_elem(t->elem);
  p->name = (char *)name;
  /* raw_data is little-endian, as kiln keeps constants. */
  p->has_raw_data = 1;
  p->raw_data.len = (size_t)kiln_type_bytes(t);
  p->raw_data.data = (uint8_t *)data;
  return p;
}

static Onnx__ValueInfoProto *sv_value_info(saver *S, const char *name, const kiln_type *t) {
  Onnx__ValueInfoProto *vi = sv_alloc(S, sizeof *vi);
  Onnx__TypeProto *tp = sv_alloc(S, sizeof *tp);
  Onnx__TypeProto__Tensor *tt = sv_alloc(S, sizeof *tt);
  Onnx__TensorShapeProto *sh = sv_alloc(S, sizeof *sh);
  Onnx__TensorShapeProto__Dimension **dims = sv_alloc(S, sizeof *dims * (t->rank ? t->rank : 1));
  if (!vi || !tp || !tt || !sh || !dims)
    return NULL;
  onnx__value_info_proto__init(vi);
  onnx__type_proto__init(tp);
  onnx__type_proto__tensor__init(tt);
  onnx__tensor_shape_proto__init(sh);
  for (uint32_t d = 0; d < t->rank; d++) {
    dims[d] = sv_alloc(S, sizeof *dims[d]);
    if (!dims[d])
      return NULL;
    onnx__tensor_shape_proto__dimension__init(dims[d]);
    dims[d]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    dims[d]->dim_value = t->dims[d];
  }
  /* A scalar has a shape with no dims; without a shape the rank would be
   * unknown. */
  sh->n_dim = t->rank;
  sh->dim = dims;
  tt->has_elem_type = 1;
  tt->elem_type = onnx_dtype_from_elem(t->elem);
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  vi->name = (char *)name;
  vi->type = tp;
  return vi;
}

/* A quantized kiln type keeps its scale and zero point in the type; an
 * ONNX tensor cannot, so such a value has no ONNX form. */
static kiln_status check_type(const saver *S, const kiln_value *v, const char *role) {
  const kiln_type *t = kiln_value_type(v);
  if (!t->quantized)
    return NULL;
  char buf[128];
  kiln_type_format(t, buf, sizeof buf);
  return kiln_status_make(KILN_UNIMPLEMENTED,
                          "%s: %s '%s' has the quantized type %s, which an ONNX tensor cannot "
                          "carry (ONNX keeps scale and zero point as QuantizeLinear / "
                          "DequantizeLinear inputs)",
                          S->where, role, kiln_value_name(v), buf);
}

/* ---- attributes ---- */
/* The ONNX type letter of attribute `name` in a form's list; 0 if absent. */
static char spec_type(const char *spec, const char *name) {
  size_t len = strlen(name);
  for (const char *p = spec; *p;) {
    while (*p == ' ')
      p++;
    const char *colon = strchr(p, ':');
    if (!colon)
      return 0;
    if ((size_t)(colon - p) == len && !strncmp(p, name, len))
      return colon[1];
    p = colon + 2;
  }
  return 0;
}

static const onnx_save_move *form_move(const onnx_save_form *form, const char *name) {
  for (uint32_t i = 0; i < 4 && form->moves[i].attr; i++)
    if (!strcmp(form->moves[i].attr, name))
      return &form->moves[i];
  return NULL;
}

static Onnx__AttributeProto *sv_attr(saver *S, const char *name,
                                     Onnx__AttributeProto__AttributeType type) {
  Onnx__AttributeProto *a = sv_alloc(S, sizeof *a);
  if (!a)
    return NULL;
  onnx__attribute_proto__init(a);
  a->name = (char *)name;
  a->has_type = 1;
  a->type = type;
  return a;
}

static Onnx__AttributeProto *sv_attr_string(saver *S, const char *name, const char *v) {
  Onnx__AttributeProto *a = sv_attr(S, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  if (!a)
    return NULL;
  a->has_s = 1;
  a->s.len = strlen(v);
  a->s.data = (uint8_t *)v;
  return a;
}

static kiln_status attr_kind_error(const saver *S, const kiln_node *n, const kiln_attr *ka,
                                   const char *want) {
  return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: %s: attribute '%s' is not %s, as ONNX has it",
                          S->where, node_desc(n), kiln_attr_name(ka), want);
}

/* Kiln attribute ka as ONNX type letter t (onnx_save.h). */
static kiln_status convert_attr(saver *S, const kiln_node *n, const kiln_attr *ka, char t,
                                Onnx__AttributeProto **out) {
  const char *name = kiln_attr_name(ka);
  kiln_attr_kind k = kiln_attr_get_kind(ka);
  bool num = k == KILN_ATTR_INT || k == KILN_ATTR_FLOAT;
  Onnx__AttributeProto *a = NULL;
  switch (t) {
  case 'i':
  case 'd':
    if (!num && !(t == 'd' && k == KILN_ATTR_TYPE))
      return attr_kind_error(S, n, ka, t == 'd' ? "an element type" : "an integer");
    if (!(a = sv_attr(S, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)))
      return sv_oom(S);
    a->has_i = 1;
    a->i = k == KILN_ATTR_TYPE ? onnx_dtype_from_elem(kiln_attr_type(ka)) : kiln_attr_int(ka);
    break;
  case 'f':
    if (!num)
      return attr_kind_error(S, n, ka, "a number");
    if (!(a = sv_attr(S, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)))
      return sv_oom(S);
    a->has_f = 1;
    a->f = (float)kiln_attr_float(ka);
    break;
  case 's':
    if (k != KILN_ATTR_STRING)
      return attr_kind_error(S, n, ka, "a string");
    if (!(a = sv_attr_string(S, name, kiln_attr_string(ka))))
      return sv_oom(S);
    break;
  case 'I': {
    uint32_t len = kiln_attr_len(ka);
    if (k != KILN_ATTR_INTS && !(k == KILN_ATTR_FLOATS && len == 0))
      return attr_kind_error(S, n, ka, "an integer list");
    if (!(a = sv_attr(S, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)))
      return sv_oom(S);
    a->n_ints = len;
    a->ints = (int64_t *)(len ? kiln_attr_ints(ka) : NULL);
    break;
  }
  case 'F': {
    uint32_t len = kiln_attr_len(ka);
    if (k != KILN_ATTR_FLOATS && k != KILN_ATTR_INTS)
      return attr_kind_error(S, n, ka, "a number list");
    if (!(a = sv_attr(S, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)))
      return sv_oom(S);
    float *v = sv_alloc(S, sizeof *v * (len ? len : 1));
    if (!v)
      return sv_oom(S);
    for (uint32_t i = 0; i < len; i++)
      v[i] = k == KILN_ATTR_FLOATS ? (float)kiln_attr_floats(ka)[i] : (float)kiln_attr_ints(ka)[i];
    a->n_floats = len;
    a->floats = v;
    break;
  }
  case 'S': {
    /* kiln has no string lists: the importer joined them with ','
     * (kiln_rnn_activations also reads ';' and spaces). */
    if (k != KILN_ATTR_STRING)
      return attr_kind_error(S, n, ka, "a string");
    char *copy = sv_strdup(S, kiln_attr_string(ka));
    ProtobufCBinaryData *items = copy ? sv_alloc(S, sizeof *items * (strlen(copy) / 2 + 1)) : NULL;
    if (!(a = sv_attr(S, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS)) || !items)
      return sv_oom(S);
    size_t count = 0;
    for (char *p = copy; *p;) {
      size_t skip = strspn(p, ",; ");
      p += skip;
      size_t len = strcspn(p, ",; ");
      if (!len)
        break;
      items[count].data = (uint8_t *)p;
      items[count].len = len;
      count++;
      p += len;
    }
    a->n_strings = count;
    a->strings = items;
    break;
  }
  default:
    return kiln_status_make(KILN_INTERNAL, "%s: %s: bad form letter '%c' for attribute '%s'",
                            S->where, node_desc(n), t, name);
  }
  *out = a;
  return NULL;
}

/* ConstantOfShape's `value` and `dtype` (kiln) are ONNX's one-element
 * `value` tensor; absent both, ONNX's default (f32 0) is kiln's too. */
static kiln_status constant_of_shape_value(saver *S, const kiln_node *n,
                                           Onnx__AttributeProto **out) {
  const kiln_attrs *as = kiln_node_attrs(n);
  *out = NULL;
  if (!kiln_attrs_find(as, "value") && !kiln_attrs_find(as, "dtype"))
    return NULL;
  kiln_type t;
  int64_t one = 1;
  KILN_TRY(kiln_type_make(kiln_attrs_type_or(as, "dtype", KILN_F32), 1, &one, &t));
  void *data = sv_alloc(S, 8);
  Onnx__AttributeProto *a = sv_attr(S, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  Onnx__TensorProto *tp = data && a ? sv_tensor(S, "value", &t, data) : NULL;
  if (!tp)
    return sv_oom(S);
  kiln_elem_store_f64(t.elem, data, 0, kiln_attrs_float_or(as, "value", 0));
  a->t = tp;
  *out = a;
  return NULL;
}

/* ---- nodes ---- */
/* Kiln attribute `mv` of n as a new initializer; its name in *out (NULL
 * when the attribute is absent and optional). */
static kiln_status move_to_input(saver *S, const kiln_node *n, const onnx_save_move *mv,
                                 const char **out) {
  *out = NULL;
  const kiln_attrs *as = kiln_node_attrs(n);
  const kiln_attr *ka = kiln_attrs_find(as, mv->attr);
  if (!ka) {
    if (mv->required)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: %s: attribute '%s' is missing", S->where,
                              node_desc(n), mv->attr);
    return NULL;
  }
  kiln_attr_kind k = kiln_attr_get_kind(ka);
  bool num = k == KILN_ATTR_INT || k == KILN_ATTR_FLOAT;
  uint32_t len = kiln_attr_len(ka);
  kiln_elem e = KILN_I64;
  int64_t count = 1;
  uint32_t rank = 0;
  switch ((onnx_save_in_form)mv->form) {
  case ONNX_SAVE_I64S:
    if (k != KILN_ATTR_INTS && !(k == KILN_ATTR_FLOATS && len == 0))
      return attr_kind_error(S, n, ka, "an integer list");
    count = len;
    rank = 1;
    break;
  case ONNX_SAVE_F32S:
    if (k != KILN_ATTR_FLOATS && k != KILN_ATTR_INTS)
      return attr_kind_error(S, n, ka, "a number list");
    e = KILN_F32;
    count = len;
    rank = 1;
    break;
  case ONNX_SAVE_I64_ONE:
    rank = 1;
    /* fall through */
  case ONNX_SAVE_I64_SCALAR:
    if (!num)
      return attr_kind_error(S, n, ka, "an integer");
    break;
  case ONNX_SAVE_SCALAR_X:
    if (!num)
      return attr_kind_error(S, n, ka, "a number");
    e = kiln_value_type(kiln_node_input(n, 0))->elem;
    break;
  case ONNX_SAVE_SCALAR_DTYPE:
    if (!num)
      return attr_kind_error(S, n, ka, "a number");
    e = kiln_attrs_type_or(as, "dtype", KILN_F32);
    break;
  case ONNX_SAVE_DEPTH:
    if (!num)
      return attr_kind_error(S, n, ka, "an integer");
    e = kiln_node_input(n, 1) && kiln_value_type(kiln_node_input(n, 1))->elem == KILN_I64
            ? KILN_I64
            : KILN_F32;
    break;
  }
  kiln_type t;
  KILN_TRY_CTX(kiln_type_make(e, rank, &count, &t), "%s: %s: attribute '%s'", S->where,
               node_desc(n), mv->attr);
  void *data = sv_alloc(S, (size_t)kiln_type_bytes(&t));
  const char *name = sv_fresh_name(S, kiln_value_name(kiln_node_result(n, 0)), mv->attr);
  if (!data || !name)
    return sv_oom(S);
  if (e == KILN_I64 && k == KILN_ATTR_INTS)
    memcpy(data, kiln_attr_ints(ka), sizeof(int64_t) * len);
  else if (k == KILN_ATTR_INTS || k == KILN_ATTR_FLOATS)
    for (uint32_t i = 0; i < len; i++)
      kiln_elem_store_f64(e, data, i,
                          k == KILN_ATTR_FLOATS ? kiln_attr_floats(ka)[i]
                                                : (double)kiln_attr_ints(ka)[i]);
  else if (e == KILN_I64)
    *(int64_t *)data = kiln_attr_int(ka); /* exact beyond 2^53 */
  else
    kiln_elem_store_f64(e, data, 0, kiln_attr_float(ka));
  Onnx__TensorProto *tp = sv_tensor(S, name, &t, data);
  if (!tp)
    return sv_oom(S);
  SV_PUSH(S, S->inits, S->n_inits, S->cap_inits, tp);
  if (S->oom)
    return sv_oom(S);
  *out = name;
  return NULL;
}

#define SAVE_MAX_INPUTS 72

static kiln_status save_node(saver *S, const kiln_node *n) {
  kiln_node_kind kind = kiln_node_get_kind(n);
  const onnx_save_form *form = onnx_save_form_find(kind);
  if (!form)
    return kiln_status_make(KILN_INTERNAL, "%s: %s: no form", S->where, node_desc(n));
  if (kind == KILN_NODE_Conv && kiln_node_input_count(n) > 3 && kiln_node_input(n, 3))
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "%s: %s: the residual input (kiln's fused Add) has no ONNX form",
                            S->where, node_desc(n));
  /* Inputs: the moved attributes at their positions, the node's inputs in
   * the positions left. */
  const char *ins[SAVE_MAX_INPUTS] = {0};
  bool claimed[SAVE_MAX_INPUTS] = {0};
  uint32_t n_in = 0;
  for (uint32_t i = 0; i < 4 && form->moves[i].attr; i++) {
    const onnx_save_move *mv = &form->moves[i];
    claimed[mv->pos] = true;
    KILN_TRY(move_to_input(S, n, mv, &ins[mv->pos]));
    if (ins[mv->pos] && mv->pos + 1u > n_in)
      n_in = mv->pos + 1u;
  }
  uint32_t pos = 0;
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++, pos++) {
    while (pos < SAVE_MAX_INPUTS && claimed[pos])
      pos++;
    if (pos >= SAVE_MAX_INPUTS)
      return kiln_status_make(KILN_OUT_OF_RANGE, "%s: %s: too many inputs", S->where, node_desc(n));
    const kiln_value *v = kiln_node_input(n, i);
    ins[pos] = v ? kiln_value_name(v) : NULL;
    if (v && pos + 1 > n_in)
      n_in = pos + 1;
  }
  char **in_names = sv_alloc(S, sizeof *in_names * (n_in ? n_in : 1));
  uint32_t nr = kiln_node_result_count(n);
  char **out_names = sv_alloc(S, sizeof *out_names * (nr ? nr : 1));
  Onnx__AttributeProto **attrs =
      sv_alloc(S, sizeof *attrs * (kiln_attrs_count(kiln_node_attrs(n)) + 3));
  Onnx__NodeProto *np = sv_alloc(S, sizeof *np);
  if (!in_names || !out_names || !attrs || !np)
    return sv_oom(S);
  for (uint32_t i = 0; i < n_in; i++)
    in_names[i] = (char *)(ins[i] ? ins[i] : ""); /* "" = absent */
  for (uint32_t i = 0; i < nr; i++)
    out_names[i] = (char *)kiln_value_name(kiln_node_result(n, i));

  /* Attributes: each one ONNX has, in its ONNX type; anything else is an
   * error rather than something silently left out. */
  const kiln_attrs *as = kiln_node_attrs(n);
  size_t n_attr = 0;
  bool has_split = kiln_attrs_find(as, "split") != NULL;
  for (uint32_t i = 0; i < kiln_attrs_count(as); i++) {
    const kiln_attr *ka = kiln_attrs_at(as, i);
    const char *name = kiln_attr_name(ka);
    if (form_move(form, name))
      continue;
    char t = spec_type(form->attrs, name);
    if (!t)
      return kiln_status_make(
          KILN_UNIMPLEMENTED, "%s: %s: attribute '%s' has no ONNX form (%s at opset %lld)",
          S->where, node_desc(n), name, form->op_type ? form->op_type : kiln_node_kind_name(kind),
          (long long)S->opset);
    if (t == '-' || (kind == KILN_NODE_Split && has_split && !strcmp(name, "num_outputs")))
      continue;
    if (kind == KILN_NODE_Upsample && !strcmp(name, "mode") &&
        !strcmp(kiln_attr_string(ka), "bilinear")) {
      if (!(attrs[n_attr++] = sv_attr_string(S, "mode", "linear")))
        return sv_oom(S);
      continue;
    }
    KILN_TRY(convert_attr(S, n, ka, t, &attrs[n_attr++]));
  }
  if (kind == KILN_NODE_ConstantOfShape) {
    KILN_TRY(constant_of_shape_value(S, n, &attrs[n_attr]));
    if (attrs[n_attr])
      n_attr++;
  }
  if (kind == KILN_NODE_Upsample) {
    /* What Upsample computes, as kiln lowers it (passes/lower_resize.c). */
    attrs[n_attr++] = sv_attr_string(S, "coordinate_transformation_mode", "asymmetric");
    attrs[n_attr++] = sv_attr_string(S, "nearest_mode", "floor");
    if (!attrs[n_attr - 1] || !attrs[n_attr - 2])
      return sv_oom(S);
  }
  onnx__node_proto__init(np);
  np->name = (char *)kiln_node_name(n);
  np->op_type = (char *)(form->op_type ? form->op_type : kiln_node_kind_name(kind));
  np->n_input = n_in;
  np->input = in_names;
  np->n_output = nr;
  np->output = out_names;
  np->n_attribute = n_attr;
  np->attribute = attrs;
  SV_PUSH(S, S->nodes, S->n_nodes, S->cap_nodes, np);
  return S->oom ? sv_oom(S) : NULL;
}

/* Every node with no ONNX form, in one message; also sets the opset. */
static kiln_status check_nodes(saver *S) {
  onnx_sb sb = {0};
  uint32_t bad = 0;
  S->opset = ONNX_SAVE_OPSET;
  for (uint32_t i = 0; i < kiln_function_node_count(S->f); i++) {
    const kiln_node *n = kiln_function_node(S->f, i);
    kiln_node_kind k = kiln_node_get_kind(n);
    const onnx_save_form *form = onnx_save_form_find(k);
    if (form) {
      if (form->opset > S->opset)
        S->opset = form->opset;
      continue;
    }
    const char *why = kiln_node_kind_no_onnx_reason(k);
    if (bad < 20)
      onnx_sb_printf(&sb, "\n  %s: %s", node_desc(n), why ? why : "no ONNX operator computes it");
    bad++;
  }
  if (!bad)
    return NULL;
  if (bad > 20)
    onnx_sb_printf(&sb, "\n  and %u more", bad - 20);
  kiln_status s =
      kiln_status_make(KILN_UNIMPLEMENTED, "%s: %u node%s with no ONNX form:%s", S->where, bad,
                       bad == 1 ? "" : "s", sb.oom ? " (out of memory)" : sb.s);
  onnx_sb_free(&sb);
  return s;
}

static kiln_status check_types(const saver *S) {
  for (uint32_t i = 0; i < kiln_module_input_count(S->m); i++)
    KILN_TRY(check_type(S, kiln_module_input(S->m, i), "input"));
  for (uint32_t i = 0; i < kiln_module_constant_count(S->m); i++)
    KILN_TRY(check_type(S, kiln_module_constant(S->m, i), "constant"));
  for (uint32_t i = 0; i < kiln_function_node_count(S->f); i++) {
    const kiln_node *n = kiln_function_node(S->f, i);
    for (uint32_t r = 0; r < kiln_node_result_count(n); r++)
      KILN_TRY_CTX(check_type(S, kiln_node_result(n, r), "result"), "%s", node_desc(n));
  }
  return NULL;
}

/* Graph outputs. An output bound under another name than its value's is
 * written as Identity(value) -> name. */
static kiln_status save_outputs(saver *S, Onnx__GraphProto *g) {
  uint32_t no = kiln_function_output_count(S->f);
  Onnx__ValueInfoProto **outs = sv_alloc(S, sizeof *outs * (no ? no : 1));
  if (!outs)
    return sv_oom(S);
  for (uint32_t i = 0; i < no; i++) {
    const char *name = kiln_function_output_name(S->f, i);
    const kiln_value *v = kiln_function_output_value(S->f, i);
    if (strcmp(name, kiln_value_name(v)) != 0) {
      if (sv_name_taken(S, name))
        return kiln_status_make(KILN_UNIMPLEMENTED,
                                "%s: output '%s' (bound to '%s') has the name of another value; "
                                "ONNX names an output by its value",
                                S->where, name, kiln_value_name(v));
      Onnx__NodeProto *np = sv_alloc(S, sizeof *np);
      char **in = sv_alloc(S, sizeof *in), **out = sv_alloc(S, sizeof *out);
      if (!np || !in || !out || !sv_name_add(S, name))
        return sv_oom(S);
      onnx__node_proto__init(np);
      in[0] = (char *)kiln_value_name(v);
      out[0] = (char *)name;
      np->name = (char *)name;
      np->op_type = "Identity";
      np->n_input = np->n_output = 1;
      np->input = in;
      np->output = out;
      SV_PUSH(S, S->nodes, S->n_nodes, S->cap_nodes, np);
    }
    if (!(outs[i] = sv_value_info(S, name, kiln_value_type(v))))
      return sv_oom(S);
  }
  g->n_output = no;
  g->output = outs;
  return S->oom ? sv_oom(S) : NULL;
}

static kiln_status build_model(saver *S, Onnx__ModelProto *mp, Onnx__GraphProto *g,
                               Onnx__OperatorSetIdProto *ops, Onnx__OperatorSetIdProto **opsp) {
  KILN_TRY(check_nodes(S));
  KILN_TRY(check_types(S));
  onnx__model_proto__init(mp);
  onnx__graph_proto__init(g);
  onnx__operator_set_id_proto__init(ops);
  for (uint32_t i = 0; i < kiln_module_constant_count(S->m); i++) {
    const kiln_value *c = kiln_module_constant(S->m, i);
    Onnx__TensorProto *tp =
        sv_tensor(S, kiln_value_name(c), kiln_value_type(c), kiln_value_data(c));
    if (!tp)
      return sv_oom(S);
    SV_PUSH(S, S->inits, S->n_inits, S->cap_inits, tp);
  }
  uint32_t ni = kiln_module_input_count(S->m);
  Onnx__ValueInfoProto **ins = sv_alloc(S, sizeof *ins * (ni ? ni : 1));
  if (!ins)
    return sv_oom(S);
  for (uint32_t i = 0; i < ni; i++) {
    const kiln_value *v = kiln_module_input(S->m, i);
    if (!(ins[i] = sv_value_info(S, kiln_value_name(v), kiln_value_type(v))))
      return sv_oom(S);
  }
  for (uint32_t i = 0; i < kiln_function_node_count(S->f); i++)
    KILN_TRY(save_node(S, kiln_function_node(S->f, i)));
  KILN_TRY(save_outputs(S, g));
  if (S->oom)
    return sv_oom(S);
  g->name = (char *)kiln_module_name(S->m);
  g->n_node = S->n_nodes;
  g->node = S->nodes;
  g->n_initializer = S->n_inits;
  g->initializer = S->inits;
  g->n_input = ni;
  g->input = ins;
  ops->domain = "";
  ops->has_version = 1;
  ops->version = S->opset;
  *opsp = ops;
  mp->has_ir_version = 1;
  /* The IR version of the ONNX release that brought the opset. */
  mp->ir_version = S->opset >= 24 ? 12 : S->opset >= 23 ? 11 : ONNX_SAVE_IR_VERSION;
  mp->n_opset_import = 1;
  mp->opset_import = opsp;
  mp->producer_name = "kiln";
  mp->graph = g;
  size_t bytes = onnx__model_proto__get_packed_size(mp);
  if (bytes > ONNX_SAVE_MAX_BYTES)
    return kiln_status_make(KILN_OUT_OF_RANGE,
                            "%s: the model is %zu bytes, more than protobuf's 2 GiB limit (the "
                            "writer makes no external data)",
                            S->where, bytes);
  return NULL;
}

static kiln_status sv_begin(saver *S, const kiln_module *m, const char *function,
                            const char *where) {
  memset(S, 0, sizeof *S);
  S->m = m;
  S->where = where;
  if (!m)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: module is NULL", where);
  S->f = function                        ? kiln_module_find_function(m, function)
         : kiln_module_function_count(m) ? kiln_module_function(m, 0)
                                         : NULL;
  if (!S->f)
    return kiln_status_make(KILN_NOT_FOUND, "%s: module @%s has no function %s%s%s", where,
                            kiln_module_name(m), function ? "@" : "", function ? function : "",
                            function ? "" : "(it has none)");
  return NULL;
}

/* ---- writing ---- */
typedef struct file_sink {
  ProtobufCBuffer base;
  FILE *fp;
  bool failed;
} file_sink;

static void file_sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data) {
  file_sink *s = (file_sink *)b;
  if (!s->failed && len && fwrite(data, 1, len, s->fp) != len)
    s->failed = true;
}

/* Pack mp into a new file next to `path`, then rename it over `path`:
 * a reader never sees a half-written model, and a failure leaves no file. */
static kiln_status write_atomic(const char *path, const Onnx__ModelProto *mp) {
  size_t n = strlen(path) + 40;
  char *tmp = malloc(n);
  if (!tmp)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", path);
  int fd = -1;
  for (unsigned k = 0; k < 100 && fd < 0; k++) {
    snprintf(tmp, n, "%s.tmp-%ld-%u", path, (long)getpid(), k);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0) {
    kiln_status s = kiln_status_make(KILN_IO_ERROR, "%s: cannot create: %s", path, strerror(errno));
    free(tmp);
    return s;
  }
  kiln_status s = NULL;
  FILE *fp = fdopen(fd, "wb");
  if (!fp) {
    s = kiln_status_make(KILN_IO_ERROR, "%s: cannot write: %s", path, strerror(errno));
    close(fd);
  } else {
    file_sink sink = {.base = {.append = file_sink_append}, .fp = fp};
    onnx__model_proto__pack_to_buffer(mp, &sink.base);
    int err = sink.failed ? (errno ? errno : EIO) : 0;
    if (!err && fflush(fp) != 0)
      err = errno;
    if (!err && fsync(fileno(fp)) != 0)
      err = errno;
    if (fclose(fp) != 0 && !err)
      err = errno;
    if (err)
      s = kiln_status_make(KILN_IO_ERROR, "%s: write failed: %s", path, strerror(err));
  }
  if (!s && rename(tmp, path) != 0)
    s = kiln_status_make(KILN_IO_ERROR, "%s: cannot replace: %s", path, strerror(errno));
  if (s)
    unlink(tmp);
  free(tmp);
  return s;
}

kiln_status kiln_onnx_save(const kiln_module *m, const char *function, const char *path) {
  if (!path)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_onnx_save: path is NULL");
  saver S;
  Onnx__ModelProto mp;
  Onnx__GraphProto g;
  Onnx__OperatorSetIdProto ops, *opsp;
  kiln_status s = sv_begin(&S, m, function, path);
  if (!s)
    s = build_model(&S, &mp, &g, &ops, &opsp);
  if (!s)
    s = write_atomic(path, &mp);
  sv_free(&S);
  return s;
}

kiln_status kiln_onnx_save_memory(const kiln_module *m, const char *function, void **out_data,
                                  size_t *out_size) {
  if (!out_data || !out_size)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_onnx_save_memory: NULL argument");
  *out_data = NULL;
  *out_size = 0;
  saver S;
  Onnx__ModelProto mp;
  Onnx__GraphProto g;
  Onnx__OperatorSetIdProto ops, *opsp;
  kiln_status s = sv_begin(&S, m, function, "<memory>");
  if (!s)
    s = build_model(&S, &mp, &g, &ops, &opsp);
  if (!s) {
    size_t n = onnx__model_proto__get_packed_size(&mp);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "<memory>: out of memory (%zu bytes)", n);
    else {
      onnx__model_proto__pack(&mp, buf);
      *out_data = buf;
      *out_size = n;
    }
  }
  sv_free(&S);
  return s;
}
