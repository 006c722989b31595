/* tests/cpu_kernels/test_conv3d.c: 3-D convolution (kcpu_k_conv3d: the
 * direct kernel's phase volumes with prepacked filters and 16 lanes, else
 * GEMMs on an im2col packed from the volume) against a naive loop in double:
 * odd channel counts, strides, dilations and pads on each axis apart,
 * groups, 1x1x1 (the plain GEMM), a batch, bias, residual and every
 * activation; filters as given and prepacked, 16 lanes on 1 thread
 * against 8 lanes (unpacked) or 16 lanes (packed, the same bits) on 2. */
#include "tk.h"

#include <math.h>

typedef struct c3 {
  int64_t N, C, D, H, W, M, KD, KH, KW, sd, sh, sw, dd, dh, dw, pd, pt, pl, g;
} c3;

static int64_t c3_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p) {
  return (in + 2 * p - ((k - 1) * d + 1)) / s + 1; /* pads the same at both ends */
}

static void c3_check(c3 c, const tk_act *ac, int res, int packed) {
  int64_t OD = c3_out(c.D, c.KD, c.sd, c.dd, c.pd), OH = c3_out(c.H, c.KH, c.sh, c.dh, c.pt);
  int64_t OW = c3_out(c.W, c.KW, c.sw, c.dw, c.pl), Cg = c.C / c.g, Mg = c.M / c.g;
  int64_t Kg = Cg * c.KD * c.KH * c.KW, P = OD * OH * OW, V = c.D * c.H * c.W;
  int64_t xn = c.N * c.C * V, yn = c.N * c.M * P;
  float *X = tk_alloc(xn), *Wt = tk_alloc(c.M * Kg), *b = tk_alloc(c.M), *Y = tk_alloc(yn);
  float *Y2 = tk_alloc(yn), *Z = res ? tk_alloc(yn) : NULL;
  tk_fill(X, xn, 5);
  tk_fill(Wt, c.M * Kg, 6);
  tk_fill(b, c.M, 7);
  if (Z)
    tk_fill(Z, yn, 8);
  float *Wpk = packed ? tk_pack(Wt, c.g, Mg, Kg, kcpu_gemm_mr(16)) : NULL;
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  kcpu_k_conv3d(X, packed ? NULL : Wt, Wpk, b, Z, Y, c.N, c.C, c.D, c.H, c.W, c.M, OD, OH, OW,
                c.KD, c.KH, c.KW, c.sd, c.sh, c.sw, c.dd, c.dh, c.dw, c.pd, c.pt, c.pl, c.g,
                ac->act, ac->a, ac->b, 16, NULL);
  kcpu_k_conv3d(X, packed ? NULL : Wt, Wpk, b, Z, Y2, c.N, c.C, c.D, c.H, c.W, c.M, OD, OH, OW,
                c.KD, c.KH, c.KW, c.sd, c.sh, c.sw, c.dd, c.dh, c.dw, c.pd, c.pt, c.pl, c.g,
                ac->act, ac->a, ac->b, packed ? 16 : 8, p2);
  double tol = 2e-6 * (double)Kg + 1e-5;
  for (int64_t n = 0; n < c.N; n++)
    for (int64_t m = 0; m < c.M; m++)
      for (int64_t q = 0; q < P; q++) {
        int64_t od = q / (OH * OW), oh = q / OW % OH, ow = q % OW, gi = m / Mg;
        double s = b[m];
        for (int64_t ci = 0; ci < Cg; ci++)
          for (int64_t kd = 0; kd < c.KD; kd++)
            for (int64_t kh = 0; kh < c.KH; kh++)
              for (int64_t kw = 0; kw < c.KW; kw++) {
                int64_t id = od * c.sd - c.pd + kd * c.dd, ih = oh * c.sh - c.pt + kh * c.dh;
                int64_t iw = ow * c.sw - c.pl + kw * c.dw;
                if (id < 0 || id >= c.D || ih < 0 || ih >= c.H || iw < 0 || iw >= c.W)
                  continue;
                s += (double)X[(n * c.C + gi * Cg + ci) * V + (id * c.H + ih) * c.W + iw] *
                     Wt[(((m * Cg + ci) * c.KD + kd) * c.KH + kh) * c.KW + kw];
              }
        int64_t i = (n * c.M + m) * P + q;
        double want = tk_ref_act(ac->act, ac->a, ac->b, s + (Z ? Z[i] : 0));
        ck_assert_msg(fabs(Y[i] - want) < tol,
                      "conv3d C%lld M%lld %lldx%lldx%lld k%lldx%lldx%lld g%lld act %lld res %d "
                      "packed %d: %lld got %g want %g",
                      (long long)c.C, (long long)c.M, (long long)c.D, (long long)c.H,
                      (long long)c.W, (long long)c.KD, (long long)c.KH, (long long)c.KW,
                      (long long)c.g, (long long)ac->act, res, packed, (long long)i, Y[i], want);
        if (packed)
          ck_assert_msg(Y2[i] == Y[i], "conv3d: 2 threads differ from 1 at %lld", (long long)i);
        else
          ck_assert_msg(fabs(Y2[i] - want) < tol, "conv3d (2 threads, 8 lanes) at %lld",
                        (long long)i);
      }
  kcpu_pool_destroy(p2);
  free(X), free(Wt), free(b), free(Y), free(Y2), free(Z), free(Wpk);
}

