/* ir/instr.c: the instruction IR: instruction kind names, buffers,
 * instructions, their accessors and the builder used by IRGen, IR passes
 * and the text parser. All memory lives in the IR's arena. */
#include <stdio.h>
#include <string.h>

#include "ir_internal.h"

/* Memory kinds print lower-case, as the text form writes them. A new row in
 * instr_kinds.def must be named here too. */
static const char *const memory_kind_names[KILN_INSTR_COMPUTE_FIRST] = {
    [KILN_INSTR_Alloc] = "alloc",
    [KILN_INSTR_Dealloc] = "dealloc",
    [KILN_INSTR_Copy] = "copy",
    [KILN_INSTR_View] = "view",
};
_Static_assert(KILN_INSTR_COMPUTE_FIRST == 4, "name every memory instruction kind above");

static const char *memory_name(int k) {
  return memory_kind_names[k];
}

int kiln_instr_kind_node(kiln_instr_kind k) {
  if ((int)k < KILN_INSTR_COMPUTE_FIRST || k >= KILN_INSTR_KIND_COUNT)
    return -1;
  return (int)k - KILN_INSTR_COMPUTE_FIRST;
}

const char *kiln_instr_kind_name(kiln_instr_kind k) {
  if ((int)k < 0 || k >= KILN_INSTR_KIND_COUNT)
    return "?";
  if (k < KILN_INSTR_COMPUTE_FIRST)
    return memory_name((int)k);
  return kiln_node_kind_name((kiln_node_kind)((int)k - KILN_INSTR_COMPUTE_FIRST));
}

bool kiln_instr_kind_from_name(const char *name, kiln_instr_kind *out) {
  if (!name)
    return false;
  for (int k = 0; k < KILN_INSTR_COMPUTE_FIRST; k++) {
    if (strcmp(memory_name(k), name) == 0) {
      if (out)
        *out = (kiln_instr_kind)k;
      return true;
    }
  }
  kiln_node_kind nk;
  if (!kiln_node_kind_from_name(name, &nk))
    return false;
  if (out)
    *out = kiln_instr_kind_for_node(nk);
  return true;
}

/* ---- building ---- */

kiln_status kiln_ir_create(const kiln_allocator *alloc, const char *name, kiln_ir **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_ir_create: no output");
  *out = NULL;
  kiln_arena *a = kiln_arena_create(alloc ? alloc : kiln_default_allocator());
  if (!a)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory creating IR '%s'",
                            name ? name : "ir");
  kiln_ir *ir = kiln_arena_alloc(a, sizeof *ir);
  const char *nm = ir ? kiln_arena_strdup(a, name ? name : "ir") : NULL;
  if (!nm) {
    kiln_arena_destroy(a);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory creating IR '%s'",
                            name ? name : "ir");
  }
  ir->arena = a;
  ir->name = nm;
  kiln_ir_names_init(&ir->names, a);
  *out = ir;
  return NULL;
}

void kiln_ir_destroy(kiln_ir *ir) {
  if (!ir)
    return;
  for (uint32_t i = 0; i < ir->n_buffers; i++)
    kiln_ir_blob_unref(ir->buffers[i]->blob);
  kiln_arena_destroy(ir->arena);
}

void kiln_buffer_release_data(const kiln_buffer *cb) {
  if (!cb || cb->kind != KILN_BUFFER_WEIGHT)
    return;
  /* The one change a backend makes to the IR it compiles: the buffer's
   * data pointer, which nothing else caches. */
  kiln_buffer *b = (kiln_buffer *)(uintptr_t)cb;
  kiln_ir_blob_unref(b->blob);
  b->blob = NULL;
  b->data = NULL;
}

kiln_buffer *kiln_ir_find_buffer(const kiln_ir *ir, const char *name) {
  return kiln_ir_names_find(&ir->names, name);
}

