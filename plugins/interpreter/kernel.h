/* plugins/interpreter/kernel.h: private helpers of the kernel files
 * (argument checks, error messages, scratch memory, axis views, and the
 * interp_mv_* shape and bit-pattern helpers), so every kernel reports a bad
 * call the same way and each kernel file holds only its operators'
 * semantics. Not part of the kernel interface (interp.h). */
#ifndef KILN_INTERP_KERNEL_H
#define KILN_INTERP_KERNEL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"

/* Defines a kernel's signature. */
#define INTERP_KERNEL(name)                                                                        \
  kiln_status interp_##name(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,         \
                            const interp_tensor *ins, uint32_t n_ins)

/* Fail unless at least `no` results and `ni` inputs are present. */
#define INTERP_ARITY(name, no, ni)                                                                 \
  do {                                                                                             \
    if (n_outs < (no) || n_ins < (ni))                                                             \
      return kiln_status_make(KILN_INVALID_ARGUMENT,                                               \
                              "interpreter %s: expected %u result(s) and %u input(s), got "        \
                              "%u and %u",                                                         \
                              #name, (unsigned)(no), (unsigned)(ni), n_outs, n_ins);               \
    for (uint32_t k_ = 0; k_ < (ni); k_++)                                                         \
      if (!ins[k_].data && interp_numel(&ins[k_]) > 0)                                             \
        return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter %s: input %u is absent",       \
                                #name, k_);                                                        \
  } while (0)

/* An UNIMPLEMENTED status naming the kernel and the element type. */
kiln_status interp_bad_elem(const char *kernel, const char *what, kiln_elem e);
/* A zeroed scratch array of n elements of `size` bytes (n may be 0). */
kiln_status interp_scratch(const char *kernel, int64_t n, size_t size, void **out);
/* The input's optional tensor: NULL when absent or past n_ins. */
const interp_tensor *interp_opt(const interp_tensor *ins, uint32_t n_ins, uint32_t i);
/* An UNIMPLEMENTED status unless x has a floating element type. */
kiln_status interp_need_float(const char *name, const interp_tensor *x);

/* The double function of a unary kind a fused body may hold, as the unfused
 * kernel computes it (elementwise_unary.c). */
double interp_unary_scalar(kiln_node_kind k, double x);

/* A tensor seen as [outer, len, inner] around one axis, for the kernels
 * that work along an axis (Softmax, LogSoftmax, Hardmax, CumSum, TopK). */
typedef struct interp_axis_view {
  uint32_t axis;
  int64_t outer, len, inner;
} interp_axis_view;

kiln_status interp_axis_view_make(const char *name, const kiln_type *t, int64_t axis,
                                  interp_axis_view *v);
/* Flat index of position k along the axis in lane (o, in). */
static inline int64_t interp_axis_at(const interp_axis_view *v, int64_t o, int64_t in, int64_t k) {
  return (o * v->len + k) * v->inner + in;
}

/* Shapes as plain dims arrays and elements as 64-bit patterns, for the
 * kernels that index by coordinates (linalg, conv, pool, movement, index,
 * generator, resize, rnn). */

/* How a kernel computes on an element type: floats in double, signed and
 * unsigned integers (and bool) in 64 bits. */
typedef enum interp_mv_cls { INTERP_MV_F, INTERP_MV_S, INTERP_MV_U } interp_mv_cls;

interp_mv_cls interp_mv_class(kiln_elem e);

/* A failure status whose message starts with the kernel name. */
kiln_status interp_mv_err(kiln_code code, const char *kernel, const char *fmt, ...)
    KILN_PRINTF(3, 4);

/* An ints attribute: its length (0 when absent) and entries in *out. */
uint32_t interp_mv_ints(const kiln_attrs *a, const char *name, const int64_t **out);
/* A floats attribute (an INTS one reads as floats too); length, 0 if absent. */
uint32_t interp_mv_floats(const kiln_attrs *a, const char *name, const double **out);

/* Optional input i, NULL when not given. */
const interp_tensor *interp_mv_opt(const interp_tensor *ins, uint32_t n_ins, uint32_t i);

int64_t interp_mv_numel(const interp_tensor *t);
/* Product of dims[from..to). */
int64_t interp_mv_prod(const int64_t *dims, uint32_t from, uint32_t to);
/* Row-major strides of dims. */
void interp_mv_strides(const int64_t *dims, uint32_t rank, int64_t *st);
/* Coordinates of flat index i in a row-major tensor of these dims. */
void interp_mv_unravel(const int64_t *dims, uint32_t rank, int64_t i, int64_t *c);
/* Flat index into a tensor `in` broadcast (numpy rules, right-aligned) to
 * out dims, for the out coordinates c. */
int64_t interp_mv_bcast(const int64_t *out_dims, uint32_t out_rank, const int64_t *in_dims,
                        uint32_t in_rank, const int64_t *c);

/* Integers as 64-bit patterns, so sums and products wrap instead of
 * overflowing (two's complement makes this right for signed types too). */
uint64_t interp_mv_load_bits(const interp_tensor *t, int64_t i);
void interp_mv_store_bits(interp_tensor *t, int64_t i, uint64_t v);
/* Integer value of any element (floats truncated, NaN 0, saturated). */
int64_t interp_mv_load_int(const interp_tensor *t, int64_t i);
/* Store a double into any element type (integers truncated toward zero and
 * saturated to int64, NaN becomes 0; bool is v != 0). */
void interp_mv_store_double(interp_tensor *t, int64_t i, double v);
/* Set element i to zero (all bits zero is zero for every kiln type). */
void interp_mv_store_zero(interp_tensor *t, int64_t i);
/* Copy `count` elements starting at src index i to dst index j, bit-exact. */
void interp_mv_copy_run(interp_tensor *dst, int64_t j, const interp_tensor *src, int64_t i,
                        int64_t count);
/* Between plain [N, C, S...] and channel-blocked [N, ceil(C/B), S..., B]
 * (kiln/node_kinds.def, BlockChannels): blocked receives plain's elements
 * and zero past C (to_blocked), or plain receives blocked's lanes below C.
 * Element types equal; the shapes are the callers' to check. */
void interp_mv_block_copy(interp_tensor *plain, interp_tensor *blocked, bool to_blocked);
/* The qlinear kernels' multiplier x_scale * w_scale / y_scale (elements xi,
 * wi and 0) as the ONNX reference computes it (kiln_ref_requant_multiplier:
 * in float32 unless a scale is f64). */
double interp_mv_requant_multiplier(const interp_tensor *xs, int64_t xi, const interp_tensor *ws,
                                    int64_t wi, const interp_tensor *ys);
/* The requantized result of accumulator acc in element type e (u8, i8, or
 * another 16/32-bit integer type): kiln_ref_requantize with e's range. */
int64_t interp_mv_requantize(kiln_elem e, int64_t acc, double multiplier, int64_t zero_point);

#endif
