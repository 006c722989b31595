/* tests/ir/test_rnn_acts.c: kiln_rnn_activations, the activation lists of
 * RNN, GRU and LSTM: ONNX defaults per kind and direction, explicit lists
 * with alpha / beta taken in order by the functions that use them, and the
 * errors naming the kind and the culprit. */
#include <check.h>

#include "kiln/ir.h"
#include "suites.h"

/* Parse with the given attributes; the status is returned for the caller. */
static kiln_status acts_of(kiln_node_kind k, const kiln_attr_desc *d, uint32_t nd, uint32_t dirs,
                           kiln_rnn_act *out, uint32_t *n) {
  kiln_attrs *as = NULL;
  kiln_status s = kiln_attrs_create(NULL, d, nd, &as);
  ck_assert_ptr_null(s);
  s = kiln_rnn_activations(k, as, dirs, out, KILN_RNN_MAX_ACTS, n);
  kiln_attrs_destroy(NULL, as);
  return s;
}

static void expect_act(const kiln_rnn_act *a, kiln_rnn_act_kind k, double alpha, double beta) {
  ck_assert_int_eq(a->kind, k);
  ck_assert_double_eq(a->alpha, alpha);
  ck_assert_double_eq(a->beta, beta);
}

/* The parse must succeed with exactly the n_want functions of want. */
static void expect_list(kiln_node_kind k, const kiln_attr_desc *d, uint32_t nd, uint32_t dirs,
                        const kiln_rnn_act *want, uint32_t n_want) {
  kiln_rnn_act a[KILN_RNN_MAX_ACTS];
  uint32_t n = 99;
  ck_assert_ptr_null(acts_of(k, d, nd, dirs, a, &n));
  ck_assert_uint_eq(n, n_want);
  for (uint32_t i = 0; i < n_want; i++)
    expect_act(&a[i], want[i].kind, want[i].alpha, want[i].beta);
}

/* The status must fail with code and exactly this message; it is freed. */
static void expect_fail(kiln_status s, kiln_code code, const char *msg) {
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(kiln_status_code(s), code);
  ck_assert_str_eq(kiln_status_message(s), msg);
  kiln_status_free(s);
}

#define SIG {KILN_RNN_ACT_SIGMOID, 0, 0}
#define TANH {KILN_RNN_ACT_TANH, 0, 0}

START_TEST(test_defaults) {
  /* an empty attribute set (a NULL one is read below) */
  expect_list(KILN_NODE_RNN, NULL, 0, 1, (kiln_rnn_act[]){TANH}, 1);
  expect_list(KILN_NODE_RNN, NULL, 0, 2, (kiln_rnn_act[]){TANH, TANH}, 2);
  expect_list(KILN_NODE_GRU, NULL, 0, 1, (kiln_rnn_act[]){SIG, TANH}, 2);
  expect_list(KILN_NODE_GRU, NULL, 0, 2, (kiln_rnn_act[]){SIG, TANH, SIG, TANH}, 4);
  expect_list(KILN_NODE_LSTM, NULL, 0, 1, (kiln_rnn_act[]){SIG, TANH, TANH}, 3);
  /* a set without `activations`, and a list of separators only */
  kiln_attr_desc other[] = {KILN_ATTR_S("direction", "bidirectional")};
  expect_list(KILN_NODE_LSTM, other, 1, 2, (kiln_rnn_act[]){SIG, TANH, TANH, SIG, TANH, TANH}, 6);
  kiln_attr_desc seps[] = {KILN_ATTR_S("activations", " ,; \t")};
  expect_list(KILN_NODE_GRU, seps, 1, 1, (kiln_rnn_act[]){SIG, TANH}, 2);
  /* an exact-size output and a NULL count are fine */
  kiln_rnn_act a[3];
  ck_assert_ptr_null(kiln_rnn_activations(KILN_NODE_LSTM, NULL, 1, a, 3, NULL));
  expect_act(&a[2], KILN_RNN_ACT_TANH, 0, 0);
}
END_TEST

