/* tests/onnx/test_onnx.c: the ONNX loader on hand-made models. Broken models
 * (truncated, wrong field types, missing tensors, cycles, bad shapes and
 * sizes, external data escaping the folder) must fail cleanly with a message
 * naming the culprit; small good models must import to the expected graph;
 * .pb tensors must round-trip. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "loaders/onnx/onnx_internal.h"
#include "tests/onnx/model_builder.h"

enum { FLOAT = 1, UINT8 = 2, INT32 = 6, INT64 = 7, STRING = 8, FLOAT16 = 10 };

static const int64_t d23[] = {2, 3};

/* Load the builder's model from memory; returns the status. */
static kiln_status load_tb(tb *b, const char *base_dir, const kiln_onnx_options *o,
                           kiln_module **m) {
  size_t len;
  uint8_t *buf = tb_pack(b, &len);
  kiln_status s = kiln_onnx_load_memory(buf, len, base_dir, "t.onnx", o, m);
  free(buf);
  return s;
}

/* Expect failure with `code` and every fragment in the message. */
static void expect_error(kiln_status s, kiln_code code, const char *const *frags) {
  ck_assert_msg(s != NULL, "expected an error");
  const char *msg = kiln_status_message(s);
  ck_assert_msg(kiln_status_code(s) == code, "code %s, wanted %s: %s",
                kiln_code_name(kiln_status_code(s)), kiln_code_name(code), msg);
  for (; frags && *frags; frags++)
    ck_assert_msg(strstr(msg, *frags) != NULL, "message lacks '%s': %s", *frags, msg);
  kiln_status_free(s);
}

#define EXPECT(b, code, ...)                                                                       \
  do {                                                                                             \
    kiln_module *m_ = NULL;                                                                        \
    const char *const frags_[] = {__VA_ARGS__, NULL};                                              \
    expect_error(load_tb((b), NULL, NULL, &m_), (code), frags_);                                   \
    ck_assert_ptr_null(m_);                                                                        \
  } while (0)

/* A valid x -> Relu -> y model. */
static void relu_model(tb *b) {
  tb_init(b, 13);
  tb_input(b, "x", FLOAT, 2, d23, NULL);
  tb_node(b, "Relu", "r", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  tb_output(b, "y");
}

/* ---- broken models ---- */
START_TEST(empty_buffer) {
  kiln_module *m = NULL;
  const char *const f[] = {"t.onnx", "no graph", NULL};
  expect_error(kiln_onnx_load_memory("", 0, NULL, "t.onnx", NULL, &m), KILN_PARSE_ERROR, f);
}
END_TEST

START_TEST(garbage_bytes) {
  static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x99};
  kiln_module *m = NULL;
  const char *const f[] = {"t.onnx", "corrupt protobuf", NULL};
  expect_error(kiln_onnx_load_memory(junk, sizeof junk, NULL, "t.onnx", NULL, &m), KILN_PARSE_ERROR,
               f);
}
END_TEST

/* Found by the fuzzer: Softmax whose int attribute `axis` arrives as the
 * float -4.2e37. Converting it to int64 was undefined behaviour; now it is
 * clamped and refused as out of range. (Also in tests/fuzz/corpus.) */
START_TEST(float_attribute_out_of_int_range) {
  static const uint8_t model[] = {
      0x3a, 0x65, 0x0a, 0x1c, 0x0a, 0x01, 0x78, 0x52, 0x01, 0x79, 0x22, 0x07, 0x53, 0x6f,
      0x66, 0x74, 0x6d, 0x61, 0x78, 0x2a, 0x0b, 0x0a, 0x04, 0x61, 0x78, 0x69, 0x73, 0x15,
      0x04, 0x60, 0xfe, 0xfd, 0x12, 0x13, 0x74, 0x65, 0x73, 0x74, 0x5f, 0x73, 0x6f, 0x66,
      0x74, 0x6d, 0x61, 0x78, 0x5f, 0x21, 0x78, 0x69, 0x73, 0x5f, 0x31, 0x5a, 0x17, 0x0a,
      0x01, 0x78, 0x12, 0x12, 0x0a, 0x10, 0x08, 0x0b, 0x12, 0x0c, 0x0a, 0x02, 0x08, 0x03,
      0x0a, 0x02, 0x08, 0x04, 0x0a, 0x02, 0x08, 0x05, 0x62, 0x17, 0x0a, 0x07, 0x00, 0x12,
      0x4c, 0x65, 0x61, 0x6b, 0x01, 0x12, 0x0c, 0x0a, 0x02, 0x08, 0x03, 0x0a, 0x02, 0x08,
      0x04, 0x0a, 0x02, 0x08, 0x05, 0x42, 0x04, 0x0a, 0x00, 0x18, 0x0d};
  kiln_module *m = NULL;
  const char *const f[] = {"t.onnx", "Softmax", "out of range", NULL};
  kiln_status s = kiln_onnx_load_memory(model, sizeof model, NULL, "t.onnx", NULL, &m);
  ck_assert_ptr_nonnull(s);
  for (int i = 0; f[i]; i++)
    ck_assert_msg(strstr(kiln_status_message(s), f[i]), "'%s' lacks '%s'", kiln_status_message(s),
                  f[i]);
  kiln_status_free(s);
  ck_assert_ptr_null(m);
}
END_TEST

