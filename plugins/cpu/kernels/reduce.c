/* plugins/cpu/kernels/reduce.c: reductions over arbitrary axes,
 * ArgMax/ArgMin and TopK. The shape is collapsed into alternating kept / reduced
 * runs; the input is walked once in memory order. A contiguous kept inner
 * run is accumulated elementwise (vectorizes); a reduced inner run is summed
 * into 16 partial accumulators combined in a fixed order, so results are
 * deterministic and still vectorized. */
#include "kcpu_elem.h"
#include "kcpu_runtime.h"

#include <math.h>
#include <string.h>

#define KCPU_RMAX 16
#define KCPU_PARTS 16

typedef struct kcpu_rshape {
  int64_t nd, dims[KCPU_RMAX], ost[KCPU_RMAX];
  int red[KCPU_RMAX];
  int64_t count; /* reduced elements per output */
  int64_t out_n;
} kcpu_rshape;

static void kcpu_rshape_make(int64_t rank, const int64_t *dims, int64_t mask, kcpu_rshape *s) {
  s->nd = 0;
  s->count = 1;
  s->out_n = 1;
  for (int64_t d = 0; d < rank; d++) {
    int r = (int)((mask >> d) & 1);
    if (r)
      s->count *= dims[d];
    else
      s->out_n *= dims[d];
    if (dims[d] == 1)
      continue;
    if (s->nd > 0 && s->red[s->nd - 1] == r) {
      s->dims[s->nd - 1] *= dims[d];
    } else {
      s->dims[s->nd] = dims[d];
      s->red[s->nd] = r;
      s->nd++;
    }
  }
  if (s->nd == 0) {
    s->dims[0] = 1;
    s->red[0] = 0;
    s->nd = 1;
  }
  int64_t st = 1;
  for (int64_t d = s->nd - 1; d >= 0; d--) {
    s->ost[d] = s->red[d] ? 0 : st;
    if (!s->red[d])
      st *= s->dims[d];
  }
}

/* One reduction loop per (type, accumulate expression). ACC(a, v) is the
 * new accumulator. */
#define KCPU_RED_LOOP(T, NAME, ACC)                                                                \
  static void NAME(const T *x, T *y, const kcpu_rshape *s, T ident) {                              \
    int64_t nd = s->nd, inner = s->dims[nd - 1], outer = 1, idx[KCPU_RMAX] = {0};                  \
    for (int64_t d = 0; d < nd - 1; d++)                                                           \
      outer *= s->dims[d];                                                                         \
    for (int64_t i = 0; i < s->out_n; i++)                                                         \
      y[i] = ident;                                                                                \
    for (int64_t o = 0; o < outer; o++) {                                                          \
      int64_t yo = 0;                                                                              \
      for (int64_t d = 0; d < nd - 1; d++)                                                         \
        yo += idx[d] * s->ost[d];                                                                  \
      const T *xp = x + o * inner;                                                                 \
      if (s->red[nd - 1]) {                                                                        \
        T part[KCPU_PARTS];                                                                        \
        for (int j = 0; j < KCPU_PARTS; j++)                                                       \
          part[j] = ident;                                                                         \
        int64_t i = 0;                                                                             \
        for (; i + KCPU_PARTS <= inner; i += KCPU_PARTS)                                           \
          for (int j = 0; j < KCPU_PARTS; j++) {                                                   \
            T a = part[j], v = xp[i + j];                                                          \
            part[j] = ACC;                                                                         \
          }                                                                                        \
        for (int j = 0; i < inner; i++, j++) {                                                     \
          T a = part[j], v = xp[i];                                                                \
          part[j] = ACC;                                                                           \
        }                                                                                          \
        T a = y[yo];                                                                               \
        for (int j = 0; j < KCPU_PARTS; j++) {                                                     \
          T v = part[j];                                                                           \
          a = KCPU_COMBINE;                                                                        \
        }                                                                                          \
        y[yo] = a;                                                                                 \
      } else {                                                                                     \
        T *yp = y + yo;                                                                            \
        for (int64_t i = 0; i < inner; i++) {                                                      \
          T a = yp[i], v = xp[i];                                                                  \
          yp[i] = ACC;                                                                             \
        }                                                                                          \
      }                                                                                            \
      for (int64_t d = nd - 2; d >= 0; d--) {                                                      \
        if (++idx[d] < s->dims[d])                                                                 \
          break;                                                                                   \
        idx[d] = 0;                                                                                \
      }                                                                                            \
    }                                                                                              \
  }

