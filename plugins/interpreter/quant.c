/* plugins/interpreter/quant.c: QuantizeLinear, DequantizeLinear (per
 * tensor, per axis, blocked) and DynamicQuantizeLinear. Rounding is half to
 * even (nearbyint in the default mode) and results saturate to the target
 * type's range. Where the ONNX reference divides in float32, the quotient
 * is rounded to float first so that ties land where the reference puts
 * them. */
#include "kernel.h"

/* Index into scale / zero_point for element i of x. */
typedef struct qparams {
  enum { Q_TENSOR, Q_AXIS, Q_BLOCK } mode;
  uint32_t axis;
  int64_t block;
} qparams;

static kiln_status qparams_make(const char *name, const kiln_attrs *attrs, const kiln_type *x,
                                const kiln_type *scale, qparams *q) {
  q->block = kiln_attrs_int_or(attrs, "block_size", 0);
  int64_t scale_n = 1;
  for (uint32_t d = 0; d < scale->rank; d++)
    scale_n *= scale->dims[d];
  q->axis = 0;
  if (scale->rank == 0 || (scale_n == 1 && q->block == 0)) {
    q->mode = Q_TENSOR;
    return NULL;
  }
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", 1), x->rank, &q->axis),
               "interpreter %s", name);
  if (q->block > 0) {
    q->mode = Q_BLOCK;
    if (scale->rank != x->rank)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "interpreter %s: blocked scale must have x's rank %u, has %u", name,
                              x->rank, scale->rank);
    return NULL;
  }
  q->mode = Q_AXIS;
  if (scale->rank != 1 || scale->dims[0] != x->dims[q->axis])
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter %s: per-axis scale must be 1-D of length %lld (axis %u)",
                            name, (long long)x->dims[q->axis], q->axis);
  return NULL;
}

static int64_t qparam_index(const qparams *q, const kiln_type *x, const kiln_type *scale,
                            int64_t i) {
  if (q->mode == Q_TENSOR)
    return 0;
  int64_t coords[KILN_MAX_RANK];
  interp_unravel(x, i, coords);
  if (q->mode == Q_AXIS)
    return coords[q->axis];
  coords[q->axis] /= q->block;
  return interp_ravel(scale, coords);
}

/* The range of an integer type, as doubles (exact for the 8..32-bit types
 * quantization uses). */
static void int_range(kiln_elem e, double *lo, double *hi) {
  int bits = (int)kiln_elem_size(e) * 8;
  if (interp_class_of(e) == INTERP_SIGNED) {
    *lo = -ldexp(1.0, bits - 1);
    *hi = ldexp(1.0, bits - 1) - 1;
  } else {
    *lo = 0;
    *hi = ldexp(1.0, bits) - 1;
  }
}

static double saturate(double v, double lo, double hi) {
  if (isnan(v))
    return 0.0;
  return v < lo ? lo : v > hi ? hi : v;
}

/* x / scale, in float32 when the scale is (the reference's precision). */
static double quotient(double x, double scale, kiln_elem scale_elem) {
  double q = x / scale;
  return scale_elem == KILN_F64 ? q : (double)(float)q;
}

INTERP_KERNEL(QuantizeLinear) {
  INTERP_ARITY(QuantizeLinear, 1, 2);
  const interp_tensor *x = &ins[0], *scale = &ins[1];
  const interp_tensor *zp = interp_opt(ins, n_ins, 2);
  interp_tensor *y = &outs[0];
  interp_class yc = interp_class_of(y->type.elem);
  if (yc != INTERP_SIGNED && yc != INTERP_UNSIGNED)
    return interp_bad_elem("QuantizeLinear", "result", y->type.elem);
  qparams q;
  KILN_TRY(qparams_make("QuantizeLinear", attrs, &x->type, &scale->type, &q));
  double lo, hi;
  int_range(y->type.elem, &lo, &hi);
  int64_t n = interp_numel(y);
  for (int64_t i = 0; i < n; i++) {
    int64_t j = qparam_index(&q, &x->type, &scale->type, i);
    double z = zp ? interp_load_f(zp, j) : 0.0;
    double v = nearbyint(quotient(interp_load_f(x, i), interp_load_f(scale, j), scale->type.elem));
    interp_store_f(y, i, saturate(v + z, lo, hi));
  }
  return NULL;
}

INTERP_KERNEL(DequantizeLinear) {
  INTERP_ARITY(DequantizeLinear, 1, 2);
  const interp_tensor *x = &ins[0], *scale = &ins[1];
  const interp_tensor *zp = interp_opt(ins, n_ins, 2);
  if (interp_class_of(x->type.elem) == INTERP_FLOAT || x->type.elem == KILN_BOOL)
    return interp_bad_elem("DequantizeLinear", "input", x->type.elem);
  qparams q;
  KILN_TRY(qparams_make("DequantizeLinear", attrs, &x->type, &scale->type, &q));
  int64_t n = interp_numel(&outs[0]);
  for (int64_t i = 0; i < n; i++) {
    int64_t j = qparam_index(&q, &x->type, &scale->type, i);
    double z = zp ? interp_load_f(zp, j) : 0.0;
    interp_store_f(&outs[0], i, (interp_load_f(x, i) - z) * interp_load_f(scale, j));
  }
  return NULL;
}

/* u8 only, as ONNX defines it: the range always includes 0, scale =
 * (max - min) / 255 in float32; an all-zero input gets scale 0 and zero
 * point 0, and quantizes to 0. */
INTERP_KERNEL(DynamicQuantizeLinear) {
  (void)attrs;
  INTERP_ARITY(DynamicQuantizeLinear, 3, 1);
  const interp_tensor *x = &ins[0];
  if (interp_class_of(x->type.elem) != INTERP_FLOAT)
    return interp_bad_elem("DynamicQuantizeLinear", "input", x->type.elem);
  int64_t n = interp_numel(x);
  float mn = 0.0f, mx = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    float v = (float)interp_load_f(x, i);
    if (isnan(v))
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "interpreter DynamicQuantizeLinear: NaN at element %lld",
                              (long long)i);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  float scale = (mx - mn) / 255.0f;
  double zp = 0.0;
  if (scale != 0.0f)
    zp = saturate(nearbyint((double)(0.0f - mn / scale)), 0, 255);
  interp_store_f(&outs[1], 0, scale);
  interp_store_f(&outs[2], 0, zp);
  for (int64_t i = 0; i < n; i++) {
    double v = scale == 0.0f ? 0.0 : nearbyint((double)((float)interp_load_f(x, i) / scale));
    interp_store_f(&outs[0], i, saturate(v + zp, 0, 255));
  }
  return NULL;
}
