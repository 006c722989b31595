/* passes/fuse_act.c: activation fusion. A Relu, LeakyRelu, Sigmoid, Tanh,
 * exact Gelu, Clip with constant scalar bounds, HardSigmoid, HardSwish or
 * Swish (kiln/ops.h's fusable activations) whose input is the only use of
 * a Conv, MatMul or Gemm result (directly or through a Reshape used once)
 * folds into that node as its `activation` attribute, with the
 * activation's parameters in `activation_alpha` / `activation_beta`
 * (kiln_fused_act_decode_params), so a backend can apply it in the
 * producer's epilogue while the result is still in registers. Only where
 * the backend says so: o->supports_fused(producer, activation kind), then
 * o->supports_node on the fused node. Without the hook the pass changes
 * nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/ops.h"
#include "pass_util.h"

static bool fuse_act_producer_kind(kiln_node_kind k) {
  return k == KILN_NODE_Conv || k == KILN_NODE_MatMul || k == KILN_NODE_Gemm;
}

/* The activations a producer's epilogue can apply: kiln/ops.h's list. */
static bool fuse_act_kind(kiln_node_kind k) {
  return kiln_fused_act_of_node_kind(k) != KILN_FUSED_ACT_NONE;
}

/* A Clip bound: absent, or a constant scalar that is not NaN (a NaN bound
 * has no attribute form). *present false for an absent bound or an
 * infinite one that clips nothing. */
static bool fuse_act_clip_bound(const kiln_node *a, uint32_t i, double *v, bool *present) {
  *present = false;
  const kiln_value *b = i < kiln_node_input_count(a) ? kiln_node_input(a, i) : NULL;
  if (!b)
    return true;
  if (kiln_type_numel(kiln_value_type(b)) != 1 || !kiln_pass_const_splat(b, v) || isnan(*v))
    return false;
  if (isinf(*v)) /* -inf as min or +inf as max; the other infinities are declined */
    return (i == 1) == (*v < 0);
  *present = true;
  return true;
}

/* The activation's own parameters as the producer's attributes; false for
 * a Clip whose bounds are not constant. */
static bool fuse_act_params(const kiln_node *a, kiln_attr_desc *d, uint32_t *n) {
  const kiln_attrs *at = kiln_node_attrs(a);
  double lo, hi;
  bool has_lo, has_hi;
  switch (kiln_fused_act_of_node_kind(kiln_node_get_kind(a))) {
  case KILN_FUSED_ACT_LEAKY_RELU:
    d[(*n)++] = KILN_ATTR_F("activation_alpha", kiln_attrs_float_or(at, "alpha", 0.01));
    return true;
  case KILN_FUSED_ACT_CLIP:
    if (!fuse_act_clip_bound(a, 1, &lo, &has_lo) || !fuse_act_clip_bound(a, 2, &hi, &has_hi))
      return false;
    if (has_lo)
      d[(*n)++] = KILN_ATTR_F("activation_alpha", lo);
    if (has_hi)
      d[(*n)++] = KILN_ATTR_F("activation_beta", hi);
    return true;
  case KILN_FUSED_ACT_HARD_SIGMOID:
    d[(*n)++] = KILN_ATTR_F("activation_alpha", kiln_attrs_float_or(at, "alpha", 0.2));
    d[(*n)++] = KILN_ATTR_F("activation_beta", kiln_attrs_float_or(at, "beta", 0.5));
    return true;
  case KILN_FUSED_ACT_SWISH:
    d[(*n)++] = KILN_ATTR_F("activation_alpha", kiln_attrs_float_or(at, "alpha", 1.0));
    return true;
  default:
    return true;
  }
}

/* Rebuild producer p with the activation of node a; *done false when the
 * backend declines the fused node. */
