/* tests/cpu_kernels/test_blocked_dw.c: the channel-blocked layout's other
 * kernels (conv_blocked.h): depthwise convolution (conv_blocked_dw.c),
 * pooling (pool.c) and the conversions to and from the plain layout
 * (movement_blocked.c), against naive loops over the plain layout. */
#include "tk.h"

#include "conv_blocked.h"

#include <string.h>

/* ck_assert_msg for checks run once per element: check's assertions
 * each write a record of having passed (a system call), which made this
 * suite spend most of its time in them. */
#define BD_CHECK(cond, ...)                                                                        \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ck_abort_msg(__VA_ARGS__);                                                                   \
  } while (0)

static struct kcpu_pool *bd_pool2(void) {
  static struct kcpu_pool *p;
  if (!p)
    p = kcpu_pool_create(2);
  return p;
}

/* plain [N, C, S] -> blocked [N, Cb, S, 16] by the layout's definition;
 * padding lanes set to pad */
static float *bd_block(const float *X, int64_t N, int64_t C, int64_t S, float pad) {
  int64_t Cb = (C + 15) / 16;
  float *B = tk_alloc(N * Cb * 16 * S);
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < Cb * 16; c++)
      for (int64_t s = 0; s < S; s++)
        B[((n * Cb + c / 16) * S + s) * 16 + c % 16] = c < C ? X[(n * C + c) * S + s] : pad;
  return B;
}

/* Plain -> blocked -> plain is the identity; padding lanes are zero. */
START_TEST(blocked_roundtrip) {
  static const int64_t chans[] = {1, 3, 16, 17, 40};
  for (size_t i = 0; i < sizeof chans / sizeof chans[0]; i++) {
    int64_t C = chans[i], S = 7 * 5, Cb = (C + 15) / 16, N = 2;
    float *X = tk_alloc(N * C * S), *B = tk_alloc(N * Cb * 16 * S), *Z = tk_alloc(N * C * S);
    tk_fill(X, N * C * S, (uint32_t)C);
    memset(B, 0xff, (size_t)(N * Cb * 16 * S) * sizeof *B);
    kcpu_k_block_channels(X, B, N, C, S, NULL);
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < Cb * 16; c++)
        for (int64_t s = 0; s < S; s++) {
          float got = B[((n * Cb + c / 16) * S + s) * 16 + c % 16];
          float want = c < C ? X[(n * C + c) * S + s] : 0.0f;
          BD_CHECK(got == want, "C%lld n%lld c%lld s%lld: %g, want %g", (long long)C, (long long)n,
                   (long long)c, (long long)s, got, want);
        }
    kcpu_k_unblock_channels(B, Z, N, C, S, NULL);
    ck_assert_msg(memcmp(X, Z, (size_t)(N * C * S) * sizeof *X) == 0, "C%lld: round trip differs",
                  (long long)C);
    free(X), free(B), free(Z);
  }
}
END_TEST

/* Conversions at many channel counts and plane sizes, 1 and 2 threads;
 * padding lanes of the blocked input hold NaN, which must not reach the
 * plain output. */
START_TEST(blocked_convert) {
  static const int64_t sizes[] = {1, 7, 49, 3136};
  for (int64_t C = 1; C <= 64; C = C < 40 ? C + 1 : C + 24)
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      for (int64_t N = 1; N <= 2; N++) {
        int64_t S = sizes[si], Cb = (C + 15) / 16, nb = N * Cb * 16 * S, np = N * C * S;
        float *X = tk_alloc(np), *B = tk_alloc(nb), *B2 = tk_alloc(nb), *Z = tk_alloc(np);
        float *Z2 = tk_alloc(np);
        tk_fill(X, np, (uint32_t)(C * 7 + S));
        float *want = bd_block(X, N, C, S, 0.0f);
        memset(B, 0xff, (size_t)nb * sizeof *B);
        memset(B2, 0xff, (size_t)nb * sizeof *B);
        kcpu_k_block_channels(X, B, N, C, S, NULL);
        struct kcpu_pool *p2 = bd_pool2();
        kcpu_k_block_channels(X, B2, N, C, S, p2);
        for (int64_t i = 0; i < nb; i++)
          BD_CHECK(B[i] == want[i] && B2[i] == want[i],
                   "block N%lld C%lld S%lld at %lld: %g / %g, want %g", (long long)N, (long long)C,
                   (long long)S, (long long)i, B[i], B2[i], want[i]);
        free(want);
        float *Bn = bd_block(X, N, C, S, NAN);
        kcpu_k_unblock_channels(Bn, Z, N, C, S, NULL);
        kcpu_k_unblock_channels(Bn, Z2, N, C, S, p2);
        for (int64_t i = 0; i < np; i++)
          BD_CHECK(Z[i] == X[i] && Z2[i] == X[i],
                   "unblock N%lld C%lld S%lld at %lld: %g / %g, want %g", (long long)N,
                   (long long)C, (long long)S, (long long)i, Z[i], Z2[i], X[i]);
        free(X), free(B), free(B2), free(Z), free(Z2), free(Bn);
      }
}
END_TEST

