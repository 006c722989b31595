/* tests/core/test_status.c: the status convention: codes, messages,
 * wrapping, and the early-return macros. */
#include <string.h>

#include "suites.h"

START_TEST(make_keeps_code_and_message) {
  kiln_status s = kiln_status_make(KILN_NOT_FOUND, "no backend '%s' (%d found)", "gpu", 2);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(kiln_status_code(s), KILN_NOT_FOUND);
  ck_assert_str_eq(kiln_status_message(s), "no backend 'gpu' (2 found)");
  kiln_status_free(s);
}
END_TEST

START_TEST(null_is_ok) {
  ck_assert_int_eq(kiln_status_code(NULL), KILN_OK);
  ck_assert_str_eq(kiln_status_message(NULL), "ok");
  kiln_status_free(NULL);
  ck_assert_ptr_null(kiln_status_wrap(NULL, "context"));
}
END_TEST

START_TEST(wrap_adds_context_keeps_code) {
  kiln_status s = kiln_status_make(KILN_PARSE_ERROR, "bad token");
  s = kiln_status_wrap(s, "reading %s", "net.kir");
  ck_assert_int_eq(kiln_status_code(s), KILN_PARSE_ERROR);
  const char *m = kiln_status_message(s);
  const char *ctx = strstr(m, "reading net.kir");
  const char *old = strstr(m, "bad token");
  ck_assert_ptr_nonnull(ctx);
  ck_assert_ptr_nonnull(old);
  ck_assert(ctx < old); /* context in front */
  kiln_status_free(s);
}
END_TEST

START_TEST(code_names) {
  ck_assert_str_eq(kiln_code_name(KILN_OK), "OK");
  ck_assert_str_eq(kiln_code_name(KILN_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  ck_assert_str_eq(kiln_code_name(KILN_ABI_MISMATCH), "ABI_MISMATCH");
  ck_assert_str_eq(kiln_code_name(KILN_FAILED_PRECONDITION), "FAILED_PRECONDITION");
}
END_TEST

static kiln_status try_twice(int fail_at, int *reached) {
  *reached = 0;
  KILN_TRY(fail_at == 1 ? kiln_status_make(KILN_INTERNAL, "first") : NULL);
  *reached = 1;
  KILN_TRY_CTX(fail_at == 2 ? kiln_status_make(KILN_IO_ERROR, "second") : NULL, "step %d", 2);
  *reached = 2;
  return NULL;
}

START_TEST(try_macros_return_early) {
  int reached;
  EXPECT_FAIL(try_twice(1, &reached), KILN_INTERNAL, "first");
  ck_assert_int_eq(reached, 0);
  EXPECT_FAIL(try_twice(2, &reached), KILN_IO_ERROR, "step 2");
  ck_assert_int_eq(reached, 1);
  EXPECT_OK(try_twice(0, &reached));
  ck_assert_int_eq(reached, 2);
}
END_TEST

Suite *status_suite(void) {
  Suite *s = suite_create("status");
  TCase *tc = tcase_create("status");
  tcase_add_test(tc, make_keeps_code_and_message);
  tcase_add_test(tc, null_is_ok);
  tcase_add_test(tc, wrap_adds_context_keeps_code);
  tcase_add_test(tc, code_names);
  tcase_add_test(tc, try_macros_return_early);
  suite_add_tcase(s, tc);
  return s;
}
