/* ir/infer/reduce.c: inference of the reductions: ArgMax, ArgMin, Reduce*,
 * CumSum and TopK. */
#include <stdio.h>
#include <string.h>

#include "infer.h"

static kiln_status arg_reduce(const char *kind, const kiln_type *x, const kiln_attrs *attrs,
                              kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, KILN_INFER_NUM));
  uint32_t axis;
  KILN_TRY(
      kiln_infer_axis(kind, "axis", kiln_attrs_int_or(attrs, "axis", 0), x->rank, false, &axis));
  bool keep = kiln_attrs_int_or(attrs, "keepdims", 1) != 0;
  int64_t dims[KILN_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t i = 0; i < x->rank; i++) {
    if (i != axis)
      dims[r++] = x->dims[i];
    else if (keep)
      dims[r++] = 1;
  }
  return kiln_infer_make(kind, KILN_I64, r, dims, out);
}

kiln_status kiln_infer_ArgMax(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  return arg_reduce("ArgMax", in[0], attrs, out);
}

kiln_status kiln_infer_ArgMin(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  return arg_reduce("ArgMin", in[0], attrs, out);
}

static kiln_status reduce(const char *kind, const kiln_type *x, const kiln_attrs *attrs,
                          uint32_t mask, kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, mask));
  const int64_t *axes;
  uint32_t n;
  bool present;
  KILN_TRY(kiln_infer_ints(kind, attrs, "axes", &axes, &n, &present));
  bool keep = kiln_attrs_int_or(attrs, "keepdims", 1) != 0;
  bool noop = kiln_attrs_int_or(attrs, "noop_with_empty_axes", 0) != 0;
  bool mark[KILN_MAX_RANK];
  if (n == 0) {
    if (noop)
      return kiln_infer_make(kind, x->elem, x->rank, x->dims, out);
    for (uint32_t i = 0; i < KILN_MAX_RANK; i++)
      mark[i] = true;
  } else {
    KILN_TRY(kiln_infer_mark_axes(kind, "axes", axes, n, x->rank, mark));
  }
  int64_t dims[KILN_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t i = 0; i < x->rank; i++) {
    if (!mark[i])
      dims[r++] = x->dims[i];
    else if (keep)
      dims[r++] = 1;
  }
  return kiln_infer_make(kind, x->elem, r, dims, out);
}

#define REDUCE(name, mask) KILN_INFER_AS(name, reduce(#name, in[0], attrs, mask, out))

REDUCE(ReduceL1, KILN_INFER_NUM)
REDUCE(ReduceL2, KILN_INFER_NUM)
REDUCE(ReduceLogSum, KILN_INFER_NUM)
REDUCE(ReduceLogSumExp, KILN_INFER_NUM)
REDUCE(ReduceMax, KILN_INFER_ALL)
REDUCE(ReduceMean, KILN_INFER_NUM)
REDUCE(ReduceMin, KILN_INFER_ALL)
REDUCE(ReduceProd, KILN_INFER_NUM)
REDUCE(ReduceSum, KILN_INFER_NUM)
REDUCE(ReduceSumSquare, KILN_INFER_NUM)

kiln_status kiln_infer_CumSum(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  uint32_t mask = KILN_INFER_FLOAT | KILN_INFER_M(KILN_I32) | KILN_INFER_M(KILN_I64) |
                  KILN_INFER_M(KILN_U32) | KILN_INFER_M(KILN_U64);
  KILN_TRY(kiln_infer_check_elem("CumSum", "input 0", x, mask));
  if (!kiln_attrs_find(attrs, "axis"))
    return kiln_infer_fail("CumSum", "attribute 'axis' is required");
  uint32_t axis;
  KILN_TRY(kiln_infer_axis("CumSum", "axis", kiln_attrs_int_or(attrs, "axis", 0), x->rank, false,
                           &axis));
  return kiln_infer_make("CumSum", x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_TopK(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem("TopK", "input 0", x, KILN_INFER_NUM));
  if (!kiln_attrs_find(attrs, "k"))
    return kiln_infer_fail("TopK", "attribute 'k' is required");
  uint32_t axis;
  KILN_TRY(
      kiln_infer_axis("TopK", "axis", kiln_attrs_int_or(attrs, "axis", -1), x->rank, false, &axis));
  int64_t k = kiln_attrs_int_or(attrs, "k", 0);
  if (k < 0 || k > x->dims[axis])
    return kiln_infer_fail("TopK", "attribute 'k' = %lld is out of range [0, %lld] for input %s",
                           (long long)k, (long long)x->dims[axis], KILN_INFER_TS(x));
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[axis] = k;
  KILN_TRY(kiln_infer_make("TopK", x->elem, x->rank, dims, &out[0]));
  return kiln_infer_make("TopK", KILN_I64, x->rank, dims, &out[1]);
}
