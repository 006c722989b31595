/* plugins/cpu/kernels/conv_blocked_wino.c: 3x3 stride-1 dense convolution
 * (f32, one group) on the channel-blocked layout (conv_blocked.h) by
 * Winograd's minimal filtering F(2x2, 3x3) or F(4x4, 3x3); F(2x2, 3x3) is
 * the blocked twin of conv_winograd.c.
 *
 * An m x m output tile of one channel pair is A^T [(G g G^T) . (B^T d B)] A
 * (d: the tile's (m+2) x (m+2) input window, g: the 3x3 filter): 16
 * products where the direct form takes 36 (m = 2), or 36 where it takes
 * 144 (m = 4). Summed over input channels, each position xi of the
 * transformed tile is a matrix product over the tiles,
 * Mx[xi] (tiles x M) = V[xi] (tiles x C) . U[xi] (C x M): a 1x1
 * convolution whose "pixels" are the tiles, which conv_blocked.c's
 * register-blocked kernel computes (kcpu_convb_products). In the blocked
 * layout a vector holds 16 channels of one pixel, so the transforms are
 * the algorithm's scalar formulas written on vectors: no shuffles, one
 * load or store per pixel and block.
 *
 * U, the transformed filters, is made and packed once at compile time
 * (emit_conv_winograd.c), one 1x1 filter set per position. The tiles go
 * in blocks whose V and Mx stay in cache, a block in pieces of
 * consecutive tiles, each piece with its own V and Mx; per block, three
 * parallel phases:
 *   1. input transform, per (piece, input block): V[xi][cb][t];
 *      window pixels outside the image read as zero (the pads, and the
 *      bottom and right tiles that overhang the output);
 *   2. the (m+2)^2 products, per (piece, position, group of output
 *      blocks);
 *   3. output transform, per (piece, output block), with the bias, the
 *      residual and the activation in the documented order; the
 *      overhanging outputs are not stored, lanes past M are written 0.
 * The pieces are the outermost index of every phase and, where V and Mx
 * outweigh U, come in a multiple of the thread count, so that the thread
 * pool's shares give each thread the same pieces in all three: V and Mx
 * are written and read by one thread, and a thread's tiles are a band of
 * image rows, as are the direct kernel's bands in the layer before.
 * Where two threads sit on different dies (a 2-vCPU VM placed across an
 * EPYC's), each line one writes and the other reads costs a cross-die
 * transfer: with the phases split by channel blocks and positions
 * instead, a 64-channel 56x56 layer ran 2.5x slower in that placement.
 *
 * F(2x2, 3x3)'s transforms only add and subtract (B and A hold 0 and +-1,
 * G's halves are exact): the error is that of a 16-term instead of a
 * 9-term sum per channel. F(4x4, 3x3)'s hold halves to 8 (B, A) and
 * thirds and fifteenths (G, rounded once at compile time): its error is
 * some times larger, still a few ulps of the terms' magnitudes for 3x3
 * filters (the kernel tests bound both). The summation order of every
 * output is fixed whatever the thread count and the block of tiles it
 * falls in. */
#include "conv_blocked.h"
#include "kcpu_act.h"

typedef float kbw_v __attribute__((vector_size(64)));
typedef float kbw_vu __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t kbw_vi __attribute__((vector_size(64)));
typedef int32_t kbw_viu __attribute__((vector_size(64), aligned(4), may_alias));

#ifdef __clang__
#define KBW_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define KBW_UNROLL _Pragma("GCC unroll 16")
#else
#define KBW_UNROLL
#endif

/* Blocks of tiles: V and Mx of one block take at most this many bytes,
 * and a block has at least this many tiles unless the image has fewer
 * (the same knobs as conv_winograd.c's; the tests build with small ones). */
