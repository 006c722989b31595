/* plugins/interpreter/conv.c: Conv, ConvTranspose, ConvInteger and
 * QLinearConv over 1-D to n-D spatial dimensions ([N, C, D1..Dk] layout),
 * and Col2Im. ConvInteger and QLinearConv, of the quant family, are here
 * because they run Conv's window walk. Result spatial sizes come from the
 * inferred result type; the attributes decide where each window starts. */
#include "kernel.h"

#include <kiln/ops.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A convolution: channels and groups, and its window (decoded by
 * kiln_window_decode; pad_begin is where each window starts). */
typedef struct mv_conv {
  kiln_window w;
  int64_t N, C, M, group;
} mv_conv;

/* x: [N, C, in...]; y: [N, M, out...]; w: [M, C/g, k...] (or [C, M/g, k...]
 * when transposed). */
static kiln_status mv_conv_params(const char *name, const kiln_attrs *a, const kiln_type *x,
                                  const kiln_type *w, const kiln_type *y, bool transposed,
                                  mv_conv *p) {
  memset(p, 0, sizeof *p);
  if (x->rank < 3 || w->rank != x->rank || y->rank != x->rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, name,
                         "X, W and Y need equal rank >= 3 (got %u, %u, %u)", x->rank, w->rank,
                         y->rank);
  p->N = x->dims[0];
  p->C = x->dims[1];
  p->M = y->dims[1];
  p->group = kiln_attrs_int_or(a, "group", 1);
  if (p->group <= 0 || p->C % p->group || p->M % p->group)
    return interp_mv_err(KILN_INVALID_ARGUMENT, name, "group %lld does not divide channels",
                         (long long)p->group);
  int64_t wc = transposed ? p->C : p->M, wk = transposed ? p->M / p->group : p->C / p->group;
  if (w->dims[0] != wc || w->dims[1] != wk)
    return interp_mv_err(
        KILN_INVALID_ARGUMENT, name, "W is [%lld, %lld, ...], expected [%lld, %lld, ...]",
        (long long)w->dims[0], (long long)w->dims[1], (long long)wc, (long long)wk);
  KILN_TRY_CTX(kiln_window_decode(name, a, x, y, w->dims + 2, transposed, &p->w), "interpreter");
  return NULL;
}

/* How the accumulator of one output cell is turned into the result. */
typedef struct mv_conv_io {
  const interp_tensor *x, *w, *b;
  bool integer;
  const interp_tensor *xzp, *wzp;          /* integer kinds */
  const interp_tensor *xs, *ws, *ys, *yzp; /* QLinearConv */
  interp_tensor *y;
} mv_conv_io;

static int64_t mv_scalar_i(const interp_tensor *t, int64_t i) {
  if (!t)
    return 0;
  return interp_mv_load_int(t, interp_mv_numel(t) == 1 ? 0 : i);
}

static void mv_conv_finish(const mv_conv_io *io, int64_t oi, int64_t m, double facc, int64_t iacc) {
  if (!io->integer) {
    if (io->b)
      facc += interp_load_f(io->b, m);
    interp_store_f(io->y, oi, facc);
    return;
  }
  if (io->b)
    iacc += interp_mv_load_int(io->b, m);
  if (!io->ys) {
    interp_mv_store_bits(io->y, oi, (uint64_t)iacc);
    return;
  }
  double s =
      interp_mv_requant_multiplier(io->xs, 0, io->ws, interp_mv_numel(io->ws) == 1 ? 0 : m, io->ys);
  interp_mv_store_bits(
      io->y, oi,
      (uint64_t)interp_mv_requantize(io->y->type.elem, iacc, s, mv_scalar_i(io->yzp, 0)));
}

