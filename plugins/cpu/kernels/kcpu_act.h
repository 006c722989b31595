/* plugins/cpu/kernels/kcpu_act.h: the activations that the GEMM epilogue
 * and the depthwise convolution kernels apply to a finished result
 * (KCPU_ACT_*, parameters a and b as kcpu_k_gemm_ex documents). Private
 * to the kernel library. Three forms of the same arithmetic: one element,
 * a vector in registers, and a row in memory for those that need a math
 * function. The element and vector forms do the same operations in the
 * same order, so an element computes the same bits in a full micro-tile
 * and in an edge tile, whatever the thread split. */
#ifndef KCPU_ACT_H
#define KCPU_ACT_H

#include "kcpu_math.h"
#include "kcpu_runtime.h"

/* The activations applied in registers (Relu's vector form is the
 * caller's: the GEMM and the depthwise kernels differ on NaN); the others
 * leave v as it is. A NaN stays NaN through Clip, as through the Clip
 * node (x < min and x > max are both false). */
static inline float kcpu_act1(int64_t act, float a, float b, float v) {
  if (act == KCPU_ACT_RELU)
    return v > 0.0f ? v : 0.0f;
  if (act == KCPU_ACT_CLIP) {
    v = v < a ? a : v;
    return v > b ? b : v;
  }
  if (act == KCPU_ACT_HARD_SIGMOID || act == KCPU_ACT_HARD_SWISH) {
    float t = v * a + b;
    t = t < 0.0f ? 0.0f : t;
    t = t > 1.0f ? 1.0f : t;
    return act == KCPU_ACT_HARD_SWISH ? v * t : t;
  }
  return v;
}

/* kcpu_act1's Clip / HardSigmoid / HardSwish on vector x of float vector
 * type VT with integer twin VI (selects by mask: the C vector extensions
 * have no vector ?: in C). */
#define KCPU_ACT_VEC_HARD(VT, VI, x, act, a, b)                                                    \
  do {                                                                                             \
    VT z_ = {0};                                                                                   \
    if ((act) == KCPU_ACT_CLIP) {                                                                  \
      VT lo_ = z_ + (a), hi_ = z_ + (b);                                                           \
      VI m_ = (VI)(x < lo_);                                                                       \
      x = (VT)(((VI)x & ~m_) | ((VI)lo_ & m_));                                                    \
      m_ = (VI)(x > hi_);                                                                          \
      x = (VT)(((VI)x & ~m_) | ((VI)hi_ & m_));                                                    \
    } else if ((act) == KCPU_ACT_HARD_SIGMOID || (act) == KCPU_ACT_HARD_SWISH) {                   \
      VT t_ = x * (a) + (b), one_ = z_ + 1.0f;                                                     \
      t_ = (VT)((VI)t_ & ~(VI)(t_ < z_));                                                          \
      VI m_ = (VI)(t_ > one_);                                                                     \
      t_ = (VT)(((VI)t_ & ~m_) | ((VI)one_ & m_));                                                 \
      if ((act) == KCPU_ACT_HARD_SWISH)                                                            \
        x *= t_;                                                                                   \
      else                                                                                         \
        x = t_;                                                                                    \
    }                                                                                              \
  } while (0)

/* y[i] = F(y[i]) over n floats in the shape kcpu_act_swish_row (below)
 * explains: three independent chains per step (the math functions are
 * long dependent chains, and the library is built without unrolling to
 * overlap them), whole vectors of 16, then the tail. */
#define KCPU_ROW_MAP(y, n, F)                                                                      \
  do {                                                                                             \
    int64_t i_ = 0;                                                                                \
    for (; i_ + 48 <= (n); i_ += 48)                                                               \
      for (int64_t j_ = i_; j_ < i_ + 16; j_++) {                                                  \
        (y)[j_] = F((y)[j_]);                                                                      \
        (y)[j_ + 16] = F((y)[j_ + 16]);                                                            \
        (y)[j_ + 32] = F((y)[j_ + 32]);                                                            \
      }                                                                                            \
    for (; i_ + 16 <= (n); i_ += 16)                                                               \
      for (int64_t j_ = i_; j_ < i_ + 16; j_++)                                                    \
        (y)[j_] = F((y)[j_]);                                                                      \
    for (; i_ < (n); i_++)                                                                         \
      (y)[i_] = F((y)[i_]);                                                                        \
  } while (0)

/* Swish, x * sigmoid(a x), over n floats in memory, run over a micro-tile
 * or a row while it is in cache. Blocks of 16 are loops of constant trip
 * count that the vectorizer turns into whole vectors of the inlined
 * sigmoid; a plain loop over n would leave a micro-tile's 48 (or a row's)
 * mostly to its scalar remainder. The tail does the same operations. */
static inline void kcpu_act_swish_row(float a, float *y, int64_t n) {
  if (a == 1.0f) { /* SiLU (EfficientNet's): x / (1 + e^-x), fewer operations */
    KCPU_ROW_MAP(y, n, kcpu_m_silu);
    return;
  }
#define KCPU_SWISH_A_(x) ((x) * kcpu_m_sigmoid(a * (x)))
  KCPU_ROW_MAP(y, n, KCPU_SWISH_A_);
#undef KCPU_SWISH_A_
}

#endif
