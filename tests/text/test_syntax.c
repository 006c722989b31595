/* tests/text/test_syntax.c: number spelling, comments and layout freedom in
 * the parser, string escapes, and DOT output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text/text_internal.h"
#include "text_test.h"

START_TEST(double_spelling) {
  char buf[48];
  struct {
    double v;
    const char *want;
  } cases[] = {{0.1, "0.1"},
               {2.0, "2.0"},
               {1e20, "1e+20"},
               {-0.0, "-0.0"},
               {1e-5, "1e-05"},
               {1.0 / 3, "0.3333333333333333"},
               {INFINITY, "inf"},
               {-INFINITY, "-inf"},
               {NAN, "nan"},
               {123.25, "123.25"},
               {0.30000000000000004, "0.30000000000000004"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_text_format_double(cases[i].v, buf);
    ck_assert_str_eq(buf, cases[i].want);
  }
}
END_TEST

static char *parse_print(const char *text) {
  kiln_module *m = NULL;
  kiln_status s = kiln_module_parse(text, strlen(text), "t.kir", NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  char *out = NULL;
  s = kiln_module_print(m, &out);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  char *copy = strdup(out);
  kiln_module_free_string(m, out);
  kiln_module_destroy(m);
  return copy;
}

/* Comments, blank lines, odd spacing and non-canonical numbers all read;
 * the printer writes the canonical form. */
START_TEST(comments_and_layout) {
  const char *text = "# a comment\n"
                     "module   @net   # trailing\n\n"
                     "input %x:f32[2,3]\n"
                     "const %w : f32[3] = [1.50, 2e0,\n -3.0]\n"
                     "func @main{%a:f32[2,3]=Add(%x,%w)\n"
                     "%e : f32[2,3] = Elu(%a) {alpha=1e-1}\n"
                     "output %y=%e}\n";
  const char *want = "module @net\n"
                     "input %x : f32[2,3]\n"
                     "const %w : f32[3] = [1.5, 2, -3]\n"
                     "func @main {\n"
                     "  %a : f32[2,3] = Add(%x, %w)\n"
                     "  %e : f32[2,3] = Elu(%a) {alpha = 0.1}\n"
                     "  output %y = %e\n"
                     "}\n";
  char *out = parse_print(text);
  ck_assert_str_eq(out, want);
  free(out);
}
END_TEST

