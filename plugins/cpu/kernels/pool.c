/* plugins/cpu/kernels/pool.c: MaxPool and AveragePool on [NC, H, W] f32
 * (and MaxPool on 8-bit integers, at the end of the file),
 * and the global pools on [NC, n]. Windows are clipped to the input (output
 * sizes already include ceil_mode and padding); AveragePool with
 * count_include_pad counts pad cells inside the declared pads but not cells
 * past them. Max propagates NaN.
 *
 * The 2-D pools are separable: each output row first combines its window's
 * input rows column by column into a padded row (whole contiguous rows, in
 * vectors), then combines columns across each window. Averages are therefore
 * summed as column sums (rows top to bottom) added left to right, then
 * multiplied by the reciprocal of the window's cell count: a fixed order per
 * output, whatever the thread count. Work items are output rows of every
 * plane, so threads split NC * OH evenly; small stride-1 planes whose
 * output is the input's size are taken whole, as one flattened row
 * (kcpu_pool_plane_fn). */
#include "kcpu_runtime.h"

#include <math.h>

#define KCPU_PV 16
typedef float kcpu_pv __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t kcpu_pm __attribute__((vector_size(64)));

/* The row copies here are a few dozen floats: as memcpy / memset calls
 * (clang's loop idioms) the calls would cost more than the copies. */
#ifdef __clang__
#define KCPU_POOL_NO_MEM_CALLS __attribute__((no_builtin("memcpy", "memmove", "memset")))
#else
#define KCPU_POOL_NO_MEM_CALLS
#endif

static inline int64_t kcpu_pool_up(int64_t n) {
  return (n + KCPU_PV - 1) / KCPU_PV * KCPU_PV;
}

/* acc = max(acc, u) with NaN propagation (a NaN already in acc stays, a
 * NaN in u wins), or acc + u. Written as x86's max (acc > u ? acc : u,
 * which gives u when either is NaN) and a NaN test of acc beside it, so
 * that each step waits on one max and one blend. A macro: gcc warns about
 * vector arguments of functions when the target lacks the vector width. */
#define KCPU_POOL_ACC(mx, acc, u)                                                                  \
  do {                                                                                             \
    kcpu_pv u_ = (u);                                                                              \
    if (mx) {                                                                                      \
      kcpu_pm g_ = (kcpu_pm)((acc) > u_), n_ = (kcpu_pm)((acc) != (acc));                          \
      kcpu_pm m_ = ((kcpu_pm)(acc) & g_) | ((kcpu_pm)u_ & ~g_);                                    \
      (acc) = (kcpu_pv)(((kcpu_pm)(acc) & n_) | (m_ & ~n_));                                       \
    } else {                                                                                       \
      (acc) = (acc) + u_;                                                                          \
    }                                                                                              \
  } while (0)
static inline float kcpu_pool_smax(float m, float v) {
  return v > m || v != v ? v : m;
}

/* Valid taps [k0, k1) of a window of K taps d apart starting at o, over
 * [0, n). */
static inline void kcpu_pool_clip(int64_t o, int64_t d, int64_t K, int64_t n, int64_t *k0,
                                  int64_t *k1) {
  int64_t lo = o < 0 ? (-o + d - 1) / d : 0, hi = n - 1 - o < 0 ? 0 : (n - 1 - o) / d + 1;
  *k0 = lo < K ? lo : K;
  *k1 = hi < K ? hi : K;
  if (*k1 < *k0)
    *k1 = *k0;
}

/* Taps of the window at o inside the padded extent [-p0, n + p1). */
static inline int64_t kcpu_pool_padded(int64_t o, int64_t d, int64_t K, int64_t n, int64_t p0,
                                       int64_t p1) {
  int64_t k0, k1;
  kcpu_pool_clip(o + p0, d, K, n + p0 + p1, &k0, &k1);
  return k1 - k0;
}

typedef struct kcpu_pool_args {
  const float *X;
  float *Y;
  int64_t NC, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, mode, cip;
  /* scratch of kcpu_pool_fn, in floats: NB rows of a padded row of Bn and
   * s phases of Jn, an output row of OWp, the reciprocal counts
   * ((KH+1) x OWp), KW tap offsets and the row table (OH) */
  int64_t OWp, Jn, Bn, R, NB;
} kcpu_pool_args;

/* Output row oh's window: nr rows inside the input from plane offset off;
 * inv: its row of reciprocal counts in the table. */
typedef struct kcpu_pool_rowg {
  int64_t off, nr, inv;
} kcpu_pool_rowg;

/* Rows per block (below), fewer when rows are long: the block's buffers
 * should stay in L1. */
#define KCPU_POOL_NB 8
#define KCPU_POOL_PLANE_NB 16
#define KCPU_POOL_BLOCK_FLOATS 8192

/* Output row k (= plane * OH + oh) one element at a time, in the vector
 * paths' order (column sums, then columns left to right), over the taps
 * inside the input only: the path when no scratch memory can be had, and
 * for windows that reach far past the input (kcpu_k_pool2d), whose cost
 * then stays that of the cells they cover. */
static void kcpu_pool_row_scalar(const kcpu_pool_args *a, int64_t k) {
  int64_t oh = k % a->OH, ih0 = oh * a->sh - a->pt, kh0, kh1;
  const float *x = a->X + k / a->OH * a->H * a->W;
  float *y = a->Y + k * a->OW;
  const int mx = a->mode == 0;
  kcpu_pool_clip(ih0, a->dh, a->KH, a->H, &kh0, &kh1);
  int64_t rows = kh1 - kh0, padrows = kcpu_pool_padded(ih0, a->dh, a->KH, a->H, a->pt, a->pb);
  for (int64_t ow = 0; ow < a->OW; ow++) {
    int64_t iw0 = ow * a->sw - a->pl, kw0, kw1;
    kcpu_pool_clip(iw0, a->dw, a->KW, a->W, &kw0, &kw1);
    float acc = mx ? -INFINITY : 0.0f;
    for (int64_t kw = kw0; kw < kw1 && rows; kw++) {
      const float *c = x + ((ih0 + kh0 * a->dh) * a->W + iw0 + kw * a->dw);
      float col = c[0];
      for (int64_t kh = 1; kh < rows; kh++) {
        float v = c[kh * a->dh * a->W];
        col = mx ? kcpu_pool_smax(col, v) : col + v;
      }
      acc = kw == kw0 ? col : mx ? kcpu_pool_smax(acc, col) : acc + col;
    }
    /* in float: the rows and columns of a window can each be 2^40 */
    float div =
        a->cip ? (float)padrows * (float)kcpu_pool_padded(iw0, a->dw, a->KW, a->W, a->pl, a->pr)
               : (float)(rows * (kw1 - kw0));
    y[ow] = mx ? acc : acc * (div != 0 ? 1.0f / div : NAN);
  }
}

static void kcpu_pool_scalar_fn(void *ctx, int64_t b, int64_t e) {
  for (int64_t k = b; k < e; k++)
    kcpu_pool_row_scalar(ctx, k);
}

/* Inside a model the input was written by the layer before and much of it
 * has left the caches by the time the pool runs; the hardware prefetchers
 * follow the pools' row pattern poorly (the stem MaxPool of ResNet-18 read
 * its 3.2 MB at 7-11 GB/s, a plain sequential read gets 37). So each output
 * row asks for the lines its successors will read, KCPU_POOL_PF floats
 * ahead of the n floats it advances by. */
#define KCPU_POOL_PF 2048
static inline void kcpu_pool_prefetch(const float *x, int64_t n, const float *xend) {
  int64_t m = xend - x - KCPU_POOL_PF; /* no further than the input's end */
  m = m < n ? m : n;
  for (int64_t c = 0; c < m; c += KCPU_PV)
    __builtin_prefetch(x + KCPU_POOL_PF + c);
}

/* Stride 2: the window's nr rows of one output row, combined 32 columns
 * at a time and split into even and odd columns on the way, straight into
 * the two phases of the padded row (padded column p = iw + pl is
 * ph[(p & 1) * Jn + p / 2]). Past the row's end as kcpu_pool_body. */
