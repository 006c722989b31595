/* plugins/cpu/emit_resize.c: Resize. Shapes, scales, sizes and roi are
 * static (the loader makes them attributes), so the emitter computes each
 * axis's (input index, weight) taps for every result index here, following
 * the ONNX operator's definition, and the kernel (kernels/resize.c) only
 * sums over their products. */
#include "emit_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum { RS_HALF, RS_HALF_SYM, RS_PYTORCH, RS_ALIGN, RS_ASYM, RS_TFCROP, RS_TFNN };
enum { RS_PFLOOR, RS_PCEIL, RS_FLOOR, RS_CEIL };
#define RS_MAX_TAPS 64

typedef struct rs_cfg {
  int mode, ctm, nearest;
  double a, extrap;
  bool exclude, antialias;
  double scale[KILN_MAX_RANK], lo[KILN_MAX_RANK], hi[KILN_MAX_RANK];
} rs_cfg;

static int rs_pick(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i]))
      return i;
  return -1;
}

static uint32_t rs_floats(const kiln_attrs *a, const char *name, const double **out) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  *out = NULL;
  if (!at || kiln_attr_get_kind(at) != KILN_ATTR_FLOATS)
    return 0;
  *out = kiln_attr_floats(at);
  return kiln_attr_len(at);
}

/* Attributes and types into a configuration; false when unsupported. */
static bool rs_config(const kiln_attrs *a, const kiln_type *x, const kiln_type *y, rs_cfg *r) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const ctms[] = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  memset(r, 0, sizeof *r);
  if (x->rank != y->rank || x->rank == 0 || x->rank > KILN_MAX_RANK)
    return false;
  if ((r->mode = rs_pick(kiln_attrs_string_or(a, "mode", "nearest"), modes, 3)) < 0 ||
      (r->ctm = rs_pick(kiln_attrs_string_or(a, "coordinate_transformation_mode", "half_pixel"),
                        ctms, 7)) < 0 ||
      (r->nearest =
           rs_pick(kiln_attrs_string_or(a, "nearest_mode", "round_prefer_floor"), nms, 4)) < 0)
    return false;
  r->antialias = kiln_attrs_int_or(a, "antialias", 0) != 0 && r->mode != RS_NEAREST;
  r->a = kiln_attrs_float_or(a, "cubic_coeff_a", -0.75);
  r->exclude = kiln_attrs_int_or(a, "exclude_outside", 0) != 0;
  r->extrap = kiln_attrs_float_or(a, "extrapolation_value", 0.0);
  uint32_t rank = x->rank, axes[KILN_MAX_RANK];
  const int64_t *av, *sizes;
  const double *sc, *roi;
  uint32_t na = kcpu_e_ints(a, "axes", &av), nax = na ? na : rank;
  if (nax > rank)
    return false;
  for (uint32_t j = 0; j < nax; j++) {
    int64_t ax;
    if (!kcpu_e_axis(na ? av[j] : (int64_t)j, rank, &ax))
      return false;
    axes[j] = (uint32_t)ax;
  }
  for (uint32_t d = 0; d < rank; d++)
    r->scale[d] = 1, r->lo[d] = 0, r->hi[d] = 1;
  uint32_t nsc = rs_floats(a, "scales", &sc), nsz = kcpu_e_ints(a, "sizes", &sizes);
  uint32_t nroi = rs_floats(a, "roi", &roi);
  if (nsc) {
    if (nsc != nax)
      return false;
    for (uint32_t j = 0; j < nax; j++)
      r->scale[axes[j]] = sc[j];
  } else {
    const char *pol = kiln_attrs_string_or(a, "keep_aspect_ratio_policy", "stretch");
    bool nl = !strcmp(pol, "not_larger"), ns = !strcmp(pol, "not_smaller");
    if ((!nl && !ns && strcmp(pol, "stretch")) || (nsz && nsz != nax))
      return false;
    double common = nl ? INFINITY : 0;
    for (uint32_t j = 0; j < nax; j++) {
      uint32_t d = axes[j];
      double want = nsz ? (double)sizes[j] : (double)y->dims[d];
      r->scale[d] = x->dims[d] ? want / (double)x->dims[d] : 1;
      common = nl ? fmin(common, r->scale[d]) : fmax(common, r->scale[d]);
    }
    if (nl || ns)
      for (uint32_t j = 0; j < nax; j++)
        r->scale[axes[j]] = common;
  }
  if (r->ctm == RS_TFCROP) {
    if (nroi != 2 * nax)
      return false;
    for (uint32_t j = 0; j < nax; j++)
      r->lo[axes[j]] = roi[j], r->hi[axes[j]] = roi[nax + j];
  }
  for (uint32_t d = 0; d < rank; d++)
    if (!(r->scale[d] > 0))
      return false;
  return true;
}

