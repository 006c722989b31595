/* tests/opencl/test_main.c: runs the opencl Check suites; with
 * --no-device-child it is the fresh process of the "no device" test. */
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

int ocl_no_device_child(void);

/* Under ASan, LeakSanitizer's tracer crashes while stopping PoCL's worker
 * threads ("Tracer caught signal 11"), so leak checking is off by default
 * here; ASAN_OPTIONS in the environment still overrides this. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "detect_leaks=0";
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--no-device-child"))
    return ocl_no_device_child();
  unsetenv("CK_RUN_SUITE");
  unsetenv("CK_RUN_CASE");
  /* Keep the tests' cache entries out of the user's cache. */
  char dir[] = "/tmp/kiln-ocl-tests-XXXXXX";
  if (mkdtemp(dir))
    setenv("KILN_CACHE_DIR", dir, 1);
  SRunner *sr = srunner_create(ocl_compute_suite());
  srunner_add_suite(sr, ocl_cache_suite());
  srunner_add_suite(sr, ocl_half_suite());
  srunner_add_suite(sr, ocl_bits_suite());
  srunner_add_suite(sr, ocl_faults_suite());
  srunner_add_suite(sr, ocl_profile_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
