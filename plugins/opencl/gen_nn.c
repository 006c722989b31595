/* plugins/opencl/gen_nn.c: convolution, pooling, reductions, arg-min/max
 * and softmax, one result element (or one softmax row) per work item, with
 * every size, stride and pad baked into the source as a constant. Window
 * semantics follow the interpreter (plugins/interpreter/movement/pool.c):
 * result sizes come from the inferred types, pads from auto_pad or pads. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ocl.h"

typedef struct win {
  uint32_t sp;
  int64_t in[KILN_MAX_RANK], out[KILN_MAX_RANK], k[KILN_MAX_RANK];
  int64_t stride[KILN_MAX_RANK], dil[KILN_MAX_RANK], pb[KILN_MAX_RANK], pe[KILN_MAX_RANK];
} win;

static kiln_status win_params(ocl_gen *g, const kiln_type *x, const kiln_type *y,
                              const kiln_type *w, win *p) {
  memset(p, 0, sizeof *p);
  if (x->rank < 3 || y->rank != x->rank)
    return ocl_gen_unsupported(g, "X and Y need equal rank >= 3");
  p->sp = x->rank - 2;
  for (uint32_t i = 0; i < p->sp; i++)
    p->in[i] = x->dims[2 + i], p->out[i] = y->dims[2 + i];
  if (w) {
    if (w->rank != x->rank)
      return ocl_gen_unsupported(g, "W has another rank than X");
    for (uint32_t i = 0; i < p->sp; i++)
      p->k[i] = w->dims[2 + i];
  } else if (!ocl_attr_ints(g->attrs, "kernel_shape", p->sp, 0, p->k) ||
             !kiln_attrs_find(g->attrs, "kernel_shape")) {
    return ocl_gen_unsupported(g, "kernel_shape missing or of the wrong length");
  }
  int64_t pads[2 * KILN_MAX_RANK];
  if (!ocl_attr_ints(g->attrs, "strides", p->sp, 1, p->stride) ||
      !ocl_attr_ints(g->attrs, "dilations", p->sp, 1, p->dil) ||
      !ocl_attr_ints(g->attrs, "pads", 2 * p->sp, 0, pads))
    return ocl_gen_unsupported(g, "strides, dilations or pads of the wrong length");
  const char *ap = kiln_attrs_string_or(g->attrs, "auto_pad", "NOTSET");
  bool upper = !strcmp(ap, "SAME_UPPER"), lower = !strcmp(ap, "SAME_LOWER");
  bool valid = !strcmp(ap, "VALID");
  if (!upper && !lower && !valid && strcmp(ap, "NOTSET"))
    return ocl_gen_unsupported(g, "unknown auto_pad");
  for (uint32_t i = 0; i < p->sp; i++) {
    if (upper || lower) {
      int64_t total = (p->out[i] - 1) * p->stride[i] + (p->k[i] - 1) * p->dil[i] + 1 - p->in[i];
      if (total < 0)
        total = 0;
      p->pb[i] = upper ? total / 2 : total - total / 2;
      p->pe[i] = total - p->pb[i];
    } else if (!valid) {
      p->pb[i] = pads[i];
      p->pe[i] = pads[p->sp + i];
    }
  }
  return NULL;
}

/* Open one loop per window dimension; x<d> is the input coordinate,
 * xi the flat spatial input index, in<d> whether x<d> lies in the data. */
static void win_loops(ocl_gen *g, const win *p, bool skip_outside) {
  ocl_sb_printf(g->src, "  long xi0 = 0;\n");
  for (uint32_t d = 0; d < p->sp; d++) {
    ocl_sb_printf(g->src,
                  "  for (long k%u = 0; k%u < %lldL; k%u++) {\n"
                  "  long x%u = c%u * %lldL - %lldL + k%u * %lldL;\n",
                  d, d, (long long)p->k[d], d, d, d + 2, (long long)p->stride[d],
                  (long long)p->pb[d], d, (long long)p->dil[d]);
    if (skip_outside)
      ocl_sb_printf(g->src, "  if (x%u < 0 || x%u >= %lldL) continue;\n", d, d,
                    (long long)p->in[d]);
    ocl_sb_printf(g->src, "  long xi%u = xi%u * %lldL + x%u;\n", d + 1, d, (long long)p->in[d], d);
  }
}

static void win_close(ocl_gen *g, const win *p) {
  for (uint32_t d = 0; d < p->sp; d++)
    ocl_sb_printf(g->src, "  }\n");
}

static int64_t prod(const int64_t *v, uint32_t n) {
  int64_t r = 1;
  for (uint32_t i = 0; i < n; i++)
    r *= v[i];
  return r;
}

