/* tests/core/plugins/abi10.c: a plugin exactly as one built against the
 * ABI 1.0 headers looks to kiln: its own copy of the 1.0 descriptor layout
 * (through `init`, before `emit_bundle` was appended in 1.1), abi_minor 0,
 * struct_size 144 on LP64, and the hand-written entry point of those days.
 * It runs a one-input one-output Relu graph like "picky". The loader and
 * tool tests check that it loads, runs, and that kiln sees no emit_bundle
 * (kiln compile --bundle with it is refused naming it), even though the
 * bytes past its descriptor in kiln's buffer are not zero (see the entry). */
#include <string.h>

#include "kiln/plugin.h"

/* The kiln_plugin of ABI 1.0, member for member. */
typedef struct abi10_plugin {
  uint32_t abi_major, abi_minor, struct_size, reserved0;
  const char *name, *version, *description;
  void *state;
  bool (*supports_node)(void *state, const kiln_node *node);
  bool (*supports_quantized)(void *state, const kiln_node *node);
  bool (*keep_node)(void *state, const kiln_node *node);
  kiln_status (*rewrite_graph)(void *state, kiln_function *f);
  kiln_layout (*preferred_layout)(void *state, const kiln_node *node);
  bool (*supports_fused)(void *state, const kiln_node *node, kiln_node_kind activation);
  kiln_status (*compile)(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                         void **out_executable);
  kiln_status (*run)(void *executable, const void *const *inputs, void *const *outputs);
  void (*destroy)(void *executable);
  uint32_t (*device_count)(void *state);
  kiln_status (*device_info)(void *state, uint32_t index, kiln_device_info *out);
  kiln_status (*init)(void *state);
} abi10_plugin;

_Static_assert(sizeof(abi10_plugin) == KILN_PLUGIN_SIZE_1_0, "the 1.0 layout is what kiln froze");

static bool abi10_supports(void *state, const kiln_node *n) {
  (void)state;
  return kiln_node_get_kind(n) == KILN_NODE_Relu &&
         kiln_value_type(kiln_node_input(n, 0))->elem == KILN_F32;
}

static const kiln_ir *abi10_ir; /* one executable at a time: the tests are serial */

static kiln_status abi10_compile(void *state, const kiln_ir *ir, const kiln_compile_options *o,
                                 void **out) {
  (void)state;
  (void)o;
  if (kiln_ir_input_count(ir) != 1 || kiln_ir_output_count(ir) != 1)
    return kiln_status_make(KILN_UNIMPLEMENTED, "abi10 runs only one-input one-output graphs");
  abi10_ir = ir;
  *out = &abi10_ir;
  return NULL;
}

static kiln_status abi10_run(void *exe, const void *const *in, void *const *out) {
  const kiln_ir *ir = *(const kiln_ir *const *)exe;
  int64_t n = kiln_type_numel(kiln_buffer_type(kiln_ir_output(ir, 0)));
  const float *x = in[0];
  float *y = out[0];
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] > 0 ? x[i] : 0;
  return NULL;
}

static void abi10_destroy(void *exe) {
  (void)exe;
}

/* Would be called if kiln took the bytes past the descriptor for an
 * emit_bundle hook; it fails loudly so a test sees it. */
static kiln_status abi10_not_a_hook(void *state, const kiln_ir *ir,
                                    const kiln_compile_options *opts, const char *dir,
                                    const char *name) {
  (void)state;
  (void)ir;
  (void)opts;
  (void)dir;
  (void)name;
  return kiln_status_make(KILN_INTERNAL, "abi10: kiln called a member past struct_size");
}

/* The entry's type is the one every ABI has (kiln_plugin_entry_fn: the core
 * calls it through that type); what the buffer holds is the 1.0 layout. */
KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *buf, uint32_t host_abi_major,
                                                 uint32_t host_abi_minor);
KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *buf, uint32_t host_abi_major,
                                                 uint32_t host_abi_minor) {
  abi10_plugin *out = (abi10_plugin *)(void *)buf;
  if (host_abi_major != 1)
    return kiln_status_make(KILN_ABI_MISMATCH, "abi10: built for plugin ABI 1, host has %u",
                            host_abi_major);
  out->abi_major = 1;
  out->abi_minor = 0;
  out->struct_size = sizeof *out;
  out->name = "abi10";
  out->version = "1.0.0";
  out->description = "a test plugin of tests/core built against the ABI 1.0 layout";
  out->supports_node = abi10_supports;
  out->compile = abi10_compile;
  out->run = abi10_run;
  out->destroy = abi10_destroy;
  /* Not the plugin's to write: a 1.1 host passes a buffer that ends with
   * emit_bundle, and these bytes stand for whatever happens to be there
   * (a host that did not zero its buffer). kiln must read past
   * struct_size as NULL, whatever the bytes hold. */
  if (host_abi_minor >= 1) {
    kiln_status (*poison)(void *, const kiln_ir *, const kiln_compile_options *, const char *,
                          const char *) = abi10_not_a_hook;
    memcpy((char *)out + sizeof *out, &poison, sizeof poison);
  }
  return NULL;
}
