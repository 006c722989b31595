/* ir/infer/linalg.c: inference of MatMul (numpy matmul semantics: rank-1
 * operands are promoted and the added dim dropped, batch dims broadcast),
 * Gemm, Einsum, Det and ScaledDotProductAttention (Q, K, V read through
 * their gathers and perms). */
#include <string.h>

#include "infer.h"
#include "kiln/ops.h"

#define MATMUL_TYPES                                                                               \
  (KILN_INFER_FLOAT | KILN_INFER_M(KILN_I32) | KILN_INFER_M(KILN_I64) | KILN_INFER_M(KILN_U32) |   \
   KILN_INFER_M(KILN_U64))

kiln_status kiln_infer_matmul_shape(const char *kind, const kiln_type *a, const kiln_type *b,
                                    int64_t *dims, uint32_t *rank) {
  if (a->rank == 0 || b->rank == 0)
    return kiln_infer_fail(kind, "operands must have rank >= 1: input 0 is %s, input 1 is %s",
                           KILN_INFER_TS(a), KILN_INFER_TS(b));
  /* Promote rank-1 operands: a as a row [1,K], b as a column [K,1]. */
  kiln_type pa = *a, pb = *b;
  if (a->rank == 1) {
    pa.rank = 2, pa.dims[0] = 1, pa.dims[1] = a->dims[0];
  }
  if (b->rank == 1) {
    pb.rank = 2, pb.dims[0] = b->dims[0], pb.dims[1] = 1;
  }
  int64_t k_a = pa.dims[pa.rank - 1], k_b = pb.dims[pb.rank - 2];
  if (k_a != k_b)
    return kiln_infer_fail(kind, "inner dimensions differ: input 0 is %s, input 1 is %s",
                           KILN_INFER_TS(a), KILN_INFER_TS(b));
  /* Broadcast the batch dims (all but the last two). */
  kiln_type ba = pa, bb = pb;
  ba.rank = pa.rank - 2, bb.rank = pb.rank - 2;
  const kiln_type *batch[2] = {&ba, &bb};
  int64_t bd[KILN_MAX_RANK];
  uint32_t br;
  kiln_status s = kiln_infer_broadcast(kind, batch, 2, bd, &br);
  if (s) {
    kiln_status_free(s);
    return kiln_infer_fail(kind, "batch dimensions do not broadcast: input 0 is %s, input 1 is %s",
                           KILN_INFER_TS(a), KILN_INFER_TS(b));
  }
  uint32_t r = 0;
  for (uint32_t i = 0; i < br; i++)
    dims[r++] = bd[i];
  if (a->rank != 1)
    dims[r++] = pa.dims[pa.rank - 2];
  if (b->rank != 1)
    dims[r++] = pb.dims[pb.rank - 1];
  *rank = r;
  return NULL;
}

kiln_status kiln_infer_MatMul(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  KILN_TRY(kiln_infer_check_elem("MatMul", "input 0", in[0], MATMUL_TYPES));
  KILN_TRY(kiln_infer_same_elem("MatMul", "input 0", in[0], "input 1", in[1]));
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_matmul_shape("MatMul", in[0], in[1], dims, &rank));
  KILN_TRY(kiln_infer_make("MatMul", in[0]->elem, rank, dims, out));
  return kiln_infer_activation("MatMul", attrs, out);
}

kiln_status kiln_infer_Gemm(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)n_results;
  const kiln_type *a = in[0], *b = in[1];
  KILN_TRY(kiln_infer_check_elem("Gemm", "input 0", a, MATMUL_TYPES));
  KILN_TRY(kiln_infer_same_elem("Gemm", "input 0", a, "input 1", b));
  KILN_TRY(kiln_infer_check_rank("Gemm", "input 0 (A)", a, 2, false));
  KILN_TRY(kiln_infer_check_rank("Gemm", "input 1 (B)", b, 2, false));
  bool ta = kiln_attrs_int_or(attrs, "transA", 0) != 0;
  bool tb = kiln_attrs_int_or(attrs, "transB", 0) != 0;
  int64_t m = a->dims[ta ? 1 : 0], ka = a->dims[ta ? 0 : 1];
  int64_t kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
  if (ka != kb)
    return kiln_infer_fail("Gemm",
                           "inner dimensions differ: input 0 is %s (transA=%d), input 1 is %s "
                           "(transB=%d)",
                           KILN_INFER_TS(a), ta, KILN_INFER_TS(b), tb);
  int64_t dims[2] = {m, n};
  KILN_TRY(kiln_infer_make("Gemm", a->elem, 2, dims, out));
  if (n_in > 2 && in[2]) {
    KILN_TRY(kiln_infer_same_elem("Gemm", "input 0", a, "input 2 (C)", in[2]));
    if (!kiln_infer_broadcasts_to(in[2], out))
      return kiln_infer_fail("Gemm", "input 2 (C) %s does not broadcast to the result [%lld,%lld]",
                             KILN_INFER_TS(in[2]), (long long)m, (long long)n);
  }
  return kiln_infer_activation("Gemm", attrs, out);
}

/* ---- Einsum ---- */

/* The equation is parsed by kiln_einsum_decode (ir/ops/einsum.c), whose
 * messages are this rule's. */
kiln_status kiln_infer_Einsum(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_results;
  for (uint32_t i = 0; i < n_in; i++)
    KILN_TRY(kiln_infer_same_elem("Einsum", "input 0", in[0], "another input", in[i]));
  KILN_TRY(kiln_infer_check_elem("Einsum", "input 0", in[0], KILN_INFER_NUM));
  kiln_einsum es;
  KILN_TRY(kiln_einsum_decode(attrs, in, n_in, &es));
  int64_t dims[KILN_MAX_RANK];
  for (uint32_t k = 0; k < es.out_rank; k++)
    dims[k] = es.size[es.out_label[k]];
  return kiln_infer_make("Einsum", in[0]->elem, es.out_rank, dims, out);
}

