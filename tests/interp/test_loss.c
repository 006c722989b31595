/* tests/interp/test_loss.c: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss, with hand-computed expectations. */
#include <stdint.h>

#include "helpers.h"

START_TEST(nll_loss) {
  /* log-probabilities [[-1, -2, -3], [-4, -5, -6]], targets {0, 2} */
  float lp[6] = {-1, -2, -3, -4, -5, -6}, w[3] = {1, 1, 2}, y[2];
  int64_t t[2] = {0, 2};
  interp_tensor in[3] = {tt(KILN_F32, lp, 2, DIMS(2, 3)), tt(KILN_I64, t, 1, DIMS(2)),
                         tt(KILN_F32, w, 1, DIMS(3))};
  interp_tensor scalar = tt(KILN_F32, y, 0, NULL);
  RUN_OK(NegativeLogLikelihoodLoss, NULL, &scalar, 1, in, 2);
  expect_f32(y, (float[]){3.5f}, 1, 0, "NLL mean");
  RUN_OK(NegativeLogLikelihoodLoss, NULL, &scalar, 1, in, 3);
  expect_f32(y, (float[]){13.0f / 3}, 1, 1e-7, "NLL weighted mean");
  kiln_attrs *a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_S("reduction", "sum")}, 1);
  RUN_OK(NegativeLogLikelihoodLoss, a, &scalar, 1, in, 3);
  expect_f32(y, (float[]){13}, 1, 0, "NLL sum");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_S("reduction", "none")}, 1);
  interp_tensor vec = tt(KILN_F32, y, 1, DIMS(2));
  RUN_OK(NegativeLogLikelihoodLoss, a, &vec, 1, in, 2);
  expect_f32(y, (float[]){1, 6}, 2, 0, "NLL none");
  free_attrs(a);
  a = mk_attrs((kiln_attr_desc[]){KILN_ATTR_I("ignore_index", 2)}, 1);
  RUN_OK(NegativeLogLikelihoodLoss, a, &scalar, 1, in, 3);
  expect_f32(y, (float[]){1}, 1, 0, "NLL ignore_index");
  free_attrs(a);
  t[1] = 3;
  RUN_FAIL(NegativeLogLikelihoodLoss, NULL, &scalar, 1, in, 2, KILN_OUT_OF_RANGE);
}
END_TEST

START_TEST(softmax_cross_entropy) {
  /* scores [[0, 0], [0, log 3]]: log-probs [[-ln2, -ln2], [-ln4, ln(3/4)]] */
  double s[4] = {0, 0, 0, log(3.0)}, y[1], lp[4];
  int32_t labels[2] = {1, 0};
  interp_tensor in[2] = {tt(KILN_F64, s, 2, DIMS(2, 2)), tt(KILN_I32, labels, 1, DIMS(2))};
  interp_tensor outs[2] = {tt(KILN_F64, y, 0, NULL), tt(KILN_F64, lp, 2, DIMS(2, 2))};
  RUN_OK(SoftmaxCrossEntropyLoss, NULL, outs, 2, in, 2);
  expect_close(y[0], (log(2.0) + log(4.0)) / 2, 1e-14, "SCE mean", 0);
  expect_f64(lp, (double[]){-log(2.0), -log(2.0), -log(4.0), log(0.75)}, 4, 1e-14, "log_prob");
  kiln_attrs *a = mk_attrs(
      (kiln_attr_desc[]){KILN_ATTR_S("reduction", "sum"), KILN_ATTR_I("ignore_index", 0)}, 2);
  RUN_OK(SoftmaxCrossEntropyLoss, a, outs, 1, in, 2);
  expect_close(y[0], log(2.0), 1e-14, "SCE sum ignore", 0);
  free_attrs(a);
}
END_TEST

TCase *interp_tcase_loss(void) {
  TCase *tc = tcase_create("loss");
  tcase_add_test(tc, nll_loss);
  tcase_add_test(tc, softmax_cross_entropy);
  return tc;
}
