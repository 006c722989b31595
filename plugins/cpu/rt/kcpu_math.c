/* plugins/cpu/rt/kcpu_math.c: branch-free float approximations of exp, log,
 * tanh, sigmoid, erf, sin, cos and friends (range reduction + polynomial).
 * Written as scalar C with selects instead of branches, so that after
 * inlining into a generated loop the loop vectorizer turns them into vector
 * code of the target's width; libm calls would block vectorization. */
#include "kcpu_math.h"

#include <stdint.h>
#include <string.h>

static inline float m_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint32_t m_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float m_min(float a, float b) {
  return a < b ? a : b;
}
static inline float m_max(float a, float b) {
  return a > b ? a : b;
}
static inline float m_abs(float x) {
  return m_from_bits(m_bits(x) & 0x7fffffffu);
}
/* Round to nearest with the 1.5*2^23 trick (|x| < 2^22): no libm call. */
static inline float m_round(float x) {
  const float magic = 12582912.0f;
  return (x + magic) - magic;
}
/* 2^n for an integer n in [-126, 127]. */
static inline float m_pow2i(int32_t n) {
  return m_from_bits((uint32_t)(n + 127) << 23);
}

/* e^x: n = round(x/ln2), r = x - n*ln2 in two parts (Cody-Waite), e^r by
 * a degree-7 Taylor polynomial written as 1 + (r + r^2*q) so the large terms
 * are added last, then scaled by 2^n in two halves so that results in the
 * subnormal range and up to the overflow threshold come out right. */