KCPU_POOL_NO_MEM_CALLS static inline __attribute__((always_inline)) void
kcpu_pool_rows_s2(const kcpu_pool_args *a, const float *r0, int64_t nr, int64_t KH, const int mx,
                  float *ph, const float *xend) {
  const int64_t W = a->W, rs = a->dh * W, pl = a->pl, Jn = a->Jn;
  const float ident = mx ? -INFINITY : 0.0f;
  float *ev = ph + (pl & 1) * Jn + pl / 2, *od = ph + ((pl + 1) & 1) * Jn + (pl + 1) / 2;
  const int64_t W2 = (W + 2 * KCPU_PV - 1) / (2 * KCPU_PV) * (2 * KCPU_PV);
  int64_t c = 0, cv = 0; /* no row inside: the scalar loop writes the identity */
  if (nr > 0)
    cv = r0 + (nr - 1) * rs + W2 <= xend ? W2 : W / (2 * KCPU_PV) * (2 * KCPU_PV);
  for (; c < cv; c += 2 * KCPU_PV) {
    kcpu_pv lo = *(const kcpu_pv *)(r0 + c), hi = *(const kcpu_pv *)(r0 + c + KCPU_PV);
    if (nr == KH) {
      for (int64_t t = 1; t < KH; t++) {
        KCPU_POOL_ACC(mx, lo, *(const kcpu_pv *)(r0 + t * rs + c));
        KCPU_POOL_ACC(mx, hi, *(const kcpu_pv *)(r0 + t * rs + c + KCPU_PV));
      }
    } else {
      for (int64_t t = 1; t < nr; t++) {
        KCPU_POOL_ACC(mx, lo, *(const kcpu_pv *)(r0 + t * rs + c));
        KCPU_POOL_ACC(mx, hi, *(const kcpu_pv *)(r0 + t * rs + c + KCPU_PV));
      }
    }
    *(kcpu_pv *)(ev + c / 2) =
        __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *(kcpu_pv *)(od + c / 2) =
        __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  }
  for (; c < W; c++) {
    float acc = nr ? r0[c] : ident;
    for (int64_t t = 1; t < nr; t++)
      acc = mx ? kcpu_pool_smax(acc, r0[t * rs + c]) : acc + r0[t * rs + c];
    int64_t p = c + pl;
    ph[(p & 1) * Jn + p / 2] = acc;
  }
  for (int64_t p = pl + W; p < pl + W + a->R; p++) /* the trailing pad, after any overrun */
    ph[(p & 1) * Jn + p / 2] = ident;
}

/* Items [b, e) in blocks of up to NB rows, each with its own row buffer:
 * buf, the padded row (input column iw at buf[pl + iw], the rest the
 * identity), and ph, its s phases (ph[r*Jn + j] = buf[s*j + r]; stride 2
 * writes them directly, kcpu_pool_rows_s2), so that tap kw of output ow
 * reads phase (kw*dw) % s at ow + (kw*dw) / s and every tap is a
 * contiguous vector. The three steps (rows, phases, columns) each
 * run over the whole block before the next starts: a step reading at other
 * offsets what the previous one has just stored would otherwise wait for
 * the store on every vector (store forwarding fails), which cost more than
 * the arithmetic. KH and KW are constants in the common instances, so the
 * tap loops unroll. */
KCPU_POOL_NO_MEM_CALLS static inline __attribute__((always_inline)) void
kcpu_pool_body(const kcpu_pool_args *a, int64_t b, int64_t e, int64_t KH, int64_t KW, const int mx,
               float *mem) {
  const int64_t H = a->H, W = a->W, OH = a->OH, OW = a->OW, s = a->sw;
  const float ident = mx ? -INFINITY : 0.0f;
  const int64_t rowsz = a->Bn + s * a->Jn;
  float *tmp = mem + a->NB * rowsz, *rinv = tmp + a->OWp;
  const int64_t *toff = (const int64_t *)(rinv + (a->KH + 1) * a->OWp);
  const kcpu_pool_rowg *rtab = (const kcpu_pool_rowg *)(toff + kcpu_pool_up(KW));
  const float *xend = a->X + a->NC * H * W;
  const int64_t Wv = kcpu_pool_up(W), rs = a->dh * W;
  const float *inv[KCPU_POOL_NB];
  int64_t i = b / OH, oh = b % OH;
  for (int64_t k0 = b; k0 < e; k0 += a->NB) {
    int64_t nb = e - k0 < a->NB ? e - k0 : a->NB;
    for (int64_t q = 0; q < nb; q++) {
      const kcpu_pool_rowg *rg = &rtab[oh];
      const int64_t nr = rg->nr;
      const float *r0 = a->X + i * H * W + rg->off;
      float *v = mem + q * rowsz + a->pl;
      inv[q] = rinv + rg->inv;
      kcpu_pool_prefetch(a->X + i * H * W + oh * a->sh * W, a->sh * W, xend);
      if (s == 2) {
        kcpu_pool_rows_s2(a, r0, nr, KH, mx, mem + q * rowsz, xend);
        if (++oh == OH) {
          oh = 0;
          i++;
        }
        continue;
      }
      /* columns: whole vectors, also past the row's end (into the next
       * row, whose values land in lanes no kept output reads) while that
       * stays inside X */
      int64_t c = 0, cv = nr && r0 + (nr - 1) * rs + Wv <= xend ? Wv : W / KCPU_PV * KCPU_PV;
      if (nr == KH) {
        for (; c < cv; c += KCPU_PV) {
          kcpu_pv acc = *(const kcpu_pv *)(r0 + c);
          for (int64_t t = 1; t < KH; t++) {
            kcpu_pv u = *(const kcpu_pv *)(r0 + t * rs + c);
            KCPU_POOL_ACC(mx, acc, u);
          }
          *(kcpu_pv *)(v + c) = acc;
        }
      } else if (nr > 0) {
        for (; c < cv; c += KCPU_PV) {
          kcpu_pv acc = *(const kcpu_pv *)(r0 + c);
          for (int64_t t = 1; t < nr; t++) {
            kcpu_pv u = *(const kcpu_pv *)(r0 + t * rs + c);
            KCPU_POOL_ACC(mx, acc, u);
          }
          *(kcpu_pv *)(v + c) = acc;
        }
      }
      for (; c < W; c++) {
        float acc = nr ? r0[c] : ident;
        for (int64_t t = 1; t < nr; t++)
          acc = mx ? kcpu_pool_smax(acc, r0[t * rs + c]) : acc + r0[t * rs + c];
        v[c] = acc;
      }
      for (int64_t j = 0; j < a->R; j++) /* the trailing pad, after any overrun */
        v[W + j] = ident;
      if (++oh == OH) {
        oh = 0;
        i++;
      }
    }
    if (s > 2) {
      for (int64_t q = 0; q < nb; q++) {
        const float *buf = mem + q * rowsz;
        float *ph = mem + q * rowsz + a->Bn;
        for (int64_t r = 0; r < s; r++)
          for (int64_t j = 0; j < a->Jn; j++)
            ph[r * a->Jn + j] = buf[s * j + r];
      }
    }
    for (int64_t q = 0; q < nb; q++) {
      int64_t k = k0 + q;
      const float *P = mem + q * rowsz + (s == 1 ? 0 : a->Bn);
      float *y = a->Y + k * OW;
      for (int64_t o = 0; o < OW; o += KCPU_PV) {
        kcpu_pv acc = *(const kcpu_pv *)(P + toff[0] + o);
        for (int64_t t = 1; t < KW; t++) {
          kcpu_pv u = *(const kcpu_pv *)(P + toff[t] + o);
          KCPU_POOL_ACC(mx, acc, u);
        }
        if (!mx)
          acc = acc * *(const kcpu_pv *)(inv[q] + o);
        /* a whole vector may spill into the next rows of this chunk,
         * which are written after this one */
        if (o + KCPU_PV <= OW || (k * OW + o + KCPU_PV <= e * OW)) {
          *(kcpu_pv *)(y + o) = acc;
        } else {
          *(kcpu_pv *)tmp = acc;
          for (int64_t j = 0; j < OW - o; j++)
            y[o + j] = tmp[j];
        }
      }
    }
  }
}

/* ---- stride 2, windows 2 or 3 columns wide, left pad 0 or 1 ----
 * (the stem pools and the 3x3 stride-2 and 2x2 pools between stages)
 * Everything stays in registers: the window's rows are combined 16 input
 * columns at a time, each pair of such vectors is split into its even and
 * odd columns, and output j takes even[j], odd[j] and even[j+1] (the next
 * vector's first even column), in that order, so the result is the one
 * kcpu_pool_body computes. Vectors that reach outside [0, W) have those
 * lanes replaced by the identity after the rows are combined. With no
 * buffer between the two steps there is nothing to wait for: the buffered
 * path took about twice as long on a 64x112x112 stem pool. */

