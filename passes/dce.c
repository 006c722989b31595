/* passes/dce.c: dead code elimination. A node none of whose results is
 * used (by a node or a function output) goes; walking backwards removes
 * whole dead chains in one run. */
#include "pass_util.h"

kiln_status kiln_pass_dce(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  (void)o;
  uint32_t removed = 0;
  for (uint32_t i = kiln_function_node_count(f); i-- > 0;) {
    kiln_node *n = kiln_function_node(f, i);
    bool used = false;
    for (uint32_t r = 0; r < kiln_node_result_count(n) && !used; r++)
      used = kiln_value_use_count(kiln_node_result(n, r)) > 0;
    if (used)
      continue;
    KILN_TRY_CTX(kiln_function_remove_node(f, n), "dce");
    removed++;
  }
  if (changes)
    *changes += removed;
  return NULL;
}
