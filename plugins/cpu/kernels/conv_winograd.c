/* plugins/cpu/kernels/conv_winograd.c: 3x3 stride-1 dense convolution (f32,
 * NCHW, one group) by Winograd's minimal filtering F(2x2, 3x3).
 *
 * A 2x2 output tile of one channel pair is A^T [(G g G^T) . (B^T d B)] A,
 * with d the tile's 4x4 input window and g the 3x3 filter: 16 products
 * where the direct form takes 36. Summed over input channels, each of the
 * 16 positions xi of the 4x4 transformed tile is an ordinary matrix
 * product, Mx[xi] (M x T) = U[xi] (M x C) . V[xi] (C x T) over the T tiles
 * of the image, so the multiply-adds go through the GEMM engine, 2.25x
 * fewer of them than the direct convolution's. U, the transformed filters,
 * is computed and packed once at compile time (emit_conv_winograd.c); V
 * and Mx are made per run:
 *
 *   1. input transform, per (image, channel): the plane is copied into a
 *      zero-bordered buffer, then 16 tiles of a tile row at a time are
 *      read as even and odd columns (two loads and a shuffle per row of
 *      the window) and transformed in registers; V[xi][c][t] is stored
 *      with t contiguous. Row ends store whole vectors: the lanes past a
 *      tile row land where the next row's tiles go, which are written
 *      after them, and past the last row in slack;
 *   2. the 16 products, one task each;
 *   3. output transform, per output channel, likewise 16 tiles at a time,
 *      interleaved back to output rows, with the bias, the residual and
 *      the activation in the documented order (bias, residual,
 *      activation).
 *
 * The transforms only add and subtract (B and A hold 0 and +-1; G's
 * halves are exact), so the error is that of a 16-term instead of a
 * 9-term sum per channel, within the conformance tolerance. The
 * summation order per output is fixed, whatever the thread count. */
#include "gemm_impl.h"
#include "kcpu_act.h"

typedef float kwg_v __attribute__((vector_size(64)));
typedef float kwg_vu __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t kwg_vi __attribute__((vector_size(64)));
#define KWG_L 16

/* Blocks of tiles: V and Mx of one block take at most this many bytes,
 * and a block has at least this many tiles unless the image has fewer.
 * The tests compile with small values so that blocks (and blocks that
 * start and end inside a tile row) occur at sizes they can check. */
#ifndef KCPU_WINO_BLOCK_BYTES
#define KCPU_WINO_BLOCK_BYTES (8 << 20)
#endif
#ifndef KCPU_WINO_MIN_TILES
#define KCPU_WINO_MIN_TILES 192
#endif

typedef struct kcpu_wino {
  const float *X, *Upk, *bias, *res;
  float *Y, *V, *Mx, *P; /* P: one padded plane per input-transform task */
  int64_t nin;           /* input-transform tasks, each a run of channels */
  int64_t C, H, W, M, OH, OW, pt, pl, act, lanes;
  int64_t trans; /* the products transposed: Mx[xi] is tiles x M (see kcpu_k_conv2d_wino) */
  float act_a, act_b;
  int64_t TH, TW, ldV, Hq, Wq; /* tiles; V / Mx row stride; padded rows */
  int64_t t0, t1;              /* the block of tiles (row-major) in V and Mx now */
} kcpu_wino;

#define KWG_EVEN 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define KWG_ODD 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31
#define KWG_LO 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
#define KWG_HI 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31

/* B^T d for one row r of the window, 16 tiles: columns 2t .. 2t+3 of the
 * padded row; then the same combination down the rows gives B^T d B. */
#define KWG_ROW(r)                                                                                 \
  do {                                                                                             \
    const float *p_ = row + (r)*a->Wq;                                                             \
    kwg_v l0_ = *(const kwg_vu *)p_, l1_ = *(const kwg_vu *)(p_ + KWG_L);                          \
    kwg_v l2_ = *(const kwg_vu *)(p_ + 2), l3_ = *(const kwg_vu *)(p_ + 2 + KWG_L);                \
    kwg_v d0_ = __builtin_shufflevector(l0_, l1_, KWG_EVEN);                                       \
    kwg_v d1_ = __builtin_shufflevector(l0_, l1_, KWG_ODD);                                        \
    kwg_v d2_ = __builtin_shufflevector(l2_, l3_, KWG_EVEN);                                       \
    kwg_v d3_ = __builtin_shufflevector(l2_, l3_, KWG_ODD);                                        \
    w##r##0 = d0_ - d2_;                                                                           \
    w##r##1 = d1_ + d2_;                                                                           \
    w##r##2 = d2_ - d1_;                                                                           \
    w##r##3 = d1_ - d3_;                                                                           \
  } while (0)

