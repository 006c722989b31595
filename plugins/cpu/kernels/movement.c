/* plugins/cpu/kernels/movement.c: type-agnostic data movement. One strided
 * copy serves Transpose, Slice, Concat, Split, Expand, Tile, constant Pad,
 * DepthToSpace and plain copies (the emitters express each as strides);
 * a transpose goes in 16 x 16 tiles (kcpu_tp_tiles; whole f32 tiles through
 * the register transpose of kcpu_transpose.h); index-mapped Pad has its own
 * loop, and so does Where (elementwise), kept
 * here because it moves elements with the same byte-unit mover. Elements are
 * moved as esize-byte units. */
#include "kcpu_runtime.h"
#include "kcpu_transpose.h"

#include <string.h>

#define KCPU_MAXR 16

/* Move one element of esize bytes; sizes 1/2/4/8 become single loads. */
static inline void kcpu_mov(char *d, const char *s, int64_t esize) {
  switch (esize) {
  case 1:
    *d = *s;
    break;
  case 2:
    memcpy(d, s, 2);
    break;
  case 4:
    memcpy(d, s, 4);
    break;
  case 8:
    memcpy(d, s, 8);
    break;
  default:
    memcpy(d, s, (size_t)esize);
  }
}

typedef struct kcpu_cs {
  char *dst;
  const char *src;
  int64_t nd, esize, dims[KCPU_MAXR], ds[KCPU_MAXR], ss[KCPU_MAXR]; /* strides in bytes */
} kcpu_cs;

/* Copy rows [b, e) of the outer index space (all dims but the last). */
static void kcpu_cs_rows(void *ctx, int64_t b, int64_t e) {
  const kcpu_cs *c = ctx;
  int64_t nd = c->nd, inner = c->dims[nd - 1], dsi = c->ds[nd - 1], ssi = c->ss[nd - 1];
  int64_t es = c->esize, idx[KCPU_MAXR] = {0}, rem = b;
  for (int64_t d = nd - 2; d >= 0; d--) {
    idx[d] = rem % c->dims[d];
    rem /= c->dims[d];
  }
  for (int64_t r = b; r < e; r++) {
    char *dp = c->dst;
    const char *sp = c->src;
    for (int64_t d = 0; d < nd - 1; d++) {
      dp += idx[d] * c->ds[d];
      sp += idx[d] * c->ss[d];
    }
    if (dsi == es && ssi == es) {
      memmove(dp, sp, (size_t)(inner * es));
    } else if (es == 4) {
      for (int64_t i = 0; i < inner; i++)
        memcpy(dp + i * dsi, sp + i * ssi, 4);
    } else if (es == 8) {
      for (int64_t i = 0; i < inner; i++)
        memcpy(dp + i * dsi, sp + i * ssi, 8);
    } else {
      for (int64_t i = 0; i < inner; i++)
        kcpu_mov(dp + i * dsi, sp + i * ssi, es);
    }
    for (int64_t d = nd - 2; d >= 0; d--) {
      if (++idx[d] < c->dims[d])
        break;
      idx[d] = 0;
    }
  }
}

/* A transpose: the destination is contiguous along the last dim, the
 * source along dim j instead. Row by row that reads one element per cache
 * line; here each plane (the index of the other dims) is copied in square
 * tiles of KCPU_TT x KCPU_TT elements, so that every line read and
 * written is used whole while the tile stays in L1. */
#define KCPU_TT 16 /* kcpu_transpose16's side */
/* loads and stores through this type make no alignment promise */
typedef float kcpu_tp_vu __attribute__((vector_size(64), aligned(4), may_alias));

typedef struct kcpu_tp {
  const kcpu_cs *c;
  int64_t j, tiles_r, tiles_c; /* tiles along dim j and along the last dim */
} kcpu_tp;

