/* ir/text/ir_print.c: the instruction IR as text. Weights, inputs and
 * outputs are declared at the top; an activation is declared by its first
 * alloc ("%t = alloc T @offset") and a view by its view instruction, so the
 * listing reads like the program. Buffers that no instruction can declare
 * (no alloc, or a view whose base comes later) are declared at the top too,
 * which keeps print(parse(text)) == text for any IR. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "text_internal.h"

#define HEADER (-1)
#define UNDECIDED (-2)

static const char *dir_name(kiln_operand_dir d) {
  return d == KILN_OUT ? "out" : d == KILN_INOUT ? "inout" : "in";
}

/* Which instruction declares each buffer (index), or HEADER. */
static void plan_declarations(const kiln_ir *ir, int64_t *decl) {
  uint32_t nb = kiln_ir_buffer_count(ir);
  for (uint32_t i = 0; i < nb; i++) {
    kiln_buffer_kind k = kiln_buffer_get_kind(kiln_ir_buffer(ir, i));
    decl[i] = (k == KILN_BUFFER_ACTIVATION || k == KILN_BUFFER_VIEW) ? UNDECIDED : HEADER;
  }
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++) {
    const kiln_instr *in = kiln_ir_instr(ir, i);
    kiln_instr_kind k = kiln_instr_get_kind(in);
    if (kiln_attrs_count(kiln_instr_attrs(in)) != 0)
      continue;
    uint32_t n = kiln_instr_operand_count(in);
    const kiln_buffer *b0 = n > 0 ? kiln_instr_operand(in, 0) : NULL;
    if (!b0 || kiln_instr_operand_dir(in, 0) != KILN_OUT)
      continue;
    uint32_t id0 = kiln_buffer_id(b0);
    if (id0 >= nb || decl[id0] != UNDECIDED)
      continue;
    if (k == KILN_INSTR_Alloc && n == 1 && kiln_buffer_get_kind(b0) == KILN_BUFFER_ACTIVATION) {
      decl[id0] = i;
    } else if (k == KILN_INSTR_View && n == 2 && kiln_buffer_get_kind(b0) == KILN_BUFFER_VIEW) {
      const kiln_buffer *base = kiln_instr_operand(in, 1);
      if (base && base == kiln_buffer_base(b0) && kiln_instr_operand_dir(in, 1) == KILN_IN &&
          kiln_buffer_id(base) < nb && decl[kiln_buffer_id(base)] != UNDECIDED)
        decl[id0] = i;
    }
  }
  for (uint32_t i = 0; i < nb; i++)
    if (decl[i] == UNDECIDED)
      decl[i] = HEADER;
  /* A view declared at the top needs its base declared there too. */
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t i = 0; i < nb; i++) {
      const kiln_buffer *b = kiln_ir_buffer(ir, i);
      if (decl[i] != HEADER || kiln_buffer_get_kind(b) != KILN_BUFFER_VIEW || !kiln_buffer_base(b))
        continue;
      uint32_t bid = kiln_buffer_id(kiln_buffer_base(b));
      if (bid < nb && decl[bid] != HEADER) {
        decl[bid] = HEADER;
        changed = true;
      }
    }
  }
}

static void put_view_tail(kiln_text_buf *b, const kiln_buffer *v) {
  const kiln_buffer *base = kiln_buffer_base(v);
  kiln_text_buf_puts(b, " = ");
  if (base)
    kiln_text_put_name(b, '%', kiln_buffer_name(base));
  else
    kiln_text_buf_puts(b, "_");
  kiln_text_buf_printf(b, " +%" PRIu64 " : ", kiln_buffer_offset(v));
  kiln_text_put_type(b, kiln_buffer_type(v));
}

static void put_header_buffer(kiln_text_buf *b, const kiln_buffer *buf) {
  static const char *const words[] = {"weight", "input", "output", "activation", "view"};
  kiln_buffer_kind k = kiln_buffer_get_kind(buf);
  kiln_text_buf_puts(b, words[k <= KILN_BUFFER_VIEW ? k : 0]);
  kiln_text_buf_puts(b, " ");
  kiln_text_put_name(b, '%', kiln_buffer_name(buf));
  if (k == KILN_BUFFER_VIEW) {
    put_view_tail(b, buf);
  } else {
    kiln_text_buf_puts(b, " : ");
    kiln_text_put_type(b, kiln_buffer_type(buf));
    if (k == KILN_BUFFER_WEIGHT && kiln_buffer_data(buf)) {
      kiln_text_buf_puts(b, " = ");
      kiln_text_put_data(b, kiln_buffer_type(buf), kiln_buffer_data(buf));
    } else if (k == KILN_BUFFER_ACTIVATION) {
      kiln_text_buf_printf(b, " @%" PRIu64, kiln_buffer_offset(buf));
    }
  }
  kiln_text_buf_puts(b, "\n");
}

