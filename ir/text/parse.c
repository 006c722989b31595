/* ir/text/parse.c: the graph module parser (.kir). It builds the module
 * through the public builder, so every node's result types come from
 * inference; the types written in the text are then checked against them.
 * Every failure is a status naming FILE:LINE:COL; the input is never
 * trusted (the parser is fuzzed by the tests). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "text_internal.h"

typedef struct gparser {
  kiln_text_parser p;
  kiln_module *m;
} gparser;

/* A name must not already name a module value or a node result. */
static bool check_fresh(gparser *g, const char *name, const kiln_text_token *at) {
  if (kiln_module_find_value(g->m, name))
    return kiln_text_error_at(&g->p, at, KILN_PARSE_ERROR, "duplicate name %%%s", name);
  return true;
}

/* A use of %name inside function f: module values, or results of f. */
static bool lookup_value(gparser *g, kiln_function *f, const char *name, const kiln_text_token *at,
                         kiln_value **out) {
  kiln_value *v = kiln_module_find_value(g->m, name);
  if (v && kiln_value_get_kind(v) == KILN_VALUE_RESULT) {
    kiln_node *prod = kiln_value_producer(v, NULL);
    if (!prod || kiln_node_function(prod) != f)
      v = NULL;
  }
  if (!v)
    return kiln_text_error_at(&g->p, at, KILN_PARSE_ERROR, "undefined value %%%s", name);
  *out = v;
  return true;
}

static bool parse_input(gparser *g) {
  kiln_text_parser *p = &g->p;
  kiln_text_token at;
  const char *name;
  kiln_type t;
  kiln_text_next(p);
  if (!kiln_text_expect_name(p, '%', &name, &at) || !check_fresh(g, name, &at) ||
      !kiln_text_expect_punct(p, ':') || !kiln_text_parse_type(p, &t))
    return false;
  return kiln_text_wrap_at(p, &at, kiln_module_add_input(g->m, name, &t, NULL));
}

static bool parse_const(gparser *g) {
  kiln_text_parser *p = &g->p;
  kiln_text_token at;
  const char *name;
  kiln_type t;
  kiln_text_next(p);
  if (!kiln_text_expect_name(p, '%', &name, &at) || !check_fresh(g, name, &at) ||
      !kiln_text_expect_punct(p, ':') || !kiln_text_parse_type(p, &t) ||
      !kiln_text_expect_punct(p, '='))
    return false;
  void *data;
  if (!kiln_text_parse_data(p, &t, &data))
    return false;
  static const unsigned char none = 0;
  kiln_status s = kiln_module_add_constant(g->m, name, &t, data ? data : &none, NULL);
  free(data);
  return kiln_text_wrap_at(p, &at, s);
}

static bool parse_output(gparser *g, kiln_function *f) {
  kiln_text_parser *p = &g->p;
  kiln_text_token at, vat;
  const char *name, *vname;
  kiln_value *v = NULL;
  kiln_text_next(p);
  if (!kiln_text_expect_name(p, '%', &name, &at))
    return false;
  for (uint32_t i = 0; i < kiln_function_output_count(f); i++)
    if (strcmp(kiln_function_output_name(f, i), name) == 0)
      return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "duplicate output %%%s", name);
  if (!kiln_text_expect_punct(p, '=') || !kiln_text_expect_name(p, '%', &vname, &vat) ||
      !lookup_value(g, f, vname, &vat, &v))
    return false;
  return kiln_text_wrap_at(p, &at, kiln_function_add_output(f, name, v));
}

#define MAX_RESULTS 64
#define MAX_INPUTS 256

