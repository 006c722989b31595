/* tests/interp/test_rnn.c: RNN, GRU and LSTM, one or two steps worked out
 * by hand from the ONNX equations. */
#include <math.h>
#include <stdint.h>

#include "helpers.h"

static double sig(double x) {
  return 1 / (1 + exp(-x));
}

START_TEST(rnn_forward_reverse) {
  float x[2] = {1, -1}, w[1] = {0.5f}, r[1] = {2}, y[2], yh[1];
  interp_tensor ins[3] = {t_tensor(KILN_F32, x, 3, DIMS(2, 1, 1)),
                          t_tensor(KILN_F32, w, 3, DIMS(1, 1, 1)),
                          t_tensor(KILN_F32, r, 3, DIMS(1, 1, 1))};
  interp_tensor outs[2] = {t_tensor(KILN_F32, y, 4, DIMS(2, 1, 1, 1)),
                           t_tensor(KILN_F32, yh, 3, DIMS(1, 1, 1))};
  t_run(interp_RNN, ATTRS(KILN_ATTR_I("hidden_size", 1)), outs, 2, ins, 3);
  double h1 = tanh(0.5), h2 = tanh(-0.5 + 2 * h1);
  CHECK_F(y, 1e-6, h1, h2);
  CHECK_F(yh, 1e-6, h2);
  t_run(interp_RNN, ATTRS(KILN_ATTR_S("direction", "reverse")), outs, 2, ins, 3);
  double g1 = tanh(-0.5), g2 = tanh(0.5 + 2 * g1);
  CHECK_F(y, 1e-6, g2, g1);
  CHECK_F(yh, 1e-6, g2);
  /* bias, initial state, Relu activation, sequence_lens 1 (step 2 is padding) */
  float b[2] = {0.1f, 0.2f}, h0[1] = {0.3f};
  int32_t lens[1] = {1};
  interp_tensor all[6] = {ins[0],
                          ins[1],
                          ins[2],
                          t_tensor(KILN_F32, b, 2, DIMS(1, 2)),
                          t_tensor(KILN_I32, lens, 1, DIMS(1)),
                          t_tensor(KILN_F32, h0, 3, DIMS(1, 1, 1))};
  t_run(interp_RNN, ATTRS(KILN_ATTR_S("activations", "Relu")), outs, 2, all, 6);
  CHECK_F(y, 1e-6, 0.5 + 0.6 + 0.3, 0);
  CHECK_F(yh, 1e-6, 1.4);
}
END_TEST

START_TEST(gru_one_step) {
  float x[1] = {2}, w[3] = {0.1f, 0.2f, 0.3f}, r[3] = {0.4f, 0.5f, 0.6f};
  float b[6] = {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f}, h0[1] = {0.7f}, y[1], yh[1];
  interp_tensor ins[6] = {
      t_tensor(KILN_F32, x, 3, DIMS(1, 1, 1)), t_tensor(KILN_F32, w, 3, DIMS(1, 3, 1)),
      t_tensor(KILN_F32, r, 3, DIMS(1, 3, 1)), t_tensor(KILN_F32, b, 2, DIMS(1, 6)),
      t_tensor(KILN_F32, NULL, 1, DIMS(1)),    t_tensor(KILN_F32, h0, 3, DIMS(1, 1, 1))};
  interp_tensor outs[2] = {t_tensor(KILN_F32, y, 4, DIMS(1, 1, 1, 1)),
                           t_tensor(KILN_F32, yh, 3, DIMS(1, 1, 1))};
  double W[3] = {w[0], w[1], w[2]}, R[3] = {r[0], r[1], r[2]}, H = h0[0], X = 2;
  double B[6] = {b[0], b[1], b[2], b[3], b[4], b[5]};
  double z = sig(X * W[0] + H * R[0] + B[0] + B[3]);
  double rr = sig(X * W[1] + H * R[1] + B[1] + B[4]);
  double hh0 = tanh(X * W[2] + rr * H * R[2] + B[5] + B[2]);
  double hh1 = tanh(X * W[2] + rr * (H * R[2] + B[5]) + B[2]);
  t_run(interp_GRU, NOATTRS, outs, 2, ins, 6);
  CHECK_F(y, 1e-6, (1 - z) * hh0 + z * H);
  CHECK_F(yh, 1e-6, (1 - z) * hh0 + z * H);
  t_run(interp_GRU, ATTRS(KILN_ATTR_I("linear_before_reset", 1)), outs, 2, ins, 6);
  CHECK_F(yh, 1e-6, (1 - z) * hh1 + z * H);
}
END_TEST