static kiln_status mv_conv_run(const mv_conv *p, const mv_conv_io *io) {
  int64_t Cg = p->C / p->group, Mg = p->M / p->group;
  int64_t osz = interp_mv_prod(p->w.out, 0, p->w.rank),
          ksz = interp_mv_prod(p->w.kernel, 0, p->w.rank);
  int64_t isz = interp_mv_prod(p->w.in, 0, p->w.rank);
  int64_t xzp = mv_scalar_i(io->xzp, 0);
  int64_t oc[KILN_MAX_RANK], kc[KILN_MAX_RANK];
  for (int64_t n = 0; n < p->N; n++)
    for (int64_t m = 0; m < p->M; m++) {
      int64_t g = m / Mg, wzp = mv_scalar_i(io->wzp, m);
      for (int64_t o = 0; o < osz; o++) {
        interp_mv_unravel(p->w.out, p->w.rank, o, oc);
        double facc = 0;
        int64_t iacc = 0;
        for (int64_t kf = 0; kf < ksz; kf++) {
          interp_mv_unravel(p->w.kernel, p->w.rank, kf, kc);
          int64_t xi = 0;
          bool inside = true;
          for (uint32_t d = 0; d < p->w.rank; d++) {
            int64_t x = oc[d] * p->w.stride[d] - p->w.pad_begin[d] + kc[d] * p->w.dilation[d];
            if (x < 0 || x >= p->w.in[d]) {
              inside = false;
              break;
            }
            xi = xi * p->w.in[d] + x;
          }
          if (!inside)
            continue; /* padding: zero (or the zero point, i.e. zero after shifting) */
          for (int64_t cl = 0; cl < Cg; cl++) {
            int64_t xo = (n * p->C + g * Cg + cl) * isz + xi;
            int64_t wo = (m * Cg + cl) * ksz + kf;
            if (io->integer)
              iacc += (interp_mv_load_int(io->x, xo) - xzp) * (interp_mv_load_int(io->w, wo) - wzp);
            else
              facc += interp_load_f(io->x, xo) * interp_load_f(io->w, wo);
          }
        }
        mv_conv_finish(io, (n * p->M + m) * osz + o, m, facc, iacc);
      }
    }
  return NULL;
}

kiln_status interp_Conv(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                        const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs;
  mv_conv p;
  KILN_TRY(mv_conv_params("Conv", attrs, &ins[0].type, &ins[1].type, &outs[0].type, false, &p));
  mv_conv_io io = {.x = &ins[0], .w = &ins[1], .b = interp_mv_opt(ins, n_ins, 2), .y = &outs[0]};
  KILN_TRY(mv_conv_run(&p, &io));
  /* kiln's fused residual (input 3): the Add it replaced, rounded as that
   * Add's result was, before the activation */
  const interp_tensor *res = interp_mv_opt(ins, n_ins, 3);
  if (res) {
    int64_t n = kiln_type_numel(&outs[0].type);
    for (int64_t i = 0; i < n; i++)
      interp_store_f(&outs[0], i, interp_load_f(&outs[0], i) + interp_load_f(res, i));
  }
  return interp_apply_activation("Conv", attrs, &outs[0]);
}

kiln_status interp_ConvInteger(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                               const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs;
  mv_conv p;
  KILN_TRY(
      mv_conv_params("ConvInteger", attrs, &ins[0].type, &ins[1].type, &outs[0].type, false, &p));
  mv_conv_io io = {.x = &ins[0],
                   .w = &ins[1],
                   .integer = true,
                   .xzp = interp_mv_opt(ins, n_ins, 2),
                   .wzp = interp_mv_opt(ins, n_ins, 3),
                   .y = &outs[0]};
  return mv_conv_run(&p, &io);
}

kiln_status interp_QLinearConv(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                               const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs;
  if (n_ins < 8)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "QLinearConv", "needs 8 inputs, got %u", n_ins);
  mv_conv p;
  KILN_TRY(
      mv_conv_params("QLinearConv", attrs, &ins[0].type, &ins[3].type, &outs[0].type, false, &p));
  mv_conv_io io = {.x = &ins[0],
                   .xs = &ins[1],
                   .xzp = interp_mv_opt(ins, n_ins, 2),
                   .w = &ins[3],
                   .ws = &ins[4],
                   .wzp = interp_mv_opt(ins, n_ins, 5),
                   .ys = &ins[6],
                   .yzp = interp_mv_opt(ins, n_ins, 7),
                   .b = interp_mv_opt(ins, n_ins, 8),
                   .integer = true,
                   .y = &outs[0]};
  return mv_conv_run(&p, &io);
}

