/* kiln/ops_ref.h: reference numerics that several backends must compute
 * bit for bit like the interpreter: the f16 / bf16 conversions, the
 * integer power of Pow, Det's LU elimination and the requantization of
 * QLinearConv / QLinearMatMul. Header-only, needing stdint.h and string.h
 * alone (rounding uses the compiler's __builtin_rint, which gcc and clang
 * inline or turn into a call to rint), so that the cpu backend's bitcode
 * kernels, built without libkiln, include the same code the interpreter
 * runs. Every function is pure and thread-safe. */
#ifndef KILN_OPS_REF_H
#define KILN_OPS_REF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t kiln_ref_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float kiln_ref_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* IEEE half to float: exact. NaN keeps its payload's top bits. */
static inline float kiln_ref_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f)
    return kiln_ref_bits_f32(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return kiln_ref_bits_f32(sign);
    /* subnormal: value = mant * 2^-24, exact in f32 */
    float v = (float)mant * 0x1p-24f;
    return sign ? -v : v;
  }
  return kiln_ref_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

/* Float to IEEE half, rounded to nearest even; 65520 and above become
 * infinity; NaN stays a quiet NaN with the payload's top bits. */
static inline uint16_t kiln_ref_f32_to_f16(float f) {
  uint32_t u = kiln_ref_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {
    if (abs > 0x7f800000u)
      return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    return (uint16_t)(sign | 0x7c00u);
  }
  if (abs >= 0x477ff000u)
    return (uint16_t)(sign | 0x7c00u);
  int32_t exp = (int32_t)(abs >> 23) - 127;
  if (exp < -14) {
    /* subnormal or zero in f16: value / 2^-24, rounded to nearest even */
    if (exp < -25)
      return sign;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u; /* 24-bit significand */
    uint32_t shift = (uint32_t)(-exp - 14 + 13);   /* bits to drop */
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
      q++;
    return (uint16_t)(sign | q);
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t q = ((uint32_t)(exp + 15) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1)))
    q++; /* a carry into the exponent is the correct rounding */
  return (uint16_t)(sign | q);
}

/* bfloat16 is the top half of a float: widening is exact; narrowing
 * rounds to nearest even, and a NaN stays a quiet NaN (never rounds to
 * infinity). */
static inline float kiln_ref_bf16_to_f32(uint16_t h) {
  return kiln_ref_bits_f32((uint32_t)h << 16);
}

static inline uint16_t kiln_ref_f32_to_bf16(float f) {
  uint32_t u = kiln_ref_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)((u + rounding) >> 16);
}

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

/* The requantization multiplier x_scale * w_scale / y_scale of the qlinear
 * kinds, as the ONNX reference computes it: in float32 when no scale is
 * f64 (numpy keeps f32 * f32 in f32), rounding after each step, else in
 * double. The scales come as doubles holding their exact values. In double
 * throughout, results near a tie would move (0.1 * 0.1 / 0.3 times 15 is
 * just above 0.5 in f32, just below in double). */
static inline double kiln_ref_requant_multiplier(double x_scale, double w_scale, double y_scale,
                                                 int any_f64) {
  double p = x_scale * w_scale; /* exact in double for f32 operands */
  if (!any_f64)
    p = (double)(float)p;
  double s = p / y_scale;
  return any_f64 ? s : (double)(float)s;
}

/* One requantized result from an accumulator held exactly in a double
 * (an integer below 2^53: the int32 sum plus the bias): times the
 * multiplier, rounded half to even (the default rounding mode) before the
 * zero point is added, as ONNX does, then saturated to [lo, hi] (the result
 * type's range); NaN (an infinite multiplier times 0) gives 0. Branch-free,
 * so that a loop of them vectorizes. */
static inline double kiln_ref_requantize_f64(double acc, double multiplier, double zero_point,
                                             double lo, double hi) {
  double v = __builtin_rint(acc * multiplier) + zero_point;
  v = v != v ? 0.0 : v;
  return v < lo ? lo : v > hi ? hi : v;
}

/* The same for an int64 accumulator. */
static inline int64_t kiln_ref_requantize(int64_t acc, double multiplier, int64_t zero_point,
                                          double lo, double hi) {
  return (int64_t)kiln_ref_requantize_f64((double)acc, multiplier, (double)zero_point, lo, hi);
}

#endif
