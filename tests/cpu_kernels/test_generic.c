/* tests/cpu_kernels/test_generic.c: the type-generic kernels (losses,
 * N-D and transposed convolution, pooling with indices, any-type MatMul,
 * Det, TopK, scatters, Pow with mixed types, Einsum, Resize tables, RNN)
 * and the f16 / bf16 conversions they use (kiln/ops_ref.h), against
 * hand-computed values or naive references written here. */
#include "tk.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gemm_impl.h"
#include "kcpu_elem.h"

START_TEST(half_conversions) {
  /* exact values survive; ties round to even; overflow is inf */
  const float v[] = {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++)
    ck_assert_float_eq(kiln_ref_f16_to_f32(kiln_ref_f32_to_f16(v[i])), v[i]);
  ck_assert_uint_eq(kiln_ref_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie -> even */
  ck_assert_uint_eq(kiln_ref_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02); /* tie -> even */
  ck_assert_uint_eq(kiln_ref_f32_to_f16(70000.0f), 0x7c00);           /* inf */
  ck_assert_uint_eq(kiln_ref_f32_to_bf16(1.0f + 1.0f / 256), 0x3f80); /* tie -> even */
  ck_assert_uint_eq(kiln_ref_f32_to_bf16(1.0f + 3.0f / 256), 0x3f82); /* tie -> even */
  ck_assert_float_eq(kiln_ref_bf16_to_f32(0xc040), -3.0f);
}
END_TEST

START_TEST(nll_and_sce) {
  /* logp [2, 3]: rows pick classes 2 and 0 -> losses 3 and 4 */
  float lp[6] = {-1, -2, -3, -4, -5, -6}, y[2];
  int64_t t[2] = {2, 0};
  kcpu_k_nll(KCPU_F32, lp, KCPU_I64, t, KCPU_F32, NULL, y, 2, 3, 1, 0, 0, 0, NULL, 0);
  ck_assert_float_eq(y[0], 3);
  ck_assert_float_eq(y[1], 4);
  float w[3] = {0.5f, 1, 2};
  kcpu_k_nll(KCPU_F32, lp, KCPU_I64, t, KCPU_F32, w, y, 2, 3, 1, 2, 0, 0, NULL, 0);
  /* (3*2 + 4*0.5) / (2 + 0.5) = 3.2 */
  ck_assert_float_eq_tol(y[0], 3.2f, 1e-6f);
  /* SCE of equal scores: log_prob = -log 3 everywhere */
  float s[6] = {1, 1, 1, 1, 1, 1}, lpo[6];
  ck_assert_int_eq(
      kcpu_k_sce(KCPU_F32, s, KCPU_I64, t, KCPU_F32, NULL, y, lpo, 2, 3, 1, 1, 0, 0, NULL, 0), 0);
  ck_assert_float_eq_tol(y[0], 2 * logf(3), 1e-6f);
  ck_assert_float_eq_tol(lpo[4], -logf(3), 1e-6f);
  /* class 3 of 3 is out of range unless it is the ignored one */
  int64_t bad[2] = {0, 3};
  kcpu_fault f = {0};
  kcpu_k_nll(KCPU_F32, lp, KCPU_I64, bad, KCPU_F32, NULL, y, 2, 3, 1, 0, 1, 3, &f, 5);
  ck_assert_int_eq(f.claimed, 0);
  ck_assert_float_eq(y[1], 0);
  kcpu_k_nll(KCPU_F32, lp, KCPU_I64, bad, KCPU_F32, NULL, y, 2, 3, 1, 0, 0, 0, &f, 5);
  ck_assert_int_eq(f.claimed, 1);
  ck_assert_int_eq(f.site, 5);
  ck_assert_int_eq(f.value, 3);
  ck_assert_int_eq(f.bound, 3);
  ck_assert_int_eq(f.at, 1);
}
END_TEST

/* Naive transposed convolution, 1-D, one group, for comparison. */
static void naive_convt1d(const float *x, const float *w, float *y, int64_t C, int64_t M, int64_t L,
                          int64_t K, int64_t s, int64_t pb, int64_t O) {
  for (int64_t i = 0; i < M * O; i++)
    y[i] = 0;
  for (int64_t c = 0; c < C; c++)
    for (int64_t l = 0; l < L; l++)
      for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++) {
          int64_t o = l * s - pb + k;
          if (o >= 0 && o < O)
            y[m * O + o] += x[c * L + l] * w[(c * M + m) * K + k];
        }
}