/* Each input cell scatters x * w into the result window it touches. */
kiln_status interp_ConvTranspose(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                 const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs;
  mv_conv p;
  KILN_TRY(
      mv_conv_params("ConvTranspose", attrs, &ins[0].type, &ins[1].type, &outs[0].type, true, &p));
  const interp_tensor *X = &ins[0], *W = &ins[1], *B = interp_mv_opt(ins, n_ins, 2);
  int64_t n_out = interp_mv_numel(&outs[0]);
  double *acc = calloc(n_out > 0 ? (size_t)n_out : 1, sizeof *acc);
  if (!acc)
    return interp_mv_err(KILN_OUT_OF_MEMORY, "ConvTranspose", "no memory for %lld accumulators",
                         (long long)n_out);
  int64_t Cg = p.C / p.group, Mg = p.M / p.group;
  int64_t osz = interp_mv_prod(p.w.out, 0, p.w.rank), ksz = interp_mv_prod(p.w.kernel, 0, p.w.rank);
  int64_t isz = interp_mv_prod(p.w.in, 0, p.w.rank);
  int64_t ic[KILN_MAX_RANK], kc[KILN_MAX_RANK];
  /* an empty result (no output channels) scatters nothing: its kernel
   * window still has every tap, so the loops would walk them in vain */
  int64_t C = n_out > 0 && Mg > 0 ? p.C : 0;
  for (int64_t n = 0; n < p.N; n++)
    for (int64_t c = 0; c < C; c++) {
      int64_t g = c / Cg;
      for (int64_t i = 0; i < isz; i++) {
        interp_mv_unravel(p.w.in, p.w.rank, i, ic);
        double xv = interp_load_f(X, (n * p.C + c) * isz + i);
        for (int64_t kf = 0; kf < ksz; kf++) {
          interp_mv_unravel(p.w.kernel, p.w.rank, kf, kc);
          int64_t oi = 0;
          bool inside = true;
          for (uint32_t d = 0; d < p.w.rank; d++) {
            int64_t o = ic[d] * p.w.stride[d] - p.w.pad_begin[d] + kc[d] * p.w.dilation[d];
            if (o < 0 || o >= p.w.out[d]) {
              inside = false;
              break;
            }
            oi = oi * p.w.out[d] + o;
          }
          if (!inside)
            continue;
          for (int64_t ml = 0; ml < Mg; ml++) {
            int64_t m = g * Mg + ml;
            acc[(n * p.M + m) * osz + oi] += xv * interp_load_f(W, (c * Mg + ml) * ksz + kf);
          }
        }
      }
    }
  for (int64_t o = 0; o < n_out; o++) {
    double v = acc[o];
    if (B)
      v += interp_load_f(B, (o / osz) % p.M);
    interp_store_f(&outs[0], o, v);
  }
  free(acc);
  return NULL;
}

/* Col2Im: the inverse of im2col. Column (c, kernel offset k) of block l
 * adds into image position l*stride - pad_begin + k*dilation; positions in
 * the padding are dropped. */