float kcpu_m_exp(float x) {
  float xc = m_min(m_max(x, -104.0f), 89.0f);
  float n = m_round(xc * 1.44269504088896341f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float q = 1.0f / 5040.0f;
  q = q * r + 1.0f / 720.0f;
  q = q * r + 1.0f / 120.0f;
  q = q * r + 1.0f / 24.0f;
  q = q * r + 1.0f / 6.0f;
  q = q * r + 0.5f;
  float p = 1.0f + (r + r * r * q);
  int32_t ni = (int32_t)n;
  int32_t h = ni / 2;
  float y = p * m_pow2i(h) * m_pow2i(ni - h);
  return x != x ? x : y;
}

/* e^-x for the functions that only add it to 1 (sigmoid, SiLU, tanh),
 * where results below 2^-126 are lost in the sum anyway: -x is clamped to
 * [-87, 88.7228] (the top stays the overflow threshold, so e^-x still
 * overflows to inf where kcpu_m_exp does), which lets 2^n be one scaling
 * (2^(n-1) * 2, n <= 128) instead of kcpu_m_exp's two halves. The
 * rounding constant gives n's bits directly (no conversion), the reduced
 * argument is kept negated (r' = -r: the negation folds into the
 * constants) and the same degree-7 polynomial is evaluated in Estrin's
 * form, a shorter dependency chain. Swish over a micro-tile, one core:
 * 18 -> 12.6 cycles per 16 lanes; accuracy unchanged (1.4e-7 relative for
 * sigmoid). */
static inline float m_expneg_core(float x) {
  float t = m_min(m_max(x, -88.7228394f), 87.0f);
  float v = t * -1.44269504088896341f + 12582912.0f; /* round(-t / ln2) + 1.5 * 2^23 */
  float n = v - 12582912.0f;
  float rn = t + n * 0.693359375f; /* -(-t - n ln2), in two parts */
  rn = rn + n * -2.12194440e-4f;
  float r2 = rn * rn;
  float a = -(1.0f / 5040.0f) * rn + 1.0f / 720.0f;
  float b = -(1.0f / 120.0f) * rn + 1.0f / 24.0f;
  float c = -(1.0f / 6.0f) * rn + 0.5f;
  float q = c + r2 * (b + r2 * a);
  float p = 1.0f + (r2 * q - rn);
  /* the low mantissa bits of v hold n + 2^22 */
  float s = m_from_bits((m_bits(v) - 0x4B400000u + 126u) << 23);
  return p * s * 2.0f;
}

/* log(x): x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(1+f) for f = m-1
 * by the Cephes polynomial, e*ln2 added in two parts. Subnormals are scaled
 * up by 2^23 first. */
float kcpu_m_log(float x) {
  int sub = x < 1.17549435e-38f;
  float xs = sub ? x * 8388608.0f : x;
  uint32_t u = m_bits(xs);
  int32_t e = (int32_t)((u >> 23) & 0xff) - 126;
  float m = m_from_bits((u & 0x007fffffu) | 0x3f000000u); /* [0.5, 1) */
  int small = m < 0.707106781186547524f;
  e = small ? e - 1 : e;
  float f = small ? m + m - 1.0f : m - 1.0f;
  float fe = (float)e - (sub ? 23.0f : 0.0f);
  float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = f * z * p;
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = f + y;
  r = r + fe * 0.693359375f;
  const float inf = m_from_bits(0x7f800000u), nan = m_from_bits(0x7fc00000u);
  r = x == inf ? inf : r;
  r = x == 0.0f ? -inf : r;
  r = x < 0.0f ? nan : r;
  return x != x ? x : r;
}

/* tanh: an odd polynomial (Cephes) below 0.625, else 1 - 2/(e^(2|x|)+1)
 * with the sign put back. */
float kcpu_m_tanh(float x) {
  float a = m_abs(x);
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = x + x * z * p;
  float big = 1.0f - 2.0f / (m_expneg_core(-(a + a)) + 1.0f);
  big = x < 0.0f ? -big : big;
  return a < 0.625f || x != x ? small : big; /* small is NaN for NaN */
}

/* sigmoid = 1/(1+e^-x); e^-x overflowing to inf gives exactly 0. */
float kcpu_m_sigmoid(float x) {
  float y = 1.0f / (1.0f + m_expneg_core(x));
  return x != x ? x : y;
}

/* SiLU, x * sigmoid(x), as x / (1 + e^-x): one division and no NaN
 * select (a NaN x is NaN through the division; -inf gives NaN, as
 * -inf * 0 does). */
float kcpu_m_silu(float x) {
  return x / (1.0f + m_expneg_core(x));
}

/* erf: a rational approximation x*P(x^2)/Q(x^2) on [-4, 4] (erf is +-1 in
 * float beyond), the form used by Eigen's fast erf. */
float kcpu_m_erf(float x) {
  float xc = m_min(m_max(x, -4.0f), 4.0f);
  float z = xc * xc;
  float p = -2.72614225801306e-10f;
  p = p * z + 2.77068142495902e-08f;
  p = p * z - 2.10102402082508e-06f;
  p = p * z - 5.69250639462346e-05f;
  p = p * z - 7.34990630326855e-04f;
  p = p * z - 2.95459980854025e-03f;
  p = p * z - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * z - 2.13374055278905e-04f;
  q = q * z - 1.68282697438203e-03f;
  q = q * z - 7.37332916720468e-03f;
  q = q * z - 1.42647390514189e-02f;
  float r = xc * p / q;
  return x != x ? x : r;
}

/* Reduce x by multiples of pi/2 with three-part Cody-Waite constants and
 * return the quadrant. Accurate for |x| <= 1e5 (docs/cpu.md); arguments
 * beyond 8e6 (and inf, NaN) reduce as 0 so the quadrant stays in range,
 * and the callers then answer NaN for inf/NaN. */
static inline float m_reduce_pio2(float x, int32_t *quadrant) {
  x = m_abs(x) < 8e6f ? x : 0.0f;
  float j = m_round(x * 0.636619772367581343f);
  float r = x - j * 1.5703125f;
  r = r - j * 4.837512969970703125e-4f;
  r = r - j * 7.54978995489188216e-8f;
  *quadrant = (int32_t)j;
  return r;
}

static inline float m_sin_poly(float r) {
  float z = r * r;
  float p = -1.9515295891e-4f;
  p = p * z + 8.3321608736e-3f;
  p = p * z - 1.6666654611e-1f;
  return r + r * z * p;
}

static inline float m_cos_poly(float r) {
  float z = r * r;
  float p = 2.443315711809948e-5f;
  p = p * z - 1.388731625493765e-3f;
  p = p * z + 4.166664568298827e-2f;
  return 1.0f - 0.5f * z + z * z * p;
}

float kcpu_m_sin(float x) {
  int32_t j;
  float r = m_reduce_pio2(x, &j);
  float s = m_sin_poly(r), c = m_cos_poly(r);
  float v = (j & 1) ? c : s;
  v = (j & 2) ? -v : v;
  return m_abs(x) < m_from_bits(0x7f800000u) ? v : m_from_bits(0x7fc00000u);
}

float kcpu_m_cos(float x) {
  int32_t j;
  float r = m_reduce_pio2(x, &j);
  float s = m_sin_poly(r), c = m_cos_poly(r);
  float v = (j & 1) ? s : c;
  v = ((j + 1) & 2) ? -v : v;
  return m_abs(x) < m_from_bits(0x7f800000u) ? v : m_from_bits(0x7fc00000u);
}

float kcpu_m_tan(float x) {
  int32_t j;
  float r = m_reduce_pio2(x, &j);
  float s = m_sin_poly(r), c = m_cos_poly(r);
  float v = (j & 1) ? -c / s : s / c;
  return m_abs(x) < m_from_bits(0x7f800000u) ? v : m_from_bits(0x7fc00000u);
}

/* softplus = max(x,0) + log1p(e^-|x|); log1p(t) = log(u)*t/(u-1) with
 * u = 1+t keeps precision for tiny t (and is t when u rounds to 1). */
float kcpu_m_softplus(float x) {
  float t = kcpu_m_exp(-m_abs(x));
  float u = 1.0f + t;
  float l = u == 1.0f ? t : kcpu_m_log(u) * t / (u - 1.0f);
  float r = m_max(x, 0.0f) + l;
  return x != x ? x : r;
}

/* gelu (exact form) = x/2 * (1 + erf(x/sqrt(2))). */
float kcpu_m_gelu(float x) {
  return 0.5f * x * (1.0f + kcpu_m_erf(x * 0.707106781186547524f));
}
