/* tests/cpu/suites.h: the Check suites of the cpu backend's tests and the
 * helpers they share (compile a .kir text on a backend, run it on
 * deterministic inputs, compare with the interpreter). */
#ifndef KCPU_TEST_SUITES_H
#define KCPU_TEST_SUITES_H

#include <check.h>
#include <stdint.h>

#include <kiln/kiln.h>

Suite *kcpu_math_suite(void);
Suite *kcpu_jit_suite(void);
Suite *kcpu_fuse_suite(void);
Suite *kcpu_fuse_act_suite(void);
Suite *kcpu_bundle_suite(void);
Suite *kcpu_cover_suite(void);
Suite *kcpu_faults_suite(void);
Suite *kcpu_profile_suite(void);
Suite *kcpu_cache_suite(void);
Suite *kcpu_attention_suite(void);
Suite *kcpu_qlinear_suite(void);
Suite *kcpu_layout_suite(void);

/* test_cache.c's compile in a fresh process (main: --cache-compile-child
 * FD); 0 when its outputs are right. */
int kcpu_cache_compile_child(int start_fd);

/* The shared context (made once by test_main.c). */
kiln_context *kt_ctx(void);

/* Outputs of one run: out[i] holds output i (malloc'd), n[i] its element
 * count. */
typedef struct kt_run {
  uint32_t n_out;
  float *out[16];
  int64_t n[16];
} kt_run;

/* Parse text, compile for backend with `threads`, run once on inputs
 * filled by kt_fill (f32, seeded per input index; i32 input k = 3k-5), keep outputs (f32 only).
 * Fails the test on any error. */
void kt_run_text(const char *text, const char *backend, uint32_t threads, kt_run *r);
void kt_run_free(kt_run *r);
/* Deterministic values in [lo, hi). */
void kt_fill(float *p, int64_t n, uint32_t seed, float lo, float hi);
/* Assert |a-b| <= atol + rtol*|b| elementwise (NaNs must match). */
void kt_assert_close(const kt_run *a, const kt_run *b, double rtol, double atol);
/* Number of nodes of `kind` in function 0 after compiling for backend
 * (reads the compiled IR's instructions). */
uint32_t kt_count_instrs(const char *text, const char *backend, kiln_node_kind kind);

#endif
