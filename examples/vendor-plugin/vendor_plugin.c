/* examples/vendor-plugin/vendor_plugin.c: the "vendor" backend's plugin
 * entry: the descriptor, the per-node support answer, and compile / run /
 * destroy over the instruction IR. compile resolves every buffer to a root
 * (weight, input, output or the activation arena) plus a byte offset once,
 * so that run only adds offsets; run allocates its own arena, which keeps
 * concurrent runs of one executable apart. */
#include <stdlib.h>
#include <string.h>

#include <kiln/plugin.h>

#include "vendor.h"

#define VENDOR_NAME "vendor"

typedef struct vendor_loc {
  kiln_buffer_kind root; /* never VIEW: views are folded into their base */
  uint32_t io_index;
  uint64_t offset;
  const void *weight;
} vendor_loc;

typedef struct vendor_instr {
  kiln_instr_kind kind;
  uint32_t index, n_ops;
  uint32_t ops[VENDOR_MAX_OPS]; /* buffer ids; UINT32_MAX = absent */
  const kiln_type *type[VENDOR_MAX_OPS];
  const kiln_attrs *attrs;
} vendor_instr;

typedef struct vendor_exec {
  uint32_t n_buffers, n_instrs;
  uint64_t arena_bytes;
  vendor_loc *locs;
  vendor_instr *instrs;
} vendor_exec;

static bool vendor_supports_node(void *state, const kiln_node *node) {
  (void)state;
  return vendor_kind_supported(kiln_node_get_kind(node)) && vendor_node_ok(node);
}

static void vendor_destroy(void *executable) {
  vendor_exec *e = executable;
  if (!e)
    return;
  free(e->locs);
  free(e->instrs);
  free(e);
}

static kiln_status vendor_resolve(const kiln_ir *ir, kiln_buffer *b, vendor_loc *loc) {
  const char *name = kiln_buffer_name(b);
  uint64_t offset = 0;
  for (uint32_t hops = 0; kiln_buffer_get_kind(b) == KILN_BUFFER_VIEW; hops++) {
    offset += kiln_buffer_offset(b);
    b = kiln_buffer_base(b);
    if (!b || hops > kiln_ir_buffer_count(ir))
      return kiln_status_make(KILN_VERIFY_ERROR, VENDOR_NAME ": view %%%s has no base buffer",
                              name);
  }
  loc->root = kiln_buffer_get_kind(b);
  loc->io_index = kiln_buffer_io_index(b);
  loc->weight = kiln_buffer_data(b);
  loc->offset = offset + (loc->root == KILN_BUFFER_ACTIVATION ? kiln_buffer_offset(b) : 0);
  return NULL;
}

static kiln_status vendor_plan(const kiln_instr *in, vendor_instr *vi) {
  vi->kind = kiln_instr_get_kind(in);
  vi->index = kiln_instr_index(in);
  vi->attrs = kiln_instr_attrs(in);
  vi->n_ops = kiln_instr_operand_count(in);
  if (vi->n_ops > VENDOR_MAX_OPS)
    return kiln_status_make(KILN_UNIMPLEMENTED, VENDOR_NAME ": instruction %u (%s) has %u operands",
                            vi->index, kiln_instr_kind_name(vi->kind), vi->n_ops);
  int node = kiln_instr_kind_node(vi->kind);
  if (node >= 0 && !vendor_kind_supported((kiln_node_kind)node))
    return kiln_status_make(KILN_UNIMPLEMENTED, VENDOR_NAME ": instruction %u: no kernel for %s",
                            vi->index, kiln_instr_kind_name(vi->kind));
  for (uint32_t k = 0; k < vi->n_ops; k++) {
    const kiln_buffer *b = kiln_instr_operand(in, k);
    vi->ops[k] = b ? kiln_buffer_id(b) : UINT32_MAX;
    vi->type[k] = b ? kiln_buffer_type(b) : NULL;
  }
  if (vi->kind == KILN_INSTR_Copy &&
      (vi->n_ops != 2 || vi->ops[0] == UINT32_MAX || vi->ops[1] == UINT32_MAX))
    return kiln_status_make(KILN_VERIFY_ERROR, VENDOR_NAME ": copy %u needs two operands",
                            vi->index);
  return NULL;
}