START_TEST(conv3d_geometry) {
  static const c3 cases[] = {
      /* N C D H W M KD KH KW sd sh sw dd dh dw pd pt pl g */
      {1, 5, 4, 6, 7, 9, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* R3D's 3x3x3 */
      {1, 7, 5, 9, 8, 16, 3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1},  /* downsampling */
      {1, 3, 8, 15, 13, 17, 3, 7, 7, 1, 2, 2, 1, 1, 1, 1, 3, 3, 1}, /* the stem */
      {1, 6, 6, 5, 6, 12, 1, 3, 3, 1, 1, 1, 1, 1, 1, 0, 1, 1, 3},   /* (2+1)D spatial, grouped */
      {1, 12, 7, 4, 5, 6, 3, 1, 1, 1, 1, 1, 2, 1, 1, 2, 0, 0, 1},   /* temporal, dilated */
      {1, 17, 3, 4, 5, 24, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1},  /* 1x1x1: plain GEMM */
      {2, 20, 4, 5, 5, 8, 1, 1, 1, 2, 2, 2, 1, 1, 1, 0, 0, 0, 1},   /* 1x1x1 stride 2, batch */
      {1, 40, 3, 6, 6, 10, 3, 3, 3, 1, 1, 1, 1, 2, 3, 1, 2, 3, 1},  /* K past one KC block */
      {1, 4, 7, 9, 10, 11, 3, 3, 3, 2, 1, 2, 2, 1, 2, 2, 1, 2, 1},  /* depth stride and dilation */
      {1, 6, 5, 11, 12, 9, 1, 3, 3, 1, 2, 2, 1, 1, 1, 0, 1, 1, 1},  /* (2+1)D downsampling */
      {1, 16, 6, 20, 21, 24, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, /* tiles over 2 threads */
      /* maps large enough for the direct kernel (85% of its grid output) */
      {1, 6, 3, 30, 31, 10, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* 3x3x3 */
      {1, 5, 5, 33, 35, 9, 3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1},    /* downsampling */
      {1, 4, 7, 36, 36, 7, 3, 3, 3, 1, 1, 1, 2, 1, 1, 2, 1, 1, 1},    /* dilated in depth */
      {2, 9, 4, 32, 32, 17, 1, 3, 3, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1},   /* (2+1)D spatial, batch */
  };
  const tk_act *acts = tk_acts();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    c3_check(cases[i], &acts[i % 2], (int)(i % 3 == 0), 0);
    c3_check(cases[i], &acts[(i + 1) % 2], (int)(i % 3 == 1), 1);
  }
}
END_TEST

START_TEST(conv3d_activations) {
  const tk_act *acts = tk_acts();
  for (int a = 0; a < TK_N_ACTS; a++)
    c3_check((c3){1, 9, 4, 5, 6, 18, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, &acts[a], a % 2, 1);
}
END_TEST

Suite *tk_conv3d_suite(void) {
  Suite *s = suite_create("cpu_kernels_conv3d");
  TCase *tc = tcase_create("conv3d");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, conv3d_geometry);
  tcase_add_test(tc, conv3d_activations);
  suite_add_tcase(s, tc);
  return s;
}