START_TEST(lstm_one_step_peepholes) {
  float x[1] = {1}, w[4] = {0.1f, 0.2f, 0.3f, 0.4f}, r[4] = {0.5f, 0.6f, 0.7f, 0.8f};
  float p[3] = {0.1f, 0.2f, 0.3f}, h0[1] = {0.5f}, c0[1] = {0.25f}, y[1], yh[1], yc[1];
  interp_tensor ins[8] = {
      t_tensor(KILN_F32, x, 3, DIMS(1, 1, 1)),  t_tensor(KILN_F32, w, 3, DIMS(1, 4, 1)),
      t_tensor(KILN_F32, r, 3, DIMS(1, 4, 1)),  t_tensor(KILN_F32, NULL, 2, DIMS(1, 8)),
      t_tensor(KILN_I32, NULL, 1, DIMS(1)),     t_tensor(KILN_F32, h0, 3, DIMS(1, 1, 1)),
      t_tensor(KILN_F32, c0, 3, DIMS(1, 1, 1)), t_tensor(KILN_F32, p, 2, DIMS(1, 3))};
  interp_tensor outs[3] = {t_tensor(KILN_F32, y, 4, DIMS(1, 1, 1, 1)),
                           t_tensor(KILN_F32, yh, 3, DIMS(1, 1, 1)),
                           t_tensor(KILN_F32, yc, 3, DIMS(1, 1, 1))};
  double W[4] = {w[0], w[1], w[2], w[3]}, R[4] = {r[0], r[1], r[2], r[3]};
  double P[3] = {p[0], p[1], p[2]}, H = h0[0], C = c0[0];
  double i = sig(W[0] + H * R[0] + P[0] * C);
  double f = sig(W[2] + H * R[2] + P[2] * C);
  double cc = tanh(W[3] + H * R[3]);
  double c = f * C + i * cc;
  double o = sig(W[1] + H * R[1] + P[1] * c);
  t_run(interp_LSTM, NOATTRS, outs, 3, ins, 8);
  CHECK_F(y, 1e-6, o * tanh(c));
  CHECK_F(yh, 1e-6, o * tanh(c));
  CHECK_F(yc, 1e-6, c);
  /* input_forget couples f = 1 - i */
  double c2 = (1 - i) * C + i * cc, o2 = sig(W[1] + H * R[1] + P[1] * c2);
  t_run(interp_LSTM, ATTRS(KILN_ATTR_I("input_forget", 1)), outs, 3, ins, 8);
  CHECK_F(yc, 1e-6, c2);
  CHECK_F(yh, 1e-6, o2 * tanh(c2));
}
END_TEST

START_TEST(lstm_bidirectional_layout1) {
  /* two directions with zero weights except the cell input: one step, so
   * both directions see the same x and give the same answer */
  float x[2] = {1, 2}, w[8] = {0, 0, 0, 1, 0, 0, 0, 1}, r[8] = {0}, y[4], yh[4], yc[4];
  interp_tensor ins[3] = {t_tensor(KILN_F32, x, 3, DIMS(2, 1, 1)),
                          t_tensor(KILN_F32, w, 3, DIMS(2, 4, 1)),
                          t_tensor(KILN_F32, r, 3, DIMS(2, 4, 1))};
  interp_tensor outs[3] = {t_tensor(KILN_F32, y, 4, DIMS(2, 1, 2, 1)),
                           t_tensor(KILN_F32, yh, 3, DIMS(2, 2, 1)),
                           t_tensor(KILN_F32, yc, 3, DIMS(2, 2, 1))};
  t_run(interp_LSTM, ATTRS(KILN_ATTR_S("direction", "bidirectional"), KILN_ATTR_I("layout", 1)),
        outs, 3, ins, 3);
  /* i = f = o = sigmoid(0) = 0.5, c = 0.5 * tanh(x), h = 0.5 * tanh(c) */
  double c1 = 0.5 * tanh(1.0), c2 = 0.5 * tanh(2.0);
  CHECK_F(yc, 1e-6, c1, c1, c2, c2);
  CHECK_F(yh, 1e-6, 0.5 * tanh(c1), 0.5 * tanh(c1), 0.5 * tanh(c2), 0.5 * tanh(c2));
  CHECK_F(y, 1e-6, 0.5 * tanh(c1), 0.5 * tanh(c1), 0.5 * tanh(c2), 0.5 * tanh(c2));
}
END_TEST

TCase *interp_tcase_rnn(void) {
  TCase *tc = tcase_create("rnn");
  tcase_add_test(tc, rnn_forward_reverse);
  tcase_add_test(tc, gru_one_step);
  tcase_add_test(tc, lstm_one_step_peepholes);
  tcase_add_test(tc, lstm_bidirectional_layout1);
  return tc;
}
