/* tests/onnx/test_onnx_save.c: kiln_onnx_save / kiln_onnx_save_memory on
 * modules built with the builder API: a QDQ convolution with per-axis s8
 * weights and an int32 bias saves and reloads identically, and its file
 * holds what the ONNX format says (data types, dims, bytes, opset,
 * attributes); attributes that ONNX takes as inputs are written as
 * initializers; an output bound under another name goes through Identity;
 * kinds, attributes and types without an ONNX form are errors naming the
 * node; a failed save leaves no file, and an existing one as it was. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "loaders/onnx/onnx.pb-c.h"

Suite *onnx_save_suite(void);

/* TensorProto.DataType values, from onnx.proto. */
enum { DT_FLOAT = 1, DT_UINT8 = 2, DT_INT8 = 3, DT_INT32 = 6, DT_INT64 = 7 };

#define OK(expr)                                                                                   \
  do {                                                                                             \
    kiln_status s_ = (expr);                                                                       \
    ck_assert_msg(s_ == NULL, "%s", kiln_status_message(s_));                                      \
  } while (0)

static kiln_type ty(kiln_elem e, uint32_t rank, const int64_t *dims) {
  kiln_type t;
  OK(kiln_type_make(e, rank, dims, &t));
  return t;
}

static kiln_value *constant(kiln_module *m, const char *name, kiln_elem e, uint32_t rank,
                            const int64_t *dims, const void *data) {
  kiln_type t = ty(e, rank, dims);
  kiln_value *v;
  OK(kiln_module_add_constant(m, name, &t, data, &v));
  return v;
}

static kiln_value *node1(kiln_function *f, kiln_node_kind k, const char *name, kiln_value **in,
                         uint32_t n_in, const kiln_attr_desc *a, uint32_t n_a) {
  kiln_node *n;
  const char *names[1] = {name};
  OK(kiln_function_add_node_named(f, k, name, in, n_in, a, n_a, 1, names, &n));
  return kiln_node_result(n, 0);
}

static const int8_t w_q[6] = {-128, -3, 0, 7, 64, 127};
static const int32_t bias_q[2] = {-70000, 123456};

/* Quantize x, then Conv(DQ x, DQ w (per output channel), DQ bias (int32,
 * per channel)) -> Relu, as the int8 flow writes it. */
static kiln_module *qdq_conv_module(void) {
  kiln_module *m;
  OK(kiln_module_create(NULL, "qdq", &m));
  kiln_type xt = ty(KILN_F32, 4, (const int64_t[]){1, 3, 4, 4});
  kiln_value *x;
  OK(kiln_module_add_input(m, "x", &xt, &x));
  const float x_scale = 0.05f, w_scale[2] = {0.01f, 0.02f}, b_scale[2] = {0.0005f, 0.001f};
  const uint8_t x_zp = 128;
  const int8_t w_zp[2] = {0, 0};
  kiln_value *xs = constant(m, "x_scale", KILN_F32, 0, NULL, &x_scale);
  kiln_value *xz = constant(m, "x_zero_point", KILN_U8, 0, NULL, &x_zp);
  kiln_value *wq = constant(m, "w_q", KILN_I8, 4, (const int64_t[]){2, 3, 1, 1}, w_q);
  kiln_value *ws = constant(m, "w_scale", KILN_F32, 1, (const int64_t[]){2}, w_scale);
  kiln_value *wz = constant(m, "w_zero_point", KILN_I8, 1, (const int64_t[]){2}, w_zp);
  kiln_value *bq = constant(m, "bias_q", KILN_I32, 1, (const int64_t[]){2}, bias_q);
  kiln_value *bs = constant(m, "bias_scale", KILN_F32, 1, (const int64_t[]){2}, b_scale);
  kiln_function *f;
  OK(kiln_module_add_function(m, "main", &f));
  kiln_attr_desc axis0 = KILN_ATTR_I("axis", 0);
  kiln_value *q = node1(f, KILN_NODE_QuantizeLinear, "xq", (kiln_value *[]){x, xs, xz}, 3, NULL, 0);
  kiln_value *xd =
      node1(f, KILN_NODE_DequantizeLinear, "xd", (kiln_value *[]){q, xs, xz}, 3, NULL, 0);
  kiln_value *wd =
      node1(f, KILN_NODE_DequantizeLinear, "wd", (kiln_value *[]){wq, ws, wz}, 3, &axis0, 1);
  kiln_value *bd =
      node1(f, KILN_NODE_DequantizeLinear, "bd", (kiln_value *[]){bq, bs}, 2, &axis0, 1);
  kiln_value *c = node1(f, KILN_NODE_Conv, "conv", (kiln_value *[]){xd, wd, bd}, 3, NULL, 0);
  kiln_value *y = node1(f, KILN_NODE_Relu, "y", &c, 1, NULL, 0);
  OK(kiln_function_add_output(f, "y", y));
  return m;
}

