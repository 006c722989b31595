/* plugins/interpreter/loss.c: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss. Input is [N, C, d1...], target [N, d1...];
 * each target element picks a class c and contributes -input[n, c, d] *
 * weight[c], or nothing when it equals ignore_index. "mean" divides by the
 * summed weights of the elements that contributed (0/0 = NaN when none). */
#include "kernel.h"

typedef enum { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_reduction;

static kiln_status loss_reduction_of(const char *name, const kiln_attrs *attrs,
                                     loss_reduction *out) {
  const char *r = kiln_attrs_string_or(attrs, "reduction", "mean");
  if (strcmp(r, "none") == 0)
    *out = LOSS_NONE;
  else if (strcmp(r, "sum") == 0)
    *out = LOSS_SUM;
  else if (strcmp(r, "mean") == 0)
    *out = LOSS_MEAN;
  else
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter %s: reduction must be none, sum or mean, not \"%s\"", name,
                            r);
  return NULL;
}

/* The loss of log-probabilities `logp` (any float tensor laid out like the
 * input) against `target`, written to `y`. */
static kiln_status nll(const char *name, const kiln_attrs *attrs, interp_tensor *y,
                       const interp_tensor *logp, const interp_tensor *target,
                       const interp_tensor *weight) {
  loss_reduction red = LOSS_MEAN;
  KILN_TRY(loss_reduction_of(name, attrs, &red));
  const kiln_attr *ig = kiln_attrs_find(attrs, "ignore_index");
  int64_t ignore = ig ? kiln_attr_int(ig) : 0;
  if (logp->type.rank < 2)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter %s: input must be [N, C, ...], got rank %u", name,
                            logp->type.rank);
  int64_t n = logp->type.dims[0], c = logp->type.dims[1], inner = 1;
  for (uint32_t d = 2; d < logp->type.rank; d++)
    inner *= logp->type.dims[d];
  double total = 0.0, wsum = 0.0;
  for (int64_t b = 0; b < n; b++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t t_idx = b * inner + i;
      int64_t cls = interp_load_i(target, t_idx);
      double loss = 0.0, w = 0.0;
      if (!(ig && cls == ignore)) {
        if (cls < 0 || cls >= c)
          return kiln_status_make(KILN_OUT_OF_RANGE,
                                  "interpreter %s: index %lld out of range for dimension %lld "
                                  "(element %lld of the target; valid: [0, %lld))",
                                  name, (long long)cls, (long long)c, (long long)t_idx,
                                  (long long)c);
        w = weight ? interp_load_f(weight, cls) : 1.0;
        loss = -interp_load_f(logp, (b * c + cls) * inner + i) * w;
      }
      if (red == LOSS_NONE)
        interp_store_f(y, t_idx, loss);
      total += loss;
      wsum += w;
    }
  if (red == LOSS_SUM)
    interp_store_f(y, 0, total);
  else if (red == LOSS_MEAN)
    interp_store_f(y, 0, total / wsum);
  return NULL;
}

INTERP_KERNEL(NegativeLogLikelihoodLoss) {
  INTERP_ARITY(NegativeLogLikelihoodLoss, 1, 2);
  if (interp_class_of(ins[0].type.elem) != INTERP_FLOAT)
    return interp_bad_elem("NegativeLogLikelihoodLoss", "input", ins[0].type.elem);
  return nll("NegativeLogLikelihoodLoss", attrs, &outs[0], &ins[0], &ins[1],
             interp_opt(ins, n_ins, 2));
}

/* log_softmax over axis 1 into a double scratch tensor, then NLL. */
INTERP_KERNEL(SoftmaxCrossEntropyLoss) {
  INTERP_ARITY(SoftmaxCrossEntropyLoss, 1, 2);
  const interp_tensor *x = &ins[0];
  if (interp_class_of(x->type.elem) != INTERP_FLOAT)
    return interp_bad_elem("SoftmaxCrossEntropyLoss", "scores", x->type.elem);
  if (x->type.rank < 2)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter SoftmaxCrossEntropyLoss: scores must be [N, C, ...], got "
                            "rank %u",
                            x->type.rank);
  int64_t total = interp_numel(x), n = x->type.dims[0], c = x->type.dims[1];
  int64_t inner = (n > 0 && c > 0) ? total / (n * c) : 0;
  interp_tensor logp = {.type = x->type};
  logp.type.elem = KILN_F64;
  KILN_TRY(interp_scratch("SoftmaxCrossEntropyLoss", total, sizeof(double), &logp.data));
  for (int64_t b = 0; b < n; b++)
    for (int64_t i = 0; i < inner; i++) {
      double mx = -INFINITY, sum = 0.0;
      for (int64_t k = 0; k < c; k++) {
        double v = interp_load_f(x, (b * c + k) * inner + i);
        mx = isnan(v) || v > mx ? v : mx;
      }
      for (int64_t k = 0; k < c; k++)
        sum += exp(interp_load_f(x, (b * c + k) * inner + i) - mx);
      for (int64_t k = 0; k < c; k++) {
        int64_t idx = (b * c + k) * inner + i;
        interp_store_f(&logp, idx, interp_load_f(x, idx) - mx - log(sum));
      }
    }
  kiln_status s =
      nll("SoftmaxCrossEntropyLoss", attrs, &outs[0], &logp, &ins[1], interp_opt(ins, n_ins, 2));
  if (!s && n_outs > 1 && outs[1].data)
    for (int64_t i = 0; i < total; i++)
      interp_store_f(&outs[1], i, interp_load_f(&logp, i));
  free(logp.data);
  return s;
}
