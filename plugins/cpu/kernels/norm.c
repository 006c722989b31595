/* plugins/cpu/kernels/norm.c: Softmax / LogSoftmax along any axis (viewed
 * as [outer, n, inner]), LayerNormalization and RMSNormalization over
 * trailing rows (one row kernel: RMSNorm is LayerNorm without the mean)
 * and inference BatchNormalization, all f32. Row sums use 16 partial
 * accumulators combined in a fixed order: vectorized and deterministic.
 * Exponentials are kcpu_m_exp (rt/kcpu_math.c), so they vectorize too. */
#include "kcpu_runtime.h"

#include <math.h>

#include "kcpu_math.h"

#define KCPU_NP 16

static float kcpu_row_max(const float *x, int64_t n) {
  float part[KCPU_NP];
  for (int j = 0; j < KCPU_NP; j++)
    part[j] = -INFINITY;
  int64_t i = 0;
  for (; i + KCPU_NP <= n; i += KCPU_NP)
    for (int j = 0; j < KCPU_NP; j++)
      part[j] = x[i + j] > part[j] ? x[i + j] : part[j];
  for (int j = 0; i < n; i++, j++)
    part[j] = x[i] > part[j] ? x[i] : part[j];
  float m = part[0];
  for (int j = 1; j < KCPU_NP; j++)
    m = part[j] > m ? part[j] : m;
  return m;
}

static float kcpu_row_sum(const float *x, int64_t n) {
  float part[KCPU_NP] = {0};
  int64_t i = 0;
  for (; i + KCPU_NP <= n; i += KCPU_NP)
    for (int j = 0; j < KCPU_NP; j++)
      part[j] += x[i + j];
  for (int j = 0; i < n; i++, j++)
    part[j] += x[i];
  float s = 0.0f;
  for (int j = 0; j < KCPU_NP; j++)
    s += part[j];
  return s;
}

typedef struct kcpu_sm_args {
  const float *x;
  float *y;
  int64_t n, inner, log;
} kcpu_sm_args;

static void kcpu_sm_rows(void *ctx, int64_t b, int64_t e) {
  const kcpu_sm_args *a = ctx;
  int64_t n = a->n;
  for (int64_t r = b; r < e; r++) {
    const float *x = a->x + r * n;
    float *y = a->y + r * n;
    float m = kcpu_row_max(x, n);
    /* kcpu_m_exp, not libm's: it inlines and the loop vectorizes */
    for (int64_t i = 0; i < n; i++)
      y[i] = kcpu_m_exp(x[i] - m);
    float s = kcpu_row_sum(y, n);
    if (a->log) {
      float ls = logf(s);
      for (int64_t i = 0; i < n; i++)
        y[i] = x[i] - m - ls;
    } else {
      float inv = 1.0f / s;
      for (int64_t i = 0; i < n; i++)
        y[i] *= inv;
    }
  }
}

/* Strided axis: vectorize across the inner dim instead. */
static void kcpu_sm_strided(void *ctx, int64_t b, int64_t e) {
  const kcpu_sm_args *a = ctx;
  int64_t n = a->n, inner = a->inner;
  for (int64_t o = b; o < e; o++) {
    const float *x = a->x + o * n * inner;
    float *y = a->y + o * n * inner;
    for (int64_t i = 0; i < inner; i++)
      y[i] = x[i];
    for (int64_t k = 1; k < n; k++)
      for (int64_t i = 0; i < inner; i++)
        y[i] = x[k * inner + i] > y[i] ? x[k * inner + i] : y[i];
    /* y[0..inner) holds the max until the sums overwrite it below */
    float mx[256], sum[256];
    for (int64_t i0 = 0; i0 < inner; i0 += 256) {
      int64_t w = inner - i0 < 256 ? inner - i0 : 256;
      for (int64_t i = 0; i < w; i++) {
        mx[i] = y[i0 + i];
        sum[i] = 0.0f;
      }
      for (int64_t k = 0; k < n; k++)
        for (int64_t i = 0; i < w; i++) {
          float v = kcpu_m_exp(x[k * inner + i0 + i] - mx[i]);
          y[k * inner + i0 + i] = v;
          sum[i] += v;
        }
      for (int64_t k = 0; k < n; k++)
        for (int64_t i = 0; i < w; i++) {
          int64_t j = k * inner + i0 + i;
          y[j] = a->log ? x[j] - mx[i] - logf(sum[i]) : y[j] / sum[i];
        }
    }
  }
}

