/* plugins/cpu/kernels/norm_generic.c: LayerNormalization,
 * BatchNormalization and Softmax / LogSoftmax for the float types the f32
 * kernels of norm.c do not take (f64, f16, bf16): statistics in double with
 * one rounding per result, as the reference computes them, so
 * a lowered chain of f16 steps (each rounded) is not needed. */
#include <math.h>

#include "kcpu_elem.h"

/* Rows of n: y = (x - mean) * inv * scale + bias, two-pass statistics.
 * bias, mean_out, inv_out may be NULL; st is their element type. */
void kcpu_k_layernorm_any(int64_t elem, const void *x, const void *scale, const void *bias, void *y,
                          int64_t st, void *mean_out, void *inv_out, int64_t rows, int64_t n,
                          double eps) {
  for (int64_t r = 0; r < rows; r++) {
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < n; i++)
      mean += kcpu_e_ldf(elem, x, r * n + i);
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) {
      double d = kcpu_e_ldf(elem, x, r * n + i) - mean;
      var += d * d;
    }
    var /= (double)n;
    double inv = 1.0 / sqrt(var + eps);
    for (int64_t i = 0; i < n; i++) {
      double v = (kcpu_e_ldf(elem, x, r * n + i) - mean) * inv * kcpu_e_ldf(elem, scale, i);
      if (bias)
        v += kcpu_e_ldf(elem, bias, i);
      kcpu_e_stf(elem, y, r * n + i, v);
    }
    if (mean_out)
      kcpu_e_stf(st, mean_out, r, mean);
    if (inv_out)
      kcpu_e_stf(st, inv_out, r, inv);
  }
}

/* Inference BatchNormalization on [N, C, inner]: (x - mean) * k + bias
 * with k = scale / sqrt(var + eps). */
void kcpu_k_batchnorm_any(int64_t elem, const void *x, const void *scale, const void *bias,
                          const void *mean, const void *var, void *y, int64_t N, int64_t C,
                          int64_t inner, double eps) {
  for (int64_t c = 0; c < C; c++) {
    double k = kcpu_e_ldf(elem, scale, c) / sqrt(kcpu_e_ldf(elem, var, c) + eps);
    double m = kcpu_e_ldf(elem, mean, c), b = kcpu_e_ldf(elem, bias, c);
    for (int64_t n = 0; n < N; n++)
      for (int64_t i = 0; i < inner; i++) {
        int64_t idx = (n * C + c) * inner + i;
        kcpu_e_stf(elem, y, idx, (kcpu_e_ldf(elem, x, idx) - m) * k + b);
      }
  }
}

/* Softmax (log 0) / LogSoftmax (log 1) over the middle dim of
 * [outer, n, inner]. */
void kcpu_k_softmax_any(int64_t elem, const void *x, void *y, int64_t outer, int64_t n,
                        int64_t inner, int64_t log_) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t base = o * n * inner + i;
      double mx = -INFINITY, sum = 0.0;
      for (int64_t k = 0; k < n; k++) {
        double v = kcpu_e_ldf(elem, x, base + k * inner);
        mx = v > mx || v != v ? v : mx;
      }
      for (int64_t k = 0; k < n; k++)
        sum += exp(kcpu_e_ldf(elem, x, base + k * inner) - mx);
      double ls = log(sum);
      for (int64_t k = 0; k < n; k++) {
        double v = kcpu_e_ldf(elem, x, base + k * inner) - mx;
        kcpu_e_stf(elem, y, base + k * inner, log_ ? v - ls : exp(v) / sum);
      }
    }
}