#ifndef KCPU_WINO_BLOCK_BYTES
#define KCPU_WINO_BLOCK_BYTES (8 << 20)
#endif
#ifndef KCPU_WINO_MIN_TILES
#define KCPU_WINO_MIN_TILES 192
#endif
#define KBW_RUN 64 /* tiles per piece, at most */
#define KBW_MIN_PIECE 8 /* tiles per piece, at least, where pieces are added for the threads */

typedef struct kbw {
  const float *X, *U, *bias, *res, *zeros;
  float *Y, *V, *Mx;
  int64_t C, Cb, H, W, M, Mb, OH, OW, pt, pl, TW;
  int64_t m, np;          /* output tile size (2 or 4); positions (m + 2)^2 */
  int64_t t0, nt;         /* the block of tiles (row-major) in V and Mx now */
  int64_t pieces;         /* pieces of the block */
  int64_t nbands, ng;     /* products: bands of a piece's tiles, groups of output blocks */
  int64_t act;
  float act_a, act_b;
  int32_t keep[2][KCPU_CB]; /* lane masks: all lanes, and the last block's below M */
} kbw;

/* F(4x4, 3x3)'s B^T on six vectors (a column or a row of the window), for
 * the points 0, 1, -1, 1/2, -2 (and infinity): B^T = [1 -3/2 -2 3/2 1 0;
 * 0 -1 1/2 5/2 1 0; 0 1 -5/2 1/2 1 0; 0 -2 -1 2 1 0; 0 1/2 -1 -1/2 1 0;
 * 0 1 -3/2 -2 3/2 1]. Half the rounding error of the points 0, +-1, +-2
 * (sums of magnitudes up to 8 in A^T and 5 in B^T there). */
#define KBW_BT6(o, d)                                                                              \
  do {                                                                                             \
    o[0] = d[0] + d[4] + (d[3] - d[1]) * 1.5f - d[2] * 2.0f;                                       \
    o[1] = d[4] - d[1] + d[2] * 0.5f + d[3] * 2.5f;                                                \
    o[2] = d[4] + d[1] - d[2] * 2.5f + d[3] * 0.5f;                                                \
    o[3] = d[4] - d[2] + (d[3] - d[1]) * 2.0f;                                                     \
    o[4] = d[4] - d[2] + (d[1] - d[3]) * 0.5f;                                                     \
    o[5] = d[5] + d[1] + (d[4] - d[2]) * 1.5f - d[3] * 2.0f;                                       \
  } while (0)

/* The n x n input window of a tile (rows r0.., columns c0.. of plane x)
 * into d, row-major; pixels outside the image read as zero. */
static inline __attribute__((always_inline)) void
kbw_window(const kbw *a, const float *x, int64_t r0, int64_t c0, const int n, kbw_v *d) {
  const kbw_v z = {0};
  if (r0 >= 0 && r0 + n <= a->H && c0 >= 0 && c0 + n <= a->W) {
    const float *p = x + (r0 * a->W + c0) * KCPU_CB;
    KBW_UNROLL for (int r = 0; r < n; r++) KBW_UNROLL for (int c = 0; c < n; c++) d[r * n + c] =
        *(const kbw_vu *)(p + (r * a->W + c) * KCPU_CB);
    return;
  }
  for (int r = 0; r < n; r++)
    for (int c = 0; c < n; c++) {
      int64_t ih = r0 + r, iw = c0 + c;
      d[r * n + c] = z;
      if (ih >= 0 && ih < a->H && iw >= 0 && iw < a->W)
        d[r * n + c] = *(const kbw_vu *)(x + (ih * a->W + iw) * KCPU_CB);
    }
}

/* F(4x4, 3x3)'s input transform of one tile: window rows r0.., columns
 * c0.. of plane x, the 36 positions stored at o + xi * vs. */
