/* ir/infer/infer.h: private interface of shape and type inference.
 *
 * kiln_infer_types (infer.c) checks arity and absent inputs against the node
 * table, then calls one kiln_infer_<Name> per kind; those live in one file per
 * family and share the helpers declared below (util.c). Every error message
 * starts with the kind name so that the builder can prefix the node. */
#ifndef KILN_IR_INFER_H
#define KILN_IR_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/ir.h"

/* One inference function per row of node_kinds.def. `in` holds n_in entries
 * (NULL = absent optional input); `out` has room for n_results types, and
 * n_results has already been checked against the table. */
#define KILN_NODE(name, min_in, max_in, min_out, max_out, flags)                                   \
  KILN_NODISCARD kiln_status kiln_infer_##name(const kiln_type *const *in, uint32_t n_in,          \
                                               const kiln_attrs *attrs, uint32_t n_results,        \
                                               kiln_type *out);
#include "kiln/node_kinds.def"
#undef KILN_NODE

/* Defines kiln_infer_<name> as the one expression `call`, for the kinds whose
 * inference is a family routine given the kind's name (a table of such
 * kinds is a list of one-line macros); `call` sees the parameters in, n_in,
 * attrs, n_results and out, and need not use them all. */
#define KILN_INFER_AS(name, call)                                                                  \
  kiln_status kiln_infer_##name(const kiln_type *const *in, uint32_t n_in,                         \
                                const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {     \
    (void)in, (void)n_in, (void)attrs, (void)n_results;                                            \
    return call;                                                                                   \
  }

/* Element type sets, as bit masks over kiln_elem, for ONNX type constraints. */
#define KILN_INFER_M(e) (1u << (e))
#define KILN_INFER_FLOAT                                                                           \
  (KILN_INFER_M(KILN_F64) | KILN_INFER_M(KILN_F32) | KILN_INFER_M(KILN_F16) |                      \
   KILN_INFER_M(KILN_BF16))
#define KILN_INFER_SINT                                                                            \
  (KILN_INFER_M(KILN_I8) | KILN_INFER_M(KILN_I16) | KILN_INFER_M(KILN_I32) | KILN_INFER_M(KILN_I64))
#define KILN_INFER_UINT                                                                            \
  (KILN_INFER_M(KILN_U8) | KILN_INFER_M(KILN_U16) | KILN_INFER_M(KILN_U32) | KILN_INFER_M(KILN_U64))
#define KILN_INFER_INT (KILN_INFER_SINT | KILN_INFER_UINT)
#define KILN_INFER_NUM (KILN_INFER_FLOAT | KILN_INFER_INT)
#define KILN_INFER_SNUM (KILN_INFER_FLOAT | KILN_INFER_SINT)
#define KILN_INFER_BOOL KILN_INFER_M(KILN_BOOL)
#define KILN_INFER_ALL (KILN_INFER_NUM | KILN_INFER_BOOL)
#define KILN_INFER_IDX (KILN_INFER_M(KILN_I32) | KILN_INFER_M(KILN_I64))

/* Text of a type for messages ("f32[2,3]"); use through KILN_INFER_TS within
 * one full expression. */
typedef struct kiln_infer_tstr {
  char s[128];
} kiln_infer_tstr;
kiln_infer_tstr kiln_infer_tstr_of(const kiln_type *t);
#define KILN_INFER_TS(t) (kiln_infer_tstr_of(t).s)

/* Text of a dims list ("[2,3]"), for messages. */
kiln_infer_tstr kiln_infer_dstr_of(const int64_t *dims, uint32_t n);
#define KILN_INFER_DS(d, n) (kiln_infer_dstr_of((d), (n)).s)

/* An INVALID_ARGUMENT status whose message is "<kind>: <fmt...>". */
KILN_NODISCARD kiln_status kiln_infer_fail(const char *kind, const char *fmt, ...)
    KILN_PRINTF(2, 3);

/* Fails unless t's element type is in mask; `what` names the operand
 * ("input 0", "scale"). */
KILN_NODISCARD kiln_status kiln_infer_check_elem(const char *kind, const char *what,
                                                 const kiln_type *t, uint32_t mask);
/* Fails unless a and b have the same element type. */
KILN_NODISCARD kiln_status kiln_infer_same_elem(const char *kind, const char *wa,
                                                const kiln_type *a, const char *wb,
                                                const kiln_type *b);
/* Fails unless t has the given rank (or, with min_only, at least that rank). */
KILN_NODISCARD kiln_status kiln_infer_check_rank(const char *kind, const char *what,
                                                 const kiln_type *t, uint32_t rank, bool min_only);

/* Build a result through kiln_type_make, reporting overflow under `kind`. */
KILN_NODISCARD kiln_status kiln_infer_make(const char *kind, kiln_elem e, uint32_t rank,
                                           const int64_t *dims, kiln_type *out);

