/* kiln/ir.h: the graph IR. Building, reading, verifying and printing modules.
 *
 * A kiln_module owns everything reachable from it: its inputs and constants
 * (module-level values), its functions, their nodes, results, attributes and
 * names. All of it lives in the module's arena and dies with
 * kiln_module_destroy(); pointers returned by accessors stay valid until then
 * (or until the node holding them is removed by a pass).
 *
 * Constant data is immutable and shared: each constant's bytes live in one
 * reference-counted block (64-byte aligned) that clones, the modules
 * kiln_module_add_constant_from fills and executables share instead of
 * copying; the block is freed (through the module's allocator, which must
 * outlive it) when the last holder goes. Nothing writes a constant's data
 * after it is added: a pass that would change one makes a new constant.
 *
 * A function is a DAG of nodes in topological order: a node may only use
 * module values and results of nodes before it. Its outputs are named
 * bindings of values ("output %y = %a" in the text form).
 *
 *   kiln_module *m; kiln_value *x, *r; kiln_node *n; kiln_function *f;
 *   kiln_type t; int64_t dims[] = {2, 3};
 *   KILN_TRY(kiln_type_make(KILN_F32, 2, dims, &t));
 *   KILN_TRY(kiln_module_create(NULL, "net", &m));
 *   KILN_TRY(kiln_module_add_input(m, "x", &t, &x));
 *   KILN_TRY(kiln_module_add_function(m, "main", &f));
 *   KILN_TRY(kiln_function_add_node(f, KILN_NODE_Relu, NULL, &x, 1, NULL, 0, 0, &n));
 *   KILN_TRY(kiln_function_add_output(f, "y", kiln_node_result(n, 0)));
 *
 * Thread safety: a module may be read from several threads at once; building
 * or changing it needs exclusive access. */
#ifndef KILN_IR_H
#define KILN_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/status.h"
#include "kiln/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Node kinds, from node_kinds.def. The numbering is part of the ABI. */
typedef enum kiln_node_kind {
#define KILN_NODE(name, min_in, max_in, min_out, max_out, flags) KILN_NODE_##name,
#include "kiln/node_kinds.def"
#undef KILN_NODE
  KILN_NODE_KIND_COUNT
} kiln_node_kind;

/* Flags of a node kind (see node_kinds.def). */
enum {
  KILN_NK_UNARY = 1u << 0,
  KILN_NK_BINARY = 1u << 1,
  KILN_NK_VARIADIC = 1u << 2,
  KILN_NK_PRIMITIVE = 1u << 3,
};

typedef struct kiln_node_kind_info {
  const char *name;
  uint32_t min_inputs, max_inputs, min_results, max_results, flags;
} kiln_node_kind_info;

/* Static table entry; NULL for an out-of-range kind. */
const kiln_node_kind_info *kiln_node_kind_get_info(kiln_node_kind k);
const char *kiln_node_kind_name(kiln_node_kind k); /* "?" if invalid */
bool kiln_node_kind_from_name(const char *name, kiln_node_kind *out);

/* What a kind is, from node_schema.def (see its top comment for the meaning
 * of each column). Every function below reads static tables: nothing is
 * allocated, strings are static and live as long as the process, and an
 * out-of-range kind gets the stated fallback. The enumerator values are
 * part of the ABI: new families and classes are appended. */
typedef enum kiln_node_family {
  KILN_FAMILY_ELEMENTWISE = 0,
  KILN_FAMILY_REDUCE = 1,
  KILN_FAMILY_NORM = 2,
  KILN_FAMILY_LINALG = 3,
  KILN_FAMILY_CONV = 4,
  KILN_FAMILY_POOL = 5,
  KILN_FAMILY_MOVEMENT = 6,
  KILN_FAMILY_INDEX = 7,
  KILN_FAMILY_GENERATOR = 8,
  KILN_FAMILY_RESIZE = 9,
  KILN_FAMILY_RNN = 10,
  KILN_FAMILY_QUANT = 11,
  KILN_FAMILY_LOSS = 12,
  KILN_FAMILY_COUNT
} kiln_node_family;