static void kcpu_tp_tiles(void *ctx, int64_t b, int64_t e) {
  const kcpu_tp *t = ctx;
  const kcpu_cs *c = t->c;
  int64_t nd = c->nd, j = t->j, es = c->esize, per_plane = t->tiles_r * t->tiles_c;
  int64_t R = c->dims[j], C = c->dims[nd - 1], dsr = c->ds[j], ssc = c->ss[nd - 1];
  for (int64_t w = b; w < e; w++) {
    int64_t plane = w / per_plane, tile = w % per_plane;
    int64_t r0 = tile / t->tiles_c * KCPU_TT, c0 = tile % t->tiles_c * KCPU_TT;
    char *dp = c->dst;
    const char *sp = c->src;
    int64_t rem = plane;
    for (int64_t d = nd - 2; d >= 0; d--) {
      if (d == j)
        continue;
      int64_t i = rem % c->dims[d];
      rem /= c->dims[d];
      dp += i * c->ds[d];
      sp += i * c->ss[d];
    }
    int64_t r1 = r0 + KCPU_TT < R ? r0 + KCPU_TT : R, c1 = c0 + KCPU_TT < C ? c0 + KCPU_TT : C;
    if (es == 4 && r1 - r0 == KCPU_TT && c1 - c0 == KCPU_TT) {
      /* a whole tile: its 16 source columns are 16 vectors (contiguous
       * along dim j), transposed in registers into its 16 rows */
      kcpu_t16v v[KCPU_TT];
      KCPU_UNROLL16 for (int q = 0; q < KCPU_TT; q++) {
        v[q] = *(const kcpu_tp_vu *)(sp + r0 * 4 + (c0 + q) * ssc);
      }
      kcpu_transpose16(v);
      KCPU_UNROLL16 for (int r = 0; r < KCPU_TT; r++) {
        *(kcpu_tp_vu *)(dp + (r0 + r) * dsr + c0 * 4) = v[r];
      }
    } else if (es == 4) {
      for (int64_t r = r0; r < r1; r++)
        for (int64_t q = c0; q < c1; q++)
          memcpy(dp + r * dsr + q * 4, sp + r * 4 + q * ssc, 4);
    } else {
      for (int64_t r = r0; r < r1; r++)
        for (int64_t q = c0; q < c1; q++)
          kcpu_mov(dp + r * dsr + q * es, sp + r * es + q * ssc, es);
    }
  }
}

void kcpu_k_copy_strided(void *dst, const int64_t *dst_st, const void *src, const int64_t *src_st,
                         int64_t rank, const int64_t *dims, int64_t esize, struct kcpu_pool *pool) {
  kcpu_cs c = {.dst = dst, .src = src, .esize = esize};
  int64_t total = 1;
  for (int64_t d = 0; d < rank && d < KCPU_MAXR; d++) {
    total *= dims[d];
    if (dims[d] == 1)
      continue;
    /* merge with the previous dim when both sides are contiguous across */
    if (c.nd > 0 && c.ds[c.nd - 1] == dst_st[d] * esize * dims[d] &&
        c.ss[c.nd - 1] == src_st[d] * esize * dims[d]) {
      c.dims[c.nd - 1] *= dims[d];
      c.ds[c.nd - 1] = dst_st[d] * esize;
      c.ss[c.nd - 1] = src_st[d] * esize;
      continue;
    }
    c.dims[c.nd] = dims[d];
    c.ds[c.nd] = dst_st[d] * esize;
    c.ss[c.nd] = src_st[d] * esize;
    c.nd++;
  }
  if (total <= 0 || rank > KCPU_MAXR)
    return;
  if (c.nd == 0) {
    c.nd = 1;
    c.dims[0] = 1;
    c.ds[0] = c.ss[0] = esize;
  }
  if (c.nd == 1 && c.ds[0] == esize && c.ss[0] == esize && total * esize >= (1 << 16)) {
    /* one contiguous run (a Concat's input along blocks, a flat copy) is
     * one row: cut it into rows of 16 KiB that the pool can share, the
     * last partial one copied here */
    int64_t piece = (16 << 10) / esize, whole = total / piece * piece;
    memcpy((char *)dst + whole * esize, (const char *)src + whole * esize,
           (size_t)((total - whole) * esize));
    c.nd = 2;
    c.dims[0] = total / piece;
    c.dims[1] = piece;
    c.ds[0] = c.ss[0] = piece * esize;
    c.ds[1] = c.ss[1] = esize;
    total = whole;
  }
  int64_t rows = total / c.dims[c.nd - 1];
  int64_t nd = c.nd, inner = c.dims[nd - 1];
  if (nd >= 2 && c.ds[nd - 1] == esize && c.ss[nd - 1] != esize && inner >= KCPU_TT) {
    for (int64_t j = nd - 2; j >= 0; j--)
      if (c.ss[j] == esize && c.dims[j] >= KCPU_TT) {
        kcpu_tp t = {&c, j, (c.dims[j] + KCPU_TT - 1) / KCPU_TT, (inner + KCPU_TT - 1) / KCPU_TT};
        int64_t work = total / (c.dims[j] * inner) * t.tiles_r * t.tiles_c;
        if (total * esize < (1 << 16))
          kcpu_tp_tiles(&t, 0, work);
        else
          kcpu_parallel_for(pool, work, kcpu_tp_tiles, &t);
        return;
      }
  }
  if (total * esize < (1 << 16))
    kcpu_cs_rows(&c, 0, rows);
  else
    kcpu_parallel_for(pool, rows, kcpu_cs_rows, &c);
}