INTERP_KERNEL(Col2Im) {
  INTERP_ARITY(Col2Im, 1, 1);
  const interp_tensor *x = &ins[0];
  interp_tensor *y = &outs[0];
  uint32_t nd = y->type.rank - 2;
  int64_t blk[KILN_MAX_RANK], st[KILN_MAX_RANK], pad[2 * KILN_MAX_RANK], dil[KILN_MAX_RANK];
  int64_t nblk[KILN_MAX_RANK];
  const kiln_attr *ab = kiln_attrs_find(attrs, "block_shape");
  const kiln_attr *as = kiln_attrs_find(attrs, "strides"), *ap = kiln_attrs_find(attrs, "pads");
  const kiln_attr *ad = kiln_attrs_find(attrs, "dilations");
  if (!ab || kiln_attr_len(ab) != nd)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter Col2Im: bad 'block_shape'");
  int64_t kprod = 1, lprod = 1;
  for (uint32_t d = 0; d < nd; d++) {
    blk[d] = kiln_attr_ints(ab)[d];
    st[d] = as && kiln_attr_len(as) == nd ? kiln_attr_ints(as)[d] : 1;
    dil[d] = ad && kiln_attr_len(ad) == nd ? kiln_attr_ints(ad)[d] : 1;
    pad[d] = ap && kiln_attr_len(ap) == 2 * nd ? kiln_attr_ints(ap)[d] : 0;
    pad[nd + d] = ap && kiln_attr_len(ap) == 2 * nd ? kiln_attr_ints(ap)[nd + d] : 0;
    nblk[d] = (y->type.dims[2 + d] + pad[d] + pad[nd + d] - dil[d] * (blk[d] - 1) - 1) / st[d] + 1;
    kprod *= blk[d];
    lprod *= nblk[d];
  }
  if (x->type.dims[2] != lprod)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter Col2Im: input has %lld blocks, "
                            "expected %lld",
                            (long long)x->type.dims[2], (long long)lprod);
  bool is_float = interp_class_of(y->type.elem) == INTERP_FLOAT;
  int64_t total = interp_numel(y), img = total / (y->type.dims[0] * y->type.dims[1]);
  double *acc;
  KILN_TRY(interp_scratch("Col2Im", total, sizeof *acc, (void **)&acc));
  int64_t nc = y->type.dims[0] * y->type.dims[1];
  for (int64_t b = 0; b < nc; b++)
    for (int64_t k = 0; k < kprod; k++)
      for (int64_t l = 0; l < lprod; l++) {
        int64_t kr = k, lr = l, pos = 0;
        bool inside = true;
        for (int d = (int)nd - 1, stride = 1; d >= 0; d--) {
          int64_t kd = kr % blk[d], ld = lr % nblk[d];
          kr /= blk[d], lr /= nblk[d];
          int64_t p = ld * st[d] - pad[d] + kd * dil[d];
          inside = inside && p >= 0 && p < y->type.dims[2 + d];
          pos += p * stride;
          stride *= (int)y->type.dims[2 + d];
        }
        if (inside) {
          int64_t xi = (b * kprod + k) * lprod + l;
          acc[b * img + pos] += is_float ? interp_load_f(x, xi) : (double)interp_load_i(x, xi);
        }
      }
  for (int64_t i = 0; i < total; i++) {
    if (is_float)
      interp_store_f(y, i, acc[i]);
    else
      interp_store_i(y, i, (int64_t)acc[i]);
  }
  free(acc);
  return NULL;
}

/* BlockedConv: Conv on the plain views of X and the residual, the result
 * blocked (its lanes past M zero). */
kiln_status interp_BlockedConv(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                               const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs;
  const kiln_type *xt = &ins[0].type, *wt = &ins[1].type, *yt = &outs[0].type;
  int64_t group = kiln_attrs_int_or(attrs, "group", 1), C = wt->dims[1] * group, M = wt->dims[0];
  size_t es = kiln_elem_size(yt->elem);
  interp_tensor t[4]; /* plain X, W, B, residual */
  memcpy(t, ins, sizeof(interp_tensor) * (n_ins < 4 ? n_ins : 4));
  for (uint32_t i = n_ins; i < 4; i++)
    t[i] = (interp_tensor){0};
  interp_tensor y = {.type = *yt};
  y.type.rank = 4;
  y.type.dims[1] = M;
  void *xd = NULL, *rd = NULL, *yd = NULL;
  kiln_status s = NULL;
  if (xt->rank == 5) {
    t[0].type.rank = 4;
    t[0].type.dims[1] = C;
    s = interp_scratch("BlockedConv", kiln_type_numel(&t[0].type), es, &xd);
    t[0].data = xd;
    if (!s)
      interp_mv_block_copy(&t[0], (interp_tensor *)&ins[0], false);
  }
  if (!s && t[3].data) {
    t[3].type = y.type;
    s = interp_scratch("BlockedConv", kiln_type_numel(&y.type), es, &rd);
    t[3].data = rd;
    if (!s)
      interp_mv_block_copy(&t[3], (interp_tensor *)&ins[3], false);
  }
  if (!s)
    s = interp_scratch("BlockedConv", kiln_type_numel(&y.type), es, &yd);
  y.data = yd;
  if (!s)
    s = interp_Conv(attrs, &y, 1, t, n_ins);
  if (!s)
    interp_mv_block_copy(&y, &outs[0], true);
  free(xd);
  free(rd);
  free(yd);
  return s;
}
