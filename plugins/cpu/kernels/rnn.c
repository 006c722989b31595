/* plugins/cpu/kernels/rnn.c: RNN, GRU and LSTM (ONNX gate orders: GRU
 * z r h, LSTM i o f c) for any direction, layout 0 or 1, sequence_lens,
 * clip and per-direction activations. The generic path keeps state in
 * double; each (direction, batch) row runs its time steps in order on the
 * calling thread. The f32 path (the default activations, what exporters
 * write) projects the inputs of all time steps with one GEMM per
 * direction, then runs the time steps in order, all batch rows in each:
 * register-blocked products of the rows' states by the packed recurrence
 * weights of all gates (up to 4 rows per weight load), followed by the
 * gate nonlinearities; directions run on the pool's threads, and so do a
 * large step's hidden units. */
#include <math.h>
#include <stdbool.h>

#include "gemm_impl.h"
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

/* ---- the recurrence as a matrix-vector product ----
 * R of one direction is G matrices [H, H] (one per gate), each in the
 * prepacked layout of gemm_impl.h with unit U = kcpu_rnn_unit(lanes): for a
 * block of U hidden units, every k holds U consecutive floats, so the
 * product keeps 2 vectors per gate in registers over the whole k loop and
 * reads each weight once per step, as one contiguous stream per gate: sums
 * kept in memory instead cost a load and a store per multiply-add. A
 * constant R is packed at compile time (emit_rnn.c); transposing it at
 * every call cost more than the 32 steps of the zoo's LSTM. */
typedef float kcpu_rv16 __attribute__((vector_size(64)));
typedef float kcpu_rv16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef float kcpu_rv8 __attribute__((vector_size(32)));
typedef float kcpu_rv8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef float kcpu_rv4 __attribute__((vector_size(16)));
typedef float kcpu_rv4u __attribute__((vector_size(16), aligned(4), may_alias));

/* out[g*RP + i] = sum_k h[k] * M_g(i, k) for g < NG, i < RP (rows past H
 * are the packing's zeros); pk: gate 0's matrix, the others `one` floats
 * apart. NG is a constant at every call, so the tests on it fold away; the
 * accumulators are named variables, not an array indexed by gate, which
 * LLVM kept on the stack. */
#define KCPU_RNN_ACC(VU, g)                                                                        \
  if (NG > (g)) {                                                                                  \
    a##g##0 += hk * *(const VU *)(p + (g)*one);                                                    \
    a##g##1 += hk * *(const VU *)(p + (g)*one + L);                                                \
  }
#define KCPU_RNN_OUT(VU, g)                                                                        \
  if (NG > (g)) {                                                                                  \
    *(VU *)(out + (g)*RP + ib) = a##g##0;                                                          \
    *(VU *)(out + (g)*RP + ib + L) = a##g##1;                                                      \
  }
#define KCPU_RNN_MV(SUF, VT, VU, L_)                                                               \
  static inline __attribute__((always_inline)) void kcpu_rnn_mv_##SUF(                             \
      int NG, const float *restrict pk, int64_t one, int64_t H, int64_t RP,                        \
      const float *restrict h, float *restrict out, int64_t i0, int64_t i1) {                      \
    enum { L = L_ };                                                                               \
    for (int64_t ib = i0; ib < i1; ib += 2 * L) {                                                  \
      VT a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};   \
      for (int64_t k0 = 0; k0 < H; k0 += KCPU_KC) {                                                \
        int64_t kc = H - k0 < KCPU_KC ? H - k0 : KCPU_KC;                                          \
        const float *p = pk + k0 * RP + ib * kc;                                                   \
        for (int64_t k = 0; k < kc; k++, p += 2 * L) {                                             \
          float hk = h[k0 + k];                                                                    \
          KCPU_RNN_ACC(VU, 0) KCPU_RNN_ACC(VU, 1) KCPU_RNN_ACC(VU, 2) KCPU_RNN_ACC(VU, 3)          \
        }                                                                                          \
      }                                                                                            \
      KCPU_RNN_OUT(VU, 0) KCPU_RNN_OUT(VU, 1) KCPU_RNN_OUT(VU, 2) KCPU_RNN_OUT(VU, 3)              \
    }                                                                                              \
  }
