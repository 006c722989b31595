/* plugins/cpu/emit_resize.c: Resize. Shapes, scales, sizes and roi are
 * static (the loader makes them attributes), so the emitter computes each
 * axis's (input index, weight) taps for every result index here, from the
 * taps kiln_resize_taps gives the reference interpreter (kiln/ops.h), and
 * the kernel (kernels/resize.c) only sums over their products; f32 image
 * resizes (last two axes) go to its separable kernel on the thread pool. */
#include "emit_util.h"
#include "kcpu_runtime.h" /* KCPU_RS2_MAX_W */

#include <kiln/ops.h>
#include <stdlib.h>
#include <string.h>

/* The decoded node; false (the status dropped) when it does not decode,
 * which makes the node unsupported. */
static bool rs_decode(const kiln_attrs *a, const kiln_type *x, const kiln_type *y, kiln_resize *r) {
  kiln_status st = kiln_resize_decode(KILN_NODE_Resize, a, x, y, r);
  if (!st)
    return true;
  kiln_status_free(st);
  return false;
}

/* An axis whose result index is its input index: one tap of weight 1. */
static bool rs_identity(const kiln_resize *r, uint32_t d) {
  return r->out[d] == r->in[d] && r->scale[d] == 1.0 && r->coord != KILN_RESIZE_TF_CROP_AND_RESIZE;
}

static bool rs_elem_ok(kiln_elem e) {
  return e != KILN_BOOL;
}

bool kcpu_supports_Resize(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *y = kcpu_n_out(n, 0);
  kiln_resize r;
  if (!x || !y || x->rank == 0 || x->quantized || y->quantized || x->elem != y->elem ||
      !rs_elem_ok(x->elem) || !rs_decode(kiln_node_attrs(n), x, y, &r))
    return false;
  for (uint32_t d = 0; d < x->rank; d++)
    if (kiln_resize_tap_count(&r, d) < 0)
      return false;
  return true;
}

kiln_status kcpu_emit_Resize(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  kiln_resize r;
  if (!x || !y || !rs_decode(kiln_instr_attrs(in), x, y, &r))
    return kcpu_e_fail(in, "unsupported attributes");
  uint32_t rank = x->rank;
  int64_t ntaps[KILN_MAX_RANK], toff[KILN_MAX_RANK], total = 0;
  for (uint32_t d = 0; d < rank; d++) {
    ntaps[d] = rs_identity(&r, d) ? 1 : kiln_resize_tap_count(&r, d);
    if (ntaps[d] < 0)
      return kcpu_e_fail(in, "antialiasing on axis %u needs more than %d taps", d,
                         KILN_RESIZE_MAX_TAPS);
    toff[d] = total;
    total += y->dims[d] * ntaps[d];
  }
  int64_t *tidx = malloc((size_t)(total ? total : 1) * sizeof *tidx);
  int64_t *tw = malloc((size_t)(total ? total : 1) * sizeof *tw);
  if (!tidx || !tw) {
    free(tidx), free(tw);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "cpu Resize: tap tables of %lld entries",
                            (long long)total);
  }
  for (uint32_t d = 0; d < rank; d++)
    for (int64_t o = 0; o < y->dims[d]; o++) {
      int64_t *ti = tidx + toff[d] + o * ntaps[d], *tb = tw + toff[d] + o * ntaps[d];
      double w[KILN_RESIZE_MAX_TAPS], xo;
      if (rs_identity(&r, d)) {
        ti[0] = o, w[0] = 1;
      } else if (!kiln_resize_source(&r, d, o, &xo)) {
        for (int64_t t = 0; t < ntaps[d]; t++)
          ti[t] = -1, w[t] = 0;
      } else {
        kiln_resize_taps(&r, d, xo, ti, w);
      }
      for (int64_t t = 0; t < ntaps[d]; t++)
        memcpy(&tb[t], &w[t], sizeof w[t]);
    }
  /* f32 with only the last two axes resized and every tap inside the
   * input: the separable kernel on the pool */
  bool sep = x->elem == KILN_F32 && rank >= 2 && y->dims[rank - 1] > 0 &&
             x->dims[rank - 1] <= KCPU_RS2_MAX_W;
  for (uint32_t d = 0; sep && d + 2 < rank; d++)
    sep = rs_identity(&r, d);
  for (int64_t k = sep ? toff[rank - 2] : total; k < total && sep; k++)
    sep = tidx[k] >= 0;
  if (sep) {
    int64_t planes = kcpu_e_prod(x->dims, 0, rank - 2), oh = y->dims[rank - 2];
    int64_t ow = y->dims[rank - 1];
    const int64_t *hi = tidx + toff[rank - 2], *hw = tw + toff[rank - 2];
    const int64_t *wi = tidx + toff[rank - 1], *ww = tw + toff[rank - 1];
    LLVMValueRef sargs[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                            kcpu_addr(e, kcpu_i_out(in, 0)),
                            kcpu_i64(e, planes),
                            kcpu_i64(e, x->dims[rank - 2]),
                            kcpu_i64(e, x->dims[rank - 1]),
                            kcpu_i64(e, oh),
                            kcpu_i64(e, ow),
                            kcpu_i64(e, ntaps[rank - 2]),
                            kcpu_i64(e, ntaps[rank - 1]),
                            kcpu_i64_array(e, hi, (uint32_t)(oh * ntaps[rank - 2])),
                            kcpu_i64_array(e, hw, (uint32_t)(oh * ntaps[rank - 2])),
                            kcpu_i64_array(e, wi, (uint32_t)(ow * ntaps[rank - 1])),
                            kcpu_i64_array(e, ww, (uint32_t)(ow * ntaps[rank - 1])),
                            kcpu_pool(e)};
    free(tidx), free(tw);
    return kcpu_e_call(e, in, "kcpu_k_resize2d_f32", sargs, 14);
  }
  LLVMValueRef xv = kcpu_e_ptr(e, kcpu_i_in(in, 0));
  LLVMValueRef args[] = {kcpu_i64(e, x->elem),
                         xv,
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, rank),
                         kcpu_i64_array(e, x->dims, rank),
                         kcpu_i64_array(e, y->dims, rank),
                         kcpu_i64_array(e, ntaps, rank),
                         kcpu_i64_array(e, toff, rank),
                         kcpu_i64_array(e, tidx, (uint32_t)(total ? total : 1)),
                         kcpu_i64_array(e, tw, (uint32_t)(total ? total : 1)),
                         kcpu_i64(e, r.mode == KILN_RESIZE_NEAREST),
                         kcpu_f64(e, r.extrapolation)};
  free(tidx), free(tw);
  return kcpu_e_call(e, in, "kcpu_k_resize", args, 12);
}