/* A depthwise case: N images of C channels, H x W, a KH x KW filter. */
typedef struct dwc {
  int64_t N, C, H, W, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
} dwc;

/* Depthwise case c with bias, activation a, a residual (with_res: 1 in a
 * buffer of its own, 2 in Y itself), checked against a loop in double
 * over the plain layout, then run again on 2 threads for the same bits.
 * The input's padding lanes hold NaN; Y's must come out 0. */
static void dw_case(dwc c, const tk_act *a, int with_res) {
  int64_t OH = (c.H + c.pt + c.pb - ((c.KH - 1) * c.dh + 1)) / c.sh + 1;
  int64_t OW = (c.W + c.pl + c.pr - ((c.KW - 1) * c.dw + 1)) / c.sw + 1;
  int64_t Cb = (c.C + 15) / 16, T = c.KH * c.KW, yn = c.N * Cb * 16 * OH * OW;
  float *X = tk_alloc(c.N * c.C * c.H * c.W), *Wt = tk_alloc(c.C * T), *b = tk_alloc(c.C);
  float *Wpk = tk_alloc(Cb * T * 16), *R = tk_alloc(c.N * c.C * OH * OW);
  float *Y = tk_alloc(yn), *Y2 = tk_alloc(yn);
  tk_fill(X, c.N * c.C * c.H * c.W, (uint32_t)(c.C * 5 + c.W));
  tk_fill(Wt, c.C * T, (uint32_t)(c.C + T));
  tk_fill(b, c.C, 11);
  tk_fill(R, c.N * c.C * OH * OW, 13);
  float *Xb = bd_block(X, c.N, c.C, c.H * c.W, NAN);
  float *Rb = bd_block(R, c.N, c.C, OH * OW, 0.0f);
  for (int64_t ch = 0; ch < Cb * 16; ch++) /* Wpk[cb][kh][kw][lane], padding lanes 0 */
    for (int64_t t = 0; t < T; t++)
      Wpk[((ch / 16) * T + t) * 16 + ch % 16] = ch < c.C ? Wt[ch * T + t] : 0.0f;
  for (int pass = 0; pass < 2; pass++) {
    float *out = pass ? Y2 : Y;
    memset(out, 0xff, (size_t)yn * sizeof *out); /* NaN: every element must be written */
    const float *res = NULL;
    if (with_res == 2)
      memcpy(out, Rb, (size_t)yn * sizeof *out), res = out;
    else if (with_res)
      res = Rb;
    kcpu_convb_depthwise(Xb, Wpk, b, res, out, c.N, c.C, c.H, c.W, OH, OW, c.KH, c.KW, c.sh, c.sw,
                         c.dh, c.dw, c.pt, c.pl, a->act, a->a, a->b, pass ? bd_pool2() : NULL);
  }
  for (int64_t n = 0; n < c.N; n++)
    for (int64_t m = 0; m < Cb * 16; m++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          int64_t o = ((((n * Cb) + m / 16) * OH + oh) * OW + ow) * 16 + m % 16;
          if (m >= c.C) {
            BD_CHECK(Y[o] == 0.0f, "padding lane %lld is %g", (long long)m, Y[o]);
            continue;
          }
          double s = b[m];
          for (int64_t kh = 0; kh < c.KH; kh++)
            for (int64_t kw = 0; kw < c.KW; kw++) {
              int64_t ih = oh * c.sh - c.pt + kh * c.dh, iw = ow * c.sw - c.pl + kw * c.dw;
              if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W)
                s += (double)X[((n * c.C + m) * c.H + ih) * c.W + iw] * Wt[m * T + kh * c.KW + kw];
            }
          if (with_res)
            s += R[((n * c.C + m) * OH + oh) * OW + ow];
          double want = tk_ref_act(a->act, a->a, a->b, s);
          BD_CHECK(fabs(Y[o] - want) <= 1e-5 * (1 + fabs(want)) * (double)(T + 2),
                   "N%lld C%lld %lldx%lld k%lldx%lld s%lld d%lld pads %lld,%lld,%lld,%lld "
                   "act %lld res %d: n%lld c%lld (%lld,%lld) got %g want %g",
                   (long long)c.N, (long long)c.C, (long long)c.H, (long long)c.W, (long long)c.KH,
                   (long long)c.KW, (long long)c.sh, (long long)c.dh, (long long)c.pt,
                   (long long)c.pl, (long long)c.pb, (long long)c.pr, (long long)a->act, with_res,
                   (long long)n, (long long)m, (long long)oh, (long long)ow, Y[o], want);
        }
  ck_assert_msg(memcmp(Y, Y2, (size_t)yn * sizeof *Y) == 0,
                "C%lld %lldx%lld: 1 and 2 threads differ", (long long)c.C, (long long)c.H,
                (long long)c.W);
  free(X), free(Wt), free(b), free(Wpk), free(R), free(Y), free(Y2), free(Xb), free(Rb);
}

