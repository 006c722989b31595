/* plugins/cpu/kernels/attention.c: f32 scaled dot-product attention,
 * softmax(scale * Q Kᵀ + mask) V, for one ScaledDotProductAttention node.
 *
 * Work is split in tasks of (batch, head, block of KA_QB queries) over the
 * pool. A task's thread packs Kᵀ ([D][Sk'] rows) and V ([Sk][Dv'] rows) of
 * its (batch, head) once into its scratch (Sk', Dv' padded to 16 with
 * zeros), computes the block's scores in 4 x 64 register tiles, masks them
 * and takes a max-subtracted softmax in f32 per row (its exponential made
 * for arguments <= 0: ka_exp16), and accumulates P V in
 * 4 x 64 tiles straight into the output, divided by the row sums there.
 * Q, K, V, the mask and the output are read and written through element
 * strides, so the head split and merge of the graph need no copies.
 *
 * Each score and output element is summed in a fixed order, independent of
 * the thread count, so results are bit-identical for any number of
 * threads. */
#include "kcpu_runtime.h"
#include "kcpu_transpose.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

typedef float ka_v16 __attribute__((vector_size(64)));
typedef float ka_v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t ka_v16i __attribute__((vector_size(64)));

#define KA_QB 32 /* queries per task: a multiple of the 4-row tile */
#define KA_L 16  /* floats per vector */

typedef struct ka_args {
  const float *q, *k, *v;
  const void *mask;
  float *o;
  int64_t H, Sq, Sk, D, Dv, skp, dvp, nqb;
  const int64_t *st; /* q, k, v, o, mask: 4 strides each (B, H, S, D order) */
  float scale, fill;
  int64_t mask_kind; /* 0 none, 1 additive f32, 2 bool (true keeps) */
} ka_args;

/* The four rows of a tile are spelled out, like the GEMM's micro-kernel:
 * the library is built with -fno-unroll-loops, and a rolled row loop would
 * keep the accumulators in memory. */
#define KA_ROWS(X) X(0) X(1) X(2) X(3)

/* S[r][j0 .. j0 + 64 * nv) = sum_d q_r[d] kt[d][j], for nv 4 or 1 vectors. */
#define KA_S_DECL(r) ka_v16 s0_##r = {0}, s1_##r = {0}, s2_##r = {0}, s3_##r = {0};
#define KA_S_FMA4(r)                                                                               \
  {                                                                                                \
    float a_##r = q##r[d * qd];                                                                    \
    s0_##r += a_##r * b0;                                                                          \
    s1_##r += a_##r * b1;                                                                          \
    s2_##r += a_##r * b2;                                                                          \
    s3_##r += a_##r * b3;                                                                          \
  }
#define KA_S_STORE4(r)                                                                             \
  {                                                                                                \
    float *sr = S + (r) * skp + j0;                                                                \
    *(ka_v16 *)sr = s0_##r;                                                                        \
    *(ka_v16 *)(sr + 16) = s1_##r;                                                                 \
    *(ka_v16 *)(sr + 32) = s2_##r;                                                                 \
    *(ka_v16 *)(sr + 48) = s3_##r;                                                                 \
  }
#define KA_S_FMA1(r) s0_##r += q##r[d * qd] * b0;
#define KA_S_STORE1(r) *(ka_v16 *)(S + (r) * skp + j0) = s0_##r;

/* Scores of 4 query rows (q0..q3, element stride qd along D) against every
 * packed key; S is [4][skp]. */
static void ka_scores4(const float *q0, const float *q1, const float *q2, const float *q3,
                       int64_t qd, const float *restrict kt, int64_t D, int64_t skp,
                       float *restrict S) {
  int64_t j0 = 0;
  for (; j0 + 64 <= skp; j0 += 64) {
    KA_ROWS(KA_S_DECL)
    for (int64_t d = 0; d < D; d++) {
      const float *b = kt + d * skp + j0;
      ka_v16 b0 = *(const ka_v16 *)b, b1 = *(const ka_v16 *)(b + 16),
             b2 = *(const ka_v16 *)(b + 32), b3 = *(const ka_v16 *)(b + 48);
      KA_ROWS(KA_S_FMA4)
    }
    KA_ROWS(KA_S_STORE4)
  }
  for (; j0 < skp; j0 += KA_L) {
    KA_ROWS(KA_S_DECL)
    for (int64_t d = 0; d < D; d++) {
      ka_v16 b0 = *(const ka_v16 *)(kt + d * skp + j0);
      KA_ROWS(KA_S_FMA1)
    }
    KA_ROWS(KA_S_STORE1)
  }
}

