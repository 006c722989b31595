/* plugins/opencl/gen_index.c: the index family's kernels. Gather,
 * GatherElements and GatherND: one result element per work item, reading
 * the data element its index names. Every index value read from a tensor
 * is compared once with its dimension; one outside records a fault in the
 * run's fault record (kiln_fault, exec.c reads it back) and the work item
 * stops before touching memory through it.
 *
 * ScatterND and ScatterElements with every reduction, updates applied
 * in index order so that duplicate indices give the interpreter result. One kernel launch and no
 * atomics: each work item owns a set of result elements that no other work item writes (a line
 * along the axis for ScatterElements, one offset of the trailing slice for ScatterND), copies the
 * data there and then walks, in order, every update that can land on its elements. */
#include <stdio.h>
#include <string.h>

#include "ocl.h"

/* `long j` = the index at `pos` (OpenCL C text) of p2, wrapped by dim; an
 * index outside [-dim, dim) records the fault and ends the work item. */
static void ix_load(ocl_gen *g, const char *indent, const char *var, const char *pos,
                    int64_t dim) {
  ocl_sb_printf(g->src,
                "%s{ long ip_ = %s; long v_ = (long)p2[ip_];\n"
                "%s  %s = v_ < 0 ? v_ + %lldL : v_;\n"
                "%s  if ((ulong)%s >= (ulong)%lldL) { kiln_fault(pF, site, v_, %lldL, ip_); "
                "return; } }\n",
                indent, pos, indent, var, (long long)dim, indent, var, (long long)dim,
                (long long)dim);
}

kiln_status ocl_gen_gather(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type, *ix = g->ops[2].type;
  uint32_t axis = 0;
  if (!x || !ix || (ix->elem != KILN_I32 && ix->elem != KILN_I64))
    return ocl_gen_unsupported(g, "Gather needs i32 or i64 indices");
  KILN_TRY(ocl_gen_axis(g, x->rank, 0, &axis));
  int64_t st[KILN_MAX_RANK], ist[KILN_MAX_RANK];
  kiln_type_strides(x, st);
  kiln_type_strides(ix, ist);
  uint32_t q = ix->rank;
  g->checks = true;
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  long ipos = 0");
  for (uint32_t i = 0; i < q; i++)
    ocl_sb_printf(g->src, " + c%u * %lldL", axis + i, (long long)ist[i]);
  ocl_sb_printf(g->src, ";\n  long j;\n");
  ix_load(g, "  ", "j", "ipos", x->dims[axis]);
  ocl_sb_printf(g->src, "  p0[gid] = p1[j * %lldL", (long long)st[axis]);
  for (uint32_t i = 0; i < x->rank; i++) {
    if (i < axis)
      ocl_sb_printf(g->src, " + c%u * %lldL", i, (long long)st[i]);
    else if (i > axis)
      ocl_sb_printf(g->src, " + c%u * %lldL", i + q - 1, (long long)st[i]);
  }
  ocl_sb_printf(g->src, "];\n");
  ocl_gen_end(g);
  return NULL;
}

/* Why a GatherElements / GatherND of these types cannot be generated, or
 * NULL. The shape rules are checked here too, so that no index tensor
 * larger than the data can make a work item read outside it. */
static const char *gather_why_not(kiln_node_kind k, const kiln_attrs *a, const kiln_type *y,
                                  const kiln_type *x, const kiln_type *ix) {
  if (!y || !x || !ix || (ix->elem != KILN_I32 && ix->elem != KILN_I64))
    return "needs i32 or i64 indices";
  if (k == KILN_NODE_GatherElements) {
    int64_t ax = kiln_attrs_int_or(a, "axis", 0);
    ax += ax < 0 ? (int64_t)x->rank : 0;
    if (ix->rank != x->rank || ax < 0 || ax >= (int64_t)x->rank)
      return "needs indices of the data's rank and an axis inside it";
    for (uint32_t i = 0; i < x->rank; i++)
      if ((int64_t)i != ax && ix->dims[i] > x->dims[i])
        return "indices exceed the data outside the axis";
    return NULL;
  }
  int64_t bd = kiln_attrs_int_or(a, "batch_dims", 0);
  if (ix->rank < 1 || bd < 0 || bd >= (int64_t)ix->rank)
    return "bad batch_dims";
  int64_t m = ix->dims[ix->rank - 1];
  if (m < 1 || bd + m > (int64_t)x->rank)
    return "index depth exceeds the data rank";
  for (int64_t b = 0; b < bd; b++)
    if (ix->dims[b] != x->dims[b])
      return "batch dimensions of data and indices differ";
  return NULL;
}

