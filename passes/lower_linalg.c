/* passes/lower_linalg.c: lowering rules for Gemm (Transpose, MatMul, scaled
 * Add), ScaledDotProductAttention (the MatMul, Softmax, MatMul chain it was
 * built from, with its perms as Transposes) and Einsum. The Einsum lowering: Each operand's repeated
 * labels are first reduced to their diagonal (Mul by an identity mask, then
 * ReduceSum), each operand is transposed into one global label order and
 * reshaped with 1s for the labels it lacks, the operands are multiplied
 * with broadcasting, the labels absent from the output are summed away,
 * and a Transpose puts the rest in output order. The broadcast product is
 * as large as all labels together, which is fine for the static shapes
 * Einsum sees in practice, and exact up to summation order (exact for
 * integers, which take the same path). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/ops.h"
#include "lower_rules.h"

#define EIN_MAX_OPS 8

typedef struct ein_diag {
  int64_t n, rank, p, q;
  int64_t dims[KILN_MAX_RANK];
} ein_diag;

static double ein_eye(int64_t i, const void *u) {
  const ein_diag *d = u;
  int64_t idx[KILN_MAX_RANK];
  for (int64_t a = d->rank - 1; a >= 0; a--) {
    idx[a] = i % d->dims[a];
    i /= d->dims[a];
  }
  return idx[d->p] == idx[d->q] ? 1.0 : 0.0;
}

bool kiln_lower_Einsum(kiln_lower_ctx *c, kiln_value **r) {
  uint32_t nops = kiln_node_input_count(c->n);
  /* Mul, ReduceSum and the identity mask work for every numeric type, and
   * their integer forms wrap as the interpreter's direct sum does. */
  if (nops == 0 || nops > EIN_MAX_OPS || c->elem == KILN_BOOL)
    return false;
  const kiln_type *tin[EIN_MAX_OPS];
  for (uint32_t i = 0; i < nops; i++)
    tin[i] = lower_tin(c, i);
  kiln_einsum es;
  kiln_status st = kiln_einsum_decode(kiln_node_attrs(c->n), tin, nops, &es);
  if (st) {
    kiln_status_free(st);
    return false;
  }
  int lab[EIN_MAX_OPS][KILN_MAX_RANK], rank[EIN_MAX_OPS];
  for (uint32_t i = 0; i < nops; i++) {
    rank[i] = (int)es.rank[i];
    for (int d = 0; d < rank[i]; d++)
      lab[i][d] = es.label[i][d];
  }
  int orank = (int)es.out_rank;
  /* global order: output labels first, then the summed ones */
  int order[KILN_EINSUM_MAX_LABELS], nl = 0;
  for (int k = 0; k < orank; k++)
    order[nl++] = es.out_label[k];
  for (uint32_t k = 0; k < es.n_summed; k++)
    order[nl++] = es.summed[k];
  if (nl > KILN_MAX_RANK)
    return false;
  kiln_value *acc = NULL;
  for (uint32_t i = 0; i < nops; i++) {
    kiln_value *x = kiln_node_input(c->n, i);
    int *lb = lab[i], rk = rank[i];
    for (int p = 0; p < rk; p++)
      for (int q = p + 1; q < rk; q++) {
        if (lb[p] != lb[q])
          continue;
        const kiln_type *t = kiln_value_type(x);
        if (!t || c->s)
          return true;
        ein_diag dg = {.rank = rk, .p = p, .q = q};
        for (int d = 0; d < rk; d++)
          dg.dims[d] = d == p || d == q ? t->dims[p] : 1;
        kiln_type mt;
        c->s = kiln_type_make(c->elem, (uint32_t)rk, dg.dims, &mt);
        if (c->s)
          return true;
        int64_t ax = q;
        x = lower_reduce(c, KILN_NODE_ReduceSum,
                         lower_bin(c, KILN_NODE_Mul, x, kiln_lower_const_fn(c, &mt, ein_eye, &dg)),
                         &ax, 1, 0);
        memmove(lb + q, lb + q + 1, sizeof(int) * (size_t)(rk - q - 1));
        rk--, q--;
      }
    /* transpose into global order, then reshape to all nl labels */
    int64_t perm[KILN_MAX_RANK], shape[KILN_MAX_RANK];
    int k = 0;
    bool ident = true;
    for (int g = 0; g < nl; g++)
      for (int d = 0; d < rk; d++)
        if (lb[d] == order[g]) {
          ident &= d == k;
          perm[k++] = d;
        }
    if (!ident)
      x = lower_transpose(c, x, perm, (uint32_t)rk);
    const kiln_type *t = kiln_value_type(x);
    if (c->s || !t)
      return true;
    k = 0;
    for (int g = 0; g < nl; g++) {
      bool has = false;
      for (int d = 0; d < rk; d++)
        has |= lb[d] == order[g];
      shape[g] = has ? t->dims[k++] : 1;
    }
    if ((int)t->rank != nl)
      x = lower_reshape(c, x, shape, (uint32_t)nl);
    acc = acc ? lower_bin(c, KILN_NODE_Mul, acc, x) : x;
  }
  if (nl > orank) {
    int64_t axes[KILN_MAX_RANK];
    for (int g = orank; g < nl; g++)
      axes[g - orank] = g;
    acc = lower_reduce(c, KILN_NODE_ReduceSum, acc, axes, (uint32_t)(nl - orank), 0);
  }
  if (acc == kiln_node_input(c->n, 0))
    acc = lower_un(c, KILN_NODE_Identity, acc);
  r[0] = acc;
  return true;
}

