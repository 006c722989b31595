/* plugins/opencl/gen_rnn.c: RNN, GRU and LSTM. One work group per
 * (direction, batch row) steps the recurrence in order; the hidden units are
 * spread over the group's work items and the state lives in __local arrays
 * with a barrier between time steps. Formulas, defaults and the order of
 * operations follow the interpreter (plugins/interpreter/rnn.c):
 * ONNX gate orders (GRU z r h, LSTM i o f c), state kept in double where the
 * device has it, activation lists read by kiln_rnn_activations. */
#include <stdio.h>
#include <string.h>

#include "ocl.h"

/* Operand slots of the node's inputs. */
enum { RNN_X, RNN_W, RNN_R, RNN_B, RNN_LENS, RNN_H0, RNN_C0, RNN_P, RNN_NIN };

/* Everything the kernel is specialized on, checked once by rnn_check for
 * both ocl_rnn_ok and the generator so the two always agree. */
typedef struct rnn_cfg {
  int64_t gates, per_dir, S, Bt, I, H, D;
  bool reverse, layout1, lbr, input_forget;
  double clip;
  kiln_rnn_act acts[KILN_RNN_MAX_ACTS];
  const kiln_type *in[RNN_NIN]; /* NULL = absent */
  const kiln_type *res[3];      /* Y, Y_h, Y_c; NULL = absent */
  size_t acc_bytes;             /* bytes of one state scalar */
  uint64_t local_bytes;
  char why[200]; /* the reason kiln_rnn_activations gave, for rnn_check */
} rnn_cfg;

/* NULL when the activation lists parse, else the reason (kept in c). */
static const char *rnn_acts(kiln_node_kind k, const kiln_attrs *a, rnn_cfg *c) {
  kiln_status s = kiln_rnn_activations(k, a, (uint32_t)c->D, c->acts, KILN_RNN_MAX_ACTS, NULL);
  if (!s)
    return NULL;
  snprintf(c->why, sizeof c->why, "%s", kiln_status_message(s));
  kiln_status_free(s);
  return c->why;
}

static bool rnn_shape_is(const kiln_type *t, int64_t numel) {
  return !t || kiln_type_numel(t) == numel;
}

static bool rnn_int_elem(kiln_elem e) {
  return kiln_elem_is_signed_int(e) || kiln_elem_is_unsigned_int(e);
}

/* The __local scalars a group needs: h twice (old and new step), c for
 * LSTM, z and r*h for GRU without linear_before_reset. */
static int64_t rnn_local_count(const rnn_cfg *c) {
  int64_t H = c->H > 0 ? c->H : 1;
  if (c->gates == 4)
    return 3 * H;
  if (c->gates == 3 && !c->lbr)
    return 4 * H;
  return 2 * H;
}