START_TEST(conv_nd_and_transposed) {
  /* 1-D conv: x = 1..5, w = [1, 0, -1], pad 1: y[o] = x[o-1] - x[o+1] */
  float x[5] = {1, 2, 3, 4, 5}, w3[3] = {1, 0, -1}, y[5];
  int64_t in = 5, out = 5, k = 3, one = 1, pad = 1;
  kcpu_k_convnd(KCPU_F32, x, w3, NULL, y, 1, 1, 1, 1, 1, &in, &out, &k, &one, &one, &pad);
  const float want[5] = {-2, -2, -2, -2, 4};
  for (int i = 0; i < 5; i++)
    ck_assert_float_eq(y[i], want[i]);
  /* transposed: stride 2, pad 1, 2 in-channels, 3 out-channels */
  float xt[2 * 4], wt[2 * 3 * 3], yt[3 * 8], ref[3 * 8];
  tk_fill(xt, 8, 1);
  tk_fill(wt, 18, 2);
  int64_t L = 4, O = 8, s = 2, pb = 1, K = 3;
  ck_assert_int_eq(
      kcpu_k_convtransposend(KCPU_F32, xt, wt, NULL, yt, 1, 2, 3, 1, 1, &L, &O, &K, &s, &one, &pb),
      0);
  naive_convt1d(xt, wt, ref, 2, 3, L, K, s, pb, O);
  for (int i = 0; i < 24; i++)
    ck_assert_float_eq_tol(yt[i], ref[i], 1e-6f);
}
END_TEST

START_TEST(pool_with_indices) {
  /* 3-D max over a 2x2x2 cube: the max 7 is at flat index 6; average 3.5 */
  float x[8] = {0, 1, 2, 3, 4, 5, 7, 6}, y;
  int64_t ind, d2[3] = {2, 2, 2}, d1[3] = {1, 1, 1}, z[3] = {0, 0, 0};
  kcpu_k_poolnd(KCPU_F32, x, &y, &ind, 1, 3, d2, d1, d2, d1, d1, z, z, 0, 0, 0);
  ck_assert_float_eq(y, 7);
  ck_assert_int_eq(ind, 6);
  /* column-major: (1,1,0) -> 1 + 2*1 + 4*0 = 3 */
  kcpu_k_poolnd(KCPU_F32, x, &y, &ind, 1, 3, d2, d1, d2, d1, d1, z, z, 0, 0, 1);
  ck_assert_int_eq(ind, 3);
  kcpu_k_poolnd(KCPU_F32, x, &y, NULL, 1, 3, d2, d1, d2, d1, d1, z, z, 1, 0, 0);
  ck_assert_float_eq(y, 3.5f);
  /* u8 max */
  uint8_t xb[4] = {3, 250, 7, 9}, yb;
  int64_t l4 = 4, l1 = 1;
  kcpu_k_poolnd(KCPU_U8, xb, &yb, NULL, 1, 1, &l4, &l1, &l4, &l1, &l1, z, z, 0, 0, 0);
  ck_assert_uint_eq(yb, 250);
}
END_TEST

START_TEST(matmul_any_det) {
  /* i32 [2,3] x [3,2] */
  int32_t a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, c[4];
  kcpu_k_matmul_any(KCPU_I32, 1, NULL, NULL, 2, 2, 3, a, b, c);
  ck_assert_int_eq(c[0], 58);
  ck_assert_int_eq(c[1], 64);
  ck_assert_int_eq(c[2], 139);
  ck_assert_int_eq(c[3], 154);
  double da[6] = {1, 2, 3, 4, 5, 6}, db[6] = {7, 8, 9, 10, 11, 12}, dc[4];
  kcpu_k_matmul_any(KCPU_F64, 1, NULL, NULL, 2, 2, 3, da, db, dc);
  ck_assert_double_eq(dc[3], 154);
  /* det of [[0, 2, 1], [1, 0, 0], [0, 1, 3]] = -(2*3 - 1*1) = -5 */
  double m[9] = {0, 2, 1, 1, 0, 0, 0, 1, 3}, d;
  ck_assert_int_eq(kcpu_k_det(KCPU_F64, m, &d, 1, 3), 0);
  ck_assert_double_eq_tol(d, -5, 1e-12);
}
END_TEST