static void kbw_in_tile4(const kbw *a, const float *x, int64_t r0, int64_t c0, float *o,
                         int64_t vs) {
  kbw_v d[6][6], w[6][6];
  kbw_window(a, x, r0, c0, 6, &d[0][0]);
  KBW_UNROLL for (int r = 0; r < 6; r++) KBW_BT6(w[r], d[r]); /* along each row */
  KBW_UNROLL for (int j = 0; j < 6; j++) {                    /* down each column */
    kbw_v col[6], out[6];
    KBW_UNROLL for (int r = 0; r < 6; r++) col[r] = w[r][j];
    KBW_BT6(out, col);
    KBW_UNROLL for (int i = 0; i < 6; i++) * (kbw_vu *)(o + (6 * i + j) * vs) = out[i];
  }
}

/* Piece pc of the block: tiles [*ta, *tb) and its V and Mx (V[xi][cb][t]
 * and Mx[xi][mb][t] over the piece's tb - ta tiles). */
static inline void kbw_piece(const kbw *a, int64_t pc, int64_t *ta, int64_t *tb, float **v,
                             float **mx) {
  *ta = a->nt * pc / a->pieces;
  *tb = a->nt * (pc + 1) / a->pieces;
  *v = a->V + *ta * a->np * a->Cb * KCPU_CB;
  *mx = a->Mx + *ta * a->np * a->Mb * KCPU_CB;
}

/* Phase 1: task i is input block i % Cb of piece i / Cb. */
static void kbw_in_task(void *ctx, int64_t b, int64_t e) {
  const kbw *a = ctx;
  for (int64_t i = b; i < e; i++) {
    int64_t cb = i % a->Cb, ta, tb;
    float *v, *mx;
    kbw_piece(a, i / a->Cb, &ta, &tb, &v, &mx);
    int64_t vs = a->Cb * (tb - ta) * KCPU_CB; /* floats between positions */
    const float *x = a->X + cb * a->H * a->W * KCPU_CB;
    v += cb * (tb - ta) * KCPU_CB;
    for (int64_t t = ta; t < tb; t++) {
      int64_t tg = a->t0 + t, th = tg / a->TW, tw = tg % a->TW;
      int64_t r0 = a->m * th - a->pt, c0 = a->m * tw - a->pl;
      if (a->m == 4) {
        kbw_in_tile4(a, x, r0, c0, v + (t - ta) * KCPU_CB, vs);
        continue;
      }
      kbw_v d[4][4];
      kbw_window(a, x, r0, c0, 4, &d[0][0]);
      /* B^T d B, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: along the
       * rows of the window, then down its columns */
      kbw_v w[4][4];
      KBW_UNROLL for (int r = 0; r < 4; r++) {
        w[r][0] = d[r][0] - d[r][2];
        w[r][1] = d[r][1] + d[r][2];
        w[r][2] = d[r][2] - d[r][1];
        w[r][3] = d[r][1] - d[r][3];
      }
      float *o = v + (t - ta) * KCPU_CB;
      KBW_UNROLL for (int j = 0; j < 4; j++) {
        *(kbw_vu *)(o + (0 + j) * vs) = w[0][j] - w[2][j];
        *(kbw_vu *)(o + (4 + j) * vs) = w[1][j] + w[2][j];
        *(kbw_vu *)(o + (8 + j) * vs) = w[2][j] - w[1][j];
        *(kbw_vu *)(o + (12 + j) * vs) = w[1][j] - w[3][j];
      }
    }
  }
}

/* Phase 2: task i is products task i % pt (band and group) of position
 * i / pt % np of piece i / (np * pt), pt = nbands * ng. */
static void kbw_prod_task(void *ctx, int64_t b, int64_t e) {
  const kbw *a = ctx;
  int64_t pt = a->nbands * a->ng;
  for (int64_t i = b; i < e; i++) {
    int64_t s = i % pt, xi = i / pt % a->np, ta, tb;
    float *v, *mx;
    kbw_piece(a, i / (pt * a->np), &ta, &tb, &v, &mx);
    int64_t n = tb - ta;
    kcpu_convb_products(v + xi * a->Cb * n * KCPU_CB, a->U + xi * a->Mb * a->C * KCPU_CB, a->zeros,
                        mx + xi * a->Mb * n * KCPU_CB, a->C, a->M, n, a->nbands, s, s + 1);
  }
}

