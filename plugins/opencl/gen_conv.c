/* plugins/opencl/gen_conv.c: the conv family. Conv: the choice between
 * the tiled kernel (gen_conv_tiled.c) and the direct one here, one result
 * element per work item with its window read from global memory; window
 * parameters come from ocl_win_params (gen_pool.c).
 *
 * ConvTranspose (the transposed convolution), one result element per
 * work item, gathering the input positions that reach it. The interpreter
 * (plugins/interpreter/conv.c) scatters instead; the gather form
 * visits the same (input, kernel) pairs, and it visits them in the
 * interpreter's order, so that with a double accumulator the sums agree
 * bit for bit. Both read the window from kiln_window_decode (kiln/ops.h),
 * so result sizes come from the inferred result type and the begin pads
 * agree for every auto_pad / output_shape mix. */
#include <kiln/ops.h>
#include <stdio.h>
#include <string.h>

#include "ocl.h"

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
  kiln_window p;
  KILN_TRY(ocl_win_params(g, x, y, w, &p));
  int64_t G = kiln_attrs_int_or(g->attrs, "group", 1);
  int64_t C = x->dims[1], M = y->dims[1], Cg = w->dims[1];
  if (G <= 0 || C != Cg * G || M % G || w->dims[0] != M)
    return ocl_gen_unsupported(g, "channels do not match group");
  ocl_sb probe = {0};
  bool act_ok = ocl_gen_activation(&probe, g->attrs, y->elem, "acc", "");
  ocl_sb_free(&probe);
  if (!act_ok)
    return ocl_gen_unsupported(g, "unknown fused activation");
  int64_t isz = prod(p.in, p.rank), ksz = prod(p.kernel, p.rank), osz = prod(p.out, p.rank);
  int mode = ocl_conv_tiling_mode();
  if (conv_tiling_fits(g, y->elem) &&
      (mode > 0 || (mode == 0 && conv_tiling_pays(M / G, Cg, Cg * ksz, osz))))
    return ocl_gen_conv_tiled(g, &p, G);
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
  ocl_win_loops(g, &p);
  /* Horner form, one statement per dimension (a flat "0 * K0 + k0 * K1 +
   * k1 ..." would lose the nesting from 3-D on). */
  ocl_sb_printf(g->src, "  wi = 0;\n");
  for (uint32_t d = 0; d < p.rank; d++)
    ocl_sb_printf(g->src, "  wi = wi * %lldL + k%u;\n", (long long)p.kernel[d], d);
  ocl_sb_printf(g->src, "  acc += p1[xbase + xi%u] * p2[wbase + wi];\n", p.rank);
  ocl_win_close(g, &p);
  /* the bias joins after the window sum, as in the interpreter */
  ocl_sb_printf(g->src, "  }\n%s", b ? "  acc += p3[c1];\n" : "");
  ocl_gen_activation(g->src, g->attrs, y->elem, "acc", "  ");
  ocl_sb_printf(g->src, "  p0[gid] = acc;\n");
  ocl_gen_end(g);
  return NULL;
}

typedef struct convt {
  int64_t N, C, M, G;
  kiln_window w; /* pad_begin is where the gather starts */
  char why[192]; /* the decoder's message when it declines */
} convt;

/* Fill p from the operand types and attributes; NULL when the generator
 * can run the node, else the reason it cannot (a static string or p->why).
 * Both the generator and ocl_convtranspose_ok call this, so they never
 * disagree. */
static const char *convt_params(const kiln_attrs *a, const kiln_type *y, const kiln_type *x,
                                const kiln_type *w, const kiln_type *b, convt *p) {
  memset(p, 0, sizeof *p);
  if (!x || !w)
    return "X or W missing";
  if (!ocl_is_float(y->elem) || x->elem != y->elem || w->elem != y->elem)
    return "X, W and Y need one element type, f32 or f64";
  if (x->rank < 3 || w->rank != x->rank || y->rank != x->rank)
    return "X, W and Y need equal rank >= 3";
  p->N = x->dims[0];
  p->C = x->dims[1];
  p->M = y->dims[1];
  p->G = kiln_attrs_int_or(a, "group", 1);
  if (p->G <= 0 || p->C % p->G || p->M % p->G)
    return "group does not divide the channels";
  if (w->dims[0] != p->C || w->dims[1] != p->M / p->G)
    return "W is not [C, M/group, k...]";
  if (b && (b->elem != y->elem || b->rank != 1 || b->dims[0] != p->M))
    return "B is not [M] of the result's type";
  if (y->dims[0] != p->N)
    return "X and Y disagree on the batch size";
  /* the decoder guarantees strides >= 1, which the gather divides by */
  kiln_status s = kiln_window_decode("ConvTranspose", a, x, y, w->dims + 2, true, &p->w);
  if (s) {
    snprintf(p->why, sizeof p->why, "%s", kiln_status_message(s));
    kiln_status_free(s);
    return p->why;
  }
  return NULL;
}

