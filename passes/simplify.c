/* passes/simplify.c: local algebraic simplifications. Each rule looks at
 * one node and either returns a value to use instead of its result or
 * leaves it alone. A rule only fires when the replacement has exactly the
 * result's type, so broadcasting (x * ones[4,4] with x[4]) never fires. */
#include <stdlib.h>

#include "kiln/ops.h"
#include "pass_util.h"

static bool same_type(const kiln_value *a, const kiln_value *b) {
  return kiln_type_equal(kiln_value_type(a), kiln_value_type(b));
}

/* x*1, 1*x, x+0, 0+x, x-0, x/1, x^1. */
static kiln_value *rule_neutral(const kiln_node *n) {
  kiln_node_kind k = kiln_node_get_kind(n);
  kiln_value *a = kiln_node_input(n, 0), *b = kiln_node_input(n, 1), *y = kiln_node_result(n, 0);
  double one = 1, zero = 0;
  bool commutes = k == KILN_NODE_Mul || k == KILN_NODE_Add;
  double unit;
  if (k == KILN_NODE_Mul || k == KILN_NODE_Div || k == KILN_NODE_Pow)
    unit = one;
  else if (k == KILN_NODE_Add || k == KILN_NODE_Sub)
    unit = zero;
  else
    return NULL;
  if (kiln_pass_const_is(b, unit) && same_type(a, y))
    return a;
  if (commutes && kiln_pass_const_is(a, unit) && same_type(b, y))
    return b;
  return NULL;
}

static bool perm_is_identity(const int64_t *p, uint32_t r) {
  for (uint32_t i = 0; i < r; i++)
    if (p[i] != (int64_t)i)
      return false;
  return true;
}

static kiln_status rule_transpose(kiln_function *f, kiln_node *n, kiln_value **out) {
  kiln_value *x = kiln_node_input(n, 0);
  const kiln_type *xt = kiln_value_type(x);
  uint32_t r = xt->rank;
  int64_t p2[KILN_MAX_RANK];
  kiln_pass_transpose_perm(n, r, p2);
  if (perm_is_identity(p2, r)) {
    *out = x;
    return NULL;
  }
  if (kiln_value_get_kind(x) == KILN_VALUE_CONSTANT) {
    const kiln_type *yt = kiln_value_type(kiln_node_result(n, 0));
    size_t bytes = (size_t)kiln_type_bytes(yt);
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "simplify: no memory for %zu bytes", bytes);
    kiln_pass_transpose_data(kiln_value_data(x), buf, xt, p2, kiln_elem_size(xt->elem));
    kiln_status s = kiln_module_add_constant(kiln_function_module(f), NULL, yt, buf, out);
    free(buf);
    return s;
  }
  kiln_node *inner = kiln_value_producer(x, NULL);
  if (!inner || kiln_node_get_kind(inner) != KILN_NODE_Transpose) {
    /* Moving only axes of size 1 moves no data: the axes of other sizes
     * keep their order, so the result is a Reshape (a view after IRGen).
     * Exporters write these around batch-1 tensors ([1, T, E] -> [T, 1,
     * E]). */
    const kiln_type *yt = kiln_value_type(kiln_node_result(n, 0));
    int64_t last = -1;
    for (uint32_t j = 0; j < r; j++) {
      if (yt->dims[j] == 1)
        continue;
      if (p2[j] < last)
        return NULL;
      last = p2[j];
    }
    kiln_attr_desc a[2] = {KILN_ATTR_I("allowzero", 0), KILN_ATTR_IS("shape", yt->dims, yt->rank)};
    for (uint32_t j = 0; j < yt->rank; j++)
      if (yt->dims[j] == 0)
        a[0].i = 1;
    return kiln_pass_emit(f, n, KILN_NODE_Reshape, &x, 1, a, 2, out);
  }
  kiln_value *src = kiln_node_input(inner, 0);
  int64_t p1[KILN_MAX_RANK], pc[KILN_MAX_RANK];
  kiln_pass_transpose_perm(inner, r, p1);
  /* y2[j] = y1[p2[j]] = x[p1[p2[j]]] (dimension-wise). */
  for (uint32_t j = 0; j < r; j++)
    pc[j] = p1[p2[j]];
  if (perm_is_identity(pc, r)) {
    *out = src;
    return NULL;
  }
  kiln_attr_desc a = KILN_ATTR_IS("perm", pc, r);
  return kiln_pass_emit(f, n, KILN_NODE_Transpose, &src, 1, &a, 1, out);
}

