/* plugins/opencl/gen_norm.c: the norm family's Softmax and LogSoftmax, one
 * row along the axis per work item (its maximum, the sum of exponentials,
 * then the row written). */
#include "ocl.h"

kiln_status ocl_gen_softmax(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  if (!x || !ocl_is_float(x->elem) || x->elem != y->elem || x->rank == 0)
    return ocl_gen_unsupported(g, "Softmax needs a float tensor of rank >= 1");
  int64_t axis = kiln_attrs_int_or(g->attrs, "axis", -1);
  if (axis < 0)
    axis += x->rank;
  if (axis < 0 || axis >= (int64_t)x->rank)
    return ocl_gen_unsupported(g, "axis out of range");
  int64_t D = x->dims[axis], inner = 1;
  for (uint32_t i = (uint32_t)axis + 1; i < x->rank; i++)
    inner *= x->dims[i];
  int64_t rows = D ? kiln_type_numel(x) / D : 0;
  const char *t = ocl_ctype(x->elem);
  bool logsm = g->kind == KILN_NODE_LogSoftmax;
  ocl_gen_begin_1d(g, rows);
  ocl_sb_printf(g->src,
                "  long base = (gid / %lldL) * %lldL + gid %% %lldL;\n"
                "  %s m = -INFINITY, s = 0;\n"
                "  for (long i = 0; i < %lldL; i++) m = fmax(m, p1[base + i * %lldL]);\n"
                "  for (long i = 0; i < %lldL; i++) s += exp(p1[base + i * %lldL] - m);\n"
                "  for (long i = 0; i < %lldL; i++) {\n"
                "    %s v = p1[base + i * %lldL] - m;\n"
                "    p0[base + i * %lldL] = %s;\n  }\n",
                (long long)inner, (long long)(D * inner), (long long)inner, t, (long long)D,
                (long long)inner, (long long)D, (long long)inner, (long long)D, t, (long long)inner,
                (long long)inner, logsm ? "v - log(s)" : "exp(v) / s");
  ocl_gen_end(g);
  return NULL;
}