/* KILN_PRIMITIVE_CORE: in the primitive set every lowering ends in;
 * KILN_PRIMITIVE_KEPT: has no lowering, so every backend runs it too. */
typedef enum kiln_primitive {
  KILN_PRIMITIVE_NO = 0,
  KILN_PRIMITIVE_CORE = 1,
  KILN_PRIMITIVE_KEPT = 2,
} kiln_primitive;

/* Element classes, as bits of a mask. */
enum {
  KILN_ELEM_CLASS_FLOAT = 1u << 0,    /* f64 f32 f16 bf16 */
  KILN_ELEM_CLASS_SIGNED = 1u << 1,   /* i8 i16 i32 i64 */
  KILN_ELEM_CLASS_UNSIGNED = 1u << 2, /* u8 u16 u32 u64 */
  KILN_ELEM_CLASS_BOOL = 1u << 3,
};
/* The sets the `classes` column of node_schema.def names. */
#define KILN_ELEM_CLASSES_FLOAT KILN_ELEM_CLASS_FLOAT
#define KILN_ELEM_CLASSES_UNSIGNED KILN_ELEM_CLASS_UNSIGNED
#define KILN_ELEM_CLASSES_BOOL KILN_ELEM_CLASS_BOOL
#define KILN_ELEM_CLASSES_INT (KILN_ELEM_CLASS_SIGNED | KILN_ELEM_CLASS_UNSIGNED)
#define KILN_ELEM_CLASSES_NUMERIC (KILN_ELEM_CLASS_FLOAT | KILN_ELEM_CLASSES_INT)
#define KILN_ELEM_CLASSES_ALL (KILN_ELEM_CLASSES_NUMERIC | KILN_ELEM_CLASS_BOOL)

/* The kind's family; KILN_FAMILY_COUNT for an out-of-range kind. */
kiln_node_family kiln_node_kind_family(kiln_node_kind k);
/* "elementwise", "reduce", ...: the name the family's files carry; "?" for
 * an out-of-range family. */
const char *kiln_node_family_name(kiln_node_family f);
/* kiln_node_family_name(kiln_node_kind_family(k)). */
const char *kiln_node_kind_family_name(kiln_node_kind k);
/* The kind's primitive status (KILN_PRIMITIVE_NO if out of range). A node of
 * a primitive kind may still fall outside the set by its inputs or
 * attributes: kiln_pass_node_is_primitive (passes.h) decides per node. */
kiln_primitive kiln_node_kind_primitive(kiln_node_kind k);
/* kiln_node_kind_primitive(k) != KILN_PRIMITIVE_NO. */
bool kiln_node_kind_is_primitive(kiln_node_kind k);
/* The KILN_ELEM_CLASS_* bits of input 0's element types the kind is defined
 * on; 0 for an out-of-range kind. */
uint32_t kiln_node_kind_elem_classes(kiln_node_kind k);
/* The KILN_ELEM_CLASS_* bit of an element type (0 if out of range). */
uint32_t kiln_elem_class(kiln_elem e);
/* Whether the inputs past the minimum form one list in which every entry is
 * required (variadic kinds, Concat, Einsum), rather than optional inputs at
 * fixed positions. False for an out-of-range kind. */
bool kiln_node_kind_inputs_are_list(kiln_node_kind k);
/* NULL when an ONNX operator is imported as this kind; otherwise why none
 * is (a static string). NULL for an out-of-range kind. */
const char *kiln_node_kind_no_onnx_reason(kiln_node_kind k);

typedef struct kiln_module kiln_module;
typedef struct kiln_function kiln_function;
typedef struct kiln_node kiln_node;
typedef struct kiln_value kiln_value;

/* ------------------------------------------------------------------------
 * Attributes. A node's (and an instruction's) attributes are a set of named
 * values, kept sorted by name. */
typedef enum kiln_attr_kind {
  KILN_ATTR_INT = 0,    /* int64 */
  KILN_ATTR_FLOAT = 1,  /* double */
  KILN_ATTR_STRING = 2, /* NUL-terminated */
  KILN_ATTR_INTS = 3,   /* int64 list */
  KILN_ATTR_FLOATS = 4, /* double list */
  KILN_ATTR_TYPE = 5,   /* an element type */
} kiln_attr_kind;

