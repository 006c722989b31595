/* tests/passes/suites.h: the Check suites of the passes room and the
 * helpers they share. */
#ifndef KILN_TEST_PASSES_SUITES_H
#define KILN_TEST_PASSES_SUITES_H

#include <check.h>

#include "kiln/kiln.h"
#include "kiln/passes.h"

Suite *manager_suite(void);
Suite *cases_suite(void);
Suite *mem_suite(void);
Suite *lower_suite(void);

/* Structural equality of two modules (names of results ignored; inputs by
 * name; constants by data). On a difference, writes a reason to why. */
bool tp_modules_match(const kiln_module *a, const kiln_module *b, char *why, size_t n);

/* Parse a module from a string literal; fails the test on error. */
kiln_module *tp_parse(const char *text);

/* An evaluator on the interpreter (NULL when no interpreter plugin is
 * found); shared by the fold cases and the lowering property tests. */
kiln_context *tp_context(void);
kiln_status tp_evaluate(void *user, const kiln_module *m, const kiln_value *v, kiln_tensor *out);

#endif
