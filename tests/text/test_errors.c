/* tests/text/test_errors.c: bad inputs must fail with a status whose
 * message starts with the exact "file:line:col: " of the culprit and says
 * what was expected (graph text and instruction IR text). */
#include <string.h>

#include "text_test.h"

typedef struct bad_case {
  const char *text;
  const char *prefix;   /* exact start of the message */
  const char *fragment; /* must appear in the message; NULL = any */
} bad_case;

static const bad_case graph_cases[] = {
    {"", "bad.kir:1:1: ", "expected 'module', got end of file"},
    {"module net\n", "bad.kir:1:8: ", "expected an @name, got 'net'"},
    {"module @m\ninput %x f32[2]\n", "bad.kir:2:10: ", "expected ':', got 'f32'"},
    {"module @m\ninput %x : f33[2]\n", "bad.kir:2:12: ", "expected a type, got 'f33'"},
    {"module @m\ninput %x : f32[2\n", "bad.kir:3:1: ", "expected ']', got end of file"},
    {"module @m\ninput %x : f32[2]\ninput %x : f32[3]\n", "bad.kir:3:7: ", "duplicate name %x"},
    {"module @m\nfunc @f {\n  %a : f32[2] = Relu(%x)\n}\n", "bad.kir:3:22: ", "undefined value %x"},
    {"module @m\ninput %x : f32[2]\nfunc @f {\n  %a : f32[3] = Relu(%x)\n}\n",
     "bad.kir:4:3: ", "Relu result %a is written as f32[3] but inference gives f32[2]"},
    {"module @m\ninput %x : f32[2]\nfunc @f {\n  %a : f32[2] = Frobnicate(%x)\n}\n",
     "bad.kir:4:17: ", "unknown node kind 'Frobnicate'"},
    {"module @m\nconst %c : f32[3] = [1, 2]\n",
     "bad.kir:2:21: ", "expected 3 elements of data, got 2"},
    {"module @m\nconst %c : u8[1] = [256]\n", "bad.kir:2:21: ", "value '256' out of range for u8"},
    {"module @m\nconst %c : i32[1] = [1.5]\n",
     "bad.kir:2:22: ", "expected an integer i32 element, got '1.5'"},
    {"module @m\ninput %x : f32[2]\nfunc @f {\n  %a : f32[2] = Relu(%x) loc \"abc\n}\n",
     "bad.kir:4:30: ", "expected a string, got unterminated string"},
    {"module @m\n~\n", "bad.kir:2:1: ", "expected 'input', 'const' or 'func', got '~'"},
    {"module @m\ninput %a : f32[2]\ninput %b : f32[3]\nfunc @f {\n  %c : f32[2] = Add(%a, %b)\n}\n",
     "bad.kir:5:3: ", NULL},
    {"module @m\ninput %x : f32[2,3]\nfunc @f {\n  %a : f32[2,3] = Softmax(%x) {axis = 1, axis = "
     "0}\n}\n",
     "bad.kir:4:42: ", "duplicate attribute 'axis'"},
    {"module @m\ninput %x : f32[2]\nfunc @f {\n  %a : f32[2] = Relu(%x) loc \"a\\q\"\n}\n",
     "bad.kir:4:30: ", "expected one of"},
    {"module @m\nconst %c : u8[2] = hex\"00\"\n",
     "bad.kir:2:20: ", "expected 2 bytes of data, got 1"},
    {"module @m\ninput %x : f32[2]\nfunc @f {\n  output %y = %x\n  output %y = %x\n}\n",
     "bad.kir:5:10: ", "duplicate output %y"},
    {"module @m\ninput %x : f32[2]\nfunc @f {\n  %a : f32[2] = Relu(%x)\n}\nfunc @g {\n  %b : "
     "f32[2] = Relu(%a)\n}\n",
     "bad.kir:7:22: ", "undefined value %a"},
    {"module @m\ninput %x : f32[2]\nfunc @f {\n  %a : f32[2] = Relu(%x) {alpha = }\n}\n",
     "bad.kir:4:35: ", "expected an attribute value, got '}'"},
    {"module @m\ninput %x : f32[2]\nfunc @f {\n  %a : f32[2] = Relu(%x\n",
     "bad.kir:5:1: ", "expected ')', got end of file"},
    {"module @m\ninput %x : f32[2]\nfunc @f {\n  %a : f32[2] = Relu(%x)\n",
     "bad.kir:5:1: ", "expected a node, 'output' or '}', got end of file"},
    {"module @m\nfunc @f {\n}\nfunc @f {\n}\n", "bad.kir:4:6: ", "duplicate function @f"},
    {"module @m\ninput %x : f32[1,1,1,1,1,1,1,1,1]\n",
     "bad.kir:2:32: ", "type has more than 8 dimensions"},
    {"module @m\ninput %x : f32[-1]\n", "bad.kir:2:12: ", NULL},
    {"module @m\ninput %\"\" : f32[1]\n", "bad.kir:2:7: ", "expected a name, got an empty one"},
    {"module @m\nconst %c : f32[2] = [1, x]\n", "bad.kir:2:25: ", "expected a number, got 'x'"},
};