static kiln_status vendor_compile(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                                  void **out) {
  (void)state, (void)opts;
  *out = NULL;
  vendor_exec *e = calloc(1, sizeof *e);
  if (!e)
    return kiln_status_make(KILN_OUT_OF_MEMORY, VENDOR_NAME ": no memory for an executable");
  e->n_buffers = kiln_ir_buffer_count(ir);
  e->n_instrs = kiln_ir_instr_count(ir);
  e->arena_bytes = kiln_ir_activation_bytes(ir);
  e->locs = calloc(e->n_buffers + 1, sizeof *e->locs);
  e->instrs = calloc(e->n_instrs + 1, sizeof *e->instrs);
  kiln_status s = NULL;
  if (!e->locs || !e->instrs)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, VENDOR_NAME ": no memory to plan %s",
                         kiln_ir_name(ir));
  for (uint32_t i = 0; !s && i < e->n_buffers; i++)
    s = vendor_resolve(ir, kiln_ir_buffer(ir, i), &e->locs[i]);
  for (uint32_t i = 0; !s && i < e->n_instrs; i++)
    s = vendor_plan(kiln_ir_instr(ir, i), &e->instrs[i]);
  if (s) {
    vendor_destroy(e);
    return kiln_status_wrap(s, VENDOR_NAME ": compiling %s", kiln_ir_name(ir));
  }
  *out = e;
  return NULL;
}

static void *vendor_addr(const vendor_exec *e, uint32_t id, unsigned char *arena,
                         const void *const *inputs, void *const *outputs) {
  if (id == UINT32_MAX)
    return NULL;
  const vendor_loc *l = &e->locs[id];
  unsigned char *base = NULL;
  switch (l->root) {
  /* Weights are read-only; kernels never write through an input operand. */
  case KILN_BUFFER_WEIGHT:
    base = (unsigned char *)(uintptr_t)l->weight;
    break;
  case KILN_BUFFER_INPUT:
    base = (unsigned char *)(uintptr_t)inputs[l->io_index];
    break;
  case KILN_BUFFER_OUTPUT:
    base = outputs[l->io_index];
    break;
  default:
    base = arena;
    break;
  }
  return base ? base + l->offset : NULL;
}

static kiln_status vendor_run(void *executable, const void *const *inputs, void *const *outputs) {
  const vendor_exec *e = executable;
  unsigned char *arena = NULL;
  if (e->arena_bytes) {
    arena = aligned_alloc(64, (e->arena_bytes + 63) / 64 * 64);
    if (!arena)
      return kiln_status_make(KILN_OUT_OF_MEMORY, VENDOR_NAME ": arena of %llu bytes",
                              (unsigned long long)e->arena_bytes);
  }
  kiln_status s = NULL;
  for (uint32_t i = 0; i < e->n_instrs && !s; i++) {
    const vendor_instr *vi = &e->instrs[i];
    if (vi->kind == KILN_INSTR_Alloc || vi->kind == KILN_INSTR_Dealloc ||
        vi->kind == KILN_INSTR_View)
      continue; /* the memory plan already placed every buffer */
    if (vi->kind == KILN_INSTR_Copy) {
      void *dst = vendor_addr(e, vi->ops[0], arena, inputs, outputs);
      const void *src = vendor_addr(e, vi->ops[1], arena, inputs, outputs);
      if (dst != src)
        memmove(dst, src, (size_t)kiln_type_bytes(vi->type[0]));
      continue;
    }
    vendor_step st = {.kind = (kiln_node_kind)kiln_instr_kind_node(vi->kind),
                      .index = vi->index,
                      .attrs = vi->attrs,
                      .n_ops = vi->n_ops};
    for (uint32_t k = 0; k < vi->n_ops; k++) {
      st.ptr[k] = vendor_addr(e, vi->ops[k], arena, inputs, outputs);
      st.type[k] = vi->type[k];
    }
    s = vendor_run_step(&st);
  }
  free(arena);
  return s;
}

static kiln_status vendor_device_info(void *state, uint32_t index, kiln_device_info *out) {
  KILN_TRY(kiln_plugin_device_check(VENDOR_NAME, index, kiln_plugin_one_device(state), out));
  strcpy(out->name, "vendor reference accelerator (host CPU)");
  strcpy(out->kind, "accelerator");
  return NULL;
}

/* The descriptor; KILN_PLUGIN_DEFINE exports the entry point that hands
 * it to the core. */
static const kiln_plugin vendor_plugin = {
    KILN_PLUGIN_HEADER,
    .name = VENDOR_NAME,
    .version = "0.1.0",
    .description = "example out-of-tree backend: f32 Conv, MatMul, Gemm, Relu and Add in plain C; "
                   "run it in a list with a backend for the rest (vendor+cpu)",
    .supports_node = vendor_supports_node,
    .compile = vendor_compile,
    .run = vendor_run,
    .destroy = vendor_destroy,
    .device_count = kiln_plugin_one_device,
    .device_info = vendor_device_info,
};
KILN_PLUGIN_DEFINE(vendor_plugin);