/* The activation of one finished output vector *vp (kcpu_act1's
 * semantics; Relu as the blocked direct kernel's: NaN and -0 give 0),
 * lanes past M cleared by keep. */
static inline __attribute__((always_inline)) void kbw_act(const kbw *a, kbw_v *vp,
                                                          const int32_t *keep) {
  const kbw_v z = {0};
  kbw_v v = *vp;
  switch (a->act) {
  case KCPU_ACT_NONE:
    break;
  case KCPU_ACT_RELU:
    v = (kbw_v)((kbw_vi)v & (kbw_vi)(v > z));
    break;
  case KCPU_ACT_CLIP:
    KCPU_ACT_VEC_HARD(kbw_v, kbw_vi, v, KCPU_ACT_CLIP, a->act_a, a->act_b);
    break;
  case KCPU_ACT_HARD_SIGMOID:
    KCPU_ACT_VEC_HARD(kbw_v, kbw_vi, v, KCPU_ACT_HARD_SIGMOID, a->act_a, a->act_b);
    break;
  case KCPU_ACT_HARD_SWISH:
    KCPU_ACT_VEC_HARD(kbw_v, kbw_vi, v, KCPU_ACT_HARD_SWISH, a->act_a, a->act_b);
    break;
  case KCPU_ACT_SWISH: {
    float t[KCPU_CB];
    *(kbw_vu *)t = v;
    kcpu_act_swish_row(a->act_a, t, KCPU_CB);
    v = *(kbw_vu *)t;
    break;
  }
  case KCPU_ACT_GELU: {
    float t[KCPU_CB];
    *(kbw_vu *)t = v;
    for (int l = 0; l < KCPU_CB; l++)
      t[l] = kcpu_m_gelu(t[l]);
    v = *(kbw_vu *)t;
    break;
  }
  default:
    break;
  }
  *vp = (kbw_v)((kbw_vi)v & *(const kbw_viu *)keep);
}

/* The m output pixels y of a tile row from column ow0 of the output row
 * at Y + yo: bias, residual (read before written: it may be Y itself),
 * activation; the columns past OW (tiles that overhang) are not stored. */
static inline __attribute__((always_inline)) void kbw_store(const kbw *a, const kbw_v *y,
                                                            const int m, int64_t yo, int64_t ow0,
                                                            const float *bias,
                                                            const int32_t *keep) {
  kbw_v bv = *(const kbw_vu *)bias;
  for (int c = 0; c < m && ow0 + c < a->OW; c++) {
    int64_t o = yo + (ow0 + c) * KCPU_CB;
    kbw_v v = y[c] + bv;
    if (a->res)
      v += *(const kbw_vu *)(a->res + o);
    kbw_act(a, &v, keep);
    *(kbw_vu *)(a->Y + o) = v;
  }
}

/* F(4x4, 3x3)'s A^T on six vectors, A^T = [1 1 1 1 1 0; 0 1 -1 1/2 -2 0;
 * 0 1 1 1/4 4 0; 0 1 -1 1/8 -8 1] (points as KBW_BT6). */
#define KBW_AT6(o, d)                                                                              \
  do {                                                                                             \
    kbw_v s12_ = d[1] + d[2], d12_ = d[1] - d[2];                                                  \
    o[0] = d[0] + s12_ + (d[3] + d[4]);                                                            \
    o[1] = d12_ + d[3] * 0.5f - d[4] * 2.0f;                                                       \
    o[2] = s12_ + d[3] * 0.25f + d[4] * 4.0f;                                                      \
    o[3] = d12_ + d[3] * 0.125f - d[4] * 8.0f + d[5];                                              \
  } while (0)

/* F(4x4, 3x3)'s output transform of tile (th, tw) of output block mb (yo:
 * the block's offset in Y), positions at p + xi * ms. */
