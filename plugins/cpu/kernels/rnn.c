/* plugins/cpu/kernels/rnn.c: RNN, GRU and LSTM (ONNX gate orders: GRU
 * z r h, LSTM i o f c) for any direction, layout 0 or 1, sequence_lens,
 * clip and per-direction activations. The generic path keeps state in
 * double; each (direction, batch) row runs its time steps in order on the
 * calling thread. The f32 path (the default activations, what exporters
 * write) projects the inputs of all time steps with one GEMM per
 * direction, then runs each step as a matrix-vector product against the
 * transposed recurrence weights (unit-stride, so it vectorizes) with the
 * gate nonlinearities fused after it; directions run on the pool's
 * threads. */
#include <math.h>
#include <stdbool.h>

#include "kcpu_elem.h"
#include "kcpu_math.h"

enum {
  KCPU_A_RELU,
  KCPU_A_TANH,
  KCPU_A_SIGMOID,
  KCPU_A_AFFINE,
  KCPU_A_LEAKY,
  KCPU_A_THRESH,
  KCPU_A_SCALEDTANH,
  KCPU_A_HARDSIGMOID,
  KCPU_A_ELU,
  KCPU_A_SOFTSIGN,
  KCPU_A_SOFTPLUS
};

typedef struct kcpu_rnn {
  int64_t elem, G, S, B, I, H, D, layout1, lbr, input_forget;
  double clip;
  const int64_t *act;
  double al[6], be[6];
  const void *X, *W, *R, *Bias, *h0, *c0, *P;
  void *Y;
} kcpu_rnn;

static double kcpu_act(const kcpu_rnn *r, int64_t i, double x) {
  if (r->clip > 0)
    x = x < -r->clip ? -r->clip : x > r->clip ? r->clip : x;
  double a = r->al[i], b = r->be[i];
  switch (r->act[i]) {
  case KCPU_A_RELU:
    return x > 0 ? x : 0;
  case KCPU_A_TANH:
    return tanh(x);
  case KCPU_A_SIGMOID:
    return 1.0 / (1.0 + exp(-x));
  case KCPU_A_AFFINE:
    return a * x + b;
  case KCPU_A_LEAKY:
    return x >= 0 ? x : a * x;
  case KCPU_A_THRESH:
    return x > a ? x : 0;
  case KCPU_A_SCALEDTANH:
    return a * tanh(b * x);
  case KCPU_A_HARDSIGMOID: {
    double v = a * x + b;
    return v < 0 ? 0 : v > 1 ? 1 : v;
  }
  case KCPU_A_ELU:
    return x >= 0 ? x : a * (exp(x) - 1);
  case KCPU_A_SOFTSIGN:
    return x / (1 + fabs(x));
  default:
    return log1p(exp(x));
  }
}

static double kcpu_rl(const kcpu_rnn *r, const void *p, int64_t i) {
  return kcpu_e_ldf(r->elem, p, i);
}

/* Pre-activations of all gates: xw = W x + Wb, hr = R h + Rb (the GRU's
 * h gate without linear_before_reset gets its R product later). */
static void kcpu_rnn_pre(const kcpu_rnn *r, int64_t d, int64_t xo, const double *h, double *xw,
                         double *hr) {
  int64_t GH = r->G * r->H;
  for (int64_t j = 0; j < GH; j++) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < r->I; i++)
      s += kcpu_rl(r, r->X, xo + i) * kcpu_rl(r, r->W, (d * GH + j) * r->I + i);
    if (!(r->G == 3 && !r->lbr && j >= 2 * r->H))
      for (int64_t k = 0; k < r->H; k++)
        q += h[k] * kcpu_rl(r, r->R, (d * GH + j) * r->H + k);
    if (r->Bias) {
      s += kcpu_rl(r, r->Bias, d * 2 * GH + j);
      q += kcpu_rl(r, r->Bias, d * 2 * GH + GH + j);
    }
    xw[j] = s, hr[j] = q;
  }
}

