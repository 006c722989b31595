/* tests/cpu_kernels/test_conv.c: convolution (pointwise, general im2col,
 * direct on a padded plane, grouped, depthwise) and pooling against naive
 * loops. */
#include "tk.h"

#include "gemm_impl.h"

#include <math.h>
#include <string.h>

typedef struct cv {
  int64_t N, C, H, W, M, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, g;
} cv;

static int64_t cv_oh(const cv *c) {
  return (c->H + c->pt + c->pb - ((c->KH - 1) * c->dh + 1)) / c->sh + 1;
}
static int64_t cv_ow(const cv *c) {
  return (c->W + c->pl + c->pr - ((c->KW - 1) * c->dw + 1)) / c->sw + 1;
}

static void ref_conv(const cv *c, const float *X, const float *Wt, const float *b, float *Y,
                     int relu) {
  int64_t OH = cv_oh(c), OW = cv_ow(c), Cg = c->C / c->g, Mg = c->M / c->g;
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t m = 0; m < c->M; m++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double s = b ? b[m] : 0;
          int64_t g = m / Mg;
          for (int64_t ci = 0; ci < Cg; ci++)
            for (int64_t kh = 0; kh < c->KH; kh++)
              for (int64_t kw = 0; kw < c->KW; kw++) {
                int64_t ih = oh * c->sh - c->pt + kh * c->dh, iw = ow * c->sw - c->pl + kw * c->dw;
                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W)
                  continue;
                s += (double)X[((n * c->C + g * Cg + ci) * c->H + ih) * c->W + iw] *
                     Wt[((m * Cg + ci) * c->KH + kh) * c->KW + kw];
              }
          if (relu && s < 0)
            s = 0;
          Y[((n * c->M + m) * OH + oh) * OW + ow] = (float)s;
        }
}

/* Conv with fused activation act (parameters a, pb), and a residual when
 * `res`, against ref_conv then the residual and the activation.
 * Unpacked filters: at 16 lanes on 1 thread and 8 lanes on 2. Packed
 * (`packed`): the filters in the prepacked layout at 16 lanes, as a JIT'd
 * model on an AVX-512 host calls the kernel (filters wider than 1x1 take
 * the direct kernel, conv_direct.c; depthwise filters are never packed),
 * on 1 and on 2 threads, which must give the same bits. */
static void conv_case_run(cv c, int64_t act, float a, float pb, int res, int packed) {
  int64_t OH = cv_oh(&c), OW = cv_ow(&c), Mg = c.M / c.g, Kg = c.C / c.g * c.KH * c.KW;
  int64_t xn = c.N * c.C * c.H * c.W, wn = c.M * Kg, yn = c.N * c.M * OH * OW;
  uint32_t seed = packed ? 21 : 11;
  float *X = tk_alloc(xn), *Wt = tk_alloc(wn), *b = tk_alloc(c.M), *Y = tk_alloc(yn);
  float *Y2 = tk_alloc(yn), *R = tk_alloc(yn), *Z = res ? tk_alloc(yn) : NULL;
  if (Z)
    tk_fill(Z, yn, seed + 3);
  tk_fill(X, xn, seed);
  tk_fill(Wt, wn, seed + 1);
  tk_fill(b, c.M, seed + 2);
  int dwise = c.g == c.C && c.M == c.C && c.g > 1;
  float *Wpk = packed && !dwise ? tk_pack(Wt, c.g, Mg, Kg, kcpu_gemm_mr(16)) : NULL;
  const float *Wu = Wpk ? NULL : Wt;
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  kcpu_k_conv2d_ex(X, Wu, Wpk, b, Z, Y, c.N, c.C, c.H, c.W, c.M, OH, OW, c.KH, c.KW, c.sh, c.sw,
                   c.dh, c.dw, c.pt, c.pl, c.g, act, a, pb, 16, NULL);
  kcpu_k_conv2d_ex(X, Wu, Wpk, b, Z, Y2, c.N, c.C, c.H, c.W, c.M, OH, OW, c.KH, c.KW, c.sh, c.sw,
                   c.dh, c.dw, c.pt, c.pl, c.g, act, a, pb, packed ? 16 : 8, p2);
  ref_conv(&c, X, Wt, b, R, 0);
  for (int64_t i = 0; i < yn; i++)
    R[i] = (float)tk_ref_act(act, a, pb, (double)R[i] + (Z ? Z[i] : 0));
  double tol = packed ? 2e-6 * (double)Kg + 1e-5 : 1e-4;
  for (int64_t i = 0; i < yn; i++) {
    ck_assert_msg(fabs(Y[i] - R[i]) < tol,
                  "%sconv C%lld M%lld H%lld W%lld k%lldx%lld s%lld g%lld act %lld: %lld got %g "
                  "want %g",
                  packed ? "packed " : "", (long long)c.C, (long long)c.M, (long long)c.H,
                  (long long)c.W, (long long)c.KH, (long long)c.KW, (long long)c.sh, (long long)c.g,
                  (long long)act, (long long)i, Y[i], R[i]);
    if (packed)
      ck_assert_msg(Y2[i] == Y[i], "packed conv: 2 threads differ from 1 at %lld", (long long)i);
    else
      ck_assert_msg(fabs(Y2[i] - R[i]) < tol, "conv (2 threads, 8 lanes) %lld", (long long)i);
  }
  kcpu_pool_destroy(p2);
  free(X), free(Wt), free(b), free(Y), free(Y2), free(R), free(Wpk), free(Z);
}

