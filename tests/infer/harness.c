/* tests/infer/harness.c: runs one inference case and compares the printed
 * result types (or the error) with the expectation. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool infer_ok_seen[KILN_NODE_KIND_COUNT];
bool infer_err_seen[KILN_NODE_KIND_COUNT];

uint32_t infer_parse_types(const char *s, kiln_type *types, const kiln_type **ptrs) {
  uint32_t n = 0;
  while (*s) {
    while (*s == ' ')
      s++;
    if (!*s)
      break;
    if (*s == '_') {
      ptrs[n++] = NULL;
      s++;
      continue;
    }
    char name[16];
    size_t k = 0;
    while (*s && *s != '[' && k + 1 < sizeof name)
      name[k++] = *s++;
    name[k] = '\0';
    kiln_type *t = &types[n];
    memset(t, 0, sizeof *t);
    ck_assert_msg(kiln_elem_from_name(name, &t->elem), "bad elem name '%s' in test", name);
    ck_assert_msg(*s == '[', "expected '[' in test type");
    s++;
    while (*s && *s != ']') {
      char *end;
      t->dims[t->rank++] = strtoll(s, &end, 10);
      s = end;
      if (*s == ',')
        s++;
    }
    s++;
    ptrs[n] = t;
    n++;
  }
  return n;
}

static kiln_status run(kiln_node_kind kind, const char *ins, const kiln_attr_desc *attrs,
                       uint32_t n_attrs, uint32_t n_results, kiln_type *out, uint32_t *out_n) {
  kiln_type types[32];
  const kiln_type *ptrs[32];
  uint32_t n = infer_parse_types(ins, types, ptrs);
  kiln_attrs *a = NULL;
  kiln_status s = kiln_attrs_create(NULL, attrs, n_attrs, &a);
  ck_assert_msg(s == NULL, "attrs: %s", kiln_status_message(s));
  s = kiln_infer_types(kind, ptrs, n, a, n_results, out, out_n);
  kiln_attrs_destroy(NULL, a);
  return s;
}

void infer_ok(kiln_node_kind kind, const char *ins, const kiln_attr_desc *attrs, uint32_t n_attrs,
              uint32_t n_results, const char *want, int line) {
  kiln_type out[64];
  uint32_t out_n = 0;
  kiln_status s = run(kind, ins, attrs, n_attrs, n_results, out, &out_n);
  ck_assert_msg(s == NULL, "line %d: %s(%s) failed: %s", line, kiln_node_kind_name(kind), ins,
                kiln_status_message(s));
  char got[1024] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < out_n; i++) {
    ck_assert_msg(!out[i].quantized, "line %d: result %u is quantized", line, i);
    char buf[128];
    kiln_type_format(&out[i], buf, sizeof buf);
    used += (size_t)snprintf(got + used, sizeof got - used, "%s%s", i ? " " : "", buf);
  }
  ck_assert_msg(strcmp(got, want) == 0, "line %d: %s(%s): got \"%s\", want \"%s\"", line,
                kiln_node_kind_name(kind), ins, got, want);
  infer_ok_seen[kind] = true;
}

void infer_err(kiln_node_kind kind, const char *ins, const kiln_attr_desc *attrs, uint32_t n_attrs,
               uint32_t n_results, kiln_code code, const char *frag, int line) {
  kiln_type out[64];
  uint32_t out_n = 0;
  kiln_status s = run(kind, ins, attrs, n_attrs, n_results, out, &out_n);
  ck_assert_msg(s != NULL, "line %d: %s(%s) succeeded; expected an error with \"%s\"", line,
                kiln_node_kind_name(kind), ins, frag);
  const char *msg = kiln_status_message(s);
  const char *name = kiln_node_kind_name(kind);
  bool starts = strncmp(msg, name, strlen(name)) == 0 && msg[strlen(name)] == ':';
  bool ok = kiln_status_code(s) == code && strstr(msg, frag) && starts;
  char copy[600];
  snprintf(copy, sizeof copy, "%s", msg);
  kiln_code got = kiln_status_code(s);
  kiln_status_free(s);
  ck_assert_msg(ok, "line %d: %s(%s): got %s \"%s\", want %s with \"%s\"", line, name, ins,
                kiln_code_name(got), copy, kiln_code_name(code), frag);
  infer_err_seen[kind] = true;
}
