/* tests/onnx/test_onnx_roundtrip.c: load -> kiln_onnx_save_memory -> load
 * over every case of the ONNX node conformance suites that kiln loads
 * (Debian's libonnx-testdata, and ../shared/onnx-node-v1.22 when present),
 * each loaded as the conformance runner does (the inputs of
 * test_data_set_0 known). A case passes when the reloaded module prints
 * as the first one (both without unused constants: the writer adds
 * initializers for attributes ONNX takes as inputs, which the loader turns
 * back into attributes and leaves unused), or, where the text differs,
 * when both give the same outputs on the interpreter. A case the writer
 * refuses is skipped with its reason, printed and counted; a reload that
 * fails or a difference is a failure. Suites that are absent are said so.
 * With KILN_ROUNDTRIP_SAVE_DIR set, each saved model is also written there
 * as <case>.onnx (for checking with other ONNX tools by hand). */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/kiln.h"

#define MAX_IO 32

typedef struct rt_counts {
  uint32_t cases, not_loaded, same_text, same_outputs, skipped, failed;
} rt_counts;

static kiln_context *g_ctx;

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct rt_data {
  kiln_tensor in[MAX_IO];
  uint32_t n_in;
} rt_data;

static void data_free(rt_data *d) {
  for (uint32_t i = 0; i < d->n_in; i++)
    kiln_tensor_free(&d->in[i]);
  d->n_in = 0;
}

static void read_inputs(const char *dir, rt_data *d) {
  memset(d, 0, sizeof *d);
  for (uint32_t k = 0; k < MAX_IO; k++) {
    char p[1100];
    snprintf(p, sizeof p, "%s/test_data_set_0/input_%u.pb", dir, k);
    if (!is_file(p))
      break;
    kiln_status s = kiln_tensor_read_pb(p, &d->in[d->n_in]);
    if (s) {
      kiln_status_free(s);
      break;
    }
    d->n_in++;
  }
}

static char *print_module(kiln_module *m) {
  kiln_module_remove_unused_constants(m);
  char *text = NULL;
  kiln_status s = kiln_module_print(m, &text);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  char *copy = strdup(text);
  kiln_module_free_string(m, text);
  return copy;
}

/* The first line where a and b differ, for the report. */
static void first_difference(const char *a, const char *b, char *out, size_t n) {
  const char *la = a, *lb = b;
  while (*la && *lb) {
    const char *ea = strchr(la, '\n'), *eb = strchr(lb, '\n');
    size_t na = ea ? (size_t)(ea - la) : strlen(la), nb = eb ? (size_t)(eb - lb) : strlen(lb);
    if (na != nb || memcmp(la, lb, na)) {
      snprintf(out, n, "'%.*s' became '%.*s'", (int)(na < 200 ? na : 200), la,
               (int)(nb < 200 ? nb : 200), lb);
      return;
    }
    la += na + (ea != NULL);
    lb += nb + (eb != NULL);
  }
  snprintf(out, n, "one text is a prefix of the other");
}

/* Outputs of m on the interpreter, inputs by name from d (malloc'd
 * buffers, NULL on a failure, with the reason in why). */
