/* plugins/interpreter/pool.c: AveragePool, LpPool, MaxPool (with the
 * Indices result), GlobalAveragePool and GlobalMaxPool on [N, C, D1..Dk],
 * and MaxUnpool. Result sizes come from the inferred type (which already
 * applied ceil_mode); windows that run past the padded input are clipped. */
#include "kernel.h"

#include <kiln/ops.h>

#include <math.h>
#include <string.h>

/* A pooling window (geometry decoded by kiln_window_decode) over NC
 * independent [spatial...] planes. */
typedef struct mv_pool {
  kiln_window w;
  int64_t NC;
} mv_pool;

static kiln_status mv_pool_params(const char *name, const kiln_attrs *a, const kiln_type *x,
                                  const kiln_type *y, mv_pool *p) {
  KILN_TRY_CTX(kiln_window_decode(name, a, x, y, NULL, false, &p->w), "interpreter");
  p->NC = x->dims[0] * x->dims[1];
  return NULL;
}

/* Floor of a / b for b > 0, whatever a's sign. */
static int64_t mv_floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The window taps of output o along dimension d whose input coordinate
 * lies in [from, to), as the range [lo, hi) (empty when lo == hi). Walking
 * only these keeps the cost to the cells a window covers, however far its
 * kernel runs past the input. */
static void mv_tap_range(const kiln_window *w, uint32_t d, int64_t o, int64_t from, int64_t to,
                         int64_t *lo, int64_t *hi) {
  int64_t base = o * w->stride[d] - w->pad_begin[d], dil = w->dilation[d];
  int64_t a = -mv_floor_div(base - from, dil), b = mv_floor_div(to - 1 - base, dil) + 1;
  *lo = a < 0 ? 0 : a;
  *hi = b > w->kernel[d] ? w->kernel[d] : b;
  if (*hi < *lo)
    *hi = *lo;
}

/* Output o's taps inside the input: per-dimension ranges [lo, hi), the first
 * tap in kc; false when the window holds no input cell. */
static bool mv_box_start(const kiln_window *w, const int64_t *oc, int64_t *lo, int64_t *hi,
                         int64_t *kc) {
  bool any = true;
  for (uint32_t d = 0; d < w->rank; d++) {
    mv_tap_range(w, d, oc[d], 0, w->in[d], &lo[d], &hi[d]);
    kc[d] = lo[d];
    any = any && lo[d] < hi[d];
  }
  return any;
}

/* The next tap of the box in row-major order (the order the kernel's cells
 * are numbered in, which MaxPool's first-maximum rule depends on). */
static bool mv_box_next(uint32_t rank, const int64_t *lo, const int64_t *hi, int64_t *kc) {
  for (uint32_t d = rank; d-- > 0;) {
    if (++kc[d] < hi[d])
      return true;
    kc[d] = lo[d];
  }
  return false;
}

/* The flat input index of tap kc of output oc; its coordinates in xc. */
static int64_t mv_tap_index(const kiln_window *w, const int64_t *oc, const int64_t *kc,
                            int64_t *xc) {
  int64_t xi = 0;
  for (uint32_t d = 0; d < w->rank; d++) {
    xc[d] = oc[d] * w->stride[d] - w->pad_begin[d] + kc[d] * w->dilation[d];
    xi = xi * w->in[d] + xc[d];
  }
  return xi;
}

kiln_status interp_AveragePool(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                               const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  mv_pool p;
  KILN_TRY(mv_pool_params("AveragePool", attrs, &ins[0].type, &outs[0].type, &p));
  bool include_pad = kiln_attrs_int_or(attrs, "count_include_pad", 0) != 0;
  int64_t isz = interp_mv_prod(p.w.in, 0, p.w.rank), osz = interp_mv_prod(p.w.out, 0, p.w.rank);
  int64_t oc[KILN_MAX_RANK], kc[KILN_MAX_RANK], xc[KILN_MAX_RANK];
  int64_t lo[KILN_MAX_RANK], hi[KILN_MAX_RANK];
  for (int64_t nc = 0; nc < p.NC; nc++)
    for (int64_t o = 0; o < osz; o++) {
      interp_mv_unravel(p.w.out, p.w.rank, o, oc);
      /* the count in double: a box of taps can hold more than 2^63 */
      double sum = 0, count = 0;
      if (mv_box_start(&p.w, oc, lo, hi, kc))
        do {
          sum += interp_load_f(&ins[0], nc * isz + mv_tap_index(&p.w, oc, kc, xc));
          count++;
        } while (mv_box_next(p.w.rank, lo, hi, kc));
      /* with count_include_pad, pad cells count but cells past the pads
       * (from ceil_mode) do not: the count is the box of taps inside the
       * padded input */
      if (include_pad) {
        count = 1;
        for (uint32_t d = 0; d < p.w.rank; d++) {
          int64_t plo, phi;
          mv_tap_range(&p.w, d, oc[d], -p.w.pad_begin[d], p.w.in[d] + p.w.pad_end[d], &plo, &phi);
          count *= (double)(phi - plo);
        }
      }
      interp_store_f(&outs[0], nc * osz + o, count ? sum / count : NAN);
    }
  return NULL;
}

