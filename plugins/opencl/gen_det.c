/* plugins/opencl/gen_det.c: Det, the determinant of each square matrix of the batch by LU
 * decomposition with partial pivoting, one matrix per work item. */
#include "ocl.h"

bool ocl_det_ok(const kiln_node *n) {
  (void)n;
  return false; /* not yet written */
}

kiln_status ocl_gen_det(ocl_gen *g) {
  return ocl_gen_unsupported(g, "not yet written");
}