static void **run_interpreter(const kiln_module *m, const rt_data *d, uint32_t *n_out,
                              kiln_type *types, char *why, size_t why_n) {
  kiln_executable *exe = NULL;
  kiln_status s = kiln_compile(g_ctx, m, NULL, "interpreter", NULL, &exe);
  if (s) {
    snprintf(why, why_n, "compile: %s", kiln_status_message(s));
    kiln_status_free(s);
    return NULL;
  }
  uint32_t ni = kiln_executable_input_count(exe), no = kiln_executable_output_count(exe);
  const void *ins[MAX_IO] = {0};
  void **outs = calloc(MAX_IO, sizeof *outs);
  bool ok = ni <= MAX_IO && no <= MAX_IO && outs;
  for (uint32_t i = 0; ok && i < ni; i++) {
    kiln_io_info info;
    kiln_executable_input(exe, i, &info);
    for (uint32_t k = 0; k < d->n_in; k++)
      if (d->in[k].name && !strcmp(d->in[k].name, info.name))
        ins[i] = d->in[k].data;
    if (!ins[i] && i < d->n_in)
      ins[i] = d->in[i].data;
    ok = ins[i] != NULL;
  }
  for (uint32_t i = 0; ok && i < no; i++) {
    kiln_io_info info;
    kiln_executable_output(exe, i, &info);
    types[i] = info.type;
    outs[i] = malloc((size_t)kiln_type_bytes(&info.type) + 1);
    ok = outs[i] != NULL;
  }
  if (ok) {
    s = kiln_run(exe, ins, outs);
    if (s) {
      snprintf(why, why_n, "run: %s", kiln_status_message(s));
      kiln_status_free(s);
      ok = false;
    }
  } else {
    snprintf(why, why_n, "inputs or outputs could not be bound");
  }
  kiln_executable_destroy(exe);
  if (!ok && outs) {
    for (uint32_t i = 0; i < MAX_IO; i++)
      free(outs[i]);
    free(outs);
    return NULL;
  }
  *n_out = no;
  return outs;
}

static void free_outs(void **o) {
  if (!o)
    return;
  for (uint32_t i = 0; i < MAX_IO; i++)
    free(o[i]);
  free(o);
}

/* Same outputs: types equal, integers exact, floats within 1e-6 relative
 * (the two graphs may differ in form, Upsample written as Resize say). */
static bool same_outputs(const kiln_module *a, const kiln_module *b, const rt_data *d, char *why,
                         size_t why_n) {
  uint32_t na = 0, nb = 0;
  kiln_type ta[MAX_IO], tb[MAX_IO];
  void **oa = run_interpreter(a, d, &na, ta, why, why_n);
  void **ob = oa ? run_interpreter(b, d, &nb, tb, why, why_n) : NULL;
  bool same = oa && ob && na == nb;
  if (oa && ob && na != nb)
    snprintf(why, why_n, "%u outputs became %u", na, nb);
  for (uint32_t i = 0; same && i < na; i++) {
    if (!kiln_type_equal(&ta[i], &tb[i])) {
      snprintf(why, why_n, "output %u changed type", i);
      same = false;
      break;
    }
    kiln_elem e = ta[i].elem;
    for (int64_t k = 0; same && k < kiln_type_numel(&ta[i]); k++) {
      double x = kiln_elem_load_f64(e, oa[i], k), y = kiln_elem_load_f64(e, ob[i], k);
      bool ok = kiln_elem_is_float(e) && (isnan(x) || isnan(y))
                    ? isnan(x) && isnan(y)
                    : x == y || (kiln_elem_is_float(e) && fabs(x - y) <= 1e-6 * fabs(x));
      if (!ok) {
        snprintf(why, why_n, "output %u element %lld: %.9g became %.9g", i, (long long)k, x, y);
        same = false;
      }
    }
  }
  free_outs(oa);
  free_outs(ob);
  return same;
}