#define KWG_STORE(xi, v) (*(kwg_vu *)(vb + (xi)*a->C * a->ldV) = (v))
#define KWG_COL(j)                                                                                 \
  do {                                                                                             \
    KWG_STORE(0 + (j), w0##j - w2##j);                                                             \
    KWG_STORE(4 + (j), w1##j + w2##j);                                                             \
    KWG_STORE(8 + (j), w2##j - w1##j);                                                             \
    KWG_STORE(12 + (j), w1##j - w3##j);                                                            \
  } while (0)

/* Task k: input channels [k*C/nin, (k+1)*C/nin) of the image, tiles
 * [t0, t1), in plane buffer k: the padded rows those tiles read. */
static void kcpu_wino_in_task(const kcpu_wino *a, int64_t k) {
  float *P = a->P + k * a->Hq * a->Wq;
  int64_t tha = a->t0 / a->TW, thb = (a->t1 - 1) / a->TW;
  int64_t rows = 2 * (thb - tha) + 4; /* padded rows 2*tha .. 2*thb + 3 */
  /* the input rows and columns that land in the buffer; the rest of it is
   * border */
  int64_t r0 = 2 * tha - a->pt, r1 = r0 + rows;
  r0 = r0 < 0 ? 0 : r0;
  r1 = r1 > a->H ? a->H : r1;
  int64_t q1 = a->W < a->Wq - a->pl ? a->W : a->Wq - a->pl;
  for (int64_t c = k * a->C / a->nin; c < (k + 1) * a->C / a->nin; c++) {
    const float *x = a->X + c * a->H * a->W;
    for (int64_t i = 0; i < rows * a->Wq; i++)
      P[i] = 0.0f;
    for (int64_t r = r0; r < r1; r++) {
      float *dst = P + (r + a->pt - 2 * tha) * a->Wq + a->pl;
      const float *src = x + r * a->W;
      for (int64_t q = 0; q < q1; q++)
        dst[q] = src[q];
    }
    for (int64_t th = tha; th <= thb; th++) {
      int64_t lo = th == tha ? a->t0 - th * a->TW : 0;
      int64_t hi = th == thb ? a->t1 - th * a->TW : a->TW;
      for (int64_t tw = lo; tw < hi; tw += KWG_L) {
        const float *row = P + 2 * (th - tha) * a->Wq + 2 * tw;
        float *vb = a->V + c * a->ldV + th * a->TW + tw - a->t0;
        kwg_v w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23, w30, w31, w32, w33;
        KWG_ROW(0);
        KWG_ROW(1);
        KWG_ROW(2);
        KWG_ROW(3);
        KWG_COL(0);
        KWG_COL(1);
        KWG_COL(2);
        KWG_COL(3);
      }
    }
  }
}

static void kcpu_wino_in_fn(void *ctx, int64_t b, int64_t e) {
  for (int64_t k = b; k < e; k++)
    kcpu_wino_in_task(ctx, k);
}

/* Tasks [b, e): the 16 positions' products. */
static void kcpu_wino_gemm_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_wino *a = ctx;
  if (a->trans) {
    int64_t one = kcpu_prepacked_size(a->M, a->C, kcpu_gemm_nr(a->lanes)), n = a->t1 - a->t0;
    for (int64_t xi = b; xi < e; xi++) {
      kcpu_gemm_desc d = {.M = n,
                          .N = a->M,
                          .K = a->C,
                          .alpha = 1.0f,
                          .A = a->V + xi * a->C * a->ldV,
                          .lda = a->ldV,
                          .trans_a = 1,
                          .Bpk = a->Upk + xi * one,
                          .C = a->Mx + xi * a->M * a->ldV,
                          .ldc = a->M,
                          .lanes = a->lanes};
      kcpu_gemm_run(&d, NULL);
      /* a last block of 16 channels reads past the last tile's row */
      for (int64_t i = n * a->M; i < n * a->M + KWG_L; i++)
        d.C[i] = 0.0f;
    }
    return;
  }
  int64_t one = kcpu_prepacked_size(a->M, a->C, kcpu_gemm_mr(a->lanes));
  for (int64_t xi = b; xi < e; xi++) {
    kcpu_gemm_desc d = {.M = a->M,
                        .N = a->t1 - a->t0,
                        .K = a->C,
                        .alpha = 1.0f,
                        .lda = a->C,
                        .Apk = a->Upk + xi * one,
                        .B = a->V + xi * a->C * a->ldV,
                        .ldb = a->ldV,
                        .C = a->Mx + xi * a->M * a->ldV,
                        .ldc = a->ldV,
                        .lanes = a->lanes};
    kcpu_gemm_run(&d, NULL);
    /* the output transform reads whole vectors: past the block's last
     * tile it reads these, and drops them */
    for (int64_t m = 0; m < a->M; m++)
      for (int64_t t = d.N; t < d.N + KWG_L; t++)
        d.C[m * a->ldV + t] = 0.0f;
  }
}

#define KWG_LD(xi) (*(const kwg_vu *)(mb + (xi)*a->M * a->ldV))
/* A^T m for column j of the transformed tile: rows 0 and 1 of the result */
#define KWG_OROW(j)                                                                                \
  kwg_v s0##j = KWG_LD(j) + KWG_LD(4 + (j)) + KWG_LD(8 + (j));                                     \
  kwg_v s1##j = KWG_LD(4 + (j)) - KWG_LD(8 + (j)) - KWG_LD(12 + (j))

/* Output row oh, columns 2*tw .. 2*tw + 2*nt - 1 (nt <= 16 tiles) from the
 * tiles' left and right columns; fewer at the row's end. */
static inline void kcpu_wino_put(const kcpu_wino *a, float *y, int64_t oh, int64_t tw, int64_t nt,
                                 const kwg_v *left, const kwg_v *right) {
  if (oh >= a->OH)
    return;
  kwg_v lo = __builtin_shufflevector(*left, *right, KWG_LO);
  kwg_v hi = __builtin_shufflevector(*left, *right, KWG_HI);
  float *dst = y + oh * a->OW + 2 * tw;
  int64_t n = a->OW - 2 * tw < 2 * nt ? a->OW - 2 * tw : 2 * nt;
  if (n >= 2 * KWG_L) {
    *(kwg_vu *)dst = lo;
    *(kwg_vu *)(dst + KWG_L) = hi;
    return;
  }
  float tmp[2 * KWG_L];
  __builtin_memcpy(tmp, &lo, sizeof lo);
  __builtin_memcpy(tmp + KWG_L, &hi, sizeof hi);
  for (int64_t i = 0; i < n; i++)
    dst[i] = tmp[i];
}

/* Once the plane's last block is out: the residual and the activations
 * that need a math function, over output plane m (in cache). */
static void kcpu_wino_plane_post(const kcpu_wino *a, int64_t m) {
  int64_t OHW = a->OH * a->OW;
  float *y = a->Y + m * OHW;
  if (a->res) {
    const float *r = a->res + m * OHW;
    for (int64_t p = 0; p < OHW; p++)
      y[p] = kcpu_act1(a->act, a->act_a, a->act_b, y[p] + r[p]);
  }
  if (a->act == KCPU_ACT_SWISH) {
    kcpu_act_swish_row(a->act_a, y, OHW);
  } else if (a->act == KCPU_ACT_GELU) {
    for (int64_t p = 0; p < OHW; p++)
      y[p] = kcpu_m_gelu(y[p]);
  }
}

/* Tasks [b, e): output channels of the image, tiles [t0, t1). */
static void kcpu_wino_out_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_wino *a = ctx;
  int64_t OHW = a->OH * a->OW, tha = a->t0 / a->TW, thb = (a->t1 - 1) / a->TW;
  /* with a residual, it and the activation come over the finished plane */
  int64_t vact = a->res ? KCPU_ACT_NONE : a->act;
  kwg_v z = {0};
  for (int64_t m = b; m < e; m++) {
    float *y = a->Y + m * OHW;
    kwg_v bv = z + (a->bias ? a->bias[m] : 0.0f);
    for (int64_t th = tha; th <= thb; th++) {
      int64_t lo = th == tha ? a->t0 - th * a->TW : 0;
      int64_t hi = th == thb ? a->t1 - th * a->TW : a->TW;
      for (int64_t tw = lo; tw < hi; tw += KWG_L) {
        const float *mb = a->Mx + m * a->ldV + th * a->TW + tw - a->t0;
        int64_t nt = hi - tw < KWG_L ? hi - tw : KWG_L;
        KWG_OROW(0);
        KWG_OROW(1);
        KWG_OROW(2);
        KWG_OROW(3);
        kwg_v y00 = s00 + s01 + s02 + bv, y01 = s01 - s02 - s03 + bv;
        kwg_v y10 = s10 + s11 + s12 + bv, y11 = s11 - s12 - s13 + bv;
        kwg_v *ys[4] = {&y00, &y01, &y10, &y11};
        for (int i = 0; i < 4; i++) {
          kwg_v v = *ys[i];
          if (vact == KCPU_ACT_RELU) /* keep what is not below 0 (NaN and -0 included) */
            v = (kwg_v)((kwg_vi)v & ~(kwg_vi)(v < z));
          KCPU_ACT_VEC_HARD(kwg_v, kwg_vi, v, vact, a->act_a, a->act_b);
          *ys[i] = v;
        }
        kcpu_wino_put(a, y, 2 * th, tw, nt, &y00, &y01);
        kcpu_wino_put(a, y, 2 * th + 1, tw, nt, &y10, &y11);
      }
    }
    if (a->t1 == a->TH * a->TW)
      kcpu_wino_plane_post(a, m);
  }
}

/* The transposed products' output transform. Tasks [b, e): blocks of 16
 * output channels, tiles [t0, t1): for each tile its 16 positions are
 * vectors over the channels, and the 2x2 outputs go to 16 planes. */
static void kcpu_wino_outT_fn(void *ctx, int64_t b, int64_t e) {
  const kcpu_wino *a = ctx;
  int64_t OHW = a->OH * a->OW, vact = a->res ? KCPU_ACT_NONE : a->act;
  kwg_v z = {0};
  for (int64_t cb = b; cb < e; cb++) {
    int64_t m0 = cb * KWG_L, nm = a->M - m0 < KWG_L ? a->M - m0 : KWG_L;
    float bf[KWG_L] = {0};
    for (int64_t l = 0; l < nm && a->bias; l++)
      bf[l] = a->bias[m0 + l];
    kwg_v bv;
    __builtin_memcpy(&bv, bf, sizeof bv);
    for (int64_t t = a->t0; t < a->t1; t++) {
      const float *mb = a->Mx + (t - a->t0) * a->M + m0;
      KWG_OROW(0);
      KWG_OROW(1);
      KWG_OROW(2);
      KWG_OROW(3);
      kwg_v yv[4] = {s00 + s01 + s02 + bv, s01 - s02 - s03 + bv, s10 + s11 + s12 + bv,
                     s11 - s12 - s13 + bv};
      int64_t oh = 2 * (t / a->TW), ow = 2 * (t % a->TW);
      for (int i = 0; i < 4; i++) {
        kwg_v v = yv[i];
        if (vact == KCPU_ACT_RELU) /* keep what is not below 0 (NaN and -0 included) */
          v = (kwg_v)((kwg_vi)v & ~(kwg_vi)(v < z));
        KCPU_ACT_VEC_HARD(kwg_v, kwg_vi, v, vact, a->act_a, a->act_b);
        int64_t h = oh + i / 2, w = ow + i % 2;
        if (h >= a->OH || w >= a->OW)
          continue;
        float o[KWG_L];
        __builtin_memcpy(o, &v, sizeof o);
        float *y = a->Y + m0 * OHW + h * a->OW + w;
        for (int64_t l = 0; l < nm; l++)
          y[l * OHW] = o[l];
      }
    }
    for (int64_t m = m0; m < m0 + nm && a->t1 == a->TH * a->TW; m++)
      kcpu_wino_plane_post(a, m);
  }
}

/* Upk: the transformed filters, 16 matrices M x C one after the other,
 * position xi = 4i + j of G g G^T, packed as the GEMM's A (unit
 * kcpu_gemm_mr(lanes)), or with trans as its B (unit kcpu_gemm_nr(lanes)).
 * trans turns the products around, Mx[xi]^T (tiles x M) = V[xi]^T U[xi]^T,
 * for images of few tiles: the GEMM's columns are then the channels
 * instead of the tiles, and 16 or 49 tiles do not leave most of a
 * 48-column panel empty (the compiler chooses, emit_conv_winograd.c). Without memory for its
 * buffers it does nothing, as the GEMM engine. */
KCPU_PREBUILT void kcpu_k_conv2d_wino(const float *X, const float *Upk, const float *bias,
                                      const float *res, float *Y, int64_t N, int64_t C, int64_t H,
                                      int64_t W, int64_t M, int64_t OH, int64_t OW, int64_t pt,
                                      int64_t pl, int64_t act, float act_a, float act_b,
                                      int64_t trans, int64_t lanes, struct kcpu_pool *pool) {
  if (N <= 0 || M <= 0 || OH <= 0 || OW <= 0)
    return;
  kcpu_wino a = {.Upk = Upk,
                 .bias = bias,
                 .C = C,
                 .H = H,
                 .W = W,
                 .M = M,
                 .OH = OH,
                 .OW = OW,
                 .pt = pt,
                 .pl = pl,
                 .act = act,
                 .trans = trans,
                 .lanes = lanes,
                 .act_a = act_a,
                 .act_b = act_b};
  a.TH = (OH + 1) / 2;
  a.TW = (OW + 1) / 2;
  int64_t T = a.TH * a.TW;
  /* Tiles in blocks whose V and Mx (16 * (C + M) floats a tile) take at
   * most 8 MB, in multiples of 48 (the GEMM's column panel), evened out
   * over the blocks. Blocks only bound the memory: smaller ones, sized
   * for L2, were slower (the products' N shrinks), not faster. */
  int64_t Tb = KCPU_WINO_BLOCK_BYTES / (64 * (C + M)) / 48 * 48;
  Tb = Tb < KCPU_WINO_MIN_TILES ? KCPU_WINO_MIN_TILES : Tb;
  int64_t nb = (T + Tb - 1) / Tb;
  Tb = (T + nb - 1) / nb;
  a.ldV = (Tb + KWG_L + 15) / 16 * 16; /* slack for the last row's whole vectors */
  int64_t TWp = (a.TW + KWG_L - 1) / KWG_L * KWG_L;
  /* the padded rows of one block: 2 per tile row and 2 more */
  a.Hq = 2 * ((Tb + a.TW - 1) / a.TW + 1) + 2;
  a.Wq = 2 * TWp + KWG_L + 2; /* the last vector group reads 2 * TWp + 1 + KWG_L */
  int64_t threads = kcpu_pool_threads(pool);
  a.nin = C < threads ? C : threads;
  float *V = kcpu_alloc((16 * (C + M) * a.ldV + a.nin * a.Hq * a.Wq) * (int64_t)sizeof(float));
  if (!V)
    return;
  a.V = V;
  a.Mx = V + 16 * C * a.ldV;
  a.P = a.Mx + 16 * M * a.ldV;
  for (int64_t n = 0; n < N; n++) {
    a.X = X + n * C * H * W;
    a.Y = Y + n * M * OH * OW;
    a.res = res ? res + n * M * OH * OW : NULL;
    for (a.t0 = 0; a.t0 < T; a.t0 = a.t1) {
      a.t1 = a.t0 + Tb < T ? a.t0 + Tb : T;
      kcpu_parallel_for(pool, a.nin, kcpu_wino_in_fn, &a);
      kcpu_parallel_for(pool, 16, kcpu_wino_gemm_fn, &a);
      if (trans)
        kcpu_parallel_for(pool, (M + KWG_L - 1) / KWG_L, kcpu_wino_outT_fn, &a);
      else
        kcpu_parallel_for(pool, M, kcpu_wino_out_fn, &a);
    }
  }
  kcpu_free(V);
}
