/* tests/passes/test_manager.c: the pass manager: pipeline syntax and its
 * errors, fixed points and their cap, stop-after, statistics, printing,
 * and the graph -> instruction hand-over. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

static const char *dead_text = "module @m\n"
                               "input %x : f32[4]\n"
                               "func @main {\n"
                               "  %i : f32[4] = Identity(%x)\n"
                               "  %d : f32[4] = Exp(%i)\n"
                               "  %r : f32[4] = Relu(%i)\n"
                               "  output %y = %r\n"
                               "}\n";

static void expect_error(const char *pipeline, kiln_code code, const char *needle) {
  kiln_status s = kiln_pass_parse_check(pipeline);
  ck_assert_msg(s != NULL, "'%s' should not parse", pipeline);
  ck_assert_int_eq(kiln_status_code(s), code);
  ck_assert_msg(strstr(kiln_status_message(s), needle), "'%s': message '%s' lacks '%s'", pipeline,
                kiln_status_message(s), needle);
  kiln_status_free(s);
}

START_TEST(pipeline_syntax) {
  ck_assert_ptr_null(kiln_pass_parse_check("dce,cse,fold*,simplify*8, dce"));
  ck_assert_ptr_null(kiln_pass_parse_check("inplace,shrink,plan"));
  expect_error("dce,frobnicate", KILN_NOT_FOUND, "frobnicate");
  expect_error("dce,,cse", KILN_PARSE_ERROR, "empty pass name");
  expect_error("fold*0", KILN_PARSE_ERROR, "cap");
  expect_error("fold*x", KILN_PARSE_ERROR, "unexpected 'x'");
  ck_assert_uint_ge(kiln_pass_count(), 10);
  ck_assert_str_eq(kiln_pass_get_info(0)->name, "dce");
  ck_assert_ptr_null(kiln_pass_get_info(kiln_pass_count()));
}
END_TEST

START_TEST(stats_and_stop_after) {
  kiln_module *m = tp_parse(dead_text);
  kiln_pass_target t = {.module = m};
  kiln_pass_report r;
  ck_assert_ptr_null(kiln_pass_run(&t, "simplify,dce,dce", NULL, &r));
  ck_assert_uint_eq(r.steps_run, 3);
  ck_assert_uint_eq(r.stat_count, 2);
  ck_assert_str_eq(r.stats[0].name, "simplify");
  ck_assert_uint_eq(r.stats[0].runs, 1);
  ck_assert_uint_eq(r.stats[0].changes, 1); /* the Identity */
  ck_assert_str_eq(r.stats[1].name, "dce");
  ck_assert_uint_eq(r.stats[1].runs, 2);
  ck_assert_uint_eq(r.stats[1].changes, 1); /* the Exp (simplify removed the Identity) */
  ck_assert_uint_eq(kiln_function_node_count(kiln_module_function(m, 0)), 1);
  kiln_module_destroy(m);

  m = tp_parse(dead_text);
  t.module = m;
  kiln_pass_options o = kiln_pass_options_default();
  o.stop_after = 1;
  ck_assert_ptr_null(kiln_pass_run(&t, "simplify,dce", &o, &r));
  ck_assert_uint_eq(r.steps_run, 1);
  ck_assert_uint_eq(kiln_function_node_count(kiln_module_function(m, 0)), 2); /* dead Exp stays */
  kiln_module_destroy(m);
}
END_TEST

START_TEST(fixed_point_and_cap) {
  /* Two transposes below an Exp chain: sink moves both in one run; dce*
   * settles on its second run. */
  kiln_module *m = tp_parse("module @m\ninput %x : f32[2,3]\nfunc @main {\n"
                            "  %t : f32[3,2] = Transpose(%x) {perm = [1, 0]}\n"
                            "  %e : f32[3,2] = Exp(%t)\n"
                            "  output %y = %e\n}\n");
  kiln_pass_target t = {.module = m};
  kiln_pass_report r;
  FILE *log = tmpfile();
  kiln_pass_options o = kiln_pass_options_default();
  o.log = log;
  ck_assert_ptr_null(kiln_pass_run(&t, "sink*1", &o, &r));
  ck_assert_uint_eq(r.cap_hits, 1); /* changed on its only allowed run */
  ck_assert_ptr_null(kiln_pass_run(&t, "sink*,dce*", &o, &r));
  ck_assert_uint_eq(r.cap_hits, 0);
  ck_assert_uint_eq(r.stats[0].runs, 1); /* nothing left to sink */
  ck_assert_uint_eq(r.stats[1].runs, 1); /* nothing dead left */
  char line[256] = "";
  rewind(log);
  ck_assert_ptr_nonnull(fgets(line, sizeof line, log));
  ck_assert_ptr_nonnull(strstr(line, "sink"));
  fclose(log);
  kiln_module_destroy(m);
}
END_TEST

START_TEST(print_before_after) {
  kiln_module *m = tp_parse(dead_text);
  kiln_pass_target t = {.module = m};
  FILE *f = tmpfile();
  kiln_pass_options o = kiln_pass_options_default();
  o.print_to = f;
  o.print_after = "dce";
  o.print_before = "all";
  ck_assert_ptr_null(kiln_pass_run(&t, "simplify,dce", &o, NULL));
  long n = ftell(f);
  rewind(f);
  char *buf = calloc(1, (size_t)n + 1);
  ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  ck_assert_ptr_nonnull(strstr(buf, "before simplify (step 1)"));
  ck_assert_ptr_nonnull(strstr(buf, "before dce (step 2)"));
  ck_assert_ptr_nonnull(strstr(buf, "after dce (step 2)"));
  ck_assert_ptr_null(strstr(buf, "after simplify"));
  free(buf);
  fclose(f);
  kiln_module_destroy(m);
}
END_TEST

START_TEST(graph_then_instr) {
  kiln_module *m = tp_parse(dead_text);
  kiln_pass_target t = {.module = m};
  ck_assert_ptr_null(kiln_pass_run(&t, "simplify,dce,inplace,shrink,plan", NULL, NULL));
  ck_assert_ptr_nonnull(t.ir);
  ck_assert_ptr_null(kiln_pass_validate_plan(t.ir));
  kiln_status s = kiln_pass_run(&t, "plan,dce", NULL, NULL);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "dce"));
  kiln_status_free(s);
  kiln_ir_destroy(t.ir);
  kiln_module_destroy(m);
}
END_TEST

Suite *manager_suite(void) {
  Suite *s = suite_create("pass manager");
  TCase *tc = tcase_create("manager");
  tcase_add_test(tc, pipeline_syntax);
  tcase_add_test(tc, stats_and_stop_after);
  tcase_add_test(tc, fixed_point_and_cap);
  tcase_add_test(tc, print_before_after);
  tcase_add_test(tc, graph_then_instr);
  suite_add_tcase(s, tc);
  return s;
}
