/* ir/infer/resize.c: inference of Resize and Upsample. */
#include <math.h>
#include <string.h>

#include "infer.h"

/* floor(in * scale), as an int64 result dim. */
static kiln_status scaled(const char *kind, int64_t in, double scale, int64_t *out) {
  double v = floor((double)in * scale);
  if (!(v >= 0) || v > 9.0e18)
    return kiln_status_make(KILN_OUT_OF_RANGE, "%s: dim %lld scaled by %g is out of range", kind,
                            (long long)in, scale);
  *out = (int64_t)v;
  return NULL;
}

static kiln_status resize_enums(const kiln_attrs *attrs, const char **ctm, const char **policy) {
  static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
  static const char *const ctms[] = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",   "align_corners",
      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn", NULL};
  static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
                                        NULL};
  static const char *const policies[] = {"stretch", "not_larger", "not_smaller", NULL};
  const char *v;
  KILN_TRY(kiln_infer_enum("Resize", attrs, "mode", "nearest", modes, &v));
  KILN_TRY(
      kiln_infer_enum("Resize", attrs, "coordinate_transformation_mode", "half_pixel", ctms, ctm));
  KILN_TRY(kiln_infer_enum("Resize", attrs, "nearest_mode", "round_prefer_floor", nearest, &v));
  return kiln_infer_enum("Resize", attrs, "keep_aspect_ratio_policy", "stretch", policies, policy);
}

/* A resized axis samples its input, so an empty input axis can only give
 * an empty result axis (there is nothing to read). */
static kiln_status resize_result(const char *kind, const kiln_type *x, const int64_t *dims,
                                 kiln_type *out) {
  for (uint32_t a = 0; a < x->rank; a++)
    if (x->dims[a] == 0 && dims[a] != 0)
      return kiln_infer_fail(kind, "cannot resize empty axis %u of input 0 %s to %lld", a,
                             KILN_INFER_TS(x), (long long)dims[a]);
  return kiln_infer_make(kind, x->elem, x->rank, dims, out);
}

kiln_status kiln_infer_Resize(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "Resize";
  const kiln_type *x = in[0];
  const char *ctm, *policy;
  KILN_TRY(resize_enums(attrs, &ctm, &policy));
  double scales[KILN_MAX_RANK], roi[2 * KILN_MAX_RANK];
  uint32_t n_scales, n_roi, n_sizes, n_axes;
  bool has_scales, has_roi, has_sizes, has_axes;
  const int64_t *sizes, *axes_attr;
  KILN_TRY(kiln_infer_floats(k, attrs, "scales", scales, KILN_MAX_RANK, &n_scales, &has_scales));
  KILN_TRY(kiln_infer_floats(k, attrs, "roi", roi, 2 * KILN_MAX_RANK, &n_roi, &has_roi));
  KILN_TRY(kiln_infer_ints(k, attrs, "sizes", &sizes, &n_sizes, &has_sizes));
  KILN_TRY(kiln_infer_ints(k, attrs, "axes", &axes_attr, &n_axes, &has_axes));
  /* An empty list counts as absent, as an empty ONNX input does. */
  has_scales = has_scales && n_scales > 0;
  has_sizes = has_sizes && n_sizes > 0;
  if (has_scales == has_sizes)
    return kiln_infer_fail(k, "exactly one of attributes 'scales' and 'sizes' must be set");
  uint32_t axes[KILN_MAX_RANK];
  bool seen[KILN_MAX_RANK] = {false};
  uint32_t n = has_axes ? n_axes : x->rank;
  for (uint32_t i = 0; i < n; i++) {
    axes[i] = i;
    if (has_axes)
      KILN_TRY(kiln_infer_axis(k, "axes", axes_attr[i], x->rank, false, &axes[i]));
    if (seen[axes[i]])
      return kiln_infer_fail(k, "attribute 'axes' names axis %u twice", axes[i]);
    seen[axes[i]] = true;
  }
  uint32_t given = has_scales ? n_scales : n_sizes;
  if (given != n)
    return kiln_infer_fail(k, "attribute '%s' has %u entries; expected %u for input 0 %s",
                           has_scales ? "scales" : "sizes", given, n, KILN_INFER_TS(x));
  bool crop = strcmp(ctm, "tf_crop_and_resize") == 0;
  if (crop && (!has_roi || n_roi != 2 * n))
    return kiln_infer_fail(k, "tf_crop_and_resize needs attribute 'roi' with %u entries", 2 * n);
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  if (has_scales) {
    for (uint32_t i = 0; i < n; i++) {
      if (!(scales[i] > 0))
        return kiln_infer_fail(k, "attribute 'scales' entry %u = %g must be positive", i,
                               scales[i]);
      double s = crop ? scales[i] * (roi[n + i] - roi[i]) : scales[i];
      KILN_TRY(scaled(k, x->dims[axes[i]], s, &dims[axes[i]]));
    }
    return resize_result(k, x, dims, out);
  }
  for (uint32_t i = 0; i < n; i++) {
    if (sizes[i] < 0)
      return kiln_infer_fail(k, "attribute 'sizes' %s has a negative entry",
                             KILN_INFER_DS(sizes, n));
  }
  if (strcmp(policy, "stretch") == 0) {
    for (uint32_t i = 0; i < n; i++)
      dims[axes[i]] = sizes[i];
  } else {
    /* One scale for all axes: the smallest or largest of sizes/in. */
    bool larger = strcmp(policy, "not_smaller") == 0;
    double s = larger ? 0 : INFINITY;
    for (uint32_t i = 0; i < n; i++) {
      double r = (double)sizes[i] / (double)x->dims[axes[i]];
      s = larger ? fmax(s, r) : fmin(s, r);
    }
    for (uint32_t i = 0; i < n; i++) {
      double v = round(s * (double)x->dims[axes[i]]);
      if (!(v >= 0) || v > 9.0e18)
        return kiln_infer_fail(k, "sizes %s give an invalid result for input 0 %s",
                               KILN_INFER_DS(sizes, n), KILN_INFER_TS(x));
      dims[axes[i]] = (int64_t)v;
    }
  }
  return resize_result(k, x, dims, out);
}

kiln_status kiln_infer_Upsample(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const modes[] = {"nearest", "linear", "bilinear", NULL};
  const kiln_type *x = in[0];
  const char *mode;
  KILN_TRY(kiln_infer_enum("Upsample", attrs, "mode", "nearest", modes, &mode));
  double scales[KILN_MAX_RANK];
  uint32_t n;
  bool present;
  KILN_TRY(kiln_infer_floats("Upsample", attrs, "scales", scales, KILN_MAX_RANK, &n, &present));
  if (!present)
    return kiln_infer_fail("Upsample", "attribute 'scales' is required");
  if (n != x->rank)
    return kiln_infer_fail("Upsample", "attribute 'scales' has %u entries but input 0 is %s", n,
                           KILN_INFER_TS(x));
  int64_t dims[KILN_MAX_RANK];
  for (uint32_t i = 0; i < n; i++) {
    if (!(scales[i] >= 1))
      return kiln_infer_fail("Upsample", "attribute 'scales' entry %u = %g must be >= 1", i,
                             scales[i]);
    KILN_TRY(scaled("Upsample", x->dims[i], scales[i], &dims[i]));
  }
  return kiln_infer_make("Upsample", x->elem, x->rank, dims, out);
}
