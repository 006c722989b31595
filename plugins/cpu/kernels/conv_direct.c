/* plugins/cpu/kernels/conv_direct.c: direct 2-D and 3-D convolution (f32,
 * NCHW / NCDHW, any strides, AVX-512 tiles) with no im2col matrix.
 *
 * The image of one (n, group) is copied once into zero-bordered planes
 * from which every filter tap k = (c, kh, kw) reads the inputs of a run
 * of output pixels at one constant offset from the run's index: the
 * GEMM's B matrix, B(k, q), is the planes read at one offset per k, and
 * the micro-kernel loads its vectors straight from them (what an im2col
 * packer writes, K x N floats, is never written). Two layouts:
 *
 * - Tap planes (where they fit KD_KWMAX): per channel, filter column kw
 *   and row phase a, the Hq = OH + (KH-1)*dh/sh rows r*sh + a of the
 *   padded image, each OW wide, holding at column ow the input that
 *   output column ow reads in filter column kw. Output n = oh*OW + ow
 *   reads tap k at n + (kh*dh/sh)*OW in plane (c, kw, kh*dh % sh): the
 *   grid is the output itself, so panels of 48 run across output rows,
 *   no column is computed in vain and every store is a whole vector (the
 *   last, overlapping its neighbour, ends at the last output). KW/sw
 *   copies of the image.
 * - Phase planes: the padded image split by stride into sh x sw phases,
 *   phase (a, b) holding padded pixels (r*sh + a, j*sw + b), Hq x Wq with
 *   Wq = OW + (KW-1)*dw/sw (stride 1: the padded image itself; about one
 *   copy of the image). Output (oh, ow), at grid index q = oh*Wq + ow,
 *   reads tap k in phase (kh*dh % sh, kw*dw % sw) at q + (kh*dh/sh)*Wq +
 *   kw*dw/sw. The Wq - OW columns of each row are computed and dropped.
 *   Panels are flat (48 grid columns, rows cut at their edges stored one
 *   output at a time) or, where that pays (kcpu_dconv_rows_pay: the
 *   stems), row panels of whole vectors within one output row.
 * - 3-D (video models): phase volumes, Dq = OD + (KD-1)*dd/sd phase
 *   planes deep, split by stride on all three axes; output (od, oh, ow)
 *   at grid index (od*Hq + oh)*Wq + ow, tap (kd, kh, kw) a further
 *   (kd*dd/sd)*Hq*Wq on. Flat panels; the Hq - OH rows of each slice are
 *   dropped like the padding columns.
 *
 * Filters are the prepacked A of the GEMM engine (gemm_impl.h), so the
 * reduction over k runs in the engine's order: KCPU_KC blocks, then k
 * within a block, summed in registers over the whole of K before the
 * epilogue (bias, residual, activation: kcpu_gemm_epi1, and Swish over
 * the segment) writes each row segment of the tile to its output row.
 * Every layout sums in that order: results are the same for any layout
 * and thread count. */
#include "gemm_impl.h"

typedef float kd_v16 __attribute__((vector_size(64)));
typedef float kd_v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t kd_v16i __attribute__((vector_size(64)));

#define KD_MR 8
#define KD_NR 48
#define KD_AMAX (256 * 1024) /* bytes of filter rows a thread keeps hot in L2 */
/* Bytes of tap planes that stay worth their footprint over phase planes
 * (KW/sw times larger): up to 1 MiB, or 4 MiB under 128 filter rows or
 * more (each plane byte read into L2 serving more FMAs): on one Zen 5
 * core 56 wide, 64 -> 192 channels 6% faster, 64 -> 64 even, and the 7x7
 * stem (2 MiB, 64 rows) 5% slower. */
#define KD_KWMAX (1024 * 1024)
#define KD_KWMAX_WIDE (4 * 1024 * 1024)

typedef struct kcpu_dconv {
  const kcpu_gemm_desc *d;
  const kcpu_conv_geo *g;
  float *xp;         /* the planes, channel after channel, then KD_NR zeros */
  const int64_t *bo; /* B row offsets into xp, one per k */
  int64_t Cg, OH, Hq, Wq, NQ, RP, tm, tn;
  int64_t OD, Dq; /* 3-D: output depth slices, and phase volumes' (2-D: 1) */
  /* Row panels (npr > 0): each row of rl outputs (OW; for tap planes,
   * the whole output) is nvr vectors, the last one ending at the row's
   * end (overlapping the one before where rl is not a multiple of 16),
   * taken npr panels to a row. npr = 0: flat panels of KD_NR columns over
   * the padded grid. np: the panels in all. kwp: tap planes. */
  int64_t npr, nvr, np, rl, kwp;
} kcpu_dconv;

