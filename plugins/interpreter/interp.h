/* plugins/interpreter/interp.h: what every interpreter kernel sees.
 *
 * The interpreter runs one kernel per node kind (node_kinds.def); a kernel
 * gets the node's attributes, its result tensors (already allocated, with
 * their inferred types) and its input tensors (data NULL = absent optional
 * input). Kernels are plain C and favour clarity over speed; numerics are
 * documented in docs/interpreter.md: floating types are computed in double
 * (f16/bf16/f32 loaded to double, rounded to nearest even on store),
 * integers in int64/uint64 with wrap-around on store, NaN propagates. */
#ifndef KILN_INTERP_H
#define KILN_INTERP_H

#include <kiln/instr.h>
#include <kiln/ir.h>
#include <kiln/status.h>
#include <kiln/types.h>

typedef struct interp_tensor {
  void *data; /* NULL: absent optional input */
  kiln_type type;
} interp_tensor;

typedef kiln_status (*interp_kernel_fn)(const kiln_attrs *attrs, interp_tensor *outs,
                                        uint32_t n_outs, const interp_tensor *ins, uint32_t n_ins);

/* One kernel per node kind: kiln_status interp_<Name>(...). Declared weak so
 * that a missing kernel shows up as an UNIMPLEMENTED status, and a test
 * (tests/interp) checks that none is missing. */
#define KILN_NODE(name, a, b, c, d, e)                                                             \
  kiln_status interp_##name(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,         \
                            const interp_tensor *ins, uint32_t n_ins) __attribute__((weak));
#include <kiln/node_kinds.def>
#undef KILN_NODE

/* The kernel for a kind, NULL when missing. */
interp_kernel_fn interp_kernel_for(kiln_node_kind kind);

/* Element access by flat index, converting through double or int64. */
double interp_load_f(const interp_tensor *t, int64_t i);
void interp_store_f(interp_tensor *t, int64_t i, double v);
int64_t interp_load_i(const interp_tensor *t, int64_t i);
void interp_store_i(interp_tensor *t, int64_t i, int64_t v);
uint64_t interp_load_u(const interp_tensor *t, int64_t i);
void interp_store_u(interp_tensor *t, int64_t i, uint64_t v);
/* Copy element i of src to element j of dst (same elem type), bit-exact. */
void interp_copy_elem(interp_tensor *dst, int64_t j, const interp_tensor *src, int64_t i);

/* Numpy broadcasting: the flat index into `in` for flat index `i` of the
 * result of shape `out`. */
int64_t interp_broadcast_index(const kiln_type *out, const kiln_type *in, int64_t i);
/* Unravel flat index i into coordinates for t (rank entries). */
void interp_unravel(const kiln_type *t, int64_t i, int64_t *coords);
/* Flat index of coordinates in t. */
int64_t interp_ravel(const kiln_type *t, const int64_t *coords);
/* Normalize a possibly negative axis for a given rank; fails if out of range. */
kiln_status interp_axis(int64_t axis, uint32_t rank, uint32_t *out);

/* ---- element counts, classes and support (tensor.c, dispatch.c) ---- */

/* Element count of a tensor (1 for a scalar, 0 when any dim is 0). */
int64_t interp_numel(const interp_tensor *t);

/* How a kernel computes on an element type: floats in double, signed
 * integers in int64, unsigned in uint64, bool as 0/1. */
typedef enum interp_class {
  INTERP_FLOAT = 0,
  INTERP_SIGNED = 1,
  INTERP_UNSIGNED = 2,
  INTERP_BOOL = 3
} interp_class;
interp_class interp_class_of(kiln_elem e);

/* Whether the kernel of `kind` runs on this element type of its first
 * input (dispatch.c; every type for kinds it does not restrict). */
bool interp_elem_supported(kiln_node_kind kind, kiln_elem first_input);

/* Apply a Conv / MatMul / Gemm node's fused `activation` attribute (if any)
 * to its result in place, after the result was stored: the same values as
 * the unfused node followed by the activation node. */
kiln_status interp_apply_activation(const char *kernel, const kiln_attrs *attrs, interp_tensor *y);

#endif
