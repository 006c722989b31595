/* ir/infer/index.c: inference of the indexing kinds: Gather,
 * GatherElements, GatherND, ScatterND, ScatterElements and OneHot. */
#include <string.h>

#include "infer.h"

kiln_status kiln_infer_Gather(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0], *idx = in[1];
  KILN_TRY(kiln_infer_check_elem("Gather", "indices (input 1)", idx, KILN_INFER_IDX));
  KILN_TRY(kiln_infer_check_rank("Gather", "input 0", x, 1, true));
  uint32_t axis;
  KILN_TRY(kiln_infer_axis("Gather", "axis", kiln_attrs_int_or(attrs, "axis", 0), x->rank, false,
                           &axis));
  uint32_t r = x->rank - 1 + idx->rank;
  if (r > KILN_MAX_RANK)
    return kiln_infer_fail("Gather", "result rank %u of input 0 %s and indices %s exceeds %d", r,
                           KILN_INFER_TS(x), KILN_INFER_TS(idx), KILN_MAX_RANK);
  int64_t dims[KILN_MAX_RANK];
  uint32_t k = 0;
  for (uint32_t i = 0; i < axis; i++)
    dims[k++] = x->dims[i];
  for (uint32_t i = 0; i < idx->rank; i++)
    dims[k++] = idx->dims[i];
  for (uint32_t i = axis + 1; i < x->rank; i++)
    dims[k++] = x->dims[i];
  return kiln_infer_make("Gather", x->elem, r, dims, out);
}

/* GatherElements / ScatterElements: each index addresses data at its own
 * position except along `axis`, so off the axis the indices may not reach
 * past the data (the index values along it are checked at run time). */
static kiln_status within_data(const char *kind, const kiln_type *idx, const kiln_type *x,
                               uint32_t axis) {
  for (uint32_t d = 0; d < x->rank; d++)
    if (d != axis && idx->dims[d] > x->dims[d])
      return kiln_infer_fail(kind,
                             "indices (input 1) %s exceed input 0 %s in dim %u (%lld > %lld); "
                             "only dim %u (the axis) may differ",
                             KILN_INFER_TS(idx), KILN_INFER_TS(x), d, (long long)idx->dims[d],
                             (long long)x->dims[d], axis);
  return NULL;
}

kiln_status kiln_infer_GatherElements(const kiln_type *const *in, uint32_t n_in,
                                      const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "GatherElements";
  const kiln_type *x = in[0], *idx = in[1];
  KILN_TRY(kiln_infer_check_elem(k, "indices (input 1)", idx, KILN_INFER_IDX));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 1, true));
  if (idx->rank != x->rank)
    return kiln_infer_fail(k, "indices %s must have the rank of input 0 %s", KILN_INFER_TS(idx),
                           KILN_INFER_TS(x));
  uint32_t axis;
  KILN_TRY(kiln_infer_axis(k, "axis", kiln_attrs_int_or(attrs, "axis", 0), x->rank, false, &axis));
  KILN_TRY(within_data(k, idx, x, axis));
  return kiln_infer_make(k, x->elem, idx->rank, idx->dims, out);
}

kiln_status kiln_infer_GatherND(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "GatherND";
  const kiln_type *x = in[0], *idx = in[1];
  KILN_TRY(kiln_infer_check_elem(k, "indices (input 1)", idx, KILN_INFER_M(KILN_I64)));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 1, true));
  KILN_TRY(kiln_infer_check_rank(k, "indices (input 1)", idx, 1, true));
  int64_t b = kiln_attrs_int_or(attrs, "batch_dims", 0);
  if (b < 0 || b >= (int64_t)x->rank || b >= (int64_t)idx->rank)
    return kiln_infer_fail(k,
                           "attribute 'batch_dims' = %lld must be below the ranks of input 0 "
                           "%s and indices %s",
                           (long long)b, KILN_INFER_TS(x), KILN_INFER_TS(idx));
  for (int64_t i = 0; i < b; i++) {
    if (x->dims[i] != idx->dims[i])
      return kiln_infer_fail(k, "batch dim %lld differs: input 0 %s, indices %s", (long long)i,
                             KILN_INFER_TS(x), KILN_INFER_TS(idx));
  }
  int64_t last = idx->dims[idx->rank - 1];
  if (last < 1 || last > (int64_t)x->rank - b)
    return kiln_infer_fail(k, "the last dim of indices %s must be in [1, %lld] for input 0 %s",
                           KILN_INFER_TS(idx), (long long)(x->rank - b), KILN_INFER_TS(x));
  int64_t dims[KILN_MAX_RANK + KILN_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t i = 0; i + 1 < idx->rank; i++)
    dims[r++] = idx->dims[i];
  for (uint32_t i = (uint32_t)(b + last); i < x->rank; i++)
    dims[r++] = x->dims[i];
  return kiln_infer_make(k, x->elem, r, dims, out);
}