START_TEST(truncated) {
  tb b;
  relu_model(&b);
  size_t len;
  uint8_t *buf = tb_pack(&b, &len);
  /* Every strict prefix that cuts a field must fail cleanly (never crash). */
  int failures = 0;
  for (size_t cut = 1; cut < len; cut++) {
    kiln_module *m = NULL;
    kiln_status s = kiln_onnx_load_memory(buf, cut, NULL, "t.onnx", NULL, &m);
    if (s)
      failures++;
    kiln_status_free(s);
    kiln_module_destroy(m);
  }
  ck_assert_int_eq(failures, (int)len - 1);
  kiln_module *m = NULL;
  const char *const f[] = {"truncated", NULL};
  expect_error(kiln_onnx_load_memory(buf, len / 2, NULL, "t.onnx", NULL, &m), KILN_PARSE_ERROR, f);
  free(buf);
  tb_free(&b);
}
END_TEST

START_TEST(wrong_field_type) {
  /* Field 7 (graph, a message) sent as a varint. */
  static const uint8_t bad[] = {0x08, 0x07, 0x38, 0x01};
  kiln_module *m = NULL;
  const char *const f[] = {"wrong field types", NULL};
  expect_error(kiln_onnx_load_memory(bad, sizeof bad, NULL, "t.onnx", NULL, &m), KILN_PARSE_ERROR,
               f);
}
END_TEST

START_TEST(no_opset) {
  tb b;
  relu_model(&b);
  b.model.n_opset_import = 0;
  EXPECT(&b, KILN_PARSE_ERROR, "no opset");
  tb_free(&b);
}
END_TEST

START_TEST(missing_tensor) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, NULL);
  tb_node(&b, "Add", "adder", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  EXPECT(&b, KILN_NOT_FOUND, "'adder' (Add)", "'w'", "not defined");
  tb_free(&b);
}
END_TEST

START_TEST(cycle) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, NULL);
  tb_node(&b, "Add", "first", (const char *[]){"x", "b", NULL}, (const char *[]){"a", NULL});
  tb_node(&b, "Relu", "second", (const char *[]){"a", NULL}, (const char *[]){"b", NULL});
  tb_output(&b, "b");
  EXPECT(&b, KILN_NOT_FOUND, "'first' (Add)", "'b'", "topologically sorted");
  tb_free(&b);
}
END_TEST

/* kiln's Conv has a fourth input (a fused residual), ONNX's does not: a
 * model that gives one is refused, not read as a residual. */
START_TEST(conv_extra_input) {
  tb b;
  tb_init(&b, 13);
  static const int64_t d1[] = {1, 1, 3, 3}, w1[] = {1, 1, 1, 1}, b1[] = {1};
  tb_input(&b, "x", FLOAT, 4, d1, NULL);
  tb_input(&b, "w", FLOAT, 4, w1, NULL);
  tb_input(&b, "b", FLOAT, 1, b1, NULL);
  tb_input(&b, "z", FLOAT, 4, d1, NULL);
  tb_node(&b, "Conv", "conv4", (const char *[]){"x", "w", "b", "z", NULL},
          (const char *[]){"y", NULL});
  tb_output(&b, "y");
  EXPECT(&b, KILN_INVALID_ARGUMENT, "'conv4' (Conv)", "at most 3 inputs", "not 4");
  tb_free(&b);
}
END_TEST

START_TEST(unsupported_ops_listed) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, NULL);
  tb_node(&b, "FancyOp", "f1", (const char *[]){"x", NULL}, (const char *[]){"a", NULL});
  tb_node(&b, "Relu", "ok", (const char *[]){"a", NULL}, (const char *[]){"c", NULL});
  Onnx__NodeProto *n =
      tb_node(&b, "Frob", "f2", (const char *[]){"c", NULL}, (const char *[]){"y", NULL});
  n->domain = "com.example";
  tb_output(&b, "y");
  EXPECT(&b, KILN_UNIMPLEMENTED, "2 unsupported operators",
         "'f1': FancyOp (domain 'ai.onnx', opset 13)", "'f2': Frob (domain 'com.example'");
  tb_free(&b);
}
END_TEST

START_TEST(opset_out_of_range) {
  tb b;
  relu_model(&b);
  b.model.opset_import[0]->version = 99;
  EXPECT(&b, KILN_UNIMPLEMENTED, "Relu", "opset 99");
  tb_free(&b);
}
END_TEST

START_TEST(output_not_produced) {
  tb b;
  relu_model(&b);
  tb_output(&b, "zz");
  EXPECT(&b, KILN_NOT_FOUND, "graph output 'zz'");
  tb_free(&b);
}
END_TEST

START_TEST(no_outputs) {
  tb b;
  relu_model(&b);
  b.graph.n_output = 0;
  EXPECT(&b, KILN_PARSE_ERROR, "no outputs");
  tb_free(&b);
}
END_TEST

START_TEST(raw_data_size) {
  tb b;
  relu_model(&b);
  Onnx__TensorProto *t = tb_initializer(&b, "w", FLOAT, 2, d23);
  float five[5] = {0};
  tb_raw(&b, t, five, sizeof five);
  EXPECT(&b, KILN_PARSE_ERROR, "initializer 'w'", "24 bytes", "holds 20");
  tb_free(&b);
}
END_TEST

