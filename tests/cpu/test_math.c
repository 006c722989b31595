/* tests/cpu/test_math.c: error bounds of the cpu backend's float math
 * helpers (plugins/cpu/rt/kcpu_math.c, compiled natively here) against libm
 * in double precision over dense sweeps. The bounds are the ones stated in
 * docs/cpu.md. */
#include <math.h>

#include "kcpu_math.h"
#include "suites.h"

typedef float (*kt_f)(float);
typedef double (*kt_d)(double);

/* Worst error of f against ref over n+1 evenly spaced points of [lo, hi];
 * relative when rel (against |ref| >= floor), absolute otherwise. */
static double kt_sweep(kt_f f, kt_d ref, float lo, float hi, int n, int rel, double floor_) {
  double worst = 0;
  for (int i = 0; i <= n; i++) {
    float x = lo + (hi - lo) * (float)((double)i / n);
    double want = ref(x), got = f(x);
    double err = fabs(got - want);
    if (rel)
      err /= fabs(want) > floor_ ? fabs(want) : floor_;
    if (!(err <= worst))
      worst = err; /* also catches NaN */
  }
  return worst;
}

static double kt_sigmoid(double x) {
  return 1.0 / (1.0 + exp(-x));
}
static double kt_silu(double x) {
  return x / (1.0 + exp(-x));
}
static double kt_softplus(double x) {
  return x > 30 ? x + log1p(exp(-x)) : log1p(exp(x));
}
static double kt_gelu(double x) {
  return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

#define N_POINTS 1000000

START_TEST(exp_bound) {
  ck_assert_double_lt(kt_sweep(kcpu_m_exp, exp, -87.0f, 88.0f, N_POINTS, 1, 0), 2e-7);
  ck_assert_double_lt(kt_sweep(kcpu_m_exp, exp, -1.0f, 1.0f, N_POINTS, 1, 0), 2e-7);
  /* subnormal results: absolute error below the smallest normal's ulp */
  ck_assert_double_lt(kt_sweep(kcpu_m_exp, exp, -103.0f, -87.5f, 100000, 0, 0), 2e-45);
  ck_assert(isinf(kcpu_m_exp(89.0f)) && kcpu_m_exp(INFINITY) == INFINITY);
  ck_assert_float_eq(kcpu_m_exp(-INFINITY), 0.0f);
  ck_assert_float_eq(kcpu_m_exp(0.0f), 1.0f);
  ck_assert(isnan(kcpu_m_exp(NAN)));
}
END_TEST

START_TEST(log_bound) {
  ck_assert_double_lt(kt_sweep(kcpu_m_log, log, 1e-30f, 1e30f, N_POINTS, 1, 1e-3), 2e-7);
  ck_assert_double_lt(kt_sweep(kcpu_m_log, log, 0.25f, 4.0f, N_POINTS, 0, 0), 1e-7);
  ck_assert_double_lt(kt_sweep(kcpu_m_log, log, 1e-44f, 1e-38f, 100000, 1, 0), 2e-7);
  ck_assert_float_eq(kcpu_m_log(1.0f), 0.0f);
  ck_assert(isinf(kcpu_m_log(0.0f)) && kcpu_m_log(0.0f) < 0);
  ck_assert(isnan(kcpu_m_log(-1.0f)) && isnan(kcpu_m_log(NAN)));
  ck_assert(isinf(kcpu_m_log(INFINITY)));
}
END_TEST

START_TEST(tanh_sigmoid_bound) {
  ck_assert_double_lt(kt_sweep(kcpu_m_tanh, tanh, -20.0f, 20.0f, N_POINTS, 1, 0), 2.5e-7);
  ck_assert_float_eq(kcpu_m_tanh(100.0f), 1.0f);
  ck_assert_float_eq(kcpu_m_tanh(-100.0f), -1.0f);
  ck_assert_double_lt(kt_sweep(kcpu_m_sigmoid, kt_sigmoid, -80.0f, 30.0f, N_POINTS, 1, 0), 2.5e-7);
  ck_assert_float_eq(kcpu_m_sigmoid(0.0f), 0.5f);
  ck_assert_float_eq(kcpu_m_sigmoid(-200.0f), 0.0f);
  ck_assert_float_eq(kcpu_m_sigmoid(200.0f), 1.0f);
  /* the last normal results and the first that flush to 0 */
  ck_assert(fabs(kcpu_m_sigmoid(-87.0f) - kt_sigmoid(-87.0)) <= 2.5e-7 * kt_sigmoid(-87.0));
  ck_assert_float_eq(kcpu_m_sigmoid(-88.8f), 0.0f);
  ck_assert(isnan(kcpu_m_sigmoid(NAN)) && isnan(kcpu_m_tanh(NAN)) && isnan(kcpu_m_tanh(-NAN)));
  /* SiLU: relative to |x sigmoid(x)| down to where it flushes */
  ck_assert_double_lt(kt_sweep(kcpu_m_silu, kt_silu, -80.0f, 30.0f, N_POINTS, 1, 1e-30), 3e-7);
  ck_assert_float_eq(kcpu_m_silu(0.0f), 0.0f);
  ck_assert_float_eq(kcpu_m_silu(200.0f), 200.0f);
  ck_assert(kcpu_m_silu(-200.0f) == 0.0f && isinf(kcpu_m_silu(INFINITY)));
  ck_assert(isnan(kcpu_m_silu(NAN)) && isnan(kcpu_m_silu(-INFINITY)));
}
END_TEST

START_TEST(erf_gelu_bound) {
  ck_assert_double_lt(kt_sweep(kcpu_m_erf, erf, -6.0f, 6.0f, N_POINTS, 0, 0), 5e-7);
  ck_assert_float_eq(kcpu_m_erf(0.0f), 0.0f);
  ck_assert_float_eq(kcpu_m_erf(10.0f), 1.0f);
  ck_assert_double_lt(kt_sweep(kcpu_m_gelu, kt_gelu, -8.0f, 8.0f, N_POINTS, 0, 0), 2e-6);
}
END_TEST

START_TEST(trig_bound) {
  ck_assert_double_lt(kt_sweep(kcpu_m_sin, sin, -100.0f, 100.0f, N_POINTS, 0, 0), 2e-7);
  ck_assert_double_lt(kt_sweep(kcpu_m_cos, cos, -100.0f, 100.0f, N_POINTS, 0, 0), 2e-7);
  ck_assert_double_lt(kt_sweep(kcpu_m_sin, sin, -1e5f, 1e5f, N_POINTS, 0, 0), 2e-6);
  ck_assert_double_lt(kt_sweep(kcpu_m_tan, tan, -1.5f, 1.5f, N_POINTS, 1, 0), 4e-7);
  ck_assert(isnan(kcpu_m_sin(INFINITY)) && isnan(kcpu_m_cos(NAN)));
}
END_TEST

START_TEST(softplus_bound) {
  ck_assert_double_lt(kt_sweep(kcpu_m_softplus, kt_softplus, -80.0f, 80.0f, N_POINTS, 1, 0), 4e-7);
  ck_assert_float_eq(kcpu_m_softplus(100.0f), 100.0f);
}
END_TEST

Suite *kcpu_math_suite(void) {
  Suite *s = suite_create("cpu-math");
  TCase *tc = tcase_create("bounds");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, exp_bound);
  tcase_add_test(tc, log_bound);
  tcase_add_test(tc, tanh_sigmoid_bound);
  tcase_add_test(tc, erf_gelu_bound);
  tcase_add_test(tc, trig_bound);
  tcase_add_test(tc, softplus_bound);
  suite_add_tcase(s, tc);
  return s;
}
