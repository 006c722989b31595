/* plugins/interpreter/generator.c: kernels whose result is computed from
 * attributes and the result shape alone (ConstantOfShape, EyeLike, Range,
 * HannWindow, HammingWindow, BlackmanWindow); the shape was inferred. */
#include "kernel.h"

#include <math.h>

kiln_status interp_ConstantOfShape(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                   const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)ins, (void)n_ins;
  double v = kiln_attrs_float_or(attrs, "value", 0.0);
  int64_t n = interp_mv_numel(&outs[0]);
  for (int64_t o = 0; o < n; o++)
    interp_mv_store_double(&outs[0], o, v);
  return NULL;
}

kiln_status interp_EyeLike(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                           const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins, (void)ins;
  const kiln_type *ot = &outs[0].type;
  if (ot->rank != 2)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "EyeLike", "rank %u, expected 2", ot->rank);
  int64_t k = kiln_attrs_int_or(attrs, "k", 0);
  for (int64_t i = 0; i < ot->dims[0]; i++)
    for (int64_t j = 0; j < ot->dims[1]; j++)
      interp_mv_store_double(&outs[0], i * ot->dims[1] + j, j - i == k ? 1.0 : 0.0);
  return NULL;
}

kiln_status interp_Range(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                         const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)ins, (void)n_ins;
  double start = kiln_attrs_float_or(attrs, "start", 0.0);
  double delta = kiln_attrs_float_or(attrs, "delta", 1.0);
  int64_t n = interp_mv_numel(&outs[0]);
  if (interp_mv_class(outs[0].type.elem) == INTERP_MV_F) {
    for (int64_t i = 0; i < n; i++)
      interp_store_f(&outs[0], i, start + (double)i * delta);
  } else {
    /* integer ranges are exact: no accumulated floating error */
    int64_t s = (int64_t)start, d = (int64_t)delta;
    for (int64_t i = 0; i < n; i++)
      interp_mv_store_bits(&outs[0], i, (uint64_t)s + (uint64_t)i * (uint64_t)d);
  }
  return NULL;
}

/* Windows: w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), with
 * N = size (periodic) or size - 1 (symmetric). */
static kiln_status cosine_window(const kiln_attrs *attrs, interp_tensor *y, double a0, double a1,
                                 double a2) {
  int64_t n = interp_numel(y);
  double N = (double)(kiln_attrs_int_or(attrs, "periodic", 1) ? n : n - 1);
  const double pi = 3.14159265358979323846;
  for (int64_t i = 0; i < n; i++) {
    double t = 2 * pi * (double)i / N;
    double v = a0 - a1 * cos(t) + a2 * cos(2 * t);
    if (interp_class_of(y->type.elem) == INTERP_FLOAT)
      interp_store_f(y, i, v);
    else
      interp_store_i(y, i, (int64_t)v); /* truncates, as a cast of the float window */
  }
  return NULL;
}

INTERP_KERNEL(HannWindow) {
  (void)ins, (void)n_ins;
  if (n_outs < 1)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter HannWindow: no result");
  return cosine_window(attrs, &outs[0], 0.5, 0.5, 0);
}

INTERP_KERNEL(HammingWindow) {
  (void)ins, (void)n_ins;
  if (n_outs < 1)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter HammingWindow: no result");
  return cosine_window(attrs, &outs[0], 25.0 / 46, 21.0 / 46, 0);
}

INTERP_KERNEL(BlackmanWindow) {
  (void)ins, (void)n_ins;
  if (n_outs < 1)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter BlackmanWindow: no result");
  return cosine_window(attrs, &outs[0], 0.42, 0.5, 0.08);
}
