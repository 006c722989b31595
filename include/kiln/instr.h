/* kiln/instr.h: the instruction IR, the low-level form that backends compile.
 *
 * A kiln_ir is a flat list of instructions over typed buffers, made from one
 * graph function by IRGen (passes/) and annotated with a static memory plan.
 * Buffers are weights (read-only module constants), inputs and outputs
 * (caller memory, indexed like the executable's inputs and outputs),
 * activations (a byte offset in one activation arena of
 * kiln_ir_activation_bytes() bytes, 64-byte aligned), and views (an alias at
 * a byte offset inside another buffer).
 *
 * Ownership: a kiln_ir owns its buffers, instructions and attributes; all
 * pointers obtained from it stay valid until kiln_ir_destroy(). The weights
 * IRGen makes hold a share of the module constants' data (shared, never
 * copied; see kiln/ir.h), so such an IR outlives its module; weights added
 * with kiln_ir_add_buffer borrow their data from the caller, who keeps it
 * alive. During a plugin's compile and for the whole life of the executable
 * it returns, the core keeps the IR alive.
 *
 * Thread safety: reading is thread-safe; building and passes are not. */
#ifndef KILN_INSTR_H
#define KILN_INSTR_H

#include "kiln/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Memory instructions at the values instr_kinds.def writes out, then one
 * compute instruction per node kind, in node-kind order, from
 * KILN_INSTR_COMPUTE_FIRST. Memory instructions added after ABI 1.0 take
 * values from KILN_INSTR_MEMORY_RESERVED_FIRST up, above every compute
 * kind, so the compute kinds keep their values. */
typedef enum kiln_instr_kind {
#define KILN_INSTR(name, value, flags) KILN_INSTR_##name = (value),
#include "kiln/instr_kinds.def"
#undef KILN_INSTR
  KILN_INSTR_COMPUTE_FIRST = 4,
  KILN_INSTR_KIND_COUNT = KILN_INSTR_COMPUTE_FIRST + KILN_NODE_KIND_COUNT,
  KILN_INSTR_MEMORY_RESERVED_FIRST = 0x10000
} kiln_instr_kind;

static inline kiln_instr_kind kiln_instr_kind_for_node(kiln_node_kind k) {
  return (kiln_instr_kind)(KILN_INSTR_COMPUTE_FIRST + (int)k);
}
/* The node kind a compute instruction computes; -1 for memory instructions. */
int kiln_instr_kind_node(kiln_instr_kind k);
const char *kiln_instr_kind_name(kiln_instr_kind k); /* "alloc", ..., or the node kind's name */
bool kiln_instr_kind_from_name(const char *name, kiln_instr_kind *out);

typedef enum kiln_buffer_kind {
  KILN_BUFFER_WEIGHT = 0,
  KILN_BUFFER_INPUT = 1,
  KILN_BUFFER_OUTPUT = 2,
  KILN_BUFFER_ACTIVATION = 3,
  KILN_BUFFER_VIEW = 4,
} kiln_buffer_kind;

typedef enum kiln_operand_dir { KILN_IN = 0, KILN_OUT = 1, KILN_INOUT = 2 } kiln_operand_dir;

typedef struct kiln_ir kiln_ir;
typedef struct kiln_buffer kiln_buffer;
typedef struct kiln_instr kiln_instr;

/* --- building (IRGen, IR passes, the text parser) --- */
KILN_NODISCARD kiln_status kiln_ir_create(const kiln_allocator *alloc, const char *name,
                                          kiln_ir **out);
void kiln_ir_destroy(kiln_ir *ir); /* NULL accepted */
/* Add a buffer. data: weight bytes (borrowed, must outlive the IR), else
 * NULL. io_index: position among inputs or outputs. base/offset: views. */
KILN_NODISCARD kiln_status kiln_ir_add_buffer(kiln_ir *ir, kiln_buffer_kind kind, const char *name,
                                              const kiln_type *type, const void *data,
                                              uint32_t io_index, kiln_buffer *base, uint64_t offset,
                                              kiln_buffer **out);
/* Append an instruction (or insert before `before` when not NULL).
 * Operands and directions have n entries (NULL operand = absent optional
 * input). Attributes are copied. */
KILN_NODISCARD kiln_status kiln_ir_add_instr(kiln_ir *ir, kiln_instr_kind kind,
                                             kiln_buffer *const *operands,
                                             const kiln_operand_dir *dirs, uint32_t n,
                                             const kiln_attr_desc *attrs, uint32_t n_attrs,
                                             kiln_instr *before, kiln_instr **out);
/* Same, taking the attributes from an existing attribute set (shared). */
KILN_NODISCARD kiln_status kiln_ir_add_instr_attrs(kiln_ir *ir, kiln_instr_kind kind,
                                                   kiln_buffer *const *operands,
                                                   const kiln_operand_dir *dirs, uint32_t n,
                                                   const kiln_attrs *attrs, kiln_instr *before,
                                                   kiln_instr **out);
