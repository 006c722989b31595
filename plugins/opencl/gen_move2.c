/* plugins/opencl/gen_move2.c: more index-only kernels: CumSum,
 * DepthToSpace, SpaceToDepth and EyeLike, one result element per work item
 * with shapes and attributes baked in. */
#include <string.h>

#include "ocl.h"

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
