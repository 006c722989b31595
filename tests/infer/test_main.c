/* tests/infer/test_main.c: the Check runner of the inference suite: one test
 * per case group, the dispatcher's own checks, and the coverage test that
 * demands a valid and an invalid case for every kind of node_kinds.def. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

START_TEST(test_elementwise) {
  cases_elementwise();
}
END_TEST

START_TEST(test_reduce) {
  cases_reduce();
}
END_TEST

START_TEST(test_linalg) {
  cases_linalg();
}
END_TEST

START_TEST(test_movement) {
  cases_movement();
}
END_TEST

START_TEST(test_other) {
  cases_other();
}
END_TEST

START_TEST(test_dispatch_counts) {
  ERR(Add, "f32[2]", "Add: takes 2 inputs, got 1");
  ERR(Gemm, "f32[2,2] f32[2,2] f32[2] f32[2]", "takes 2 to 3 inputs, got 4");
  ERRN(Relu, "f32[2]", 2, KILN_INVALID_ARGUMENT, "has 1 result, 2 requested");
  ERRN(TopK, "f32[4]", 1, KILN_INVALID_ARGUMENT, "has 2 results, 1 requested", KILN_ATTR_I("k", 1));
  ERR(Conv, "_ f32[1,1,1]", "input 0 is absent but required");
  ERR(Concat, "f32[2] _", "Concat: input 1 is absent but required", KILN_ATTR_I("axis", 0));
  ERR(Einsum, "f32[2] _", "Einsum: input 1 is absent but required", KILN_ATTR_S("equation", "i,i"));
  /* The default count is the kind's minimum; out_n reports it. */
  kiln_type in, out[3];
  int64_t d[2] = {2, 3};
  ck_assert_ptr_null(kiln_type_make(KILN_F32, 2, d, &in));
  const kiln_type *ins[1] = {&in};
  uint32_t n = 99;
  kiln_status s = kiln_infer_types(KILN_NODE_DynamicQuantizeLinear, ins, 1, NULL, 0, out, &n);
  ck_assert_ptr_null(s);
  ck_assert_uint_eq(n, 3);
  ck_assert_int_eq(out[0].elem, KILN_U8);
  ck_assert_int_eq(out[1].rank, 0);
  s = kiln_infer_types(KILN_NODE_KIND_COUNT, ins, 1, NULL, 0, out, &n);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "invalid node kind"));
  kiln_status_free(s);
  /* Absent attributes (NULL set) read as defaults. */
  s = kiln_infer_types(KILN_NODE_Softmax, ins, 1, NULL, 0, out, NULL);
  ck_assert_ptr_null(s);
  ck_assert(kiln_type_equal(&out[0], &in));
}
END_TEST

START_TEST(test_quantized_inputs_give_plain_results) {
  kiln_type q, out[1];
  int64_t d[1] = {4};
  ck_assert_ptr_null(kiln_type_make_quantized(KILN_I8, 1, d, 0.5f, 3, &q));
  const kiln_type *ins[2] = {&q, &q};
  ck_assert_ptr_null(kiln_infer_types(KILN_NODE_Add, ins, 2, NULL, 0, out, NULL));
  ck_assert(!out[0].quantized);
  ck_assert_int_eq(out[0].elem, KILN_I8);
  ck_assert_int_eq(out[0].dims[0], 4);
}
END_TEST

START_TEST(test_result_overflow) {
  /* 2^31 * 2^31 f32 elements: the element count fits, the bytes do not. */
  kiln_type in = {.elem = KILN_F32, .rank = 2, .dims = {1, 2147483648LL}};
  const kiln_type *ins[1] = {&in};
  kiln_attrs *a;
  kiln_attr_desc desc = IS("repeats", 2147483648LL, 1);
  ck_assert_ptr_null(kiln_attrs_create(NULL, &desc, 1, &a));
  kiln_type out[1];
  kiln_status s = kiln_infer_types(KILN_NODE_Tile, ins, 1, a, 0, out, NULL);
  kiln_attrs_destroy(NULL, a);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_ne(kiln_status_code(s), KILN_OK);
  ck_assert_msg(strncmp(kiln_status_message(s), "Tile: ", 6) == 0, "%s", kiln_status_message(s));
  kiln_status_free(s);
  /* Rank 9 is refused through kiln_type_make too. */
  kiln_type r8 = {.elem = KILN_F32, .rank = 8, .dims = {1, 1, 1, 1, 1, 1, 1, 2}};
  ins[0] = &r8;
  kiln_attr_desc ax = IS("axes", 0);
  ck_assert_ptr_null(kiln_attrs_create(NULL, &ax, 1, &a));
  s = kiln_infer_types(KILN_NODE_Unsqueeze, ins, 1, a, 0, out, NULL);
  kiln_attrs_destroy(NULL, a);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "Unsqueeze: result rank 9"));
  kiln_status_free(s);
}
END_TEST

START_TEST(test_every_kind_covered) {
  cases_elementwise();
  cases_reduce();
  cases_linalg();
  cases_movement();
  cases_other();
  char missing[4096] = "";
  size_t used = 0;
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++) {
    if (infer_ok_seen[k] && infer_err_seen[k])
      continue;
    used += (size_t)snprintf(missing + used, sizeof missing - used, " %s(%s%s)",
                             kiln_node_kind_name((kiln_node_kind)k),
                             infer_ok_seen[k] ? "" : "valid ", infer_err_seen[k] ? "" : "invalid");
    if (used >= sizeof missing)
      break;
  }
  ck_assert_msg(missing[0] == '\0', "kinds without cases:%s", missing);
}
END_TEST

static Suite *infer_suite(void) {
  Suite *s = suite_create("infer");
  TCase *tc = tcase_create("kinds");
  tcase_add_test(tc, test_elementwise);
  tcase_add_test(tc, test_reduce);
  tcase_add_test(tc, test_linalg);
  tcase_add_test(tc, test_movement);
  tcase_add_test(tc, test_other);
  tcase_add_test(tc, test_dispatch_counts);
  tcase_add_test(tc, test_quantized_inputs_give_plain_results);
  tcase_add_test(tc, test_result_overflow);
  tcase_add_test(tc, test_every_kind_covered);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(infer_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