static void conv_case_act(cv c, int64_t act, float a, float pb, int res) {
  conv_case_run(c, act, a, pb, res, 0);
}

static void conv_case_packed_act(cv c, int64_t act, float a, float pb, int res) {
  conv_case_run(c, act, a, pb, res, 1);
}

static void conv_case_packed(cv c, int relu) {
  conv_case_packed_act(c, relu ? KCPU_ACT_RELU : KCPU_ACT_NONE, 0, 0, 0);
}

START_TEST(conv_direct) {
  /* odd channel counts (1, 3, 7, 17, 24, 40), 3x3 pad 1 at 7, 14 and
   * 56 wide (the zoo's stages), tiles of 1 to 48 columns and 1 to 8 rows */
  conv_case_packed((cv){1, 1, 7, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1);
  conv_case_packed((cv){1, 3, 14, 14, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0);
  conv_case_packed((cv){1, 17, 7, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1);
  conv_case_packed((cv){2, 24, 9, 56, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0);
  conv_case_packed((cv){1, 40, 14, 14, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1);
  /* K over one KC block (C 40 x 5x5 = 1000), no pad, uneven pads,
   * dilation 2 (DeepLab-style), 1x7 and 7x1, a 2-row image */
  conv_case_packed((cv){1, 40, 11, 13, 9, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 1}, 0);
  conv_case_packed((cv){1, 7, 10, 12, 8, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 1);
  conv_case_packed((cv){1, 5, 9, 8, 6, 3, 3, 1, 1, 1, 1, 0, 2, 1, 0, 1}, 0);
  conv_case_packed((cv){1, 6, 12, 12, 10, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1}, 1);
  conv_case_packed((cv){1, 8, 9, 17, 16, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3, 1}, 0);
  conv_case_packed((cv){1, 8, 17, 9, 16, 7, 1, 1, 1, 1, 1, 3, 0, 3, 0, 1}, 0);
  conv_case_packed((cv){1, 4, 2, 30, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1);
  /* grouped (ResNeXt, RegNet): 4 groups of 8 -> 8 */
  conv_case_packed((cv){1, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4}, 1);
  /* strides: 3x3 stride 2 (ResNet's downsampling), the 7x7 stride-2 stem
   * on 3 channels with odd sizes, stride 2 x 1 with dilation, a 4x4
   * stride-4 patch embedding */
  conv_case_packed((cv){1, 5, 15, 15, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}, 0);
  conv_case_packed((cv){1, 16, 14, 14, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}, 1);
  conv_case_packed((cv){1, 3, 37, 29, 8, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1}, 1);
  conv_case_packed((cv){1, 4, 13, 12, 5, 3, 3, 2, 1, 2, 1, 2, 1, 1, 2, 1}, 0);
  conv_case_packed((cv){1, 3, 16, 20, 7, 4, 4, 4, 4, 1, 1, 0, 0, 0, 0, 1}, 0);
  /* what stays on the GEMM path with packed filters: 1x1 */
  conv_case_packed((cv){1, 9, 7, 7, 17, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 1);
}
END_TEST

/* 1-D convolutions (H 1): one output row, run on phase planes where the
 * padding adds at most 1/16 to the row (a TCN's dilated layers: 500 steps,
 * 3 taps dilated 1 and 8, 64 and 40 -> 64 channels, enough work for two
 * threads, whose split of the filter rows must give the bits of one), and
 * on tap planes where it adds more (60 steps dilated 4 and 8: 8 and 16
 * padding columns); a stride-2, 2-image and a grouped one. */
START_TEST(conv_direct_1d) {
  conv_case_packed((cv){1, 64, 1, 500, 64, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1}, 1);
  conv_case_packed((cv){1, 40, 1, 500, 64, 1, 3, 1, 1, 1, 8, 0, 8, 0, 8, 1}, 1);
  conv_case_packed((cv){1, 24, 1, 60, 24, 1, 3, 1, 1, 1, 4, 0, 4, 0, 4, 1}, 0);
  conv_case_packed((cv){1, 24, 1, 60, 24, 1, 3, 1, 1, 1, 8, 0, 8, 0, 8, 1}, 0);
  conv_case_packed((cv){2, 17, 1, 301, 33, 1, 5, 1, 2, 1, 1, 0, 2, 0, 2, 1}, 1);
  conv_case_packed((cv){1, 32, 1, 200, 32, 1, 3, 1, 1, 1, 2, 0, 2, 0, 2, 4}, 0);
}
END_TEST

static void conv_case(cv c, int relu) {
  conv_case_act(c, relu ? KCPU_ACT_RELU : KCPU_ACT_NONE, 0, 0, 0);
}

/* Each fused activation on the GEMM paths (pointwise, im2col, grouped)
 * and on both depthwise kernels (3x3 and 5x5 at strides 1 and 2 on the
 * vector-row kernel, dilated on the plain one), odd channel counts, with
 * and without a residual. */
START_TEST(conv_activations) {
  static const struct {
    int64_t act;
    float a, b;
  } acts[] = {{KCPU_ACT_NONE, 0, 0},
              {KCPU_ACT_RELU, 0, 0},
              {KCPU_ACT_CLIP, 0.0f, 0.5f},
              {KCPU_ACT_CLIP, -INFINITY, 0.25f},
              {KCPU_ACT_HARD_SIGMOID, 0.4f, 0.25f},
              {KCPU_ACT_HARD_SWISH, 1.0f / 6, 0.5f},
              {KCPU_ACT_SWISH, 1.0f, 0},
              {KCPU_ACT_GELU, 0, 0}};
  static const cv cs[] = {{1, 3, 5, 7, 17, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},  /* pointwise */
                          {1, 7, 9, 11, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, /* dense 3x3 */
                          /* rows of 20 and 37: whole vectors in the direct kernel's store */
                          {1, 5, 6, 20, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                          {1, 3, 9, 74, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
                          {1, 6, 8, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3}, /* grouped, stride 2 */
                          {1, 17, 13, 10, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17},
                          {1, 7, 17, 17, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 7},
                          {1, 3, 12, 20, 3, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 3},
                          {1, 5, 31, 31, 5, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 5},
                          {1, 1, 9, 9, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  /* channels 1 */
                          {1, 3, 9, 9, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3}}; /* dilated depthwise */
  for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++)
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
      for (int res = 0; res < 2; res++) {
        conv_case_act(cs[ci], acts[ai].act, acts[ai].a, acts[ai].b, res);
        /* prepacked: the direct kernel for the dense and grouped ones, the
         * small-plane one for depthwise planes narrower than 16 */
        conv_case_packed_act(cs[ci], acts[ai].act, acts[ai].a, acts[ai].b, res);
      }
}
END_TEST

START_TEST(conv_pointwise) {
  conv_case((cv){2, 7, 5, 6, 17, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1}, 0);
}
END_TEST

START_TEST(conv_general) {
  conv_case((cv){1, 3, 9, 11, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1);
  conv_case((cv){2, 5, 17, 15, 7, 3, 2, 2, 3, 1, 2, 0, 2, 1, 0, 1}, 0);
  conv_case((cv){1, 4, 8, 8, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 2}, 0);  /* grouped, dilated */
  conv_case((cv){1, 2, 1, 20, 3, 1, 5, 1, 1, 1, 1, 0, 2, 0, 2, 1}, 0); /* 1-D */
}
END_TEST

START_TEST(conv_depthwise) {
  conv_case((cv){2, 6, 13, 10, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6}, 1);
  conv_case((cv){1, 5, 9, 9, 5, 5, 3, 2, 2, 1, 1, 2, 1, 2, 1, 5}, 0);
  /* 3x3 stride 2 and stride 1 on the vector-row kernel: rows of 9, 16 and
   * 40 outputs (under, at and over a multiple of its 16), uneven pads */
  conv_case((cv){1, 4, 17, 17, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4}, 1);
  conv_case((cv){2, 3, 34, 33, 3, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, 3}, 0);
  conv_case((cv){1, 3, 7, 40, 3, 3, 3, 1, 1, 1, 1, 1, 0, 1, 2, 3}, 1);
  /* 5x5 (MobileNetV3, EfficientNet) at stride 1 and 2, and a 1x7 */
  conv_case((cv){1, 4, 12, 20, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 4}, 1);
  conv_case((cv){2, 3, 31, 31, 3, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 3}, 0);
  conv_case((cv){1, 2, 5, 19, 2, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3, 2}, 1);
  /* planes narrower than 16 outputs, 16 channels to a vector: 7x7 with
   * 3x3 and 5x5 (MobileNets', EfficientNet's last stage) at channel
   * counts 1, 17, 24, 40 (blocks of 16 with a tail), stride 2 down to 7,
   * dilation 2, a 1x1 plane, two images */
  conv_case((cv){1, 17, 7, 7, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17}, 1);
  conv_case((cv){2, 24, 7, 7, 24, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 24}, 0);
  conv_case((cv){1, 40, 14, 14, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 40}, 1);
  conv_case((cv){1, 1, 9, 11, 1, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1}, 0);
  conv_case((cv){1, 16, 1, 1, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16}, 1);
  conv_case((cv){1, 33, 10, 9, 33, 5, 5, 2, 2, 1, 1, 2, 1, 2, 2, 33}, 0);
}
END_TEST

/* Depthwise at odd sizes, against ref_conv, 1 and 2 threads giving the
 * same bits: channel counts 1 to 40, rows of 15, 16, 17, 56 and 112 (under,
 * at and over a vector, several vectors with and without a remainder),
 * 14 (one vector a row), 3x3 / 5x5 / 7x7 at strides 1 and 2, symmetric,
 * asymmetric and no pads, plane heights that leave a partial block of rows;
 * each activation, with and without a residual, over the sweep. */
START_TEST(conv_depthwise_sizes) {
  static const int64_t chans[] = {1, 3, 7, 17, 24, 40}, widths[] = {15, 16, 17, 56, 112, 14};
  const tk_act *acts = tk_acts();
  int64_t n = 0;
  for (int64_t k = 3; k <= 7; k += 2)
    for (int64_t s = 1; s <= 2; s++)
      for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++, n++) {
        int64_t W = widths[wi], C = chans[n % 6], H = W > 20 ? 9 + n % 5 : W;
        /* pads: (k-1)/2 all round; none; more before than after */
        int64_t p = (k - 1) / 2, pt = p, pl = p, pb = p, pr = p;
        if (n % 3 == 1)
          pt = pl = pb = pr = 0;
        else if (n % 3 == 2)
          pt = p + 1, pl = p, pb = p - 1, pr = 0;
        cv c = {1 + (n % 4 == 3), C, H, W, C, k, k, s, s, 1, 1, pt, pl, pb, pr, C};
        size_t ai = (size_t)n % TK_N_ACTS;
        for (int res = 0; res < 2; res++)
          conv_case_packed_act(c, acts[ai].act, acts[ai].a, acts[ai].b, res);
      }
}
END_TEST

START_TEST(conv_hand) {
  /* 1x1x3x3 input 1..9, 2x2 kernel of ones, no pad: sums of 2x2 windows */
  float X[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, Wt[4] = {1, 1, 1, 1}, Y[4];
  kcpu_k_conv2d(X, Wt, NULL, Y, 1, 1, 3, 3, 1, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 1, 0, 16, NULL);
  ck_assert_float_eq(Y[0], 12);
  ck_assert_float_eq(Y[1], 16);
  ck_assert_float_eq(Y[2], 24);
  ck_assert_float_eq(Y[3], 28);
}
END_TEST

START_TEST(pool_hand) {
  /* 4x4 input 0..15; 3x3 windows, stride 2, pads 1 on every side */
  float X[16], Y[4];
  for (int i = 0; i < 16; i++)
    X[i] = (float)i;
  kcpu_k_pool2d(X, Y, 1, 4, 4, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, NULL);
  ck_assert_float_eq(Y[0], 5);
  ck_assert_float_eq(Y[1], 7);
  ck_assert_float_eq(Y[2], 13);
  ck_assert_float_eq(Y[3], 15);
  kcpu_k_pool2d(X, Y, 1, 4, 4, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, NULL);
  /* window (0,0) covers rows 0-1, cols 0-1: (0+1+4+5)/4 */
  ck_assert_float_eq(Y[0], 2.5f);
  /* window (1,1) covers rows 1-3, cols 1-3: mean of 5,6,7,9,10,11,13,14,15 = 10 */
  ck_assert_float_eq(Y[3], 10.0f);
  kcpu_k_pool2d(X, Y, 1, 4, 4, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, NULL);
  ck_assert_float_eq(Y[0], 10.0f / 9.0f); /* pads count */
}
END_TEST

Suite *tk_conv_suite(void) {
  Suite *s = suite_create("cpu_kernels_conv");
  TCase *tc = tcase_create("conv");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, conv_hand);
  tcase_add_test(tc, conv_pointwise);
  tcase_add_test(tc, conv_general);
  tcase_add_test(tc, conv_direct);
  tcase_add_test(tc, conv_direct_1d);
  tcase_add_test(tc, conv_depthwise);
  tcase_add_test(tc, conv_depthwise_sizes);
  tcase_add_test(tc, conv_activations);
  tcase_add_test(tc, pool_hand);
  suite_add_tcase(s, tc);
  return s;
}
