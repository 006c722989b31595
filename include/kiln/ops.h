/* kiln/ops.h: operator semantics decoded once. Each family whose attributes
 * take more than a lookup to understand (sliding windows, Resize, the fused
 * activations of Conv/MatMul/Gemm, Einsum's equation, Slice's clamping) is
 * decoded here into a typed struct that every backend and pass reads, so
 * that SAME_LOWER padding or a cubic tap means the same thing in the
 * interpreter, the lowering rules and each code generator. The recurrent activation lists
 * are decoded by kiln_rnn_activations (kiln/ir.h).
 *
 * Every decoder takes the node's attributes and the types it was inferred
 * with, fills a caller-owned struct (no allocation; nothing to free) and
 * returns NULL, or a status owned by the caller whose message starts with
 * the kind ("Conv: attribute 'strides' has 3 entries; expected 2"). On
 * failure the struct is unspecified. All functions are thread-safe. */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/ir.h"
#include "kiln/status.h"
#include "kiln/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Sliding windows: Conv, ConvTranspose, ConvInteger, QLinearConv,
 * AveragePool, MaxPool, LpPool. */

#define KILN_WINDOW_MAX_RANK (KILN_MAX_RANK - 2)

typedef enum kiln_auto_pad {
  KILN_AUTO_PAD_NOTSET = 0, /* the explicit `pads` */
  KILN_AUTO_PAD_SAME_UPPER = 1,
  KILN_AUTO_PAD_SAME_LOWER = 2,
  KILN_AUTO_PAD_VALID = 3
} kiln_auto_pad;

typedef struct kiln_window {
  uint32_t rank; /* spatial dims: the input's rank - 2 */
  kiln_auto_pad auto_pad;
  bool transposed; /* ConvTranspose's geometry */
  int64_t in[KILN_WINDOW_MAX_RANK];     /* spatial input sizes */
  int64_t out[KILN_WINDOW_MAX_RANK];    /* spatial result sizes (from the result type) */
  int64_t kernel[KILN_WINDOW_MAX_RANK]; /* kernel sizes, before dilation */
  int64_t stride[KILN_WINDOW_MAX_RANK];
  int64_t dilation[KILN_WINDOW_MAX_RANK];
  /* Padding with auto_pad resolved. SAME_UPPER puts the odd cell at the end.
   * A transposed window's total may be negative (output_shape asks for more
   * than the full result): it is halved by floor division, as the ONNX
   * reference does, so pad_begin may be 0 while pad_end is -1. */
  int64_t pad_begin[KILN_WINDOW_MAX_RANK];
  int64_t pad_end[KILN_WINDOW_MAX_RANK];
  int64_t output_padding[KILN_WINDOW_MAX_RANK]; /* transposed only; else 0 */
} kiln_window;

/* Decodes the window of a node of `kind` (its name, for messages) with
 * input type x (rank >= 3) and result type y (same rank). kernel: the
 * kernel's spatial sizes when the node has weights (W's dims + 2), or NULL
 * to read the `kernel_shape` attribute, which is then required. Checks the
 * lengths of strides / dilations / pads / output_padding, strides and
 * dilations >= 1, pads >= 0, and the auto_pad name. */
KILN_NODISCARD kiln_status kiln_window_decode(const char *kind, const kiln_attrs *attrs,
                                              const kiln_type *x, const kiln_type *y,
                                              const int64_t *kernel, bool transposed,
                                              kiln_window *out);

/* The dilated kernel extent of spatial dim i: (kernel - 1) * dilation + 1. */
static inline int64_t kiln_window_span(const kiln_window *w, uint32_t i) {
  return (w->kernel[i] - 1) * w->dilation[i] + 1;
}

/* ------------------------------------------------------------------------
 * Resize and Upsample: coordinate transform, nearest rounding and the
 * linear / cubic (Keys) filters, antialiasing included. Interpolation is
 * separable: each axis gives every result index a few (input index,
 * weight) taps, and a result cell is the weighted sum over their product. */

typedef enum kiln_resize_mode {
  KILN_RESIZE_NEAREST = 0,
  KILN_RESIZE_LINEAR = 1,
  KILN_RESIZE_CUBIC = 2
} kiln_resize_mode;

typedef enum kiln_resize_coord {
  KILN_RESIZE_HALF_PIXEL = 0,
  KILN_RESIZE_HALF_PIXEL_SYMMETRIC = 1,
  KILN_RESIZE_PYTORCH_HALF_PIXEL = 2,
  KILN_RESIZE_ALIGN_CORNERS = 3,
  KILN_RESIZE_ASYMMETRIC = 4,
  KILN_RESIZE_TF_CROP_AND_RESIZE = 5,
  KILN_RESIZE_TF_HALF_PIXEL_FOR_NN = 6
} kiln_resize_coord;

typedef enum kiln_resize_round {
  KILN_RESIZE_ROUND_PREFER_FLOOR = 0,
  KILN_RESIZE_ROUND_PREFER_CEIL = 1,
  KILN_RESIZE_FLOOR = 2,
  KILN_RESIZE_CEIL = 3
} kiln_resize_round;

