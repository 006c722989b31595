/* passes/convtrim.c: drop the filter taps of a Conv that read nothing but
 * padding. Along a spatial axis, tap k of output index o reads input index
 * o * stride - pad_begin + k * dilation; a tap for which that index is
 * outside the input for every o adds 0 * w to every result. Such taps are
 * dropped: the filters are sliced to the taps that read the input, and
 * the pads shrink by what the dropped taps spanned, so the result has the
 * same size and the same sums without the zero terms. Segmentation heads
 * are where it matters: DeepLabV3's ASPP has 3x3 layers dilated by 12, 24
 * and 36 (padding the same) on a 16x16 map, of which the last two read
 * the input at the centre tap only: 1x1 layers in effect, computed as
 * 3x3 ones on a 88x88 zero-padded plane before.
 *
 * The index grows with k, so the taps that read the input form one range
 * [lo, hi] per axis. Only for Conv with constant float filters and
 * every dropped filter value finite (0 * inf is NaN, which the
 * dropped term would have added); never where the new pads would be
 * negative or an axis reads no input at all. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/ops.h"
#include "pass_util.h"

/* The taps [lo, hi] of one axis that read the input for some output. */
static void live_taps(const kiln_window *w, uint32_t i, int64_t *lo, int64_t *hi) {
  int64_t first = -w->pad_begin[i], last = (w->out[i] - 1) * w->stride[i] - w->pad_begin[i];
  *lo = 0;
  while (*lo < w->kernel[i] && last + *lo * w->dilation[i] < 0)
    (*lo)++;
  *hi = w->kernel[i] - 1;
  while (*hi >= *lo && first + *hi * w->dilation[i] >= w->in[i])
    (*hi)--;
}

/* The filters wt sliced to taps [lo[i], hi[i]] of each spatial axis, as a
 * new constant; *finite false (and no constant) when a dropped value is
 * not finite. */
static kiln_status sliced(kiln_module *m, const kiln_value *w, uint32_t sp, const int64_t *lo,
                          const int64_t *hi, bool *finite, kiln_value **out) {
  const kiln_type *wt = kiln_value_type(w);
  kiln_type nt;
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, wt->dims, sizeof(int64_t) * wt->rank);
  for (uint32_t i = 0; i < sp; i++)
    dims[2 + i] = hi[i] - lo[i] + 1;
  KILN_TRY(kiln_type_make(wt->elem, wt->rank, dims, &nt));
  int64_t n = kiln_type_numel(wt), at = 0;
  void *buf = malloc((size_t)kiln_type_bytes(&nt) + 1);
  if (!buf)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "convtrim: no memory");
  *finite = true;
  for (int64_t e = 0; e < n; e++) {
    /* e's spatial indices, last axis fastest */
    bool keep = true;
    int64_t r = e;
    for (uint32_t i = sp; i-- > 0;) {
      int64_t k = r % wt->dims[2 + i];
      r /= wt->dims[2 + i];
      keep = keep && k >= lo[i] && k <= hi[i];
    }
    double v = kiln_elem_load_f64(wt->elem, kiln_value_data(w), e);
    if (keep)
      kiln_pass_elem_set(buf, wt->elem, at++, v);
    else if (!isfinite(v))
      *finite = false;
  }
  kiln_status st = *finite ? kiln_module_add_constant(m, NULL, &nt, buf, out) : NULL;
  free(buf);
  return st;
}

static kiln_status trim_node(kiln_function *f, kiln_node *n, const kiln_pass_options *o,
                             bool *done) {
  (void)o;
  if (kiln_node_get_kind(n) != KILN_NODE_Conv || kiln_node_input_count(n) < 2 ||
      kiln_node_result_count(n) != 1)
    return NULL;
  kiln_value *x = kiln_node_input(n, 0), *w = kiln_node_input(n, 1);
  const kiln_value *y = kiln_node_result(n, 0);
  if (!x || !w || kiln_value_get_kind(w) != KILN_VALUE_CONSTANT || !kiln_value_data(w))
    return NULL;
  const kiln_type *xt = kiln_value_type(x), *wt = kiln_value_type(w), *yt = kiln_value_type(y);
  if (!kiln_elem_is_float(wt->elem) || xt->rank < 3 || wt->rank != xt->rank ||
      yt->rank != xt->rank)
    return NULL;
  kiln_window win;
  kiln_status ws = kiln_window_decode("Conv", kiln_node_attrs(n), xt, yt, wt->dims + 2, false, &win);
  if (ws) { /* not ours to report: the verifier and the backends do */
    kiln_status_free(ws);
    return NULL;
  }
  uint32_t sp = win.rank;
  int64_t lo[KILN_WINDOW_MAX_RANK], hi[KILN_WINDOW_MAX_RANK];
  int64_t pads[2 * KILN_WINDOW_MAX_RANK], ks[KILN_WINDOW_MAX_RANK];
  bool trims = false;
  for (uint32_t i = 0; i < sp; i++) {
    live_taps(&win, i, &lo[i], &hi[i]);
    if (hi[i] < lo[i] || win.out[i] < 1)
      return NULL; /* the axis reads no input: left to the kernels */
    int64_t drop_end = (win.kernel[i] - 1 - hi[i]) * win.dilation[i];
    pads[i] = win.pad_begin[i] - lo[i] * win.dilation[i];
    pads[sp + i] = win.pad_end[i] - drop_end;
    if (pads[i] < 0 || pads[sp + i] < 0)
      return NULL;
    ks[i] = hi[i] - lo[i] + 1;
    trims = trims || ks[i] < win.kernel[i];
  }
  if (!trims)
    return NULL;
  kiln_module *m = kiln_function_module(f);
  kiln_value *nw = NULL, *ny = NULL;
  bool finite = false;
  KILN_TRY(sliced(m, w, sp, lo, hi, &finite, &nw));
  if (!finite)
    return NULL;
  /* the node's attributes with explicit pads and the new kernel shape */
  kiln_attr_desc *d;
  uint32_t nd, k = 0;
  KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(n), 2, &d, &nd));
  for (uint32_t i = 0; i < nd; i++)
    if (strcmp(d[i].name, "auto_pad") && strcmp(d[i].name, "pads") &&
        strcmp(d[i].name, "kernel_shape"))
      d[k++] = d[i];
  d[k++] = KILN_ATTR_IS("kernel_shape", ks, sp);
  d[k++] = KILN_ATTR_IS("pads", pads, 2 * sp);
  kiln_value *in[3] = {x, nw, kiln_node_input_count(n) > 2 ? kiln_node_input(n, 2) : NULL};
  kiln_status st = kiln_pass_emit(f, n, KILN_NODE_Conv, in, in[2] ? 3 : 2, d, k, &ny);
  free(d);
  KILN_TRY(st);
  if (!kiln_type_equal(kiln_value_type(ny), yt))
    return NULL; /* left dead for dce */
  KILN_TRY(kiln_pass_replace_node(f, n, &ny));
  *done = true;
  return NULL;
}

kiln_status kiln_pass_trim_conv(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  return kiln_pass_each_node(f, o, trim_node, changes);
}
