/* passes/pass_util.h: helpers shared by the graph passes and lowering rules
 * (private to passes/). Element access by double, constant inspection, and
 * the "replace a node by new values" idiom every rewrite ends with. */
#ifndef KILN_PASS_UTIL_H
#define KILN_PASS_UTIL_H

#include "kiln/ir.h"
#include "kiln/passes.h"

/* (Reading an element as double is kiln_elem_load_f64 in kiln/types.h.) */
/* Store v (rounded / truncated to e) at element i. */
void kiln_pass_elem_set(void *data, kiln_elem e, int64_t i, double v);

/* A constant all of whose elements equal one value: true and *out set. */
bool kiln_pass_const_splat(const kiln_value *v, double *out);
/* Constant v (any shape) all elements == x. */
bool kiln_pass_const_is(const kiln_value *v, double x);

/* Add a constant of type t filled with `fill` (converted to t->elem). */
KILN_NODISCARD kiln_status kiln_pass_const_fill(kiln_module *m, const kiln_type *t, double fill,
                                                kiln_value **out);
/* Scalar (rank 0) constant of elem e. */
KILN_NODISCARD kiln_status kiln_pass_const_scalar(kiln_module *m, kiln_elem e, double x,
                                                  kiln_value **out);

/* Make every use of n's results use repl[i] instead, then remove n. */
KILN_NODISCARD kiln_status kiln_pass_replace_node(kiln_function *f, kiln_node *n,
                                                  kiln_value *const *repl);
/* Add a node before `before` (NULL = at the end) and return its result 0.
 * It carries before's given name (kiln_pass_given_name), so that what a
 * rule makes of a model node still names it (kiln_instr_name). */
KILN_NODISCARD kiln_status kiln_pass_emit(kiln_function *f, kiln_node *before, kiln_node_kind k,
                                          kiln_value *const *in, uint32_t n_in,
                                          const kiln_attr_desc *attrs, uint32_t n_attrs,
                                          kiln_value **out);
/* The same with the new node's name given (NULL = none). */
KILN_NODISCARD kiln_status kiln_pass_emit_named(kiln_function *f, kiln_node *before,
                                                const char *name, kiln_node_kind k,
                                                kiln_value *const *in, uint32_t n_in,
                                                const kiln_attr_desc *attrs, uint32_t n_attrs,
                                                kiln_value **out);
/* n's given name, or NULL when it has none (kiln_node_name then falls back
 * to its first result's name). */
const char *kiln_pass_given_name(const kiln_node *n);
/* The name of a node that takes the place of `first` and `extra` more
 * nodes (fusion, folding): "NAME+EXTRA" from first's given name, written
 * into buf ("NAME+N" merged again becomes "NAME+(N+EXTRA)"); without a
 * given name, kiln_node_name(first) as before. */
const char *kiln_pass_merged_name(const kiln_node *first, uint32_t extra, char *buf, size_t size);

/* A snapshot of a function's nodes (a rewrite removes at most the node it
 * is looking at, so later entries stay valid). Caller frees with free(). */
KILN_NODISCARD kiln_status kiln_pass_snapshot(const kiln_function *f, kiln_node ***out,
                                              uint32_t *n);

/* One node's rewrite in a pass that visits every node once: look at n, and
 * either leave it (*done = false) or replace it (*done = true). A failure's
 * message names the node (the rewrite adds that context itself). */
typedef kiln_status (*kiln_pass_node_rewrite)(kiln_function *f, kiln_node *n,
                                              const kiln_pass_options *o, bool *done);
/* Run rw on each node of a snapshot taken now, in order, stopping at the
 * first failure, and add to *changes (when not NULL) how many it replaced. */
KILN_NODISCARD kiln_status kiln_pass_each_node(kiln_function *f, const kiln_pass_options *o,
                                               kiln_pass_node_rewrite rw, uint32_t *changes);

/* Attribute sets equal (same names, kinds and values). */
bool kiln_pass_attrs_equal(const kiln_attrs *a, const kiln_attrs *b);
/* Copy of a node's attributes as descs (pointers into the node's set), with
 * room for `extra` more entries; caller frees *out with free(). */
KILN_NODISCARD kiln_status kiln_pass_attrs_descs(const kiln_attrs *a, uint32_t extra,
                                                 kiln_attr_desc **out, uint32_t *n);

/* Transpose the data of a constant: out type dims[i] = in dims[perm[i]]. */
void kiln_pass_transpose_data(const void *src, void *dst, const kiln_type *in_t,
                              const int64_t *perm, size_t elem_size);

/* Perm attribute of a Transpose node (default reversed) into perm[rank]. */
void kiln_pass_transpose_perm(const kiln_node *n, uint32_t rank, int64_t *perm);

/* Is kind a reshape-like kind (Reshape, Flatten, Squeeze, Unsqueeze)? */
bool kiln_pass_is_reshape_like(kiln_node_kind k);

/* Is g (NULL allowed) a Gather whose index is one constant integer (rank
 * 0: the gathered axis goes)? Then *index (when not NULL) is that index,
 * as written (it may be negative). */
bool kiln_pass_gather_scalar(const kiln_node *g, int64_t *index);

#endif