/* The rows of the 8 x 48 tile, spelled out so that the accumulators stay
 * in registers (the library is built with -fno-unroll-loops). */
#define KD_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define KD_DECL(r) kd_v16 c0_##r = {0}, c1_##r = {0}, c2_##r = {0};
#define KD_FMA3(r)                                                                                 \
  {                                                                                                \
    float av = a[k * KD_MR + (r)];                                                                 \
    c0_##r += av * b0;                                                                             \
    c1_##r += av * b1;                                                                             \
    c2_##r += av * b2;                                                                             \
  }
#define KD_FMA2(r)                                                                                 \
  {                                                                                                \
    float av = a[k * KD_MR + (r)];                                                                 \
    c0_##r += av * b0;                                                                             \
    c1_##r += av * b1;                                                                             \
  }
#define KD_FMA1(r) c0_##r += a[k * KD_MR + (r)] * b0;
#define KD_SPILL(r)                                                                                \
  *(kd_v16 *)(t + (r)*KD_NR) = c0_##r;                                                             \
  *(kd_v16 *)(t + (r)*KD_NR + 16) = c1_##r;                                                        \
  *(kd_v16 *)(t + (r)*KD_NR + 32) = c2_##r;
#define KD_PUT(r)                                                                                  \
  if ((r) < mr) {                                                                                  \
    kd_v16 v[3] = {c0_##r, c1_##r, c2_##r};                                                        \
    kcpu_dconv_put(c->d, i0 + (r), n, v, nv, o1, o2);                                              \
  }

/* The epilogue of one vector in place (the operations and order of
 * kcpu_gemm_epi1, Swish left to the caller): br the row's bias, res its
 * residual or NULL. */
static inline void kcpu_dconv_epi(const kcpu_gemm_desc *d, kd_v16 *v, float br, const float *res) {
  kd_v16 z = {0}, x = *v;
  if (d->bias_row)
    x += br;
  if (res)
    x += *(const kd_v16u *)res;
  if (d->act == KCPU_ACT_RELU)
    x = (kd_v16)((kd_v16i)x & (kd_v16i)(x > z));
  KCPU_ACT_VEC_HARD(kd_v16, kd_v16i, x, d->act, d->act_a, d->act_b);
  *v = x;
}

/* Output row m of a row panel: nv vectors v[] at output index n, n + o1
 * and n + o2. All are finished before any is stored: the last may
 * overlap the one before, and the residual may be the output itself. */
static inline void kcpu_dconv_put(const kcpu_gemm_desc *d, int64_t m, int64_t n, kd_v16 *v,
                                  int64_t nv, int64_t o1, int64_t o2) {
  float *y = d->C + m * d->ldc + n;
  const float *res = d->res ? d->res + m * d->ldr + n : NULL;
  float br = d->bias_row ? d->bias_row[m] : 0.0f;
  kcpu_dconv_epi(d, &v[0], br, res);
  if (nv > 1)
    kcpu_dconv_epi(d, &v[1], br, res ? res + o1 : NULL);
  if (nv > 2)
    kcpu_dconv_epi(d, &v[2], br, res ? res + o2 : NULL);
  *(kd_v16u *)y = v[0];
  if (nv > 1)
    *(kd_v16u *)(y + o1) = v[1];
  if (nv > 2)
    *(kd_v16u *)(y + o2) = v[2];
  if (d->act == KCPU_ACT_SWISH) /* the one the epilogue leaves to a row pass */
    kcpu_act_swish_row(d->act_a, y, (nv > 2 ? o2 : nv > 1 ? o1 : 0) + 16);
}

/* A rows [i0, i0+8) x nv B vectors over all of K, the vectors at grid
 * columns x, x + o1 and x + o2 of the planes. Row panels (n >= 0: the
 * output index of the first vector) go through the epilogue straight from
 * the registers, rows past mr dropped; flat ones (n < 0) are spilled to
 * t[8][48] for kcpu_dconv_store (their columns past the panel's are
 * computed from the plane's zero tail or the next row's data and
 * ignored). */
static void kcpu_dconv_ukr(const kcpu_dconv *c, int64_t i0, int64_t mr, const float *x, int64_t o1,
                           int64_t o2, int64_t nv, int64_t n, float *restrict t) {
  const float *Apk = c->d->Apk, *x1 = x + o1, *x2 = x + o2;
  const int64_t *bo = c->bo;
  int64_t K = c->d->K;
  KD_ROWS(KD_DECL)
  for (int64_t k0 = 0; k0 < K; k0 += KCPU_KC) {
    int64_t kc = K - k0 < KCPU_KC ? K - k0 : KCPU_KC;
    const float *restrict a = Apk + k0 * c->RP + i0 * kc;
    const int64_t *o = bo + k0;
    /* The filters' next block for these rows (or the next rows' first
     * block) lies a whole packed block away, where no hardware prefetcher
     * follows: it is fetched while this one is used, a line every other k
     * (8 floats a k), so filters that stream from memory (ResNet's last
     * stage: 9 MB a layer) arrive in time. */
    const float *pf = k0 + KCPU_KC < K
                          ? Apk + (k0 + KCPU_KC) * c->RP +
                                i0 * (K - k0 - KCPU_KC < KCPU_KC ? K - k0 - KCPU_KC : KCPU_KC)
                          : Apk + (i0 + KD_MR) * (K < KCPU_KC ? K : KCPU_KC);
    if (nv > 2) {
      for (int64_t k = 0; k < kc; k++) {
        __builtin_prefetch(pf + k * KD_MR);
        int64_t ok = o[k];
        kd_v16 b0 = *(const kd_v16u *)(x + ok), b1 = *(const kd_v16u *)(x1 + ok);
        kd_v16 b2 = *(const kd_v16u *)(x2 + ok);
        KD_ROWS(KD_FMA3)
      }
    } else if (nv > 1) {
      for (int64_t k = 0; k < kc; k++) {
        __builtin_prefetch(pf + k * KD_MR);
        int64_t ok = o[k];
        kd_v16 b0 = *(const kd_v16u *)(x + ok), b1 = *(const kd_v16u *)(x1 + ok);
        KD_ROWS(KD_FMA2)
      }
    } else {
      for (int64_t k = 0; k < kc; k++) {
        __builtin_prefetch(pf + k * KD_MR);
        kd_v16 b0 = *(const kd_v16u *)(x + o[k]);
        KD_ROWS(KD_FMA1)
      }
    }
  }
  if (n < 0) {
    KD_ROWS(KD_SPILL)
    return;
  }
  KD_ROWS(KD_PUT)
}

/* Rows [m0, m0+mr) of tile t (columns q0 .. q0+nq on the padded grid)
 * through the epilogue into the output rows they belong to. */
static void kcpu_dconv_store(const kcpu_dconv *c, const float *t, int64_t m0, int64_t mr,
                             int64_t q0, int64_t nq) {
  const kcpu_gemm_desc *d = c->d;
  int64_t Wp = c->Wq, OW = c->g->OW, plane = c->Hq * Wp;
  for (int64_t q = q0; q < q0 + nq;) {
    int64_t sl = q / plane, oh = (q - sl * plane) / Wp, ow = q - sl * plane - oh * Wp;
    if (oh >= c->OH) { /* a padding row of a 3-D slice: skip to the next slice */
      q = (sl + 1) * plane;
      continue;
    }
    if (ow >= OW) { /* a padding column: skip to the next row */
      q = sl * plane + (oh + 1) * Wp;
      continue;
    }
    int64_t len = OW - ow < q0 + nq - q ? OW - ow : q0 + nq - q;
    int64_t n = (sl * c->OH + oh) * OW + ow;
    for (int64_t r = 0; r < mr; r++) {
      const float *tr = t + r * KD_NR + (q - q0);
      float *y = d->C + (m0 + r) * d->ldc + n;
      int64_t j = 0;
      /* whole vectors: the register epilogue (kcpu_gemm_epi1 takes the rest) */
      float br = d->bias_row ? d->bias_row[m0 + r] : 0.0f;
      const float *res = d->res ? d->res + (m0 + r) * d->ldr + n : NULL;
      for (; j + 16 <= len; j += 16) {
        kd_v16 v = *(const kd_v16u *)(tr + j);
        kcpu_dconv_epi(d, &v, br, res ? res + j : NULL);
        *(kd_v16u *)(y + j) = v;
      }
      for (; j < len; j++)
        y[j] = kcpu_gemm_epi1(d, tr[j], m0 + r, n + j);
      if (d->act == KCPU_ACT_SWISH) /* the one kcpu_gemm_epi1 leaves to a row pass */
        kcpu_act_swish_row(d->act_a, y, len);
    }
    q += len;
  }
}

/* dst[j] = src[2j] for j in [0, n): stride-2 phases (the stems), 16 at a
 * time from pairs of vectors while the source stays inside the row. */
static inline void kcpu_dconv_even(float *restrict dst, const float *restrict src, int64_t n,
                                   int64_t avail) {
  int64_t j = 0;
  for (; j + 16 <= n && 2 * j + 32 <= avail; j += 16) {
    kd_v16 lo = *(const kd_v16u *)(src + 2 * j), hi = *(const kd_v16u *)(src + 2 * j + 16);
    *(kd_v16u *)(dst + j) =
        __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  }
  for (; j < n; j++)
    dst[j] = src[2 * j];
}

/* Phase planes [b, e) of the padded image (plane u: channel u / (sd*sh*sw),
 * phase u % (sd*sh*sw); 3-D: a volume of Dq such planes, depth phase
 * outermost): pixels outside the input are zero. */
static void kcpu_dconv_pad_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_dconv *c = ctx;
  const kcpu_conv_geo *g = c->g;
  int64_t sh = g->sh, s = g->sw, Wq = c->Wq, vol = c->Dq * c->Hq * Wq, nph = g->sd * sh * s;
  for (int64_t u = b; u < e; u++) {
    int64_t ch = u / nph, ph = u % nph, pz = ph / (sh * s), pa = ph / s % sh, pb = ph % s;
    const float *x = g->x + ch * g->D * g->H * g->W;
    float *p = c->xp + u * vol;
    /* input columns: iw = j*s + pb - pl for j in [lo, hi) */
    int64_t q = g->pl - pb, lo = q <= 0 ? 0 : (q + s - 1) / s;
    int64_t hi = g->W + q <= 0 ? 0 : (g->W + q - 1) / s + 1;
    hi = hi < Wq ? hi : Wq;
    lo = lo < hi ? lo : hi;
    for (int64_t rr = 0; rr < c->Dq * c->Hq; rr++) {
      float *row = p + rr * Wq;
      int64_t r = rr % c->Hq, ih = r * sh + pa - g->pt, id = rr / c->Hq * g->sd + pz - g->pd;
      if (ih < 0 || ih >= g->H || id < 0 || id >= g->D) {
        for (int64_t j = 0; j < Wq; j++)
          row[j] = 0.0f;
        continue;
      }
      /* src[j*s] is input column j*s - q */
      const float *src = x + (id * g->H + ih) * g->W - q;
      for (int64_t j = 0; j < lo; j++)
        row[j] = 0.0f;
      int64_t j = lo;
      if (s == 1) {
        for (; j + 16 <= hi; j += 16)
          *(kd_v16u *)(row + j) = *(const kd_v16u *)(src + j);
        for (; j < hi; j++)
          row[j] = src[j];
      } else if (s == 2) {
        /* the row's input ends at src[W + q] */
        kcpu_dconv_even(row + lo, src + 2 * lo, hi - lo, g->W + q - 2 * lo);
      } else {
        for (; j < hi; j++)
          row[j] = src[j * s];
      }
      for (j = hi; j < Wq; j++)
        row[j] = 0.0f;
    }
  }
}