static char *print(const kiln_module *m) {
  char *t;
  OK(kiln_module_print(m, &t));
  char *copy = strdup(t);
  kiln_module_free_string(m, t);
  return copy;
}

/* A fresh empty folder under the build's temp dir (caller removes). */
static void temp_dir(char *buf, size_t n) {
  const char *base = getenv("TMPDIR");
  snprintf(buf, n, "%s/kiln-onnx-save-XXXXXX", base && *base ? base : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(buf));
}

static int dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static const Onnx__TensorProto *find_init(const Onnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++)
    if (!strcmp(g->initializer[i]->name, name))
      return g->initializer[i];
  return NULL;
}

static const Onnx__NodeProto *find_node(const Onnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_node; i++)
    if (g->node[i]->name && !strcmp(g->node[i]->name, name))
      return g->node[i];
  return NULL;
}

START_TEST(qdq_per_axis_round_trip) {
  kiln_module *m = qdq_conv_module();
  char dir[512], path[600];
  temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/qdq.onnx", dir);
  OK(kiln_onnx_save(m, NULL, path));
  ck_assert_int_eq(dir_entries(dir), 1); /* the model, no temporary left */
  kiln_module *m2;
  OK(kiln_onnx_load(path, NULL, &m2));
  char *a = print(m), *b = print(m2);
  ck_assert_str_eq(a, b);
  free(a);
  free(b);

  /* The file, read as ONNX defines it. */
  void *buf;
  size_t len;
  OK(kiln_file_read(path, &buf, &len));
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
  kiln_free(buf);
  ck_assert_ptr_nonnull(mp);
  ck_assert_int_eq(mp->n_opset_import, 1);
  ck_assert(!mp->opset_import[0]->domain || !*mp->opset_import[0]->domain);
  ck_assert_int_eq(mp->opset_import[0]->version, 22);
  ck_assert_str_eq(mp->producer_name, "kiln");
  const Onnx__GraphProto *g = mp->graph;
  ck_assert_int_eq(g->n_input, 1);
  ck_assert_str_eq(g->input[0]->name, "x");
  const Onnx__TypeProto__Tensor *it = g->input[0]->type->tensor_type;
  ck_assert_int_eq(it->elem_type, DT_FLOAT);
  ck_assert_int_eq(it->shape->n_dim, 4);
  ck_assert_int_eq(it->shape->dim[1]->dim_value, 3);
  const Onnx__TensorProto *w = find_init(g, "w_q");
  ck_assert_ptr_nonnull(w);
  ck_assert_int_eq(w->data_type, DT_INT8);
  ck_assert_int_eq(w->n_dims, 4);
  ck_assert_int_eq(w->dims[0], 2);
  ck_assert_int_eq(w->raw_data.len, sizeof w_q);
  ck_assert_mem_eq(w->raw_data.data, w_q, sizeof w_q);
  const Onnx__TensorProto *bias = find_init(g, "bias_q");
  ck_assert_ptr_nonnull(bias);
  ck_assert_int_eq(bias->data_type, DT_INT32);
  ck_assert_mem_eq(bias->raw_data.data, bias_q, sizeof bias_q); /* little-endian */
  ck_assert_int_eq(find_init(g, "x_zero_point")->data_type, DT_UINT8);
  ck_assert_int_eq(find_init(g, "x_zero_point")->n_dims, 0);
  const Onnx__NodeProto *wd = find_node(g, "wd");
  ck_assert_ptr_nonnull(wd);
  ck_assert_str_eq(wd->op_type, "DequantizeLinear");
  ck_assert_int_eq(wd->n_input, 3);
  ck_assert_str_eq(wd->input[0], "w_q");
  ck_assert_int_eq(wd->n_attribute, 1);
  ck_assert_str_eq(wd->attribute[0]->name, "axis");
  ck_assert_int_eq(wd->attribute[0]->type, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  ck_assert_int_eq(wd->attribute[0]->i, 0);
  ck_assert_int_eq(g->n_output, 1);
  ck_assert_str_eq(g->output[0]->name, "y");
  ck_assert_int_eq(g->output[0]->type->tensor_type->shape->dim[1]->dim_value, 2);
  onnx__model_proto__free_unpacked(mp, NULL);

  /* The memory form holds the same bytes. */
  void *mem;
  size_t mem_len;
  OK(kiln_onnx_save_memory(m, "main", &mem, &mem_len));
  OK(kiln_file_read(path, &buf, &len));
  ck_assert_uint_eq(mem_len, len);
  ck_assert_mem_eq(mem, buf, len);
  kiln_free(buf);
  kiln_free(mem);
  unlink(path);
  rmdir(dir);
  kiln_module_destroy(m);
  kiln_module_destroy(m2);
}
END_TEST

/* Reshape's shape and Slice's bounds are attributes in kiln and inputs in
 * ONNX; an output named apart from its value is an Identity. */
START_TEST(attributes_as_inputs_and_renamed_output) {
  kiln_module *m;
  OK(kiln_module_create(NULL, "moves", &m));
  kiln_type xt = ty(KILN_F32, 2, (const int64_t[]){4, 6});
  kiln_value *x;
  OK(kiln_module_add_input(m, "x", &xt, &x));
  kiln_function *f;
  OK(kiln_module_add_function(m, "main", &f));
  const int64_t shape[3] = {2, 2, 6}, starts[1] = {1}, ends[1] = {5}, axes[1] = {2};
  kiln_attr_desc ra = KILN_ATTR_IS("shape", shape, 3);
  kiln_value *r = node1(f, KILN_NODE_Reshape, "r", &x, 1, &ra, 1);
  kiln_attr_desc sa[3] = {KILN_ATTR_IS("starts", starts, 1), KILN_ATTR_IS("ends", ends, 1),
                          KILN_ATTR_IS("axes", axes, 1)};
  kiln_value *s = node1(f, KILN_NODE_Slice, "s", &r, 1, sa, 3);
  OK(kiln_function_add_output(f, "out", s));
  void *mem;
  size_t len;
  OK(kiln_onnx_save_memory(m, NULL, &mem, &len));
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, mem);
  ck_assert_ptr_nonnull(mp);
  const Onnx__GraphProto *g = mp->graph;
  const Onnx__NodeProto *rn = find_node(g, "r");
  ck_assert_str_eq(rn->op_type, "Reshape");
  ck_assert_int_eq(rn->n_input, 2);
  ck_assert_int_eq(rn->n_attribute, 0);
  const Onnx__TensorProto *st = find_init(g, rn->input[1]);
  ck_assert_ptr_nonnull(st);
  ck_assert_int_eq(st->data_type, DT_INT64);
  ck_assert_int_eq(st->n_dims, 1);
  ck_assert_int_eq(st->dims[0], 3);
  ck_assert_mem_eq(st->raw_data.data, shape, sizeof shape);
  const Onnx__NodeProto *sn = find_node(g, "s");
  ck_assert_int_eq(sn->n_input, 4); /* data, starts, ends, axes; no steps */
  ck_assert_mem_eq(find_init(g, sn->input[3])->raw_data.data, axes, sizeof axes);
  /* The output: Identity(s) -> out. */
  ck_assert_int_eq(g->n_output, 1);
  ck_assert_str_eq(g->output[0]->name, "out");
  const Onnx__NodeProto *id = g->node[g->n_node - 1];
  ck_assert_str_eq(id->op_type, "Identity");
  ck_assert_str_eq(id->input[0], "s");
  ck_assert_str_eq(id->output[0], "out");
  onnx__model_proto__free_unpacked(mp, NULL);

  /* Reloaded: the same nodes and attributes (plus the Identity). */
  kiln_module *m2;
  OK(kiln_onnx_load_memory(mem, len, NULL, "moves.onnx", NULL, &m2));
  kiln_free(mem);
  kiln_function *f2 = kiln_module_function(m2, 0);
  ck_assert_int_eq(kiln_function_node_count(f2), 3);
  const kiln_node *r2 = kiln_function_node(f2, 0);
  ck_assert_int_eq(kiln_node_get_kind(r2), KILN_NODE_Reshape);
  const kiln_attr *sh = kiln_attrs_find(kiln_node_attrs(r2), "shape");
  ck_assert_ptr_nonnull(sh);
  ck_assert_int_eq(kiln_attr_len(sh), 3);
  ck_assert_mem_eq(kiln_attr_ints(sh), shape, sizeof shape);
  const kiln_node *s2 = kiln_function_node(f2, 1);
  ck_assert_int_eq(kiln_attr_ints(kiln_attrs_find(kiln_node_attrs(s2), "ends"))[0], 5);
  ck_assert_str_eq(kiln_function_output_name(f2, 0), "out");
  kiln_module_destroy(m);
  kiln_module_destroy(m2);
}
END_TEST