/* Numpy broadcasting of n types (NULL entries skipped): result dims/rank. */
KILN_NODISCARD kiln_status kiln_infer_broadcast(const char *kind, const kiln_type *const *ts,
                                                uint32_t n, int64_t *dims, uint32_t *rank);
/* True when `from` broadcasts to exactly `to` (unidirectional). */
bool kiln_infer_broadcasts_to(const kiln_type *from, const kiln_type *to);

/* Normalize an axis attribute value in [-rank, rank-1] (or [-rank, rank] with
 * inclusive_end). */
KILN_NODISCARD kiln_status kiln_infer_axis(const char *kind, const char *attr, int64_t axis,
                                           uint32_t rank, bool inclusive_end, uint32_t *out);

/* Marks in mark[KILN_MAX_RANK] the dims named by an axes list (normalized, no
 * duplicates). */
KILN_NODISCARD kiln_status kiln_infer_mark_axes(const char *kind, const char *attr,
                                                const int64_t *axes, uint32_t n, uint32_t rank,
                                                bool *mark);

/* An INTS attribute: *present false and *n 0 when absent; an attribute of
 * another kind is an error. */
KILN_NODISCARD kiln_status kiln_infer_ints(const char *kind, const kiln_attrs *a, const char *name,
                                           const int64_t **p, uint32_t *n, bool *present);
/* A FLOATS (or INTS) attribute copied into buf (room for cap entries). */
KILN_NODISCARD kiln_status kiln_infer_floats(const char *kind, const kiln_attrs *a,
                                             const char *name, double *buf, uint32_t cap,
                                             uint32_t *n, bool *present);
/* A STRING attribute that must be one of the NULL-terminated `allowed`
 * list; dflt when absent. */
KILN_NODISCARD kiln_status kiln_infer_enum(const char *kind, const kiln_attrs *a, const char *name,
                                           const char *dflt, const char *const *allowed,
                                           const char **out);
/* An element type attribute: KILN_ATTR_TYPE, or an INT holding an ONNX
 * TensorProto data type code. */
KILN_NODISCARD kiln_status kiln_infer_type_attr(const char *kind, const kiln_attrs *a,
                                                const char *name, kiln_elem dflt, kiln_elem *out,
                                                bool *present);

/* kiln's fused `activation` attribute of Conv / MatMul / Gemm, if present:
 * one of Relu LeakyRelu Sigmoid Tanh, on a float result. */
KILN_NODISCARD kiln_status kiln_infer_activation(const char *kind, const kiln_attrs *a,
                                                 const kiln_type *result);

/* Shared shapes of several families. */
KILN_NODISCARD kiln_status kiln_infer_matmul_shape(const char *kind, const kiln_type *a,
                                                   const kiln_type *b, int64_t *dims,
                                                   uint32_t *rank);
/* Conv output dims (N, M, spatial...) of x and w under Conv's attributes. */
KILN_NODISCARD kiln_status kiln_infer_conv_shape(const char *kind, const kiln_type *x,
                                                 const kiln_type *w, const kiln_attrs *attrs,
                                                 int64_t *dims);

/* Sliding window attributes of n spatial dims, shared by the convolutions
 * (conv.c, which defines these readers) and the pools (pool.c). */
#define KILN_INFER_SP_MAX (KILN_MAX_RANK - 2)
typedef struct kiln_infer_window {
  uint32_t n; /* spatial dims */
  int64_t k[KILN_INFER_SP_MAX], s[KILN_INFER_SP_MAX], d[KILN_INFER_SP_MAX], pb[KILN_INFER_SP_MAX],
      pe[KILN_INFER_SP_MAX];
  const char *auto_pad;
} kiln_infer_window;
/* kernel_shape, strides, dilations, pads and auto_pad; kernel NULL:
 * kernel_shape is required, else it must match kernel when set. */
KILN_NODISCARD kiln_status kiln_infer_read_window(const char *kind, const kiln_attrs *attrs,
                                                  uint32_t n, const int64_t *kernel,
                                                  kiln_infer_window *w);
/* Output spatial size of dim i for an input size `in`. */
KILN_NODISCARD kiln_status kiln_infer_window_out(const char *kind, const kiln_infer_window *w,
                                                 uint32_t i, int64_t in, bool ceil_mode,
                                                 int64_t *out);
/* The window of MaxUnpool and Col2Im (no auto_pad): kernel_name's list
 * (required), strides (default 1), pads (default 0, begins then ends) and,
 * with dil non-NULL, dilations (default 1). */
KILN_NODISCARD kiln_status kiln_infer_explicit_window(const char *k, const kiln_attrs *attrs,
                                                      uint32_t n, const char *kernel_name,
                                                      int64_t *kern, int64_t *strides,
                                                      int64_t *pads, int64_t *dil);

#endif