/* Tap planes of units [b, e) (channel u / KW, filter column kw = u % KW):
 * for each row phase a (rows r*sh + a of the padded image), Hq rows of OW
 * floats, element (r, ow) the input pixel that output column ow reads in
 * filter column kw, zero in the padding. */
static void kcpu_dconv_kwpad_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_dconv *c = ctx;
  const kcpu_conv_geo *g = c->g;
  int64_t sh = g->sh, s = g->sw, OW = g->OW, plane = c->Hq * OW;
  for (int64_t u = b; u < e; u++) {
    int64_t ch = u / g->KW, kw = u % g->KW;
    const float *x = g->x + ch * g->H * g->W;
    /* output column ow reads input column ow*s + cw, inside for [lo, hi) */
    int64_t cw = kw * g->dw - g->pl, lo = cw >= 0 ? 0 : (-cw + s - 1) / s;
    int64_t hi = g->W - 1 - cw < 0 ? 0 : (g->W - 1 - cw) / s + 1;
    hi = hi < OW ? hi : OW;
    lo = lo < hi ? lo : hi;
    for (int64_t a = 0; a < sh; a++) {
      float *p = c->xp + (u * sh + a) * plane;
      for (int64_t r = 0; r < c->Hq; r++) {
        float *row = p + r * OW;
        int64_t ih = r * sh + a - g->pt, j = 0;
        if (ih < 0 || ih >= g->H) {
          for (; j < OW; j++)
            row[j] = 0.0f;
          continue;
        }
        const float *src = x + ih * g->W + cw; /* src[j*s]: output column j's input */
        for (; j < lo; j++)
          row[j] = 0.0f;
        if (s == 1) {
          for (; j + 16 <= hi; j += 16)
            *(kd_v16u *)(row + j) = *(const kd_v16u *)(src + j);
          for (; j < hi; j++)
            row[j] = src[j];
        } else if (s == 2) {
          kcpu_dconv_even(row + lo, src + 2 * lo, hi - lo, g->W - cw - 2 * lo);
        } else {
          for (; j < hi; j++)
            row[j] = src[j * s];
        }
        for (j = hi; j < OW; j++)
          row[j] = 0.0f;
      }
    }
  }
}