/* *out: the window's NR rows combined over input columns [c, c + 16) of
 * the rows from r0 (rs floats apart); with edge, the identity where a
 * column is outside [0, W) (without, all of them are inside). Reads from
 * r0 + c, at least r0 - 1, up to the last row's column W + 14. */
static inline __attribute__((always_inline)) void kcpu_pool_s2_col(kcpu_pv *out, const float *r0,
                                                                   int64_t rs, int64_t NR,
                                                                   int64_t W, int64_t c,
                                                                   const int mx, const int edge) {
  const float ident = mx ? -INFINITY : 0.0f;
  const kcpu_pv idv = (kcpu_pv){0} + ident;
  if (edge && (c >= W || c + KCPU_PV <= 0 || NR <= 0)) {
    *out = idv;
    return;
  }
  kcpu_pv acc = *(const kcpu_pv *)(r0 + c);
  for (int64_t t = 1; t < NR; t++)
    KCPU_POOL_ACC(mx, acc, *(const kcpu_pv *)(r0 + t * rs + c));
  if (edge && (c < 0 || c + KCPU_PV > W)) {
    const kcpu_pm lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    kcpu_pm col = lane + (int32_t)c;
    kcpu_pm in = (col >= 0) & (col < (int32_t)W);
    acc = (kcpu_pv)(((kcpu_pm)acc & in) | ((kcpu_pm)idv & ~in));
  }
  *out = acc;
}

/* Outputs [o, o + 16) of a row, lo holding input columns [2o - pl, +16)
 * combined, and on return [2o - pl + 32, +16), the next block's. Whole
 * vectors are stored up to y + ylim, the rest goes through tmp. */
#define KCPU_POOL_S2_BLOCK(edge)                                                                   \
  do {                                                                                             \
    const int64_t c_ = 2 * o - pl;                                                                 \
    kcpu_pv hi_;                                                                                   \
    kcpu_pool_s2_col(&hi_, r0, rs, NR, W, c_ + KCPU_PV, mx, edge);                                 \
    kcpu_pv ev_ = __builtin_shufflevector(lo, hi_, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,  \
                                          26, 28, 30);                                             \
    kcpu_pv od_ = __builtin_shufflevector(lo, hi_, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25,  \
                                          27, 29, 31);                                             \
    kcpu_pool_s2_col(&lo, r0, rs, NR, W, c_ + 2 * KCPU_PV, mx, edge);                              \
    kcpu_pv acc_ = ev_;                                                                            \
    KCPU_POOL_ACC(mx, acc_, od_);                                                                  \
    if (KW == 3)                                                                                   \
      KCPU_POOL_ACC(mx, acc_,                                                                      \
                    __builtin_shufflevector(ev_, lo, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,    \
                                            14, 15, 16));                                          \
    if (!mx)                                                                                       \
      acc_ = acc_ * *(const kcpu_pv *)(inv + o);                                                   \
    if (o + KCPU_PV <= ylim) {                                                                     \
      *(kcpu_pv *)(y + o) = acc_;                                                                  \
    } else {                                                                                       \
      *(kcpu_pv *)tmp = acc_;                                                                      \
      for (int64_t j_ = 0; j_ < OW - o; j_++)                                                      \
        y[o + j_] = tmp[j_];                                                                       \
    }                                                                                              \
  } while (0)

/* One output row y[0, OW) from the window's NR rows; inv: the row's
 * reciprocal counts (averages). The blocks whose columns are all inside
 * the row take no tests. */
static inline __attribute__((always_inline)) void
kcpu_pool_s2_row(const kcpu_pool_args *a, const float *r0, int64_t rs, int64_t NR, int64_t KW,
                 const int mx, const float *inv, float *y, int64_t ylim, float *tmp) {
  const int64_t W = a->W, OW = a->OW, pl = a->pl;
  kcpu_pv lo;
  kcpu_pool_s2_col(&lo, r0, rs, NR, W, -pl, mx, 1);
  int64_t o = 0;
  for (; o < OW && 2 * o - pl + 3 * KCPU_PV <= W; o += KCPU_PV)
    KCPU_POOL_S2_BLOCK(0);
  for (; o < OW; o += KCPU_PV)
    KCPU_POOL_S2_BLOCK(1);
}

/* Items [b, e). A row whose reads would leave X (the first rows of the
 * first plane with a left pad, the last rows of the last plane) is first
 * copied into lb, rows Wl floats apart after a 16-float guard. */
KCPU_POOL_NO_MEM_CALLS static inline __attribute__((always_inline)) void
kcpu_pool_s2_body(const kcpu_pool_args *a, int64_t b, int64_t e, int64_t KH, int64_t KW,
                  const int mx, const float *rinv, const kcpu_pool_rowg *rtab, float *tmp,
                  float *lb) {
  const int64_t H = a->H, W = a->W, OH = a->OH, OW = a->OW, rs = a->dh * W;
  const int64_t Wl = kcpu_pool_up(W) + 2 * KCPU_PV;
  const float *xend = a->X + a->NC * H * W;
  int64_t i = b / OH, oh = b % OH;
  for (int64_t k = b; k < e; k++) {
    const kcpu_pool_rowg *rg = &rtab[oh];
    const float *r0 = a->X + i * H * W + rg->off;
    kcpu_pool_prefetch(a->X + i * H * W + oh * a->sh * W, a->sh * W, xend);
    float *y = a->Y + k * OW;
    int64_t ylim = (e - k) * OW; /* this chunk's later rows are written after */
    if (rg->nr > 0 && (r0 - a->pl < a->X || r0 + (rg->nr - 1) * rs + W + KCPU_PV - 1 > xend)) {
      for (int64_t t = 0; t < rg->nr; t++)
        for (int64_t c = 0; c < W; c++)
          lb[KCPU_PV + t * Wl + c] = r0[t * rs + c];
      kcpu_pool_s2_row(a, lb + KCPU_PV, Wl, rg->nr, KW, mx, rinv + rg->inv, y, ylim, tmp);
    } else if (rg->nr == KH) { /* the common case, with the row count a constant */
      kcpu_pool_s2_row(a, r0, rs, KH, KW, mx, rinv + rg->inv, y, ylim, tmp);
    } else {
      kcpu_pool_s2_row(a, r0, rs, rg->nr, KW, mx, rinv + rg->inv, y, ylim, tmp);
    }
    if (++oh == OH) {
      oh = 0;
      i++;
    }
  }
}

/* Rows of at most NBLK x 16 outputs (NBLK 1 or 2: planes up to 64 wide),
 * where the setup of kcpu_pool_s2_row cost four times the arithmetic: the
 * 2 NBLK + 1 column vectors of a row are the same for every row, so their
 * lane masks are made once, and each is combined over the rows and masked
 * with no tests. The same operations in the same order as
 * kcpu_pool_s2_row. */