/* Channel counts around a block and plane widths around a run of 8. */
START_TEST(dw_sizes) {
  static const int64_t chans[] = {1, 3, 7, 16, 17, 24, 40};
  static const int64_t widths[] = {1, 2, 7, 8, 9, 14, 15, 16, 17, 56, 112};
  for (size_t ci = 0; ci < sizeof chans / sizeof chans[0]; ci++)
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
      for (int64_t s = 1; s <= 2; s++) {
        int64_t C = chans[ci], W = widths[wi];
        dw_case((dwc){1, C, 5, W, 3, 3, s, s, 1, 1, 1, 1, 1, 1}, &tk_acts()[0], 0);
        dw_case((dwc){2, C, 3, W, 3, 3, s, s, 1, 1, 0, 0, 0, 0 + (W >= 3 ? 0 : 3 - W)},
                &tk_acts()[1], 0);
      }
}
END_TEST

/* Filter sizes, strides, dilations and pads (zero, even, uneven, wider
 * than the filter's reach on one side). */
START_TEST(dw_geometry) {
  static const int64_t pads[][4] = {
      {0, 0, 0, 0}, {1, 1, 1, 1}, {2, 0, 0, 1}, {0, 3, 1, 0}, {3, 3, 3, 3}};
  static const int64_t widths[] = {7, 9, 17, 30};
  for (int64_t k = 3; k <= 7; k += 2)
    for (int64_t s = 1; s <= 2; s++)
      for (int64_t d = 1; d <= 2; d++)
        for (size_t p = 0; p < sizeof pads / sizeof pads[0]; p++)
          for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
            dwc c = {1, 17, 11, widths[wi], k,          k,          s,
                     s, d,  d,  pads[p][0], pads[p][1], pads[p][2], pads[p][3]};
            if (c.H + c.pt + c.pb < (k - 1) * d + 1 || c.W + c.pl + c.pr < (k - 1) * d + 1)
              continue;
            dw_case(c, &tk_acts()[4], 0);
          }
  /* a filter wider than the plane, strides differing per axis */
  dw_case((dwc){1, 20, 4, 3, 5, 5, 1, 2, 1, 1, 2, 2, 2, 2}, &tk_acts()[0], 1);
  dw_case((dwc){1, 20, 9, 20, 3, 5, 2, 1, 2, 1, 1, 2, 2, 2}, &tk_acts()[0], 1);
  /* rows in runs of 8 with 4 columns of padding and of overhang: a 5x5
   * dilated by 2 (LR-ASPP's head), the residual in the output itself;
   * ConvNeXt's 7x7 on a 56-wide row */
  dw_case((dwc){1, 40, 14, 14, 5, 5, 1, 1, 2, 2, 4, 4, 4, 4}, &tk_acts()[1], 2);
  dw_case((dwc){1, 40, 5, 21, 5, 5, 1, 1, 2, 2, 4, 4, 4, 4}, &tk_acts()[0], 1);
  dw_case((dwc){1, 20, 6, 56, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3}, &tk_acts()[0], 2);
}
END_TEST

