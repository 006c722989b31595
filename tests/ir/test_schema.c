/* tests/ir/test_schema.c: every node kind has a home. Walks the kinds of
 * node_kinds.def and fails for any that lacks a family, an inference
 * function, a lowering rule or primitive status, an interpreter kernel, or
 * an ONNX importer row or a stated reason for having none; and checks the
 * generic attribute rules of node_schema.def, alone and in the verifier.
 * The interpreter's kernels and the ONNX importer table are linked in
 * directly (see meson.build), as their own suites do. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "ir/infer/infer.h"
#include "kiln/passes.h"
#include "loaders/onnx/onnx_internal.h"

#define OK(expr) ck_assert_msg((s_ = (expr)) == NULL, "%s", kiln_status_message(s_))

/* Appends a kind's name to a fixed-size list for the failure message. */
static void note(char *list, size_t cap, int *n, kiln_node_kind k) {
  const char *name = kiln_node_kind_name(k);
  (*n)++;
  if (strlen(list) + strlen(name) + 2 < cap)
    strcat(strcat(list, " "), name);
}

START_TEST(every_kind_has_a_family) {
  char missing[4096] = "";
  int n = 0;
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++) {
    kiln_node_family f = kiln_node_kind_family((kiln_node_kind)k);
    if ((unsigned)f >= KILN_FAMILY_COUNT || !strcmp(kiln_node_family_name(f), "?"))
      note(missing, sizeof missing, &n, (kiln_node_kind)k);
  }
  ck_assert_msg(n == 0, "%d node kinds have no family:%s", n, missing);
  ck_assert_str_eq(kiln_node_kind_family_name(KILN_NODE_Conv), "conv");
  ck_assert_str_eq(kiln_node_kind_family_name(KILN_NODE_FusedElementwise), "elementwise");
  ck_assert_str_eq(kiln_node_kind_family_name(KILN_NODE_Col2Im), "conv");
  ck_assert_str_eq(kiln_node_kind_family_name(KILN_NODE_Trilu), "movement");
  ck_assert_str_eq(kiln_node_kind_family_name(KILN_NODE_KIND_COUNT), "?");
  ck_assert_int_eq(kiln_node_kind_family(KILN_NODE_KIND_COUNT), KILN_FAMILY_COUNT);
  /* Every family has a name and at least one kind. */
  for (int f = 0; f < KILN_FAMILY_COUNT; f++) {
    ck_assert_str_ne(kiln_node_family_name((kiln_node_family)f), "?");
    bool used = false;
    for (int k = 0; k < KILN_NODE_KIND_COUNT && !used; k++)
      used = kiln_node_kind_family((kiln_node_kind)k) == (kiln_node_family)f;
    ck_assert_msg(used, "family %s has no kind", kiln_node_family_name((kiln_node_family)f));
  }
}
END_TEST

/* The dispatcher calls kiln_infer_<Name> by table; naming each here makes a
 * missing one a link error of this test, and the table's length a count. */
typedef kiln_status (*infer_fn)(const kiln_type *const *, uint32_t, const kiln_attrs *, uint32_t,
                                kiln_type *);
static const infer_fn infer_fns[] = {
#define KILN_NODE(name, a, b, c, d, e) kiln_infer_##name,
#include "kiln/node_kinds.def"
#undef KILN_NODE
};

START_TEST(every_kind_has_inference) {
  char missing[4096] = "";
  int n = 0;
  ck_assert_uint_eq(sizeof infer_fns / sizeof *infer_fns, KILN_NODE_KIND_COUNT);
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++)
    if (!infer_fns[k])
      note(missing, sizeof missing, &n, (kiln_node_kind)k);
  ck_assert_msg(n == 0, "%d node kinds have no inference:%s", n, missing);
}
END_TEST

START_TEST(every_kind_lowers_or_is_primitive) {
  char missing[4096] = "";
  int n = 0;
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++)
    if (!kiln_pass_has_lowering((kiln_node_kind)k) && !kiln_node_kind_is_primitive((kiln_node_kind)k))
      note(missing, sizeof missing, &n, (kiln_node_kind)k);
  ck_assert_msg(n == 0, "%d node kinds have neither a lowering rule nor primitive status:%s", n,
                missing);
  ck_assert_int_eq(kiln_node_kind_primitive(KILN_NODE_MatMul), KILN_PRIMITIVE_CORE);
  ck_assert_int_eq(kiln_node_kind_primitive(KILN_NODE_LSTM), KILN_PRIMITIVE_KEPT);
  ck_assert_int_eq(kiln_node_kind_primitive(KILN_NODE_Gemm), KILN_PRIMITIVE_NO);
  ck_assert(!kiln_node_kind_is_primitive(KILN_NODE_KIND_COUNT));
}
END_TEST