bool ocl_gather_ok(const kiln_node *n) {
  if (kiln_node_input_count(n) < 2 || kiln_node_result_count(n) < 1 || !kiln_node_input(n, 0) ||
      !kiln_node_input(n, 1))
    return false;
  return !gather_why_not(kiln_node_get_kind(n), kiln_node_attrs(n),
                         kiln_value_type(kiln_node_result(n, 0)),
                         kiln_value_type(kiln_node_input(n, 0)),
                         kiln_value_type(kiln_node_input(n, 1)));
}

kiln_status ocl_gen_gather_elements(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type, *ix = g->ops[2].type;
  const char *why = gather_why_not(g->kind, g->attrs, y, x, ix);
  if (why)
    return ocl_gen_unsupported(g, why);
  uint32_t axis = 0;
  KILN_TRY(ocl_gen_axis(g, x->rank, 0, &axis));
  int64_t st[KILN_MAX_RANK];
  kiln_type_strides(x, st);
  g->checks = true;
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  long j;\n");
  ix_load(g, "  ", "j", "gid", x->dims[axis]);
  ocl_sb_printf(g->src, "  p0[gid] = p1[0");
  for (uint32_t i = 0; i < x->rank; i++)
    if (i == axis)
      ocl_sb_printf(g->src, " + j * %lldL", (long long)st[i]);
    else
      ocl_sb_printf(g->src, " + c%u * %lldL", i, (long long)st[i]);
  ocl_sb_printf(g->src, "];\n");
  ocl_gen_end(g);
  return NULL;
}

/* GatherND: one work item per result element; tuple t = gid / slice
 * addresses, after its batch, the slice the element sits in. */
kiln_status ocl_gen_gather_nd(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type, *ix = g->ops[2].type;
  const char *why = gather_why_not(g->kind, g->attrs, y, x, ix);
  if (why)
    return ocl_gen_unsupported(g, why);
  int64_t bd = kiln_attrs_int_or(g->attrs, "batch_dims", 0), m = ix->dims[ix->rank - 1];
  int64_t st[KILN_MAX_RANK], slice = 1, per_batch = 1;
  kiln_type_strides(x, st);
  for (uint32_t i = (uint32_t)(bd + m); i < x->rank; i++)
    slice *= x->dims[i];
  for (uint32_t i = (uint32_t)bd; i + 1 < ix->rank; i++)
    per_batch *= ix->dims[i];
  g->checks = true;
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_sb_printf(g->src, "  long t = gid / %lldL, off = 0;\n", (long long)(slice ? slice : 1));
  if (bd > 0)
    ocl_sb_printf(g->src, "  off = (t / %lldL) * %lldL;\n", (long long)(per_batch ? per_batch : 1),
                  (long long)st[bd - 1]);
  for (int64_t j = 0; j < m; j++) {
    char pos[64];
    snprintf(pos, sizeof pos, "t * %lldL + %lldL", (long long)m, (long long)j);
    ocl_sb_printf(g->src, "  { long x;\n");
    ix_load(g, "    ", "x", pos, x->dims[bd + j]);
    ocl_sb_printf(g->src, "    off += x * %lldL; }\n", (long long)st[bd + j]);
  }
  ocl_sb_printf(g->src, "  p0[gid] = p1[off + gid %% %lldL];\n", (long long)(slice ? slice : 1));
  ocl_gen_end(g);
  return NULL;
}

typedef enum { SC_NONE, SC_ADD, SC_MUL, SC_MAX, SC_MIN, SC_BAD } sc_red;

static sc_red sc_reduction(const kiln_attrs *a) {
  const char *r = kiln_attrs_string_or(a, "reduction", "none");
  return !strcmp(r, "none")  ? SC_NONE
         : !strcmp(r, "add") ? SC_ADD
         : !strcmp(r, "mul") ? SC_MUL
         : !strcmp(r, "max") ? SC_MAX
         : !strcmp(r, "min") ? SC_MIN
                             : SC_BAD;
}

static bool sc_index_elem(kiln_elem e) {
  return e == KILN_I32 || e == KILN_I64;
}

/* The element types whose arithmetic sc_apply can write (the stored
 * types minus the half ones, which the core promotes to f32 for us). */
static bool sc_data_elem(kiln_elem e) {
  return ocl_ctype(e) && !ocl_is_half(e);
}

static const char *sc_unsigned_of(kiln_elem e) {
  switch (e) {
  case KILN_I8:
    return "uchar";
  case KILN_I16:
    return "ushort";
  case KILN_I32:
    return "uint";
  default:
    return "ulong";
  }
}

/* dst = reduce(dst, src) exactly as the interpreter computes it: floats in
 * their own precision (f32 sums and products round the same as through
 * double), signed integers wrapping in two's complement (done on the
 * unsigned type, whose overflow OpenCL C defines), bool add as logical or,
 * and a NaN already in dst kept by max and min. */