/* O tile: out_r[c0 .. c0 + 64 * nv) = sum_j P[r][j] v[j][c], into ob [4][dvp]. */
#define KA_O_FMA4(r)                                                                               \
  {                                                                                                \
    float p_##r = P[(r) * skp + j];                                                                \
    s0_##r += p_##r * b0;                                                                          \
    s1_##r += p_##r * b1;                                                                          \
    s2_##r += p_##r * b2;                                                                          \
    s3_##r += p_##r * b3;                                                                          \
  }
#define KA_O_STORE4(r)                                                                             \
  {                                                                                                \
    float *orow = ob + (r) * dvp + c0;                                                             \
    *(ka_v16 *)orow = s0_##r;                                                                      \
    *(ka_v16 *)(orow + 16) = s1_##r;                                                                \
    *(ka_v16 *)(orow + 32) = s2_##r;                                                                \
    *(ka_v16 *)(orow + 48) = s3_##r;                                                                \
  }
#define KA_O_FMA2(r)                                                                               \
  {                                                                                                \
    float p_##r = P[(r) * skp + j];                                                                \
    s0_##r += p_##r * b0;                                                                          \
    s1_##r += p_##r * b1;                                                                          \
  }
#define KA_O_STORE2(r)                                                                             \
  {                                                                                                \
    float *orow = ob + (r) * dvp + c0;                                                             \
    *(ka_v16 *)orow = s0_##r;                                                                      \
    *(ka_v16 *)(orow + 16) = s1_##r;                                                               \
  }
#define KA_O_FMA1(r) s0_##r += P[(r) * skp + j] * b0;
#define KA_O_STORE1(r) *(ka_v16 *)(ob + (r) * dvp + c0) = s0_##r;

static void ka_pv4(const float *restrict P, int64_t skp, int64_t Sk, const float *restrict vp,
                   int64_t dvp, float *restrict ob) {
  int64_t c0 = 0;
  for (; c0 + 64 <= dvp; c0 += 64) {
    KA_ROWS(KA_S_DECL)
    for (int64_t j = 0; j < Sk; j++) {
      const float *b = vp + j * dvp + c0;
      ka_v16 b0 = *(const ka_v16 *)b, b1 = *(const ka_v16 *)(b + 16),
             b2 = *(const ka_v16 *)(b + 32), b3 = *(const ka_v16 *)(b + 48);
      KA_ROWS(KA_O_FMA4)
    }
    KA_ROWS(KA_O_STORE4)
  }
  /* 32 columns (Swin's heads): 8 accumulators, where one vector at a time
   * would spend 5 loads on 4 FMAs */
  for (; c0 + 32 <= dvp; c0 += 32) {
    KA_ROWS(KA_S_DECL)
    for (int64_t j = 0; j < Sk; j++) {
      const float *b = vp + j * dvp + c0;
      ka_v16 b0 = *(const ka_v16 *)b, b1 = *(const ka_v16 *)(b + 16);
      KA_ROWS(KA_O_FMA2)
    }
    KA_ROWS(KA_O_STORE2)
  }
  for (; c0 < dvp; c0 += KA_L) {
    KA_ROWS(KA_S_DECL)
    for (int64_t j = 0; j < Sk; j++) {
      ka_v16 b0 = *(const ka_v16 *)(vp + j * dvp + c0);
      KA_ROWS(KA_O_FMA1)
    }
    KA_ROWS(KA_O_STORE1)
  }
}

/* Lane reductions as trees of halves: a lane-by-lane loop is a chain of 15
 * dependent operations through memory. */
