/* plugins/cpu/kernels/resize.c: Resize driven by per-axis tap tables that
 * the emitter computes at compile time (shapes and scales are static): a
 * result cell is the weighted sum over the product of its axes' taps, so
 * every mode and coordinate transformation is only a different table. */
#include <math.h>

#include "kcpu_elem.h"

/* For axis d and result index o, taps t < ntaps[d] are at
 * toff[d] + o*ntaps[d] + t in tidx (input index; -1 = outside the input:
 * the cell is extrap) and tw (weights as the bits of doubles). nearest:
 * copy the single tap's element bit-exactly. Integer results round half to
 * even. */
void kcpu_k_resize(int64_t elem, const void *x, void *y, int64_t rank, const int64_t *idims,
                   const int64_t *odims, const int64_t *ntaps, const int64_t *toff,
                   const int64_t *tidx, const int64_t *tw, int64_t nearest, double extrap) {
  int64_t ist[16], oc[16], tc[16], n = 1, es = kcpu_e_size(elem);
  for (int64_t d = rank - 1, s = 1; d >= 0; d--) {
    ist[d] = s;
    s *= idims[d];
  }
  for (int64_t d = 0; d < rank; d++)
    n *= odims[d];
  int fl = kcpu_e_is_float(elem);
  for (int64_t o = 0; o < n; o++) {
    int64_t r = o, outside = 0;
    for (int64_t d = rank - 1; d >= 0; d--) {
      oc[d] = r % odims[d];
      r /= odims[d];
      tc[d] = 0;
    }
    for (int64_t d = 0; d < rank && !outside; d++)
      outside = tidx[toff[d] + oc[d] * ntaps[d]] < 0;
    if (outside) {
      kcpu_e_stf(elem, y, o, extrap);
      continue;
    }
    if (nearest) {
      int64_t src = 0;
      for (int64_t d = 0; d < rank; d++)
        src += tidx[toff[d] + oc[d] * ntaps[d]] * ist[d];
      memcpy((char *)y + o * es, (const char *)x + src * es, (size_t)es);
      continue;
    }
    double acc = 0.0;
    for (;;) {
      double wt = 1.0;
      int64_t src = 0;
      for (int64_t d = 0; d < rank; d++) {
        int64_t k = toff[d] + oc[d] * ntaps[d] + tc[d];
        double w;
        memcpy(&w, &tw[k], sizeof w);
        wt *= w;
        src += tidx[k] * ist[d];
      }
      if (wt != 0.0)
        acc += wt * kcpu_e_ldf(elem, x, src);
      int64_t d = rank - 1;
      for (; d >= 0; d--) {
        if (++tc[d] < ntaps[d])
          break;
        tc[d] = 0;
      }
      if (d < 0)
        break;
    }
    kcpu_e_stf(elem, y, o, fl ? acc : nearbyint(acc));
  }
}
