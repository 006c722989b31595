/* tests/onnx/test_onnx_attention.c: the Attention and RotaryEmbedding
 * importers on tiny hand-made models, run on the interpreter against values
 * worked out by hand (causal mask, GQA head sharing with 3-D inputs, bool
 * mask with a kv cache, both rotary layouts), and refusals that name the
 * node and the reason. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "tests/onnx/model_builder.h"

Suite *onnx_attention_suite(void);

enum { FLOAT = 1, INT64 = 7, BOOL = 9 };

typedef struct io {
  const char *name;
  const void *data;
  size_t bytes;
} io;

/* Load b, compile it for the interpreter, bind the named inputs and run;
 * outputs land in outs. */
static void run_tb(tb *b, const io *ins, uint32_t n_in, const io *outs, uint32_t n_out) {
  size_t len;
  uint8_t *buf = tb_pack(b, &len);
  kiln_module *m = NULL;
  kiln_status s = kiln_onnx_load_memory(buf, len, NULL, "t.onnx", NULL, &m);
  free(buf);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_context *ctx = NULL;
  s = kiln_context_create(&ctx);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_executable *exe = NULL;
  s = kiln_compile(ctx, m, NULL, "interpreter", NULL, &exe);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_bindings *bd = NULL;
  s = kiln_bindings_create(exe, &bd);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  for (uint32_t i = 0; i < n_in && !s; i++)
    s = kiln_bind_input(bd, ins[i].name, ins[i].data, ins[i].bytes);
  for (uint32_t i = 0; i < n_out && !s; i++)
    s = kiln_bind_output(bd, outs[i].name, (void *)outs[i].data, outs[i].bytes);
  if (!s)
    s = kiln_run_bindings(exe, bd);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_bindings_destroy(bd);
  kiln_executable_destroy(exe);
  kiln_context_destroy(ctx);
  kiln_module_destroy(m);
}

static void expect_floats(const float *got, const float *want, int n) {
  for (int i = 0; i < n; i++)
    ck_assert_msg(fabsf(got[i] - want[i]) < 1e-5f, "element %d: got %g, want %g", i, got[i],
                  want[i]);
}

/* One head, two queries, two keys, scale 1, causal: query 0 sees key 0
 * only; query 1 weighs exp(0) : exp(ln 3) = 1 : 3. */
START_TEST(attention_causal_4d) {
  tb b;
  tb_init(&b, 23);
  const int64_t d[4] = {1, 1, 2, 1};
  tb_input(&b, "Q", FLOAT, 4, d, NULL);
  tb_input(&b, "K", FLOAT, 4, d, NULL);
  tb_input(&b, "V", FLOAT, 4, d, NULL);
  Onnx__NodeProto *n = tb_node(&b, "Attention", "att", (const char *[]){"Q", "K", "V", NULL},
                               (const char *[]){"Y", NULL});
  tb_attr_int(&b, n, "is_causal", 1);
  tb_attr_float(&b, n, "scale", 1.0f);
  tb_output(&b, "Y");
  const float q[2] = {1, 1}, k[2] = {0, logf(3)}, v[2] = {4, 8};
  float y[2] = {0};
  run_tb(&b, (const io[]){{"Q", q, sizeof q}, {"K", k, sizeof k}, {"V", v, sizeof v}}, 3,
         (const io[]){{"Y", y, sizeof y}}, 1);
  expect_floats(y, (const float[]){4, 7}, 2);
  tb_free(&b);
}
END_TEST

/* 3-D inputs, two query heads sharing one kv head: head 0 (q = 0) averages
 * V, head 1 (q = ln 3) weighs the keys 0 and 1 as 1 : 3. */
START_TEST(attention_gqa_3d) {
  tb b;
  tb_init(&b, 23);
  tb_input(&b, "Q", FLOAT, 3, (const int64_t[]){1, 1, 2}, NULL);
  tb_input(&b, "K", FLOAT, 3, (const int64_t[]){1, 2, 1}, NULL);
  tb_input(&b, "V", FLOAT, 3, (const int64_t[]){1, 2, 1}, NULL);
  Onnx__NodeProto *n = tb_node(&b, "Attention", "att", (const char *[]){"Q", "K", "V", NULL},
                               (const char *[]){"Y", NULL});
  tb_attr_int(&b, n, "q_num_heads", 2);
  tb_attr_int(&b, n, "kv_num_heads", 1);
  tb_attr_float(&b, n, "scale", 1.0f);
  tb_output(&b, "Y");
  const float q[2] = {0, logf(3)}, k[2] = {0, 1}, v[2] = {2, 6};
  float y[2] = {0};
  run_tb(&b, (const io[]){{"Q", q, sizeof q}, {"K", k, sizeof k}, {"V", v, sizeof v}}, 3,
         (const io[]){{"Y", y, sizeof y}}, 1);
  expect_floats(y, (const float[]){4, 5}, 2);
  tb_free(&b);
}
END_TEST

/* A bool mask that hides the cached key leaves only the new one; the
 * present key is the cache followed by the new key. */
