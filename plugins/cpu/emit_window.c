/* plugins/cpu/emit_window.c: window geometry of Conv, ConvTranspose and
 * the pools (see emit_window.h). SAME_UPPER puts the odd pad at the end,
 * and ConvTranspose's total padding is halved by floor division, as in the
 * reference interpreter. */
#include "emit_window.h"

#include <string.h>

/* Window geometry for spatial rank sp (1 or 2) lifted to 2-D (H = 1). */
bool kcpu_win_make(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                   const int64_t *kshape, uint32_t sp, kcpu_win *w) {
  const int64_t *st, *dl, *pads;
  uint32_t ns = kcpu_e_ints(a, "strides", &st), nd = kcpu_e_ints(a, "dilations", &dl);
  uint32_t np = kcpu_e_ints(a, "pads", &pads);
  if ((ns && ns != sp) || (nd && nd != sp) || (np && np != 2 * sp))
    return false;
  const char *ap = kiln_attrs_string_or(a, "auto_pad", "NOTSET");
  bool upper = !strcmp(ap, "SAME_UPPER"), lower = !strcmp(ap, "SAME_LOWER");
  bool valid = !strcmp(ap, "VALID");
  if (!upper && !lower && !valid && strcmp(ap, "NOTSET"))
    return false;
  for (int i = 0; i < 2; i++) {
    w->in[i] = w->out[i] = w->k[i] = w->s[i] = w->d[i] = 1;
    w->pb[i] = w->pe[i] = 0;
  }
  for (uint32_t i = 0; i < sp; i++) {
    uint32_t j = i + 2 - sp;
    w->in[j] = x->dims[2 + i];
    w->out[j] = y->dims[2 + i];
    w->k[j] = kshape[i];
    w->s[j] = ns ? st[i] : 1;
    w->d[j] = nd ? dl[i] : 1;
    if (upper || lower) {
      int64_t total = (w->out[j] - 1) * w->s[j] + (w->k[j] - 1) * w->d[j] + 1 - w->in[j];
      if (total < 0)
        total = 0;
      w->pb[j] = upper ? total / 2 : total - total / 2;
      w->pe[j] = total - w->pb[j];
    } else if (!valid && np) {
      w->pb[j] = pads[i];
      w->pe[j] = pads[sp + i];
    }
    if (w->s[j] < 1 || w->d[j] < 1 || w->pb[j] < 0 || w->pe[j] < 0)
      return false;
  }
  return true;
}

static bool kcpu_nd_list(const kiln_attrs *a, const char *name, int64_t n, int64_t dflt,
                         int64_t *out) {
  const int64_t *v;
  uint32_t len = kcpu_e_ints(a, name, &v);
  if (len && len != n)
    return false;
  for (int64_t i = 0; i < n; i++)
    out[i] = len ? v[i] : dflt;
  return true;
}

bool kcpu_nd_win(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                 const int64_t *kshape, bool transposed, kcpu_ndwin *w) {
  if (x->rank < 3 || x->rank - 2 > KCPU_ND_MAX || y->rank != x->rank)
    return false;
  int64_t sp = w->sp = x->rank - 2, pads[2 * KCPU_ND_MAX], opad[KCPU_ND_MAX];
  if (!kcpu_nd_list(a, "strides", sp, 1, w->s) || !kcpu_nd_list(a, "dilations", sp, 1, w->d) ||
      !kcpu_nd_list(a, "pads", 2 * sp, 0, pads) || !kcpu_nd_list(a, "output_padding", sp, 0, opad))
    return false;
  const char *ap = kiln_attrs_string_or(a, "auto_pad", "NOTSET");
  bool upper = !strcmp(ap, "SAME_UPPER"), lower = !strcmp(ap, "SAME_LOWER");
  bool valid = !strcmp(ap, "VALID");
  if (!upper && !lower && !valid && strcmp(ap, "NOTSET"))
    return false;
  const int64_t *osh;
  bool has_oshape = transposed && kcpu_e_ints(a, "output_shape", &osh) > 0;
  for (int64_t i = 0; i < sp; i++) {
    w->in[i] = x->dims[2 + i];
    w->out[i] = y->dims[2 + i];
    w->k[i] = kshape[i];
    if (w->s[i] < 1 || w->d[i] < 1)
      return false;
    int64_t span = (w->k[i] - 1) * w->d[i] + 1;
    if (transposed && (has_oshape || upper || lower)) {
      int64_t total = w->s[i] * (w->in[i] - 1) + opad[i] + span - w->out[i];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w->pb[i] = upper ? half : total - half;
      w->pe[i] = total - w->pb[i];
    } else if (upper || lower) {
      int64_t total = (w->out[i] - 1) * w->s[i] + span - w->in[i];
      if (total < 0)
        total = 0;
      w->pb[i] = upper ? total / 2 : total - total / 2;
      w->pe[i] = total - w->pb[i];
    } else if (valid) {
      w->pb[i] = w->pe[i] = 0;
    } else {
      w->pb[i] = pads[i];
      w->pe[i] = pads[sp + i];
    }
  }
  return true;
}

bool kcpu_nd_float(kiln_elem e) {
  return e == KILN_F32 || e == KILN_F64 || e == KILN_F16 || e == KILN_BF16;
}

bool kcpu_nd_same(const kiln_node *n, kiln_elem el, uint32_t n_in) {
  for (uint32_t i = 0; i < n_in && i < kcpu_n_inputs(n); i++) {
    const kiln_type *t = kcpu_n_in(n, i);
    if (t && (t->elem != el || t->quantized))
      return false;
  }
  const kiln_type *y = kcpu_n_out(n, 0);
  return y && y->elem == el && !y->quantized;
}
