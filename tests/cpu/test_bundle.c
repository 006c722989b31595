/* tests/cpu/test_bundle.c: bundles (placeholder). */
#include "suites.h"

Suite *kcpu_bundle_suite(void) { return suite_create("cpu-bundle"); }
