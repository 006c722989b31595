/* tests/interp2/helpers.h: building tensors and attributes by hand and
 * running one interpreter kernel on them, for the movement kernel tests. */
#ifndef KILN_TEST_INTERP2_HELPERS_H
#define KILN_TEST_INTERP2_HELPERS_H

#include <check.h>
#include <math.h>
#include <stdio.h>

#include "plugins/interpreter/interp.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NARGS(T, ...) (sizeof((T[]){__VA_ARGS__}) / sizeof(T))
#define ATTRS(...) t_attrs((kiln_attr_desc[]){__VA_ARGS__}, NARGS(kiln_attr_desc, __VA_ARGS__))
#define NOATTRS t_attrs(NULL, 0)

static inline interp_tensor t_tensor(kiln_elem e, void *data, uint32_t rank, const int64_t *dims) {
  interp_tensor t = {.data = data};
  t.type.elem = e;
  t.type.rank = rank;
  for (uint32_t i = 0; i < rank; i++)
    t.type.dims[i] = dims[i];
  return t;
}

static inline kiln_attrs *t_attrs(const kiln_attr_desc *d, uint32_t n) {
  kiln_attrs *a = NULL;
  kiln_status s = kiln_attrs_create(NULL, d, n, &a);
  ck_assert_msg(s == NULL, "attrs: %s", kiln_status_message(s));
  return a;
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

TCase *interp2_shape_tcase(void);
TCase *interp2_gather_tcase(void);
TCase *interp2_linalg_tcase(void);
TCase *interp2_conv_tcase(void);
TCase *interp2_pool_tcase(void);
TCase *interp2_resize_tcase(void);
TCase *interp2_rnn_tcase(void);

#endif