START_TEST(topk_scatter) {
  /* [1, 5, 2] over 5: largest 2 of each inner column */
  float x[10] = {1, 9, 4, 8, 4, 7, 2, 6, 0, 5}, v[4];
  int64_t idx[4];
  ck_assert_int_eq(kcpu_k_topk(KCPU_F32, x, v, idx, 1, 5, 2, 2, 1), 0);
  /* column 0: 1 4 4 2 0 -> 4 (1), 4 (2); column 1: 9 8 7 6 5 -> 9 (0), 8 (1) */
  ck_assert_float_eq(v[0], 4);
  ck_assert_int_eq(idx[0], 1);
  ck_assert_float_eq(v[2], 4);
  ck_assert_int_eq(idx[2], 2);
  ck_assert_int_eq(idx[1], 0);
  ck_assert_int_eq(idx[3], 1);
  /* ScatterElements axis 1 with add and a negative index */
  float d[6] = {1, 2, 3, 4, 5, 6}, u[2] = {10, 20}, y[6];
  int64_t ii[2] = {-1, 0}, dd[2] = {2, 3}, id[2] = {2, 1};
  kcpu_fault f = {0};
  kcpu_k_scatter_elements(KCPU_F32, d, KCPU_I64, ii, u, y, 2, dd, id, 1, 1, &f, 0);
  const float want[6] = {1, 2, 13, 24, 5, 6};
  for (int i = 0; i < 6; i++)
    ck_assert_float_eq(y[i], want[i]);
  ck_assert_int_eq(f.claimed, 0);
  /* ScatterND replaces row 1 of [3, 2] */
  float d2[6] = {0, 0, 0, 0, 0, 0}, u2[2] = {7, 8};
  int64_t i2[1] = {1}, dims2[2] = {3, 2};
  kcpu_k_scatter_nd(KCPU_F32, d2, KCPU_I64, i2, u2, d2, 2, dims2, 1, 1, 0, &f, 0);
  ck_assert_float_eq(d2[2], 7);
  ck_assert_float_eq(d2[3], 8);
  ck_assert_float_eq(d2[0], 0);
  ck_assert_int_eq(f.claimed, 0);
  /* out of range: -4 along an axis of 3, row 3 of 3 */
  int64_t bi[2] = {0, -4};
  kcpu_k_scatter_elements(KCPU_F32, d, KCPU_I64, bi, u, y, 2, dd, id, 1, 0, &f, 2);
  ck_assert_int_eq(f.claimed, 1);
  ck_assert_int_eq(f.value, -4);
  ck_assert_int_eq(f.bound, 3);
  ck_assert_int_eq(f.at, 1);
  ck_assert_float_eq(y[0], 10); /* the update before the bad index landed */
  kcpu_fault g = {0};
  int64_t b2[1] = {3};
  kcpu_k_scatter_nd(KCPU_F32, d2, KCPU_I64, b2, u2, d2, 2, dims2, 1, 1, 0, &g, 7);
  ck_assert_int_eq(g.claimed, 1);
  ck_assert_int_eq(g.site, 7);
  ck_assert_int_eq(g.value, 3);
  ck_assert_int_eq(g.bound, 3);
  /* GatherElements axis 0 of [3, 2] with [[2, -3], [1, 0]] */
  float ge[6] = {1, 2, 3, 4, 5, 6}, gy[4];
  int64_t gi[4] = {2, -3, 1, 0}, gd[2] = {3, 2}, gid[2] = {2, 2};
  kcpu_fault h = {0};
  kcpu_k_gather_elements(ge, KCPU_I64, gi, gy, 2, gd, gid, 0, 4, &h, 0);
  ck_assert_int_eq(h.claimed, 0);
  ck_assert_float_eq(gy[0], 5);
  ck_assert_float_eq(gy[1], 2);
  ck_assert_float_eq(gy[2], 3);
  ck_assert_float_eq(gy[3], 2);
  gi[3] = 3;
  kcpu_k_gather_elements(ge, KCPU_I64, gi, gy, 2, gd, gid, 0, 4, &h, 1);
  ck_assert_int_eq(h.claimed, 1);
  ck_assert_int_eq(h.value, 3);
  ck_assert_int_eq(h.bound, 3);
  ck_assert_int_eq(h.at, 3);
  /* GatherND on [2, 3] with tuples (1, -1), (0, 1); batch_dims 1 with
   * rows [[2], [0]] */
  int32_t ni[4] = {1, -1, 0, 1};
  float ny[2];
  kcpu_fault k = {0};
  kcpu_k_gather_nd(ge, KCPU_I32, ni, ny, 2, (const int64_t[]){2, 3}, 0, 2, 2, 2, 4, &k, 0);
  ck_assert_int_eq(k.claimed, 0);
  ck_assert_float_eq(ny[0], 6);
  ck_assert_float_eq(ny[1], 2);
  int32_t nb[2] = {2, 0};
  kcpu_k_gather_nd(ge, KCPU_I32, nb, ny, 2, (const int64_t[]){2, 3}, 1, 1, 2, 1, 4, &k, 0);
  ck_assert_int_eq(k.claimed, 0);
  ck_assert_float_eq(ny[0], 3);
  ck_assert_float_eq(ny[1], 4);
  nb[1] = -4;
  kcpu_k_gather_nd(ge, KCPU_I32, nb, ny, 2, (const int64_t[]){2, 3}, 1, 1, 2, 1, 4, &k, 3);
  ck_assert_int_eq(k.claimed, 1);
  ck_assert_int_eq(k.value, -4);
  ck_assert_int_eq(k.bound, 3);
  ck_assert_int_eq(k.at, 1);
}
END_TEST