bool ocl_convtranspose_ok(const kiln_node *n) {
  const kiln_value *xv = kiln_node_input(n, 0), *wv = kiln_node_input(n, 1);
  const kiln_value *bv = kiln_node_input_count(n) > 2 ? kiln_node_input(n, 2) : NULL;
  if (kiln_node_result_count(n) < 1)
    return false;
  convt p;
  return !convt_params(kiln_node_attrs(n), kiln_value_type(kiln_node_result(n, 0)),
                       xv ? kiln_value_type(xv) : NULL, wv ? kiln_value_type(wv) : NULL,
                       bv ? kiln_value_type(bv) : NULL, &p);
}

kiln_status ocl_gen_convtranspose(ocl_gen *g) {
  if (g->n_ops < 3)
    return ocl_gen_unsupported(g, "ConvTranspose needs X and W");
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type, *w = g->ops[2].type;
  const kiln_type *b = g->n_ops > 3 ? g->ops[3].type : NULL;
  convt p;
  const char *why = convt_params(g->attrs, y, x, w, b, &p);
  if (why)
    return ocl_gen_unsupported(g, why);
  int64_t Cg = p.C / p.G, Mg = p.M / p.G;
  int64_t isz = prod(p.w.in, p.w.rank), ksz = prod(p.w.kernel, p.w.rank);
  const char *t = ocl_ctype(y->elem);
  /* The interpreter sums in double; so do we where the device can. */
  const char *acc_t = g->dev && g->dev->fp64 ? "double" : t;
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  /* A nested block, since the pragma must precede its block's statements;
   * contracting x * w + acc into fma would round differently from the
   * interpreter. */
  ocl_sb_printf(g->src, "  {\n#pragma OPENCL FP_CONTRACT OFF\n");
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src,
                "  long grp = c1 / %lldL, ml = c1 %% %lldL;\n"
                "  %s acc = 0;\n"
                "  for (long ci = 0; ci < %lldL; ci++) {\n"
                "  long ch = grp * %lldL + ci;\n"
                "  long xbase = (c0 * %lldL + ch) * %lldL;\n"
                "  long wbase = (ch * %lldL + ml) * %lldL;\n"
                "  long xi0 = 0, wi0 = 0;\n",
                (long long)Mg, (long long)Mg, acc_t, (long long)Cg, (long long)Cg, (long long)p.C,
                (long long)isz, (long long)Mg, (long long)ksz);
  /* The interpreter walks input cells in row-major order; with a positive
   * dilation a larger kernel index means a smaller input index, so the
   * kernel loops run backwards to visit the cells in that same order. */
  for (uint32_t d = 0; d < p.w.rank; d++) {
    if (p.w.dilation[d] > 0)
      ocl_sb_printf(g->src, "  for (long k%u = %lldL; k%u >= 0; k%u--) {\n", d,
                    (long long)(p.w.kernel[d] - 1), d, d);
    else
      ocl_sb_printf(g->src, "  for (long k%u = 0; k%u < %lldL; k%u++) {\n", d, d,
                    (long long)p.w.kernel[d], d);
    ocl_sb_printf(g->src,
                  "  long t%u = c%u + %lldL - k%u * %lldL;\n"
                  "  if (t%u < 0 || t%u %% %lldL != 0) continue;\n"
                  "  long x%u = t%u / %lldL;\n"
                  "  if (x%u >= %lldL) continue;\n"
                  "  long xi%u = xi%u * %lldL + x%u, wi%u = wi%u * %lldL + k%u;\n",
                  d, d + 2, (long long)p.w.pad_begin[d], d, (long long)p.w.dilation[d], d, d,
                  (long long)p.w.stride[d], d, d, (long long)p.w.stride[d], d, (long long)p.w.in[d],
                  d + 1, d, (long long)p.w.in[d], d, d + 1, d, (long long)p.w.kernel[d], d);
  }
  ocl_sb_printf(g->src, "  acc += (%s)p1[xbase + xi%u] * (%s)p2[wbase + wi%u];\n", acc_t, p.w.rank,
                acc_t, p.w.rank);
  for (uint32_t d = 0; d < p.w.rank; d++)
    ocl_sb_printf(g->src, "  }\n");
  ocl_sb_printf(g->src, "  }\n");
  if (b)
    ocl_sb_printf(g->src, "  acc += (%s)p3[c1];\n", acc_t);
  ocl_sb_printf(g->src, "  p0[gid] = (%s)acc;\n  }\n", t);
  ocl_gen_end(g);
  return NULL;
}
