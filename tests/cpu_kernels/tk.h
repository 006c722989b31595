/* tests/cpu_kernels/tk.h: shared helpers of the kernel library tests:
 * deterministic pseudo-random data, pools for 1 and 2 threads, the fused
 * activations' reference, and the suites each test file contributes. */
#ifndef TK_H
#define TK_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

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

Suite *tk_gemm_suite(void);
Suite *tk_conv_suite(void);
Suite *tk_conv_dense_suite(void);
Suite *tk_rowwise_suite(void);
Suite *tk_generic_suite(void);
Suite *tk_pool_suite(void);
Suite *tk_quant_gemm_suite(void);
Suite *tk_winograd_suite(void);

#endif
