/* plugins/cpu/fuse.c: the cpu plugin's supports_fused hook. Two questions:
 * "may this node join a FusedElementwise body?" (the core's `fuse` pass;
 * the cpu generator turns each fused body into one vectorized loop, emit_elementwise_loop.c,
 * so a node may join when it is a float elementwise node the generator
 * can emit in a body), and "may this activation ride on this Conv /
 * MatMul / Gemm?" (the `fuseact` pass): yes for Relu on the f32 kernels,
 * whose GEMM epilogue applies it while the tile is still in registers; and
 * "may this Add ride on this MatMul as Gemm's C?" (`fusebias`): yes for
 * f32, for the same reason. An exact Gelu may ride on f32 MatMul / Gemm
 * (applied over each finished C tile). */
#include "cpu.h"

/* The producers whose f32 emitters honour activation = "Relu" (the same
 * conditions that send them to the GEMM-based kernels). */
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
    return x->rank == 3 || x->rank == 4;
  return true;
}

bool kcpu_supports_fused(void *state, const kiln_node *n, kiln_node_kind activation) {
  (void)state;
  if (activation == KILN_NODE_Relu)
    return kcpu_fuse_relu_ok(n);
  /* Gelu (exact): over each finished GEMM tile; not on Conv, whose
   * depthwise kernels apply Relu only */
  if (activation == KILN_NODE_Gelu)
    return kiln_node_get_kind(n) != KILN_NODE_Conv && kcpu_fuse_relu_ok(n);
  /* fusebias: the f32 GEMM adds Gemm's C in its epilogue */
  if (activation == KILN_NODE_Add)
    return kiln_node_get_kind(n) == KILN_NODE_MatMul && kcpu_fuse_relu_ok(n);
  if (activation != KILN_NODE_FusedElementwise)
    return false;
  /* The fuse pass has already checked the node itself (a kind of
   * the body language, one float element type throughout, exact Gelu);
   * what is left is whether the loop generator emits this kind. */
  kiln_node_kind k = kiln_node_get_kind(n);
  const kiln_type *t = kiln_value_type(kiln_node_result(n, 0));
  kiln_fused_op op = {.kind = (int32_t)k};
  return kcpu_ew_supported(t->elem, &op, 1);
}