/* NULL when the node can be generated, else the reason. */
static const char *rnn_check(kiln_node_kind k, const kiln_attrs *a, const ocl_device *dev,
                             rnn_cfg *c) {
  if (k == KILN_NODE_RNN)
    c->gates = 1, c->per_dir = 1;
  else if (k == KILN_NODE_GRU)
    c->gates = 3, c->per_dir = 2;
  else if (k == KILN_NODE_LSTM)
    c->gates = 4, c->per_dir = 3;
  else
    return "not a recurrent kind";
  if (k != KILN_NODE_LSTM)
    c->in[RNN_C0] = c->in[RNN_P] = c->res[2] = NULL; /* the interpreter ignores them */
  const char *dir = kiln_attrs_string_or(a, "direction", "forward");
  bool fwd = !strcmp(dir, "forward"), bi = !strcmp(dir, "bidirectional");
  c->reverse = !strcmp(dir, "reverse");
  if (!fwd && !bi && !c->reverse)
    return "unknown direction";
  c->D = bi ? 2 : 1;
  c->layout1 = kiln_attrs_int_or(a, "layout", 0) != 0;
  c->clip = kiln_attrs_float_or(a, "clip", 0.0);
  c->lbr = k == KILN_NODE_GRU && kiln_attrs_int_or(a, "linear_before_reset", 0) != 0;
  c->input_forget = k == KILN_NODE_LSTM && kiln_attrs_int_or(a, "input_forget", 0) != 0;
  const char *why = rnn_acts(k, a, c);
  if (why)
    return why;
  const kiln_type *x = c->in[RNN_X], *w = c->in[RNN_W], *r = c->in[RNN_R];
  if (!x || !w || !r || x->rank != 3 || w->rank != 3 || r->rank != 3)
    return "X, W and R must be present and 3-D";
  kiln_elem e = x->elem;
  if (e != KILN_F32 && e != KILN_F64)
    return "only f32 and f64 recurrences are generated";
  if (e == KILN_F64 && !(dev && dev->fp64))
    return "f64 needs a device with cl_khr_fp64";
  for (int i = 0; i < RNN_NIN; i++)
    if (i != RNN_LENS && c->in[i] && (c->in[i]->elem != e || c->in[i]->quantized))
      return "every float input must have X's element type";
  for (int i = 0; i < 3; i++)
    if (c->res[i] && (c->res[i]->elem != e || c->res[i]->quantized))
      return "every result must have X's element type";
  if (c->in[RNN_LENS] && !rnn_int_elem(c->in[RNN_LENS]->elem))
    return "sequence_lens must be an integer tensor";
  c->S = x->dims[c->layout1 ? 1 : 0];
  c->Bt = x->dims[c->layout1 ? 0 : 1];
  c->I = x->dims[2];
  c->H = r->dims[2];
  int64_t GH = c->gates * c->H, D = c->D, H = c->H, Bt = c->Bt;
  if (w->dims[0] != D || w->dims[1] != GH || w->dims[2] != c->I || r->dims[0] != D ||
      r->dims[1] != GH)
    return "W/R shapes do not match the direction count and hidden size";
  if (!rnn_shape_is(c->in[RNN_B], D * 2 * GH) || !rnn_shape_is(c->in[RNN_H0], D * Bt * H) ||
      !rnn_shape_is(c->in[RNN_C0], D * Bt * H) || !rnn_shape_is(c->in[RNN_P], D * 3 * H) ||
      !rnn_shape_is(c->in[RNN_LENS], Bt))
    return "B, sequence_lens, initial_h, initial_c or P has the wrong element count";
  if (!rnn_shape_is(c->res[0], c->S * D * Bt * H) || !rnn_shape_is(c->res[1], D * Bt * H) ||
      !rnn_shape_is(c->res[2], D * Bt * H))
    return "Y, Y_h or Y_c has the wrong element count";
  if (!dev)
    return "no OpenCL device";
  c->acc_bytes = dev->fp64 ? 8 : 4;
  c->local_bytes = (uint64_t)rnn_local_count(c) * c->acc_bytes;
  if (c->local_bytes > dev->local_mem)
    return "the recurrent state does not fit in the device's local memory";
  return NULL;
}

bool ocl_rnn_ok(const kiln_node *n) {
  rnn_cfg c = {0};
  for (uint32_t i = 0; i < RNN_NIN && i < kiln_node_input_count(n); i++) {
    const kiln_value *v = kiln_node_input(n, i);
    c.in[i] = v ? kiln_value_type(v) : NULL;
  }
  for (uint32_t i = 0; i < 3 && i < kiln_node_result_count(n); i++) {
    const kiln_value *v = kiln_node_result(n, i);
    c.res[i] = v ? kiln_value_type(v) : NULL;
  }
  return rnn_check(kiln_node_get_kind(n), kiln_node_attrs(n), ocl_default_device(), &c) == NULL;
}

