/* ir/ops/activation.c: the activation a backend applies in the epilogue of
 * Conv, MatMul and Gemm (kiln_fused_act_* in kiln/ops.h). One list of the
 * fusable activations, read by inference, the fuseact pass and every
 * backend's epilogue. */
#include <string.h>

#include "kiln/ops.h"

static const kiln_node_kind fused_act_kinds[KILN_FUSED_ACT_KIND_COUNT] = {
    [KILN_FUSED_ACT_NONE] = KILN_NODE_KIND_COUNT,
    [KILN_FUSED_ACT_RELU] = KILN_NODE_Relu,
    [KILN_FUSED_ACT_LEAKY_RELU] = KILN_NODE_LeakyRelu,
    [KILN_FUSED_ACT_SIGMOID] = KILN_NODE_Sigmoid,
    [KILN_FUSED_ACT_TANH] = KILN_NODE_Tanh,
    [KILN_FUSED_ACT_GELU] = KILN_NODE_Gelu,
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

kiln_status kiln_fused_act_decode(const char *kind, const kiln_attrs *attrs, kiln_fused_act *out) {
  out->kind = KILN_FUSED_ACT_NONE;
  out->alpha = 0;
  const char *s = kiln_attrs_string_or(attrs, "activation", NULL);
  if (!s)
    return NULL;
  kiln_node_kind nk;
  kiln_fused_act_kind k =
      kiln_node_kind_from_name(s, &nk) ? kiln_fused_act_of_node_kind(nk) : KILN_FUSED_ACT_NONE;
  if (k == KILN_FUSED_ACT_NONE)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: unknown activation '%s' (Relu, LeakyRelu, Sigmoid, Tanh or Gelu)", kind,
                            s);
  out->kind = k;
  if (k == KILN_FUSED_ACT_LEAKY_RELU)
    out->alpha = kiln_attrs_float_or(attrs, "activation_alpha", 0.01);
  return NULL;
}
