/* ir/ops/window.c: the sliding-window geometry of the conv and pool
 * families (kiln_window_decode in kiln/ops.h): kernel, strides,
 * dilations and padding with auto_pad resolved against the inferred input
 * and result sizes, the same way for every backend and lowering rule. */
#include <string.h>

#include "kiln/ops.h"

/* An optional INTS attribute of `want` entries, each >= lo, or dflt. */
static kiln_status window_list(const char *kind, const kiln_attrs *a, const char *name,
                               uint32_t want, int64_t lo, int64_t dflt, int64_t *dst,
                               bool *present) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  const int64_t *v = at && kiln_attr_get_kind(at) == KILN_ATTR_INTS ? kiln_attr_ints(at) : NULL;
  uint32_t n = v ? kiln_attr_len(at) : 0;
  *present = n > 0;
  if (!n) {
    for (uint32_t i = 0; i < want; i++)
      dst[i] = dflt;
    return NULL;
  }
  if (n != want)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: attribute '%s' has %u entries; expected %u",
                            kind, name, n, want);
  for (uint32_t i = 0; i < n; i++) {
    if (v[i] < lo)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "%s: attribute '%s': entry %u = %lld must be >= %lld", kind, name, i,
                              (long long)v[i], (long long)lo);
    dst[i] = v[i];
  }
  return NULL;
}

static kiln_status window_auto_pad(const char *kind, const kiln_attrs *a, kiln_auto_pad *out) {
  static const char *const names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  const char *s = kiln_attrs_string_or(a, "auto_pad", "NOTSET");
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, names[i])) {
      *out = (kiln_auto_pad)i;
      return NULL;
    }
  return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: unknown auto_pad '%s'", kind, s);
}

kiln_status kiln_window_decode(const char *kind, const kiln_attrs *attrs, const kiln_type *x,
                               const kiln_type *y, const int64_t *kernel, bool transposed,
                               kiln_window *w) {
  memset(w, 0, sizeof *w);
  if (!x || !y || x->rank < 3 || y->rank != x->rank)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: input and result need one rank of at least 3", kind);
  uint32_t n = w->rank = x->rank - 2;
  w->transposed = transposed;
  for (uint32_t i = 0; i < n; i++)
    w->in[i] = x->dims[2 + i], w->out[i] = y->dims[2 + i];
  bool present;
  if (kernel) {
    memcpy(w->kernel, kernel, sizeof(int64_t) * n);
  } else {
    KILN_TRY(window_list(kind, attrs, "kernel_shape", n, 1, 1, w->kernel, &present));
    if (!present)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: attribute 'kernel_shape' is required",
                              kind);
  }
  KILN_TRY(window_list(kind, attrs, "strides", n, 1, 1, w->stride, &present));
  KILN_TRY(window_list(kind, attrs, "dilations", n, 1, 1, w->dilation, &present));
  int64_t pads[2 * KILN_WINDOW_MAX_RANK];
  KILN_TRY(window_list(kind, attrs, "pads", 2 * n, 0, 0, pads, &present));
  if (transposed)
    KILN_TRY(window_list(kind, attrs, "output_padding", n, 0, 0, w->output_padding, &present));
  KILN_TRY(window_auto_pad(kind, attrs, &w->auto_pad));
  const kiln_attr *osh = transposed ? kiln_attrs_find(attrs, "output_shape") : NULL;
  bool has_oshape = osh && kiln_attr_len(osh) > 0;
  bool same = w->auto_pad == KILN_AUTO_PAD_SAME_UPPER || w->auto_pad == KILN_AUTO_PAD_SAME_LOWER;
  bool upper = w->auto_pad == KILN_AUTO_PAD_SAME_UPPER;
  for (uint32_t i = 0; i < n; i++) {
    int64_t span = kiln_window_span(w, i);
    if (transposed && (has_oshape || same)) {
      int64_t total = w->stride[i] * (w->in[i] - 1) + w->output_padding[i] + span - w->out[i];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w->pad_begin[i] = upper ? half : total - half;
      w->pad_end[i] = total - w->pad_begin[i];
    } else if (same) {
      int64_t total = (w->out[i] - 1) * w->stride[i] + span - w->in[i];
      if (total < 0)
        total = 0;
      w->pad_begin[i] = upper ? total / 2 : total - total / 2;
      w->pad_end[i] = total - w->pad_begin[i];
    } else if (w->auto_pad == KILN_AUTO_PAD_NOTSET) {
      w->pad_begin[i] = pads[i];
      w->pad_end[i] = pads[n + i];
    }
  }
  return NULL;
}
