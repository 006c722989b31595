/* tests/ir/test_oom.c: the failing-allocation walk over building, cloning,
 * verifying and IRGen: every failure is reported as KILN_OUT_OF_MEMORY and
 * frees everything, until a run gets through. */
#include <check.h>

#include "failing_alloc.h"
#include "kiln/instr.h"
#include "suites.h"

static kiln_status build_all(const kiln_allocator *al, kiln_module **m, kiln_module **c,
                             kiln_ir **ir) {
  *c = NULL;
  *ir = NULL;
  KILN_TRY(failing_build(al, m));
  KILN_TRY(kiln_module_clone(*m, c));
  KILN_TRY(kiln_irgen(kiln_module_function(*c, 0), ir));
  return NULL;
}

START_TEST(test_oom_walk) {
  long n;
  for (n = 1; n < 10000; n++) {
    failing_alloc fa;
    failing_alloc_init(&fa, n);
    kiln_module *m = NULL, *c = NULL;
    kiln_ir *ir = NULL;
    kiln_status s = build_all(&fa.a, &m, &c, &ir);
    if (!s) {
      ck_assert_ptr_null(kiln_module_verify(c));
      ck_assert_ptr_null(kiln_ir_verify(ir));
      ck_assert_uint_eq(kiln_ir_instr_count(ir), 12);
    } else {
      ck_assert_msg(kiln_status_code(s) == KILN_OUT_OF_MEMORY, "N=%ld: %s", n,
                    kiln_status_message(s));
    }
    kiln_status_free(s);
    kiln_ir_destroy(ir);
    kiln_module_destroy(c);
    kiln_module_destroy(m);
    ck_assert_msg(fa.live == 0 && fa.live_bytes == 0, "N=%ld: %ld blocks leaked", n, fa.live);
    if (!s)
      break;
  }
  ck_assert_int_gt(n, 10); /* several allocations had to fail on the way */
  ck_assert_int_lt(n, 10000);
}
END_TEST

Suite *oom_suite(void) {
  Suite *s = suite_create("oom");
  TCase *tc = tcase_create("oom");
  tcase_add_test(tc, test_oom_walk);
  suite_add_tcase(s, tc);
  return s;
}
