/* tests/cpu_kernels/test_blocked_dw.c: the channel-blocked layout's other
 * kernels (conv_blocked.h): depthwise convolution (conv_blocked_dw.c),
 * pooling (pool.c) and the conversions to and from the plain layout
 * (movement_blocked.c), against naive loops over the plain layout. */
#include "tk.h"

#include "conv_blocked.h"

#include <string.h>

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
          ck_assert_msg(got == want, "C%lld n%lld c%lld s%lld: %g, want %g", (long long)C,
                        (long long)n, (long long)c, (long long)s, got, want);
        }
    kcpu_k_unblock_channels(B, Z, N, C, S, NULL);
    ck_assert_msg(memcmp(X, Z, (size_t)(N * C * S) * sizeof *X) == 0, "C%lld: round trip differs",
                  (long long)C);
    free(X), free(B), free(Z);
  }
}
END_TEST

Suite *tk_blocked_dw_suite(void) {
  Suite *s = suite_create("blocked_dw");
  TCase *tc = tcase_create("blocked");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, blocked_roundtrip);
  suite_add_tcase(s, tc);
  return s;
}
