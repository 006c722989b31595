/* plugins/cpu/kernels/quant_gemm.c: QLinearMatMul and QLinearConv on 8-bit
 * integers: u8 x s8 products summed in int32, then the requantization of
 * kiln/ops_ref.h, bit for bit the interpreter's.
 *
 * A (activations) is made u8 (an s8 value a becomes a ^ 0x80 = a + 128 and
 * its zero point moves by 128) and packed in rows of K padded to 4, with
 * each row's sum; QLinearConv's A is its im2col, padding cells holding the
 * input's zero point. B (weights) is s8 in the layout of quant_gemm.h,
 * packed at compile time when constant. With a' = a - za, b' = b - zb:
 *   sum a'b' = sum ab - zb[n] * rowsum[m] - za * colsum[n] + K za zb[n]
 * where the last two terms are one per-column constant. Every step wraps
 * in uint32: the exact result fits in int32 (the emitter bounds K so that
 * K * 255 * 255 does), so the wrapped sum is exact.
 *
 * The product is tiled in 6 rows x 64 columns. On targets with
 * AVX512-VNNI (the emitter passes vnni = 1) the tile is 24 zmm
 * accumulators fed by vpdpbusd (u8 x s8, 4 products per int32 lane,
 * wrapping, never saturating); elsewhere a portable loop widens to int32
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
  const uint8_t *a;       /* packed rows: K4 bytes each, M padded to MR */
  const int32_t *rowsum;  /* per row */
  const int8_t *b;        /* one packed matrix (quant_gemm.h) */
  int64_t M, N, K4;
  const int32_t *zb;      /* per column: the weight zero point (as s8 values) */
  const int32_t *corr;    /* per column: K za zb - za colsum (wrapping) */
  const double *mult;     /* per column */
  const double *bias;     /* per column (zeros without a bias) */
  int64_t yzp;
  double lo, hi;
  uint8_t *y;
  int64_t ys_m, ys_n; /* element strides of the result's rows and columns */
  int64_t vnni;
  int64_t rows_per_task; /* in micro-tiles */
} kcpu_qg;

/* ---- micro-kernels: c[MR][64] (+)= sum over kg groups of 4 of a . b ----
 * (load: add to what c holds, the sums of the earlier k blocks) */
#if defined(__x86_64__)
/* The name's kcpu_vnni_ prefix keeps these features when the plugin sets
 * each function's cpu and features (llvm_util.c); it is called only when
 * the target has them. */
#define KCPU_VNNI_ROW(r)                                                                           \
  {                                                                                                \
    int32_t q;                                                                                     \
    memcpy(&q, a + (r) * lda + 4 * g, 4);                                                          \
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
    c##r##0 = _mm512_loadu_si512((const void *)(c + (r) * 64));                                    \
    c##r##1 = _mm512_loadu_si512((const void *)(c + (r) * 64 + 16));                               \
    c##r##2 = _mm512_loadu_si512((const void *)(c + (r) * 64 + 32));                               \
    c##r##3 = _mm512_loadu_si512((const void *)(c + (r) * 64 + 48));                               \
  }