KCPU_RNN_MV(16, kcpu_rv16, kcpu_rv16u, 16)
KCPU_RNN_MV(8, kcpu_rv8, kcpu_rv8u, 8)
KCPU_RNN_MV(4, kcpu_rv4, kcpu_rv4u, 4)

#define KCPU_RNN_MV_NG(SUF)                                                                        \
  switch (ng) {                                                                                    \
  case 1:                                                                                          \
    kcpu_rnn_mv_##SUF(1, pk, one, H, RP, h, out, i0, i1);                                          \
    break;                                                                                         \
  case 2:                                                                                          \
    kcpu_rnn_mv_##SUF(2, pk, one, H, RP, h, out, i0, i1);                                          \
    break;                                                                                         \
  case 3:                                                                                          \
    kcpu_rnn_mv_##SUF(3, pk, one, H, RP, h, out, i0, i1);                                          \
    break;                                                                                         \
  default:                                                                                         \
    kcpu_rnn_mv_##SUF(4, pk, one, H, RP, h, out, i0, i1);                                          \
  }

/* Units [i0, i1) (multiples of U) of the product above. */
static void kcpu_rnn_mv(int64_t U, int64_t ng, const float *pk, int64_t one, int64_t H, int64_t RP,
                        const float *h, float *out, int64_t i0, int64_t i1) {
  if (U == 32)
    KCPU_RNN_MV_NG(16)
  else if (U == 16)
    KCPU_RNN_MV_NG(8)
  else
    KCPU_RNN_MV_NG(4)
}

/* The product above for NB rows of h at once (AVX-512, blocks of U = 32
 * units, each two vectors of 16): each weight vector, loaded once, feeds
 * the NB rows' accumulators, where one row at a time spent a load per
 * multiply-add. Gates go two at a time, each with both of its vectors
 * (NB x 2 x 2 of the 32 registers), so that a pass reads whole 128-byte
 * rows of two gates' panels. Four gates at a time on one vector of 16, in
 * two passes, read every other cache line in each: an LSTM of 512 units
 * on 4 rows, one core, R from L3, took 100 us a step, now 86. Each
 * (row, unit) sums in the same k order as kcpu_rnn_mv: the same bits. */
#ifdef __clang__
#define KCPU_RNN_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define KCPU_RNN_UNROLL _Pragma("GCC unroll 16")
#else
#define KCPU_RNN_UNROLL
#endif
static inline __attribute__((always_inline)) void
kcpu_rnn_mm16(const int NB, const int NG, const float *restrict pk, int64_t one, int64_t H,
              int64_t RP, const float *const *h, float *const *out, int64_t i0, int64_t i1) {
  for (int64_t ib = i0; ib < i1; ib += 32)
    KCPU_RNN_UNROLL for (int g0 = 0; g0 < NG; g0 += 2) {
      const int G2 = NG - g0 < 2 ? NG - g0 : 2;
      kcpu_rv16 acc[4][2][2];
      KCPU_RNN_UNROLL for (int n = 0; n < NB; n++) KCPU_RNN_UNROLL for (int g = 0; g < G2; g++)
          acc[n][g][0] = acc[n][g][1] = (kcpu_rv16){0};
      for (int64_t k0 = 0; k0 < H; k0 += KCPU_KC) {
        int64_t kc = H - k0 < KCPU_KC ? H - k0 : KCPU_KC;
        const float *p = pk + (int64_t)g0 * one + k0 * RP + ib * kc;
        for (int64_t k = 0; k < kc; k++, p += 32) {
          kcpu_rv16 w[2][2];
          KCPU_RNN_UNROLL for (int g = 0; g < G2; g++) {
            w[g][0] = *(const kcpu_rv16u *)(p + g * one);
            w[g][1] = *(const kcpu_rv16u *)(p + g * one + 16);
          }
          KCPU_RNN_UNROLL for (int n = 0; n < NB; n++) {
            float hk = h[n][k0 + k];
            KCPU_RNN_UNROLL for (int g = 0; g < G2; g++) {
              acc[n][g][0] += hk * w[g][0];
              acc[n][g][1] += hk * w[g][1];
            }
          }
        }
      }
      KCPU_RNN_UNROLL for (int n = 0; n < NB; n++) KCPU_RNN_UNROLL for (int g = 0; g < G2; g++) {
        *(kcpu_rv16u *)(out[n] + (g0 + g) * RP + ib) = acc[n][g][0];
        *(kcpu_rv16u *)(out[n] + (g0 + g) * RP + ib + 16) = acc[n][g][1];
      }
    }
}

