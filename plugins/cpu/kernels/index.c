/* plugins/cpu/kernels/index.c: Gather, GatherElements, GatherND,
 * ScatterElements and ScatterND, any element type. They run on the calling
 * thread; scatter updates are applied in index order, so duplicate indices
 * resolve the same way on every run (the last update wins, reductions fold
 * in order). Negative indices count from the end; an index still outside
 * its dimension records a fault (kcpu_fault_index, `site` naming the
 * instruction) and the kernel returns: one compare per index read, and
 * nothing is read or written through a bad index. */
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
 * idims[rank], y[p with p[axis] = idx[p]] (op)= upd[p]. */
void kcpu_k_scatter_elements(int64_t elem, const void *data, int64_t idx_elem, const void *idx,
                             const void *upd, void *y, int64_t rank, const int64_t *ddims,
                             const int64_t *idims, int64_t axis, int64_t red, kcpu_fault *fault,
                             int64_t site) {
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
    int64_t v = kcpu_e_ldi(idx_elem, idx, p), t = v < 0 ? v + ddims[axis] : v;
    if ((uint64_t)t >= (uint64_t)ddims[axis]) {
      kcpu_fault_index(fault, site, v, ddims[axis], p);
      return;
    }
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
                       int64_t k, int64_t red, kcpu_fault *fault, int64_t site) {
  int64_t dn = 1, es = kcpu_e_size(elem), slice = 1;
  for (int64_t d = 0; d < rank; d++)
    dn *= ddims[d];
  for (int64_t d = k; d < rank; d++)
    slice *= ddims[d];
  if (y != data)
    memmove(y, data, (size_t)(dn * es));
  for (int64_t p = 0; p < n_idx; p++) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; j++) {
      int64_t v = kcpu_e_ldi(idx_elem, idx, p * k + j), t = v < 0 ? v + ddims[j] : v;
      if ((uint64_t)t >= (uint64_t)ddims[j]) {
        kcpu_fault_index(fault, site, v, ddims[j], p * k + j);
        return;
      }
      off = off * ddims[j] + t;
    }
    for (int64_t s = 0; s < slice; s++)
      kcpu_scatter_one(elem, y, off * slice + s, upd, p * slice + s, red);
  }
}

void kcpu_k_gather(const void *data, const void *idx, int64_t idx_is32, void *y, int64_t outer,
                   int64_t axis_n, int64_t inner, int64_t nidx, int64_t esize, kcpu_fault *fault,
                   int64_t site) {
  const char *src = data;
  char *dst = y;
  size_t row = (size_t)(inner * esize);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < nidx; j++) {
      int64_t v = idx_is32 ? ((const int32_t *)idx)[j] : ((const int64_t *)idx)[j];
      int64_t k = v < 0 ? v + axis_n : v;
      if ((uint64_t)k >= (uint64_t)axis_n) {
        kcpu_fault_index(fault, site, v, axis_n, j);
        return;
      }
      memcpy(dst + (o * nidx + j) * (int64_t)row, src + (o * axis_n + k) * (int64_t)row, row);
    }
}

void kcpu_k_gather_elements(const void *data, int64_t idx_elem, const void *idx, void *y,
                            int64_t rank, const int64_t *ddims, const int64_t *idims, int64_t axis,
                            int64_t esize, kcpu_fault *fault, int64_t site) {
  int64_t st[16], c[16] = {0}, n = 1;
  for (int64_t d = rank - 1, s = 1; d >= 0; d--) {
    st[d] = s;
    s *= ddims[d];
    n *= idims[d];
  }
  const char *src = data;
  char *dst = y;
  for (int64_t p = 0; p < n; p++) {
    int64_t v = kcpu_e_ldi(idx_elem, idx, p), t = v < 0 ? v + ddims[axis] : v;
    if ((uint64_t)t >= (uint64_t)ddims[axis]) {
      kcpu_fault_index(fault, site, v, ddims[axis], p);
      return;
    }
    int64_t off = 0;
    for (int64_t d = 0; d < rank; d++)
      off += (d == axis ? t : c[d]) * st[d];
    memcpy(dst + p * esize, src + off * esize, (size_t)esize);
    for (int64_t d = rank - 1; d >= 0 && ++c[d] == idims[d]; d--)
      c[d] = 0; /* next coordinate of the index tensor, row-major */
  }
}

void kcpu_k_gather_nd(const void *data, int64_t idx_elem, const void *idx, void *y, int64_t rank,
                      const int64_t *ddims, int64_t batch_dims, int64_t k, int64_t tuples,
                      int64_t per_batch, int64_t esize, kcpu_fault *fault, int64_t site) {
  int64_t st[16], slice = 1;
  for (int64_t d = rank - 1, s = 1; d >= 0; d--) {
    st[d] = s;
    s *= ddims[d];
  }
  for (int64_t d = batch_dims + k; d < rank; d++)
    slice *= ddims[d];
  int64_t batch_stride = batch_dims > 0 ? st[batch_dims - 1] : 0;
  const char *src = data;
  char *dst = y;
  for (int64_t t = 0; t < tuples; t++) {
    int64_t off = (per_batch ? t / per_batch : 0) * batch_stride;
    for (int64_t j = 0; j < k; j++) {
      int64_t dim = ddims[batch_dims + j];
      int64_t v = kcpu_e_ldi(idx_elem, idx, t * k + j), x = v < 0 ? v + dim : v;
      if ((uint64_t)x >= (uint64_t)dim) {
        kcpu_fault_index(fault, site, v, dim, t * k + j);
        return;
      }
      off += x * st[batch_dims + j];
    }
    memcpy(dst + t * slice * esize, src + off * esize, (size_t)(slice * esize));
  }
}
