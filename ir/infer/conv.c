/* ir/infer/conv.c: inference of convolution and pooling: Conv,
 * ConvTranspose, AveragePool, MaxPool and the global pools. The sliding
 * window attributes (kernel_shape, strides, dilations, pads, auto_pad,
 * ceil_mode) are read and checked once here for all of them. */
#include <string.h>

#include "infer.h"

#define SP_MAX (KILN_MAX_RANK - 2)

typedef struct window {
  uint32_t n; /* spatial dims */
  int64_t k[SP_MAX], s[SP_MAX], d[SP_MAX], pb[SP_MAX], pe[SP_MAX];
  const char *auto_pad;
} window;

/* An optional INTS attribute of `want` entries, each >= lo, or dflt. */
static kiln_status window_list(const char *kind, const kiln_attrs *attrs, const char *name,
                               uint32_t want, int64_t lo, int64_t dflt, int64_t *dst,
                               bool *present) {
  const int64_t *p;
  uint32_t n;
  KILN_TRY(kiln_infer_ints(kind, attrs, name, &p, &n, present));
  if (!*present) {
    for (uint32_t i = 0; i < want; i++)
      dst[i] = dflt;
    return NULL;
  }
  if (n != want)
    return kiln_infer_fail(kind, "attribute '%s' %s has %u entries; expected %u", name,
                           KILN_INFER_DS(p, n), n, want);
  for (uint32_t i = 0; i < n; i++) {
    if (p[i] < lo)
      return kiln_infer_fail(kind, "attribute '%s' %s: entry %u = %lld must be >= %lld", name,
                             KILN_INFER_DS(p, n), i, (long long)p[i], (long long)lo);
    dst[i] = p[i];
  }
  return NULL;
}

