/* plugins/interpreter/resize.c: Resize (nearest, n-D linear, cubic;
 * every coordinate_transformation_mode) and Upsample. Interpolation is
 * separable: each axis contributes up to four (index, weight) taps and a
 * result cell is the weighted sum over their product, which is what the
 * ONNX reference's axis-by-axis recursion computes. */
#include "kernel.h"

#include <kiln/ops.h>
#include <math.h>

static kiln_status mv_resize_run(const char *name, const kiln_resize *r, interp_tensor *y,
                                 const interp_tensor *x) {
  const kiln_type *it = &x->type, *ot = &y->type;
  uint32_t rank = it->rank;
  if (ot->rank != rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, name, "result rank differs from input's");
  int64_t ist[KILN_MAX_RANK], oc[KILN_MAX_RANK], n = interp_mv_numel(y);
  interp_mv_strides(it->dims, rank, ist);
  if (n > 0 && interp_mv_numel(x) == 0)
    return interp_mv_err(KILN_INVALID_ARGUMENT, name, "empty input, non-empty result");
  bool isf = interp_mv_class(it->elem) == INTERP_MV_F;
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(ot->dims, rank, o, oc);
    int64_t idx[KILN_MAX_RANK][KILN_RESIZE_MAX_TAPS];
    double w[KILN_MAX_RANK][KILN_RESIZE_MAX_TAPS];
    int nt[KILN_MAX_RANK];
    bool extrapolate = false;
    for (uint32_t d = 0; d < rank && !extrapolate; d++) {
      double xo;
      if (ot->dims[d] == it->dims[d] && r->scale[d] == 1.0 &&
          r->coord != KILN_RESIZE_TF_CROP_AND_RESIZE) {
        idx[d][0] = oc[d], w[d][0] = 1, nt[d] = 1;
        continue;
      }
      if (!kiln_resize_source(r, d, oc[d], &xo)) {
        extrapolate = true;
        break;
      }
      nt[d] = kiln_resize_tap_count(r, d);
      if (nt[d] > 0)
        kiln_resize_taps(r, d, xo, idx[d], w[d]);
      if (nt[d] < 0)
        return interp_mv_err(KILN_UNIMPLEMENTED, name,
                             "antialiasing at scale %g on axis %u needs more than %d taps",
                             r->scale[d], d, (int)KILN_RESIZE_MAX_TAPS);
    }
    if (extrapolate) {
      interp_mv_store_double(y, o, r->extrapolation);
      continue;
    }
    if (r->mode == KILN_RESIZE_NEAREST) {
      int64_t src = 0;
      for (uint32_t d = 0; d < rank; d++)
        src += idx[d][0] * ist[d];
      interp_copy_elem(y, o, x, src);
      continue;
    }
    /* sum over the product of taps, odometer-style */
    int tc[KILN_MAX_RANK] = {0};
    double acc = 0;
    for (;;) {
      double wt = 1;
      int64_t src = 0;
      for (uint32_t d = 0; d < rank; d++) {
        wt *= w[d][tc[d]];
        src += idx[d][tc[d]] * ist[d];
      }
      if (wt != 0)
        acc += wt * (isf ? interp_load_f(x, src) : (double)interp_mv_load_int(x, src));
      uint32_t d = rank;
      while (d-- > 0) {
        if (++tc[d] < nt[d])
          break;
        tc[d] = 0;
      }
      if (d == UINT32_MAX)
        break;
    }
    if (isf)
      interp_store_f(y, o, acc);
    else
      interp_mv_store_double(y, o, nearbyint(acc));
  }
  return NULL;
}

/* Resize and Upsample differ only in their attributes (kiln_resize_decode). */
static kiln_status mv_resize(kiln_node_kind kind, const kiln_attrs *attrs, interp_tensor *outs,
                             const interp_tensor *ins) {
  kiln_resize r;
  KILN_TRY_CTX(kiln_resize_decode(kind, attrs, &ins[0].type, &outs[0].type, &r), "interpreter");
  return mv_resize_run(kiln_node_kind_name(kind), &r, &outs[0], &ins[0]);
}

kiln_status interp_Resize(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  return mv_resize(KILN_NODE_Resize, attrs, outs, ins);
}

/* Upsample (deprecated) = Resize with asymmetric coordinates; nearest takes
 * the floor, so integer scales repeat each element. */
kiln_status interp_Upsample(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                            const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  return mv_resize(KILN_NODE_Upsample, attrs, outs, ins);
}