KCPU_POOL_NO_MEM_CALLS static inline __attribute__((always_inline)) void
kcpu_pool_s2n_body(const kcpu_pool_args *a, int64_t b, int64_t e, int64_t KH, int64_t KW,
                   const int mx, const int NBLK, const float *rinv, const kcpu_pool_rowg *rtab,
                   float *tmp, float *lb) {
  const int64_t H = a->H, W = a->W, OH = a->OH, OW = a->OW, rs = a->dh * W, pl = a->pl;
  const int64_t Wl = kcpu_pool_up(W) + 2 * KCPU_PV;
  const float *xend = a->X + a->NC * H * W;
  const kcpu_pv idv = (kcpu_pv){0} + (mx ? -INFINITY : 0.0f);
  const kcpu_pm lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  kcpu_pm msk[5];
  int has[5];
  for (int v = 0; v <= 2 * NBLK; v++) {
    kcpu_pm col = lane + (int32_t)(v * KCPU_PV - pl);
    msk[v] = (col >= 0) & (col < (int32_t)W);
    has[v] = v * KCPU_PV - pl < W;
  }
  int64_t i = b / OH, oh = b % OH;
  for (int64_t k = b; k < e; k++) {
    const kcpu_pool_rowg *rg = &rtab[oh];
    const float *r0 = a->X + i * H * W + rg->off;
    const int64_t nr = rg->nr;
    int64_t rst = rs;
    if (oh == 0 || k == b) /* a plane's worth at a time: per row it cost 20% */
      kcpu_pool_prefetch(a->X + i * H * W, H * W, xend);
    if (nr > 0 && (r0 - pl < a->X || r0 + (nr - 1) * rs + W + KCPU_PV - 1 > xend)) {
      for (int64_t t = 0; t < nr; t++)
        for (int64_t c = 0; c < W; c++)
          lb[KCPU_PV + t * Wl + c] = r0[t * rs + c];
      r0 = lb + KCPU_PV;
      rst = Wl;
    }
    kcpu_pv col[5];
    for (int v = 0; v <= 2 * NBLK; v++) {
      const float *p = r0 + v * KCPU_PV - pl;
      if (!has[v] || nr <= 0) {
        col[v] = idv;
        continue;
      }
      kcpu_pv acc = *(const kcpu_pv *)p;
      if (nr == KH) {
        for (int64_t t = 1; t < KH; t++)
          KCPU_POOL_ACC(mx, acc, *(const kcpu_pv *)(p + t * rst));
      } else {
        for (int64_t t = 1; t < nr; t++)
          KCPU_POOL_ACC(mx, acc, *(const kcpu_pv *)(p + t * rst));
      }
      col[v] = (kcpu_pv)(((kcpu_pm)acc & msk[v]) | ((kcpu_pm)idv & ~msk[v]));
    }
    float *y = a->Y + k * OW;
    const float *inv = rinv + rg->inv;
    for (int blk = 0; blk < NBLK; blk++) {
      const int64_t o = blk * KCPU_PV;
      kcpu_pv lo = col[2 * blk], hi = col[2 * blk + 1];
      kcpu_pv ev = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                           26, 28, 30);
      kcpu_pv acc = ev;
      KCPU_POOL_ACC(mx, acc,
                    __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25,
                                            27, 29, 31));
      if (KW == 3)
        KCPU_POOL_ACC(mx, acc,
                      __builtin_shufflevector(ev, col[2 * blk + 2], 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                              11, 12, 13, 14, 15, 16));
      if (!mx)
        acc = acc * *(const kcpu_pv *)(inv + o);
      if (o >= OW)
        break;
      /* a whole vector may spill into this chunk's next rows, written later */
      if (k * OW + o + KCPU_PV <= e * OW) {
        *(kcpu_pv *)(y + o) = acc;
      } else {
        *(kcpu_pv *)tmp = acc;
        for (int64_t j = 0; j < OW - o; j++)
          y[o + j] = tmp[j];
      }
    }
    if (++oh == OH) {
      oh = 0;
      i++;
    }
  }
}

static int kcpu_pool_s2_takes(const kcpu_pool_args *a) {
  return a->sw == 2 && a->dw == 1 && (a->KW == 2 || a->KW == 3) && a->pl >= 0 && a->pl <= 1;
}

KCPU_POOL_NO_MEM_CALLS static void kcpu_pool_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_pool_args *a = ctx;
  const int64_t s = a->sw, H = a->H, KH = a->KH, dh = a->dh, OWp = a->OWp;
  const int64_t rows = a->NB * (a->Bn + s * a->Jn);
  const int s2 = kcpu_pool_s2_takes(a);
  /* kcpu_pool_s2_body's copy of a row's window, after the row table */
  const int64_t lbn = s2 ? KH * (kcpu_pool_up(a->W) + 2 * KCPU_PV) + 2 * KCPU_PV : 0;
  float *mem =
      kcpu_alloc((rows + (KH + 2) * OWp + 2 * kcpu_pool_up(a->KW) + lbn) * (int64_t)sizeof(float) +
                 a->OH * (int64_t)sizeof(kcpu_pool_rowg));
  if (!mem) {
    for (int64_t k = b; k < e; k++)
      kcpu_pool_row_scalar(a, k);
    return;
  }
  float ident = a->mode == 0 ? -INFINITY : 0.0f;
  float *tmp = mem + rows, *rinv = tmp + OWp;
  int64_t *toff = (int64_t *)(rinv + (KH + 1) * OWp);
  kcpu_pool_rowg *rtab = (kcpu_pool_rowg *)(toff + kcpu_pool_up(a->KW));
  /* pads and the lanes past the row's end start as the identity */
  for (int64_t j = 0; j < rows + OWp; j++)
    mem[j] = ident;
  /* 1 / (rows x columns) of each window, for every count of rows; an empty
   * window's NaN comes from 0 x NaN */
  for (int64_t ow = 0; ow < OWp; ow++) {
    int64_t n = 0;
    for (int64_t kw = 0; ow < a->OW && kw < a->KW; kw++) {
      int64_t iw = ow * s - a->pl + kw * a->dw;
      n += a->cip ? iw >= -a->pl && iw < a->W + a->pr : iw >= 0 && iw < a->W;
    }
    for (int64_t r = 0; r <= KH; r++)
      rinv[r * OWp + ow] = ow >= a->OW ? 1.0f : r * n != 0 ? 1.0f / (float)(r * n) : NAN;
  }
  for (int64_t kw = 0; kw < a->KW; kw++)
    toff[kw] = s == 1 ? kw * a->dw : (kw * a->dw) % s * a->Jn + (kw * a->dw) / s;
  for (int64_t oh = 0; oh < a->OH; oh++) {
    /* the window's rows inside the input: kh in [kh0, kh1) */
    int64_t ih0 = oh * a->sh - a->pt;
    int64_t kh0 = ih0 >= 0 ? 0 : (-ih0 + dh - 1) / dh;
    int64_t kh1 = H - ih0 <= 0 ? 0 : (H - ih0 - 1) / dh + 1;
    kh1 = kh1 > KH ? KH : kh1;
    int64_t nr = kh1 > kh0 ? kh1 - kh0 : 0, cnt = nr;
    if (a->cip) { /* rows within the pads [-pt, H + pb) */
      int64_t p0 = ih0 >= -a->pt ? 0 : (-a->pt - ih0 + dh - 1) / dh;
      int64_t p1 = H + a->pb - ih0 <= 0 ? 0 : (H + a->pb - ih0 - 1) / dh + 1;
      p1 = p1 > KH ? KH : p1;
      cnt = p1 > p0 ? p1 - p0 : 0;
    }
    rtab[oh] = (kcpu_pool_rowg){nr ? (ih0 + kh0 * dh) * a->W : 0, nr, cnt * OWp};
  }
  int mx = a->mode == 0;
  if (s2 && a->OW <= 2 * KCPU_PV) {
    float *lb = (float *)(rtab + a->OH);
    for (int64_t j = 0; j < lbn; j++) /* the guards are read, never used */
      lb[j] = 0.0f;
    const int nblk = a->OW <= KCPU_PV ? 1 : 2;
    if (KH == 3 && a->KW == 3 && mx && nblk == 1)
      kcpu_pool_s2n_body(a, b, e, 3, 3, 1, 1, rinv, rtab, tmp, lb);
    else if (KH == 3 && a->KW == 3 && mx)
      kcpu_pool_s2n_body(a, b, e, 3, 3, 1, 2, rinv, rtab, tmp, lb);
    else if (KH == 2 && a->KW == 2 && !mx && nblk == 1)
      kcpu_pool_s2n_body(a, b, e, 2, 2, 0, 1, rinv, rtab, tmp, lb);
    else if (KH == 2 && a->KW == 2 && !mx)
      kcpu_pool_s2n_body(a, b, e, 2, 2, 0, 2, rinv, rtab, tmp, lb);
    else if (nblk == 1)
      kcpu_pool_s2n_body(a, b, e, KH, a->KW, mx, 1, rinv, rtab, tmp, lb);
    else
      kcpu_pool_s2n_body(a, b, e, KH, a->KW, mx, 2, rinv, rtab, tmp, lb);
  } else if (s2) {
    float *lb = (float *)(rtab + a->OH);
    for (int64_t j = 0; j < lbn; j++) /* the guards are read, never used */
      lb[j] = 0.0f;
    if (KH == 3 && a->KW == 3 && mx)
      kcpu_pool_s2_body(a, b, e, 3, 3, 1, rinv, rtab, tmp, lb);
    else if (KH == 3 && a->KW == 3)
      kcpu_pool_s2_body(a, b, e, 3, 3, 0, rinv, rtab, tmp, lb);
    else if (KH == 2 && a->KW == 2 && mx)
      kcpu_pool_s2_body(a, b, e, 2, 2, 1, rinv, rtab, tmp, lb);
    else if (KH == 2 && a->KW == 2)
      kcpu_pool_s2_body(a, b, e, 2, 2, 0, rinv, rtab, tmp, lb);
    else
      kcpu_pool_s2_body(a, b, e, KH, a->KW, mx, rinv, rtab, tmp, lb);
  } else if (a->KH == 3 && a->KW == 3 && mx)
    kcpu_pool_body(a, b, e, 3, 3, 1, mem);
  else if (a->KH == 3 && a->KW == 3)
    kcpu_pool_body(a, b, e, 3, 3, 0, mem);
  else if (a->KH == 2 && a->KW == 2 && mx)
    kcpu_pool_body(a, b, e, 2, 2, 1, mem);
  else if (a->KH == 2 && a->KW == 2)
    kcpu_pool_body(a, b, e, 2, 2, 0, mem);
  else
    kcpu_pool_body(a, b, e, a->KH, a->KW, mx, mem);
  kcpu_free(mem);
}