/* Every fused activation, without and with a residual (own buffer and
 * in Y itself). */
START_TEST(dw_acts) {
  for (int i = 0; i < TK_N_ACTS; i++)
    for (int r = 0; r <= 2; r++) {
      dw_case((dwc){1, 24, 6, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, &tk_acts()[i], r);
      dw_case((dwc){2, 40, 9, 14, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2}, &tk_acts()[i], r);
    }
}
END_TEST

/* A pooling case over C channels (padding lanes 0, as kernels write
 * them). */
typedef struct pbc {
  int64_t N, C, H, W, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
} pbc;

/* nan_every: a NaN every so many input elements (0: none; below 0: one
 * NaN, at element -nan_every). */
static void pb_case(pbc c, int64_t mode, int64_t cip, int64_t nan_every) {
  int64_t OH = (c.H + c.pt + c.pb - ((c.KH - 1) * c.dh + 1)) / c.sh + 1;
  int64_t OW = (c.W + c.pl + c.pr - ((c.KW - 1) * c.dw + 1)) / c.sw + 1;
  int64_t Cb = (c.C + 15) / 16, xn = c.N * c.C * c.H * c.W, yn = c.N * Cb * 16 * OH * OW;
  float *X = tk_alloc(xn), *Y = tk_alloc(yn), *Y2 = tk_alloc(yn);
  tk_fill(X, xn, (uint32_t)(c.H * 31 + c.W + c.KH));
  for (int64_t i = nan_every > 0 ? nan_every / 2 : xn; i < xn; i += nan_every)
    X[i] = NAN;
  if (nan_every < 0 && -nan_every < xn)
    X[-nan_every] = NAN;
  float *Xb = bd_block(X, c.N, c.C, c.H * c.W, 0.0f);
  for (int pass = 0; pass < 2; pass++)
    kcpu_k_pool2d_blocked(Xb, pass ? Y2 : Y, c.N * Cb, c.H, c.W, OH, OW, c.KH, c.KW, c.sh, c.sw,
                          c.dh, c.dw, c.pt, c.pl, c.pb, c.pr, mode, cip, pass ? bd_pool2() : NULL);
  for (int64_t n = 0; n < c.N; n++)
    for (int64_t m = 0; m < c.C; m++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double mx = -INFINITY, sum = 0;
          int64_t cnt = 0, padded = 0;
          for (int64_t kh = 0; kh < c.KH; kh++)
            for (int64_t kw = 0; kw < c.KW; kw++) {
              int64_t ih = oh * c.sh - c.pt + kh * c.dh, iw = ow * c.sw - c.pl + kw * c.dw;
              if (ih >= -c.pt && ih < c.H + c.pb && iw >= -c.pl && iw < c.W + c.pr)
                padded++;
              if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W)
                continue;
              double v = X[((n * c.C + m) * c.H + ih) * c.W + iw];
              mx = isnan(v) || isnan(mx) ? NAN : (v > mx ? v : mx);
              sum += v;
              cnt++;
            }
          double want = mode == 0 ? mx : sum / (double)(cip ? padded : cnt);
          float got = Y[((((n * Cb) + m / 16) * OH + oh) * OW + ow) * 16 + m % 16];
          BD_CHECK(isnan(want) ? isnan(got)
                               : got == want || fabs(got - want) <= 1e-6 * (1 + fabs(want)),
                   "mode %lld cip %lld C%lld %lldx%lld k%lldx%lld s%lld,%lld d%lld pads "
                   "%lld,%lld,%lld,%lld: c%lld (%lld,%lld) got %g want %g",
                   (long long)mode, (long long)cip, (long long)c.C, (long long)c.H, (long long)c.W,
                   (long long)c.KH, (long long)c.KW, (long long)c.sh, (long long)c.sw,
                   (long long)c.dh, (long long)c.pt, (long long)c.pl, (long long)c.pb,
                   (long long)c.pr, (long long)m, (long long)oh, (long long)ow, got, want);
        }
  ck_assert_msg(memcmp(Y, Y2, (size_t)yn * sizeof *Y) == 0,
                "pool mode %lld %lldx%lld: 1 and 2 threads differ", (long long)mode, (long long)c.H,
                (long long)c.W);
  free(X), free(Y), free(Y2), free(Xb);
}