static void sc_apply(ocl_gen *g, sc_red red, kiln_elem e, const char *dst, const char *src) {
  const char *t = ocl_ctype(e);
  if (red == SC_NONE) {
    ocl_sb_printf(g->src, "%s = %s;", dst, src);
    return;
  }
  ocl_sb_printf(g->src, "{ %s a = %s, b = %s; ", t, dst, src);
  if (red == SC_MAX || red == SC_MIN) {
    const char *op = red == SC_MAX ? ">" : "<";
    if (ocl_is_float(e))
      ocl_sb_printf(g->src, "%s = (a %s= b || a != a) ? a : b; }", dst, op);
    else
      ocl_sb_printf(g->src, "%s = a %s b ? a : b; }", dst, op);
    return;
  }
  const char *op = red == SC_ADD ? "+" : "*";
  if (ocl_is_float(e))
    ocl_sb_printf(g->src, "%s = a %s b; }", dst, op);
  else if (e == KILN_BOOL && red == SC_ADD)
    ocl_sb_printf(g->src, "%s = (uchar)(a || b); }", dst);
  else if (kiln_elem_is_signed_int(e))
    ocl_sb_printf(g->src, "%s = as_%s((%s)((ulong)a %s (ulong)b)); }", dst, t, sc_unsigned_of(e),
                  op);
  else
    ocl_sb_printf(g->src, "%s = (%s)((ulong)a %s (ulong)b); }", dst, t, op);
}

static bool sc_axis(const kiln_attrs *a, uint32_t rank, uint32_t *out) {
  int64_t ax = kiln_attrs_int_or(a, "axis", 0);
  if (ax < 0)
    ax += rank;
  if (ax < 0 || ax >= (int64_t)rank)
    return false;
  *out = (uint32_t)ax;
  return true;
}

/* Why a ScatterND / ScatterElements with these operand types and
 * attributes cannot be generated, or NULL when it can. */
static const char *sc_why_not(kiln_node_kind k, const kiln_attrs *a, const kiln_type *y,
                              const kiln_type *d, const kiln_type *ix, const kiln_type *u) {
  if (!y || !d || !ix || !u)
    return "an operand is missing";
  if (!sc_data_elem(d->elem) || y->elem != d->elem || u->elem != d->elem ||
      !kiln_type_same_shape(y, d))
    return "result, data and updates must share a non-half element type, result and data a shape";
  if (!sc_index_elem(ix->elem))
    return "indices must be i32 or i64";
  if (sc_reduction(a) == SC_BAD)
    return "unknown reduction";
  if (k == KILN_NODE_ScatterElements) {
    uint32_t ax;
    if (!sc_axis(a, d->rank, &ax))
      return "axis out of range";
    if (ix->rank != d->rank || kiln_type_numel(u) != kiln_type_numel(ix))
      return "indices must have the data's rank and as many elements as updates";
    for (uint32_t i = 0; i < d->rank; i++)
      if (i != ax && ix->dims[i] > d->dims[i])
        return "indices exceed the data outside the axis";
    return NULL;
  }
  if (ix->rank < 1 || ix->dims[ix->rank - 1] > (int64_t)d->rank)
    return "index depth exceeds the data rank";
  int64_t m = ix->dims[ix->rank - 1], slice = 1, tuples = 1;
  for (uint32_t i = (uint32_t)m; i < d->rank; i++)
    slice *= d->dims[i];
  for (uint32_t i = 0; i + 1 < ix->rank; i++)
    tuples *= ix->dims[i];
  if (kiln_type_numel(u) != tuples * slice)
    return "updates do not hold one data slice per index tuple";
  return NULL;
}

bool ocl_scatter_ok(const kiln_node *n) {
  if (kiln_node_input_count(n) < 3 || kiln_node_result_count(n) < 1)
    return false;
  const kiln_value *d = kiln_node_input(n, 0), *ix = kiln_node_input(n, 1),
                   *u = kiln_node_input(n, 2);
  if (!d || !ix || !u)
    return false;
  return !sc_why_not(kiln_node_get_kind(n), kiln_node_attrs(n),
                     kiln_value_type(kiln_node_result(n, 0)), kiln_value_type(d),
                     kiln_value_type(ix), kiln_value_type(u));
}

static const char *sc_check(const ocl_gen *g) {
  if (g->n_ops < 4 || g->n_res < 1)
    return "expected one result and three inputs";
  return sc_why_not(g->kind, g->attrs, g->ops[0].type, g->ops[1].type, g->ops[2].type,
                    g->ops[3].type);
}

/* Work item gid owns element offset gid of the trailing slice at every
 * leading position; update tuple t touches exactly one of them. */