START_TEST(float_data_count) {
  tb b;
  relu_model(&b);
  Onnx__TensorProto *t = tb_initializer(&b, "w", FLOAT, 1, (const int64_t[]){2});
  static float three[3] = {1, 2, 3};
  t->n_float_data = 3;
  t->float_data = three;
  EXPECT(&b, KILN_PARSE_ERROR, "initializer 'w'", "float_data holds 3 values", "needs 2");
  tb_free(&b);
}
END_TEST

START_TEST(wrong_data_field) {
  tb b;
  relu_model(&b);
  Onnx__TensorProto *t = tb_initializer(&b, "w", FLOAT, 1, (const int64_t[]){2});
  static int64_t two[2] = {1, 2};
  t->n_int64_data = 2;
  t->int64_data = two;
  EXPECT(&b, KILN_PARSE_ERROR, "initializer 'w'", "int64_data used for type f32");
  tb_free(&b);
}
END_TEST

START_TEST(overflow_dims) {
  tb b;
  relu_model(&b);
  const int64_t big[] = {(int64_t)1 << 40, (int64_t)1 << 40};
  tb_initializer(&b, "huge", FLOAT, 2, big);
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, NULL, &m);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "initializer 'huge'"));
  kiln_status_free(s);
  tb_free(&b);
}
END_TEST

START_TEST(negative_dim) {
  tb b;
  relu_model(&b);
  tb_initializer(&b, "neg", FLOAT, 2, (const int64_t[]){2, -3});
  EXPECT(&b, KILN_PARSE_ERROR, "initializer 'neg'", "dim 1 is negative");
  tb_free(&b);
}
END_TEST

START_TEST(rank_too_big) {
  tb b;
  relu_model(&b);
  const int64_t ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  tb_initializer(&b, "deep", FLOAT, 9, ones);
  EXPECT(&b, KILN_UNIMPLEMENTED, "initializer 'deep'", "rank 9");
  tb_free(&b);
}
END_TEST

START_TEST(bad_data_type) {
  tb b;
  relu_model(&b);
  tb_initializer(&b, "odd", 99, 1, (const int64_t[]){1});
  EXPECT(&b, KILN_PARSE_ERROR, "initializer 'odd'", "invalid ONNX data type 99");
  tb_free(&b);
}
END_TEST

START_TEST(unbound_dims_listed) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, (const char *[]){"N", NULL});
  tb_input(&b, "z", FLOAT, 2, d23, (const char *[]){NULL, "M"});
  tb_node(&b, "Add", "a", (const char *[]){"x", "z", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  EXPECT(&b, KILN_INVALID_ARGUMENT, "2 unbound symbolic dims", "'N' (input 'x' dim 0)",
         "'M' (input 'z' dim 1)", "--dim");
  tb_free(&b);
}
END_TEST

/* A bound input after an unbound one: its type is still made (it used to
 * be left unset and read, found by the pipeline fuzzer). */
START_TEST(bound_input_after_unbound) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, (const char *[]){"N", NULL});
  tb_input(&b, "w", FLOAT, 2, d23, NULL);
  tb_node(&b, "Add", "a", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  EXPECT(&b, KILN_INVALID_ARGUMENT, "1 unbound symbolic dim", "'N' (input 'x' dim 0)", "--dim");
  tb_free(&b);
}
END_TEST

/* The model that first showed the hole: data f32[2,2], indices i64[6,2],
 * axis 1. Refused at load, naming the node and the dimension. */
START_TEST(gather_elements_indices_exceed_data) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "data", FLOAT, 2, (const int64_t[]){2, 2}, NULL);
  tb_input(&b, "idx", INT64, 2, (const int64_t[]){6, 2}, NULL);
  Onnx__NodeProto *n = tb_node(&b, "GatherElements", "ge", (const char *[]){"data", "idx", NULL},
                               (const char *[]){"y", NULL});
  tb_attr_int(&b, n, "axis", 1);
  tb_output(&b, "y");
  EXPECT(&b, KILN_INVALID_ARGUMENT, "t.onnx", "node 'ge' (GatherElements)",
         "indices (input 1) i64[6,2] exceed input 0 f32[2,2] in dim 0 (6 > 2)");
  tb_free(&b);
}
END_TEST

START_TEST(string_input) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "s", STRING, 1, (const int64_t[]){2}, NULL);
  tb_node(&b, "Identity", "i", (const char *[]){"s", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  EXPECT(&b, KILN_UNIMPLEMENTED, "graph input 's'", "STRING");
  tb_free(&b);
}
END_TEST

START_TEST(sequence_input) {
  tb b;
  relu_model(&b);
  b.graph.input[0]->type->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
  static Onnx__TypeProto__Sequence seq = ONNX__TYPE_PROTO__SEQUENCE__INIT;
  b.graph.input[0]->type->sequence_type = &seq;
  EXPECT(&b, KILN_UNIMPLEMENTED, "graph input 'x'", "sequence");
  tb_free(&b);
}
END_TEST

START_TEST(shape_disagreement) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, NULL);
  tb_input(&b, "z", FLOAT, 2, (const int64_t[]){4, 5}, NULL);
  tb_node(&b, "Add", "badadd", (const char *[]){"x", "z", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, NULL, &m);
  ck_assert_ptr_nonnull(s);
  ck_assert_msg(strstr(kiln_status_message(s), "badadd") != NULL, "%s", kiln_status_message(s));
  kiln_status_free(s);
  tb_free(&b);
}
END_TEST

