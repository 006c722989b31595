/* plugins/cpu/emit_window.h: window geometry shared by the Conv /
 * ConvTranspose emitters (emit_conv.c) and the pool emitters (emit_pool.c):
 * kiln_window_decode's strides, dilations and resolved padding (kiln/ops.h)
 * laid out for the f32 2-D kernels (kcpu_win) and the type-generic N-D ones
 * (kcpu_ndwin). Private to the cpu plugin. */
#ifndef KCPU_EMIT_WINDOW_H
#define KCPU_EMIT_WINDOW_H

#include "emit_util.h"

typedef struct kcpu_win {
  int64_t in[2], out[2], k[2], s[2], d[2], pb[2], pe[2];
} kcpu_win;

/* Window geometry for spatial rank sp (1 or 2) lifted to 2-D (H = 1);
 * false when the attributes do not decode. */
bool kcpu_win_make(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                   const int64_t *kshape, uint32_t sp, kcpu_win *w);
/* The 2-D kernels' kernel, stride, dilation and begin-padding arguments
 * (each H then W) as i64 constants in dst[0..7]: the run every f32 2-D
 * window kernel takes in the same order. */
#define KCPU_WIN_ARGS 8
void kcpu_win_args(kcpu_emit *e, const kcpu_win *w, LLVMValueRef dst[KCPU_WIN_ARGS]);

#define KCPU_ND_MAX 8

typedef struct kcpu_ndwin {
  int64_t sp, in[KCPU_ND_MAX], out[KCPU_ND_MAX], k[KCPU_ND_MAX], s[KCPU_ND_MAX], d[KCPU_ND_MAX],
      pb[KCPU_ND_MAX], pe[KCPU_ND_MAX];
} kcpu_ndwin;

/* N-D window geometry (x and y of rank >= 3); transposed: ConvTranspose's
 * total padding, halved by floor division. False when the attributes do
 * not decode or the rank exceeds KCPU_ND_MAX. */
bool kcpu_nd_win(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                 const int64_t *kshape, bool transposed, kcpu_ndwin *w);
/* The N-D kernels' spatial rank and input, output, kernel, stride,
 * dilation and begin-padding arrays as dst[0..6], the run every N-D window
 * kernel takes in the same order. */
#define KCPU_NDWIN_ARGS 7
void kcpu_ndwin_args(kcpu_emit *e, const kcpu_ndwin *w, LLVMValueRef dst[KCPU_NDWIN_ARGS]);
/* f32, f64, f16 or bf16. */
bool kcpu_nd_float(kiln_elem e);
/* The first n_in present inputs and the result have element type el and
 * no quantization. */
bool kcpu_nd_same(const kiln_node *n, kiln_elem el, uint32_t n_in);

#endif