KCPU_PREBUILT void kcpu_k_softmax(const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int64_t log,
                    struct kcpu_pool *pool) {
  kcpu_sm_args a = {x, y, n, inner, log};
  if (n <= 0)
    return;
  if (inner == 1)
    kcpu_parallel_for(pool, outer, kcpu_sm_rows, &a);
  else
    kcpu_parallel_for(pool, outer, kcpu_sm_strided, &a);
}

typedef struct kcpu_ln_args {
  const float *x, *scale, *bias;
  float *y, *mean, *rstd;
  int64_t n;
  float eps;
  int centre; /* 0: RMSNorm (no mean subtracted) */
} kcpu_ln_args;

static void kcpu_ln_rows(void *ctx, int64_t b, int64_t e) {
  const kcpu_ln_args *a = ctx;
  int64_t n = a->n;
  /* locals, and one loop per case: a bias test or a field read inside the
   * loop kept it from vectorizing (20x slower without a bias) */
  const float *restrict scale = a->scale, *restrict bias = a->bias;
  const float eps = a->eps;
  for (int64_t r = b; r < e; r++) {
    const float *restrict x = a->x + r * n;
    float *restrict y = a->y + r * n;
    float mean = a->centre ? kcpu_row_sum(x, n) / (float)n : 0.0f;
    /* two passes: the centred squares go through y as scratch */
    for (int64_t i = 0; i < n; i++) {
      float d = x[i] - mean;
      y[i] = d * d;
    }
    float var = kcpu_row_sum(y, n) / (float)n;
    float rs = 1.0f / sqrtf(var + eps);
    if (bias) {
      for (int64_t i = 0; i < n; i++) {
        float v = (x[i] - mean) * rs * scale[i];
        y[i] = v + bias[i];
      }
    } else {
      for (int64_t i = 0; i < n; i++)
        y[i] = (x[i] - mean) * rs * scale[i];
    }
    if (a->mean)
      a->mean[r] = mean;
    if (a->rstd)
      a->rstd[r] = rs;
  }
}

KCPU_PREBUILT void kcpu_k_layernorm(const float *x, const float *scale, const float *bias, float *y,
                      float *mean_out, float *rstd_out, int64_t rows, int64_t n, float eps,
                      struct kcpu_pool *pool) {
  kcpu_ln_args a = {x, scale, bias, y, mean_out, rstd_out, n, eps, 1};
  if (n <= 0)
    return;
  kcpu_parallel_for(pool, rows, kcpu_ln_rows, &a);
}

KCPU_PREBUILT void kcpu_k_rmsnorm(const float *x, const float *scale, float *y, int64_t rows,
                                  int64_t n, float eps, struct kcpu_pool *pool) {
  /* LayerNorm's rows with the mean held at 0 and no bias: x - 0 is x, so
   * the squares, their sum and the products are RMSNorm's exactly */
  kcpu_ln_args a = {x, scale, NULL, y, NULL, NULL, n, eps, 0};
  if (n <= 0)
    return;
  kcpu_parallel_for(pool, rows, kcpu_ln_rows, &a);
}

KCPU_PREBUILT void kcpu_k_batchnorm(const float *x, const float *scale, const float *bias, const float *mean,
                      const float *var, float *y, int64_t N, int64_t C, int64_t inner, float eps) {
  for (int64_t c = 0; c < C; c++) {
    float s = scale[c] / sqrtf(var[c] + eps), t = bias[c] - mean[c] * s;
    for (int64_t n = 0; n < N; n++) {
      const float *xp = x + (n * C + c) * inner;
      float *yp = y + (n * C + c) * inner;
      for (int64_t i = 0; i < inner; i++)
        yp[i] = xp[i] * s + t;
    }
  }
}