START_TEST(reshape_shape_unknown) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, NULL);
  tb_input(&b, "shp", INT64, 1, (const int64_t[]){1}, NULL);
  tb_node(&b, "Reshape", "rs", (const char *[]){"x", "shp", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  EXPECT(&b, KILN_UNIMPLEMENTED, "'rs' (Reshape)", "must be known at compile time");
  tb_free(&b);
}
END_TEST

START_TEST(duplicate_output) {
  tb b;
  relu_model(&b);
  tb_node(&b, "Neg", "again", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  EXPECT(&b, KILN_PARSE_ERROR, "'again' (Neg)", "'y' is defined twice");
  tb_free(&b);
}
END_TEST

START_TEST(known_input_type_mismatch) {
  tb b;
  relu_model(&b);
  int64_t data[6] = {0};
  kiln_tensor kt = {.data = data, .name = "x"};
  ck_assert_ptr_null(kiln_type_make(KILN_I64, 2, d23, &kt.type));
  kiln_onnx_options o = {.known_inputs = &kt, .known_input_count = 1};
  kiln_module *m = NULL;
  const char *const f[] = {"graph input 'x'", "known value has type i64", NULL};
  expect_error(load_tb(&b, NULL, &o, &m), KILN_INVALID_ARGUMENT, f);
  tb_free(&b);
}
END_TEST

START_TEST(constant_without_value) {
  tb b;
  tb_init(&b, 13);
  tb_node(&b, "Constant", "c", NULL, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  EXPECT(&b, KILN_PARSE_ERROR, "'c' (Constant)", "exactly one value attribute");
  tb_free(&b);
}
END_TEST

START_TEST(cast_to_string) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, NULL);
  Onnx__NodeProto *n =
      tb_node(&b, "Cast", "cs", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  tb_attr_int(&b, n, "to", STRING);
  tb_output(&b, "y");
  EXPECT(&b, KILN_UNIMPLEMENTED, "'cs' (Cast)", "attribute 'to'", "STRING");
  tb_free(&b);
}
END_TEST

START_TEST(batchnorm_training) {
  tb b;
  tb_init(&b, 15);
  const int64_t d4[] = {1, 2, 2, 2}, c[] = {2};
  tb_input(&b, "x", FLOAT, 4, d4, NULL);
  const char *names[] = {"s", "bb", "mean", "var"};
  for (int i = 0; i < 4; i++) {
    Onnx__TensorProto *t = tb_initializer(&b, names[i], FLOAT, 1, c);
    float v[2] = {1, 1};
    tb_raw(&b, t, v, sizeof v);
  }
  tb_node(&b, "BatchNormalization", "bn", (const char *[]){"x", "s", "bb", "mean", "var", NULL},
          (const char *[]){"y", "rm", "rv", NULL});
  tb_output(&b, "y");
  EXPECT(&b, KILN_UNIMPLEMENTED, "'bn' (BatchNormalization)", "training outputs");
  tb_free(&b);
}
END_TEST

/* x -> Dropout(ratio, training_mode = true) -> y, ratio an initializer. */
static void dropout_training_model(tb *b, float ratio) {
  tb_init(b, 13);
  tb_input(b, "x", FLOAT, 2, d23, NULL);
  Onnx__TensorProto *r = tb_initializer(b, "ratio", FLOAT, 0, NULL);
  tb_raw(b, r, &ratio, sizeof ratio);
  Onnx__TensorProto *t = tb_initializer(b, "train", 9 /* BOOL */, 0, NULL);
  uint8_t one = 1;
  tb_raw(b, t, &one, 1);
  tb_node(b, "Dropout", "drop", (const char *[]){"x", "ratio", "train", NULL},
          (const char *[]){"y", NULL});
  tb_output(b, "y");
}

START_TEST(dropout_training_with_ratio) {
  tb b;
  dropout_training_model(&b, 0.25f);
  EXPECT(&b, KILN_UNIMPLEMENTED, "'drop' (Dropout)", "training-mode Dropout",
         "constant ratio of 0");
  tb_free(&b);
}
END_TEST

/* Training mode with ratio 0 drops nothing: the model loads, and the
 * Dropout is the identity (y = x). */
START_TEST(dropout_training_ratio_zero_is_identity) {
  tb b;
  dropout_training_model(&b, 0.0f);
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, NULL, &m);
  ck_assert_msg(!s, "load: %s", kiln_status_message(s));
  kiln_context *ctx = NULL;
  ck_assert_ptr_null(kiln_context_create(&ctx));
  kiln_executable *e = NULL;
  s = kiln_compile(ctx, m, NULL, "interpreter", NULL, &e);
  ck_assert_msg(!s, "compile: %s", kiln_status_message(s));
  float x[6] = {1, -2, 3, -4, 5, -6}, y[6] = {0};
  const void *in[] = {x};
  void *out[] = {y};
  s = kiln_run(e, in, out);
  ck_assert_msg(!s, "run: %s", kiln_status_message(s));
  for (int i = 0; i < 6; i++)
    ck_assert_float_eq(y[i], x[i]);
  kiln_executable_destroy(e);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  tb_free(&b);
}
END_TEST

START_TEST(no_op_type) {
  tb b;
  relu_model(&b);
  b.graph.node[0]->op_type = "";
  EXPECT(&b, KILN_PARSE_ERROR, "node 0 has no op_type");
  tb_free(&b);
}
END_TEST

/* Prepend field `field` (length-delimited) around buf[at..end). */
static size_t wrap_field(uint8_t *buf, size_t at, size_t end, unsigned field) {
  size_t len = end - at;
  uint8_t v[10];
  int n = 0;
  do {
    v[n++] = (uint8_t)((len & 0x7f) | (len >= 0x80 ? 0x80 : 0));
    len >>= 7;
  } while (len);
  at -= (size_t)n;
  memcpy(buf + at, v, (size_t)n);
  buf[--at] = (uint8_t)(field << 3 | 2);
  return at;
}

START_TEST(deep_nesting) {
  /* graph.node.attribute.g.node.attribute.g... 20000 levels deep: must be
   * refused before protobuf-c recurses through it. */
  size_t cap = 1 << 20, end = cap, at = cap;
  uint8_t *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  for (int i = 0; i < 20000 && at > 64; i++) {
    at = wrap_field(buf, at, end, 6); /* AttributeProto.g */
    at = wrap_field(buf, at, end, 5); /* NodeProto.attribute */
    at = wrap_field(buf, at, end, 1); /* GraphProto.node */
  }
  at = wrap_field(buf, at, end, 7); /* ModelProto.graph */
  kiln_module *m = NULL;
  const char *const f[] = {"nested deeper", NULL};
  expect_error(kiln_onnx_load_memory(buf + at, end - at, NULL, "t.onnx", NULL, &m),
               KILN_PARSE_ERROR, f);
  free(buf);
}
END_TEST

/* ---- external data ---- */
static char tmpdir[64];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/kiln-onnx-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void write_file(const char *dir, const char *name, const void *data, size_t len) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
}