void kcpu_k_fill(void *dst, int64_t n, const void *value, int64_t esize) {
  char *d = dst;
  const char *v = value;
  int zero = 1;
  for (int64_t i = 0; i < esize; i++)
    zero &= v[i] == 0;
  if (zero) {
    memset(d, 0, (size_t)(n * esize));
    return;
  }
  for (int64_t i = 0; i < n; i++)
    kcpu_mov(d + i * esize, v, esize);
}

void kcpu_k_where(void *y, const uint8_t *cond, const int64_t *c_st, const void *x,
                  const int64_t *x_st, const void *yv, const int64_t *y_st, int64_t rank,
                  const int64_t *dims, int64_t esize) {
  int64_t total = 1, idx[KCPU_MAXR] = {0};
  if (rank > KCPU_MAXR)
    return;
  for (int64_t d = 0; d < rank; d++)
    total *= dims[d];
  char *out = y;
  const char *xa = x, *ya = yv;
  int64_t co = 0, xo = 0, yo = 0;
  for (int64_t i = 0; i < total; i++) {
    kcpu_mov(out + i * esize, cond[co] ? xa + xo * esize : ya + yo * esize, esize);
    for (int64_t d = rank - 1; d >= 0; d--) {
      co += c_st[d];
      xo += x_st[d];
      yo += y_st[d];
      if (++idx[d] < dims[d])
        break;
      co -= c_st[d] * dims[d];
      xo -= x_st[d] * dims[d];
      yo -= y_st[d] * dims[d];
      idx[d] = 0;
    }
  }
}

void kcpu_k_pad_index(const void *x, void *y, int64_t rank, const int64_t *idims,
                      const int64_t *odims, const int64_t *pb, int64_t mode, int64_t esize) {
  int64_t total = 1, idx[KCPU_MAXR] = {0}, ist[KCPU_MAXR];
  if (rank > KCPU_MAXR)
    return;
  for (int64_t d = 0; d < rank; d++) {
    total *= odims[d];
    if (idims[d] <= 0)
      return;
  }
  int64_t st = 1;
  for (int64_t d = rank - 1; d >= 0; d--) {
    ist[d] = st;
    st *= idims[d];
  }
  const char *src = x;
  char *dst = y;
  for (int64_t i = 0; i < total; i++) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; d++) {
      int64_t n = idims[d], s = idx[d] - pb[d];
      if (mode == 1) {
        s = s < 0 ? 0 : s >= n ? n - 1 : s;
      } else if (mode == 2) {
        if (n == 1) {
          s = 0;
        } else {
          int64_t per = 2 * (n - 1);
          s = ((s % per) + per) % per;
          if (s >= n)
            s = per - s;
        }
      } else {
        s = ((s % n) + n) % n;
      }
      off += s * ist[d];
    }
    kcpu_mov(dst + i * esize, src + off * esize, esize);
    for (int64_t d = rank - 1; d >= 0; d--) {
      if (++idx[d] < odims[d])
        break;
      idx[d] = 0;
    }
  }
}