/* What a builder call passes in. Everything is copied; only the fields of
 * `kind` are read. */
typedef struct kiln_attr_desc {
  const char *name;
  kiln_attr_kind kind;
  int64_t i;
  double f;
  const char *s;
  const int64_t *ints;
  const double *floats;
  uint32_t len; /* entries of ints / floats */
  kiln_elem type;
} kiln_attr_desc;

/* Convenience initializers for kiln_attr_desc arrays. */
#define KILN_ATTR_I(n, v) ((kiln_attr_desc){.name = (n), .kind = KILN_ATTR_INT, .i = (v)})
#define KILN_ATTR_F(n, v) ((kiln_attr_desc){.name = (n), .kind = KILN_ATTR_FLOAT, .f = (v)})
#define KILN_ATTR_S(n, v) ((kiln_attr_desc){.name = (n), .kind = KILN_ATTR_STRING, .s = (v)})
#define KILN_ATTR_IS(n, p, l)                                                                      \
  ((kiln_attr_desc){.name = (n), .kind = KILN_ATTR_INTS, .ints = (p), .len = (l)})
#define KILN_ATTR_FS(n, p, l)                                                                      \
  ((kiln_attr_desc){.name = (n), .kind = KILN_ATTR_FLOATS, .floats = (p), .len = (l)})
#define KILN_ATTR_T(n, v) ((kiln_attr_desc){.name = (n), .kind = KILN_ATTR_TYPE, .type = (v)})

typedef struct kiln_attrs kiln_attrs; /* an immutable attribute set */
typedef struct kiln_attr kiln_attr;   /* one attribute */

/* Make a standalone attribute set (copied, sorted by name; a duplicate
 * name is an error). Caller owns *out: kiln_attrs_destroy(alloc, *out).
 * alloc NULL = default. Nodes and instructions own their sets. */
KILN_NODISCARD kiln_status kiln_attrs_create(const kiln_allocator *alloc,
                                             const kiln_attr_desc *descs, uint32_t n,
                                             kiln_attrs **out);
void kiln_attrs_destroy(const kiln_allocator *alloc, kiln_attrs *a);
uint32_t kiln_attrs_count(const kiln_attrs *a); /* NULL -> 0 */
const kiln_attr *kiln_attrs_at(const kiln_attrs *a, uint32_t i);
const kiln_attr *kiln_attrs_find(const kiln_attrs *a, const char *name); /* NULL if absent */
const char *kiln_attr_name(const kiln_attr *a);
kiln_attr_kind kiln_attr_get_kind(const kiln_attr *a);
int64_t kiln_attr_int(const kiln_attr *a);         /* INT (FLOAT truncated) */
double kiln_attr_float(const kiln_attr *a);        /* FLOAT (INT converted) */
const char *kiln_attr_string(const kiln_attr *a);  /* STRING, else "" */
uint32_t kiln_attr_len(const kiln_attr *a);        /* INTS / FLOATS length */
const int64_t *kiln_attr_ints(const kiln_attr *a); /* INTS, else NULL */
const double *kiln_attr_floats(
    const kiln_attr *a); /* FLOATS, else NULL; an empty INTS list reads as empty FLOATS */
kiln_elem kiln_attr_type(const kiln_attr *a); /* TYPE */
/* Lookups with a default for an absent attribute. */
int64_t kiln_attrs_int_or(const kiln_attrs *a, const char *name, int64_t dflt);
double kiln_attrs_float_or(const kiln_attrs *a, const char *name, double dflt);
const char *kiln_attrs_string_or(const kiln_attrs *a, const char *name, const char *dflt);
kiln_elem kiln_attrs_type_or(const kiln_attrs *a, const char *name, kiln_elem dflt);

/* An attribute of a node kind that the verifier checks on every node of the
 * kind (the KILN_NODE_ATTR rows of node_schema.def). When present, the
 * attribute must have `kind` (INT and FLOAT accept each other, as
 * kiln_attrs_int_or and kiln_attrs_float_or read both), and an INT or FLOAT
 * value must lie in [min, max]. Rows are static and live as long as the
 * process; members may be appended in a later minor version, so read them
 * through the returned pointer and never copy or allocate one. */