/* Row panel p: its output row and first vector, the grid columns of its
 * vectors relative to the first (o1, o2) and their count. A row's
 * vectors go three to a panel, but where that leaves one for the last
 * panel the last two panels take two each: a panel of one vector is
 * bound by its loads (the 7x7 stem, 112 wide, 4-6% faster so), and an
 * overlapping last vector then shares a panel with the one it overlaps
 * (a vector of its own would rewrite outputs another panel, maybe
 * another thread, has already finished). */
static void kcpu_dconv_rowpanel(const kcpu_dconv *c, int64_t p, int64_t *oh, int64_t *col,
                                int64_t *o1, int64_t *o2, int64_t *nv) {
  int64_t L = c->rl, nvr = c->nvr, j = p % c->npr, last = c->npr - 1;
  int64_t v0 = 3 * j, v1 = v0 + 3 < nvr ? v0 + 3 : nvr;
  if (nvr % 3 == 1 && nvr >= 4 && j >= last - 1) {
    v0 = j == last ? nvr - 2 : nvr - 4;
    v1 = v0 + 2;
  }
  *oh = p / c->npr;
  *col = 16 * v0;
  *nv = v1 - v0;
  *o1 = (16 * (v0 + 1) < L - 16 ? 16 * (v0 + 1) : L - 16) - *col;
  *o2 = (16 * (v0 + 2) < L - 16 ? 16 * (v0 + 2) : L - 16) - *col;
}

