/* tests/passes/helpers.c: structural module comparison, parsing and the
 * interpreter-backed evaluator used by the passes tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_util.h"
#include "suites.h"

static bool values_match(const kiln_value *a, const kiln_value *b, char *why, size_t n, int depth) {
  if (!a || !b) {
    if (a != b)
      snprintf(why, n, "one input is absent, the other not");
    return a == b;
  }
  if (depth > 256) {
    snprintf(why, n, "graph too deep to compare");
    return false;
  }
  char ta[64], tb[64];
  kiln_type_format(kiln_value_type(a), ta, sizeof ta);
  kiln_type_format(kiln_value_type(b), tb, sizeof tb);
  if (kiln_value_get_kind(a) != kiln_value_get_kind(b) ||
      !kiln_type_equal(kiln_value_type(a), kiln_value_type(b))) {
    snprintf(why, n, "%%%s : %s vs expected %%%s : %s (kind %d vs %d)", kiln_value_name(a), ta,
             kiln_value_name(b), tb, kiln_value_get_kind(a), kiln_value_get_kind(b));
    return false;
  }
  switch (kiln_value_get_kind(a)) {
  case KILN_VALUE_INPUT:
    if (strcmp(kiln_value_name(a), kiln_value_name(b)) != 0) {
      snprintf(why, n, "input %%%s vs expected %%%s", kiln_value_name(a), kiln_value_name(b));
      return false;
    }
    return true;
  case KILN_VALUE_CONSTANT:
    if (memcmp(kiln_value_data(a), kiln_value_data(b),
               (size_t)kiln_type_bytes(kiln_value_type(a))) != 0) {
      snprintf(why, n, "constant %%%s differs in data from expected %%%s", kiln_value_name(a),
               kiln_value_name(b));
      return false;
    }
    return true;
  case KILN_VALUE_RESULT:
    break;
  }
  uint32_t ia, ib;
  kiln_node *na = kiln_value_producer(a, &ia), *nb = kiln_value_producer(b, &ib);
  if (ia != ib || kiln_node_get_kind(na) != kiln_node_get_kind(nb) ||
      kiln_node_input_count(na) != kiln_node_input_count(nb) ||
      !kiln_pass_attrs_equal(kiln_node_attrs(na), kiln_node_attrs(nb))) {
    snprintf(why, n, "%%%s = %s(...) vs expected %%%s = %s(...) (result, inputs or attributes)",
             kiln_value_name(a), kiln_node_kind_name(kiln_node_get_kind(na)), kiln_value_name(b),
             kiln_node_kind_name(kiln_node_get_kind(nb)));
    return false;
  }
  for (uint32_t i = 0; i < kiln_node_input_count(na); i++)
    if (!values_match(kiln_node_input(na, i), kiln_node_input(nb, i), why, n, depth + 1))
      return false;
  return true;
}

bool tp_modules_match(const kiln_module *a, const kiln_module *b, char *why, size_t n) {
  if (kiln_module_function_count(a) != kiln_module_function_count(b)) {
    snprintf(why, n, "function counts differ");
    return false;
  }
  for (uint32_t f = 0; f < kiln_module_function_count(a); f++) {
    kiln_function *fa = kiln_module_function(a, f), *fb = kiln_module_function(b, f);
    if (kiln_function_node_count(fa) != kiln_function_node_count(fb)) {
      snprintf(why, n, "function @%s has %u nodes, expected %u", kiln_function_name(fa),
               kiln_function_node_count(fa), kiln_function_node_count(fb));
      return false;
    }
    if (kiln_function_output_count(fa) != kiln_function_output_count(fb)) {
      snprintf(why, n, "output counts differ");
      return false;
    }
    for (uint32_t o = 0; o < kiln_function_output_count(fa); o++) {
      if (strcmp(kiln_function_output_name(fa, o), kiln_function_output_name(fb, o)) != 0) {
        snprintf(why, n, "output %u named %s, expected %s", o, kiln_function_output_name(fa, o),
                 kiln_function_output_name(fb, o));
        return false;
      }
      if (!values_match(kiln_function_output_value(fa, o), kiln_function_output_value(fb, o), why,
                        n, 0))
        return false;
    }
  }
  return true;
}

kiln_module *tp_parse(const char *text) {
  kiln_module *m = NULL;
  kiln_status s = kiln_module_parse(text, strlen(text), "test", NULL, &m);
  ck_assert_msg(s == NULL, "parse: %s", kiln_status_message(s));
  return m;
}

static kiln_context *ctx;
static bool ctx_tried;

static void drop_context(void) {
  kiln_context_destroy(ctx);
  ctx = NULL;
}

kiln_context *tp_context(void) {
  if (!ctx_tried) {
    ctx_tried = true;
    kiln_status s = kiln_context_create(&ctx);
    if (s) {
      kiln_status_free(s);
      ctx = NULL;
    } else if (!kiln_context_find_backend(ctx, "interpreter")) {
      kiln_context_destroy(ctx);
      ctx = NULL;
    } else {
      atexit(drop_context);
    }
  }
  return ctx;
}

kiln_status tp_evaluate(void *user, const kiln_module *m, const kiln_value *v, kiln_tensor *out) {
  (void)user;
  kiln_context *c = tp_context();
  if (!c)
    return kiln_status_make(KILN_UNAVAILABLE, "test evaluator: no interpreter plugin");
  return kiln_evaluate_value(c, m, v, out);
}
