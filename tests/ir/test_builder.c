/* tests/ir/test_builder.c: building modules: names, arity, ordering,
 * inference through the builder, failures that leave the function
 * unchanged, edits (replace uses, remove, insert point) and cloning. */
#include <check.h>
#include <string.h>

#include "kiln/ir.h"
#include "suites.h"

static kiln_type t23(void) {
  kiln_type t;
  int64_t d[] = {2, 3};
  kiln_status s = kiln_type_make(KILN_F32, 2, d, &t);
  ck_assert_ptr_null(s);
  return t;
}

#define OK(expr) ck_assert_msg((s_ = (expr)) == NULL, "%s", kiln_status_message(s_))

START_TEST(test_build_basic) {
  kiln_status s_;
  kiln_module *m;
  kiln_function *f;
  kiln_value *x, *c;
  kiln_node *n1, *n2;
  kiln_type t = t23();
  float data[6] = {1, 2, 3, 4, 5, 6};
  OK(kiln_module_create(NULL, "net", &m));
  ck_assert_str_eq(kiln_module_name(m), "net");
  ck_assert_ptr_eq(kiln_module_allocator(m), kiln_default_allocator());
  OK(kiln_module_add_input(m, "x", &t, &x));
  OK(kiln_module_add_constant(m, NULL, &t, data, &c));
  ck_assert_str_eq(kiln_value_name(c), "0");  /* first automatic name */
  ck_assert_ptr_ne(kiln_value_data(c), data); /* copied */
  ck_assert(((const float *)kiln_value_data(c))[5] == 6.0f);
  OK(kiln_module_add_function(m, "main", &f));
  OK(kiln_function_add_node(f, KILN_NODE_Relu, NULL, &x, 1, NULL, 0, 0, &n1));
  ck_assert_str_eq(kiln_value_name(kiln_node_result(n1, 0)), "1");
  ck_assert_str_eq(kiln_node_name(n1), "1");
  kiln_value *in2[] = {kiln_node_result(n1, 0), c};
  const char *names[] = {"sum"};
  OK(kiln_function_add_node_named(f, KILN_NODE_Add, "add0", in2, 2, NULL, 0, 1, names, &n2));
  ck_assert_str_eq(kiln_node_name(n2), "add0");
  kiln_value *sum = kiln_node_result(n2, 0);
  ck_assert(kiln_type_equal(kiln_value_type(sum), &t));
  ck_assert_ptr_eq(kiln_module_find_value(m, "sum"), sum);
  ck_assert_ptr_eq(kiln_module_find_value(m, "x"), x);
  ck_assert_ptr_null(kiln_module_find_value(m, "nope"));
  uint32_t idx = 9;
  ck_assert_ptr_eq(kiln_value_producer(sum, &idx), n2);
  ck_assert_uint_eq(idx, 0);
  ck_assert_ptr_null(kiln_value_producer(x, NULL));
  OK(kiln_function_add_output(f, "y", sum));
  ck_assert_uint_eq(kiln_value_use_count(sum), 1);
  ck_assert_uint_eq(kiln_value_use_count(x), 1);
  ck_assert_uint_eq(kiln_value_use_count(c), 1);
  ck_assert_uint_eq(kiln_function_output_count(f), 1);
  ck_assert_str_eq(kiln_function_output_name(f, 0), "y");
  ck_assert_uint_eq(kiln_function_node_count(f), 2);
  ck_assert_ptr_eq(kiln_function_node(f, 1), n2);
  ck_assert_ptr_eq(kiln_node_function(n2), f);
  ck_assert_ptr_eq(kiln_function_module(f), m);
  ck_assert_ptr_eq(kiln_module_find_function(m, "main"), f);
  /* automatic names skip taken ones: "2" is taken by an input */
  kiln_value *two;
  OK(kiln_module_add_input(m, "2", &t, &two));
  kiln_node *n3;
  OK(kiln_function_add_node(f, KILN_NODE_Neg, NULL, &two, 1, NULL, 0, 0, &n3));
  ck_assert_str_eq(kiln_value_name(kiln_node_result(n3, 0)), "3");
  ck_assert_ptr_null(kiln_module_verify(m));
  kiln_module_destroy(m);
}
END_TEST

