/* plugins/interpreter/rnn.c: RNN, GRU and LSTM (ONNX gate orders:
 * GRU z r h, LSTM i o f c), any direction, layout 0 or 1, sequence_lens,
 * clip and per-direction activation lists (read by kiln_rnn_activations,
 * shared with the code generators). State is kept in double. */
#include "kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double mv_act_apply(const kiln_rnn_act *a, double x, double clip) {
  if (clip > 0)
    x = x < -clip ? -clip : (x > clip ? clip : x);
  switch (a->kind) {
  case KILN_RNN_ACT_RELU:
    return x > 0 ? x : 0;
  case KILN_RNN_ACT_TANH:
    return tanh(x);
  case KILN_RNN_ACT_SIGMOID:
    return 1.0 / (1.0 + exp(-x));
  case KILN_RNN_ACT_AFFINE:
    return a->alpha * x + a->beta;
  case KILN_RNN_ACT_LEAKY_RELU:
    return x >= 0 ? x : a->alpha * x;
  case KILN_RNN_ACT_THRESHOLDED_RELU:
    return x > a->alpha ? x : 0;
  case KILN_RNN_ACT_SCALED_TANH:
    return a->alpha * tanh(a->beta * x);
  case KILN_RNN_ACT_HARD_SIGMOID: {
    double v = a->alpha * x + a->beta;
    return v < 0 ? 0 : (v > 1 ? 1 : v);
  }
  case KILN_RNN_ACT_ELU:
    return x >= 0 ? x : a->alpha * (exp(x) - 1);
  case KILN_RNN_ACT_SOFTSIGN:
    return x / (1 + fabs(x));
  default:
    return log1p(exp(x));
  }
}

/* The activation list through the shared parser; its "<Kind>: reason"
 * becomes the interpreter's "interpreter <Kind>: reason". */
static kiln_status mv_acts(kiln_node_kind kind, const kiln_attrs *a, uint32_t dirs,
                           kiln_rnn_act *acts) {
  kiln_status s = kiln_rnn_activations(kind, a, dirs, acts, KILN_RNN_MAX_ACTS, NULL);
  if (!s)
    return NULL;
  kiln_status r = kiln_status_make(kiln_status_code(s), "interpreter %s", kiln_status_message(s));
  kiln_status_free(s);
  return r;
}

typedef struct mv_rnn {
  const char *kern;
  uint32_t gates; /* 1 RNN, 3 GRU, 4 LSTM */
  int64_t S, Bt, I, H, D;
  bool layout1, lbr, input_forget;
  double clip;
  kiln_node_kind kind;
  kiln_rnn_act acts[KILN_RNN_MAX_ACTS];
  uint32_t per_dir;
  const interp_tensor *X, *W, *R, *B, *lens, *h0, *c0, *P;
  interp_tensor *Y, *Yh, *Yc;
} mv_rnn;

static int64_t mv_xi(const mv_rnn *r, int64_t t, int64_t b) {
  return (r->layout1 ? b * r->S + t : t * r->Bt + b) * r->I;
}
static int64_t mv_yi(const mv_rnn *r, int64_t t, int64_t d, int64_t b) {
  return (r->layout1 ? (b * r->S + t) * r->D + d : (t * r->D + d) * r->Bt + b) * r->H;
}
static int64_t mv_hi(const mv_rnn *r, int64_t d, int64_t b) {
  return (r->layout1 ? b * r->D + d : d * r->Bt + b) * r->H;
}

/* One time step for batch b of direction d: h (and c) updated in place.
 * buf has room for 3 * gates * H doubles. */
