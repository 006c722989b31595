/* tests/ir/test_verify.c: the graph verifier's messages on modules broken
 * after construction, and the instruction IR verifier on bad lists. */
#include <check.h>
#include <string.h>

#include "ir/ir_internal.h"
#include "kiln/instr.h"
#include "suites.h"

#define OK(expr) ck_assert_msg((s_ = (expr)) == NULL, "%s", kiln_status_message(s_))

static uint32_t count_lines(const char *s) {
  uint32_t n = 1;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

/* x -> a = Relu(x) -> b = Neg(a) -> output y = b */
static kiln_module *chain(kiln_function **fo, kiln_node **ao, kiln_node **bo) {
  kiln_status s_;
  kiln_module *m;
  kiln_value *x;
  kiln_type t;
  int64_t d[] = {2, 3};
  OK(kiln_type_make(KILN_F32, 2, d, &t));
  OK(kiln_module_create(NULL, "net", &m));
  OK(kiln_module_add_input(m, "x", &t, &x));
  OK(kiln_module_add_function(m, "main", fo));
  const char *an[] = {"a"}, *bn[] = {"b"};
  OK(kiln_function_add_node_named(*fo, KILN_NODE_Relu, NULL, &x, 1, NULL, 0, 1, an, ao));
  kiln_value *ar = kiln_node_result(*ao, 0);
  OK(kiln_function_add_node_named(*fo, KILN_NODE_Neg, NULL, &ar, 1, NULL, 0, 1, bn, bo));
  OK(kiln_function_add_output(*fo, "y", kiln_node_result(*bo, 0)));
  return m;
}

START_TEST(test_verify_cycle) {
  kiln_status s_;
  kiln_function *f;
  kiln_node *a, *b;
  kiln_module *m = chain(&f, &a, &b);
  ck_assert_ptr_null(kiln_module_verify(m));
  /* a now reads b, which comes after it: a cycle a -> b -> a */
  kiln_value *x = kiln_module_find_value(m, "x");
  OK(kiln_function_replace_uses(f, x, kiln_node_result(b, 0)));
  kiln_status s = kiln_module_verify(m);
  ck_assert_int_eq(kiln_status_code(s), KILN_VERIFY_ERROR);
  const char *msg = kiln_status_message(s);
  ck_assert_msg(strstr(msg, "function 'main', node 'a' (Relu): input 0 'b' is used before its "
                            "definition") != NULL,
                "%s", msg);
  ck_assert_uint_eq(count_lines(msg), 1);
  kiln_status_free(s);
  kiln_module_destroy(m);
}
END_TEST

START_TEST(test_verify_types_many) {
  kiln_function *f;
  kiln_node *a, *b;
  kiln_module *m = chain(&f, &a, &b);
  /* corrupt two result types behind the builder's back */
  a->results[0].type.dims[0] = 3;
  a->results[0].type.dims[1] = 2;
  b->results[0].type.elem = KILN_F16;
  kiln_status s = kiln_module_verify(m);
  const char *msg = kiln_status_message(s);
  ck_assert_int_eq(kiln_status_code(s), KILN_VERIFY_ERROR);
  ck_assert_msg(strstr(msg, "function 'main', node 'a' (Relu): result 0 'a' has type f32[3,2], "
                            "inference gives f32[2,3]") != NULL,
                "%s", msg);
  /* b's inference runs on the corrupted input type: f32[3,2] vs f16[3,2] */
  ck_assert_msg(strstr(msg, "node 'b' (Neg): result 0 'b' has type f16[2,3], inference gives "
                            "f32[3,2]") != NULL,
                "%s", msg);
  ck_assert_uint_eq(count_lines(msg), 2);
  kiln_status_free(s);
  kiln_module_destroy(m);
}
END_TEST

START_TEST(test_verify_arity_output) {
  kiln_function *f;
  kiln_node *a, *b;
  kiln_module *m = chain(&f, &a, &b);
  b->inputs[0]->uses--;
  b->inputs[0] = NULL; /* required input gone */
  f->out_values[0] = &a->results[0];
  b->results[0].uses--;
  a->results[0].uses++;
  kiln_status s = kiln_module_verify(m);
  const char *msg = kiln_status_message(s);
  ck_assert_msg(strstr(msg, "function 'main', node 'b' (Neg): required input 0 is absent") != NULL,
                "%s", msg);
  ck_assert_uint_eq(count_lines(msg), 1);
  kiln_status_free(s);
  kiln_module_destroy(m);
}
END_TEST

static kiln_ir *small_ir(kiln_buffer **x, kiln_buffer **a, kiln_buffer **y) {
  kiln_status s_;
  kiln_ir *ir;
  kiln_type t;
  int64_t d[] = {2, 3};
  OK(kiln_type_make(KILN_F32, 2, d, &t));
  OK(kiln_ir_create(NULL, "main", &ir));
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_INPUT, "x", &t, NULL, 0, NULL, 0, x));
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_ACTIVATION, "a", &t, NULL, 0, NULL, 0, a));
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_OUTPUT, "y", &t, NULL, 0, NULL, 0, y));
  kiln_ir_set_activation_bytes(ir, 64);
  return ir;
}