START_TEST(pool_blocked) {
  static const int64_t planes[][2] = {{7, 7}, {14, 14}, {9, 17}, {1, 1}, {2, 33}, {12, 8}};
  for (size_t pi = 0; pi < sizeof planes / sizeof planes[0]; pi++) {
    int64_t H = planes[pi][0], W = planes[pi][1];
    const pbc cases[] = {
        {1, 17, H, W, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0}, /* 2x2 s2 */
        {1, 17, H, W, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* 3x3 s1 p1 */
        {2, 20, H, W, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0}, /* 3x3 s2 p0 */
        {1, 40, H, W, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, /* 3x3 s2 p1 */
        {2, 33, H, W, H, W, 1, 1, 1, 1, 0, 0, 0, 0}, /* global */
        {1, 16, H, W, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2}, /* dilated */
        {1, 3, H, W, 3, 3, 2, 2, 1, 1, 1, 0, 2, 1},  /* uneven pads */
        {1, 17, H, W, 3, 2, 2, 1, 1, 2, 0, 1, 2, 1}, /* per-axis everything */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
      pbc c = cases[ci];
      if (c.H + c.pt + c.pb < (c.KH - 1) * c.dh + 1 || c.W + c.pl + c.pr < (c.KW - 1) * c.dw + 1)
        continue;
      pb_case(c, 0, 0, 0);
      pb_case(c, 0, 0, 5);
      pb_case(c, 1, 0, 0);
      pb_case(c, 1, 1, 0);
      pb_case(c, 1, 0, 7);
      /* a lone NaN at each of a window's first pixels (a global window
       * splits into interleaved parts) */
      for (int64_t k = 1; k <= 4; k++)
        pb_case(c, 0, 0, -(k * c.H * c.W + k));
    }
  }
  /* the global pools of the zoo's classifier heads and SE blocks */
  pb_case((pbc){1, 1280, 7, 7, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0}, 1, 0, 0);
  pb_case((pbc){1, 576, 14, 14, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0}, 1, 0, 0);
  pb_case((pbc){1, 960, 7, 7, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0}, 0, 0, 0);
  /* big enough to be split between threads */
  pb_case((pbc){1, 64, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, 0, 0, 5);
  pb_case((pbc){1, 64, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, 1, 1, 0);
  pb_case((pbc){1, 96, 56, 56, 56, 56, 1, 1, 1, 1, 0, 0, 0, 0}, 1, 0, 0);
  pb_case((pbc){1, 96, 56, 56, 56, 56, 1, 1, 1, 1, 0, 0, 0, 0}, 0, 0, -(3 * 3136 + 5));
}
END_TEST

Suite *tk_blocked_dw_suite(void) {
  Suite *s = suite_create("blocked_dw");
  TCase *tc = tcase_create("blocked");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, blocked_roundtrip);
  tcase_add_test(tc, blocked_convert);
  tcase_add_test(tc, dw_sizes);
  tcase_add_test(tc, dw_geometry);
  tcase_add_test(tc, dw_acts);
  tcase_add_test(tc, pool_blocked);
  suite_add_tcase(s, tc);
  return s;
}