static void rm_tmpdir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  ck_assert_int_eq(system(cmd), 0);
}

/* kiln_onnx_symbolic_dims: every named dim of the graph inputs, in input
 * then axis order, with the input's rank; a graph input that is also an
 * initializer (a default) has none; unnamed and static dims are not
 * listed; a file that is not there is an I/O error naming it. */
START_TEST(symbolic_dims_listed) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, (const char *[]){"N", NULL});
  tb_input(&b, "z", FLOAT, 3, (const int64_t[]){2, 3, 4}, (const char *[]){"seq", "", "N"});
  tb_input(&b, "w", FLOAT, 2, d23, (const char *[]){"K", NULL});
  tb_initializer(&b, "w", FLOAT, 2, d23);
  tb_input(&b, "s", FLOAT, 2, d23, NULL);
  tb_node(&b, "Add", "a", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  make_tmpdir();
  size_t len;
  uint8_t *buf = tb_pack(&b, &len);
  write_file(tmpdir, "m.onnx", buf, len);
  free(buf);
  tb_free(&b);
  char path[128];
  snprintf(path, sizeof path, "%s/m.onnx", tmpdir);
  kiln_onnx_symbolic_dim *d = NULL;
  uint32_t n = 99;
  kiln_status s = kiln_onnx_symbolic_dims(path, &d, &n);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_uint_eq(n, 3);
  const char *names[] = {"N", "seq", "N"}, *inputs[] = {"x", "z", "z"};
  const uint32_t axes[] = {0, 0, 2}, ranks[] = {2, 3, 3};
  for (uint32_t i = 0; i < 3; i++) {
    ck_assert_str_eq(d[i].name, names[i]);
    ck_assert_str_eq(d[i].input, inputs[i]);
    ck_assert_uint_eq(d[i].axis, axes[i]);
    ck_assert_uint_eq(d[i].rank, ranks[i]);
  }
  kiln_free(d);
  snprintf(path, sizeof path, "%s/none.onnx", tmpdir);
  s = kiln_onnx_symbolic_dims(path, &d, &n);
  const char *const f[] = {"none.onnx", NULL};
  expect_error(s, KILN_IO_ERROR, f);
  ck_assert_ptr_null(d);
  ck_assert_uint_eq(n, 0);
  rm_tmpdir();
}
END_TEST

/* relu model plus `w` (f32[2]) with external data at `loc`. */
static void external_model(tb *b, const char *loc, const char *offset, const char *length) {
  relu_model(b);
  Onnx__TensorProto *t = tb_initializer(b, "w", FLOAT, 1, (const int64_t[]){2});
  tb_external(b, t, loc, offset, length);
}

static void expect_external_error(const char *loc, const char *offset, const char *length,
                                  kiln_code code, const char *frag) {
  tb b;
  external_model(&b, loc, offset, length);
  kiln_module *m = NULL;
  const char *const f[] = {"initializer 'w'", frag, NULL};
  expect_error(load_tb(&b, tmpdir, NULL, &m), code, f);
  tb_free(&b);
}

START_TEST(external_good) {
  make_tmpdir();
  const float w[4] = {9, 9, 1.5f, -2.0f};
  write_file(tmpdir, "w.bin", w, sizeof w);
  tb b;
  external_model(&b, "w.bin", "8", "8");
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, tmpdir, NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_value *v = kiln_module_find_value(m, "w");
  ck_assert_ptr_nonnull(v);
  const float *d = kiln_value_data(v);
  ck_assert_float_eq(d[0], 1.5f);
  ck_assert_float_eq(d[1], -2.0f);
  kiln_module_destroy(m);
  tb_free(&b);
  rm_tmpdir();
}
END_TEST

START_TEST(external_dotdot) {
  make_tmpdir();
  expect_external_error("../w.bin", NULL, NULL, KILN_INVALID_ARGUMENT, "'..' are refused");
  expect_external_error("sub/../../w.bin", NULL, NULL, KILN_INVALID_ARGUMENT, "relative path");
  rm_tmpdir();
}
END_TEST