/* ---- stride 1, output planes the input's size (3x3 pad 1 and the like) ----
 * A small plane is one flattened row: the window's rows are combined over
 * the whole plane at once, in bands of output rows with the same rows
 * inside the input, and the columns over the flattened result, with a mask
 * per tap that stands the identity in for cells of the row before or after.
 * Rows of 7 to 35 then run in whole vectors instead of a vector and a tail
 * per row. Planes are the work items. */
#define KCPU_POOL_PLANE_MAX 2048 /* H*W: the masks stay in L1 */
#define KCPU_POOL_GUARD KCPU_PV  /* columns read left and right of a plane */

typedef struct kcpu_pool_band {
  int64_t f0, f1, off, nr; /* flattened outputs [f0, f1): nr rows from x + f + off */
} kcpu_pool_band;

/* Planes [b, e), NB at a time: every plane's rows, then every plane's
 * columns, so the column step does not wait on stores just made (see
 * kcpu_pool_body). */
KCPU_POOL_NO_MEM_CALLS static inline __attribute__((always_inline)) void
kcpu_pool_plane_body(const kcpu_pool_args *a, int64_t b, int64_t e, int64_t KH, int64_t KW,
                     const int mx, const kcpu_pool_band *band, int64_t nband, float *mem) {
  const int64_t n = a->H * a->W, np = kcpu_pool_up(n), vn = np + 2 * KCPU_POOL_GUARD;
  const float ident = mx ? -INFINITY : 0.0f;
  const kcpu_pm idm = (kcpu_pm)((kcpu_pv){0} + ident);
  const float *xend = a->X + a->NC * n;
  const kcpu_pm *mask = (const kcpu_pm *)(mem + a->NB * vn);
  const float *invf = mem + a->NB * vn + KW * np, *tmp = invf + np;
  for (int64_t i0 = b; i0 < e; i0 += a->NB) {
    int64_t nb = e - i0 < a->NB ? e - i0 : a->NB;
    for (int64_t q = 0; q < nb; q++) {
      const float *x = a->X + (i0 + q) * n;
      float *v = mem + q * vn + KCPU_POOL_GUARD;
      kcpu_pool_prefetch(x, n, xend);
      for (int64_t bi = 0; bi < nband; bi++) {
        const kcpu_pool_band *bd = &band[bi];
        const float *r0 = x + bd->off;
        int64_t nr = bd->nr, f = bd->f0;
        /* whole vectors, past the band (the next band writes over them)
         * and past the plane while that stays inside X */
        int64_t fv = r0 + (nr - 1) * a->W + bd->f0 + kcpu_pool_up(bd->f1 - bd->f0) <= xend
                         ? bd->f1
                         : bd->f0 + (bd->f1 - bd->f0) / KCPU_PV * KCPU_PV;
        if (nr == KH) {
          for (; f < fv; f += KCPU_PV) {
            kcpu_pv acc = *(const kcpu_pv *)(r0 + f);
            for (int64_t t = 1; t < KH; t++)
              KCPU_POOL_ACC(mx, acc, *(const kcpu_pv *)(r0 + t * a->W + f));
            *(kcpu_pv *)(v + f) = acc;
          }
        } else {
          for (; f < fv; f += KCPU_PV) {
            kcpu_pv acc = *(const kcpu_pv *)(r0 + f);
            for (int64_t t = 1; t < nr; t++)
              KCPU_POOL_ACC(mx, acc, *(const kcpu_pv *)(r0 + t * a->W + f));
            *(kcpu_pv *)(v + f) = acc;
          }
        }
        for (; f < bd->f1; f++) {
          float acc = r0[f];
          for (int64_t t = 1; t < nr; t++)
            acc = mx ? kcpu_pool_smax(acc, r0[t * a->W + f]) : acc + r0[t * a->W + f];
          v[f] = acc;
        }
      }
    }
    for (int64_t q = 0; q < nb; q++) {
      int64_t i = i0 + q;
      const float *v = mem + q * vn + KCPU_POOL_GUARD - a->pl;
      float *y = a->Y + i * n;
      for (int64_t f = 0; f < n; f += KCPU_PV) {
        kcpu_pv acc = (kcpu_pv)(((kcpu_pm) * (const kcpu_pv *)(v + f) & mask[f / KCPU_PV]) |
                                (idm & ~mask[f / KCPU_PV]));
        for (int64_t t = 1; t < KW; t++) {
          kcpu_pm m = mask[(t * np + f) / KCPU_PV];
          KCPU_POOL_ACC(mx, acc,
                        (kcpu_pv)(((kcpu_pm) * (const kcpu_pv *)(v + t + f) & m) | (idm & ~m)));
        }
        if (!mx)
          acc = acc * *(const kcpu_pv *)(invf + f);
        /* a whole vector may spill into the next planes of this chunk,
         * which are written after this one */
        if (f + KCPU_PV <= n || i * n + f + KCPU_PV <= e * n) {
          *(kcpu_pv *)(y + f) = acc;
        } else {
          *(kcpu_pv *)tmp = acc;
          for (int64_t j = 0; j < n - f; j++)
            y[f + j] = tmp[j];
        }
      }
    }
  }
}

KCPU_POOL_NO_MEM_CALLS static void kcpu_pool_plane_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_pool_args *a = ctx;
  const int64_t H = a->H, W = a->W, n = H * W, np = kcpu_pool_up(n);
  const int64_t vn = np + 2 * KCPU_POOL_GUARD, KW = a->KW;
  float *mem = kcpu_alloc((a->NB * vn + (KW + 2) * np) * (int64_t)sizeof(float) +
                          (H + 1) * (int64_t)sizeof(kcpu_pool_band));
  if (!mem) {
    for (int64_t k = b * a->OH; k < e * a->OH; k++)
      kcpu_pool_row_scalar(a, k);
    return;
  }
  for (int64_t j = 0; j < a->NB * vn; j++)
    mem[j] = 0.0f;
  int32_t *mask = (int32_t *)(mem + a->NB * vn);
  float *invf = mem + a->NB * vn + KW * np;
  kcpu_pool_band *band = (kcpu_pool_band *)(invf + 2 * np);
  /* tap kw of output column ow reads column ow + kw - pl; invf: the
   * window's cell count, then its reciprocal */
  for (int64_t f = 0; f < np; f++) {
    int64_t ow = f % W, cols = 0;
    for (int64_t kw = 0; kw < KW; kw++) {
      int64_t iw = ow + kw - a->pl;
      int in = f < n && iw >= 0 && iw < W;
      mask[kw * np + f] = in ? -1 : 0;
      cols += a->cip ? iw >= -a->pl && iw < W + a->pr : in;
    }
    invf[f] = (float)cols;
  }
  /* bands: runs of output rows whose window has the same rows inside */
  int64_t nband = 0;
  for (int64_t oh = 0; oh < H; oh++) {
    int64_t kh0 = a->pt - oh > 0 ? a->pt - oh : 0, kh1 = H + a->pt - oh;
    kh1 = kh1 > a->KH ? a->KH : kh1;
    int64_t nr = kh1 - kh0, off = (kh0 - a->pt) * W, rows = nr;
    if (a->cip) { /* rows within the pads [-pt, H + pb) */
      int64_t p1 = H + a->pb + a->pt - oh;
      rows = (p1 > a->KH ? a->KH : p1);
    }
    for (int64_t ow = 0; ow < W; ow++)
      invf[oh * W + ow] *= (float)rows;
    if (nband && band[nband - 1].nr == nr && band[nband - 1].off == off) {
      band[nband - 1].f1 += W;
    } else {
      band[nband++] = (kcpu_pool_band){oh * W, oh * W + W, off, nr};
    }
  }
  for (int64_t f = 0; f < np; f++) /* every window has a cell: its center */
    invf[f] = f < n ? 1.0f / invf[f] : 1.0f;
  int mx = a->mode == 0;
  if (a->KH == 3 && KW == 3 && mx)
    kcpu_pool_plane_body(a, b, e, 3, 3, 1, band, nband, mem);
  else if (a->KH == 3 && KW == 3)
    kcpu_pool_plane_body(a, b, e, 3, 3, 0, band, nband, mem);
  else
    kcpu_pool_plane_body(a, b, e, a->KH, KW, mx, band, nband, mem);
  kcpu_free(mem);
}

