/* plugins/opencl/gen_movement.c: the movement family's kernels (Transpose,
 * Expand, Tile, Slice, Concat, Split, Pad, Trilu, DepthToSpace,
 * SpaceToDepth). Each work item computes where one result element comes
 * from, with shapes, strides and attribute values baked in as constants.
 * Reshape, Flatten, Squeeze and Unsqueeze are flat copies
 * (ocl_gen_copy, gen_elementwise.c). */
#include <stdio.h>
#include <string.h>

#include "kiln/ops.h"
#include "ocl.h"

static void strides(const kiln_type *t, int64_t *st) {
  kiln_type_strides(t, st);
}

kiln_status ocl_gen_transpose(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  int64_t perm[KILN_MAX_RANK], st[KILN_MAX_RANK];
  for (uint32_t i = 0; i < x->rank; i++)
    perm[i] = x->rank - 1 - i;
  const kiln_attr *at = kiln_attrs_find(g->attrs, "perm");
  if (at && kiln_attr_len(at)) {
    if (kiln_attr_len(at) != x->rank)
      return ocl_gen_unsupported(g, "perm has the wrong length");
    memcpy(perm, kiln_attr_ints(at), x->rank * sizeof *perm);
  }
  strides(x, st);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  p0[gid] = p1[0");
  for (uint32_t i = 0; i < y->rank; i++) {
    if (perm[i] < 0 || perm[i] >= (int64_t)x->rank)
      return ocl_gen_unsupported(g, "perm entry out of range");
    ocl_sb_printf(g->src, " + c%u * %lldL", i, (long long)st[perm[i]]);
  }
  ocl_sb_printf(g->src, "];\n");
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_expand(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  if (x->rank > y->rank)
    return ocl_gen_unsupported(g, "Expand to a lower rank");
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  p0[gid] = p1[");
  ocl_gen_bcast_index(g, x, y->rank, "c");
  ocl_sb_printf(g->src, "];\n");
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_tile(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  int64_t st[KILN_MAX_RANK];
  strides(x, st);
  if (x->rank != y->rank)
    return ocl_gen_unsupported(g, "Tile result rank differs");
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  p0[gid] = p1[0");
  for (uint32_t i = 0; i < x->rank; i++)
    ocl_sb_printf(g->src, " + (c%u %% %lldL) * %lldL", i, (long long)(x->dims[i] ? x->dims[i] : 1),
                  (long long)st[i]);
  ocl_sb_printf(g->src, "];\n");
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_slice(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  kiln_slice sl;
  kiln_status s = kiln_slice_decode(g->attrs, x, &sl);
  if (s) {
    kiln_status r = ocl_gen_unsupported(g, kiln_status_message(s));
    kiln_status_free(s);
    return r;
  }
  if (x->rank != y->rank)
    return ocl_gen_unsupported(g, "Slice result of another rank");
  int64_t st[KILN_MAX_RANK];
  strides(x, st);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  p0[gid] = p1[0");
  for (uint32_t i = 0; i < x->rank; i++)
    ocl_sb_printf(g->src, " + (%lldL + c%u * %lldL) * %lldL", (long long)sl.start[i], i,
                  (long long)sl.step[i], (long long)st[i]);
  ocl_sb_printf(g->src, "];\n");
  ocl_gen_end(g);
  return NULL;
}

/* Flat index into t of coordinates c*, axis coordinate shifted by -off. */
static void index_shifted(ocl_gen *g, const kiln_type *t, uint32_t axis, int64_t off) {
  int64_t st[KILN_MAX_RANK];
  strides(t, st);
  ocl_sb_printf(g->src, "0");
  for (uint32_t i = 0; i < t->rank; i++)
    if (i == axis)
      ocl_sb_printf(g->src, " + (c%u - %lldL) * %lldL", i, (long long)off, (long long)st[i]);
    else
      ocl_sb_printf(g->src, " + c%u * %lldL", i, (long long)st[i]);
}

kiln_status ocl_gen_concat(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type;
  uint32_t axis = 0;
  KILN_TRY(ocl_gen_axis(g, y->rank, 0, &axis));
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  int64_t off = 0;
  for (uint32_t k = 1; k < g->n_ops; k++) {
    const kiln_type *t = g->ops[k].type;
    if (!t || t->rank != y->rank)
      return ocl_gen_unsupported(g, "Concat input of another rank");
    if (t->dims[axis] == 0)
      continue;
    ocl_sb_printf(g->src, "  %sif (c%u < %lldL) p0[gid] = p%u[", off ? "else " : "", axis,
                  (long long)(off + t->dims[axis]), k);
    index_shifted(g, t, axis, off);
    ocl_sb_printf(g->src, "];\n");
    off += t->dims[axis];
  }
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_split(ocl_gen *g) {
  const kiln_type *x = g->ops[g->n_res].type;
  uint32_t axis = 0;
  if (!x)
    return ocl_gen_unsupported(g, "Split without input");
  KILN_TRY(ocl_gen_axis(g, x->rank, 0, &axis));
  ocl_gen_begin_1d(g, kiln_type_numel(x));
  ocl_gen_unravel(g, "gid", x->dims, x->rank, "c");
  int64_t off = 0;
  bool first = true;
  for (uint32_t k = 0; k < g->n_res; k++) {
    const kiln_type *t = g->ops[k].type;
    if (!t)
      continue;
    if (t->dims[axis] == 0)
      continue;
    ocl_sb_printf(g->src, "  %sif (c%u < %lldL) p%u[", first ? "" : "else ", axis,
                  (long long)(off + t->dims[axis]), k);
    index_shifted(g, t, axis, off);
    ocl_sb_printf(g->src, "] = p%u[gid];\n", g->n_res);
    off += t->dims[axis];
    first = false;
  }
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_pad(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  const kiln_attr *pa = kiln_attrs_find(g->attrs, "pads");
  const kiln_attr *aa = kiln_attrs_find(g->attrs, "axes");
  uint32_t na = aa && kiln_attr_len(aa) ? kiln_attr_len(aa) : x->rank;
  if (!pa || kiln_attr_len(pa) != 2 * na || x->rank != y->rank)
    return ocl_gen_unsupported(g, "pads must have two entries per axis");
  int64_t pb[KILN_MAX_RANK] = {0}, st[KILN_MAX_RANK];
  for (uint32_t i = 0; i < na; i++) {
    int64_t ax = aa && kiln_attr_len(aa) ? kiln_attr_ints(aa)[i] : (int64_t)i;
    if (ax < 0)
      ax += x->rank;
    if (ax < 0 || ax >= (int64_t)x->rank)
      return ocl_gen_unsupported(g, "Pad axis out of range");
    pb[ax] = kiln_attr_ints(pa)[i];
  }
  const char *mode = kiln_attrs_string_or(g->attrs, "mode", "constant");
  bool constant = !strcmp(mode, "constant"), edge = !strcmp(mode, "edge");
  bool reflect = !strcmp(mode, "reflect"), wrap = !strcmp(mode, "wrap");
  if (!constant && !edge && !reflect && !wrap)
    return ocl_gen_unsupported(g, "unknown Pad mode");
  strides(x, st);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  bool inside = true; long xi = 0;\n");
  for (uint32_t i = 0; i < x->rank; i++) {
    long long n = (long long)x->dims[i];
    ocl_sb_printf(g->src, "  { long v = c%u - %lldL;\n", i, (long long)pb[i]);
    if (constant)
      ocl_sb_printf(g->src, "    if (v < 0 || v >= %lldL) inside = false;\n", n);
    else if (edge)
      ocl_sb_printf(g->src, "    v = v < 0 ? 0 : v >= %lldL ? %lldL : v;\n", n, n - 1);
    else if (wrap)
      ocl_sb_printf(g->src, "    v = ((v %% %lldL) + %lldL) %% %lldL;\n", n ? n : 1, n ? n : 1,
                    n ? n : 1);
    else if (n <= 1)
      ocl_sb_printf(g->src, "    v = 0;\n");
    else
      ocl_sb_printf(g->src,
                    "    v = ((v %% %lldL) + %lldL) %% %lldL; if (v >= %lldL) v = %lldL - v;\n",
                    2 * (n - 1), 2 * (n - 1), 2 * (n - 1), n, 2 * (n - 1));
    ocl_sb_printf(g->src, "    xi += v * %lldL; }\n", (long long)st[i]);
  }
  ocl_sb_printf(g->src, "  p0[gid] = inside ? p1[xi] : ");
  ocl_gen_const(g->src, kiln_attrs_float_or(g->attrs, "value", 0.0), y->elem);
  ocl_sb_printf(g->src, ";\n");
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_trilu(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type;
  if (y->rank < 2)
    return ocl_gen_unsupported(g, "Trilu needs rank >= 2");
  bool upper = kiln_attrs_int_or(g->attrs, "upper", 1) != 0;
  long long k = (long long)kiln_attrs_int_or(g->attrs, "k", 0);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  long d = c%u - c%u;\n  p0[gid] = (d %s %lldL) ? p1[gid] : 0;\n",
                y->rank - 1, y->rank - 2, upper ? ">=" : "<=", k);
  ocl_gen_end(g);
  return NULL;
}

/* DepthToSpace (space = true) and SpaceToDepth on [N, C, H, W]. */
kiln_status ocl_gen_depth_space(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  int64_t b = kiln_attrs_int_or(g->attrs, "blocksize", 0);
  if (!x || x->rank != 4 || y->rank != 4 || b <= 0)
    return ocl_gen_unsupported(g, "needs 4-D tensors and a positive blocksize");
  long long C = (long long)x->dims[1], H = (long long)x->dims[2], W = (long long)x->dims[3];
  long long B = (long long)b;
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  if (g->kind == KILN_NODE_DepthToSpace) {
    bool crd = !strcmp(kiln_attrs_string_or(g->attrs, "mode", "DCR"), "CRD");
    long long oc = C / (B * B);
    ocl_sb_printf(g->src,
                  "  long h = c2 / %lldL, bh = c2 %% %lldL, w = c3 / %lldL, bw = c3 %% %lldL;\n", B,
                  B, B, B);
    if (crd)
      ocl_sb_printf(g->src, "  long ic = c1 * %lldL + bh * %lldL + bw;\n", B * B, B);
    else
      ocl_sb_printf(g->src, "  long ic = (bh * %lldL + bw) * %lldL + c1;\n", B, oc);
    ocl_sb_printf(g->src, "  p0[gid] = p1[((c0 * %lldL + ic) * %lldL + h) * %lldL + w];\n", C, H,
                  W);
  } else {
    ocl_sb_printf(g->src,
                  "  long ic = c1 %% %lldL, blk = c1 / %lldL;\n"
                  "  long h = c2 * %lldL + blk / %lldL, w = c3 * %lldL + blk %% %lldL;\n"
                  "  p0[gid] = p1[((c0 * %lldL + ic) * %lldL + h) * %lldL + w];\n",
                  C, C, B, B, B, B, C, H, W);
  }
  ocl_gen_end(g);
  return NULL;
}
