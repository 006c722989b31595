/* plugins/cpu/kernels/conv_nd.c: type-generic N-D convolution, transposed
 * convolution and pooling (max with the Indices result, average), for the
 * cases the fast f32 2-D kernels (conv.c, pool.c) do not take: 3-D and
 * more, f64, f16, integer max pooling. The N-D pool stays here with the
 * convolutions because all three walk windows with the same N-D index
 * helpers. Accumulation is in double in a fixed
 * order, on the calling thread, so results never depend on threads. */
#include <math.h>

#include "kcpu_elem.h"

#define KCPU_ND_MAX 8

/* Row-major index -> coordinates over dims[sp]. */
static void kcpu_nd_unravel(const int64_t *dims, int64_t sp, int64_t i, int64_t *c) {
  for (int64_t d = sp - 1; d >= 0; d--) {
    c[d] = i % dims[d];
    i /= dims[d];
  }
}

static int64_t kcpu_nd_prod(const int64_t *dims, int64_t sp) {
  int64_t p = 1;
  for (int64_t d = 0; d < sp; d++)
    p *= dims[d];
  return p;
}

/* The taps [lo, hi) of a window of K taps d apart starting at base whose
 * coordinate lies in [from, to). */
static void kcpu_nd_taps(int64_t base, int64_t d, int64_t K, int64_t from, int64_t to, int64_t *lo,
                         int64_t *hi) {
  int64_t a = from - base, b = to - 1 - base;
  /* ceil(a / d) and floor(b / d) + 1 for d > 0, whatever the signs */
  int64_t l = a <= 0 ? -(-a / d) : (a + d - 1) / d,
          h = b >= 0 ? b / d + 1 : -((-b + d - 1) / d) + 1;
  *lo = l < 0 ? 0 : l;
  *hi = h > K ? K : h;
  if (*hi < *lo)
    *hi = *lo;
}

/* Y[n, m, o] = B[m] + Σ_{c in m's group, k} X[n, c, o*s - pb + k*dil] W[m, c', k]. */
void kcpu_k_convnd(int64_t elem, const void *X, const void *W, const void *B, void *Y, int64_t N,
                   int64_t C, int64_t M, int64_t group, int64_t sp, const int64_t *idims,
                   const int64_t *odims, const int64_t *kdims, const int64_t *strides,
                   const int64_t *dil, const int64_t *pb) {
  int64_t Cg = C / group, Mg = M / group;
  int64_t isz = kcpu_nd_prod(idims, sp), osz = kcpu_nd_prod(odims, sp),
          ksz = kcpu_nd_prod(kdims, sp);
  int64_t oc[KCPU_ND_MAX], kc[KCPU_ND_MAX];
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++) {
      int64_t g = m / Mg;
      for (int64_t o = 0; o < osz; o++) {
        kcpu_nd_unravel(odims, sp, o, oc);
        double acc = B ? kcpu_e_ldf(elem, B, m) : 0.0;
        for (int64_t kf = 0; kf < ksz; kf++) {
          kcpu_nd_unravel(kdims, sp, kf, kc);
          int64_t ii = 0;
          int inside = 1;
          for (int64_t d = 0; d < sp && inside; d++) {
            int64_t p = oc[d] * strides[d] - pb[d] + kc[d] * dil[d];
            inside = p >= 0 && p < idims[d];
            ii = ii * idims[d] + p;
          }
          if (!inside)
            continue;
          for (int64_t cl = 0; cl < Cg; cl++) {
            int64_t c = g * Cg + cl;
            acc += kcpu_e_ldf(elem, X, (n * C + c) * isz + ii) *
                   kcpu_e_ldf(elem, W, (m * Cg + cl) * ksz + kf);
          }
        }
        kcpu_e_stf(elem, Y, (n * M + m) * osz + o, acc);
      }
    }
}

/* Each input cell scatters x * w into the window it touches:
 * o = i*s - pb + k*dil. W is [C, M/group, k...]. Returns -1 without
 * scratch memory. */
