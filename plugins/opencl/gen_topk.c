/* plugins/opencl/gen_topk.c: TopK, one line along the axis per work item. */
#include "ocl.h"

bool ocl_topk_ok(const kiln_node *n) {
  (void)n;
  return false; /* not yet written */
}

kiln_status ocl_gen_topk(ocl_gen *g) {
  return ocl_gen_unsupported(g, "not yet written");
}
