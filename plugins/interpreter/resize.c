/* plugins/interpreter/resize.c: Resize (nearest, n-D linear, cubic;
 * every coordinate_transformation_mode) and Upsample. Interpolation is
 * separable: each axis contributes up to four (index, weight) taps and a
 * result cell is the weighted sum over their product, which is what the
 * ONNX reference's axis-by-axis recursion computes. */
#include "kernel.h"

#include <math.h>
#include <string.h>

enum { MV_NEAREST, MV_LINEAR, MV_CUBIC };
enum { MV_HALF, MV_HALF_SYM, MV_PYTORCH, MV_ALIGN, MV_ASYM, MV_TFCROP, MV_TFNN };
/* Most taps one axis may have: antialiasing widens the filter by 1/scale. */
enum { MV_MAX_TAPS = 64 };
enum { MV_R_PFLOOR, MV_R_PCEIL, MV_R_FLOOR, MV_R_CEIL };

typedef struct mv_rs {
  int mode, ctm, nearest;
  double a; /* cubic_coeff_a */
  bool exclude_outside, antialias;
  double extrapolation;
  double scale[KILN_MAX_RANK], roi_lo[KILN_MAX_RANK], roi_hi[KILN_MAX_RANK];
} mv_rs;

/* The input coordinate of result index x on one axis; false when it falls
 * outside the input for tf_crop_and_resize (extrapolation). The modes that
 * divide by the result length use in * scale, not the floored result dim
 * (ONNX's length_resized): downsampling 4 by 0.6 stretches over 2.4 cells,
 * not 2. */
static bool mv_src_coord(const mv_rs *r, uint32_t ax, int64_t x, int64_t in, int64_t out,
                         double *res) {
  double s = r->scale[ax], xo, ow = s * (double)in;
  switch (r->ctm) {
  case MV_HALF:
    xo = ((double)x + 0.5) / s - 0.5;
    break;
  case MV_HALF_SYM: {
    double adj = (double)out / ow, center = (double)in / 2;
    xo = center * (1 - adj) + ((double)x + 0.5) / s - 0.5;
    break;
  }
  case MV_PYTORCH:
    xo = out > 1 ? ((double)x + 0.5) / s - 0.5 : 0;
    break;
  case MV_ALIGN:
    xo = ow == 1 ? 0 : (double)x * (double)(in - 1) / (ow - 1);
    break;
  case MV_ASYM:
    xo = (double)x / s;
    break;
  case MV_TFNN:
    xo = ((double)x + 0.5) / s;
    break;
  default: {
    double lo = r->roi_lo[ax], hi = r->roi_hi[ax];
    xo = out > 1
             ? lo * (double)(in - 1) + (double)x * (hi - lo) * (double)(in - 1) / (double)(out - 1)
             : 0.5 * (lo + hi) * (double)(in - 1);
    if (xo < 0 || xo > (double)(in - 1))
      return false;
  }
  }
  *res = xo;
  return true;
}

static int64_t mv_clamp(int64_t v, int64_t in) {
  return v < 0 ? 0 : (v >= in ? in - 1 : v);
}

/* The cubic convolution kernel of Keys with parameter A, at distance d. */
static double mv_cubic(double A, double d) {
  d = fabs(d);
  if (d <= 1)
    return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2)
    return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

/* Antialiased downsampling (scale < 1): the filter is stretched by 1/scale,
 * so the taps are every input cell j within 1/scale (linear) or 2/scale
 * (cubic) of xo, weighted by the kernel at (j - xo) * scale and normalized
 * to sum 1. Cells past the edges repeat the edge cell, unless
 * exclude_outside drops them. The count is -1 when it exceeds MV_MAX_TAPS. */
static int mv_taps_antialias(const mv_rs *r, double xo, double scale, int64_t in, int64_t *idx,
                             double *w) {
  double support = r->mode == MV_LINEAR ? 1 : 2;
  double fl = floor(xo);
  /* ONNX takes xo's cell as the left neighbour only when xo is not whole */
  int64_t left = (int64_t)fl - (xo == fl ? 1 : 0);
  int64_t start = (int64_t)floor(-support / scale) + 1, n = 2 - 2 * start;
  if (n > MV_MAX_TAPS)
    return -1;
  double sum = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t j = left + start + i;
    double d = ((double)j - xo) * scale, c;
    if (r->mode == MV_LINEAR)
      c = fmax(0, 1 - fabs(d));
    else
      c = mv_cubic(r->a, d);
    if (r->exclude_outside && (j < 0 || j >= in))
      c = 0;
    idx[i] = mv_clamp(j, in);
    w[i] = c;
    sum += c;
  }
  if (sum != 0)
    for (int64_t i = 0; i < n; i++)
      w[i] /= sum;
  return (int)n;
}

