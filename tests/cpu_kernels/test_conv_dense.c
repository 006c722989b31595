/* tests/cpu_kernels/test_conv_dense.c: dense 2-D convolutions with filters
 * prepacked as the compiler hands them over (the direct kernel of
 * conv_direct.c on 16 lanes: its row panels for the stems and narrow
 * filters, its flat panels otherwise) at odd channel counts and output
 * widths, against a naive loop in double: strides, pads, dilation,
 * groups, every fused activation, a residual apart from the output and
 * one that is the output itself, and the same bits on 1 and 2 threads. */
#include "tk.h"

#include "gemm_impl.h"

#include <math.h>
#include <string.h>

typedef struct dc {
  int64_t C, H, W, M, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, g;
} dc;

static int64_t dc_oh(const dc *c) {
  return (c->H + c->pt + c->pb - ((c->KH - 1) * c->dh + 1)) / c->sh + 1;
}
static int64_t dc_ow(const dc *c) {
  return (c->W + c->pl + c->pr - ((c->KW - 1) * c->dw + 1)) / c->sw + 1;
}

/* R = conv(X, Wt) + b, one image, straight from the definition. */
static void dc_ref(const dc *c, const float *X, const float *Wt, const float *b, double *R) {
  int64_t OH = dc_oh(c), OW = dc_ow(c), Cg = c->C / c->g, Mg = c->M / c->g;
  for (int64_t m = 0; m < c->M; m++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double s = b[m];
        int64_t g = m / Mg;
        for (int64_t ci = 0; ci < Cg; ci++)
          for (int64_t kh = 0; kh < c->KH; kh++)
            for (int64_t kw = 0; kw < c->KW; kw++) {
              int64_t ih = oh * c->sh - c->pt + kh * c->dh, iw = ow * c->sw - c->pl + kw * c->dw;
              if (ih >= 0 && ih < c->H && iw >= 0 && iw < c->W)
                s += (double)X[((g * Cg + ci) * c->H + ih) * c->W + iw] *
                     Wt[((m * Cg + ci) * c->KH + kh) * c->KW + kw];
            }
        R[(m * OH + oh) * OW + ow] = s;
      }
}

/* Case c under every activation, without a residual, with one apart
 * from Y and with Y itself holding it. */
static void dc_case(dc c) {
  int64_t OH = dc_oh(&c), OW = dc_ow(&c), Kg = c.C / c.g * c.KH * c.KW;
  int64_t xn = c.C * c.H * c.W, wn = c.M * Kg, yn = c.M * OH * OW;
  float *X = tk_alloc(xn), *Wt = tk_alloc(wn), *b = tk_alloc(c.M), *Z = tk_alloc(yn);
  float *Y = tk_alloc(yn), *Y2 = tk_alloc(yn);
  double *R = calloc((size_t)yn, sizeof *R);
  tk_fill(X, xn, (uint32_t)(c.C * 31 + c.W));
  tk_fill(Wt, wn, (uint32_t)(c.M * 7 + c.KH));
  tk_fill(b, c.M, 5);
  tk_fill(Z, yn, 9);
  dc_ref(&c, X, Wt, b, R);
  float *Wpk = tk_pack(Wt, c.g, c.M / c.g, c.C / c.g * c.KH * c.KW, kcpu_gemm_mr(16));
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  double tol = 2e-6 * (double)Kg + 1e-5;
  const tk_act *dc_acts = tk_acts();
  for (size_t ai = 0; ai < TK_N_ACTS; ai++)
    for (int res = 0; res < 3; res++) { /* none, apart, in place */
      int64_t act = dc_acts[ai].act;
      float a = dc_acts[ai].a, pb = dc_acts[ai].b;
      const float *r1 = res == 1 ? Z : res == 2 ? Y : NULL;
      const float *r2 = res == 1 ? Z : res == 2 ? Y2 : NULL;
      if (res == 2) {
        memcpy(Y, Z, (size_t)yn * sizeof *Y);
        memcpy(Y2, Z, (size_t)yn * sizeof *Y2);
      }
      kcpu_k_conv2d_ex(X, NULL, Wpk, b, r1, Y, 1, c.C, c.H, c.W, c.M, OH, OW, c.KH, c.KW, c.sh,
                       c.sw, c.dh, c.dw, c.pt, c.pl, c.g, act, a, pb, 16, NULL);
      kcpu_k_conv2d_ex(X, NULL, Wpk, b, r2, Y2, 1, c.C, c.H, c.W, c.M, OH, OW, c.KH, c.KW, c.sh,
                       c.sw, c.dh, c.dw, c.pt, c.pl, c.g, act, a, pb, 16, p2);
      for (int64_t i = 0; i < yn; i++) {
        double want = tk_ref_act(act, a, pb, R[i] + (res ? Z[i] : 0));
        ck_assert_msg(fabs(Y[i] - want) < tol * (1 + fabs(want)),
                      "C%lld W%lld M%lld k%lldx%lld s%lld d%lld g%lld act %lld res %d: "
                      "out %lld (m %lld, oh %lld, ow %lld) got %g want %g",
                      (long long)c.C, (long long)c.W, (long long)c.M, (long long)c.KH,
                      (long long)c.KW, (long long)c.sw, (long long)c.dw, (long long)c.g,
                      (long long)act, res, (long long)i, (long long)(i / (OH * OW)),
                      (long long)(i / OW % OH), (long long)(i % OW), Y[i], want);
        ck_assert_msg(Y2[i] == Y[i], "C%lld W%lld act %lld res %d: 2 threads differ at %lld",
                      (long long)c.C, (long long)c.W, (long long)act, res, (long long)i);
      }
    }
  kcpu_pool_destroy(p2);
  free(X), free(Wt), free(b), free(Z), free(Y), free(Y2), free(R), free(Wpk);
}

