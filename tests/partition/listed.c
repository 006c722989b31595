/* tests/partition/listed.c: test backends for the partitioner, one source
 * built as kiln-ta.so, kiln-tb.so and kiln-tc.so. What each declares, what
 * its nodes cost and how much memory its two devices report come from the
 * environment, read at every call so that each test case sets them up:
 *   KILN_TEST_<NAME>_DECLARES  "Relu,MatMul" (node kinds) or "*" (all)
 *   KILN_TEST_<NAME>_COST      "MatMul=100,Relu=1": node_cost in ns
 *   KILN_TEST_<NAME>_MEMORY    bytes each device reports (default 0: unknown)
 * Compiling keeps nothing; running fails, saying so, which is the
 * run-time failure the partitioned executable must report cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plugin.h"

#ifndef LISTED_NAME
#error "build with -DLISTED_NAME=\"ta\" and -DLISTED_ENV=\"TA\""
#endif

static const char *listed_env(const char *what) {
  char key[64];
  snprintf(key, sizeof key, "KILN_TEST_%s_%s", LISTED_ENV, what);
  return getenv(key);
}

/* Is kind's name an entry of the comma list? */
static bool listed_has(const char *list, const char *kind, const char **value) {
  size_t kl = strlen(kind);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    size_t nl = eq ? (size_t)(eq - p) : len;
    if (nl == kl && memcmp(p, kind, kl) == 0) {
      if (value)
        *value = eq ? eq + 1 : NULL;
      return true;
    }
    p = end ? end + 1 : p + len;
  }
  return false;
}

static bool listed_supports(void *state, const kiln_node *n) {
  (void)state;
  const char *d = listed_env("DECLARES");
  if (!d)
    return false;
  if (strcmp(d, "*") == 0)
    return true;
  return listed_has(d, kiln_node_kind_name(kiln_node_get_kind(n)), NULL);
}

static double listed_cost(void *state, const kiln_node *n, int32_t device) {
  (void)state;
  (void)device;
  const char *v = NULL;
  if (!listed_has(listed_env("COST"), kiln_node_kind_name(kiln_node_get_kind(n)), &v) || !v)
    return -1;
  return atof(v);
}

static int listed_exe;

static kiln_status listed_compile(void *state, const kiln_ir *ir, const kiln_compile_options *o,
                                  void **out) {
  (void)state;
  (void)ir;
  (void)o;
  *out = &listed_exe;
  return NULL;
}

static kiln_status listed_run(void *exe, const void *const *in, void *const *out) {
  (void)exe;
  (void)in;
  (void)out;
  return kiln_status_make(KILN_UNAVAILABLE, "%s: a test backend that runs nothing", LISTED_NAME);
}

static void listed_destroy(void *exe) {
  (void)exe;
}

static uint32_t listed_device_count(void *state) {
  (void)state;
  return 2;
}

static kiln_status listed_device_info(void *state, uint32_t i, kiln_device_info *out) {
  KILN_TRY(kiln_plugin_device_check(LISTED_NAME, i, listed_device_count(state), out));
  snprintf(out->name, sizeof out->name, "%s device %u", LISTED_NAME, (unsigned)i);
  snprintf(out->kind, sizeof out->kind, "accelerator");
  const char *m = listed_env("MEMORY");
  out->memory_bytes = m ? strtoull(m, NULL, 10) : 0;
  return NULL;
}

static const kiln_plugin listed_plugin = {
    KILN_PLUGIN_HEADER,
    .name = LISTED_NAME,
    .version = "0.0.1",
    .description = "a partitioner test backend of tests/partition",
    .supports_node = listed_supports,
    .compile = listed_compile,
    .run = listed_run,
    .destroy = listed_destroy,
    .device_count = listed_device_count,
    .device_info = listed_device_info,
    .node_cost = listed_cost,
};

KILN_PLUGIN_DEFINE(listed_plugin);
