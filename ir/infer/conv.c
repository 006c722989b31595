/* ir/infer/conv.c: inference of the convolutions Conv, ConvTranspose and
 * Col2Im. The sliding window attributes (kernel_shape, strides, dilations,
 * pads, auto_pad, ceil_mode) are read and checked once here for them and
 * for the pools (pool.c), through the readers declared in infer.h. */
#include <string.h>

#include "infer.h"

#define SP_MAX KILN_INFER_SP_MAX

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

kiln_status kiln_infer_read_window(const char *kind, const kiln_attrs *attrs, uint32_t n,
                                   const int64_t *kernel, kiln_infer_window *w) {
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

kiln_status kiln_infer_window_out(const char *kind, const kiln_infer_window *w, uint32_t i,
                                  int64_t in, bool ceil_mode, int64_t *out) {
  int64_t ek;
  if (__builtin_mul_overflow(w->d[i], w->k[i] - 1, &ek) || ek > INT64_MAX / 4)
    return kiln_status_make(KILN_OUT_OF_RANGE,
                            "%s: spatial dim %u: the effective kernel (kernel %lld, dilation "
                            "%lld) overflows",
                            kind, i, (long long)w->k[i], (long long)w->d[i]);
  ek += 1;
  if (strncmp(w->auto_pad, "SAME", 4) == 0) {
    *out = (in + w->s[i] - 1) / w->s[i];
    return NULL;
  }
  bool valid = strcmp(w->auto_pad, "VALID") == 0;
  int64_t pb = valid ? 0 : w->pb[i], pe = valid ? 0 : w->pe[i];
  int64_t num;
  if (__builtin_add_overflow(in, pb, &num) || __builtin_add_overflow(num, pe, &num) ||
      num > INT64_MAX / 4)
    return kiln_status_make(KILN_OUT_OF_RANGE, "%s: spatial dim %u: the padded input overflows",
                            kind, i);
  num -= ek;
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
  kiln_infer_window win;
  KILN_TRY(kiln_infer_read_window(kind, attrs, x->rank - 2, w->dims + 2, &win));
  dims[0] = x->dims[0];
  dims[1] = w->dims[0];
  for (uint32_t i = 0; i < win.n; i++)
    KILN_TRY(kiln_infer_window_out(kind, &win, i, x->dims[2 + i], false, &dims[2 + i]));
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
  /* input 3, the fused residual: added to the result, so exactly its type */
  if (n_in > 3 && in[3] && !kiln_type_equal(in[3], out))
    return kiln_infer_fail("Conv", "input 3 (residual) is %s; expected the result's type %s",
                           KILN_INFER_TS(in[3]), KILN_INFER_TS(out));
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
  kiln_infer_window win;
  uint32_t n = x->rank - 2;
  KILN_TRY(kiln_infer_read_window(k, attrs, n, w->dims + 2, &win));
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

kiln_status kiln_infer_explicit_window(const char *k, const kiln_attrs *attrs, uint32_t n,
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
  KILN_TRY(kiln_infer_explicit_window(k, attrs, n, "block_shape", blk, strides, pads, dil));
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

/* BlockedConv: Conv's shapes on the plain view of X, the result blocked
 * (kiln/node_kinds.def). */
kiln_status kiln_infer_BlockedConv(const kiln_type *const *in, uint32_t n_in,
                                   const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_results;
  static const char *const k = "BlockedConv";
  const kiln_type *x = in[0], *w = in[1];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "input 1", w));
  int64_t B = kiln_attrs_int_or(attrs, "block", 0);
  if (B < 2)
    return kiln_infer_fail(k, "attribute 'block' = %lld must be at least 2", (long long)B);
  if (w->rank != 4)
    return kiln_infer_fail(k, "input 1 (W) is %s; expected rank 4 (2-D filters)", KILN_INFER_TS(w));
  int64_t group = kiln_attrs_int_or(attrs, "group", 1), C = w->dims[1] * group;
  if (group < 1 || w->dims[0] % group != 0)
    return kiln_infer_fail(k, "group %lld does not divide W %s's %lld output channels",
                           (long long)group, KILN_INFER_TS(w), (long long)w->dims[0]);
  kiln_type plain = *x;
  if (x->rank == 5) {
    if (x->dims[4] != B || x->dims[1] != (C + B - 1) / B)
      return kiln_infer_fail(k,
                             "input 0 (X) %s is not %lld channels in blocks of %lld "
                             "(expected [N, %lld, H, W, %lld])",
                             KILN_INFER_TS(x), (long long)C, (long long)B,
                             (long long)((C + B - 1) / B), (long long)B);
    plain.rank = 4;
    plain.dims[1] = C;
  } else if (x->rank != 4) {
    return kiln_infer_fail(
        k, "input 0 (X) is %s; expected blocked [N, Cb, H, W, %lld] or [N, C, H, W]",
        KILN_INFER_TS(x), (long long)B);
  }
  int64_t dims[5];
  KILN_TRY(kiln_infer_conv_shape(k, &plain, w, attrs, dims));
  if (n_in > 2 && in[2]) {
    KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "input 2", in[2]));
    KILN_TRY(check_bias(k, in[2], w->dims[0]));
  }
  dims[1] = (dims[1] + B - 1) / B;
  dims[4] = B;
  KILN_TRY(kiln_infer_make(k, x->elem, 5, dims, out));
  if (n_in > 3 && in[3] && !kiln_type_equal(in[3], out))
    return kiln_infer_fail(k, "input 3 (residual) is %s; expected the result's type %s",
                           KILN_INFER_TS(in[3]), KILN_INFER_TS(out));
  return kiln_infer_activation(k, attrs, out);
}