static void mv_step(const mv_rnn *r, int64_t d, int64_t b, int64_t t, double *h, double *c,
                    double *buf) {
  int64_t H = r->H, G = r->gates, I = r->I;
  double *xw = buf, *hr = buf + G * H, *nh = buf + 2 * G * H;
  int64_t xo = mv_xi(r, t, b);
  for (int64_t j = 0; j < G * H; j++) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < I; i++)
      s += interp_load_f(r->X, xo + i) * interp_load_f(r->W, (d * G * H + j) * I + i);
    /* GRU without linear_before_reset multiplies r into h before R_h */
    if (!(G == 3 && !r->lbr && j >= 2 * H))
      for (int64_t k = 0; k < H; k++)
        q += h[k] * interp_load_f(r->R, (d * G * H + j) * H + k);
    if (r->B) {
      s += interp_load_f(r->B, d * 2 * G * H + j);
      q += interp_load_f(r->B, d * 2 * G * H + G * H + j);
    }
    xw[j] = s, hr[j] = q;
  }
  const kiln_rnn_act *f = &r->acts[d * r->per_dir];
  if (G == 1) {
    for (int64_t j = 0; j < H; j++)
      h[j] = mv_act_apply(&f[0], xw[j] + hr[j], r->clip);
  } else if (G == 3) {
    double *z = nh; /* z and r gates reuse nh; the new h goes to xw's z slot */
    for (int64_t j = 0; j < H; j++) {
      z[j] = mv_act_apply(&f[0], xw[j] + hr[j], r->clip);
      double rg = mv_act_apply(&f[0], xw[H + j] + hr[H + j], r->clip);
      nh[H + j] = rg;
    }
    for (int64_t j = 0; j < H; j++) {
      double pre;
      if (r->lbr) {
        pre = xw[2 * H + j] + nh[H + j] * hr[2 * H + j];
      } else {
        double q = 0;
        for (int64_t k = 0; k < H; k++)
          q += nh[H + k] * h[k] * interp_load_f(r->R, (d * G * H + 2 * H + j) * H + k);
        pre = xw[2 * H + j] + q + hr[2 * H + j];
      }
      xw[j] = mv_act_apply(&f[1], pre, r->clip); /* h~; xw[j] no longer needed */
    }
    for (int64_t j = 0; j < H; j++)
      h[j] = (1 - z[j]) * xw[j] + z[j] * h[j];
  } else {
    const interp_tensor *P = r->P;
    for (int64_t j = 0; j < H; j++) {
      double pi = P ? interp_load_f(P, d * 3 * H + j) : 0;
      double po = P ? interp_load_f(P, d * 3 * H + H + j) : 0;
      double pf = P ? interp_load_f(P, d * 3 * H + 2 * H + j) : 0;
      double ig = mv_act_apply(&f[0], xw[j] + hr[j] + pi * c[j], r->clip);
      double fg = r->input_forget
                      ? 1 - ig
                      : mv_act_apply(&f[0], xw[2 * H + j] + hr[2 * H + j] + pf * c[j], r->clip);
      double cc = mv_act_apply(&f[1], xw[3 * H + j] + hr[3 * H + j], r->clip);
      double cn = fg * c[j] + ig * cc;
      double og = mv_act_apply(&f[0], xw[H + j] + hr[H + j] + po * cn, r->clip);
      c[j] = cn;
      nh[j] = og * mv_act_apply(&f[2], cn, r->clip);
    }
    for (int64_t j = 0; j < H; j++)
      h[j] = nh[j];
  }
}

