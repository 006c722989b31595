/* plugins/cpu/fuse.c: the cpu plugin's supports_fused hook. Three questions:
 * "may this node join a FusedElementwise body?" (the core's `fuse` pass;
 * the cpu generator turns each fused body into one vectorized loop,
 * emit_elementwise_loop.c, so a node may join when it is a float
 * elementwise node the generator can emit in a body, or one the pass
 * expands into such nodes: Clip, HardSigmoid, HardSwish, Swish); "may this
 * activation ride on this Conv / MatMul / Gemm?" (the `fuseact` pass): yes
 * for Relu, Clip, HardSigmoid, HardSwish, Swish and exact Gelu on the f32
 * kernels, whose GEMM epilogue and depthwise kernels apply them
 * (kernels/kcpu_act.h); and "may this Add ride on this MatMul as Gemm's
 * C, or on this Conv as its residual?" (`fusebias`): yes for f32, for the
 * same reason. */
#include "cpu.h"

/* The producers whose f32 emitters honour the `activation` attribute (the
 * same conditions that send them to the GEMM-based kernels). */
static bool kcpu_fuse_relu_ok(const kiln_node *n) {
  kiln_node_kind k = kiln_node_get_kind(n);
  if (k != KILN_NODE_Conv && k != KILN_NODE_MatMul && k != KILN_NODE_Gemm)
    return false;
  if (kiln_node_result_count(n) != 1)
    return false;
  const kiln_type *y = kiln_value_type(kiln_node_result(n, 0));
  if (y->elem != KILN_F32 || y->quantized)
    return false;
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
    const kiln_value *v = kiln_node_input(n, i);
    if (v && (kiln_value_type(v)->elem != KILN_F32 || kiln_value_type(v)->quantized))
      return false;
  }
  const kiln_type *x = kiln_value_type(kiln_node_input(n, 0));
  if (k == KILN_NODE_Conv)
    return x->rank >= 3 && x->rank <= 5;
  return true;
}

/* The kinds of the loop generator that the fuse pass's expansion of
 * Clip, HardSigmoid, HardSwish or Swish (k) uses. */
static bool kcpu_fuse_expansion_ok(kiln_node_kind k, kiln_elem el) {
  kiln_fused_op ops[4] = {{.kind = KILN_NODE_Max}, {.kind = KILN_NODE_Min}};
  uint32_t n = 2;
  if (k == KILN_NODE_HardSigmoid || k == KILN_NODE_HardSwish) {
    ops[n++] = (kiln_fused_op){.kind = KILN_NODE_Mul};
    ops[n++] = (kiln_fused_op){.kind = KILN_NODE_Add};
  } else if (k == KILN_NODE_Swish) {
    ops[0] = (kiln_fused_op){.kind = KILN_NODE_Mul};
    ops[1] = (kiln_fused_op){.kind = KILN_NODE_Sigmoid};
  } else if (k != KILN_NODE_Clip) {
    return false;
  }
  return kcpu_ew_supported(el, ops, n);
}

bool kcpu_supports_fused(void *state, const kiln_node *n, kiln_node_kind activation) {
  (void)state;
  switch (activation) {
  case KILN_NODE_Relu:
  case KILN_NODE_Clip:
  case KILN_NODE_HardSigmoid:
  case KILN_NODE_HardSwish:
  case KILN_NODE_Swish:
  case KILN_NODE_Gelu: /* exact; over each finished GEMM tile or depthwise row */
    return kcpu_fuse_relu_ok(n);
  case KILN_NODE_Add: /* fusebias: the f32 GEMM adds Gemm's C or Conv's residual in its
                       * epilogue, the depthwise kernels a residual per row */
    return (kiln_node_get_kind(n) == KILN_NODE_MatMul || kiln_node_get_kind(n) == KILN_NODE_Conv) &&
           kcpu_fuse_relu_ok(n);
  case KILN_NODE_FusedElementwise:
    break;
  default:
    return false;
  }
  /* The fuse pass has already checked the node itself (a kind of
   * the body language or one it expands, one float element type
   * throughout, exact Gelu); what is left is whether the loop generator
   * emits this kind, or every kind of its expansion. */
  kiln_node_kind k = kiln_node_get_kind(n);
  const kiln_type *t = kiln_value_type(kiln_node_result(n, 0));
  if (!kiln_fused_arity(k))
    return kcpu_fuse_expansion_ok(k, t->elem);
  kiln_fused_op op = {.kind = (int32_t)k};
  return kcpu_ew_supported(t->elem, &op, 1);
}
