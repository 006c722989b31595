/* ir/infer/quant.c: inference of the quantization kinds. Results are plain
 * integer or float tensors: the quantization parameters travel as operands
 * (scale, zero point), never as result type parameters. */
#include <string.h>

#include "infer.h"

#define Q8 (KILN_INFER_M(KILN_I8) | KILN_INFER_M(KILN_U8))
#define Q16 (KILN_INFER_M(KILN_I16) | KILN_INFER_M(KILN_U16))

/* Scale (and zero point) shape: per tensor, per axis or blocked. */
static kiln_status check_qparams(const char *kind, const kiln_type *x, const kiln_type *scale,
                                 const kiln_type *zp, const kiln_attrs *attrs) {
  KILN_TRY(kiln_infer_check_elem(kind, "scale (input 1)", scale, KILN_INFER_FLOAT));
  /* Per tensor, a scalar and a [1] are the same thing (quantizers mix them). */
  bool one = zp && zp->rank <= 1 && scale->rank <= 1 && kiln_type_numel(zp) == 1 &&
             kiln_type_numel(scale) == 1;
  bool same = !zp || one || zp->rank == scale->rank;
  for (uint32_t i = 0; zp && !one && same && i < zp->rank; i++)
    same = zp->dims[i] == scale->dims[i];
  if (!same)
    return kiln_infer_fail(kind, "zero point (input 2) %s must have the shape of scale %s",
                           KILN_INFER_TS(zp), KILN_INFER_TS(scale));
  if (scale->rank <= 1 && kiln_type_numel(scale) == 1)
    return NULL;
  int64_t block = kiln_attrs_int_or(attrs, "block_size", 0);
  if (block < 0)
    return kiln_infer_fail(kind, "attribute 'block_size' = %lld must be >= 0", (long long)block);
  if (x->rank == 0) {
    if (kiln_type_numel(scale) == 1)
      return NULL;
    return kiln_infer_fail(kind, "scale %s must be a scalar for scalar input 0",
                           KILN_INFER_TS(scale));
  }
  uint32_t axis;
  KILN_TRY(
      kiln_infer_axis(kind, "axis", kiln_attrs_int_or(attrs, "axis", 1), x->rank, false, &axis));
  if (block == 0) {
    if (scale->rank == 1 && (scale->dims[0] == x->dims[axis] || scale->dims[0] == 1))
      return NULL;
    return kiln_infer_fail(kind,
                           "scale %s must be a scalar or have shape [%lld] (axis %u of "
                           "input 0 %s)",
                           KILN_INFER_TS(scale), (long long)x->dims[axis], axis, KILN_INFER_TS(x));
  }
  bool ok = scale->rank == x->rank;
  for (uint32_t i = 0; ok && i < x->rank; i++) {
    int64_t want = i == axis ? (x->dims[i] + block - 1) / block : x->dims[i];
    ok = scale->dims[i] == want;
  }
  if (!ok)
    return kiln_infer_fail(kind, "scale %s does not match input 0 %s blocked by %lld on axis %u",
                           KILN_INFER_TS(scale), KILN_INFER_TS(x), (long long)block, axis);
  return NULL;
}

kiln_status kiln_infer_QuantizeLinear(const kiln_type *const *in, uint32_t n_in,
                                      const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_results;
  static const char *const k = "QuantizeLinear";
  const kiln_type *x = in[0], *zp = n_in > 2 ? in[2] : NULL;
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT | KILN_INFER_M(KILN_I32)));
  KILN_TRY(check_qparams(k, x, in[1], zp, attrs));
  kiln_elem od = KILN_U8;
  bool has_od = false;
  const kiln_attr *oda = kiln_attrs_find(attrs, "output_dtype");
  /* ONNX's 0 (UNDEFINED) means "not set". */
  if (oda && !(kiln_attr_get_kind(oda) == KILN_ATTR_INT && kiln_attr_int(oda) == 0))
    KILN_TRY(kiln_infer_type_attr(k, attrs, "output_dtype", KILN_U8, &od, &has_od));
  kiln_elem e = zp ? zp->elem : od;
  kiln_type probe = {.elem = e};
  KILN_TRY(kiln_infer_check_elem(k, zp ? "zero point (input 2)" : "attribute 'output_dtype'",
                                 zp ? zp : &probe, Q8 | Q16));
  if (zp && has_od && od != zp->elem)
    return kiln_infer_fail(k, "attribute 'output_dtype' %s differs from zero point %s",
                           kiln_elem_name(od), KILN_INFER_TS(zp));
  return kiln_infer_make(k, e, x->rank, x->dims, out);
}