static void kcpu_rnn_step(const kcpu_rnn *r, int64_t d, int64_t xo, double *h, double *c,
                          double *buf) {
  int64_t H = r->H, GH = r->G * H, f = d * (r->G == 1 ? 1 : r->G == 3 ? 2 : 3);
  double *xw = buf, *hr = buf + GH, *t = buf + 2 * GH;
  kcpu_rnn_pre(r, d, xo, h, xw, hr);
  if (r->G == 1) {
    for (int64_t j = 0; j < H; j++)
      h[j] = kcpu_act(r, f, xw[j] + hr[j]);
  } else if (r->G == 3) {
    double *z = t, *rg = t + H, *hh = t + 2 * H;
    for (int64_t j = 0; j < H; j++) {
      z[j] = kcpu_act(r, f, xw[j] + hr[j]);
      rg[j] = kcpu_act(r, f, xw[H + j] + hr[H + j]);
    }
    for (int64_t j = 0; j < H; j++) {
      double pre;
      if (r->lbr) {
        pre = xw[2 * H + j] + rg[j] * hr[2 * H + j];
      } else {
        double q = 0;
        for (int64_t k = 0; k < H; k++)
          q += rg[k] * h[k] * kcpu_rl(r, r->R, (d * GH + 2 * H + j) * H + k);
        pre = xw[2 * H + j] + q + hr[2 * H + j];
      }
      hh[j] = kcpu_act(r, f + 1, pre);
    }
    for (int64_t j = 0; j < H; j++)
      h[j] = (1 - z[j]) * hh[j] + z[j] * h[j];
  } else {
    for (int64_t j = 0; j < H; j++) {
      double pi = r->P ? kcpu_rl(r, r->P, d * 3 * H + j) : 0;
      double po = r->P ? kcpu_rl(r, r->P, d * 3 * H + H + j) : 0;
      double pf = r->P ? kcpu_rl(r, r->P, d * 3 * H + 2 * H + j) : 0;
      double ig = kcpu_act(r, f, xw[j] + hr[j] + pi * c[j]);
      double fg =
          r->input_forget ? 1 - ig : kcpu_act(r, f, xw[2 * H + j] + hr[2 * H + j] + pf * c[j]);
      double cc = kcpu_act(r, f + 1, xw[3 * H + j] + hr[3 * H + j]);
      double cn = fg * c[j] + ig * cc;
      double og = kcpu_act(r, f, xw[H + j] + hr[H + j] + po * cn);
      c[j] = cn;
      t[j] = og * kcpu_act(r, f + 2, cn);
    }
    for (int64_t j = 0; j < H; j++)
      h[j] = t[j];
  }
}

/* ---- f32 path ---- */

/* Are the activations the kind's defaults (RNN tanh; GRU sigmoid, tanh;
 * LSTM sigmoid, tanh, tanh) for every direction? */
static bool kcpu_rnn32_ok(const kcpu_rnn *r) {
  if (r->elem != KCPU_F32)
    return false;
  int64_t per = r->G == 1 ? 1 : r->G == 3 ? 2 : 3;
  for (int64_t d = 0; d < r->D; d++)
    for (int64_t i = 0; i < per; i++) {
      int64_t want = i == 0 && r->G != 1 ? KCPU_A_SIGMOID : KCPU_A_TANH;
      if (r->act[d * per + i] != want)
        return false;
    }
  return true;
}

static inline float kcpu_clip32(float x, float c) {
  return c > 0 ? (x < -c ? -c : x > c ? c : x) : x;
}

typedef struct kcpu_rnn32 {
  const kcpu_rnn *r;
  int64_t reverse, lens_elem, lanes;
  const void *lens;
  void *Yh, *Yc;
  struct kcpu_pool *pool; /* for the GEMM of a single direction */
  int rc[2];
} kcpu_rnn32;