/* One activation as an OpenCL function `<kernel>_a<slot>`, clip inside. */
static void rnn_gen_act(ocl_gen *g, const rnn_cfg *c, uint32_t slot, const char *A, kiln_elem ae) {
  ocl_sb *b = g->src;
  const kiln_rnn_act *f = &c->acts[slot];
  ocl_sb_printf(b, "%s %s_a%u(%s x) {\n", A, g->launch->name, slot, A);
  if (c->clip > 0) {
    ocl_sb_printf(b, "  %s cl = ", A);
    ocl_gen_const(b, c->clip, ae);
    ocl_sb_printf(b, ";\n  x = x < -cl ? -cl : (x > cl ? cl : x);\n");
  }
  ocl_sb_printf(b, "  %s al = ", A);
  ocl_gen_const(b, f->alpha, ae);
  ocl_sb_printf(b, ", be = ");
  ocl_gen_const(b, f->beta, ae);
  ocl_sb_printf(b, ";\n  (void)al; (void)be;\n");
  switch (f->kind) {
  case KILN_RNN_ACT_RELU:
    ocl_sb_printf(b, "  return x > (%s)0 ? x : (%s)0;\n", A, A);
    break;
  case KILN_RNN_ACT_TANH:
    ocl_sb_printf(b, "  return tanh(x);\n");
    break;
  case KILN_RNN_ACT_SIGMOID:
    ocl_sb_printf(b, "  return (%s)1 / ((%s)1 + exp(-x));\n", A, A);
    break;
  case KILN_RNN_ACT_AFFINE:
    ocl_sb_printf(b, "  return al * x + be;\n");
    break;
  case KILN_RNN_ACT_LEAKY_RELU:
    ocl_sb_printf(b, "  return x >= (%s)0 ? x : al * x;\n", A);
    break;
  case KILN_RNN_ACT_THRESHOLDED_RELU:
    ocl_sb_printf(b, "  return x > al ? x : (%s)0;\n", A);
    break;
  case KILN_RNN_ACT_SCALED_TANH:
    ocl_sb_printf(b, "  return al * tanh(be * x);\n");
    break;
  case KILN_RNN_ACT_HARD_SIGMOID:
    ocl_sb_printf(b,
                  "  %s v = al * x + be;\n"
                  "  return v < (%s)0 ? (%s)0 : (v > (%s)1 ? (%s)1 : v);\n",
                  A, A, A, A, A);
    break;
  case KILN_RNN_ACT_ELU:
    ocl_sb_printf(b, "  return x >= (%s)0 ? x : al * (exp(x) - (%s)1);\n", A, A);
    break;
  case KILN_RNN_ACT_SOFTSIGN:
    ocl_sb_printf(b, "  return x / ((%s)1 + fabs(x));\n", A);
    break;
  case KILN_RNN_ACT_SOFTPLUS:
    ocl_sb_printf(b, "  return log1p(exp(x));\n");
    break;
  }
  ocl_sb_printf(b, "}\n");
}

/* Text of activation i (0 .. per_dir) of this group's direction applied
 * to the expression x. */
static void rnn_call(ocl_gen *g, const rnn_cfg *c, uint32_t i, const char *x) {
  if (c->D == 1)
    ocl_sb_printf(g->src, "%s_a%u(%s)", g->launch->name, i, x);
  else
    ocl_sb_printf(g->src, "(d == 0 ? %s_a%u(%s) : %s_a%u(%s))", g->launch->name, i, x,
                  g->launch->name, (uint32_t)c->per_dir + i, x);
}

/* Declare s<gate> = X.W + Wb and q<gate> = h.R + Rb for unit j, summed in
 * the interpreter's order; with_r false leaves h.R out (GRU's h gate
 * without linear_before_reset, whose R term uses r * h). */
static void rnn_gen_gate(ocl_gen *g, const rnn_cfg *c, uint32_t gate, bool with_r, const char *A,
                         uint32_t px, uint32_t pw, uint32_t pr, uint32_t pb) {
  int64_t GH = c->gates * c->H;
  ocl_sb_printf(g->src,
                "    %s s%u = 0, q%u = 0;\n"
                "    { long row = d * %lldL + %lldL + j;\n"
                "      for (long i = 0; i < %lldL; i++) s%u += (%s)p%u[xo + i] * (%s)p%u[row * "
                "%lldL + i];\n",
                A, gate, gate, (long long)GH, (long long)(gate * c->H), (long long)c->I, gate, A,
                px, A, pw, (long long)c->I);
  if (with_r)
    ocl_sb_printf(
        g->src, "      for (long k = 0; k < %lldL; k++) q%u += h[k] * (%s)p%u[row * %lldL + k];\n",
        (long long)c->H, gate, A, pr, (long long)c->H);
  if (c->in[RNN_B])
    ocl_sb_printf(g->src,
                  "      s%u += (%s)p%u[d * %lldL + %lldL + j];\n"
                  "      q%u += (%s)p%u[d * %lldL + %lldL + j];\n",
                  gate, A, pb, (long long)(2 * GH), (long long)(gate * c->H), gate, A, pb,
                  (long long)(2 * GH), (long long)(GH + gate * c->H));
  ocl_sb_printf(g->src, "    }\n");
}

