/* passes/bnfold.c: fold an inference BatchNormalization into the linear
 * node before it when that node's weights are constants:
 *   BN(Conv(x, W, B))          -> Conv(x, W', B')
 *   BN(ConvTranspose(x, W, B)) -> ConvTranspose(x, W', B')
 *   BN(MatMul(x, W) [+ b])     -> MatMul(x, W') + b'     (2-D, channel = dim 1)
 * with s = scale / sqrt(var + eps), W' = W * s (per output channel),
 * B' = (B - mean) * s + bias. Float constants (f32, f64) only. */
#include <math.h>
#include <stdlib.h>

#include "pass_util.h"

static bool is_float_const(const kiln_value *v) {
  return v && kiln_value_get_kind(v) == KILN_VALUE_CONSTANT &&
         (kiln_value_type(v)->elem == KILN_F32 || kiln_value_type(v)->elem == KILN_F64);
}

/* Per-channel factors s and shifts t (y = s * z + t for BN input z). */
static kiln_status bn_factors(const kiln_node *bn, int64_t c, double **s_out, double **t_out) {
  for (uint32_t i = 1; i < 5; i++) {
    const kiln_value *v = kiln_node_input(bn, i);
    if (!is_float_const(v) || kiln_type_numel(kiln_value_type(v)) != c)
      return NULL;
  }
  double eps = kiln_attrs_float_or(kiln_node_attrs(bn), "epsilon", 1e-5);
  double *s = malloc(sizeof *s * (size_t)c), *t = malloc(sizeof *t * (size_t)c);
  if (!s || !t) {
    free(s);
    free(t);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "bnfold: no memory");
  }
  const kiln_value *sc = kiln_node_input(bn, 1), *b = kiln_node_input(bn, 2),
                   *mean = kiln_node_input(bn, 3), *var = kiln_node_input(bn, 4);
  for (int64_t i = 0; i < c; i++) {
#define G(v) kiln_elem_load_f64(kiln_value_type(v)->elem, kiln_value_data(v), i)
    s[i] = G(sc) / sqrt(G(var) + eps);
    t[i] = G(b) - G(mean) * s[i];
#undef G
  }
  *s_out = s;
  *t_out = t;
  return NULL;
}

/* New constant like w with w'[i] = w[i] * s[channel(i)], where w holds
 * groups of rows, each row cg output channels of `inner` elements, and
 * group q's rows (rows_per_group of them) feed channels [q*cg, q*cg + cg):
 * channel(i) = (i / inner) % cg + i / (inner * cg * rows_per_group) * cg.
 * Conv's [c, rest] is one row (inner = rest, cg = c); MatMul's [K, c] one
 * group of K rows (inner = 1); ConvTranspose's [C, M/group, k...] has
 * C/group rows per group (inner = k...). */
static kiln_status scaled(kiln_module *m, const kiln_value *w, const double *s, int64_t inner,
                          int64_t cg, int64_t rows_per_group, kiln_value **out) {
  const kiln_type *wt = kiln_value_type(w);
  int64_t n = kiln_type_numel(wt);
  void *buf = malloc((size_t)kiln_type_bytes(wt) + 1);
  if (!buf)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "bnfold: no memory");
  for (int64_t i = 0; i < n; i++)
    kiln_pass_elem_set(buf, wt->elem, i,
                       kiln_elem_load_f64(wt->elem, kiln_value_data(w), i) *
                           s[(i / inner) % cg + i / (inner * cg * rows_per_group) * cg]);
  kiln_status st = kiln_module_add_constant(m, NULL, wt, buf, out);
  free(buf);
  return st;
}

/* Bias b' = b * s + t (b may be NULL = zeros), shaped like `shape_of`
 * (or [c] when NULL). */
