/* passes/lower_resize.c: the Resize lowering (and Upsample, a Resize). Interpolation is
 * separable, so each resampled axis becomes, per filter tap, a Gather of a
 * constant index table along that axis times a constant weight table, and
 * the taps are added. The tables are computed here from the static shapes
 * with the same coordinate and filter formulas as the interpreter's
 * kernel (plugins/interpreter/movement/resize.c), antialiased
 * downsampling included (its wider filter only means more taps). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_rules.h"

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum { RS_HALF, RS_HALF_SYM, RS_PYTORCH, RS_ALIGN, RS_ASYM, RS_TFCROP, RS_TFNN };
enum { RS_PFLOOR, RS_PCEIL, RS_FLOOR, RS_CEIL };
/* The interpreter's limit on the taps of one antialiased axis. */
enum { RS_MAX_TAPS = 64 };

static int rs_pick(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i]))
      return i;
  return -1;
}

typedef struct rs_axis {
  int mode, ctm, nearest;
  double a, scale;
  bool exclude_outside, antialias;
  double lo, hi; /* roi of tf_crop_and_resize */
  int64_t in, out;
} rs_axis;

static double rs_coord(const rs_axis *r, int64_t x) {
  double s = r->scale, ow = s * (double)r->in;
  switch (r->ctm) {
  case RS_HALF:
    return ((double)x + 0.5) / s - 0.5;
  case RS_HALF_SYM:
    return (double)r->in / 2 * (1 - (double)r->out / ow) + ((double)x + 0.5) / s - 0.5;
  case RS_PYTORCH:
    return r->out > 1 ? ((double)x + 0.5) / s - 0.5 : 0;
  case RS_ALIGN:
    return ow == 1 ? 0 : (double)x * (double)(r->in - 1) / (ow - 1);
  case RS_ASYM:
    return (double)x / s;
  case RS_TFNN:
    return ((double)x + 0.5) / s;
  default:
    return r->out > 1 ? r->lo * (double)(r->in - 1) +
                            (double)x * (r->hi - r->lo) * (double)(r->in - 1) / (double)(r->out - 1)
                      : 0.5 * (r->lo + r->hi) * (double)(r->in - 1);
  }
}

/* tf_crop_and_resize: whether result index x falls outside the input. */
static bool rs_outside(const rs_axis *r, int64_t x) {
  double xo = rs_coord(r, x);
  return r->ctm == RS_TFCROP && (xo < 0 || xo > (double)(r->in - 1));
}

static int64_t rs_clamp(int64_t v, int64_t in) {
  return v < 0 ? 0 : (v >= in ? in - 1 : v);
}

/* Taps of one axis: 1 (nearest), 2 (linear), 4 (cubic), or, when
 * antialiasing a downsampled axis, every input cell within the filter's
 * support stretched by 1/scale. The count depends on the scale only, so it
 * is the same for every result index of the axis. */
static int rs_tap_count(const rs_axis *r) {
  if (r->mode == RS_NEAREST)
    return 1;
  if (r->antialias && r->scale < 1) {
    double support = r->mode == RS_LINEAR ? 1 : 2;
    if (support / r->scale > RS_MAX_TAPS) /* before the cast can overflow */
      return -1;
    int64_t start = (int64_t)floor(-support / r->scale) + 1, n = 2 - 2 * start;
    return n > RS_MAX_TAPS ? -1 : (int)n;
  }
  return r->mode == RS_LINEAR ? 2 : 4;
}

/* Keys' cubic convolution kernel with parameter A at distance d. */
static double rs_cubic(double A, double d) {
  d = fabs(d);
  if (d <= 1)
    return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2)
    return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

/* Antialiased taps around coordinate xo: the kernel is evaluated at
 * (j - xo) * scale and the weights are normalized to sum 1 (always, not
 * only with exclude_outside), as the interpreter does. The first tap sits
 * left of xo's cell only when xo is whole, matching ONNX's reference. */
static void rs_taps_antialias(const rs_axis *r, double xo, int n, int64_t *idx, double *w) {
  double support = r->mode == RS_LINEAR ? 1 : 2, fl = floor(xo), sum = 0;
  int64_t left = (int64_t)fl - (xo == fl ? 1 : 0);
  int64_t start = (int64_t)floor(-support / r->scale) + 1;
  for (int i = 0; i < n; i++) {
    int64_t j = left + start + i;
    double d = ((double)j - xo) * r->scale;
    double k = r->mode == RS_LINEAR ? fmax(0, 1 - fabs(d)) : rs_cubic(r->a, d);
    if (r->exclude_outside && (j < 0 || j >= r->in))
      k = 0;
    idx[i] = rs_clamp(j, r->in), w[i] = k, sum += k;
  }
  if (sum != 0)
    for (int i = 0; i < n; i++)
      w[i] /= sum;
}

