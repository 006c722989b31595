/* ir/ops/einsum.c: Einsum's equation (kiln_einsum_decode in kiln/ops.h),
 * parsed once against the input types: terms of letters with at most one
 * "..." each and an optional "->" output, one size per letter, the
 * ellipsis dims broadcast as numpy does, and the output in explicit or
 * implicit (numpy) form. Inference, the lowering rule and every backend
 * read the same label ids, so that a diagonal or an implicit output means
 * the same thing everywhere. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kiln/ops.h"

/* "Einsum: " and the message, as inference words its failures. */
static kiln_status einsum_fail(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kiln_status_make(KILN_INVALID_ARGUMENT, "Einsum: %s", msg);
}

typedef struct einsum_text {
  char s[128];
} einsum_text;

static einsum_text einsum_type(const kiln_type *t) {
  einsum_text r;
  r.s[0] = '\0';
  (void)kiln_type_format(t, r.s, sizeof r.s);
  return r;
}

static int einsum_letter(char c) {
  if (c >= 'a' && c <= 'z')
    return c - 'a';
  if (c >= 'A' && c <= 'Z')
    return 26 + c - 'A';
  return -1;
}

/* The running broadcast of the ellipsis dims over the terms read so far. */
typedef struct einsum_ell {
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  bool seen;
} einsum_ell;

/* Walk input term idx, [p, e), against type t: letter ids into
 * out->label[idx] (the ellipsis dims are numbered once all terms are
 * read, from ell_at and ell_width), sizes and counts into out. */
static kiln_status einsum_term(const char *eq, const char *p, const char *e, uint32_t idx,
                               const kiln_type *t, einsum_ell *ell, int *ell_at,
                               uint32_t *ell_width, kiln_einsum *out) {
  uint32_t letters = 0;
  bool has_ell = false;
  for (const char *q = p; q < e; q++) {
    if (einsum_letter(*q) >= 0) {
      letters++;
    } else if (*q == '.' && q + 2 < e && q[1] == '.' && q[2] == '.' && !has_ell) {
      has_ell = true;
      q += 2;
    } else {
      return einsum_fail("equation \"%s\": term %u has an invalid character '%c'", eq, idx, *q);
    }
  }
  if (has_ell ? letters > t->rank : letters != t->rank)
    return einsum_fail("equation \"%s\": term %u has %u labels but input %u is %s", eq, idx,
                       letters, idx, einsum_type(t).s);
  uint32_t er = t->rank - letters, d = 0;
  *ell_at = -1;
  *ell_width = er;
  for (const char *q = p; q < e; q++) {
    if (*q == '.') {
      /* Broadcast this term's ellipsis dims into the running ones. */
      uint32_t nr = er > ell->rank ? er : ell->rank;
      int64_t next[KILN_MAX_RANK];
      for (uint32_t k = 0; k < nr; k++) {
        int64_t a = k + ell->rank >= nr ? ell->dims[k + ell->rank - nr] : 1;
        int64_t b = k + er >= nr ? t->dims[d + k + er - nr] : 1;
        if (ell->seen && a != b && a != 1 && b != 1)
          return einsum_fail("equation \"%s\": the '...' dims of input %u (%s) do not "
                             "broadcast with earlier inputs",
                             eq, idx, einsum_type(t).s);
        next[k] = (!ell->seen || a == 1) ? b : a;
      }
      memcpy(ell->dims, next, sizeof(int64_t) * nr);
      ell->rank = nr;
      ell->seen = true;
      *ell_at = (int)d;
      d += er;
      q += 2;
      continue;
    }
    int l = einsum_letter(*q);
    int64_t dim = t->dims[d];
    if (out->size[l] >= 0 && out->size[l] != dim)
      return einsum_fail("equation \"%s\": label '%c' has size %lld in input %u (%s) but "
                         "%lld elsewhere",
                         eq, *q, (long long)dim, idx, einsum_type(t).s, (long long)out->size[l]);
    out->size[l] = dim;
    out->count[l]++;
    out->label[idx][d++] = (uint8_t)l;
  }
  return NULL;
}

/* The explicit output term after "->". */
static kiln_status einsum_output(const char *eq, const char *q, kiln_einsum *out) {
  bool used[KILN_EINSUM_MAX_LABELS] = {false}, ell = false;
  uint32_t r = 0;
  for (; *q; q++) {
    if (q[0] == '.' && q[1] == '.' && q[2] == '.' && !ell) {
      ell = true;
      q += 2;
      for (uint32_t k = 0; k < out->ell_rank; k++) {
        if (r >= KILN_MAX_RANK)
          return einsum_fail("equation \"%s\": the output has more than %d dims", eq,
                             KILN_MAX_RANK);
        out->out_label[r++] = (uint8_t)(KILN_EINSUM_LETTERS + k);
      }
      continue;
    }
    int l = einsum_letter(*q);
    if (l < 0)
      return einsum_fail("equation \"%s\": output has an invalid character '%c'", eq, *q);
    if (out->size[l] < 0 || used[l])
      return einsum_fail("equation \"%s\": output label '%c' is %s", eq, *q,
                         used[l] ? "repeated" : "not in any input");
    used[l] = true;
    if (r >= KILN_MAX_RANK)
      return einsum_fail("equation \"%s\": the output has more than %d dims", eq, KILN_MAX_RANK);
    out->out_label[r++] = (uint8_t)l;
  }
  out->out_rank = r;
  return NULL;
}

