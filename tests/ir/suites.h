/* tests/ir/suites.h: the Check suites of the ir test executable. */
#ifndef KILN_TESTS_IR_SUITES_H
#define KILN_TESTS_IR_SUITES_H
#include <check.h>

Suite *types_suite(void);
Suite *attrs_suite(void);
Suite *builder_suite(void);
Suite *verify_suite(void);
Suite *irgen_suite(void);
Suite *oom_suite(void);
Suite *rnn_acts_suite(void);
Suite *ops_suite(void);

#endif