/* Gather of one constant index (a scalar) along axis a of Transpose(x,
 * perm) is the same Gather of x along perm[a], then the remaining axes
 * transposed. torch's MultiheadAttention writes Q, K and V as Gathers 0, 1
 * and 2 of Transpose([B, S, 3, H, D] -> [3, B, H, S, D]): moved before
 * the Transpose, each Gather copies a third of the tensor and what follows
 * is a Transpose that attention fusion reads through strides, where the
 * whole tensor was transposed before. Only where every use of the
 * Transpose is such a Gather, so that it dies. */
static kiln_status rule_gather(kiln_function *f, kiln_node *n, kiln_value **out) {
  *out = NULL;
  kiln_value *t = kiln_node_input(n, 0);
  kiln_node *tr = kiln_value_producer(t, NULL);
  if (!kiln_pass_gather_scalar(n, NULL) || !tr || kiln_node_get_kind(tr) != KILN_NODE_Transpose)
    return NULL;
  uint32_t uses = 0;
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++) {
    kiln_node *u = kiln_function_node(f, i);
    for (uint32_t j = 0; j < kiln_node_input_count(u); j++)
      if (kiln_node_input(u, j) == t) {
        if (j != 0 || !kiln_pass_gather_scalar(u, NULL))
          return NULL;
        uses++;
      }
  }
  if (uses != kiln_value_use_count(t)) /* a function output reads it */
    return NULL;
  kiln_value *x = kiln_node_input(tr, 0);
  const kiln_type *xt = kiln_value_type(x);
  uint32_t r = xt->rank;
  int64_t a = kiln_attrs_int_or(kiln_node_attrs(n), "axis", 0), perm[KILN_MAX_RANK];
  if (r < 2 || a < -(int64_t)r || a >= (int64_t)r)
    return NULL;
  a = a < 0 ? a + r : a;
  kiln_pass_transpose_perm(tr, r, perm);
  int64_t xa = perm[a], rest[KILN_MAX_RANK];
  /* the remaining axes of the result, as positions in Gather(x)'s result */
  for (uint32_t i = 0, j = 0; i < r; i++)
    if ((int64_t)i != a)
      rest[j++] = perm[i] - (perm[i] > xa);
  kiln_value *ins[2] = {x, kiln_node_input(n, 1)}, *g = NULL;
  kiln_attr_desc ga = KILN_ATTR_I("axis", xa), ta = KILN_ATTR_IS("perm", rest, r - 1);
  KILN_TRY(kiln_pass_emit(f, n, KILN_NODE_Gather, ins, 2, &ga, 1, &g));
  return kiln_pass_emit(f, n, KILN_NODE_Transpose, &g, 1, &ta, 1, out);
}

/* A reshape that only drops axes of size 1 from the result of a Transpose
 * used by nothing else is the same Transpose, less those axes, of x with
 * them dropped first: Squeeze(Transpose(x)) -> Transpose(Reshape(x)).
 * torchvision's ViT splits Q, K and V as Gathers of Squeeze(Transpose([1,
 * S, B, 3, E] -> [3, S, B, 1, E])); moved below the Squeeze, the
 * Transpose meets the Gathers, which rule_gather then moves before it.
 * Sets *out to NULL where the rule does not apply. */