START_TEST(pow_einsum_resize) {
  int64_t a[3] = {2, -3, 5}, st1[1] = {1}, st0[1] = {0}, dims[1] = {3}, out[3];
  int32_t e[1] = {3};
  kcpu_k_pow_mixed(KCPU_I64, a, st1, KCPU_I32, e, st0, out, 1, dims);
  ck_assert_int_eq(out[0], 8);
  ck_assert_int_eq(out[1], -27);
  ck_assert_int_eq(out[2], 125);
  /* einsum "ij,jk->ik" as labels i, k (out) and j (summed) vs naive */
  float A[6], B[12], C[8], R[8];
  tk_fill(A, 6, 3);
  tk_fill(B, 12, 4);
  int64_t ld[3] = {2, 4, 3}; /* i, k, j */
  int64_t st[6] = {3, 0, 1, /* A: i*3 + j */ 0, 1, 4 /* B: j*4 + k */};
  kcpu_k_einsum(KCPU_F32, 2, A, B, NULL, C, 3, 2, ld, st);
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 4; k++) {
      float acc = 0;
      for (int j = 0; j < 3; j++)
        acc += A[i * 3 + j] * B[j * 4 + k];
      R[i * 4 + k] = acc;
    }
  for (int i = 0; i < 8; i++)
    ck_assert_float_eq_tol(C[i], R[i], 1e-6f);
  /* resize by table: 2 -> 3, taps (0: 1), (0: 0.5, 1: 0.5), (1: 1), and
   * an outside index on a second table gives the extrapolation value */
  float x[2] = {2, 4}, y[3];
  double w[6] = {1, 0, 0.5, 0.5, 0, 1};
  int64_t tw[6], ti[6] = {0, 1, 0, 1, 0, 1}, nt = 2, off = 0, in2 = 2, o3 = 3;
  memcpy(tw, w, sizeof w);
  kcpu_k_resize(KCPU_F32, x, y, 1, &in2, &o3, &nt, &off, ti, tw, 0, 0.0);
  ck_assert_float_eq(y[0], 2);
  ck_assert_float_eq(y[1], 3);
  ck_assert_float_eq(y[2], 4);
  ti[2] = -1;
  kcpu_k_resize(KCPU_F32, x, y, 1, &in2, &o3, &nt, &off, ti, tw, 0, -7.0);
  ck_assert_float_eq(y[1], -7);
}
END_TEST

