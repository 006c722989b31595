/* plugins/cpu/kernels/conv_blocked.c: 2-D convolution into the
 * channel-blocked layout (conv_blocked.h), group 1 from a blocked or a
 * plain input, grouped from a blocked one (the groupings of
 * kcpu_convb_grouping; groups that tile a block have a kernel of their
 * own, below kcpu_convb_products); the depthwise case is
 * conv_blocked_dw.c's.
 *
 * Direct convolution, NCHWc style: a micro-kernel call computes a run of
 * P consecutive output pixels of one output row (of the whole plane where
 * rows continue each other in the input, as in 1x1 stride-1 layers) for a
 * group of J output-channel blocks (conv_blocked.h), J * P vector
 * accumulators held in registers, each step adding a filter vector (16
 * output channels, one tap and input channel) times the broadcast input
 * scalar of each pixel. Taps and input channels run innermost, over the
 * real channels only (padding lanes are never read); the output blocks
 * of a grouped convolution each read their group's input blocks.
 *
 * Where the convolution reads outside the image (padding), or the input is
 * plain, the image is first copied into zero-bordered planes (blocked, or
 * for a plain input of under 16 channels C lanes per pixel), so that every
 * pixel reads every tap with no edge cases in the loops (the padding
 * taps add 0 * w, as in the NCHW direct kernel's zero-bordered planes);
 * a tap that reads only padding for every pixel of a run is left out of
 * that run (kcb_live: dilated layers on small planes are mostly such
 * taps), and where the rows and columns only such taps read are a
 * quarter of the padded plane or more, the copy leaves them out.
 *
 * A row is cut into runs of the full length P and two near-equal last
 * ones; full runs (most of them) do the epilogue (bias, residual, Relu or
 * Clip, lanes past M cleared) in registers, the shorter ones through a
 * shared function, so that the register-blocked code exists once per
 * (J, P) and the epilogue's only for the full P. Where a group's filters
 * outgrow the cache, the reduction over (tap, input block) pairs goes in
 * chunks, each over the band's runs, partial sums in scratch.
 *
 * Every output element sums taps in (kh, kw) order, input channels in
 * order within a tap (tiled groups: an order of their own, below),
 * whatever the run, chunk or group it falls in and whichever task
 * computes it: results do not depend on the thread count. */
#include "conv_blocked.h"
#include "kcpu_act.h"

typedef float kcb_v16 __attribute__((vector_size(64)));
typedef float kcb_v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t kcb_v16i __attribute__((vector_size(64)));
typedef int32_t kcb_v16iu __attribute__((vector_size(64), aligned(4), may_alias));
typedef float kcb_v8 __attribute__((vector_size(32)));
typedef float kcb_v8u __attribute__((vector_size(32), aligned(4), may_alias));

/* Full unrolling of the loops over the accumulators (constant trip counts
 * once inlined; the library is built with -fno-unroll-loops, which a pragma
 * overrides), so that they stay in registers. */
#ifdef __clang__
#define KCB_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define KCB_UNROLL _Pragma("GCC unroll 16")
#else
#define KCB_UNROLL
#endif
#define KCB_INLINE static inline __attribute__((always_inline))

/* Bytes of a group's filters that one pass over a band's runs reads. */
#ifndef KCB_WBYTES
#define KCB_WBYTES (256 * 1024)
#endif
/* Pixels per full run for J blocks: J * P accumulators (24 of the 32
 * AVX-512 registers at J = 2..4) plus J filter vectors. */
#define KCB_PMAX 12
#define KCB_PFULL1 12
#define KCB_PFULL2 12
#define KCB_PFULL3 8
#define KCB_PFULL4 6
static const int64_t kcb_pmax[5] = {0, KCB_PFULL1, KCB_PFULL2, KCB_PFULL3, KCB_PFULL4};

typedef struct kcb {
  const float *x;           /* image n's input planes [nb][Hp][Wp][Lp] */
  const float *w;           /* packed filters */
  const float *bias;        /* [Mb * 16], zero past M */
  const float *res;         /* image n's residual, or NULL */
  float *y;                 /* image n's output */
  const int64_t *toff;      /* per tap, its offset in x from the tap (0, 0) */
  int64_t T, C, Lp, nb, bs; /* taps; channels; lanes per pixel; blocks read and their stride */
  int64_t gout, cr;         /* the grouping (kcpu_convb_grouping, whose gin is nb) */
  int64_t ps, rs;           /* floats of x between output pixels, output rows */
  int64_t M, Mb, OHW, OW;
  int64_t NR, R;      /* runs come from NR rows of R pixels (NR = 1: the plane) */
  int64_t ng, nbands; /* tasks: nbands bands of runs x ng groups */
  int64_t psv;        /* ps specialization: 0: 16 (blocked, stride 1), 1: any */
  int64_t act;
  float act_a, act_b;
  int32_t keep[2][KCPU_CB]; /* lane masks: all lanes, and those below M of the last block */
  int64_t tail;             /* M is not a multiple of 16: the last block has lanes past M */
  int64_t fin;              /* KCB_FIN_* of act */
  float lo, hi;             /* Clip's bounds */
  /* Where taps read only padding for a whole run (kcb_live): the image's
   * geometry before the zero-bordered copy; clip = 0: every tap runs. */
  int64_t clip, H, W, KW, sh, sw, dh, dw, pt, pl;
} kcb;

/* The activations other than Relu and Clip over a stored run of P
 * vectors (in L1; in registers they would multiply the micro-kernels'
 * code by the activation count), lanes past M (keep) cleared again. */
static void kcb_act_row(const kcb *k, float *y, int64_t P, const int32_t *keepl) {
  kcb_v16i keep = *(const kcb_v16iu *)keepl;
  switch (k->act) {
  case KCPU_ACT_HARD_SIGMOID:
  case KCPU_ACT_HARD_SWISH:
    for (int64_t p = 0; p < P; p++) {
      kcb_v16 v = *(kcb_v16u *)(y + p * KCPU_CB);
      if (k->act == KCPU_ACT_HARD_SIGMOID)
        KCPU_ACT_VEC_HARD(kcb_v16, kcb_v16i, v, KCPU_ACT_HARD_SIGMOID, k->act_a, k->act_b);
      else
        KCPU_ACT_VEC_HARD(kcb_v16, kcb_v16i, v, KCPU_ACT_HARD_SWISH, k->act_a, k->act_b);
      *(kcb_v16u *)(y + p * KCPU_CB) = (kcb_v16)((kcb_v16i)v & keep);
    }
    break;
  case KCPU_ACT_SWISH: /* 0 stays 0: no clearing */
    kcpu_act_swish_row(k->act_a, y, P * KCPU_CB);
    break;
  case KCPU_ACT_GELU:
    for (int64_t i = 0; i < P * KCPU_CB; i++)
      y[i] = kcpu_m_gelu(y[i]);
    break;
  default:
    break;
  }
}