static void round_trip_case(const char *dir, const char *name, rt_counts *c) {
  char model[1100];
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  if (!is_file(model))
    return;
  c->cases++;
  rt_data d;
  read_inputs(dir, &d);
  kiln_onnx_options o = {.ctx = g_ctx};
  bool named = d.n_in > 0;
  for (uint32_t i = 0; i < d.n_in; i++)
    named = named && d.in[i].name && d.in[i].name[0];
  if (named) {
    o.known_inputs = d.in;
    o.known_input_count = d.n_in;
  }
  kiln_module *m = NULL, *m2 = NULL;
  kiln_status s = kiln_onnx_load(model, &o, &m);
  if (!s)
    s = kiln_module_verify(m);
  if (s) {
    c->not_loaded++;
    kiln_status_free(s);
    kiln_module_destroy(m);
    data_free(&d);
    return;
  }
  void *buf = NULL;
  size_t len = 0;
  s = kiln_onnx_save_memory(m, NULL, &buf, &len);
  if (s) {
    /* Refused, with a reason naming the node or value: not a pass. */
    printf("SKIP %s: %s\n", name, kiln_status_message(s));
    ck_assert_msg(kiln_status_code(s) == KILN_UNIMPLEMENTED, "%s: %s", name,
                  kiln_status_message(s));
    ck_assert_ptr_null(buf);
    c->skipped++;
    kiln_status_free(s);
    kiln_module_destroy(m);
    data_free(&d);
    return;
  }
  const char *save_dir = getenv("KILN_ROUNDTRIP_SAVE_DIR");
  if (save_dir && *save_dir) {
    char out[1200];
    snprintf(out, sizeof out, "%s/%s.onnx", save_dir, name);
    s = kiln_onnx_save(m, NULL, out);
    ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  }
  kiln_onnx_options o2 = {.ctx = g_ctx};
  s = kiln_onnx_load_memory(buf, len, NULL, name, &o2, &m2);
  kiln_free(buf);
  if (!s)
    s = kiln_module_verify(m2);
  if (s) {
    printf("FAIL %s: the saved model does not load: %s\n", name, kiln_status_message(s));
    c->failed++;
    kiln_status_free(s);
  } else {
    char *a = print_module(m), *b = print_module(m2);
    if (!strcmp(a, b)) {
      c->same_text++;
    } else {
      char diff[512], why[512] = "";
      first_difference(a, b, diff, sizeof diff);
      if (same_outputs(m, m2, &d, why, sizeof why)) {
        printf("SAME OUTPUTS %s (text differs: %s)\n", name, diff);
        c->same_outputs++;
      } else {
        printf("FAIL %s: %s; %s\n", name, diff, why);
        c->failed++;
      }
    }
    free(a);
    free(b);
  }
  kiln_module_destroy(m);
  kiln_module_destroy(m2);
  data_free(&d);
}

static void round_trip_suite(const char *suite, rt_counts *c) {
  DIR *dp = opendir(suite);
  if (!dp) {
    printf("suite %s is absent: not run\n", suite);
    return;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(dp));) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 256;
      names = realloc(names, cap * sizeof *names);
      ck_assert_ptr_nonnull(names);
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(dp);
  qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", suite, names[i]);
    round_trip_case(dir, names[i], c);
    free(names[i]);
  }
  free(names);
}

static void report(const char *suite, const rt_counts *c) {
  printf("ROUNDTRIP %s: %u cases, %u not loaded by kiln, %u same text, %u same outputs, "
         "%u skipped (refused with a reason), %u failed\n",
         suite, c->cases, c->not_loaded, c->same_text, c->same_outputs, c->skipped, c->failed);
  fflush(stdout);
}

static void run_one(const char *suite, uint32_t min_passed) {
  rt_counts c = {0};
  round_trip_suite(suite, &c);
  report(suite, &c);
  ck_assert_msg(c.failed == 0, "%s: %u cases failed the round trip", suite, c.failed);
  if (c.cases)
    ck_assert_msg(c.same_text + c.same_outputs >= min_passed, "%s: only %u cases round-tripped",
                  suite, c.same_text + c.same_outputs);
}

START_TEST(node_suite) {
  run_one("/usr/share/libonnx-testdata/data/node", 800);
}
END_TEST

START_TEST(node_suite_v122) {
  run_one(KILN_SOURCE_ROOT "/../shared/onnx-node-v1.22", 1250);
}
END_TEST

int main(void) {
  kiln_status s = kiln_context_create(&g_ctx);
  if (s) {
    fprintf(stderr, "%s\n", kiln_status_message(s));
    return 1;
  }
  Suite *su = suite_create("onnx_roundtrip");
  TCase *tc = tcase_create("conformance");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, node_suite);
  tcase_add_test(tc, node_suite_v122);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  kiln_context_destroy(g_ctx);
  return failed ? 1 : 0;
}