/* Tile i of the tm x tn grid: rows in blocks whose filters fit KD_AMAX
 * (read once from memory, then from L2 for every column panel), each block
 * swept over the tile's column panels. */
static void kcpu_dconv_tile_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_dconv *c = ctx;
  const kcpu_gemm_desc *d = c->d;
  float t[KD_MR * KD_NR] __attribute__((aligned(64)));
  int64_t mb = KD_AMAX / (d->K * (int64_t)sizeof(float)) / KD_MR * KD_MR;
  if (mb < KD_MR)
    mb = KD_MR;
  for (int64_t i = b; i < e; i++) {
    int64_t im = i / c->tn, in = i % c->tn;
    int64_t m0 = kcpu_split(d->M, c->tm, im, KD_MR), m1 = kcpu_split(d->M, c->tm, im + 1, KD_MR);
    int64_t p0 = kcpu_split(c->np, c->tn, in, 1), p1 = kcpu_split(c->np, c->tn, in + 1, 1);
    for (int64_t ic = m0; ic < m1; ic += mb) {
      int64_t ie = ic + mb < m1 ? ic + mb : m1;
      for (int64_t p = p0; p < p1; p++) {
        if (c->npr) {
          int64_t oh, col, o1, o2, nv;
          kcpu_dconv_rowpanel(c, p, &oh, &col, &o1, &o2, &nv);
          const float *x = c->xp + oh * c->Wq + col;
          for (int64_t ir = ic; ir < ie; ir += KD_MR)
            kcpu_dconv_ukr(c, ir, ie - ir < KD_MR ? ie - ir : KD_MR, x, o1, o2, nv,
                           oh * c->rl + col, NULL);
          continue;
        }
        int64_t q = p * KD_NR, nq = c->NQ - q < KD_NR ? c->NQ - q : KD_NR;
        int64_t nv = (nq + 15) / 16;
        for (int64_t ir = ic; ir < ie; ir += KD_MR) {
          kcpu_dconv_ukr(c, ir, KD_MR, c->xp + q, 16, 32, nv, -1, t);
          kcpu_dconv_store(c, t, ir, ie - ir < KD_MR ? ie - ir : KD_MR, q, nq);
        }
      }
    }
  }
}

