/* plugins/cpu/emit_window.c: window geometry of Conv, ConvTranspose and
 * the pools (see emit_window.h), read from kiln_window_decode (kiln/ops.h)
 * so that padding means what it means in the reference interpreter, and
 * laid out as the kernels' arguments. */
#include "emit_window.h"

#include <kiln/ops.h>

/* The decoded window, or false when the decoder rejects the attributes: the
 * node is then unsupported and the caller reports it, so the status is
 * dropped. */
static bool kcpu_window(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                        const int64_t *kshape, bool transposed, kiln_window *w) {
  kiln_status st = kiln_window_decode("cpu window", a, x, y, kshape, transposed, w);
  if (!st)
    return true;
  kiln_status_free(st);
  return false;
}

/* Window geometry for spatial rank sp (1 or 2) lifted to 2-D (H = 1). */
bool kcpu_win_make(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                   const int64_t *kshape, uint32_t sp, kcpu_win *w) {
  kiln_window win;
  if (!x || x->rank != sp + 2 || !kcpu_window(a, x, y, kshape, false, &win))
    return false;
  for (int i = 0; i < 2; i++) {
    w->in[i] = w->out[i] = w->k[i] = w->s[i] = w->d[i] = 1;
    w->pb[i] = w->pe[i] = 0;
  }
  for (uint32_t i = 0; i < sp; i++) {
    uint32_t j = i + 2 - sp;
    w->in[j] = win.in[i];
    w->out[j] = win.out[i];
    w->k[j] = win.kernel[i];
    w->s[j] = win.stride[i];
    w->d[j] = win.dilation[i];
    w->pb[j] = win.pad_begin[i];
    w->pe[j] = win.pad_end[i];
  }
  return true;
}

void kcpu_win_args(kcpu_emit *e, const kcpu_win *w, LLVMValueRef dst[KCPU_WIN_ARGS]) {
  const int64_t *runs[] = {w->k, w->s, w->d, w->pb};
  for (int r = 0; r < 4; r++)
    for (int i = 0; i < 2; i++)
      dst[2 * r + i] = kcpu_i64(e, runs[r][i]);
}

bool kcpu_nd_win(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                 const int64_t *kshape, bool transposed, kcpu_ndwin *w) {
  kiln_window win;
  if (x->rank < 3 || x->rank - 2 > KCPU_ND_MAX || y->rank != x->rank ||
      !kcpu_window(a, x, y, kshape, transposed, &win))
    return false;
  w->sp = win.rank;
  for (uint32_t i = 0; i < win.rank; i++) {
    w->in[i] = win.in[i];
    w->out[i] = win.out[i];
    w->k[i] = win.kernel[i];
    w->s[i] = win.stride[i];
    w->d[i] = win.dilation[i];
    w->pb[i] = win.pad_begin[i];
    w->pe[i] = win.pad_end[i];
  }
  return true;
}

void kcpu_ndwin_args(kcpu_emit *e, const kcpu_ndwin *w, LLVMValueRef dst[KCPU_NDWIN_ARGS]) {
  const int64_t *runs[] = {w->in, w->out, w->k, w->s, w->d, w->pb};
  dst[0] = kcpu_i64(e, w->sp);
  for (int r = 0; r < 6; r++)
    dst[1 + r] = kcpu_i64_array(e, runs[r], (uint32_t)w->sp);
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