static kiln_status rule_squeeze_transpose(kiln_function *f, kiln_node *n, kiln_node *tr,
                                          kiln_value **out) {
  *out = NULL;
  kiln_value *t = kiln_node_result(tr, 0), *x = kiln_node_input(tr, 0);
  const kiln_type *tt = kiln_value_type(t), *yt = kiln_value_type(kiln_node_result(n, 0));
  const kiln_type *xt = kiln_value_type(x);
  uint32_t r = tt->rank;
  if (kiln_value_use_count(t) != 1 || yt->rank >= r || xt->rank != r)
    return NULL;
  /* the Transpose's result axes that the reshape keeps, in order: those
   * it drops must be of size 1 */
  bool keep[KILN_MAX_RANK];
  uint32_t j = 0;
  for (uint32_t i = 0; i < r; i++) {
    keep[i] = j < yt->rank && tt->dims[i] == yt->dims[j];
    if (keep[i])
      j++;
    else if (tt->dims[i] != 1)
      return NULL;
  }
  if (j != yt->rank)
    return NULL;
  int64_t perm[KILN_MAX_RANK], np[KILN_MAX_RANK], xs[KILN_MAX_RANK];
  kiln_pass_transpose_perm(tr, r, perm);
  bool dropx[KILN_MAX_RANK] = {false};
  for (uint32_t i = 0; i < r; i++)
    dropx[perm[i]] = !keep[i];
  /* x without the dropped axes; the kept axes renumbered in it */
  int64_t pos[KILN_MAX_RANK] = {0};
  uint32_t k = 0;
  for (uint32_t a = 0; a < r; a++)
    if (!dropx[a]) {
      pos[a] = k;
      xs[k++] = xt->dims[a];
    }
  for (uint32_t i = 0, q = 0; i < r; i++)
    if (keep[i])
      np[q++] = pos[perm[i]];
  kiln_attr_desc ra[2] = {KILN_ATTR_I("allowzero", 0), KILN_ATTR_IS("shape", xs, k)};
  for (uint32_t a = 0; a < k; a++)
    if (xs[a] == 0)
      ra[0].i = 1;
  kiln_value *x2 = NULL;
  KILN_TRY(kiln_pass_emit(f, n, KILN_NODE_Reshape, &x, 1, ra, 2, &x2));
  if (perm_is_identity(np, k)) {
    *out = x2;
    return NULL;
  }
  kiln_attr_desc ta = KILN_ATTR_IS("perm", np, k);
  return kiln_pass_emit(f, n, KILN_NODE_Transpose, &x2, 1, &ta, 1, out);
}

static kiln_status rule_reshape(kiln_function *f, kiln_node *n, kiln_value **out) {
  kiln_value *x = kiln_node_input(n, 0), *y = kiln_node_result(n, 0);
  if (same_type(x, y)) {
    *out = x;
    return NULL;
  }
  kiln_node *inner = kiln_value_producer(x, NULL);
  if (inner && kiln_node_get_kind(inner) == KILN_NODE_Transpose) {
    KILN_TRY(rule_squeeze_transpose(f, n, inner, out));
    if (*out)
      return NULL;
  }
  if (!inner || !kiln_pass_is_reshape_like(kiln_node_get_kind(inner)))
    return NULL;
  kiln_value *src = kiln_node_input(inner, 0);
  if (same_type(src, y)) {
    *out = src;
    return NULL;
  }
  const kiln_type *yt = kiln_value_type(y);
  bool has_zero = false;
  for (uint32_t i = 0; i < yt->rank; i++)
    has_zero |= yt->dims[i] == 0;
  kiln_attr_desc a[2] = {KILN_ATTR_I("allowzero", has_zero ? 1 : 0),
                         KILN_ATTR_IS("shape", yt->dims, yt->rank)};
  return kiln_pass_emit(f, n, KILN_NODE_Reshape, &src, 1, a, 2, out);
}

/* Transpose x by perm unless perm is the identity. */
static kiln_status emit_perm(kiln_function *f, kiln_node *n, kiln_value *x, const int64_t *perm,
                             uint32_t r, kiln_value **out) {
  if (perm_is_identity(perm, r)) {
    *out = x;
    return NULL;
  }
  kiln_attr_desc a = KILN_ATTR_IS("perm", perm, r);
  return kiln_pass_emit(f, n, KILN_NODE_Transpose, &x, 1, &a, 1, out);
}

/* Reshape x to dims unless it has them. */
static kiln_status emit_shape(kiln_function *f, kiln_node *n, kiln_value *x, const int64_t *dims,
                              uint32_t r, kiln_value **out) {
  const kiln_type *xt = kiln_value_type(x);
  bool same = xt->rank == r;
  for (uint32_t i = 0; same && i < r; i++)
    same = xt->dims[i] == dims[i];
  if (same) {
    *out = x;
    return NULL;
  }
  kiln_attr_desc a[2] = {KILN_ATTR_I("allowzero", 0), KILN_ATTR_IS("shape", dims, r)};
  return kiln_pass_emit(f, n, KILN_NODE_Reshape, &x, 1, a, 2, out);
}