/* Input coordinate of result index o on axis d (length in -> out); false
 * when tf_crop_and_resize puts it outside the input. Modes that divide by
 * the result length use in*scale (the unfloored length). */
static bool rs_coord(const rs_cfg *r, uint32_t d, int64_t o, int64_t in, int64_t out, double *xo) {
  double s = r->scale[d], len = s * (double)in, x = (double)o;
  switch (r->ctm) {
  case RS_HALF:
    *xo = (x + 0.5) / s - 0.5;
    return true;
  case RS_HALF_SYM: {
    double c = (double)in / 2;
    *xo = c * (1 - (double)out / len) + (x + 0.5) / s - 0.5;
    return true;
  }
  case RS_PYTORCH:
    *xo = out > 1 ? (x + 0.5) / s - 0.5 : 0;
    return true;
  case RS_ALIGN:
    *xo = len == 1 ? 0 : x * (double)(in - 1) / (len - 1);
    return true;
  case RS_ASYM:
    *xo = x / s;
    return true;
  case RS_TFNN:
    *xo = (x + 0.5) / s;
    return true;
  default: {
    double lo = r->lo[d], hi = r->hi[d];
    *xo = out > 1 ? lo * (double)(in - 1) + x * (hi - lo) * (double)(in - 1) / (double)(out - 1)
                  : 0.5 * (lo + hi) * (double)(in - 1);
    return *xo >= 0 && *xo <= (double)(in - 1);
  }
  }
}

static int64_t rs_clamp(int64_t v, int64_t in) {
  return v < 0 ? 0 : v >= in ? in - 1 : v;
}

/* Keys' cubic convolution kernel with parameter A at distance d. */
static double rs_keys(double A, double d) {
  d = fabs(d);
  if (d <= 1)
    return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2)
    return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

/* How many taps each result index of an axis has (constant per axis). */
static int rs_ntaps(const rs_cfg *r, double scale) {
  if (r->mode == RS_NEAREST)
    return 1;
  if (r->antialias && scale < 1) {
    double support = r->mode == RS_LINEAR ? 1 : 2;
    int64_t n = 2 - 2 * ((int64_t)floor(-support / scale) + 1);
    return n > RS_MAX_TAPS ? -1 : (int)n;
  }
  return r->mode == RS_LINEAR ? 2 : 4;
}

/* The taps of one coordinate xo (count from rs_ntaps). */
static void rs_taps(const rs_cfg *r, double xo, double scale, int64_t in, int nt, int64_t *idx,
                    double *w) {
  double fl = floor(xo), t = xo - fl;
  int64_t f = (int64_t)fl;
  if (r->mode == RS_NEAREST) {
    int64_t p = f;
    if (t != 0) {
      if (r->nearest == RS_CEIL)
        p = f + 1;
      else if (r->nearest != RS_FLOOR)
        p = t == 0.5 ? (r->nearest == RS_PFLOOR ? f : f + 1) : (t < 0.5 ? f : f + 1);
    }
    idx[0] = rs_clamp(p, in), w[0] = 1;
    return;
  }
  double sum = 0;
  if (r->antialias && scale < 1) { /* filter stretched by 1/scale, normalized */
    double support = r->mode == RS_LINEAR ? 1 : 2;
    int64_t left = f - (xo == fl ? 1 : 0), start = (int64_t)floor(-support / scale) + 1;
    for (int i = 0; i < nt; i++) {
      int64_t j = left + start + i;
      double dd = ((double)j - xo) * scale;
      double c = r->mode == RS_LINEAR ? fmax(0, 1 - fabs(dd)) : rs_keys(r->a, dd);
      if (r->exclude && (j < 0 || j >= in))
        c = 0;
      idx[i] = rs_clamp(j, in), w[i] = c, sum += c;
    }
    if (sum != 0)
      for (int i = 0; i < nt; i++)
        w[i] /= sum;
    return;
  }
  if (r->mode == RS_LINEAR) {
    idx[0] = rs_clamp(f, in), w[0] = 1 - t;
    idx[1] = rs_clamp(f + 1, in), w[1] = t;
    return;
  }
  for (int j = 0; j < 4; j++) {
    int64_t p = f - 1 + j;
    double c = rs_keys(r->a, t + 1 - j);
    if (r->exclude && (p < 0 || p >= in))
      c = 0;
    idx[j] = rs_clamp(p, in), w[j] = c, sum += c;
  }
  if (r->exclude && sum != 0)
    for (int j = 0; j < 4; j++)
      w[j] /= sum;
}