static int kcpu_rnn32_dir(const kcpu_rnn32 *a, int64_t d, struct kcpu_pool *pool) {
  const kcpu_rnn *r = a->r;
  int64_t G = r->G, H = r->H, I = r->I, S = r->S, B = r->B, D = r->D, GH = G * H;
  float clip = (float)r->clip;
  bool lbr = r->lbr, back = a->reverse || d == 1;
  const float *W = (const float *)r->W + d * GH * I, *R = (const float *)r->R + d * GH * H;
  const float *Wb = r->Bias ? (const float *)r->Bias + d * 2 * GH : NULL;
  const float *Rb = Wb ? Wb + GH : NULL;
  const float *P = r->P ? (const float *)r->P + d * 3 * H : NULL;
  float *xw = kcpu_alloc((S * B * GH + 1) * (int64_t)sizeof(float));
  float *rt = kcpu_alloc((H * GH + 1) * (int64_t)sizeof(float));
  float *st = kcpu_alloc((GH + 5 * H) * (int64_t)sizeof(float));
  if (!xw || !rt || !st) {
    kcpu_free(xw);
    kcpu_free(rt);
    kcpu_free(st);
    return -1;
  }
  /* X is [S*B, I] in either layout (only the row order differs). */
  if (S * B > 0)
    kcpu_k_sgemm(S * B, GH, I, 1.0f, (const float *)r->X, I, 0, W, I, 1, xw, GH, 0, Wb, NULL,
                 NULL, 0, 0, a->lanes, pool);
  for (int64_t j = 0; j < GH; j++)
    for (int64_t k = 0; k < H; k++)
      rt[k * GH + j] = R[j * H + k];
  float *hr = st, *h = st + GH, *c = h + H, *u = c + H, *v = u + H, *q = v + H;
  /* GRU without linear_before_reset multiplies the reset gate in before
   * the h gate's recurrence product, so that part waits for it. */
  int64_t gr = G == 3 && !lbr ? 2 * H : GH;
  for (int64_t b = 0; b < B; b++) {
    int64_t hi = (r->layout1 ? b * D + d : d * B + b) * H;
    for (int64_t j = 0; j < H; j++) {
      h[j] = r->h0 ? ((const float *)r->h0)[hi + j] : 0;
      c[j] = r->c0 ? ((const float *)r->c0)[hi + j] : 0;
    }
    int64_t len = a->lens ? kcpu_e_ldi(a->lens_elem, a->lens, b) : S;
    len = len < 0 ? 0 : len > S ? S : len;
    for (int64_t s = 0; s < len; s++) {
      int64_t t = back ? len - 1 - s : s;
      const float *x = xw + (r->layout1 ? b * S + t : t * B + b) * GH;
      for (int64_t j = 0; j < GH; j++)
        hr[j] = Rb ? Rb[j] : 0;
      for (int64_t k = 0; k < H; k++) {
        float hk = h[k];
        const float *row = rt + k * GH;
        for (int64_t j = 0; j < gr; j++)
          hr[j] += hk * row[j];
      }
      if (G == 1) {
        for (int64_t j = 0; j < H; j++)
          h[j] = kcpu_m_tanh(kcpu_clip32(x[j] + hr[j], clip));
      } else if (G == 3) {
        float *z = u, *rg = v;
        for (int64_t j = 0; j < H; j++) {
          z[j] = kcpu_m_sigmoid(kcpu_clip32(x[j] + hr[j], clip));
          rg[j] = kcpu_m_sigmoid(kcpu_clip32(x[H + j] + hr[H + j], clip));
        }
        if (!lbr) {
          for (int64_t j = 0; j < H; j++)
            q[j] = 0;
          for (int64_t k = 0; k < H; k++) {
            float rh = rg[k] * h[k];
            const float *row = rt + k * GH + 2 * H;
            for (int64_t j = 0; j < H; j++)
              q[j] += rh * row[j];
          }
        }
        for (int64_t j = 0; j < H; j++) {
          float pre = lbr ? x[2 * H + j] + rg[j] * hr[2 * H + j] : x[2 * H + j] + q[j] + hr[2 * H + j];
          float hh = kcpu_m_tanh(kcpu_clip32(pre, clip));
          h[j] = (1 - z[j]) * hh + z[j] * h[j];
        }
      } else {
        for (int64_t j = 0; j < H; j++) {
          float pi = P ? P[j] : 0, po = P ? P[H + j] : 0, pf = P ? P[2 * H + j] : 0;
          float ig = kcpu_m_sigmoid(kcpu_clip32(x[j] + hr[j] + pi * c[j], clip));
          float fg = r->input_forget
                         ? 1 - ig
                         : kcpu_m_sigmoid(kcpu_clip32(x[2 * H + j] + hr[2 * H + j] + pf * c[j], clip));
          float cc = kcpu_m_tanh(kcpu_clip32(x[3 * H + j] + hr[3 * H + j], clip));
          float cn = fg * c[j] + ig * cc;
          float og = kcpu_m_sigmoid(kcpu_clip32(x[H + j] + hr[H + j] + po * cn, clip));
          c[j] = cn;
          u[j] = og * kcpu_m_tanh(kcpu_clip32(cn, clip));
        }
        for (int64_t j = 0; j < H; j++)
          h[j] = u[j];
      }
      if (r->Y) {
        float *y = (float *)r->Y + (r->layout1 ? (b * S + t) * D + d : (t * D + d) * B + b) * H;
        for (int64_t j = 0; j < H; j++)
          y[j] = h[j];
      }
    }
    for (int64_t j = 0; j < H; j++) {
      if (a->Yh)
        ((float *)a->Yh)[hi + j] = h[j];
      if (a->Yc)
        ((float *)a->Yc)[hi + j] = c[j];
    }
  }
  kcpu_free(xw);
  kcpu_free(rt);
  kcpu_free(st);
  return 0;
}

/* Directions on the pool's threads (their GEMMs then run inline). */
static void kcpu_rnn32_task(void *ctx, int64_t begin, int64_t end) {
  kcpu_rnn32 *a = ctx;
  for (int64_t d = begin; d < end; d++)
    a->rc[d] = kcpu_rnn32_dir(a, d, NULL);
}

/* The f32 path, whole: compiled once (KCPU_PREBUILT), since it takes its
 * shapes at run time and its loops gain nothing from a model's constants;
 * kcpu_k_rnn, specialized per model, only dispatches to it. */
