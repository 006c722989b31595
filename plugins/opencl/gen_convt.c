/* plugins/opencl/gen_convt.c: ConvTranspose (the transposed convolution), one result element per
 * work item, gathering the input positions that reach it. */
#include "ocl.h"

bool ocl_convtranspose_ok(const kiln_node *n) {
  (void)n;
  return false; /* not yet written */
}

kiln_status ocl_gen_convtranspose(ocl_gen *g) {
  return ocl_gen_unsupported(g, "not yet written");
}
