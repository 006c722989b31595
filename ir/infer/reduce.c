/* ir/infer/reduce.c: inference of reductions (ArgMax, Reduce*), the
 * softmax family, CumSum, TopK and the normalizations. */
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

/* Marks the dims named by an axes list (normalized, no duplicates). */
static kiln_status mark_axes(const char *kind, const char *attr, const int64_t *axes, uint32_t n,
                             uint32_t rank, bool *mark) {
  memset(mark, 0, sizeof(bool) * KILN_MAX_RANK);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t a;
    KILN_TRY(kiln_infer_axis(kind, attr, axes[i], rank, false, &a));
    if (mark[a])
      return kiln_infer_fail(kind, "attribute '%s' names axis %u twice", attr, a);
    mark[a] = true;
  }
  return NULL;
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
    KILN_TRY(mark_axes(kind, "axes", axes, n, x->rank, mark));
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

#define REDUCE(name, mask)                                                                         \
  kiln_status kiln_infer_##name(const kiln_type *const *in, uint32_t n_in,                         \
                                const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {     \
    (void)n_in, (void)n_results;                                                                   \
    return reduce(#name, in[0], attrs, mask, out);                                                 \
  }

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

static kiln_status softmax(const char *kind, const kiln_type *x, const kiln_attrs *attrs,
                           kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, KILN_INFER_FLOAT));
  uint32_t axis;
  KILN_TRY(
      kiln_infer_axis(kind, "axis", kiln_attrs_int_or(attrs, "axis", -1), x->rank, false, &axis));
  return kiln_infer_make(kind, x->elem, x->rank, x->dims, out);
}

#define SOFTMAX(name)                                                                              \
  kiln_status kiln_infer_##name(const kiln_type *const *in, uint32_t n_in,                         \
                                const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {     \
    (void)n_in, (void)n_results;                                                                   \
    return softmax(#name, in[0], attrs, out);                                                      \
  }

SOFTMAX(Softmax)
SOFTMAX(LogSoftmax)
SOFTMAX(Hardmax)

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

/* A per-channel parameter: float, rank 1, length c. */
static kiln_status channel_param(const char *kind, const char *what, const kiln_type *p,
                                 int64_t c) {
  KILN_TRY(kiln_infer_check_elem(kind, what, p, KILN_INFER_FLOAT));
  if (p->rank != 1 || p->dims[0] != c)
    return kiln_infer_fail(kind, "%s is %s; expected shape [%lld] (the channel count)", what,
                           KILN_INFER_TS(p), (long long)c);
  return NULL;
}

kiln_status kiln_infer_BatchNormalization(const kiln_type *const *in, uint32_t n_in,
                                          const kiln_attrs *attrs, uint32_t n_results,
                                          kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  static const char *const k = "BatchNormalization";
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 2, true));
  static const char *const names[] = {"x", "scale (input 1)", "B (input 2)", "mean (input 3)",
                                      "var (input 4)"};
  for (uint32_t i = 1; i < 5; i++)
    KILN_TRY(channel_param(k, names[i], in[i], x->dims[1]));
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_InstanceNormalization(const kiln_type *const *in, uint32_t n_in,
                                             const kiln_attrs *attrs, uint32_t n_results,
                                             kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  static const char *const k = "InstanceNormalization";
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 3, true));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "scale (input 1)", in[1]));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "B (input 2)", in[2]));
  KILN_TRY(channel_param(k, "scale (input 1)", in[1], x->dims[1]));
  KILN_TRY(channel_param(k, "B (input 2)", in[2], x->dims[1]));
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_LayerNormalization(const kiln_type *const *in, uint32_t n_in,
                                          const kiln_attrs *attrs, uint32_t n_results,
                                          kiln_type *out) {
  static const char *const k = "LayerNormalization";
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  uint32_t axis;
  KILN_TRY(kiln_infer_axis(k, "axis", kiln_attrs_int_or(attrs, "axis", -1), x->rank, false, &axis));
  static const char *const names[] = {"x", "scale (input 1)", "B (input 2)"};
  for (uint32_t i = 1; i < n_in; i++) {
    if (!in[i])
      continue;
    KILN_TRY(kiln_infer_same_elem(k, "input 0", x, names[i], in[i]));
    if (!kiln_infer_broadcasts_to(in[i], x))
      return kiln_infer_fail(k, "%s does not broadcast to input 0 %s", names[i], KILN_INFER_TS(x));
  }
  kiln_elem stash;
  KILN_TRY(kiln_infer_type_attr(k, attrs, "stash_type", KILN_F32, &stash, NULL));
  KILN_TRY(kiln_infer_make(k, x->elem, x->rank, x->dims, &out[0]));
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  for (uint32_t i = axis; i < x->rank; i++)
    dims[i] = 1;
  for (uint32_t r = 1; r < n_results; r++)
    KILN_TRY(kiln_infer_make(k, stash, x->rank, dims, &out[r]));
  return NULL;
}

kiln_status kiln_infer_MeanVarianceNormalization(const kiln_type *const *in, uint32_t n_in,
                                                 const kiln_attrs *attrs, uint32_t n_results,
                                                 kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "MeanVarianceNormalization";
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  static const int64_t dflt[] = {0, 2, 3};
  const int64_t *axes;
  uint32_t n;
  bool present, mark[KILN_MAX_RANK];
  KILN_TRY(kiln_infer_ints(k, attrs, "axes", &axes, &n, &present));
  if (!present)
    axes = dflt, n = 3;
  KILN_TRY(mark_axes(k, "axes", axes, n, x->rank, mark));
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_LRN(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                           uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem("LRN", "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank("LRN", "input 0", x, 3, true));
  if (!kiln_attrs_find(attrs, "size"))
    return kiln_infer_fail("LRN", "attribute 'size' is required");
  int64_t size = kiln_attrs_int_or(attrs, "size", 0);
  if (size < 1)
    return kiln_infer_fail("LRN", "attribute 'size' = %lld must be positive", (long long)size);
  return kiln_infer_make("LRN", x->elem, x->rank, x->dims, out);
}
