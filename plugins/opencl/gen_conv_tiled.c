/* plugins/opencl/gen_conv_tiled.c: Conv as an implicit GEMM with
 * local-memory tiling, and the fused `activation` epilogue that Conv,
 * MatMul and Gemm share.
 *
 * Per image and group, Y[m, p] = sum_k W[m, k] * Xcol[k, p] with m an
 * output channel of the group (M = Mg), p an output position (N = the
 * spatial size of Y) and k = ci * window + kf (K = Cg * window); Xcol is
 * never stored, its tile is gathered from X while staging. A work group of
 * E x E items (E = g->matmul_tile, the device's edge from exec.c) owns a
 * (E*RM) x (E*RN) tile of Y; every K step stages an E-deep slice of W and
 * of Xcol in local memory, and each item accumulates an RM x RN register
 * block whose rows and columns are E apart, so neighbouring items touch
 * neighbouring local words and neighbouring Y cells.
 *
 * Padding cells of Xcol are staged as 0, so a padded tap adds 0 * w where
 * the interpreter skips it; the two differ only for an infinite or NaN
 * weight next to padding. */
#include <kiln/ops.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

/* KILN_OPENCL_CONV=direct|tiled forces one Conv kernel (tests, timing);
 * anything else, or unset, lets the generator choose (0). */
int ocl_conv_tiling_mode(void) {
  const char *e = getenv("KILN_OPENCL_CONV");
  if (!e)
    return 0;
  return !strcmp(e, "tiled") ? 1 : !strcmp(e, "direct") ? -1 : 0;
}

/* The interpreter's formulas (plugins/interpreter/tensor.c,
 * interp_apply_activation), including NaN passing through Relu and
 * LeakyRelu and the two-sided sigmoid that never overflows exp. The
 * activation is read by kiln_fused_act_decode_params (kiln/ops.h); false when it
 * declines the name. */
bool ocl_gen_activation(ocl_sb *b, const kiln_attrs *a, kiln_elem e, const char *var,
                        const char *indent) {
  kiln_fused_act_params act;
  kiln_status s = kiln_fused_act_decode_params("opencl", a, &act);
  if (s) {
    kiln_status_free(s);
    return false;
  }
  const char *t = ocl_ctype(e);
  switch (act.kind) {
  case KILN_FUSED_ACT_NONE:
    break;
  case KILN_FUSED_ACT_RELU:
    ocl_sb_printf(b, "%s%s = (%s > 0 || isnan(%s)) ? %s : (%s)0;\n", indent, var, var, var, var, t);
    break;
  case KILN_FUSED_ACT_LEAKY_RELU:
    ocl_sb_printf(b, "%s%s = (%s >= 0 || isnan(%s)) ? %s : ", indent, var, var, var, var);
    ocl_gen_const(b, act.alpha, e);
    ocl_sb_printf(b, " * %s;\n", var);
    break;
  case KILN_FUSED_ACT_SIGMOID:
    ocl_sb_printf(b, "%s%s = %s >= 0 ? (%s)1 / ((%s)1 + exp(-%s)) : exp(%s) / ((%s)1 + exp(%s));\n",
                  indent, var, var, t, t, var, var, t, var);
    break;
  case KILN_FUSED_ACT_TANH:
    ocl_sb_printf(b, "%s%s = tanh(%s);\n", indent, var, var);
    break;
  case KILN_FUSED_ACT_GELU:
    ocl_sb_printf(b, "%s%s = (%s)0.5 * %s * ((%s)1 + erf(%s * (%s)0.70710678118654752440));\n",
                  indent, var, t, var, t, var, t);
    break;
  case KILN_FUSED_ACT_CLIP: /* an infinite bound clips nothing */
    if (!isinf(act.alpha)) {
      ocl_sb_printf(b, "%s%s = %s < ", indent, var, var);
      ocl_gen_const(b, act.alpha, e);
      ocl_sb_printf(b, " ? ");
      ocl_gen_const(b, act.alpha, e);
      ocl_sb_printf(b, " : %s;\n", var);
    }
    if (!isinf(act.beta)) {
      ocl_sb_printf(b, "%s%s = %s > ", indent, var, var);
      ocl_gen_const(b, act.beta, e);
      ocl_sb_printf(b, " ? ");
      ocl_gen_const(b, act.beta, e);
      ocl_sb_printf(b, " : %s;\n", var);
    }
    break;
  case KILN_FUSED_ACT_HARD_SIGMOID:
    ocl_sb_printf(b, "%s%s = fmax((%s)0, fmin((%s)1, ", indent, var, t, t);
    ocl_gen_const(b, act.alpha, e);
    ocl_sb_printf(b, " * %s + ", var);
    ocl_gen_const(b, act.beta, e);
    ocl_sb_printf(b, "));\n");
    break;
  case KILN_FUSED_ACT_HARD_SWISH:
    ocl_sb_printf(b, "%s%s = %s * fmax((%s)0, fmin((%s)1, %s / (%s)6 + (%s)0.5));\n", indent, var,
                  var, t, t, var, t, t);
    break;
  case KILN_FUSED_ACT_SWISH: /* the two-sided sigmoid of alpha x */
    ocl_sb_printf(b, "%s{ %s ax_ = ", indent, t);
    ocl_gen_const(b, act.alpha, e);
    ocl_sb_printf(b,
                  " * %s; %s = %s * (ax_ >= 0 ? (%s)1 / ((%s)1 + exp(-ax_)) : exp(ax_) / ((%s)1 + "
                  "exp(ax_))); }\n",
                  var, var, var, t, t, t);
    break;
  }
  return true;
}

