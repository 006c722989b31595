/* tests/text/test_roundtrip.c: every case file under cases/ is written in
 * canonical form, so print(parse(file)) must give the file back byte for
 * byte; together the cases must use every node kind. Also a small fuzz:
 * truncated and mutated cases must fail cleanly or parse, never crash. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_test.h"

START_TEST(cases_round_trip) {
  char **paths;
  size_t n = text_case_paths(&paths);
  ck_assert_uint_ge(n, 30);
  for (size_t i = 0; i < n; i++) {
    size_t len;
    char *text = text_read(paths[i], &len);
    ck_assert_msg(text != NULL, "cannot read %s", paths[i]);
    kiln_module *m = NULL;
    kiln_status s = kiln_module_parse(text, len, paths[i], NULL, &m);
    ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
    char *out = NULL;
    s = kiln_module_print(m, &out);
    ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
    ck_assert_msg(strcmp(out, text) == 0, "%s does not round-trip; printed:\n%s", paths[i], out);
    kiln_status v = kiln_module_verify(m);
    ck_assert_msg(v == NULL, "%s: %s", paths[i], kiln_status_message(v));
    kiln_module_free_string(m, out);
    kiln_module_destroy(m);
    free(text);
  }
  text_free_paths(paths, n);
}
END_TEST

START_TEST(cases_cover_every_kind) {
  bool seen[KILN_NODE_KIND_COUNT] = {false};
  char **paths;
  size_t n = text_case_paths(&paths);
  for (size_t i = 0; i < n; i++) {
    kiln_module *m = NULL;
    kiln_status s = kiln_module_load_text(paths[i], NULL, &m);
    ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
    for (uint32_t f = 0; f < kiln_module_function_count(m); f++) {
      kiln_function *fn = kiln_module_function(m, f);
      for (uint32_t k = 0; k < kiln_function_node_count(fn); k++)
        seen[kiln_node_get_kind(kiln_function_node(fn, k))] = true;
    }
    kiln_module_destroy(m);
  }
  text_free_paths(paths, n);
  char missing[4096] = "";
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++)
    if (!seen[k] && strlen(missing) + 40 < sizeof missing) {
      strcat(missing, " ");
      strcat(missing, kiln_node_kind_name((kiln_node_kind)k));
    }
  ck_assert_msg(missing[0] == '\0', "node kinds used by no case:%s", missing);
}
END_TEST

/* Parse; when it works, the printed text must parse again. */
static void parse_must_not_crash(const char *text, size_t len) {
  kiln_module *m = NULL;
  kiln_status s = kiln_module_parse(text, len, "fuzz.kir", NULL, &m);
  if (s) {
    ck_assert_ptr_null(m);
    ck_assert_int_ne(kiln_status_code(s), KILN_OK);
    ck_assert(strncmp(kiln_status_message(s), "fuzz.kir:", 9) == 0 ||
              kiln_status_code(s) == KILN_OUT_OF_MEMORY);
    kiln_status_free(s);
    return;
  }
  char *out = NULL;
  s = kiln_module_print(m, &out);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  kiln_module *m2 = NULL;
  s = kiln_module_parse(out, strlen(out), "fuzz2.kir", NULL, &m2);
  ck_assert_msg(s == NULL, "printed text does not parse: %s", kiln_status_message(s));
  kiln_module_destroy(m2);
  kiln_module_free_string(m, out);
  kiln_module_destroy(m);
}

START_TEST(fuzz_truncate_and_mutate) {
  static const char alphabet[] = "%@[](){},:=_\"\\#\n -.0123456789aefinxq";
  uint32_t rng = 12345;
  char **paths;
  size_t n = text_case_paths(&paths);
  for (size_t i = 0; i < n; i++) {
    size_t len;
    char *text = text_read(paths[i], &len);
    ck_assert(text != NULL);
    for (size_t cut = 0; cut < len; cut += 1 + len / 40)
      parse_must_not_crash(text, cut);
    char *copy = malloc(len + 1);
    ck_assert(copy != NULL);
    for (int round = 0; round < 60; round++) {
      memcpy(copy, text, len + 1);
      for (int k = 0; k < 1 + round % 3; k++) {
        rng = rng * 1103515245u + 12345u;
        size_t at = (rng >> 8) % (len ? len : 1);
        rng = rng * 1103515245u + 12345u;
        copy[at] = alphabet[(rng >> 8) % (sizeof alphabet - 1)];
      }
      parse_must_not_crash(copy, len);
    }
    free(copy);
    free(text);
  }
  text_free_paths(paths, n);
}
END_TEST

Suite *text_roundtrip_suite(void) {
  Suite *s = suite_create("text_roundtrip");
  TCase *tc = tcase_create("cases");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, cases_round_trip);
  tcase_add_test(tc, cases_cover_every_kind);
  tcase_add_test(tc, fuzz_truncate_and_mutate);
  suite_add_tcase(s, tc);
  return s;
}