KCPU_PREBUILT int kcpu_rnn_f32(const kcpu_rnn *r, int64_t reverse, int64_t lens_elem,
                               const void *lens, void *Yh, void *Yc, int64_t lanes,
                               struct kcpu_pool *pool);
KCPU_PREBUILT int kcpu_rnn_f32(const kcpu_rnn *r, int64_t reverse, int64_t lens_elem,
                               const void *lens, void *Yh, void *Yc, int64_t lanes,
                               struct kcpu_pool *pool) {
  if (r->Y)
    memset(r->Y, 0, (size_t)(r->S * r->D * r->B * r->H) * sizeof(float));
  kcpu_rnn32 a = {r, reverse, lens_elem, lanes, lens, Yh, Yc, pool, {0, 0}};
  if (r->D == 2)
    kcpu_parallel_for(pool, 2, kcpu_rnn32_task, &a);
  else
    a.rc[0] = kcpu_rnn32_dir(&a, 0, pool);
  return a.rc[0] || a.rc[1] ? -1 : 0;
}

/* gates 1 (RNN), 3 (GRU), 4 (LSTM); dims: S, B, I, H, D (directions);
 * reverse: a single direction running backwards (D = 2 is forward then
 * backward). act[6]/ab[12] (alpha then beta, bits of doubles): each
 * direction's activations in the kind's order. lens (i32 or i64 per
 * lens_elem) may be NULL; steps past a row's length leave Y zero. Any of
 * Y, Yh, Yc may be NULL. Returns -1 without scratch memory. */
int kcpu_k_rnn(int64_t elem, int64_t gates, const void *X, const void *W, const void *R,
               const void *Bias, int64_t lens_elem, const void *lens, const void *h0,
               const void *c0, const void *P, void *Y, void *Yh, void *Yc, const int64_t *dims,
               int64_t reverse, int64_t layout1, int64_t lbr, int64_t input_forget, double clip,
               const int64_t *act, const int64_t *ab, int64_t lanes, struct kcpu_pool *pool) {
  kcpu_rnn r = {.elem = elem,
                .G = gates,
                .S = dims[0],
                .B = dims[1],
                .I = dims[2],
                .H = dims[3],
                .D = dims[4],
                .layout1 = layout1,
                .lbr = lbr,
                .input_forget = input_forget,
                .clip = clip,
                .act = act,
                .X = X,
                .W = W,
                .R = R,
                .Bias = Bias,
                .h0 = h0,
                .c0 = c0,
                .P = P,
                .Y = Y};
  for (int i = 0; i < 6; i++) {
    memcpy(&r.al[i], &ab[i], sizeof(double));
    memcpy(&r.be[i], &ab[6 + i], sizeof(double));
  }
  int64_t H = r.H, S = r.S, Bt = r.B, D = r.D;
  if (kcpu_rnn32_ok(&r) && D <= 2)
    return kcpu_rnn_f32(&r, reverse, lens_elem, lens, Yh, Yc, lanes, pool);
  double *mem = kcpu_alloc((H * (2 + 3 * gates) + 1) * (int64_t)sizeof(double));
  if (!mem)
    return -1;
  double *h = mem, *c = mem + H, *buf = mem + 2 * H;
  if (Y) {
    int64_t n = S * D * Bt * H;
    for (int64_t i = 0; i < n; i++)
      kcpu_e_stf(elem, Y, i, 0.0);
  }
  for (int64_t d = 0; d < D; d++) {
    int64_t back = reverse || d == 1;
    for (int64_t b = 0; b < Bt; b++) {
      int64_t hi = (layout1 ? b * D + d : d * Bt + b) * H;
      for (int64_t j = 0; j < H; j++) {
        h[j] = h0 ? kcpu_e_ldf(elem, h0, hi + j) : 0;
        c[j] = c0 ? kcpu_e_ldf(elem, c0, hi + j) : 0;
      }
      int64_t len = lens ? kcpu_e_ldi(lens_elem, lens, b) : S;
      len = len < 0 ? 0 : len > S ? S : len;
      for (int64_t s = 0; s < len; s++) {
        int64_t t = back ? len - 1 - s : s;
        kcpu_rnn_step(&r, d, (layout1 ? b * S + t : t * Bt + b) * r.I, h, c, buf);
        if (Y) {
          int64_t yi = (layout1 ? (b * S + t) * D + d : (t * D + d) * Bt + b) * H;
          for (int64_t j = 0; j < H; j++)
            kcpu_e_stf(elem, Y, yi + j, h[j]);
        }
      }
      for (int64_t j = 0; j < H; j++) {
        if (Yh)
          kcpu_e_stf(elem, Yh, hi + j, h[j]);
        if (Yc)
          kcpu_e_stf(elem, Yc, hi + j, c[j]);
      }
    }
  }
  kcpu_free(mem);
  return 0;
}