START_TEST(external_absolute) {
  make_tmpdir();
  expect_external_error("/etc/passwd", NULL, NULL, KILN_INVALID_ARGUMENT, "absolute paths");
  rm_tmpdir();
}
END_TEST

START_TEST(external_symlink_outside) {
  make_tmpdir();
  char link[256];
  snprintf(link, sizeof link, "%s/w.bin", tmpdir);
  ck_assert_int_eq(symlink("/etc/hostname", link), 0);
  expect_external_error("w.bin", NULL, NULL, KILN_INVALID_ARGUMENT, "outside the model's folder");
  rm_tmpdir();
}
END_TEST

START_TEST(external_short_and_length) {
  make_tmpdir();
  const float w[1] = {1};
  write_file(tmpdir, "w.bin", w, sizeof w);
  expect_external_error("w.bin", NULL, NULL, KILN_IO_ERROR, "too short");
  expect_external_error("w.bin", NULL, "12", KILN_PARSE_ERROR, "length 12 does not match");
  expect_external_error("w.bin", "-4", NULL, KILN_PARSE_ERROR, "offset '-4'");
  expect_external_error("missing.bin", NULL, NULL, KILN_IO_ERROR, "cannot open");
  rm_tmpdir();
}
END_TEST

START_TEST(external_from_memory) {
  tb b;
  external_model(&b, "w.bin", NULL, NULL);
  EXPECT(&b, KILN_INVALID_ARGUMENT, "initializer 'w'", "no folder");
  tb_free(&b);
}
END_TEST

/* ---- good models ---- */
START_TEST(good_relu) {
  tb b;
  relu_model(&b);
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_uint_eq(kiln_module_input_count(m), 1);
  ck_assert_str_eq(kiln_value_name(kiln_module_input(m, 0)), "x");
  kiln_function *f = kiln_module_find_function(m, "main");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(kiln_function_node_count(f), 1);
  ck_assert_int_eq(kiln_node_get_kind(kiln_function_node(f, 0)), KILN_NODE_Relu);
  ck_assert_str_eq(kiln_function_output_name(f, 0), "y");
  kiln_module_destroy(m);
  tb_free(&b);
}
END_TEST

START_TEST(good_initializer_forms) {
  tb b;
  relu_model(&b);
  /* f16 in int32_data, bool in int32_data, u8 raw, i64 in int64_data. */
  Onnx__TensorProto *h = tb_initializer(&b, "h", FLOAT16, 1, (const int64_t[]){2});
  static int32_t hv[2] = {0x3c00, 0xc000}; /* 1.0, -2.0 */
  h->n_int32_data = 2;
  h->int32_data = hv;
  Onnx__TensorProto *bo = tb_initializer(&b, "bo", 9, 1, (const int64_t[]){3});
  static int32_t bv[3] = {1, 0, 1};
  bo->n_int32_data = 3;
  bo->int32_data = bv;
  Onnx__TensorProto *l = tb_initializer(&b, "l", INT64, 0, NULL);
  static int64_t lv[1] = {-7};
  l->n_int64_data = 1;
  l->int64_data = lv;
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  const uint16_t *hd = kiln_value_data(kiln_module_find_value(m, "h"));
  ck_assert_uint_eq(hd[0], 0x3c00);
  ck_assert_uint_eq(hd[1], 0xc000);
  ck_assert_int_eq(kiln_value_type(kiln_module_find_value(m, "h"))->elem, KILN_F16);
  const uint8_t *bd = kiln_value_data(kiln_module_find_value(m, "bo"));
  ck_assert(bd[0] == 1 && bd[1] == 0 && bd[2] == 1);
  const int64_t *ld = kiln_value_data(kiln_module_find_value(m, "l"));
  ck_assert_int_eq(ld[0], -7);
  ck_assert_uint_eq(kiln_value_type(kiln_module_find_value(m, "l"))->rank, 0);
  kiln_module_destroy(m);
  tb_free(&b);
}
END_TEST