static kiln_status mv_rnn_run(mv_rnn *r, const kiln_attrs *a) {
  const char *dir = kiln_attrs_string_or(a, "direction", "forward");
  bool fwd = !strcmp(dir, "forward"), rev = !strcmp(dir, "reverse");
  bool bi = !strcmp(dir, "bidirectional");
  if (!fwd && !rev && !bi)
    return interp_mv_err(KILN_INVALID_ARGUMENT, r->kern, "unknown direction '%s'", dir);
  r->D = bi ? 2 : 1;
  r->layout1 = kiln_attrs_int_or(a, "layout", 0) != 0;
  r->clip = kiln_attrs_float_or(a, "clip", 0.0);
  const kiln_type *xt = &r->X->type, *wt = &r->W->type, *rt = &r->R->type;
  if (xt->rank != 3 || wt->rank != 3 || rt->rank != 3)
    return interp_mv_err(KILN_INVALID_ARGUMENT, r->kern, "X, W and R must be 3-D");
  r->S = xt->dims[r->layout1 ? 1 : 0];
  r->Bt = xt->dims[r->layout1 ? 0 : 1];
  r->I = xt->dims[2];
  r->H = rt->dims[2];
  if (wt->dims[0] != r->D || wt->dims[1] != r->gates * r->H || wt->dims[2] != r->I ||
      rt->dims[0] != r->D || rt->dims[1] != r->gates * r->H)
    return interp_mv_err(KILN_INVALID_ARGUMENT, r->kern,
                         "W/R shapes do not match %lld directions, hidden size %lld",
                         (long long)r->D, (long long)r->H);
  KILN_TRY(mv_acts(r->kind, a, (uint32_t)r->D, r->acts));
  int64_t H = r->H;
  double *mem = calloc((size_t)(H * (2 + 3 * r->gates)) + 1, sizeof(double));
  if (!mem)
    return interp_mv_err(KILN_OUT_OF_MEMORY, r->kern, "no memory for the state");
  double *h = mem, *c = mem + H, *buf = mem + 2 * H;
  if (r->Y)
    memset(r->Y->data, 0, (size_t)kiln_type_bytes(&r->Y->type));
  for (int64_t d = 0; d < r->D; d++) {
    bool reverse = rev || d == 1;
    for (int64_t b = 0; b < r->Bt; b++) {
      for (int64_t j = 0; j < H; j++) {
        h[j] = r->h0 ? interp_load_f(r->h0, mv_hi(r, d, b) + j) : 0;
        c[j] = r->c0 ? interp_load_f(r->c0, mv_hi(r, d, b) + j) : 0;
      }
      int64_t len = r->lens ? interp_mv_load_int(r->lens, b) : r->S;
      if (len > r->S || len < 0) {
        free(mem);
        return interp_mv_err(KILN_INVALID_ARGUMENT, r->kern,
                             "sequence_lens[%lld] = %lld outside [0, %lld]", (long long)b,
                             (long long)len, (long long)r->S);
      }
      for (int64_t s = 0; s < len; s++) {
        int64_t t = reverse ? len - 1 - s : s;
        mv_step(r, d, b, t, h, c, buf);
        if (r->Y)
          for (int64_t j = 0; j < H; j++)
            interp_store_f(r->Y, mv_yi(r, t, d, b) + j, h[j]);
      }
      for (int64_t j = 0; j < H; j++) {
        if (r->Yh)
          interp_store_f(r->Yh, mv_hi(r, d, b) + j, h[j]);
        if (r->Yc)
          interp_store_f(r->Yc, mv_hi(r, d, b) + j, c[j]);
      }
    }
  }
  free(mem);
  return NULL;
}

static interp_tensor *mv_out(interp_tensor *outs, uint32_t n_outs, uint32_t i) {
  return i < n_outs && outs[i].data ? &outs[i] : NULL;
}

static void mv_rnn_io(mv_rnn *r, interp_tensor *outs, uint32_t n_outs, const interp_tensor *ins,
                      uint32_t n_ins) {
  r->X = &ins[0], r->W = &ins[1], r->R = &ins[2];
  r->B = interp_mv_opt(ins, n_ins, 3);
  r->lens = interp_mv_opt(ins, n_ins, 4);
  r->h0 = interp_mv_opt(ins, n_ins, 5);
  r->c0 = interp_mv_opt(ins, n_ins, 6);
  r->P = interp_mv_opt(ins, n_ins, 7);
  r->Y = mv_out(outs, n_outs, 0);
  r->Yh = mv_out(outs, n_outs, 1);
  r->Yc = mv_out(outs, n_outs, 2);
}

kiln_status interp_RNN(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                       const interp_tensor *ins, uint32_t n_ins) {
  mv_rnn r = {.kern = "RNN", .kind = KILN_NODE_RNN, .gates = 1, .per_dir = 1};
  mv_rnn_io(&r, outs, n_outs, ins, n_ins > 6 ? 6 : n_ins);
  r.c0 = NULL, r.P = NULL, r.Yc = NULL;
  return mv_rnn_run(&r, attrs);
}

kiln_status interp_GRU(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                       const interp_tensor *ins, uint32_t n_ins) {
  mv_rnn r = {.kern = "GRU", .kind = KILN_NODE_GRU, .gates = 3, .per_dir = 2};
  mv_rnn_io(&r, outs, n_outs, ins, n_ins > 6 ? 6 : n_ins);
  r.c0 = NULL, r.P = NULL, r.Yc = NULL;
  r.lbr = kiln_attrs_int_or(attrs, "linear_before_reset", 0) != 0;
  return mv_rnn_run(&r, attrs);
}

kiln_status interp_LSTM(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                        const interp_tensor *ins, uint32_t n_ins) {
  mv_rnn r = {.kern = "LSTM", .kind = KILN_NODE_LSTM, .gates = 4, .per_dir = 3};
  mv_rnn_io(&r, outs, n_outs, ins, n_ins);
  r.input_forget = kiln_attrs_int_or(attrs, "input_forget", 0) != 0;
  return mv_rnn_run(&r, attrs);
}