/* How two partial accumulators merge: sum-like ops add, the others reuse
 * their own operation. */
#define KCPU_COMBINE (a + v)
#define KCPU_RED_SUMLIKE(T, S)                                                                     \
  KCPU_RED_LOOP(T, kcpu_red_sum_##S, (a + v))                                                      \
  KCPU_RED_LOOP(T, kcpu_red_sumsq_##S, (a + v * v))                                                \
  KCPU_RED_LOOP(T, kcpu_red_l1_##S, (a + (v < 0 ? -v : v)))
KCPU_RED_SUMLIKE(float, f32)
KCPU_RED_SUMLIKE(double, f64)
KCPU_RED_SUMLIKE(int32_t, i32)
KCPU_RED_SUMLIKE(int64_t, i64)
#undef KCPU_COMBINE
#define KCPU_COMBINE (a * v)
KCPU_RED_LOOP(float, kcpu_red_prod_f32, (a * v))
KCPU_RED_LOOP(double, kcpu_red_prod_f64, (a * v))
KCPU_RED_LOOP(int32_t, kcpu_red_prod_i32, (a * v))
KCPU_RED_LOOP(int64_t, kcpu_red_prod_i64, (a * v))
#undef KCPU_COMBINE
/* Max/min propagate NaN: a NaN operand wins. */
#define KCPU_COMBINE (v > a || v != v ? v : a)
#define KCPU_RED_MAXMIN(T, S) KCPU_RED_LOOP(T, kcpu_red_max_##S, (v > a || v != v ? v : a))
KCPU_RED_MAXMIN(float, f32)
KCPU_RED_MAXMIN(double, f64)
KCPU_RED_MAXMIN(int32_t, i32)
KCPU_RED_MAXMIN(int64_t, i64)
KCPU_RED_MAXMIN(int8_t, i8)
KCPU_RED_MAXMIN(uint8_t, u8)
#undef KCPU_COMBINE
#define KCPU_COMBINE (v < a || v != v ? v : a)
#define KCPU_RED_MIN(T, S) KCPU_RED_LOOP(T, kcpu_red_min_##S, (v < a || v != v ? v : a))
KCPU_RED_MIN(float, f32)
KCPU_RED_MIN(double, f64)
KCPU_RED_MIN(int32_t, i32)
KCPU_RED_MIN(int64_t, i64)
KCPU_RED_MIN(int8_t, i8)
KCPU_RED_MIN(uint8_t, u8)
#undef KCPU_COMBINE

/* Float reductions with a final transform. */
#define KCPU_RED_FLOAT(T, S, SQRT, LOG, EXP)                                                       \
  static int kcpu_reduce_##S(int64_t op, const T *x, T *y, const kcpu_rshape *s) {                 \
    switch (op) {                                                                                  \
    case KCPU_RED_SUM:                                                                             \
    case KCPU_RED_MEAN:                                                                            \
    case KCPU_RED_LOGSUM:                                                                          \
      kcpu_red_sum_##S(x, y, s, 0);                                                                \
      break;                                                                                       \
    case KCPU_RED_SUMSQ:                                                                           \
    case KCPU_RED_L2:                                                                              \
      kcpu_red_sumsq_##S(x, y, s, 0);                                                              \
      break;                                                                                       \
    case KCPU_RED_L1:                                                                              \
      kcpu_red_l1_##S(x, y, s, 0);                                                                 \
      break;                                                                                       \
    case KCPU_RED_PROD:                                                                            \
      kcpu_red_prod_##S(x, y, s, 1);                                                               \
      break;                                                                                       \
    case KCPU_RED_MAX:                                                                             \
      kcpu_red_max_##S(x, y, s, -INFINITY);                                                        \
      break;                                                                                       \
    case KCPU_RED_MIN:                                                                             \
      kcpu_red_min_##S(x, y, s, INFINITY);                                                         \
      break;                                                                                       \
    case KCPU_RED_LOGSUMEXP: {                                                                     \
      /* max first, so exp never overflows; then sum exp(x - max) walking */                       \
      /* the same shape with the max broadcast back */                                             \
      kcpu_red_max_##S(x, y, s, -INFINITY);                                                        \
      T *acc = kcpu_alloc(s->out_n * (int64_t)sizeof(T));                                          \
      if (!acc)                                                                                    \
        return -1;                                                                                 \
      for (int64_t i = 0; i < s->out_n; i++)                                                       \
        acc[i] = 0;                                                                                \
      int64_t nd = s->nd, idx[KCPU_RMAX] = {0}, total = 1;                                         \
      for (int64_t d = 0; d < nd; d++)                                                             \
        total *= s->dims[d];                                                                       \
      for (int64_t i = 0; i < total; i++) {                                                        \
        int64_t yo = 0;                                                                            \
        for (int64_t d = 0; d < nd; d++)                                                           \
          yo += idx[d] * s->ost[d];                                                                \
        T m = isinf(y[yo]) ? 0 : y[yo];                                                            \
        acc[yo] += EXP(x[i] - m);                                                                  \
        for (int64_t d = nd - 1; d >= 0; d--) {                                                    \
          if (++idx[d] < s->dims[d])                                                               \
            break;                                                                                 \
          idx[d] = 0;                                                                              \
        }                                                                                          \
      }                                                                                            \
      for (int64_t i = 0; i < s->out_n; i++)                                                       \
        y[i] = LOG(acc[i]) + (isinf(y[i]) ? 0 : y[i]);                                             \
      kcpu_free(acc);                                                                              \
      return 0;                                                                                    \
    }                                                                                              \
    default:                                                                                       \
      return -1;                                                                                   \
    }                                                                                              \
    for (int64_t i = 0; i < s->out_n; i++) {                                                       \
      if (op == KCPU_RED_MEAN)                                                                     \
        y[i] = y[i] / (T)s->count;                                                                 \
      else if (op == KCPU_RED_L2)                                                                  \
        y[i] = SQRT(y[i]);                                                                         \
      else if (op == KCPU_RED_LOGSUM)                                                              \
        y[i] = LOG(y[i]);                                                                          \
    }                                                                                              \
    return 0;                                                                                      \
  }
KCPU_RED_FLOAT(float, f32, sqrtf, logf, expf)
KCPU_RED_FLOAT(double, f64, sqrt, log, exp)

#define KCPU_RED_INT(T, S, MINV, MAXV)                                                             \
  static int kcpu_reduce_##S(int64_t op, const T *x, T *y, const kcpu_rshape *s) {                 \
    switch (op) {                                                                                  \
    case KCPU_RED_SUM:                                                                             \
      kcpu_red_sum_##S(x, y, s, 0);                                                                \
      return 0;                                                                                    \
    case KCPU_RED_SUMSQ:                                                                           \
      kcpu_red_sumsq_##S(x, y, s, 0);                                                              \
      return 0;                                                                                    \
    case KCPU_RED_L1:                                                                              \
      kcpu_red_l1_##S(x, y, s, 0);                                                                 \
      return 0;                                                                                    \
    case KCPU_RED_PROD:                                                                            \
      kcpu_red_prod_##S(x, y, s, 1);                                                               \
      return 0;                                                                                    \
    case KCPU_RED_MAX:                                                                             \
      kcpu_red_max_##S(x, y, s, MINV);                                                             \
      return 0;                                                                                    \
    case KCPU_RED_MIN:                                                                             \
      kcpu_red_min_##S(x, y, s, MAXV);                                                             \
      return 0;                                                                                    \
    default:                                                                                       \
      return -1;                                                                                   \
    }                                                                                              \
  }
KCPU_RED_INT(int32_t, i32, INT32_MIN, INT32_MAX)
KCPU_RED_INT(int64_t, i64, INT64_MIN, INT64_MAX)

/* f16 and bf16 reduce through f32 copies of input and result (one
 * rounding at the end, like the reference's double accumulation rounded
 * to the type); 16-bit and unsigned 32/64-bit integers through i64 copies
 * (wrapping sums and products give the same low bits). */
static int kcpu_reduce_via(int64_t elem, int64_t via, int64_t op, const void *x, void *y,
                           int64_t rank, const int64_t *dims, int64_t red_mask) {
  int64_t n = 1, m = 1;
  for (int64_t d = 0; d < rank; d++) {
    n *= dims[d];
    if (!(red_mask >> d & 1))
      m *= dims[d];
  }
  int64_t vs = kcpu_e_size(via);
  void *fx = kcpu_alloc((n ? n : 1) * vs), *fy = kcpu_alloc((m ? m : 1) * vs);
  int rc = -1;
  if (fx && fy) {
    for (int64_t i = 0; i < n; i++) {
      if (via == KCPU_F32)
        ((float *)fx)[i] = (float)kcpu_e_ldf(elem, x, i);
      else
        ((int64_t *)fx)[i] = kcpu_e_ldi(elem, x, i);
    }
    rc = kcpu_k_reduce(via, op, fx, fy, rank, dims, red_mask);
    for (int64_t i = 0; rc == 0 && i < m; i++) {
      if (via == KCPU_F32)
        kcpu_e_stf(elem, y, i, ((float *)fy)[i]);
      else
        kcpu_e_sti(elem, y, i, ((int64_t *)fy)[i]);
    }
  }
  kcpu_free(fx);
  kcpu_free(fy);
  return rc;
}

int kcpu_k_reduce(int64_t elem, int64_t op, const void *x, void *y, int64_t rank,
                  const int64_t *dims, int64_t red_mask) {
  if (rank > KCPU_RMAX)
    return -1;
  if (elem == KCPU_F16 || elem == KCPU_BF16)
    return kcpu_reduce_via(elem, KCPU_F32, op, x, y, rank, dims, red_mask);
  int narrow = (elem == KCPU_I8 || elem == KCPU_U8) && op != KCPU_RED_MAX && op != KCPU_RED_MIN;
  if (narrow || elem == KCPU_I16 || elem == KCPU_U16 || elem == KCPU_U32 ||
      (elem == KCPU_U64 && (op == KCPU_RED_SUM || op == KCPU_RED_PROD || op == KCPU_RED_SUMSQ)))
    return kcpu_reduce_via(elem, KCPU_I64, op, x, y, rank, dims, red_mask);
  if (elem == KCPU_BOOL) /* 0/1 bytes: max is any, min is all */
    elem = KCPU_U8;
  kcpu_rshape s;
  kcpu_rshape_make(rank, dims, red_mask, &s);
  switch (elem) {
  case KCPU_F32:
    return kcpu_reduce_f32(op, x, y, &s);
  case KCPU_F64:
    return kcpu_reduce_f64(op, x, y, &s);
  case KCPU_I32:
    return kcpu_reduce_i32(op, x, y, &s);
  case KCPU_I64:
    return kcpu_reduce_i64(op, x, y, &s);
  case KCPU_I8:
    if (op == KCPU_RED_MAX)
      kcpu_red_max_i8(x, y, &s, INT8_MIN);
    else if (op == KCPU_RED_MIN)
      kcpu_red_min_i8(x, y, &s, INT8_MAX);
    else
      return -1;
    return 0;
  case KCPU_U8:
    if (op == KCPU_RED_MAX)
      kcpu_red_max_u8(x, y, &s, 0);
    else if (op == KCPU_RED_MIN)
      kcpu_red_min_u8(x, y, &s, UINT8_MAX);
    else
      return -1;
    return 0;
  default:
    return -1;
  }
}

/* ArgMax/ArgMin: first (or last) index of the extreme; NaN counts as the
 * extreme, like the max/min reductions. */
#define KCPU_ARG(T, S)                                                                             \
  static void kcpu_arg_##S(int64_t is_max, int64_t last, const T *x, int64_t *y, int64_t outer,    \
                           int64_t n, int64_t inner) {                                             \
    for (int64_t o = 0; o < outer; o++)                                                            \
      for (int64_t i = 0; i < inner; i++) {                                                        \
        const T *p = x + o * n * inner + i;                                                        \
        T best = p[0];                                                                             \
        int64_t bi = 0;                                                                            \
        for (int64_t k = 1; k < n; k++) {                                                          \
          T v = p[k * inner];                                                                      \
          int better;                                                                              \
          if (best != best)                                                                        \
            better = last && v != v;                                                               \
          else if (v != v)                                                                         \
            better = 1;                                                                            \
          else                                                                                     \
            better = is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);       \
          if (better) {                                                                            \
            best = v;                                                                              \
            bi = k;                                                                                \
          }                                                                                        \
        }                                                                                          \
        y[o * inner + i] = bi;                                                                     \
      }                                                                                            \
  }
