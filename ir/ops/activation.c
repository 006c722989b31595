/* ir/ops/activation.c: the activation a backend applies in the epilogue of
 * Conv, MatMul and Gemm (kiln_fused_act_* in kiln/ops.h). One list of the
 * fusable activations, read by inference, the fuseact pass and every
 * backend's epilogue, and the decoding of their parameters. */
#include <math.h>
#include <string.h>

#include "kiln/ops.h"

static const kiln_node_kind fused_act_kinds[KILN_FUSED_ACT_KIND_COUNT] = {
    [KILN_FUSED_ACT_NONE] = KILN_NODE_KIND_COUNT,
    [KILN_FUSED_ACT_RELU] = KILN_NODE_Relu,
    [KILN_FUSED_ACT_LEAKY_RELU] = KILN_NODE_LeakyRelu,
    [KILN_FUSED_ACT_SIGMOID] = KILN_NODE_Sigmoid,
    [KILN_FUSED_ACT_TANH] = KILN_NODE_Tanh,
    [KILN_FUSED_ACT_GELU] = KILN_NODE_Gelu,
    [KILN_FUSED_ACT_CLIP] = KILN_NODE_Clip,
    [KILN_FUSED_ACT_HARD_SIGMOID] = KILN_NODE_HardSigmoid,
    [KILN_FUSED_ACT_HARD_SWISH] = KILN_NODE_HardSwish,
    [KILN_FUSED_ACT_SWISH] = KILN_NODE_Swish,
};

kiln_node_kind kiln_fused_act_node_kind(kiln_fused_act_kind k) {
  return (unsigned)k < KILN_FUSED_ACT_KIND_COUNT ? fused_act_kinds[k] : KILN_NODE_KIND_COUNT;
}

kiln_fused_act_kind kiln_fused_act_of_node_kind(kiln_node_kind k) {
  for (int i = 1; i < KILN_FUSED_ACT_KIND_COUNT; i++)
    if (fused_act_kinds[i] == k)
      return (kiln_fused_act_kind)i;
  return KILN_FUSED_ACT_NONE;
}

kiln_status kiln_fused_act_decode_params(const char *kind, const kiln_attrs *attrs,
                                         kiln_fused_act_params *out) {
  *out = (kiln_fused_act_params){.kind = KILN_FUSED_ACT_NONE};
  const char *s = kiln_attrs_string_or(attrs, "activation", NULL);
  if (!s)
    return NULL;
  kiln_node_kind nk;
  kiln_fused_act_kind k =
      kiln_node_kind_from_name(s, &nk) ? kiln_fused_act_of_node_kind(nk) : KILN_FUSED_ACT_NONE;
  if (k == KILN_FUSED_ACT_NONE)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: unknown activation '%s' (Relu, LeakyRelu, Sigmoid, Tanh, Gelu, "
                            "Clip, HardSigmoid, HardSwish or Swish)",
                            kind, s);
  out->kind = k;
  switch (k) {
  case KILN_FUSED_ACT_LEAKY_RELU:
    out->alpha = kiln_attrs_float_or(attrs, "activation_alpha", 0.01);
    break;
  case KILN_FUSED_ACT_CLIP:
    out->alpha = kiln_attrs_float_or(attrs, "activation_alpha", -INFINITY);
    out->beta = kiln_attrs_float_or(attrs, "activation_beta", INFINITY);
    break;
  case KILN_FUSED_ACT_HARD_SIGMOID:
    out->alpha = kiln_attrs_float_or(attrs, "activation_alpha", 0.2);
    out->beta = kiln_attrs_float_or(attrs, "activation_beta", 0.5);
    break;
  case KILN_FUSED_ACT_HARD_SWISH:
    out->alpha = 1.0 / 6.0;
    out->beta = 0.5;
    break;
  case KILN_FUSED_ACT_SWISH:
    out->alpha = kiln_attrs_float_or(attrs, "activation_alpha", 1.0);
    break;
  default:
    break;
  }
  return NULL;
}

/* The ABI 1.0 form: the same decoding, without beta. */
kiln_status kiln_fused_act_decode(const char *kind, const kiln_attrs *attrs, kiln_fused_act *out) {
  kiln_fused_act_params p;
  kiln_status s = kiln_fused_act_decode_params(kind, attrs, &p);
  out->kind = p.kind;
  out->alpha = p.alpha;
  return s;
}