START_TEST(test_build_errors) {
  kiln_status s_;
  kiln_module *m, *other;
  kiln_function *f;
  kiln_value *x, *z, *ox;
  kiln_type t = t23(), t4;
  int64_t d4[] = {4};
  OK(kiln_type_make(KILN_F32, 1, d4, &t4));
  OK(kiln_module_create(NULL, "net", &m));
  OK(kiln_module_create(NULL, "other", &other));
  OK(kiln_module_add_input(m, "x", &t, &x));
  OK(kiln_module_add_input(m, "z", &t4, &z));
  OK(kiln_module_add_input(other, "ox", &t, &ox));
  OK(kiln_module_add_function(m, "main", &f));
  kiln_status s = kiln_module_add_input(m, "x", &t, NULL);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "'x'"));
  kiln_status_free(s);

  /* arity */
  kiln_value *two[] = {x, x};
  s = kiln_function_add_node(f, KILN_NODE_Relu, "r1", two, 2, NULL, 0, 0, NULL);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "node 'r1' (Relu)"));
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "function 'main'"));
  kiln_status_free(s);
  /* input from another module */
  s = kiln_function_add_node(f, KILN_NODE_Relu, "r2", &ox, 1, NULL, 0, 0, NULL);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "'ox'"));
  kiln_status_free(s);
  /* inference failure: [2,3] + [4] do not broadcast; function unchanged */
  kiln_value *bad[] = {x, z};
  const char *rn[] = {"badsum"};
  s = kiln_function_add_node_named(f, KILN_NODE_Add, "add_bad", bad, 2, NULL, 0, 1, rn, NULL);
  ck_assert_int_ne(kiln_status_code(s), KILN_OK);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "node 'add_bad' (Add)"));
  kiln_status_free(s);
  ck_assert_uint_eq(kiln_function_node_count(f), 0);
  ck_assert_ptr_null(kiln_module_find_value(m, "badsum"));
  ck_assert_uint_eq(kiln_value_use_count(x), 0);
  ck_assert_uint_eq(kiln_value_use_count(z), 0);
  /* result name taken */
  const char *taken[] = {"z"};
  s = kiln_function_add_node_named(f, KILN_NODE_Relu, "r3", &x, 1, NULL, 0, 1, taken, NULL);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "'z'"));
  kiln_status_free(s);
  /* duplicate attribute */
  kiln_attr_desc da[] = {KILN_ATTR_F("alpha", 0.1), KILN_ATTR_F("alpha", 0.2)};
  s = kiln_function_add_node(f, KILN_NODE_LeakyRelu, "lr", &x, 1, da, 2, 0, NULL);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "node 'lr' (LeakyRelu)"));
  kiln_status_free(s);
  /* result of a node used before it exists (insert point before it) */
  kiln_node *a, *b;
  OK(kiln_function_add_node(f, KILN_NODE_Relu, "a", &x, 1, NULL, 0, 0, &a));
  kiln_function_set_insert_point(f, a);
  kiln_value *ar = kiln_node_result(a, 0);
  s = kiln_function_add_node(f, KILN_NODE_Neg, "early", &ar, 1, NULL, 0, 0, NULL);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "node 'early' (Neg)"));
  kiln_status_free(s);
  /* inserting before `a` works for module values */
  OK(kiln_function_add_node(f, KILN_NODE_Neg, "b", &x, 1, NULL, 0, 0, &b));
  ck_assert_ptr_eq(kiln_function_node(f, 0), b);
  ck_assert_ptr_eq(kiln_function_node(f, 1), a);
  kiln_function_set_insert_point(f, NULL);
  /* outputs: duplicate names refused */
  OK(kiln_function_add_output(f, "y", ar));
  s = kiln_function_add_output(f, "y", x);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  kiln_status_free(s);
  ck_assert_ptr_null(kiln_module_verify(m));
  kiln_module_destroy(m);
  kiln_module_destroy(other);
}
END_TEST

