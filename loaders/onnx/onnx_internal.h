/* onnx_internal.h: private interface between the files of the ONNX loader
 * (model walking, tensors, attributes, compile-time values, importer rows). */
#ifndef KILN_ONNX_INTERNAL_H
#define KILN_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/kiln.h"
#include "onnx.pb-c.h"

/* An initializer's raw_data kept out of the unpacked message (onnx_strip.c):
 * len bytes at offset in the model, read from fd when fd >= 0 (a file),
 * else from base (memory). */
typedef struct onnx_raw {
  const uint8_t *base;
  int fd;
  uint64_t offset;
  size_t len;
} onnx_raw;

/* ---- growable string, for messages that list many things ---- */
typedef struct onnx_sb {
  char *s;
  size_t len, cap;
  bool oom;
} onnx_sb;
void onnx_sb_printf(onnx_sb *b, const char *fmt, ...) KILN_PRINTF(2, 3);
void onnx_sb_free(onnx_sb *b);

/* ---- name -> value map of the graph being imported ---- */
typedef struct onnx_entry {
  const char *name; /* borrowed from the protobuf */
  kiln_value *value;
  int32_t known; /* index into opts->known_inputs, or -1 */
} onnx_entry;

typedef struct onnx_loader {
  kiln_module *m;
  kiln_function *f;
  const kiln_onnx_options *opts;
  const char *file;     /* name used in messages */
  const char *base_dir; /* folder of external data; NULL refuses it */
  int64_t opset;        /* opset of the default domain */
  onnx_entry *map;      /* open addressing, cap a power of two */
  uint32_t map_cap, map_count;
  uint32_t auto_id; /* for names of helper constants */
  /* Known graph inputs that a compile-time value depends on: the load is
   * restarted with these as constants (names owned, freed at the end). */
  char *promote[64];
  uint32_t n_promote;
  bool restart;
  /* The initializers' raw_data, kept out of the unpacked message (NULL:
   * it is in the message). */
  const onnx_raw *raws;
  size_t n_raws;
} onnx_loader;

bool onnx_is_promoted(const onnx_loader *L, const char *name);

void onnx_fresh_name(onnx_loader *L, char *buf, size_t n);
onnx_entry *onnx_map_find(onnx_loader *L, const char *name);
kiln_status onnx_map_put(onnx_loader *L, const char *name, kiln_value *v, int32_t known);

/* "'name' (Op)" for messages; uses the first output when the node is unnamed.
 * Returns a pointer into a static-per-thread buffer. */
const char *onnx_node_desc(const Onnx__NodeProto *n);

/* ---- element types and tensors (onnx_tensor.c) ---- */
const char *onnx_dtype_name(int32_t dt);
/* UNIMPLEMENTED for ONNX types kiln lacks (string, complex, float8, int4 ...). */
kiln_status onnx_elem_from_dtype(int32_t dt, const char *what, kiln_elem *out);
int32_t onnx_dtype_from_elem(kiln_elem e);
/* Decode a TensorProto in any data form into a tensor (data from malloc;
 * release with kiln_tensor_free). base_dir NULL refuses external data.
 * `what` names the tensor in messages. */
kiln_status onnx_tensor_from_proto(const Onnx__TensorProto *t, const char *base_dir,
                                   const char *what, kiln_tensor *out);
/* The type of t's data, with the size checks made before any allocation.
 * raw: its raw_data when kept out of t, or NULL. */
kiln_status onnx_tensor_type(const Onnx__TensorProto *t, const onnx_raw *raw, const char *what,
                             kiln_type *out);
/* Decode t's data (of type ty, from onnx_tensor_type) into data. */
kiln_status onnx_tensor_fill(const Onnx__TensorProto *t, const onnx_raw *raw, const char *base_dir,
                             const char *what, const kiln_type *ty, void *data);

/* Copy of a ModelProto's wire form without the raw_data of its graph's
 * initializers (the bulk of a model), so that unpacking does not copy the
 * weights; raws[i] (*n_raws entries, i in initializer order) says where
 * initializer i's raw_data is (len 0 offset UINT64_MAX: it has none). false
 * when the bytes are not a well-formed message (the caller unpacks them
 * unchanged and reports what protobuf says). *out and *raws are malloc'd. */
bool onnx_strip_raw_data(const uint8_t *p, size_t n, uint8_t **out, size_t *out_len,
                         onnx_raw **raws, size_t *n_raws);

/* ---- attributes (onnx_attrs.c) ---- */
typedef struct onnx_attr_list {
  kiln_attr_desc d[48];
  uint32_t n;
  void *owned[48];
  uint32_t n_owned;
} onnx_attr_list;

