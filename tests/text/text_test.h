/* tests/text/text_test.h: the suites of the text-form test executable and
 * the small helpers they share. */
#ifndef KILN_TESTS_TEXT_TEST_H
#define KILN_TESTS_TEXT_TEST_H

#include <check.h>
#include <stddef.h>

#include "kiln/instr.h"
#include "kiln/ir.h"

Suite *text_roundtrip_suite(void);
Suite *text_error_suite(void);
Suite *text_instr_suite(void);
Suite *text_syntax_suite(void);

/* Sorted paths of the .kir files in tests/text/cases (malloc'd). */
size_t text_case_paths(char ***out);
void text_free_paths(char **paths, size_t n);
/* Whole file as a malloc'd NUL-terminated string; NULL on failure. */
char *text_read(const char *path, size_t *len);

#endif