/* Whether row panels beat flat ones, by an estimate of the cycles per
 * output: K/32 per computed column (16 lanes, two FMAs a cycle), flat
 * panels computing Wq columns a row and storing about 16 outputs a row
 * (the pieces of rows cut by panel edges) one by one at some 3 cycles
 * each, row panels computing whole vectors, those in panels of two
 * vectors some 10% slower (more filter loads per FMA), of one 30%. So
 * the stems (K 27 to 147, 111 and 112 wide) take rows, 3x3 layers of 16
 * channels and more at 28 to 56 wide stay flat. */
static int kcpu_dconv_rows_pay(int64_t K, int64_t OW, int64_t Wq) {
  if (OW < 16)
    return 0;
  /* vectors in panels of two and of one (kcpu_dconv_rowpanel) */
  int64_t nvr = (OW + 15) / 16, two = nvr % 3 == 2 ? 2 : nvr % 3 == 1 && nvr >= 4 ? 4 : 0;
  int64_t one = nvr == 1 ? 1 : 0;
  double fma = (double)K / 32.0;
  double flat = (double)Wq * fma + 16.0 * 3.0;
  double rows = 16.0 * (double)nvr * fma * (1.0 + (0.1 * two + 0.3 * one) / (double)nvr);
  return rows < flat;
}

