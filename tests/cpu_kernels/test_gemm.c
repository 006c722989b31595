/* tests/cpu_kernels/test_gemm.c: SGEMM, MatMul and Gemm against a naive
 * double-precision reference on sizes around every block size, for each
 * register-blocking variant, and bit-identical across 1 and 2 threads. */
#include "tk.h"

#include "gemm_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* naive op(A) op(B) with the full epilogue, in double */
static void ref_gemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int ta,
                     const float *B, int tb, const float *C0, float *C, const float *bc,
                     const float *br, const float *res, int relu) {
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double s = 0;
      for (int64_t k = 0; k < K; k++)
        s += (double)(ta ? A[k * M + m] : A[m * K + k]) * (tb ? B[n * K + k] : B[k * N + n]);
      s *= alpha;
      if (C0)
        s += C0[m * N + n];
      if (bc)
        s += bc[n];
      if (br)
        s += br[m];
      if (res)
        s += res[m * N + n];
      if (relu && s < 0)
        s = 0;
      C[m * N + n] = (float)s;
    }
}

static void check_close(const float *got, const float *want, int64_t n, int64_t K,
                        const char *what) {
  for (int64_t i = 0; i < n; i++) {
    float tol = 1e-5f * (float)(K + 4);
    ck_assert_msg(fabsf(got[i] - want[i]) <= tol, "%s: element %lld got %g want %g", what,
                  (long long)i, got[i], want[i]);
  }
}

static void run_case_alpha(int64_t M, int64_t N, int64_t K, float alpha, int ta, int tb, int acc,
                           int epi, int64_t lanes, struct kcpu_pool *p2) {
  float *A = tk_alloc(M * K), *B = tk_alloc(K * N), *C = tk_alloc(M * N), *C2 = tk_alloc(M * N);
  float *R = tk_alloc(M * N), *C0 = tk_alloc(M * N), *bc = tk_alloc(N), *br = tk_alloc(M);
  float *res = tk_alloc(M * N);
  tk_fill(A, M * K, 1);
  tk_fill(B, K * N, 2);
  tk_fill(C0, M * N, 3);
  tk_fill(bc, N, 4);
  tk_fill(br, M, 5);
  tk_fill(res, M * N, 6);
  memcpy(C, C0, (size_t)(M * N) * 4);
  memcpy(C2, C0, (size_t)(M * N) * 4);
  kcpu_k_sgemm(M, N, K, alpha, A, ta ? M : K, ta, B, tb ? K : N, tb, C, N, acc, epi ? bc : NULL,
               epi ? br : NULL, epi ? res : NULL, N, epi ? KCPU_ACT_RELU : 0, lanes, NULL);
  kcpu_k_sgemm(M, N, K, alpha, A, ta ? M : K, ta, B, tb ? K : N, tb, C2, N, acc, epi ? bc : NULL,
               epi ? br : NULL, epi ? res : NULL, N, epi ? KCPU_ACT_RELU : 0, lanes, p2);
  ref_gemm(M, N, K, alpha, A, ta, B, tb, acc ? C0 : NULL, R, epi ? bc : NULL, epi ? br : NULL,
           epi ? res : NULL, epi);
  char what[128];
  snprintf(what, sizeof what, "M%lld N%lld K%lld alpha %g ta%d tb%d acc%d epi%d lanes%lld",
           (long long)M, (long long)N, (long long)K, alpha, ta, tb, acc, epi, (long long)lanes);
  check_close(C, R, M * N, K, what);
  ck_assert_msg(memcmp(C, C2, (size_t)(M * N) * 4) == 0, "%s: 2 threads differ", what);
  free(A), free(B), free(C), free(C2), free(R), free(C0), free(bc), free(br), free(res);
}

static void run_case(int64_t M, int64_t N, int64_t K, int ta, int tb, int acc, int epi,
                     int64_t lanes, struct kcpu_pool *p2) {
  run_case_alpha(M, N, K, 0.75f, ta, tb, acc, epi, lanes, p2);
}

START_TEST(gemm_hand) {
  /* [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50] */
  float A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8}, C[4];
  kcpu_k_sgemm(2, 2, 2, 1.0f, A, 2, 0, B, 2, 0, C, 2, 0, NULL, NULL, NULL, 0, 0, 16, NULL);
  ck_assert_float_eq(C[0], 19);
  ck_assert_float_eq(C[1], 22);
  ck_assert_float_eq(C[2], 43);
  ck_assert_float_eq(C[3], 50);
}
END_TEST

START_TEST(gemm_sizes) {
  static const int64_t sz[] = {1, 7, 17, 33};
  static const int64_t lanes[] = {16, 8, 4};
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  for (int l = 0; l < 3; l++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++)
        for (int k = 0; k < 4; k++)
          run_case(sz[i], sz[j], sz[k], (i + k) & 1, (j + k) & 1, k & 1, (i + j) & 1, lanes[l], p2);
  kcpu_pool_destroy(p2);
}
END_TEST

