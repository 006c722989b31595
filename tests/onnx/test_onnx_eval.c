/* tests/onnx/test_onnx_eval.c: inputs that must be known at compile time but
 * are computed by the graph (GPT-style causal-mask slices whose ends come
 * from Shape -> Gather -> Unsqueeze -> Concat) load with NULL options, with
 * no context and no plugin loaded, because libkiln evaluates them on its
 * own reference kernels; the loaded module then compiles and runs on the
 * backends named in KILN_TEST_BACKENDS (comma-separated; default the
 * interpreter: the unit run stays free of JIT and OpenCL libraries, whose own
 * allocations valgrind would report), with the mask checked by hand. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "tests/onnx/model_builder.h"

Suite *onnx_eval_suite(void);

enum { FLOAT = 1, INT64 = 7 };

/* x f32[1,1,4,4] times bias[:, :, :n, :n] with n = x.shape[2] and bias a
 * 6x6 lower-triangular mask of ones (as GPT-2 slices its causal buffer). */
static void causal_slice_model(tb *b) {
  tb_init(b, 13);
  tb_input(b, "x", FLOAT, 4, (const int64_t[]){1, 1, 4, 4}, NULL);
  float bias[36];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++)
      bias[i * 6 + j] = j <= i ? 1.0f : 0.0f;
  tb_raw(b, tb_initializer(b, "bias", FLOAT, 4, (const int64_t[]){1, 1, 6, 6}), bias, sizeof bias);
  const int64_t two = 2, zero_axis[1] = {0}, starts[2] = {0, 0}, axes[2] = {2, 3};
  tb_raw(b, tb_initializer(b, "two", INT64, 0, NULL), &two, sizeof two);
  tb_raw(b, tb_initializer(b, "ax0", INT64, 1, (const int64_t[]){1}), zero_axis, sizeof zero_axis);
  tb_raw(b, tb_initializer(b, "starts", INT64, 1, (const int64_t[]){2}), starts, sizeof starts);
  tb_raw(b, tb_initializer(b, "axes", INT64, 1, (const int64_t[]){2}), axes, sizeof axes);
  tb_node(b, "Shape", "shape", (const char *[]){"x", NULL}, (const char *[]){"sh", NULL});
  tb_node(b, "Gather", "seq", (const char *[]){"sh", "two", NULL}, (const char *[]){"n", NULL});
  tb_node(b, "Unsqueeze", "unsq", (const char *[]){"n", "ax0", NULL}, (const char *[]){"n1", NULL});
  Onnx__NodeProto *c =
      tb_node(b, "Concat", "ends", (const char *[]){"n1", "n1", NULL}, (const char *[]){"e", NULL});
  tb_attr_int(b, c, "axis", 0);
  tb_node(b, "Slice", "mask", (const char *[]){"bias", "starts", "e", "axes", NULL},
          (const char *[]){"m", NULL});
  tb_node(b, "Mul", "apply", (const char *[]){"x", "m", NULL}, (const char *[]){"y", NULL});
  tb_output(b, "y");
}

START_TEST(computed_slice_ends_without_context) {
  tb b;
  causal_slice_model(&b);
  size_t len;
  uint8_t *buf = tb_pack(&b, &len);
  kiln_module *m = NULL;
  kiln_status s = kiln_onnx_load_memory(buf, len, NULL, "causal.onnx", NULL, &m);
  free(buf);
  tb_free(&b);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_context *ctx = NULL;
  ck_assert_ptr_null(kiln_context_create(&ctx));
  const char *list = getenv("KILN_TEST_BACKENDS");
  char names[256];
  snprintf(names, sizeof names, "%s", list && *list ? list : "interpreter");
  const char *backends[8];
  int nb = 0;
  for (char *tok = strtok(names, ","); tok && nb < 8; tok = strtok(NULL, ","))
    backends[nb++] = tok;
  int ran = 0;
  for (int k = 0; k < nb; k++) {
    kiln_executable *exe = NULL;
    s = kiln_compile(ctx, m, NULL, backends[k], NULL, &exe);
    if (s && k > 0 && (kiln_status_code(s) == KILN_NOT_FOUND || kiln_status_code(s) == KILN_UNAVAILABLE)) {
      kiln_status_free(s);
      continue;
    }
    ck_assert_msg(s == NULL, "%s: %s", backends[k], kiln_status_message(s));
    float x[16], y[16];
    for (int i = 0; i < 16; i++)
      x[i] = (float)(i + 1), y[i] = -1;
    const void *ins[1] = {x};
    void *outs[1] = {y};
    s = kiln_run(exe, ins, outs);
    ck_assert_msg(s == NULL, "%s: %s", backends[k], kiln_status_message(s));
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++)
        ck_assert_msg(y[i * 4 + j] == (j <= i ? x[i * 4 + j] : 0.0f), "%s: y[%d][%d] = %g",
                      backends[k], i, j, y[i * 4 + j]);
    kiln_executable_destroy(exe);
    ran++;
  }
  ck_assert_int_ge(ran, 1);
  kiln_context_destroy(ctx);
  kiln_module_destroy(m);
}
END_TEST