/* Attribute kinds read back as written: ints, floats, empty list, type. */
START_TEST(attribute_kinds) {
  kiln_module *m = NULL;
  const char *t2 = "module @m\n"
                   "input %x : f32[2,3]\n"
                   "func @f {\n"
                   "  %c : i64[2,3] = Cast(%x) {to = i64}\n"
                   "  %s : f32[2,3] = Softmax(%x) {axis = 1}\n"
                   "  %l : f32[2,3] = LeakyRelu(%x) {alpha = 2.0}\n"
                   "  %g : f32[2,3] = Gelu(%x) {approximate = \"none\"}\n"
                   "  %t : f32[3,2] = Transpose(%x) {perm = [1, 0]}\n"
                   "}\n";
  kiln_status s = kiln_module_parse(t2, strlen(t2), "t.kir", NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_function *f = kiln_module_function(m, 0);
  const kiln_attr *a = kiln_attrs_find(kiln_node_attrs(kiln_function_node(f, 0)), "to");
  ck_assert_int_eq(kiln_attr_get_kind(a), KILN_ATTR_TYPE);
  ck_assert_int_eq(kiln_attr_type(a), KILN_I64);
  a = kiln_attrs_find(kiln_node_attrs(kiln_function_node(f, 1)), "axis");
  ck_assert_int_eq(kiln_attr_get_kind(a), KILN_ATTR_INT);
  ck_assert_int_eq(kiln_attr_int(a), 1);
  a = kiln_attrs_find(kiln_node_attrs(kiln_function_node(f, 2)), "alpha");
  ck_assert_int_eq(kiln_attr_get_kind(a), KILN_ATTR_FLOAT);
  ck_assert(kiln_attr_float(a) == 2.0);
  a = kiln_attrs_find(kiln_node_attrs(kiln_function_node(f, 3)), "approximate");
  ck_assert_str_eq(kiln_attr_string(a), "none");
  a = kiln_attrs_find(kiln_node_attrs(kiln_function_node(f, 4)), "perm");
  ck_assert_int_eq(kiln_attr_get_kind(a), KILN_ATTR_INTS);
  ck_assert_uint_eq(kiln_attr_len(a), 2);
  ck_assert_int_eq(kiln_attr_ints(a)[0], 1);
  kiln_module_destroy(m);
}
END_TEST

/* Quoted names and string escapes come back as the same bytes. */
START_TEST(names_and_escapes) {
  kiln_module *m = NULL;
  kiln_status s = kiln_module_load_text(KILN_TEXT_CASES "/33_names_data.kir", NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_str_eq(kiln_module_name(m), "my net");
  ck_assert_ptr_nonnull(kiln_module_find_value(m, "weird name"));
  kiln_function *f = kiln_module_function(m, 0);
  ck_assert_str_eq(kiln_function_name(f), "main fn");
  ck_assert_str_eq(kiln_node_name(kiln_function_node(f, 0)), "add \"1\"\n\tx\x01");
  const kiln_value *h = kiln_module_find_value(m, "h");
  const uint16_t *hd = kiln_value_data(h);
  ck_assert_uint_eq(hd[0], 0x3c00); /* 1.0 in f16 */
  ck_assert_uint_eq(hd[2], 0xc080); /* -2.25 in f16 */
  const int64_t *i64 = kiln_value_data(kiln_module_find_value(m, "i64"));
  ck_assert(i64[0] == INT64_MIN && i64[1] == INT64_MAX);
  kiln_module_destroy(m);
}
END_TEST

START_TEST(dot_output) {
  const char *text = "module @m\n"
                     "input %x : f32[2]\n"
                     "const %c : f32[2] = [1, 2]\n"
                     "func @main {\n"
                     "  %a : f32[2] = Add(%x, %c)\n"
                     "  %r : f32[2] = Relu(%a)\n"
                     "  output %y = %r\n"
                     "}\n";
  kiln_module *m = NULL;
  kiln_status s = kiln_module_parse(text, strlen(text), "t.kir", NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  s = kiln_module_write_dot(m, f);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  fclose(f);
  ck_assert(strstr(buf, "digraph \"main\" {") == buf);
  ck_assert(strstr(buf, "i0 [shape=invhouse, label=\"input %x\\nf32[2]\"];") != NULL);
  ck_assert(strstr(buf, "c1 [shape=cylinder, label=\"const %c\\nf32[2]\"];") != NULL);
  ck_assert(strstr(buf, "n0 [shape=box, label=\"Add\\nf32[2]\"];") != NULL);
  ck_assert(strstr(buf, "i0 -> n0 [label=\"0\"];") != NULL);
  ck_assert(strstr(buf, "c1 -> n0 [label=\"1\"];") != NULL);
  ck_assert(strstr(buf, "n0 -> n1;") != NULL);
  ck_assert(strstr(buf, "o0 [shape=house, label=\"output %y\"];") != NULL);
  ck_assert(strstr(buf, "n1 -> o0;") != NULL);
  ck_assert(buf[len - 2] == '}');
  free(buf);
  kiln_module_destroy(m);
}
END_TEST

/* Relu nodes red, the others unfilled. */
static const char *relu_red(void *user, const kiln_node *n) {
  ++*(int *)user;
  return kiln_node_get_kind(n) == KILN_NODE_Relu ? "red" : NULL;
}

START_TEST(dot_styled_output) {
  const char *text = "module @m\n"
                     "input %x : f32[2]\n"
                     "func @main {\n"
                     "  %a : f32[2] = Neg(%x)\n"
                     "  %r : f32[2] = Relu(%a)\n"
                     "  output %y = %r\n"
                     "}\n";
  kiln_module *m = NULL;
  kiln_status s = kiln_module_parse(text, strlen(text), "t.kir", NULL, &m);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  int calls = 0;
  s = kiln_module_write_dot_styled(m, f, relu_red, &calls, "  legend [label=\"L\"];\n");
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  fclose(f);
  ck_assert_int_eq(calls, 2);
  /* the Relu filled, the Neg as plain as kiln_module_write_dot makes it */
  const char *relu = strstr(buf, "n1 [");
  ck_assert_ptr_nonnull(relu);
  const char *eol = strchr(relu, '\n');
  ck_assert(strstr(relu, "red") != NULL && strstr(relu, "red") < eol);
  ck_assert(strstr(buf, "n0 [shape=box, label=\"Neg\\nf32[2]\"];") != NULL);
  /* the extra text inside the digraph, before its closing brace */
  const char *legend = strstr(buf, "  legend [label=\"L\"];\n");
  ck_assert_ptr_nonnull(legend);
  ck_assert(legend < strrchr(buf, '}'));
  free(buf);
  kiln_module_destroy(m);
}
END_TEST

Suite *text_syntax_suite(void) {
  Suite *s = suite_create("text_syntax");
  TCase *tc = tcase_create("misc");
  tcase_add_test(tc, double_spelling);
  tcase_add_test(tc, comments_and_layout);
  tcase_add_test(tc, attribute_kinds);
  tcase_add_test(tc, names_and_escapes);
  tcase_add_test(tc, dot_output);
  tcase_add_test(tc, dot_styled_output);
  suite_add_tcase(s, tc);
  return s;
}