/* Inputs of fewer floats are pooled on the calling thread, about 10 us of
 * work on one Zen 5 thread (20 for the global pools, which read each
 * float once): waking a worker costs a few microseconds on an idle
 * machine but up to 100 on a busy one (GoogLeNet's 1024x7x7
 * GlobalAveragePool took 5 us on one thread and 90-115 us on two while
 * other processes ran). */
#define KCPU_POOL_SERIAL (1 << 16)
#define KCPU_GPOOL_SERIAL (1 << 18)
/* taps or pads past the input beyond which a window is far-reaching */
#define KCPU_POOL_REACH 64

KCPU_PREBUILT void kcpu_k_pool2d(const float *X, float *Y, int64_t NC, int64_t H, int64_t W,
                                 int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                                 int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                                 int64_t pb, int64_t pr, int64_t mode, int64_t count_include_pad,
                                 struct kcpu_pool *pool) {
  if (NC <= 0 || OH <= 0 || OW <= 0 || sh <= 0 || sw <= 0 || dh <= 0 || dw <= 0)
    return; /* nothing to do, or a window the op-semantics layer never makes */
  kcpu_pool_args a = {.X = X,
                      .Y = Y,
                      .NC = NC,
                      .H = H,
                      .W = W,
                      .OH = OH,
                      .OW = OW,
                      .KH = KH,
                      .KW = KW,
                      .sh = sh,
                      .sw = sw,
                      .dh = dh,
                      .dw = dw,
                      .pt = pt,
                      .pl = pl,
                      .pb = pb,
                      .pr = pr,
                      .mode = mode,
                      .cip = count_include_pad};
  /* The vector paths walk every column tap and keep scratch rows as wide
   * as the window and the pads. A window or pad reaching far past the
   * input (a legal model can ask for 10^8 taps) takes the scalar rows,
   * which walk only the taps inside the input. */
  if (KH - 1 > (H + KCPU_POOL_REACH) / dh || KW - 1 > (W + KCPU_POOL_REACH) / dw ||
      pl > W + KCPU_POOL_REACH || pr > W + KCPU_POOL_REACH) {
    if (NC * OH * OW < KCPU_POOL_SERIAL)
      kcpu_pool_scalar_fn(&a, 0, NC * OH);
    else
      kcpu_parallel_for(pool, NC * OH, kcpu_pool_scalar_fn, &a);
    return;
  }
  a.OWp = kcpu_pool_up(OW);
  /* padded columns that kept outputs read past the input's end */
  int64_t hi = (OW - 1) * sw + (KW - 1) * dw + 1;
  a.R = hi - pl - W > 0 ? hi - pl - W : 0;
  a.Jn = sw == 1 ? 0 : kcpu_pool_up(a.OWp + (KW - 1) * dw / sw);
  if (sw == 2) { /* room for the rows' vectors, 32 columns a step, past the row */
    int64_t jw = (pl + 1) / 2 + (W + 2 * KCPU_PV - 1) / (2 * KCPU_PV) * KCPU_PV + (a.R + 1) / 2;
    a.Jn = kcpu_pool_up(a.Jn > jw ? a.Jn : jw) + KCPU_PV;
  }
  int64_t bn = pl + kcpu_pool_up(W);
  bn = bn > pl + W + a.R ? bn : pl + W + a.R;
  bn = bn > a.OWp + (KW - 1) * dw ? bn : a.OWp + (KW - 1) * dw;
  bn = bn > sw * a.Jn ? bn : sw * a.Jn;
  a.Bn = sw == 2 ? 0 : kcpu_pool_up(bn) + KCPU_PV; /* stride 2 writes the phases directly */
  a.NB = KCPU_POOL_BLOCK_FLOATS / (a.Bn + sw * a.Jn);
  a.NB = a.NB < 1 ? 1 : a.NB > KCPU_POOL_NB ? KCPU_POOL_NB : a.NB;
  if (sh == 1 && sw == 1 && dh == 1 && dw == 1 && OH == H && OW == W &&
      H * W <= KCPU_POOL_PLANE_MAX && pl <= KCPU_POOL_GUARD && KW - 1 - pl <= KCPU_POOL_GUARD &&
      pt < KH) {
    a.NB = KCPU_POOL_BLOCK_FLOATS / (kcpu_pool_up(H * W) + 2 * KCPU_POOL_GUARD);
    a.NB = a.NB < 1 ? 1 : a.NB > KCPU_POOL_PLANE_NB ? KCPU_POOL_PLANE_NB : a.NB;
    if (NC * H * W < KCPU_POOL_SERIAL)
      kcpu_pool_plane_fn(&a, 0, NC);
    else
      kcpu_parallel_for(pool, NC, kcpu_pool_plane_fn, &a);
    return;
  }
  if (NC * H * W < KCPU_POOL_SERIAL)
    kcpu_pool_fn(&a, 0, NC * OH);
  else
    kcpu_parallel_for(pool, NC * OH, kcpu_pool_fn, &a);
}

/* ---- global pools ---- */
typedef struct kcpu_gpool_args {
  const float *X;
  float *Y;
  int64_t NC, n, mode;
} kcpu_gpool_args;

/* 16 partial results, lane j taking elements j, j+16, ... in order, then
 * combined lane 0 to 15 into the identity: the order of the reductions in
 * reduce.c, so both give the same bits. Planes are split over threads. */
KCPU_POOL_NO_MEM_CALLS static inline __attribute__((always_inline)) void
kcpu_gpool_body(const kcpu_gpool_args *a, int64_t b, int64_t e, const int mx) {
  const float ident = mx ? -INFINITY : 0.0f;
  const int64_t n = a->n;
  const float *xend = a->X + a->NC * n;
  kcpu_pv lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const kcpu_pm idm = (kcpu_pm)((kcpu_pv){0} + ident);
  for (int64_t i = b; i < e; i++) {
    const float *x = a->X + i * n;
    if (n < KCPU_PV) { /* one element per lane: the same sums, in order */
      float r = ident;
      for (int64_t j = 0; j < n; j++)
        r = mx ? kcpu_pool_smax(r, x[j]) : r + x[j];
      a->Y[i] = mx ? r : r / (float)n;
      continue;
    }
    kcpu_pv acc = (kcpu_pv){0} + ident;
    int64_t q = 0;
    for (; q + KCPU_PV <= n; q += KCPU_PV)
      KCPU_POOL_ACC(mx, acc, *(const kcpu_pv *)(x + q));
    if (q < n) {
      /* the tail joins lanes 0 .. n-q-1; the others take the identity,
       * which leaves them as they are (a lane's sum starts at +0, so it is
       * never -0) */
      kcpu_pv t;
      if (x + q + KCPU_PV <= xend) {
        t = *(const kcpu_pv *)(x + q);
      } else {
        float part[KCPU_PV];
        for (int64_t j = 0; j < KCPU_PV; j++)
          part[j] = q + j < n ? x[q + j] : ident;
        t = *(const kcpu_pv *)part;
      }
      kcpu_pm in = (kcpu_pm)(lane < (float)(n - q));
      KCPU_POOL_ACC(mx, acc, (kcpu_pv)(((kcpu_pm)t & in) | (idm & ~in)));
    }
    /* written out: as a loop, the library's build (no unrolling before the
     * final O3) keeps it one, storing the vector for every lane it reads */
    float r = ident;
#define KCPU_POOL_LANE(j) r = mx ? kcpu_pool_smax(r, acc[j]) : r + acc[j]
    KCPU_POOL_LANE(0), KCPU_POOL_LANE(1), KCPU_POOL_LANE(2), KCPU_POOL_LANE(3);
    KCPU_POOL_LANE(4), KCPU_POOL_LANE(5), KCPU_POOL_LANE(6), KCPU_POOL_LANE(7);
    KCPU_POOL_LANE(8), KCPU_POOL_LANE(9), KCPU_POOL_LANE(10), KCPU_POOL_LANE(11);
    KCPU_POOL_LANE(12), KCPU_POOL_LANE(13), KCPU_POOL_LANE(14), KCPU_POOL_LANE(15);
#undef KCPU_POOL_LANE
    a->Y[i] = mx ? r : r / (float)n;
  }
}

