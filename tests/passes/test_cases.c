/* tests/passes/test_cases.c: text-in / text-out pass tests. Each file
 * cases/NAME.kir holds a "# RUN: PIPELINE" line, the input module, a
 * "# EXPECT" line and the expected module. The result must match the
 * expected module structurally (node kinds, attributes, types, constant
 * data, input names; result names are free). A "# NEEDS: evaluator" line
 * marks a case that needs the interpreter (reported unsupported without);
 * "# FUSES:", "# LAYOUT:" and "# PLUGIN-MINOR:" describe the backend the
 * passes ask (below). */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plugin.h"
#include "suites.h"

#define MAX_CASES 256

static char *names[MAX_CASES];
static int n_names;

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan(void) {
  DIR *d = opendir(KILN_PASS_CASES_DIR);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) && n_names < MAX_CASES) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".kir") == 0)
      names[n_names++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n_names, sizeof *names, cmp);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = 0;
  fclose(f);
  return buf;
}

/* The FUSES list holds ",K1,K2,": both the node's kind and the fused
 * form's kind must be listed. */
static bool case_listed(const char *list, kiln_node_kind k) {
  char key[80];
  snprintf(key, sizeof key, ",%s,", kiln_node_kind_name(k));
  return strstr(list, key) != NULL;
}

static bool case_supports_fused(void *user, const kiln_node *n, kiln_node_kind act) {
  return case_listed(user, kiln_node_get_kind(n)) && case_listed(user, act);
}

/* "# LAYOUT: B": a backend that runs every node, the channel-blocked
 * ones only in blocks of B (the layout pass asks about 16, 8 and 4), and
 * a grouped BlockedConv only where each group is whole blocks of input
 * channels (or one channel: depthwise), as a backend whose kernels take no
 * groups inside a block would. */
/* "# PLUGIN-MINOR: N": a plugin built for ABI 1.N that declares every
 * node, asked through kiln_plugin_supports as the core asks plugins (so
 * what its minor could not hold is declined for it). */
static bool case_yes(void *state, const kiln_node *n) {
  (void)state, (void)n;
  return true;
}
static bool case_supports_minor(void *user, const kiln_node *n) {
  return kiln_plugin_supports((const kiln_plugin *)user, n);
}

static bool case_supports_layout(void *user, const kiln_node *n) {
  int64_t B = *(const int64_t *)user;
  switch (kiln_node_get_kind(n)) {
  case KILN_NODE_BlockedConv: {
    const kiln_type *w = kiln_value_type(kiln_node_input(n, 1));
    if (kiln_attrs_int_or(kiln_node_attrs(n), "group", 1) != 1 && w->dims[1] != 1 &&
        w->dims[1] % B != 0)
      return false;
    return kiln_attrs_int_or(kiln_node_attrs(n), "block", 0) == B;
  }
  case KILN_NODE_BlockChannels:
    return kiln_attrs_int_or(kiln_node_attrs(n), "block", 0) == B;
  case KILN_NODE_UnblockChannels: {
    const kiln_type *t = kiln_value_type(kiln_node_input(n, 0));
    return t->dims[t->rank - 1] == B;
  }
  default:
    return true;
  }
}

START_TEST(run_case) {
  ck_assert_int_lt(_i, n_names);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", KILN_PASS_CASES_DIR, names[_i]);
  char *text = slurp(path);
  ck_assert_msg(text != NULL, "cannot read %s", path);
  char *run = strstr(text, "# RUN:");
  char *sep = strstr(text, "# EXPECT");
  ck_assert_msg(run && sep, "%s: needs '# RUN:' and '# EXPECT' lines", names[_i]);
  char pipeline[256];
  sscanf(run + 6, " %255s", pipeline);
  bool needs_eval = strstr(text, "# NEEDS: evaluator") != NULL;
  if (needs_eval && !tp_context()) {
    fprintf(stderr, "%s: unsupported (no interpreter plugin)\n", names[_i]);
    free(text);
    return;
  }
  kiln_module *in = NULL, *want = NULL;
  kiln_status s = kiln_module_parse(text, (size_t)(sep - text), path, NULL, &in);
  ck_assert_msg(!s, "%s input: %s", names[_i], kiln_status_message(s));
  s = kiln_module_parse(sep, strlen(sep), path, NULL, &want);
  ck_assert_msg(!s, "%s expected: %s", names[_i], kiln_status_message(s));
  kiln_pass_options o = kiln_pass_options_default();
  if (tp_context())
    o.evaluate = tp_evaluate;
  /* "# FUSES: K1,K2,...": a backend that declares the fused forms of these
   * kinds (FusedElementwise for elementwise fusion). */
  char fuses[256] = "";
  char *fl = strstr(text, "# FUSES:");
  if (fl && fl < sep) {
    sscanf(fl + 8, " %250s", fuses + 1);
    fuses[0] = ',';
    strcat(fuses, ",");
    o.supports_fused = case_supports_fused;
    o.backend_user = fuses;
  }
  int64_t layout_block = 0;
  char *ll = strstr(text, "# LAYOUT:");
  if (ll && ll < sep && sscanf(ll + 9, " %" SCNd64, &layout_block) == 1) {
    o.supports_node = case_supports_layout;
    o.backend_user = &layout_block;
  }
  kiln_plugin old = {KILN_PLUGIN_HEADER, .name = "old", .supports_node = case_yes};
  char *ml = strstr(text, "# PLUGIN-MINOR:");
  if (ml && ml < sep && sscanf(ml + 15, " %" SCNu32, &old.abi_minor) == 1) {
    o.supports_node = case_supports_minor;
    o.backend_user = &old;
  }
  kiln_pass_target t = {.module = in};
  s = kiln_pass_run(&t, pipeline, &o, NULL);
  ck_assert_msg(!s, "%s: %s", names[_i], kiln_status_message(s));
  char why[512] = "";
  bool ok = tp_modules_match(in, want, why, sizeof why);
  if (!ok) {
    char *got = NULL;
    kiln_status ps = kiln_module_print(in, &got);
    fprintf(stderr, "%s: got\n%s\n", names[_i], ps ? kiln_status_message(ps) : got);
    if (!ps)
      kiln_module_free_string(in, got);
    kiln_status_free(ps);
  }
  ck_assert_msg(ok, "%s: %s", names[_i], why);
  kiln_module_destroy(in);
  kiln_module_destroy(want);
  free(text);
}
END_TEST

static void free_names(void) {
  for (int i = 0; i < n_names; i++)
    free(names[i]);
}

Suite *cases_suite(void) {
  scan();
  atexit(free_names);
  Suite *s = suite_create("pass cases");
  TCase *tc = tcase_create("cases");
  tcase_add_loop_test(tc, run_case, 0, n_names);
  suite_add_tcase(s, tc);
  return s;
}
