/* plugins/cpu/kernels/loss.c: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss over [N, C, inner] float input (f32, f64, f16)
 * and integer targets [N, inner]. Sums run in double in element order, so
 * results do not depend on threads (these run on the calling thread). */
#include <math.h>

#include "kcpu_elem.h"

/* red: 0 none (y is [N, inner]), 1 sum, 2 mean (y is a scalar). A target
 * outside [0, C) that is not ignored is an index fault, as the reference
 * rejects it. Mean over zero weight is 0/0. */
static void kcpu_nll_core(int64_t xt, const void *logp, int64_t tt, const void *target, int64_t wt,
                          const void *weight, int64_t yt, void *y, int64_t N, int64_t C,
                          int64_t inner, int64_t red, int64_t has_ignore, int64_t ignore,
                          kcpu_fault *fault, int64_t site) {
  double total = 0.0, wsum = 0.0;
  for (int64_t b = 0; b < N; b++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t ti = b * inner + i, cls = kcpu_e_ldi(tt, target, ti);
      double loss = 0.0, w = 0.0;
      if (!(has_ignore && cls == ignore)) {
        if ((uint64_t)cls >= (uint64_t)C) {
          kcpu_fault_index(fault, site, cls, C, ti);
          return;
        }
        w = weight ? kcpu_e_ldf(wt, weight, cls) : 1.0;
        loss = -kcpu_e_ldf(xt, logp, (b * C + cls) * inner + i) * w;
      }
      if (red == 0)
        kcpu_e_stf(yt, y, ti, loss);
      total += loss;
      wsum += w;
    }
  if (red == 1)
    kcpu_e_stf(yt, y, 0, total);
  else if (red == 2)
    kcpu_e_stf(yt, y, 0, total / wsum);
}

void kcpu_k_nll(int64_t xt, const void *x, int64_t tt, const void *target, int64_t wt,
                const void *weight, void *y, int64_t N, int64_t C, int64_t inner, int64_t red,
                int64_t has_ignore, int64_t ignore, kcpu_fault *fault, int64_t site) {
  kcpu_nll_core(xt, x, tt, target, wt, weight, xt, y, N, C, inner, red, has_ignore, ignore, fault,
                site);
}

int kcpu_k_sce(int64_t xt, const void *x, int64_t tt, const void *target, int64_t wt,
               const void *weight, void *y, void *logp_out, int64_t N, int64_t C, int64_t inner,
               int64_t red, int64_t has_ignore, int64_t ignore, kcpu_fault *fault,
               int64_t site) {
  int64_t total = N * C * inner;
  double *lp = kcpu_alloc((total > 0 ? total : 1) * (int64_t)sizeof(double));
  if (!lp)
    return -1;
  for (int64_t b = 0; b < N; b++)
    for (int64_t i = 0; i < inner; i++) {
      double mx = -INFINITY, sum = 0.0;
      for (int64_t k = 0; k < C; k++) {
        double v = kcpu_e_ldf(xt, x, (b * C + k) * inner + i);
        mx = isnan(v) || v > mx ? v : mx;
      }
      for (int64_t k = 0; k < C; k++)
        sum += exp(kcpu_e_ldf(xt, x, (b * C + k) * inner + i) - mx);
      double ls = log(sum);
      for (int64_t k = 0; k < C; k++) {
        int64_t idx = (b * C + k) * inner + i;
        lp[idx] = kcpu_e_ldf(xt, x, idx) - mx - ls;
      }
    }
  kcpu_nll_core(KCPU_F64, lp, tt, target, wt, weight, xt, y, N, C, inner, red, has_ignore, ignore,
                fault, site);
  if (logp_out)
    for (int64_t i = 0; i < total; i++)
      kcpu_e_stf(xt, logp_out, i, lp[i]);
  kcpu_free(lp);
  return 0;
}