static void check_bad(const char *text, const char *prefix, const char *fragment, kiln_status s) {
  ck_assert_msg(s != NULL, "accepted bad input:\n%s", text);
  const char *msg = kiln_status_message(s);
  ck_assert_msg(strncmp(msg, prefix, strlen(prefix)) == 0, "input:\n%s\nwant prefix '%s', got '%s'",
                text, prefix, msg);
  if (fragment)
    ck_assert_msg(strstr(msg, fragment) != NULL, "input:\n%s\nwant '%s' in '%s'", text, fragment,
                  msg);
  kiln_status_free(s);
}

START_TEST(graph_parse_errors) {
  const bad_case *c = &graph_cases[_i];
  kiln_module *m = (kiln_module *)1;
  kiln_status s = kiln_module_parse(c->text, strlen(c->text), "bad.kir", NULL, &m);
  ck_assert_ptr_null(m);
  check_bad(c->text, c->prefix, c->fragment, s);
}
END_TEST

START_TEST(syntax_errors_have_parse_code) {
  kiln_module *m = NULL;
  kiln_status s = kiln_module_parse("module @m\n~", 11, "bad.kir", NULL, &m);
  ck_assert_int_eq(kiln_status_code(s), KILN_PARSE_ERROR);
  kiln_status_free(s);
  s = kiln_module_load_text(KILN_TEXT_CASES "/no-such-file.kir", NULL, &m);
  ck_assert_int_eq(kiln_status_code(s), KILN_IO_ERROR);
  ck_assert(strstr(kiln_status_message(s), "no-such-file.kir") != NULL);
  kiln_status_free(s);
}
END_TEST

static const bad_case ir_cases[] = {
    {"", "bad.kir:1:1: ", "expected 'ir', got end of file"},
    {"ir @m\n", "bad.kir:2:1: ", "expected 'arena', got end of file"},
    {"ir @m arena 0\n  frob in %x\n", "bad.kir:2:3: ", "unknown instruction 'frob'"},
    {"ir @m arena 0\ninput %x : f32[2]\n  Relu out %y, in %x\n",
     "bad.kir:3:12: ", "undefined buffer %y"},
    {"ir @m arena 0\ninput %x : f32[2]\noutput %x : f32[2]\n",
     "bad.kir:3:8: ", "duplicate buffer %x"},
    {"ir @m arena 0\n  %t = alloc f32[2] 0\n",
     "bad.kir:2:21: ", "expected an arena offset '@N', got '0'"},
    {"ir @m arena 0\n  %t = alloc f32[2] @0\n  %v = view %t 4 : f32[1]\n",
     "bad.kir:3:16: ", "expected '+', got '4'"},
    {"ir @m arena 0\ninput %x : f32[2]\n  Relu out %x in %x\n",
     "bad.kir:3:15: ", "unknown instruction 'in'"},
    {"ir @m arena 0\nweight %w : f32[2] = [1]\n",
     "bad.kir:2:22: ", "expected 2 elements of data, got 1"},
    {"ir @m arena 0\ninput %x : f32[2]\n  Relu out %x, %x\n",
     "bad.kir:3:16: ", "expected 'in', 'out' or 'inout', got '%x'"},
};

START_TEST(ir_parse_errors) {
  const bad_case *c = &ir_cases[_i];
  kiln_ir *ir = (kiln_ir *)1;
  kiln_status s = kiln_ir_parse(c->text, strlen(c->text), "bad.kir", NULL, &ir);
  ck_assert_ptr_null(ir);
  check_bad(c->text, c->prefix, c->fragment, s);
}
END_TEST

Suite *text_error_suite(void) {
  Suite *s = suite_create("text_errors");
  TCase *tc = tcase_create("errors");
  tcase_add_loop_test(tc, graph_parse_errors, 0, (int)(sizeof graph_cases / sizeof graph_cases[0]));
  tcase_add_loop_test(tc, ir_parse_errors, 0, (int)(sizeof ir_cases / sizeof ir_cases[0]));
  tcase_add_test(tc, syntax_errors_have_parse_code);
  suite_add_tcase(s, tc);
  return s;
}