START_TEST(rnn_one_unit) {
  /* RNN, H = I = 1, two steps, tanh: h1 = tanh(0.5*1 + 2*0) ,
   * h2 = tanh(0.5*(-1) + 2*h1) */
  float X[2] = {1, -1}, W[1] = {0.5f}, R[1] = {2}, Y[2], Yh[1];
  int64_t dims[5] = {2, 1, 1, 1, 1}, act[6] = {1, 0, 0, 0, 0, 0}, ab[12] = {0};
  ck_assert_int_eq(kcpu_k_rnn(KCPU_F32, 1, X, W, R, NULL, NULL, NULL, KCPU_I32, NULL, NULL, NULL,
                              NULL, Y, Yh, NULL, dims, 0, 0, 0, 0, 0.0, act, ab, 4, NULL),
                   0);
  double h1 = tanh(0.5), h2 = tanh(-0.5 + 2 * h1);
  ck_assert_float_eq_tol(Y[0], (float)h1, 1e-6f);
  ck_assert_float_eq_tol(Y[1], (float)h2, 1e-6f);
  ck_assert_float_eq_tol(Yh[0], (float)h2, 1e-6f);
}
END_TEST

/* Deterministic values in [-scale, scale). */
static void rnn_fill(float *f, double *d, int64_t n, uint32_t seed, double scale) {
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    double v = ((double)(seed >> 8) / (double)(1u << 24) * 2 - 1) * scale;
    f[i] = (float)v;
    d[i] = (double)f[i];
  }
}

/* Prepacks, as the emitter does at compile time, following the layout
 * kcpu_runtime.h documents for kcpu_k_rnn (gemm_impl.h's formula): group g
 * element (i, k) = src[g*gstride + i*rs + k] for i < R, k < K. */
static float *rnn_prepack(const float *src, int64_t groups, int64_t gstride, int64_t R, int64_t K,
                          int64_t rs, int64_t U) {
  int64_t RP = (R + U - 1) / U * U, one = kcpu_prepacked_size(R, K, U);
  float *dst = calloc((size_t)(groups * one), sizeof(float));
  for (int64_t g = 0; g < groups; g++)
    for (int64_t i = 0; i < R; i++)
      for (int64_t k = 0; k < K; k++) {
        int64_t k0 = k / KCPU_KC * KCPU_KC, kc = K - k0 < KCPU_KC ? K - k0 : KCPU_KC;
        dst[g * one + k0 * RP + i / U * U * kc + (k - k0) * U + i % U] =
            src[g * gstride + i * rs + k];
      }
  return dst;
}

typedef struct rnn_case {
  int64_t G, S, B, I, H, D, reverse, layout1, lbr, input_forget, peep, lens;
  double clip;
} rnn_case;

/* The f32 path (GEMM + matrix-vector steps) against the generic f64 path
 * on the same values, with W and R as given and as prepacked at compile
 * time (which must give the same bits), at every vector width and on 1
 * and 2 threads: initial states, biases, peepholes, sequence_lens (row 1
 * shorter), both layouts and GRU's linear_before_reset. */
