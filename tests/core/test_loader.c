/* tests/core/test_loader.c: plugin discovery and the refusal of broken
 * plugins (each built from plugins/fake.c with one defect), one reason
 * per defect; a plugin of the ABI 1.0 layout (plugins/abi10.c) loading,
 * running and reading as NULL past its struct_size; a profile from a
 * backend without the profile hook; the build-tree
 * search; and kiln_plugin_log's threshold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"

void test_use_fake_plugins(void) {
  static char path[8192];
  snprintf(path, sizeof path, "%s:%s/dup_a:%s/dup_b:%s/junk", TEST_BUILD_DIR, TEST_BUILD_DIR,
           TEST_BUILD_DIR, TEST_BUILD_DIR);
  setenv("KILN_PLUGIN_PATH", path, 1);
  setenv("KILN_PLUGIN_PATH_ONLY", "1", 1);
}

/* The reason recorded for the plugin whose path ends in `suffix`. */
static const char *reason_for(const kiln_context *ctx, const char *suffix) {
  for (uint32_t i = 0; i < kiln_context_refused_count(ctx); i++) {
    const char *p, *r;
    kiln_context_refused(ctx, i, &p, &r);
    size_t lp = strlen(p), ls = strlen(suffix);
    if (lp >= ls && strcmp(p + lp - ls, suffix) == 0)
      return r;
  }
  ck_abort_msg("no refusal recorded for %s", suffix);
  return NULL;
}

#define EXPECT_REASON(ctx, suffix, part)                                                           \
  do {                                                                                             \
    const char *r_ = reason_for(ctx, suffix);                                                      \
    ck_assert_msg(strstr(r_, part) != NULL, "reason for %s is '%s', wanted '%s'", suffix, r_,      \
                  part);                                                                           \
  } while (0)