int kcpu_conv_direct(const kcpu_gemm_desc *d, const kcpu_conv_geo *g, struct kcpu_pool *pool) {
  int64_t khw = g->KD * g->KH * g->KW, ohw = g->OH * g->OW;
  if (kcpu_gemm_lanes(d->lanes) != 16 || !d->Apk || g->sh < 1 || g->sw < 1 || g->sd < 1 ||
      g->dd < 1 || khw < 2 || ohw < 1 || d->act == KCPU_ACT_GELU || d->bias_col ||
      d->accumulate || d->K % khw || d->N % ohw)
    return 0;
  /* 3-D: phase volumes in flat panels only (the header above) */
  int three = g->KD > 1 || g->D > 1 || g->sd > 1 || g->pd != 0;
  kcpu_dconv c = {.d = d, .g = g, .Cg = d->K / khw, .OH = g->OH, .OD = d->N / ohw};
  c.Dq = c.OD + (g->KD - 1) * g->dd / g->sd;
  c.Hq = c.OH + (g->KH - 1) * g->dh / g->sh;
  c.Wq = g->OW + (g->KW - 1) * g->dw / g->sw;
  c.NQ = ((c.OD - 1) * c.Hq + c.OH - 1) * c.Wq + g->OW;
  /* 3-D on small maps: the grid's padding rows and columns outweigh what
   * packing costs the GEMM. Direct where at least 85% of a slice's grid
   * is output (MC3-18, two cores: 56x56 and 28x28 faster direct, 168 ->
   * 202 and 179 -> 190 GFLOP/s; 14x14 (77%) and 7x7 (60%) slower, 192 ->
   * 169 and 181 -> 130). */
  if (three && c.OH * g->OW * 100 < 85 * c.Hq * c.Wq)
    return 0;
  c.RP = (d->M + KD_MR - 1) / KD_MR * KD_MR;
  /* Tap planes where they fit KD_KWMAX (and the output is a vector at
   * least); else phase planes, in row panels where they pay, else flat.
   * A single output row (a 1-D convolution) whose padding adds at most
   * 1/16 to the grid takes phase planes: one copy of the image instead of
   * KW, for a few columns computed in vain (a TCN's 64 -> 64 channels, 3
   * taps dilated 4, 500 steps: 125 -> 120 us on one core, and with the
   * grid below 86 -> 69 on two). */
  int64_t kwn = c.Cg * g->KW * g->sh * c.Hq * g->OW;
  int64_t kwb = kwn * (int64_t)sizeof(float);
  int one_row = c.OD == 1 && c.OH == 1 && (c.Wq - g->OW) * 16 <= g->OW;
  if (!three && !one_row && d->N >= 16 &&
      (kwb <= KD_KWMAX || (kwb <= KD_KWMAX_WIDE && d->M >= 128))) {
    c.kwp = 1;
    c.Wq = g->OW;
    c.NQ = d->N;
    c.rl = d->N;
  } else if (!three && kcpu_dconv_rows_pay(d->K, g->OW, c.Wq)) {
    c.rl = g->OW;
  }
  if (c.rl) {
    c.nvr = (c.rl + 15) / 16;
    c.npr = (c.nvr + 2) / 3;
    c.np = d->N / c.rl * c.npr;
  } else {
    c.np = (c.NQ + KD_NR - 1) / KD_NR;
  }
  /* The last panel's vectors read up to KD_NR - 1 floats past the last
   * tap's last pixel (phase planes: at most (Cg-1)*chs + (nph-1)*vol +
   * (Dq-1)*plane + (Hq-1)*Wq + Wq-1): a zero tail keeps every read inside
   * the buffer. */
  int64_t plane = c.Hq * c.Wq, vol = c.Dq * plane, nph = g->sd * g->sh * g->sw;
  int64_t chs = c.kwp ? g->KW * g->sh * plane : nph * vol;
  float *xp = kcpu_alloc((c.Cg * chs + KD_NR) * (int64_t)sizeof(float));
  int64_t *bo = kcpu_alloc(d->K * (int64_t)sizeof(int64_t));
  if (!xp || !bo) {
    kcpu_free(xp);
    kcpu_free(bo);
    return 0;
  }
  for (int64_t j = 0; j < KD_NR; j++)
    xp[c.Cg * chs + j] = 0.0f;
  for (int64_t k = 0; k < d->K; k++) {
    int64_t ch = k / khw, r = k % khw, rz = r / (g->KH * g->KW) * g->dd;
    r %= g->KH * g->KW;
    int64_t ry = r / g->KW * g->dh, rx = r % g->KW * g->dw;
    if (c.kwp)
      bo[k] = ch * chs + (r % g->KW * g->sh + ry % g->sh) * plane + ry / g->sh * c.Wq;
    else
      bo[k] = ch * chs + ((rz % g->sd * g->sh + ry % g->sh) * g->sw + rx % g->sw) * vol +
              rz / g->sd * plane + ry / g->sh * c.Wq + rx / g->sw;
  }
  c.xp = xp;
  c.bo = bo;
  int64_t T = kcpu_pool_threads(pool);
  void (*pad)(void *, int64_t, int64_t) = c.kwp ? kcpu_dconv_kwpad_fn : kcpu_dconv_pad_fn;
  int64_t units = c.Cg * (c.kwp ? g->KW : nph); /* a phase plane (volume), or sh tap planes */
  if (T > 1 && c.Cg * chs >= 16384)
    kcpu_parallel_for(pool, units, pad, &c);
  else
    pad(&c, 0, units);
  c.tm = 1;
  c.tn = 1;
  /* The tiles read the planes in place, where the grid's price for
   * packing B stands for how much of them each thread reads. A single
   * row's planes are small enough to stay in L2 either way, so there only
   * the FMAs count: the TCN layer above split its 11 panels 5 + 6 over two
   * threads, 66 us, where its 64 filter rows split 32 + 32 take 59. (Video
   * models' grids priced so: R3D-18 and MC3-18 1% slower.) */
  if (T > 1 && d->M * c.NQ * d->K >= 65536)
    kcpu_gemm_grid(d->M, c.np * KD_NR, KD_MR, KD_NR, 16, KCPU_A_PREPACKED, one_row, T, &c.tm,
                   &c.tn);
  if (c.tm * c.tn > 1)
    kcpu_parallel_for(pool, c.tm * c.tn, kcpu_dconv_tile_fn, &c);
  else
    kcpu_dconv_tile_fn(&c, 0, 1);
  kcpu_free(xp);
  kcpu_free(bo);
  return 1;
}