kiln_status ocl_gen_scatter_nd(ocl_gen *g) {
  const char *why = sc_check(g);
  if (why)
    return ocl_gen_unsupported(g, why);
  const kiln_type *d = g->ops[1].type, *ix = g->ops[2].type;
  uint32_t m = (uint32_t)ix->dims[ix->rank - 1];
  int64_t slice = 1, lead = 1, tuples = 1, st[KILN_MAX_RANK];
  kiln_type_strides(d, st);
  for (uint32_t i = m; i < d->rank; i++)
    slice *= d->dims[i];
  for (uint32_t i = 0; i < m; i++)
    lead *= d->dims[i];
  for (uint32_t i = 0; i + 1 < ix->rank; i++)
    tuples *= ix->dims[i];
  g->checks = true;
  ocl_gen_begin_1d(g, kiln_type_numel(d) ? slice : 0);
  ocl_sb_printf(g->src,
                "  for (long p = 0; p < %lldL; p++) p0[p * %lldL + gid] = p1[p * %lldL + gid];\n"
                "  for (long t = 0; t < %lldL; t++) {\n"
                "    long off = 0;\n",
                (long long)lead, (long long)slice, (long long)slice, (long long)tuples);
  for (uint32_t j = 0; j < m; j++) {
    char pos[64];
    snprintf(pos, sizeof pos, "t * %uL + %uL", m, j);
    ocl_sb_printf(g->src, "    { long x;\n");
    ix_load(g, "      ", "x", pos, d->dims[j]);
    ocl_sb_printf(g->src, "      off += x * %lldL; }\n", (long long)st[j]);
  }
  char src[64];
  snprintf(src, sizeof src, "p3[t * %lldL + gid]", (long long)slice);
  ocl_sb_printf(g->src, "    ");
  sc_apply(g, sc_reduction(g->attrs), d->elem, "p0[off + gid]", src);
  ocl_sb_printf(g->src, "\n  }\n");
  ocl_gen_end(g);
  return NULL;
}

/* Work item gid owns one line of the result along the axis; the updates
 * that land on it are exactly the line of indices at the same other
 * coordinates, met in the interpreter's (flat, row-major) order. */
kiln_status ocl_gen_scatter_elements(ocl_gen *g) {
  const char *why = sc_check(g);
  if (why)
    return ocl_gen_unsupported(g, why);
  const kiln_type *d = g->ops[1].type, *ix = g->ops[2].type;
  uint32_t ax = 0;
  sc_axis(g->attrs, d->rank, &ax);
  int64_t st[KILN_MAX_RANK], ist[KILN_MAX_RANK], lines_dims[KILN_MAX_RANK], lines = 1;
  kiln_type_strides(d, st);
  kiln_type_strides(ix, ist);
  for (uint32_t i = 0; i < d->rank; i++) {
    lines_dims[i] = i == ax ? 1 : d->dims[i];
    lines *= lines_dims[i];
  }
  g->checks = true;
  ocl_gen_begin_1d(g, kiln_type_numel(d) ? lines : 0);
  ocl_gen_unravel(g, "gid", lines_dims, d->rank, "c");
  ocl_sb_printf(g->src, "  long base = 0, ib = 0;\n  bool has = true;\n");
  for (uint32_t i = 0; i < d->rank; i++) {
    if (i == ax)
      continue;
    ocl_sb_printf(g->src, "  base += c%u * %lldL; ib += c%u * %lldL;\n", i, (long long)st[i], i,
                  (long long)ist[i]);
    if (ix->dims[i] < d->dims[i])
      ocl_sb_printf(g->src, "  if (c%u >= %lldL) has = false;\n", i, (long long)ix->dims[i]);
  }
  long long dn = (long long)d->dims[ax], sa = (long long)st[ax], isa = (long long)ist[ax];
  ocl_sb_printf(g->src,
                "  for (long j = 0; j < %lldL; j++) p0[base + j * %lldL] = p1[base + j * %lldL];\n"
                "  if (has)\n"
                "    for (long j = 0; j < %lldL; j++) {\n"
                "      long x;\n",
                dn, sa, sa, (long long)ix->dims[ax]);
  char pos[64];
  snprintf(pos, sizeof pos, "ib + j * %lldL", isa);
  ix_load(g, "      ", "x", pos, (long long)dn);
  ocl_sb_printf(g->src, "      ");
  char dst[64], src[64];
  snprintf(dst, sizeof dst, "p0[base + x * %lldL]", sa);
  snprintf(src, sizeof src, "p3[ib + j * %lldL]", isa);
  sc_apply(g, sc_reduction(g->attrs), d->elem, dst, src);
  ocl_sb_printf(g->src, "\n    }\n");
  ocl_gen_end(g);
  return NULL;
}