static kiln_status fuse_act_one(kiln_function *f, const kiln_pass_options *o, kiln_node *p,
                                kiln_node *view, kiln_node *a, bool *done) {
  *done = false;
  kiln_attr_desc *descs = NULL;
  uint32_t n_descs = 0;
  KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(p), 3, &descs, &n_descs));
  descs[n_descs++] = KILN_ATTR_S("activation", kiln_node_kind_name(kiln_node_get_kind(a)));
  if (!fuse_act_params(a, descs, &n_descs)) {
    free(descs);
    return NULL;
  }
  kiln_value *ins[4] = {0};
  uint32_t n_in = kiln_node_input_count(p);
  for (uint32_t i = 0; i < n_in && i < 4; i++)
    ins[i] = kiln_node_input(p, i);
  kiln_function_set_insert_point(f, a);
  kiln_node *fused = NULL;
  char nm[256];
  kiln_status s =
      kiln_function_add_node(f, kiln_node_get_kind(p), kiln_pass_merged_name(p, 1, nm, sizeof nm),
                             ins, n_in, descs, n_descs, 1, &fused);
  kiln_function_set_insert_point(f, NULL);
  free(descs);
  if (s)
    return kiln_status_wrap(s, "fuseact: fusing '%s' into '%s'", kiln_node_name(a),
                            kiln_node_name(p));
  if (o->supports_node && !o->supports_node(o->backend_user, fused))
    return kiln_function_remove_node(f, fused);
  kiln_value *repl = kiln_node_result(fused, 0);
  if (view) { /* the view again, now of the fused result */
    kiln_attr_desc *vd = NULL;
    uint32_t nvd = 0;
    KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(view), 0, &vd, &nvd));
    kiln_status vs = kiln_pass_emit(f, a, KILN_NODE_Reshape, &repl, 1, vd, nvd, &repl);
    free(vd);
    KILN_TRY(vs);
  }
  KILN_TRY(kiln_pass_replace_node(f, a, &repl));
  if (view)
    KILN_TRY(kiln_function_remove_node(f, view));
  KILN_TRY(kiln_function_remove_node(f, p));
  *done = true;
  return NULL;
}

/* Fuse activation a into its producer when the backend takes the pair. */
static kiln_status fuse_act_node(kiln_function *f, kiln_node *a, const kiln_pass_options *o,
                                 bool *done) {
  if (!fuse_act_kind(kiln_node_get_kind(a)))
    return NULL;
  kiln_value *x = kiln_node_input(a, 0);
  kiln_node *p = kiln_value_producer(x, NULL), *view = NULL;
  /* through a Reshape used once (fusebias leaves Gemm results behind one):
   * an elementwise activation commutes with it */
  if (p && kiln_node_get_kind(p) == KILN_NODE_Reshape && kiln_value_use_count(x) == 1) {
    view = p;
    x = kiln_node_input(view, 0);
    p = kiln_value_producer(x, NULL);
  }
  /* Gelu rides only in its exact form, the one the activation names */
  if (kiln_node_get_kind(a) == KILN_NODE_Gelu &&
      strcmp(kiln_attrs_string_or(kiln_node_attrs(a), "approximate", "none"), "none") != 0)
    return NULL;
  /* Clip's bounds must be constants to become attributes */
  double bound;
  bool present;
  if (kiln_node_get_kind(a) == KILN_NODE_Clip && (!fuse_act_clip_bound(a, 1, &bound, &present) ||
                                                  !fuse_act_clip_bound(a, 2, &bound, &present)))
    return NULL;
  if (!p || !fuse_act_producer_kind(kiln_node_get_kind(p)) || kiln_value_use_count(x) != 1 ||
      kiln_attrs_find(kiln_node_attrs(p), "activation") ||
      !o->supports_fused(o->backend_user, p, kiln_node_get_kind(a)))
    return NULL;
  /* p comes before a in the snapshot; once fused it is gone, so no later
   * step looks at it (only activations are visited). */
  return fuse_act_one(f, o, p, view, a, done);
}

kiln_status kiln_pass_fuse_activation(kiln_function *f, const kiln_pass_options *o,
                                      uint32_t *changes) {
  if (!o || !o->supports_fused)
    return NULL;
  return kiln_pass_each_node(f, o, fuse_act_node, changes);
}
