/* plugins/opencl/gen_topk.c: TopK, one line along the axis per work item. The best K seen so far
 * live in the result buffers themselves, kept sorted by insertion, so no scratch memory is needed.
 * The order is the interpreter's total one (by value, NaN above every number, ties by the lower
 * index), which is also what sorted = 0 produces there. */
#include "ocl.h"

typedef struct topk_shape {
  uint32_t axis;
  int64_t len, inner, outer, k;
} topk_shape;

/* Why TopK with these types and attributes cannot be generated, or NULL. */
static const char *topk_why_not(const kiln_attrs *a, const kiln_type *vals, const kiln_type *idx,
                                const kiln_type *x, topk_shape *s) {
  if (!vals || !idx || !x)
    return "TopK needs its input and both results";
  if (x->rank == 0 || x->elem == KILN_BOOL || ocl_is_half(x->elem) || !ocl_ctype(x->elem))
    return "TopK needs a numeric, non-half input of rank >= 1";
  if (vals->elem != x->elem || idx->elem != KILN_I64)
    return "TopK values must have the input's type and indices be i64";
  int64_t ax = kiln_attrs_int_or(a, "axis", -1);
  if (ax < 0)
    ax += x->rank;
  if (ax < 0 || ax >= (int64_t)x->rank)
    return "axis out of range";
  s->axis = (uint32_t)ax;
  s->len = x->dims[ax];
  s->inner = s->outer = 1;
  for (uint32_t i = 0; i < s->axis; i++)
    s->outer *= x->dims[i];
  for (uint32_t i = s->axis + 1; i < x->rank; i++)
    s->inner *= x->dims[i];
  s->k = kiln_attrs_int_or(a, "k", -1);
  if (s->k < 0 || s->k > s->len)
    return "k is outside [0, length of the axis]";
  if (vals->rank != x->rank || idx->rank != x->rank ||
      kiln_type_numel(vals) != s->outer * s->k * s->inner ||
      kiln_type_numel(idx) != s->outer * s->k * s->inner)
    return "results do not have k entries along the axis";
  return NULL;
}

bool ocl_topk_ok(const kiln_node *n) {
  if (kiln_node_input_count(n) < 1 || kiln_node_result_count(n) < 2 || !kiln_node_input(n, 0))
    return false;
  topk_shape s;
  return !topk_why_not(kiln_node_attrs(n), kiln_value_type(kiln_node_result(n, 0)),
                       kiln_value_type(kiln_node_result(n, 1)),
                       kiln_value_type(kiln_node_input(n, 0)), &s);
}

kiln_status ocl_gen_topk(ocl_gen *g) {
  topk_shape s;
  const char *why = g->n_ops < 3 || g->n_res < 2 ? "TopK needs two results and an input"
                                                 : topk_why_not(g->attrs, g->ops[0].type,
                                                                g->ops[1].type, g->ops[2].type, &s);
  if (why)
    return ocl_gen_unsupported(g, why);
  kiln_elem e = g->ops[2].type->elem;
  bool largest = kiln_attrs_int_or(g->attrs, "largest", 1) != 0;
  /* BETTER(a, b): a's value ranks strictly before b's. An equal value
   * never does, so scanning in index order keeps ties by the lower index. */
  const char *better;
  if (ocl_is_float(e))
    better = largest ? "((isnan(a) && !isnan(b)) || a > b)" : "((!isnan(a) && isnan(b)) || a < b)";
  else
    better = largest ? "(a > b)" : "(a < b)";
  const char *t = ocl_ctype(e);
  long long len = (long long)s.len, in = (long long)s.inner, k = (long long)s.k;
  ocl_gen_begin_1d(g, s.k && s.len ? s.outer * s.inner : 0);
  ocl_sb_printf(g->src,
                "  long o = gid / %lldL, li = gid %% %lldL;\n"
                "  long xb = o * %lldL + li, yb = o * %lldL + li, cnt = 0;\n"
                "  for (long j = 0; j < %lldL; j++) {\n"
                "    %s a = p2[xb + j * %lldL], b;\n"
                "    long q;\n"
                "    if (cnt < %lldL) {\n"
                "      q = cnt++;\n"
                "    } else {\n"
                "      b = p0[yb + %lldL];\n"
                "      if (!%s) continue;\n"
                "      q = %lldL;\n"
                "    }\n"
                "    while (q > 0) {\n"
                "      b = p0[yb + (q - 1) * %lldL];\n"
                "      if (!%s) break;\n"
                "      p0[yb + q * %lldL] = b;\n"
                "      p1[yb + q * %lldL] = p1[yb + (q - 1) * %lldL];\n"
                "      q--;\n"
                "    }\n"
                "    p0[yb + q * %lldL] = a;\n"
                "    p1[yb + q * %lldL] = j;\n"
                "  }\n",
                in, in, len * in, k * in, len, t, in, k, (k - 1) * in, better, k - 1, in, better,
                in, in, in, in, in);
  ocl_gen_end(g);
  return NULL;
}
