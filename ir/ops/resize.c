/* ir/ops/resize.c: Resize and Upsample semantics (kiln_resize_* in
 * kiln/ops.h): attribute decoding, the coordinate transforms, nearest
 * rounding and the linear / cubic taps, antialiasing included. The
 * interpreter, the Resize lowering and the cpu emitter all read their
 * taps from here, so they agree to the last bit. */
#include <math.h>
#include <string.h>

#include "kiln/ops.h"

static int resize_pick(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i]))
      return i;
  return -1;
}

/* A FLOATS attribute's entries (0 when absent or of another kind). */
static uint32_t resize_floats(const kiln_attrs *a, const char *name, const double **out) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  *out = at ? kiln_attr_floats(at) : NULL;
  return *out ? kiln_attr_len(at) : 0;
}

static uint32_t resize_ints(const kiln_attrs *a, const char *name, const int64_t **out) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  *out = at ? kiln_attr_ints(at) : NULL;
  return *out ? kiln_attr_len(at) : 0;
}

static kiln_status resize_fail(const char *kind, const char *what, const char *value) {
  return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: unknown %s '%s'", kind, what, value);
}

static kiln_status resize_start(const char *kind, const kiln_type *x, const kiln_type *y,
                                kiln_resize *r) {
  memset(r, 0, sizeof *r);
  if (!x || !y || x->rank != y->rank) /* rank 0 is a copy of the one element */
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: the result's rank differs from the input's",
                            kind);
  r->rank = x->rank;
  for (uint32_t d = 0; d < r->rank; d++) {
    r->in[d] = x->dims[d], r->out[d] = y->dims[d];
    r->scale[d] = 1, r->roi_lo[d] = 0, r->roi_hi[d] = 1;
  }
  return NULL;
}

static kiln_status upsample_decode(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                                   kiln_resize *r) {
  KILN_TRY(resize_start("Upsample", x, y, r));
  const char *mode = kiln_attrs_string_or(a, "mode", "nearest");
  if (!strcmp(mode, "nearest"))
    r->mode = KILN_RESIZE_NEAREST;
  else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear"))
    r->mode = KILN_RESIZE_LINEAR;
  else
    return resize_fail("Upsample", "mode", mode);
  r->coord = KILN_RESIZE_ASYMMETRIC;
  r->nearest = KILN_RESIZE_FLOOR;
  const double *sc;
  uint32_t nsc = resize_floats(a, "scales", &sc);
  if (nsc != r->rank)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "Upsample: scales has %u entries, rank is %u",
                            nsc, r->rank);
  for (uint32_t d = 0; d < nsc; d++) {
    if (!(sc[d] > 0))
      return kiln_status_make(KILN_INVALID_ARGUMENT, "Upsample: scale %u is not positive", d);
    r->scale[d] = sc[d];
  }
  return NULL;
}

