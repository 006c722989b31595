/* tests/onnx/model_builder.h: build small ONNX models in C with the
 * protobuf-c generated API, for the loader tests (good and broken models).
 * Everything a builder allocates is freed by tb_free. */
#ifndef KILN_TESTS_ONNX_MODEL_BUILDER_H
#define KILN_TESTS_ONNX_MODEL_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "loaders/onnx/onnx.pb-c.h"

typedef struct tb {
  Onnx__ModelProto model;
  Onnx__GraphProto graph;
  void *owned[512];
  size_t n_owned;
} tb;

/* opset < 0: no opset import at all. */
void tb_init(tb *b, int64_t opset);
void tb_free(tb *b);
void *tb_alloc(tb *b, size_t size); /* zeroed, freed by tb_free */

/* Graph input; dim_params[i] non-NULL makes dim i symbolic. dtype is the
 * ONNX TensorProto.DataType (1 = FLOAT, 7 = INT64 ...). */
Onnx__ValueInfoProto *tb_input(tb *b, const char *name, int32_t dtype, size_t rank,
                               const int64_t *dims, const char *const *dim_params);
void tb_output(tb *b, const char *name);
/* An initializer (add data by filling its fields). */
Onnx__TensorProto *tb_initializer(tb *b, const char *name, int32_t dtype, size_t rank,
                                  const int64_t *dims);
Onnx__TensorProto *tb_tensor(tb *b, const char *name, int32_t dtype, size_t rank,
                             const int64_t *dims);
void tb_raw(tb *b, Onnx__TensorProto *t, const void *data, size_t len);
void tb_external(tb *b, Onnx__TensorProto *t, const char *location, const char *offset,
                 const char *length);
/* A node; inputs/outputs NULL-terminated. */
Onnx__NodeProto *tb_node(tb *b, const char *op, const char *name, const char *const *inputs,
                         const char *const *outputs);
void tb_attr_int(tb *b, Onnx__NodeProto *n, const char *name, int64_t v);
void tb_attr_float(tb *b, Onnx__NodeProto *n, const char *name, float v);
void tb_attr_ints(tb *b, Onnx__NodeProto *n, const char *name, const int64_t *v, size_t len);
void tb_attr_tensor(tb *b, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t);
/* Serialize (malloc'd; caller frees). */
uint8_t *tb_pack(tb *b, size_t *len);

#endif
