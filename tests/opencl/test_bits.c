/* tests/opencl/test_bits.c: the bitwise kinds (And, Or, Xor, Not) on
 * opencl, against hand-computed values and the interpreter. */
#include "helpers.h"

static const int64_t d4[] = {4};

/* kind applied to a and b (i32), cast to f32 so the values can be checked
 * by hand; every other result is compared with the interpreter. */
static void bitwise(kiln_node_kind k, const float *want) {
  tg t;
  tg_init(&t);
  kiln_value *a = tg_input(&t, "a", KILN_I32, 1, d4), *b = tg_input(&t, "b", KILN_I32, 1, d4);
  kiln_value *ab[] = {a, b};
  kiln_value *r =
      k == KILN_NODE_BitwiseNot ? tg_node(&t, k, &a, 1, NULL, 0) : tg_node(&t, k, ab, 2, NULL, 0);
  kiln_attr_desc to = KILN_ATTR_T("to", KILN_F32);
  tg_output(&t, "f", tg_node(&t, KILN_NODE_Cast, &r, 1, &to, 1));
  tg_output(&t, "r", r);
  const int32_t av[] = {12, -1, 5, 0}, bv[] = {10, 7, -6, 3};
  const void *ins[] = {av, bv};
  tg_check(&t, ins, 0, want, 4);
  tg_free(&t);
}

START_TEST(bitwise_kinds) {
  /* 12 = 0b1100, 10 = 0b1010; -1 is all ones; 5 = 0b0101, -6 = ~5. */
  const float and_w[] = {8, 7, 0, 0}, or_w[] = {14, -1, -1, 3}, xor_w[] = {6, -8, -1, 3};
  const float not_w[] = {-13, 0, -6, -1};
  bitwise(KILN_NODE_BitwiseAnd, and_w);
  bitwise(KILN_NODE_BitwiseOr, or_w);
  bitwise(KILN_NODE_BitwiseXor, xor_w);
  bitwise(KILN_NODE_BitwiseNot, not_w);
}
END_TEST

Suite *ocl_bits_suite(void) {
  Suite *s = suite_create("opencl_bits");
  TCase *tc = tcase_create("bits");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, bitwise_kinds);
  suite_add_tcase(s, tc);
  return s;
}