static void add(kiln_ir *ir, kiln_instr_kind k, kiln_buffer *o, kiln_buffer *i) {
  kiln_status s_;
  kiln_buffer *ops[] = {o, i};
  kiln_operand_dir dirs[] = {k == KILN_INSTR_Dealloc ? KILN_IN : KILN_OUT, KILN_IN};
  OK(kiln_ir_add_instr(ir, k, ops, dirs, i ? 2 : 1, NULL, 0, NULL, NULL));
}

START_TEST(test_ir_verify) {
  kiln_buffer *x, *a, *y;
  kiln_ir *ir = small_ir(&x, &a, &y);
  kiln_instr_kind relu = kiln_instr_kind_for_node(KILN_NODE_Relu);
  add(ir, KILN_INSTR_Alloc, a, NULL);
  add(ir, relu, a, x);
  add(ir, relu, y, a);
  add(ir, KILN_INSTR_Dealloc, a, NULL);
  ck_assert_ptr_null(kiln_ir_verify(ir));
  kiln_ir_destroy(ir);

  ir = small_ir(&x, &a, &y);
  add(ir, relu, a, x); /* use before alloc */
  add(ir, KILN_INSTR_Alloc, a, NULL);
  add(ir, KILN_INSTR_Alloc, a, NULL); /* double alloc */
  add(ir, KILN_INSTR_Dealloc, a, NULL);
  add(ir, relu, y, a); /* use after dealloc */
  add(ir, relu, x, y); /* writes an input */
  kiln_status s = kiln_ir_verify(ir);
  const char *msg = kiln_status_message(s);
  ck_assert_int_eq(kiln_status_code(s), KILN_VERIFY_ERROR);
  ck_assert_msg(strstr(msg, "instruction 0 (Relu): operand 0: 'a' is used before its alloc"), "%s",
                msg);
  ck_assert_msg(strstr(msg, "instruction 2 (alloc): 'a' is allocated twice"), "%s", msg);
  ck_assert_msg(strstr(msg, "instruction 4 (Relu): operand 1: 'a' is used after its dealloc"), "%s",
                msg);
  ck_assert_msg(strstr(msg, "instruction 5 (Relu): result operand 0 writes to read-only 'x'"), "%s",
                msg);
  ck_assert_uint_eq(count_lines(msg), 4);
  kiln_status_free(s);
  kiln_ir_destroy(ir);
}
END_TEST

START_TEST(test_ir_verify_view_types) {
  kiln_status s_;
  kiln_buffer *x, *a, *y, *v;
  kiln_ir *ir = small_ir(&x, &a, &y);
  kiln_type t6;
  int64_t d[] = {6};
  OK(kiln_type_make(KILN_F32, 1, d, &t6));
  /* 24 bytes at offset 8 of a 24-byte base: out of bounds */
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_VIEW, "v", &t6, NULL, 0, a, 8, &v));
  add(ir, KILN_INSTR_Alloc, a, NULL);
  add(ir, kiln_instr_kind_for_node(KILN_NODE_Relu), a, x);
  add(ir, KILN_INSTR_View, v, a);
  add(ir, kiln_instr_kind_for_node(KILN_NODE_Relu), y, v); /* y f32[2,3] vs f32[6] */
  add(ir, KILN_INSTR_Dealloc, a, NULL);
  kiln_status s = kiln_ir_verify(ir);
  const char *msg = kiln_status_message(s);
  ck_assert_msg(strstr(msg, "view 'v' (24 bytes at offset 8) does not fit inside 'a' (24 bytes)"),
                "%s", msg);
  ck_assert_msg(strstr(msg, "instruction 3 (Relu): result 'y' has type f32[2,3], inference gives "
                            "f32[6]"),
                "%s", msg);
  ck_assert_uint_eq(count_lines(msg), 2);
  kiln_status_free(s);
  kiln_buffer_set_offset(v, 0);
  kiln_instr_set_operand(kiln_ir_instr(ir, 3), 0, y, KILN_OUT);
  kiln_ir_remove_instr(ir, kiln_ir_instr(ir, 3));
  s = kiln_ir_verify(ir); /* now y is never written */
  ck_assert_str_eq(kiln_status_message(s), "output 'y' is never written");
  kiln_status_free(s);
  kiln_ir_destroy(ir);
}
END_TEST

Suite *verify_suite(void) {
  Suite *s = suite_create("verify");
  TCase *tc = tcase_create("verify");
  tcase_add_test(tc, test_verify_cycle);
  tcase_add_test(tc, test_verify_types_many);
  tcase_add_test(tc, test_verify_arity_output);
  tcase_add_test(tc, test_ir_verify);
  tcase_add_test(tc, test_ir_verify_view_types);
  suite_add_tcase(s, tc);
  return s;
}
