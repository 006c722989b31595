/* ir/infer/norm.c: inference of the normalizations: the softmax family
 * (Softmax, LogSoftmax, Hardmax), BatchNormalization,
 * InstanceNormalization, LayerNormalization, MeanVarianceNormalization, LRN,
 * RMSNormalization, LpNormalization and GroupNormalization. */
#include <string.h>

#include "infer.h"

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
  KILN_TRY(kiln_infer_mark_axes(k, "axes", axes, n, x->rank, mark));
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

kiln_status kiln_infer_RMSNormalization(const kiln_type *const *in, uint32_t n_in,
                                        const kiln_attrs *attrs, uint32_t n_results,
                                        kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "RMSNormalization";
  const kiln_type *x = in[0], *scale = in[1];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  uint32_t axis;
  KILN_TRY(kiln_infer_axis(k, "axis", kiln_attrs_int_or(attrs, "axis", -1), x->rank, false, &axis));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "scale (input 1)", scale));
  if (!kiln_infer_broadcasts_to(scale, x))
    return kiln_infer_fail(k, "scale (input 1) %s does not broadcast to input 0 %s",
                           KILN_INFER_TS(scale), KILN_INFER_TS(x));
  kiln_elem stash;
  KILN_TRY(kiln_infer_type_attr(k, attrs, "stash_type", KILN_F32, &stash, NULL));
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_LpNormalization(const kiln_type *const *in, uint32_t n_in,
                                       const kiln_attrs *attrs, uint32_t n_results,
                                       kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "LpNormalization";
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  uint32_t axis;
  KILN_TRY(kiln_infer_axis(k, "axis", kiln_attrs_int_or(attrs, "axis", -1), x->rank, false, &axis));
  int64_t p = kiln_attrs_int_or(attrs, "p", 2);
  if (p != 1 && p != 2)
    return kiln_infer_fail(k, "attribute 'p' = %lld must be 1 or 2", (long long)p);
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_GroupNormalization(const kiln_type *const *in, uint32_t n_in,
                                          const kiln_attrs *attrs, uint32_t n_results,
                                          kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "GroupNormalization";
  const kiln_type *x = in[0], *scale = in[1], *bias = in[2];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 2, true));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "scale (input 1)", scale));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "bias (input 2)", bias));
  int64_t c = x->dims[1];
  if (scale->rank != 1 || scale->dims[0] != c || bias->rank != 1 || bias->dims[0] != c)
    return kiln_infer_fail(k, "scale %s and bias %s must both be [%lld] (the channels of %s)",
                           KILN_INFER_TS(scale), KILN_INFER_TS(bias), (long long)c,
                           KILN_INFER_TS(x));
  if (!kiln_attrs_find(attrs, "num_groups"))
    return kiln_infer_fail(k, "attribute 'num_groups' is required");
  int64_t g = kiln_attrs_int_or(attrs, "num_groups", 0);
  if (g <= 0 || c % g != 0)
    return kiln_infer_fail(
        k, "attribute 'num_groups' = %lld must be positive and divide the %lld channels",
        (long long)g, (long long)c);
  kiln_elem stash;
  KILN_TRY(kiln_infer_type_attr(k, attrs, "stash_type", KILN_F32, &stash, NULL));
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}
