/* plugins/cpu/kernels/quant.c: QuantizeLinear / DequantizeLinear (per
 * tensor, axis or block) and DynamicQuantizeLinear, any element types. */
#include <math.h>

#include "kcpu_elem.h"

static double kcpu_sat255(double v) {
  return v < 0.0 ? 0.0 : v > 255.0 ? 255.0 : v;
}

/* DynamicQuantizeLinear of n f32 values to u8 with the range extended to
 * include 0; scale and quotients are float as in the ONNX reference,
 * rounding half to even. */
void kcpu_k_dynquant(const float *x, uint8_t *y, float *scale_out, uint8_t *zp_out, int64_t n) {
  float mn = 0.0f, mx = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  float scale = (mx - mn) / 255.0f;
  double zp = 0.0;
  if (scale != 0.0f)
    zp = kcpu_sat255(nearbyint((double)(0.0f - mn / scale)));
  *scale_out = scale;
  *zp_out = (uint8_t)zp;
  for (int64_t i = 0; i < n; i++) {
    double v = scale == 0.0f ? 0.0 : nearbyint((double)(x[i] / scale));
    y[i] = (uint8_t)kcpu_sat255(v + zp);
  }
}

/* Quantization parameters' index for element i of x: mode 0 per tensor,
 * 1 per axis, 2 blocked (the axis coordinate divided by block, raveled
 * over sdims). */
static int64_t kcpu_q_index(int64_t i, int64_t rank, const int64_t *xdims, const int64_t *sdims,
                            int64_t mode, int64_t axis, int64_t block) {
  if (mode == 0)
    return 0;
  int64_t c[16];
  for (int64_t d = rank - 1; d >= 0; d--) {
    c[d] = i % xdims[d];
    i /= xdims[d];
  }
  if (mode == 1)
    return c[axis];
  c[axis] /= block;
  int64_t j = 0;
  for (int64_t d = 0; d < rank; d++)
    j = j * sdims[d] + c[d];
  return j;
}

/* dequant 0: y (integer yt) = saturate(round_half_even(x / scale) + zp),
 * the quotient rounded to f32 unless the scale is f64, NaN to 0.
 * dequant 1: y (float yt) = (x - zp) * scale. zp may be NULL. */
/* The common case, per tensor between f32 and 8 bits, as loops the JIT
 * vectorizes. The same numbers as the general loop below: an f32 quotient
 * is what the double one rounds to (double rounding is harmless for one
 * division of floats), rint in the default mode rounds half to even, and
 * (x - zp) * scale is exact in double before its one rounding to f32. */
static void kcpu_quant_u8(const float *restrict x, float s, float z, uint8_t *restrict y,
                          int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float q = __builtin_rintf(x[i] / s) + z;
    q = q < 0.0f ? 0.0f : q > 255.0f ? 255.0f : q;
    y[i] = (uint8_t)(q == q ? q : 0.0f);
  }
}

static void kcpu_quant_i8(const float *restrict x, float s, float z, int8_t *restrict y,
                          int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float q = __builtin_rintf(x[i] / s) + z;
    q = q < -128.0f ? -128.0f : q > 127.0f ? 127.0f : q;
    y[i] = (int8_t)(q == q ? q : 0.0f);
  }
}

static void kcpu_dequant_u8(const uint8_t *restrict x, float s, float z, float *restrict y,
                            int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = ((float)x[i] - z) * s;
}

static void kcpu_dequant_i8(const int8_t *restrict x, float s, float z, float *restrict y,
                            int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = ((float)x[i] - z) * s;
}

/* True when it did the work. */
static int kcpu_quant_fast(int64_t dequant, int64_t xt, const void *x, int64_t st,
                           const void *scale, int64_t zt, const void *zp, int64_t yt, void *y,
                           int64_t n, int64_t mode) {
  int64_t it = dequant ? xt : yt, ft = dequant ? yt : xt;
  if (mode != 0 || st != KCPU_F32 || ft != KCPU_F32 || (it != KCPU_U8 && it != KCPU_I8) ||
      (zp && zt != it))
    return 0;
  float s = *(const float *)scale;
  float z = zp ? (float)(it == KCPU_U8 ? *(const uint8_t *)zp : *(const int8_t *)zp) : 0.0f;
  if (dequant && it == KCPU_U8)
    kcpu_dequant_u8(x, s, z, y, n);
  else if (dequant)
    kcpu_dequant_i8(x, s, z, y, n);
  else if (it == KCPU_U8)
    kcpu_quant_u8(x, s, z, y, n);
  else
    kcpu_quant_i8(x, s, z, y, n);
  return 1;
}

void kcpu_k_quant(int64_t dequant, int64_t xt, const void *x, int64_t st, const void *scale,
                  int64_t zt, const void *zp, int64_t yt, void *y, int64_t n, int64_t rank,
                  const int64_t *xdims, const int64_t *sdims, int64_t mode, int64_t axis,
                  int64_t block) {
  if (kcpu_quant_fast(dequant, xt, x, st, scale, zt, zp, yt, y, n, mode))
    return;
  double lo = 0, hi = 0;
  if (!dequant) {
    int bits = (int)kcpu_e_size(yt) * 8;
    int sg = yt == KCPU_I8 || yt == KCPU_I16 || yt == KCPU_I32 || yt == KCPU_I64;
    lo = sg ? -ldexp(1.0, bits - 1) : 0;
    hi = sg ? ldexp(1.0, bits - 1) - 1 : ldexp(1.0, bits) - 1;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t j = kcpu_q_index(i, rank, xdims, sdims, mode, axis, block);
    double z = zp ? kcpu_e_ldf(zt, zp, j) : 0.0, s = kcpu_e_ldf(st, scale, j);
    if (dequant) {
      kcpu_e_stf(yt, y, i, (kcpu_e_ldf(xt, x, i) - z) * s);
      continue;
    }
    double q = kcpu_e_ldf(xt, x, i) / s;
    if (st != KCPU_F64)
      q = (double)(float)q;
    double v = nearbyint(q) + z;
    v = v != v ? 0.0 : v < lo ? lo : v > hi ? hi : v;
    kcpu_e_stf(yt, y, i, v);
  }
}
