/* plugins/opencl/gen_det.c: Det, the determinant of each square matrix of the batch by LU
 * decomposition with partial pivoting, one matrix per work item. The
 * matrix is copied into a private array (there is no scratch buffer), which
 * bounds n; the elimination is the interpreter's (plugins/interpreter/
 * later.c) step for step, in double where the device has it, so results
 * agree to rounding. */
#include "ocl.h"

/* Private memory per work item grows with n * n; 16 x 16 doubles (2 KiB)
 * is already more than most GPUs keep in registers. */
#define DET_MAX_N 16

/* NULL when the generator can run Det on these types, else the reason. */
static const char *det_check(const kiln_type *y, const kiln_type *x) {
  if (!x)
    return "X missing";
  if (!ocl_is_float(x->elem) || y->elem != x->elem)
    return "X and Y need one element type, f32 or f64";
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return "X is not a stack of square matrices";
  int64_t n = x->dims[x->rank - 1];
  if (n > DET_MAX_N)
    return "matrices larger than 16 x 16 do not fit in private memory";
  int64_t count = 1;
  for (uint32_t i = 0; i + 2 < x->rank; i++)
    count *= x->dims[i];
  if (kiln_type_numel(y) != count)
    return "Y does not hold one value per matrix";
  return NULL;
}

bool ocl_det_ok(const kiln_node *n) {
  const kiln_value *xv = kiln_node_input_count(n) > 0 ? kiln_node_input(n, 0) : NULL;
  if (kiln_node_result_count(n) < 1)
    return false;
  return !det_check(kiln_value_type(kiln_node_result(n, 0)), xv ? kiln_value_type(xv) : NULL);
}

kiln_status ocl_gen_det(ocl_gen *g) {
  if (g->n_ops < 2)
    return ocl_gen_unsupported(g, "Det needs X");
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  const char *why = det_check(y, x);
  if (why)
    return ocl_gen_unsupported(g, why);
  long long n = (long long)x->dims[x->rank - 1], nn = n * n;
  const char *t = ocl_ctype(x->elem);
  const char *r = g->dev && g->dev->fp64 ? "double" : t;
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  /* The pragma must open its block; contracting f * a + b into fma would
   * round differently from the interpreter. */
  ocl_sb_printf(g->src,
                "  {\n#pragma OPENCL FP_CONTRACT OFF\n"
                "  %s a[%lld];\n"
                "  __global const %s *xs = p1 + gid * %lldL;\n"
                "  for (int i = 0; i < %lld; i++) a[i] = (%s)xs[i];\n"
                "  %s det = 1;\n",
                r, nn > 0 ? nn : 1, t, nn, nn, r, r);
  ocl_sb_printf(g->src,
                "  for (int c = 0; c < %lld && det != 0; c++) {\n"
                "    int piv = c;\n"
                "    for (int i = c + 1; i < %lld; i++)\n"
                "      if (fabs(a[i * %lld + c]) > fabs(a[piv * %lld + c])) piv = i;\n"
                "    if (a[piv * %lld + c] == 0) { det = 0; break; }\n"
                "    if (piv != c) {\n"
                "      for (int j = 0; j < %lld; j++) {\n"
                "        %s s = a[c * %lld + j]; a[c * %lld + j] = a[piv * %lld + j]; a[piv * %lld "
                "+ j] = s;\n"
                "      }\n"
                "      det = -det;\n"
                "    }\n"
                "    det *= a[c * %lld + c];\n"
                "    for (int i = c + 1; i < %lld; i++) {\n"
                "      %s f = a[i * %lld + c] / a[c * %lld + c];\n"
                "      for (int j = c; j < %lld; j++) a[i * %lld + j] -= f * a[c * %lld + j];\n"
                "    }\n"
                "  }\n"
                "  p0[gid] = (%s)det;\n  }\n",
                n, n, n, n, n, n, r, n, n, n, n, n, n, r, n, n, n, n, n, t);
  ocl_gen_end(g);
  return NULL;
}