bool kiln_lower_Gemm(kiln_lower_ctx *c, kiln_value **r) {
  kiln_value *a = kiln_node_input(c->n, 0), *b = kiln_node_input(c->n, 1),
             *cc = kiln_node_input_count(c->n) > 2 ? kiln_node_input(c->n, 2) : NULL;
  int64_t perm[2] = {1, 0};
  kiln_attr_desc pa = KILN_ATTR_IS("perm", perm, 2);
  if (kiln_attrs_int_or(kiln_node_attrs(c->n), "transA", 0))
    a = lower_emit(c, KILN_NODE_Transpose, &a, 1, &pa, 1);
  if (kiln_attrs_int_or(kiln_node_attrs(c->n), "transB", 0))
    b = lower_emit(c, KILN_NODE_Transpose, &b, 1, &pa, 1);
  kiln_value *y = lower_bin(c, KILN_NODE_MatMul, a, b);
  double alpha = lower_fattr(c, "alpha", 1), beta = lower_fattr(c, "beta", 1);
  if (alpha != 1)
    y = lower_bin(c, KILN_NODE_Mul, y, lower_sc(c, alpha));
  if (cc && beta != 0) {
    if (beta != 1)
      cc = lower_bin(c, KILN_NODE_Mul, cc, lower_sc(c, beta));
    y = lower_bin(c, KILN_NODE_Add, y, cc);
  }
  r[0] = y;
  return true;
}

/* The input i of an attention node as a logical [B, H, S, D] tensor: a
 * Gather by its gather attribute [axis, index] (none when absent), then a
 * Transpose by its perm attribute (none for the identity). */
static kiln_value *sdpa_operand(kiln_lower_ctx *c, uint32_t i, const char *perm_name,
                                const char *gather_name) {
  int64_t perm[4] = {0, 1, 2, 3}, g[2] = {-1, 0};
  lower_ints(c, perm_name, perm, 4);
  lower_ints(c, gather_name, g, 2);
  kiln_value *x = kiln_node_input(c->n, i);
  if (g[0] >= 0) {
    kiln_value *in[2] = {x, lower_sce(c, KILN_I64, (double)g[1])};
    kiln_attr_desc a = KILN_ATTR_I("axis", g[0]);
    x = lower_emit(c, KILN_NODE_Gather, in, 2, &a, 1);
  }
  bool ident = perm[0] == 0 && perm[1] == 1 && perm[2] == 2 && perm[3] == 3;
  return ident ? x : lower_transpose(c, x, perm, 4);
}

bool kiln_lower_ScaledDotProductAttention(kiln_lower_ctx *c, kiln_value **r) {
  kiln_value *q = sdpa_operand(c, 0, "q_perm", "q_gather"),
             *k = sdpa_operand(c, 1, "k_perm", "k_gather"),
             *v = sdpa_operand(c, 2, "v_perm", "v_gather"), *mask = lower_in(c, 3);
  static const int64_t kt_perm[4] = {0, 1, 3, 2};
  if (!q || !k || !v)
    return true; /* c->s says why */
  double scale = lower_fattr(c, "scale", 1.0 / sqrt((double)kiln_value_type(q)->dims[3]));
  kiln_value *s = lower_bin(c, KILN_NODE_MatMul, q, lower_transpose(c, k, kt_perm, 4));
  if (scale != 1)
    s = lower_bin(c, KILN_NODE_Mul, s, lower_sc(c, scale));
  if (mask && kiln_value_type(mask)->elem == KILN_BOOL)
    s = lower_where(c, mask, s, lower_sc(c, lower_fattr(c, "mask_fill", -INFINITY)));
  else if (mask)
    s = lower_bin(c, KILN_NODE_Add, s, mask);
  kiln_attr_desc ax = KILN_ATTR_I("axis", -1);
  kiln_value *p = lower_emit(c, KILN_NODE_Softmax, &s, 1, &ax, 1);
  kiln_value *o = lower_bin(c, KILN_NODE_MatMul, p, v);
  int64_t operm[4] = {0, 1, 2, 3};
  lower_ints(c, "out_perm", operm, 4);
  if (operm[0] != 0 || operm[1] != 1 || operm[2] != 2 || operm[3] != 3)
    o = lower_transpose(c, o, operm, 4);
  r[0] = o;
  return true;
}
