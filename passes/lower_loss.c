/* passes/lower_loss.c: lowering rules for the losses
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. The class pick is
 * a one-hot compare against a class-index constant rather than a Gather,
 * so out-of-range targets (ignore_index is often -1 or C) never index
 * anything: they just match no class. */
#include <stdlib.h>
#include <string.h>

#include "lower_rules.h"

typedef enum { LOSS_NONE, LOSS_SUM, LOSS_MEAN, LOSS_BAD } loss_reduction;

static loss_reduction loss_reduction_of(kiln_lower_ctx *c) {
  const char *r = kiln_attrs_string_or(kiln_node_attrs(c->n), "reduction", "mean");
  if (!strcmp(r, "none"))
    return LOSS_NONE;
  if (!strcmp(r, "sum"))
    return LOSS_SUM;
  if (!strcmp(r, "mean"))
    return LOSS_MEAN;
  return LOSS_BAD;
}

/* The loss of log-probabilities logp [N, C, d...] (type t) against the
 * node's target (input 1) and optional weight (input 2). */
static kiln_value *nll_of_logp(kiln_lower_ctx *c, kiln_value *logp, const kiln_type *t,
                               loss_reduction red) {
  kiln_value *target = kiln_node_input(c->n, 1), *weight = lower_in(c, 2);
  const kiln_type *tt = kiln_value_type(target);
  int64_t tdims[KILN_MAX_RANK], cdims[KILN_MAX_RANK], ncls = t->dims[1];
  tdims[0] = t->dims[0];
  tdims[1] = 1;
  for (uint32_t d = 0; d < t->rank; d++)
    cdims[d] = d == 1 ? ncls : 1;
  for (uint32_t d = 2; d < t->rank; d++)
    tdims[d] = t->dims[d];
  double *cls = malloc(sizeof(double) * (size_t)(ncls ? ncls : 1));
  if (!cls) {
    if (!c->s)
      c->s = kiln_status_make(KILN_OUT_OF_MEMORY, "lower loss: class table of %lld entries",
                              (long long)ncls);
    return NULL;
  }
  for (int64_t i = 0; i < ncls; i++)
    cls[i] = (double)i;
  kiln_value *classes = kiln_lower_const_vals(c, tt->elem, t->rank, cdims, cls);
  free(cls);
  kiln_value *hot =
      lower_bin(c, KILN_NODE_Equal, lower_reshape(c, target, tdims, t->rank), classes);
  int64_t axis1 = 1;
  kiln_value *zero = lower_sc(c, 0);
  kiln_value *picked =
      lower_reduce(c, KILN_NODE_ReduceSum, lower_where(c, hot, logp, zero), &axis1, 1, 0);
  kiln_value *wsel = weight ? lower_reshape(c, weight, cdims, t->rank) : lower_sc(c, 1);
  kiln_value *w =
      lower_reduce(c, KILN_NODE_ReduceSum, lower_where(c, hot, wsel, zero), &axis1, 1, 0);
  const kiln_attr *ig = kiln_attrs_find(kiln_node_attrs(c->n), "ignore_index");
  if (ig) {
    kiln_value *is_ig =
        lower_bin(c, KILN_NODE_Equal, target, lower_sce(c, tt->elem, (double)kiln_attr_int(ig)));
    w = lower_where(c, is_ig, zero, w);
  }
  kiln_value *loss = lower_un(c, KILN_NODE_Neg, lower_bin(c, KILN_NODE_Mul, picked, w));
  if (red == LOSS_NONE)
    return loss;
  int64_t all[KILN_MAX_RANK];
  for (uint32_t d = 0; d < tt->rank; d++)
    all[d] = d;
  kiln_value *total = lower_reduce(c, KILN_NODE_ReduceSum, loss, all, tt->rank, 0);
  if (red == LOSS_SUM)
    return total;
  return lower_bin(c, KILN_NODE_Div, total,
                   lower_reduce(c, KILN_NODE_ReduceSum, w, all, tt->rank, 0));
}

static bool loss_operands_ok(kiln_lower_ctx *c, loss_reduction red) {
  const kiln_type *t = lower_tin(c, 0);
  const kiln_type *tt = lower_tin(c, 1);
  return red != LOSS_BAD && kiln_elem_is_float(t->elem) && t->rank >= 2 &&
         tt->rank == t->rank - 1 && (tt->elem == KILN_I64 || tt->elem == KILN_I32);
}

bool kiln_lower_NegativeLogLikelihoodLoss(kiln_lower_ctx *c, kiln_value **r) {
  loss_reduction red = loss_reduction_of(c);
  if (!loss_operands_ok(c, red))
    return false;
  r[0] = nll_of_logp(c, kiln_node_input(c->n, 0), lower_tin(c, 0), red);
  return true;
}

/* LogSoftmax over the class axis (which has its own rule), then NLL; the
 * optional second result is that log-probability tensor. */
bool kiln_lower_SoftmaxCrossEntropyLoss(kiln_lower_ctx *c, kiln_value **r) {
  loss_reduction red = loss_reduction_of(c);
  if (!loss_operands_ok(c, red))
    return false;
  kiln_attr_desc a = KILN_ATTR_I("axis", 1);
  kiln_value *x = kiln_node_input(c->n, 0);
  kiln_value *logp = lower_emit(c, KILN_NODE_LogSoftmax, &x, 1, &a, 1);
  r[0] = nll_of_logp(c, logp, lower_tin(c, 0), red);
  if (kiln_node_result_count(c->n) > 1)
    r[1] = logp;
  return true;
}
