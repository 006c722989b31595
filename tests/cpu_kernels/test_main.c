/* tests/cpu_kernels/test_main.c: runs every kernel-library suite. */
#include "tk.h"

int main(void) {
  SRunner *sr = srunner_create(tk_gemm_suite());
  srunner_add_suite(sr, tk_conv_suite());
  srunner_add_suite(sr, tk_conv_dense_suite());
  srunner_add_suite(sr, tk_rowwise_suite());
  srunner_add_suite(sr, tk_generic_suite());
  srunner_add_suite(sr, tk_pool_suite());
  srunner_add_suite(sr, tk_conv3d_suite());
  srunner_add_suite(sr, tk_convt_suite());
  srunner_add_suite(sr, tk_quant_gemm_suite());
  srunner_add_suite(sr, tk_winograd_suite());
  srunner_add_suite(sr, tk_conv_blocked_suite());
  srunner_add_suite(sr, tk_blocked_dw_suite());
  srunner_add_suite(sr, tk_threadpool_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