START_TEST(gemm_blocks) {
  /* straddle MC (144), KC (256), NR multiples and the 2-thread split */
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  run_case(145, 65, 257, 0, 0, 0, 1, 16, p2);
  run_case(150, 97, 300, 1, 1, 1, 0, 8, p2);
  run_case(13, 2050, 5, 0, 0, 0, 1, 16, p2);
  run_case(200, 200, 513, 0, 1, 0, 0, 4, p2);
  run_case(3, 5, 0, 0, 0, 0, 1, 16, p2); /* K = 0: epilogue only */
  kcpu_pool_destroy(p2);
}
END_TEST

START_TEST(gemm_direct_rows) {
  /* alpha 1 and A not transposed: the AVX-512 engine reads A in place,
   * with 8-, 4-, 2- and 1-row kernels for the last rows; every row count
   * up to 9, a 49-row ViT-like tail, K over two blocks, panels of 48 and
   * narrower ones, accumulation and the full epilogue */
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  static const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 49};
  static const int64_t ns[] = {17, 48, 113};
  for (int i = 0; i < 10; i++)
    for (int j = 0; j < 3; j++) {
      run_case_alpha(ms[i], ns[j], 7, 1.0f, 0, j & 1, 0, i & 1, 16, p2);
      run_case_alpha(ms[i], ns[j], 300, 1.0f, 0, (j + 1) & 1, i & 1, (i + 1) & 1, 16, p2);
    }
  run_case_alpha(150, 97, 300, 1.0f, 0, 0, 1, 1, 16, p2); /* past MC (144) */
  kcpu_pool_destroy(p2);
}
END_TEST

START_TEST(matmul_batched) {
  /* batch 3 of A [2,5,3] with B broadcast [3,4]: b_off all 0 */
  int64_t M = 5, N = 4, K = 3, batch = 3;
  float *A = tk_alloc(batch * M * K), *B = tk_alloc(K * N), *C = tk_alloc(batch * M * N);
  float *R = tk_alloc(M * N);
  tk_fill(A, batch * M * K, 7);
  tk_fill(B, K * N, 8);
  int64_t boff[3] = {0, 0, 0};
  kcpu_k_matmul(batch, NULL, boff, M, N, K, A, B, C, 16, NULL);
  for (int64_t b = 0; b < batch; b++) {
    ref_gemm(M, N, K, 1.0f, A + b * M * K, 0, B, 0, NULL, R, NULL, NULL, NULL, 0);
    check_close(C + b * M * N, R, M * N, K, "matmul");
  }
  free(A), free(B), free(C), free(R);
}
END_TEST

/* B [K, N] row-major in the prepacked layout of gemm_impl.h (unit NR of
 * the AVX-512 engine, 48): the operand kcpu_k_gemm_ex takes as Bpk. */
static float *pack_b48(const float *B, int64_t K, int64_t N) {
  int64_t U = kcpu_gemm_nr(16), RP = (N + U - 1) / U * U;
  float *Bpk = tk_alloc(kcpu_prepacked_size(N, K, U));
  memset(Bpk, 0, (size_t)kcpu_prepacked_size(N, K, U) * sizeof *Bpk);
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++) {
      int64_t k0 = k / KCPU_KC * KCPU_KC, kc = K - k0 < KCPU_KC ? K - k0 : KCPU_KC;
      Bpk[k0 * RP + n / U * U * kc + (k - k0) * U + n % U] = B[k * N + n];
    }
  return Bpk;
}

/* One row of A against a prepacked B (the matrix-vector path): op(B)
 * packed by hand in the layout gemm_impl.h documents (unit NR), bias [N]
 * and ReLU in the epilogue, N and K off every block size (1601: 34
 * panels, past the 32 whose sums the AVX-512 path holds at once), 1 and 2
 * threads bit-identical. */
