/* tests/core/plugins/fake.c: test plugins for the loader, one source built
 * into several kiln-NAME.so files. Each FAKE_* define selects one way of
 * being broken (or, with none, "picky": a working backend that declares
 * only Relu on f32 and runs a one-input one-output graph as Relu). The
 * loader tests check the reason kiln records for each. */
#include <stdlib.h>
#include <string.h>

#include "kiln/plugin.h"

#ifndef FAKE_NAME
#define FAKE_NAME "picky"
#endif

static bool fake_supports(void *state, const kiln_node *n) {
  (void)state;
  if (kiln_node_get_kind(n) != KILN_NODE_Relu)
    return false;
  return kiln_value_type(kiln_node_input(n, 0))->elem == KILN_F32;
}

typedef struct fake_exe {
  const kiln_ir *ir;
} fake_exe;

#ifndef FAKE_NO_COMPILE
static kiln_status fake_compile(void *state, const kiln_ir *ir, const kiln_compile_options *o,
                                void **out) {
  (void)state;
  (void)o;
  if (kiln_ir_input_count(ir) != 1 || kiln_ir_output_count(ir) != 1)
    return kiln_status_make(KILN_UNIMPLEMENTED, "picky runs only one-input one-output graphs");
  /* One executable per compile: a partitioned executable holds several. */
  fake_exe *e = malloc(sizeof *e);
  if (!e)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "picky: out of memory");
  e->ir = ir;
  *out = e;
  return NULL;
}
#endif

static kiln_status fake_run(void *exe, const void *const *in, void *const *out) {
  const fake_exe *e = exe;
  int64_t n = kiln_type_numel(kiln_buffer_type(kiln_ir_output(e->ir, 0)));
  const float *x = in[0];
  float *y = out[0];
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] > 0 ? x[i] : 0;
  return NULL;
}

static void fake_destroy(void *exe) {
  free(exe);
}

static uint32_t fake_device_count(void *state) {
  (void)state;
  return 1;
}

static kiln_status fake_device_info(void *state, uint32_t i, kiln_device_info *out) {
  (void)state;
  if (i != 0)
    return kiln_status_make(KILN_OUT_OF_RANGE, "picky has one device");
  strcpy(out->name, "picky device");
  strcpy(out->kind, "cpu");
  out->memory_bytes = 1u << 20;
  return NULL;
}

#ifdef FAKE_INIT_ERROR
static kiln_status fake_init(void *state) {
  (void)state;
  return kiln_status_make(KILN_UNAVAILABLE, "initerr: no accelerator attached");
}
#endif

static const kiln_plugin fake_plugin = {
#if defined(FAKE_BAD_ABI)
    .abi_major = 99,
    .abi_minor = 3,
    .struct_size = sizeof(kiln_plugin),
#elif defined(FAKE_SMALL)
    .abi_major = KILN_PLUGIN_ABI_MAJOR,
    .abi_minor = KILN_PLUGIN_ABI_MINOR,
    .struct_size = 16,
#else
    KILN_PLUGIN_HEADER,
#endif
    .name = FAKE_NAME,
    .version = "0.0.1",
    .description = "a test plugin of tests/core",
    .supports_node = fake_supports,
#ifndef FAKE_NO_COMPILE
    .compile = fake_compile,
#endif
    .run = fake_run,
    .destroy = fake_destroy,
    .device_count = fake_device_count,
    .device_info = fake_device_info,
#ifdef FAKE_INIT_ERROR
    .init = fake_init,
#endif
};

#if defined(FAKE_NO_ENTRY)
/* noentry exports the entry point under a name the loader does not look
 * for. */
KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry_misspelled(kiln_plugin *out, uint32_t major,
                                                            uint32_t minor);
KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry_misspelled(kiln_plugin *out, uint32_t major,
                                                            uint32_t minor) {
  return kiln_plugin_fill(out, &fake_plugin, major, minor);
}
#elif defined(FAKE_BAD_ABI)
/* badabi's entry copies its descriptor without asking which major the
 * host has, so kiln itself must notice the foreign major. */
KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t major, uint32_t minor);
KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t major, uint32_t minor) {
  (void)major;
  return kiln_plugin_fill(out, &fake_plugin, fake_plugin.abi_major, minor);
}
#elif defined(FAKE_ENTRY_ERROR)
/* entryerr's entry point refuses to load. */
KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t major, uint32_t minor);
KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t major, uint32_t minor) {
  (void)out;
  (void)major;
  (void)minor;
  (void)fake_plugin;
  return kiln_status_make(KILN_UNAVAILABLE, "entryerr: driver version 0.0 is too old");
}
#else
KILN_PLUGIN_DEFINE(fake_plugin);
#endif
