/* plugins/cpu/kernels/quant_gemm.c: QLinearMatMul and QLinearConv on 8-bit
 * integers: u8 x s8 products summed in int32, then the requantization of
 * kiln/ops_ref.h, bit for bit the interpreter's.
 *
 * The product is A (u8, rows) times B (s8, columns) in the layouts of
 * quant_gemm.h, values moved into those types by flipping the top bit
 * with their zero points moved alike. QLinearMatMul: A is the activations
 * (packed at each call), B the weights (packed at compile time when
 * constant). QLinearConv: A is the filters (rows = output channels,
 * packed at compile time when constant), B the im2col of each image and
 * group, built straight into B's layout (padding cells hold the input's
 * zero point), so the result comes out row-major, NCHW. With a' = a - za,
 * b' = b - zb:
 *   sum a'b' = sum ab - zb * rowsum[m] - za * colsum[n] + K za zb
 * where the zero point of the weights is per row (conv) or per column
 * (matmul), so all but the product term fold into one constant per row or
 * column. Every step wraps in uint32: the exact result fits in int32 (the
 * emitter bounds K so that K * 255 * 255 does), so the wrapped sum is
 * exact.
 *
 * The product is tiled in 6 rows x 64 columns. On targets with
 * AVX512-VNNI (the emitter passes vnni = 1) the tile is 24 zmm
 * accumulators fed by vpdpbusd (u8 x s8, 4 products per int32 lane,
 * wrapping, never saturating); elsewhere a portable loop on int16 products
 * (never the saturating u8 x s8 -> s16 pair sums of vpmaddubsw). Integer
 * sums are exact, so results do not depend on the path or thread count. */
#include <string.h>

#include "kcpu_elem.h"
#include "kcpu_runtime.h"
#include "kiln/ops_ref.h"
#include "quant_gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef struct kcpu_qg {
  const uint8_t *a;      /* packed rows: K4 bytes each, M padded to MR */
  const int32_t *rowsum; /* per row */
  /* B: column panel p (64 columns) starts at b + p * pstride, and its
   * group g of 4 k (64 x 4 bytes) at goff[g] from there: a packed matrix
   * (quant_gemm.h: pstride 64 K4, goff[g] = 256 g), or a convolution's
   * input read in place (kcpu_qg_direct) */
  const int8_t *b;
  const int64_t *goff;
  int64_t pstride;
  const int32_t *colsum; /* per column (per_row only) */
  int64_t M, N, K4;
  /* per_row (conv): z, corr, mult and bias are per row, and
   *   acc = c - z[m] colsum[n] + corr[m];
   * else (matmul) they are per column, and
   *   acc = c - z[n] rowsum[m] + corr[n]. */
  int64_t per_row;
  const int32_t *z;    /* the weights' zero point (in their packed type) */
  const int32_t *corr; /* K za zb - (the other zero point) x (the other sum) */
  const double *mult;
  const double *bias; /* zeros without a bias */
  int64_t yzp;
  double lo, hi;
  uint8_t *y;
  int64_t ys_m; /* the result's row stride (its columns are contiguous) */
  /* grid_w > 0: column n is position n of a grid grid_w wide whose first
   * y_w columns are the result's row n / grid_w (the rest are dropped) */
  int64_t grid_w, y_w;
  int64_t vnni;
  int64_t rows_per_task; /* in micro-tiles */
} kcpu_qg;

/* ---- micro-kernels: c[MR][64] (+)= sum over kg groups of 4 of a . b ----
 * (group g of b at b + goff[g]; load: add to what c holds, the sums of the
 * earlier k blocks) */
#if defined(__x86_64__)
/* The name's kcpu_vnni_ prefix keeps these features when the plugin sets
 * each function's cpu and features (llvm_util.c); it is called only when
 * the target has them. */
#define KCPU_VNNI_ROW(r)                                                                           \
  {                                                                                                \
    int32_t q;                                                                                     \
    memcpy(&q, a + (r)*lda + 4 * g, 4);                                                            \
    __m512i av = _mm512_set1_epi32(q);                                                             \
    c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, b0);                                                \
    c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, b1);                                                \
    c##r##2 = _mm512_dpbusd_epi32(c##r##2, av, b2);                                                \
    c##r##3 = _mm512_dpbusd_epi32(c##r##3, av, b3);                                                \
  }
#define KCPU_VNNI_LOAD(r)                                                                          \
  __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = _mm512_setzero_si512(),                      \
          c##r##2 = _mm512_setzero_si512(), c##r##3 = _mm512_setzero_si512();                      \
  if (load) {                                                                                      \
    c##r##0 = _mm512_loadu_si512((const void *)(c + (r)*64));                                      \
    c##r##1 = _mm512_loadu_si512((const void *)(c + (r)*64 + 16));                                 \
    c##r##2 = _mm512_loadu_si512((const void *)(c + (r)*64 + 32));                                 \
    c##r##3 = _mm512_loadu_si512((const void *)(c + (r)*64 + 48));                                 \
  }