/* numpy's implicit output: the ellipsis dims, then the letters seen once
 * in ASCII order. */
static kiln_status einsum_implicit(const char *eq, kiln_einsum *out) {
  uint32_t r = 0;
  for (uint32_t k = 0; k < out->ell_rank; k++)
    out->out_label[r++] = (uint8_t)(KILN_EINSUM_LETTERS + k);
  static const int ascii_order[2][2] = {{26, 52}, {0, 26}}; /* A-Z, then a-z */
  for (int part = 0; part < 2; part++)
    for (int l = ascii_order[part][0]; l < ascii_order[part][1]; l++) {
      if (out->count[l] != 1)
        continue;
      if (r >= KILN_MAX_RANK)
        return einsum_fail("equation \"%s\": the output has more than %d dims", eq, KILN_MAX_RANK);
      out->out_label[r++] = (uint8_t)l;
    }
  out->out_rank = r;
  return NULL;
}

kiln_status kiln_einsum_decode(const kiln_attrs *attrs, const kiln_type *const *inputs,
                               uint32_t n_inputs, kiln_einsum *out) {
  memset(out, 0, sizeof *out);
  for (int l = 0; l < KILN_EINSUM_MAX_LABELS; l++)
    out->size[l] = -1;
  const kiln_attr *at = kiln_attrs_find(attrs, "equation");
  if (!at || kiln_attr_get_kind(at) != KILN_ATTR_STRING)
    return einsum_fail("attribute 'equation' (a string) is required");
  /* Work on a copy without spaces. */
  char eq[256];
  size_t n = 0;
  for (const char *s = kiln_attr_string(at); *s; s++) {
    if (*s == ' ')
      continue;
    if (n + 1 >= sizeof eq)
      return einsum_fail("equation is longer than %zu characters", sizeof eq - 1);
    eq[n++] = *s;
  }
  eq[n] = '\0';
  if (n_inputs > KILN_EINSUM_MAX_INPUTS)
    return einsum_fail("%u inputs; at most %d", n_inputs, KILN_EINSUM_MAX_INPUTS);
  out->n_inputs = n_inputs;
  einsum_ell ell;
  memset(&ell, 0, sizeof ell);
  int ell_at[KILN_EINSUM_MAX_INPUTS];
  uint32_t ell_width[KILN_EINSUM_MAX_INPUTS];
  const char *arrow = strstr(eq, "->");
  const char *lhs_end = arrow ? arrow : eq + n;
  const char *p = eq;
  uint32_t term = 0;
  for (;;) {
    const char *e = p;
    while (e < lhs_end && *e != ',')
      e++;
    if (term >= n_inputs)
      return einsum_fail("equation \"%s\" has more terms than the %u inputs", eq, n_inputs);
    if (!inputs[term])
      return einsum_fail("input %u is absent", term);
    out->rank[term] = inputs[term]->rank;
    KILN_TRY(einsum_term(eq, p, e, term, inputs[term], &ell, &ell_at[term], &ell_width[term], out));
    term++;
    if (e >= lhs_end)
      break;
    p = e + 1;
  }
  if (term != n_inputs)
    return einsum_fail("equation \"%s\" has %u terms but there are %u inputs", eq, term, n_inputs);
  /* Number the ellipsis dims, right-aligned against the broadcast ones. */
  out->ell_rank = ell.rank;
  out->n_labels = KILN_EINSUM_LETTERS + ell.rank;
  for (uint32_t k = 0; k < ell.rank; k++)
    out->size[KILN_EINSUM_LETTERS + k] = ell.dims[k];
  for (uint32_t i = 0; i < n_inputs; i++) {
    if (ell_at[i] < 0)
      continue;
    for (uint32_t k = 0; k < ell_width[i]; k++) {
      uint32_t l = KILN_EINSUM_LETTERS + ell.rank - ell_width[i] + k;
      out->label[i][(uint32_t)ell_at[i] + k] = (uint8_t)l;
      out->count[l]++;
    }
  }
  if (arrow)
    KILN_TRY(einsum_output(eq, arrow + 2, out));
  else
    KILN_TRY(einsum_implicit(eq, out));
  bool in_out[KILN_EINSUM_MAX_LABELS] = {false};
  for (uint32_t k = 0; k < out->out_rank; k++)
    in_out[out->out_label[k]] = true;
  for (uint32_t l = 0; l < out->n_labels; l++)
    if (out->count[l] && !in_out[l])
      out->summed[out->n_summed++] = (uint8_t)l;
  return NULL;
}
