/* tests/interp/test_faults.c: out-of-range index values given at run time
 * (tests/core/index_faults.h) through kiln_compile / kiln_run on the
 * interpreter: KILN_OUT_OF_RANGE naming the node and the value, in-range
 * negative indices computing the hand-made result. */
#include "helpers.h"

#include "../core/index_faults.h"

START_TEST(index_faults_interpreter) {
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  ck_assert_msg(!s, "context: %s", kiln_status_message(s));
  ck_assert_uint_eq(ifault_check(ctx, "interpreter", 0),
                    sizeof ifault_cases / sizeof *ifault_cases);
  kiln_context_destroy(ctx);
}
END_TEST

TCase *interp_tcase_faults(void) {
  TCase *tc = tcase_create("faults");
  tcase_add_test(tc, index_faults_interpreter);
  return tc;
}