/* A value fed by a graph input is still refused, naming node and input. */
START_TEST(input_dependent_value_refused) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 1, (const int64_t[]){4}, NULL);
  tb_input(&b, "shape", INT64, 1, (const int64_t[]){2}, NULL);
  tb_node(&b, "Reshape", "rs", (const char *[]){"x", "shape", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  size_t len;
  uint8_t *buf = tb_pack(&b, &len);
  kiln_module *m = NULL;
  kiln_status s = kiln_onnx_load_memory(buf, len, NULL, "in.onnx", NULL, &m);
  free(buf);
  tb_free(&b);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "'rs' (Reshape)"));
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "a graph input without a known value"));
  kiln_status_free(s);
  ck_assert_ptr_null(m);
}
END_TEST

/* A compile-time value far too large to compute (a 4 TiB ConstantOfShape
 * whose values become a Reshape's shape) is refused with a status naming
 * the node and the limit, not attempted (found by the loader fuzzer). */
START_TEST(huge_computed_value_refused) {
  tb b;
  tb_init(&b, 13);
  tb_input(&b, "x", FLOAT, 1, (const int64_t[]){4}, NULL);
  Onnx__TensorProto *t = tb_initializer(&b, "dims", INT64, 1, (const int64_t[]){1});
  static const int64_t big[] = {(int64_t)1 << 40};
  tb_raw(&b, t, big, sizeof big);
  tb_node(&b, "ConstantOfShape", "huge", (const char *[]){"dims", NULL},
          (const char *[]){"h", NULL});
  Onnx__NodeProto *c =
      tb_node(&b, "Cast", "c", (const char *[]){"h", NULL}, (const char *[]){"s", NULL});
  tb_attr_int(&b, c, "to", INT64);
  tb_node(&b, "Reshape", "rs", (const char *[]){"x", "s", NULL}, (const char *[]){"y", NULL});
  tb_output(&b, "y");
  size_t len;
  uint8_t *buf = tb_pack(&b, &len);
  kiln_module *m = NULL;
  kiln_status s = kiln_onnx_load_memory(buf, len, NULL, "huge.onnx", NULL, &m);
  free(buf);
  tb_free(&b);
  ck_assert_ptr_nonnull(s);
  const char *msg = kiln_status_message(s);
  ck_assert_msg(kiln_status_code(s) == KILN_OUT_OF_RANGE, "code: %s", msg);
  ck_assert_msg(strstr(msg, "node 'huge' (ConstantOfShape)") != NULL, "%s", msg);
  ck_assert_msg(strstr(msg, "limited to 1073741824 bytes") != NULL, "%s", msg);
  kiln_status_free(s);
  ck_assert_ptr_null(m);
}
END_TEST

Suite *onnx_eval_suite(void) {
  Suite *s = suite_create("onnx_eval");
  TCase *tc = tcase_create("computed");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, computed_slice_ends_without_context);
  tcase_add_test(tc, input_dependent_value_refused);
  tcase_add_test(tc, huge_computed_value_refused);
  suite_add_tcase(s, tc);
  return s;
}