static void kbw_out_tile4(const kbw *a, const float *p, int64_t ms, const float *bias,
                          const int32_t *keep, int64_t yo, int64_t th, int64_t tw) {
  kbw_v s[4][6];
  KBW_UNROLL for (int j = 0; j < 6; j++) { /* down each column */
    kbw_v col[6];
    KBW_UNROLL for (int i = 0; i < 6; i++) col[i] = *(const kbw_vu *)(p + (6 * i + j) * ms);
    kbw_v out[4];
    KBW_AT6(out, col);
    KBW_UNROLL for (int r = 0; r < 4; r++) s[r][j] = out[r];
  }
  for (int r = 0; r < 4; r++) { /* along each row */
    int64_t oh = 4 * th + r;
    if (oh >= a->OH)
      break;
    kbw_v y[4];
    KBW_AT6(y, s[r]);
    kbw_store(a, y, 4, yo + oh * a->OW * KCPU_CB, 4 * tw, bias, keep);
  }
}

/* Phase 3: task i is output block i % Mb of piece i / Mb. */
static void kbw_out_task(void *ctx, int64_t b, int64_t e) {
  const kbw *a = ctx;
  for (int64_t i = b; i < e; i++) {
    int64_t mb = i % a->Mb, ta, tb;
    float *v, *mx;
    kbw_piece(a, i / a->Mb, &ta, &tb, &v, &mx);
    int64_t ms = a->Mb * (tb - ta) * KCPU_CB; /* floats between positions */
    const int32_t *keep = a->keep[mb == a->Mb - 1];
    mx += mb * (tb - ta) * KCPU_CB;
    int64_t yo = mb * a->OH * a->OW * KCPU_CB;
    for (int64_t t = ta; t < tb; t++) {
      int64_t tg = a->t0 + t, th = tg / a->TW, tw = tg % a->TW;
      const float *p = mx + (t - ta) * KCPU_CB;
      if (a->m == 4) {
        kbw_out_tile4(a, p, ms, a->bias + mb * KCPU_CB, keep, yo, th, tw);
        continue;
      }
      kbw_v m[16], s[2][4];
      KBW_UNROLL for (int xi = 0; xi < 16; xi++) m[xi] = *(const kbw_vu *)(p + xi * ms);
      /* A^T m A, A^T = [1 1 1 0; 0 1 -1 -1]: down the columns, then along
       * the rows */
      KBW_UNROLL for (int j = 0; j < 4; j++) {
        s[0][j] = m[j] + m[4 + j] + m[8 + j];
        s[1][j] = m[4 + j] - m[8 + j] - m[12 + j];
      }
      KBW_UNROLL for (int r = 0; r < 2; r++) {
        int64_t oh = 2 * th + r;
        if (oh >= a->OH)
          break;
        kbw_v y[2] = {s[r][0] + s[r][1] + s[r][2], s[r][1] - s[r][2] - s[r][3]};
        kbw_store(a, y, 2, yo + oh * a->OW * KCPU_CB, 2 * tw, a->bias + mb * KCPU_CB, keep);
      }
    }
  }
}