static kiln_status bias(kiln_module *m, const kiln_value *b, const double *s, const double *t,
                        int64_t c, kiln_elem e, kiln_value **out) {
  kiln_type bt;
  KILN_TRY(kiln_type_make(e, 1, &c, &bt));
  void *buf = malloc((size_t)kiln_type_bytes(&bt) + 1);
  if (!buf)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "bnfold: no memory");
  for (int64_t i = 0; i < c; i++) {
    double bi = b ? kiln_elem_load_f64(kiln_value_type(b)->elem, kiln_value_data(b), i) : 0;
    kiln_pass_elem_set(buf, e, i, bi * s[i] + t[i]);
  }
  kiln_status st = kiln_module_add_constant(m, NULL, &bt, buf, out);
  free(buf);
  return st;
}

/* conv: a Conv, whose filters lie as [M, C/group, k...] (output channel
 * m's scale goes to row m), or (transposed) a ConvTranspose, whose filters
 * lie as [C, M/group, k...] (m's scale goes to column m % (M/group) of the
 * rows of its group). */
static kiln_status fold_conv(kiln_function *f, kiln_node *bn, kiln_node *conv, bool transposed,
                             bool *done) {
  kiln_value *x = kiln_node_input(conv, 0), *w = kiln_node_input(conv, 1),
             *b = kiln_node_input_count(conv) > 2 ? kiln_node_input(conv, 2) : NULL;
  if (!is_float_const(w) || (b && !is_float_const(b)))
    return NULL;
  const kiln_type *wt = kiln_value_type(w);
  if (wt->rank < 2)
    return NULL;
  int64_t group = transposed ? kiln_attrs_int_or(kiln_node_attrs(conv), "group", 1) : 1;
  int64_t c = transposed ? wt->dims[1] * group : wt->dims[0];
  if (group < 1 || wt->dims[0] % group || (b && kiln_type_numel(kiln_value_type(b)) != c))
    return NULL;
  int64_t inner = kiln_type_numel(wt) / (wt->dims[0] ? wt->dims[0] : 1);
  int64_t cg = c, rows = 1;
  if (transposed) {
    cg = wt->dims[1];
    inner = cg ? inner / cg : 0;
    rows = wt->dims[0] / group;
  }
  if (inner <= 0 || cg <= 0 || rows <= 0) /* empty filters: nothing to scale */
    return NULL;
  double *s = NULL, *t = NULL;
  KILN_TRY(bn_factors(bn, c, &s, &t));
  if (!s)
    return NULL;
  kiln_module *m = kiln_function_module(f);
  kiln_value *nw = NULL, *nb = NULL, *y = NULL;
  kiln_status st = scaled(m, w, s, inner, cg, rows, &nw);
  if (!st)
    st = bias(m, b, s, t, c, wt->elem, &nb);
  free(s);
  free(t);
  KILN_TRY(st);
  kiln_attr_desc *d;
  uint32_t nd;
  KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(conv), 0, &d, &nd));
  kiln_value *in[3] = {x, nw, nb};
  /* The folded conv is the conv node's (and the batch norm's): "conv+1". */
  char nm[256];
  const char *name = kiln_pass_given_name(conv) ? kiln_pass_merged_name(conv, 1, nm, sizeof nm)
                                                : kiln_pass_given_name(bn);
  st = kiln_pass_emit_named(f, bn, name, transposed ? KILN_NODE_ConvTranspose : KILN_NODE_Conv, in,
                            3, d, nd, &y);
  free(d);
  KILN_TRY(st);
  KILN_TRY(kiln_pass_replace_node(f, bn, &y));
  *done = true;
  return NULL;
}