kiln_status kiln_ir_add_buffer(kiln_ir *ir, kiln_buffer_kind kind, const char *name,
                               const kiln_type *type, const void *data, uint32_t io_index,
                               kiln_buffer *base, uint64_t offset, kiln_buffer **out) {
  if (out)
    *out = NULL;
  if (!ir || !type)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "IR: adding buffer '%s': %s is NULL",
                            name ? name : "?", ir ? "type" : "IR");
  if ((int)kind < 0 || kind > KILN_BUFFER_VIEW)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "IR '%s': buffer '%s': invalid kind %d",
                            ir->name, name ? name : "?", (int)kind);
  if (name && (!name[0] || kiln_ir_find_buffer(ir, name)))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "IR '%s': buffer name '%s' is %s", ir->name,
                            name, name[0] ? "already taken" : "empty");
  if (kind == KILN_BUFFER_VIEW && (!base || base->ir != ir))
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "IR '%s': view '%s' needs a base buffer of the same IR", ir->name,
                            name ? name : "?");
  if (kind == KILN_BUFFER_WEIGHT && !data && kiln_type_bytes(type) > 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "IR '%s': weight '%s' has no data", ir->name,
                            name ? name : "?");
  char buf[24];
  if (!name) {
    /* automatic names: "b<id>", skipping taken ones */
    uint32_t k = ir->n_buffers;
    do
      snprintf(buf, sizeof buf, "b%u", k++);
    while (kiln_ir_find_buffer(ir, buf));
    name = buf;
  }
  kiln_buffer *b = kiln_arena_alloc(ir->arena, sizeof *b);
  const char *nm = b ? kiln_arena_strdup(ir->arena, name) : NULL;
  if (!nm ||
      !kiln_ir_grow(ir->arena, (void **)&ir->buffers, &ir->cap_buffers, ir->n_buffers + 1,
                    sizeof(kiln_buffer *)) ||
      !kiln_ir_names_reserve(&ir->names, 1))
    return kiln_status_make(KILN_OUT_OF_MEMORY, "IR '%s': out of memory adding buffer '%s'",
                            ir->name, name);
  b->ir = ir;
  b->kind = kind;
  b->name = nm;
  b->type = *type;
  b->data = kind == KILN_BUFFER_WEIGHT ? data : NULL;
  b->io_index = io_index;
  b->base = kind == KILN_BUFFER_VIEW ? base : NULL;
  b->offset = offset;
  b->id = ir->n_buffers;
  ir->buffers[ir->n_buffers++] = b;
  kiln_ir_names_insert(&ir->names, nm, b);
  if (out)
    *out = b;
  return NULL;
}

static kiln_status add_instr(kiln_ir *ir, kiln_instr_kind kind, kiln_buffer *const *operands,
                             const kiln_operand_dir *dirs, uint32_t n, const kiln_attrs *attrs,
                             kiln_instr *before, kiln_instr **out) {
  if (!ir)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "IR: adding an instruction: IR is NULL");
  const char *kn = kiln_instr_kind_name(kind);
  if ((int)kind < 0 || kind >= KILN_INSTR_KIND_COUNT)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "IR '%s': invalid instruction kind %d", ir->name,
                            (int)kind);
  if (n && (!operands || !dirs))
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "IR '%s': %s instruction: %u operands but no operand array", ir->name,
                            kn, n);
  for (uint32_t i = 0; i < n; i++) {
    if (operands[i] && operands[i]->ir != ir)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "IR '%s': %s instruction: operand %u '%s' belongs to another IR",
                              ir->name, kn, i, operands[i]->name);
    if ((int)dirs[i] < 0 || dirs[i] > KILN_INOUT)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "IR '%s': %s instruction: operand %u has invalid direction %d",
                              ir->name, kn, i, (int)dirs[i]);
  }
  if (before &&
      (before->ir != ir || before->index >= ir->n_instrs || ir->instrs[before->index] != before))
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "IR '%s': %s instruction: insertion point is not in this IR", ir->name,
                            kn);
  kiln_instr *in = kiln_arena_alloc(ir->arena, sizeof *in);
  kiln_buffer **ops = in ? kiln_arena_alloc(ir->arena, (size_t)n * sizeof *ops) : NULL;
  kiln_operand_dir *ds = ops ? kiln_arena_alloc(ir->arena, (size_t)n * sizeof *ds) : NULL;
  if (!ds || !kiln_ir_grow(ir->arena, (void **)&ir->instrs, &ir->cap_instrs, ir->n_instrs + 1,
                           sizeof(kiln_instr *)))
    return kiln_status_make(KILN_OUT_OF_MEMORY, "IR '%s': out of memory adding a %s instruction",
                            ir->name, kn);
  in->ir = ir;
  in->kind = kind;
  in->n = n;
  in->operands = ops;
  in->dirs = ds;
  in->attrs = attrs;
  for (uint32_t i = 0; i < n; i++) {
    ops[i] = operands[i];
    ds[i] = dirs[i];
  }
  uint32_t pos = before ? before->index : ir->n_instrs;
  memmove(&ir->instrs[pos + 1], &ir->instrs[pos],
          (size_t)(ir->n_instrs - pos) * sizeof(kiln_instr *));
  ir->instrs[pos] = in;
  ir->n_instrs++;
  for (uint32_t i = pos; i < ir->n_instrs; i++)
    ir->instrs[i]->index = i;
  if (out)
    *out = in;
  return NULL;
}