static void kcpu_gpool_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_gpool_args *a = ctx;
  if (a->mode == 0)
    kcpu_gpool_body(a, b, e, 1);
  else
    kcpu_gpool_body(a, b, e, 0);
}

KCPU_PREBUILT void kcpu_k_gpool(const float *X, float *Y, int64_t NC, int64_t n, int64_t mode,
                                struct kcpu_pool *pool) {
  kcpu_gpool_args a = {X, Y, NC, n, mode};
  if (NC * n < KCPU_GPOOL_SERIAL)
    kcpu_gpool_fn(&a, 0, NC);
  else
    kcpu_parallel_for(pool, NC, kcpu_gpool_fn, &a);
}

/* ---- 8-bit MaxPool (the integers between quantized convolutions) ----
 * Separable as the f32 pools: per output row, the window's input rows
 * combined column by column into one row (contiguous, vectorized by the
 * JIT), then each output the largest of its columns. Windows are clipped
 * to the input, so padding never wins; integers have no NaN. */
typedef struct kcpu_pool8_args {
  const uint8_t *X;
  uint8_t *Y;
  int64_t sgn, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl;
} kcpu_pool8_args;

#define KCPU_POOL8_ROW 4096

static inline __attribute__((always_inline)) void
kcpu_pool8_body(const kcpu_pool8_args *a, int64_t b, int64_t e, const uint8_t flip) {
  uint8_t row[KCPU_POOL8_ROW];
  const int64_t W = a->W, OW = a->OW, KW = a->KW, sw = a->sw, dw = a->dw, pl = a->pl;
  /* outputs [o0, o1) have their whole window inside the row */
  int64_t o0 = (pl + sw - 1) / sw, last = W - 1 - (KW - 1) * dw + pl;
  int64_t o1 = last < 0 ? 0 : last / sw + 1; /* a negative last rounds to 0 in C */
  o0 = o0 > OW ? OW : o0;
  o1 = o1 < o0 ? o0 : o1 > OW ? OW : o1;
  for (int64_t k = b; k < e; k++) {
    int64_t plane = k / a->OH, oh = k % a->OH;
    const uint8_t *x = a->X + plane * a->H * W;
    uint8_t *y = a->Y + k * OW;
    int64_t r0 = oh * a->sh - a->pt;
    for (int64_t w = 0; w < W; w++)
      row[w] = 0;
    int64_t i0, i1;
    kcpu_pool_clip(r0, a->dh, a->KH, a->H, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
      int64_t r = r0 + i * a->dh;
      const uint8_t *xr = x + r * W;
      for (int64_t w = 0; w < W; w++) {
        uint8_t v = (uint8_t)(xr[w] ^ flip);
        row[w] = v > row[w] ? v : row[w];
      }
    }
    for (int64_t ow = 0; ow < OW; ow++) {
      int64_t c0 = ow * sw - pl;
      uint8_t m = 0;
      if (ow >= o0 && ow < o1) {
        for (int64_t j = 0; j < KW; j++)
          m = row[c0 + j * dw] > m ? row[c0 + j * dw] : m;
      } else {
        int64_t j0, j1;
        kcpu_pool_clip(c0, dw, KW, W, &j0, &j1);
        for (int64_t j = j0; j < j1; j++)
          m = row[c0 + j * dw] > m ? row[c0 + j * dw] : m;
      }
      y[ow] = (uint8_t)(m ^ flip);
    }
  }
}

/* signed bytes compare as unsigned once their sign bit is flipped */
static void kcpu_pool8_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_pool8_args *a = ctx;
  if (a->sgn)
    kcpu_pool8_body(a, b, e, 0x80);
  else
    kcpu_pool8_body(a, b, e, 0);
}

/* X [NC, H, W] of u8 (sgn 0) or i8 (sgn 1); rows up to KCPU_POOL8_ROW
 * (the emitter declines wider ones). */
KCPU_PREBUILT void kcpu_k_pool2d_8(const uint8_t *X, uint8_t *Y, int64_t sgn, int64_t NC, int64_t H,
                                   int64_t W, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                   int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                                   int64_t pl, struct kcpu_pool *pool) {
  if (NC <= 0 || OH <= 0 || OW <= 0 || W > KCPU_POOL8_ROW)
    return;
  kcpu_pool8_args a = {.X = X,
                       .Y = Y,
                       .sgn = sgn,
                       .H = H,
                       .W = W,
                       .OH = OH,
                       .OW = OW,
                       .KH = KH,
                       .KW = KW,
                       .sh = sh,
                       .sw = sw,
                       .dh = dh,
                       .dw = dw,
                       .pt = pt,
                       .pl = pl};
  kcpu_parallel_for(pool, NC * OH, kcpu_pool8_fn, &a);
}

/* ---- pooling on the channel-blocked layout (conv_blocked.h) ----
 * Every pixel of a block is one vector of 16 channels, so windows combine
 * whole vectors, lane by lane as kcpu_k_pool2d's element rules say (max:
 * a NaN in the window gives NaN; averages divided by the window's count).
 * Work items are output rows of every plane. In a row, the columns whose
 * window lies inside the input row go in runs of 8 independent pixels
 * with no test per tap; edge columns and rows clip their window. Each
 * output combines its window in (kh, kw) order, except a single output
 * pixel per plane row (global pooling), which splits its window into four
 * interleaved partial results combined at the end. Both orders depend on
 * the output's place only: the same bits whatever the thread count. */
typedef float kcpu_pbv __attribute__((vector_size(64)));
#define KCPU_PB_LD(p) ((kcpu_pbv) * (const kcpu_pv *)(p))

/* acc = the larger of acc and v, NaN noted on the side: acc##_n marks
 * the lanes that have met a NaN (v > acc is false for them, so acc holds
 * the largest number and the NaN test stays off acc's chain of
 * dependences); KCPU_PB_OUT gives those lanes NaN, as kcpu_pool_smax's
 * order would. Or acc + v. */
#define KCPU_PB_ACC(mx, acc, v)                                                                    \
  do {                                                                                             \
    kcpu_pbv v_ = (v);                                                                             \
    if (mx) {                                                                                      \
      kcpu_pm g_ = (kcpu_pm)(v_ > (acc));                                                          \
      acc##_n |= (kcpu_pm)(v_ != v_);                                                              \
      (acc) = (kcpu_pbv)(((kcpu_pm)(acc) & ~g_) | ((kcpu_pm)v_ & g_));                             \
    } else {                                                                                       \
      (acc) = (acc) + v_;                                                                          \
    }                                                                                              \
  } while (0)
/* acc combined with another partial result b of the same window */
#define KCPU_PB_MERGE(mx, acc, b)                                                                  \
  do {                                                                                             \
    if (mx) {                                                                                      \
      kcpu_pm g_ = (kcpu_pm)((b) > (acc));                                                         \
      acc##_n |= b##_n;                                                                            \
      (acc) = (kcpu_pbv)(((kcpu_pm)(acc) & ~g_) | ((kcpu_pm)(b)&g_));                              \
    } else {                                                                                       \
      (acc) = (acc) + (b);                                                                         \
    }                                                                                              \
  } while (0)