static void rnn_compare(rnn_case c) {
  int64_t G = c.G, S = c.S, B = c.B, I = c.I, H = c.H, D = c.D, GH = G * H;
  int64_t nx = S * B * I, nw = D * GH * I, nr = D * GH * H, nb = D * 2 * GH, nh = D * B * H,
          np = D * 3 * H, ny = S * D * B * H;
  float *f = calloc((size_t)(nx + nw + nr + nb + 2 * nh + np + 3 * ny + 6 * nh), sizeof(float));
  double *dd = calloc((size_t)(nx + nw + nr + nb + 2 * nh + np + ny + 2 * nh), sizeof(double));
  float *xf = f, *wf = xf + nx, *rf = wf + nw, *bf = rf + nr, *h0f = bf + nb, *c0f = h0f + nh,
        *pf = c0f + nh, *y32 = pf + np, *yp = y32 + ny, *ypk = yp + ny, *yh32 = ypk + ny,
        *yc32 = yh32 + nh, *yhp = yc32 + nh, *ycp = yhp + nh, *yhpk = ycp + nh, *ycpk = yhpk + nh;
  double *xd = dd, *wd = xd + nx, *rd = wd + nw, *bd = rd + nr, *h0d = bd + nb, *c0d = h0d + nh,
         *pd = c0d + nh, *y64 = pd + np, *yh64 = y64 + ny, *yc64 = yh64 + nh;
  rnn_fill(xf, xd, nx, 1, 1.0);
  rnn_fill(wf, wd, nw, 2, 0.7);
  rnn_fill(rf, rd, nr, 3, 0.7);
  rnn_fill(bf, bd, nb, 4, 0.3);
  rnn_fill(h0f, h0d, nh, 5, 0.5);
  rnn_fill(c0f, c0d, nh, 6, 0.5);
  rnn_fill(pf, pd, np, 7, 0.4);
  /* row 1 shorter; rows 3 and 4 (batches of 5 and more) finish early too */
  int32_t lens[8] = {(int32_t)S, (int32_t)(S + 1) / 2, (int32_t)S, (int32_t)S - 1, 1,
                     (int32_t)S, (int32_t)S, (int32_t)S};
  const int32_t *ln = c.lens ? lens : NULL;
  int64_t dims[5] = {S, B, I, H, D};
  /* default activations: RNN tanh; GRU sigmoid, tanh; LSTM sigmoid, tanh, tanh */
  int64_t act[6] = {0}, ab[12] = {0};
  int64_t per = G == 1 ? 1 : G == 3 ? 2 : 3;
  for (int64_t d = 0; d < D; d++)
    for (int64_t i = 0; i < per; i++)
      act[d * per + i] = i == 0 && G != 1 ? 2 : 1; /* KCPU_A_SIGMOID = 2, KCPU_A_TANH = 1 */
  bool lstm = G == 4;
  const float *P32 = lstm && c.peep ? pf : NULL;
  const double *P64 = lstm && c.peep ? pd : NULL;
  ck_assert_int_eq(kcpu_k_rnn(KCPU_F64, G, xd, wd, rd, NULL, NULL, bd, KCPU_I32, ln, h0d,
                              lstm ? c0d : NULL, P64, y64, yh64, lstm ? yc64 : NULL, dims,
                              c.reverse, c.layout1, c.lbr, c.input_forget, c.clip, act, ab, 8,
                              NULL),
                   0);
  char what[160];
  snprintf(what, sizeof what, "G=%lld S=%lld B=%lld H=%lld D=%lld rev=%lld layout=%lld lbr=%lld",
           (long long)G, (long long)S, (long long)B, (long long)H, (long long)D,
           (long long)c.reverse, (long long)c.layout1, (long long)c.lbr);
  static const int64_t lanes_of[3] = {4, 8, 16};
  for (int li = 0; li < 3; li++) {
    int64_t lanes = lanes_of[li];
    float *wpk = rnn_prepack(wf, D, GH * I, GH, I, I, kcpu_gemm_nr(lanes));
    float *rpk = rnn_prepack(rf, D * G, H * H, H, H, H, kcpu_rnn_unit(lanes));
    for (int threads = 1; threads <= 2; threads++) {
      struct kcpu_pool *pool = threads > 1 ? kcpu_pool_create(threads) : NULL;
      /* Garbage where the kernel must write (Y past a row's length too). */
      for (int64_t i = 0; i < ny; i++)
        y32[i] = ypk[i] = 7;
      ck_assert_int_eq(kcpu_k_rnn(KCPU_F32, G, xf, wf, rf, NULL, NULL, bf, KCPU_I32, ln, h0f,
                                  lstm ? c0f : NULL, P32, y32, yh32, lstm ? yc32 : NULL, dims,
                                  c.reverse, c.layout1, c.lbr, c.input_forget, c.clip, act, ab,
                                  lanes, pool),
                       0);
      /* packed: W and R are not read */
      ck_assert_int_eq(kcpu_k_rnn(KCPU_F32, G, xf, NULL, NULL, wpk, rpk, bf, KCPU_I32, ln, h0f,
                                  lstm ? c0f : NULL, P32, ypk, yhpk, lstm ? ycpk : NULL, dims,
                                  c.reverse, c.layout1, c.lbr, c.input_forget, c.clip, act, ab,
                                  lanes, pool),
                       0);
      kcpu_pool_destroy(pool);
      if (li == 0 && threads == 1) {
        memcpy(yp, y32, (size_t)ny * sizeof *yp);
        memcpy(yhp, yh32, (size_t)nh * sizeof *yhp);
        memcpy(ycp, yc32, (size_t)nh * sizeof *ycp);
      }
      for (int64_t i = 0; i < ny; i++) {
        ck_assert_msg(fabs(y32[i] - y64[i]) < 2e-5, "%s lanes=%lld Y[%lld]: %g vs %g", what,
                      (long long)lanes, (long long)i, (double)y32[i], y64[i]);
        ck_assert_msg(ypk[i] == y32[i], "%s lanes=%lld packed Y[%lld]: %g vs %g", what,
                      (long long)lanes, (long long)i, (double)ypk[i], (double)y32[i]);
        /* the vector width and thread count pick blocking, never results */
        ck_assert_msg(y32[i] == yp[i], "%s lanes=%lld threads=%d Y[%lld] differs", what,
                      (long long)lanes, threads, (long long)i);
      }
      for (int64_t i = 0; i < nh; i++) {
        ck_assert_msg(fabs(yh32[i] - yh64[i]) < 2e-5, "%s Y_h[%lld]: %g vs %g", what, (long long)i,
                      (double)yh32[i], yh64[i]);
        ck_assert_msg(yhpk[i] == yh32[i] && yh32[i] == yhp[i], "%s packed Y_h[%lld]", what,
                      (long long)i);
        if (lstm) {
          ck_assert_msg(fabs(yc32[i] - yc64[i]) < 2e-5, "%s Y_c[%lld]: %g vs %g", what,
                        (long long)i, (double)yc32[i], yc64[i]);
          ck_assert_msg(ycpk[i] == yc32[i] && yc32[i] == ycp[i], "%s packed Y_c[%lld]", what,
                        (long long)i);
        }
      }
      /* Steps past a row's length leave Y zero (row 1 is shorter). */
      if (ln && B > 1)
        for (int64_t t = lens[1]; t < S; t++)
          for (int64_t d = 0; d < D; d++)
            for (int64_t j = 0; j < H; j++) {
              int64_t yi = (c.layout1 ? (1 * S + t) * D + d : (t * D + d) * B + 1) * H + j;
              ck_assert_float_eq(y32[yi], 0.0f);
              ck_assert_float_eq(ypk[yi], 0.0f);
            }
    }
    free(wpk);
    free(rpk);
  }
  free(f);
  free(dd);
}