static void expect_refused(const kiln_module *m, const char *const *words) {
  void *mem = (void *)1;
  size_t len = 1;
  kiln_status s = kiln_onnx_save_memory(m, NULL, &mem, &len);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(kiln_status_code(s), KILN_UNIMPLEMENTED);
  for (; *words; words++)
    ck_assert_msg(strstr(kiln_status_message(s), *words), "'%s' not in: %s", *words,
                  kiln_status_message(s));
  ck_assert_ptr_null(mem);
  ck_assert_uint_eq(len, 0);
  kiln_status_free(s);
}

START_TEST(kind_without_onnx_form_names_the_node) {
  kiln_module *m;
  OK(kiln_module_create(NULL, "fused", &m));
  kiln_type t = ty(KILN_F32, 1, (const int64_t[]){4});
  kiln_value *x;
  OK(kiln_module_add_input(m, "x", &t, &x));
  kiln_function *f;
  OK(kiln_module_add_function(m, "main", &f));
  kiln_value *a = node1(f, KILN_NODE_Relu, "plain_relu", &x, 1, NULL, 0);
  kiln_attr_desc body = KILN_ATTR_S("body", "x0 1.5 Mul");
  kiln_value *y = node1(f, KILN_NODE_FusedElementwise, "my_fusion", &a, 1, &body, 1);
  OK(kiln_function_add_output(f, "y", y));
  const char *reason = kiln_node_kind_no_onnx_reason(KILN_NODE_FusedElementwise);
  ck_assert_ptr_nonnull(reason);
  expect_refused(m, (const char *[]){"my_fusion", "FusedElementwise", reason, NULL});
  /* The file form writes nothing. */
  char dir[512], path[600];
  temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/fused.onnx", dir);
  kiln_status s = kiln_onnx_save(m, NULL, path);
  ck_assert_int_eq(kiln_status_code(s), KILN_UNIMPLEMENTED);
  kiln_status_free(s);
  ck_assert_int_eq(dir_entries(dir), 0);
  rmdir(dir);
  kiln_module_destroy(m);
}
END_TEST