/* the finished maximum: NaN where the window held one */
#define KCPU_PB_OUT(acc)                                                                           \
  ((kcpu_pbv)(((kcpu_pm)(acc) & ~acc##_n) | ((kcpu_pm)((kcpu_pbv){0} + NAN) & acc##_n)))

typedef struct kcpu_pb_args {
  const float *X;
  float *Y;
  int64_t NCb, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, mode, cip;
  int64_t owl, owr; /* interior output columns [owl, owr) */
} kcpu_pb_args;

/* What the runs of one output row share. x: the input at the first valid
 * row, column 0; taps xkh / xkw floats apart, pixels xs apart. */
typedef struct kcpu_pb_row {
  const float *x;
  int64_t nkh, xs, xkh, xkw, padh;
} kcpu_pb_row;

/* 8 interior pixels from column ow of the row at y; div: their count. */
static inline __attribute__((always_inline)) void kcpu_pb_run8(const kcpu_pb_args *a,
                                                               const kcpu_pb_row *rw, int64_t ow,
                                                               float *y, float div, int mx) {
  kcpu_pbv c0 = {0};
  if (mx)
    c0 += -INFINITY;
  kcpu_pbv c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  kcpu_pm c0_n = {0}, c1_n = c0_n, c2_n = c0_n, c3_n = c0_n, c4_n = c0_n, c5_n = c0_n, c6_n = c0_n,
          c7_n = c0_n;
  int64_t xs = rw->xs;
  const float *x = rw->x + (ow * a->sw - a->pl) * KCPU_PV;
  for (int64_t kh = 0; kh < rw->nkh; kh++)
    for (int64_t kw = 0; kw < a->KW; kw++) {
      const float *p = x + kh * rw->xkh + kw * rw->xkw;
      KCPU_PB_ACC(mx, c0, KCPU_PB_LD(p));
      KCPU_PB_ACC(mx, c1, KCPU_PB_LD(p + xs));
      KCPU_PB_ACC(mx, c2, KCPU_PB_LD(p + 2 * xs));
      KCPU_PB_ACC(mx, c3, KCPU_PB_LD(p + 3 * xs));
      KCPU_PB_ACC(mx, c4, KCPU_PB_LD(p + 4 * xs));
      KCPU_PB_ACC(mx, c5, KCPU_PB_LD(p + 5 * xs));
      KCPU_PB_ACC(mx, c6, KCPU_PB_LD(p + 6 * xs));
      KCPU_PB_ACC(mx, c7, KCPU_PB_LD(p + 7 * xs));
    }
  kcpu_pv *o = (kcpu_pv *)(y + ow * KCPU_PV);
  if (mx) {
    o[0] = KCPU_PB_OUT(c0), o[1] = KCPU_PB_OUT(c1), o[2] = KCPU_PB_OUT(c2);
    o[3] = KCPU_PB_OUT(c3), o[4] = KCPU_PB_OUT(c4), o[5] = KCPU_PB_OUT(c5);
    o[6] = KCPU_PB_OUT(c6), o[7] = KCPU_PB_OUT(c7);
  } else {
    o[0] = c0 / div, o[1] = c1 / div, o[2] = c2 / div, o[3] = c3 / div;
    o[4] = c4 / div, o[5] = c5 / div, o[6] = c6 / div, o[7] = c7 / div;
  }
}

/* One pixel at column ow of the row, its window clipped; wide: combine
 * it in four interleaved parts (a pixel alone in its row). */
static inline __attribute__((always_inline)) void
kcpu_pb_run1(const kcpu_pb_args *a, const kcpu_pb_row *rw, int64_t ow, float *y, int wide, int mx) {
  int64_t iw0 = ow * a->sw - a->pl, kw0, kw1;
  kcpu_pool_clip(iw0, a->dw, a->KW, a->W, &kw0, &kw1);
  int64_t nkw = kw1 - kw0;
  const float *x = rw->x + (iw0 + kw0 * a->dw) * KCPU_PV;
  kcpu_pbv c0 = {0};
  kcpu_pm c0_n = {0};
  if (mx)
    c0 += -INFINITY;
  if (wide) {
    kcpu_pbv c1 = c0, c2 = c0, c3 = c0;
    kcpu_pm c1_n = {0}, c2_n = c1_n, c3_n = c1_n;
    int64_t xkh = rw->xkh, nr = rw->nkh, nc = nkw;
    if (a->dw == 1 && a->dh == 1 && nkw == a->W) /* whole rows: one contiguous run */
      nc *= nr, nr = 1;
    for (int64_t kh = 0; kh < nr; kh++) {
      const float *p = x + kh * xkh;
      int64_t kw = 0, s = rw->xkw;
      for (; kw + 4 <= nc; kw += 4, p += 4 * s) {
        KCPU_PB_ACC(mx, c0, KCPU_PB_LD(p));
        KCPU_PB_ACC(mx, c1, KCPU_PB_LD(p + s));
        KCPU_PB_ACC(mx, c2, KCPU_PB_LD(p + 2 * s));
        KCPU_PB_ACC(mx, c3, KCPU_PB_LD(p + 3 * s));
      }
      for (; kw < nc; kw++, p += s)
        KCPU_PB_ACC(mx, c0, KCPU_PB_LD(p));
    }
    KCPU_PB_MERGE(mx, c0, c1);
    KCPU_PB_MERGE(mx, c2, c3);
    KCPU_PB_MERGE(mx, c0, c2);
  } else {
    for (int64_t kh = 0; kh < rw->nkh; kh++)
      for (int64_t kw = 0; kw < nkw; kw++)
        KCPU_PB_ACC(mx, c0, KCPU_PB_LD(x + kh * rw->xkh + kw * rw->xkw));
  }
  kcpu_pv *o = (kcpu_pv *)(y + ow * KCPU_PV);
  if (mx) {
    *o = KCPU_PB_OUT(c0);
  } else {
    float cnt =
        a->cip ? (float)rw->padh * (float)kcpu_pool_padded(iw0, a->dw, a->KW, a->W, a->pl, a->pr)
               : (float)(rw->nkh * nkw);
    *o = c0 / cnt;
  }
}

/* Output rows [b, e) of every plane: item t = oh * NCb + plane, so that a
 * thread's share is a band of rows of every plane, the rows that the
 * convolutions around it, split by row bands, write and read there. */
static inline __attribute__((always_inline)) void kcpu_pb_rows(const kcpu_pb_args *a, int64_t b,
                                                               int64_t e, int mx) {
  int64_t L = KCPU_PV, OW = a->OW;
  kcpu_pb_row rw = {.xs = a->sw * L, .xkh = a->dh * a->W * L, .xkw = a->dw * L};
  for (int64_t t = b; t < e; t++) {
    int64_t p = t % a->NCb, oh = t / a->NCb, ih0 = oh * a->sh - a->pt, kh0, kh1;
    kcpu_pool_clip(ih0, a->dh, a->KH, a->H, &kh0, &kh1);
    rw.nkh = kh1 - kh0;
    rw.padh = kcpu_pool_padded(ih0, a->dh, a->KH, a->H, a->pt, a->pb);
    rw.x = a->X + (p * a->H + ih0 + kh0 * a->dh) * a->W * L;
    float *y = a->Y + (p * a->OH + oh) * OW * L;
    if (OW == 1) {
      kcpu_pb_run1(a, &rw, 0, y, 1, mx);
      continue;
    }
    float div = (float)(a->cip ? rw.padh : rw.nkh) * (float)a->KW;
    int64_t ow = 0;
    for (; ow < a->owl; ow++)
      kcpu_pb_run1(a, &rw, ow, y, 0, mx);
    for (; ow + 8 <= a->owr; ow += 8)
      kcpu_pb_run8(a, &rw, ow, y, div, mx);
    for (; ow < OW; ow++)
      kcpu_pb_run1(a, &rw, ow, y, 0, mx);
  }
}

static void kcpu_pb_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_pb_args *a = ctx;
  if (a->mode == 0)
    kcpu_pb_rows(a, b, e, 1);
  else
    kcpu_pb_rows(a, b, e, 0);
}

KCPU_PREBUILT void kcpu_k_pool2d_blocked(const float *X, float *Y, int64_t NCb, int64_t H,
                                         int64_t W, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                         int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                                         int64_t pl, int64_t pb, int64_t pr, int64_t mode,
                                         int64_t count_include_pad, struct kcpu_pool *pool) {
  kcpu_pb_args a = {.X = X,
                    .Y = Y,
                    .NCb = NCb,
                    .H = H,
                    .W = W,
                    .OH = OH,
                    .OW = OW,
                    .KH = KH,
                    .KW = KW,
                    .sh = sh,
                    .sw = sw,
                    .dh = dh,
                    .dw = dw,
                    .pt = pt,
                    .pl = pl,
                    .pb = pb,
                    .pr = pr,
                    .mode = mode,
                    .cip = count_include_pad};
  /* interior columns: ow*sw - pl >= 0 and ow*sw - pl + (KW-1)*dw <= W-1 */
  int64_t lo = (pl + sw - 1) / sw, last = W - 1 - (KW - 1) * dw + pl;
  int64_t hi = last < 0 ? 0 : last / sw + 1;
  a.owl = lo < OW ? lo : OW;
  a.owr = hi < OW ? hi : OW;
  if (a.owr < a.owl)
    a.owr = a.owl;
  /* small pools (the global ones of squeeze-and-excitation blocks) cost
   * less than waking the other threads: as kcpu_k_gpool */
  int64_t taps = (KH < H ? KH : H) * (KW < W ? KW : W); /* at most, once clipped */
  if (NCb * KCPU_PV * OH * OW * taps < KCPU_GPOOL_SERIAL)
    kcpu_pb_fn(&a, 0, NCb * OH);
  else
    kcpu_parallel_for(pool, NCb * OH, kcpu_pb_fn, &a);
}