START_TEST(rnn_f32_path_matches_generic) {
  for (int64_t layout1 = 0; layout1 < 2; layout1++) {
    /* G S B I H D rev layout lbr if peep lens clip */
    rnn_compare((rnn_case){1, 5, 2, 3, 4, 2, 0, layout1, 0, 0, 1, 1, 0.0});
    rnn_compare((rnn_case){3, 5, 2, 3, 4, 2, 0, layout1, 0, 0, 1, 1, 0.0});
    rnn_compare((rnn_case){3, 5, 2, 3, 4, 2, 0, layout1, 1, 0, 1, 1, 0.0});
    rnn_compare((rnn_case){4, 5, 2, 3, 4, 2, 0, layout1, 0, 0, 1, 1, 0.0});
    rnn_compare((rnn_case){4, 5, 2, 3, 4, 2, 0, layout1, 0, 1, 1, 1, 0.0});
    rnn_compare((rnn_case){4, 5, 2, 3, 4, 2, 0, layout1, 0, 0, 1, 1, 0.25});
  }
}
END_TEST

/* Batches of up to 6 rows, whose steps go together: the AVX-512 product
 * takes up to 4 rows per weight load (5 and 6: a group of 4, then the
 * rest), rows that finish early drop out of the groups; hidden sizes past
 * the threshold at which a step's units split over the threads (G x H x H
 * x B >= 2^18: LSTM 136 x 5, GRU 150 x 4), one direction (split) and two
 * (a thread each). */
