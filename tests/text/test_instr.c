/* tests/text/test_instr.c: instruction IR text. Canonical texts must print
 * back byte for byte, and the parsed IR must hold what the text says
 * (buffer kinds, io indices, arena offsets, views, operand directions,
 * weight data owned by the IR). */
#include <stdlib.h>
#include <string.h>

#include "text_test.h"

static const char first_ir[] = "ir @main arena 256\n"
                               "weight %w : f32[3] = [1.5, 2, -3]\n"
                               "input %x : f32[2,3]\n"
                               "output %y : f32[6]\n"
                               "  %t0 = alloc f32[2,3] @0\n"
                               "  Add out %t0, in %x, in %w\n"
                               "  %v = view %t0 +0 : f32[6]\n"
                               "  Relu out %y, in %v\n"
                               "  dealloc %t0\n";

static const char second_ir[] = "ir @\"second ir\" arena 128\n"
                                "input %a : f32[4]\n"
                                "input %b : f32[4]\n"
                                "output %o : f32[2,2]\n"
                                "activation %late : f32[4] @64\n"
                                "view %hv = %late +0 : f32[2,2]\n"
                                "  %t = alloc f32[4] @0\n"
                                "  Clip out %t, in %a, in _, in _\n"
                                "  Softmax inout %t, in %t {axis = -1}\n"
                                "  alloc out %late\n"
                                "  Add out %late, in %t, in %b\n"
                                "  dealloc %t\n"
                                "  copy out %o, in %hv\n"
                                "  dealloc %late\n";

static kiln_ir *parse_ok(const char *text) {
  kiln_ir *ir = NULL;
  kiln_status s = kiln_ir_parse(text, strlen(text), "t.kir", NULL, &ir);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  return ir;
}

static void assert_round_trip(const char *text) {
  kiln_ir *ir = parse_ok(text);
  char *out = NULL;
  kiln_status s = kiln_ir_print(ir, &out);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_msg(strcmp(out, text) == 0, "printed:\n%s\nwanted:\n%s", out, text);
  kiln_free(out);
  kiln_ir_destroy(ir);
}

START_TEST(ir_round_trips) {
  assert_round_trip(first_ir);
  assert_round_trip(second_ir);
  assert_round_trip("ir @empty arena 0\n");
}
END_TEST

START_TEST(ir_parsed_contents) {
  kiln_ir *ir = parse_ok(first_ir);
  ck_assert_str_eq(kiln_ir_name(ir), "main");
  ck_assert_uint_eq(kiln_ir_activation_bytes(ir), 256);
  ck_assert_uint_eq(kiln_ir_buffer_count(ir), 5);
  ck_assert_uint_eq(kiln_ir_input_count(ir), 1);
  ck_assert_uint_eq(kiln_ir_output_count(ir), 1);
  ck_assert_str_eq(kiln_buffer_name(kiln_ir_input(ir, 0)), "x");
  ck_assert_str_eq(kiln_buffer_name(kiln_ir_output(ir, 0)), "y");
  kiln_buffer *w = kiln_ir_buffer(ir, 0);
  ck_assert_int_eq(kiln_buffer_get_kind(w), KILN_BUFFER_WEIGHT);
  const float *wd = kiln_buffer_data(w);
  ck_assert_ptr_nonnull(wd);
  ck_assert(wd[0] == 1.5f && wd[1] == 2.0f && wd[2] == -3.0f);
  ck_assert_uint_eq(kiln_ir_weight_bytes(ir), 12);
  ck_assert_uint_eq(kiln_ir_instr_count(ir), 5);
  kiln_instr *add = kiln_ir_instr(ir, 1);
  ck_assert_int_eq(kiln_instr_get_kind(add), kiln_instr_kind_for_node(KILN_NODE_Add));
  ck_assert_uint_eq(kiln_instr_operand_count(add), 3);
  ck_assert_int_eq(kiln_instr_operand_dir(add, 0), KILN_OUT);
  ck_assert_int_eq(kiln_instr_operand_dir(add, 2), KILN_IN);
  ck_assert_ptr_eq(kiln_instr_operand(add, 2), w);
  kiln_buffer *t0 = kiln_instr_operand(add, 0);
  ck_assert_int_eq(kiln_buffer_get_kind(t0), KILN_BUFFER_ACTIVATION);
  ck_assert_uint_eq(kiln_buffer_offset(t0), 0);
  kiln_instr *view = kiln_ir_instr(ir, 2);
  ck_assert_int_eq(kiln_instr_get_kind(view), KILN_INSTR_View);
  kiln_buffer *v = kiln_instr_operand(view, 0);
  ck_assert_int_eq(kiln_buffer_get_kind(v), KILN_BUFFER_VIEW);
  ck_assert_ptr_eq(kiln_buffer_base(v), t0);
  ck_assert_int_eq(kiln_type_numel(kiln_buffer_type(v)), 6);
  kiln_ir_destroy(ir);

  ir = parse_ok(second_ir);
  ck_assert_uint_eq(kiln_ir_input_count(ir), 2);
  ck_assert_str_eq(kiln_buffer_name(kiln_ir_input(ir, 1)), "b");
  ck_assert_uint_eq(kiln_buffer_io_index(kiln_ir_input(ir, 1)), 1);
  kiln_buffer *late = kiln_ir_buffer(ir, 3);
  ck_assert_str_eq(kiln_buffer_name(late), "late");
  ck_assert_uint_eq(kiln_buffer_offset(late), 64);
  kiln_instr *clip = kiln_ir_instr(ir, 1);
  ck_assert_ptr_null(kiln_instr_operand(clip, 2));
  kiln_instr *sm = kiln_ir_instr(ir, 2);
  ck_assert_int_eq(kiln_instr_operand_dir(sm, 0), KILN_INOUT);
  ck_assert_int_eq(kiln_attrs_int_or(kiln_instr_attrs(sm), "axis", 0), -1);
  ck_assert_int_eq(kiln_instr_get_kind(kiln_ir_instr(ir, 6)), KILN_INSTR_Copy);
  kiln_ir_destroy(ir);
}
END_TEST