/* A two-operand Einsum that is a (batched) matrix product becomes MatMul:
 * labels in both operands and the result are batch axes, in one operand
 * and the result its rows (M) or columns (N), in both operands only the
 * summed axes (K). Each operand is transposed to [batch, M, K] / [batch,
 * K, N] and its groups of axes merged by a Reshape, and the product is
 * reshaped and transposed back to the result's order; identities are left
 * out (MaxViT's "BGHID,BGHJD->BGHIJ" is MatMul(Q, Transpose(K))). The
 * generic Einsum kernels ran these at 20 MB/s. Not for diagonals,
 * ellipses, a label summed within one operand, or other element types
 * than float. */
static kiln_status rule_einsum(kiln_function *f, kiln_node *n, kiln_value **out) {
  if (kiln_node_input_count(n) != 2 || kiln_node_result_count(n) != 1)
    return NULL;
  kiln_value *a = kiln_node_input(n, 0), *b = kiln_node_input(n, 1);
  const kiln_type *tin[2] = {kiln_value_type(a), kiln_value_type(b)};
  const kiln_type *yt = kiln_value_type(kiln_node_result(n, 0));
  if (!kiln_elem_is_float(yt->elem) || tin[0]->elem != yt->elem || tin[1]->elem != yt->elem)
    return NULL;
  kiln_einsum es;
  kiln_status st = kiln_einsum_decode(kiln_node_attrs(n), tin, 2, &es);
  if (st) { /* not ours to report: the verifier does */
    kiln_status_free(st);
    return NULL;
  }
  if (es.ell_rank)
    return NULL;
  /* where each label is: its axis in a, in b, in the result (-1: absent) */
  int pos[3][KILN_EINSUM_MAX_LABELS];
  for (int t = 0; t < 3; t++)
    for (uint32_t l = 0; l < KILN_EINSUM_MAX_LABELS; l++)
      pos[t][l] = -1;
  for (int t = 0; t < 2; t++)
    for (uint32_t d = 0; d < es.rank[t]; d++) {
      if (pos[t][es.label[t][d]] >= 0)
        return NULL; /* a diagonal */
      pos[t][es.label[t][d]] = (int)d;
    }
  for (uint32_t d = 0; d < es.out_rank; d++)
    pos[2][es.out_label[d]] = (int)d;
  /* the groups, batch, M and N in the result's order, K in a's */
  int bl[KILN_MAX_RANK], ml[KILN_MAX_RANK], nl[KILN_MAX_RANK], kl[KILN_MAX_RANK];
  uint32_t nb = 0, nm = 0, nn = 0, nk = 0;
  for (uint32_t d = 0; d < es.out_rank; d++) {
    int l = es.out_label[d];
    if (pos[0][l] >= 0 && pos[1][l] >= 0) {
      if (tin[0]->dims[pos[0][l]] != tin[1]->dims[pos[1][l]])
        return NULL; /* broadcast along a batch axis */
      bl[nb++] = l;
    } else if (pos[0][l] >= 0) {
      ml[nm++] = l;
    } else {
      nl[nn++] = l;
    }
  }
  for (uint32_t d = 0; d < es.rank[0]; d++) {
    int l = es.label[0][d];
    if (pos[2][l] >= 0)
      continue;
    if (pos[1][l] < 0 || tin[0]->dims[d] != tin[1]->dims[pos[1][l]])
      return NULL; /* summed within a alone, or broadcast */
    kl[nk++] = l;
  }
  for (uint32_t d = 0; d < es.rank[1]; d++)
    if (pos[2][es.label[1][d]] < 0 && pos[0][es.label[1][d]] < 0)
      return NULL; /* summed within b alone */
  int64_t pa[KILN_MAX_RANK], pb[KILN_MAX_RANK], sa[KILN_MAX_RANK], sb[KILN_MAX_RANK];
  int64_t sc[KILN_MAX_RANK], py[KILN_MAX_RANK], M = 1, N = 1, K = 1;
  uint32_t ra = 0, rb = 0, rc = 0;
  for (uint32_t i = 0; i < nb; i++) {
    pa[ra++] = pos[0][bl[i]], pb[rb++] = pos[1][bl[i]];
    sa[i] = sb[i] = sc[rc++] = tin[0]->dims[pos[0][bl[i]]];
  }
  for (uint32_t i = 0; i < nm; i++)
    pa[ra++] = pos[0][ml[i]], M *= tin[0]->dims[pos[0][ml[i]]];
  for (uint32_t i = 0; i < nk; i++) {
    pa[ra++] = pos[0][kl[i]], pb[rb++] = pos[1][kl[i]];
    K *= tin[0]->dims[pos[0][kl[i]]];
  }
  for (uint32_t i = 0; i < nn; i++)
    pb[rb++] = pos[1][nl[i]], N *= tin[1]->dims[pos[1][nl[i]]];
  for (uint32_t i = 0; i < nm; i++)
    sc[rc++] = tin[0]->dims[pos[0][ml[i]]];
  for (uint32_t i = 0; i < nn; i++)
    sc[rc++] = tin[1]->dims[pos[1][nl[i]]];
  sa[nb] = M, sa[nb + 1] = K, sb[nb] = K, sb[nb + 1] = N;
  /* the product's axes [batch, M, N] to the result's order */
  for (uint32_t d = 0; d < es.out_rank; d++) {
    int l = es.out_label[d];
    uint32_t at = 0;
    for (uint32_t i = 0; i < nb; i++)
      at = bl[i] == l ? i : at;
    for (uint32_t i = 0; i < nm; i++)
      at = ml[i] == l ? nb + i : at;
    for (uint32_t i = 0; i < nn; i++)
      at = nl[i] == l ? nb + nm + i : at;
    py[d] = at;
  }
  kiln_value *a1, *a2, *b1, *b2, *c, *c1;
  KILN_TRY(emit_perm(f, n, a, pa, ra, &a1));
  KILN_TRY(emit_shape(f, n, a1, sa, nb + 2, &a2));
  KILN_TRY(emit_perm(f, n, b, pb, rb, &b1));
  KILN_TRY(emit_shape(f, n, b1, sb, nb + 2, &b2));
  kiln_value *mm[2] = {a2, b2};
  KILN_TRY(kiln_pass_emit(f, n, KILN_NODE_MatMul, mm, 2, NULL, 0, &c));
  KILN_TRY(emit_shape(f, n, c, sc, rc, &c1));
  KILN_TRY(emit_perm(f, n, c1, py, rc, out));
  if (!same_type(*out, kiln_node_result(n, 0)))
    *out = NULL; /* left dead for dce */
  return NULL;
}