typedef float ka_v8 __attribute__((vector_size(32)));
typedef float ka_v4 __attribute__((vector_size(16)));
static float ka_hsum(ka_v16 v) {
  ka_v8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
            __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  ka_v4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return (b[0] + b[2]) + (b[1] + b[3]);
}
static float ka_max(float a, float b) {
  return a > b ? a : b;
}
typedef int32_t ka_v8i __attribute__((vector_size(32)));
typedef int32_t ka_v4i __attribute__((vector_size(16)));
static float ka_hmax(ka_v16 v) {
  ka_v8 lo = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7),
        hi = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  ka_v8i g8 = hi > lo;
  ka_v8 a = (ka_v8)(((ka_v8i)hi & g8) | ((ka_v8i)lo & ~g8));
  ka_v4 l4 = __builtin_shufflevector(a, a, 0, 1, 2, 3), h4 = __builtin_shufflevector(a, a, 4, 5, 6, 7);
  ka_v4i g4 = h4 > l4;
  ka_v4 b = (ka_v4)(((ka_v4i)h4 & g4) | ((ka_v4i)l4 & ~g4));
  return ka_max(ka_max(b[0], b[2]), ka_max(b[1], b[3]));
}

/* e^x for 16 lanes of x <= 0 (a score minus its row's maximum), or NaN:
 * n = round(x / ln2), r = x - n ln2 in two parts, e^r by the degree-7
 * Taylor polynomial in Estrin's form, scaled by 2^n built in the exponent
 * bits. Below -87.3 (where e^x leaves the normal range) the result is 0:
 * next to the row's largest term, which is 1, such a term is lost anyway.
 * kcpu_m_exp's two-step scaling for subnormals and its overflow side are
 * not needed here, and the loop is a third shorter. NaN stays NaN. */
static ka_v16 ka_exp16(ka_v16 x) {
  const ka_v16 lo = (ka_v16){0} - 87.3365448f;
  ka_v16i under = x < lo;
  ka_v16 t = (ka_v16)(((ka_v16i)lo & under) | ((ka_v16i)x & ~under));
  ka_v16 v = t * 1.44269504088896341f + 12582912.0f; /* round(t / ln2) + 1.5 * 2^23 */
  ka_v16 n = v - 12582912.0f;
  ka_v16 r = t - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  ka_v16 r2 = r * r;
  ka_v16 pa = r * (1.0f / 5040.0f) + 1.0f / 720.0f;
  ka_v16 pb = r * (1.0f / 120.0f) + 1.0f / 24.0f;
  ka_v16 pc = r * (1.0f / 6.0f) + 0.5f;
  ka_v16 q = pc + r2 * (pb + r2 * pa);
  ka_v16 p = 1.0f + (r + r2 * q);
  /* the low mantissa bits of v hold n + 2^22; n >= -126 keeps 2^n normal */
  ka_v16i e = ((ka_v16i)v - 0x4B400000 + 127) << 23;
  /* a NaN x compares false to -87.3 (under is 0) and makes p NaN */
  return (ka_v16)((ka_v16i)(p * (ka_v16)e) & ~under);
}

/* Masks and exponentiates one score row in place (scale applied here);
 * returns the row's sum. Columns past Sk become 0, so that P V may run over
 * whole vectors. A row whose scores are all -inf gives NaN, as the
 * graph's max-subtracted softmax does. Without a mask, the scaling and the
 * maximum are one pass and the exponentials and their sum another. */
