/* tests/passes/test_main.c: runs the passes Check suites. */
#include <stdlib.h>

#include "suites.h"

int main(void) {
  SRunner *sr = srunner_create(manager_suite());
  srunner_add_suite(sr, cases_suite());
  srunner_add_suite(sr, mem_suite());
  srunner_add_suite(sr, lower_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