START_TEST(broken_plugins_are_refused_with_reasons) {
  test_use_fake_plugins();
  kiln_context *ctx;
  EXPECT_OK(kiln_context_create(&ctx));
  /* picky, abi10 and the first dup load; nine files are refused. */
  ck_assert_uint_eq(kiln_context_backend_count(ctx), 3);
  ck_assert_uint_eq(kiln_context_refused_count(ctx), 9);
  ck_assert_ptr_nonnull(kiln_context_find_backend(ctx, "picky"));
  ck_assert_ptr_nonnull(kiln_context_find_backend(ctx, "dup"));
  ck_assert_ptr_nonnull(kiln_context_find_backend(ctx, "abi10"));
  ck_assert_ptr_null(kiln_context_find_backend(ctx, "badabi"));

  EXPECT_REASON(ctx, "/junk/kiln-junk.so", "not a loadable shared object: ");
  EXPECT_REASON(ctx, "/kiln-noentry.so", "missing entry symbol 'kiln_plugin_entry'");
  EXPECT_REASON(ctx, "/kiln-badabi.so", "plugin built for ABI 99.3, kiln has 1.8");
  EXPECT_REASON(ctx, "/kiln-entryerr.so",
                "entry point returned an error: entryerr: driver version 0.0 is too old");
  EXPECT_REASON(ctx, "/kiln-initerr.so",
                "backend 'initerr' init failed: initerr: no accelerator attached");
  EXPECT_REASON(ctx, "/kiln-nohooks.so", "lacks required hooks: compile");
  EXPECT_REASON(ctx, "/kiln-small.so", "struct_size 16 is smaller");
  EXPECT_REASON(ctx, "/kiln-misnamed.so",
                "plugin calls itself 'other' but its file name says "
                "'misnamed'");
  char want[8192];
  snprintf(want, sizeof want,
           "duplicate backend 'dup': kept %s/dup_a/kiln-dup.so (found first: build tree before "
           "install dir before KILN_PLUGIN_PATH), refused %s/dup_b/kiln-dup.so",
           TEST_BUILD_DIR, TEST_BUILD_DIR);
  EXPECT_REASON(ctx, "/dup_b/kiln-dup.so", want);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(backend_info_of_a_good_plugin) {
  test_use_fake_plugins();
  kiln_context *ctx;
  EXPECT_OK(kiln_context_create(&ctx));
  bool seen = false;
  for (uint32_t i = 0; i < kiln_context_backend_count(ctx); i++) {
    kiln_backend_info bi;
    EXPECT_OK(kiln_context_backend(ctx, i, &bi));
    if (strcmp(bi.name, "picky") != 0)
      continue;
    seen = true;
    ck_assert_str_eq(bi.version, "0.0.1");
    ck_assert_uint_eq(bi.abi_major, 1);
    ck_assert_uint_eq(bi.abi_minor, KILN_PLUGIN_ABI_MINOR);
    ck_assert_uint_eq(bi.device_count, 1);
    /* picky accepts Relu on f32 and nothing else. */
    ck_assert_uint_eq(bi.supported_kinds, 1);
    char want[4096];
    snprintf(want, sizeof want, "%s/kiln-picky.so", TEST_BUILD_DIR);
    ck_assert_str_eq(bi.path, want);
  }
  ck_assert(seen);
  kiln_backend_info bi;
  EXPECT_FAIL(kiln_context_backend(ctx, 99, &bi), KILN_OUT_OF_RANGE, "99");
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(plugin_of_abi_1_0_loads_and_has_no_bundles) {
  test_use_fake_plugins();
  kiln_context *ctx;
  EXPECT_OK(kiln_context_create(&ctx));
  const kiln_plugin *p = kiln_context_find_backend(ctx, "abi10");
  ck_assert_ptr_nonnull(p);
  ck_assert_uint_eq(p->abi_major, 1);
  ck_assert_uint_eq(p->abi_minor, 0);
  ck_assert_uint_eq(p->struct_size, KILN_PLUGIN_SIZE_1_0);
  ck_assert_uint_eq(KILN_PLUGIN_SIZE_1_0, offsetof(kiln_plugin, emit_bundle));
  /* The plugin's entry left a non-NULL pointer where emit_bundle lies in
   * kiln's buffer; kiln reads past struct_size as NULL all the same. */
  ck_assert(!KILN_PLUGIN_HAS(p, emit_bundle));
  ck_assert(KILN_PLUGIN_HAS(p, init));
  ck_assert_ptr_null(KILN_PLUGIN_HOOK(p, emit_bundle));
  ck_assert_ptr_null(p->emit_bundle);
  for (uint32_t i = 0; i < kiln_context_backend_count(ctx); i++) {
    kiln_backend_info bi;
    EXPECT_OK(kiln_context_backend(ctx, i, &bi));
    if (strcmp(bi.name, "abi10") != 0)
      continue;
    ck_assert_uint_eq(bi.abi_major, 1);
    ck_assert_uint_eq(bi.abi_minor, 0);
    ck_assert_uint_eq(bi.supported_kinds, 1);
    ck_assert_uint_eq(bi.device_count, 0);
  }

  const char *text = "module @r\ninput %x : f32[4]\nfunc @main {\n"
                     "  %r : f32[4] = Relu(%x)\n  output %y = %r\n}\n";
  kiln_module *m = NULL;
  EXPECT_OK(kiln_module_parse(text, strlen(text), "abi10.kir", NULL, &m));
  kiln_executable *exe = NULL;
  EXPECT_OK(kiln_compile(ctx, m, NULL, "abi10", NULL, &exe));
  float x[4] = {-1, 2, -3, 4}, y[4] = {9, 9, 9, 9};
  const void *in[] = {x};
  void *out[] = {y};
  EXPECT_OK(kiln_run(exe, in, out));
  ck_assert(y[0] == 0 && y[1] == 2 && y[2] == 0 && y[3] == 4);
  kiln_executable_destroy(exe);

  char dir[4096];
  snprintf(dir, sizeof dir, "%s/abi10_bundle_%ld", TEST_BUILD_DIR, (long)getpid());
  EXPECT_FAIL(kiln_compile_bundle(ctx, m, NULL, "abi10", NULL, dir, "model"), KILN_UNIMPLEMENTED,
              "backend 'abi10' does not make bundles (it is built for plugin ABI 1.0, which has "
              "no emit_bundle hook)");
  /* A current plugin without the hook is refused the same way, without
   * the version note. */
  EXPECT_FAIL(kiln_compile_bundle(ctx, m, NULL, "picky", NULL, dir, "model"), KILN_UNIMPLEMENTED,
              "backend 'picky' does not make bundles");
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(profile_of_a_backend_without_the_hook) {
  /* abi10 (a 1.0 plugin: no profile member at all) and picky (1.2, hook
   * left NULL): a profiled executable gives the core's compile phases and
   * the run's wall time, and no events. */
  test_use_fake_plugins();
  kiln_context *ctx;
  EXPECT_OK(kiln_context_create(&ctx));
  ck_assert_ptr_null(KILN_PLUGIN_HOOK(kiln_context_find_backend(ctx, "abi10"), profile));
  const char *text = "module @r\ninput %x : f32[4]\nfunc @main {\n"
                     "  %r : f32[4] = Relu(%x)\n  output %y = %r\n}\n";
  kiln_module *m = NULL;
  EXPECT_OK(kiln_module_parse(text, strlen(text), "prof.kir", NULL, &m));
  const char *names[] = {"abi10", "picky"};
  for (int k = 0; k < 2; k++) {
    kiln_compile_options o = {.struct_size = sizeof o, .device = -1, .flags = KILN_COMPILE_PROFILE};
    kiln_executable *exe = NULL;
    EXPECT_OK(kiln_compile(ctx, m, NULL, names[k], &o, &exe));
    float x[4] = {-1, 2, -3, 4}, y[4];
    const void *in[] = {x};
    void *out[] = {y};
    EXPECT_OK(kiln_run(exe, in, out));
    const kiln_profile *p = NULL;
    EXPECT_OK(kiln_executable_profile(exe, &p));
    ck_assert_uint_eq(p->event_count, 0);
    ck_assert_uint_eq(p->phase_count, 3);
    ck_assert_str_eq(p->phases[2].name, "backend compile");
    ck_assert_uint_gt(p->run_ns, 0);
    kiln_executable_destroy(exe);
  }
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(descriptor_fill_respects_the_host_layout) {
  /* What KILN_PLUGIN_DEFINE's entry hands a host: no more than the host's
   * minor lays out, and only the version members to another major. */
  static const kiln_plugin d = {KILN_PLUGIN_HEADER, .name = "d"};
  unsigned char buf[sizeof(kiln_plugin) + 8];
  memset(buf, 0xab, sizeof buf);
  EXPECT_OK(kiln_plugin_fill((kiln_plugin *)buf, &d, KILN_PLUGIN_ABI_MAJOR, 0));
  kiln_plugin got;
  memcpy(&got, buf, sizeof got);
  ck_assert_uint_eq(got.struct_size, KILN_PLUGIN_SIZE_1_0);
  ck_assert_str_eq(got.name, "d");
  ck_assert_uint_eq(buf[KILN_PLUGIN_SIZE_1_0], 0xab);

  /* A 1.1 host: emit_bundle is in, the 1.2 profile hook is not. */
  memset(buf, 0xab, sizeof buf);
  EXPECT_OK(kiln_plugin_fill((kiln_plugin *)buf, &d, KILN_PLUGIN_ABI_MAJOR, 1));
  memcpy(&got, buf, sizeof got);
  ck_assert_uint_eq(got.struct_size, KILN_PLUGIN_SIZE_1_1);
  ck_assert_uint_eq(KILN_PLUGIN_SIZE_1_1, 152);
  ck_assert_ptr_null(got.emit_bundle);
  ck_assert_uint_eq(buf[KILN_PLUGIN_SIZE_1_1], 0xab);
  ck_assert_ptr_null(KILN_PLUGIN_HOOK(&got, profile));

  /* A 1.4 host: profile is in, the 1.5 node_cost hook is not. */
  memset(buf, 0xab, sizeof buf);
  EXPECT_OK(kiln_plugin_fill((kiln_plugin *)buf, &d, KILN_PLUGIN_ABI_MAJOR, 4));
  memcpy(&got, buf, sizeof got);
  ck_assert_uint_eq(got.struct_size, 160);
  ck_assert_uint_eq(buf[160], 0xab);
  ck_assert_ptr_null(KILN_PLUGIN_HOOK(&got, node_cost));

  memset(buf, 0xab, sizeof buf);
  EXPECT_OK(kiln_plugin_fill((kiln_plugin *)buf, &d, KILN_PLUGIN_ABI_MAJOR, KILN_PLUGIN_ABI_MINOR));
  memcpy(&got, buf, sizeof got);
  ck_assert_uint_eq(got.struct_size, sizeof(kiln_plugin));
  ck_assert_ptr_null(got.emit_bundle);
  ck_assert_uint_eq(buf[sizeof(kiln_plugin)], 0xab);

  memset(buf, 0xab, sizeof buf);
  EXPECT_FAIL(kiln_plugin_fill((kiln_plugin *)buf, &d, KILN_PLUGIN_ABI_MAJOR + 1, 0),
              KILN_ABI_MISMATCH, "d: built for plugin ABI 1.8, host has 2.0");
  memcpy(&got, buf, sizeof got);
  ck_assert_uint_eq(got.abi_major, KILN_PLUGIN_ABI_MAJOR);
  ck_assert_uint_eq(got.abi_minor, KILN_PLUGIN_ABI_MINOR);
  ck_assert_uint_eq(buf[offsetof(kiln_plugin, reserved0)], 0xab);
}
END_TEST

/* kiln_plugin_supports holds a plugin to its minor's contract: a plugin
 * built before 1.7 that accepts every BlockedConv is never offered a
 * grouped one (4 groups of 4 channels) but still the group-1 and depthwise
 * ones; one built before 1.8 never an attention node with gathers, but
 * still one without; from those minors on, its own answer stands. */
static bool yes_to_all(void *state, const kiln_node *n) {
  (void)state, (void)n;
  return true;
}
START_TEST(supports_holds_a_plugin_to_its_minor) {
  const char *text =
      "module @g\ninput %x : f32[1,1,5,5,16]\ninput %w : f32[16,4,3,3]\n"
      "input %d : f32[16,1,3,3]\ninput %f : f32[16,16,3,3]\ninput %qkv : f32[2,3,3,2,4]\n"
      "input %q : f32[2,3,2,4]\nfunc @main {\n"
      "  %g : f32[1,1,3,3,16] = BlockedConv(%x, %w) {block = 16, group = 4}\n"
      "  %e : f32[1,1,3,3,16] = BlockedConv(%x, %d) {block = 16, group = 16}\n"
      "  %c : f32[1,1,3,3,16] = BlockedConv(%x, %f) {block = 16}\n"
      "  %a : f32[2,3,2,4] = ScaledDotProductAttention(%qkv, %qkv, %qkv) {k_gather = [2, 1], "
      "q_gather = [2, 0], v_gather = [2, 2]}\n"
      "  %p : f32[2,3,2,4] = ScaledDotProductAttention(%q, %q, %q)\n"
      "  output %y1 = %g\n  output %y2 = %e\n  output %y3 = %c\n  output %y4 = %a\n"
      "  output %y5 = %p\n}\n";
  kiln_module *m = NULL;
  EXPECT_OK(kiln_module_parse(text, strlen(text), "grouped.kir", NULL, &m));
  kiln_function *f = kiln_module_function(m, 0);
  kiln_plugin p = {KILN_PLUGIN_HEADER, .name = "old", .supports_node = yes_to_all};
  for (uint32_t minor = 5; minor <= KILN_PLUGIN_ABI_MINOR; minor++) {
    p.abi_minor = minor;
    ck_assert_msg(kiln_plugin_supports(&p, kiln_function_node(f, 0)) == (minor >= 7),
                  "grouped, minor %u", minor);
    ck_assert(kiln_plugin_supports(&p, kiln_function_node(f, 1)));
    ck_assert(kiln_plugin_supports(&p, kiln_function_node(f, 2)));
    ck_assert_msg(kiln_plugin_supports(&p, kiln_function_node(f, 3)) == (minor >= 8),
                  "gathered attention, minor %u", minor);
    ck_assert(kiln_plugin_supports(&p, kiln_function_node(f, 4)));
  }
  kiln_module_destroy(m);
}
END_TEST

START_TEST(path_only_with_nothing_finds_nothing) {
  setenv("KILN_PLUGIN_PATH", "/nonexistent/kiln/plugins", 1);
  setenv("KILN_PLUGIN_PATH_ONLY", "1", 1);
  kiln_context *ctx;
  EXPECT_OK(kiln_context_create(&ctx));
  ck_assert_uint_eq(kiln_context_backend_count(ctx), 0);
  ck_assert_uint_eq(kiln_context_refused_count(ctx), 0);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(build_tree_has_the_interpreter) {
  unsetenv("KILN_PLUGIN_PATH");
  unsetenv("KILN_PLUGIN_PATH_ONLY");
  kiln_context *ctx;
  EXPECT_OK(kiln_context_create(&ctx));
  const kiln_plugin *p = kiln_context_find_backend(ctx, "interpreter");
  ck_assert_ptr_nonnull(p);
  ck_assert_uint_eq(p->abi_major, KILN_PLUGIN_ABI_MAJOR);
  kiln_context_destroy(ctx);
}
END_TEST

START_TEST(log_respects_level) {
  char path[4096];
  snprintf(path, sizeof path, "%s/log_%ld.txt", TEST_BUILD_DIR, (long)getpid());
  ck_assert_ptr_nonnull(freopen(path, "w", stderr));
  setenv("KILN_LOG_LEVEL", "info", 1);
  kiln_plugin_log("picky", KILN_LOG_DEBUG, "hidden %d", 1);
  kiln_plugin_log("picky", KILN_LOG_INFO, "shown %d", 2);
  setenv("KILN_LOG_LEVEL", "error", 1);
  kiln_plugin_log("picky", KILN_LOG_WARN, "hidden %d", 3);
  kiln_plugin_log("picky", KILN_LOG_ERROR, "shown %d", 4);
  fflush(stderr);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char buf[1024] = "";
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  remove(path);
  ck_assert_str_eq(buf, "kiln[picky] info: shown 2\nkiln[picky] error: shown 4\n");
}
END_TEST

Suite *loader_suite(void) {
  Suite *s = suite_create("loader");
  TCase *tc = tcase_create("loader");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, broken_plugins_are_refused_with_reasons);
  tcase_add_test(tc, backend_info_of_a_good_plugin);
  tcase_add_test(tc, plugin_of_abi_1_0_loads_and_has_no_bundles);
  tcase_add_test(tc, profile_of_a_backend_without_the_hook);
  tcase_add_test(tc, descriptor_fill_respects_the_host_layout);
  tcase_add_test(tc, supports_holds_a_plugin_to_its_minor);
  tcase_add_test(tc, path_only_with_nothing_finds_nothing);
  tcase_add_test(tc, build_tree_has_the_interpreter);
  tcase_add_test(tc, log_respects_level);
  suite_add_tcase(s, tc);
  return s;
}
