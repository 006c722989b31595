/* tests/ir/test_attrs.c: standalone attribute sets: sorting, duplicates,
 * lookups, conversions and defaults. */
#include <check.h>
#include <string.h>

#include "kiln/ir.h"
#include "suites.h"

START_TEST(test_sorted_lookup) {
  int64_t ints[] = {1, 2, 3};
  double fl[] = {0.25, 0.5};
  kiln_attr_desc d[] = {
      KILN_ATTR_I("b", 2),
      KILN_ATTR_F("a", 1.5),
      KILN_ATTR_IS("c", ints, 3),
      KILN_ATTR_S("mode", "tanh"),
      KILN_ATTR_FS("f", fl, 2),
      KILN_ATTR_T("to", KILN_I64),
      KILN_ATTR_IS("empty", NULL, 0),
  };
  kiln_attrs *as = NULL;
  ck_assert_ptr_null(kiln_attrs_create(NULL, d, 7, &as));
  ck_assert_uint_eq(kiln_attrs_count(as), 7);
  const char *order[] = {"a", "b", "c", "empty", "f", "mode", "to"};
  for (uint32_t i = 0; i < 7; i++)
    ck_assert_str_eq(kiln_attr_name(kiln_attrs_at(as, i)), order[i]);
  ck_assert_ptr_null(kiln_attrs_at(as, 7));
  const kiln_attr *c = kiln_attrs_find(as, "c");
  ck_assert_uint_eq(kiln_attr_len(c), 3);
  ck_assert_int_eq(kiln_attr_ints(c)[2], 3);
  ck_assert_ptr_null(kiln_attr_floats(c));
  ck_assert_int_eq(kiln_attr_int(kiln_attrs_find(as, "a")), 1); /* 1.5 truncated */
  ck_assert(kiln_attr_float(kiln_attrs_find(as, "b")) == 2.0);
  ck_assert_str_eq(kiln_attr_string(kiln_attrs_find(as, "mode")), "tanh");
  ck_assert_str_eq(kiln_attr_string(kiln_attrs_find(as, "b")), "");
  ck_assert(kiln_attr_floats(kiln_attrs_find(as, "f"))[1] == 0.5);
  ck_assert_int_eq(kiln_attr_type(kiln_attrs_find(as, "to")), KILN_I64);
  const kiln_attr *e = kiln_attrs_find(as, "empty");
  ck_assert_ptr_nonnull(kiln_attr_floats(e)); /* empty INTS reads as empty FLOATS */
  ck_assert_uint_eq(kiln_attr_len(e), 0);
  ck_assert_ptr_null(kiln_attrs_find(as, "zzz"));
  ck_assert_int_eq(kiln_attrs_int_or(as, "b", 9), 2);
  ck_assert_int_eq(kiln_attrs_int_or(as, "missing", 9), 9);
  ck_assert(kiln_attrs_float_or(as, "missing", 0.75) == 0.75);
  ck_assert(kiln_attrs_float_or(as, "a", 0) == 1.5);
  ck_assert_str_eq(kiln_attrs_string_or(as, "mode", "none"), "tanh");
  ck_assert_str_eq(kiln_attrs_string_or(as, "missing", "none"), "none");
  ck_assert_int_eq(kiln_attrs_type_or(as, "to", KILN_F32), KILN_I64);
  ck_assert_int_eq(kiln_attrs_type_or(as, "x", KILN_F16), KILN_F16);
  kiln_attrs_destroy(NULL, as);
  ck_assert_uint_eq(kiln_attrs_count(NULL), 0);
  ck_assert_int_eq(kiln_attrs_int_or(NULL, "x", 4), 4);
}
END_TEST

START_TEST(test_duplicate) {
  kiln_attr_desc d[] = {KILN_ATTR_I("axis", 1), KILN_ATTR_I("keepdims", 0),
                        KILN_ATTR_F("axis", 2.0)};
  kiln_attrs *as = (kiln_attrs *)1;
  kiln_status s = kiln_attrs_create(NULL, d, 3, &as);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "'axis'"));
  ck_assert_ptr_null(as);
  kiln_status_free(s);
  kiln_attr_desc bad[] = {KILN_ATTR_IS("pads", NULL, 2)};
  s = kiln_attrs_create(NULL, bad, 1, &as);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "'pads'"));
  kiln_status_free(s);
}
END_TEST

Suite *attrs_suite(void) {
  Suite *s = suite_create("attrs");
  TCase *tc = tcase_create("attrs");
  tcase_add_test(tc, test_sorted_lookup);
  tcase_add_test(tc, test_duplicate);
  suite_add_tcase(s, tc);
  return s;
}