kiln_status kiln_ir_add_instr(kiln_ir *ir, kiln_instr_kind kind, kiln_buffer *const *operands,
                              const kiln_operand_dir *dirs, uint32_t n, const kiln_attr_desc *attrs,
                              uint32_t n_attrs, kiln_instr *before, kiln_instr **out) {
  if (out)
    *out = NULL;
  if (!ir)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "IR: adding an instruction: IR is NULL");
  kiln_attrs *as = NULL;
  if (n_attrs) {
    kiln_status s = kiln_ir_attrs_build(kiln_ir_arena_block, ir->arena, attrs, n_attrs, &as);
    if (s)
      return kiln_status_wrap(s, "IR '%s': %s instruction", ir->name, kiln_instr_kind_name(kind));
  }
  return add_instr(ir, kind, operands, dirs, n, as, before, out);
}

kiln_status kiln_ir_add_instr_attrs(kiln_ir *ir, kiln_instr_kind kind, kiln_buffer *const *operands,
                                    const kiln_operand_dir *dirs, uint32_t n,
                                    const kiln_attrs *attrs, kiln_instr *before, kiln_instr **out) {
  if (out)
    *out = NULL;
  if (!ir)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "IR: adding an instruction: IR is NULL");
  /* Copied, so the IR never depends on the lifetime of the caller's set. */
  kiln_attrs *as = NULL;
  kiln_status s = kiln_ir_attrs_copy(ir->arena, attrs, &as);
  if (s)
    return kiln_status_wrap(s, "IR '%s': %s instruction", ir->name, kiln_instr_kind_name(kind));
  return add_instr(ir, kind, operands, dirs, n, as, before, out);
}

void kiln_ir_remove_instr(kiln_ir *ir, kiln_instr *in) {
  if (!ir || !in || in->ir != ir || in->index >= ir->n_instrs || ir->instrs[in->index] != in)
    return;
  uint32_t pos = in->index;
  memmove(&ir->instrs[pos], &ir->instrs[pos + 1],
          (size_t)(ir->n_instrs - pos - 1) * sizeof(kiln_instr *));
  ir->n_instrs--;
  for (uint32_t i = pos; i < ir->n_instrs; i++)
    ir->instrs[i]->index = i;
  in->index = UINT32_MAX;
}

void kiln_instr_set_operand(kiln_instr *in, uint32_t i, kiln_buffer *b, kiln_operand_dir dir) {
  if (!in || i >= in->n)
    return;
  in->operands[i] = b;
  in->dirs[i] = dir;
}

void kiln_buffer_set_offset(kiln_buffer *b, uint64_t offset) {
  if (b)
    b->offset = offset;
}

void kiln_ir_set_activation_bytes(kiln_ir *ir, uint64_t bytes) {
  if (ir)
    ir->activation_bytes = bytes;
}

/* ---- reading ---- */

const char *kiln_ir_name(const kiln_ir *ir) {
  return ir->name;
}

uint32_t kiln_ir_buffer_count(const kiln_ir *ir) {
  return ir->n_buffers;
}

kiln_buffer *kiln_ir_buffer(const kiln_ir *ir, uint32_t i) {
  return i < ir->n_buffers ? ir->buffers[i] : NULL;
}