/* The step body for unit j: reads h (old state), writes hn (and c). */
static void rnn_gen_cell(ocl_gen *g, const rnn_cfg *c, const char *A, const uint32_t *p) {
  uint32_t px = p[RNN_X], pw = p[RNN_W], pr = p[RNN_R], pb = p[RNN_B];
  ocl_sb *b = g->src;
  if (c->gates == 1) {
    rnn_gen_gate(g, c, 0, true, A, px, pw, pr, pb);
    ocl_sb_printf(b, "    hn[j] = ");
    rnn_call(g, c, 0, "s0 + q0");
    ocl_sb_printf(b, ";\n");
    return;
  }
  if (c->gates == 3) {
    for (uint32_t k = 0; k < 3; k++)
      rnn_gen_gate(g, c, k, k < 2 || c->lbr, A, px, pw, pr, pb);
    ocl_sb_printf(b, "    %s z = ", A);
    rnn_call(g, c, 0, "s0 + q0");
    ocl_sb_printf(b, ";\n    %s rg = ", A);
    rnn_call(g, c, 0, "s1 + q1");
    ocl_sb_printf(b, ";\n    %s ht = ", A);
    rnn_call(g, c, 1, "s2 + rg * q2");
    ocl_sb_printf(b, ";\n    hn[j] = ((%s)1 - z) * ht + z * h[j];\n", A);
    return;
  }
  for (uint32_t k = 0; k < 4; k++)
    rnn_gen_gate(g, c, k, true, A, px, pw, pr, pb);
  if (c->in[RNN_P])
    ocl_sb_printf(b,
                  "    %s pi = (%s)p%u[d * %lldL + j], po = (%s)p%u[d * %lldL + %lldL + j],"
                  " pf = (%s)p%u[d * %lldL + %lldL + j];\n",
                  A, A, p[RNN_P], (long long)(3 * c->H), A, p[RNN_P], (long long)(3 * c->H),
                  (long long)c->H, A, p[RNN_P], (long long)(3 * c->H), (long long)(2 * c->H));
  else
    ocl_sb_printf(b, "    %s pi = 0, po = 0, pf = 0;\n", A);
  ocl_sb_printf(b, "    %s cj = cs[j];\n    %s ig = ", A, A);
  rnn_call(g, c, 0, "s0 + q0 + pi * cj");
  ocl_sb_printf(b, ";\n    %s fg = ", A);
  if (c->input_forget)
    ocl_sb_printf(b, "(%s)1 - ig", A);
  else
    rnn_call(g, c, 0, "s2 + q2 + pf * cj");
  ocl_sb_printf(b, ";\n    %s cc = ", A);
  rnn_call(g, c, 1, "s3 + q3");
  ocl_sb_printf(b, ";\n    %s cn = fg * cj + ig * cc;\n    %s og = ", A, A);
  rnn_call(g, c, 0, "s1 + q1 + po * cn");
  ocl_sb_printf(b, ";\n    cs[j] = cn;\n    hn[j] = og * ");
  rnn_call(g, c, 2, "cn");
  ocl_sb_printf(b, ";\n");
}

/* GRU without linear_before_reset: the r gate of every unit is needed
 * before any h~, so z and r * h go to local memory first (phase 1). */
