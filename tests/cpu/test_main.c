/* tests/cpu/test_main.c: runs the cpu backend's Check suites, and the
 * helpers they share (with --cache-compile-child FD: one of the processes
 * test_cache.c starts). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

static kiln_context *g_ctx;

kiln_context *kt_ctx(void) {
  return g_ctx;
}

void kt_fill(float *p, int64_t n, uint32_t seed, float lo, float hi) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = lo + (hi - lo) * (float)(s >> 8) / 16777216.0f;
  }
}

static void kt_fail_status(kiln_status s, const char *what) {
  if (s) {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s: %s", what, kiln_status_message(s));
    kiln_status_free(s);
    ck_abort_msg("%s", msg);
  }
}

void kt_run_text(const char *text, const char *backend, uint32_t threads, kt_run *r) {
  memset(r, 0, sizeof *r);
  kiln_module *m = NULL;
  kiln_executable *exe = NULL;
  kt_fail_status(kiln_module_parse(text, strlen(text), "test.kir", NULL, &m), "parse");
  kiln_compile_options o = {.struct_size = sizeof o, .threads = threads, .device = -1};
  kt_fail_status(kiln_compile(kt_ctx(), m, NULL, backend, &o, &exe), backend);
  uint32_t ni = kiln_executable_input_count(exe), no = kiln_executable_output_count(exe);
  ck_assert_uint_le(no, 16);
  ck_assert_uint_le(ni, 32);
  void *ins[32] = {0};
  for (uint32_t i = 0; i < ni && i < 32; i++) {
    kiln_io_info io;
    kiln_executable_input(exe, i, &io);
    int64_t n = kiln_type_numel(&io.type);
    ins[i] = malloc((size_t)(kiln_type_bytes(&io.type) + 4));
    if (io.type.elem == KILN_F32)
      kt_fill(ins[i], n, i + 1, -3.0f, 3.0f);
    else if (io.type.elem == KILN_I32)
      for (int64_t k = 0; k < n; k++)
        ((int32_t *)ins[i])[k] = (int32_t)((k - 2) * 3 + 1);
    else
      memset(ins[i], 0, (size_t)kiln_type_bytes(&io.type));
  }
  r->n_out = no;
  for (uint32_t i = 0; i < no; i++) {
    kiln_io_info io;
    kiln_executable_output(exe, i, &io);
    r->n[i] = kiln_type_numel(&io.type);
    r->out[i] = calloc((size_t)r->n[i] + 1, sizeof(float));
  }
  kt_fail_status(kiln_run(exe, (const void *const *)ins, (void *const *)r->out), "run");
  for (uint32_t i = 0; i < ni && i < 32; i++)
    free(ins[i]);
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
}

void kt_run_free(kt_run *r) {
  for (uint32_t i = 0; i < r->n_out; i++)
    free(r->out[i]);
  memset(r, 0, sizeof *r);
}

void kt_assert_close(const kt_run *a, const kt_run *b, double rtol, double atol) {
  ck_assert_uint_eq(a->n_out, b->n_out);
  for (uint32_t i = 0; i < a->n_out; i++) {
    ck_assert_int_eq(a->n[i], b->n[i]);
    for (int64_t k = 0; k < a->n[i]; k++) {
      double x = a->out[i][k], y = b->out[i][k];
      if (isnan(y)) {
        ck_assert_msg(isnan(x), "output %u[%lld]: %g, expected NaN", i, (long long)k, x);
        continue;
      }
      ck_assert_msg(fabs(x - y) <= atol + rtol * fabs(y), "output %u[%lld]: %.9g, expected %.9g", i,
                    (long long)k, x, y);
    }
  }
}

uint32_t kt_count_instrs(const char *text, const char *backend, kiln_node_kind kind) {
  kiln_module *m = NULL;
  kiln_executable *exe = NULL;
  kt_fail_status(kiln_module_parse(text, strlen(text), "test.kir", NULL, &m), "parse");
  kt_fail_status(kiln_compile(kt_ctx(), m, NULL, backend, NULL, &exe), backend);
  const kiln_ir *ir = kiln_executable_ir(exe);
  uint32_t c = 0;
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++)
    if (kiln_instr_get_kind(kiln_ir_instr(ir, i)) == kiln_instr_kind_for_node(kind))
      c++;
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  return c;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--cache-compile-child") == 0)
    return kcpu_cache_compile_child(atoi(argv[2]));
  /* Always run every suite and case, whatever the environment says. */
  unsetenv("CK_RUN_SUITE");
  unsetenv("CK_RUN_CASE");
  kiln_status s = kiln_context_create(&g_ctx);
  if (s) {
    fprintf(stderr, "context: %s\n", kiln_status_message(s));
    kiln_status_free(s);
    return 1;
  }
  SRunner *sr = srunner_create(kcpu_math_suite());
  srunner_add_suite(sr, kcpu_jit_suite());
  srunner_add_suite(sr, kcpu_fuse_suite());
  srunner_add_suite(sr, kcpu_fuse_act_suite());
  srunner_add_suite(sr, kcpu_bundle_suite());
  srunner_add_suite(sr, kcpu_cover_suite());
  srunner_add_suite(sr, kcpu_faults_suite());
  srunner_add_suite(sr, kcpu_profile_suite());
  srunner_add_suite(sr, kcpu_cache_suite());
  srunner_add_suite(sr, kcpu_attention_suite());
  srunner_add_suite(sr, kcpu_qlinear_suite());
  srunner_add_suite(sr, kcpu_layout_suite());
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  kiln_context_destroy(g_ctx);
  return failed ? 1 : 0;
}