kiln_status kiln_infer_Det(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                           uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem("Det", "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank("Det", "input 0", x, 2, true));
  if (x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return kiln_infer_fail("Det", "input 0 %s is not a stack of square matrices", KILN_INFER_TS(x));
  return kiln_infer_make("Det", x->elem, x->rank - 2, x->dims, out);
}

/* Reads a 4-entry permutation attribute (identity when absent). */
static kiln_status sdpa_perm(const kiln_attrs *attrs, const char *name, int64_t *perm) {
  const kiln_attr *a = kiln_attrs_find(attrs, name);
  for (int i = 0; i < 4; i++)
    perm[i] = i;
  if (!a)
    return NULL;
  const int64_t *v = kiln_attr_ints(a);
  if (!v || kiln_attr_len(a) != 4)
    return kiln_infer_fail("ScaledDotProductAttention", "attribute '%s' must be 4 ints", name);
  bool seen[4] = {0};
  for (int i = 0; i < 4; i++) {
    if (v[i] < 0 || v[i] > 3 || seen[v[i]])
      return kiln_infer_fail("ScaledDotProductAttention",
                             "attribute '%s' is not a permutation of 0..3", name);
    seen[v[i]] = true;
    perm[i] = v[i];
  }
  return NULL;
}

/* The 4-D dims of operand t before its perm: t itself, or with a gather
 * attribute [axis, index], t (5-D) less that axis. */
static kiln_status sdpa_gathered(const kiln_type *t, const kiln_attrs *attrs, const char *name,
                                 const char *operand, int64_t *dims) {
  static const char *const K = "ScaledDotProductAttention";
  const kiln_attr *a = kiln_attrs_find(attrs, name);
  if (!a) {
    KILN_TRY(kiln_infer_check_rank(K, operand, t, 4, false));
    memcpy(dims, t->dims, 4 * sizeof *dims);
    return NULL;
  }
  const int64_t *v = kiln_attr_ints(a);
  if (!v || kiln_attr_len(a) != 2)
    return kiln_infer_fail(K, "attribute '%s' must be 2 ints (axis, index)", name);
  KILN_TRY(kiln_infer_check_rank(K, operand, t, 5, false));
  if (v[0] < 0 || v[0] > 4 || v[1] < 0 || v[1] >= t->dims[v[0]])
    return kiln_infer_fail(K, "attribute '%s' = [%lld, %lld] is not an axis of %s %s and an "
                              "index within it",
                           name, (long long)v[0], (long long)v[1], operand, KILN_INFER_TS(t));
  for (int j = 0, k = 0; j < 5; j++)
    if (j != v[0])
      dims[k++] = t->dims[j];
  return NULL;
}

kiln_status kiln_infer_ScaledDotProductAttention(const kiln_type *const *in, uint32_t n_in,
                                                 const kiln_attrs *attrs, uint32_t n_results,
                                                 kiln_type *out) {
  (void)n_results;
  static const char *const K = "ScaledDotProductAttention";
  static const char *const names[3] = {"q_perm", "k_perm", "v_perm"};
  static const char *const gathers[3] = {"q_gather", "k_gather", "v_gather"};
  int64_t d[3][4], perm[4], g[4];
  for (int i = 0; i < 3; i++) {
    const char *operand = i == 0 ? "Q" : i == 1 ? "K" : "V";
    KILN_TRY(kiln_infer_check_elem(K, operand, in[i], KILN_INFER_FLOAT));
    if (i)
      KILN_TRY(kiln_infer_same_elem(K, "Q", in[0], operand, in[i]));
    KILN_TRY(sdpa_gathered(in[i], attrs, gathers[i], operand, g));
    KILN_TRY(sdpa_perm(attrs, names[i], perm));
    for (int j = 0; j < 4; j++)
      d[i][j] = g[perm[j]];
  }
  /* d[i] are the logical [B, H, S, D] shapes */
  if (d[1][0] != d[0][0] || d[2][0] != d[0][0] || d[1][1] != d[0][1] || d[2][1] != d[0][1] ||
      d[1][3] != d[0][3] || d[2][2] != d[1][2])
    return kiln_infer_fail(K,
                           "Q %s, K %s and V %s (as [B, H, S, D] after their perms) do not "
                           "agree: B and H must match, K's D must be Q's and V's S K's",
                           KILN_INFER_DS(d[0], 4), KILN_INFER_DS(d[1], 4), KILN_INFER_DS(d[2], 4));
  if (n_in > 3 && in[3]) {
    const kiln_type *m = in[3];
    if (m->elem != KILN_BOOL)
      KILN_TRY(kiln_infer_same_elem(K, "Q", in[0], "mask", m));
    kiln_type scores;
    int64_t sd[4] = {d[0][0], d[0][1], d[0][2], d[1][2]};
    KILN_TRY(kiln_type_make(in[0]->elem, 4, sd, &scores));
    if (m->rank > 4 || !kiln_infer_broadcasts_to(m, &scores))
      return kiln_infer_fail(K, "mask %s does not broadcast to the scores %s", KILN_INFER_TS(m),
                             KILN_INFER_DS(sd, 4));
  }
  KILN_TRY(sdpa_perm(attrs, "out_perm", perm));
  int64_t logical[4] = {d[0][0], d[0][1], d[0][2], d[2][3]}, od[4];
  for (int j = 0; j < 4; j++)
    od[j] = logical[perm[j]];
  return kiln_infer_make(K, in[0]->elem, 4, od, out);
}
