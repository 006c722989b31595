/* ir/infer/later.c: inference of the kinds appended to node_kinds.def after
 * the first set: RMSNormalization, the Bitwise family, Mish, Swish,
 * LpNormalization, the window generators, Det, GroupNormalization,
 * CenterCropPad, MaxUnpool and Col2Im (LpPool is in conv.c with
 * the other pools). */
#include <string.h>

#include "infer.h"

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

static kiln_status bitwise(const char *kind, const kiln_type *const *in, kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", in[0], KILN_INFER_INT));
  KILN_TRY(kiln_infer_same_elem(kind, "input 0", in[0], "input 1", in[1]));
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_broadcast(kind, in, 2, dims, &rank));
  return kiln_infer_make(kind, in[0]->elem, rank, dims, out);
}

#define BITWISE(name)                                                                              \
  kiln_status kiln_infer_##name(const kiln_type *const *in, uint32_t n_in,                         \
                                const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {     \
    (void)n_in, (void)attrs, (void)n_results;                                                      \
    return bitwise(#name, in, out);                                                                \
  }
BITWISE(BitwiseAnd)
BITWISE(BitwiseOr)
BITWISE(BitwiseXor)

static kiln_status same_as_input(const char *kind, const kiln_type *x, uint32_t mask,
                                 kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, mask));
  return kiln_infer_make(kind, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_BitwiseNot(const kiln_type *const *in, uint32_t n_in,
                                  const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return same_as_input("BitwiseNot", in[0], KILN_INFER_INT, out);
}

kiln_status kiln_infer_Mish(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return same_as_input("Mish", in[0], KILN_INFER_FLOAT, out);
}

kiln_status kiln_infer_Swish(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return same_as_input("Swish", in[0], KILN_INFER_FLOAT, out);
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

kiln_status kiln_infer_Det(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                           uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem("Det", "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank("Det", "input 0", x, 2, true));
  if (x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return kiln_infer_fail("Det", "input 0 %s is not a stack of square matrices", KILN_INFER_TS(x));
  return kiln_infer_make("Det", x->elem, x->rank - 2, x->dims, out);
}

/* ---- GroupNormalization, CenterCropPad, MaxUnpool, Col2Im (NEWOPS) ---- */

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

kiln_status kiln_infer_CenterCropPad(const kiln_type *const *in, uint32_t n_in,
                                     const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "CenterCropPad";
  const kiln_type *x = in[0];
  const int64_t *shape, *axes;
  uint32_t ns, na;
  bool has_shape, has_axes;
  KILN_TRY(kiln_infer_ints(k, attrs, "shape", &shape, &ns, &has_shape));
  KILN_TRY(kiln_infer_ints(k, attrs, "axes", &axes, &na, &has_axes));
  if (!has_shape)
    return kiln_infer_fail(k, "attribute 'shape' is required");
  uint32_t want = has_axes ? na : x->rank;
  if (ns != want)
    return kiln_infer_fail(k, "attribute 'shape' has %u entries, expected %u (one per %s)", ns,
                           want, has_axes ? "axis" : "dimension");
  int64_t dims[KILN_MAX_RANK];
  bool seen[KILN_MAX_RANK] = {0};
  memcpy(dims, x->dims, sizeof(int64_t) * x->rank);
  for (uint32_t i = 0; i < ns; i++) {
    uint32_t a = i;
    if (has_axes)
      KILN_TRY(kiln_infer_axis(k, "axes", axes[i], x->rank, false, &a));
    if (seen[a])
      return kiln_infer_fail(k, "attribute 'axes' repeats axis %u", a);
    seen[a] = true;
    if (shape[i] < 0)
      return kiln_infer_fail(k, "attribute 'shape' entry %u = %lld is negative", i,
                             (long long)shape[i]);
    dims[a] = shape[i];
  }
  return kiln_infer_make(k, x->elem, x->rank, dims, out);
}

/* Window attributes of n spatial dims: kernel_shape (required), strides
 * (default 1), pads (default 0, begins then ends). */
static kiln_status later_window_attrs(const char *k, const kiln_attrs *attrs, uint32_t n,
                                      const char *kernel_name, int64_t *kern, int64_t *strides,
                                      int64_t *pads, int64_t *dil) {
  const int64_t *p;
  uint32_t len;
  bool present;
  KILN_TRY(kiln_infer_ints(k, attrs, kernel_name, &p, &len, &present));
  if (!present || len != n)
    return kiln_infer_fail(k, "attribute '%s' must have %u entries", kernel_name, n);
  for (uint32_t i = 0; i < n; i++) {
    if (p[i] <= 0)
      return kiln_infer_fail(k, "attribute '%s' entry %u = %lld must be positive", kernel_name, i,
                             (long long)p[i]);
    kern[i] = p[i];
    strides[i] = 1;
    pads[i] = pads[n + i] = 0;
    if (dil)
      dil[i] = 1;
  }
  struct {
    const char *name;
    int64_t *dst;
    uint32_t len;
    bool positive;
  } opt[3] = {
      {"strides", strides, n, true}, {"pads", pads, 2 * n, false}, {"dilations", dil, n, true}};
  for (int j = 0; j < (dil ? 3 : 2); j++) {
    KILN_TRY(kiln_infer_ints(k, attrs, opt[j].name, &p, &len, &present));
    if (!present)
      continue;
    if (len != opt[j].len)
      return kiln_infer_fail(k, "attribute '%s' has %u entries, expected %u", opt[j].name, len,
                             opt[j].len);
    for (uint32_t i = 0; i < len; i++) {
      if (opt[j].positive ? p[i] <= 0 : p[i] < 0)
        return kiln_infer_fail(k, "attribute '%s' entry %u = %lld is out of range", opt[j].name, i,
                               (long long)p[i]);
      opt[j].dst[i] = p[i];
    }
  }
  return NULL;
}

kiln_status kiln_infer_MaxUnpool(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                 uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "MaxUnpool";
  const kiln_type *x = in[0], *idx = in[1];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 3, true));
  KILN_TRY(kiln_infer_check_elem(k, "indices (input 1)", idx, KILN_INFER_M(KILN_I64)));
  bool same = x->rank == idx->rank;
  for (uint32_t i = 0; same && i < x->rank; i++)
    same = x->dims[i] == idx->dims[i];
  if (!same)
    return kiln_infer_fail(k, "indices (input 1) %s must have the shape of input 0 %s",
                           KILN_INFER_TS(idx), KILN_INFER_TS(x));
  uint32_t n = x->rank - 2;
  int64_t kern[KILN_MAX_RANK], strides[KILN_MAX_RANK], pads[2 * KILN_MAX_RANK];
  KILN_TRY(later_window_attrs(k, attrs, n, "kernel_shape", kern, strides, pads, NULL));
  int64_t dims[KILN_MAX_RANK] = {x->dims[0], x->dims[1]};
  for (uint32_t i = 0; i < n; i++)
    dims[2 + i] = (x->dims[2 + i] - 1) * strides[i] + kern[i] - pads[i] - pads[n + i];
  const int64_t *os;
  uint32_t nos;
  bool has_os;
  KILN_TRY(kiln_infer_ints(k, attrs, "output_shape", &os, &nos, &has_os));
  if (has_os) {
    if (nos != x->rank)
      return kiln_infer_fail(k, "attribute 'output_shape' has %u entries, expected %u", nos,
                             x->rank);
    for (uint32_t i = 0; i < nos; i++) {
      if (i < 2 ? os[i] != x->dims[i] : os[i] < dims[i])
        return kiln_infer_fail(
            k, "attribute 'output_shape' %s does not fit input 0 %s (at least %s)",
            KILN_INFER_DS(os, nos), KILN_INFER_TS(x), KILN_INFER_DS(dims, x->rank));
      dims[i] = os[i];
    }
  }
  for (uint32_t i = 0; i < x->rank; i++)
    if (dims[i] <= 0)
      return kiln_infer_fail(k, "the result %s would be empty", KILN_INFER_DS(dims, x->rank));
  return kiln_infer_make(k, x->elem, x->rank, dims, out);
}

kiln_status kiln_infer_Col2Im(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "Col2Im";
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_NUM));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 3, false));
  const int64_t *img;
  uint32_t n;
  bool present;
  KILN_TRY(kiln_infer_ints(k, attrs, "image_shape", &img, &n, &present));
  if (!present || n == 0 || n + 2 > KILN_MAX_RANK)
    return kiln_infer_fail(k, "attribute 'image_shape' is required (1 to %d entries)",
                           KILN_MAX_RANK - 2);
  int64_t blk[KILN_MAX_RANK], strides[KILN_MAX_RANK], pads[2 * KILN_MAX_RANK], dil[KILN_MAX_RANK];
  KILN_TRY(later_window_attrs(k, attrs, n, "block_shape", blk, strides, pads, dil));
  int64_t kprod = 1, blocks = 1;
  for (uint32_t i = 0; i < n; i++) {
    kprod *= blk[i];
    int64_t span = img[i] + pads[i] + pads[n + i] - dil[i] * (blk[i] - 1) - 1;
    if (img[i] <= 0 || span < 0)
      return kiln_infer_fail(k, "image dimension %u = %lld is smaller than its dilated block", i,
                             (long long)img[i]);
    blocks *= span / strides[i] + 1;
  }
  if (x->dims[1] % kprod != 0 || x->dims[2] != blocks)
    return kiln_infer_fail(k,
                           "input 0 %s must be [N, C*%lld, %lld] for these block and image shapes",
                           KILN_INFER_TS(x), (long long)kprod, (long long)blocks);
  int64_t dims[KILN_MAX_RANK] = {x->dims[0], x->dims[1] / kprod};
  memcpy(dims + 2, img, sizeof(int64_t) * n);
  return kiln_infer_make(k, x->elem, n + 2, dims, out);
}