START_TEST(gemv_prepacked) {
  static const int64_t ns[] = {1, 50, 1000, 1601}, ks[] = {3, 300};
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  for (int ni = 0; ni < 4; ni++)
    for (int ki = 0; ki < 2; ki++) {
      int64_t N = ns[ni], K = ks[ki];
      float *A = tk_alloc(K), *B = tk_alloc(K * N), *bias = tk_alloc(N), *R = tk_alloc(N);
      float *Y1 = tk_alloc(N), *Y2 = tk_alloc(N);
      tk_fill(A, K, 11);
      tk_fill(B, K * N, 12);
      tk_fill(bias, N, 13);
      float *Bpk = pack_b48(B, K, N);
      kcpu_k_gemm_ex(1, N, K, 0.5f, 1.0f, A, 0, NULL, 0, Bpk, bias, 0, 1, Y1, KCPU_ACT_RELU, 0, 0,
                     16, NULL);
      kcpu_k_gemm_ex(1, N, K, 0.5f, 1.0f, A, 0, NULL, 0, Bpk, bias, 0, 1, Y2, KCPU_ACT_RELU, 0, 0,
                     16, p2);
      ref_gemm(1, N, K, 0.5f, A, 0, B, 0, NULL, R, bias, NULL, NULL, 1);
      char what[64];
      snprintf(what, sizeof what, "gemv N%lld K%lld", (long long)N, (long long)K);
      check_close(Y1, R, N, K, what);
      ck_assert_msg(memcmp(Y1, Y2, (size_t)N * sizeof *Y1) == 0, "%s: 2 threads differ", what);
      free(A), free(B), free(bias), free(R), free(Y1), free(Y2), free(Bpk);
    }
  kcpu_pool_destroy(p2);
}
END_TEST

/* A read in place and B prepacked (a projection of activations by
 * weights): the 2-thread grid splits the rows anywhere, not only at 8-row
 * tiles. 50 rows into 512 columns (10 panels of 48 and one of 32) go 25 +
 * 25 rows (each thread 3 tiles and one row), where a split of the panels
 * would give one thread 5 and the other 5 and the narrow one, and where
 * split rows of whole tiles would be 24 + 26; prepacked A still splits the
 * panels, and 50 rows into 2048 columns (42 + 2/3 panels, nearly even
 * halves) too. Results against the double reference and 1 and 2 threads
 * bit-identical at the uneven splits (M 50, 13, 77; N 80, 512). */
START_TEST(gemm_in_place_row_split) {
  int64_t tm, tn;
  kcpu_gemm_grid(50, 512, 8, 48, 16, KCPU_A_IN_PLACE, 1, 2, &tm, &tn);
  ck_assert_msg(tm == 2 && tn == 1, "50 x 512 in place: %lld x %lld", (long long)tm,
                (long long)tn);
  kcpu_gemm_grid(50, 512, 8, 48, 16, KCPU_A_PREPACKED, 1, 2, &tm, &tn);
  ck_assert_msg(tm == 1 && tn == 2, "50 x 512 prepacked: %lld x %lld", (long long)tm,
                (long long)tn);
  kcpu_gemm_grid(50, 2048, 8, 48, 16, KCPU_A_IN_PLACE, 1, 2, &tm, &tn);
  ck_assert_msg(tm == 1 && tn == 2, "50 x 2048 in place: %lld x %lld", (long long)tm,
                (long long)tn);
  static const int64_t ms[] = {50, 13, 77}, ns[] = {512, 80, 512};
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  for (int c = 0; c < 3; c++) {
    int64_t M = ms[c], N = ns[c], K = 300;
    float *A = tk_alloc(M * K), *B = tk_alloc(K * N), *bias = tk_alloc(N), *R = tk_alloc(M * N);
    float *Y1 = tk_alloc(M * N), *Y2 = tk_alloc(M * N);
    tk_fill(A, M * K, 21);
    tk_fill(B, K * N, 22);
    tk_fill(bias, N, 23);
    float *Bpk = pack_b48(B, K, N);
    kcpu_k_gemm_ex(M, N, K, 1.0f, 1.0f, A, 0, NULL, 0, Bpk, bias, 0, 1, Y1, 0, 0, 0, 16, NULL);
    kcpu_k_gemm_ex(M, N, K, 1.0f, 1.0f, A, 0, NULL, 0, Bpk, bias, 0, 1, Y2, 0, 0, 0, 16, p2);
    ref_gemm(M, N, K, 1.0f, A, 0, B, 0, NULL, R, bias, NULL, NULL, 0);
    char what[64];
    snprintf(what, sizeof what, "in place M%lld N%lld", (long long)M, (long long)N);
    check_close(Y1, R, M * N, K, what);
    ck_assert_msg(memcmp(Y1, Y2, (size_t)(M * N) * sizeof *Y1) == 0, "%s: 2 threads differ",
                  what);
    free(A), free(B), free(bias), free(R), free(Y1), free(Y2), free(Bpk);
  }
  kcpu_pool_destroy(p2);
}
END_TEST

/* Every activation after bias_row and a residual, through each
 * micro-kernel width (full and edge tiles; M = 1 takes the matrix-vector
 * path), against the double reference, and 1 and 2 threads bit-identical.
 * The data is scaled to [-8, 8) so that Clip(-1, 2) and the hard
 * activations' both bounds are crossed. */