kiln_status kiln_infer_DequantizeLinear(const kiln_type *const *in, uint32_t n_in,
                                        const kiln_attrs *attrs, uint32_t n_results,
                                        kiln_type *out) {
  (void)n_results;
  static const char *const k = "DequantizeLinear";
  const kiln_type *x = in[0], *zp = n_in > 2 ? in[2] : NULL;
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, Q8 | Q16 | KILN_INFER_M(KILN_I32)));
  if (zp)
    KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "zero point (input 2)", zp));
  KILN_TRY(check_qparams(k, x, in[1], zp, attrs));
  return kiln_infer_make(k, in[1]->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_DynamicQuantizeLinear(const kiln_type *const *in, uint32_t n_in,
                                             const kiln_attrs *attrs, uint32_t n_results,
                                             kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  static const char *const k = "DynamicQuantizeLinear";
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_M(KILN_F32)));
  int64_t none[1] = {0};
  KILN_TRY(kiln_infer_make(k, KILN_U8, x->rank, x->dims, &out[0]));
  KILN_TRY(kiln_infer_make(k, KILN_F32, 0, none, &out[1]));
  return kiln_infer_make(k, KILN_U8, 0, none, &out[2]);
}

/* A scale or zero point operand: one value, or (want > 0) one per row,
 * column or output channel. Kernels index it by that row, so any other
 * length (an empty tensor included) would be read out of bounds. */
static kiln_status qparam_len(const char *kind, const char *what, const kiln_type *t,
                              int64_t want, const char *per) {
  if (!t || kiln_type_numel(t) == 1 || (want > 0 && t->rank == 1 && t->dims[0] == want))
    return NULL;
  if (want > 0)
    return kiln_infer_fail(kind, "%s is %s; expected a scalar or [%lld] (one per %s)", what,
                           KILN_INFER_TS(t), (long long)want, per);
  return kiln_infer_fail(kind, "%s is %s; expected a scalar", what, KILN_INFER_TS(t));
}

/* An optional zero point of an integer operand: same element type, and
 * the length qparam_len allows. */
static kiln_status int_zp(const char *kind, const char *what, const kiln_type *zp,
                          const char *owner, const kiln_type *of, int64_t want, const char *per) {
  if (!zp)
    return NULL;
  KILN_TRY(kiln_infer_same_elem(kind, owner, of, what, zp));
  return qparam_len(kind, what, zp, want, per);
}

/* MatMul's row count of A and column count of B (1 for a vector). */
static int64_t mm_rows(const kiln_type *a) { return a->rank >= 2 ? a->dims[a->rank - 2] : 1; }
static int64_t mm_cols(const kiln_type *b) { return b->rank >= 2 ? b->dims[b->rank - 1] : 1; }

kiln_status kiln_infer_MatMulInteger(const kiln_type *const *in, uint32_t n_in,
                                     const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)attrs, (void)n_results;
  static const char *const k = "MatMulInteger";
  KILN_TRY(kiln_infer_check_elem(k, "input 0 (A)", in[0], Q8));
  KILN_TRY(kiln_infer_check_elem(k, "input 1 (B)", in[1], Q8));
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_matmul_shape(k, in[0], in[1], dims, &rank));
  KILN_TRY(int_zp(k, "a_zero_point (input 2)", n_in > 2 ? in[2] : NULL, "input 0", in[0],
                  mm_rows(in[0]), "row of A"));
  KILN_TRY(int_zp(k, "b_zero_point (input 3)", n_in > 3 ? in[3] : NULL, "input 1", in[1],
                  mm_cols(in[1]), "column of B"));
  return kiln_infer_make(k, KILN_I32, rank, dims, out);
}