/* Taps of one axis: returns their count (-1: too many). */
static int mv_taps(const mv_rs *r, double xo, double scale, int64_t in, int64_t *idx, double *w) {
  double fl = floor(xo), t = xo - fl;
  int64_t f = (int64_t)fl;
  if (r->mode == MV_NEAREST) {
    int64_t n;
    if (t == 0)
      n = f;
    else if (r->nearest == MV_R_FLOOR)
      n = f;
    else if (r->nearest == MV_R_CEIL)
      n = f + 1;
    else if (t == 0.5)
      n = r->nearest == MV_R_PFLOOR ? f : f + 1;
    else
      n = t < 0.5 ? f : f + 1;
    idx[0] = mv_clamp(n, in);
    w[0] = 1;
    return 1;
  }
  if (r->antialias && scale < 1)
    return mv_taps_antialias(r, xo, scale, in, idx, w);
  if (r->mode == MV_LINEAR) {
    idx[0] = mv_clamp(f, in), w[0] = 1 - t;
    idx[1] = mv_clamp(f + 1, in), w[1] = t;
    return 2;
  }
  double A = r->a, c[4], u = t + 1, v = 1 - t, z = 2 - t;
  c[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  c[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
  c[3] = ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
  double sum = 0;
  for (int j = 0; j < 4; j++) {
    int64_t p = f - 1 + j;
    if (r->exclude_outside && (p < 0 || p >= in))
      c[j] = 0;
    sum += c[j];
    idx[j] = mv_clamp(p, in);
    w[j] = c[j];
  }
  if (r->exclude_outside && sum != 0)
    for (int j = 0; j < 4; j++)
      w[j] /= sum;
  return 4;
}

static kiln_status mv_resize_run(const char *name, const mv_rs *r, interp_tensor *y,
                                 const interp_tensor *x) {
  const kiln_type *it = &x->type, *ot = &y->type;
  uint32_t rank = it->rank;
  if (ot->rank != rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, name, "result rank differs from input's");
  int64_t ist[KILN_MAX_RANK], oc[KILN_MAX_RANK], n = interp_mv_numel(y);
  interp_mv_strides(it->dims, rank, ist);
  if (n > 0 && interp_mv_numel(x) == 0)
    return interp_mv_err(KILN_INVALID_ARGUMENT, name, "empty input, non-empty result");
  bool isf = interp_mv_class(it->elem) == INTERP_MV_F;
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(ot->dims, rank, o, oc);
    int64_t idx[KILN_MAX_RANK][MV_MAX_TAPS];
    double w[KILN_MAX_RANK][MV_MAX_TAPS];
    int nt[KILN_MAX_RANK];
    bool extrapolate = false;
    for (uint32_t d = 0; d < rank && !extrapolate; d++) {
      double xo;
      if (ot->dims[d] == it->dims[d] && r->scale[d] == 1.0 && r->ctm != MV_TFCROP) {
        idx[d][0] = oc[d], w[d][0] = 1, nt[d] = 1;
        continue;
      }
      if (!mv_src_coord(r, d, oc[d], it->dims[d], ot->dims[d], &xo)) {
        extrapolate = true;
        break;
      }
      nt[d] = mv_taps(r, xo, r->scale[d], it->dims[d], idx[d], w[d]);
      if (nt[d] < 0)
        return interp_mv_err(KILN_UNIMPLEMENTED, name,
                             "antialiasing at scale %g on axis %u needs more than %d taps",
                             r->scale[d], d, (int)MV_MAX_TAPS);
    }
    if (extrapolate) {
      interp_mv_store_double(y, o, r->extrapolation);
      continue;
    }
    if (r->mode == MV_NEAREST) {
      int64_t src = 0;
      for (uint32_t d = 0; d < rank; d++)
        src += idx[d][0] * ist[d];
      interp_copy_elem(y, o, x, src);
      continue;
    }
    /* sum over the product of taps, odometer-style */
    int tc[KILN_MAX_RANK] = {0};
    double acc = 0;
    for (;;) {
      double wt = 1;
      int64_t src = 0;
      for (uint32_t d = 0; d < rank; d++) {
        wt *= w[d][tc[d]];
        src += idx[d][tc[d]] * ist[d];
      }
      if (wt != 0)
        acc += wt * (isf ? interp_load_f(x, src) : (double)interp_mv_load_int(x, src));
      uint32_t d = rank;
      while (d-- > 0) {
        if (++tc[d] < nt[d])
          break;
        tc[d] = 0;
      }
      if (d == UINT32_MAX)
        break;
    }
    if (isf)
      interp_store_f(y, o, acc);
    else
      interp_mv_store_double(y, o, nearbyint(acc));
  }
  return NULL;
}

static int mv_pick(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i]))
      return i;
  return -1;
}