const Onnx__AttributeProto *onnx_node_attr(const Onnx__NodeProto *n, const char *name);
int64_t onnx_attr_int_or(const Onnx__NodeProto *n, const char *name, int64_t dflt);
double onnx_attr_float_or(const Onnx__NodeProto *n, const char *name, double dflt);
/* Convert every attribute of n (ints, floats, strings; string lists joined
 * with ','), except those named in skip (NULL-terminated, may be NULL). */
kiln_status onnx_attrs_from_node(onnx_loader *L, const Onnx__NodeProto *n, const char *const *skip,
                                 onnx_attr_list *al);
kiln_status onnx_attrs_set_int(onnx_attr_list *al, const char *name, int64_t v);
kiln_status onnx_attrs_set_float(onnx_attr_list *al, const char *name, double v);
kiln_status onnx_attrs_set_ints(onnx_attr_list *al, const char *name, const int64_t *v,
                                uint32_t len);
kiln_status onnx_attrs_set_floats(onnx_attr_list *al, const char *name, const double *v,
                                  uint32_t len);
kiln_status onnx_attrs_set_string(onnx_attr_list *al, const char *name, const char *v);
kiln_status onnx_attrs_set_type(onnx_attr_list *al, const char *name, kiln_elem e);
void onnx_attrs_remove(onnx_attr_list *al, const char *name);
bool onnx_attrs_has(const onnx_attr_list *al, const char *name);
void onnx_attrs_free(onnx_attr_list *al);

/* ---- node inputs and compile-time values (onnx_const.c) ---- */
bool onnx_input_present(const Onnx__NodeProto *n, uint32_t i);
/* The value of input i; NULL when absent. Undefined names are an error. */
kiln_status onnx_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i, kiln_value **out);

/* A compile-time value: a tensor that may be borrowed or owned. */
typedef struct onnx_cval {
  kiln_tensor t; /* t.data borrowed unless owned */
  bool owned;
} onnx_cval;
kiln_status onnx_const_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i, const char *role,
                             onnx_cval *out);
void onnx_cval_release(onnx_cval *c);
/* Integer / float contents of a compile-time value (malloc'd, caller frees). */
kiln_status onnx_cval_ints(const onnx_cval *c, int64_t **out, uint32_t *len);
kiln_status onnx_cval_floats(const onnx_cval *c, double **out, uint32_t *len);

/* Add a module constant with an automatic name. */
kiln_status onnx_add_constant(onnx_loader *L, const kiln_type *t, const void *data,
                              kiln_value **out);