typedef struct kiln_node_attr_schema {
  kiln_node_kind node_kind;
  const char *name;
  kiln_attr_kind kind;
  double min, max;
} kiln_node_attr_schema;
/* Number of attribute rows of kind k (0 for an out-of-range kind). */
uint32_t kiln_node_kind_attr_count(kiln_node_kind k);
/* Row i of kind k, in node_schema.def order; NULL when i is out of range. */
const kiln_node_attr_schema *kiln_node_kind_attr_at(kiln_node_kind k, uint32_t i);
/* Checks attrs against the rows of kind k. Returns NULL when they conform,
 * else a KILN_INVALID_ARGUMENT status naming the kind, the attribute and
 * the rule; the caller owns it (kiln_status_free). */
KILN_NODISCARD kiln_status kiln_node_kind_check_attrs(kiln_node_kind k, const kiln_attrs *attrs);

/* ------------------------------------------------------------------------
 * Modules and values. */

/* Create an empty module. alloc NULL = kiln_default_allocator(); the
 * allocator must outlive the module. Caller owns *out (kiln_module_destroy). */
KILN_NODISCARD kiln_status kiln_module_create(const kiln_allocator *alloc, const char *name,
                                              kiln_module **out);
void kiln_module_destroy(kiln_module *m); /* NULL accepted */
const char *kiln_module_name(const kiln_module *m);
const kiln_allocator *kiln_module_allocator(const kiln_module *m);
/* Copy a whole module (into a fresh arena with the same allocator). The
 * copy shares the constants' data (see above); nothing else is shared. */
KILN_NODISCARD kiln_status kiln_module_clone(const kiln_module *m, kiln_module **out);

typedef enum kiln_value_kind {
  KILN_VALUE_INPUT = 0,    /* a module input placeholder */
  KILN_VALUE_CONSTANT = 1, /* a module constant (weight) with data */
  KILN_VALUE_RESULT = 2,   /* result of a node */
} kiln_value_kind;

/* Add a module input. Names are unique among the module's values; the
 * value is owned by the module. */
KILN_NODISCARD kiln_status kiln_module_add_input(kiln_module *m, const char *name,
                                                 const kiln_type *type, kiln_value **out);
/* Add a constant; `data` (kiln_type_bytes(type) bytes, row-major,
 * little-endian) is copied. name may be NULL for an automatic name. */
KILN_NODISCARD kiln_status kiln_module_add_constant(kiln_module *m, const char *name,
                                                    const kiln_type *type, const void *data,
                                                    kiln_value **out);
/* Add a constant whose data `fill` writes straight into the module's
 * storage (bytes = kiln_type_bytes(type); called once, before the constant
 * exists), so that a loader decoding or reading weights needs no buffer of
 * its own. A status from fill fails the call and leaves m as it was. */
typedef kiln_status (*kiln_constant_fill_fn)(void *user, void *dst, size_t bytes);
KILN_NODISCARD kiln_status kiln_module_add_constant_fill(kiln_module *m, const char *name,
                                                         const kiln_type *type,
                                                         kiln_constant_fill_fn fill, void *user,
                                                         kiln_value **out);
/* Add a constant of src's type that shares src's data (src is a constant
 * of any module; nothing is copied). name NULL = an automatic name. */
KILN_NODISCARD kiln_status kiln_module_add_constant_from(kiln_module *m, const char *name,
                                                         const kiln_value *src, kiln_value **out);
/* Remove the constants that no node and no function output uses, dropping
 * their share of the data (freed when no other module or executable holds
 * it). Pointers to removed constants become invalid. Returns how many. */
uint32_t kiln_module_remove_unused_constants(kiln_module *m);
/* Mark m as a module whose constants may go as soon as nothing uses them:
 * the pass manager then removes them after each graph pass, and a pass
 * that replaces weights (bnfold) after each replacement, so that a
 * module's old and new weights are never all alive at once. The compile
 * driver sets it on the module it compiles; off by default (a pass test
 * sees every constant). */
