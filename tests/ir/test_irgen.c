/* tests/ir/test_irgen.c: IRGen on small graphs: buffers, the instruction
 * sequence (alloc / compute / view / copy / dealloc placement) and the
 * trivial memory plan. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "kiln/instr.h"
#include "suites.h"

#define OK(expr) ck_assert_msg((s_ = (expr)) == NULL, "%s", kiln_status_message(s_))

/* "kind op0 op1 ..." per instruction, ';'-separated, for compact asserts. */
static void listing(const kiln_ir *ir, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++) {
    const kiln_instr *in = kiln_ir_instr(ir, i);
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ";" : "",
                            kiln_instr_kind_name(kiln_instr_get_kind(in)));
    for (uint32_t j = 0; j < kiln_instr_operand_count(in); j++) {
      const kiln_buffer *b = kiln_instr_operand(in, j);
      len += (size_t)snprintf(buf + len, n - len, " %s", b ? kiln_buffer_name(b) : "_");
    }
  }
}

START_TEST(test_irgen_views_copies) {
  kiln_status s_;
  kiln_module *m;
  kiln_function *f;
  kiln_value *x, *w;
  kiln_type t;
  int64_t d[] = {2, 3};
  float wd[6] = {1, 2, 3, 4, 5, 6};
  OK(kiln_type_make(KILN_F32, 2, d, &t));
  OK(kiln_module_create(NULL, "net", &m));
  OK(kiln_module_add_input(m, "x", &t, &x));
  OK(kiln_module_add_constant(m, "w", &t, wd, &w));
  OK(kiln_module_add_constant(m, "unused", &t, wd, NULL));
  OK(kiln_module_add_function(m, "main", &f));
  kiln_node *a, *r, *n;
  const char *an[] = {"a"}, *rn[] = {"r"}, *nn[] = {"n"};
  kiln_value *xw[] = {x, w};
  OK(kiln_function_add_node_named(f, KILN_NODE_Add, NULL, xw, 2, NULL, 0, 1, an, &a));
  int64_t shape[] = {3, 2};
  kiln_attr_desc ra[] = {KILN_ATTR_IS("shape", shape, 2)};
  kiln_value *av = kiln_node_result(a, 0);
  OK(kiln_function_add_node_named(f, KILN_NODE_Reshape, NULL, &av, 1, ra, 1, 1, rn, &r));
  kiln_value *rv = kiln_node_result(r, 0);
  OK(kiln_function_add_node_named(f, KILN_NODE_Neg, NULL, &rv, 1, NULL, 0, 1, nn, &n));
  OK(kiln_function_add_output(f, "y", kiln_node_result(n, 0)));
  OK(kiln_function_add_output(f, "z", x));
  OK(kiln_function_add_output(f, "y2", kiln_node_result(n, 0)));
  OK(kiln_module_verify(m));

  kiln_ir *ir;
  OK(kiln_irgen(f, &ir));
  OK(kiln_ir_verify(ir));
  char buf[1024];
  listing(ir, buf, sizeof buf);
  ck_assert_str_eq(buf, "alloc a;Add a x w;view r a;Neg y r;dealloc a;copy z x;copy y2 y");
  ck_assert_str_eq(kiln_ir_name(ir), "main");
  ck_assert_uint_eq(kiln_ir_input_count(ir), 1);
  ck_assert_uint_eq(kiln_ir_output_count(ir), 3);
  ck_assert_str_eq(kiln_buffer_name(kiln_ir_output(ir, 2)), "y2");
  ck_assert_uint_eq(kiln_buffer_io_index(kiln_ir_output(ir, 1)), 1);
  ck_assert_uint_eq(kiln_ir_weight_bytes(ir), 24); /* the unused constant is left out */
  ck_assert_uint_eq(kiln_ir_activation_bytes(ir), 64);
  const kiln_instr *view = kiln_ir_instr(ir, 2);
  const kiln_buffer *vb = kiln_instr_operand(view, 0);
  ck_assert_int_eq(kiln_buffer_get_kind(vb), KILN_BUFFER_VIEW);
  ck_assert_str_eq(kiln_buffer_name(kiln_buffer_base(vb)), "a");
  ck_assert_uint_eq(kiln_buffer_offset(vb), 0);
  ck_assert_int_eq(kiln_buffer_type(vb)->dims[0], 3);
  const kiln_buffer *wb = kiln_instr_operand(kiln_ir_instr(ir, 1), 2);
  ck_assert_int_eq(kiln_buffer_get_kind(wb), KILN_BUFFER_WEIGHT);
  ck_assert_ptr_eq(kiln_buffer_data(wb), kiln_value_data(w)); /* borrowed */
  ck_assert_uint_eq(kiln_instr_result_count(kiln_ir_instr(ir, 1)), 1);
  ck_assert_int_eq(kiln_instr_operand_dir(kiln_ir_instr(ir, 1), 0), KILN_OUT);
  ck_assert_int_eq(kiln_instr_operand_dir(kiln_ir_instr(ir, 1), 1), KILN_IN);
  ck_assert_uint_eq(kiln_instr_index(kiln_ir_instr(ir, 4)), 4);
  kiln_ir_destroy(ir);
  kiln_module_destroy(m);
}
END_TEST