KCPU_PREBUILT void kcpu_k_conv2d_blocked_wino(const float *X, const float *Upk, const float *bias,
                                              const float *res, float *Y, int64_t N, int64_t C,
                                              int64_t H, int64_t W, int64_t M, int64_t OH,
                                              int64_t OW, int64_t pt, int64_t pl, int64_t tile,
                                              int64_t act, float act_a, float act_b,
                                              struct kcpu_pool *pool) {
  if (N <= 0 || OH <= 0 || OW <= 0 || M <= 0 || C <= 0 || (tile != 2 && tile != 4))
    return;
  int64_t Cb = (C + KCPU_CB - 1) / KCPU_CB, Mb = (M + KCPU_CB - 1) / KCPU_CB;
  int64_t np = (tile + 2) * (tile + 2);
  int64_t TH = (OH + tile - 1) / tile, TW = (OW + tile - 1) / tile, T = TH * TW;
  int64_t per = np * (Cb + Mb) * KCPU_CB * (int64_t)sizeof(float); /* bytes of V, Mx per tile */
  int64_t nb = KCPU_WINO_BLOCK_BYTES / per;
  nb = nb < KCPU_WINO_MIN_TILES ? KCPU_WINO_MIN_TILES : nb;
  nb = nb > T ? T : nb;
  /* scratch: bias (zero past M), zeros (the products' bias), V, Mx */
  char *scr =
      kcpu_alloc((2 * Mb * KCPU_CB + nb * per / (int64_t)sizeof(float)) * (int64_t)sizeof(float));
  if (!scr)
    return; /* out of memory: the output is left unwritten, like any failed allocation here */
  float *bias16 = (float *)scr, *zeros = bias16 + Mb * KCPU_CB, *V = zeros + Mb * KCPU_CB;
  for (int64_t m = 0; m < Mb * KCPU_CB; m++) {
    bias16[m] = bias && m < M ? bias[m] : 0.0f;
    zeros[m] = 0.0f;
  }
  kbw a = {.U = Upk,
           .bias = bias16,
           .zeros = zeros,
           .V = V,
           .Mx = V + np * Cb * nb * KCPU_CB,
           .C = C,
           .Cb = Cb,
           .H = H,
           .W = W,
           .M = M,
           .Mb = Mb,
           .OH = OH,
           .OW = OW,
           .pt = pt,
           .pl = pl,
           .TW = TW,
           .m = tile,
           .np = np,
           .act = act,
           .act_a = act_a,
           .act_b = act_b};
  for (int64_t l = 0; l < KCPU_CB; l++) {
    a.keep[0][l] = -1;
    a.keep[1][l] = l < M - (Mb - 1) * KCPU_CB ? -1 : 0;
  }
  a.ng = kcpu_convb_groups(Mb, Mb);
  int64_t threads = kcpu_pool_threads(pool);
  for (int64_t n = 0; n < N; n++) {
    a.X = X + n * Cb * H * W * KCPU_CB;
    a.Y = Y + n * Mb * OH * OW * KCPU_CB;
    a.res = res ? res + n * Mb * OH * OW * KCPU_CB : NULL;
    for (int64_t t0 = 0; t0 < T; t0 += nb) {
      a.t0 = t0;
      a.nt = T - t0 < nb ? T - t0 : nb;
      /* Pieces for the threads where V and Mx outweigh U, T threads
       * counted: each thread then reads all of U rather than its share of
       * the positions (T times the reads of U, from the shared cache or
       * memory) to keep (T - 1) / T of V and Mx from moving between
       * threads, each byte of which costs a few of a cached read in the
       * placement that needs this. A block of few tiles (deep layers: 512
       * channels on 7x7) would read U from memory once per thread for the
       * sake of a few kB of V. */
      a.pieces = 1;
      if (threads > 1 && 2 * a.nt * (C + M) > C * M * threads) {
        int64_t most = a.nt / KBW_MIN_PIECE;
        a.pieces = (a.nt + KBW_RUN - 1) / KBW_RUN;
        a.pieces = (a.pieces + threads - 1) / threads * threads;
        a.pieces = a.pieces > most ? (most > 1 ? most : 1) : a.pieces;
      }
      /* bands of about 96 tiles: a band's V stays in cache across the
       * groups of output blocks */
      a.nbands = (a.nt / a.pieces + 96) / 96;
      kcpu_parallel_for(pool, a.pieces * Cb, kbw_in_task, &a);
      kcpu_parallel_for(pool, a.pieces * a.np * a.nbands * a.ng, kbw_prod_task, &a);
      kcpu_parallel_for(pool, a.pieces * Mb, kbw_out_task, &a);
    }
  }
  kcpu_free(scr);
}