START_TEST(test_every_name_and_default) {
  /* one RNN per function: the name in odd case, the ONNX default alpha and
   * beta of the functions that take them, 0 for the others */
  static const struct {
    const char *name;
    kiln_rnn_act want;
  } cases[] = {
      {"relu", {KILN_RNN_ACT_RELU, 0, 0}},
      {"TANH", {KILN_RNN_ACT_TANH, 0, 0}},
      {"Sigmoid", {KILN_RNN_ACT_SIGMOID, 0, 0}},
      {"Affine", {KILN_RNN_ACT_AFFINE, 1, 0}},
      {"leakyrelu", {KILN_RNN_ACT_LEAKY_RELU, 0.01, 0}},
      {"ThresholdedRelu", {KILN_RNN_ACT_THRESHOLDED_RELU, 1, 0}},
      {"ScaledTanh", {KILN_RNN_ACT_SCALED_TANH, 1, 1}},
      {"HARDSIGMOID", {KILN_RNN_ACT_HARD_SIGMOID, 0.2, 0.5}},
      {"Elu", {KILN_RNN_ACT_ELU, 1, 0}},
      {"SoftSign", {KILN_RNN_ACT_SOFTSIGN, 0, 0}},
      {"softplus", {KILN_RNN_ACT_SOFTPLUS, 0, 0}},
  };
  ck_assert_uint_eq(sizeof cases / sizeof cases[0], KILN_RNN_ACT_KIND_COUNT);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_attr_desc d[] = {KILN_ATTR_S("activations", cases[i].name)};
    expect_list(KILN_NODE_RNN, d, 1, 1, &cases[i].want, 1);
  }
}
END_TEST

START_TEST(test_alpha_beta_in_order) {
  /* six functions over two LSTM directions; alphas go to LeakyRelu, Affine,
   * HardSigmoid, ScaledTanh, Elu in turn, betas to Affine, HardSigmoid,
   * ScaledTanh (LeakyRelu and Elu take no beta, Softsign nothing) */
  double al[] = {0.1, 2, 0.3, 4, 5};
  double be[] = {-1, 0.6, 7};
  kiln_attr_desc d[] = {
      KILN_ATTR_S("activations", "LeakyRelu, affine;HardSigmoid  ScaledTanh\telu,softsign"),
      KILN_ATTR_FS("activation_alpha", al, 5),
      KILN_ATTR_FS("activation_beta", be, 3),
  };
  kiln_rnn_act want[] = {{KILN_RNN_ACT_LEAKY_RELU, 0.1, 0},
                         {KILN_RNN_ACT_AFFINE, 2, -1},
                         {KILN_RNN_ACT_HARD_SIGMOID, 0.3, 0.6},
                         {KILN_RNN_ACT_SCALED_TANH, 4, 7},
                         {KILN_RNN_ACT_ELU, 5, 0},
                         {KILN_RNN_ACT_SOFTSIGN, 0, 0}};
  expect_list(KILN_NODE_LSTM, d, 3, 2, want, 6);
  /* one alpha and no beta: Affine takes 3 and keeps beta 0, HardSigmoid
   * keeps 0.2 / 0.5 */
  double one[] = {3};
  kiln_attr_desc s[] = {KILN_ATTR_S("activations", "Affine,HardSigmoid"),
                        KILN_ATTR_FS("activation_alpha", one, 1)};
  kiln_rnn_act ws[] = {{KILN_RNN_ACT_AFFINE, 3, 0}, {KILN_RNN_ACT_HARD_SIGMOID, 0.2, 0.5}};
  expect_list(KILN_NODE_GRU, s, 2, 1, ws, 2);
}
END_TEST

