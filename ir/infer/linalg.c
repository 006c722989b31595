/* ir/infer/linalg.c: inference of MatMul (numpy matmul semantics: rank-1
 * operands are promoted and the added dim dropped, batch dims broadcast),
 * Gemm, Einsum and Det. */
#include <string.h>

#include "infer.h"

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

/* Einsum: the equation parser. It reads the equation (terms of
 * letters with at most one "..." each, optional "->" output), checks that a
 * letter has one size everywhere, broadcasts the ellipsis dims, and builds the
 * output in explicit or implicit (numpy) form. */
#define EINSUM_MAX_TERMS 16

typedef struct einsum_state {
  int64_t size[128]; /* per letter, -1 = not seen */
  int count[128];    /* occurrences over all inputs */
  int64_t ell[KILN_MAX_RANK];
  uint32_t ell_rank;
  bool ell_seen;
} einsum_state;

static bool is_label(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Walk one input term [p, e) against type t. */
static kiln_status einsum_term(const char *eq, const char *p, const char *e, uint32_t idx,
                               const kiln_type *t, einsum_state *st) {
  uint32_t letters = 0;
  bool ell = false;
  for (const char *q = p; q < e; q++) {
    if (is_label(*q)) {
      letters++;
    } else if (*q == '.' && q + 2 < e && q[1] == '.' && q[2] == '.' && !ell) {
      ell = true;
      q += 2;
    } else {
      return kiln_infer_fail("Einsum", "equation \"%s\": term %u has an invalid character '%c'", eq,
                             idx, *q);
    }
  }
  if (ell ? letters > t->rank : letters != t->rank)
    return kiln_infer_fail("Einsum", "equation \"%s\": term %u has %u labels but input %u is %s",
                           eq, idx, letters, idx, KILN_INFER_TS(t));
  uint32_t er = t->rank - letters, d = 0;
  for (const char *q = p; q < e; q++) {
    if (*q == '.') {
      /* Broadcast this term's ellipsis dims into the running ones. */
      uint32_t nr = er > st->ell_rank ? er : st->ell_rank;
      int64_t next[KILN_MAX_RANK];
      for (uint32_t k = 0; k < nr; k++) {
        int64_t a = k + st->ell_rank >= nr ? st->ell[k + st->ell_rank - nr] : 1;
        int64_t b = k + er >= nr ? t->dims[d + k + er - nr] : 1;
        if (st->ell_seen && a != b && a != 1 && b != 1)
          return kiln_infer_fail("Einsum",
                                 "equation \"%s\": the '...' dims of input %u (%s) do not "
                                 "broadcast with earlier inputs",
                                 eq, idx, KILN_INFER_TS(t));
        next[k] = (!st->ell_seen || a == 1) ? b : a;
      }
      memcpy(st->ell, next, sizeof next);
      st->ell_rank = nr;
      st->ell_seen = true;
      d += er;
      q += 2;
      continue;
    }
    int c = (unsigned char)*q;
    int64_t dim = t->dims[d++];
    if (st->size[c] >= 0 && st->size[c] != dim)
      return kiln_infer_fail("Einsum",
                             "equation \"%s\": label '%c' has size %lld in input %u (%s) but "
                             "%lld elsewhere",
                             eq, *q, (long long)dim, idx, KILN_INFER_TS(t), (long long)st->size[c]);
    st->size[c] = dim;
    st->count[c]++;
  }
  return NULL;
}

kiln_status kiln_infer_Einsum(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_results;
  const kiln_attr *at = kiln_attrs_find(attrs, "equation");
  if (!at || kiln_attr_get_kind(at) != KILN_ATTR_STRING)
    return kiln_infer_fail("Einsum", "attribute 'equation' (a string) is required");
  /* Work on a copy without spaces. */
  char eq[256];
  size_t n = 0;
  for (const char *s = kiln_attr_string(at); *s; s++) {
    if (*s == ' ')
      continue;
    if (n + 1 >= sizeof eq)
      return kiln_infer_fail("Einsum", "equation is longer than %zu characters", sizeof eq - 1);
    eq[n++] = *s;
  }
  eq[n] = '\0';
  for (uint32_t i = 0; i < n_in; i++)
    KILN_TRY(kiln_infer_same_elem("Einsum", "input 0", in[0], "another input", in[i]));
  KILN_TRY(kiln_infer_check_elem("Einsum", "input 0", in[0], KILN_INFER_NUM));
  einsum_state st;
  memset(&st, 0, sizeof st);
  for (int c = 0; c < 128; c++)
    st.size[c] = -1;
  const char *arrow = strstr(eq, "->");
  const char *lhs_end = arrow ? arrow : eq + n;
  const char *p = eq;
  uint32_t term = 0;
  for (;;) {
    const char *e = p;
    while (e < lhs_end && *e != ',')
      e++;
    if (term >= n_in)
      return kiln_infer_fail("Einsum", "equation \"%s\" has more terms than the %u inputs", eq,
                             n_in);
    KILN_TRY(einsum_term(eq, p, e, term, in[term], &st));
    term++;
    if (e >= lhs_end)
      break;
    p = e + 1;
  }
  if (term != n_in)
    return kiln_infer_fail("Einsum", "equation \"%s\" has %u terms but there are %u inputs", eq,
                           term, n_in);
  int64_t dims[KILN_MAX_RANK + 64];
  uint32_t r = 0;
  if (arrow) {
    bool used[128] = {false}, ell = false;
    for (const char *q = arrow + 2; *q; q++) {
      if (q[0] == '.' && q[1] == '.' && q[2] == '.' && !ell) {
        ell = true;
        q += 2;
        for (uint32_t k = 0; k < st.ell_rank && r < KILN_MAX_RANK + 1; k++)
          dims[r++] = st.ell[k];
        continue;
      }
      int c = (unsigned char)*q;
      if (!is_label(*q))
        return kiln_infer_fail("Einsum", "equation \"%s\": output has an invalid character '%c'",
                               eq, *q);
      if (st.size[c] < 0 || used[c])
        return kiln_infer_fail("Einsum", "equation \"%s\": output label '%c' is %s", eq, *q,
                               used[c] ? "repeated" : "not in any input");
      used[c] = true;
      if (r < KILN_MAX_RANK + 1)
        dims[r++] = st.size[c];
    }
  } else {
    for (uint32_t k = 0; k < st.ell_rank; k++)
      dims[r++] = st.ell[k];
    for (int c = 0; c < 128; c++) {
      if (st.count[c] == 1 && r < KILN_MAX_RANK + 1)
        dims[r++] = st.size[c];
    }
  }
  return kiln_infer_make("Einsum", in[0]->elem, r, dims, out);
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