/* The stems: 3 channels at 224 wide (a few output rows of it), 7x7
 * stride 2 pad 3 (ResNet, GoogLeNet: 112 wide), 3x3 stride 2 pad 0
 * (SqueezeNet: 111 wide) and pad 1 (MobileNet: 112 wide), output
 * channels that fill 8-row tiles and ones that leave a part. */
START_TEST(conv_dense_stems) {
  dc_case((dc){3, 13, 224, 17, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1});
  dc_case((dc){3, 9, 223, 24, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1});
  dc_case((dc){3, 8, 224, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1});
  dc_case((dc){1, 9, 223, 5, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1});
}
END_TEST

/* Output widths 15, 16, 17 (about one vector), 55 and 64 (a last panel
 * of two vectors and of one), 111 and 112, over channel counts 1 to 40:
 * the small ones take row panels, the large ones flat panels. */
START_TEST(conv_dense_widths) {
  static const int64_t ch[] = {1, 3, 7, 17, 24, 40};
  static const int64_t wd[] = {15, 16, 17, 111, 112};
  for (size_t i = 0; i < sizeof ch / sizeof ch[0]; i++)
    for (size_t j = 0; j < sizeof wd / sizeof wd[0]; j++)
      dc_case(
          (dc){ch[i], wd[j] > 100 ? 3 : 5, wd[j], 9 + ch[i] % 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  dc_case((dc){1, 4, 55, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  dc_case((dc){2, 4, 64, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  dc_case((dc){3, 6, 34, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}); /* stride 2 to 17 wide */
}
END_TEST

/* 5x5 and 7x7 at stride 1 and 2, uneven pads, dilation 2, groups. */
START_TEST(conv_dense_shapes) {
  dc_case((dc){7, 9, 17, 10, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 1});
  dc_case((dc){3, 9, 40, 9, 5, 5, 2, 2, 1, 1, 1, 2, 2, 1, 1});
  dc_case((dc){3, 11, 22, 8, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3, 1});
  dc_case((dc){17, 7, 31, 12, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1});
  dc_case((dc){3, 9, 33, 7, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1});
  dc_case((dc){24, 8, 19, 17, 3, 3, 1, 1, 2, 2, 1, 2, 3, 0, 1});
  dc_case((dc){6, 5, 111, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2});
  dc_case((dc){40, 6, 17, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4});
}
END_TEST

/* The kernel's other plane layouts, which the small cases above do not
 * reach: tap planes over 1 MiB under 128 filter rows give way to phase
 * planes, in row panels for a stem 111 wide, in flat panels for 64
 * channels at 56 x 56; outputs under a vector take flat panels. */
START_TEST(conv_dense_layouts) {
  dc_case((dc){3, 112, 222, 8, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1});
  dc_case((dc){64, 56, 56, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  dc_case((dc){5, 5, 5, 9, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1});
}
END_TEST

Suite *tk_conv_dense_suite(void) {
  Suite *s = suite_create("cpu_kernels_conv_dense");
  TCase *tc = tcase_create("conv_dense");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, conv_dense_stems);
  tcase_add_test(tc, conv_dense_widths);
  tcase_add_test(tc, conv_dense_shapes);
  tcase_add_test(tc, conv_dense_layouts);
  suite_add_tcase(s, tc);
  return s;
}