START_TEST(test_irgen_lifetimes) {
  kiln_status s_;
  kiln_module *m;
  kiln_function *f;
  kiln_value *x;
  kiln_type t;
  int64_t d[] = {4};
  OK(kiln_type_make(KILN_F32, 1, d, &t));
  OK(kiln_module_create(NULL, "net", &m));
  OK(kiln_module_add_input(m, "x", &t, &x));
  OK(kiln_module_add_function(m, "main", &f));
  /* p = Relu(x); q = Neg(x) (unused); s = Abs(p); u = Flatten(s) -> output;
   * t = Add(p, s) -> output */
  kiln_node *p, *q, *s, *u, *tt;
  const char *pn[] = {"p"}, *qn[] = {"q"}, *sn[] = {"s"}, *un[] = {"u"}, *tn[] = {"t"};
  OK(kiln_function_add_node_named(f, KILN_NODE_Relu, NULL, &x, 1, NULL, 0, 1, pn, &p));
  OK(kiln_function_add_node_named(f, KILN_NODE_Neg, NULL, &x, 1, NULL, 0, 1, qn, &q));
  kiln_value *pv = kiln_node_result(p, 0);
  OK(kiln_function_add_node_named(f, KILN_NODE_Abs, NULL, &pv, 1, NULL, 0, 1, sn, &s));
  kiln_value *sv = kiln_node_result(s, 0);
  OK(kiln_function_add_node_named(f, KILN_NODE_Flatten, NULL, &sv, 1, NULL, 0, 1, un, &u));
  kiln_value *ps[] = {pv, sv};
  OK(kiln_function_add_node_named(f, KILN_NODE_Add, NULL, ps, 2, NULL, 0, 1, tn, &tt));
  OK(kiln_function_add_output(f, "out_u", kiln_node_result(u, 0)));
  OK(kiln_function_add_output(f, "out_t", kiln_node_result(tt, 0)));
  kiln_ir *ir;
  OK(kiln_irgen(f, &ir));
  OK(kiln_ir_verify(ir));
  char buf[1024];
  listing(ir, buf, sizeof buf);
  ck_assert_str_eq(buf, "alloc p;Relu p x;alloc q;Neg q x;dealloc q;alloc s;Abs s p;"
                        "copy out_u s;Add out_t p s;dealloc p;dealloc s");
  /* sequential 64-byte aligned offsets: p 0, q 64, s 128; 16 bytes each */
  ck_assert_uint_eq(kiln_buffer_offset(kiln_instr_operand(kiln_ir_instr(ir, 0), 0)), 0);
  ck_assert_uint_eq(kiln_buffer_offset(kiln_instr_operand(kiln_ir_instr(ir, 2), 0)), 64);
  ck_assert_uint_eq(kiln_buffer_offset(kiln_instr_operand(kiln_ir_instr(ir, 5), 0)), 128);
  ck_assert_uint_eq(kiln_ir_activation_bytes(ir), 192);
  kiln_ir_destroy(ir);
  kiln_module_destroy(m);
}
END_TEST

START_TEST(test_instr_kinds) {
  ck_assert_str_eq(kiln_instr_kind_name(KILN_INSTR_Alloc), "alloc");
  ck_assert_str_eq(kiln_instr_kind_name(KILN_INSTR_View), "view");
  ck_assert_str_eq(kiln_instr_kind_name(kiln_instr_kind_for_node(KILN_NODE_Conv)), "Conv");
  ck_assert_int_eq(kiln_instr_kind_node(kiln_instr_kind_for_node(KILN_NODE_Conv)), KILN_NODE_Conv);
  ck_assert_int_eq(kiln_instr_kind_node(KILN_INSTR_Copy), -1);
  kiln_instr_kind k;
  ck_assert(kiln_instr_kind_from_name("dealloc", &k));
  ck_assert_int_eq(k, KILN_INSTR_Dealloc);
  ck_assert(kiln_instr_kind_from_name("MatMul", &k));
  ck_assert_int_eq(k, kiln_instr_kind_for_node(KILN_NODE_MatMul));
  ck_assert(!kiln_instr_kind_from_name("Alloc2", &k));
  kiln_node_kind nk;
  ck_assert(kiln_node_kind_from_name("LSTM", &nk));
  ck_assert_int_eq(nk, KILN_NODE_LSTM);
  ck_assert_uint_eq(kiln_node_kind_get_info(KILN_NODE_LSTM)->max_inputs, 8);
  ck_assert_ptr_null(kiln_node_kind_get_info(KILN_NODE_KIND_COUNT));
  ck_assert_str_eq(kiln_node_kind_name(KILN_NODE_KIND_COUNT), "?");
}
END_TEST

Suite *irgen_suite(void) {
  Suite *s = suite_create("irgen");
  TCase *tc = tcase_create("irgen");
  tcase_add_test(tc, test_irgen_views_copies);
  tcase_add_test(tc, test_irgen_lifetimes);
  tcase_add_test(tc, test_instr_kinds);
  suite_add_tcase(s, tc);
  return s;
}
