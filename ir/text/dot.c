/* ir/text/dot.c: Graphviz output, one digraph per function. Module inputs,
 * constants, nodes and function outputs get distinct shapes; edges run from
 * each producer to its users, labelled with the input position when a node
 * has several inputs. Only the module values a function uses appear in it.
 * The styled form fills nodes with colors a caller picks (the tool's
 * backend coloring) and adds the caller's DOT text, a legend, to each
 * graph. */
#include <stdlib.h>
#include <string.h>

#include "text_internal.h"

typedef struct ptr_index {
  const void *ptr;
  uint32_t index;
} ptr_index;

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const ptr_index *)a)->ptr;
  uintptr_t y = (uintptr_t)((const ptr_index *)b)->ptr;
  return x < y ? -1 : x > y;
}

static int64_t find_index(const ptr_index *tab, uint32_t n, const void *ptr) {
  ptr_index key = {ptr, 0};
  const ptr_index *hit = bsearch(&key, tab, n, sizeof key, cmp_ptr);
  return hit ? (int64_t)hit->index : -1;
}

/* DOT string contents: quotes and backslashes escaped. */
static void put_dot_escaped(kiln_text_buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '\n') {
      kiln_text_buf_puts(b, "\\n");
      continue;
    }
    if (*s == '"' || *s == '\\')
      kiln_text_buf_putn(b, "\\", 1);
    kiln_text_buf_putn(b, s, 1);
  }
}

static void put_type_label(kiln_text_buf *b, const kiln_type *t) {
  char ty[160];
  kiln_type_format(t, ty, sizeof ty);
  put_dot_escaped(b, ty);
}

/* The DOT id of a value used in f: "nK" (node K), "iK" (input), "cK". */
static void put_value_id(kiln_text_buf *b, const kiln_value *v, const ptr_index *nodes,
                         uint32_t n_nodes, const ptr_index *mods, uint32_t n_mods) {
  if (kiln_value_get_kind(v) == KILN_VALUE_RESULT) {
    kiln_node *prod = kiln_value_producer(v, NULL);
    kiln_text_buf_printf(b, "n%lld", (long long)find_index(nodes, n_nodes, prod));
  } else {
    kiln_text_buf_printf(b, "%c%lld", kiln_value_get_kind(v) == KILN_VALUE_INPUT ? 'i' : 'c',
                         (long long)find_index(mods, n_mods, v));
  }
}

static void declare_module_value(kiln_text_buf *b, const kiln_value *v, int64_t idx, bool *seen) {
  if (idx < 0 || seen[idx])
    return;
  seen[idx] = true;
  bool input = kiln_value_get_kind(v) == KILN_VALUE_INPUT;
  kiln_text_buf_printf(b, "  %c%lld [shape=%s, label=\"%s %%", input ? 'i' : 'c', (long long)idx,
                       input ? "invhouse" : "cylinder", input ? "input" : "const");
  put_dot_escaped(b, kiln_value_name(v));
  kiln_text_buf_puts(b, "\\n");
  put_type_label(b, kiln_value_type(v));
  kiln_text_buf_puts(b, "\"];\n");
}

/* What the styled writer adds; all NULL for the plain one. */
typedef struct dot_style {
  const char *(*node_color)(void *user, const kiln_node *n);
  void *user;
  const char *extra;
} dot_style;