KCPU_ARG(float, f32)
KCPU_ARG(double, f64)
KCPU_ARG(int32_t, i32)
KCPU_ARG(int64_t, i64)
KCPU_ARG(int8_t, i8)
KCPU_ARG(uint8_t, u8)

/* Other types compare through double (exact but for 64-bit integers
 * beyond 2^53); NaN counts as the extreme, as above. */
static void kcpu_arg_any(int64_t elem, int64_t is_max, int64_t last, const void *x, int64_t *y,
                         int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t base = o * n * inner + i, bi = 0;
      double best = kcpu_e_ldf(elem, x, base);
      for (int64_t k = 1; k < n; k++) {
        double v = kcpu_e_ldf(elem, x, base + k * inner);
        int better;
        if (best != best)
          better = last && v != v;
        else if (v != v)
          better = 1;
        else
          better = is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
        if (better) {
          best = v;
          bi = k;
        }
      }
      y[o * inner + i] = bi;
    }
}

int kcpu_k_argminmax(int64_t elem, int64_t is_max, int64_t select_last, const void *x, int64_t *y,
                     int64_t outer, int64_t n, int64_t inner) {
  switch (elem) {
  case KCPU_F32:
    kcpu_arg_f32(is_max, select_last, x, y, outer, n, inner);
    return 0;
  case KCPU_F64:
    kcpu_arg_f64(is_max, select_last, x, y, outer, n, inner);
    return 0;
  case KCPU_I32:
    kcpu_arg_i32(is_max, select_last, x, y, outer, n, inner);
    return 0;
  case KCPU_I64:
    kcpu_arg_i64(is_max, select_last, x, y, outer, n, inner);
    return 0;
  case KCPU_I8:
    kcpu_arg_i8(is_max, select_last, x, y, outer, n, inner);
    return 0;
  case KCPU_U8:
    kcpu_arg_u8(is_max, select_last, x, y, outer, n, inner);
    return 0;
  default:
    kcpu_arg_any(elem, is_max, select_last, x, y, outer, n, inner);
    return 0;
  }
}

