/* plugins/cpu/kernels/mathx.c: generic arithmetic the elementwise
 * generator does not cover: Pow with differing base and exponent types,
 * DynamicQuantizeLinear, and Einsum as a sum over label assignments. */
#include <math.h>

#include "kcpu_elem.h"

/* Integer power with wrap-around; a negative exponent gives the truncated
 * reciprocal (1, -1 or 0), as the reference does. */
static int64_t kcpu_ipow(int64_t base, int64_t e) {
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

/* out[i] = a^b over the output dims[rank], a and b read with their own
 * strides (0 = broadcast); the result has a's type. Integer ** integer is
 * exact, anything with a float goes through double pow. */
void kcpu_k_pow_mixed(int64_t at, const void *a, const int64_t *a_st, int64_t bt, const void *b,
                      const int64_t *b_st, void *out, int64_t rank, const int64_t *dims) {
  int64_t n = 1, c[16] = {0};
  for (int64_t d = 0; d < rank; d++)
    n *= dims[d];
  int ints = !kcpu_e_is_float(at) && !kcpu_e_is_float(bt);
  for (int64_t i = 0; i < n; i++) {
    int64_t ia = 0, ib = 0;
    for (int64_t d = 0; d < rank; d++) {
      ia += c[d] * a_st[d];
      ib += c[d] * b_st[d];
    }
    if (ints)
      kcpu_e_sti(at, out, i, kcpu_ipow(kcpu_e_ldi(at, a, ia), kcpu_e_ldi(bt, b, ib)));
    else
      kcpu_e_stf(at, out, i, pow(kcpu_e_ldf(at, a, ia), kcpu_e_ldf(bt, b, ib)));
    for (int64_t d = rank - 1; d >= 0; d--) {
      if (++c[d] < dims[d])
        break;
      c[d] = 0;
    }
  }
}

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

/* Einsum over up to 3 inputs: labels 0..n_out-1 index the output (dims
 * ldims), labels n_out..n_lab-1 are summed. st holds each input's stride
 * per label (st[j*n_lab + l], 0 where the input lacks the label or
 * broadcasts it). Floats sum in double, integers in wrapping int64. */
void kcpu_k_einsum(int64_t elem, int64_t n_in, const void *x0, const void *x1, const void *x2,
                   void *y, int64_t n_lab, int64_t n_out, const int64_t *ldims, const int64_t *st) {
  const void *xs[3] = {x0, x1, x2};
  int64_t c[32] = {0}, ny = 1, ns = 1;
  for (int64_t l = 0; l < n_out; l++)
    ny *= ldims[l];
  for (int64_t l = n_out; l < n_lab; l++)
    ns *= ldims[l];
  int fl = kcpu_e_is_float(elem);
  for (int64_t o = 0; o < ny; o++) {
    int64_t r = o;
    for (int64_t l = n_out - 1; l >= 0; l--) {
      c[l] = r % ldims[l];
      r /= ldims[l];
    }
    for (int64_t l = n_out; l < n_lab; l++)
      c[l] = 0;
    double facc = 0.0;
    uint64_t iacc = 0;
    for (int64_t s = 0; s < ns; s++) {
      double fp = 1.0;
      uint64_t ip = 1;
      for (int64_t j = 0; j < n_in; j++) {
        int64_t off = 0;
        for (int64_t l = 0; l < n_lab; l++)
          off += c[l] * st[j * n_lab + l];
        if (fl)
          fp *= kcpu_e_ldf(elem, xs[j], off);
        else
          ip *= (uint64_t)kcpu_e_ldi(elem, xs[j], off);
      }
      facc += fp;
      iacc += ip;
      for (int64_t l = n_lab - 1; l >= n_out; l--) {
        if (++c[l] < ldims[l])
          break;
        c[l] = 0;
      }
    }
    if (fl)
      kcpu_e_stf(elem, y, o, facc);
    else
      kcpu_e_sti(elem, y, o, (int64_t)iacc);
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
void kcpu_k_quant(int64_t dequant, int64_t xt, const void *x, int64_t st, const void *scale,
                  int64_t zt, const void *zp, int64_t yt, void *y, int64_t n, int64_t rank,
                  const int64_t *xdims, const int64_t *sdims, int64_t mode, int64_t axis,
                  int64_t block) {
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
