/* tests/opencl/helpers.h: building small graphs and running them on the
 * opencl backend against the interpreter (the oracle) and, where given,
 * against hand-computed values. */
#ifndef KILN_TEST_OCL_HELPERS_H
#define KILN_TEST_OCL_HELPERS_H

#include <check.h>
#include <kiln/kiln.h>

typedef struct tg {
  kiln_module *m;
  kiln_function *f;
} tg;

void tg_init(tg *t);
void tg_free(tg *t);
kiln_value *tg_input(tg *t, const char *name, kiln_elem e, uint32_t rank, const int64_t *dims);
kiln_value *tg_const(tg *t, kiln_elem e, uint32_t rank, const int64_t *dims, const void *data);
kiln_value *tg_node(tg *t, kiln_node_kind k, kiln_value *const *ins, uint32_t n,
                    const kiln_attr_desc *attrs, uint32_t na);
void tg_output(tg *t, const char *name, kiln_value *v);

/* Compile on opencl and the interpreter, run both on `inputs` (NULL: a
 * deterministic fill), compare every output (floats within rel/abs tol,
 * others exactly). When expect is given, output 0 (f32) must also match
 * it within tol. */
void tg_check(tg *t, const void *const *inputs, double tol, const float *expect, size_t n_expect);

kiln_context *tg_ctx(void);
/* Devices the loaded opencl plugin reports (0 when none or no plugin). */
uint32_t tg_opencl_devices(void);
Suite *ocl_compute_suite(void);
Suite *ocl_cache_suite(void);
Suite *ocl_half_suite(void);
Suite *ocl_bits_suite(void);
Suite *ocl_faults_suite(void);
Suite *ocl_profile_suite(void);

#endif
