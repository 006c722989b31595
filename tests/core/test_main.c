/* tests/core/test_main.c: runs every Check suite of tests/core (and, with
 * --cache-unwritable-child DIR, the fresh process test_cache.c starts). */
#include <stdlib.h>
#include <string.h>

#include "suites.h"

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--cache-unwritable-child") == 0)
    return cache_unwritable_child(argv[2]);
  /* Run every suite whatever the caller's environment selects. */
  unsetenv("CK_RUN_SUITE");
  unsetenv("CK_RUN_CASE");
  SRunner *sr = srunner_create(status_suite());
  srunner_add_suite(sr, npy_suite());
  srunner_add_suite(sr, loader_suite());
  srunner_add_suite(sr, runtime_suite());
  srunner_add_suite(sr, cache_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
