/* tests/interp2/test_main.c: the Check runner for the movement, linear
 * algebra, convolution, pooling, resize and recurrence kernels. */
#include <stdlib.h>

#include "helpers.h"

int main(void) {
  Suite *s = suite_create("interp2");
  suite_add_tcase(s, interp2_shape_tcase());
  suite_add_tcase(s, interp2_gather_tcase());
  suite_add_tcase(s, interp2_linalg_tcase());
  suite_add_tcase(s, interp2_conv_tcase());
  suite_add_tcase(s, interp2_pool_tcase());
  suite_add_tcase(s, interp2_resize_tcase());
  suite_add_tcase(s, interp2_rnn_tcase());
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