#define KCPU_RNN_MM_NB(NG)                                                                         \
  switch (nb) {                                                                                    \
  case 1:                                                                                          \
    kcpu_rnn_mm16(1, NG, pk, one, H, RP, h, out, i0, i1);                                          \
    break;                                                                                         \
  case 2:                                                                                          \
    kcpu_rnn_mm16(2, NG, pk, one, H, RP, h, out, i0, i1);                                          \
    break;                                                                                         \
  case 3:                                                                                          \
    kcpu_rnn_mm16(3, NG, pk, one, H, RP, h, out, i0, i1);                                          \
    break;                                                                                         \
  default:                                                                                         \
    kcpu_rnn_mm16(4, NG, pk, one, H, RP, h, out, i0, i1);                                          \
  }

/* Units [i0, i1) of the product for rows h[0..nb) (nb <= 4) into out[0..nb);
 * U: kcpu_rnn_unit's (32: the register-blocked rows, else one row at a
 * time). */
static void kcpu_rnn_mm(int64_t U, int64_t ng, int64_t nb, const float *pk, int64_t one, int64_t H,
                        int64_t RP, const float *const *h, float *const *out, int64_t i0,
                        int64_t i1) {
  if (U != 32 || nb == 1) {
    for (int64_t n = 0; n < nb; n++)
      kcpu_rnn_mv(U, ng, pk, one, H, RP, h[n], out[n], i0, i1);
    return;
  }
  if (ng == 1)
    KCPU_RNN_MM_NB(1)
  else if (ng == 2)
    KCPU_RNN_MM_NB(2)
  else if (ng == 3)
    KCPU_RNN_MM_NB(3)
  else
    KCPU_RNN_MM_NB(4)
}

/* R of one direction ([G*H, H], row g*H+i of gate g) into the layout above,
 * when it is not a constant packed at compile time. */
static void kcpu_rnn_pack_r(const float *R, int64_t G, int64_t H, int64_t U, float *dst) {
  int64_t RP = (H + U - 1) / U * U, one = H * RP;
  for (int64_t g = 0; g < G; g++)
    for (int64_t k0 = 0; k0 < H; k0 += KCPU_KC) {
      int64_t kc = H - k0 < KCPU_KC ? H - k0 : KCPU_KC;
      for (int64_t ib = 0; ib < RP; ib += U) {
        float *panel = dst + g * one + k0 * RP + ib * kc;
        for (int64_t q = 0; q < U; q++) {
          const float *row = R + (g * H + ib + q) * H + k0;
          for (int64_t k = 0; k < kc; k++)
            panel[k * U + q] = ib + q < H ? row[k] : 0;
        }
      }
    }
}

typedef struct kcpu_rnn32 {
  const kcpu_rnn *r;
  int64_t reverse, lens_elem, lanes;
  const void *lens;
  const float *Wpk, *Rpk;
  void *Yh, *Yc;
  struct kcpu_pool *pool; /* for the GEMM of a single direction */
  int rc[2];
} kcpu_rnn32;

/* One time step of every batch row still running, on units [i0, i1) of
 * each: the rows' products over the block's packed R rows (the block's
 * weights, read from L2 again for each row after the first, instead of the
 * whole R from L3 once per row), then the gate nonlinearities of the
 * block's units, the new state into hn (h is read by the other blocks'
 * products until the step ends). GRU without linear_before_reset goes in
 * two phases: z, r and q = r * h (phase 0), then the h gate's product,
 * which reads all of q (phase 1). */
typedef struct kcpu_rstep {
  const kcpu_rnn32 *a;
  int64_t d, G, H, RP, U, one, S, B, s, phase;
  bool lbr, back;
  float clip;
  const float *Rp, *xw, *P, *rbh;
  const int64_t *len;
  float *h, *hn, *c, *hr, *zr, *q; /* per row: RP floats (hr: G * RP, zr: 2 * RP) */
} kcpu_rstep;