kiln_status kiln_infer_ConvInteger(const kiln_type *const *in, uint32_t n_in,
                                   const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_results;
  static const char *const k = "ConvInteger";
  KILN_TRY(kiln_infer_check_elem(k, "input 0 (x)", in[0], Q8));
  KILN_TRY(kiln_infer_check_elem(k, "input 1 (w)", in[1], Q8));
  int64_t dims[KILN_MAX_RANK];
  KILN_TRY(kiln_infer_conv_shape(k, in[0], in[1], attrs, dims));
  KILN_TRY(int_zp(k, "x_zero_point (input 2)", n_in > 2 ? in[2] : NULL, "input 0", in[0], 0, ""));
  KILN_TRY(int_zp(k, "w_zero_point (input 3)", n_in > 3 ? in[3] : NULL, "input 1", in[1],
                  in[1]->dims[0], "output channel"));
  return kiln_infer_make(k, KILN_I32, in[0]->rank, dims, out);
}

/* The six scale / zero point operands around a QLinear op: (x_scale, x_zp)
 * at xi, (w_scale, w_zp) at wi, (y_scale, y_zp) at 6, 7. */
static kiln_status qlinear_params(const char *kind, const kiln_type *const *in) {
  static const char *const names[] = {
      "input 0",           "a_scale (input 1)",     "a_zero_point (input 2)",
      "input 3",           "b_scale (input 4)",     "b_zero_point (input 5)",
      "y_scale (input 6)", "y_zero_point (input 7)"};
  KILN_TRY(kiln_infer_check_elem(kind, names[0], in[0], Q8));
  KILN_TRY(kiln_infer_check_elem(kind, names[3], in[3], Q8));
  KILN_TRY(kiln_infer_check_elem(kind, names[7], in[7], Q8));
  KILN_TRY(kiln_infer_same_elem(kind, names[0], in[0], names[2], in[2]));
  KILN_TRY(kiln_infer_same_elem(kind, names[3], in[3], names[5], in[5]));
  KILN_TRY(kiln_infer_check_elem(kind, names[1], in[1], KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_elem(kind, names[4], in[4], KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_elem(kind, names[6], in[6], KILN_INFER_FLOAT));
  if (kiln_type_numel(in[6]) != 1 || kiln_type_numel(in[7]) != 1)
    return kiln_infer_fail(kind, "y_scale %s and y_zero_point %s must be scalars",
                           KILN_INFER_TS(in[6]), KILN_INFER_TS(in[7]));
  return NULL;
}

kiln_status kiln_infer_QLinearMatMul(const kiln_type *const *in, uint32_t n_in,
                                     const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  static const char *const k = "QLinearMatMul";
  KILN_TRY(qlinear_params(k, in));
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_matmul_shape(k, in[0], in[3], dims, &rank));
  KILN_TRY(qparam_len(k, "a_scale (input 1)", in[1], mm_rows(in[0]), "row of A"));
  KILN_TRY(qparam_len(k, "a_zero_point (input 2)", in[2], mm_rows(in[0]), "row of A"));
  KILN_TRY(qparam_len(k, "b_scale (input 4)", in[4], mm_cols(in[3]), "column of B"));
  KILN_TRY(qparam_len(k, "b_zero_point (input 5)", in[5], mm_cols(in[3]), "column of B"));
  return kiln_infer_make(k, in[7]->elem, rank, dims, out);
}

kiln_status kiln_infer_QLinearConv(const kiln_type *const *in, uint32_t n_in,
                                   const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_results;
  static const char *const k = "QLinearConv";
  KILN_TRY(qlinear_params(k, in));
  int64_t dims[KILN_MAX_RANK];
  KILN_TRY(kiln_infer_conv_shape(k, in[0], in[3], attrs, dims));
  KILN_TRY(qparam_len(k, "x_scale (input 1)", in[1], 0, ""));
  KILN_TRY(qparam_len(k, "x_zero_point (input 2)", in[2], 0, ""));
  KILN_TRY(qparam_len(k, "w_scale (input 4)", in[4], in[3]->dims[0], "output channel"));
  KILN_TRY(qparam_len(k, "w_zero_point (input 5)", in[5], in[3]->dims[0], "output channel"));
  if (n_in > 8 && in[8]) {
    KILN_TRY(kiln_infer_check_elem(k, "B (input 8)", in[8], KILN_INFER_M(KILN_I32)));
    if (in[8]->rank != 1 || in[8]->dims[0] != dims[1])
      return kiln_infer_fail(k, "B (input 8) is %s; expected [%lld] (the output channels)",
                             KILN_INFER_TS(in[8]), (long long)dims[1]);
  }
  return kiln_infer_make(k, in[7]->elem, in[0]->rank, dims, out);
}