static bool write_function(kiln_text_buf *b, const kiln_module *m, const kiln_function *f,
                           const dot_style *st) {
  uint32_t nn = kiln_function_node_count(f);
  uint32_t ni = kiln_module_input_count(m), nc = kiln_module_constant_count(m);
  ptr_index *nodes = malloc((nn + 1) * sizeof *nodes);
  ptr_index *mods = malloc((ni + nc + 1) * sizeof *mods);
  bool *seen = calloc(ni + nc + 1, sizeof *seen);
  if (!nodes || !mods || !seen) {
    free(nodes), free(mods), free(seen);
    return false;
  }
  for (uint32_t i = 0; i < nn; i++)
    nodes[i] = (ptr_index){kiln_function_node(f, i), i};
  /* Inputs and constants share one table; constants are numbered after
   * inputs so that ids never collide. */
  for (uint32_t i = 0; i < ni; i++)
    mods[i] = (ptr_index){kiln_module_input(m, i), i};
  for (uint32_t i = 0; i < nc; i++)
    mods[ni + i] = (ptr_index){kiln_module_constant(m, i), ni + i};
  qsort(nodes, nn, sizeof *nodes, cmp_ptr);
  qsort(mods, ni + nc, sizeof *mods, cmp_ptr);

  kiln_text_buf_puts(b, "digraph \"");
  put_dot_escaped(b, kiln_function_name(f));
  kiln_text_buf_puts(b, "\" {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n");
  for (uint32_t i = 0; i < nn; i++) {
    const kiln_node *n = kiln_function_node(f, i);
    for (uint32_t k = 0; k < kiln_node_input_count(n); k++) {
      const kiln_value *v = kiln_node_input(n, k);
      if (v && kiln_value_get_kind(v) != KILN_VALUE_RESULT)
        declare_module_value(b, v, find_index(mods, ni + nc, v), seen);
    }
    kiln_text_buf_printf(b, "  n%u [shape=box, label=\"%s", i,
                         kiln_node_kind_name(kiln_node_get_kind(n)));
    for (uint32_t r = 0; r < kiln_node_result_count(n); r++) {
      kiln_text_buf_puts(b, r ? ", " : "\\n");
      put_type_label(b, kiln_value_type(kiln_node_result(n, r)));
    }
    kiln_text_buf_puts(b, "\"");
    const char *color = st->node_color ? st->node_color(st->user, n) : NULL;
    if (color && *color) {
      kiln_text_buf_puts(b, ", style=filled, fillcolor=\"");
      put_dot_escaped(b, color);
      kiln_text_buf_puts(b, "\"");
    }
    kiln_text_buf_puts(b, "];\n");
    uint32_t nin = kiln_node_input_count(n);
    for (uint32_t k = 0; k < nin; k++) {
      const kiln_value *v = kiln_node_input(n, k);
      if (!v)
        continue;
      kiln_text_buf_puts(b, "  ");
      put_value_id(b, v, nodes, nn, mods, ni + nc);
      kiln_text_buf_printf(b, " -> n%u", i);
      if (nin > 1)
        kiln_text_buf_printf(b, " [label=\"%u\"]", k);
      kiln_text_buf_puts(b, ";\n");
    }
  }
  for (uint32_t i = 0; i < kiln_function_output_count(f); i++) {
    const kiln_value *v = kiln_function_output_value(f, i);
    if (kiln_value_get_kind(v) != KILN_VALUE_RESULT)
      declare_module_value(b, v, find_index(mods, ni + nc, v), seen);
    kiln_text_buf_printf(b, "  o%u [shape=house, label=\"output %%", i);
    put_dot_escaped(b, kiln_function_output_name(f, i));
    kiln_text_buf_puts(b, "\"];\n  ");
    put_value_id(b, v, nodes, nn, mods, ni + nc);
    kiln_text_buf_printf(b, " -> o%u;\n", i);
  }
  if (st->extra)
    kiln_text_buf_puts(b, st->extra);
  kiln_text_buf_puts(b, "}\n");
  free(nodes), free(mods), free(seen);
  return true;
}

static kiln_status write_dot(const kiln_module *m, FILE *f, const dot_style *st,
                             const char *fn_name) {
  if (!m || !f)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: NULL argument", fn_name);
  kiln_text_buf b = {0};
  bool ok = true;
  for (uint32_t i = 0; ok && i < kiln_module_function_count(m); i++)
    ok = write_function(&b, m, kiln_module_function(m, i), st);
  if (!ok || b.oom) {
    kiln_text_buf_free(&b);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "writing DOT of module @%s: out of memory",
                            kiln_module_name(m));
  }
  size_t len = b.len;
  size_t wrote = len ? fwrite(b.p, 1, len, f) : 0;
  kiln_text_buf_free(&b);
  if (wrote != len || fflush(f) != 0)
    return kiln_status_make(KILN_IO_ERROR, "writing DOT of module @%s: write failed",
                            kiln_module_name(m));
  return NULL;
}

kiln_status kiln_module_write_dot(const kiln_module *m, FILE *f) {
  const dot_style none = {NULL, NULL, NULL};
  return write_dot(m, f, &none, "kiln_module_write_dot");
}

kiln_status kiln_module_write_dot_styled(const kiln_module *m, FILE *f,
                                         const char *(*node_color)(void *user, const kiln_node *n),
                                         void *user, const char *extra) {
  const dot_style st = {node_color, user, extra};
  return write_dot(m, f, &st, "kiln_module_write_dot_styled");
}