static void rnn_gen_gru_split(ocl_gen *g, const rnn_cfg *c, const char *A, const uint32_t *p) {
  uint32_t px = p[RNN_X], pw = p[RNN_W], pr = p[RNN_R], pb = p[RNN_B];
  ocl_sb *b = g->src;
  ocl_sb_printf(b, "    for (long j = lid; j < %lldL; j += ls) {\n", (long long)c->H);
  rnn_gen_gate(g, c, 0, true, A, px, pw, pr, pb);
  rnn_gen_gate(g, c, 1, true, A, px, pw, pr, pb);
  ocl_sb_printf(b, "    zs[j] = ");
  rnn_call(g, c, 0, "s0 + q0");
  ocl_sb_printf(b, ";\n    rhs[j] = ");
  rnn_call(g, c, 0, "s1 + q1");
  ocl_sb_printf(b, " * h[j];\n    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n");
  ocl_sb_printf(b, "    for (long j = lid; j < %lldL; j += ls) {\n", (long long)c->H);
  rnn_gen_gate(g, c, 2, false, A, px, pw, pr, pb);
  ocl_sb_printf(b,
                "    %s qr = 0;\n"
                "    { long row = d * %lldL + %lldL + j;\n"
                "      for (long k = 0; k < %lldL; k++) qr += rhs[k] * (%s)p%u[row * %lldL + k]; "
                "}\n"
                "    %s ht = ",
                A, (long long)(3 * c->H), (long long)(2 * c->H), (long long)c->H, A, pr,
                (long long)c->H, A);
  rnn_call(g, c, 1, "s2 + qr + q2");
  ocl_sb_printf(b, ";\n    hn[j] = ((%s)1 - zs[j]) * ht + zs[j] * h[j];\n", A);
}

