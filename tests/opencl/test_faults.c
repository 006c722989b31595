/* tests/opencl/test_faults.c: out-of-range index values given at run time
 * (tests/core/index_faults.h) on the opencl backend: KILN_OUT_OF_RANGE
 * naming the node and the value, read back from the kernels' fault record;
 * in-range negative indices computing the hand-made result. The losses are
 * left out: opencl lowers them to a compare against the class numbers,
 * where an out-of-range target matches no class (docs/opencl.md). Without
 * an OpenCL device the test says so and checks nothing. */
#include <stdio.h>
#include <string.h>

#include "helpers.h"

#include "../core/index_faults.h"

START_TEST(index_faults_opencl) {
  if (!tg_opencl_devices()) {
    fprintf(stderr, "index_faults_opencl: skipped, no OpenCL device\n");
    return;
  }
  uint32_t want = 0;
  for (size_t i = 0; i < sizeof ifault_cases / sizeof *ifault_cases; i++)
    want += !ifault_cases[i].loss;
  ck_assert_uint_eq(ifault_check(tg_ctx(), "opencl", IFAULT_LOSS_LOWERED), want);
}
END_TEST

Suite *ocl_faults_suite(void) {
  Suite *s = suite_create("opencl-faults");
  TCase *tc = tcase_create("faults");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, index_faults_opencl);
  suite_add_tcase(s, tc);
  return s;
}