START_TEST(every_kind_has_an_interpreter_kernel) {
  char missing[4096] = "", classless[4096] = "";
  int n = 0, nc = 0;
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++) {
    if (!interp_kernel_for((kiln_node_kind)k))
      note(missing, sizeof missing, &n, (kiln_node_kind)k);
    if (!kiln_node_kind_elem_classes((kiln_node_kind)k))
      note(classless, sizeof classless, &nc, (kiln_node_kind)k);
  }
  ck_assert_msg(n == 0, "%d node kinds have no interpreter kernel:%s", n, missing);
  ck_assert_msg(nc == 0, "%d node kinds take no element class:%s", nc, classless);
  ck_assert_uint_eq(kiln_node_kind_elem_classes(KILN_NODE_KIND_COUNT), 0);
  ck_assert_uint_eq(kiln_elem_class(KILN_BF16), KILN_ELEM_CLASS_FLOAT);
  ck_assert_uint_eq(kiln_elem_class(KILN_I8), KILN_ELEM_CLASS_SIGNED);
  ck_assert_uint_eq(kiln_elem_class(KILN_U64), KILN_ELEM_CLASS_UNSIGNED);
  ck_assert_uint_eq(kiln_elem_class(KILN_BOOL), KILN_ELEM_CLASS_BOOL);
  ck_assert_uint_eq(kiln_elem_class(KILN_ELEM_COUNT), 0);
  ck_assert_uint_eq(kiln_node_kind_elem_classes(KILN_NODE_BitShift), KILN_ELEM_CLASS_UNSIGNED);
  ck_assert_uint_eq(kiln_node_kind_elem_classes(KILN_NODE_Where), KILN_ELEM_CLASS_BOOL);
}
END_TEST

/* A kind is imported from ONNX or says why not, and never both, so that
 * the stated reason stays true. */
START_TEST(every_kind_has_an_importer_row_or_a_reason) {
  uint32_t rows;
  const onnx_op *t = onnx_op_table(&rows);
  char missing[4096] = "", both[4096] = "";
  int n = 0, nb = 0;
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++) {
    bool found = false;
    for (uint32_t i = 0; i < rows && !found; i++)
      found = t[i].kind == (kiln_node_kind)k;
    const char *why = kiln_node_kind_no_onnx_reason((kiln_node_kind)k);
    if (!found && (!why || !why[0]))
      note(missing, sizeof missing, &n, (kiln_node_kind)k);
    if (found && why)
      note(both, sizeof both, &nb, (kiln_node_kind)k);
  }
  ck_assert_msg(n == 0, "%d node kinds have no ONNX importer row and no reason:%s", n, missing);
  ck_assert_msg(nb == 0, "%d node kinds have an ONNX importer row and a reason for none:%s", nb,
                both);
  ck_assert_ptr_nonnull(kiln_node_kind_no_onnx_reason(KILN_NODE_FusedElementwise));
}
END_TEST

START_TEST(list_inputs_match_the_kind_table) {
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++) {
    const kiln_node_kind_info *info = kiln_node_kind_get_info((kiln_node_kind)k);
    if (info->flags & KILN_NK_VARIADIC)
      ck_assert_msg(kiln_node_kind_inputs_are_list((kiln_node_kind)k),
                    "variadic kind %s does not take its inputs as a list", info->name);
  }
  ck_assert(kiln_node_kind_inputs_are_list(KILN_NODE_Concat));
  ck_assert(kiln_node_kind_inputs_are_list(KILN_NODE_Einsum));
  ck_assert(!kiln_node_kind_inputs_are_list(KILN_NODE_Gemm));
  ck_assert(!kiln_node_kind_inputs_are_list(KILN_NODE_KIND_COUNT));
}
END_TEST

START_TEST(attribute_rows_are_well_formed) {
  uint32_t total = 0;
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++) {
    uint32_t n = kiln_node_kind_attr_count((kiln_node_kind)k);
    total += n;
    for (uint32_t i = 0; i < n; i++) {
      const kiln_node_attr_schema *a = kiln_node_kind_attr_at((kiln_node_kind)k, i);
      ck_assert_ptr_nonnull(a);
      ck_assert_int_eq(a->node_kind, k);
      ck_assert(a->name && a->name[0]);
      ck_assert(a->min <= a->max);
      for (uint32_t j = 0; j < i; j++)
        ck_assert_str_ne(kiln_node_kind_attr_at((kiln_node_kind)k, j)->name, a->name);
    }
    ck_assert_ptr_null(kiln_node_kind_attr_at((kiln_node_kind)k, n));
  }
  ck_assert_uint_gt(total, 0);
  ck_assert_uint_eq(kiln_node_kind_attr_count(KILN_NODE_KIND_COUNT), 0);
}
END_TEST