/* Declare long <prefix><d> = coordinates of flat `var` in dims[0..n). */
static void unravel(ocl_sb *b, const char *var, const int64_t *dims, uint32_t n,
                    const char *prefix) {
  ocl_sb_printf(b, "        long %s_r = %s;\n", prefix, var);
  for (uint32_t d = n; d-- > 0;) {
    if (d == 0)
      ocl_sb_printf(b, "        long %s0 = %s_r;\n", prefix, prefix);
    else
      ocl_sb_printf(b, "        long %s%u = %s_r %% %lldL; %s_r /= %lldL;\n", prefix, d, prefix,
                    (long long)dims[d], prefix, (long long)dims[d]);
  }
}

kiln_status ocl_gen_conv_tiled(ocl_gen *g, const kiln_window *win, int64_t G) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type, *w = g->ops[2].type;
  const kiln_type *bias = g->n_ops > 3 ? g->ops[3].type : NULL;
  ocl_sb probe = {0};
  bool act_ok = ocl_gen_activation(&probe, g->attrs, y->elem, "v", "");
  ocl_sb_free(&probe);
  if (!act_ok)
    return ocl_gen_unsupported(g, "unknown fused activation");
  int64_t C = x->dims[1], Mtot = y->dims[1], Cg = w->dims[1], Mg = Mtot / G;
  int64_t isz = 1, P = 1, ksz = 1;
  for (uint32_t d = 0; d < win->rank; d++)
    isz *= win->in[d], P *= win->out[d], ksz *= win->kernel[d];
  int64_t K = Cg * ksz, batch = x->dims[0];
  uint32_t E = g->matmul_tile;
  size_t es = kiln_elem_size(y->elem);
  uint32_t RM = ocl_block_edge(Mg, E), RN = ocl_block_edge(P, E);
  /* Both staged slices are E deep; halve the blocks until they fit. */
  while ((uint64_t)E * E * (RM + RN) * es > g->dev->local_mem && (RM > 1 || RN > 1)) {
    if (RM >= RN)
      RM /= 2;
    else
      RN /= 2;
  }
  if (E < 2 || (uint64_t)E * E * (RM + RN) * es > g->dev->local_mem)
    return ocl_gen_unsupported(g, "the device's local memory or work-group limit is too small "
                                  "for a tiled Conv");
  uint32_t TM = E * RM, TN = E * RN;
  const char *t = ocl_ctype(y->elem);
  ocl_launch *l = g->launch;
  ocl_gen_begin(g);
  l->dims = 3;
  l->local[0] = l->local[1] = E;
  l->local[2] = 1;
  l->global[0] = (size_t)((P + TN - 1) / TN) * E;
  l->global[1] = (size_t)((Mg + TM - 1) / TM) * E;
  l->global[2] = (size_t)(batch * G);
  l->empty = batch * G * Mg * P == 0;
  ocl_sb *b = g->src;
  ocl_sb_printf(b,
                "  int lx = get_local_id(0), ly = get_local_id(1), lid = ly * %u + lx;\n"
                "  long tn = (long)get_group_id(0) * %u, tm = (long)get_group_id(1) * %u;\n"
                "  long z = get_global_id(2), img = z / %lldL, grp = z %% %lldL;\n"
                "  __global const %s *xb = p1 + (img * %lldL + grp * %lldL) * %lldL;\n"
                "  __global const %s *wb = p2 + grp * %lldL;\n"
                "  __local %s Ws[%u][%u], Xs[%u][%u];\n"
                "  %s acc[%u][%u];\n"
                "  for (int r = 0; r < %u; r++)\n"
                "    for (int c = 0; c < %u; c++) acc[r][c] = 0;\n",
                E, TN, TM, (long long)G, (long long)G, t, (long long)C, (long long)Cg,
                (long long)isz, t, (long long)(Mg * K), t, E, TM, E, TN, t, RM, RN, RM, RN);
  ocl_sb_printf(b,
                "  for (long k0 = 0; k0 < %lldL; k0 += %u) {\n"
                "    for (int i = lid; i < %u; i += %u) {\n"
                "      int kk = i %% %u, mm = i / %u;\n"
                "      long m = tm + mm, kg = k0 + kk;\n"
                "      Ws[kk][mm] = (m < %lldL && kg < %lldL) ? wb[m * %lldL + kg] : (%s)0;\n"
                "    }\n",
                (long long)K, E, E * TM, E * E, E, E, (long long)Mg, (long long)K, (long long)K, t);
  /* One Xcol cell: its channel and window tap from k, its output position
   * from p, then the input cell or 0 for padding. */
  ocl_sb_printf(b,
                "    for (int i = lid; i < %u; i += %u) {\n"
                "      int nn = i %% %u, kk = i / %u;\n"
                "      long p = tn + nn, kg = k0 + kk;\n"
                "      %s v = 0;\n"
                "      if (p < %lldL && kg < %lldL) {\n"
                "        long ci = kg / %lldL, kf = kg - ci * %lldL;\n",
                E * TN, E * E, TN, TN, t, (long long)P, (long long)K, (long long)ksz,
                (long long)ksz);
  unravel(b, "kf", win->kernel, win->rank, "q");
  unravel(b, "p", win->out, win->rank, "o");
  ocl_sb_printf(b, "        bool inside = true;\n        long xi = 0;\n");
  for (uint32_t d = 0; d < win->rank; d++)
    ocl_sb_printf(b,
                  "        long x%u = o%u * %lldL - %lldL + q%u * %lldL;\n"
                  "        inside = inside && x%u >= 0 && x%u < %lldL;\n"
                  "        xi = xi * %lldL + x%u;\n",
                  d, d, (long long)win->stride[d], (long long)win->pad_begin[d], d,
                  (long long)win->dilation[d], d, d, (long long)win->in[d], (long long)win->in[d],
                  d);
  ocl_sb_printf(b,
                "        if (inside) v = xb[ci * %lldL + xi];\n"
                "      }\n"
                "      Xs[kk][nn] = v;\n"
                "    }\n"
                "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                "    for (int kk = 0; kk < %u; kk++) {\n"
                "      %s a[%u], bv[%u];\n"
                "      for (int r = 0; r < %u; r++) a[r] = Ws[kk][ly + r * %u];\n"
                "      for (int c = 0; c < %u; c++) bv[c] = Xs[kk][lx + c * %u];\n"
                "      for (int r = 0; r < %u; r++)\n"
                "        for (int c = 0; c < %u; c++) acc[r][c] += a[r] * bv[c];\n"
                "    }\n"
                "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                "  }\n",
                (long long)isz, E, t, RM, RN, RM, E, RN, E, RM, RN);
  ocl_sb_printf(b,
                "  for (int r = 0; r < %u; r++) {\n"
                "    long m = tm + ly + r * %u;\n"
                "    if (m >= %lldL) break;\n"
                "    for (int c = 0; c < %u; c++) {\n"
                "      long p = tn + lx + c * %u;\n"
                "      if (p >= %lldL) break;\n"
                "      %s v = acc[r][c];\n",
                RM, E, (long long)Mg, RN, E, (long long)P, t);
  if (bias)
    ocl_sb_printf(b, "      v += p3[grp * %lldL + m];\n", (long long)Mg);
  ocl_gen_activation(b, g->attrs, y->elem, "v", "      ");
  ocl_sb_printf(b,
                "      p0[(img * %lldL + grp * %lldL + m) * %lldL + p] = v;\n"
                "    }\n"
                "  }\n",
                (long long)Mtot, (long long)Mg, (long long)P);
  ocl_gen_end(g);
  return NULL;
}