/* LpPool: (sum over the window's data cells of |x|^p)^(1/p); padding
 * cells are zeros and add nothing. */
kiln_status interp_LpPool(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  mv_pool p;
  KILN_TRY(mv_pool_params("LpPool", attrs, &ins[0].type, &outs[0].type, &p));
  double pw = (double)kiln_attrs_int_or(attrs, "p", 2);
  if (!(pw >= 1))
    return interp_mv_err(KILN_INVALID_ARGUMENT, "LpPool", "p = %g must be positive", pw);
  int64_t isz = interp_mv_prod(p.w.in, 0, p.w.rank), osz = interp_mv_prod(p.w.out, 0, p.w.rank);
  int64_t oc[KILN_MAX_RANK], kc[KILN_MAX_RANK], xc[KILN_MAX_RANK];
  int64_t lo[KILN_MAX_RANK], hi[KILN_MAX_RANK];
  for (int64_t nc = 0; nc < p.NC; nc++)
    for (int64_t o = 0; o < osz; o++) {
      interp_mv_unravel(p.w.out, p.w.rank, o, oc);
      double sum = 0;
      if (mv_box_start(&p.w, oc, lo, hi, kc))
        do
          sum += pow(fabs(interp_load_f(&ins[0], nc * isz + mv_tap_index(&p.w, oc, kc, xc))), pw);
        while (mv_box_next(p.w.rank, lo, hi, kc));
      interp_store_f(&outs[0], nc * osz + o, pow(sum, 1.0 / pw));
    }
  return NULL;
}

kiln_status interp_MaxPool(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                           const interp_tensor *ins, uint32_t n_ins) {
  (void)n_ins;
  mv_pool p;
  KILN_TRY(mv_pool_params("MaxPool", attrs, &ins[0].type, &outs[0].type, &p));
  bool col_major = kiln_attrs_int_or(attrs, "storage_order", 0) != 0;
  interp_tensor *ind = n_outs > 1 && outs[1].data ? &outs[1] : NULL;
  int64_t isz = interp_mv_prod(p.w.in, 0, p.w.rank), osz = interp_mv_prod(p.w.out, 0, p.w.rank);
  int64_t oc[KILN_MAX_RANK], kc[KILN_MAX_RANK], xc[KILN_MAX_RANK];
  int64_t lo[KILN_MAX_RANK], hi[KILN_MAX_RANK];
  bool isf = interp_mv_class(ins[0].type.elem) == INTERP_MV_F;
  for (int64_t nc = 0; nc < p.NC; nc++)
    for (int64_t o = 0; o < osz; o++) {
      interp_mv_unravel(p.w.out, p.w.rank, o, oc);
      int64_t best = -1, best_i = 0;
      double bf = 0;
      int64_t bi = 0;
      if (mv_box_start(&p.w, oc, lo, hi, kc))
        do {
          int64_t xi = mv_tap_index(&p.w, oc, kc, xc);
          bool better;
          if (isf) {
            double v = interp_load_f(&ins[0], nc * isz + xi);
            better = best < 0 || v > bf || (isnan(v) && !isnan(bf));
            if (better)
              bf = v;
          } else {
            int64_t v = interp_mv_load_int(&ins[0], nc * isz + xi);
            better = best < 0 || v > bi;
            if (better)
              bi = v;
          }
          if (better) {
            best = xi;
            if (col_major) {
              best_i = 0;
              for (uint32_t d = p.w.rank; d-- > 0;)
                best_i = best_i * p.w.in[d] + xc[d];
            } else {
              best_i = xi;
            }
          }
        } while (mv_box_next(p.w.rank, lo, hi, kc));
      int64_t oi = nc * osz + o;
      if (best < 0) {
        interp_mv_store_double(&outs[0], oi, isf ? -INFINITY : 0);
        if (ind)
          interp_store_i(ind, oi, -1);
        continue;
      }
      interp_copy_elem(&outs[0], oi, &ins[0], nc * isz + best);
      if (ind)
        interp_store_i(ind, oi, nc * isz + best_i);
    }
  return NULL;
}

