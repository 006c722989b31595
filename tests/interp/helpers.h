/* tests/interp/helpers.h: building tensors and attributes by hand, running
 * one interpreter kernel on them and comparing results, for the interpreter
 * kernel suites. Two sets of shorthands serve the test files: tt /
 * mk_attrs / RUN_OK / expect_*, and t_tensor / ATTRS / t_run / CHECK_*. */
#ifndef KILN_TEST_INTERP_HELPERS_H
#define KILN_TEST_INTERP_HELPERS_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "interp.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NELEM(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

/* A tensor over caller memory (no allocation). */
static inline interp_tensor tt(kiln_elem e, void *data, uint32_t rank, const int64_t *dims) {
  interp_tensor t = {.data = data};
  t.type.elem = e;
  t.type.rank = rank;
  for (uint32_t i = 0; i < rank; i++)
    t.type.dims[i] = dims[i];
  return t;
}

/* An attribute set; NULL for none. Freed with free_attrs. */
static inline kiln_attrs *mk_attrs(const kiln_attr_desc *d, uint32_t n) {
  kiln_attrs *a = NULL;
  kiln_status s = kiln_attrs_create(NULL, d, n, &a);
  ck_assert_msg(s == NULL, "kiln_attrs_create: %s", kiln_status_message(s));
  return a;
}
static inline void free_attrs(kiln_attrs *a) {
  if (a)
    kiln_attrs_destroy(NULL, a);
}

/* Run a kernel, asserting success. */
#define RUN_OK(name, attrs, outs, no, ins, ni)                                                     \
  do {                                                                                             \
    ck_assert_msg(interp_##name != NULL, "kernel " #name " missing");                              \
    kiln_status s_ = interp_##name((attrs), (outs), (no), (ins), (ni));                            \
    ck_assert_msg(s_ == NULL, #name ": %s", kiln_status_message(s_));                              \
  } while (0)

/* Run a kernel, asserting failure with `code`. */
#define RUN_FAIL(name, attrs, outs, no, ins, ni, code)                                             \
  do {                                                                                             \
    kiln_status s_ = interp_##name((attrs), (outs), (no), (ins), (ni));                            \
    ck_assert_msg(s_ != NULL, #name ": expected failure");                                         \
    ck_assert_int_eq(kiln_status_code(s_), (code));                                                \
    kiln_status_free(s_);                                                                          \
  } while (0)

/* Compare doubles: NaN matches NaN, infinities must match exactly. */
static inline void expect_close(double got, double want, double tol, const char *what, int i) {
  if (isnan(want)) {
    ck_assert_msg(isnan(got), "%s[%d]: got %.17g, want NaN", what, i, got);
    return;
  }
  if (isinf(want)) {
    ck_assert_msg(got == want, "%s[%d]: got %.17g, want %.17g", what, i, got, want);
    return;
  }
  ck_assert_msg(fabs(got - want) <= tol * (1.0 + fabs(want)), "%s[%d]: got %.17g, want %.17g", what,
                i, got, want);
}

static inline void expect_f64(const double *got, const double *want, uint32_t n, double tol,
                              const char *what) {
  for (uint32_t i = 0; i < n; i++)
    expect_close(got[i], want[i], tol, what, (int)i);
}
static inline void expect_f32(const float *got, const float *want, uint32_t n, double tol,
                              const char *what) {
  for (uint32_t i = 0; i < n; i++)
    expect_close(got[i], want[i], tol, what, (int)i);
}

/* The second set: attributes written inline (ATTRS), and kernel runs that
 * free them. */
#define NARGS(T, ...) (sizeof((T[]){__VA_ARGS__}) / sizeof(T))
#define ATTRS(...) t_attrs((kiln_attr_desc[]){__VA_ARGS__}, NARGS(kiln_attr_desc, __VA_ARGS__))
#define NOATTRS t_attrs(NULL, 0)

static inline interp_tensor t_tensor(kiln_elem e, void *data, uint32_t rank, const int64_t *dims) {
  return tt(e, data, rank, dims);
}

static inline kiln_attrs *t_attrs(const kiln_attr_desc *d, uint32_t n) {
  return mk_attrs(d, n);
}

/* Run a kernel, expecting success; frees the attributes. */
static inline void t_run(interp_kernel_fn fn, kiln_attrs *a, interp_tensor *outs, uint32_t n_outs,
                         const interp_tensor *ins, uint32_t n_ins) {
  kiln_status s = fn(a, outs, n_outs, ins, n_ins);
  kiln_attrs_destroy(NULL, a);
  ck_assert_msg(s == NULL, "kernel failed: %s", kiln_status_message(s));
}

/* Run a kernel, expecting a failure with this code. */
static inline void t_fail(interp_kernel_fn fn, kiln_attrs *a, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins, kiln_code code) {
  kiln_status s = fn(a, outs, n_outs, ins, n_ins);
  kiln_attrs_destroy(NULL, a);
  ck_assert_msg(s != NULL, "kernel unexpectedly succeeded");
  ck_assert_int_eq(kiln_status_code(s), code);
  kiln_status_free(s);
}

static inline void t_check_f(const float *got, const double *want, int n, double tol) {
  for (int i = 0; i < n; i++)
    ck_assert_msg(fabs(got[i] - want[i]) <= tol, "element %d: got %.9g, want %.9g", i,
                  (double)got[i], want[i]);
}

#define CHECK_F(got, tol, ...)                                                                     \
  t_check_f((got), (const double[]){__VA_ARGS__}, (int)NARGS(double, __VA_ARGS__), (tol))

#define CHECK_I(got, ...)                                                                          \
  do {                                                                                             \
    const long long want_[] = {__VA_ARGS__};                                                       \
    for (size_t i_ = 0; i_ < sizeof want_ / sizeof want_[0]; i_++)                                 \
      ck_assert_msg((long long)(got)[i_] == want_[i_], "element %zu: got %lld, want %lld", i_,     \
                    (long long)(got)[i_], want_[i_]);                                              \
  } while (0)

TCase *interp_tcase_elementwise(void);
TCase *interp_tcase_reduce(void);
TCase *interp_tcase_norm(void);
TCase *interp_tcase_linalg(void);
TCase *interp_tcase_conv(void);
TCase *interp_tcase_pool(void);
TCase *interp_tcase_movement(void);
TCase *interp_tcase_index(void);
TCase *interp_tcase_generator(void);
TCase *interp_tcase_resize(void);
TCase *interp_tcase_rnn(void);
TCase *interp_tcase_quant(void);
TCase *interp_tcase_loss(void);
TCase *interp_tcase_plugin(void);
TCase *interp_tcase_faults(void);
TCase *interp_tcase_profile(void);

#endif
