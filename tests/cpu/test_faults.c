/* tests/cpu/test_faults.c: out-of-range index values given at run time
 * (tests/core/index_faults.h) on the cpu backend, one thread and two:
 * KILN_OUT_OF_RANGE naming the node and the value, in-range negative
 * indices computing the hand-made result. */
#include "suites.h"

#include "../core/index_faults.h"

START_TEST(index_faults_cpu) {
  ck_assert_uint_eq(ifault_check(kt_ctx(), "cpu", 0), sizeof ifault_cases / sizeof *ifault_cases);
}
END_TEST

Suite *kcpu_faults_suite(void) {
  Suite *s = suite_create("cpu-faults");
  TCase *tc = tcase_create("faults");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, index_faults_cpu);
  suite_add_tcase(s, tc);
  return s;
}
