/* ir/ir_internal.h (private): the layouts behind the opaque graph and
 * instruction IR handles, shared by the files of ir/ and passes/irgen.c.
 * Nothing here is part of the public contract. */
#ifndef KILN_IR_INTERNAL_H
#define KILN_IR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "kiln/instr.h"
#include "kiln/ir.h"

/* ---- attributes ---- */
struct kiln_attr {
  const char *name;
  kiln_attr_kind kind;
  int64_t i;
  double f;
  const char *s;
  const int64_t *ints; /* never NULL for INTS (empty lists point at a dummy) */
  const double *floats;
  uint32_t len;
  kiln_elem type;
};

struct kiln_attrs {
  size_t block_size; /* bytes of the single block holding the whole set */
  uint32_t n;
  kiln_attr items[];
};

/* Build a set (validated, sorted) into one block obtained from `get`
 * (an arena or an allocator); `what` names the owner in messages. */
typedef void *(*kiln_ir_block_fn)(void *ctx, size_t size);
kiln_status kiln_ir_attrs_build(kiln_ir_block_fn get, void *ctx, const kiln_attr_desc *descs,
                                uint32_t n, kiln_attrs **out);
/* Deep copy of an existing set into an arena (NULL stays NULL). */
kiln_status kiln_ir_attrs_copy(kiln_arena *arena, const kiln_attrs *src, kiln_attrs **out);
void *kiln_ir_arena_block(void *arena, size_t size);

/* ---- name table: string -> pointer, open addressing in an arena ---- */
typedef struct kiln_ir_names {
  kiln_arena *arena;
  struct kiln_ir_name_slot *slots;
  uint32_t cap, live, used; /* used counts tombstones too */
} kiln_ir_names;

void kiln_ir_names_init(kiln_ir_names *t, kiln_arena *arena);
void *kiln_ir_names_find(const kiln_ir_names *t, const char *name);
/* Make room for `extra` more insertions so that they cannot fail. */
bool kiln_ir_names_reserve(kiln_ir_names *t, uint32_t extra);
/* Insert (name must be absent and room reserved); the name is not copied. */
void kiln_ir_names_insert(kiln_ir_names *t, const char *name, void *p);
void kiln_ir_names_remove(kiln_ir_names *t, const char *name);

/* ---- string builder on malloc, for multi-line messages ---- */
typedef struct kiln_ir_sb {
  char *buf;
  size_t len, cap;
  bool failed;
  uint32_t lines;
} kiln_ir_sb;
void kiln_ir_sb_line(kiln_ir_sb *sb, const char *fmt, ...) KILN_PRINTF(2, 3);
/* NULL when no line was added; else a status of `code` with the lines. */
kiln_status kiln_ir_sb_finish(kiln_ir_sb *sb, kiln_code code);

/* ---- graph IR ---- */
/* The shared, immutable storage of one constant's data (ir/module.c):
 * a holder takes a share with kiln_ir_blob_ref and drops it with
 * kiln_ir_blob_unref (the last one frees it). NULL is accepted. */
typedef struct kiln_blob kiln_blob;
kiln_blob *kiln_ir_blob_ref(kiln_blob *b);
void kiln_ir_blob_unref(kiln_blob *b);

struct kiln_value {
  kiln_value_kind kind;
  const char *name;
  kiln_type type;
  const void *data;
  kiln_blob *blob; /* constants: the share of data held (NULL for empty data) */
  kiln_module *module;
  kiln_node *producer;
  uint32_t result_index;
  uint32_t uses;
  uint32_t id; /* dense per module, for side tables in passes */
};

struct kiln_node {
  kiln_node_kind kind;
  const char *name; /* given name or NULL */
  kiln_function *function;
  uint32_t pos; /* index in the function's node list */
  bool removed;
  uint32_t n_inputs, n_results;
  kiln_value **inputs;
  kiln_value *results; /* n_results values */
  kiln_attrs *attrs;
};

struct kiln_function {
  kiln_module *module;
  const char *name;
  kiln_node **nodes;
  uint32_t n_nodes, cap_nodes;
  kiln_node *insert_point;
  const char **out_names;
  kiln_value **out_values;
  uint32_t n_outputs, cap_outputs;
};

struct kiln_module {
  kiln_arena *arena;
  const kiln_allocator *alloc;
  const char *name;
  kiln_value **inputs;
  uint32_t n_inputs, cap_inputs;
  kiln_value **constants;
  uint32_t n_constants, cap_constants;
  kiln_function **functions;
  uint32_t n_functions, cap_functions;
  kiln_ir_names names;
  uint32_t next_auto; /* next candidate automatic name */
  uint32_t n_values;  /* ids handed out so far */
  bool release_constants;
};

/* Grow an arena array of pointers-or-structs to hold at least `need`. */
bool kiln_ir_grow(kiln_arena *a, void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* Insert a node without inference or order checks: the clone path and the
 * builder share it. inputs may hold values of m not yet checked; types has
 * n_results entries; names may be NULL. */
kiln_status kiln_ir_node_insert(kiln_function *f, kiln_node_kind kind, const char *name,
                                kiln_value *const *inputs, uint32_t n_inputs, kiln_attrs *attrs,
                                uint32_t n_results, const kiln_type *types,
                                const char *const *result_names, kiln_node **out);
/* "node 'x' (Kind)" or "node #3 (Kind)" into buf. */
void kiln_ir_node_label(const kiln_node *n, char *buf, size_t size);

/* ---- instruction IR ---- */
struct kiln_buffer {
  kiln_ir *ir;
  kiln_buffer_kind kind;
  const char *name;
  kiln_type type;
  const void *data;
  kiln_blob *blob; /* weights made from a module constant: the IR's share */
  uint32_t io_index;
  kiln_buffer *base;
  uint64_t offset;
  uint32_t id;
};

struct kiln_instr {
  kiln_ir *ir;
  kiln_instr_kind kind;
  uint32_t n;
  kiln_buffer **operands;
  kiln_operand_dir *dirs;
  const kiln_attrs *attrs;
  uint32_t index;
  const char *name; /* the graph node it came from (kiln_instr_name); NULL = none */
};

struct kiln_ir {
  kiln_arena *arena;
  const char *name;
  kiln_buffer **buffers;
  uint32_t n_buffers, cap_buffers;
  kiln_instr **instrs;
  uint32_t n_instrs, cap_instrs;
  uint64_t activation_bytes;
  kiln_ir_names names;
};

kiln_buffer *kiln_ir_find_buffer(const kiln_ir *ir, const char *name);

#endif