int kcpu_k_convtransposend(int64_t elem, const void *X, const void *W, const void *B, void *Y,
                           int64_t N, int64_t C, int64_t M, int64_t group, int64_t sp,
                           const int64_t *idims, const int64_t *odims, const int64_t *kdims,
                           const int64_t *strides, const int64_t *dil, const int64_t *pb) {
  int64_t Cg = C / group, Mg = M / group;
  int64_t isz = kcpu_nd_prod(idims, sp), osz = kcpu_nd_prod(odims, sp),
          ksz = kcpu_nd_prod(kdims, sp);
  int64_t total = N * M * osz;
  double *acc = kcpu_alloc((total > 0 ? total : 1) * (int64_t)sizeof(double));
  if (!acc)
    return -1;
  for (int64_t i = 0; i < total; i++)
    acc[i] = 0.0;
  int64_t ic[KCPU_ND_MAX], kc[KCPU_ND_MAX];
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++) {
      int64_t g = c / Cg;
      for (int64_t i = 0; i < isz; i++) {
        kcpu_nd_unravel(idims, sp, i, ic);
        double xv = kcpu_e_ldf(elem, X, (n * C + c) * isz + i);
        for (int64_t kf = 0; kf < ksz; kf++) {
          kcpu_nd_unravel(kdims, sp, kf, kc);
          int64_t oi = 0;
          int inside = 1;
          for (int64_t d = 0; d < sp && inside; d++) {
            int64_t o = ic[d] * strides[d] - pb[d] + kc[d] * dil[d];
            inside = o >= 0 && o < odims[d];
            oi = oi * odims[d] + o;
          }
          if (!inside)
            continue;
          for (int64_t ml = 0; ml < Mg; ml++)
            acc[(n * M + g * Mg + ml) * osz + oi] +=
                xv * kcpu_e_ldf(elem, W, (c * Mg + ml) * ksz + kf);
        }
      }
    }
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++) {
      double b = B ? kcpu_e_ldf(elem, B, m) : 0.0;
      for (int64_t o = 0; o < osz; o++) {
        int64_t idx = (n * M + m) * osz + o;
        kcpu_e_stf(elem, Y, idx, acc[idx] + b);
      }
    }
  kcpu_free(acc);
  return 0;
}

/* Pooling over [NC, in...]: mode 0 max (Ind, when not NULL, gets the
 * flat input index of the max: row-major, or column-major over the spatial
 * dims when col_major), 1 average. Windows are clipped to the input; with
 * count_include_pad the average divides by the window clipped to
 * [-pb, in+pe) instead. */
void kcpu_k_poolnd(int64_t elem, const void *X, void *Y, int64_t *Ind, int64_t NC, int64_t sp,
                   const int64_t *idims, const int64_t *odims, const int64_t *kdims,
                   const int64_t *strides, const int64_t *dil, const int64_t *pb, const int64_t *pe,
                   int64_t mode, int64_t count_include_pad, int64_t col_major) {
  int64_t isz = kcpu_nd_prod(idims, sp), osz = kcpu_nd_prod(odims, sp);
  int64_t oc[KCPU_ND_MAX], kc[KCPU_ND_MAX], lo[KCPU_ND_MAX], hi[KCPU_ND_MAX];
  for (int64_t nc = 0; nc < NC; nc++)
    for (int64_t o = 0; o < osz; o++) {
      kcpu_nd_unravel(odims, sp, o, oc);
      double best = -INFINITY, sum = 0.0;
      int64_t best_i = -1, cnt = 0;
      double padcnt = 1; /* a box of taps can hold more than 2^63 */
      /* only the taps inside the input are walked (a window may hold far
       * more), in the kernel's row-major order */
      int any = 1;
      for (int64_t d = 0; d < sp; d++) {
        int64_t base = oc[d] * strides[d] - pb[d];
        kcpu_nd_taps(base, dil[d], kdims[d], 0, idims[d], &lo[d], &hi[d]);
        kc[d] = lo[d];
        any = any && lo[d] < hi[d];
        int64_t plo, phi;
        kcpu_nd_taps(base, dil[d], kdims[d], -pb[d], idims[d] + pe[d], &plo, &phi);
        padcnt *= (double)(phi - plo);
      }
      while (any) {
        int64_t ii = 0, cm = 0, cst = 1;
        for (int64_t d = 0; d < sp; d++) {
          int64_t p = oc[d] * strides[d] - pb[d] + kc[d] * dil[d];
          ii = ii * idims[d] + p;
          cm += p * cst;
          cst *= idims[d];
        }
        double v = kcpu_e_ldf(elem, X, nc * isz + ii);
        cnt++;
        sum += v;
        if (best_i < 0 || v > best) {
          best = v;
          best_i = col_major ? cm : ii;
        }
        any = 0;
        for (int64_t d = sp - 1; d >= 0 && !any; d--) {
          if (++kc[d] < hi[d])
            any = 1;
          else
            kc[d] = lo[d];
        }
      }
      int64_t yi = nc * osz + o;
      if (mode == 0) {
        kcpu_e_stf(elem, Y, yi, best_i < 0 ? 0.0 : best);
        if (Ind)
          Ind[yi] = nc * isz + (best_i < 0 ? 0 : best_i);
      } else {
        double div = count_include_pad ? padcnt : (double)cnt;
        kcpu_e_stf(elem, Y, yi, div != 0 ? sum / div : 0.0);
      }
    }
}