kiln_status interp_Resize(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const ctms[] = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  mv_rs r;
  memset(&r, 0, sizeof r);
  const char *s;
  s = kiln_attrs_string_or(attrs, "mode", "nearest");
  if ((r.mode = mv_pick(s, modes, 3)) < 0)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Resize", "unknown mode '%s'", s);
  s = kiln_attrs_string_or(attrs, "coordinate_transformation_mode", "half_pixel");
  if ((r.ctm = mv_pick(s, ctms, 7)) < 0)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Resize",
                         "unknown coordinate_transformation_mode '%s'", s);
  s = kiln_attrs_string_or(attrs, "nearest_mode", "round_prefer_floor");
  if ((r.nearest = mv_pick(s, nms, 4)) < 0)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Resize", "unknown nearest_mode '%s'", s);
  /* antialias only changes the linear and cubic filters; nearest ignores it */
  r.antialias = kiln_attrs_int_or(attrs, "antialias", 0) != 0 && r.mode != MV_NEAREST;
  r.a = kiln_attrs_float_or(attrs, "cubic_coeff_a", -0.75);
  r.exclude_outside = kiln_attrs_int_or(attrs, "exclude_outside", 0) != 0;
  r.extrapolation = kiln_attrs_float_or(attrs, "extrapolation_value", 0.0);

  const kiln_type *it = &ins[0].type, *ot = &outs[0].type;
  uint32_t rank = it->rank;
  const int64_t *axes_v;
  uint32_t na = interp_mv_ints(attrs, "axes", &axes_v);
  uint32_t axes[KILN_MAX_RANK], nax = na ? na : rank;
  if (nax > rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Resize", "more axes than rank");
  for (uint32_t j = 0; j < nax; j++)
    KILN_TRY_CTX(interp_axis(na ? axes_v[j] : (int64_t)j, rank, &axes[j]), "interpreter Resize");
  for (uint32_t d = 0; d < rank; d++)
    r.scale[d] = 1, r.roi_lo[d] = 0, r.roi_hi[d] = 1;
  const double *sc, *roi;
  const int64_t *sizes;
  uint32_t nsc = interp_mv_floats(attrs, "scales", &sc);
  uint32_t nsz = interp_mv_ints(attrs, "sizes", &sizes);
  uint32_t nroi = interp_mv_floats(attrs, "roi", &roi);
  if (nsc) {
    if (nsc != nax)
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Resize", "scales has %u entries, expected %u",
                           nsc, nax);
    for (uint32_t j = 0; j < nax; j++)
      r.scale[axes[j]] = sc[j];
  } else {
    /* sizes given (or only the result type): the scale is out/in, except
     * that keep_aspect_ratio_policy uses one scale for all listed axes */
    const char *pol = kiln_attrs_string_or(attrs, "keep_aspect_ratio_policy", "stretch");
    bool nl = !strcmp(pol, "not_larger"), ns = !strcmp(pol, "not_smaller");
    if (!nl && !ns && strcmp(pol, "stretch"))
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Resize", "unknown keep_aspect_ratio_policy '%s'",
                           pol);
    if (nsz && nsz != nax)
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Resize", "sizes has %u entries, expected %u",
                           nsz, nax);
    double common = nl ? INFINITY : 0;
    for (uint32_t j = 0; j < nax; j++) {
      uint32_t d = axes[j];
      double want = nsz ? (double)sizes[j] : (double)ot->dims[d];
      double s2 = it->dims[d] ? want / (double)it->dims[d] : 1;
      r.scale[d] = s2;
      common = nl ? fmin(common, s2) : fmax(common, s2);
    }
    if (nl || ns)
      for (uint32_t j = 0; j < nax; j++)
        r.scale[axes[j]] = common;
  }
  if (r.ctm == MV_TFCROP) {
    if (nroi != 2 * nax)
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Resize",
                           "tf_crop_and_resize needs roi with %u entries, got %u", 2 * nax, nroi);
    for (uint32_t j = 0; j < nax; j++)
      r.roi_lo[axes[j]] = roi[j], r.roi_hi[axes[j]] = roi[nax + j];
  }
  for (uint32_t d = 0; d < rank; d++)
    if (!(r.scale[d] > 0))
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Resize", "scale of axis %u is not positive", d);
  return mv_resize_run("Resize", &r, &outs[0], &ins[0]);
}

/* Upsample (deprecated) = Resize with asymmetric coordinates; nearest takes
 * the floor, so integer scales repeat each element. */
kiln_status interp_Upsample(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                            const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  mv_rs r;
  memset(&r, 0, sizeof r);
  const char *mode = kiln_attrs_string_or(attrs, "mode", "nearest");
  if (!strcmp(mode, "nearest"))
    r.mode = MV_NEAREST;
  else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear"))
    r.mode = MV_LINEAR;
  else
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Upsample", "unknown mode '%s'", mode);
  r.ctm = MV_ASYM;
  r.nearest = MV_R_FLOOR;
  const double *sc;
  uint32_t nsc = interp_mv_floats(attrs, "scales", &sc);
  if (nsc != ins[0].type.rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Upsample", "scales has %u entries, rank is %u",
                         nsc, ins[0].type.rank);
  for (uint32_t d = 0; d < nsc; d++) {
    if (!(sc[d] > 0))
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Upsample", "scale %u is not positive", d);
    r.scale[d] = sc[d];
  }
  return mv_resize_run("Upsample", &r, &outs[0], &ins[0]);
}