/* Most taps one axis may have: antialiasing widens the filter by 1/scale. */
#define KILN_RESIZE_MAX_TAPS 64

typedef struct kiln_resize {
  kiln_resize_mode mode;
  kiln_resize_coord coord;
  kiln_resize_round nearest;
  bool exclude_outside;
  bool antialias;       /* set only for linear and cubic: nearest ignores it */
  double cubic_a;       /* cubic_coeff_a */
  double extrapolation; /* extrapolation_value (tf_crop_and_resize) */
  uint32_t rank;
  int64_t in[KILN_MAX_RANK], out[KILN_MAX_RANK];
  double scale[KILN_MAX_RANK]; /* > 0; 1 on axes that are not resampled */
  double roi_lo[KILN_MAX_RANK], roi_hi[KILN_MAX_RANK]; /* 0 and 1 unless tf_crop_and_resize */
} kiln_resize;

/* Decodes a node of kind KILN_NODE_Resize (static `scales` or `sizes`,
 * `roi`, `axes` as the ONNX loader writes them) or KILN_NODE_Upsample (its
 * `scales`, asymmetric coordinates, nearest by floor) with input type x and
 * result type y. Without scales, each scale is sizes (or the result dim)
 * over the input dim, one common scale under keep_aspect_ratio_policy
 * not_larger / not_smaller. */
KILN_NODISCARD kiln_status kiln_resize_decode(kiln_node_kind kind, const kiln_attrs *attrs,
                                              const kiln_type *x, const kiln_type *y,
                                              kiln_resize *out);

/* The input coordinate of result index o on axis d. False when
 * tf_crop_and_resize puts it outside the input (the result cell is then
 * the extrapolation value). Modes that divide by the result length use
 * in * scale, not the floored result dim (ONNX's length_resized). */
bool kiln_resize_source(const kiln_resize *r, uint32_t d, int64_t o, double *xo);

/* How many taps every result index of axis d has: 1 (nearest), 2
 * (linear), 4 (cubic), or more when antialiasing a downsampled axis; -1
 * when that exceeds KILN_RESIZE_MAX_TAPS. */
int kiln_resize_tap_count(const kiln_resize *r, uint32_t d);

/* The kiln_resize_tap_count(r, d) taps of input coordinate xo on axis d:
 * input indices (clamped into the axis) and weights. idx and w have room
 * for KILN_RESIZE_MAX_TAPS. */
void kiln_resize_taps(const kiln_resize *r, uint32_t d, double xo, int64_t *idx, double *w);

/* Keys' cubic convolution kernel with parameter a at distance x. */
double kiln_resize_cubic(double a, double x);

/* ------------------------------------------------------------------------
 * The activation a backend may apply in the epilogue of Conv, MatMul and
 * Gemm (kiln's `activation` / `activation_alpha` attributes, set by the
 * fuseact pass for backends that declare the fused form). */

typedef enum kiln_fused_act_kind {
  KILN_FUSED_ACT_NONE = 0,
  KILN_FUSED_ACT_RELU = 1,
  KILN_FUSED_ACT_LEAKY_RELU = 2,
  KILN_FUSED_ACT_SIGMOID = 3,
  KILN_FUSED_ACT_TANH = 4,
  KILN_FUSED_ACT_GELU = 5, /* the exact (erf) form: 0.5 x (1 + erf(x / sqrt 2)) */
  /* Since plugin ABI 1.4; parameters in kiln_fused_act_params: */
  KILN_FUSED_ACT_CLIP = 6,         /* x < alpha ? alpha : x, then > beta ? beta (NaN stays) */
  KILN_FUSED_ACT_HARD_SIGMOID = 7, /* max(0, min(1, alpha x + beta)) */
  KILN_FUSED_ACT_HARD_SWISH = 8,   /* x max(0, min(1, x / 6 + 1/2)) */
  KILN_FUSED_ACT_SWISH = 9         /* x sigmoid(alpha x); SiLU is alpha 1 */
} kiln_fused_act_kind;
#define KILN_FUSED_ACT_KIND_COUNT 10

typedef struct kiln_fused_act {
  kiln_fused_act_kind kind;
  double alpha; /* as in kiln_fused_act_params; 0 where that has none */
} kiln_fused_act;

/* The activation of a node's attributes (KILN_FUSED_ACT_NONE without one).
 * Fails, naming `kind`, on a name outside the list. Yields no beta: a
 * backend that fuses Clip or HardSigmoid reads kiln_fused_act_decode_params. */
KILN_NODISCARD kiln_status kiln_fused_act_decode(const char *kind, const kiln_attrs *attrs,
                                                 kiln_fused_act *out);

