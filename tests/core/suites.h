/* tests/core/suites.h: the Check suites of tests/core (one executable,
 * test_core, runs them all) and the paths the build passes in. */
#ifndef KILN_TESTS_CORE_SUITES_H
#define KILN_TESTS_CORE_SUITES_H

#include <check.h>

#include "kiln/kiln.h"

Suite *status_suite(void);
Suite *npy_suite(void);
Suite *loader_suite(void);
Suite *runtime_suite(void);
Suite *cache_suite(void);

/* test_cache.c's check in a fresh process (main: --cache-unwritable-child
 * DIR); 0 on success. */
int cache_unwritable_child(const char *dir);

/* Assert a status failed with `code` and a message containing `part`;
 * frees it. */
#define EXPECT_FAIL(expr, code, part)                                                              \
  do {                                                                                             \
    kiln_status s_ = (expr);                                                                       \
    ck_assert_msg(s_ != NULL, "expected failure containing '%s'", part);                           \
    ck_assert_msg(kiln_status_code(s_) == (code), "code %s, message: %s",                          \
                  kiln_code_name(kiln_status_code(s_)), kiln_status_message(s_));                  \
    ck_assert_msg(strstr(kiln_status_message(s_), part) != NULL, "message '%s' lacks '%s'",        \
                  kiln_status_message(s_), part);                                                  \
    kiln_status_free(s_);                                                                          \
  } while (0)

/* Assert success, printing the message otherwise. */
#define EXPECT_OK(expr)                                                                            \
  do {                                                                                             \
    kiln_status s_ = (expr);                                                                       \
    ck_assert_msg(s_ == NULL, "unexpected failure: %s", kiln_status_message(s_));                  \
  } while (0)

/* Point discovery at the test plugins only (tests/core's build folder,
 * dup_a, dup_b and the junk folder). */
void test_use_fake_plugins(void);

#endif