static kiln_status fold_matmul(kiln_function *f, kiln_node *bn, kiln_node *mm,
                               const kiln_value *add_b, bool *done) {
  kiln_value *x = kiln_node_input(mm, 0), *w = kiln_node_input(mm, 1);
  const kiln_type *wt = kiln_value_type(w);
  const kiln_type *yt = kiln_value_type(kiln_node_result(mm, 0));
  if (!is_float_const(w) || wt->rank != 2 || yt->rank != 2)
    return NULL;
  int64_t c = wt->dims[1];
  if (add_b && (!is_float_const(add_b) || kiln_type_numel(kiln_value_type(add_b)) != c ||
                kiln_value_type(add_b)->dims[kiln_value_type(add_b)->rank - 1] != c))
    return NULL;
  double *s = NULL, *t = NULL;
  KILN_TRY(bn_factors(bn, c, &s, &t));
  if (!s)
    return NULL;
  kiln_module *m = kiln_function_module(f);
  kiln_value *nw = NULL, *nb = NULL, *y = NULL, *z = NULL;
  kiln_status st = scaled(m, w, s, 1, c, wt->dims[0], &nw);
  if (!st)
    st = bias(m, add_b, s, t, c, wt->elem, &nb);
  free(s);
  free(t);
  KILN_TRY(st);
  kiln_value *in[2] = {x, nw};
  KILN_TRY(kiln_pass_emit(f, bn, KILN_NODE_MatMul, in, 2, NULL, 0, &y));
  kiln_value *in2[2] = {y, nb};
  KILN_TRY(kiln_pass_emit(f, bn, KILN_NODE_Add, in2, 2, NULL, 0, &z));
  if (!kiln_type_equal(kiln_value_type(z), kiln_value_type(kiln_node_result(bn, 0))))
    return NULL; /* left dead for dce; the BN stays */
  KILN_TRY(kiln_pass_replace_node(f, bn, &z));
  *done = true;
  return NULL;
}

static kiln_value *single_use_input(const kiln_node *n, uint32_t i, kiln_node **prod) {
  kiln_value *v = kiln_node_input(n, i);
  *prod = v ? kiln_value_producer(v, NULL) : NULL;
  return *prod && kiln_value_use_count(v) == 1 ? v : NULL;
}

/* Remove n when nothing uses its results (the node a fold replaced). */
static kiln_status drop_if_dead(kiln_function *f, kiln_node *n) {
  if (!n)
    return NULL;
  for (uint32_t r = 0; r < kiln_node_result_count(n); r++)
    if (kiln_value_use_count(kiln_node_result(n, r)) > 0)
      return NULL;
  return kiln_function_remove_node(f, n);
}

/* Fold the BatchNormalization bn into the Conv, ConvTranspose or MatMul
 * (+ Add) feeding it. */
static kiln_status fold_bn_node(kiln_function *f, kiln_node *bn, const kiln_pass_options *o,
                                bool *done) {
  kiln_node *p = NULL, *q = NULL;
  if (kiln_node_get_kind(bn) != KILN_NODE_BatchNormalization)
    return NULL;
  if (!single_use_input(bn, 0, &p))
    return NULL;
  kiln_status s = NULL;
  kiln_node_kind pk = kiln_node_get_kind(p);
  if (pk == KILN_NODE_Conv || pk == KILN_NODE_ConvTranspose)
    s = fold_conv(f, bn, p, pk == KILN_NODE_ConvTranspose, done);
  else if (pk == KILN_NODE_MatMul)
    s = fold_matmul(f, bn, p, NULL, done);
  else if (pk == KILN_NODE_Add && single_use_input(p, 0, &q) &&
           kiln_node_get_kind(q) == KILN_NODE_MatMul)
    s = fold_matmul(f, bn, q, kiln_node_input(p, 1), done);
  /* In a module that releases constants, the replaced node and the weights only it
   * read go now: one fold at a time, so a model's original and folded
   * weights are never all alive at once. */
  (void)o;
  if (!s && *done && kiln_module_releases_constants(kiln_function_module(f))) {
    s = drop_if_dead(f, p);
    if (!s && q)
      s = drop_if_dead(f, q);
    kiln_module_remove_unused_constants(kiln_function_module(f));
  }
  if (s)
    s = kiln_status_wrap(s, "bnfold: node '%s'", kiln_node_name(bn));
  return s;
}

kiln_status kiln_pass_fold_bn(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  return kiln_pass_each_node(f, o, fold_bn_node, changes);
}
