/* tests/onnx/model_builder.c: see model_builder.h. Arrays grow by
 * reallocating into the builder's owned list (tests build tiny graphs). */
#include "tests/onnx/model_builder.h"

#include <stdlib.h>
#include <string.h>

void *tb_alloc(tb *b, size_t size) {
  void *p = calloc(1, size ? size : 1);
  if (!p || b->n_owned == sizeof b->owned / sizeof b->owned[0])
    abort(); /* test helper: out of room is a bug in the test */
  b->owned[b->n_owned++] = p;
  return p;
}

static char *tb_str(tb *b, const char *s) {
  char *r = tb_alloc(b, strlen(s) + 1);
  strcpy(r, s);
  return r;
}

/* Append p to a pointer array *arr of *n entries. */
static void tb_push(tb *b, void ***arr, size_t *n, void *p) {
  void **na = tb_alloc(b, (*n + 1) * sizeof *na);
  if (*n)
    memcpy(na, *arr, *n * sizeof *na);
  na[(*n)++] = p;
  *arr = na;
}

void tb_init(tb *b, int64_t opset) {
  memset(b, 0, sizeof *b);
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  b->model = m;
  b->graph = g;
  b->model.has_ir_version = 1;
  b->model.ir_version = 8;
  b->model.graph = &b->graph;
  b->graph.name = tb_str(b, "test");
  if (opset >= 0) {
    Onnx__OperatorSetIdProto *o = tb_alloc(b, sizeof *o);
    Onnx__OperatorSetIdProto oi = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    *o = oi;
    o->domain = tb_str(b, "");
    o->has_version = 1;
    o->version = opset;
    tb_push(b, (void ***)&b->model.opset_import, &b->model.n_opset_import, o);
  }
}

void tb_free(tb *b) {
  for (size_t i = 0; i < b->n_owned; i++)
    free(b->owned[i]);
  b->n_owned = 0;
}

Onnx__ValueInfoProto *tb_input(tb *b, const char *name, int32_t dtype, size_t rank,
                               const int64_t *dims, const char *const *dim_params) {
  Onnx__ValueInfoProto *vi = tb_alloc(b, sizeof *vi);
  Onnx__ValueInfoProto vi0 = ONNX__VALUE_INFO_PROTO__INIT;
  *vi = vi0;
  vi->name = tb_str(b, name);
  Onnx__TypeProto *tp = tb_alloc(b, sizeof *tp);
  Onnx__TypeProto tp0 = ONNX__TYPE_PROTO__INIT;
  *tp = tp0;
  Onnx__TypeProto__Tensor *tt = tb_alloc(b, sizeof *tt);
  Onnx__TypeProto__Tensor tt0 = ONNX__TYPE_PROTO__TENSOR__INIT;
  *tt = tt0;
  tt->has_elem_type = 1;
  tt->elem_type = dtype;
  Onnx__TensorShapeProto *sh = tb_alloc(b, sizeof *sh);
  Onnx__TensorShapeProto sh0 = ONNX__TENSOR_SHAPE_PROTO__INIT;
  *sh = sh0;
  for (size_t i = 0; i < rank; i++) {
    Onnx__TensorShapeProto__Dimension *d = tb_alloc(b, sizeof *d);
    Onnx__TensorShapeProto__Dimension d0 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
    *d = d0;
    if (dim_params && dim_params[i]) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = tb_str(b, dim_params[i]);
    } else {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = dims[i];
    }
    tb_push(b, (void ***)&sh->dim, &sh->n_dim, d);
  }
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  vi->type = tp;
  tb_push(b, (void ***)&b->graph.input, &b->graph.n_input, vi);
  return vi;
}

void tb_output(tb *b, const char *name) {
  Onnx__ValueInfoProto *vi = tb_alloc(b, sizeof *vi);
  Onnx__ValueInfoProto vi0 = ONNX__VALUE_INFO_PROTO__INIT;
  *vi = vi0;
  vi->name = tb_str(b, name);
  tb_push(b, (void ***)&b->graph.output, &b->graph.n_output, vi);
}