/* ABI 1.4: an activation with both of its parameters, from `activation`,
 * `activation_alpha` and `activation_beta`:
 *   LeakyRelu    alpha: slope (default 0.01)
 *   Clip         alpha: min, beta: max (absent: -inf / +inf)
 *   HardSigmoid  alpha, beta (defaults 0.2, 0.5, as the ONNX operator)
 *   HardSwish    alpha 1/6, beta 0.5 (fixed: x * HardSigmoid(x))
 *   Swish        alpha (default 1)
 * and 0 for a parameter the kind does not have. */
typedef struct kiln_fused_act_params {
  kiln_fused_act_kind kind;
  double alpha, beta;
} kiln_fused_act_params;

KILN_NODISCARD kiln_status kiln_fused_act_decode_params(const char *kind, const kiln_attrs *attrs,
                                                        kiln_fused_act_params *out);

/* The node kind an activation stands for ("Relu"...), KILN_NODE_KIND_COUNT
 * for NONE; and the activation of a node kind, NONE when it has none. */
kiln_node_kind kiln_fused_act_node_kind(kiln_fused_act_kind k);
kiln_fused_act_kind kiln_fused_act_of_node_kind(kiln_node_kind k);

/* ------------------------------------------------------------------------
 * Einsum: the equation parsed against the input types. Every letter and
 * every broadcast ellipsis dim is one label id: a-z are 0..25, A-Z 26..51,
 * and the ellipsis dims, left to right after numpy broadcasting of every
 * term's "...", are KILN_EINSUM_LETTERS + 0 .. + ell_rank - 1 (a term with
 * fewer ellipsis dims takes the rightmost ids). Spaces are ignored. */

#define KILN_EINSUM_MAX_INPUTS 16
#define KILN_EINSUM_LETTERS 52
#define KILN_EINSUM_MAX_LABELS (KILN_EINSUM_LETTERS + KILN_MAX_RANK)

typedef struct kiln_einsum {
  uint32_t n_inputs;
  uint32_t rank[KILN_EINSUM_MAX_INPUTS]; /* each input's rank */
  /* The label of each input dim; a repeated id within one input is a
   * diagonal. */
  uint8_t label[KILN_EINSUM_MAX_INPUTS][KILN_MAX_RANK];
  /* The result's labels, all distinct: the explicit "->" term, or
   * (implicit, as numpy) the ellipsis dims, then the letters that occur
   * once, in ASCII order (A-Z before a-z). */
  uint32_t out_rank;
  uint8_t out_label[KILN_MAX_RANK];
  uint32_t ell_rank; /* broadcast ellipsis dims (0 without "...") */
  uint32_t n_labels; /* KILN_EINSUM_LETTERS + ell_rank: every id is below it */
  /* Per id: the size (an ellipsis dim's broadcast size; an input dim of 1
   * under a larger ellipsis size is broadcast), -1 for a letter not in
   * the equation; and how often it occurs over the input terms. */
  int64_t size[KILN_EINSUM_MAX_LABELS];
  uint32_t count[KILN_EINSUM_MAX_LABELS];
  /* The ids that occur in an input but not in the result, ascending:
   * the ones summed over. */
  uint32_t n_summed;
  uint8_t summed[KILN_EINSUM_MAX_LABELS];
} kiln_einsum;

/* Decodes the `equation` attribute against the n_inputs input types
 * (at most KILN_EINSUM_MAX_INPUTS). Checks one term per input, a term's
 * letter count against its input's rank, at most one "..." per term,
 * one size per letter everywhere (an input's diagonal included), the
 * ellipsis dims broadcasting, and output labels that are distinct, in
 * some input and at most KILN_MAX_RANK. The messages quote the equation
 * without its spaces. */
KILN_NODISCARD kiln_status kiln_einsum_decode(const kiln_attrs *attrs,
                                              const kiln_type *const *inputs, uint32_t n_inputs,
                                              kiln_einsum *out);

/* The character of label id l: its letter, or '.' for an ellipsis dim. */
static inline char kiln_einsum_char(uint32_t l) {
  return l < 26 ? (char)('a' + l) : l < KILN_EINSUM_LETTERS ? (char)('A' + l - 26) : '.';
}

/* ------------------------------------------------------------------------
 * Slice: starts / ends / axes / steps resolved against the input shape.
 * Negative starts, ends and axes count from the end; starts and ends are
 * clamped into the axis ([0, dim] for a positive step, [-1, dim - 1] for
 * a negative one), as ONNX defines. */

typedef struct kiln_slice {
  uint32_t rank; /* the input's */
  /* Per input axis: the first index read, the step between reads and the
   * result length. An axis the attributes do not name is 0, 1, dim. */
  int64_t start[KILN_MAX_RANK];
  int64_t step[KILN_MAX_RANK];
  int64_t len[KILN_MAX_RANK];
} kiln_slice;

/* Decodes the Slice attributes against input type x. Checks that starts
 * and ends are present, that the four lists have one length, that no
 * axis is out of range or named twice (without axes, starts may not be
 * longer than the rank), and that no step is 0. */
KILN_NODISCARD kiln_status kiln_slice_decode(const kiln_attrs *attrs, const kiln_type *x,
                                             kiln_slice *out);

#ifdef __cplusplus
}
#endif
#endif
