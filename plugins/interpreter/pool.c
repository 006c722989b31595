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

kiln_status interp_AveragePool(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                               const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  mv_pool p;
  KILN_TRY(mv_pool_params("AveragePool", attrs, &ins[0].type, &outs[0].type, &p));
  bool include_pad = kiln_attrs_int_or(attrs, "count_include_pad", 0) != 0;
  int64_t isz = interp_mv_prod(p.w.in, 0, p.w.rank), osz = interp_mv_prod(p.w.out, 0, p.w.rank);
  int64_t ksz = interp_mv_prod(p.w.kernel, 0, p.w.rank), oc[KILN_MAX_RANK], kc[KILN_MAX_RANK];
  for (int64_t nc = 0; nc < p.NC; nc++)
    for (int64_t o = 0; o < osz; o++) {
      interp_mv_unravel(p.w.out, p.w.rank, o, oc);
      double sum = 0;
      int64_t count = 0;
      for (int64_t kf = 0; kf < ksz; kf++) {
        interp_mv_unravel(p.w.kernel, p.w.rank, kf, kc);
        bool in_data = true, in_padded = true;
        int64_t xi = 0;
        for (uint32_t d = 0; d < p.w.rank; d++) {
          int64_t x = oc[d] * p.w.stride[d] - p.w.pad_begin[d] + kc[d] * p.w.dilation[d];
          if (x < -p.w.pad_begin[d] || x >= p.w.in[d] + p.w.pad_end[d])
            in_padded = false;
          if (x < 0 || x >= p.w.in[d])
            in_data = false;
          xi = xi * p.w.in[d] + x;
        }
        /* with count_include_pad, pad cells count but cells past the pads
         * (from ceil_mode) do not */
        if (in_data) {
          sum += interp_load_f(&ins[0], nc * isz + xi);
          count++;
        } else if (include_pad && in_padded) {
          count++;
        }
      }
      interp_store_f(&outs[0], nc * osz + o, count ? sum / (double)count : NAN);
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
  int64_t ksz = interp_mv_prod(p.w.kernel, 0, p.w.rank), oc[KILN_MAX_RANK], kc[KILN_MAX_RANK];
  for (int64_t nc = 0; nc < p.NC; nc++)
    for (int64_t o = 0; o < osz; o++) {
      interp_mv_unravel(p.w.out, p.w.rank, o, oc);
      double sum = 0;
      for (int64_t kf = 0; kf < ksz; kf++) {
        interp_mv_unravel(p.w.kernel, p.w.rank, kf, kc);
        bool in_data = true;
        int64_t xi = 0;
        for (uint32_t d = 0; d < p.w.rank; d++) {
          int64_t x = oc[d] * p.w.stride[d] - p.w.pad_begin[d] + kc[d] * p.w.dilation[d];
          if (x < 0 || x >= p.w.in[d])
            in_data = false;
          xi = xi * p.w.in[d] + x;
        }
        if (in_data)
          sum += pow(fabs(interp_load_f(&ins[0], nc * isz + xi)), pw);
      }
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
  int64_t ksz = interp_mv_prod(p.w.kernel, 0, p.w.rank), oc[KILN_MAX_RANK], kc[KILN_MAX_RANK];
  int64_t xc[KILN_MAX_RANK];
  bool isf = interp_mv_class(ins[0].type.elem) == INTERP_MV_F;
  for (int64_t nc = 0; nc < p.NC; nc++)
    for (int64_t o = 0; o < osz; o++) {
      interp_mv_unravel(p.w.out, p.w.rank, o, oc);
      int64_t best = -1, best_i = 0;
      double bf = 0;
      int64_t bi = 0;
      for (int64_t kf = 0; kf < ksz; kf++) {
        interp_mv_unravel(p.w.kernel, p.w.rank, kf, kc);
        bool inside = true;
        int64_t xi = 0;
        for (uint32_t d = 0; d < p.w.rank && inside; d++) {
          xc[d] = oc[d] * p.w.stride[d] - p.w.pad_begin[d] + kc[d] * p.w.dilation[d];
          inside = xc[d] >= 0 && xc[d] < p.w.in[d];
          xi = xi * p.w.in[d] + xc[d];
        }
        if (!inside)
          continue;
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
      }
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
