/* passes/lower_linalg.c: lowering rules for Gemm (Transpose, MatMul, scaled
 * Add) and Einsum. The Einsum lowering: Each operand's repeated
 * labels are first reduced to their diagonal (Mul by an identity mask, then
 * ReduceSum), each operand is transposed into one global label order and
 * reshaped with 1s for the labels it lacks, the operands are multiplied
 * with broadcasting, the labels absent from the output are summed away,
 * and a Transpose puts the rest in output order. The broadcast product is
 * as large as all labels together, which is fine for the static shapes
 * Einsum sees in practice, and exact up to summation order (exact for
 * integers, which take the same path). */
#include <stdlib.h>
#include <string.h>

#include "lower_rules.h"

#define EIN_LABELS (52 + KILN_MAX_RANK) /* a-z, A-Z, then ellipsis dims */
#define EIN_MAX_OPS 8

static int ein_label(char ch) {
  if (ch >= 'a' && ch <= 'z')
    return ch - 'a';
  if (ch >= 'A' && ch <= 'Z')
    return 26 + ch - 'A';
  return -1;
}

/* Parse one term (from s to e) for an operand of rank `rank` (or, for the
 * output, rank < 0 with ell = the ellipsis width); fills lab and returns
 * the term's rank, or -1 when malformed. */
static int ein_term(const char *s, const char *e, int rank, int ell_out, int *lab, int *ell) {
  int letters = 0, has_ell = 0;
  for (const char *p = s; p < e; p++) {
    if (*p == '.') {
      if (e - p < 3 || p[1] != '.' || p[2] != '.' || has_ell)
        return -1;
      has_ell = 1;
      p += 2;
    } else if (ein_label(*p) >= 0)
      letters++;
    else if (*p != ' ')
      return -1;
  }
  int width = has_ell ? (rank >= 0 ? rank - letters : ell_out) : 0;
  if (width < 0 || (rank >= 0 && letters + width != rank) || letters + width > KILN_MAX_RANK)
    return -1;
  int k = 0;
  for (const char *p = s; p < e; p++) {
    if (*p == '.') {
      for (int i = 0; i < width; i++)
        lab[k++] = 52 + (ell_out - width) + i; /* right-aligned ellipsis dims */
      p += 2;
    } else if (ein_label(*p) >= 0)
      lab[k++] = ein_label(*p);
  }
  if (ell)
    *ell = width;
  return k;
}

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
  const char *eq = kiln_attrs_string_or(kiln_node_attrs(c->n), "equation", "");
  uint32_t nops = kiln_node_input_count(c->n);
  /* Mul, ReduceSum and the identity mask work for every numeric type, and
   * their integer forms wrap as the interpreter's direct sum does. */
  if (nops == 0 || nops > EIN_MAX_OPS || c->elem == KILN_BOOL)
    return false;
  const char *arrow = strstr(eq, "->"), *end = arrow ? arrow : eq + strlen(eq);
  int lab[EIN_MAX_OPS][KILN_MAX_RANK], rank[EIN_MAX_OPS], ell[EIN_MAX_OPS], max_ell = 0;
  const char *s = eq;
  /* first pass: widths of the ellipses */
  for (uint32_t i = 0; i < nops; i++) {
    const char *e = memchr(s, ',', (size_t)(end - s));
    if (!e)
      e = end;
    if ((i + 1 < nops) != (e != end))
      return false;
    const kiln_type *t = lower_tin(c, i);
    if (ein_term(s, e, (int)t->rank, 0, lab[i], &ell[i]) < 0)
      return false;
    max_ell = ell[i] > max_ell ? ell[i] : max_ell;
    s = e + 1;
  }
  s = eq;
  int count[EIN_LABELS] = {0};
  for (uint32_t i = 0; i < nops; i++) {
    const char *e = memchr(s, ',', (size_t)(end - s));
    if (!e)
      e = end;
    const kiln_type *t = lower_tin(c, i);
    rank[i] = ein_term(s, e, (int)t->rank, max_ell, lab[i], NULL);
    for (int d = 0; d < rank[i]; d++) {
      count[lab[i][d]]++;
    }
    s = e + 1;
  }
  int out[KILN_MAX_RANK], orank = 0;
  if (arrow) {
    orank = ein_term(arrow + 2, arrow + strlen(arrow), -1, max_ell, out, NULL);
    if (orank < 0)
      return false;
  } else { /* implicit: ellipsis dims, then labels seen once, sorted */
    for (int l = 52; l < 52 + max_ell; l++)
      out[orank++] = l;
    for (int l = 0; l < 52 && orank < KILN_MAX_RANK; l++)
      if (count[l] == 1)
        out[orank++] = l;
  }
  /* global order: output labels first, then the summed ones */
  int order[EIN_LABELS], nl = 0, pos[EIN_LABELS];
  for (int l = 0; l < EIN_LABELS; l++)
    pos[l] = -1;
  for (int k = 0; k < orank; k++) {
    if (!count[out[k]] || pos[out[k]] >= 0)
      return false;
    pos[out[k]] = nl, order[nl++] = out[k];
  }
  for (int l = 0; l < EIN_LABELS; l++)
    if (count[l] && pos[l] < 0)
      pos[l] = nl, order[nl++] = l;
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