#define KCPU_VNNI_STORE(r)                                                                         \
  _mm512_storeu_si512((void *)(c + (r)*64), c##r##0);                                              \
  _mm512_storeu_si512((void *)(c + (r)*64 + 16), c##r##1);                                         \
  _mm512_storeu_si512((void *)(c + (r)*64 + 32), c##r##2);                                         \
  _mm512_storeu_si512((void *)(c + (r)*64 + 48), c##r##3);

__attribute__((target("avx512f,avx512bw,avx512vnni"), noinline)) static void
kcpu_vnni_qg_ukr(int64_t kg, const uint8_t *a, int64_t lda, const int8_t *b, const int64_t *goff,
                 int32_t *c, int load) {
  KCPU_VNNI_LOAD(0)
  KCPU_VNNI_LOAD(1) KCPU_VNNI_LOAD(2) KCPU_VNNI_LOAD(3) KCPU_VNNI_LOAD(4)
      KCPU_VNNI_LOAD(5) for (int64_t g = 0; g < kg; g++) {
    const int8_t *bg = b + goff[g];
    __m512i b0 = _mm512_loadu_si512((const void *)bg);
    __m512i b1 = _mm512_loadu_si512((const void *)(bg + 64));
    __m512i b2 = _mm512_loadu_si512((const void *)(bg + 128));
    __m512i b3 = _mm512_loadu_si512((const void *)(bg + 192));
    KCPU_VNNI_ROW(0)
    KCPU_VNNI_ROW(1) KCPU_VNNI_ROW(2) KCPU_VNNI_ROW(3) KCPU_VNNI_ROW(4) KCPU_VNNI_ROW(5)
  }
  KCPU_VNNI_STORE(0)
  KCPU_VNNI_STORE(1) KCPU_VNNI_STORE(2) KCPU_VNNI_STORE(3) KCPU_VNNI_STORE(4) KCPU_VNNI_STORE(5)
}
#endif

/* Portable (any target; the final O3 maps the vectors onto its width):
 * one row at a time, B's bytes widened to int16 and multiplied by the
 * row's 4 values as int16 (a u8 times an s8 fits: |p| <= 32640, no
 * saturation anywhere); each int32 lane then takes the sum of its two
 * int16 products, sign-extended, so lane i of accumulator v holds a
 * partial sum of column 8v + i/2, and the two partials of a column are
 * added at the end. 8 accumulators (64 columns) spelled out, as the
 * library is built with unrolling off. */
typedef int8_t kcpu_qv32b __attribute__((vector_size(32), aligned(1)));
typedef int16_t kcpu_qv32h __attribute__((vector_size(64)));
typedef int32_t kcpu_qv16i __attribute__((vector_size(64)));
typedef uint32_t kcpu_qv16u __attribute__((vector_size(64)));

#define KCPU_QANY_8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define KCPU_QANY_DECL(v) kcpu_qv16i acc##v = {0};
#define KCPU_QANY_LOAD(v)                                                                          \
  for (int i = 0; i < 8; i++)                                                                      \
    acc##v[2 * i] = cr[8 * (v) + i];
#define KCPU_QANY_STEP(v)                                                                          \
  {                                                                                                \
    kcpu_qv32h p = __builtin_convertvector(*(const kcpu_qv32b *)(bg + 32 * (v)), kcpu_qv32h) * av; \
    kcpu_qv16i l = (kcpu_qv16i)p;                                                                  \
    acc##v += ((kcpu_qv16i)((kcpu_qv16u)l << 16) >> 16) + (l >> 16);                               \
  }
#define KCPU_QANY_STORE(v)                                                                         \
  for (int i = 0; i < 8; i++)                                                                      \
    cr[8 * (v) + i] = (int32_t)((uint32_t)acc##v[2 * i] + (uint32_t)acc##v[2 * i + 1]);

static void kcpu_qg_ukr_any(int64_t kg, const uint8_t *a, int64_t lda, const int8_t *b,
                            const int64_t *goff, int32_t *c, int load) {
  for (int64_t r = 0; r < KCPU_QG_MR; r++) {
    const uint8_t *ar = a + r * lda;
    int32_t *cr = c + r * KCPU_QG_NR;
    KCPU_QANY_8(KCPU_QANY_DECL)
    if (load) {
      KCPU_QANY_8(KCPU_QANY_LOAD)
    }
    for (int64_t g = 0; g < kg; g++) {
      const int8_t *bg = b + goff[g];
      int16_t a0 = ar[4 * g], a1 = ar[4 * g + 1], a2 = ar[4 * g + 2], a3 = ar[4 * g + 3];
      kcpu_qv32h av = {a0, a1, a2, a3, a0, a1, a2, a3, a0, a1, a2, a3, a0, a1, a2, a3,
                       a0, a1, a2, a3, a0, a1, a2, a3, a0, a1, a2, a3, a0, a1, a2, a3};
      KCPU_QANY_8(KCPU_QANY_STEP)
    }
    KCPU_QANY_8(KCPU_QANY_STORE)
  }
}

/* Rows m0.. (mr of them) and columns n0.. (nr) of the tile c: the
 * zero-point correction, the bias, the requantization, the store. The int32
 * sum plus the bias is exact in double, so it is formed there; each row is
 * one pass over contiguous arrays (which the final O3 vectorizes); written
 * element by element this took as long as the products. */
static void kcpu_qg_epilogue(const kcpu_qg *q, const int32_t *c, int64_t m0, int64_t mr, int64_t n0,
                             int64_t nr) {
  double yzp = (double)q->yzp, lo = q->lo, hi = q->hi;
  uint8_t out[KCPU_QG_MR][KCPU_QG_NR];
  if (q->per_row) {
    const int32_t *cs = q->colsum + n0;
    for (int64_t r = 0; r < mr; r++) {
      int64_t m = m0 + r;
      uint32_t z = (uint32_t)q->z[m], corr = (uint32_t)q->corr[m];
      double mult = q->mult[m], bias = q->bias[m];
      const int32_t *cr = c + r * KCPU_QG_NR;
      if (mult - mult == 0) /* finite: no NaN can arise, two compares fewer */
        for (int64_t j = 0; j < nr; j++) {
          uint32_t acc = (uint32_t)cr[j] - z * (uint32_t)cs[j] + corr;
          double v = __builtin_rint(((double)(int32_t)acc + bias) * mult) + yzp;
          v = v < lo ? lo : v;
          out[r][j] = (uint8_t)(int32_t)(v > hi ? hi : v);
        }
      else
        for (int64_t j = 0; j < nr; j++) {
          uint32_t acc = (uint32_t)cr[j] - z * (uint32_t)cs[j] + corr;
          double v = (double)(int32_t)acc + bias;
          out[r][j] = (uint8_t)(int32_t)kiln_ref_requantize_f64(v, mult, yzp, lo, hi);
        }
    }
  } else {
    const int32_t *z = q->z + n0, *corr = q->corr + n0;
    const double *mult = q->mult + n0, *bias = q->bias + n0;
    for (int64_t r = 0; r < mr; r++) {
      uint32_t rs = (uint32_t)q->rowsum[m0 + r];
      const int32_t *cr = c + r * KCPU_QG_NR;
      for (int64_t j = 0; j < nr; j++) {
        uint32_t acc = (uint32_t)cr[j] - (uint32_t)z[j] * rs + (uint32_t)corr[j];
        double v = (double)(int32_t)acc + bias[j];
        out[r][j] = (uint8_t)(int32_t)kiln_ref_requantize_f64(v, mult[j], yzp, lo, hi);
      }
    }
  }
  if (!q->grid_w) {
    for (int64_t r = 0; r < mr; r++)
      memcpy(q->y + (m0 + r) * q->ys_m + n0, out[r], (size_t)nr);
    return;
  }
  /* grid rows: the first y_w of each grid_w columns are the result's */
  for (int64_t j = 0; j < nr;) {
    int64_t n = n0 + j, gr = n / q->grid_w, gc = n % q->grid_w;
    int64_t seg = q->grid_w - gc < nr - j ? q->grid_w - gc : nr - j;
    int64_t keep = gc < q->y_w ? (q->y_w - gc < seg ? q->y_w - gc : seg) : 0;
    for (int64_t r = 0; keep > 0 && r < mr; r++)
      memcpy(q->y + (m0 + r) * q->ys_m + gr * q->y_w + gc, out[r] + j, (size_t)keep);
    j += seg;
  }
}

/* k is taken in blocks of KCPU_QG_KC so that a panel's block of B
 * (KC x 64 bytes) stays in L1 while every micro-tile of the task's rows
 * runs over it; the tiles' sums wait in c between blocks. */
#define KCPU_QG_KC 1024
#define KCPU_QG_RUN 16 /* micro-tiles per task at most */

static void kcpu_qg_task(void *ctx, int64_t begin, int64_t end) {
  const kcpu_qg *q = ctx;
  int64_t panels = (q->N + KCPU_QG_NR - 1) / KCPU_QG_NR;
  int64_t tiles = (q->M + KCPU_QG_MR - 1) / KCPU_QG_MR;
  int32_t c[KCPU_QG_RUN][KCPU_QG_MR * KCPU_QG_NR] __attribute__((aligned(64)));
  for (int64_t t = begin; t < end; t++) {
    int64_t p = t % panels, chunk = t / panels;
    const int8_t *bp = q->b + p * q->pstride;
    int64_t n0 = p * KCPU_QG_NR, nr = q->N - n0 < KCPU_QG_NR ? q->N - n0 : KCPU_QG_NR;
    int64_t i0 = chunk * q->rows_per_task, i1 = i0 + q->rows_per_task;
    i1 = i1 < tiles ? i1 : tiles;
    for (int64_t k0 = 0; k0 < q->K4; k0 += KCPU_QG_KC) {
      int64_t kc = q->K4 - k0 < KCPU_QG_KC ? q->K4 - k0 : KCPU_QG_KC;
      const int64_t *gk = q->goff + k0 / 4;
      for (int64_t i = i0; i < i1; i++) {
        const uint8_t *ap = q->a + i * KCPU_QG_MR * q->K4 + k0;
#if defined(__x86_64__)
        if (q->vnni)
          kcpu_vnni_qg_ukr(kc / 4, ap, q->K4, bp, gk, c[i - i0], k0 > 0);
        else
#endif
          kcpu_qg_ukr_any(kc / 4, ap, q->K4, bp, gk, c[i - i0], k0 > 0);
      }
    }
    for (int64_t i = i0; i < i1; i++) {
      int64_t m0 = i * KCPU_QG_MR, mr = q->M - m0 < KCPU_QG_MR ? q->M - m0 : KCPU_QG_MR;
      kcpu_qg_epilogue(q, c[i - i0], m0, mr, n0, nr);
    }
  }
}

/* The product of packed A and packed B into the result, on the pool:
 * tasks are (panel of 64 columns, run of micro-tiles). */
static void kcpu_qg_run(kcpu_qg *q, struct kcpu_pool *pool) {
  int64_t panels = (q->N + KCPU_QG_NR - 1) / KCPU_QG_NR;
  int64_t tiles = (q->M + KCPU_QG_MR - 1) / KCPU_QG_MR;
  int64_t threads = kcpu_pool_threads(pool);
  /* at least 4 tasks per thread where the shape allows */
  int64_t per = tiles * panels / (4 * threads);
  per = per < 1 ? 1 : per > KCPU_QG_RUN ? KCPU_QG_RUN : per;
  q->rows_per_task = per;
  int64_t tasks = (tiles + per - 1) / per * panels;
  if (threads > 1 && tasks > 1)
    kcpu_parallel_for(pool, tasks, kcpu_qg_task, q);
  else
    kcpu_qg_task(q, 0, tasks);
}

/* ---- quantization parameters, per weight row or column ---- */
typedef struct kcpu_qg_cols {
  double *mult, *bias;
  int32_t *z, *corr;
  int64_t zx, yzp; /* the activations' zero point in their packed type; y's */
  double lo, hi;
} kcpu_qg_cols;

/* mult, z (the weights' zero point moved by w_shift into their packed
 * type) and the bias (as doubles; zeros when bias is NULL) for n weight
 * rows or columns, from the scales and zero points (per tensor, or one
 * each when ws_n / wzp_n > 1; a NULL zero point is 0); the activations'
 * zero point moved by x_shift. */
static void kcpu_qg_cols_fill(kcpu_qg_cols *k, int64_t n, const int32_t *bias, int64_t x_shift,
                              int64_t w_shift, int64_t y_s8, int64_t xs_t, const void *xs,
                              int64_t xzp_t, const void *xzp, int64_t ws_t, const void *ws,
                              int64_t ws_n, int64_t wzp_t, const void *wzp, int64_t wzp_n,
                              int64_t ys_t, const void *ys, int64_t yzp_t, const void *yzp) {
  int f64 = xs_t == KCPU_F64 || ws_t == KCPU_F64 || ys_t == KCPU_F64;
  double xsv = kcpu_e_ldf(xs_t, xs, 0), ysv = kcpu_e_ldf(ys_t, ys, 0);
  for (int64_t j = 0; j < n; j++) {
    k->mult[j] = kiln_ref_requant_multiplier(xsv, kcpu_e_ldf(ws_t, ws, ws_n > 1 ? j : 0), ysv, f64);
    int64_t z = wzp ? kcpu_e_ldi(wzp_t, wzp, wzp_n > 1 ? j : 0) : 0;
    k->z[j] = (int32_t)(z + w_shift);
    k->bias[j] = bias ? (double)bias[j] : 0.0;
  }
  k->zx = (xzp ? kcpu_e_ldi(xzp_t, xzp, 0) : 0) + x_shift;
  k->yzp = yzp ? kcpu_e_ldi(yzp_t, yzp, 0) : 0;
  k->lo = y_s8 ? -128.0 : 0.0;
  k->hi = y_s8 ? 127.0 : 255.0;
}

/* corr[j] = K zx z[j] - zx sums[j] for j < n (wrapping): the folded
 * zero-point terms, sums being the weights' own sums (colsum of a packed B
 * for matmul, rowsum of a packed A for conv). */
static void kcpu_qg_corr(const kcpu_qg_cols *k, const int32_t *sums, int64_t K, int64_t n,
                         const int32_t *z, int32_t *corr) {
  uint32_t zx = (uint32_t)k->zx;
  for (int64_t j = 0; j < n; j++)
    corr[j] = (int32_t)((uint32_t)K * zx * (uint32_t)z[j] - zx * (uint32_t)sums[j]);
}

/* The scratch of one call: [pack][per-weight arrays][goff: ngroups],
 * 64-byte aligned; NULL without memory. */
static uint8_t *kcpu_qg_scratch(int64_t pack_bytes, int64_t n, kcpu_qg_cols *k, int64_t ngroups,
                                int64_t **goff) {
  uint8_t *s = kcpu_alloc(pack_bytes + n * 24 + ngroups * 8 + 128);
  if (!s)
    return NULL;
  k->mult = (double *)(void *)(s + (pack_bytes + 63) / 64 * 64);
  k->bias = k->mult + n;
  *goff = (int64_t *)(k->bias + n);
  k->z = (int32_t *)(*goff + ngroups);
  k->corr = k->z + n;
  return s;
}

/* goff of a packed matrix: group g at 256 g in its panel */
static void kcpu_qg_goff_packed(int64_t *goff, int64_t K4) {
  for (int64_t g = 0; g < K4 / 4; g++)
    goff[g] = g * 4 * KCPU_QG_NR;
}

/* ---- QLinearMatMul: A (activations) rows packed in parallel ---- */
typedef struct kcpu_qg_apack {
  const uint8_t *src;
  int64_t K, K4, M, flip;
  uint8_t *dst;
  int32_t *rowsum;
} kcpu_qg_apack;

static void kcpu_qg_apack_fn(void *ctx, int64_t begin, int64_t end) {
  const kcpu_qg_apack *p = ctx;
  /* locals: stores through uint8_t * may alias p, which would keep the
   * loops scalar */
  uint8_t flip = (uint8_t)p->flip;
  int64_t K = p->K, K4 = p->K4;
  for (int64_t m = begin; m < end; m++) {
    uint8_t *d = p->dst + m * K4;
    uint32_t s = 0;
    if (m >= p->M) {
      memset(d, 0, (size_t)K4);
    } else {
      const uint8_t *r = p->src + m * K;
      for (int64_t k = 0; k < K; k++) {
        uint8_t v = (uint8_t)(r[k] ^ flip);
        d[k] = v;
        s += v;
      }
    }
    for (int64_t k = K; k < K4; k++)
      d[k] = 0;
    p->rowsum[m] = (int32_t)s;
  }
}

static void kcpu_qg_apack_run(kcpu_qg_apack *p, struct kcpu_pool *pool) {
  int64_t rows = kcpu_qg_rows_pad(p->M);
  if (kcpu_pool_threads(pool) > 1 && rows * p->K4 >= 32768)
    kcpu_parallel_for(pool, rows, kcpu_qg_apack_fn, p);
  else
    kcpu_qg_apack_fn(p, 0, rows);
}

/* QLinearMatMul: Y[M,N] per batch (batch b reads A + b*M*K and, when
 * b_batched, B matrix b) of A (u8, or s8 when a_s8) and B (packed
 * matrices Bp, or raw B to pack here: u8 when b_u8, else s8), requantized
 * into Y (s8 when y_s8, else u8). Scales are per tensor but ws (ws_n > 1:
 * one per column), zero points likewise (wzp_n), any may be NULL but the
 * scales. Returns without writing when scratch memory runs out. */
KCPU_PREBUILT void kcpu_k_qlinear_matmul(int64_t batch, int64_t b_batched, int64_t M, int64_t N,
                                         int64_t K, const void *A, int64_t a_s8, const int8_t *Bp,
                                         const void *B, int64_t b_u8, int64_t xs_t, const void *xs,
                                         int64_t xzp_t, const void *xzp, int64_t ws_t,
                                         const void *ws, int64_t ws_n, int64_t wzp_t,
                                         const void *wzp, int64_t wzp_n, int64_t ys_t,
                                         const void *ys, int64_t yzp_t, const void *yzp, void *Y,
                                         int64_t y_s8, int64_t vnni, struct kcpu_pool *pool) {
  int64_t nb = b_batched ? batch : 1;
  int64_t rows = b_batched ? M : M * batch; /* an unbatched B: one tall product */
  int64_t K4 = kcpu_qg_k4(K), one = kcpu_qg_packed_bytes(K, N), rows_pad = kcpu_qg_rows_pad(rows);
  kcpu_qg_cols k;
  int64_t *goff;
  uint8_t *scratch =
      kcpu_qg_scratch(rows_pad * (K4 + 4) + (Bp ? 0 : nb * one), N, &k, K4 / 4, &goff);
  if (!scratch)
    return;
  kcpu_qg_goff_packed(goff, K4);
  uint8_t *apk = scratch;
  int32_t *rowsum = (int32_t *)(void *)(apk + rows_pad * K4);
  int8_t *bpk = (int8_t *)(rowsum + rows_pad);
  if (!Bp) {
    for (int64_t i = 0; i < nb; i++)
      kcpu_qg_pack_b((const int8_t *)B + i * K * N, b_u8, K, N, N, 1, bpk + i * one);
    Bp = bpk;
  }
  kcpu_qg_cols_fill(&k, N, NULL, a_s8 ? 128 : 0, b_u8 ? -128 : 0, y_s8, xs_t, xs, xzp_t, xzp, ws_t,
                    ws, ws_n, wzp_t, wzp, wzp_n, ys_t, ys, yzp_t, yzp);
  for (int64_t i = 0; i < nb; i++) {
    kcpu_qg_apack ap = {.src = (const uint8_t *)A + i * rows * K,
                        .K = K,
                        .K4 = K4,
                        .M = rows,
                        .flip = a_s8 ? 0x80 : 0,
                        .dst = apk,
                        .rowsum = rowsum};
    kcpu_qg_apack_run(&ap, pool);
    const int8_t *bm = Bp + i * one;
    kcpu_qg_corr(&k, (const int32_t *)(const void *)(bm + K4 * kcpu_qg_npad(N)), K, N, k.z, k.corr);
    kcpu_qg q = {.a = apk,
                 .rowsum = rowsum,
                 .b = bm,
                 .goff = goff,
                 .pstride = KCPU_QG_NR * K4,
                 .M = rows,
                 .N = N,
                 .K4 = K4,
                 .z = k.z,
                 .corr = k.corr,
                 .mult = k.mult,
                 .bias = k.bias,
                 .yzp = k.yzp,
                 .lo = k.lo,
                 .hi = k.hi,
                 .y = (uint8_t *)Y + i * rows * N,
                 .ys_m = N,
                 .vnni = vnni};
    kcpu_qg_run(&q, pool);
  }
  kcpu_free(scratch);
}

/* ---- QLinearConv: the im2col of one image and group as B ---- */
typedef struct kcpu_qg_bpack {
  const uint8_t *x; /* the group's first channel of the image */
  int64_t K, K4, P, H, W, OW, KH, KW, sh, sw, dh, dw, pt, pl;
  uint8_t flip, fill; /* fill: the input's zero point, as stored (unflipped) */
  int8_t *dst;        /* kcpu_qg_packed_bytes(K, P) */
} kcpu_qg_bpack;

/* Row k of the im2col (tap (c, kh, kw)) at output positions p0 .. p0+np-1
 * into row[0 .. np), as stored in x; cells in the padding hold fill. */
static void kcpu_qg_im2col_row(const kcpu_qg_bpack *p, int64_t k, int64_t p0, int64_t np,
                               uint8_t *row) {
  int64_t taps = p->KH * p->KW, c = k / taps, kh = k % taps / p->KW, kw = k % p->KW;
  const uint8_t *plane = p->x + c * p->H * p->W;
  if (taps == 1 && p->sh == 1 && p->sw == 1 && p->pt == 0 && p->pl == 0 && p->OW == p->W &&
      p->P <= p->H * p->W) { /* 1x1 over the whole plane: the row is the plane */
    memcpy(row, plane + p0, (size_t)np);
    return;
  }
  int64_t oh = p0 / p->OW, ow = p0 % p->OW;
  for (int64_t i = 0; i < np; oh++, ow = 0) {
    int64_t seg = np - i < p->OW - ow ? np - i : p->OW - ow;
    int64_t ih = oh * p->sh - p->pt + kh * p->dh;
    if (ih < 0 || ih >= p->H) {
      memset(row + i, p->fill, (size_t)seg);
    } else {
      const uint8_t *xr = plane + ih * p->W;
      int64_t iw0 = ow * p->sw - p->pl + kw * p->dw;
      if (p->sw == 1) {
        int64_t lo = iw0 < 0 ? -iw0 : 0, hi = p->W - iw0 < seg ? p->W - iw0 : seg;
        if (hi < lo)
          hi = lo;
        memset(row + i, p->fill, (size_t)lo);
        memcpy(row + i + lo, xr + iw0 + lo, (size_t)(hi - lo));
        memset(row + i + hi, p->fill, (size_t)(seg - hi));
      } else {
        for (int64_t j = 0; j < seg; j++) {
          int64_t iw = iw0 + j * p->sw;
          row[i + j] = iw >= 0 && iw < p->W ? xr[iw] : p->fill;
        }
      }
    }
    i += seg;
  }
}

/* Runs of panels [begin, end) of B (run r: panels r*KCPU_QG_BRUN ..): for
 * each group of 4 taps, 4 im2col rows over the run's positions (one call
 * per row and run: building a row costs about as much per call as per
 * position), interleaved panel by panel into the VNNI layout (flipped to
 * s8) and summed into the positions' column sums. */
#define KCPU_QG_BRUN 16

static void kcpu_qg_bpack_fn(void *ctx, int64_t begin, int64_t end) {
  const kcpu_qg_bpack *p = ctx;
  int64_t NP = kcpu_qg_npad(p->P), panels = NP / KCPU_QG_NR, K4 = p->K4;
  uint8_t flip = p->flip; /* a local: the int8_t stores below may alias p */
  int32_t *colsum = (int32_t *)(void *)(p->dst + K4 * NP);
  uint8_t rows[4][KCPU_QG_BRUN * KCPU_QG_NR];
  for (int64_t run = begin; run < end; run++) {
    int64_t pn0 = run * KCPU_QG_BRUN,
            pn1 = pn0 + KCPU_QG_BRUN < panels ? pn0 + KCPU_QG_BRUN : panels;
    int64_t p0 = pn0 * KCPU_QG_NR, p1 = pn1 * KCPU_QG_NR < p->P ? pn1 * KCPU_QG_NR : p->P;
    int64_t width = (pn1 - pn0) * KCPU_QG_NR;
    for (int64_t j = p0; j < pn1 * KCPU_QG_NR; j++)
      colsum[j] = 0;
    for (int64_t k0 = 0; k0 < K4; k0 += 4) {
      for (int64_t q = 0; q < 4; q++) {
        /* taps past K and positions past P are 0 in B's type */
        if (k0 + q < p->K)
          kcpu_qg_im2col_row(p, k0 + q, p0, p1 - p0, rows[q]);
        else
          memset(rows[q], p->flip, (size_t)(p1 - p0));
        memset(rows[q] + (p1 - p0), p->flip, (size_t)(width - (p1 - p0)));
      }
      for (int64_t pn = pn0; pn < pn1; pn++) {
        int8_t *restrict g = p->dst + pn * KCPU_QG_NR * K4 + k0 * KCPU_QG_NR;
        int32_t *restrict cs = colsum + pn * KCPU_QG_NR;
        int64_t o = (pn - pn0) * KCPU_QG_NR;
        for (int64_t j = 0; j < KCPU_QG_NR; j++) {
          int8_t b0 = (int8_t)(rows[0][o + j] ^ flip), b1 = (int8_t)(rows[1][o + j] ^ flip);
          int8_t b2 = (int8_t)(rows[2][o + j] ^ flip), b3 = (int8_t)(rows[3][o + j] ^ flip);
          g[4 * j] = b0, g[4 * j + 1] = b1, g[4 * j + 2] = b2, g[4 * j + 3] = b3;
          cs[j] += b0 + b1 + b2 + b3;
        }
      }
    }
  }
}

/* ---- QLinearConv, depthwise (one input and one output channel per
 * group): direct, in f32, a task's planes one after another.
 *
 * The sums are exact in f32: each product (x - zx)(w - zw) is at most 255^2
 * in magnitude, so with at most 256 taps every partial sum stays below
 * 2^24 and adding or fusing in any order gives the same integer as int32
 * would (larger windows take the int32 loop below).
 *
 * Layout: the padded plane minus its zero point, split by both strides
 * into sh x sw phases (phase (a, b) holds padded rows a, a + sh, ... and
 * columns b, b + sw, ...), each Hq x Wq, Wq = OW + the window's column
 * reach in phase columns. Output (oh, ow) and tap (kh, kw) then read
 * phase ((kh dh) % sh, (kw dw) % sw) at n + (kh dh / sh) Wq + kw dw / sw,
 * n = oh Wq + ow: every output of the plane is one flat run of OH Wq
 * positions, computed 16 at a time (the Wq - OW extra columns are dropped
 * at the store), so a 7-wide plane fills its vectors instead of using 7
 * lanes of 16 per row. The padding is zero (the zero point minus itself)
 * and the copied cells are the same for every plane, so the buffer is
 * zeroed once per task. The requantization is one pass over the plane's
 * sums with locals only, which vectorizes. ---- */
typedef float kcpu_qdwf __attribute__((vector_size(64), aligned(4)));
typedef uint8_t kcpu_qv32u8 __attribute__((vector_size(32), aligned(1)));
typedef uint8_t kcpu_qv16u8 __attribute__((vector_size(16)));
typedef int8_t kcpu_qv16s8 __attribute__((vector_size(16)));
typedef uint8_t kcpu_qv16u8a __attribute__((vector_size(16), aligned(1)));

typedef struct kcpu_qg_dw {
  const uint8_t *x, *w;
  int64_t x_s8, w_s8, C, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl;
  int64_t Hq, Wq;      /* a phase's rows and columns */
  int64_t npos, plane; /* OH Wq rounded up to 16; a phase's length */
  const kcpu_qg_cols *k;
  uint8_t *y;
} kcpu_qg_dw;

/* Where a plane's rows go, the same for every plane (made once per task,
 * so that filling a plane divides nothing): input row i's cells start at
 * buf + row[i] (-1: never read), phase b's run of it is positions
 * [a0[b], a1[b]) of that phase's row, from input column b + sw at - pl. */
typedef struct kcpu_qg_dwmap {
  int64_t *row, *a0, *a1;
} kcpu_qg_dwmap;

static void kcpu_qg_dw_map(const kcpu_qg_dw *d, kcpu_qg_dwmap *m) {
  int64_t sh = d->sh, sw = d->sw, pl = d->pl;
  for (int64_t b = 0; b < sw; b++) {
    m->a0[b] = b >= pl ? 0 : (pl - b + sw - 1) / sw;
    int64_t a1 = (d->W - 1 + pl - b) / sw + 1;
    m->a1[b] = a1 > d->Wq ? d->Wq : a1;
  }
  for (int64_t i = 0; i < d->H; i++) {
    int64_t r = i + d->pt;
    m->row[i] = r / sh < d->Hq ? r % sh * sw * d->plane + r / sh * d->Wq : -1;
  }
}

/* One input plane into the phases, minus the zero point, 16 cells at a
 * time while the bytes read stay in the plane. At stride 2 the even bytes
 * of 32 are picked by a shuffle (as a strided loop this was scalar and
 * took two thirds of the time), the last 16 of a run overlapping the
 * ones before. At stride 1 a row's last piece runs past the row's end
 * (a 7-wide row is then one vector instead of 7 scalars). */
static void kcpu_qg_dw_fill(const kcpu_qg_dw *d, const kcpu_qg_dwmap *m, const uint8_t *xs,
                            float zx, float *buf) {
  int64_t sw = d->sw, W = d->W, pl = d->pl, plane = d->plane, H = d->H;
  int s8 = (int)d->x_s8;
  for (int64_t i = 0; i < H; i++) {
    if (m->row[i] < 0)
      continue;
    const uint8_t *src = xs + i * W;
    int64_t lim = (H - i) * W; /* bytes from src to the plane's end */
    for (int64_t b = 0; b < sw; b++) {
      int64_t a0 = m->a0[b], a1 = m->a1[b], at = a0;
      float *restrict dq = buf + m->row[i] + b * plane;
      const uint8_t *sq = src + b - pl;
      if (sw == 1 && a0 < a1) {
        for (; at < a1 && at - pl + 16 <= lim; at += 16) {
          kcpu_qv16u8 e = *(const kcpu_qv16u8a *)(sq + at);
          kcpu_qdwf f = s8 ? __builtin_convertvector((kcpu_qv16s8)e, kcpu_qdwf)
                           : __builtin_convertvector(e, kcpu_qdwf);
          *(kcpu_qdwf *)(dq + at) = f - zx;
        }
        /* the padding after the run, which the last piece may have
         * overwritten (past it: the next row of the phase, rewritten
         * after this, or the phase's 16 cells of slack) */
        *(kcpu_qdwf *)(dq + a1) = (kcpu_qdwf){0};
      } else if (sw == 2) {
        while (a1 - a0 >= 16 && at < a1) {
          at = at + 16 > a1 ? a1 - 16 : at;
          if (b - pl + 2 * at + 32 > lim)
            break;
          kcpu_qv32u8 v = *(const kcpu_qv32u8 *)(sq + 2 * at);
          kcpu_qv16u8 e = __builtin_shufflevector(v, v, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22,
                                                  24, 26, 28, 30);
          kcpu_qdwf f = s8 ? __builtin_convertvector((kcpu_qv16s8)e, kcpu_qdwf)
                           : __builtin_convertvector(e, kcpu_qdwf);
          *(kcpu_qdwf *)(dq + at) = f - zx;
          at += 16;
        }
      }
      if (s8)
        for (; at < a1; at++)
          dq[at] = (float)(int8_t)sq[at * sw] - zx;
      else
        for (; at < a1; at++)
          dq[at] = (float)sq[at * sw] - zx;
    }
  }
}

static void kcpu_qg_dw_fn(void *ctx, int64_t begin, int64_t end) {
  const kcpu_qg_dw *d = ctx;
  const kcpu_qg_cols *k = d->k;
  int64_t taps = d->KH * d->KW, bufn = d->sh * d->sw * d->plane, npos = d->npos;
  /* the phases, the plane's sums, its bytes, the taps' offsets, the map,
   * the taps' weights */
  int64_t nmap = d->H + 2 * d->sw;
  uint8_t *mem = kcpu_alloc(bufn * 4 + npos * 5 + (taps + nmap) * 12 + 256);
  if (!mem)
    return;
  float *buf = (float *)(void *)mem;
  float *acc = buf + (bufn + 15) / 16 * 16;
  uint8_t *out = (uint8_t *)(acc + npos);
  int64_t *toff = (int64_t *)(void *)(out + (npos + 16 + 63) / 64 * 64);
  kcpu_qg_dwmap map = {.row = toff + taps};
  map.a0 = map.row + d->H, map.a1 = map.a0 + d->sw;
  float *wt = (float *)(map.a1 + d->sw);
  kcpu_qg_dw_map(d, &map);
  memset(buf, 0, (size_t)bufn * sizeof *buf);
  for (int64_t t = 0; t < taps; t++) {
    int64_t rh = t / d->KW * d->dh, cw = t % d->KW * d->dw;
    toff[t] = (rh % d->sh * d->sw + cw % d->sw) * d->plane + rh / d->sh * d->Wq + cw / d->sw;
  }
  float zx = (float)k->zx;
  double yzp = (double)k->yzp, lo = k->lo, hi = k->hi;
  int64_t OW = d->OW, Wq = d->Wq;
  for (int64_t pc = begin; pc < end; pc++) { /* (image, channel) planes */
    int64_t c = pc % d->C;
    kcpu_qg_dw_fill(d, &map, d->x + pc * d->H * d->W, zx, buf);
    int32_t zw = k->z[c];
    for (int64_t t = 0; t < taps; t++) {
      uint8_t b = d->w[c * taps + t];
      wt[t] = (float)((d->w_s8 ? (int32_t)(int8_t)b : (int32_t)b) - zw);
    }
    /* 4 vectors at a time: one chain of dependent adds per vector would
     * wait on the add's latency at every tap */
    int64_t o = 0;
    for (; o + 64 <= npos; o += 64) {
      kcpu_qdwf s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
      for (int64_t t = 0; t < taps; t++) {
        const float *bt = buf + toff[t] + o;
        float wv = wt[t];
        s0 += wv * *(const kcpu_qdwf *)bt;
        s1 += wv * *(const kcpu_qdwf *)(bt + 16);
        s2 += wv * *(const kcpu_qdwf *)(bt + 32);
        s3 += wv * *(const kcpu_qdwf *)(bt + 48);
      }
      *(kcpu_qdwf *)(void *)(acc + o) = s0;
      *(kcpu_qdwf *)(void *)(acc + o + 16) = s1;
      *(kcpu_qdwf *)(void *)(acc + o + 32) = s2;
      *(kcpu_qdwf *)(void *)(acc + o + 48) = s3;
    }
    for (; o < npos; o += 16) {
      kcpu_qdwf s0 = {0};
      for (int64_t t = 0; t < taps; t++)
        s0 += wt[t] * *(const kcpu_qdwf *)(buf + toff[t] + o);
      *(kcpu_qdwf *)(void *)(acc + o) = s0;
    }
    double mult = k->mult[c], bias = k->bias[c];
    if (mult - mult == 0) /* finite: no NaN can arise, so two compares fewer */
      for (int64_t n = 0; n < npos; n++) {
        double v = __builtin_rint(((double)acc[n] + bias) * mult) + yzp;
        v = v < lo ? lo : v;
        out[n] = (uint8_t)(int32_t)(v > hi ? hi : v);
      }
    else
      for (int64_t n = 0; n < npos; n++)
        out[n] =
            (uint8_t)(int32_t)kiln_ref_requantize_f64((double)acc[n] + bias, mult, yzp, lo, hi);
    /* the kept columns, 16 bytes at a time (out has npos + 16 bytes);
     * a row's last piece may run into the next row, which is written
     * after it, but not past the plane (another task's) */
    uint8_t *yp = d->y + pc * d->OH * OW;
    int64_t OH = d->OH;
    for (int64_t oh = 0; oh < OH; oh++) {
      uint8_t *yr = yp + oh * OW;
      const uint8_t *orow = out + oh * Wq;
      int64_t room = (OH - oh) * OW, j = 0;
      for (; j < OW && j + 16 <= room; j += 16)
        *(kcpu_qv16u8a *)(yr + j) = *(const kcpu_qv16u8a *)(orow + j);
      for (; j < OW; j++)
        yr[j] = orow[j];
    }
  }
  kcpu_free(mem);
}

/* The same in int32 (windows of more than 256 taps, where f32 sums could
 * round): a plane at a time, the plane minus its zero point as int32 on
 * the padded grid, each output summed over its taps. */
typedef struct kcpu_qg_dwi {
  const kcpu_qg_dw *d;
  int64_t Hp, Wp;
} kcpu_qg_dwi;

static void kcpu_qg_dwi_fn(void *ctx, int64_t begin, int64_t end) {
  const kcpu_qg_dwi *e = ctx;
  const kcpu_qg_dw *d = e->d;
  const kcpu_qg_cols *k = d->k;
  int64_t taps = d->KH * d->KW, Hp = e->Hp, Wp = e->Wp;
  int32_t *xp = kcpu_alloc((Hp * Wp + taps) * 4);
  if (!xp)
    return;
  int32_t *wt = xp + Hp * Wp;
  int32_t zx = (int32_t)k->zx;
  double yzp = (double)k->yzp, lo = k->lo, hi = k->hi;
  for (int64_t pc = begin; pc < end; pc++) {
    int64_t c = pc % d->C;
    const uint8_t *xs = d->x + pc * d->H * d->W;
    for (int64_t i = 0; i < Hp * Wp; i++) {
      int64_t ih = i / Wp - d->pt, iw = i % Wp - d->pl;
      int32_t v = 0;
      if (ih >= 0 && ih < d->H && iw >= 0 && iw < d->W) {
        uint8_t b = xs[ih * d->W + iw];
        v = (d->x_s8 ? (int32_t)(int8_t)b : (int32_t)b) - zx;
      }
      xp[i] = v;
    }
    for (int64_t t = 0; t < taps; t++) {
      uint8_t b = d->w[c * taps + t];
      wt[t] = (d->w_s8 ? (int32_t)(int8_t)b : (int32_t)b) - k->z[c];
    }
    uint8_t *yp = d->y + pc * d->OH * d->OW;
    for (int64_t oh = 0; oh < d->OH; oh++)
      for (int64_t ow = 0; ow < d->OW; ow++) {
        uint32_t s = 0;
        for (int64_t t = 0; t < taps; t++)
          s += (uint32_t)wt[t] *
               (uint32_t)xp[(oh * d->sh + t / d->KW * d->dh) * Wp + ow * d->sw + t % d->KW * d->dw];
        double v = (double)(int32_t)s + k->bias[c];
        yp[oh * d->OW + ow] = (uint8_t)(int32_t)kiln_ref_requantize_f64(v, k->mult[c], yzp, lo, hi);
      }
  }
  kcpu_free(xp);
}

/* ---- QLinearConv at stride 1: the input read in place ----
 * One image's group of Cg channels becomes C4 = ceil(Cg / 4) planes of
 * 4-byte cells (the 4 channels of a quad, flipped to s8) on a grid Wg wide
 * holding the padded input (padding cells: the zero point; channels past
 * Cg: 0); a tap (kh, kw) of output position n (grid index oh Wg + ow) is
 * then the cell at n + kh dh Wg + kw dw, so 64 consecutive positions are
 * 256 consecutive bytes: B's panels without an im2col. Cells past the
 * grid (read only for dropped columns) hold the zero point too. Column
 * sums: each cell's sum over the real channels, then per position the sum
 * over the taps. */
static void kcpu_qg_direct_fill(const uint8_t *x, int64_t H, int64_t W, int64_t Cg, int64_t plane,
                                int64_t Wg, int64_t Hg, int64_t pt, int64_t pl, uint8_t flip,
                                int8_t zx, int64_t KH, int64_t KW, int64_t dh, int64_t dw,
                                int64_t npos, int8_t *buf, int32_t *colsum, int32_t *cellsum) {
  /* every cell starts as the zero point in all 4 channels (channels past
   * Cg meet zero weights, so any value does), every cell sum as Cg of
   * them; copying a pixel adds its difference */
  int64_t C4 = (Cg + 3) / 4;
  for (int64_t i = 0; i < C4 * plane * 4; i++)
    buf[i] = zx;
  for (int64_t i = 0; i < plane; i++)
    cellsum[i] = (int32_t)Cg * zx;
  int64_t j1 = W < Wg - pl ? W : Wg - pl; /* input columns that land on the grid */
  int32_t z4 = 4 * (int32_t)zx;
  for (int64_t c4 = 0; c4 < C4; c4++) {
    const uint8_t *xc = x + c4 * 4 * H * W;
    int64_t nq = Cg - c4 * 4 < 4 ? Cg - c4 * 4 : 4;
    for (int64_t i = 0; j1 > 0 && i < H && i + pt < Hg; i++) {
      int64_t at = (i + pt) * Wg + pl;
      int8_t *restrict d = buf + (c4 * plane + at) * 4;
      int32_t *restrict cs = cellsum + at;
      const uint8_t *r0 = xc + i * W;
      if (nq == 4) { /* a whole quad: interleave 4 rows (vectorizes) */
        const uint8_t *r1 = r0 + H * W, *r2 = r1 + H * W, *r3 = r2 + H * W;
        for (int64_t j = 0; j < j1; j++) {
          int8_t b0 = (int8_t)(r0[j] ^ flip), b1 = (int8_t)(r1[j] ^ flip);
          int8_t b2 = (int8_t)(r2[j] ^ flip), b3 = (int8_t)(r3[j] ^ flip);
          d[4 * j] = b0, d[4 * j + 1] = b1, d[4 * j + 2] = b2, d[4 * j + 3] = b3;
          cs[j] += b0 + b1 + b2 + b3 - z4;
        }
      } else {
        for (int64_t q = 0; q < nq; q++)
          for (int64_t j = 0; j < j1; j++) {
            int8_t v = (int8_t)(r0[q * H * W + j] ^ flip);
            d[4 * j + q] = v;
            cs[j] += v - zx;
          }
      }
    }
  }
  for (int64_t n = 0; n < npos; n++)
    colsum[n] = 0;
  for (int64_t kh = 0; kh < KH; kh++)
    for (int64_t kw = 0; kw < KW; kw++) {
      const int32_t *restrict cs = cellsum + kh * dh * Wg + kw * dw;
      for (int64_t n = 0; n < npos; n++)
        colsum[n] += cs[n];
    }
}

/* QLinearConv, 2-D NCHW (1-D: H = KH = OH = 1): X [N, C, H, W] (u8, or s8
 * when x_s8), weights [M, C/group, KH, KW] (packed per group as A in Wp,
 * or raw Wt to pack here: s8 when w_s8, else u8), bias [M] int32 or NULL,
 * Y [N, M, OH, OW]. Each (image, group) is one product: the group's
 * filters (rows) times the im2col (columns: output positions); depthwise
 * (given raw filters) is direct. */
KCPU_PREBUILT void kcpu_k_qlinear_conv(const void *X, int64_t x_s8, const uint8_t *Wp,
                                       const void *Wt, int64_t w_s8, const int32_t *bias, void *Y,
                                       int64_t N, int64_t C, int64_t H, int64_t W, int64_t M,
                                       int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                                       int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                                       int64_t group, int64_t xs_t, const void *xs, int64_t xzp_t,
                                       const void *xzp, int64_t ws_t, const void *ws, int64_t ws_n,
                                       int64_t wzp_t, const void *wzp, int64_t wzp_n, int64_t ys_t,
                                       const void *ys, int64_t yzp_t, const void *yzp, int64_t y_s8,
                                       int64_t vnni, struct kcpu_pool *pool) {
  int64_t Cg = C / group, Mg = M / group, K = Cg * KH * KW, K4 = kcpu_qg_k4(K), P = OH * OW;
  int64_t aone = kcpu_qg_apacked_bytes(Mg, K), bone = kcpu_qg_packed_bytes(K, P);
  kcpu_qg_cols k;
  if (Cg == 1 && Mg == 1 && Wt) { /* depthwise, the raw filters at hand */
    int64_t *unused;
    uint8_t *cols = kcpu_qg_scratch(0, M, &k, 0, &unused);
    if (!cols)
      return;
    kcpu_qg_cols_fill(&k, M, bias, 0, 0, y_s8, xs_t, xs, xzp_t, xzp, ws_t, ws, ws_n, wzp_t, wzp,
                      wzp_n, ys_t, ys, yzp_t, yzp);
    kcpu_qg_dw d = {.x = X,
                    .w = Wt,
                    .x_s8 = x_s8,
                    .w_s8 = w_s8,
                    .C = C,
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
                    .Hq = OH + (KH - 1) * dh / sh,
                    .Wq = OW + (KW - 1) * dw / sw,
                    .k = &k,
                    .y = Y};
    /* a phase holds every position read: up to npos plus the reach */
    d.npos = (OH * d.Wq + 15) / 16 * 16;
    d.plane = d.npos + (KH - 1) * dh / sh * d.Wq + (KW - 1) * dw / sw;
    d.plane = (d.plane > d.Hq * d.Wq ? d.plane : d.Hq * d.Wq) + 16; /* + the fill's slack */
    kcpu_qg_dwi e = {
        .d = &d, .Hp = (OH - 1) * sh + (KH - 1) * dh + 1, .Wp = (OW - 1) * sw + (KW - 1) * dw + 1};
    void (*fn)(void *, int64_t, int64_t) = KH * KW <= 256 ? kcpu_qg_dw_fn : kcpu_qg_dwi_fn;
    void *ctx = KH * KW <= 256 ? (void *)&d : (void *)&e;
    if (kcpu_pool_threads(pool) > 1 && N * C > 1)
      kcpu_parallel_for(pool, N * C, fn, ctx);
    else
      fn(ctx, 0, N * C);
    kcpu_free(cols);
    return;
  }
  /* direct: the input in place, on a grid Wg wide (OW plus the window's
   * reach; the extra columns are computed and dropped) */
  int direct = kcpu_qg_conv_direct(sh, sw, KH * KW, Cg, Mg);
  int64_t KA = direct ? kcpu_qg_direct_k(Cg, KH, KW) : K4; /* A's (padded) k */
  int64_t taps = KH * KW, C4 = (Cg + 3) / 4, Wg = OW + (KW - 1) * dw, NG = OH * Wg;
  int64_t reach = (KH - 1) * dh * Wg + (KW - 1) * dw, plane = kcpu_qg_npad(NG) + reach;
  aone = kcpu_qg_apacked_bytes(Mg, KA);
  if (direct) /* C4 planes of 4-byte cells, the column sums, the cells' channel sums */
    bone = (C4 * plane * 4 + 63) / 64 * 64 + kcpu_qg_npad(NG) * 4 + plane * 4;
  int64_t *goff;
  uint8_t *scratch = kcpu_qg_scratch(bone + (Wp ? 0 : group * aone), M, &k, KA / 4, &goff);
  if (!scratch)
    return;
  int8_t *bpk = (int8_t *)scratch;
  if (!Wp) {
    uint8_t *apk = scratch + bone;
    for (int64_t g = 0; g < group; g++) {
      const uint8_t *wg = (const uint8_t *)Wt + g * Mg * K;
      if (direct)
        kcpu_qg_pack_a_direct(wg, w_s8, Mg, Cg, KH, KW, apk + g * aone);
      else
        kcpu_qg_pack_a(wg, w_s8, Mg, K, K, apk + g * aone);
    }
    Wp = apk;
  }
  kcpu_qg_cols_fill(&k, M, bias, x_s8 ? 0 : -128, w_s8 ? 128 : 0, y_s8, xs_t, xs, xzp_t, xzp, ws_t,
                    ws, ws_n, wzp_t, wzp, wzp_n, ys_t, ys, yzp_t, yzp);
  int64_t MP = kcpu_qg_rows_pad(Mg);
  for (int64_t g = 0; g < group; g++)
    kcpu_qg_corr(&k, (const int32_t *)(const void *)(Wp + g * aone + MP * KA), K, Mg, k.z + g * Mg,
                 k.corr + g * Mg);
  uint8_t flip = x_s8 ? 0 : 0x80;
  if (direct) /* group (quad, tap): the tap's offset in the quad's plane */
    for (int64_t c4 = 0; c4 < C4; c4++)
      for (int64_t t = 0; t < taps; t++)
        goff[c4 * taps + t] = (c4 * plane + t / KW * dh * Wg + t % KW * dw) * 4;
  else
    kcpu_qg_goff_packed(goff, K4);
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < group; g++) {
      const uint8_t *xg = (const uint8_t *)X + (n * C + g * Cg) * H * W;
      const uint8_t *a = Wp + g * aone;
      kcpu_qg q = {.a = a,
                   .rowsum = (const int32_t *)(const void *)(a + MP * KA),
                   .b = bpk,
                   .goff = goff,
                   .M = Mg,
                   .K4 = KA,
                   .per_row = 1,
                   .z = k.z + g * Mg,
                   .corr = k.corr + g * Mg,
                   .mult = k.mult + g * Mg,
                   .bias = k.bias + g * Mg,
                   .yzp = k.yzp,
                   .lo = k.lo,
                   .hi = k.hi,
                   .y = (uint8_t *)Y + (n * M + g * Mg) * P,
                   .ys_m = P,
                   .vnni = vnni};
      if (direct) {
        int32_t *colsum = (int32_t *)(void *)(scratch + (C4 * plane * 4 + 63) / 64 * 64);
        kcpu_qg_direct_fill(xg, H, W, Cg, plane, Wg, OH + (KH - 1) * dh, pt, pl, flip, (int8_t)k.zx,
                            KH, KW, dh, dw, kcpu_qg_npad(NG), bpk, colsum,
                            colsum + kcpu_qg_npad(NG));
        q.pstride = 4 * KCPU_QG_NR, q.colsum = colsum, q.N = NG, q.grid_w = Wg, q.y_w = OW;
      } else {
        kcpu_qg_bpack bp = {.x = xg,
                            .K = K,
                            .K4 = K4,
                            .P = P,
                            .H = H,
                            .W = W,
                            .OW = OW,
                            .KH = KH,
                            .KW = KW,
                            .sh = sh,
                            .sw = sw,
                            .dh = dh,
                            .dw = dw,
                            .pt = pt,
                            .pl = pl,
                            .flip = flip,
                            .fill = (uint8_t)(k.zx ^ flip),
                            .dst = bpk};
        int64_t runs = (kcpu_qg_npad(P) / KCPU_QG_NR + KCPU_QG_BRUN - 1) / KCPU_QG_BRUN;
        if (kcpu_pool_threads(pool) > 1 && runs > 1 && P * K4 >= 32768)
          kcpu_parallel_for(pool, runs, kcpu_qg_bpack_fn, &bp);
        else
          kcpu_qg_bpack_fn(&bp, 0, runs);
        q.pstride = KCPU_QG_NR * K4, q.N = P;
        q.colsum = (const int32_t *)(const void *)(bpk + K4 * kcpu_qg_npad(P));
      }
      kcpu_qg_run(&q, pool);
    }
  kcpu_free(scratch);
}
