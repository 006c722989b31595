/* tests/opencl/test_profile.c: the opencl backend's event profiling (the
 * shared check of tests/core/profile_check.h): kernel times read from
 * CL_QUEUE_PROFILING_ENABLE events add up to the run's wall time. Without
 * an OpenCL device the test says so and checks nothing. */
#include <stdio.h>
#include <string.h>

#include "helpers.h"

#include "../core/profile_check.h"

START_TEST(profile_opencl) {
  if (!tg_opencl_devices()) {
    fprintf(stderr, "profile_opencl: skipped, no OpenCL device\n");
    return;
  }
  ck_assert_uint_eq(prof_check(tg_ctx(), "opencl", 0, 256), 3);
}
END_TEST

Suite *ocl_profile_suite(void) {
  Suite *s = suite_create("opencl-profile");
  TCase *tc = tcase_create("profile");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, profile_opencl);
  suite_add_tcase(s, tc);
  return s;
}
