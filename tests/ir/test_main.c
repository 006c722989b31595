/* tests/ir/test_main.c: runs the ir Check suites. */
#include <check.h>
#include <stdlib.h>

#include "suites.h"

int main(void) {
  /* run every suite whatever CK_RUN_SUITE / CK_RUN_CASE say */
  unsetenv("CK_RUN_SUITE");
  unsetenv("CK_RUN_CASE");
  SRunner *sr = srunner_create(types_suite());
  srunner_add_suite(sr, attrs_suite());
  srunner_add_suite(sr, builder_suite());
  srunner_add_suite(sr, verify_suite());
  srunner_add_suite(sr, irgen_suite());
  srunner_add_suite(sr, oom_suite());
  srunner_add_suite(sr, rnn_acts_suite());
  srunner_add_suite(sr, ops_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
