/* ir/infer/generator.c: inference of the kinds that make tensors from
 * attributes alone: ConstantOfShape, EyeLike, Range and the window
 * generators HannWindow, HammingWindow, BlackmanWindow. */
#include <math.h>
#include <string.h>

#include "infer.h"

kiln_status kiln_infer_ConstantOfShape(const kiln_type *const *in, uint32_t n_in,
                                       const kiln_attrs *attrs, uint32_t n_results,
                                       kiln_type *out) {
  (void)in, (void)n_in, (void)n_results;
  static const char *const k = "ConstantOfShape";
  const int64_t *shape;
  uint32_t n;
  bool present;
  KILN_TRY(kiln_infer_ints(k, attrs, "shape", &shape, &n, &present));
  if (!present)
    return kiln_infer_fail(k, "attribute 'shape' is required");
  if (n > KILN_MAX_RANK)
    return kiln_infer_fail(k, "attribute 'shape' %s has rank %u > %d", KILN_INFER_DS(shape, n), n,
                           KILN_MAX_RANK);
  for (uint32_t i = 0; i < n; i++) {
    if (shape[i] < 0)
      return kiln_infer_fail(k, "attribute 'shape' %s has a negative entry",
                             KILN_INFER_DS(shape, n));
  }
  kiln_elem e;
  KILN_TRY(kiln_infer_type_attr(k, attrs, "dtype", KILN_F32, &e, NULL));
  return kiln_infer_make(k, e, n, shape, out);
}

kiln_status kiln_infer_EyeLike(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                               uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_rank("EyeLike", "input 0", x, 2, false));
  kiln_elem e;
  KILN_TRY(kiln_infer_type_attr("EyeLike", attrs, "dtype", x->elem, &e, NULL));
  return kiln_infer_make("EyeLike", e, 2, x->dims, out);
}

kiln_status kiln_infer_Range(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)in, (void)n_in, (void)n_results;
  static const char *const names[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; i++) {
    if (!kiln_attrs_find(attrs, names[i]))
      return kiln_infer_fail("Range", "attribute '%s' is required", names[i]);
  }
  kiln_elem e;
  KILN_TRY(kiln_infer_type_attr("Range", attrs, "dtype", KILN_F32, &e, NULL));
  kiln_type probe = {.elem = e};
  uint32_t mask = KILN_INFER_M(KILN_F32) | KILN_INFER_M(KILN_F64) | KILN_INFER_M(KILN_I16) |
                  KILN_INFER_M(KILN_I32) | KILN_INFER_M(KILN_I64);
  KILN_TRY(kiln_infer_check_elem("Range", "the result (attribute 'dtype')", &probe, mask));
  double start = kiln_attrs_float_or(attrs, "start", 0);
  double limit = kiln_attrs_float_or(attrs, "limit", 0);
  double delta = kiln_attrs_float_or(attrs, "delta", 1);
  if (!kiln_elem_is_float(e)) {
    /* Integer ranges count in integers, as ONNX computes them in T. */
    start = trunc(start), limit = trunc(limit), delta = trunc(delta);
  }
  if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
    return kiln_infer_fail("Range", "start %g, limit %g, delta %g do not make a finite range",
                           start, limit, delta);
  double cnt = ceil((limit - start) / delta);
  if (cnt < 0)
    cnt = 0;
  if (cnt > 9.0e18)
    return kiln_status_make(KILN_OUT_OF_RANGE, "Range: %g elements are too many", cnt);
  int64_t len = (int64_t)cnt;
  return kiln_infer_make("Range", e, 1, &len, out);
}

/* A window of `size` samples; the element type is any float or integer
 * (ONNX allows both; integer windows truncate). */
static kiln_status window(const char *kind, const kiln_attrs *attrs, kiln_type *out) {
  if (!kiln_attrs_find(attrs, "size"))
    return kiln_infer_fail(kind, "attribute 'size' is required");
  int64_t size = kiln_attrs_int_or(attrs, "size", 0);
  if (size < 0)
    return kiln_infer_fail(kind, "attribute 'size' = %lld must not be negative", (long long)size);
  int64_t periodic = kiln_attrs_int_or(attrs, "periodic", 1);
  if (periodic != 0 && periodic != 1)
    return kiln_infer_fail(kind, "attribute 'periodic' = %lld must be 0 or 1", (long long)periodic);
  kiln_elem e;
  KILN_TRY(kiln_infer_type_attr(kind, attrs, "output_datatype", KILN_F32, &e, NULL));
  kiln_type probe = {.elem = e};
  KILN_TRY(kiln_infer_check_elem(kind, "the result (attribute 'output_datatype')", &probe,
                                 KILN_INFER_NUM));
  return kiln_infer_make(kind, e, 1, &size, out);
}

#define WINDOW(name)                                                                               \
  kiln_status kiln_infer_##name(const kiln_type *const *in, uint32_t n_in,                         \
                                const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {     \
    (void)in, (void)n_in, (void)n_results;                                                         \
    return window(#name, attrs, out);                                                              \
  }
WINDOW(HannWindow)
WINDOW(HammingWindow)
WINDOW(BlackmanWindow)