/* Is a ranked before b? Larger (or smaller) first, then the lower index. */
static int kcpu_topk_before(double va, int64_t ia, double vb, int64_t ib, int64_t largest) {
  if (va != vb)
    return largest ? va > vb : va < vb;
  return ia < ib;
}

/* TopK over the middle dim of [outer, n, inner]: vals / idx [outer, k,
 * inner], always sorted (an unsorted request may be answered sorted).
 * Integer keys beyond 2^53 compare through double. Returns -1 without
 * scratch memory. */
int kcpu_k_topk(int64_t elem, const void *x, void *vals, int64_t *idx, int64_t outer, int64_t n,
                int64_t inner, int64_t k, int64_t largest) {
  if (k <= 0)
    return 0;
  double *bv = kcpu_alloc(k * (int64_t)sizeof(double));
  int64_t *bi = kcpu_alloc(k * (int64_t)sizeof(int64_t));
  if (!bv || !bi) {
    kcpu_free(bv);
    kcpu_free(bi);
    return -1;
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t cnt = 0;
      for (int64_t j = 0; j < n; j++) {
        double v = kcpu_e_ldf(elem, x, (o * n + j) * inner + in);
        if (cnt == k && !kcpu_topk_before(v, j, bv[k - 1], bi[k - 1], largest))
          continue;
        int64_t p = cnt < k ? cnt++ : k - 1;
        while (p > 0 && kcpu_topk_before(v, j, bv[p - 1], bi[p - 1], largest)) {
          bv[p] = bv[p - 1];
          bi[p] = bi[p - 1];
          p--;
        }
        bv[p] = v;
        bi[p] = j;
      }
      int64_t es = kcpu_e_size(elem);
      for (int64_t t = 0; t < cnt; t++) {
        int64_t yi = (o * k + t) * inner + in;
        memcpy((char *)vals + yi * es, (const char *)x + ((o * n + bi[t]) * inner + in) * es,
               (size_t)es);
        idx[yi] = bi[t];
      }
    }
  kcpu_free(bv);
  kcpu_free(bi);
  return 0;
}
