/* kiln/plugin.h: the contract between kiln and a backend plugin.
 *
 * A plugin is a shared object named kiln-NAME.so exporting one symbol,
 * KILN_PLUGIN_ENTRY_SYMBOL ("kiln_plugin_entry"), of type kiln_plugin_entry_fn.
 * The core calls it once after dlopen(RTLD_NOW | RTLD_LOCAL) and the plugin
 * fills in the descriptor below. Plugins stay loaded for the life of the
 * process (unloading code that may have registered callbacks or thread-local
 * state is a trap; see docs/plugins.md).
 *
 * Host services are ordinary exported libkiln functions (kiln/ir.h,
 * kiln/instr.h, kiln/status.h, kiln/types.h and kiln_plugin_log below); the
 * plugin links against libkiln (pkg-config kiln). See docs/plugins.md for
 * why this was chosen over a table of function pointers.
 *
 * Versioning rules:
 * - KILN_PLUGIN_ABI_MAJOR changes when anything already released changes
 *   meaning or place; the core refuses a plugin of another major version.
 * - A minor bump may only append members at the end of kiln_plugin (the
 *   plugin states what it knows with struct_size), append enum values and
 *   append functions to libkiln. A member the plugin's struct_size does not
 *   cover reads as NULL.
 * - The offsets of the released layout are frozen by static assertions
 *   (in core/plugin_abi.c), so an accidental change breaks the build. */
#ifndef KILN_PLUGIN_H
#define KILN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/instr.h"
#include "kiln/ir.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_PLUGIN_ABI_MAJOR 1
#define KILN_PLUGIN_ABI_MINOR 0
#define KILN_PLUGIN_ENTRY_SYMBOL "kiln_plugin_entry"

/* Options the user gave for a compile (kiln compile/run flags). The plugin
 * reads what it understands and ignores the rest. Strings are borrowed for
 * the duration of compile only. */
typedef struct kiln_compile_options {
  uint32_t struct_size;     /* sizeof(kiln_compile_options) of the caller */
  uint32_t threads;         /* 0 = plugin default (e.g. online cores) */
  int32_t device;           /* -1 = plugin default */
  const char *cpu;          /* target CPU name, NULL = host */
  const char *cpu_features; /* e.g. "+avx2,-avx512f", NULL = host */
  const char *target;       /* target triple, NULL = host */
} kiln_compile_options;

typedef struct kiln_device_info {
  char name[128];
  uint64_t memory_bytes; /* 0 when unknown */
  char kind[32];         /* "cpu", "gpu", "accelerator", ... */
} kiln_device_info;

/* Preferred layouts for the layout hook. */
typedef enum kiln_layout {
  KILN_LAYOUT_ANY = 0,
  KILN_LAYOUT_NCHW = 1,
  KILN_LAYOUT_NHWC = 2
} kiln_layout;

typedef enum kiln_log_level {
  KILN_LOG_DEBUG = 0,
  KILN_LOG_INFO = 1,
  KILN_LOG_WARN = 2,
  KILN_LOG_ERROR = 3
} kiln_log_level;

/* The descriptor. Members after struct_size are filled by the plugin;
 * optional hooks may be NULL and then have the default written beside
 * them. `state` is the plugin's, passed back to every hook. */
typedef struct kiln_plugin {
  uint32_t abi_major;   /* KILN_PLUGIN_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;   /* KILN_PLUGIN_ABI_MINOR the plugin was built with */
  uint32_t struct_size; /* sizeof(kiln_plugin) the plugin was built with */
  uint32_t reserved0;
  const char *name;        /* what users type after --backend; static */
  const char *version;     /* static */
  const char *description; /* one line; static */
  void *state;             /* plugin-owned; passed to every hook */

  /* Required: does this backend run the node natively? It sees the node's
   * kind, types, shapes and attributes through kiln/ir.h. Declined nodes are
   * lowered by the core. Must be thread-safe and free of side effects. */
  bool (*supports_node)(void *state, const kiln_node *node);
  /* Optional: run this node natively on quantized types. Default: false. */
  bool (*supports_quantized)(void *state, const kiln_node *node);
  /* Optional: keep this node unlowered even though a lowering exists (a
   * supported node is already kept; this is for nodes the plugin wants
   * to see whole, e.g. to fuse). Default: false. */
  bool (*keep_node)(void *state, const kiln_node *node);
  /* Optional: rewrite the graph after lowering (fusion, layout). Default:
   * no change. */
  kiln_status (*rewrite_graph)(void *state, kiln_function *f);
  /* Optional: preferred layout for a node's data. Default: ANY. */
  kiln_layout (*preferred_layout)(void *state, const kiln_node *node);
  /* Optional: can `node` absorb a following activation of kind
   * `activation` (fused conv+relu, matmul+gelu...)? Default: false.
   * Asked with activation == KILN_NODE_FusedElementwise, it means: may this
   * elementwise node become part of a FusedElementwise body? (The fuse
   * pass then also asks supports_node about the fused node it made.) */
  bool (*supports_fused)(void *state, const kiln_node *node, kiln_node_kind activation);

  /* Required: compile the instruction IR (with its memory plan) into an
   * executable owned by the plugin. The IR stays valid until destroy. */
  kiln_status (*compile)(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                         void **out_executable);
  /* Required: run. inputs[i] / outputs[i] are the caller's buffers for
   * kiln_ir_input(ir, i) / kiln_ir_output(ir, i), each exactly as large as
   * its type. May be called from several threads at once with distinct
   * buffers. */
  kiln_status (*run)(void *executable, const void *const *inputs, void *const *outputs);
  /* Required: free an executable. */
  void (*destroy)(void *executable);

  /* Optional: devices (NULL = no devices to report). */
  uint32_t (*device_count)(void *state);
  kiln_status (*device_info)(void *state, uint32_t index, kiln_device_info *out);
  /* Optional: called once after a successful entry; a failure refuses the
   * plugin with the returned message. */
  kiln_status (*init)(void *state);
  /* Optional: write an ahead-of-time bundle of the IR into folder `dir`
   * (which exists): NAME.o, NAME.h, NAME.weights, as the backend documents
   * (cpu: docs/bundles.md). NULL: the backend makes no bundles. */
  kiln_status (*emit_bundle)(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                             const char *dir, const char *name);
} kiln_plugin;

/* The entry point. The core passes its own ABI version; the plugin fills
 * *out (already zeroed) and returns NULL, or a status to refuse loading. */
typedef kiln_status (*kiln_plugin_entry_fn)(kiln_plugin *out, uint32_t host_abi_major,
                                            uint32_t host_abi_minor);

/* Host service: log a message tagged with the plugin's name. Goes to stderr
 * when the level is at or above KILN_LOG_LEVEL (env; default warn). */
void kiln_plugin_log(const char *plugin, kiln_log_level level, const char *fmt, ...)
    KILN_PRINTF(3, 4);

#if defined(_WIN32)
#define KILN_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KILN_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif
#endif