void kiln_module_set_release_constants(kiln_module *m, bool on);
bool kiln_module_releases_constants(const kiln_module *m);
uint32_t kiln_module_input_count(const kiln_module *m);
kiln_value *kiln_module_input(const kiln_module *m, uint32_t i);
uint32_t kiln_module_constant_count(const kiln_module *m);
kiln_value *kiln_module_constant(const kiln_module *m, uint32_t i);
/* Any module value or node result by name; NULL if none. */
kiln_value *kiln_module_find_value(const kiln_module *m, const char *name);

kiln_value_kind kiln_value_get_kind(const kiln_value *v);
const char *kiln_value_name(const kiln_value *v);
const kiln_type *kiln_value_type(const kiln_value *v);
/* Constant data (KILN_VALUE_CONSTANT), else NULL. Owned by the module. */
const void *kiln_value_data(const kiln_value *v);
/* Producing node of a RESULT value and which result it is; NULL otherwise. */
kiln_node *kiln_value_producer(const kiln_value *v, uint32_t *out_index);
/* Number of node inputs and function outputs that use v. */
uint32_t kiln_value_use_count(const kiln_value *v);

/* ------------------------------------------------------------------------
 * Functions and nodes. */
KILN_NODISCARD kiln_status kiln_module_add_function(kiln_module *m, const char *name,
                                                    kiln_function **out);
uint32_t kiln_module_function_count(const kiln_module *m);
kiln_function *kiln_module_function(const kiln_module *m, uint32_t i);
kiln_function *kiln_module_find_function(const kiln_module *m, const char *name);
const char *kiln_function_name(const kiln_function *f);
kiln_module *kiln_function_module(const kiln_function *f);

/* Append a node. `inputs` has n_inputs entries, NULL for an absent optional
 * input; each must be a module value or a result of a node already in f.
 * Attributes are copied. n_results = 0 asks for the kind's minimum number of
 * results. result_names may be NULL (automatic names) or hold n_results
 * names (a NULL entry = automatic). Result types are inferred from the
 * input types and attributes; a failure names the node and the reason and
 * leaves f unchanged. name (may be NULL) is kept for messages (e.g. the
 * ONNX node name). *out may be NULL. */
KILN_NODISCARD kiln_status kiln_function_add_node(kiln_function *f, kiln_node_kind kind,
                                                  const char *name, kiln_value *const *inputs,
                                                  uint32_t n_inputs, const kiln_attr_desc *attrs,
                                                  uint32_t n_attrs, uint32_t n_results,
                                                  kiln_node **out);
/* Like kiln_function_add_node, naming the results. */
KILN_NODISCARD kiln_status kiln_function_add_node_named(
    kiln_function *f, kiln_node_kind kind, const char *name, kiln_value *const *inputs,
    uint32_t n_inputs, const kiln_attr_desc *attrs, uint32_t n_attrs, uint32_t n_results,
    const char *const *result_names, kiln_node **out);

/* Bind an output name to a value. Output names are unique per function. */
KILN_NODISCARD kiln_status kiln_function_add_output(kiln_function *f, const char *name,
                                                    kiln_value *v);
uint32_t kiln_function_output_count(const kiln_function *f);
const char *kiln_function_output_name(const kiln_function *f, uint32_t i);
kiln_value *kiln_function_output_value(const kiln_function *f, uint32_t i);

/* Nodes in topological order. */
uint32_t kiln_function_node_count(const kiln_function *f);
kiln_node *kiln_function_node(const kiln_function *f, uint32_t i);

kiln_node_kind kiln_node_get_kind(const kiln_node *n);
const char *kiln_node_name(const kiln_node *n); /* given name, else first result's name */
kiln_function *kiln_node_function(const kiln_node *n);
uint32_t kiln_node_input_count(const kiln_node *n);
kiln_value *kiln_node_input(const kiln_node *n, uint32_t i); /* NULL = absent */
uint32_t kiln_node_result_count(const kiln_node *n);
kiln_value *kiln_node_result(const kiln_node *n, uint32_t i);
const kiln_attrs *kiln_node_attrs(const kiln_node *n);