static void kcpu_rnn32_step(void *ctx, int64_t b0, int64_t e0) {
  const kcpu_rstep *k = ctx;
  const kcpu_rnn *r = k->a->r;
  int64_t G = k->G, H = k->H, RP = k->RP, U = k->U, one = k->one, GH = G * H;
  int64_t i0 = b0 * U, i1 = e0 * U, j1 = i1 < H ? i1 : H;
  /* locals, not fields, in the gate loops: a field read inside a loop
   * can keep it from vectorizing */
  float clip = k->clip;
  const float *P = k->P, *rbh = k->rbh;
  bool lbr = k->lbr;
  /* the products of the running rows, up to 4 at a time */
  bool second = G == 3 && k->phase == 1; /* GRU's h gate on q */
  int64_t ng = G == 3 ? (second ? 1 : lbr ? 3 : 2) : G;
  const float *pk = second ? k->Rp + 2 * one : k->Rp;
  const float *src[4];
  float *dst[4];
  int64_t n = 0;
  for (int64_t b = 0; b < k->B; b++) {
    if (k->s >= k->len[b])
      continue;
    src[n] = (second ? k->q : k->h) + b * RP;
    dst[n] = k->hr + b * G * RP + (second ? 2 * RP : 0);
    if (++n == 4 || b == k->B - 1) {
      kcpu_rnn_mm(U, ng, n, pk, one, H, RP, src, dst, i0, i1);
      n = 0;
    }
  }
  if (n)
    kcpu_rnn_mm(U, ng, n, pk, one, H, RP, src, dst, i0, i1);
  for (int64_t b = 0; b < k->B; b++) {
    const float *h = k->h + b * RP;
    float *hn = k->hn + b * RP, *c = k->c + b * RP, *hr = k->hr + b * G * RP;
    float *z = k->zr + b * 2 * RP, *rg = z + RP, *q = k->q + b * RP;
    int64_t len = k->len[b];
    if (k->s >= len) { /* finished: the state stays */
      for (int64_t j = i0; j < j1; j++)
        hn[j] = h[j];
      continue;
    }
    int64_t t = k->back ? len - 1 - k->s : k->s;
    const float *x = k->xw + (r->layout1 ? b * k->S + t : t * k->B + b) * GH;
    if (G == 1) {
      for (int64_t j = i0; j < j1; j++)
        hn[j] = kcpu_m_tanh(kcpu_clip32(x[j] + hr[j], clip));
    } else if (G == 3 && k->phase == 0) {
      for (int64_t j = i0; j < j1; j++) {
        z[j] = kcpu_m_sigmoid(kcpu_clip32(x[j] + hr[j], clip));
        rg[j] = kcpu_m_sigmoid(kcpu_clip32(x[H + j] + hr[RP + j], clip));
      }
      if (!lbr) {
        for (int64_t j = i0; j < j1; j++)
          q[j] = rg[j] * h[j];
        continue; /* phase 1 ends the step */
      }
    }
    if (G == 3) {
      const float *hh = hr + 2 * RP;
      for (int64_t j = i0; j < j1; j++) {
        float pre = lbr ? x[2 * H + j] + rg[j] * (hh[j] + rbh[j]) : x[2 * H + j] + hh[j];
        float hv = kcpu_m_tanh(kcpu_clip32(pre, clip));
        hn[j] = (1 - z[j]) * hv + z[j] * h[j];
      }
    } else if (G == 4) {
      const float *hi_ = hr, *ho = hr + RP, *hf = hr + 2 * RP, *hc = hr + 3 * RP;
      /* In two passes, the new cell state, then the output gate and h:
       * one pass chained five math functions per vector (the output
       * gate waits for the cell through its peephole, and tanh of the
       * cell for both), longer than the out-of-order window overlaps;
       * the zoo's LSTM on one core 226 -> 219 us a layer, same bits. */
      for (int64_t j = i0; j < j1; j++) {
        float pi = P[j], pf = P[2 * H + j];
        float ig = kcpu_m_sigmoid(kcpu_clip32(x[j] + hi_[j] + pi * c[j], clip));
        float fg = r->input_forget
                       ? 1 - ig
                       : kcpu_m_sigmoid(kcpu_clip32(x[2 * H + j] + hf[j] + pf * c[j], clip));
        float cc = kcpu_m_tanh(kcpu_clip32(x[3 * H + j] + hc[j], clip));
        c[j] = fg * c[j] + ig * cc;
      }
      for (int64_t j = i0; j < j1; j++) {
        float cn = c[j];
        float og = kcpu_m_sigmoid(kcpu_clip32(x[H + j] + ho[j] + P[H + j] * cn, clip));
        hn[j] = og * kcpu_m_tanh(kcpu_clip32(cn, clip));
      }
    }
    if (r->Y) {
      float *y = (float *)r->Y +
                 (r->layout1 ? (b * k->S + t) * r->D + k->d : (t * r->D + k->d) * k->B + b) * H;
      for (int64_t j = i0; j < j1; j++)
        y[j] = hn[j];
    }
  }
}

