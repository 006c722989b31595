/* ir/text/print.c: the graph module as .kir text. The output is canonical:
 * parsing it and printing again gives the same bytes, which is what pass
 * tests compare. */
#include <stdlib.h>
#include <string.h>

#include "text_internal.h"

static void put_value_decl(kiln_text_buf *b, const kiln_value *v) {
  kiln_text_put_name(b, '%', kiln_value_name(v));
  kiln_text_buf_puts(b, " : ");
  kiln_text_put_type(b, kiln_value_type(v));
}

static void put_node(kiln_text_buf *b, const kiln_node *n) {
  kiln_text_buf_puts(b, "  ");
  uint32_t nr = kiln_node_result_count(n);
  for (uint32_t i = 0; i < nr; i++) {
    if (i)
      kiln_text_buf_puts(b, ", ");
    put_value_decl(b, kiln_node_result(n, i));
  }
  kiln_text_buf_puts(b, " = ");
  kiln_text_buf_puts(b, kiln_node_kind_name(kiln_node_get_kind(n)));
  kiln_text_buf_puts(b, "(");
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
    const kiln_value *in = kiln_node_input(n, i);
    if (i)
      kiln_text_buf_puts(b, ", ");
    if (in)
      kiln_text_put_name(b, '%', kiln_value_name(in));
    else
      kiln_text_buf_puts(b, "_");
  }
  kiln_text_buf_puts(b, ")");
  kiln_text_put_attrs(b, kiln_node_attrs(n));
  /* kiln_node_name falls back to the first result's name, so a name equal
   * to it is the same as none and is left out. */
  const char *name = kiln_node_name(n);
  if (name && nr > 0 && strcmp(name, kiln_value_name(kiln_node_result(n, 0))) != 0) {
    kiln_text_buf_puts(b, " loc ");
    kiln_text_put_string(b, name);
  }
  kiln_text_buf_puts(b, "\n");
}

static void put_function(kiln_text_buf *b, const kiln_function *f) {
  kiln_text_buf_puts(b, "func ");
  kiln_text_put_name(b, '@', kiln_function_name(f));
  kiln_text_buf_puts(b, " {\n");
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++)
    put_node(b, kiln_function_node(f, i));
  for (uint32_t i = 0; i < kiln_function_output_count(f); i++) {
    kiln_text_buf_puts(b, "  output ");
    kiln_text_put_name(b, '%', kiln_function_output_name(f, i));
    kiln_text_buf_puts(b, " = ");
    kiln_text_put_name(b, '%', kiln_value_name(kiln_function_output_value(f, i)));
    kiln_text_buf_puts(b, "\n");
  }
  kiln_text_buf_puts(b, "}\n");
}

kiln_status kiln_module_print(const kiln_module *m, char **out_text) {
  if (!out_text)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_module_print: out_text is NULL");
  *out_text = NULL;
  if (!m)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_module_print: module is NULL");
  kiln_text_buf b = {0};
  kiln_text_buf_puts(&b, "module ");
  kiln_text_put_name(&b, '@', kiln_module_name(m));
  kiln_text_buf_puts(&b, "\n");
  for (uint32_t i = 0; i < kiln_module_input_count(m); i++) {
    kiln_text_buf_puts(&b, "input ");
    put_value_decl(&b, kiln_module_input(m, i));
    kiln_text_buf_puts(&b, "\n");
  }
  for (uint32_t i = 0; i < kiln_module_constant_count(m); i++) {
    const kiln_value *c = kiln_module_constant(m, i);
    kiln_text_buf_puts(&b, "const ");
    put_value_decl(&b, c);
    kiln_text_buf_puts(&b, " = ");
    kiln_text_put_data(&b, kiln_value_type(c), kiln_value_data(c));
    kiln_text_buf_puts(&b, "\n");
  }
  for (uint32_t i = 0; i < kiln_module_function_count(m); i++)
    put_function(&b, kiln_module_function(m, i));
  if (b.oom) {
    kiln_text_buf_free(&b);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "printing module @%s: out of memory",
                            kiln_module_name(m));
  }
  /* The caller frees through the module's allocator, which is told the
   * size: hand out exactly strlen + 1 bytes. */
  const kiln_allocator *a = kiln_module_allocator(m);
  char *s = a->alloc(a->user, b.len + 1);
  if (!s) {
    kiln_text_buf_free(&b);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "printing module @%s: out of memory",
                            kiln_module_name(m));
  }
  memcpy(s, b.p ? b.p : "", b.len + 1);
  kiln_text_buf_free(&b);
  *out_text = s;
  return NULL;
}

void kiln_module_free_string(const kiln_module *m, char *s) {
  if (!s)
    return;
  const kiln_allocator *a = m ? kiln_module_allocator(m) : kiln_default_allocator();
  a->free(a->user, s, strlen(s) + 1);
}