kiln_status kiln_resize_decode(kiln_node_kind kind, const kiln_attrs *a, const kiln_type *x,
                               const kiln_type *y, kiln_resize *r) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const coords[] = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
  static const char *const rounds[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (kind == KILN_NODE_Upsample)
    return upsample_decode(a, x, y, r);
  if (kind != KILN_NODE_Resize)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_resize_decode: %s is not Resize",
                            kiln_node_kind_name(kind));
  KILN_TRY(resize_start("Resize", x, y, r));
  const char *s = kiln_attrs_string_or(a, "mode", "nearest");
  int v;
  if ((v = resize_pick(s, modes, 3)) < 0)
    return resize_fail("Resize", "mode", s);
  r->mode = (kiln_resize_mode)v;
  s = kiln_attrs_string_or(a, "coordinate_transformation_mode", "half_pixel");
  if ((v = resize_pick(s, coords, 7)) < 0)
    return resize_fail("Resize", "coordinate_transformation_mode", s);
  r->coord = (kiln_resize_coord)v;
  s = kiln_attrs_string_or(a, "nearest_mode", "round_prefer_floor");
  if ((v = resize_pick(s, rounds, 4)) < 0)
    return resize_fail("Resize", "nearest_mode", s);
  r->nearest = (kiln_resize_round)v;
  r->antialias = kiln_attrs_int_or(a, "antialias", 0) != 0 && r->mode != KILN_RESIZE_NEAREST;
  r->cubic_a = kiln_attrs_float_or(a, "cubic_coeff_a", -0.75);
  r->exclude_outside = kiln_attrs_int_or(a, "exclude_outside", 0) != 0;
  r->extrapolation = kiln_attrs_float_or(a, "extrapolation_value", 0.0);

  uint32_t rank = r->rank, axes[KILN_MAX_RANK];
  const int64_t *av, *sizes;
  uint32_t na = resize_ints(a, "axes", &av), nax = na ? na : rank;
  if (nax > rank)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "Resize: %u axes for rank %u", nax, rank);
  for (uint32_t j = 0; j < nax; j++) {
    int64_t ax = na ? av[j] : (int64_t)j;
    if (ax < -(int64_t)rank || ax >= (int64_t)rank)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "Resize: axis %lld is out of range for rank %u",
                              (long long)ax, rank);
    axes[j] = (uint32_t)(ax < 0 ? ax + rank : ax);
  }
  const double *sc, *roi;
  uint32_t nsc = resize_floats(a, "scales", &sc), nsz = resize_ints(a, "sizes", &sizes);
  uint32_t nroi = resize_floats(a, "roi", &roi);
  if (nsc) {
    if (nsc != nax)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "Resize: scales has %u entries, expected %u",
                              nsc, nax);
    for (uint32_t j = 0; j < nax; j++)
      r->scale[axes[j]] = sc[j];
  } else {
    s = kiln_attrs_string_or(a, "keep_aspect_ratio_policy", "stretch");
    bool nl = !strcmp(s, "not_larger"), ns = !strcmp(s, "not_smaller");
    if (!nl && !ns && strcmp(s, "stretch"))
      return resize_fail("Resize", "keep_aspect_ratio_policy", s);
    if (nsz && nsz != nax)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "Resize: sizes has %u entries, expected %u",
                              nsz, nax);
    double common = nl ? INFINITY : 0;
    for (uint32_t j = 0; j < nax; j++) {
      uint32_t d = axes[j];
      double want = nsz ? (double)sizes[j] : (double)r->out[d];
      r->scale[d] = r->in[d] ? want / (double)r->in[d] : 1;
      common = nl ? fmin(common, r->scale[d]) : fmax(common, r->scale[d]);
    }
    if (nl || ns)
      for (uint32_t j = 0; j < nax; j++)
        r->scale[axes[j]] = common;
  }
  if (r->coord == KILN_RESIZE_TF_CROP_AND_RESIZE) {
    if (nroi != 2 * nax)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "Resize: tf_crop_and_resize needs roi with %u entries, got %u",
                              2 * nax, nroi);
    for (uint32_t j = 0; j < nax; j++)
      r->roi_lo[axes[j]] = roi[j], r->roi_hi[axes[j]] = roi[nax + j];
  }
  for (uint32_t d = 0; d < rank; d++)
    if (!(r->scale[d] > 0))
      return kiln_status_make(KILN_INVALID_ARGUMENT, "Resize: scale of axis %u is not positive", d);
  return NULL;
}

bool kiln_resize_source(const kiln_resize *r, uint32_t d, int64_t o, double *res) {
  double s = r->scale[d], x = (double)o, ow = s * (double)r->in[d], xo;
  int64_t in = r->in[d], out = r->out[d];
  switch (r->coord) {
  case KILN_RESIZE_HALF_PIXEL:
    xo = (x + 0.5) / s - 0.5;
    break;
  case KILN_RESIZE_HALF_PIXEL_SYMMETRIC: {
    double adj = (double)out / ow, center = (double)in / 2;
    xo = center * (1 - adj) + (x + 0.5) / s - 0.5;
    break;
  }
  case KILN_RESIZE_PYTORCH_HALF_PIXEL:
    xo = out > 1 ? (x + 0.5) / s - 0.5 : 0;
    break;
  case KILN_RESIZE_ALIGN_CORNERS:
    xo = ow == 1 ? 0 : x * (double)(in - 1) / (ow - 1);
    break;
  case KILN_RESIZE_ASYMMETRIC:
    xo = x / s;
    break;
  case KILN_RESIZE_TF_HALF_PIXEL_FOR_NN:
    xo = (x + 0.5) / s;
    break;
  default: {
    double lo = r->roi_lo[d], hi = r->roi_hi[d];
    xo = out > 1 ? lo * (double)(in - 1) + x * (hi - lo) * (double)(in - 1) / (double)(out - 1)
                 : 0.5 * (lo + hi) * (double)(in - 1);
    *res = xo;
    return xo >= 0 && xo <= (double)(in - 1);
  }
  }
  *res = xo;
  return true;
}