static int kcpu_rnn32_dir(const kcpu_rnn32 *a, int64_t d, struct kcpu_pool *pool) {
  const kcpu_rnn *r = a->r;
  int64_t G = r->G, H = r->H, I = r->I, S = r->S, B = r->B, D = r->D, GH = G * H;
  int64_t U = kcpu_rnn_unit(a->lanes), RP = (H + U - 1) / U * U, one = H * RP;
  bool lbr = r->lbr, back = a->reverse || d == 1;
  const float *Wb = r->Bias ? (const float *)r->Bias + d * 2 * GH : NULL;
  const float *Rb = Wb ? Wb + GH : NULL;
  /* per row: h, hn, c, q (RP each), hr (G * RP), zr (2 * RP) */
  int64_t row = (6 + G) * RP, nxw = S * B * GH, nst = GH + 4 * RP + B * row;
  int64_t npk = a->Rpk ? 0 : G * one;
  int64_t nf = (nxw + nst + npk + 1) / 2 * 2; /* then the lengths, 8-byte aligned */
  float *mem = kcpu_alloc(nf * (int64_t)sizeof(float) + B * (int64_t)sizeof(int64_t));
  if (!mem)
    return -1;
  float *xw = mem, *bias = xw + nxw, *P = bias + GH, *rbh = P + 3 * RP, *st = rbh + RP;
  float *h = st, *hn = h + B * RP, *c = hn + B * RP, *q = c + B * RP, *hr = q + B * RP;
  float *zr = hr + B * G * RP;
  int64_t *len = (int64_t *)(mem + nf);
  /* Absent peepholes and biases are zeros read like present ones: the
   * vectorized gate loops would otherwise load under a mask from a null
   * pointer, which on Zen costs a microcode assist per vector (it was a
   * third of the LSTM's time). */
  for (int64_t j = 0; j < 3 * H; j++)
    P[j] = r->P ? ((const float *)r->P)[d * 3 * H + j] : 0;
  for (int64_t j = 0; j < H; j++)
    rbh[j] = Rb && G == 3 ? Rb[2 * H + j] : 0;
  const float *Rp = a->Rpk ? a->Rpk + d * G * one : mem + nxw + nst;
  if (!a->Rpk)
    kcpu_rnn_pack_r((const float *)r->R + d * GH * H, G, H, U, mem + nxw + nst);
  /* Both biases go into the GEMM's epilogue, except the GRU h gate's Rb
   * under linear_before_reset, which the reset gate multiplies. */
  int64_t fold = G == 3 && lbr ? 2 * H : GH;
  for (int64_t j = 0; j < GH; j++)
    bias[j] = Wb ? Wb[j] + (j < fold ? Rb[j] : 0) : 0;
  /* X is [S*B, I] in either layout (only the row order differs). */
  int64_t NR = kcpu_gemm_nr(a->lanes);
  kcpu_gemm_desc gd = {.M = S * B,
                       .N = GH,
                       .K = I,
                       .alpha = 1.0f,
                       .A = (const float *)r->X,
                       .lda = I,
                       .B = a->Wpk ? NULL : (const float *)r->W + d * GH * I,
                       .ldb = I,
                       .trans_b = 1,
                       .Bpk = a->Wpk ? a->Wpk + d * kcpu_prepacked_size(GH, I, NR) : NULL,
                       .C = xw,
                       .ldc = GH,
                       .bias_col = Wb ? bias : NULL,
                       .act = KCPU_ACT_NONE,
                       .lanes = a->lanes};
  kcpu_gemm_run(&gd, pool);
  int64_t steps = 0;
  for (int64_t b = 0; b < B; b++) {
    int64_t hi = (r->layout1 ? b * D + d : d * B + b) * H;
    for (int64_t j = 0; j < RP; j++) {
      h[b * RP + j] = r->h0 && j < H ? ((const float *)r->h0)[hi + j] : 0;
      c[b * RP + j] = r->c0 && j < H ? ((const float *)r->c0)[hi + j] : 0;
      hn[b * RP + j] = q[b * RP + j] = 0;
    }
    int64_t l = a->lens ? kcpu_e_ldi(a->lens_elem, a->lens, b) : S;
    len[b] = l < 0 ? 0 : l > S ? S : l;
    steps = len[b] > steps ? len[b] : steps;
  }
  /* Time steps in order, all rows in each; the units of a step split over
   * the threads where a step has the work for it (a barrier per step; a
   * 2-layer LSTM of 512 units on 4 rows of 50 steps, two threads: 19.4 ms
   * with rows one after another -> 9.8 with steps split -> 4.1 with 4 rows
   * per weight load), else on the calling thread. */
  int64_t blocks = RP / U;
  struct kcpu_pool *sp = pool && blocks > 1 && G * H * H * B >= (1 << 18) ? pool : NULL;
  kcpu_rstep k = {.a = a, .d = d, .G = G, .H = H, .RP = RP, .U = U, .one = one, .S = S, .B = B,
                  .lbr = lbr, .back = back, .clip = (float)r->clip, .Rp = Rp, .xw = xw, .P = P,
                  .rbh = rbh, .len = len, .h = h, .hn = hn, .c = c, .hr = hr, .zr = zr, .q = q};
  for (int64_t s = 0; s < steps; s++) {
    k.s = s;
    for (k.phase = 0; k.phase < (G == 3 && !lbr ? 2 : 1); k.phase++)
      kcpu_parallel_for(sp, blocks, kcpu_rnn32_step, &k);
    float *tmp = k.h;
    k.h = k.hn;
    k.hn = tmp;
  }
  for (int64_t b = 0; b < B; b++) {
    int64_t hi = (r->layout1 ? b * D + d : d * B + b) * H;
    for (int64_t j = 0; j < H; j++) {
      if (a->Yh)
        ((float *)a->Yh)[hi + j] = k.h[b * RP + j];
      if (a->Yc)
        ((float *)a->Yc)[hi + j] = c[b * RP + j];
    }
  }
  kcpu_free(mem);
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
KCPU_PREBUILT int kcpu_rnn_f32(const kcpu_rnn *r, const float *Wpk, const float *Rpk,
                               int64_t reverse, int64_t lens_elem, const void *lens, void *Yh,
                               void *Yc, int64_t lanes, struct kcpu_pool *pool);
KCPU_PREBUILT int kcpu_rnn_f32(const kcpu_rnn *r, const float *Wpk, const float *Rpk,
                               int64_t reverse, int64_t lens_elem, const void *lens, void *Yh,
                               void *Yc, int64_t lanes, struct kcpu_pool *pool) {
  /* Only steps past a row's length are left unwritten. */
  if (r->Y && lens)
    memset(r->Y, 0, (size_t)(r->S * r->D * r->B * r->H) * sizeof(float));
  kcpu_rnn32 a = {r, reverse, lens_elem, lanes, lens, Wpk, Rpk, Yh, Yc, pool, {0, 0}};
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
               const float *Wpk, const float *Rpk, const void *Bias, int64_t lens_elem,
               const void *lens, const void *h0, const void *c0, const void *P, void *Y, void *Yh,
               void *Yc, const int64_t *dims, int64_t reverse, int64_t layout1, int64_t lbr,
               int64_t input_forget, double clip, const int64_t *act, const int64_t *ab,
               int64_t lanes, struct kcpu_pool *pool) {
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
    return kcpu_rnn_f32(&r, Wpk, Rpk, reverse, lens_elem, lens, Yh, Yc, lanes, pool);
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