START_TEST(gemm_activations) {
  static const int64_t ms[] = {1, 3, 17, 40}, ns[] = {1, 7, 24, 203};
  static const int64_t lanes[] = {16, 8, 4};
  static const struct {
    int64_t act;
    float a, b;
  } acts[] = {{KCPU_ACT_CLIP, -1.0f, 2.0f},
              {KCPU_ACT_CLIP, -INFINITY, 6.0f},
              {KCPU_ACT_HARD_SIGMOID, 0.2f, 0.5f},
              {KCPU_ACT_HARD_SWISH, 1.0f / 6, 0.5f},
              {KCPU_ACT_SWISH, 1.0f, 0},
              {KCPU_ACT_SWISH, 1.7f, 0},
              {KCPU_ACT_GELU, 0, 0}};
  struct kcpu_pool *p2 = kcpu_pool_create(2);
  for (int l = 0; l < 3; l++)
    for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++)
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
          int64_t M = ms[i], N = ns[j], K = 5 + i + j;
          float *A = tk_alloc(M * K), *B = tk_alloc(K * N), *br = tk_alloc(M);
          float *res = tk_alloc(M * N), *C1 = tk_alloc(M * N), *C2 = tk_alloc(M * N);
          tk_fill(A, M * K, 21);
          tk_fill(B, K * N, 22);
          tk_fill(br, M, 23);
          tk_fill(res, M * N, 24);
          for (int64_t q = 0; q < M * K; q++)
            A[q] *= 4;
          kcpu_gemm_desc d = {.M = M,
                              .N = N,
                              .K = K,
                              .alpha = 1.0f,
                              .A = A,
                              .lda = K,
                              .B = B,
                              .ldb = N,
                              .C = C1,
                              .ldc = N,
                              .bias_row = br,
                              .res = res,
                              .ldr = N,
                              .act = acts[ai].act,
                              .act_a = acts[ai].a,
                              .act_b = acts[ai].b,
                              .lanes = lanes[l]};
          kcpu_gemm_run(&d, NULL);
          d.C = C2;
          kcpu_gemm_run(&d, p2);
          char what[96];
          snprintf(what, sizeof what, "act %lld (%g, %g) M%lld N%lld lanes %lld",
                   (long long)acts[ai].act, acts[ai].a, acts[ai].b, (long long)M, (long long)N,
                   (long long)lanes[l]);
          for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
              double sum = 0;
              for (int64_t k = 0; k < K; k++)
                sum += (double)A[m * K + k] * B[k * N + n];
              double want =
                  tk_ref_act(acts[ai].act, acts[ai].a, acts[ai].b, sum + br[m] + res[m * N + n]);
              float got = C1[m * N + n];
              ck_assert_msg(fabs(got - want) <= 1e-5 * (1 + fabs(want)) * (K + 4),
                            "%s: (%lld, %lld) got %g want %g", what, (long long)m, (long long)n,
                            got, want);
            }
          ck_assert_msg(memcmp(C1, C2, (size_t)(M * N) * 4) == 0, "%s: 2 threads differ", what);
          free(A), free(B), free(br), free(res), free(C1), free(C2);
        }
  kcpu_pool_destroy(p2);
}
END_TEST

START_TEST(gemm_onnx) {
  /* Y = 2 * A^T * B + 0.5 * C, C broadcast as a row [N] */
  float A[6] = {1, 2, 3, 4, 5, 6}; /* A^T is [2,3]: [[1,3,5],[2,4,6]] */
  float B[6] = {1, 0, 0, 1, 1, 1}; /* [3,2] */
  float Cb[2] = {10, 20}, Y[4];
  kcpu_k_gemm(2, 2, 3, 2.0f, 0.5f, A, 1, B, 0, Cb, 0, 1, Y, 8, NULL);
  /* A^T B = [[1+5, 3+5],[2+6, 4+6]] = [[6,8],[8,10]] */
  ck_assert_float_eq(Y[0], 12 + 5);
  ck_assert_float_eq(Y[1], 16 + 10);
  ck_assert_float_eq(Y[2], 16 + 5);
  ck_assert_float_eq(Y[3], 20 + 10);
}
END_TEST

Suite *tk_gemm_suite(void) {
  Suite *s = suite_create("cpu_kernels_gemm");
  TCase *tc = tcase_create("gemm");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, gemm_hand);
  tcase_add_test(tc, gemm_sizes);
  tcase_add_test(tc, gemm_blocks);
  tcase_add_test(tc, gemm_direct_rows);
  tcase_add_test(tc, matmul_batched);
  tcase_add_test(tc, gemm_onnx);
  tcase_add_test(tc, gemv_prepacked);
  tcase_add_test(tc, gemm_in_place_row_split);
  tcase_add_test(tc, gemm_activations);
  suite_add_tcase(s, tc);
  return s;
}