static float ka_softmax_row(const ka_args *a, float *s, int64_t b, int64_t h, int64_t i) {
  int64_t Sk = a->Sk, skp = a->skp;
  const int64_t *ms = a->st + 16;
  float scale = a->scale;
  for (int64_t j = Sk; j < skp; j++)
    s[j] = -INFINITY;
  /* a positive scale keeps the padding's -inf below every score, so
   * without a mask the scaling rides on the maximum's pass */
  bool fold = a->mask_kind == 0 && scale > 0;
  float f = fold ? scale : 1.0f;
  if (!fold) {
    if (a->mask_kind == 1) {
      const float *m = (const float *)a->mask + b * ms[0] + h * ms[1] + i * ms[2];
      int64_t j = 0;
      if (ms[3] == 1) /* Swin's position bias: a row of the mask is contiguous */
        for (; j + KA_L <= Sk; j += KA_L)
          *(ka_v16 *)(s + j) = *(ka_v16 *)(s + j) * scale + *(const ka_v16u *)(m + j);
      for (; j < Sk; j++)
        s[j] = s[j] * scale + m[j * ms[3]];
    } else if (a->mask_kind == 2) {
      const unsigned char *m =
          (const unsigned char *)a->mask + b * ms[0] + h * ms[1] + i * ms[2];
      float fill = a->fill;
      for (int64_t j = 0; j < Sk; j++)
        s[j] = m[j * ms[3]] ? s[j] * scale : fill;
    } else {
      for (int64_t j = 0; j < Sk; j++)
        s[j] = s[j] * scale;
    }
  }
  ka_v16 mv = *(ka_v16 *)s *= f;
  for (int64_t j = KA_L; j < skp; j += KA_L) {
    ka_v16 x = *(ka_v16 *)(s + j) *= f;
    ka_v16i gt = x > mv; /* a select by masks: C has no vector ?: */
    mv = (ka_v16)(((ka_v16i)x & gt) | ((ka_v16i)mv & ~gt));
  }
  float mx = ka_hmax(mv);
  ka_v16 sv = {0};
  for (int64_t j = 0; j < skp; j += KA_L) {
    ka_v16 y = ka_exp16(*(const ka_v16 *)(s + j) - mx);
    *(ka_v16 *)(s + j) = y;
    sv += y;
  }
  /* the padding's exponentials are 0 already, but for an all -inf row
   * (NaN everywhere, the result the graph's softmax gives) */
  for (int64_t j = Sk; j < skp; j++)
    s[j] = 0.0f;
  return ka_hsum(sv);
}

/* Kᵀ into kt [D][skp] (columns past Sk zeroed), in 16 x 16 blocks: K's
 * rows are far apart (the other heads lie between them), and a block reads
 * 16 of them and writes 16 rows of kt while both stay in L1, where a whole
 * column at a time would walk every row of K once per d. Whole blocks of a
 * K with unit stride along D go through registers (kcpu_transpose16):
 * element by element, the pack took 6% of a 256-token attention. */
static void ka_pack_kt(const float *k, int64_t sj, int64_t sd, int64_t Sk, int64_t D,
                       int64_t skp, float *restrict kt) {
  for (int64_t j0 = 0; j0 < Sk; j0 += KA_L) {
    int64_t j1 = j0 + KA_L < Sk ? j0 + KA_L : Sk;
    for (int64_t d0 = 0; d0 < D; d0 += KA_L) {
      int64_t d1 = d0 + KA_L < D ? d0 + KA_L : D;
      if (sd == 1 && j1 - j0 == KA_L && d1 - d0 == KA_L) {
        kcpu_t16v r[KA_L];
        KCPU_UNROLL16 for (int i = 0; i < KA_L; i++) r[i] =
            *(const ka_v16u *)(k + (j0 + i) * sj + d0);
        kcpu_transpose16(r);
        KCPU_UNROLL16 for (int i = 0; i < KA_L; i++) *(ka_v16 *)(kt + (d0 + i) * skp + j0) = r[i];
        continue;
      }
      for (int64_t j = j0; j < j1; j++)
        for (int64_t d = d0; d < d1; d++)
          kt[d * skp + j] = k[j * sj + d * sd];
    }
  }
  for (int64_t d = 0; d < D; d++)
    for (int64_t j = Sk; j < skp; j++)
      kt[d * skp + j] = 0.0f;
}