/* Conv with kiln's fused activation: an attribute ONNX's Conv lacks. */
START_TEST(attribute_without_onnx_form_names_it) {
  kiln_module *m;
  OK(kiln_module_create(NULL, "act", &m));
  kiln_type xt = ty(KILN_F32, 4, (const int64_t[]){1, 1, 3, 3});
  kiln_value *x;
  OK(kiln_module_add_input(m, "x", &xt, &x));
  const float w[1] = {2.0f};
  kiln_value *wv = constant(m, "w", KILN_F32, 4, (const int64_t[]){1, 1, 1, 1}, w);
  kiln_function *f;
  OK(kiln_module_add_function(m, "main", &f));
  kiln_attr_desc act = KILN_ATTR_S("activation", "Relu");
  kiln_value *y = node1(f, KILN_NODE_Conv, "conv_relu", (kiln_value *[]){x, wv}, 2, &act, 1);
  OK(kiln_function_add_output(f, "y", y));
  expect_refused(m, (const char *[]){"conv_relu", "'activation'", NULL});
  kiln_module_destroy(m);
}
END_TEST

START_TEST(quantized_type_is_refused) {
  kiln_module *m;
  OK(kiln_module_create(NULL, "qtype", &m));
  kiln_type qt;
  OK(kiln_type_make_quantized(KILN_I8, 1, (const int64_t[]){4}, 0.5f, 3, &qt));
  kiln_value *x;
  OK(kiln_module_add_input(m, "xq", &qt, &x));
  kiln_function *f;
  OK(kiln_module_add_function(m, "main", &f));
  kiln_value *y = node1(f, KILN_NODE_Identity, "id", &x, 1, NULL, 0);
  OK(kiln_function_add_output(f, "y", y));
  expect_refused(m, (const char *[]){"'xq'", "quantized", NULL});
  kiln_module_destroy(m);
}
END_TEST