static void put_instr(kiln_text_buf *b, const kiln_instr *in, const int64_t *decl, uint32_t nb,
                      uint32_t index) {
  kiln_instr_kind k = kiln_instr_get_kind(in);
  uint32_t n = kiln_instr_operand_count(in);
  const kiln_buffer *b0 = n > 0 ? kiln_instr_operand(in, 0) : NULL;
  kiln_text_buf_puts(b, "  ");
  if (b0 && kiln_buffer_id(b0) < nb && decl[kiln_buffer_id(b0)] == (int64_t)index) {
    kiln_text_put_name(b, '%', kiln_buffer_name(b0));
    if (k == KILN_INSTR_Alloc) {
      kiln_text_buf_puts(b, " = alloc ");
      kiln_text_put_type(b, kiln_buffer_type(b0));
      kiln_text_buf_printf(b, " @%" PRIu64 "\n", kiln_buffer_offset(b0));
    } else {
      kiln_text_buf_puts(b, " = view ");
      kiln_text_put_name(b, '%', kiln_buffer_name(kiln_buffer_base(b0)));
      kiln_text_buf_printf(b, " +%" PRIu64 " : ", kiln_buffer_offset(b0));
      kiln_text_put_type(b, kiln_buffer_type(b0));
      kiln_text_buf_puts(b, "\n");
    }
    return;
  }
  kiln_text_buf_puts(b, kiln_instr_kind_name(k));
  if (k == KILN_INSTR_Dealloc && n == 1 && b0 && kiln_instr_operand_dir(in, 0) == KILN_IN &&
      kiln_attrs_count(kiln_instr_attrs(in)) == 0) {
    kiln_text_buf_puts(b, " ");
    kiln_text_put_name(b, '%', kiln_buffer_name(b0));
    kiln_text_buf_puts(b, "\n");
    return;
  }
  for (uint32_t i = 0; i < n; i++) {
    const kiln_buffer *op = kiln_instr_operand(in, i);
    kiln_text_buf_printf(b, "%s %s ", i ? "," : "", dir_name(kiln_instr_operand_dir(in, i)));
    if (op)
      kiln_text_put_name(b, '%', kiln_buffer_name(op));
    else
      kiln_text_buf_puts(b, "_");
  }
  kiln_text_put_attrs(b, kiln_instr_attrs(in));
  kiln_text_buf_puts(b, "\n");
}

/* Header order: weights, inputs and outputs (by io index), then the
 * activations and views no instruction declares, each group by id. */
static void put_header(kiln_text_buf *b, const kiln_ir *ir, const int64_t *decl) {
  uint32_t nb = kiln_ir_buffer_count(ir);
  for (uint32_t i = 0; i < nb; i++)
    if (kiln_buffer_get_kind(kiln_ir_buffer(ir, i)) == KILN_BUFFER_WEIGHT)
      put_header_buffer(b, kiln_ir_buffer(ir, i));
  for (uint32_t i = 0; i < kiln_ir_input_count(ir); i++)
    if (kiln_ir_input(ir, i))
      put_header_buffer(b, kiln_ir_input(ir, i));
  for (uint32_t i = 0; i < kiln_ir_output_count(ir); i++)
    if (kiln_ir_output(ir, i))
      put_header_buffer(b, kiln_ir_output(ir, i));
  for (int pass = 0; pass < 2; pass++) {
    kiln_buffer_kind want = pass == 0 ? KILN_BUFFER_ACTIVATION : KILN_BUFFER_VIEW;
    for (uint32_t i = 0; i < nb; i++)
      if (decl[i] == HEADER && kiln_buffer_get_kind(kiln_ir_buffer(ir, i)) == want)
        put_header_buffer(b, kiln_ir_buffer(ir, i));
  }
}

kiln_status kiln_ir_print(const kiln_ir *ir, char **out_text) {
  if (!out_text)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_ir_print: out_text is NULL");
  *out_text = NULL;
  if (!ir)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_ir_print: ir is NULL");
  uint32_t nb = kiln_ir_buffer_count(ir);
  int64_t *decl = malloc((nb ? nb : 1) * sizeof *decl);
  if (!decl)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "printing ir @%s: out of memory", kiln_ir_name(ir));
  plan_declarations(ir, decl);
  kiln_text_buf b = {0};
  kiln_text_buf_puts(&b, "ir ");
  kiln_text_put_name(&b, '@', kiln_ir_name(ir));
  kiln_text_buf_printf(&b, " arena %" PRIu64 "\n", kiln_ir_activation_bytes(ir));
  put_header(&b, ir, decl);
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++)
    put_instr(&b, kiln_ir_instr(ir, i), decl, nb, i);
  free(decl);
  if (b.oom) {
    kiln_text_buf_free(&b);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "printing ir @%s: out of memory", kiln_ir_name(ir));
  }
  *out_text = b.p; /* malloc'd: kiln_free releases it */
  return NULL;
}