START_TEST(good_reshape_shape_attr) {
  tb b;
  tb_init(&b, 14);
  tb_input(&b, "x", FLOAT, 2, d23, NULL);
  Onnx__TensorProto *t = tb_initializer(&b, "shape", INT64, 1, (const int64_t[]){2});
  const int64_t sv[2] = {3, -1};
  tb_raw(&b, t, sv, sizeof sv);
  tb_node(&b, "Reshape", "rs", (const char *[]){"x", "shape", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_function *f = kiln_module_function(m, 0);
  kiln_node *n = kiln_function_node(f, 0);
  ck_assert_int_eq(kiln_node_get_kind(n), KILN_NODE_Reshape);
  ck_assert_uint_eq(kiln_node_input_count(n), 1);
  const kiln_attr *a = kiln_attrs_find(kiln_node_attrs(n), "shape");
  ck_assert_ptr_nonnull(a);
  ck_assert_uint_eq(kiln_attr_len(a), 2);
  ck_assert_int_eq(kiln_attr_ints(a)[0], 3);
  ck_assert_int_eq(kiln_attr_ints(a)[1], -1);
  const kiln_type *yt = kiln_value_type(kiln_function_output_value(f, 0));
  ck_assert_int_eq(yt->dims[0], 3);
  ck_assert_int_eq(yt->dims[1], 2);
  kiln_module_destroy(m);
  tb_free(&b);
}
END_TEST

START_TEST(good_softmax_opset11) {
  /* axis=1 on [2,3,4]: flatten to [2,12], softmax, reshape back. */
  tb b;
  tb_init(&b, 11);
  const int64_t d[] = {2, 3, 4};
  tb_input(&b, "x", FLOAT, 3, d, NULL);
  Onnx__NodeProto *n =
      tb_node(&b, "Softmax", "sm", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  tb_attr_int(&b, n, "axis", 1);
  tb_output(&b, "y");
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_function *f = kiln_module_function(m, 0);
  ck_assert_uint_eq(kiln_function_node_count(f), 3);
  ck_assert_int_eq(kiln_node_get_kind(kiln_function_node(f, 0)), KILN_NODE_Flatten);
  ck_assert_int_eq(kiln_node_get_kind(kiln_function_node(f, 1)), KILN_NODE_Softmax);
  ck_assert_int_eq(kiln_node_get_kind(kiln_function_node(f, 2)), KILN_NODE_Reshape);
  const kiln_type *mid = kiln_value_type(kiln_node_result(kiln_function_node(f, 0), 0));
  ck_assert_int_eq(mid->dims[0], 2);
  ck_assert_int_eq(mid->dims[1], 12);
  const kiln_type *yt = kiln_value_type(kiln_function_output_value(f, 0));
  ck_assert_uint_eq(yt->rank, 3);
  ck_assert_int_eq(yt->dims[2], 4);
  kiln_module_destroy(m);
  tb_free(&b);
}
END_TEST

START_TEST(good_clip_opset6) {
  tb b;
  tb_init(&b, 6);
  tb_input(&b, "x", FLOAT, 2, d23, NULL);
  Onnx__NodeProto *n =
      tb_node(&b, "Clip", "c", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  tb_attr_float(&b, n, "min", -1.5f);
  tb_attr_float(&b, n, "max", 2.0f);
  tb_output(&b, "y");
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_node *c = kiln_function_node(kiln_module_function(m, 0), 0);
  ck_assert_uint_eq(kiln_node_input_count(c), 3);
  ck_assert_float_eq(*(const float *)kiln_value_data(kiln_node_input(c, 1)), -1.5f);
  ck_assert_float_eq(*(const float *)kiln_value_data(kiln_node_input(c, 2)), 2.0f);
  kiln_module_destroy(m);
  tb_free(&b);
}
END_TEST

START_TEST(good_dim_binding_and_shape) {
  /* x: f32[N,3] with --dim N=4; Shape(x) becomes the constant [4,3]. */
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, (const char *[]){"N", NULL});
  tb_node(&b, "Shape", "sh", (const char *[]){"x", NULL}, (const char *[]){"s", NULL});
  tb_node(&b, "Relu", "r", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "s");
  tb_output(&b, "y");
  const char *names[] = {"N"};
  const int64_t vals[] = {4};
  kiln_onnx_options o = {.dim_names = names, .dim_values = vals, .dim_count = 1};
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, &o, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  const kiln_type *xt = kiln_value_type(kiln_module_input(m, 0));
  ck_assert_int_eq(xt->dims[0], 4);
  ck_assert_int_eq(xt->dims[1], 3);
  kiln_value *sv = kiln_module_find_value(m, "s");
  ck_assert_int_eq(kiln_value_get_kind(sv), KILN_VALUE_CONSTANT);
  const int64_t *sd = kiln_value_data(sv);
  ck_assert_int_eq(sd[0], 4);
  ck_assert_int_eq(sd[1], 3);
  kiln_module_destroy(m);
  tb_free(&b);
}
END_TEST

START_TEST(good_known_input_compile_time) {
  /* shp is a graph input with a known value: it feeds Reshape's shape. */
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 2, d23, NULL);
  tb_input(&b, "shp", INT64, 1, (const int64_t[]){1}, NULL);
  tb_node(&b, "Reshape", "rs", (const char *[]){"x", "shp", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  int64_t six = 6;
  kiln_tensor kt = {.data = &six, .name = "shp"};
  ck_assert_ptr_null(kiln_type_make(KILN_I64, 1, (const int64_t[]){1}, &kt.type));
  kiln_onnx_options o = {.known_inputs = &kt, .known_input_count = 1};
  kiln_module *m = NULL;
  kiln_status s = load_tb(&b, NULL, &o, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_uint_eq(kiln_module_input_count(m), 1);
  const kiln_type *yt = kiln_value_type(kiln_function_output_value(kiln_module_function(m, 0), 0));
  ck_assert_uint_eq(yt->rank, 1);
  ck_assert_int_eq(yt->dims[0], 6);
  kiln_module_destroy(m);
  tb_free(&b);
}
END_TEST

START_TEST(table_covers_every_kind) {
  uint32_t n;
  const onnx_op *t = onnx_op_table(&n);
  /* Kinds after the losses are kiln's own (fusion), with no ONNX operator. */
  for (int k = 0; k <= KILN_NODE_SoftmaxCrossEntropyLoss; k++) {
    bool found = false;
    for (uint32_t i = 0; i < n && !found; i++)
      found = t[i].kind == (kiln_node_kind)k;
    ck_assert_msg(found, "no importer row for kind %s", kiln_node_kind_name((kiln_node_kind)k));
  }
  /* Lookups honour opset ranges. */
  ck_assert_ptr_nonnull(onnx_op_find("Reshape", 13));
  ck_assert_int_eq(onnx_op_find("Softmax", 11)->fn == onnx_imp_softmax_old, 1);
  ck_assert_int_eq(onnx_op_find("Softmax", 13)->fn == onnx_imp_plain, 1);
  ck_assert_ptr_null(onnx_op_find("Upsample", 10));
  ck_assert_ptr_null(onnx_op_find("NoSuchOp", 13));
}
END_TEST

/* ---- .pb tensors ---- */
START_TEST(pb_round_trip) {
  make_tmpdir();
  char p[256];
  snprintf(p, sizeof p, "%s/t.pb", tmpdir);
  float v[6] = {1, -2, 3.5f, 0, 1e-3f, 7};
  kiln_tensor t = {.data = v, .name = "input_0"};
  ck_assert_ptr_null(kiln_type_make(KILN_F32, 2, d23, &t.type));
  kiln_status s = kiln_tensor_write_pb(p, &t);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_tensor r;
  s = kiln_tensor_read_pb(p, &r);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert(kiln_type_equal(&r.type, &t.type));
  ck_assert_str_eq(r.name, "input_0");
  ck_assert_mem_eq(r.data, v, sizeof v);
  kiln_tensor_free(&r);
  /* A truncated file is a clean error naming the file. */
  write_file(tmpdir, "bad.pb", "\x08\x02\x08", 3);
  snprintf(p, sizeof p, "%s/bad.pb", tmpdir);
  const char *const f[] = {"bad.pb", NULL};
  s = kiln_tensor_read_pb(p, &r);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), f[0]));
  kiln_status_free(s);
  rm_tmpdir();
}
END_TEST

static Suite *onnx_suite(void) {
  Suite *s = suite_create("onnx");
  TCase *broken = tcase_create("broken");
  tcase_add_test(broken, empty_buffer);
  tcase_add_test(broken, garbage_bytes);
  tcase_add_test(broken, truncated);
  tcase_add_test(broken, float_attribute_out_of_int_range);
  tcase_add_test(broken, wrong_field_type);
  tcase_add_test(broken, no_opset);
  tcase_add_test(broken, missing_tensor);
  tcase_add_test(broken, cycle);
  tcase_add_test(broken, conv_extra_input);
  tcase_add_test(broken, unsupported_ops_listed);
  tcase_add_test(broken, opset_out_of_range);
  tcase_add_test(broken, output_not_produced);
  tcase_add_test(broken, no_outputs);
  tcase_add_test(broken, raw_data_size);
  tcase_add_test(broken, float_data_count);
  tcase_add_test(broken, wrong_data_field);
  tcase_add_test(broken, overflow_dims);
  tcase_add_test(broken, negative_dim);
  tcase_add_test(broken, rank_too_big);
  tcase_add_test(broken, bad_data_type);
  tcase_add_test(broken, unbound_dims_listed);
  tcase_add_test(broken, symbolic_dims_listed);
  tcase_add_test(broken, bound_input_after_unbound);
  tcase_add_test(broken, gather_elements_indices_exceed_data);
  tcase_add_test(broken, string_input);
  tcase_add_test(broken, sequence_input);
  tcase_add_test(broken, shape_disagreement);
  tcase_add_test(broken, reshape_shape_unknown);
  tcase_add_test(broken, duplicate_output);
  tcase_add_test(broken, known_input_type_mismatch);
  tcase_add_test(broken, constant_without_value);
  tcase_add_test(broken, cast_to_string);
  tcase_add_test(broken, batchnorm_training);
  tcase_add_test(broken, dropout_training_with_ratio);
  tcase_add_test(broken, dropout_training_ratio_zero_is_identity);
  tcase_add_test(broken, no_op_type);
  tcase_add_test(broken, deep_nesting);
  suite_add_tcase(s, broken);
  TCase *ext = tcase_create("external");
  tcase_add_test(ext, external_good);
  tcase_add_test(ext, external_dotdot);
  tcase_add_test(ext, external_absolute);
  tcase_add_test(ext, external_symlink_outside);
  tcase_add_test(ext, external_short_and_length);
  tcase_add_test(ext, external_from_memory);
  suite_add_tcase(s, ext);
  TCase *good = tcase_create("good");
  tcase_add_test(good, good_relu);
  tcase_add_test(good, good_initializer_forms);
  tcase_add_test(good, good_reshape_shape_attr);
  tcase_add_test(good, good_softmax_opset11);
  tcase_add_test(good, good_clip_opset6);
  tcase_add_test(good, good_dim_binding_and_shape);
  tcase_add_test(good, good_known_input_compile_time);
  tcase_add_test(good, table_covers_every_kind);
  tcase_add_test(good, pb_round_trip);
  suite_add_tcase(s, good);
  return s;
}

Suite *onnx_attention_suite(void); /* test_onnx_attention.c */
Suite *onnx_eval_suite(void);      /* test_onnx_eval.c */
Suite *onnx_save_suite(void);      /* test_onnx_save.c */

int main(void) {
  /* Run every case whatever the environment selects. */
  unsetenv("CK_RUN_SUITE");
  unsetenv("CK_RUN_CASE");
  SRunner *sr = srunner_create(onnx_suite());
  srunner_add_suite(sr, onnx_attention_suite());
  srunner_add_suite(sr, onnx_eval_suite());
  srunner_add_suite(sr, onnx_save_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
