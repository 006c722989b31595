/* tests/cpu/test_bundle.c: bundles through kiln_compile_bundle: the files
 * appear, the header carries the sizes and io table of the model, the
 * object is an ELF relocatable for the requested machine, the weights file
 * has the header's size. (Running a bundle is examples/bundle's test.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"

static const char kt_model[] =
    "module @m\ninput %x : f32[2,5]\nconst %w : f32[5] = [1, 2, 3, 4, 5]\nfunc @main {\n"
    "  %a : f32[2,5] = Add(%x, %w)\n  %t : f32[2,5] = Tanh(%a)\n  output %y = %t\n}\n";

static char *kt_slurp(const char *path, long *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = calloc((size_t)*n + 1, 1);
  if (p && fread(p, 1, (size_t)*n, f) != (size_t)*n)
    *n = -1;
  fclose(f);
  return p;
}

static kiln_status kt_bundle(const char *dir, const char *target) {
  kiln_module *m = NULL;
  kiln_status s = kiln_module_parse(kt_model, strlen(kt_model), "m.kir", NULL, &m);
  ck_assert_ptr_null(s);
  kiln_compile_options o = {.struct_size = sizeof o, .device = -1, .target = target};
  s = kiln_compile_bundle(kt_ctx(), m, NULL, "cpu", &o, dir, "tiny");
  kiln_module_destroy(m);
  return s;
}

START_TEST(host_bundle_files) {
  char dir[] = "/tmp/kiln-cpu-bundle-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  kiln_status s = kt_bundle(dir, NULL);
  ck_assert_msg(!s, "%s", kiln_status_message(s));
  char path[256];
  long n = 0;
  snprintf(path, sizeof path, "%s/tiny.h", dir);
  char *h = kt_slurp(path, &n);
  ck_assert_ptr_nonnull(h);
  ck_assert_ptr_nonnull(strstr(h, "#define TINY_WEIGHTS_BYTES 64u")); /* 20 bytes, aligned */
  ck_assert_ptr_nonnull(strstr(h, "#define TINY_INPUT0_NAME \"x\""));
  ck_assert_ptr_nonnull(strstr(h, "#define TINY_INPUT0_BYTES 40u"));
  ck_assert_ptr_nonnull(strstr(h, "#define TINY_INPUT0_DIMS {2, 5}"));
  ck_assert_ptr_nonnull(strstr(h, "#define TINY_OUTPUT0_NAME \"y\""));
  ck_assert_ptr_nonnull(strstr(h, "int tiny_run(const void *weights, void *activations"));
  ck_assert_ptr_nonnull(strstr(h, "int tiny_run_fault(const void *weights, void *activations"));
  ck_assert_ptr_nonnull(strstr(h, "long long instruction, value, bound, at;"));
  ck_assert_ptr_nonnull(strstr(h, "int tiny_init(int threads);"));
  free(h);
  snprintf(path, sizeof path, "%s/tiny.weights", dir);
  char *w = kt_slurp(path, &n);
  ck_assert_int_eq(n, 64);
  float first[5];
  memcpy(first, w, sizeof first);
  ck_assert_float_eq(first[0], 1.0f);
  ck_assert_float_eq(first[4], 5.0f);
  free(w);
  snprintf(path, sizeof path, "%s/tiny.o", dir);
  char *o = kt_slurp(path, &n);
  ck_assert_ptr_nonnull(o);
  ck_assert_int_gt(n, 64);
  ck_assert(memcmp(o,
                   "\x7f"
                   "ELF",
                   4) == 0);
  ck_assert_int_eq(o[16], 1); /* ET_REL */
#if defined(__x86_64__)
  ck_assert_int_eq((unsigned char)o[18], 62); /* EM_X86_64 */
#endif
  free(o);
  static const char *const files[] = {"tiny.h", "tiny.o", "tiny.weights"};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}
END_TEST

START_TEST(aarch64_bundle) {
  char dir[] = "/tmp/kiln-cpu-bundle-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  kiln_status s = kt_bundle(dir, "aarch64-linux-gnu");
  /* scripts/setup.sh installs the aarch64 libc headers
   * (libc6-dev-arm64-cross) the kernel library needs for that target. */
  ck_assert_msg(!s, "aarch64 bundle: %s", kiln_status_message(s));
  char path[256];
  long n = 0;
  snprintf(path, sizeof path, "%s/tiny.o", dir);
  char *o = kt_slurp(path, &n);
  ck_assert_ptr_nonnull(o);
  ck_assert_int_ge(n, 20);
  ck_assert_int_eq((unsigned char)o[4], 2);    /* ELFCLASS64 */
  ck_assert_int_eq((unsigned char)o[18], 183); /* e_machine = EM_AARCH64 */
  free(o);
  static const char *const files[] = {"tiny.h", "tiny.o", "tiny.weights"};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}
END_TEST

START_TEST(bad_name_refused) {
  char dir[] = "/tmp/kiln-cpu-bundle-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  kiln_module *m = NULL;
  ck_assert_ptr_null(kiln_module_parse(kt_model, strlen(kt_model), "m.kir", NULL, &m));
  kiln_status s = kiln_compile_bundle(kt_ctx(), m, NULL, "cpu", NULL, dir, "no-dash");
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "no-dash"));
  kiln_status_free(s);
  kiln_module_destroy(m);
  rmdir(dir);
}
END_TEST

Suite *kcpu_bundle_suite(void) {
  Suite *s = suite_create("cpu-bundle");
  TCase *tc = tcase_create("bundle");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, host_bundle_files);
  tcase_add_test(tc, aarch64_bundle);
  tcase_add_test(tc, bad_name_refused);
  suite_add_tcase(s, tc);
  return s;
}
