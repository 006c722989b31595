/* tests/cpu_kernels/test_conv_blocked.c: dense and grouped 2-D
 * convolution into the channel-blocked layout (conv_blocked.c), from
 * blocked and (group 1) from plain inputs, against a naive loop in double
 * over the plain layout: group widths that fill blocks and that tile them,
 * channel
 * counts around the 16-lane blocks and the kernel's groups of blocks,
 * output widths around its runs of pixels, filter sizes, strides,
 * dilations and pads, every activation with and without a residual (apart
 * and in place), batches; and the same bits with 1 and 2 threads and with
 * filters packed per call or beforehand. */
#include <string.h>

#include "tk.h"

#include "conv_blocked.h"

typedef struct cb {
  int64_t C, H, W, M, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, N, G; /* N, G: 0 means 1 */
} cb;

/* Every activation, residual none / apart / in place, from a blocked
 * (x_blocked) or plain input: one thread with filters packed per call
 * against two threads with filters packed beforehand (same bits), both
 * against the plain convolution in double; padding lanes of Y must be 0.
 * Padding lanes of the blocked input are NaN, those of the residual
 * random: neither may reach a result. */
static void cb_check(cb c, int64_t x_blocked) {
  int64_t N = c.N ? c.N : 1, G = c.G ? c.G : 1, ci = c.C / G, co = c.M / G;
  int64_t OH = (c.H + c.pt + c.pb - ((c.KH - 1) * c.dh + 1)) / c.sh + 1;
  int64_t OW = (c.W + c.pl + c.pr - ((c.KW - 1) * c.dw + 1)) / c.sw + 1;
  int64_t Cb = (c.C + 15) / 16, Mb = (c.M + 15) / 16, HW = c.H * c.W, OHW = OH * OW;
  int64_t yn = N * Mb * 16 * OHW;
  float *X = tk_alloc(N * c.C * HW), *Xb = tk_alloc(N * Cb * 16 * HW);
  float *Wt = tk_alloc(c.M * ci * c.KH * c.KW), *b = tk_alloc(c.M);
  float *Rb = tk_alloc(yn), *Y1 = tk_alloc(yn), *Y2 = tk_alloc(yn);
  double *S = calloc((size_t)(N * c.M * OHW), sizeof *S);
  tk_fill(X, N * c.C * HW, (uint32_t)(c.C * 7 + c.W));
  tk_fill(Wt, c.M * ci * c.KH * c.KW, (uint32_t)c.M + 3);
  tk_fill(b, c.M, 11);
  tk_fill(Rb, yn, 13);
  for (int64_t i = 0; i < N * Cb * 16 * HW; i++) /* padding lanes: data a kernel must not read */
    Xb[i] = NAN;
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < c.C; ch++)
      for (int64_t s = 0; s < HW; s++)
        Xb[((n * Cb + ch / 16) * HW + s) * 16 + ch % 16] = X[(n * c.C + ch) * HW + s];
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < c.M; m++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double s = b[m];
          for (int64_t i = 0; i < ci; i++) /* the channels of m's group */
            for (int64_t kh = 0; kh < c.KH; kh++)
              for (int64_t kw = 0; kw < c.KW; kw++) {
                int64_t ih = oh * c.sh - c.pt + kh * c.dh, iw = ow * c.sw - c.pl + kw * c.dw;
                if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W)
                  s += (double)X[((n * c.C + m / co * ci + i) * c.H + ih) * c.W + iw] *
                       Wt[((m * ci + i) * c.KH + kh) * c.KW + kw];
              }
          S[(n * c.M + m) * OHW + oh * OW + ow] = s;
        }
  float *Wpk = tk_alloc(kcpu_convb_packed_size(c.M, c.C, c.KH, c.KW, G, x_blocked));
  kcpu_convb_pack(Wt, Wpk, c.M, c.C, c.KH, c.KW, G, x_blocked);
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  const tk_act *acts = tk_acts();
  double tol = 2e-6 * (double)(ci * c.KH * c.KW) + 1e-5;
  for (size_t ai = 0; ai < TK_N_ACTS; ai++)
    for (int res = 0; res < 3; res++) { /* none, apart, in place */
      const tk_act *a = &acts[ai];
      if (res == 2) {
        memcpy(Y1, Rb, (size_t)yn * sizeof *Y1);
        memcpy(Y2, Rb, (size_t)yn * sizeof *Y2);
      }
      kcpu_k_conv2d_blocked(x_blocked ? Xb : X, x_blocked, Wt, NULL, b,
                            res == 1   ? Rb
                            : res == 2 ? Y1
                                       : NULL,
                            Y1, N, c.C, c.H, c.W, c.M, OH, OW, c.KH, c.KW, c.sh, c.sw, c.dh, c.dw,
                            c.pt, c.pl, G, a->act, a->a, a->b, NULL);
      kcpu_k_conv2d_blocked(x_blocked ? Xb : X, x_blocked, NULL, Wpk, b,
                            res == 1   ? Rb
                            : res == 2 ? Y2
                                       : NULL,
                            Y2, N, c.C, c.H, c.W, c.M, OH, OW, c.KH, c.KW, c.sh, c.sw, c.dh, c.dw,
                            c.pt, c.pl, G, a->act, a->a, a->b, p2);
      ck_assert_msg(memcmp(Y1, Y2, (size_t)yn * sizeof *Y1) == 0,
                    "C%lld M%lld G%lld %lldx%lld k%lldx%lld: 1 thread, packed per call, and 2 "
                    "threads, prepacked, differ (act %lld res %d)",
                    (long long)c.C, (long long)c.M, (long long)G, (long long)c.H, (long long)c.W,
                    (long long)c.KH,
                    (long long)c.KW, (long long)a->act, res);
      for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < Mb * 16; m++)
          for (int64_t q = 0; q < OHW; q++) {
            int64_t o = ((n * Mb + m / 16) * OHW + q) * 16 + m % 16;
            if (m >= c.M) {
              ck_assert_msg(Y1[o] == 0.0f, "padding lane %lld is %g (act %lld res %d)",
                            (long long)m, Y1[o], (long long)a->act, res);
              continue;
            }
            double s = S[(n * c.M + m) * OHW + q] + (res ? Rb[o] : 0.0);
            double want = tk_ref_act(a->act, a->a, a->b, s);
            ck_assert_msg(fabs(Y1[o] - want) <= tol * (1 + fabs(want)),
                          "C%lld G%lld %lldx%lld M%lld k%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld,"
                          "%lld,%lld xb%lld act %lld res %d: n %lld m %lld (%lld,%lld) got %g want "
                          "%g",
                          (long long)c.C, (long long)G, (long long)c.H, (long long)c.W,
                          (long long)c.M,
                          (long long)c.KH, (long long)c.KW, (long long)c.sh, (long long)c.sw,
                          (long long)c.dh, (long long)c.dw, (long long)c.pt, (long long)c.pl,
                          (long long)c.pb, (long long)c.pr, (long long)x_blocked, (long long)a->act,
                          res, (long long)n, (long long)m, (long long)(q / OW), (long long)(q % OW),
                          Y1[o], want);
          }
    }
  kcpu_pool_destroy(p2);
  free(X), free(Xb), free(Wt), free(b), free(Rb), free(Y1), free(Y2), free(S), free(Wpk);
}

