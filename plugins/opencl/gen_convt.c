/* plugins/opencl/gen_convt.c: ConvTranspose (the transposed convolution), one result element per
 * work item, gathering the input positions that reach it. The interpreter
 * (plugins/interpreter/movement/conv.c) scatters instead; the gather form
 * visits the same (input, kernel) pairs, and it visits them in the
 * interpreter's order, so that with a double accumulator the sums agree
 * bit for bit. Result sizes come from the inferred result type; the begin
 * pads follow the interpreter for every auto_pad / output_shape mix. */
#include <string.h>

#include "ocl.h"

typedef struct convt {
  uint32_t sp; /* spatial rank */
  int64_t N, C, M, G;
  int64_t in[KILN_MAX_RANK], out[KILN_MAX_RANK], k[KILN_MAX_RANK];
  int64_t stride[KILN_MAX_RANK], dil[KILN_MAX_RANK], pad[KILN_MAX_RANK]; /* pad = begin */
} convt;

static bool convt_has_ints(const kiln_attrs *a, const char *name) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  return at && kiln_attr_get_kind(at) == KILN_ATTR_INTS && kiln_attr_ints(at) &&
         kiln_attr_len(at) > 0;
}

/* Fill p from the operand types and attributes; NULL when the generator
 * can run the node, else the reason it cannot (a static string). Both the
 * generator and ocl_convtranspose_ok call this, so they never disagree. */
static const char *convt_params(const kiln_attrs *a, const kiln_type *y, const kiln_type *x,
                                const kiln_type *w, const kiln_type *b, convt *p) {
  memset(p, 0, sizeof *p);
  if (!x || !w)
    return "X or W missing";
  if (!ocl_is_float(y->elem) || x->elem != y->elem || w->elem != y->elem)
    return "X, W and Y need one element type, f32 or f64";
  if (x->rank < 3 || w->rank != x->rank || y->rank != x->rank)
    return "X, W and Y need equal rank >= 3";
  p->sp = x->rank - 2;
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
  for (uint32_t i = 0; i < p->sp; i++) {
    p->in[i] = x->dims[2 + i];
    p->out[i] = y->dims[2 + i];
    p->k[i] = w->dims[2 + i];
  }
  int64_t pads[2 * KILN_MAX_RANK], opad[KILN_MAX_RANK];
  if (!ocl_attr_ints(a, "strides", p->sp, 1, p->stride) ||
      !ocl_attr_ints(a, "dilations", p->sp, 1, p->dil) ||
      !ocl_attr_ints(a, "pads", 2 * p->sp, 0, pads) ||
      !ocl_attr_ints(a, "output_padding", p->sp, 0, opad))
    return "strides, dilations, pads or output_padding of the wrong length";
  for (uint32_t i = 0; i < p->sp; i++)
    if (p->stride[i] <= 0) /* the gather divides by the stride */
      return "a stride is not positive";
  const char *ap = kiln_attrs_string_or(a, "auto_pad", "NOTSET");
  bool upper = !strcmp(ap, "SAME_UPPER"), lower = !strcmp(ap, "SAME_LOWER");
  bool valid = !strcmp(ap, "VALID");
  if (!upper && !lower && !valid && strcmp(ap, "NOTSET"))
    return "unknown auto_pad";
  bool has_oshape = convt_has_ints(a, "output_shape");
  for (uint32_t i = 0; i < p->sp; i++) {
    int64_t span = (p->k[i] - 1) * p->dil[i] + 1;
    if (has_oshape || upper || lower) {
      /* A negative total (output_shape larger than the full result) is
       * halved with floor division, as the interpreter and the ONNX
       * reference do. */
      int64_t total = p->stride[i] * (p->in[i] - 1) + opad[i] + span - p->out[i];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      p->pad[i] = upper ? half : total - half;
    } else {
      p->pad[i] = valid ? 0 : pads[i];
    }
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

static int64_t convt_prod(const int64_t *v, uint32_t n) {
  int64_t r = 1;
  for (uint32_t i = 0; i < n; i++)
    r *= v[i];
  return r;
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
  int64_t isz = convt_prod(p.in, p.sp), ksz = convt_prod(p.k, p.sp);
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
  for (uint32_t d = 0; d < p.sp; d++) {
    if (p.dil[d] > 0)
      ocl_sb_printf(g->src, "  for (long k%u = %lldL; k%u >= 0; k%u--) {\n", d,
                    (long long)(p.k[d] - 1), d, d);
    else
      ocl_sb_printf(g->src, "  for (long k%u = 0; k%u < %lldL; k%u++) {\n", d, d, (long long)p.k[d],
                    d);
    ocl_sb_printf(g->src,
                  "  long t%u = c%u + %lldL - k%u * %lldL;\n"
                  "  if (t%u < 0 || t%u %% %lldL != 0) continue;\n"
                  "  long x%u = t%u / %lldL;\n"
                  "  if (x%u >= %lldL) continue;\n"
                  "  long xi%u = xi%u * %lldL + x%u, wi%u = wi%u * %lldL + k%u;\n",
                  d, d + 2, (long long)p.pad[d], d, (long long)p.dil[d], d, d,
                  (long long)p.stride[d], d, d, (long long)p.stride[d], d, (long long)p.in[d],
                  d + 1, d, (long long)p.in[d], d, d + 1, d, (long long)p.k[d], d);
  }
  ocl_sb_printf(g->src, "  acc += (%s)p1[xbase + xi%u] * (%s)p2[wbase + wi%u];\n", acc_t, p.sp,
                acc_t, p.sp);
  for (uint32_t d = 0; d < p.sp; d++)
    ocl_sb_printf(g->src, "  }\n");
  ocl_sb_printf(g->src, "  }\n");
  if (b)
    ocl_sb_printf(g->src, "  acc += (%s)p3[c1];\n", acc_t);
  ocl_sb_printf(g->src, "  p0[gid] = (%s)acc;\n  }\n", t);
  ocl_gen_end(g);
  return NULL;
}