void kiln_ir_remove_instr(kiln_ir *ir, kiln_instr *in);
void kiln_instr_set_operand(kiln_instr *in, uint32_t i, kiln_buffer *b, kiln_operand_dir dir);
void kiln_buffer_set_offset(kiln_buffer *b, uint64_t offset);
void kiln_ir_set_activation_bytes(kiln_ir *ir, uint64_t bytes);

/* --- reading (plugins) --- */
const char *kiln_ir_name(const kiln_ir *ir);
uint32_t kiln_ir_buffer_count(const kiln_ir *ir);
kiln_buffer *kiln_ir_buffer(const kiln_ir *ir, uint32_t i);
uint32_t kiln_ir_input_count(const kiln_ir *ir);
kiln_buffer *kiln_ir_input(const kiln_ir *ir, uint32_t io_index);
uint32_t kiln_ir_output_count(const kiln_ir *ir);
kiln_buffer *kiln_ir_output(const kiln_ir *ir, uint32_t io_index);
uint32_t kiln_ir_instr_count(const kiln_ir *ir);
kiln_instr *kiln_ir_instr(const kiln_ir *ir, uint32_t i);
/* Size of the activation arena the memory plan needs (bytes). */
uint64_t kiln_ir_activation_bytes(const kiln_ir *ir);
/* Total bytes of all weights. */
uint64_t kiln_ir_weight_bytes(const kiln_ir *ir);

kiln_buffer_kind kiln_buffer_get_kind(const kiln_buffer *b);
const char *kiln_buffer_name(const kiln_buffer *b);
const kiln_type *kiln_buffer_type(const kiln_buffer *b);
const void *kiln_buffer_data(const kiln_buffer *b);  /* weights; NULL once released */
/* For a backend's compile: it will not read weight b's data again (it made
 * a packed form of its own, say), so the IR drops its share now and
 * kiln_buffer_data(b) is NULL from here on; the data itself goes when no
 * module or other IR shares it, so that a model's weights are not held
 * twice by an executable. Not for a buffer the backend reads at run time,
 * nor one another backend may be given later. Not a weight: no effect. */
void kiln_buffer_release_data(const kiln_buffer *b);
uint32_t kiln_buffer_io_index(const kiln_buffer *b); /* inputs / outputs */
uint64_t
kiln_buffer_offset(const kiln_buffer *b); /* activations: arena offset; views: offset in base */
kiln_buffer *kiln_buffer_base(const kiln_buffer *b); /* views */
uint32_t kiln_buffer_id(const kiln_buffer *b);       /* index in kiln_ir_buffer() order */

kiln_instr_kind kiln_instr_get_kind(const kiln_instr *in);
uint32_t kiln_instr_operand_count(const kiln_instr *in);
kiln_buffer *kiln_instr_operand(const kiln_instr *in, uint32_t i); /* NULL = absent */
kiln_operand_dir kiln_instr_operand_dir(const kiln_instr *in, uint32_t i);
/* Number of leading result operands (out/inout) of a compute instruction. */
uint32_t kiln_instr_result_count(const kiln_instr *in);
const kiln_attrs *kiln_instr_attrs(const kiln_instr *in);
uint32_t kiln_instr_index(const kiln_instr *in); /* position in the list */
/* The name of the graph node an instruction was generated from (IRGen
 * sets it: the ONNX node's name, or for a node made by lowering or fusion
 * the name of the node it came from, or the first result's name when the
 * node had none); NULL for memory instructions and instructions made
 * without one. Owned by the IR. */
const char *kiln_instr_name(const kiln_instr *in);
/* Set it (copied into the IR; NULL clears it). */
KILN_NODISCARD kiln_status kiln_instr_set_name(kiln_instr *in, const char *name);

/* Check operand counts, directions, types against inference, buffer
 * liveness (use after dealloc, use before alloc, double alloc) and views.
 * Reports every problem found. */
KILN_NODISCARD kiln_status kiln_ir_verify(const kiln_ir *ir);

/* Text form of the instruction IR (same conventions as the graph's). */
KILN_NODISCARD kiln_status kiln_ir_print(const kiln_ir *ir,
                                         char **out_text); /* free with kiln_free */
/* Parse; weight data written inline in the text is owned by the IR. */
KILN_NODISCARD kiln_status kiln_ir_parse(const char *text, size_t len, const char *filename,
                                         const kiln_allocator *alloc, kiln_ir **out);

/* IRGen: lower a verified graph function to instructions (passes/irgen.c).
 * The IR holds a share of the module's constant data. Memory plan: activations get
 * offsets by the planner (passes/) when run, sequential offsets otherwise. */
KILN_NODISCARD kiln_status kiln_irgen(const kiln_function *f, kiln_ir **out);

#ifdef __cplusplus
}
#endif
#endif