/* Input and output channels around the blocks (1 to 5 of them: the
 * kernel's groups of up to 4 blocks, 5 making two), 3x3 and 1x1. */
START_TEST(conv_blocked_channels) {
  static const int64_t cs[] = {1, 3, 7, 16, 17, 24, 40, 64, 70};
  static const int64_t ms[] = {1, 7, 16, 17, 24, 40, 64, 65, 80};
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    int64_t C = cs[i], M = ms[(i * 5 + 2) % 9];
    cb_check((cb){C, 6, 7, M, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 1);
    cb_check((cb){C, 5, 6, ms[i], 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}, 1);
    cb_check((cb){C, 5, 4, M, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 0);
  }
}
END_TEST

/* Output widths around the runs of pixels (6, 8 and 12 pixels for 4, 3
 * and 1-2 blocks), in rows (3x3 padded) and in whole planes (1x1: the
 * plane is one run of OH * OW pixels). */
START_TEST(conv_blocked_widths) {
  static const int64_t ws[] = {1, 2, 5, 6, 7, 8, 9, 11, 12, 13, 25};
  for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
    int64_t W = ws[i];
    cb_check((cb){20, 3, W, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 1);
    cb_check((cb){9, 2, W, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 1);
    cb_check((cb){18, 2, W, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 1);
    cb_check((cb){33, 1, W, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}, 1);
    cb_check((cb){33, 2, W, 48, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}, 1);
  }
}
END_TEST

/* Filter sizes, strides, dilations and pads: uneven, none, larger than
 * the filter's reach on one side, and trailing ones that leave input
 * rows and columns unread. */
START_TEST(conv_blocked_geometry) {
  static const cb cases[] = {
      /* C H W M KH KW sh sw dh dw pt pl pb pr */
      {17, 9, 11, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
      {16, 10, 10, 32, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0},
      {16, 11, 13, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},
      {24, 9, 9, 17, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0},
      {8, 12, 10, 33, 3, 3, 1, 2, 2, 1, 0, 2, 2, 0, 0, 0},
      {7, 9, 14, 16, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0},
      {19, 13, 11, 48, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 0, 0},
      {16, 12, 12, 64, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 0, 0},
      {32, 8, 9, 16, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0},
      {32, 9, 8, 40, 1, 1, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0},
      {20, 7, 8, 18, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0},
      {16, 10, 11, 16, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0},
      {16, 9, 10, 24, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0},
      {5, 6, 7, 20, 2, 4, 1, 1, 1, 1, 0, 3, 1, 0, 0, 0},
      {16, 4, 5, 16, 3, 3, 1, 1, 1, 1, 4, 4, 4, 4, 0, 0},
      {33, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1, -1, -1, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cb_check(cases[i], 1);
    if (i % 2 == 0)
      cb_check(cases[i], 0);
  }
}
END_TEST

/* Taps that read only padding for a whole run of pixels, which the kernel
 * leaves out: dilations as large as the plane (DeepLabV3's ASPP: 3x3
 * dilated by 12 on 16x16, where rows 4-11 read only the middle tap row),
 * with strides, 5x5, uneven dilations, and filters past the kernel's
 * 256 KiB a pass (chunks of pairs, a run's live taps in some of them).
 * Between the first and the last, which keep the whole zero-bordered
 * copy (a quarter of it would not be saved; 9x9 has 81 taps, past the
 * live mask's 64), the copy is cut to what the taps that run read
 * (kcpu_convb: image rows only, columns at most a run past the edges),
 * also with pads past a run's reach on both sides (the copy starting
 * inside the padding), output rows past the image whose taps all read
 * padding (bias only), and outputs wider than the columns the taps read
 * (a 5x5 image padded by 30). */
START_TEST(conv_blocked_dead_taps) {
  static const cb cases[] = {
      /* C H W M KH KW sh sw dh dw pt pl pb pr */
      {24, 16, 16, 17, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0},
      {16, 7, 9, 33, 5, 5, 1, 1, 3, 3, 6, 6, 6, 6, 0, 0},
      {16, 6, 20, 16, 3, 3, 1, 1, 4, 2, 4, 2, 4, 2, 0, 0},
      {20, 16, 16, 24, 3, 3, 1, 1, 12, 12, 12, 12, 12, 12, 0, 0},
      {17, 9, 13, 18, 3, 3, 2, 2, 6, 5, 6, 5, 6, 5, 0, 0},
      {300, 8, 8, 20, 3, 3, 1, 1, 6, 6, 6, 6, 6, 6, 0, 0},
      {16, 6, 7, 20, 3, 3, 1, 1, 14, 14, 14, 14, 14, 14, 0, 0},
      {17, 9, 13, 18, 3, 3, 2, 2, 14, 13, 14, 13, 14, 13, 0, 0},
      {16, 6, 6, 16, 3, 3, 1, 1, 6, 6, 20, 20, 4, 4, 0, 0},
      {20, 28, 28, 24, 3, 3, 1, 1, 24, 24, 24, 24, 24, 24, 0, 0},
      {300, 6, 6, 20, 3, 3, 1, 1, 10, 10, 10, 10, 10, 10, 0, 0},
      {16, 5, 5, 16, 3, 3, 1, 1, 1, 1, 30, 30, 30, 30, 0, 0},
      {16, 5, 5, 16, 9, 9, 1, 1, 3, 3, 12, 12, 12, 12, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    cb_check(cases[i], 1);
}
END_TEST

/* Plain inputs: the stems (3 channels, 7x7 s2 p3 and 3x3 s2 p1), and more
 * than 16 plain channels (copied into full blocks). */
START_TEST(conv_blocked_plain) {
  cb_check((cb){3, 12, 13, 17, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 0, 0}, 0);
  cb_check((cb){3, 15, 14, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0}, 0);
  cb_check((cb){1, 8, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 0);
  cb_check((cb){21, 7, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 0);
  cb_check((cb){40, 6, 6, 20, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}, 0);
  /* RGB 3x3 stems of up to 32 outputs (mobile nets'): strides 1 and 2,
   * rows of full runs and a tail, rows shorter than a run, a taller
   * dilation, unpadded */
  cb_check((cb){3, 11, 30, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 0);
  cb_check((cb){3, 13, 27, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0}, 0);
  cb_check((cb){3, 10, 17, 32, 3, 3, 1, 2, 2, 1, 2, 1, 2, 1, 0, 0}, 0);
  cb_check((cb){3, 6, 5, 8, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}, 0);
}
END_TEST

/* Batches: each image at its own offset (copied or read in place). */
START_TEST(conv_blocked_batch) {
  cb_check((cb){17, 6, 7, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 0}, 1);
  cb_check((cb){24, 5, 5, 40, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0}, 1);
  cb_check((cb){3, 9, 9, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 0}, 0);
}
END_TEST

/* Filters past the kernel's 256 KiB a pass (conv_blocked.c, KCB_WBYTES):
 * the reduction goes in chunks of (tap, input block) pairs, some ending
 * inside a tap, whose sums pass through scratch. */
START_TEST(conv_blocked_chunks) {
  cb_check((cb){300, 6, 7, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 1);
  cb_check((cb){2100, 3, 9, 20, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}, 1);
  cb_check((cb){520, 7, 7, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0}, 1);
}
END_TEST

/* Grouped convolutions (blocked input): group widths that tile a block
 * (2, 4 and 8 channels: RegNet's 8, ResNeXt-50's first two stages' 4 and
 * 8), with the last block part-filled (24 = 6 x 4, 40 = 5 x 8, 104 = 13 x
 * 8, RegNetY-400MF's second stage); widths that fill whole blocks (16
 * and 32: ResNeXt's later stages; 16 in and 32 out), a group's output
 * blocks past the kernel's 4 at a time (64 -> 160 in 2 groups: 5 blocks
 * each); strides, dilations, pads, 1x1 and 5x5, batches. The padding
 * lanes of X are NaN: they may reach only the output's padding lanes,
 * which must be 0. */
START_TEST(conv_blocked_grouped) {
  static const cb cases[] = {
      /* C H W M KH KW sh sw dh dw pt pl pb pr N G */
      {8, 7, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 4},
      {24, 9, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 6},
      {40, 7, 8, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 5},
      {104, 9, 7, 104, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 13},
      {128, 8, 8, 128, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 32},
      {48, 6, 13, 48, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0, 3},
      {64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 2},
      {96, 5, 6, 96, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 3},
      {32, 6, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 2},
      {64, 5, 9, 160, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 2},
      {16, 9, 9, 16, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 0, 8},
      {24, 6, 6, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3},
      {32, 5, 5, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2},
      /* tiled groups' runs: rows of several runs and a tail, flat at
       * stride 1 (runs across row ends), row by row otherwise (sh != sw
       * too), 5x5 dilated, 1x1 unpadded, uneven pads, batches */
      {32, 11, 30, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 8},
      {64, 13, 29, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 8},
      {40, 9, 17, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 20},
      {24, 8, 19, 24, 5, 5, 1, 1, 2, 2, 4, 4, 4, 4, 0, 3},
      {48, 10, 21, 48, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 0, 12},
      {16, 7, 26, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 2},
      {32, 9, 14, 32, 3, 3, 1, 1, 1, 1, 0, 1, 2, 0, 0, 4},
      {8, 6, 37, 8, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 2, 4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    cb_check(cases[i], 1);
  /* tiled groups from a plain input (the kernel's entry takes one; the
   * emitter gives grouped layers blocked inputs): under 16 channels and
   * over */
  cb_check((cb){8, 6, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 2}, 0);
  cb_check((cb){24, 7, 9, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 6}, 0);
  /* groupings without a blocked kernel: none (depthwise has its own) */
  int64_t gin, gout, cr;
  ck_assert_int_eq(kcpu_convb_grouping(12, 24, 4, &gin, &gout, &cr), 0); /* 3 -> 6 */
  ck_assert_int_eq(kcpu_convb_grouping(36, 36, 3, &gin, &gout, &cr), 0); /* 12 a group */
  ck_assert_int_eq(kcpu_convb_grouping(24, 24, 8, &gin, &gout, &cr), 0); /* 3 a group */
  ck_assert_int_eq(kcpu_convb_packed_size(24, 24, 3, 3, 8, 1), 0);
  ck_assert_int_eq(kcpu_convb_grouping(40, 40, 5, &gin, &gout, &cr), 1);
  ck_assert_int_eq(gin * 100 + gout * 10 + cr / 16, 111);
  ck_assert_int_eq(kcpu_convb_grouping(64, 160, 2, &gin, &gout, &cr), 1);
  ck_assert_int_eq(gin * 100 + gout * 10, 250);
}
END_TEST

/* The dense packed layout, from its definition in conv_blocked.h: group g
 * of J blocks from block b0 holds [kh][kw][c][j][lane]. */
START_TEST(conv_blocked_pack_layout) {
  int64_t M = 83, C = 5, KH = 2, KW = 3, T = KH * KW, Mb = 6; /* groups of 3 and 3 blocks */
  float *Wt = tk_alloc(M * C * T), *Wpk = tk_alloc(kcpu_convb_packed_size(M, C, KH, KW, 1, 1));
  tk_fill(Wt, M * C * T, 5);
  kcpu_convb_pack(Wt, Wpk, M, C, KH, KW, 1, 1);
  ck_assert_int_eq(kcpu_convb_groups(Mb, Mb), 2);
  for (int64_t mb = 0; mb < Mb; mb++) {
    int64_t b0 = mb < 3 ? 0 : 3, J = 3;
    for (int64_t t = 0; t < T; t++)
      for (int64_t c = 0; c < C; c++)
        for (int64_t l = 0; l < 16; l++) {
          int64_t m = mb * 16 + l;
          float got = Wpk[b0 * C * T * 16 + ((t * C + c) * J + (mb - b0)) * 16 + l];
          ck_assert_msg(got == (m < M ? Wt[(m * C + c) * T + t] : 0.0f), "mb %lld t %lld c %lld",
                        (long long)mb, (long long)t, (long long)c);
        }
  }
  free(Wt), free(Wpk);
}
END_TEST

Suite *tk_conv_blocked_suite(void) {
  Suite *s = suite_create("conv_blocked");
  TCase *tc = tcase_create("dense");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, conv_blocked_channels);
  tcase_add_test(tc, conv_blocked_widths);
  tcase_add_test(tc, conv_blocked_geometry);
  tcase_add_test(tc, conv_blocked_dead_taps);
  tcase_add_test(tc, conv_blocked_plain);
  tcase_add_test(tc, conv_blocked_batch);
  tcase_add_test(tc, conv_blocked_chunks);
  tcase_add_test(tc, conv_blocked_pack_layout);
  tcase_add_test(tc, conv_blocked_grouped);
  suite_add_tcase(s, tc);
  return s;
}