static kiln_status simplify_node(kiln_function *f, kiln_node *n, kiln_value **out) {
  *out = NULL;
  kiln_node_kind k = kiln_node_get_kind(n);
  switch (k) {
  case KILN_NODE_Add:
  case KILN_NODE_Sub:
  case KILN_NODE_Mul:
  case KILN_NODE_Div:
  case KILN_NODE_Pow:
    *out = rule_neutral(n);
    return NULL;
  case KILN_NODE_Identity:
    *out = kiln_node_input(n, 0);
    return NULL;
  case KILN_NODE_Dropout:
    if (kiln_node_result_count(n) < 2 || kiln_value_use_count(kiln_node_result(n, 1)) == 0)
      *out = kiln_node_input(n, 0);
    return NULL;
  case KILN_NODE_Cast:
  case KILN_NODE_Expand:
    if (same_type(kiln_node_input(n, 0), kiln_node_result(n, 0)))
      *out = kiln_node_input(n, 0);
    return NULL;
  case KILN_NODE_Transpose:
    return rule_transpose(f, n, out);
  case KILN_NODE_Gather:
    return rule_gather(f, n, out);
  case KILN_NODE_Einsum:
    return rule_einsum(f, n, out);
  case KILN_NODE_Reshape:
  case KILN_NODE_Flatten:
  case KILN_NODE_Squeeze:
  case KILN_NODE_Unsqueeze:
    return rule_reshape(f, n, out);
  default:
    return NULL;
  }
}

/* simplify_node, then the node's replacement, with the node named in a
 * failure of the rules. */
static kiln_status simplify_one(kiln_function *f, kiln_node *nd, const kiln_pass_options *o,
                                bool *done) {
  (void)o;
  kiln_value *repl = NULL;
  kiln_status s = simplify_node(f, nd, &repl);
  if (s)
    return kiln_status_wrap(s, "simplify: node '%s' (%s)", kiln_node_name(nd),
                            kiln_node_kind_name(kiln_node_get_kind(nd)));
  if (!repl)
    return NULL;
  kiln_value *all[2] = {repl, NULL};
  *done = true;
  return kiln_pass_replace_node(f, nd, all);
}

kiln_status kiln_pass_simplify(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  return kiln_pass_each_node(f, o, simplify_one, changes);
}
