/* tests/interp/test_main.c: the interpreter kernel suite's entry, the
 * "every kind has a kernel" check and the plugin descriptor checks. */
#include <stdlib.h>

#include <kiln/plugin.h>

#include "helpers.h"

kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t host_abi_major, uint32_t host_abi_minor);

/* A kind without a kernel reads as NULL (interp.h declares them weak). */
START_TEST(every_kind_has_a_kernel) {
  char missing[4096] = "";
  int n = 0;
#define KILN_NODE(name, a, b, c, d, e)                                                             \
  if (!interp_kernel_for(KILN_NODE_##name)) {                                                      \
    n++;                                                                                           \
    if (strlen(missing) + sizeof(#name) + 2 < sizeof missing)                                      \
      strcat(strcat(missing, " "), #name);                                                         \
  }
#include <kiln/node_kinds.def>
#undef KILN_NODE
  ck_assert_msg(n == 0, "%d node kinds have no interpreter kernel:%s", n, missing);
}
END_TEST

START_TEST(kernel_for_out_of_range_is_null) {
  ck_assert_ptr_null(interp_kernel_for(KILN_NODE_KIND_COUNT));
  ck_assert_ptr_nonnull(interp_kernel_for(KILN_NODE_Add));
}
END_TEST

START_TEST(plugin_entry_fills_descriptor) {
  kiln_plugin p;
  memset(&p, 0, sizeof p);
  kiln_status s = kiln_plugin_entry(&p, KILN_PLUGIN_ABI_MAJOR, KILN_PLUGIN_ABI_MINOR);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_str_eq(p.name, "interpreter");
  ck_assert_uint_eq(p.abi_major, KILN_PLUGIN_ABI_MAJOR);
  ck_assert_ptr_nonnull(p.supports_node);
  ck_assert_ptr_nonnull(p.compile);
  ck_assert_ptr_nonnull(p.run);
  ck_assert_ptr_nonnull(p.destroy);
  memset(&p, 0, sizeof p);
  s = kiln_plugin_entry(&p, KILN_PLUGIN_ABI_MAJOR + 1, 0);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(kiln_status_code(s), KILN_ABI_MISMATCH);
  kiln_status_free(s);
}
END_TEST

START_TEST(elem_support_table) {
  ck_assert(interp_elem_supported(KILN_NODE_Exp, KILN_F16));
  ck_assert(!interp_elem_supported(KILN_NODE_Exp, KILN_I32));
  ck_assert(interp_elem_supported(KILN_NODE_Add, KILN_U8));
  ck_assert(!interp_elem_supported(KILN_NODE_Add, KILN_BOOL));
  ck_assert(interp_elem_supported(KILN_NODE_And, KILN_BOOL));
  ck_assert(!interp_elem_supported(KILN_NODE_BitShift, KILN_I32));
  ck_assert(interp_elem_supported(KILN_NODE_Cast, KILN_BOOL));
}
END_TEST

int main(void) {
  unsetenv("CK_RUN_SUITE"); /* the result must not depend on the caller's filters */
  unsetenv("CK_RUN_CASE");
  Suite *su = suite_create("interp");
  TCase *tc = tcase_create("dispatch");
  tcase_add_test(tc, every_kind_has_a_kernel);
  tcase_add_test(tc, kernel_for_out_of_range_is_null);
  tcase_add_test(tc, plugin_entry_fills_descriptor);
  tcase_add_test(tc, elem_support_table);
  suite_add_tcase(su, tc);
  suite_add_tcase(su, interp_tcase_elementwise());
  suite_add_tcase(su, interp_tcase_reduce());
  suite_add_tcase(su, interp_tcase_norm());
  suite_add_tcase(su, interp_tcase_linalg());
  suite_add_tcase(su, interp_tcase_conv());
  suite_add_tcase(su, interp_tcase_pool());
  suite_add_tcase(su, interp_tcase_movement());
  suite_add_tcase(su, interp_tcase_index());
  suite_add_tcase(su, interp_tcase_generator());
  suite_add_tcase(su, interp_tcase_resize());
  suite_add_tcase(su, interp_tcase_rnn());
  suite_add_tcase(su, interp_tcase_quant());
  suite_add_tcase(su, interp_tcase_loss());
  suite_add_tcase(su, interp_tcase_plugin());
  suite_add_tcase(su, interp_tcase_faults());
  suite_add_tcase(su, interp_tcase_profile());
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
