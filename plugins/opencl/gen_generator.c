/* plugins/opencl/gen_generator.c: the generator family's EyeLike, one result
 * element per work item, its value from its coordinates alone. */
#include "ocl.h"

kiln_status ocl_gen_eyelike(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type;
  if (y->rank != 2)
    return ocl_gen_unsupported(g, "EyeLike needs a 2-D tensor");
  long long k = (long long)kiln_attrs_int_or(g->attrs, "k", 0);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_sb_printf(
      g->src, "  long i = gid / %lldL, j = gid %% %lldL;\n  p0[gid] = (j - i == %lldL) ? 1 : 0;\n",
      (long long)y->dims[1], (long long)y->dims[1], k);
  ocl_gen_end(g);
  return NULL;
}