kiln_status ocl_gen_rnn(ocl_gen *g) {
  rnn_cfg c = {0};
  uint32_t p[RNN_NIN];
  for (uint32_t i = 0; i < RNN_NIN; i++) {
    p[i] = g->n_res + i;
    c.in[i] = p[i] < g->n_ops ? g->ops[p[i]].type : NULL;
  }
  for (uint32_t i = 0; i < 3; i++)
    c.res[i] = i < g->n_res ? g->ops[i].type : NULL;
  const char *why = rnn_check(g->kind, g->attrs, g->dev, &c);
  if (why)
    return ocl_gen_unsupported(g, why);
  kiln_elem ae = c.acc_bytes == 8 ? KILN_F64 : KILN_F32;
  const char *A = ocl_ctype(ae);
  int64_t S = c.S, Bt = c.Bt, H = c.H, D = c.D, I = c.I;
  int64_t Hl = H > 0 ? H : 1; /* a __local array may not be empty */

  /* The work group: a power of two covering H, at most g->wg. exec.c may
   * halve it for a kernel that allows less; the kernel then lets only the
   * first group of each (direction, batch) block work, striding by the
   * actual local size. */
  size_t wg = 1;
  while ((int64_t)wg < H && wg < g->wg)
    wg *= 2;

  for (uint32_t i = 0; i < (uint32_t)(c.per_dir * D); i++)
    rnn_gen_act(g, &c, i, A, ae);

  ocl_gen_begin(g);
  ocl_launch *l = g->launch;
  l->dims = 1;
  l->global[0] = (size_t)(D * Bt) * wg;
  l->local[0] = wg;
  l->empty = D * Bt * H == 0;
  ocl_sb *b = g->src;
  ocl_sb_printf(b, "  __local %s hs[%lld];\n", A, (long long)(2 * Hl));
  if (c.gates == 4)
    ocl_sb_printf(b, "  __local %s cs[%lld];\n", A, (long long)Hl);
  if (c.gates == 3 && !c.lbr)
    ocl_sb_printf(b, "  __local %s zs[%lld], rhs[%lld];\n", A, (long long)Hl, (long long)Hl);
  /* Contracting a * b + c into fma would round differently from the
   * interpreter; the pragma must open its block. */
  ocl_sb_printf(b,
                "  {\n#pragma OPENCL FP_CONTRACT OFF\n"
                "  long gid = get_global_id(0), lid = get_local_id(0), ls = get_local_size(0);\n"
                "  if (gid %% %lldL >= ls) return;\n"
                "  long row = gid / %lldL, d = row / %lldL, bt = row %% %lldL;\n"
                "  bool rev = %s;\n",
                (long long)wg, (long long)wg, (long long)Bt, (long long)Bt,
                c.reverse ? "true" : "d == 1");
  /* index helpers, layout baked in */
  const char *hi = c.layout1 ? "(bt * %lldL + d) * %lldL" : "(d * %lldL + bt) * %lldL";
  ocl_sb_printf(b, "  long hi = ");
  ocl_sb_printf(b, hi, (long long)(c.layout1 ? D : Bt), (long long)H);
  ocl_sb_printf(b, ";\n");
  if (c.in[RNN_LENS])
    ocl_sb_printf(b,
                  "  long len = (long)p%u[bt];\n"
                  "  if (len < 0) len = 0;\n"
                  "  if (len > %lldL) len = %lldL;\n",
                  p[RNN_LENS], (long long)S, (long long)S);
  else
    ocl_sb_printf(b, "  long len = %lldL;\n", (long long)S);
  ocl_sb_printf(b, "  __local %s *h = hs, *hn = hs + %lldL;\n", A, (long long)Hl);
  ocl_sb_printf(b, "  for (long j = lid; j < %lldL; j += ls) {\n", (long long)H);
  if (c.in[RNN_H0])
    ocl_sb_printf(b, "    h[j] = (%s)p%u[hi + j];\n", A, p[RNN_H0]);
  else
    ocl_sb_printf(b, "    h[j] = 0;\n");
  if (c.gates == 4) {
    if (c.in[RNN_C0])
      ocl_sb_printf(b, "    cs[j] = (%s)p%u[hi + j];\n", A, p[RNN_C0]);
    else
      ocl_sb_printf(b, "    cs[j] = 0;\n");
  }
  ocl_sb_printf(b, "  }\n");
  /* Y's slots past this row's length stay zero, as the interpreter's
   * memset leaves them; every slot belongs to exactly one group. */
  const char *yi = c.layout1 ? "((bt * %lldL + t) * %lldL + d) * %lldL"
                             : "((t * %lldL + d) * %lldL + bt) * %lldL";
  if (c.res[0]) {
    ocl_sb_printf(b, "  for (long t = len; t < %lldL; t++) {\n    long yo = ", (long long)S);
    ocl_sb_printf(b, yi, (long long)(c.layout1 ? S : D), (long long)(c.layout1 ? D : Bt),
                  (long long)H);
    ocl_sb_printf(b, ";\n    for (long j = lid; j < %lldL; j += ls) p0[yo + j] = 0;\n  }\n",
                  (long long)H);
  }
  ocl_sb_printf(b, "  barrier(CLK_LOCAL_MEM_FENCE);\n");
  ocl_sb_printf(b,
                "  for (long s = 0; s < len; s++) {\n"
                "    long t = rev ? len - 1 - s : s;\n"
                "    long xo = (%s * %lldL + %s) * %lldL;\n",
                c.layout1 ? "bt" : "t", (long long)(c.layout1 ? S : Bt), c.layout1 ? "t" : "bt",
                (long long)I);
  if (c.gates == 3 && !c.lbr)
    rnn_gen_gru_split(g, &c, A, p);
  else {
    ocl_sb_printf(b, "    for (long j = lid; j < %lldL; j += ls) {\n", (long long)H);
    rnn_gen_cell(g, &c, A, p);
  }
  if (c.res[0]) {
    ocl_sb_printf(b, "    p0[");
    ocl_sb_printf(b, yi, (long long)(c.layout1 ? S : D), (long long)(c.layout1 ? D : Bt),
                  (long long)H);
    ocl_sb_printf(b, " + j] = (%s)hn[j];\n", ocl_ctype(c.res[0]->elem));
  }
  ocl_sb_printf(b,
                "    }\n"
                "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                "    __local %s *tmp = h; h = hn; hn = tmp;\n"
                "  }\n",
                A);
  if (c.res[1] || c.res[2]) {
    ocl_sb_printf(b, "  for (long j = lid; j < %lldL; j += ls) {\n", (long long)H);
    if (c.res[1])
      ocl_sb_printf(b, "    p1[hi + j] = (%s)h[j];\n", ocl_ctype(c.res[1]->elem));
    if (c.res[2])
      ocl_sb_printf(b, "    p2[hi + j] = (%s)cs[j];\n", ocl_ctype(c.res[2]->elem));
    ocl_sb_printf(b, "  }\n");
  }
  ocl_sb_printf(b, "  }\n");
  ocl_gen_end(g);
  return NULL;
}