START_TEST(test_one_list_for_both_directions) {
  /* a bidirectional GRU given one direction's list repeats it; the copy
   * takes the next alphas: 0.125 for the second ThresholdedRelu, none left
   * for the second Elu, which keeps 1 */
  double al[] = {0.5, 0.25, 0.125};
  kiln_attr_desc d[] = {KILN_ATTR_S("activations", "ThresholdedRelu Elu"),
                        KILN_ATTR_FS("activation_alpha", al, 3)};
  kiln_rnn_act want[] = {{KILN_RNN_ACT_THRESHOLDED_RELU, 0.5, 0},
                         {KILN_RNN_ACT_ELU, 0.25, 0},
                         {KILN_RNN_ACT_THRESHOLDED_RELU, 0.125, 0},
                         {KILN_RNN_ACT_ELU, 1, 0}};
  expect_list(KILN_NODE_GRU, d, 2, 2, want, 4);
  /* a full two-direction RNN list is taken as given */
  kiln_attr_desc r[] = {KILN_ATTR_S("activations", "Relu,Softplus")};
  kiln_rnn_act wr[] = {{KILN_RNN_ACT_RELU, 0, 0}, {KILN_RNN_ACT_SOFTPLUS, 0, 0}};
  expect_list(KILN_NODE_RNN, r, 1, 2, wr, 2);
}
END_TEST

/* Unknown names and wrong counts, each with the message it must give. */
START_TEST(test_list_errors) {
  static const struct {
    kiln_node_kind kind;
    uint32_t dirs;
    const char *list, *msg;
  } cases[] = {
      {KILN_NODE_LSTM, 1, "Sigmoid,Tanh,Swish", "LSTM: unknown activation 'Swish'"},
      /* names match whole, not by prefix */
      {KILN_NODE_RNN, 1, "Tan", "RNN: unknown activation 'Tan'"},
      {KILN_NODE_GRU, 1, "Sigmoid TanhX", "GRU: unknown activation 'TanhX'"},
      {KILN_NODE_GRU, 1, "Sigmoid", "GRU: 1 activations given, expected 2"},
      {KILN_NODE_GRU, 2, "Sigmoid,Tanh,Tanh", "GRU: 3 activations given, expected 4"},
      /* the count is checked before the names */
      {KILN_NODE_LSTM, 1, "Nope Nope", "LSTM: 2 activations given, expected 3"},
      {KILN_NODE_RNN, 1,
       "Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh Tanh",
       "RNN: too many activations"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_rnn_act a[KILN_RNN_MAX_ACTS];
    uint32_t n = 0;
    kiln_attr_desc d[] = {KILN_ATTR_S("activations", cases[i].list)};
    expect_fail(acts_of(cases[i].kind, d, 1, cases[i].dirs, a, &n), KILN_INVALID_ARGUMENT,
                cases[i].msg);
  }
}
END_TEST

START_TEST(test_bad_call) {
  kiln_rnn_act a[KILN_RNN_MAX_ACTS];
  uint32_t n = 0;
  expect_fail(kiln_rnn_activations(KILN_NODE_Relu, NULL, 1, a, KILN_RNN_MAX_ACTS, &n),
              KILN_INVALID_ARGUMENT, "Relu: activation lists belong to RNN, GRU and LSTM only");
  expect_fail(kiln_rnn_activations(KILN_NODE_GRU, NULL, 3, a, KILN_RNN_MAX_ACTS, &n),
              KILN_INVALID_ARGUMENT, "GRU: 3 directions, expected 1 or 2");
  expect_fail(kiln_rnn_activations(KILN_NODE_GRU, NULL, 0, a, KILN_RNN_MAX_ACTS, &n),
              KILN_INVALID_ARGUMENT, "GRU: 0 directions, expected 1 or 2");
  expect_fail(kiln_rnn_activations(KILN_NODE_LSTM, NULL, 2, a, 5, &n), KILN_OUT_OF_RANGE,
              "LSTM: room for 5 activations, 6 needed");
  expect_fail(kiln_rnn_activations(KILN_NODE_RNN, NULL, 1, NULL, 4, &n), KILN_OUT_OF_RANGE,
              "RNN: room for 0 activations, 1 needed");
}
END_TEST

Suite *rnn_acts_suite(void) {
  Suite *s = suite_create("rnn_acts");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_every_name_and_default);
  tcase_add_test(tc, test_alpha_beta_in_order);
  tcase_add_test(tc, test_one_list_for_both_directions);
  tcase_add_test(tc, test_list_errors);
  tcase_add_test(tc, test_bad_call);
  suite_add_tcase(s, tc);
  return s;
}