/* Whether the implicit-GEMM kernel pays: it reuses each staged W cell over
 * the tile's output positions and each staged X cell over its output
 * channels, so it needs several channels per group (depthwise, Cg == Mg ==
 * 1, has nothing to share), some depth to stage, and enough output per
 * group to fill several tiles (examples/models/cnn.onnx, 8 and 16
 * channels on 16x16 and 8x8, ran faster direct on PoCL). */
static bool conv_tiling_pays(int64_t Mg, int64_t Cg, int64_t K, int64_t P) {
  if (Mg == 1 && Cg == 1)
    return false;
  return Mg >= 8 && K >= 16 && Mg * P >= 4096;
}

/* Whether the device can hold the smallest tiling (1x1 register blocks). */
static bool conv_tiling_fits(const ocl_gen *g, kiln_elem e) {
  uint64_t edge = g->matmul_tile;
  return edge >= 2 && 2 * edge * edge * kiln_elem_size(e) <= g->dev->local_mem;
}

kiln_status ocl_gen_conv(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type, *w = g->ops[2].type;
  const kiln_type *b = g->n_ops > 3 ? g->ops[3].type : NULL;
  if (!x || !w || !ocl_is_float(y->elem) || x->elem != y->elem || w->elem != y->elem ||
      (b && b->elem != y->elem))
    return ocl_gen_unsupported(g, "Conv needs float X, W and B of the result's type");
  win p;
  KILN_TRY(win_params(g, x, y, w, &p));
  int64_t G = kiln_attrs_int_or(g->attrs, "group", 1);
  int64_t C = x->dims[1], M = y->dims[1], Cg = w->dims[1];
  if (G <= 0 || C != Cg * G || M % G || w->dims[0] != M)
    return ocl_gen_unsupported(g, "channels do not match group");
  ocl_sb probe = {0};
  bool act_ok = ocl_gen_activation(&probe, g->attrs, y->elem, "acc", "");
  ocl_sb_free(&probe);
  if (!act_ok)
    return ocl_gen_unsupported(g, "unknown fused activation");
  int64_t isz = prod(p.in, p.sp), ksz = prod(p.k, p.sp), osz = prod(p.out, p.sp);
  int mode = ocl_conv_tiling_mode();
  if (conv_tiling_fits(g, y->elem) &&
      (mode > 0 || (mode == 0 && conv_tiling_pays(M / G, Cg, Cg * ksz, osz))))
    return ocl_gen_conv_tiled(g, p.sp, p.in, p.out, p.k, p.stride, p.dil, p.pb, G);
  /* Direct: one work item per output cell, its window read from global
   * memory (depthwise and small layers, where tiles would sit mostly idle). */
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  long grp = c1 / %lldL;\n  %s acc = 0;\n", (long long)(M / G),
                ocl_ctype(y->elem));
  ocl_sb_printf(g->src,
                "  for (long ci = 0; ci < %lldL; ci++) {\n"
                "  long xbase = (c0 * %lldL + grp * %lldL + ci) * %lldL;\n"
                "  long wbase = (c1 * %lldL + ci) * %lldL;\n"
                "  long wi = 0;\n",
                (long long)Cg, (long long)C, (long long)Cg, (long long)isz, (long long)Cg,
                (long long)ksz);
  /* wi walks the kernel window in order, so it is computed from k<d>. */
  win_loops(g, &p, true);
  /* Horner form, one statement per dimension (a flat "0 * K0 + k0 * K1 +
   * k1 ..." would lose the nesting from 3-D on). */
  ocl_sb_printf(g->src, "  wi = 0;\n");
  for (uint32_t d = 0; d < p.sp; d++)
    ocl_sb_printf(g->src, "  wi = wi * %lldL + k%u;\n", (long long)p.k[d], d);
  ocl_sb_printf(g->src, "  acc += p1[xbase + xi%u] * p2[wbase + wi];\n", p.sp);
  win_close(g, &p);
  /* the bias joins after the window sum, as in the interpreter */
  ocl_sb_printf(g->src, "  }\n%s", b ? "  acc += p3[c1];\n" : "");
  ocl_gen_activation(g->src, g->attrs, y->elem, "acc", "  ");
  ocl_sb_printf(g->src, "  p0[gid] = acc;\n");
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_pool(ocl_gen *g) {
  bool is_max = g->kind == KILN_NODE_MaxPool;
  const kiln_type *y = g->ops[0].type;
  const kiln_type *ind = is_max && g->n_res > 1 ? g->ops[1].type : NULL;
  const kiln_type *x = g->ops[g->n_res].type;
  bool f = ocl_is_float(y->elem);
  if (!x || x->elem != y->elem || (!is_max && !f))
    return ocl_gen_unsupported(g, "pool on this element type");
  if (ind && ind->elem != KILN_I64)
    return ocl_gen_unsupported(g, "MaxPool indices must be i64");
  bool col_major = kiln_attrs_int_or(g->attrs, "storage_order", 0) != 0;
  win p;
  KILN_TRY(win_params(g, x, y, NULL, &p));
  int64_t isz = prod(p.in, p.sp);
  const char *t = ocl_ctype(y->elem);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  long nc = c0 * %lldL + c1;\n  __global %s *xs = p%u + nc * %lldL;\n",
                (long long)x->dims[1], t, g->n_res, (long long)isz);
  if (is_max) {
    /* starts as what a window entirely in padding gives in the interpreter
     * (-inf, or 0 for integers; index -1) */
    ocl_sb_printf(g->src, "  %s best = %s; long bi = -1;\n", t, f ? "-INFINITY" : "0");
    win_loops(g, &p, true);
    ocl_sb_printf(g->src, "  %s v = xs[xi%u];\n", t, p.sp);
    if (f)
      ocl_sb_printf(g->src, "  if (bi < 0 || v > best || (isnan(v) && !isnan(best))) ");
    else
      ocl_sb_printf(g->src, "  if (bi < 0 || v > best) ");
    ocl_sb_printf(g->src, "{ best = v; bi = ");
    if (col_major && ind) { /* Horner from the last axis: the first varies fastest */
      for (uint32_t d = 0; d + 1 < p.sp; d++)
        ocl_sb_printf(g->src, "(");
      ocl_sb_printf(g->src, "x%u", p.sp - 1);
      for (uint32_t d = p.sp - 1; d-- > 0;)
        ocl_sb_printf(g->src, " * %lldL + x%u)", (long long)p.in[d], d);
    } else {
      ocl_sb_printf(g->src, "xi%u", p.sp);
    }
    ocl_sb_printf(g->src, "; }\n");
    win_close(g, &p);
    ocl_sb_printf(g->src, "  p0[gid] = best;\n");
    if (ind)
      ocl_sb_printf(g->src, "  p1[gid] = bi < 0 ? -1L : nc * %lldL + bi;\n", (long long)isz);
  } else {
    bool include_pad = kiln_attrs_int_or(g->attrs, "count_include_pad", 0) != 0;
    ocl_sb_printf(g->src, "  %s sum = 0; long count = 0;\n", t);
    win_loops(g, &p, false);
    ocl_sb_printf(g->src, "  bool in_data = true, in_padded = true;\n");
    for (uint32_t d = 0; d < p.sp; d++)
      ocl_sb_printf(g->src,
                    "  if (x%u < %lldL || x%u >= %lldL) in_padded = false;\n"
                    "  if (x%u < 0 || x%u >= %lldL) in_data = false;\n",
                    d, (long long)-p.pb[d], d, (long long)(p.in[d] + p.pe[d]), d, d,
                    (long long)p.in[d]);
    ocl_sb_printf(g->src, "  if (in_data) { sum += xs[xi%u]; count++; }\n", p.sp);
    if (include_pad)
      ocl_sb_printf(g->src, "  else if (in_padded) count++;\n");
    win_close(g, &p);
    ocl_sb_printf(g->src, "  p0[gid] = count ? sum / (%s)count : (%s)NAN;\n", t, t);
  }
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_global_pool(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  if (!x || x->rank < 2 || !ocl_is_float(x->elem))
    return ocl_gen_unsupported(g, "global pool needs a float X of rank >= 2");
  int64_t sp = 1;
  for (uint32_t i = 2; i < x->rank; i++)
    sp *= x->dims[i];
  const char *t = ocl_ctype(x->elem);
  bool is_max = g->kind == KILN_NODE_GlobalMaxPool;
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_sb_printf(g->src, "  __global %s *xs = p1 + gid * %lldL;\n  %s acc = %s;\n", t, (long long)sp,
                t, is_max ? "xs[0]" : "0");
  ocl_sb_printf(g->src, "  for (long i = 0; i < %lldL; i++) { %s v = xs[i]; ", (long long)sp, t);
  if (is_max)
    ocl_sb_printf(g->src, "acc = (isnan(acc) || isnan(v)) ? acc + v : fmax(acc, v); }\n");
  else
    ocl_sb_printf(g->src, "acc += v; }\n");
  if (is_max)
    ocl_sb_printf(g->src, "  p0[gid] = acc;\n");
  else
    ocl_sb_printf(g->src, "  p0[gid] = acc / (%s)%lld;\n", t, (long long)sp);
  ocl_gen_end(g);
  return NULL;
}

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