static bool rs_elem_ok(kiln_elem e) {
  return e != KILN_BOOL;
}

bool kcpu_supports_Resize(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *y = kcpu_n_out(n, 0);
  rs_cfg r;
  if (!x || !y || x->quantized || y->quantized || x->elem != y->elem || !rs_elem_ok(x->elem) ||
      !rs_config(kiln_node_attrs(n), x, y, &r))
    return false;
  for (uint32_t d = 0; d < x->rank; d++)
    if (rs_ntaps(&r, r.scale[d]) < 0)
      return false;
  return true;
}

kiln_status kcpu_emit_Resize(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  rs_cfg r;
  if (!x || !y || !rs_config(kiln_instr_attrs(in), x, y, &r))
    return kcpu_e_fail(in, "unsupported attributes");
  uint32_t rank = x->rank;
  int64_t ntaps[KILN_MAX_RANK], toff[KILN_MAX_RANK], total = 0;
  for (uint32_t d = 0; d < rank; d++) {
    bool ident = y->dims[d] == x->dims[d] && r.scale[d] == 1.0 && r.ctm != RS_TFCROP;
    ntaps[d] = ident ? 1 : rs_ntaps(&r, r.scale[d]);
    if (ntaps[d] < 0)
      return kcpu_e_fail(in, "antialiasing on axis %u needs more than %d taps", d, RS_MAX_TAPS);
    toff[d] = total;
    total += y->dims[d] * ntaps[d];
  }
  int64_t *tidx = malloc((size_t)(total ? total : 1) * sizeof *tidx);
  int64_t *tw = malloc((size_t)(total ? total : 1) * sizeof *tw);
  if (!tidx || !tw) {
    free(tidx), free(tw);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "cpu Resize: tap tables of %lld entries",
                            (long long)total);
  }
  for (uint32_t d = 0; d < rank; d++)
    for (int64_t o = 0; o < y->dims[d]; o++) {
      int64_t *ti = tidx + toff[d] + o * ntaps[d], *tb = tw + toff[d] + o * ntaps[d];
      double w[RS_MAX_TAPS], xo;
      if (ntaps[d] == 1 && y->dims[d] == x->dims[d] && r.scale[d] == 1.0 && r.ctm != RS_TFCROP) {
        ti[0] = o, w[0] = 1;
      } else if (!rs_coord(&r, d, o, x->dims[d], y->dims[d], &xo)) {
        for (int64_t t = 0; t < ntaps[d]; t++)
          ti[t] = -1, w[t] = 0;
      } else {
        rs_taps(&r, xo, r.scale[d], x->dims[d], (int)ntaps[d], ti, w);
      }
      for (int64_t t = 0; t < ntaps[d]; t++)
        memcpy(&tb[t], &w[t], sizeof w[t]);
    }
  LLVMValueRef xv = kcpu_e_ptr(e, kcpu_i_in(in, 0));
  LLVMValueRef args[] = {kcpu_i64(e, x->elem),
                         xv,
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, rank),
                         kcpu_i64_array(e, x->dims, rank),
                         kcpu_i64_array(e, y->dims, rank),
                         kcpu_i64_array(e, ntaps, rank),
                         kcpu_i64_array(e, toff, rank),
                         kcpu_i64_array(e, tidx, (uint32_t)(total ? total : 1)),
                         kcpu_i64_array(e, tw, (uint32_t)(total ? total : 1)),
                         kcpu_i64(e, r.mode == RS_NEAREST),
                         kcpu_f64(e, r.extrap)};
  free(tidx), free(tw);
  return kcpu_e_call(e, in, "kcpu_k_resize", args, 12);
}