/* More than 64 elements print as hex; the parsed copy keeps every byte. */
START_TEST(ir_weight_hex) {
  char text[512];
  char hex[2 * 70 + 1];
  for (int i = 0; i < 70; i++)
    snprintf(hex + 2 * i, 3, "%02x", (i * 37) & 0xff);
  snprintf(text, sizeof text, "ir @h arena 0\nweight %%big : u8[70] = hex\"%s\"\n", hex);
  kiln_ir *ir = parse_ok(text);
  const unsigned char *d = kiln_buffer_data(kiln_ir_buffer(ir, 0));
  for (int i = 0; i < 70; i++)
    ck_assert_uint_eq(d[i], (unsigned)((i * 37) & 0xff));
  kiln_ir_destroy(ir);
  assert_round_trip(text);
}
END_TEST

/* IRGen's output for every case prints, parses back to an IR that prints
 * the same, and verifies whenever the original does. */
START_TEST(irgen_output_round_trips) {
  char **paths;
  size_t n = text_case_paths(&paths);
  for (size_t i = 0; i < n; i++) {
    kiln_module *m = NULL;
    kiln_status s = kiln_module_load_text(paths[i], NULL, &m);
    ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
    kiln_ir *ir = NULL;
    s = kiln_irgen(kiln_module_function(m, 0), &ir);
    ck_assert_msg(s == NULL, "%s: %s", paths[i], kiln_status_message(s));
    char *t1 = NULL, *t2 = NULL;
    s = kiln_ir_print(ir, &t1);
    ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
    kiln_ir *ir2 = NULL;
    s = kiln_ir_parse(t1, strlen(t1), paths[i], NULL, &ir2);
    ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
    s = kiln_ir_print(ir2, &t2);
    ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
    ck_assert_msg(strcmp(t1, t2) == 0, "%s: IR text changed:\n%s---\n%s", paths[i], t1, t2);
    ck_assert_uint_eq(kiln_ir_buffer_count(ir2), kiln_ir_buffer_count(ir));
    ck_assert_uint_eq(kiln_ir_weight_bytes(ir2), kiln_ir_weight_bytes(ir));
    kiln_status v1 = kiln_ir_verify(ir);
    if (!v1) {
      kiln_status v2 = kiln_ir_verify(ir2);
      ck_assert_msg(v2 == NULL, "%s: parsed IR does not verify: %s", paths[i],
                    kiln_status_message(v2));
    }
    kiln_status_free(v1);
    kiln_free(t1);
    kiln_free(t2);
    kiln_ir_destroy(ir2);
    kiln_ir_destroy(ir);
    kiln_module_destroy(m);
  }
  text_free_paths(paths, n);
}
END_TEST

Suite *text_instr_suite(void) {
  Suite *s = suite_create("text_instr");
  TCase *tc = tcase_create("instr");
  tcase_add_test(tc, ir_round_trips);
  tcase_add_test(tc, ir_parsed_contents);
  tcase_add_test(tc, ir_weight_hex);
  tcase_add_test(tc, irgen_output_round_trips);
  suite_add_tcase(s, tc);
  return s;
}