/* ------------------------------------------------------------------------
 * Changing a function (for passes). */

/* Make every use of `from` in f (node inputs and outputs) use `to`. Types
 * must be equal. */
KILN_NODISCARD kiln_status kiln_function_replace_uses(kiln_function *f, kiln_value *from,
                                                      kiln_value *to);
/* Remove a node none of whose results is used. */
KILN_NODISCARD kiln_status kiln_function_remove_node(kiln_function *f, kiln_node *n);
/* New nodes are inserted before `n` (NULL: appended at the end, the
 * default). */
void kiln_function_set_insert_point(kiln_function *f, kiln_node *n);

/* ------------------------------------------------------------------------
 * Shape and type inference, as the builder runs it: results of a node of
 * `kind` on inputs of the given types (NULL entries = absent) with these
 * attributes. Writes n_results types to out (n_results 0 = minimum; the
 * count used is written to *out_n). Fails naming the reason. */
KILN_NODISCARD kiln_status kiln_infer_types(kiln_node_kind kind, const kiln_type *const *inputs,
                                            uint32_t n_inputs, const kiln_attrs *attrs,
                                            uint32_t n_results, kiln_type *out, uint32_t *out_n);

/* ------------------------------------------------------------------------
 * The body of a FusedElementwise node: an RPN program in a string, tokens
 * separated by spaces: `xN` pushes input N (broadcast), a decimal number
 * (strtod syntax, also inf/nan) pushes a constant, and a node kind name
 * pops its operands and pushes its result. Allowed kinds: Abs Ceil Cos Erf
 * Exp Floor Gelu Identity Log Neg Reciprocal Relu Round Sigmoid Sign Sin
 * Softplus Softsign Sqrt Tan Tanh (one operand; Gelu is the exact erf form)
 * and Add Sub Mul Div Pow Max Min (two operands: the deeper one first).
 * Example: "x0 1.5 Mul 0.5 Add Tanh x1 Mul" = tanh(1.5*x0 + 0.5) * x1. */
typedef struct kiln_fused_op {
  int32_t kind;   /* KILN_FUSED_INPUT, KILN_FUSED_CONST, or a kiln_node_kind */
  uint32_t input; /* KILN_FUSED_INPUT: which input */
  double value;   /* KILN_FUSED_CONST: the constant */
} kiln_fused_op;
#define KILN_FUSED_INPUT (-1)
#define KILN_FUSED_CONST (-2)
#define KILN_FUSED_MAX_OPS 256
/* Parse and check a body (stack discipline, input numbers below n_inputs,
 * allowed kinds, exactly one value left). Writes at most cap ops. */
KILN_NODISCARD kiln_status kiln_fused_parse(const char *body, uint32_t n_inputs, kiln_fused_op *ops,
                                            uint32_t cap, uint32_t *out_n);
/* Arity of an allowed kind in a body (1 or 2), 0 when not allowed. */
uint32_t kiln_fused_arity(kiln_node_kind k);

/* ------------------------------------------------------------------------
 * The activation functions of RNN, GRU and LSTM nodes, resolved once for
 * every backend. The `activations` attribute is one string of names
 * separated by commas, semicolons or spaces (attributes have no string-list
 * kind), matched case-insensitively; `activation_alpha` / `activation_beta`
 * (FLOATS) are consumed in order by the functions that take an alpha / a
 * beta, the others keeping their ONNX defaults. The numbering is part of the
 * ABI (a backend may pass it to generated code as is). */