START_TEST(missing_folder_leaves_no_file) {
  kiln_module *m = qdq_conv_module();
  char dir[512], path[700];
  temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/no/such/folder/model.onnx", dir);
  kiln_status s = kiln_onnx_save(m, NULL, path);
  ck_assert_int_eq(kiln_status_code(s), KILN_IO_ERROR);
  ck_assert_msg(strstr(kiln_status_message(s), path), "%s", kiln_status_message(s));
  kiln_status_free(s);
  ck_assert_int_eq(dir_entries(dir), 0);
  ck_assert_int_ne(access(path, F_OK), 0);
  rmdir(dir);
  kiln_module_destroy(m);
}
END_TEST

/* A failed save over an existing file leaves it as it was; a good one
 * replaces it. */
START_TEST(existing_file_replaced_only_on_success) {
  char dir[512], path[600];
  temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  FILE *fp = fopen(path, "wb");
  ck_assert_ptr_nonnull(fp);
  fputs("old contents", fp);
  fclose(fp);
  kiln_module *bad;
  OK(kiln_module_create(NULL, "bad", &bad));
  OK(kiln_module_add_function(bad, "main", &(kiln_function *){NULL}));
  kiln_status s = kiln_onnx_save(bad, "other", path); /* no such function */
  ck_assert_int_eq(kiln_status_code(s), KILN_NOT_FOUND);
  kiln_status_free(s);
  void *buf;
  size_t len;
  OK(kiln_file_read(path, &buf, &len));
  ck_assert_str_eq(buf, "old contents");
  kiln_free(buf);
  kiln_module *m = qdq_conv_module();
  OK(kiln_onnx_save(m, NULL, path));
  ck_assert_int_eq(dir_entries(dir), 1);
  kiln_module *m2;
  OK(kiln_onnx_load(path, NULL, &m2));
  ck_assert_int_eq(kiln_function_node_count(kiln_module_function(m2, 0)), 6);
  unlink(path);
  rmdir(dir);
  kiln_module_destroy(bad);
  kiln_module_destroy(m);
  kiln_module_destroy(m2);
}
END_TEST

Suite *onnx_save_suite(void) {
  Suite *s = suite_create("onnx_save");
  TCase *tc = tcase_create("save");
  tcase_add_test(tc, qdq_per_axis_round_trip);
  tcase_add_test(tc, attributes_as_inputs_and_renamed_output);
  tcase_add_test(tc, kind_without_onnx_form_names_the_node);
  tcase_add_test(tc, attribute_without_onnx_form_names_it);
  tcase_add_test(tc, quantized_type_is_refused);
  tcase_add_test(tc, missing_folder_leaves_no_file);
  tcase_add_test(tc, existing_file_replaced_only_on_success);
  suite_add_tcase(s, tc);
  return s;
}
