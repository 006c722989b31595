/* tests/cpu_kernels/tk.h: shared helpers of the kernel library tests:
 * deterministic pseudo-random data, pools for 1 and 2 threads, the fused
 * activations' reference, and the suites each test file contributes. */
#ifndef TK_H
#define TK_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "gemm_impl.h"
#include "kcpu_runtime.h"

/* Values in [-1, 1) from a fixed LCG, so failures reproduce. */
static inline void tk_fill(float *p, int64_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

static inline float *tk_alloc(int64_t n) {
  return calloc((size_t)(n > 0 ? n : 1), sizeof(float));
}

/* `groups` row-major R x K matrices (src, one after another) in the
 * engine's prepacked layout with unit U, written from the layout's
 * definition in gemm_impl.h: element (i, k) of a matrix at k0*RP +
 * (i/U)*U*kc + (k-k0)*U + i%U, padding rows zero, matrices one after
 * another. The filters as A (U = MR) or a weight as B (U = NR). */
static inline float *tk_pack(const float *src, int64_t groups, int64_t R, int64_t K, int64_t U) {
  int64_t RP = (R + U - 1) / U * U, per = kcpu_prepacked_size(R, K, U);
  float *p = tk_alloc(groups * per);
  for (int64_t g = 0; g < groups; g++)
    for (int64_t i = 0; i < R; i++)
      for (int64_t k = 0; k < K; k++) {
        int64_t k0 = k / KCPU_KC * KCPU_KC, kc = K - k0 < KCPU_KC ? K - k0 : KCPU_KC;
        p[g * per + k0 * RP + (i / U) * U * kc + (k - k0) * U + i % U] = src[(g * R + i) * K + k];
      }
  return p;
}

/* The fused activations (KCPU_ACT_*, parameters a and b) in double, from
 * the ONNX operators' formulas. */
static inline double tk_ref_act(int64_t act, double a, double b, double x) {
  switch (act) {
  case KCPU_ACT_RELU:
    return x > 0 ? x : 0;
  case KCPU_ACT_GELU:
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case KCPU_ACT_CLIP:
    return fmin(fmax(x, a), b);
  case KCPU_ACT_HARD_SIGMOID:
    return fmax(0, fmin(1, a * x + b));
  case KCPU_ACT_HARD_SWISH:
    return x * fmax(0, fmin(1, x / 6 + 0.5));
  case KCPU_ACT_SWISH:
    return x / (1 + exp(-a * x));
  default:
    return x;
  }
}

/* Every fused activation once, with parameters that put its bends inside
 * the test data's range (HardSwish's are the fixed 1/6 and 1/2). */
typedef struct tk_act {
  int64_t act;
  float a, b;
} tk_act;
#define TK_N_ACTS 7
static inline const tk_act *tk_acts(void) {
  static const tk_act v[TK_N_ACTS] = {{KCPU_ACT_NONE, 0, 0},
                                      {KCPU_ACT_RELU, 0, 0},
                                      {KCPU_ACT_CLIP, 0.0f, 0.5f},
                                      {KCPU_ACT_HARD_SIGMOID, 0.4f, 0.25f},
                                      {KCPU_ACT_HARD_SWISH, 1.0f / 6, 0.5f},
                                      {KCPU_ACT_SWISH, 1.0f, 0},
                                      {KCPU_ACT_GELU, 0, 0}};
  return v;
}

Suite *tk_gemm_suite(void);
Suite *tk_conv_suite(void);
Suite *tk_conv3d_suite(void);
Suite *tk_convt_suite(void);
Suite *tk_conv_dense_suite(void);
Suite *tk_rowwise_suite(void);
Suite *tk_generic_suite(void);
Suite *tk_pool_suite(void);
Suite *tk_quant_gemm_suite(void);
Suite *tk_winograd_suite(void);
Suite *tk_conv_blocked_suite(void);
Suite *tk_blocked_dw_suite(void);
Suite *tk_threadpool_suite(void);

#endif
