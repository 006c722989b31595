/* plugins/opencl/gen_reduce.c: the reduce family. Reduce* and ArgMax /
 * ArgMin compute one result element per work item, looping over the reduced
 * coordinates; CumSum one result element per work item, summing its prefix
 * along the axis.
 *
 * TopK, one line along the axis per work item. The best K seen so far
 * live in the result buffers themselves, kept sorted by insertion, so no scratch memory is needed.
 * The order is the interpreter's total one (by value, NaN above every number, ties by the lower
 * index), which is also what sorted = 0 produces there. */
#include "ocl.h"

/* Reduced axes of a reduction into red[] (true = reduced); false when the
 * reduction is the identity (noop_with_empty_axes). */
static kiln_status reduce_axes(ocl_gen *g, uint32_t rank, bool *red, bool *noop) {
  const kiln_attr *at = kiln_attrs_find(g->attrs, "axes");
  uint32_t n = at ? kiln_attr_len(at) : 0;
  const int64_t *v = at ? kiln_attr_ints(at) : NULL;
  *noop = false;
  for (uint32_t i = 0; i < rank; i++)
    red[i] = n == 0;
  if (n == 0 && kiln_attrs_int_or(g->attrs, "noop_with_empty_axes", 0))
    *noop = true;
  for (uint32_t i = 0; i < n; i++) {
    int64_t a = v[i] < 0 ? v[i] + rank : v[i];
    if (a < 0 || a >= (int64_t)rank)
      return ocl_gen_unsupported(g, "axis out of range");
    red[a] = true;
  }
  return NULL;
}

/* Declare base (flat input offset of the kept coordinates) from result
 * coordinates c*. keepdims decides how result axes line up. */
static void kept_base(ocl_gen *g, const kiln_type *x, const bool *red, bool keep) {
  int64_t st[KILN_MAX_RANK];
  kiln_type_strides(x, st);
  ocl_sb_printf(g->src, "  long base = 0");
  for (uint32_t i = 0, j = 0; i < x->rank; i++) {
    if (!red[i])
      ocl_sb_printf(g->src, " + c%u * %lldL", keep ? i : j, (long long)st[i]);
    if (!red[i] || keep)
      j++;
  }
  ocl_sb_printf(g->src, ";\n");
}

/* Open a loop over the reduced coordinates; off = their flat offset. */
static int64_t reduced_loop(ocl_gen *g, const kiln_type *x, const bool *red) {
  int64_t st[KILN_MAX_RANK], R = 1;
  kiln_type_strides(x, st);
  for (uint32_t i = 0; i < x->rank; i++)
    if (red[i])
      R *= x->dims[i];
  ocl_sb_printf(g->src, "  for (long r = 0; r < %lldL; r++) {\n  long rr = r, off = 0;\n",
                (long long)R);
  for (uint32_t i = x->rank; i-- > 0;)
    if (red[i])
      ocl_sb_printf(g->src, "  off += (rr %% %lldL) * %lldL; rr /= %lldL;\n", (long long)x->dims[i],
                    (long long)st[i], (long long)x->dims[i]);
  return R;
}

/* An empty Max / Min: the interpreter's identity, the type's lowest
 * (highest) value; for bool false (true), as any() and all() of nothing. */
static const char *reduce_empty(kiln_elem e, bool is_max) {
  switch (e) {
  case KILN_F32:
  case KILN_F64:
    return is_max ? "-INFINITY" : "INFINITY";
  case KILN_BOOL:
    return is_max ? "0" : "1";
  case KILN_I8:
    return is_max ? "CHAR_MIN" : "CHAR_MAX";
  case KILN_U8:
    return is_max ? "0" : "UCHAR_MAX";
  case KILN_I16:
    return is_max ? "SHRT_MIN" : "SHRT_MAX";
  case KILN_U16:
    return is_max ? "0" : "USHRT_MAX";
  case KILN_I32:
    return is_max ? "INT_MIN" : "INT_MAX";
  case KILN_U32:
    return is_max ? "0" : "UINT_MAX";
  case KILN_I64:
    return is_max ? "LONG_MIN" : "LONG_MAX";
  case KILN_U64:
    return is_max ? "0" : "ULONG_MAX";
  default:
    return "0";
  }
}