/* The n taps (n from rs_tap_count) of result index x. */
static void rs_taps(const rs_axis *r, int64_t x, int n, int64_t *idx, double *w) {
  double xo = rs_coord(r, x), fl = floor(xo), t = xo - fl;
  int64_t f = (int64_t)fl;
  if (r->mode == RS_NEAREST) {
    int64_t k;
    if (t == 0 || r->nearest == RS_FLOOR)
      k = f;
    else if (r->nearest == RS_CEIL)
      k = f + 1;
    else if (t == 0.5)
      k = r->nearest == RS_PFLOOR ? f : f + 1;
    else
      k = t < 0.5 ? f : f + 1;
    idx[0] = rs_clamp(k, r->in), w[0] = 1;
    return;
  }
  if (r->antialias && r->scale < 1) {
    rs_taps_antialias(r, xo, n, idx, w);
    return;
  }
  if (r->mode == RS_LINEAR) {
    idx[0] = rs_clamp(f, r->in), w[0] = 1 - t;
    idx[1] = rs_clamp(f + 1, r->in), w[1] = t;
    return;
  }
  double A = r->a, u = t + 1, v = 1 - t, z = 2 - t, sum = 0;
  w[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
  w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  w[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
  w[3] = ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
  for (int j = 0; j < 4; j++) {
    int64_t p = f - 1 + j;
    if (r->exclude_outside && (p < 0 || p >= r->in))
      w[j] = 0;
    sum += w[j];
    idx[j] = rs_clamp(p, r->in);
  }
  if (r->exclude_outside && sum != 0)
    for (int j = 0; j < 4; j++)
      w[j] /= sum;
}

/* Resample axis d of y (rank `rank`) as described by r; *outside, when
 * some result index extrapolates, gets a bool mask along d. */
static kiln_value *rs_axis_emit(kiln_lower_ctx *c, kiln_value *y, uint32_t rank, uint32_t d,
                                const rs_axis *r, kiln_value **outside) {
  int64_t n = r->out;
  int nt = rs_tap_count(r);
  if (nt < 1)
    return NULL;                                   /* the caller checked the count first */
  size_t cells = (size_t)nt * (size_t)(n ? n : 1); /* no malloc(0) for an empty result */
  int64_t *idx = malloc(sizeof(int64_t) * cells);
  double *w = malloc(sizeof(double) * cells), *col = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!idx || !w || !col) {
    free(idx), free(w), free(col);
    if (!c->s)
      c->s =
          kiln_status_make(KILN_OUT_OF_MEMORY, "lower Resize '%s': tap tables of %lld x %d entries",
                           kiln_node_name(c->n), (long long)n, nt);
    return NULL;
  }
  bool any_out = false;
  for (int64_t x = 0; x < n; x++) {
    rs_taps(r, x, nt, idx + (size_t)nt * (size_t)x, w + (size_t)nt * (size_t)x);
    col[x] = rs_outside(r, x);
    any_out |= col[x] != 0;
  }
  int64_t wdims[KILN_MAX_RANK];
  for (uint32_t k = 0; k < rank; k++)
    wdims[k] = k == d ? n : 1;
  *outside = any_out ? kiln_lower_const_vals(c, KILN_BOOL, rank, wdims, col) : NULL;
  kiln_attr_desc ax = KILN_ATTR_I("axis", d);
  kiln_value *sum = NULL;
  for (int k = 0; k < nt; k++) {
    for (int64_t x = 0; x < n; x++)
      col[x] = (double)idx[(size_t)nt * (size_t)x + (size_t)k];
    kiln_value *in[2] = {y, kiln_lower_const_vals(c, KILN_I64, 1, &n, col)};
    kiln_value *g = lower_emit(c, KILN_NODE_Gather, in, 2, &ax, 1);
    if (nt > 1) {
      for (int64_t x = 0; x < n; x++)
        col[x] = w[(size_t)nt * (size_t)x + (size_t)k];
      g = lower_bin(c, KILN_NODE_Mul, g, kiln_lower_const_vals(c, c->elem, rank, wdims, col));
    }
    sum = sum ? lower_bin(c, KILN_NODE_Add, sum, g) : g;
  }
  free(idx), free(w), free(col);
  return sum;
}

/* Not for: non-float data, scales or sizes left as runtime inputs, an
 * antialiased axis needing more taps than the interpreter allows. tf_crop_and_resize's extrapolated
 * cells are set by one Where at the end, so that no tap ever reads them. */
bool kiln_lower_Resize(kiln_lower_ctx *c, kiln_value **r) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const ctms[] = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const kiln_attrs *at = kiln_node_attrs(c->n);
  const kiln_type *it = lower_tin(c, 0), *ot = lower_tout(c, 0);
  rs_axis base = {
      .mode = rs_pick(kiln_attrs_string_or(at, "mode", "nearest"), modes, 3),
      .ctm = rs_pick(kiln_attrs_string_or(at, "coordinate_transformation_mode", "half_pixel"), ctms,
                     7),
      .nearest = rs_pick(kiln_attrs_string_or(at, "nearest_mode", "round_prefer_floor"), nms, 4),
      .a = kiln_attrs_float_or(at, "cubic_coeff_a", -0.75),
      .exclude_outside = kiln_attrs_int_or(at, "exclude_outside", 0) != 0,
      .antialias = kiln_attrs_int_or(at, "antialias", 0) != 0};
  if (base.mode < 0 || base.ctm < 0 || base.nearest < 0 || !kiln_elem_is_float(it->elem) ||
      it->rank != ot->rank)
    return false;
  for (uint32_t i = 1; i < kiln_node_input_count(c->n); i++)
    if (kiln_node_input(c->n, i) &&
        kiln_value_get_kind(kiln_node_input(c->n, i)) != KILN_VALUE_CONSTANT)
      return false;
  uint32_t rank = it->rank;
  int64_t axes[KILN_MAX_RANK];
  uint32_t na = lower_ints(c, "axes", axes, KILN_MAX_RANK), nax = na ? na : rank;
  double scale[KILN_MAX_RANK];
  for (uint32_t d = 0; d < rank; d++)
    scale[d] = 1;
  for (uint32_t j = 0; j < nax; j++) {
    int64_t a = na ? axes[j] : (int64_t)j;
    if (a < 0)
      a += rank;
    if (a < 0 || a >= (int64_t)rank)
      return false;
    axes[j] = a;
  }
  const kiln_attr *sc = kiln_attrs_find(at, "scales");
  if (sc && kiln_attr_len(sc)) {
    if (kiln_attr_len(sc) != nax || !kiln_attr_floats(sc))
      return false;
    for (uint32_t j = 0; j < nax; j++)
      scale[axes[j]] = kiln_attr_floats(sc)[j];
  } else {
    const char *pol = kiln_attrs_string_or(at, "keep_aspect_ratio_policy", "stretch");
    bool nl = !strcmp(pol, "not_larger"), ns = !strcmp(pol, "not_smaller");
    if (!nl && !ns && strcmp(pol, "stretch"))
      return false;
    int64_t sizes[KILN_MAX_RANK];
    uint32_t nsz = lower_ints(c, "sizes", sizes, KILN_MAX_RANK);
    if (nsz && nsz != nax)
      return false;
    double common = nl ? INFINITY : 0;
    for (uint32_t j = 0; j < nax; j++) {
      int64_t d = axes[j];
      double want = nsz ? (double)sizes[j] : (double)ot->dims[d];
      scale[d] = it->dims[d] ? want / (double)it->dims[d] : 1;
      common = nl ? fmin(common, scale[d]) : fmax(common, scale[d]);
    }
    if (nl || ns)
      for (uint32_t j = 0; j < nax; j++)
        scale[axes[j]] = common;
  }
  double lo[KILN_MAX_RANK], hi[KILN_MAX_RANK];
  for (uint32_t d = 0; d < rank; d++)
    lo[d] = 0, hi[d] = 1;
  if (base.ctm == RS_TFCROP) {
    const kiln_attr *roi = kiln_attrs_find(at, "roi");
    if (!roi || kiln_attr_len(roi) != 2 * nax || !kiln_attr_floats(roi))
      return false;
    for (uint32_t j = 0; j < nax; j++)
      lo[axes[j]] = kiln_attr_floats(roi)[j], hi[axes[j]] = kiln_attr_floats(roi)[nax + j];
  }
  /* every check before the first node is emitted */
  rs_axis ra[KILN_MAX_RANK];
  bool skip[KILN_MAX_RANK];
  for (uint32_t d = 0; d < rank; d++) {
    if (!(scale[d] > 0) || it->dims[d] == 0)
      return false;
    skip[d] = ot->dims[d] == it->dims[d] && scale[d] == 1.0 && base.ctm != RS_TFCROP;
    ra[d] = base;
    ra[d].scale = scale[d], ra[d].in = it->dims[d], ra[d].out = ot->dims[d];
    ra[d].lo = lo[d], ra[d].hi = hi[d];
    if (!skip[d] && rs_tap_count(&ra[d]) < 1)
      return false;
  }
  kiln_value *y = kiln_node_input(c->n, 0), *mask = NULL;
  for (uint32_t d = 0; d < rank; d++) {
    if (skip[d])
      continue;
    kiln_value *out = NULL;
    y = rs_axis_emit(c, y, rank, d, &ra[d], &out);
    if (out)
      mask = mask ? lower_bin(c, KILN_NODE_Or, mask, out) : out;
  }
  if (mask)
    y = lower_where(c, mask, lower_sc(c, kiln_attrs_float_or(at, "extrapolation_value", 0)), y);
  if (y == kiln_node_input(c->n, 0))
    y = lower_un(c, KILN_NODE_Identity, y);
  r[0] = y;
  return true;
}

bool kiln_lower_Upsample(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_attr *s = kiln_attrs_find(kiln_node_attrs(c->n), "scales");
  if (!s || !kiln_attr_floats(s))
    return false;
  const char *mode = kiln_attrs_string_or(kiln_node_attrs(c->n), "mode", "nearest");
  kiln_attr_desc a[4] = {KILN_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                         KILN_ATTR_S("mode", mode), KILN_ATTR_S("nearest_mode", "floor"),
                         KILN_ATTR_FS("scales", kiln_attr_floats(s), kiln_attr_len(s))};
  kiln_value *x = kiln_node_input(c->n, 0);
  r[0] = lower_emit(c, KILN_NODE_Resize, &x, 1, a, 4);
  return true;
}
