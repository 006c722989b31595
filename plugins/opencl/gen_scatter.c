/* plugins/opencl/gen_scatter.c: ScatterND and ScatterElements with every reduction, updates applied
 * in index order so that duplicate indices give the interpreter result. */
#include "ocl.h"

bool ocl_scatter_ok(const kiln_node *n) {
  (void)n;
  return false; /* not yet written */
}

kiln_status ocl_gen_scatter_nd(ocl_gen *g) {
  return ocl_gen_unsupported(g, "not yet written");
}

kiln_status ocl_gen_scatter_elements(ocl_gen *g) {
  return ocl_gen_unsupported(g, "not yet written");
}