static void ka_task(void *ctx, int64_t t0, int64_t t1) {
  const ka_args *a = ctx;
  int64_t skp = a->skp, dvp = a->dvp, D = a->D, Dv = a->Dv, Sk = a->Sk;
  const int64_t *qs = a->st, *ks = a->st + 4, *vs = a->st + 8, *os = a->st + 12;
  /* scratch: Kᵀ [D][skp], V [Sk][dvp], scores [KA_QB][skp], out tile [4][dvp] */
  int64_t n_kt = D * skp, n_v = (Sk ? Sk : 1) * dvp, n_s = KA_QB * skp, n_o = 4 * dvp;
  float *kt = kcpu_alloc((n_kt + n_v + n_s + n_o) * (int64_t)sizeof(float));
  if (!kt)
    return; /* out of memory: the output is left unwritten, as other kernels do */
  float *vp = kt + n_kt, *S = vp + n_v, *ob = S + n_s;
  int64_t packed = -1;
  for (int64_t t = t0; t < t1; t++) {
    int64_t bh = t / a->nqb, qb = t % a->nqb, b = bh / a->H, h = bh % a->H;
    if (bh != packed) {
      const float *k = a->k + b * ks[0] + h * ks[1], *v = a->v + b * vs[0] + h * vs[1];
      ka_pack_kt(k, ks[2], ks[3], Sk, D, skp, kt);
      for (int64_t j = 0; j < Sk; j++) {
        float *row = vp + j * dvp;
        if (vs[3] == 1)
          memcpy(row, v + j * vs[2], sizeof(float) * (size_t)Dv);
        else
          for (int64_t e = 0; e < Dv; e++)
            row[e] = v[j * vs[2] + e * vs[3]];
        for (int64_t e = Dv; e < dvp; e++)
          row[e] = 0.0f;
      }
      packed = bh;
    }
    int64_t i0 = qb * KA_QB, rows = a->Sq - i0 < KA_QB ? a->Sq - i0 : KA_QB;
    const float *q = a->q + b * qs[0] + h * qs[1];
    for (int64_t r = 0; r < rows; r += 4) {
      /* rows past the block's end repeat its last row; they are not stored */
      int64_t last = rows - 1;
      const float *q0 = q + (i0 + r) * qs[2];
      const float *q1 = q + (i0 + (r + 1 <= last ? r + 1 : last)) * qs[2];
      const float *q2 = q + (i0 + (r + 2 <= last ? r + 2 : last)) * qs[2];
      const float *q3 = q + (i0 + (r + 3 <= last ? r + 3 : last)) * qs[2];
      ka_scores4(q0, q1, q2, q3, qs[3], kt, D, skp, S + r * skp);
    }
    float inv[KA_QB];
    for (int64_t r = 0; r < rows; r++)
      inv[r] = 1.0f / ka_softmax_row(a, S + r * skp, b, h, i0 + r);
    for (int64_t r = 0; r < rows; r += 4) {
      int64_t n = rows - r < 4 ? rows - r : 4;
      /* rows past the end multiply stale scores: finite or not, never stored */
      ka_pv4(S + r * skp, skp, Sk, vp, dvp, ob);
      for (int64_t rr = 0; rr < n; rr++) {
        float *o = a->o + b * os[0] + h * os[1] + (i0 + r + rr) * os[2];
        const float *src = ob + rr * dvp;
        float w = inv[r + rr];
        if (os[3] == 1) {
          int64_t e = 0;
          for (; e + KA_L <= Dv; e += KA_L)
            *(ka_v16u *)(o + e) = *(const ka_v16 *)(src + e) * w;
          for (; e < Dv; e++)
            o[e] = src[e] * w;
        } else {
          for (int64_t e = 0; e < Dv; e++)
            o[e * os[3]] = src[e] * w;
        }
      }
    }
  }
  kcpu_free(kt);
}

KCPU_PREBUILT void kcpu_k_attention(const float *q, const float *k, const float *v,
                                    const void *mask, float *o, const int64_t *sizes,
                                    const int64_t *strides, float scale, int64_t mask_kind,
                                    float fill, struct kcpu_pool *pool) {
  int64_t B = sizes[0], H = sizes[1], Sq = sizes[2], Sk = sizes[3], D = sizes[4], Dv = sizes[5];
  if (B <= 0 || H <= 0 || Sq <= 0 || Dv <= 0)
    return;
  ka_args a = {.q = q,
               .k = k,
               .v = v,
               .mask = mask,
               .o = o,
               .H = H,
               .Sq = Sq,
               .Sk = Sk,
               .D = D,
               .Dv = Dv,
               .skp = (Sk + KA_L - 1) / KA_L * KA_L,
               .dvp = (Dv + KA_L - 1) / KA_L * KA_L,
               .nqb = (Sq + KA_QB - 1) / KA_QB,
               .st = strides,
               .scale = scale,
               .fill = fill,
               .mask_kind = mask_kind};
  if (a.skp == 0)
    a.skp = KA_L;
  kcpu_parallel_for(pool, B * H * a.nqb, ka_task, &a);
}