#define KCPU_VNNI_STORE(r)                                                                         \
  _mm512_storeu_si512((void *)(c + (r) * 64), c##r##0);                                            \
  _mm512_storeu_si512((void *)(c + (r) * 64 + 16), c##r##1);                                       \
  _mm512_storeu_si512((void *)(c + (r) * 64 + 32), c##r##2);                                       \
  _mm512_storeu_si512((void *)(c + (r) * 64 + 48), c##r##3);

__attribute__((target("avx512f,avx512bw,avx512vnni"), noinline)) static void
kcpu_vnni_qg_ukr(int64_t kg, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c,
                 int load) {
  KCPU_VNNI_LOAD(0) KCPU_VNNI_LOAD(1) KCPU_VNNI_LOAD(2)
  KCPU_VNNI_LOAD(3) KCPU_VNNI_LOAD(4) KCPU_VNNI_LOAD(5)
  for (int64_t g = 0; g < kg; g++) {
    const int8_t *bg = b + g * 4 * KCPU_QG_NR;
    __m512i b0 = _mm512_loadu_si512((const void *)bg);
    __m512i b1 = _mm512_loadu_si512((const void *)(bg + 64));
    __m512i b2 = _mm512_loadu_si512((const void *)(bg + 128));
    __m512i b3 = _mm512_loadu_si512((const void *)(bg + 192));
    KCPU_VNNI_ROW(0) KCPU_VNNI_ROW(1) KCPU_VNNI_ROW(2)
    KCPU_VNNI_ROW(3) KCPU_VNNI_ROW(4) KCPU_VNNI_ROW(5)
  }
  KCPU_VNNI_STORE(0) KCPU_VNNI_STORE(1) KCPU_VNNI_STORE(2)
  KCPU_VNNI_STORE(3) KCPU_VNNI_STORE(4) KCPU_VNNI_STORE(5)
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
    acc##v += ((kcpu_qv16i)((kcpu_qv16u)l << 16) >> 16) + (l >> 16);                                                       \
  }
#define KCPU_QANY_STORE(v)                                                                         \
  for (int i = 0; i < 8; i++)                                                                      \
    cr[8 * (v) + i] = (int32_t)((uint32_t)acc##v[2 * i] + (uint32_t)acc##v[2 * i + 1]);

static void kcpu_qg_ukr_any(int64_t kg, const uint8_t *a, int64_t lda, const int8_t *b,
                            int32_t *c, int load) {
  for (int64_t r = 0; r < KCPU_QG_MR; r++) {
    const uint8_t *ar = a + r * lda;
    int32_t *cr = c + r * KCPU_QG_NR;
    KCPU_QANY_8(KCPU_QANY_DECL)
    if (load) {
      KCPU_QANY_8(KCPU_QANY_LOAD)
    }
    for (int64_t g = 0; g < kg; g++) {
      const int8_t *bg = b + g * 4 * KCPU_QG_NR;
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
 * one pass over contiguous per-column arrays (which the final O3
 * vectorizes), then stored along the result's row or, for a convolution
 * (channel-major), down its columns. */
static void kcpu_qg_epilogue(const kcpu_qg *q, const int32_t *c, int64_t m0, int64_t mr,
                             int64_t n0, int64_t nr) {
  const int32_t *zb = q->zb + n0, *corr = q->corr + n0;
  const double *mult = q->mult + n0, *bias = q->bias + n0;
  double yzp = (double)q->yzp, lo = q->lo, hi = q->hi;
  uint8_t out[KCPU_QG_MR][KCPU_QG_NR];
  for (int64_t r = 0; r < mr; r++) {
    uint32_t rs = (uint32_t)q->rowsum[m0 + r];
    const int32_t *cr = c + r * KCPU_QG_NR;
    for (int64_t j = 0; j < nr; j++) {
      uint32_t acc = (uint32_t)cr[j] - (uint32_t)zb[j] * rs + (uint32_t)corr[j];
      double v = (double)(int32_t)acc + bias[j];
      out[r][j] = (uint8_t)(int32_t)kiln_ref_requantize_f64(v, mult[j], yzp, lo, hi);
    }
  }
  if (q->ys_n == 1) {
    for (int64_t r = 0; r < mr; r++)
      memcpy(q->y + (m0 + r) * q->ys_m + n0, out[r], (size_t)nr);
    return;
  }
  for (int64_t j = 0; j < nr; j++) {
    uint8_t *yc = q->y + m0 * q->ys_m + (n0 + j) * q->ys_n;
    for (int64_t r = 0; r < mr; r++)
      yc[r * q->ys_m] = out[r][j];
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
    const int8_t *bp = q->b + p * KCPU_QG_NR * q->K4;
    int64_t n0 = p * KCPU_QG_NR, nr = q->N - n0 < KCPU_QG_NR ? q->N - n0 : KCPU_QG_NR;
    int64_t i0 = chunk * q->rows_per_task, i1 = i0 + q->rows_per_task;
    i1 = i1 < tiles ? i1 : tiles;
    for (int64_t k0 = 0; k0 < q->K4; k0 += KCPU_QG_KC) {
      int64_t kc = q->K4 - k0 < KCPU_QG_KC ? q->K4 - k0 : KCPU_QG_KC;
      /* group k0/4 of a panel starts at byte k0 * 64 */
      const int8_t *bk = bp + k0 * KCPU_QG_NR;
      for (int64_t i = i0; i < i1; i++) {
        const uint8_t *ap = q->a + i * KCPU_QG_MR * q->K4 + k0;
#if defined(__x86_64__)
        if (q->vnni)
          kcpu_vnni_qg_ukr(kc / 4, ap, q->K4, bk, c[i - i0], k0 > 0);
        else
#endif
          kcpu_qg_ukr_any(kc / 4, ap, q->K4, bk, c[i - i0], k0 > 0);
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

/* ---- quantization parameters, per column ---- */
typedef struct kcpu_qg_cols {
  double *mult, *bias;
  int32_t *zb, *corr;
  int64_t za, yzp;
  double lo, hi;
} kcpu_qg_cols;

/* mult, zb and the bias (as doubles; zeros when bias is NULL) for n
 * columns from the scales and zero points (per tensor, or per column when
 * ws_n / wzp_n > 1; a NULL zero point is 0). */
static void kcpu_qg_cols_fill(kcpu_qg_cols *k, int64_t n, const int32_t *bias, int64_t a_s8,
                              int64_t b_u8, int64_t y_s8,
                              int64_t xs_t, const void *xs, int64_t xzp_t, const void *xzp,
                              int64_t ws_t, const void *ws, int64_t ws_n, int64_t wzp_t,
                              const void *wzp, int64_t wzp_n, int64_t ys_t, const void *ys,
                              int64_t yzp_t, const void *yzp) {
  int f64 = xs_t == KCPU_F64 || ws_t == KCPU_F64 || ys_t == KCPU_F64;
  double xsv = kcpu_e_ldf(xs_t, xs, 0), ysv = kcpu_e_ldf(ys_t, ys, 0);
  for (int64_t j = 0; j < n; j++) {
    k->mult[j] = kiln_ref_requant_multiplier(xsv, kcpu_e_ldf(ws_t, ws, ws_n > 1 ? j : 0), ysv, f64);
    int64_t z = wzp ? kcpu_e_ldi(wzp_t, wzp, wzp_n > 1 ? j : 0) : 0;
    k->zb[j] = (int32_t)(b_u8 ? z - 128 : z);
    k->bias[j] = bias ? (double)bias[j] : 0.0;
  }
  k->za = (xzp ? kcpu_e_ldi(xzp_t, xzp, 0) : 0) + (a_s8 ? 128 : 0);
  k->yzp = yzp ? kcpu_e_ldi(yzp_t, yzp, 0) : 0;
  k->lo = y_s8 ? -128.0 : 0.0;
  k->hi = y_s8 ? 127.0 : 255.0;
}

/* corr for columns [0, n) of one packed K x n matrix. */
static void kcpu_qg_corr(const kcpu_qg_cols *k, const int8_t *bp, int64_t K, int64_t n,
                         int32_t *corr, const int32_t *zb) {
  const int32_t *colsum = (const int32_t *)(const void *)(bp + kcpu_qg_k4(K) * kcpu_qg_npad(n));
  uint32_t za = (uint32_t)k->za;
  for (int64_t j = 0; j < n; j++)
    corr[j] = (int32_t)((uint32_t)K * za * (uint32_t)zb[j] - za * (uint32_t)colsum[j]);
}

/* ---- A: rows of a matrix, or the im2col of an image ---- */
typedef struct kcpu_qg_apack {
  const uint8_t *src;
  int64_t K, K4, M, flip;
  uint8_t *dst;
  int32_t *rowsum;
  /* im2col (conv): src is one image's group of Cg channels */
  int64_t conv, Cg, H, W, OW, KH, KW, sh, sw, dh, dw, pt, pl;
  uint8_t fill; /* the input zero point, as u8 */
} kcpu_qg_apack;

static void kcpu_qg_apack_fn(void *ctx, int64_t begin, int64_t end) {
  const kcpu_qg_apack *p = ctx;
  for (int64_t m = begin; m < end; m++) {
    uint8_t *d = p->dst + m * p->K4;
    uint32_t s = 0;
    if (m >= p->M) {
      memset(d, 0, (size_t)p->K4);
    } else if (!p->conv) {
      const uint8_t *r = p->src + m * p->K;
      for (int64_t k = 0; k < p->K; k++) {
        d[k] = (uint8_t)(r[k] ^ p->flip);
        s += d[k];
      }
    } else {
      int64_t oh = m / p->OW, ow = m % p->OW, k = 0;
      for (int64_t c = 0; c < p->Cg; c++)
        for (int64_t kh = 0; kh < p->KH; kh++) {
          int64_t ih = oh * p->sh - p->pt + kh * p->dh;
          const uint8_t *row = p->src + (c * p->H + ih) * p->W;
          int inside = ih >= 0 && ih < p->H;
          for (int64_t kw = 0; kw < p->KW; kw++, k++) {
            int64_t iw = ow * p->sw - p->pl + kw * p->dw;
            uint8_t v = inside && iw >= 0 && iw < p->W ? (uint8_t)(row[iw] ^ p->flip) : p->fill;
            d[k] = v;
            s += v;
          }
        }
    }
    for (int64_t k = p->K; k < p->K4; k++)
      d[k] = 0;
    p->rowsum[m] = (int32_t)s;
  }
}

static void kcpu_qg_apack_run(kcpu_qg_apack *p, struct kcpu_pool *pool) {
  int64_t rows = (p->M + KCPU_QG_MR - 1) / KCPU_QG_MR * KCPU_QG_MR;
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
 * scales. Returns without writing when scratch memory runs out (the
 * emitter's callers treat that as they treat the other kernels'). */
KCPU_PREBUILT void kcpu_k_qlinear_matmul(
    int64_t batch, int64_t b_batched, int64_t M, int64_t N, int64_t K, const void *A, int64_t a_s8,
    const int8_t *Bp, const void *B, int64_t b_u8, int64_t xs_t, const void *xs, int64_t xzp_t,
    const void *xzp, int64_t ws_t, const void *ws, int64_t ws_n, int64_t wzp_t, const void *wzp,
    int64_t wzp_n, int64_t ys_t, const void *ys, int64_t yzp_t, const void *yzp, void *Y,
    int64_t y_s8, int64_t vnni, struct kcpu_pool *pool) {
  int64_t nb = b_batched ? batch : 1;
  int64_t rows = b_batched ? M : M * batch; /* an unbatched B: one tall product */
  int64_t mats = b_batched ? batch : 1;
  int64_t K4 = kcpu_qg_k4(K), one = kcpu_qg_packed_bytes(K, N);
  int64_t rows_pad = (rows + KCPU_QG_MR - 1) / KCPU_QG_MR * KCPU_QG_MR;
  int64_t bytes = rows_pad * K4 + 4 * rows_pad + (Bp ? 0 : nb * one) + N * 24 + 256;
  uint8_t *scratch = kcpu_alloc(bytes);
  if (!scratch)
    return;
  uint8_t *apk = scratch;
  int32_t *rowsum = (int32_t *)(void *)(apk + rows_pad * K4);
  int8_t *bpk = (int8_t *)(rowsum + rows_pad);
  uint8_t *colmem = (uint8_t *)bpk + (Bp ? 0 : nb * one);
  kcpu_qg_cols k = {.mult = (double *)(void *)((uintptr_t)(colmem + 63) & ~(uintptr_t)63)};
  k.bias = k.mult + N;
  k.zb = (int32_t *)(k.bias + N);
  k.corr = k.zb + N;
  if (!Bp) {
    for (int64_t i = 0; i < nb; i++)
      kcpu_qg_pack_b((const int8_t *)B + i * K * N, b_u8, K, N, N, 1, bpk + i * one);
    Bp = bpk;
  }
  kcpu_qg_cols_fill(&k, N, NULL, a_s8, b_u8, y_s8, xs_t, xs, xzp_t, xzp, ws_t, ws, ws_n, wzp_t, wzp,
                    wzp_n, ys_t, ys, yzp_t, yzp);
  for (int64_t i = 0; i < mats; i++) {
    kcpu_qg_apack ap = {.src = (const uint8_t *)A + i * rows * K, .K = K, .K4 = K4, .M = rows,
                        .flip = a_s8 ? 0x80 : 0, .dst = apk, .rowsum = rowsum};
    kcpu_qg_apack_run(&ap, pool);
    const int8_t *bm = Bp + (b_batched ? i : 0) * one;
    kcpu_qg_corr(&k, bm, K, N, k.corr, k.zb);
    kcpu_qg q = {.a = apk, .rowsum = rowsum, .b = bm, .M = rows, .N = N, .K4 = K4, .zb = k.zb,
                 .corr = k.corr, .mult = k.mult, .bias = k.bias, .yzp = k.yzp, .lo = k.lo, .hi = k.hi,
                 .y = (uint8_t *)Y + i * rows * N, .ys_m = N, .ys_n = 1, .vnni = vnni};
    kcpu_qg_run(&q, pool);
  }
  kcpu_free(scratch);
}

/* QLinearConv, 2-D NCHW (1-D: H = KH = OH = 1): X [N, C, H, W] (u8, or s8
 * when x_s8), weights [M, C/group, KH, KW] (packed per group in Wp, or raw
 * Wt to pack here: u8 when w_u8), bias [M] int32 or NULL, Y [N, M, OH, OW].
 * Each (image, group) is one product: im2col rows (output positions) times
 * the group's weights, stored transposed (channel-major). */
KCPU_PREBUILT void kcpu_k_qlinear_conv(
    const void *X, int64_t x_s8, const int8_t *Wp, const void *Wt, int64_t w_u8,
    const int32_t *bias, void *Y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t M,
    int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
    int64_t pt, int64_t pl, int64_t group, int64_t xs_t, const void *xs, int64_t xzp_t,
    const void *xzp, int64_t ws_t, const void *ws, int64_t ws_n, int64_t wzp_t, const void *wzp,
    int64_t wzp_n, int64_t ys_t, const void *ys, int64_t yzp_t, const void *yzp, int64_t y_s8,
    int64_t vnni, struct kcpu_pool *pool) {
  int64_t Cg = C / group, Mg = M / group, K = Cg * KH * KW, K4 = kcpu_qg_k4(K), P = OH * OW;
  int64_t one = kcpu_qg_packed_bytes(K, Mg);
  int64_t rows_pad = (P + KCPU_QG_MR - 1) / KCPU_QG_MR * KCPU_QG_MR;
  int64_t bytes = rows_pad * K4 + 4 * rows_pad + (Wp ? 0 : group * one) + M * 24 + 256;
  uint8_t *scratch = kcpu_alloc(bytes);
  if (!scratch)
    return;
  uint8_t *apk = scratch;
  int32_t *rowsum = (int32_t *)(void *)(apk + rows_pad * K4);
  int8_t *bpk = (int8_t *)(rowsum + rows_pad);
  uint8_t *colmem = (uint8_t *)bpk + (Wp ? 0 : group * one);
  kcpu_qg_cols k = {.mult = (double *)(void *)((uintptr_t)(colmem + 63) & ~(uintptr_t)63)};
  k.bias = k.mult + M;
  k.zb = (int32_t *)(k.bias + M);
  k.corr = k.zb + M;
  if (!Wp) {
    for (int64_t g = 0; g < group; g++)
      kcpu_qg_pack_b((const uint8_t *)Wt + g * Mg * K, w_u8, K, Mg, 1, K, bpk + g * one);
    Wp = bpk;
  }
  kcpu_qg_cols_fill(&k, M, bias, x_s8, w_u8, y_s8, xs_t, xs, xzp_t, xzp, ws_t, ws, ws_n, wzp_t, wzp,
                    wzp_n, ys_t, ys, yzp_t, yzp);
  for (int64_t g = 0; g < group; g++)
    kcpu_qg_corr(&k, Wp + g * one, K, Mg, k.corr + g * Mg, k.zb + g * Mg);
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < group; g++) {
      kcpu_qg_apack ap = {.src = (const uint8_t *)X + (n * C + g * Cg) * H * W,
                          .K = K, .K4 = K4, .M = P, .flip = x_s8 ? 0x80 : 0, .dst = apk,
                          .rowsum = rowsum, .conv = 1, .Cg = Cg, .H = H, .W = W, .OW = OW,
                          .KH = KH, .KW = KW, .sh = sh, .sw = sw, .dh = dh, .dw = dw, .pt = pt,
                          .pl = pl, .fill = (uint8_t)k.za};
      kcpu_qg_apack_run(&ap, pool);
      kcpu_qg q = {.a = apk, .rowsum = rowsum, .b = Wp + g * one, .M = P, .N = Mg, .K4 = K4,
                   .zb = k.zb + g * Mg, .corr = k.corr + g * Mg, .mult = k.mult + g * Mg,
                   .bias = k.bias + g * Mg, .yzp = k.yzp, .lo = k.lo, .hi = k.hi,
                   .y = (uint8_t *)Y + (n * M + g * Mg) * P, .ys_m = 1, .ys_n = P, .vnni = vnni};
      kcpu_qg_run(&q, pool);
    }
  kcpu_free(scratch);
}