typedef enum kiln_rnn_act_kind {
  KILN_RNN_ACT_RELU = 0,
  KILN_RNN_ACT_TANH = 1,
  KILN_RNN_ACT_SIGMOID = 2,
  KILN_RNN_ACT_AFFINE = 3,           /* alpha * x + beta; defaults 1, 0 */
  KILN_RNN_ACT_LEAKY_RELU = 4,       /* x >= 0 ? x : alpha * x; default 0.01 */
  KILN_RNN_ACT_THRESHOLDED_RELU = 5, /* x > alpha ? x : 0; default 1 */
  KILN_RNN_ACT_SCALED_TANH = 6,      /* alpha * tanh(beta * x); defaults 1, 1 */
  KILN_RNN_ACT_HARD_SIGMOID = 7,     /* clamp(alpha * x + beta, 0, 1); 0.2, 0.5 */
  KILN_RNN_ACT_ELU = 8,              /* x >= 0 ? x : alpha * (e^x - 1); default 1 */
  KILN_RNN_ACT_SOFTSIGN = 9,
  KILN_RNN_ACT_SOFTPLUS = 10,
} kiln_rnn_act_kind;
/* A macro, not an enumerator, so that a switch covering the kinds is whole. */
#define KILN_RNN_ACT_KIND_COUNT 11

typedef struct kiln_rnn_act {
  kiln_rnn_act_kind kind;
  double alpha, beta; /* 0 for a function that takes neither */
} kiln_rnn_act;

/* Most functions a node can have: LSTM's 3 per direction, 2 directions. */
#define KILN_RNN_MAX_ACTS 6

/* The functions of a recurrent node of `kind` (RNN: f; GRU: f, g; LSTM:
 * f, g, h) with `dirs` directions (1 or 2): out[d * per_dir + j] is
 * function j of direction d. Without `activations` each direction gets the
 * ONNX defaults (RNN Tanh; GRU Sigmoid, Tanh; LSTM Sigmoid, Tanh, Tanh); a
 * bidirectional node given one direction's list uses it for both. Writes
 * per_dir * dirs entries into out (caller-owned, room for cap) and the
 * count into *n_out (may be NULL); attrs may be NULL. Fails, naming the
 * kind and the reason, on an unknown name, a wrong count, another kind,
 * dirs outside 1..2 or cap too small; out is then unspecified. */
KILN_NODISCARD kiln_status kiln_rnn_activations(kiln_node_kind kind, const kiln_attrs *attrs,
                                                uint32_t dirs, kiln_rnn_act *out, uint32_t cap,
                                                uint32_t *n_out);

/* ------------------------------------------------------------------------
 * Verification: types, shapes, attributes, arity, order (acyclicity) and
 * names of every node of every function. Reports every problem in one
 * status (one line each, naming the function and node). */
KILN_NODISCARD kiln_status kiln_module_verify(const kiln_module *m);

/* ------------------------------------------------------------------------
 * Text form (.kir) and DOT. */

/* Parse a module from text. filename is used in messages
 * ("file:line:col: expected ..."). alloc NULL = default. Caller owns *out. */
KILN_NODISCARD kiln_status kiln_module_parse(const char *text, size_t len, const char *filename,
                                             const kiln_allocator *alloc, kiln_module **out);
/* Read and parse a file. */
KILN_NODISCARD kiln_status kiln_module_load_text(const char *path, const kiln_allocator *alloc,
                                                 kiln_module **out);
/* Print the module as text into a NUL-terminated string allocated with the
 * module's allocator; release it with kiln_module_free_string(m, s). */
KILN_NODISCARD kiln_status kiln_module_print(const kiln_module *m, char **out_text);
void kiln_module_free_string(const kiln_module *m, char *s);
/* Write Graphviz DOT of every function. */
KILN_NODISCARD kiln_status kiln_module_write_dot(const kiln_module *m, FILE *f);
/* The same DOT with nodes filled: node_color (may be NULL) is called once
 * per node and returns a Graphviz color ("#a6cee3", "lightblue") or NULL
 * to leave the node unfilled; the string is the caller's, read before the
 * next call. extra (may be NULL) is DOT text written verbatim, unchecked,
 * at the end of each digraph (a legend, say); it is borrowed for the call.
 * user is passed to node_color. `kiln dump --dot --backend` colors nodes
 * by the backend each is placed on. */
KILN_NODISCARD kiln_status kiln_module_write_dot_styled(
    const kiln_module *m, FILE *f, const char *(*node_color)(void *user, const kiln_node *n),
    void *user, const char *extra);

#ifdef __cplusplus
}
#endif
#endif
