/* tests/cpu_kernels/test_convt.c: 2-D ConvTranspose (kcpu_k_convtranspose2d:
 * a GEMM per image and group, then a scatter into the output) against a
 * naive loop in double: strides equal to the filter (UNet's 2x2 stride
 * 2) and overlapping (DCGAN's 4x4 stride 2 pad 1), dilation, uneven
 * pads, output_padding (a larger output), groups, odd channel counts, a
 * batch; the GEMM both ways round (swap: inputs of a few pixels, 1x1
 * with every image in one GEMM); rows whose paired stride-2 taps fill
 * whole vectors and leave tails, and a row too wide for the row path;
 * filters as given and prepacked, on 1 thread and (the same bits) on 2. */
#include "tk.h"

#include <math.h>

typedef struct ct {
  int64_t N, C, H, W, M, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, oph, opw, g, swap;
} ct;

static void ct_check(ct c, int packed) {
  int64_t OH = (c.H - 1) * c.sh + (c.KH - 1) * c.dh + 1 + c.oph - c.pt - c.pb;
  int64_t OW = (c.W - 1) * c.sw + (c.KW - 1) * c.dw + 1 + c.opw - c.pl - c.pr;
  int64_t Cg = c.C / c.g, Mg = c.M / c.g, R = Mg * c.KH * c.KW, HW = c.H * c.W;
  int64_t xn = c.N * c.C * HW, wn = c.C * R, yn = c.N * c.M * OH * OW;
  float *X = tk_alloc(xn), *Wt = tk_alloc(wn), *b = tk_alloc(c.M), *Y = tk_alloc(yn);
  float *Y2 = tk_alloc(yn), *T = tk_alloc(wn);
  double *S = calloc((size_t)yn, sizeof *S);
  tk_fill(X, xn, 31);
  tk_fill(Wt, wn, 32);
  tk_fill(b, c.M, 33);
  for (int64_t i = 0; i < yn; i++)
    Y[i] = Y2[i] = NAN; /* every output must be written */
  /* the filters as R x Cg matrices per group, as the emitter packs them */
  for (int64_t g = 0; g < c.g; g++)
    for (int64_t i = 0; i < R; i++)
      for (int64_t k = 0; k < Cg; k++)
        T[(g * R + i) * Cg + k] = Wt[(g * Cg + k) * R + i];
  int64_t U = c.swap ? kcpu_gemm_nr(16) : kcpu_gemm_mr(16);
  float *Wpk = packed ? tk_pack(T, c.g, R, Cg, U) : NULL;
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  kcpu_k_convtranspose2d(X, packed ? NULL : Wt, Wpk, b, Y, c.N, c.C, c.H, c.W, c.M, OH, OW, c.KH,
                         c.KW, c.sh, c.sw, c.dh, c.dw, c.pt, c.pl, c.g, c.swap, 16, NULL);
  kcpu_k_convtranspose2d(X, packed ? NULL : Wt, Wpk, b, Y2, c.N, c.C, c.H, c.W, c.M, OH, OW, c.KH,
                         c.KW, c.sh, c.sw, c.dh, c.dw, c.pt, c.pl, c.g, c.swap, 16, p2);
  for (int64_t n = 0; n < c.N; n++)
    for (int64_t m = 0; m < c.M; m++)
      for (int64_t i = 0; i < OH * OW; i++)
        S[(n * c.M + m) * OH * OW + i] = b[m];
  for (int64_t n = 0; n < c.N; n++)
    for (int64_t ch = 0; ch < c.C; ch++)
      for (int64_t ih = 0; ih < c.H; ih++)
        for (int64_t iw = 0; iw < c.W; iw++)
          for (int64_t mi = 0; mi < Mg; mi++)
            for (int64_t kh = 0; kh < c.KH; kh++)
              for (int64_t kw = 0; kw < c.KW; kw++) {
                int64_t oh = ih * c.sh - c.pt + kh * c.dh, ow = iw * c.sw - c.pl + kw * c.dw;
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
                  continue;
                int64_t m = ch / Cg * Mg + mi;
                S[((n * c.M + m) * OH + oh) * OW + ow] +=
                    (double)X[((n * c.C + ch) * c.H + ih) * c.W + iw] *
                    Wt[((ch * Mg + mi) * c.KH + kh) * c.KW + kw];
              }
  double tol = 2e-6 * (double)(Cg * c.KH * c.KW) + 1e-5;
  for (int64_t i = 0; i < yn; i++) {
    ck_assert_msg(fabs(Y[i] - S[i]) < tol,
                  "convT C%lld M%lld %lldx%lld k%lldx%lld s%lld,%lld g%lld swap %lld packed %d: "
                  "%lld got %g want %g",
                  (long long)c.C, (long long)c.M, (long long)c.H, (long long)c.W, (long long)c.KH,
                  (long long)c.KW, (long long)c.sh, (long long)c.sw, (long long)c.g,
                  (long long)c.swap, packed, (long long)i, Y[i], S[i]);
    ck_assert_msg(Y2[i] == Y[i], "convT: 2 threads differ from 1 at %lld", (long long)i);
  }
  kcpu_pool_destroy(p2);
  free(X), free(Wt), free(b), free(Y), free(Y2), free(T), free(S), free(Wpk);
}

START_TEST(convt_geometry) {
  static const ct cases[] = {
      /* N C H W M KH KW sh sw dh dw pt pl pb pr oph opw g swap */
      {1, 20, 8, 9, 13, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0},  /* UNet's 2x2 stride 2 */
      {2, 17, 6, 7, 9, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0},   /* DCGAN's, overlapping */
      {1, 6, 5, 7, 8, 3, 3, 1, 1, 2, 2, 1, 2, 0, 1, 0, 0, 2, 0},    /* dilated, uneven, grouped */
      {1, 5, 6, 5, 7, 3, 3, 2, 3, 1, 1, 1, 0, 1, 2, 1, 2, 1, 0},    /* output_padding */
      {1, 300, 5, 6, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},  /* K past one KC block */
      {3, 40, 1, 1, 24, 4, 4, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1},  /* the 1x1 latent */
      {2, 24, 3, 4, 10, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1},  /* a few pixels */
      {1, 8, 2, 3, 12, 3, 2, 2, 1, 1, 2, 0, 1, 1, 0, 0, 0, 4, 1},   /* turned around, grouped */
      {2, 9, 5, 19, 3, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0},   /* rows of paired taps, tails */
      {1, 7, 3, 17, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},   /* a pair and a lone tap */
      {1, 6, 1, 20, 5, 1, 8, 1, 4, 1, 1, 0, 2, 0, 2, 0, 0, 1, 0},   /* a vocoder's 1-D stride 4 */
      {1, 2, 1, 1100, 3, 1, 4, 1, 2, 1, 1, 0, 1, 0, 1, 0, 0, 1, 0}, /* a row past the scratch */
      {1, 3, 2, 2, 2, 33, 33, 1, 1, 1, 1, 3, 2, 1, 0, 0, 0, 1, 1},  /* too many taps to gather */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_check(cases[i], 0);
    ct_check(cases[i], 1);
  }
}
END_TEST

Suite *tk_convt_suite(void) {
  Suite *s = suite_create("cpu_kernels_convt");
  TCase *tc = tcase_create("convt");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, convt_geometry);
  suite_add_tcase(s, tc);
  return s;
}
