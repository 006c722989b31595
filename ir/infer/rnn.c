/* ir/infer/rnn.c: inference of the recurrent kinds RNN, GRU and LSTM, which
 * share one operand layout and differ in their number of gates. */
#include <stdio.h>
#include <string.h>

#include "infer.h"

/* Fails unless t (when present) has exactly the dims `want`. */
static kiln_status want_shape(const char *kind, const char *what, const kiln_type *t,
                              const int64_t *want, uint32_t n) {
  bool ok = t->rank == n;
  for (uint32_t i = 0; ok && i < n; i++)
    ok = t->dims[i] == want[i];
  if (!ok)
    return kiln_infer_fail(kind, "%s is %s; expected shape %s", what, KILN_INFER_TS(t),
                           KILN_INFER_DS(want, n));
  return NULL;
}

static kiln_status rnn(const char *k, int64_t gates, const kiln_type *const *in, uint32_t n_in,
                       const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  static const char *const dirs_allowed[] = {"forward", "reverse", "bidirectional", NULL};
  static const char *const names[] = {"X (input 0)",
                                      "W (input 1)",
                                      "R (input 2)",
                                      "B (input 3)",
                                      "sequence_lens (input 4)",
                                      "initial_h (input 5)",
                                      "initial_c (input 6)",
                                      "P (input 7)"};
  const kiln_type *x = in[0], *w = in[1], *r = in[2];
  const char *dir;
  KILN_TRY(kiln_infer_enum(k, attrs, "direction", "forward", dirs_allowed, &dir));
  int64_t dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  int64_t layout = kiln_attrs_int_or(attrs, "layout", 0);
  if (layout != 0 && layout != 1)
    return kiln_infer_fail(k, "attribute 'layout' = %lld must be 0 or 1", (long long)layout);
  KILN_TRY(kiln_infer_check_elem(k, names[0], x, KILN_INFER_FLOAT));
  for (uint32_t i = 0; i < n_in; i++) {
    if (in[i] && i != 4)
      KILN_TRY(kiln_infer_same_elem(k, names[0], x, names[i], in[i]));
  }
  KILN_TRY(kiln_infer_check_rank(k, names[0], x, 3, false));
  KILN_TRY(kiln_infer_check_rank(k, names[2], r, 3, false));
  int64_t seq = x->dims[layout ? 1 : 0], batch = x->dims[layout ? 0 : 1], input = x->dims[2];
  int64_t h = r->dims[2];
  if (kiln_attrs_find(attrs, "hidden_size")) {
    int64_t hs = kiln_attrs_int_or(attrs, "hidden_size", 0);
    if (hs < 1 || hs != h)
      return kiln_infer_fail(k, "attribute 'hidden_size' = %lld does not match R %s", (long long)hs,
                             KILN_INFER_TS(r));
  }
  int64_t ws[3] = {dirs, gates * h, input};
  int64_t rs[3] = {dirs, gates * h, h};
  int64_t bs[2] = {dirs, 2 * gates * h};
  int64_t ls[1] = {batch};
  /* initial_h and initial_c follow the layout as Y_h does: [B, D, H] for 1 */
  int64_t hs[3] = {layout ? batch : dirs, layout ? dirs : batch, h};
  int64_t ps[2] = {dirs, 3 * h};
  KILN_TRY(want_shape(k, names[1], w, ws, 3));
  KILN_TRY(want_shape(k, names[2], r, rs, 3));
  if (n_in > 3 && in[3])
    KILN_TRY(want_shape(k, names[3], in[3], bs, 2));
  if (n_in > 4 && in[4]) {
    KILN_TRY(kiln_infer_check_elem(k, names[4], in[4], KILN_INFER_M(KILN_I32)));
    KILN_TRY(want_shape(k, names[4], in[4], ls, 1));
  }
  for (uint32_t i = 5; i < 7 && i < n_in; i++) {
    if (in[i])
      KILN_TRY(want_shape(k, names[i], in[i], hs, 3));
  }
  if (n_in > 7 && in[7])
    KILN_TRY(want_shape(k, names[7], in[7], ps, 2));
  int64_t y[4] = {seq, dirs, batch, h}, yl[4] = {batch, seq, dirs, h};
  int64_t yh[3] = {dirs, batch, h}, yhl[3] = {batch, dirs, h};
  KILN_TRY(kiln_infer_make(k, x->elem, 4, layout ? yl : y, &out[0]));
  for (uint32_t i = 1; i < n_results; i++)
    KILN_TRY(kiln_infer_make(k, x->elem, 3, layout ? yhl : yh, &out[i]));
  return NULL;
}

kiln_status kiln_infer_RNN(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                           uint32_t n_results, kiln_type *out) {
  return rnn("RNN", 1, in, n_in, attrs, n_results, out);
}

kiln_status kiln_infer_GRU(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                           uint32_t n_results, kiln_type *out) {
  return rnn("GRU", 3, in, n_in, attrs, n_results, out);
}

kiln_status kiln_infer_LSTM(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  return rnn("LSTM", 4, in, n_in, attrs, n_results, out);
}