Onnx__TensorProto *tb_tensor(tb *b, const char *name, int32_t dtype, size_t rank,
                             const int64_t *dims) {
  Onnx__TensorProto *t = tb_alloc(b, sizeof *t);
  Onnx__TensorProto t0 = ONNX__TENSOR_PROTO__INIT;
  *t = t0;
  t->name = tb_str(b, name);
  t->has_data_type = 1;
  t->data_type = dtype;
  t->n_dims = rank;
  t->dims = tb_alloc(b, (rank ? rank : 1) * sizeof *t->dims);
  if (rank)
    memcpy(t->dims, dims, rank * sizeof *dims);
  return t;
}

Onnx__TensorProto *tb_initializer(tb *b, const char *name, int32_t dtype, size_t rank,
                                  const int64_t *dims) {
  Onnx__TensorProto *t = tb_tensor(b, name, dtype, rank, dims);
  tb_push(b, (void ***)&b->graph.initializer, &b->graph.n_initializer, t);
  return t;
}

void tb_raw(tb *b, Onnx__TensorProto *t, const void *data, size_t len) {
  t->has_raw_data = 1;
  t->raw_data.len = len;
  t->raw_data.data = tb_alloc(b, len);
  memcpy(t->raw_data.data, data, len);
}

static void tb_kv(tb *b, Onnx__TensorProto *t, const char *k, const char *v) {
  Onnx__StringStringEntryProto *e = tb_alloc(b, sizeof *e);
  Onnx__StringStringEntryProto e0 = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
  *e = e0;
  e->key = tb_str(b, k);
  e->value = tb_str(b, v);
  tb_push(b, (void ***)&t->external_data, &t->n_external_data, e);
}

void tb_external(tb *b, Onnx__TensorProto *t, const char *location, const char *offset,
                 const char *length) {
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  tb_kv(b, t, "location", location);
  if (offset)
    tb_kv(b, t, "offset", offset);
  if (length)
    tb_kv(b, t, "length", length);
}

Onnx__NodeProto *tb_node(tb *b, const char *op, const char *name, const char *const *inputs,
                         const char *const *outputs) {
  Onnx__NodeProto *n = tb_alloc(b, sizeof *n);
  Onnx__NodeProto n0 = ONNX__NODE_PROTO__INIT;
  *n = n0;
  n->op_type = tb_str(b, op);
  if (name)
    n->name = tb_str(b, name);
  for (; inputs && *inputs; inputs++)
    tb_push(b, (void ***)&n->input, &n->n_input, tb_str(b, *inputs));
  for (; outputs && *outputs; outputs++)
    tb_push(b, (void ***)&n->output, &n->n_output, tb_str(b, *outputs));
  tb_push(b, (void ***)&b->graph.node, &b->graph.n_node, n);
  return n;
}

static Onnx__AttributeProto *tb_attr(tb *b, Onnx__NodeProto *n, const char *name, int type) {
  Onnx__AttributeProto *a = tb_alloc(b, sizeof *a);
  Onnx__AttributeProto a0 = ONNX__ATTRIBUTE_PROTO__INIT;
  *a = a0;
  a->name = tb_str(b, name);
  a->has_type = 1;
  a->type = type;
  tb_push(b, (void ***)&n->attribute, &n->n_attribute, a);
  return a;
}

void tb_attr_int(tb *b, Onnx__NodeProto *n, const char *name, int64_t v) {
  Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
}

void tb_attr_float(tb *b, Onnx__NodeProto *n, const char *name, float v) {
  Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
}

void tb_attr_ints(tb *b, Onnx__NodeProto *n, const char *name, const int64_t *v, size_t len) {
  Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = len;
  a->ints = tb_alloc(b, (len ? len : 1) * sizeof *v);
  if (len)
    memcpy(a->ints, v, len * sizeof *v);
}

void tb_attr_tensor(tb *b, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t) {
  Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  a->t = t;
}

uint8_t *tb_pack(tb *b, size_t *len) {
  *len = onnx__model_proto__get_packed_size(&b->model);
  uint8_t *buf = malloc(*len ? *len : 1);
  if (!buf)
    abort();
  onnx__model_proto__pack(&b->model, buf);
  return buf;
}