/* What the epilogue applies in registers: nothing (Relu and Clip absent;
 * other activations run over the stored run), Relu as kcpu_act1 (NaN and
 * -0 give 0), or Clip as kcpu_act1 (NaN stays) between lo and hi. */
enum { KCB_FIN_NONE, KCB_FIN_RELU, KCB_FIN_CLIP };
#define KCB_FIN(FIN, v, lo, hi)                                                                    \
  do {                                                                                             \
    if ((FIN) == KCB_FIN_RELU) {                                                                   \
      v = (kcb_v16)((kcb_v16i)v & (kcb_v16i)(v > (kcb_v16){0}));                                   \
    } else if ((FIN) == KCB_FIN_CLIP) {                                                            \
      kcb_v16i m_ = (kcb_v16i)(v < lo);                                                            \
      v = (kcb_v16)(((kcb_v16i)v & ~m_) | ((kcb_v16i)lo & m_));                                    \
      m_ = (kcb_v16i)(v > hi);                                                                     \
      v = (kcb_v16)(((kcb_v16i)v & ~m_) | ((kcb_v16i)hi & m_));                                    \
    }                                                                                              \
  } while (0)

/* The P vectors of block j of a full run: sum + bias (+ the residual,
 * which may be y itself: read before written), KCB_FIN, stored; TAIL:
 * the last block, whose lanes past M are cleared. */
#define KCB_STORE_BLOCK(FIN, TAIL)                                                                 \
  KCB_UNROLL for (int p = 0; p < P; p++) {                                                         \
    kcb_v16 v = acc[j][p] + bv;                                                                    \
    if (r)                                                                                         \
      v += *(const kcb_v16u *)(r + p * KCPU_CB);                                                   \
    KCB_FIN(FIN, v, lo, hi);                                                                       \
    if (TAIL)                                                                                      \
      v = (kcb_v16)((kcb_v16i)v & keep);                                                           \
    *(kcb_v16u *)(y + p * KCPU_CB) = v;                                                            \
  }
#define KCB_STORE_RUN(FIN)                                                                         \
  do {                                                                                             \
    kcb_v16 lo = z + k->lo, hi = z + k->hi;                                                        \
    KCB_UNROLL for (int j = 0; j < J; j++) {                                                       \
      int64_t mb = u->mb0 + j, o = (mb * k->OHW + u->q0) * KCPU_CB;                                \
      kcb_v16 bv = *(const kcb_v16u *)(k->bias + mb * KCPU_CB);                                    \
      float *y = k->y + o;                                                                         \
      const float *r = k->res ? k->res + o : NULL;                                                 \
      kcb_v16i keep = *(const kcb_v16iu *)k->keep[1];                                              \
      if (mb == k->Mb - 1 && k->tail) {                                                            \
        KCB_STORE_BLOCK(FIN, 1)                                                                    \
      } else {                                                                                     \
        KCB_STORE_BLOCK(FIN, 0)                                                                    \
      }                                                                                            \
      if (k->act != KCPU_ACT_NONE && k->act != KCPU_ACT_RELU && k->act != KCPU_ACT_CLIP)           \
        kcb_act_row(k, y, P, k->keep[mb == k->Mb - 1]);                                            \
    }                                                                                              \
  } while (0)

/* One call of the micro-kernel: a run of P pixels (x: its first pixel at
 * tap (0, 0), block 0) for J blocks, over the (tap, input block) pairs
 * [i0, i1) in tap-major order (w: the filters of pair i0). Sums start from
 * zero at the first pair (first) or from part, and end in part
 * (part[j * P + p]): chunks of pairs in order make the same sums as one
 * call over all. */
typedef struct kcb_run {
  const float *x, *w;
  int64_t C; /* channels read from x's first block on */
  int64_t i0, i1, first, mb0, q0;
  uint64_t live; /* bit t: tap t reads the image for some pixel of the run (taps past 63: all) */
  kcb_v16 *part;
  const char *pf, *pfend; /* cache lines of later filters to prefetch, pfn a pair */
  int64_t pfn;
} kcb_run;

/* The run's sums; ps: floats between pixels, a constant where
 * specialized. Runs of the full length (most of them: full) end in
 * kcb_epilogue's work done in registers, the others in part. half: the
 * last of the J blocks is the output's last, with at most 8 channels
 * (24, 40, 72, 120 or 184 outputs: mobile nets' narrow layers), and its
 * sums are 8-lane vectors, widened to 16 with zeros for the epilogue: an
 * 8-lane multiply-add costs half a 16-lane one on cores that split
 * 16-lane ones in two (Zen 4), and the other 8 lanes would be padding. */