static kiln_status check_reduction(const char *kind, const kiln_attrs *attrs) {
  static const char *const red[] = {"none", "add", "mul", "max", "min", NULL};
  const char *v;
  return kiln_infer_enum(kind, attrs, "reduction", "none", red, &v);
}

kiln_status kiln_infer_ScatterND(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                 uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "ScatterND";
  const kiln_type *x = in[0], *idx = in[1], *upd = in[2];
  KILN_TRY(check_reduction(k, attrs));
  KILN_TRY(kiln_infer_check_elem(k, "indices (input 1)", idx, KILN_INFER_M(KILN_I64)));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "updates (input 2)", upd));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 1, true));
  KILN_TRY(kiln_infer_check_rank(k, "indices (input 1)", idx, 1, true));
  int64_t last = idx->dims[idx->rank - 1];
  if (last < 1 || last > (int64_t)x->rank)
    return kiln_infer_fail(k, "the last dim of indices %s must be in [1, %u] for input 0 %s",
                           KILN_INFER_TS(idx), x->rank, KILN_INFER_TS(x));
  /* updates = indices[:-1] + data[last:] */
  int64_t want[2 * KILN_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t i = 0; i + 1 < idx->rank; i++)
    want[r++] = idx->dims[i];
  for (uint32_t i = (uint32_t)last; i < x->rank; i++)
    want[r++] = x->dims[i];
  bool ok = r == upd->rank;
  for (uint32_t i = 0; ok && i < r; i++)
    ok = want[i] == upd->dims[i];
  if (!ok)
    return kiln_infer_fail(k, "updates %s must have shape %s for input 0 %s and indices %s",
                           KILN_INFER_TS(upd), KILN_INFER_DS(want, r), KILN_INFER_TS(x),
                           KILN_INFER_TS(idx));
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_ScatterElements(const kiln_type *const *in, uint32_t n_in,
                                       const kiln_attrs *attrs, uint32_t n_results,
                                       kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "ScatterElements";
  const kiln_type *x = in[0], *idx = in[1], *upd = in[2];
  KILN_TRY(check_reduction(k, attrs));
  KILN_TRY(kiln_infer_check_elem(k, "indices (input 1)", idx, KILN_INFER_IDX));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "updates (input 2)", upd));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 1, true));
  if (idx->rank != x->rank || upd->rank != x->rank)
    return kiln_infer_fail(k, "indices %s and updates %s must have the rank of input 0 %s",
                           KILN_INFER_TS(idx), KILN_INFER_TS(upd), KILN_INFER_TS(x));
  for (uint32_t i = 0; i < idx->rank; i++) {
    if (idx->dims[i] != upd->dims[i])
      return kiln_infer_fail(k, "indices %s and updates %s must have the same shape",
                             KILN_INFER_TS(idx), KILN_INFER_TS(upd));
  }
  uint32_t axis;
  KILN_TRY(kiln_infer_axis(k, "axis", kiln_attrs_int_or(attrs, "axis", 0), x->rank, false, &axis));
  KILN_TRY(within_data(k, idx, x, axis));
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_OneHot(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *idx = in[0], *vals = in[1];
  KILN_TRY(kiln_infer_check_elem("OneHot", "indices (input 0)", idx, KILN_INFER_NUM));
  if (vals->rank != 1 || vals->dims[0] != 2)
    return kiln_infer_fail("OneHot", "values (input 1) is %s; expected 2 entries [off, on]",
                           KILN_INFER_TS(vals));
  if (!kiln_attrs_find(attrs, "depth"))
    return kiln_infer_fail("OneHot", "attribute 'depth' is required");
  int64_t depth = kiln_attrs_int_or(attrs, "depth", 0);
  if (depth < 1)
    return kiln_infer_fail("OneHot", "attribute 'depth' = %lld must be positive", (long long)depth);
  uint32_t axis;
  KILN_TRY(kiln_infer_axis("OneHot", "axis", kiln_attrs_int_or(attrs, "axis", -1), idx->rank, true,
                           &axis));
  int64_t dims[KILN_MAX_RANK + 1];
  for (uint32_t i = 0, j = 0; i <= idx->rank; i++)
    dims[i] = i == axis ? depth : idx->dims[j++];
  return kiln_infer_make("OneHot", vals->elem, idx->rank + 1, dims, out);
}