START_TEST(rnn_f32_path_batches) {
  for (int64_t G = 1; G <= 4; G += G == 1 ? 2 : 1) {
    /* G S B I H D rev layout lbr if peep lens clip */
    rnn_compare((rnn_case){G, 4, 6, 5, 40, 1, 0, 0, 0, 0, 1, 1, 0.0});
    rnn_compare((rnn_case){G, 4, 5, 5, 40, 1, 1, 1, G == 3, 0, 1, 1, 0.0});
  }
  rnn_compare((rnn_case){4, 3, 5, 7, 136, 1, 0, 0, 0, 0, 1, 1, 0.0});
  rnn_compare((rnn_case){3, 3, 4, 7, 150, 1, 0, 1, 0, 0, 0, 1, 0.0});
  rnn_compare((rnn_case){3, 3, 4, 7, 150, 1, 1, 0, 1, 0, 0, 1, 0.0});
  rnn_compare((rnn_case){1, 3, 5, 7, 240, 2, 0, 0, 0, 0, 0, 1, 0.0});
}
END_TEST

/* Hidden sizes around the product's block of units (8, 16 or 32 by the
 * vector width: padding rows, several blocks, a partial last one), one
 * step and several, batch 1 and 3, one direction either way. */
START_TEST(rnn_f32_path_shapes) {
  static const int64_t Hs[] = {1, 7, 17, 33};
  for (size_t hi = 0; hi < sizeof Hs / sizeof *Hs; hi++)
    for (int64_t G = 1; G <= 4; G += G == 1 ? 2 : 1) {
      int64_t H = Hs[hi];
      /* G S B I H D rev layout lbr if peep lens clip */
      rnn_compare((rnn_case){G, 5, 3, 6, H, 2, 0, 0, G == 3, 0, 1, 1, 0.0});
      rnn_compare((rnn_case){G, 1, 1, 6, H, 1, 0, 1, 0, 0, 0, 0, 0.0});
      rnn_compare((rnn_case){G, 5, 1, 6, H, 1, 1, 0, 0, 0, 0, 1, 0.0});
      rnn_compare((rnn_case){G, 5, 3, 6, H, 1, 0, 1, G == 3, 0, 1, 0, 0.0});
    }
}
END_TEST

/* H past the GEMM's K block (256), where the packed recurrence weights
 * hold two blocks of k per matrix. */
START_TEST(rnn_f32_path_two_k_blocks) {
  /* G S B I H D rev layout lbr if peep lens clip */
  rnn_compare((rnn_case){4, 2, 1, 3, 260, 1, 0, 0, 0, 0, 1, 0, 0.0});
  rnn_compare((rnn_case){3, 2, 1, 3, 260, 1, 1, 0, 0, 0, 0, 0, 0.0});
}
END_TEST

Suite *tk_generic_suite(void) {
  Suite *s = suite_create("cpu_kernels_generic");
  TCase *tc = tcase_create("generic");
  tcase_add_test(tc, half_conversions);
  tcase_add_test(tc, nll_and_sce);
  tcase_add_test(tc, conv_nd_and_transposed);
  tcase_add_test(tc, pool_with_indices);
  tcase_add_test(tc, matmul_any_det);
  tcase_add_test(tc, topk_scatter);
  tcase_add_test(tc, pow_einsum_resize);
  tcase_add_test(tc, rnn_one_unit);
  tcase_add_test(tc, rnn_f32_path_matches_generic);
  tcase_add_test(tc, rnn_f32_path_batches);
  tcase_add_test(tc, rnn_f32_path_shapes);
  tcase_add_test(tc, rnn_f32_path_two_k_blocks);
  suite_add_tcase(s, tc);
  return s;
}
