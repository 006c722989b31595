/* plugins/opencl/gen_pool.c: the pool family (MaxPool, AveragePool,
 * GlobalAveragePool, GlobalMaxPool), one result element per work item, with
 * every size, stride and pad baked into the source as a constant; and the
 * sliding-window geometry (ocl_win_*) that Conv shares with the pools, kept
 * here since the pools are most of its users. Window semantics follow the
 * interpreter (plugins/interpreter/pool.c): both read kiln_window_decode
 * (kiln/ops.h), so result sizes come from the inferred types and pads from
 * auto_pad or pads the same way. */
#include <kiln/ops.h>
#include <string.h>

#include "ocl.h"

/* A failed decode is a node this generator does not take; the decoder's
 * message says why. */
kiln_status ocl_win_params(ocl_gen *g, const kiln_type *x, const kiln_type *y, const kiln_type *w,
                           kiln_window *p) {
  memset(p, 0, sizeof *p);
  if (w && x && w->rank != x->rank)
    return ocl_gen_unsupported(g, "W has another rank than X");
  kiln_status s = kiln_window_decode(kiln_node_kind_name(g->kind), g->attrs, x, y,
                                     w ? w->dims + 2 : NULL, false, p);
  if (s) {
    kiln_status r = ocl_gen_unsupported(g, kiln_status_message(s));
    kiln_status_free(s);
    return r;
  }
  return NULL;
}

/* Declares b<d> (the input coordinate of tap 0 along dimension d) and
 * lo<d><tag>, hi<d><tag>: the taps whose coordinate lies in [from, to). */
static void ocl_win_range(ocl_gen *g, const kiln_window *p, uint32_t d, const char *tag,
                          int64_t from, int64_t to) {
  long long D = p->dilation[d];
  if (!*tag)
    ocl_sb_printf(g->src, "  long b%u = c%u * %lldL - %lldL;\n", d, d + 2, (long long)p->stride[d],
                  (long long)p->pad_begin[d]);
  ocl_sb_printf(g->src,
                "  long lo%u%s = b%u >= %lldL ? 0 : (%lldL - b%u + %lldL) / %lldL;\n"
                "  long hi%u%s = b%u > %lldL ? 0 : (%lldL - b%u) / %lldL + 1;\n"
                "  if (hi%u%s > %lldL) hi%u%s = %lldL;\n"
                "  if (hi%u%s < lo%u%s) hi%u%s = lo%u%s;\n",
                d, tag, d, (long long)from, (long long)from, d, D - 1, D, d, tag, d,
                (long long)(to - 1), (long long)(to - 1), d, D, d, tag, (long long)p->kernel[d], d,
                tag, (long long)p->kernel[d], d, tag, d, tag, d, tag, d, tag);
}

/* Open one loop per window dimension over the taps whose input coordinate
 * x<d> lies in the data, from lo<d> to hi<d> (clipped in the kernel, so a
 * window reaching far past the input costs only the cells it covers); xi
 * is the flat spatial input index. The ranges are declared before the
 * loops, so they stay in scope after ocl_win_close. */
void ocl_win_loops(ocl_gen *g, const kiln_window *p) {
  ocl_sb_printf(g->src, "  long xi0 = 0;\n");
  for (uint32_t d = 0; d < p->rank; d++)
    ocl_win_range(g, p, d, "", 0, p->in[d]);
  for (uint32_t d = 0; d < p->rank; d++) {
    ocl_sb_printf(g->src,
                  "  for (long k%u = lo%u; k%u < hi%u; k%u++) {\n"
                  "  long x%u = b%u + k%u * %lldL;\n"
                  "  long xi%u = xi%u * %lldL + x%u;\n",
                  d, d, d, d, d, d, d, d, (long long)p->dilation[d], d + 1, d, (long long)p->in[d],
                  d);
  }
}

void ocl_win_close(ocl_gen *g, const kiln_window *p) {
  for (uint32_t d = 0; d < p->rank; d++)
    ocl_sb_printf(g->src, "  }\n");
}

static int64_t prod(const int64_t *v, uint32_t n) {
  int64_t r = 1;
  for (uint32_t i = 0; i < n; i++)
    r *= v[i];
  return r;
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
  kiln_window p;
  KILN_TRY(ocl_win_params(g, x, y, NULL, &p));
  int64_t isz = prod(p.in, p.rank);
  const char *t = ocl_ctype(y->elem);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  long nc = c0 * %lldL + c1;\n  __global %s *xs = p%u + nc * %lldL;\n",
                (long long)x->dims[1], t, g->n_res, (long long)isz);
  if (is_max) {
    /* starts as what a window entirely in padding gives in the interpreter
     * (-inf, or 0 for integers; index -1) */
    ocl_sb_printf(g->src, "  %s best = %s; long bi = -1;\n", t, f ? "-INFINITY" : "0");
    ocl_win_loops(g, &p);
    ocl_sb_printf(g->src, "  %s v = xs[xi%u];\n", t, p.rank);
    if (f)
      ocl_sb_printf(g->src, "  if (bi < 0 || v > best || (isnan(v) && !isnan(best))) ");
    else
      ocl_sb_printf(g->src, "  if (bi < 0 || v > best) ");
    ocl_sb_printf(g->src, "{ best = v; bi = ");
    if (col_major && ind) { /* Horner from the last axis: the first varies fastest */
      for (uint32_t d = 0; d + 1 < p.rank; d++)
        ocl_sb_printf(g->src, "(");
      ocl_sb_printf(g->src, "x%u", p.rank - 1);
      for (uint32_t d = p.rank - 1; d-- > 0;)
        ocl_sb_printf(g->src, " * %lldL + x%u)", (long long)p.in[d], d);
    } else {
      ocl_sb_printf(g->src, "xi%u", p.rank);
    }
    ocl_sb_printf(g->src, "; }\n");
    ocl_win_close(g, &p);
    ocl_sb_printf(g->src, "  p0[gid] = best;\n");
    if (ind)
      ocl_sb_printf(g->src, "  p1[gid] = bi < 0 ? -1L : nc * %lldL + bi;\n", (long long)isz);
  } else {
    bool include_pad = kiln_attrs_int_or(g->attrs, "count_include_pad", 0) != 0;
    ocl_sb_printf(g->src, "  %s sum = 0;\n", t);
    ocl_win_loops(g, &p);
    ocl_sb_printf(g->src, "  sum += xs[xi%u];\n", p.rank);
    ocl_win_close(g, &p);
    /* the cells counted are a box: the taps inside the data, or with
     * count_include_pad inside the declared pads (not past them, from
     * ceil_mode) */
    ocl_sb_printf(g->src, "  long count = 1;\n");
    for (uint32_t d = 0; d < p.rank; d++) {
      if (include_pad)
        ocl_win_range(g, &p, d, "p", -p.pad_begin[d], p.in[d] + p.pad_end[d]);
      ocl_sb_printf(g->src, "  count *= hi%u%s - lo%u%s;\n", d, include_pad ? "p" : "", d,
                    include_pad ? "p" : "");
    }
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