/* kernel NULL: kernel_shape is required. */
static kiln_status read_window(const char *kind, const kiln_attrs *attrs, uint32_t n,
                               const int64_t *kernel, window *w) {
  static const char *const modes[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", NULL};
  bool present;
  w->n = n;
  KILN_TRY(window_list(kind, attrs, "kernel_shape", n, 1, 1, w->k, &present));
  if (!present && !kernel)
    return kiln_infer_fail(kind, "attribute 'kernel_shape' is required");
  if (present && kernel) {
    for (uint32_t i = 0; i < n; i++) {
      if (w->k[i] != kernel[i])
        return kiln_infer_fail(kind, "attribute 'kernel_shape' %s differs from the weight's %s",
                               KILN_INFER_DS(w->k, n), KILN_INFER_DS(kernel, n));
    }
  }
  if (!present && kernel) /* (kernel is non-NULL here: the check above) */
    memcpy(w->k, kernel, sizeof(int64_t) * n);
  KILN_TRY(window_list(kind, attrs, "strides", n, 1, 1, w->s, &present));
  KILN_TRY(window_list(kind, attrs, "dilations", n, 1, 1, w->d, &present));
  int64_t pads[2 * SP_MAX];
  KILN_TRY(window_list(kind, attrs, "pads", 2 * n, 0, 0, pads, &present));
  for (uint32_t i = 0; i < n; i++)
    w->pb[i] = pads[i], w->pe[i] = pads[n + i];
  KILN_TRY(kiln_infer_enum(kind, attrs, "auto_pad", "NOTSET", modes, &w->auto_pad));
  return NULL;
}

/* Output spatial size of dim i for an input size `in`. */
static kiln_status window_out(const char *kind, const window *w, uint32_t i, int64_t in,
                              bool ceil_mode, int64_t *out) {
  int64_t ek = w->d[i] * (w->k[i] - 1) + 1;
  if (strncmp(w->auto_pad, "SAME", 4) == 0) {
    *out = (in + w->s[i] - 1) / w->s[i];
    return NULL;
  }
  bool valid = strcmp(w->auto_pad, "VALID") == 0;
  int64_t pb = valid ? 0 : w->pb[i], pe = valid ? 0 : w->pe[i];
  int64_t num = in + pb + pe - ek;
  if (num < 0)
    return kiln_infer_fail(kind,
                           "spatial dim %u: the effective kernel %lld is larger than the padded "
                           "input %lld",
                           i, (long long)ek, (long long)(in + pb + pe));
  int64_t o = (ceil_mode ? (num + w->s[i] - 1) / w->s[i] : num / w->s[i]) + 1;
  /* A last window that starts inside the end padding is dropped. */
  if (ceil_mode && (o - 1) * w->s[i] >= in + pb)
    o--;
  *out = o;
  return NULL;
}

kiln_status kiln_infer_conv_shape(const char *kind, const kiln_type *x, const kiln_type *w,
                                  const kiln_attrs *attrs, int64_t *dims) {
  KILN_TRY(kiln_infer_check_rank(kind, "input 0 (X)", x, 3, true));
  if (w->rank != x->rank)
    return kiln_infer_fail(kind, "input 1 (W) is %s; expected rank %u like input 0 %s",
                           KILN_INFER_TS(w), x->rank, KILN_INFER_TS(x));
  int64_t group = kiln_attrs_int_or(attrs, "group", 1);
  if (group < 1)
    return kiln_infer_fail(kind, "attribute 'group' = %lld must be positive", (long long)group);
  if (x->dims[1] != w->dims[1] * group)
    return kiln_infer_fail(kind,
                           "channels differ: input 0 %s has %lld, input 1 (W) %s times group "
                           "%lld gives %lld",
                           KILN_INFER_TS(x), (long long)x->dims[1], KILN_INFER_TS(w),
                           (long long)group, (long long)(w->dims[1] * group));
  if (w->dims[0] % group != 0)
    return kiln_infer_fail(kind, "group %lld does not divide the %lld output channels of W %s",
                           (long long)group, (long long)w->dims[0], KILN_INFER_TS(w));
  window win;
  KILN_TRY(read_window(kind, attrs, x->rank - 2, w->dims + 2, &win));
  dims[0] = x->dims[0];
  dims[1] = w->dims[0];
  for (uint32_t i = 0; i < win.n; i++)
    KILN_TRY(window_out(kind, &win, i, x->dims[2 + i], false, &dims[2 + i]));
  return NULL;
}

/* Bias: rank 1 with one entry per output channel. */
static kiln_status check_bias(const char *kind, const kiln_type *b, int64_t m) {
  if (b->rank != 1 || b->dims[0] != m)
    return kiln_infer_fail(kind, "input 2 (B) is %s; expected [%lld] (the output channels)",
                           KILN_INFER_TS(b), (long long)m);
  return NULL;
}

kiln_status kiln_infer_Conv(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)n_results;
  const kiln_type *x = in[0], *w = in[1];
  KILN_TRY(kiln_infer_check_elem("Conv", "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_same_elem("Conv", "input 0", x, "input 1", w));
  int64_t dims[KILN_MAX_RANK];
  KILN_TRY(kiln_infer_conv_shape("Conv", x, w, attrs, dims));
  if (n_in > 2 && in[2]) {
    KILN_TRY(kiln_infer_same_elem("Conv", "input 0", x, "input 2", in[2]));
    KILN_TRY(check_bias("Conv", in[2], w->dims[0]));
  }
  KILN_TRY(kiln_infer_make("Conv", x->elem, x->rank, dims, out));
  return kiln_infer_activation("Conv", attrs, out);
}

kiln_status kiln_infer_ConvTranspose(const kiln_type *const *in, uint32_t n_in,
                                     const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_results;
  static const char *const k = "ConvTranspose";
  const kiln_type *x = in[0], *w = in[1];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "input 1", w));
  KILN_TRY(kiln_infer_check_rank(k, "input 0 (X)", x, 3, true));
  if (w->rank != x->rank)
    return kiln_infer_fail(k, "input 1 (W) is %s; expected rank %u like input 0 %s",
                           KILN_INFER_TS(w), x->rank, KILN_INFER_TS(x));
  int64_t group = kiln_attrs_int_or(attrs, "group", 1);
  if (group < 1)
    return kiln_infer_fail(k, "attribute 'group' = %lld must be positive", (long long)group);
  if (x->dims[1] != w->dims[0])
    return kiln_infer_fail(k, "channels differ: input 0 %s has %lld, input 1 (W) %s has %lld",
                           KILN_INFER_TS(x), (long long)x->dims[1], KILN_INFER_TS(w),
                           (long long)w->dims[0]);
  if (x->dims[1] % group != 0)
    return kiln_infer_fail(k, "group %lld does not divide the %lld input channels",
                           (long long)group, (long long)x->dims[1]);
  window win;
  uint32_t n = x->rank - 2;
  KILN_TRY(read_window(k, attrs, n, w->dims + 2, &win));
  int64_t opad[SP_MAX], oshape[SP_MAX];
  bool has_opad, has_oshape;
  KILN_TRY(window_list(k, attrs, "output_padding", n, 0, 0, opad, &has_opad));
  KILN_TRY(window_list(k, attrs, "output_shape", n, 0, 0, oshape, &has_oshape));
  int64_t dims[KILN_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = w->dims[1] * group;
  bool same = strncmp(win.auto_pad, "SAME", 4) == 0;
  bool valid = strcmp(win.auto_pad, "VALID") == 0;
  for (uint32_t i = 0; i < n; i++) {
    int64_t o;
    if (has_oshape) {
      o = oshape[i];
    } else if (same) {
      o = x->dims[2 + i] * win.s[i];
    } else {
      int64_t pads = valid ? 0 : win.pb[i] + win.pe[i];
      o = win.s[i] * (x->dims[2 + i] - 1) + opad[i] + (win.k[i] - 1) * win.d[i] + 1 - pads;
    }
    if (o < 0)
      return kiln_infer_fail(k, "spatial dim %u of the result would be %lld (negative)", i,
                             (long long)o);
    dims[2 + i] = o;
  }
  if (n_in > 2 && in[2]) {
    KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "input 2", in[2]));
    KILN_TRY(check_bias(k, in[2], dims[1]));
  }
  return kiln_infer_make(k, x->elem, x->rank, dims, out);
}