KCB_INLINE void kcb_acc(const kcb *k, const kcb_run *u, const int J, const int P, const int64_t ps,
                        const int full, const int half) {
  kcb_v16 acc[4][KCB_PMAX], z = {0};
  kcb_v8 acch[KCB_PMAX], z8 = {0};
  const int JV = J - half; /* blocks of 16-lane sums */
  KCB_UNROLL for (int j = 0; j < JV; j++) KCB_UNROLL for (int p = 0; p < P; p++) acc[j][p] =
      u->first ? z : u->part[j * P + p];
  if (half)
    KCB_UNROLL for (int p = 0; p < P; p++) acch[p] =
        u->first ? z8
                 : __builtin_shufflevector(u->part[JV * P + p], u->part[JV * P + p], 0, 1, 2, 3, 4,
                                           5, 6, 7);
  const float *w = u->w;
  int64_t t = u->i0 / k->nb, cb = u->i0 - t * k->nb;
  /* the tap's offset, made a pointer only for a tap that runs: a compact
   * copy (kcpu_convb) holds no rows or columns that only the others read */
  int64_t xt = k->toff[t];
  const char *pf = u->pf;
  for (int64_t i = u->i0; i < u->i1; i++) {
    for (int64_t q = 0; q < u->pfn && pf < u->pfend; q++, pf += 64)
      __builtin_prefetch(pf, 0, 2);
    int64_t L = u->C - cb * k->Lp;
    L = L < k->Lp ? L : k->Lp;
    if (t < 64 && !(u->live >> t & 1)) /* only padding: its terms are 0 * w */
      w += L * J * KCPU_CB, L = 0;
    const float *xc = L ? u->x + xt + cb * k->bs : u->x;
    for (int64_t l = 0; l < L; l++, w += J * KCPU_CB) {
      kcb_v16 wv[4];
      kcb_v8 wh = z8;
      KCB_UNROLL for (int j = 0; j < JV; j++) wv[j] = *(const kcb_v16u *)(w + j * KCPU_CB);
      if (half)
        wh = *(const kcb_v8u *)(w + JV * KCPU_CB);
      KCB_UNROLL for (int p = 0; p < P; p++) {
        float xs = xc[p * ps + l];
        KCB_UNROLL for (int j = 0; j < JV; j++) acc[j][p] += xs * wv[j];
        if (half)
          acch[p] += xs * wh;
      }
    }
    if (++cb == k->nb) { /* toff has a T-th entry for the step past the last tap */
      cb = 0;
      xt = k->toff[++t];
    }
  }
  if (half)
    KCB_UNROLL for (int p = 0; p < P; p++) acc[JV][p] =
        __builtin_shufflevector(acch[p], z8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  if (!full || u->i1 < k->T * k->nb) {
    KCB_UNROLL for (int j = 0; j < J; j++) KCB_UNROLL for (int p = 0; p < P; p++)
        u->part[j * P + p] = acc[j][p];
    return;
  }
  /* kcb_epilogue in registers, one copy per kind of activation and of
   * block (the last block clears its lanes past M), so that each stored
   * vector costs only what its layer needs: with 16 input channels (the
   * 1x1 layers after a mobile net's stem) a run's reduction is 16
   * multiply-adds a vector, and the general Relu-and-Clip sequence took
   * 7 operations more. */
  if (k->fin == KCB_FIN_RELU)
    KCB_STORE_RUN(KCB_FIN_RELU);
  else if (k->fin == KCB_FIN_CLIP)
    KCB_STORE_RUN(KCB_FIN_CLIP);
  else
    KCB_STORE_RUN(KCB_FIN_NONE);
}

typedef void (*kcb_fn)(const kcb *k, const kcb_run *u);

#define KCB_FN(J, P)                                                                               \
  static void kcb_acc16_##J##_##P(const kcb *k, const kcb_run *u) {                                \
    kcb_acc(k, u, J, P, 16, P == KCB_PFULL##J, 0);                                                 \
  }                                                                                                \
  static void kcb_accn_##J##_##P(const kcb *k, const kcb_run *u) {                                 \
    kcb_acc(k, u, J, P, k->ps, P == KCB_PFULL##J, 0);                                              \
  }
#define KCB_P6(X, J) X(J, 1) X(J, 2) X(J, 3) X(J, 4) X(J, 5) X(J, 6)
#define KCB_P8(X, J) KCB_P6(X, J) X(J, 7) X(J, 8)
#define KCB_P12(X, J) KCB_P8(X, J) X(J, 9) X(J, 10) X(J, 11) X(J, 12)
#define KCB_ALL(X) KCB_P12(X, 1) KCB_P12(X, 2) KCB_P8(X, 3) KCB_P6(X, 4)
KCB_ALL(KCB_FN)

#define KCB_ROW(S, J)                                                                              \
  {                                                                                                \
    kcb_acc##S##_##J##_1, kcb_acc##S##_##J##_2, kcb_acc##S##_##J##_3, kcb_acc##S##_##J##_4,        \
        kcb_acc##S##_##J##_5, kcb_acc##S##_##J##_6, KCB_ROW_7##J(S)                                \
  }
#define KCB_ROW_71(S)                                                                              \
  kcb_acc##S##_1_7, kcb_acc##S##_1_8, kcb_acc##S##_1_9, kcb_acc##S##_1_10, kcb_acc##S##_1_11,      \
      kcb_acc##S##_1_12
#define KCB_ROW_72(S)                                                                              \
  kcb_acc##S##_2_7, kcb_acc##S##_2_8, kcb_acc##S##_2_9, kcb_acc##S##_2_10, kcb_acc##S##_2_11,      \
      kcb_acc##S##_2_12
#define KCB_ROW_73(S) kcb_acc##S##_3_7, kcb_acc##S##_3_8
#define KCB_ROW_74(S) NULL
#define KCB_TABLE(S)                                                                               \
  { KCB_ROW(S, 1), KCB_ROW(S, 2), KCB_ROW(S, 3), KCB_ROW(S, 4) }
/* [ps specialization][J - 1][P - 1] */
static const kcb_fn kcb_fns[2][4][KCB_PMAX] = {KCB_TABLE(16), KCB_TABLE(n)};

/* Full runs whose last block is a half one (kcb_acc): [ps
 * specialization][J - 1]. Shorter runs take the 16-lane functions. */
#define KCB_FNH(J)                                                                                 \
  static void kcb_acch16_##J(const kcb *k, const kcb_run *u) {                                     \
    kcb_acc(k, u, J, KCB_PFULL##J, 16, 1, 1);                                                      \
  }                                                                                                \
  static void kcb_acchn_##J(const kcb *k, const kcb_run *u) {                                      \
    kcb_acc(k, u, J, KCB_PFULL##J, k->ps, 1, 1);                                                   \
  }
KCB_FNH(1)
KCB_FNH(2)
KCB_FNH(3)
KCB_FNH(4)
static const kcb_fn kcb_fns_half[2][4] = {{kcb_acch16_1, kcb_acch16_2, kcb_acch16_3, kcb_acch16_4},
                                          {kcb_acchn_1, kcb_acchn_2, kcb_acchn_3, kcb_acchn_4}};

/* Bias, residual and activation of a run's sums acc[j * P + p], stored at
 * pixel q0 of blocks mb0.. (lanes past M cleared). Out of the
 * micro-kernels, whose code it would multiply: the sums pass through L1.
 * Relu and Clip by KCB_FIN (k->fin tested per vector: these runs are the
 * few that end a row), the others over the stored run. */
static void kcb_epilogue(const kcb *k, const kcb_v16 *acc, int64_t J, int64_t P, int64_t mb0,
                         int64_t q0) {
  kcb_v16 z = {0}, lo = z + k->lo, hi = z + k->hi;
  for (int64_t j = 0; j < J; j++, acc += P) {
    int64_t mb = mb0 + j, o = (mb * k->OHW + q0) * KCPU_CB;
    kcb_v16 bv = *(const kcb_v16u *)(k->bias + mb * KCPU_CB);
    const int32_t *keepl = k->keep[mb == k->Mb - 1];
    kcb_v16i keep = *(const kcb_v16iu *)keepl; /* lanes below M */
    float *y = k->y + o;
    const float *r = k->res ? k->res + o : NULL; /* may be y itself: read before written */
    for (int64_t p = 0; p < P; p++) {
      kcb_v16 v = acc[p] + bv;
      if (r)
        v += *(const kcb_v16u *)(r + p * KCPU_CB);
      KCB_FIN(k->fin, v, lo, hi);
      *(kcb_v16u *)(y + p * KCPU_CB) = (kcb_v16)((kcb_v16i)v & keep);
    }
    if (k->act != KCPU_ACT_NONE && k->act != KCPU_ACT_RELU && k->act != KCPU_ACT_CLIP)
      kcb_act_row(k, y, P, keepl);
  }
}

/* Group g of output blocks: its first block b0, its J blocks, the real
 * channels cg of the input blocks it reads from block x0 on, and its
 * packed filters. */
typedef struct kcb_group {
  int64_t b0, J, x0, cg;
  const float *w;
} kcb_group;

static kcb_group kcb_group_of(const kcb *k, int64_t g) {
  kcb_group r;
  r.b0 = kcpu_convb_group_start(k->gout, g);
  r.J = kcpu_convb_group_start(k->gout, g + 1) - r.b0;
  r.x0 = r.b0 / k->gout * k->nb;
  r.cg = k->C - r.x0 * k->Lp < k->cr ? k->C - r.x0 * k->Lp : k->cr;
  r.w = k->w + r.b0 * k->cr * k->T * KCPU_CB;
  return r;
}

/* The filters that come after chunk [i0, i1) of group g's pairs in a
 * thread's tasks ending at e: the group's next chunk, else the first chunk
 * of task t + 1's group, as bytes [*lo, *hi) (empty past the last). */
static void kcb_next_filters(const kcb *k, int64_t t, int64_t e, int64_t i1, int64_t pairs,
                             const char **lo, const char **hi) {
  int64_t g = t % k->ng, np = k->T * k->nb;
  if (i1 >= np) {
    if (t + 1 >= e) {
      *lo = *hi = NULL;
      return;
    }
    g = (t + 1) % k->ng;
    i1 = 0;
  }
  kcb_group gr = kcb_group_of(k, g);
  const char *wg = (const char *)gr.w;
  int64_t pair = gr.J * KCPU_CB * (int64_t)sizeof(float); /* bytes per channel of a pair */
  int64_t end = gr.cg * k->T * pair;                      /* the group's filters */
  int64_t from = ((i1 / k->nb) * gr.cg + (i1 % k->nb) * k->Lp) * pair;
  int64_t to = from + pairs * k->Lp * pair;
  *lo = wg + from;
  *hi = wg + (to < end ? to : end);
}

/* The taps that read the image for some pixel of the run of pixels [p0,
 * p1) of output row oh: for the others every term is 0 * w (the
 * zero-bordered copy's padding), and leaving them out changes no sum.
 * Dilated layers on small planes are mostly such taps (DeepLabV3's ASPP:
 * 3x3 dilated by 12 on 16x16, where three quarters of the terms are
 * padding); elsewhere they are the edge rows. */
static uint64_t kcb_live(const kcb *k, int64_t oh, int64_t p0, int64_t p1) {
  if (!k->clip)
    return ~(uint64_t)0;
  uint64_t live = 0;
  int64_t ih0 = oh * k->sh - k->pt, iw0 = p0 * k->sw - k->pl, iw1 = (p1 - 1) * k->sw - k->pl;
  for (int64_t t = 0; t < k->T && t < 64; t++) {
    int64_t ih = ih0 + t / k->KW * k->dh, dw = t % k->KW * k->dw;
    /* some column of the run in [0, W): the run's columns are sw apart */
    int64_t a = iw0 + dw, b = iw1 + dw;
    int64_t first = a >= 0 ? a : a + (-a + k->sw - 1) / k->sw * k->sw;
    if (ih >= 0 && ih < k->H && first <= b && first < k->W)
      live |= (uint64_t)1 << t;
  }
  return live; /* taps past 63 run whatever the mask (kcb_acc) */
}

/* Bands of runs for `units` tasks each (groups of blocks, or blocks):
 * the `bands` asked for, raised to at least 4 tasks a thread, at most
 * one a run, and then to a task count that the threads share evenly: the
 * pool gives each thread a contiguous share of them, so 9 tasks on 2
 * threads (3 groups of a 17x17 layer) ran as 5 against 4; Inception v3 on
 * 2 threads 23.3 -> 20.9 ms. */
static int64_t kcb_bands(int64_t bands, int64_t units, int64_t runs, int64_t threads) {
  if (bands * units < 4 * threads)
    bands = (4 * threads + units - 1) / units;
  if (bands > runs)
    bands = runs;
  while (threads > 1 && (bands * units) % threads && bands < runs)
    bands++;
  return bands;
}

/* Tasks [b, e): task t is band t / ng of the runs of group t % ng. Where
 * a group's filters outgrow KCB_WBYTES, its (tap, input block) pairs go in
 * chunks, each over all the band's runs, the sums in between held in
 * scratch, so that the chunk's filters stay in cache across the runs. */
static void kcb_task(void *ctx, int64_t b, int64_t e) {
  const kcb *k = ctx;
  kcb_v16 acc[4 * KCB_PMAX];
  for (int64_t t = b; t < e; t++) {
    int64_t band = t / k->ng;
    kcb_group gr = kcb_group_of(k, t % k->ng);
    int64_t b0 = gr.b0, J = gr.J, x0 = gr.x0, cg = gr.cg;
    int64_t half = b0 + J == k->Mb && k->M - (k->Mb - 1) * KCPU_CB <= KCPU_CB / 2;
    /* runs of a row: full runs of P, the last full one and the rest of the
     * row as two runs of about the same length */
    int64_t P = kcb_pmax[J], nf = k->R / P, rem = k->R % P, kr = nf + (rem > 0);
    int64_t nr = k->NR * kr, r0 = nr * band / k->nbands, r1 = nr * (band + 1) / k->nbands;
    int64_t np = k->T * k->nb, pairs = KCB_WBYTES / (k->Lp * J * KCPU_CB * (int64_t)sizeof(float));
    pairs = pairs < 1 ? 1 : pairs;
    kcb_v16 *part = acc;
    if (pairs < np && r1 - r0 > 1) {
      part = kcpu_alloc((r1 - r0) * J * P * (int64_t)sizeof(kcb_v16));
      if (!part) /* the same sums in one chunk */
        part = acc, pairs = np;
    } else {
      pairs = np;
    }
    const float *wg = gr.w;
    for (int64_t i0 = 0; i0 < np; i0 += pairs) {
      kcb_run u = {.C = cg, .i0 = i0, .i1 = i0 + pairs < np ? i0 + pairs : np, .first = i0 == 0};
      /* filters before pair i0: i0 / nb whole taps, then i0 % nb blocks */
      u.w = wg + ((i0 / k->nb) * cg + (i0 % k->nb) * k->Lp) * J * KCPU_CB;
      /* The filters of the next chunk are fetched during this one, a
       * share in each run and a few lines in each pair: where a chunk
       * serves few runs (7x7 planes) its first run would otherwise wait
       * for memory at about twice the rate memory gives; bursts of
       * prefetches instead stall the loads of the run itself. */
      const char *nlo, *nhi;
      kcb_next_filters(k, t, e, u.i1, pairs, &nlo, &nhi);
      int64_t lines = nlo && r1 > r0 ? (nhi - nlo) / 64 : 0;
      int64_t share = lines ? (lines + (r1 - r0) - 1) / (r1 - r0) : 0;
      for (int64_t r = r0; r < r1; r++) {
        int64_t s0 = (r - r0) * share, n0 = lines - s0 < share ? lines - s0 : share;
        if (n0 > 0) {
          u.pf = nlo + s0 * 64;
          u.pfend = u.pf + n0 * 64;
          u.pfn = (n0 + (u.i1 - u.i0) - 1) / (u.i1 - u.i0);
        } else {
          u.pf = u.pfend = NULL;
          u.pfn = 0;
        }
        int64_t row = r / kr, i = r % kr, p0 = i * P, p1 = p0 + P;
        if (rem && nf == 0)
          p1 = k->R;
        else if (rem && i >= nf - 1) {
          int64_t h = (P + rem + 1) / 2;
          p0 = (nf - 1) * P + (i == nf ? h : 0);
          p1 = i == nf ? k->R : p0 + h;
        }
        u.x = k->x + x0 * k->bs + row * k->rs + p0 * k->ps;
        u.live = kcb_live(k, row, p0, p1);
        u.part = part == acc ? acc : part + (r - r0) * J * P;
        u.mb0 = b0;
        u.q0 = row * k->OW + p0;
        if (half && p1 - p0 == P)
          kcb_fns_half[k->psv][J - 1](k, &u);
        else
          kcb_fns[k->psv][J - 1][p1 - p0 - 1](k, &u);
        if (u.i1 == np && p1 - p0 < P) /* full runs did this in registers */
          kcb_epilogue(k, u.part, J, p1 - p0, b0, row * k->OW + p0);
      }
    }
    if (part != acc)
      kcpu_free(part);
  }
}

/* The epilogue's lane masks and Clip bounds from k's M, Mb and act
 * (Clip's bounds act_a, act_b). */
static void kcb_epilogue_masks(kcb *k, float act_a, float act_b) {
  for (int64_t l = 0; l < KCPU_CB; l++) {
    k->keep[0][l] = -1;
    k->keep[1][l] = l < k->M - (k->Mb - 1) * KCPU_CB ? -1 : 0;
  }
  k->tail = k->M % KCPU_CB != 0;
  k->fin = k->act == KCPU_ACT_RELU   ? KCB_FIN_RELU
           : k->act == KCPU_ACT_CLIP ? KCB_FIN_CLIP
                                     : KCB_FIN_NONE;
  k->lo = act_a;
  k->hi = act_b;
}

void kcpu_convb_products(const float *x, const float *w, const float *zeros, float *y, int64_t C,
                         int64_t M, int64_t npix, int64_t nbands, int64_t b, int64_t e) {
  int64_t Mb = (M + KCPU_CB - 1) / KCPU_CB, toff[2] = {0, 0};
  kcb k = {.x = x,
           .w = w,
           .bias = zeros,
           .y = y,
           .toff = toff,
           .T = 1,
           .C = C,
           .Lp = KCPU_CB,
           .nb = (C + KCPU_CB - 1) / KCPU_CB,
           .gout = Mb,
           .cr = C,
           .bs = npix * KCPU_CB,
           .ps = KCPU_CB,
           .M = M,
           .Mb = Mb,
           .OHW = npix,
           .OW = npix,
           .NR = 1,
           .R = npix,
           .ng = kcpu_convb_groups(Mb, Mb),
           .nbands = nbands,
           .psv = 0,
           .act = KCPU_ACT_NONE};
  kcb_epilogue_masks(&k, 0.0f, 0.0f);
  kcb_task(&k, b, e);
}

/* The zero-bordered copy of one image: rows [b, e) of the Hp * nb rows of
 * planes [nb][Hp][Wp][Lp], from a blocked (Lp = 16) or plain input; row r
 * is row r / nb of block r % nb, so that a thread's share is a band of
 * image rows in every block, the rows its bands of the convolution read
 * (and, in a chain of layers, about the rows it wrote). */
typedef struct kcb_pad {
  const float *X; /* the image */
  float *xp;
  int64_t x_blocked, C, H, W, nb, Hp, Wp, Lp, pt, pl;
} kcb_pad;

static void kcb_pad_task(void *ctx, int64_t b, int64_t e) {
  const kcb_pad *a = ctx;
  int64_t n = a->Wp - a->pl < a->W ? a->Wp - a->pl : a->W; /* columns read */
  n = n < 0 ? 0 : n;
  for (int64_t r = b; r < e; r++) {
    int64_t cb = r % a->nb, ih = r / a->nb - a->pt;
    float *d = a->xp + (cb * a->Hp + ih + a->pt) * a->Wp * a->Lp;
    if (ih < 0 || ih >= a->H) {
      for (int64_t i = 0; i < a->Wp * a->Lp; i++)
        d[i] = 0.0f;
      continue;
    }
    for (int64_t i = 0; i < a->pl * a->Lp && i < a->Wp * a->Lp; i++)
      d[i] = 0.0f;
    for (int64_t i = (a->pl + n) * a->Lp; i < a->Wp * a->Lp; i++)
      d[i] = 0.0f;
    d += a->pl * a->Lp;
    if (a->x_blocked) {
      const float *s = a->X + (cb * a->H + ih) * a->W * KCPU_CB;
      for (int64_t i = 0; i < n * KCPU_CB; i++)
        d[i] = s[i];
      continue;
    }
    int64_t L = a->C - cb * a->Lp;
    L = L < a->Lp ? L : a->Lp;
    const float *s = a->X + (cb * a->Lp * a->H + ih) * a->W; /* channel l: s + l * H * W */
    if (L == 3 && a->Lp == 3) { /* an RGB stem: one pass, interleaved stores that vectorize */
      const float *s0 = s, *s1 = s + a->H * a->W, *s2 = s1 + a->H * a->W;
      for (int64_t i = 0; i < n; i++) {
        d[3 * i] = s0[i];
        d[3 * i + 1] = s1[i];
        d[3 * i + 2] = s2[i];
      }
      continue;
    }
    for (int64_t l = 0; l < L; l++)
      for (int64_t i = 0; i < n; i++)
        d[i * a->Lp + l] = s[l * a->H * a->W + i];
  }
}

/* Groups that tile a block (kcpu_convb_tiled: 2, 4 or 8 channels a group,
 * G): output block mb reads input block mb only, and lane l sums over the
 * G channels of its own group, lanes (l / G) * G + c. The kernel keeps G
 * sums per pixel: sum r multiplies the input vector as it is (lane j holds
 * channel j) by the filter vector of rotation r, whose lane j holds the
 * weight from channel j to output lane (j / G) * G + (j - r) mod G
 * (kcpu_convb_pack's tiled layout), and at the end of a run output lane l
 * adds lane (l / G) * G + (l + r) mod G of sum r, for each r: G - 1
 * shuffles a pixel per run, none in the loop over taps and channels, and
 * the grouped Conv's own multiply-adds, where the dense kernel over
 * zero-filled filters did 16 / G times as many. Shuffling the input in the
 * loop instead cost one shuffle per multiply-add or, sharing each pixel
 * among a 3x3 row's taps, 0.4 at stride 1 and 0.7 at stride 2: the
 * stride-2 layers of ResNeXt-50 and RegNetY-400MF took 1.3-1.5x as long
 * that way.
 *
 * A run is P = 24 / G pixels (G * P sums in registers), always computed
 * whole: a tail's extra pixels read the zeroed slack after the copy and
 * are not stored. At stride 1 the zero-bordered copy is one flat plane:
 * output pixel q = oh * Wp + ow reads from copy pixel q on, and the Wp -
 * OW pixels past each row's end are computed and not stored (2 of 58 at
 * 56x56); other strides go row by row. Each sum runs over the taps in
 * (kh, kw) order, the G sums added in order of r, whatever the run or
 * thread. */
#define KCBG_IX(G, r, l) (((l) / (G)) * (G) + ((l) % (G) + (r)) % (G))
#define KCBG_ROT(v, G, r)                                                                          \
  __builtin_shufflevector(v, v, KCBG_IX(G, r, 0), KCBG_IX(G, r, 1), KCBG_IX(G, r, 2),              \
                          KCBG_IX(G, r, 3), KCBG_IX(G, r, 4), KCBG_IX(G, r, 5), KCBG_IX(G, r, 6),  \
                          KCBG_IX(G, r, 7), KCBG_IX(G, r, 8), KCBG_IX(G, r, 9),                    \
                          KCBG_IX(G, r, 10), KCBG_IX(G, r, 11), KCBG_IX(G, r, 12),                 \
                          KCBG_IX(G, r, 13), KCBG_IX(G, r, 14), KCBG_IX(G, r, 15))
/* s += sum r of pixel p, rotated, for r = 1 .. G - 1 as literals (the
 * shuffle's lanes must be constants); the branches fold away. */
#define KCBG_ADD_ROT(G, r) s += KCBG_ROT(acc[r][p], G, r);
#define KCBG_ADD_ROTS(G)                                                                           \
  do {                                                                                             \
    KCBG_ADD_ROT(G, 1)                                                                             \
    if ((G) > 2) {                                                                                 \
      KCBG_ADD_ROT(G, 2) KCBG_ADD_ROT(G, 3)                                                        \
    }                                                                                              \
    if ((G) > 4) {                                                                                 \
      KCBG_ADD_ROT(G, 4) KCBG_ADD_ROT(G, 5) KCBG_ADD_ROT(G, 6) KCBG_ADD_ROT(G, 7)                  \
    }                                                                                              \
  } while (0)
#define KCBG_PMAX 12

/* What a run reads: x, its first pixel at tap (0, 0); w, the block's
 * filters [T][G][16]; toff, each tap's offset from x; ps, floats between
 * the run's pixels. */
typedef struct kcbg_run {
  const float *x, *w;
  const int64_t *toff;
  int64_t T, ps;
} kcbg_run;
typedef void (*kcbg_fn)(const kcbg_run *u, kcb_v16 *out);

/* The loop over taps keeps whichever of the G filter vectors and the P
 * pixels are fewer in registers, beside the G * P sums. */
#define KCBG_FN(G)                                                                                 \
  static void kcbg_run_##G(const kcbg_run *u, kcb_v16 *out) {                                      \
    enum { P = 24 / (G) };                                                                         \
    kcb_v16 acc[G][P], z = {0};                                                                    \
    KCB_UNROLL for (int r = 0; r < (G); r++) KCB_UNROLL for (int p = 0; p < P; p++) acc[r][p] = z; \
    const float *w = u->w;                                                                         \
    for (int64_t t = 0; t < u->T; t++, w += (G) * KCPU_CB) {                                       \
      const float *xk = u->x + u->toff[t];                                                         \
      if ((G) <= P) {                                                                              \
        kcb_v16 wv[G];                                                                             \
        KCB_UNROLL for (int r = 0; r < (G); r++) wv[r] = *(const kcb_v16u *)(w + r * KCPU_CB);     \
        KCB_UNROLL for (int p = 0; p < P; p++) {                                                   \
          kcb_v16 xv = *(const kcb_v16u *)(xk + p * u->ps);                                        \
          KCB_UNROLL for (int r = 0; r < (G); r++) acc[r][p] += xv * wv[r];                        \
        }                                                                                          \
      } else {                                                                                     \
        kcb_v16 xv[P];                                                                             \
        KCB_UNROLL for (int p = 0; p < P; p++) xv[p] = *(const kcb_v16u *)(xk + p * u->ps);        \
        KCB_UNROLL for (int r = 0; r < (G); r++) {                                                 \
          kcb_v16 wv = *(const kcb_v16u *)(w + r * KCPU_CB);                                       \
          KCB_UNROLL for (int p = 0; p < P; p++) acc[r][p] += xv[p] * wv;                          \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    KCB_UNROLL for (int p = 0; p < P; p++) {                                                       \
      kcb_v16 s = acc[0][p];                                                                       \
      KCBG_ADD_ROTS(G);                                                                            \
      out[p] = s;                                                                                  \
    }                                                                                              \
  }
KCBG_FN(2)
KCBG_FN(4)
KCBG_FN(8)

typedef struct kcbg {
  kcb k; /* the epilogue's fields, toff; x: the copy [Mb][Hp][Wp][16]; w: [Mb][T][G][16] */
  int64_t G, sh, sw, Hp, Wp;
  int64_t flat;   /* runs go over the plane of rows of Wp pixels */
  int64_t P, nr;  /* run length; runs a block */
  int64_t nbands; /* tasks: Mb blocks x nbands bands of runs */
  kcbg_fn fn;
} kcbg;

/* The pixels of a run from virtual pixel q (flat: q = oh * Wp + ow;
 * rows: q = oh * OW + ow) that are outputs, stored by kcb_epilogue in
 * segments of one row. */
static void kcbg_store(const kcbg *g, const kcb_v16 *acc, int64_t mb, int64_t q) {
  const kcb *k = &g->k;
  int64_t n = g->P;
  if (!g->flat) { /* the pixels up to the row's end */
    int64_t left = k->OW - q % k->OW;
    kcb_epilogue(k, acc, 1, n < left ? n : left, mb, q);
    return;
  }
  int64_t end = (k->OHW / k->OW - 1) * g->Wp + k->OW; /* past the last row's outputs */
  for (int64_t p = 0; p < n && q + p < end;) {
    int64_t oh = (q + p) / g->Wp, ow = (q + p) % g->Wp, m = k->OW - ow;
    if (m <= 0) { /* the columns past a row's end */
      p += g->Wp - ow;
      continue;
    }
    m = m < n - p ? m : n - p;
    m = m < end - q - p ? m : end - q - p;
    kcb_epilogue(k, acc + p, 1, m, mb, oh * k->OW + ow);
    p += m;
  }
}

/* Tasks [b, e): task t is band t % nbands of the runs of block t /
 * nbands. */
static void kcbg_task(void *ctx, int64_t b, int64_t e) {
  const kcbg *g = ctx;
  const kcb *k = &g->k;
  kcb_v16 acc[KCBG_PMAX];
  int64_t rpr = (k->OW + g->P - 1) / g->P; /* runs a row (rows) */
  kcbg_run u = {.toff = k->toff, .T = k->T, .ps = g->sw * KCPU_CB};
  for (int64_t t = b; t < e; t++) {
    int64_t mb = t / g->nbands, band = t % g->nbands;
    int64_t r0 = g->nr * band / g->nbands, r1 = g->nr * (band + 1) / g->nbands;
    const float *xb = k->x + mb * g->Hp * g->Wp * KCPU_CB;
    u.w = k->w + mb * k->T * g->G * KCPU_CB;
    for (int64_t r = r0; r < r1; r++) {
      int64_t q;
      if (g->flat) {
        q = r * g->P;
        u.x = xb + q * KCPU_CB;
      } else {
        int64_t oh = r / rpr, ow = r % rpr * g->P;
        q = oh * k->OW + ow;
        u.x = xb + (oh * g->sh * g->Wp + ow * g->sw) * KCPU_CB;
      }
      g->fn(&u, acc);
      kcbg_store(g, acc, mb, q);
    }
  }
}

/* The tiled-group convolution of one image (k: its copy, output, bias,
 * residual and epilogue set up by the caller). */
static void kcbg_conv(kcbg *g, struct kcpu_pool *pool) {
  kcpu_parallel_for(pool, g->k.Mb * g->nbands, kcbg_task, g);
}

/* Sets up g's geometry, run function and tasks; returns the floats of
 * slack the copy needs past its last plane (the tail runs' reads). */
static int64_t kcbg_plan(kcbg *g, int64_t OH, int64_t OW, int64_t Mb, int64_t threads) {
  g->flat = g->sh == 1 && g->sw == 1;
  g->P = 24 / g->G;
  g->fn = g->G == 2 ? kcbg_run_2 : g->G == 4 ? kcbg_run_4 : kcbg_run_8;
  g->nr = g->flat ? ((OH - 1) * g->Wp + OW + g->P - 1) / g->P : OH * ((OW + g->P - 1) / g->P);
  g->nbands = kcb_bands((g->nr * g->P + 255) / 256, Mb, g->nr, threads); /* about 256 pixels */
  return (g->P * g->sw + 1) * KCPU_CB;
}

KCPU_PREBUILT void kcpu_k_conv2d_blocked(const float *X, int64_t x_blocked, const float *Wt,
                                         const float *Wpk, const float *bias, const float *res,
                                         float *Y, int64_t N, int64_t C, int64_t H, int64_t W,
                                         int64_t M, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                         int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                                         int64_t pl, int64_t group, int64_t act, float act_a,
                                         float act_b, struct kcpu_pool *pool) {
  float *own = NULL;
  int64_t gin = 0, gout = 0, cr = 0, depthwise = kcpu_convb_is_depthwise(C, M, group);
  if (!depthwise && !kcpu_convb_grouping(C, M, group, &gin, &gout, &cr))
    return; /* the emitter offers only the groupings above */
  if (!Wpk) {
    own = kcpu_alloc(kcpu_convb_packed_size(M, C, KH, KW, group, x_blocked) *
                     (int64_t)sizeof(float));
    if (!own)
      return; /* out of memory: the output is left unwritten, like any failed allocation here */
    kcpu_convb_pack(Wt, own, M, C, KH, KW, group, x_blocked);
    Wpk = own;
  }
  if (depthwise) {
    kcpu_convb_depthwise(X, Wpk, bias, res, Y, N, C, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl,
                         act, act_a, act_b, pool);
    kcpu_free(own);
    return;
  }
  if (N <= 0 || OH <= 0 || OW <= 0 || M <= 0) {
    kcpu_free(own);
    return;
  }
  int64_t Mb = (M + KCPU_CB - 1) / KCPU_CB, Cb = (C + KCPU_CB - 1) / KCPU_CB, T = KH * KW;
  int64_t tiled = kcpu_convb_tiled(C, M, group), threads = kcpu_pool_threads(pool);
  /* rows and columns of the (padded) image that the convolution reads */
  int64_t Hr = (OH - 1) * sh + (KH - 1) * dh + 1, Wr = (OW - 1) * sw + (KW - 1) * dw + 1;
  int64_t copy = tiled || !x_blocked || pt > 0 || pl > 0 || Hr > H || Wr > W;
  int64_t Lp = x_blocked || C >= KCPU_CB || tiled ? KCPU_CB : C, nb = (C + Lp - 1) / Lp;
  int64_t Hp = copy ? Hr : H, Wp = copy ? Wr : W;
  /* output rows that continue each other in the input: one row of runs */
  int64_t flat = sh * Wp == OW * sw;
  /* Where runs leave out the taps that read only padding (kcb_live), a
   * tap that runs reads rows of the image only, and columns at most a run
   * (KCB_PMAX pixels) past its edges: the copy holds those (and enough
   * rows for every run's start), not the whole padded plane. DeepLabV3's
   * ASPP layer dilated by 24 on a 28x28 map of 2048 channels had copied
   * 76x76 planes, 47 MB, for 6.4 MB of image: 20.9 -> 4.7 ms on two Zen
   * 5 cores (ONNX Runtime 4.5), the whole model at 224x224 124 -> 100 ms.
   * sr, sc: the copy's first row and column in padded coordinates. */
  int64_t sr = 0, sc = 0;
  if (copy && x_blocked && !tiled && !flat && T <= 64) {
    int64_t reach = (KCB_PMAX - 1) * sw, c0 = pl > reach ? pl - reach : 0;
    int64_t c1 = Wr < pl + W + reach ? Wr : pl + W + reach;
    /* every run's first pixel, taps or not, stays inside the copy */
    c1 = c1 - c0 > (OW - 1) * sw + 1 ? c1 : c0 + (OW - 1) * sw + 1;
    int64_t rows = (OH - 1) * sh + 1 > H ? (OH - 1) * sh + 1 : H;
    /* only where that saves a quarter of the plane: the usual 3x3 layer
     * padded by 1 keeps its copy as it was */
    if (4 * rows * (c1 - c0) <= 3 * Hp * Wp)
      sr = pt, sc = c0, Hp = rows, Wp = c1 - c0;
  }
  kcbg g = {.G = tiled ? C / group : 0, .sh = sh, .sw = sw, .Hp = Hp, .Wp = Wp};
  int64_t slack = tiled ? kcbg_plan(&g, OH, OW, Mb, threads) : 0;
  /* floats of the copy, whole vectors: the tap offsets after it stay aligned */
  int64_t xfl = copy ? (nb * Hp * Wp * Lp + slack + KCPU_CB - 1) / KCPU_CB * KCPU_CB : 0;
  char *scr = kcpu_alloc((Mb * KCPU_CB + xfl) * (int64_t)sizeof(float) +
                         (T + 1) * (int64_t)sizeof(int64_t));
  if (!scr) {
    kcpu_free(own);
    return;
  }
  float *bias16 = (float *)scr, *xp = bias16 + Mb * KCPU_CB;
  int64_t *toff = (int64_t *)(xp + xfl);
  for (int64_t m = 0; m < Mb * KCPU_CB; m++)
    bias16[m] = bias && m < M ? bias[m] : 0.0f;
  for (int64_t kh = 0; kh < KH; kh++)
    for (int64_t kw = 0; kw < KW; kw++)
      toff[kh * KW + kw] = ((kh * dh - sr) * Wp + kw * dw - sc) * Lp;
  toff[T] = 0;

  kcb k = {.w = Wpk,
           .bias = bias16,
           .toff = toff,
           .T = T,
           .C = C,
           .Lp = Lp,
           .nb = group == 1 ? nb : gin,
           .gout = gout,
           .cr = cr,
           .bs = Hp * Wp * Lp,
           .ps = sw * Lp,
           .rs = sh * Wp * Lp,
           .M = M,
           .Mb = Mb,
           .OHW = OH * OW,
           .OW = OW,
           .act = act,
           .act_a = act_a,
           .act_b = act_b};
  kcb_epilogue_masks(&k, act_a, act_b);
  k.NR = flat ? 1 : OH;
  k.clip = copy && !flat && x_blocked; /* plain inputs: the stem, whose taps are cheap */
  k.H = H, k.W = W, k.KW = KW, k.sh = sh, k.sw = sw, k.dh = dh, k.dw = dw, k.pt = pt, k.pl = pl;
  k.R = flat ? OH * OW : OW;
  k.ng = kcpu_convb_groups(Mb, gout);
  k.psv = k.ps == 16 ? 0 : 1;
  /* bands of about 512 pixels: a band's input stays in cache across its
   * groups */
  k.nbands = kcb_bands((OH * OW + 511) / 512, k.ng, k.NR * ((k.R + KCB_PMAX - 1) / KCB_PMAX),
                       threads);

  if (tiled) { /* the slack's and (plain input) the padding lanes' reads stay defined */
    g.k = k;
    for (int64_t i = x_blocked ? nb * Hp * Wp * Lp : 0; i < xfl; i++)
      xp[i] = 0.0f;
  }
  for (int64_t n = 0; n < N; n++) {
    if (copy) {
      kcb_pad a = {.X = X + n * (x_blocked ? Cb * KCPU_CB : C) * H * W,
                   .xp = xp,
                   .x_blocked = x_blocked,
                   .C = C,
                   .H = H,
                   .W = W,
                   .nb = nb,
                   .Hp = Hp,
                   .Wp = Wp,
                   .Lp = Lp,
                   .pt = pt - sr,
                   .pl = pl - sc};
      kcpu_parallel_for(pool, nb * Hp, kcb_pad_task, &a);
      k.x = xp;
    } else {
      k.x = X + n * Cb * H * W * KCPU_CB;
    }
    k.y = Y + n * Mb * OH * OW * KCPU_CB;
    k.res = res ? res + n * Mb * OH * OW * KCPU_CB : NULL;
    if (tiled) {
      g.k.x = k.x, g.k.y = k.y, g.k.res = k.res;
      kcbg_conv(&g, pool);
      continue;
    }
    kcpu_parallel_for(pool, k.nbands * k.ng, kcb_task, &k);
  }
  kcpu_free(scr);
  kcpu_free(own);
}
