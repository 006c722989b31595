/* tests/ir/test_oom_print.c: the failing-allocation walk including the
 * text printer (kiln_module_print): build a graph and print it
 * with an allocator that fails the Nth allocation, for N = 1, 2, ... until
 * a run succeeds; each failure must be KILN_OUT_OF_MEMORY and leak nothing. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "failing_alloc.h"

START_TEST(test_oom_print_walk) {
  long n;
  for (n = 1; n < 10000; n++) {
    failing_alloc fa;
    failing_alloc_init(&fa, n);
    kiln_module *m = NULL;
    char *text = NULL;
    kiln_status s = failing_build(&fa.a, &m);
    if (!s)
      s = kiln_module_print(m, &text);
    if (!s) {
      ck_assert_ptr_nonnull(strstr(text, "Reshape"));
      ck_assert_ptr_nonnull(strstr(text, "LeakyRelu"));
      kiln_module_free_string(m, text);
    } else {
      ck_assert_msg(kiln_status_code(s) == KILN_OUT_OF_MEMORY, "N=%ld: %s", n,
                    kiln_status_message(s));
    }
    kiln_status_free(s);
    kiln_module_destroy(m);
    ck_assert_msg(fa.live == 0 && fa.live_bytes == 0, "N=%ld: %ld blocks leaked", n, fa.live);
    if (!s)
      break;
  }
  ck_assert_int_gt(n, 5);
  ck_assert_int_lt(n, 10000);
}
END_TEST

int main(void) {
  Suite *s = suite_create("oom_print");
  TCase *tc = tcase_create("oom_print");
  tcase_add_test(tc, test_oom_print_walk);
  suite_add_tcase(s, tc);
  /* run every suite whatever CK_RUN_SUITE / CK_RUN_CASE say */
  unsetenv("CK_RUN_SUITE");
  unsetenv("CK_RUN_CASE");
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