static kiln_status pool(const char *kind, const kiln_type *x, const kiln_attrs *attrs,
                        uint32_t mask, uint32_t n_results, kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, mask));
  KILN_TRY(kiln_infer_check_rank(kind, "input 0", x, 3, true));
  window win;
  KILN_TRY(read_window(kind, attrs, x->rank - 2, NULL, &win));
  bool ceil_mode = kiln_attrs_int_or(attrs, "ceil_mode", 0) != 0;
  int64_t dims[KILN_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (uint32_t i = 0; i < win.n; i++) {
    KILN_TRY(window_out(kind, &win, i, x->dims[2 + i], ceil_mode, &dims[2 + i]));
  }
  KILN_TRY(kiln_infer_make(kind, x->elem, x->rank, dims, &out[0]));
  if (n_results > 1)
    KILN_TRY(kiln_infer_make(kind, KILN_I64, x->rank, dims, &out[1]));
  return NULL;
}

kiln_status kiln_infer_AveragePool(const kiln_type *const *in, uint32_t n_in,
                                   const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in;
  return pool("AveragePool", in[0], attrs, KILN_INFER_FLOAT, n_results, out);
}

kiln_status kiln_infer_LpPool(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in;
  int64_t p = kiln_attrs_int_or(attrs, "p", 2);
  if (p < 1)
    return kiln_infer_fail("LpPool", "attribute 'p' = %lld must be positive", (long long)p);
  return pool("LpPool", in[0], attrs, KILN_INFER_FLOAT, n_results, out);
}

kiln_status kiln_infer_MaxPool(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                               uint32_t n_results, kiln_type *out) {
  (void)n_in;
  int64_t so = kiln_attrs_int_or(attrs, "storage_order", 0);
  if (so != 0 && so != 1)
    return kiln_infer_fail("MaxPool", "attribute 'storage_order' = %lld must be 0 or 1",
                           (long long)so);
  uint32_t mask = KILN_INFER_FLOAT | KILN_INFER_M(KILN_I8) | KILN_INFER_M(KILN_U8);
  return pool("MaxPool", in[0], attrs, mask, n_results, out);
}

static kiln_status global_pool(const char *kind, const kiln_type *x, kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank(kind, "input 0", x, 3, true));
  int64_t dims[KILN_MAX_RANK];
  for (uint32_t i = 0; i < x->rank; i++)
    dims[i] = i < 2 ? x->dims[i] : 1;
  return kiln_infer_make(kind, x->elem, x->rank, dims, out);
}

kiln_status kiln_infer_GlobalAveragePool(const kiln_type *const *in, uint32_t n_in,
                                         const kiln_attrs *attrs, uint32_t n_results,
                                         kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return global_pool("GlobalAveragePool", in[0], out);
}

kiln_status kiln_infer_GlobalMaxPool(const kiln_type *const *in, uint32_t n_in,
                                     const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return global_pool("GlobalMaxPool", in[0], out);
}