static uint32_t count_kind(const kiln_ir *ir, kiln_buffer_kind k) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < ir->n_buffers; i++)
    c += ir->buffers[i]->kind == k;
  return c;
}

static kiln_buffer *find_io(const kiln_ir *ir, kiln_buffer_kind k, uint32_t io) {
  for (uint32_t i = 0; i < ir->n_buffers; i++)
    if (ir->buffers[i]->kind == k && ir->buffers[i]->io_index == io)
      return ir->buffers[i];
  return NULL;
}

uint32_t kiln_ir_input_count(const kiln_ir *ir) {
  return count_kind(ir, KILN_BUFFER_INPUT);
}

kiln_buffer *kiln_ir_input(const kiln_ir *ir, uint32_t io_index) {
  return find_io(ir, KILN_BUFFER_INPUT, io_index);
}

uint32_t kiln_ir_output_count(const kiln_ir *ir) {
  return count_kind(ir, KILN_BUFFER_OUTPUT);
}

kiln_buffer *kiln_ir_output(const kiln_ir *ir, uint32_t io_index) {
  return find_io(ir, KILN_BUFFER_OUTPUT, io_index);
}

uint32_t kiln_ir_instr_count(const kiln_ir *ir) {
  return ir->n_instrs;
}

kiln_instr *kiln_ir_instr(const kiln_ir *ir, uint32_t i) {
  return i < ir->n_instrs ? ir->instrs[i] : NULL;
}

uint64_t kiln_ir_activation_bytes(const kiln_ir *ir) {
  return ir->activation_bytes;
}

uint64_t kiln_ir_weight_bytes(const kiln_ir *ir) {
  uint64_t t = 0;
  for (uint32_t i = 0; i < ir->n_buffers; i++)
    if (ir->buffers[i]->kind == KILN_BUFFER_WEIGHT)
      t += (uint64_t)kiln_type_bytes(&ir->buffers[i]->type);
  return t;
}

kiln_buffer_kind kiln_buffer_get_kind(const kiln_buffer *b) {
  return b->kind;
}

const char *kiln_buffer_name(const kiln_buffer *b) {
  return b->name;
}

const kiln_type *kiln_buffer_type(const kiln_buffer *b) {
  return &b->type;
}

const void *kiln_buffer_data(const kiln_buffer *b) {
  return b->data;
}

uint32_t kiln_buffer_io_index(const kiln_buffer *b) {
  return b->io_index;
}

uint64_t kiln_buffer_offset(const kiln_buffer *b) {
  return b->offset;
}

kiln_buffer *kiln_buffer_base(const kiln_buffer *b) {
  return b->base;
}

uint32_t kiln_buffer_id(const kiln_buffer *b) {
  return b->id;
}

kiln_instr_kind kiln_instr_get_kind(const kiln_instr *in) {
  return in->kind;
}

uint32_t kiln_instr_operand_count(const kiln_instr *in) {
  return in->n;
}

kiln_buffer *kiln_instr_operand(const kiln_instr *in, uint32_t i) {
  return i < in->n ? in->operands[i] : NULL;
}

kiln_operand_dir kiln_instr_operand_dir(const kiln_instr *in, uint32_t i) {
  return i < in->n ? in->dirs[i] : KILN_IN;
}

uint32_t kiln_instr_result_count(const kiln_instr *in) {
  uint32_t r = 0;
  while (r < in->n && in->dirs[r] != KILN_IN)
    r++;
  return r;
}

const kiln_attrs *kiln_instr_attrs(const kiln_instr *in) {
  return in->attrs;
}

const char *kiln_instr_name(const kiln_instr *in) {
  return in ? in->name : NULL;
}

kiln_status kiln_instr_set_name(kiln_instr *in, const char *name) {
  if (!name) {
    in->name = NULL;
    return NULL;
  }
  const char *nm = kiln_arena_strdup(in->ir->arena, name);
  if (!nm)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for the name of instruction %u",
                            in->index);
  in->name = nm;
  return NULL;
}

uint32_t kiln_instr_index(const kiln_instr *in) {
  return in->index;
}