START_TEST(attention_bool_mask_with_past) {
  tb b;
  tb_init(&b, 23);
  const int64_t d[4] = {1, 1, 1, 1};
  tb_input(&b, "Q", FLOAT, 4, d, NULL);
  tb_input(&b, "K", FLOAT, 4, d, NULL);
  tb_input(&b, "V", FLOAT, 4, d, NULL);
  tb_input(&b, "mask", BOOL, 2, (const int64_t[]){1, 2}, NULL);
  tb_input(&b, "pk", FLOAT, 4, d, NULL);
  tb_input(&b, "pv", FLOAT, 4, d, NULL);
  tb_node(&b, "Attention", "att", (const char *[]){"Q", "K", "V", "mask", "pk", "pv", NULL},
          (const char *[]){"Y", "present_key", NULL});
  tb_output(&b, "Y");
  tb_output(&b, "present_key");
  const float q[1] = {1}, k[1] = {7}, v[1] = {3}, pk[1] = {5}, pv[1] = {100};
  const uint8_t mask[2] = {0, 1};
  float y[1] = {0}, present[2] = {0};
  run_tb(&b,
         (const io[]){{"Q", q, sizeof q},
                      {"K", k, sizeof k},
                      {"V", v, sizeof v},
                      {"mask", mask, sizeof mask},
                      {"pk", pk, sizeof pk},
                      {"pv", pv, sizeof pv}},
         6, (const io[]){{"Y", y, sizeof y}, {"present_key", present, sizeof present}}, 2);
  expect_floats(y, (const float[]){3}, 1);
  expect_floats(present, (const float[]){5, 7}, 2);
  tb_free(&b);
}
END_TEST

/* x = [1 2 3 4], cos = [0 1], sin = [1 0] (caches given per position).
 * Halves: pairs (1,3) and (2,4) rotate by 90 and 0 degrees -> [-3 2 1 4].
 * Interleaved: pairs (1,2) and (3,4) -> [-2 1 3 4]. */
static void rotary_case(int64_t interleaved, const float *want) {
  tb b;
  tb_init(&b, 23);
  tb_input(&b, "x", FLOAT, 4, (const int64_t[]){1, 1, 1, 4}, NULL);
  tb_input(&b, "c", FLOAT, 3, (const int64_t[]){1, 1, 2}, NULL);
  tb_input(&b, "s", FLOAT, 3, (const int64_t[]){1, 1, 2}, NULL);
  Onnx__NodeProto *n = tb_node(&b, "RotaryEmbedding", "rope", (const char *[]){"x", "c", "s", NULL},
                               (const char *[]){"y", NULL});
  tb_attr_int(&b, n, "interleaved", interleaved);
  tb_output(&b, "y");
  const float x[4] = {1, 2, 3, 4}, c[2] = {0, 1}, s[2] = {1, 0};
  float y[4] = {0};
  run_tb(&b, (const io[]){{"x", x, sizeof x}, {"c", c, sizeof c}, {"s", s, sizeof s}}, 3,
         (const io[]){{"y", y, sizeof y}}, 1);
  expect_floats(y, want, 4);
  tb_free(&b);
}

START_TEST(rotary_halves) {
  rotary_case(0, (const float[]){-3, 2, 1, 4});
}
END_TEST

START_TEST(rotary_interleaved) {
  rotary_case(1, (const float[]){-2, 1, 3, 4});
}
END_TEST

static void expect_load_error(tb *b, kiln_code code, const char *frag1, const char *frag2) {
  size_t len;
  uint8_t *buf = tb_pack(b, &len);
  kiln_module *m = NULL;
  kiln_status s = kiln_onnx_load_memory(buf, len, NULL, "t.onnx", NULL, &m);
  free(buf);
  ck_assert_msg(s != NULL, "expected an error");
  const char *msg = kiln_status_message(s);
  ck_assert_msg(kiln_status_code(s) == code, "code %s: %s", kiln_code_name(kiln_status_code(s)),
                msg);
  ck_assert_msg(strstr(msg, frag1) && strstr(msg, frag2), "message: %s", msg);
  ck_assert_ptr_null(m);
  kiln_status_free(s);
}

START_TEST(attention_refusals) {
  tb b;
  tb_init(&b, 23);
  tb_input(&b, "Q", FLOAT, 3, (const int64_t[]){1, 2, 4}, NULL);
  tb_input(&b, "K", FLOAT, 3, (const int64_t[]){1, 2, 4}, NULL);
  tb_input(&b, "V", FLOAT, 3, (const int64_t[]){1, 2, 4}, NULL);
  tb_node(&b, "Attention", "att3", (const char *[]){"Q", "K", "V", NULL},
          (const char *[]){"Y", NULL});
  tb_output(&b, "Y");
  expect_load_error(&b, KILN_INVALID_ARGUMENT, "'att3'", "q_num_heads");
  tb_free(&b);

  tb_init(&b, 23);
  tb_input(&b, "Q", FLOAT, 4, (const int64_t[]){1, 3, 2, 4}, NULL);
  tb_input(&b, "K", FLOAT, 4, (const int64_t[]){1, 2, 2, 4}, NULL);
  tb_input(&b, "V", FLOAT, 4, (const int64_t[]){1, 2, 2, 4}, NULL);
  tb_node(&b, "Attention", "att4", (const char *[]){"Q", "K", "V", NULL},
          (const char *[]){"Y", NULL});
  tb_output(&b, "Y");
  expect_load_error(&b, KILN_INVALID_ARGUMENT, "'att4'", "multiple of the number of kv heads");
  tb_free(&b);
}
END_TEST

Suite *onnx_attention_suite(void) {
  Suite *s = suite_create("onnx_attention");
  TCase *tc = tcase_create("attention");
  tcase_add_test(tc, attention_causal_4d);
  tcase_add_test(tc, attention_gqa_3d);
  tcase_add_test(tc, attention_bool_mask_with_past);
  tcase_add_test(tc, rotary_halves);
  tcase_add_test(tc, rotary_interleaved);
  tcase_add_test(tc, attention_refusals);
  suite_add_tcase(s, tc);
  return s;
}