START_TEST(test_edits_clone) {
  kiln_status s_;
  kiln_module *m, *c;
  kiln_function *f;
  kiln_value *x;
  kiln_node *a, *b, *n;
  kiln_type t = t23();
  OK(kiln_module_create(NULL, "net", &m));
  OK(kiln_module_add_input(m, "x", &t, &x));
  float w[6] = {0};
  w[2] = 7;
  OK(kiln_module_add_constant(m, "w", &t, w, NULL));
  OK(kiln_module_add_function(m, "main", &f));
  OK(kiln_function_add_node(f, KILN_NODE_Relu, "a", &x, 1, NULL, 0, 0, &a));
  kiln_value *ar = kiln_node_result(a, 0);
  OK(kiln_function_add_node(f, KILN_NODE_Neg, "b", &ar, 1, NULL, 0, 0, &b));
  kiln_value *br = kiln_node_result(b, 0);
  kiln_value *both[] = {ar, br};
  kiln_attr_desc at[] = {KILN_ATTR_I("axis", 0)};
  OK(kiln_function_add_node(f, KILN_NODE_Concat, "cat", both, 2, at, 1, 0, &n));
  int64_t want[] = {4, 3};
  ck_assert_uint_eq(kiln_value_type(kiln_node_result(n, 0))->rank, 2);
  ck_assert_int_eq(kiln_value_type(kiln_node_result(n, 0))->dims[0], want[0]);
  OK(kiln_function_add_output(f, "y", kiln_node_result(n, 0)));
  ck_assert_uint_eq(kiln_value_use_count(ar), 2);
  /* b is used: removing it is refused */
  kiln_status s = kiln_function_remove_node(f, b);
  ck_assert_int_eq(kiln_status_code(s), KILN_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "node 'b' (Neg)"));
  kiln_status_free(s);
  /* reroute b's use to a, then b can go */
  OK(kiln_function_replace_uses(f, br, ar));
  ck_assert_uint_eq(kiln_value_use_count(ar), 3);
  ck_assert_uint_eq(kiln_value_use_count(br), 0);
  const char *bname = kiln_value_name(br);
  ck_assert_ptr_eq(kiln_module_find_value(m, bname), br);
  OK(kiln_function_remove_node(f, b));
  ck_assert_uint_eq(kiln_value_use_count(ar), 2);
  ck_assert_uint_eq(kiln_function_node_count(f), 2);
  ck_assert_ptr_null(kiln_module_find_value(m, bname));
  ck_assert_ptr_null(kiln_module_verify(m));
  /* types must match */
  s = kiln_function_replace_uses(f, ar, kiln_node_result(n, 0));
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  kiln_status_free(s);

  OK(kiln_module_clone(m, &c));
  ck_assert_str_eq(kiln_module_name(c), "net");
  kiln_function *g = kiln_module_find_function(c, "main");
  ck_assert_ptr_nonnull(g);
  ck_assert_ptr_ne(g, f);
  ck_assert_uint_eq(kiln_function_node_count(g), 2);
  kiln_node *gc = kiln_function_node(g, 1);
  ck_assert_int_eq(kiln_node_get_kind(gc), KILN_NODE_Concat);
  ck_assert_str_eq(kiln_node_name(gc), "cat");
  ck_assert_int_eq(kiln_attrs_int_or(kiln_node_attrs(gc), "axis", 9), 0);
  kiln_value *ga = kiln_node_result(kiln_function_node(g, 0), 0);
  ck_assert_str_eq(kiln_value_name(ga), kiln_value_name(ar));
  ck_assert_ptr_eq(kiln_node_input(gc, 0), ga);
  ck_assert_ptr_eq(kiln_node_input(gc, 1), ga);
  ck_assert_uint_eq(kiln_value_use_count(ga), 2);
  kiln_value *gw = kiln_module_find_value(c, "w");
  /* constant data is shared, not copied */
  ck_assert_ptr_eq(kiln_value_data(gw), kiln_value_data(kiln_module_find_value(m, "w")));
  ck_assert(((const float *)kiln_value_data(gw))[2] == 7.0f);
  ck_assert_str_eq(kiln_function_output_name(g, 0), "y");
  ck_assert_ptr_null(kiln_module_verify(c));
  kiln_module_destroy(m);
  /* the clone is independent of the original: its share of the data
   * outlives the module it came from (ASan / valgrind see a stale read) */
  ck_assert_ptr_null(kiln_module_verify(c));
  ck_assert(((const float *)kiln_value_data(gw))[2] == 7.0f);
  kiln_module_destroy(c);
}
END_TEST