static kiln_status mv_global(const char *name, bool avg, interp_tensor *outs,
                             const interp_tensor *ins) {
  const kiln_type *x = &ins[0].type;
  if (x->rank < 2)
    return interp_mv_err(KILN_INVALID_ARGUMENT, name, "X needs rank >= 2");
  int64_t NC = x->dims[0] * x->dims[1], sz = interp_mv_prod(x->dims, 2, x->rank);
  if (interp_mv_numel(&outs[0]) != NC)
    return interp_mv_err(KILN_INVALID_ARGUMENT, name, "result size mismatch");
  bool isf = interp_mv_class(x->elem) == INTERP_MV_F;
  for (int64_t nc = 0; nc < NC; nc++) {
    if (avg) {
      double s = 0;
      for (int64_t i = 0; i < sz; i++)
        s += interp_load_f(&ins[0], nc * sz + i);
      interp_mv_store_double(&outs[0], nc, sz ? s / (double)sz : NAN);
      continue;
    }
    int64_t best = -1;
    for (int64_t i = 0; i < sz; i++) {
      bool better;
      if (best < 0)
        better = true;
      else if (isf) {
        double v = interp_load_f(&ins[0], nc * sz + i), b = interp_load_f(&ins[0], nc * sz + best);
        better = v > b || (isnan(v) && !isnan(b));
      } else
        better =
            interp_mv_load_int(&ins[0], nc * sz + i) > interp_mv_load_int(&ins[0], nc * sz + best);
      if (better)
        best = i;
    }
    if (best < 0)
      interp_mv_store_double(&outs[0], nc, isf ? -INFINITY : 0);
    else
      interp_copy_elem(&outs[0], nc, &ins[0], nc * sz + best);
  }
  return NULL;
}

kiln_status interp_GlobalAveragePool(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                     const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  return mv_global("GlobalAveragePool", true, outs, ins);
}

kiln_status interp_GlobalMaxPool(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                 const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  return mv_global("GlobalMaxPool", false, outs, ins);
}

/* MaxUnpool: zeros, then every input value written at its index, a flat
 * position in the shape that MaxPool's window attributes give back
 * ((in - 1) * stride + kernel - pads). A larger output_shape extends that
 * block with zeros at the end of each dimension (as the ONNX reference
 * does). An index past the block is an error. */
INTERP_KERNEL(MaxUnpool) {
  INTERP_ARITY(MaxUnpool, 1, 2);
  const interp_tensor *x = &ins[0], *idx = &ins[1];
  interp_tensor *y = &outs[0];
  uint32_t nd = x->type.rank - 2;
  const kiln_attr *ak = kiln_attrs_find(attrs, "kernel_shape");
  const kiln_attr *as = kiln_attrs_find(attrs, "strides"), *ap = kiln_attrs_find(attrs, "pads");
  if (x->type.rank < 3 || !ak || kiln_attr_len(ak) != nd)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter MaxUnpool: bad 'kernel_shape'");
  kiln_type block = y->type;
  for (uint32_t d = 0; d < nd; d++) {
    int64_t st = as && kiln_attr_len(as) == nd ? kiln_attr_ints(as)[d] : 1;
    int64_t pb = ap && kiln_attr_len(ap) == 2 * nd ? kiln_attr_ints(ap)[d] : 0;
    int64_t pe = ap && kiln_attr_len(ap) == 2 * nd ? kiln_attr_ints(ap)[nd + d] : 0;
    block.dims[2 + d] = (x->type.dims[2 + d] - 1) * st + kiln_attr_ints(ak)[d] - pb - pe;
  }
  memset(y->data, 0, (size_t)kiln_type_bytes(&y->type));
  int64_t n = interp_numel(x), total = kiln_type_numel(&block), co[KILN_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    int64_t j = interp_load_i(idx, i);
    if (j < 0 || j >= total)
      return kiln_status_make(KILN_OUT_OF_RANGE,
                              "interpreter MaxUnpool: index %lld out of range for dimension "
                              "%lld (element %lld of the indices; the unpooled block has %lld "
                              "elements)",
                              (long long)j, (long long)total, (long long)i, (long long)total);
    interp_unravel(&block, j, co);
    interp_copy_elem(y, interp_ravel(&y->type, co), x, i);
  }
  return NULL;
}