/* ---- importer rows (onnx_ops_table.c) and emitting (onnx_load.c) ---- */
typedef struct onnx_op onnx_op;
typedef kiln_status (*onnx_import_fn)(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
struct onnx_op {
  const char *op_type;
  int32_t min_opset, max_opset; /* of the default domain */
  kiln_node_kind kind;
  uint32_t ct_inputs; /* bit i: input i must be known at compile time */
  onnx_import_fn fn;
};

const onnx_op *onnx_op_find(const char *op_type, int64_t opset);
const onnx_op *onnx_op_table(uint32_t *count);

/* Emit a node of `kind` for n, binding the ONNX outputs of n to its results.
 * n_results 0: max(number of ONNX outputs, kind's minimum). */
kiln_status onnx_emit(onnx_loader *L, const Onnx__NodeProto *n, kiln_node_kind kind,
                      kiln_value *const *inputs, uint32_t n_inputs, const onnx_attr_list *al,
                      uint32_t n_results);
/* Emit an internal helper node (automatic result names). */
kiln_status onnx_emit_helper(onnx_loader *L, const Onnx__NodeProto *n, kiln_node_kind kind,
                             kiln_value *const *inputs, uint32_t n_inputs,
                             const kiln_attr_desc *attrs, uint32_t n_attrs, kiln_node **out);
/* The same for a helper of one or two inputs (b may be NULL); *out is its
 * first result. onnx_emit_ints gives it one int-list attribute (Reshape
 * shape, Transpose perm, Unsqueeze axes ...). */
kiln_status onnx_emit_value(onnx_loader *L, const Onnx__NodeProto *n, kiln_node_kind kind,
                            kiln_value *a, kiln_value *b, const kiln_attr_desc *attrs,
                            uint32_t n_attrs, kiln_value **out);
kiln_status onnx_emit_ints(onnx_loader *L, const Onnx__NodeProto *n, kiln_node_kind kind,
                           const char *attr, kiln_value *x, const int64_t *v, uint32_t len,
                           kiln_value **out);
/* An ONNX node that an importer expands into many helper nodes (Attention,
 * RotaryEmbedding), with its loader, so that each step of the expansion
 * takes one argument; onnx_expand_op / onnx_expand_ints are onnx_emit_value
 * / onnx_emit_ints for that node. */
typedef struct onnx_expand {
  onnx_loader *L;
  const Onnx__NodeProto *n;
} onnx_expand;
kiln_status onnx_expand_op(const onnx_expand *x, kiln_node_kind kind, kiln_value *a, kiln_value *b,
                           const kiln_attr_desc *attrs, uint32_t n_attrs, kiln_value **out);
kiln_status onnx_expand_ints(const onnx_expand *x, kiln_node_kind kind, const char *attr,
                             kiln_value *in, const int64_t *v, uint32_t len, kiln_value **out);
/* Bind ONNX output i of n to v (for importers that produce constants). */
kiln_status onnx_bind_output(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i, kiln_value *v);

/* ---- what the importers share (onnx_ops_common.c) ---- */
/* One ONNX node onto one kiln node of op->kind, every input and attribute
 * as it is: the importer of most table rows. */
kiln_status onnx_imp_plain(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* Bind ONNX output 0 of n to a new module constant of type t. */
kiln_status onnx_bind_constant(onnx_loader *L, const Onnx__NodeProto *n, const kiln_type *t,
                               const void *data);
/* Emit op->kind on input 0 with the node's attributes, the element-type
 * attribute `attr` (an ONNX dtype) converted to a kiln type. */
kiln_status onnx_emit_with_type_attr(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op,
                                     const char *attr, bool required);
/* The contents of compile-time input i of n (present) as a malloc'd int
 * list (ints not NULL) or float list (floats), caller frees; errors name the
 * node and the input. */
kiln_status onnx_const_input_list(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                                  const char *name, int64_t **ints, double **floats, uint32_t *len);
/* Compile-time input i of n as the int list attribute `name`; an absent
 * optional input adds nothing. */
kiln_status onnx_ints_attr_from_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                                      const char *name, bool required, onnx_attr_list *al);
/* A scalar compile-time input as a double (and its element type when
 * elem is not NULL). */
kiln_status onnx_scalar_input(onnx_loader *L, const Onnx__NodeProto *n, uint32_t i,
                              const char *role, double *out, kiln_elem *elem);
/* Emit op->kind on input 0 with the node's attributes (less those in skip)
 * plus those that `fill` adds from compile-time inputs. */
typedef kiln_status (*onnx_fill_fn)(onnx_loader *L, const Onnx__NodeProto *n, onnx_attr_list *al);
kiln_status onnx_emit_filled(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op,
                             onnx_fill_fn fill, const char *const *skip, uint32_t n_results);
/* Emit op->kind on the first n_data inputs (at most 4, all required), with
 * the node's attributes plus compile-time input n_data + j as the int list
 * attribute ct[j]. */
kiln_status onnx_emit_const_inputs_as_attrs(onnx_loader *L, const Onnx__NodeProto *n,
                                            const onnx_op *op, uint32_t n_data,
                                            const char *const *ct, uint32_t n_ct);

/* ---- importers named by the table, by op family (onnx_ops_<family>.c) ---- */
/* elementwise */
kiln_status onnx_imp_cast(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_dropout(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_clip_old(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_prelu_old(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* reduce (axes_input also serves Squeeze / Unsqueeze, int_input TopK and Trilu) */
kiln_status onnx_imp_axes_input(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_int_input(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* norm */
kiln_status onnx_imp_batchnorm(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_softmax_old(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_groupnorm_18(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* conv */
kiln_status onnx_imp_conv(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_col2im(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* pool */
kiln_status onnx_imp_maxunpool(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* movement */
kiln_status onnx_imp_shape(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_size(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_reshape(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_slice(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_pad(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_pad_old(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_split(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_expand_tile(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_center_crop_pad(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* index */
kiln_status onnx_imp_onehot(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* generator (Constant: a module constant, no node) */
kiln_status onnx_imp_constant(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_eyelike(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_constant_of_shape(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_range(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_window(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* resize */
kiln_status onnx_imp_resize(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_upsample(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* attention: Attention (opsets 23 on, onnx_ops_attention.c) and
 * RotaryEmbedding (opset 23 on, onnx_ops_attention_rotary.c), expanded into
 * existing kinds */
kiln_status onnx_imp_attention(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_rotary_embedding(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);

/* A double as int64, clamped to the int64 range (NaN -> 0), so that a
 * float where an integer belongs can never be undefined behaviour; the
 * clamped value then fails the ordinary range checks with a message. */
static inline int64_t onnx_f64_to_i64(double d) {
  if (d != d)
    return 0;
  if (d >= 9.2e18)
    return INT64_MAX;
  if (d <= -9.2e18)
    return INT64_MIN;
  return (int64_t)d;
}

#endif
