/* tests/interp/test_plugin.c: the plugin's compile and run on a small
 * hand-built instruction IR: an input, a weight, an activation in the
 * arena, a view into it, a copy and two compute instructions. */
#include <stdlib.h>

#include <kiln/plugin.h>

#include "helpers.h"

kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t host_abi_major, uint32_t host_abi_minor);

#define OK(expr)                                                                                   \
  do {                                                                                             \
    kiln_status s_ = (expr);                                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, kiln_status_message(s_));                           \
  } while (0)

/* t = Add(x, w) in the arena at offset 64; y = Relu(t); z = copy of the
 * view of t's second row (byte offset 12). */
START_TEST(plugin_runs_ir) {
  kiln_type t23, t3;
  OK(kiln_type_make(KILN_F32, 2, DIMS(2, 3), &t23));
  OK(kiln_type_make(KILN_F32, 1, DIMS(3), &t3));
  static const float w_data[3] = {1, -10, 0.5f};
  kiln_ir *ir;
  OK(kiln_ir_create(NULL, "plugin_test", &ir));
  kiln_buffer *x, *w, *t, *v, *y, *z;
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_INPUT, "x", &t23, NULL, 0, NULL, 0, &x));
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_WEIGHT, "w", &t3, w_data, 0, NULL, 0, &w));
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_ACTIVATION, "t", &t23, NULL, 0, NULL, 64, &t));
  kiln_buffer_set_offset(t, 64);
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_VIEW, "v", &t3, NULL, 0, t, 12, &v));
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_OUTPUT, "y", &t23, NULL, 0, NULL, 0, &y));
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_OUTPUT, "z", &t3, NULL, 1, NULL, 0, &z));
  kiln_ir_set_activation_bytes(ir, 64 + 24);
  const kiln_operand_dir out_in[] = {KILN_OUT, KILN_IN, KILN_IN};
  OK(kiln_ir_add_instr(ir, KILN_INSTR_Alloc, (kiln_buffer *[]){t}, out_in, 1, NULL, 0, NULL, NULL));
  OK(kiln_ir_add_instr(ir, kiln_instr_kind_for_node(KILN_NODE_Add), (kiln_buffer *[]){t, x, w},
                       out_in, 3, NULL, 0, NULL, NULL));
  OK(kiln_ir_add_instr(ir, kiln_instr_kind_for_node(KILN_NODE_Relu), (kiln_buffer *[]){y, t},
                       out_in, 2, NULL, 0, NULL, NULL));
  OK(kiln_ir_add_instr(ir, KILN_INSTR_View, (kiln_buffer *[]){v, t}, out_in, 2, NULL, 0, NULL,
                       NULL));
  OK(kiln_ir_add_instr(ir, KILN_INSTR_Copy, (kiln_buffer *[]){z, v}, out_in, 2, NULL, 0, NULL,
                       NULL));
  const kiln_operand_dir in_only[] = {KILN_IN};
  OK(kiln_ir_add_instr(ir, KILN_INSTR_Dealloc, (kiln_buffer *[]){t}, in_only, 1, NULL, 0, NULL,
                       NULL));

  kiln_plugin p;
  memset(&p, 0, sizeof p);
  OK(kiln_plugin_entry(&p, KILN_PLUGIN_ABI_MAJOR, KILN_PLUGIN_ABI_MINOR));
  void *exe = NULL;
  OK(p.compile(p.state, ir, NULL, &exe));
  float xin[6] = {1, 2, 3, -4, 5, -6}, yout[6], zout[3];
  const void *inputs[] = {xin};
  void *outputs[] = {yout, zout};
  OK(p.run(exe, inputs, outputs));
  /* t = [[2, -8, 3.5], [-3, -5, -5.5]] */
  expect_f32(yout, (float[]){2, 0, 3.5f, 0, 0, 0}, 6, 0, "y");
  expect_f32(zout, (float[]){-3, -5, -5.5f}, 3, 0, "z");
  p.destroy(exe);
  kiln_ir_destroy(ir);
}
END_TEST

/* A kernel error names the instruction. */
START_TEST(plugin_reports_kernel_errors) {
  kiln_type ti;
  OK(kiln_type_make(KILN_I32, 1, DIMS(2), &ti));
  kiln_ir *ir;
  OK(kiln_ir_create(NULL, "div_zero", &ir));
  kiln_buffer *a, *b, *y;
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_INPUT, "a", &ti, NULL, 0, NULL, 0, &a));
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_INPUT, "b", &ti, NULL, 1, NULL, 0, &b));
  OK(kiln_ir_add_buffer(ir, KILN_BUFFER_OUTPUT, "y", &ti, NULL, 0, NULL, 0, &y));
  const kiln_operand_dir dirs[] = {KILN_OUT, KILN_IN, KILN_IN};
  OK(kiln_ir_add_instr(ir, kiln_instr_kind_for_node(KILN_NODE_Div), (kiln_buffer *[]){y, a, b},
                       dirs, 3, NULL, 0, NULL, NULL));
  kiln_plugin p;
  memset(&p, 0, sizeof p);
  OK(kiln_plugin_entry(&p, KILN_PLUGIN_ABI_MAJOR, KILN_PLUGIN_ABI_MINOR));
  void *exe = NULL;
  OK(p.compile(p.state, ir, NULL, &exe));
  int32_t av[2] = {6, 1}, bv[2] = {3, 0}, yv[2];
  const void *inputs[] = {av, bv};
  void *outputs[] = {yv};
  kiln_status s = p.run(exe, inputs, outputs);
  ck_assert_ptr_nonnull(s);
  ck_assert_msg(strstr(kiln_status_message(s), "Div") != NULL, "message: %s",
                kiln_status_message(s));
  ck_assert_msg(strstr(kiln_status_message(s), "instruction 0") != NULL, "message: %s",
                kiln_status_message(s));
  kiln_status_free(s);
  bv[1] = 2;
  OK(p.run(exe, inputs, outputs));
  ck_assert(yv[0] == 2 && yv[1] == 0);
  p.destroy(exe);
  kiln_ir_destroy(ir);
}
END_TEST

TCase *interp_tcase_plugin(void) {
  TCase *tc = tcase_create("plugin");
  tcase_add_test(tc, plugin_runs_ir);
  tcase_add_test(tc, plugin_reports_kernel_errors);
  return tc;
}
