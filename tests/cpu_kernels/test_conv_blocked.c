/* tests/cpu_kernels/test_conv_blocked.c: dense 2-D convolution into the
 * channel-blocked layout (conv_blocked.c), from blocked and from plain
 * inputs, against a naive loop in double over the plain layout. */
#include "tk.h"

#include "conv_blocked.h"

typedef struct cb {
  int64_t C, H, W, M, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
} cb;

/* Blocked conv of case c (x_blocked: input blocked), bias, residual,
 * activation a, checked channel by channel (padding lanes must be 0). */
static void cb_case(cb c, int64_t x_blocked, const tk_act *a, int with_res) {
  int64_t OH = (c.H + c.pt + c.pb - ((c.KH - 1) * c.dh + 1)) / c.sh + 1;
  int64_t OW = (c.W + c.pl + c.pr - ((c.KW - 1) * c.dw + 1)) / c.sw + 1;
  int64_t Cb = (c.C + 15) / 16, Mb = (c.M + 15) / 16;
  float *X = tk_alloc(c.C * c.H * c.W), *Xb = tk_alloc(Cb * 16 * c.H * c.W);
  float *Wt = tk_alloc(c.M * c.C * c.KH * c.KW), *b = tk_alloc(c.M);
  float *Rb = tk_alloc(Mb * 16 * OH * OW), *Y = tk_alloc(Mb * 16 * OH * OW);
  tk_fill(X, c.C * c.H * c.W, (uint32_t)c.C);
  tk_fill(Wt, c.M * c.C * c.KH * c.KW, (uint32_t)c.M + 3);
  tk_fill(b, c.M, 11);
  tk_fill(Rb, Mb * 16 * OH * OW, 13);
  for (int64_t i = 0; i < Cb * 16 * c.H * c.W; i++) /* padding lanes: data a kernel must not read */
    Xb[i] = NAN;
  for (int64_t ch = 0; ch < c.C; ch++)
    for (int64_t s = 0; s < c.H * c.W; s++)
      Xb[((ch / 16) * c.H * c.W + s) * 16 + ch % 16] = X[ch * c.H * c.W + s];
  kcpu_k_conv2d_blocked(x_blocked ? Xb : X, x_blocked, Wt, NULL, b, with_res ? Rb : NULL, Y, 1,
                        c.C, c.H, c.W, c.M, OH, OW, c.KH, c.KW, c.sh, c.sw, c.dh, c.dw, c.pt, c.pl,
                        0, a->act, a->a, a->b, NULL);
  for (int64_t m = 0; m < Mb * 16; m++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t o = (((m / 16) * OH + oh) * OW + ow) * 16 + m % 16;
        if (m >= c.M) {
          ck_assert_msg(Y[o] == 0.0f, "padding lane %lld is %g", (long long)m, Y[o]);
          continue;
        }
        double s = b[m];
        for (int64_t ci = 0; ci < c.C; ci++)
          for (int64_t kh = 0; kh < c.KH; kh++)
            for (int64_t kw = 0; kw < c.KW; kw++) {
              int64_t ih = oh * c.sh - c.pt + kh * c.dh, iw = ow * c.sw - c.pl + kw * c.dw;
              if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W)
                s += (double)X[(ci * c.H + ih) * c.W + iw] *
                     Wt[((m * c.C + ci) * c.KH + kh) * c.KW + kw];
            }
        if (with_res)
          s += Rb[o];
        double want = tk_ref_act(a->act, a->a, a->b, s);
        double tol = 2e-6 * (double)(c.C * c.KH * c.KW) + 1e-5;
        ck_assert_msg(fabs(Y[o] - want) <= tol * (1 + fabs(want)),
                      "C%lld M%lld k%lld s%lld xb%lld act %lld: m %lld (%lld,%lld) got %g want %g",
                      (long long)c.C, (long long)c.M, (long long)c.KH, (long long)c.sh,
                      (long long)x_blocked, (long long)a->act, (long long)m, (long long)oh,
                      (long long)ow, Y[o], want);
      }
  free(X), free(Xb), free(Wt), free(b), free(Rb), free(Y);
}

START_TEST(conv_blocked_basic) {
  const tk_act *acts = tk_acts();
  for (size_t ai = 0; ai < TK_N_ACTS; ai++) {
    cb_case((cb){17, 9, 11, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, 1, &acts[ai], (int)(ai & 1));
    cb_case((cb){3, 12, 13, 17, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3}, 0, &acts[ai], (int)(ai & 1));
  }
}
END_TEST

Suite *tk_conv_blocked_suite(void) {
  Suite *s = suite_create("conv_blocked");
  TCase *tc = tcase_create("dense");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, conv_blocked_basic);
  suite_add_tcase(s, tc);
  return s;
}
