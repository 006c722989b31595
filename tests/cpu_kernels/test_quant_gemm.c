/* tests/cpu_kernels/test_quant_gemm.c: the int8 GEMM (quant_gemm.c),
 * compiled natively, against a reference written from the definition:
 * sum over k of (a - za)(b - zb[n]) in int64, the multiplier
 * f32(f32(xs * ws[n]) / ys) applied in double, rounded half to even,
 * plus the zero point, saturated. Both micro-kernels (vpdpbusd where the
 * machine has AVX512-VNNI, the portable one always), weights packed
 * beforehand and by the kernel, 1 and 2 threads. */
#include <math.h>
#include <string.h>

#include "quant_gemm.h"
#include "tk.h"

void kcpu_k_qlinear_matmul(int64_t batch, int64_t b_batched, int64_t M, int64_t N, int64_t K,
                           const void *A, int64_t a_s8, const int8_t *Bp, const void *B,
                           int64_t b_u8, int64_t xs_t, const void *xs, int64_t xzp_t,
                           const void *xzp, int64_t ws_t, const void *ws, int64_t ws_n,
                           int64_t wzp_t, const void *wzp, int64_t wzp_n, int64_t ys_t,
                           const void *ys, int64_t yzp_t, const void *yzp, void *Y, int64_t y_s8,
                           int64_t vnni, struct kcpu_pool *pool);

enum { TQ_F32 = KCPU_F32, TQ_U8 = KCPU_U8, TQ_I8 = KCPU_I8 };

static int tq_vnni_here(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
#else
  return 0;
#endif
}

static void tq_bytes(uint8_t *p, int64_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 3;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (uint8_t)(s >> 13);
  }
}

static int64_t tq_val(const uint8_t *p, int64_t i, int s8) {
  return s8 ? (int64_t)(int8_t)p[i] : (int64_t)p[i];
}

static void tq_case(int64_t M, int64_t N, int64_t K, int a_s8, int b_u8, int y_s8, int per_col,
                    uint32_t seed) {
  uint8_t *A = malloc((size_t)(M * K)), *B = malloc((size_t)(K * N));
  uint8_t *Y = malloc((size_t)(M * N)), *R = malloc((size_t)(M * N));
  uint8_t wz[64], xz, yz;
  float ws[64], xs = 0.0173f, ys = 0.11f;
  tq_bytes(A, M * K, seed);
  tq_bytes(B, K * N, seed + 1);
  tq_bytes(wz, 64, seed + 2);
  tq_bytes(&xz, 1, seed + 3);
  tq_bytes(&yz, 1, seed + 4);
  for (int j = 0; j < 64; j++)
    ws[j] = 0.003f * (float)(1 + j % 4);
  int64_t wn = per_col ? N : 1;
  ck_assert_int_le(wn, 64);
  /* the reference */
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      int64_t za = tq_val(&xz, 0, a_s8), zb = tq_val(wz, per_col ? n : 0, !b_u8), acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc += (tq_val(A, m * K + k, a_s8) - za) * (tq_val(B, k * N + n, !b_u8) - zb);
      float p = xs * ws[per_col ? n : 0];
      double mult = (double)(float)((double)p / (double)ys);
      double v = nearbyint((double)acc * mult) + (double)tq_val(&yz, 0, y_s8);
      double lo = y_s8 ? -128 : 0, hi = y_s8 ? 127 : 255;
      v = v < lo ? lo : v > hi ? hi : v;
      R[m * N + n] = (uint8_t)(int64_t)v;
    }
  int8_t *packed = aligned_alloc(64, (size_t)kcpu_qg_packed_bytes(K, N));
  kcpu_qg_pack_b(B, b_u8, K, N, N, 1, packed);
  struct kcpu_pool *pool2 = kcpu_pool_create(2);
  int vn = tq_vnni_here();
  for (int vnni = 0; vnni <= vn; vnni++)
    for (int threads = 1; threads <= 2; threads++)
      for (int pre = 0; pre < 2; pre++) {
        memset(Y, 0xa5, (size_t)(M * N));
        kcpu_k_qlinear_matmul(1, 0, M, N, K, A, a_s8, pre ? packed : NULL, pre ? NULL : B, b_u8,
                              TQ_F32, &xs, a_s8 ? TQ_I8 : TQ_U8, &xz, TQ_F32, ws, wn,
                              b_u8 ? TQ_U8 : TQ_I8, wz, wn, TQ_F32, &ys, y_s8 ? TQ_I8 : TQ_U8, &yz,
                              Y, y_s8, vnni, threads == 2 ? pool2 : NULL);
        for (int64_t i = 0; i < M * N; i++)
          ck_assert_msg(Y[i] == R[i],
                        "%lldx%lldx%lld a_s8 %d b_u8 %d y_s8 %d per_col %d vnni %d threads %d "
                        "prepacked %d: [%lld] %u, expected %u",
                        (long long)M, (long long)N, (long long)K, a_s8, b_u8, y_s8, per_col, vnni,
                        threads, pre, (long long)i, Y[i], R[i]);
      }
  kcpu_pool_destroy(pool2);
  free(packed);
  free(A), free(B), free(Y), free(R);
}

START_TEST(quant_gemm_matches_reference) {
  static const int64_t sz[][3] = {{1, 1, 1},  {3, 17, 7},  {7, 3, 17}, {17, 64, 65},
                                  {65, 7, 3}, {13, 63, 4}, {6, 64, 8}, {40, 33, 301}};
  uint32_t seed = 1;
  for (size_t i = 0; i < sizeof sz / sizeof *sz; i++)
    for (int v = 0; v < 16; v++, seed += 7)
      tq_case(sz[i][0], sz[i][1], sz[i][2], v & 1, (v >> 1) & 1, (v >> 2) & 1, (v >> 3) & 1, seed);
}
END_TEST

Suite *tk_quant_gemm_suite(void) {
  Suite *s = suite_create("quant_gemm");
  TCase *tc = tcase_create("int8");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, quant_gemm_matches_reference);
  suite_add_tcase(s, tc);
  return s;
}
