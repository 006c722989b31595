/* plugins/cpu/fuse.c: the cpu plugin's answer to "may this node join a
 * FusedElementwise body?" (the supports_fused hook). The fusion itself is
 * the core's `fuse` pass (passes/fuse.c); the cpu generator turns each
 * fused body into one vectorized loop (ew.c), so a node may join when it
 * is a float elementwise node the generator can emit in a body. */
#include <string.h>

#include "cpu.h"

bool kcpu_supports_fused(void *state, const kiln_node *n, kiln_node_kind activation) {
  (void)state;
  if (activation != KILN_NODE_FusedElementwise)
    return false;
  kiln_node_kind k = kiln_node_get_kind(n);
  uint32_t arity = kiln_fused_arity(k);
  if (arity == 0 || kiln_node_input_count(n) != arity || kiln_node_result_count(n) != 1)
    return false;
  const kiln_type *t = kiln_value_type(kiln_node_result(n, 0));
  if ((t->elem != KILN_F32 && t->elem != KILN_F64) || t->quantized)
    return false;
  for (uint32_t i = 0; i < arity; i++) {
    const kiln_value *v = kiln_node_input(n, i);
    if (!v || kiln_value_type(v)->elem != t->elem || kiln_value_type(v)->quantized)
      return false;
  }
  if (k == KILN_NODE_Gelu &&
      strcmp(kiln_attrs_string_or(kiln_node_attrs(n), "approximate", "none"), "none") != 0)
    return false;
  kiln_fused_op op = {.kind = (int32_t)k};
  return kcpu_ew_supported(t->elem, &op, 1);
}
