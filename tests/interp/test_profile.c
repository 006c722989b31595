/* tests/interp/test_profile.c: the interpreter's per-step timings through
 * kiln_executable_profile (the shared check of tests/core/profile_check.h). */
#include "helpers.h"

#include "../core/profile_check.h"

START_TEST(profile_interpreter) {
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  ck_assert_msg(!s, "context: %s", kiln_status_message(s));
  ck_assert_uint_eq(prof_check(ctx, "interpreter", 0, 32), 3);
  kiln_context_destroy(ctx);
}
END_TEST

TCase *interp_tcase_profile(void) {
  TCase *tc = tcase_create("profile");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, profile_interpreter);
  return tc;
}