START_TEST(generic_attribute_check) {
  kiln_status s_;
  kiln_attrs *a = NULL;
  kiln_attr_desc ok[] = {KILN_ATTR_I("group", 2), KILN_ATTR_S("auto_pad", "VALID")};
  OK(kiln_attrs_create(NULL, ok, 2, &a));
  OK(kiln_node_kind_check_attrs(KILN_NODE_Conv, a));
  kiln_attrs_destroy(NULL, a);
  /* A float where an int is expected reads as that int elsewhere: accepted. */
  kiln_attr_desc f[] = {KILN_ATTR_F("group", 1.0)};
  OK(kiln_attrs_create(NULL, f, 1, &a));
  OK(kiln_node_kind_check_attrs(KILN_NODE_Conv, a));
  kiln_attrs_destroy(NULL, a);
  OK(kiln_node_kind_check_attrs(KILN_NODE_Conv, NULL));

  kiln_attr_desc zero[] = {KILN_ATTR_I("group", 0)};
  OK(kiln_attrs_create(NULL, zero, 1, &a));
  kiln_status s = kiln_node_kind_check_attrs(KILN_NODE_Conv, a);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_msg(strstr(kiln_status_message(s), "Conv: attribute 'group' = 0 is outside") != NULL,
                "%s", kiln_status_message(s));
  kiln_status_free(s);
  kiln_attrs_destroy(NULL, a);

  kiln_attr_desc str[] = {KILN_ATTR_S("layout", "1")};
  OK(kiln_attrs_create(NULL, str, 1, &a));
  s = kiln_node_kind_check_attrs(KILN_NODE_LSTM, a);
  ck_assert_ptr_nonnull(s);
  ck_assert_str_eq(kiln_status_message(s),
                   "LSTM: attribute 'layout' is a string; the kind takes an int");
  kiln_status_free(s);
  kiln_attrs_destroy(NULL, a);
}
END_TEST

/* Inference reads a string `group` as its default and accepts the node; the
 * verifier's generic check names the wrong type. */
START_TEST(verifier_runs_the_generic_check) {
  kiln_status s_;
  kiln_module *m;
  kiln_function *f;
  kiln_value *in[2];
  kiln_type tx, tw;
  int64_t dx[] = {1, 2, 4, 4}, dw[] = {3, 2, 1, 1};
  OK(kiln_type_make(KILN_F32, 4, dx, &tx));
  OK(kiln_type_make(KILN_F32, 4, dw, &tw));
  OK(kiln_module_create(NULL, "net", &m));
  OK(kiln_module_add_input(m, "x", &tx, &in[0]));
  OK(kiln_module_add_input(m, "w", &tw, &in[1]));
  OK(kiln_module_add_function(m, "main", &f));
  kiln_attr_desc bad[] = {KILN_ATTR_S("group", "one")};
  kiln_node *n = NULL;
  OK(kiln_function_add_node(f, KILN_NODE_Conv, "c", in, 2, bad, 1, 0, &n));
  OK(kiln_function_add_output(f, "y", kiln_node_result(n, 0)));
  kiln_status s = kiln_module_verify(m);
  ck_assert_ptr_nonnull(s);
  ck_assert_msg(strstr(kiln_status_message(s), "node 'c' (Conv): Conv: attribute 'group' is a "
                                               "string; the kind takes an int") != NULL,
                "%s", kiln_status_message(s));
  kiln_status_free(s);
  kiln_module_destroy(m);
}
END_TEST

static Suite *schema_suite(void) {
  Suite *s = suite_create("schema");
  TCase *tc = tcase_create("kinds");
  tcase_add_test(tc, every_kind_has_a_family);
  tcase_add_test(tc, every_kind_has_inference);
  tcase_add_test(tc, every_kind_lowers_or_is_primitive);
  tcase_add_test(tc, every_kind_has_an_interpreter_kernel);
  tcase_add_test(tc, every_kind_has_an_importer_row_or_a_reason);
  tcase_add_test(tc, list_inputs_match_the_kind_table);
  tcase_add_test(tc, attribute_rows_are_well_formed);
  tcase_add_test(tc, generic_attribute_check);
  tcase_add_test(tc, verifier_runs_the_generic_check);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  unsetenv("CK_RUN_SUITE");
  unsetenv("CK_RUN_CASE");
  SRunner *sr = srunner_create(schema_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
