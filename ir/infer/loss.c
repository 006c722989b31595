/* ir/infer/loss.c: inference of the loss kinds NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss, which share the (N, C, d1...) / (N, d1...)
 * operand layout. */
#include <string.h>

#include "infer.h"

static kiln_status loss(const char *k, const kiln_type *const *in, uint32_t n_in,
                        const kiln_attrs *attrs, kiln_type *out) {
  static const char *const reds[] = {"none", "sum", "mean", NULL};
  const kiln_type *x = in[0], *t = in[1], *w = n_in > 2 ? in[2] : NULL;
  const char *red;
  KILN_TRY(kiln_infer_enum(k, attrs, "reduction", "mean", reds, &red));
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 2, true));
  KILN_TRY(kiln_infer_check_elem(k, "target (input 1)", t, KILN_INFER_IDX));
  bool ok = t->rank + 1 == x->rank && t->dims[0] == x->dims[0];
  for (uint32_t i = 1; ok && i < t->rank; i++)
    ok = t->dims[i] == x->dims[i + 1];
  if (!ok)
    return kiln_infer_fail(k, "target (input 1) %s must be input 0 %s without its class dim",
                           KILN_INFER_TS(t), KILN_INFER_TS(x));
  if (w) {
    KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "weight (input 2)", w));
    if (w->rank != 1 || w->dims[0] != x->dims[1])
      return kiln_infer_fail(k, "weight (input 2) is %s; expected [%lld] (the classes)",
                             KILN_INFER_TS(w), (long long)x->dims[1]);
  }
  if (strcmp(red, "none") == 0)
    return kiln_infer_make(k, x->elem, t->rank, t->dims, out);
  int64_t none[1] = {0};
  return kiln_infer_make(k, x->elem, 0, none, out);
}

kiln_status kiln_infer_NegativeLogLikelihoodLoss(const kiln_type *const *in, uint32_t n_in,
                                                 const kiln_attrs *attrs, uint32_t n_results,
                                                 kiln_type *out) {
  (void)n_results;
  return loss("NegativeLogLikelihoodLoss", in, n_in, attrs, out);
}

kiln_status kiln_infer_SoftmaxCrossEntropyLoss(const kiln_type *const *in, uint32_t n_in,
                                               const kiln_attrs *attrs, uint32_t n_results,
                                               kiln_type *out) {
  static const char *const k = "SoftmaxCrossEntropyLoss";
  KILN_TRY(loss(k, in, n_in, attrs, &out[0]));
  if (n_results > 1)
    KILN_TRY(kiln_infer_make(k, in[0]->elem, in[0]->rank, in[0]->dims, &out[1]));
  return NULL;
}
