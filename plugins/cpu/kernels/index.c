/* plugins/cpu/kernels/index.c: Gather, ScatterElements and ScatterND, any
 * element type. They run on the calling thread; scatter updates are
 * applied in index order, so duplicate indices resolve the same way on
 * every run (the last update wins, reductions fold in order). */
#include "kcpu_elem.h"

/* y[i] (op)= u; red: 0 replace, 1 add, 2 mul, 3 max, 4 min. */
static void kcpu_scatter_one(int64_t elem, void *y, int64_t yi, const void *u, int64_t ui,
                             int64_t red) {
  int64_t es = kcpu_e_size(elem);
  if (red == 0) {
    memcpy((char *)y + yi * es, (const char *)u + ui * es, (size_t)es);
  } else if (kcpu_e_is_float(elem)) {
    double a = kcpu_e_ldf(elem, y, yi), b = kcpu_e_ldf(elem, u, ui);
    double r = red == 1 ? a + b : red == 2 ? a * b : red == 3 ? (b > a ? b : a) : (b < a ? b : a);
    kcpu_e_stf(elem, y, yi, r);
  } else {
    int64_t a = kcpu_e_ldi(elem, y, yi), b = kcpu_e_ldi(elem, u, ui);
    int is_u64 = elem == KCPU_U64;
    int gt = is_u64 ? (uint64_t)b > (uint64_t)a : b > a;
    int64_t r = red == 1   ? (int64_t)((uint64_t)a + (uint64_t)b)
                : red == 2 ? (int64_t)((uint64_t)a * (uint64_t)b)
                : red == 3 ? (gt ? b : a)
                           : (gt ? a : b);
    kcpu_e_sti(elem, y, yi, r);
  }
}

/* ScatterElements: y = data, then for every index position p of
 * idims[rank], y[p with p[axis] = idx[p]] (op)= upd[p]. Negative indices
 * count from the end; out-of-range ones are skipped. */
void kcpu_k_scatter_elements(int64_t elem, const void *data, int64_t idx_elem, const void *idx,
                             const void *upd, void *y, int64_t rank, const int64_t *ddims,
                             const int64_t *idims, int64_t axis, int64_t red) {
  int64_t dn = 1, in = 1, es = kcpu_e_size(elem);
  for (int64_t d = 0; d < rank; d++) {
    dn *= ddims[d];
    in *= idims[d];
  }
  if (y != data)
    memmove(y, data, (size_t)(dn * es));
  int64_t c[16] = {0};
  for (int64_t p = 0; p < in; p++) {
    int64_t r = p;
    for (int64_t d = rank - 1; d >= 0; d--) {
      c[d] = r % idims[d];
      r /= idims[d];
    }
    int64_t t = kcpu_e_ldi(idx_elem, idx, p);
    if (t < 0)
      t += ddims[axis];
    if (t < 0 || t >= ddims[axis])
      continue;
    int64_t yi = 0;
    for (int64_t d = 0; d < rank; d++)
      yi = yi * ddims[d] + (d == axis ? t : c[d]);
    kcpu_scatter_one(elem, y, yi, upd, p, red);
  }
}

/* ScatterND: y = data [ddims, rank], then for each of n_idx index tuples
 * of length k, the slice y[tuple, ...] of `slice` elements (op)= the
 * matching slice of upd. */
void kcpu_k_scatter_nd(int64_t elem, const void *data, int64_t idx_elem, const void *idx,
                       const void *upd, void *y, int64_t rank, const int64_t *ddims, int64_t n_idx,
                       int64_t k, int64_t red) {
  int64_t dn = 1, es = kcpu_e_size(elem), slice = 1;
  for (int64_t d = 0; d < rank; d++)
    dn *= ddims[d];
  for (int64_t d = k; d < rank; d++)
    slice *= ddims[d];
  if (y != data)
    memmove(y, data, (size_t)(dn * es));
  for (int64_t p = 0; p < n_idx; p++) {
    int64_t off = 0, ok = 1;
    for (int64_t j = 0; j < k; j++) {
      int64_t t = kcpu_e_ldi(idx_elem, idx, p * k + j);
      if (t < 0)
        t += ddims[j];
      ok = ok && t >= 0 && t < ddims[j];
      off = off * ddims[j] + t;
    }
    if (!ok)
      continue;
    for (int64_t s = 0; s < slice; s++)
      kcpu_scatter_one(elem, y, off * slice + s, upd, p * slice + s, red);
  }
}

void kcpu_k_gather(const void *data, const void *idx, int64_t idx_is32, void *y, int64_t outer,
                   int64_t axis_n, int64_t inner, int64_t nidx, int64_t esize) {
  const char *src = data;
  char *dst = y;
  size_t row = (size_t)(inner * esize);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < nidx; j++) {
      int64_t k = idx_is32 ? ((const int32_t *)idx)[j] : ((const int64_t *)idx)[j];
      if (k < 0)
        k += axis_n;
      char *d = dst + (o * nidx + j) * (int64_t)row;
      if (k < 0 || k >= axis_n)
        memset(d, 0, row);
      else
        memcpy(d, src + (o * axis_n + k) * (int64_t)row, row);
    }
}