static kiln_status fill_ramp(void *user, void *dst, size_t bytes) {
  int *calls = user;
  ++*calls;
  float *f = dst;
  for (size_t i = 0; i < bytes / sizeof(float); i++)
    f[i] = (float)i * 0.5f;
  return NULL;
}

static kiln_status fill_fails(void *user, void *dst, size_t bytes) {
  (void)user;
  (void)dst;
  (void)bytes;
  return kiln_status_make(KILN_IO_ERROR, "the disk ran away");
}

/* add_constant_fill writes into the module's storage once, 64-byte
 * aligned; a failing fill leaves no constant; add_constant_from shares;
 * remove_unused_constants drops only what nothing uses, and shared data
 * lives on in the other module. */
START_TEST(test_constant_storage) {
  kiln_status s_;
  kiln_module *m, *m2;
  OK(kiln_module_create(NULL, "net", &m));
  OK(kiln_module_create(NULL, "other", &m2));
  int64_t d[1] = {5};
  kiln_type t;
  OK(kiln_type_make(KILN_F32, 1, d, &t));
  int calls = 0;
  kiln_value *a, *b, *x, *shared;
  OK(kiln_module_add_constant_fill(m, "a", &t, fill_ramp, &calls, &a));
  ck_assert_int_eq(calls, 1);
  ck_assert_uint_eq((uintptr_t)kiln_value_data(a) % 64, 0);
  ck_assert(((const float *)kiln_value_data(a))[3] == 1.5f);
  kiln_status s = kiln_module_add_constant_fill(m, "bad", &t, fill_fails, NULL, &b);
  ck_assert_int_eq(kiln_status_code(s), KILN_IO_ERROR);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "bad"));
  kiln_status_free(s);
  ck_assert_ptr_null(b);
  ck_assert_ptr_null(kiln_module_find_value(m, "bad"));
  ck_assert_uint_eq(kiln_module_constant_count(m), 1);
  OK(kiln_module_add_constant(m, "b", &t, kiln_value_data(a), &b));
  ck_assert_ptr_ne(kiln_value_data(b), kiln_value_data(a)); /* add_constant copies */
  OK(kiln_module_add_constant_from(m2, NULL, a, &shared));
  ck_assert_ptr_eq(kiln_value_data(shared), kiln_value_data(a));
  OK(kiln_module_add_input(m, "x", &t, &x));
  kiln_function *f;
  kiln_node *n;
  OK(kiln_module_add_function(m, "main", &f));
  kiln_value *ins[2] = {x, b};
  OK(kiln_function_add_node(f, KILN_NODE_Add, NULL, ins, 2, NULL, 0, 0, &n));
  OK(kiln_function_add_output(f, "y", kiln_node_result(n, 0)));
  ck_assert_uint_eq(kiln_module_remove_unused_constants(m), 1); /* a */
  ck_assert_uint_eq(kiln_module_constant_count(m), 1);
  ck_assert_ptr_eq(kiln_module_constant(m, 0), b);
  ck_assert_ptr_null(kiln_module_find_value(m, "a"));
  ck_assert_ptr_null(kiln_module_verify(m));
  ck_assert_uint_eq(kiln_module_remove_unused_constants(m), 0);
  /* m2's share of a's data outlives m (ASan / valgrind see a stale read) */
  kiln_module_destroy(m);
  ck_assert(((const float *)kiln_value_data(shared))[4] == 2.0f);
  kiln_module_destroy(m2);
}
END_TEST

Suite *builder_suite(void) {
  Suite *s = suite_create("builder");
  TCase *tc = tcase_create("builder");
  tcase_add_test(tc, test_build_basic);
  tcase_add_test(tc, test_build_errors);
  tcase_add_test(tc, test_edits_clone);
  tcase_add_test(tc, test_constant_storage);
  suite_add_tcase(s, tc);
  return s;
}
