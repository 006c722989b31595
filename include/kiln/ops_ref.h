/* kiln/ops_ref.h: reference numerics that several backends must compute
 * bit for bit like the interpreter: the integer power of Pow and Det's LU
 * elimination. Header-only and freestanding (stdint.h alone), so that the
 * cpu backend's bitcode kernels, built without libkiln, include the same
 * code the interpreter runs. Every function is pure and thread-safe. */
#ifndef KILN_OPS_REF_H
#define KILN_OPS_REF_H

#include <stdint.h>

/* base ** e with two's-complement wrap-around; a negative exponent gives
 * the truncated reciprocal (1, -1 or 0), as the ONNX reference does. */
static inline int64_t kiln_ref_ipow(int64_t base, int64_t e) {
  if (e < 0)
    return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, b = (uint64_t)base;
  while (e) {
    if (e & 1)
      r *= b;
    b *= b;
    e >>= 1;
  }
  return (int64_t)r;
}

/* The determinant of the n x n row-major matrix a, by Gaussian elimination
 * with partial pivoting (the first row of largest magnitude), in double.
 * a is overwritten. Stops at the first zero pivot (or once the running
 * product is 0), so a singular matrix gives exactly 0. */
static inline double kiln_ref_det(double *a, int64_t n) {
  double det = 1;
  for (int64_t c = 0; c < n && det != 0; c++) {
    int64_t piv = c;
    for (int64_t i = c + 1; i < n; i++) {
      double v = a[i * n + c], p = a[piv * n + c];
      if ((v < 0 ? -v : v) > (p < 0 ? -p : p))
        piv = i;
    }
    if (a[piv * n + c] == 0)
      return 0;
    if (piv != c) {
      for (int64_t j = 0; j < n; j++) {
        double t = a[c * n + j];
        a[c * n + j] = a[piv * n + j];
        a[piv * n + j] = t;
      }
      det = -det;
    }
    det *= a[c * n + c];
    for (int64_t i = c + 1; i < n; i++) {
      double f = a[i * n + c] / a[c * n + c];
      for (int64_t j = c; j < n; j++)
        a[i * n + j] -= f * a[c * n + j];
    }
  }
  return det;
}

#endif