/* %a : T, %b : T = Kind(%x, _, %y) {attrs} loc "name" */
static bool parse_node(gparser *g, kiln_function *f) {
  kiln_text_parser *p = &g->p;
  kiln_text_token node_at = p->tok;
  const char *rnames[MAX_RESULTS];
  kiln_text_token rat[MAX_RESULTS];
  kiln_type rtypes[MAX_RESULTS];
  uint32_t nr = 0;
  for (;;) {
    if (nr == MAX_RESULTS)
      return kiln_text_error_at(p, &p->tok, KILN_PARSE_ERROR, "more than %d results", MAX_RESULTS);
    if (!kiln_text_expect_name(p, '%', &rnames[nr], &rat[nr]) ||
        !check_fresh(g, rnames[nr], &rat[nr]))
      return false;
    for (uint32_t i = 0; i < nr; i++)
      if (strcmp(rnames[i], rnames[nr]) == 0)
        return kiln_text_error_at(p, &rat[nr], KILN_PARSE_ERROR, "duplicate name %%%s", rnames[nr]);
    if (!kiln_text_expect_punct(p, ':') || !kiln_text_parse_type(p, &rtypes[nr]))
      return false;
    nr++;
    if (!kiln_text_is_punct(p, ','))
      break;
    kiln_text_next(p);
  }
  if (!kiln_text_expect_punct(p, '='))
    return false;
  kiln_text_token kind_at = p->tok;
  kiln_node_kind kind;
  char kname[64];
  if (p->tok.kind != KILN_TOK_IDENT)
    return kiln_text_expected(p, "a node kind");
  if (p->tok.len >= sizeof kname)
    return kiln_text_error_at(p, &kind_at, KILN_PARSE_ERROR, "unknown node kind '%.*s...'", 40,
                              p->tok.text);
  memcpy(kname, p->tok.text, p->tok.len);
  kname[p->tok.len] = '\0';
  if (!kiln_node_kind_from_name(kname, &kind))
    return kiln_text_error_at(p, &kind_at, KILN_PARSE_ERROR, "unknown node kind '%s'", kname);
  kiln_text_next(p);
  if (!kiln_text_expect_punct(p, '('))
    return false;
  kiln_value *inputs[MAX_INPUTS];
  uint32_t ni = 0;
  if (!kiln_text_is_punct(p, ')')) {
    for (;;) {
      if (ni == MAX_INPUTS)
        return kiln_text_error_at(p, &p->tok, KILN_PARSE_ERROR, "more than %d inputs", MAX_INPUTS);
      if (kiln_text_is_ident(p, "_")) {
        inputs[ni++] = NULL;
        kiln_text_next(p);
      } else {
        kiln_text_token vat;
        const char *vname;
        if (p->tok.kind != KILN_TOK_LOCAL)
          return kiln_text_expected(p, "a %name or '_'");
        if (!kiln_text_expect_name(p, '%', &vname, &vat) ||
            !lookup_value(g, f, vname, &vat, &inputs[ni]))
          return false;
        ni++;
      }
      if (!kiln_text_is_punct(p, ','))
        break;
      kiln_text_next(p);
    }
  }
  if (!kiln_text_expect_punct(p, ')'))
    return false;
  kiln_attr_desc *attrs;
  uint32_t na;
  if (!kiln_text_parse_attrs(p, &attrs, &na))
    return false;
  const char *loc = NULL;
  if (kiln_text_is_ident(p, "loc")) {
    kiln_text_next(p);
    if (!kiln_text_expect_string(p, &loc))
      return false;
  }
  kiln_node *n;
  kiln_status s = kiln_function_add_node_named(f, kind, loc, inputs, ni, attrs, na, nr, rnames, &n);
  if (s)
    return kiln_text_wrap_at(p, &node_at, s);
  for (uint32_t i = 0; i < nr && i < kiln_node_result_count(n); i++) {
    const kiln_type *got = kiln_value_type(kiln_node_result(n, i));
    if (!kiln_type_equal(got, &rtypes[i])) {
      char want[160], have[160];
      kiln_type_format(&rtypes[i], want, sizeof want);
      kiln_type_format(got, have, sizeof have);
      return kiln_text_error_at(p, &rat[i], KILN_PARSE_ERROR,
                                "%s result %%%s is written as %s but inference gives %s", kname,
                                rnames[i], want, have);
    }
  }
  return true;
}

static bool parse_func(gparser *g) {
  kiln_text_parser *p = &g->p;
  kiln_text_token at;
  const char *name;
  kiln_function *f;
  kiln_text_next(p);
  if (!kiln_text_expect_name(p, '@', &name, &at))
    return false;
  if (kiln_module_find_function(g->m, name))
    return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "duplicate function @%s", name);
  if (!kiln_text_wrap_at(p, &at, kiln_module_add_function(g->m, name, &f)) ||
      !kiln_text_expect_punct(p, '{'))
    return false;
  for (;;) {
    kiln_text_scratch_reset(p);
    if (kiln_text_is_punct(p, '}')) {
      kiln_text_next(p);
      return true;
    }
    bool ok;
    if (kiln_text_is_ident(p, "output"))
      ok = parse_output(g, f);
    else if (p->tok.kind == KILN_TOK_LOCAL)
      ok = parse_node(g, f);
    else
      ok = kiln_text_expected(p, "a node, 'output' or '}'");
    if (!ok)
      return false;
  }
}

static bool parse_module(gparser *g, const kiln_allocator *alloc) {
  kiln_text_parser *p = &g->p;
  kiln_text_token at;
  const char *name;
  if (!kiln_text_expect_ident(p, "module") || !kiln_text_expect_name(p, '@', &name, &at))
    return false;
  if (!kiln_text_wrap_at(p, &at, kiln_module_create(alloc, name, &g->m)))
    return false;
  for (;;) {
    kiln_text_scratch_reset(p);
    bool ok;
    if (p->tok.kind == KILN_TOK_EOF)
      return true;
    if (kiln_text_is_ident(p, "input"))
      ok = parse_input(g);
    else if (kiln_text_is_ident(p, "const"))
      ok = parse_const(g);
    else if (kiln_text_is_ident(p, "func"))
      ok = parse_func(g);
    else
      ok = kiln_text_expected(p, "'input', 'const' or 'func'");
    if (!ok)
      return false;
  }
}

kiln_status kiln_module_parse(const char *text, size_t len, const char *filename,
                              const kiln_allocator *alloc, kiln_module **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_module_parse: out is NULL");
  *out = NULL;
  if (!text && len)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_module_parse: text is NULL");
  gparser g = {0};
  kiln_text_parser_init(&g.p, text, len, filename);
  bool ok = parse_module(&g, alloc);
  kiln_text_parser_fini(&g.p);
  if (!ok) {
    kiln_module_destroy(g.m);
    if (!g.p.err)
      return kiln_status_make(KILN_INTERNAL, "%s: parse failed without a message", g.p.filename);
    return g.p.err;
  }
  *out = g.m;
  return NULL;
}

kiln_status kiln_module_load_text(const char *path, const kiln_allocator *alloc,
                                  kiln_module **out) {
  if (!out || !path)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_module_load_text: NULL argument");
  *out = NULL;
  void *text;
  size_t len;
  KILN_TRY(kiln_file_read(path, &text, &len));
  kiln_status s = kiln_module_parse(text, len, path, alloc, out);
  kiln_free(text);
  return s;
}
