/* tests/cpu/test_profile.c: the cpu backend's timers (the shared check of
 * tests/core/profile_check.h) on one thread and on two, and that they cost
 * nothing when not asked for: the optimized module has no clock read
 * unless the executable is compiled with KILN_COMPILE_PROFILE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

#include "../core/profile_check.h"

START_TEST(profile_cpu_one_thread) {
  ck_assert_uint_eq(prof_check(kt_ctx(), "cpu", 1, 64), 3);
}
END_TEST

START_TEST(profile_cpu_two_threads) {
  ck_assert_uint_eq(prof_check(kt_ctx(), "cpu", 2, 64), 3);
}
END_TEST

/* The module the cpu backend made (KILN_CPU_DUMP_IR), compiled with flags. */
static char *prof_dump(uint32_t flags) {
  char path[] = "/tmp/kiln-cpu-profile-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  setenv("KILN_CPU_DUMP_IR", path, 1);
  kiln_module *m = prof_model(64);
  kiln_compile_options o = {.struct_size = sizeof o, .device = -1, .threads = 1, .flags = flags};
  kiln_executable *exe = NULL;
  kiln_status s = kiln_compile(kt_ctx(), m, NULL, "cpu", &o, &exe);
  unsetenv("KILN_CPU_DUMP_IR");
  ck_assert_msg(!s, "compile: %s", kiln_status_message(s));
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = calloc((size_t)n + 1, 1);
  ck_assert_ptr_nonnull(text);
  ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  remove(path);
  return text;
}

/* A clock read: inlined (the kernels compiled with the model) or a call
 * of the native library's timer. */
static bool reads_clock(const char *ir) {
  return strstr(ir, "clock_gettime") || strstr(ir, "@kcpu_k_prof_now");
}

START_TEST(no_timers_unless_asked) {
  char *off = prof_dump(0), *on = prof_dump(KILN_COMPILE_PROFILE);
  ck_assert_msg(!reads_clock(off), "code compiled without profiling reads the clock");
  ck_assert_msg(reads_clock(on), "code compiled for profiling has no timers");
  free(off);
  free(on);
}
END_TEST

Suite *kcpu_profile_suite(void) {
  Suite *s = suite_create("cpu-profile");
  TCase *tc = tcase_create("profile");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, profile_cpu_one_thread);
  tcase_add_test(tc, profile_cpu_two_threads);
  tcase_add_test(tc, no_timers_unless_asked);
  suite_add_tcase(s, tc);
  return s;
}