static int64_t resize_clamp(int64_t v, int64_t in) {
  return v < 0 ? 0 : (v >= in ? in - 1 : v);
}

double kiln_resize_cubic(double A, double d) {
  d = fabs(d);
  if (d <= 1)
    return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2)
    return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

static bool resize_antialiased(const kiln_resize *r, uint32_t d) {
  return r->antialias && r->scale[d] < 1;
}

int kiln_resize_tap_count(const kiln_resize *r, uint32_t d) {
  if (r->mode == KILN_RESIZE_NEAREST)
    return 1;
  if (resize_antialiased(r, d)) {
    double support = r->mode == KILN_RESIZE_LINEAR ? 1 : 2;
    if (support / r->scale[d] > KILN_RESIZE_MAX_TAPS) /* before the cast can overflow */
      return -1;
    int64_t start = (int64_t)floor(-support / r->scale[d]) + 1, n = 2 - 2 * start;
    return n > KILN_RESIZE_MAX_TAPS ? -1 : (int)n;
  }
  return r->mode == KILN_RESIZE_LINEAR ? 2 : 4;
}

/* Antialiased downsampling: the filter is stretched by 1/scale, so the
 * taps are every input cell within 1/scale (linear) or 2/scale (cubic) of
 * xo, weighted by the kernel at (j - xo) * scale and normalized to sum 1.
 * ONNX takes xo's cell as the left neighbour only when xo is not whole. */
static void resize_taps_antialias(const kiln_resize *r, uint32_t d, double xo, int n,
                                  int64_t *idx, double *w) {
  double scale = r->scale[d], support = r->mode == KILN_RESIZE_LINEAR ? 1 : 2, fl = floor(xo);
  int64_t in = r->in[d], left = (int64_t)fl - (xo == fl ? 1 : 0);
  int64_t start = (int64_t)floor(-support / scale) + 1;
  double sum = 0;
  for (int i = 0; i < n; i++) {
    int64_t j = left + start + i;
    double dist = ((double)j - xo) * scale;
    double c = r->mode == KILN_RESIZE_LINEAR ? fmax(0, 1 - fabs(dist))
                                             : kiln_resize_cubic(r->cubic_a, dist);
    if (r->exclude_outside && (j < 0 || j >= in))
      c = 0;
    idx[i] = resize_clamp(j, in), w[i] = c, sum += c;
  }
  if (sum != 0)
    for (int i = 0; i < n; i++)
      w[i] /= sum;
}

void kiln_resize_taps(const kiln_resize *r, uint32_t d, double xo, int64_t *idx, double *w) {
  double fl = floor(xo), t = xo - fl;
  int64_t f = (int64_t)fl, in = r->in[d];
  if (r->mode == KILN_RESIZE_NEAREST) {
    int64_t k;
    if (t == 0 || r->nearest == KILN_RESIZE_FLOOR)
      k = f;
    else if (r->nearest == KILN_RESIZE_CEIL)
      k = f + 1;
    else if (t == 0.5)
      k = r->nearest == KILN_RESIZE_ROUND_PREFER_FLOOR ? f : f + 1;
    else
      k = t < 0.5 ? f : f + 1;
    idx[0] = resize_clamp(k, in), w[0] = 1;
    return;
  }
  if (resize_antialiased(r, d)) {
    int n = kiln_resize_tap_count(r, d);
    if (n > 0)
      resize_taps_antialias(r, d, xo, n, idx, w);
    return;
  }
  if (r->mode == KILN_RESIZE_LINEAR) {
    idx[0] = resize_clamp(f, in), w[0] = 1 - t;
    idx[1] = resize_clamp(f + 1, in), w[1] = t;
    return;
  }
  /* Keys' kernel at distances t + 1, t, 1 - t, 2 - t, written out so that
   * each distance is computed exactly as the ONNX reference does. */
  double A = r->cubic_a, u = t + 1, v = 1 - t, z = 2 - t, sum = 0;
  w[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
  w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  w[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
  w[3] = ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
  for (int j = 0; j < 4; j++) {
    int64_t p = f - 1 + j;
    if (r->exclude_outside && (p < 0 || p >= in))
      w[j] = 0;
    sum += w[j];
    idx[j] = resize_clamp(p, in);
  }
  if (r->exclude_outside && sum != 0)
    for (int j = 0; j < 4; j++)
      w[j] /= sum;
}