kiln_status ocl_gen_reduce(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  kiln_node_kind k = g->kind;
  if (!x || x->elem != y->elem)
    return ocl_gen_unsupported(g, "reduction whose result type differs from its input's");
  bool f = ocl_is_float(x->elem);
  /* bool: Max is "any", Min is "all"; nothing else is defined on it */
  if (x->elem == KILN_BOOL && k != KILN_NODE_ReduceMax && k != KILN_NODE_ReduceMin)
    return ocl_gen_unsupported(g, "only ReduceMax and ReduceMin take bool");
  if (!f && k != KILN_NODE_ReduceSum && k != KILN_NODE_ReduceMax && k != KILN_NODE_ReduceMin &&
      k != KILN_NODE_ReduceProd && k != KILN_NODE_ReduceMean && k != KILN_NODE_ReduceSumSquare &&
      k != KILN_NODE_ReduceL1)
    return ocl_gen_unsupported(g, "this reduction needs a float type");
  bool red[KILN_MAX_RANK], noop;
  KILN_TRY(reduce_axes(g, x->rank, red, &noop));
  if (noop)
    return ocl_gen_copy(g);
  bool keep = kiln_attrs_int_or(g->attrs, "keepdims", 1) != 0;
  const char *t = ocl_ctype(x->elem);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  kept_base(g, x, red, keep);
  bool is_max = k == KILN_NODE_ReduceMax || k == KILN_NODE_ReduceLogSumExp;
  /* Sums of f32 accumulate in double where the device has it, as the
   * interpreter does: a Mean of equal values then returns that value
   * exactly, which normalizations (x - mean) over near-constant data need. */
  bool wide = x->elem == KILN_F32 && g->dev && g->dev->fp64 && k != KILN_NODE_ReduceMax &&
              k != KILN_NODE_ReduceMin;
  const char *at = wide ? "double" : t;
  if (k == KILN_NODE_ReduceLogSumExp) {
    /* shift by the maximum so exp does not overflow */
    ocl_sb_printf(g->src, "  %s m = -INFINITY;\n", at);
    reduced_loop(g, x, red);
    ocl_sb_printf(g->src, "  m = fmax(m, (%s)p1[base + off]);\n  }\n  if (isinf(m)) m = 0;\n", at);
  }
  const char *init = (k == KILN_NODE_ReduceProd) ? "1" : "0";
  ocl_sb_printf(g->src, "  %s acc = %s;\n", at, init);
  int64_t R = reduced_loop(g, x, red);
  ocl_sb_printf(g->src, "  %s v = p1[base + off];\n", at);
  switch (k) {
  case KILN_NODE_ReduceMax:
  case KILN_NODE_ReduceMin: {
    const char *cmp = is_max ? ">" : "<";
    if (f)
      ocl_sb_printf(g->src,
                    "  acc = r == 0 ? v : (isnan(acc) || isnan(v)) ? acc + v : %s(acc, v);\n",
                    is_max ? "fmax" : "fmin");
    else
      ocl_sb_printf(g->src, "  acc = (r == 0 || v %s acc) ? v : acc;\n", cmp);
    break;
  }
  case KILN_NODE_ReduceProd:
    ocl_sb_printf(g->src, "  acc *= v;\n");
    break;
  case KILN_NODE_ReduceL1:
    ocl_sb_printf(g->src, f ? "  acc += fabs(v);\n" : "  acc += v < 0 ? -v : v;\n");
    break;
  case KILN_NODE_ReduceL2:
  case KILN_NODE_ReduceSumSquare:
    ocl_sb_printf(g->src, "  acc += v * v;\n");
    break;
  case KILN_NODE_ReduceLogSumExp:
    ocl_sb_printf(g->src, "  acc += exp(v - m);\n");
    break;
  default:
    ocl_sb_printf(g->src, "  acc += v;\n");
    break;
  }
  ocl_sb_printf(g->src, "  }\n");
  if ((k == KILN_NODE_ReduceMax || k == KILN_NODE_ReduceMin) && R == 0)
    ocl_sb_printf(g->src, "  acc = %s;\n", reduce_empty(x->elem, k == KILN_NODE_ReduceMax));
  switch (k) {
  case KILN_NODE_ReduceMean:
    ocl_sb_printf(g->src, "  acc = acc / (%s)%lld;\n", at, (long long)(R ? R : 1));
    break;
  case KILN_NODE_ReduceL2:
    ocl_sb_printf(g->src, "  acc = sqrt(acc);\n");
    break;
  case KILN_NODE_ReduceLogSum:
    ocl_sb_printf(g->src, "  acc = log(acc);\n");
    break;
  case KILN_NODE_ReduceLogSumExp:
    ocl_sb_printf(g->src, "  acc = log(acc) + m;\n");
    break;
  default:
    break;
  }
  ocl_sb_printf(g->src, "  p0[gid] = (%s)acc;\n", t);
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_argminmax(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  if (!x || x->rank == 0 || x->elem == KILN_BOOL)
    return ocl_gen_unsupported(g, "ArgMax/ArgMin needs a numeric tensor of rank >= 1");
  int64_t axis = kiln_attrs_int_or(g->attrs, "axis", 0);
  if (axis < 0)
    axis += x->rank;
  if (axis < 0 || axis >= (int64_t)x->rank)
    return ocl_gen_unsupported(g, "axis out of range");
  bool red[KILN_MAX_RANK] = {0};
  red[axis] = true;
  bool keep = kiln_attrs_int_or(g->attrs, "keepdims", 1) != 0;
  bool last = kiln_attrs_int_or(g->attrs, "select_last_index", 0) != 0;
  bool is_max = g->kind == KILN_NODE_ArgMax;
  int64_t st[KILN_MAX_RANK];
  kiln_type_strides(x, st);
  const char *t = ocl_ctype(x->elem);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  kept_base(g, x, red, keep);
  ocl_sb_printf(g->src,
                "  %s best = p1[base]; long bi = 0;\n"
                "  for (long i = 1; i < %lldL; i++) {\n"
                "    %s v = p1[base + i * %lldL];\n"
                "    if (v %s%s best) { best = v; bi = i; }\n"
                "  }\n  p0[gid] = bi;\n",
                t, (long long)x->dims[axis], t, (long long)st[axis], is_max ? ">" : "<",
                last ? "=" : "");
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_cumsum(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  if (!x || x->rank == 0 || x->elem == KILN_BOOL)
    return ocl_gen_unsupported(g, "CumSum needs a numeric tensor of rank >= 1");
  int64_t axis = kiln_attrs_int_or(g->attrs, "axis", 0);
  if (axis < 0)
    axis += x->rank;
  if (axis < 0 || axis >= (int64_t)x->rank)
    return ocl_gen_unsupported(g, "axis out of range");
  bool excl = kiln_attrs_int_or(g->attrs, "exclusive", 0) != 0;
  bool rev = kiln_attrs_int_or(g->attrs, "reverse", 0) != 0;
  int64_t st[KILN_MAX_RANK];
  kiln_type_strides(x, st);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  long long s = (long long)st[axis], d = (long long)x->dims[axis];
  ocl_sb_printf(g->src, "  long base = gid - c%u * %lldL;\n  %s acc = 0;\n", (unsigned)axis, s,
                ocl_ctype(y->elem));
  if (rev)
    ocl_sb_printf(g->src, "  for (long i = c%u%s; i < %lldL; i++)", (unsigned)axis,
                  excl ? " + 1" : "", d);
  else
    ocl_sb_printf(g->src, "  for (long i = 0; i < c%u%s; i++)", (unsigned)axis, excl ? "" : " + 1");
  ocl_sb_printf(g->src, " acc += p1[base + i * %lldL];\n  p0[gid] = acc;\n", s);
  ocl_gen_end(g);
  return NULL;
}

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
