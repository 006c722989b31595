/* core/context.h: the private shape of a kiln_context (the plugin registry)
 * and of a kiln_executable, shared by the files of core/ that implement
 * kiln.h. Not installed; plugins and tools never see it. */
#ifndef KILN_CORE_CONTEXT_H
#define KILN_CORE_CONTEXT_H

#include "kiln/kiln.h"

/* One loaded backend. The descriptor is our own zero-filled copy, so that
 * members past the plugin's struct_size read as NULL. */
typedef struct kiln_registry_backend {
  kiln_plugin desc;
  char *path;
  void *handle; /* dlopen handle; never closed (see registry.c) */
  /* Lazily probed count of node kinds the backend declares; -1 = not yet. */
  int64_t supported_kinds;
} kiln_registry_backend;

typedef struct kiln_registry_refusal {
  char *path;
  char *reason;
} kiln_registry_refusal;

struct kiln_context {
  kiln_registry_backend *backends;
  uint32_t backend_count, backend_cap;
  kiln_registry_refusal *refused;
  uint32_t refused_count, refused_cap;
};

/* Discover and load plugins into ctx (registry.c). Failures of single
 * plugins are recorded as refusals; only running out of memory fails. */
kiln_status kiln_registry_discover(kiln_context *ctx);
/* kiln_compile with the pass pipelines optional (off for the all-constant
 * modules that constant folding evaluates). */
kiln_status kiln_core_compile(kiln_context *ctx, const kiln_module *m, const char *function,
                              const char *backend, const kiln_compile_options *opts,
                              bool run_passes, kiln_executable **out);
/* Record a refusal (copies path and reason). */
kiln_status kiln_registry_refuse(kiln_context *ctx, const char *path, const char *reason);
/* Free what the registry allocated (the plugins stay loaded). */
void kiln_registry_release(kiln_context *ctx);
/* The registry entry for a backend name, or NULL. */
kiln_registry_backend *kiln_registry_find(const kiln_context *ctx, const char *name);
/* Count the node kinds for which the backend accepts at least one probe
 * node (probe.c). */
uint32_t kiln_registry_probe_kinds(const kiln_plugin *p);

/* A compiled function: the core's half (module copy, IR, io names) and
 * the plugin's opaque half. */
typedef struct kiln_exe_io {
  char *name;
  kiln_type type;
} kiln_exe_io;

typedef struct kiln_part_exe kiln_part_exe;

struct kiln_executable {
  kiln_context *ctx;
  /* One backend: its plugin, IR and executable. Several (partition.c):
   * plugin, ir and plugin_exe are NULL and part holds the regions, each an
   * executable of its own; backend_label is the list as given. */
  kiln_part_exe *part;
  char *backend_label;
  const kiln_plugin *plugin;
  kiln_module *module; /* the clone the IR borrows constants from */
  kiln_ir *ir;
  void *plugin_exe;
  kiln_exe_io *inputs, *outputs;
  uint32_t input_count, output_count;
  /* Profiling (kiln_executable_profile): compiled with KILN_COMPILE_PROFILE;
   * the core's compile phases; the last run's wall time; the profile last
   * handed out, with its phase list (core's then the backend's; malloc). */
  bool profiling;
  kiln_profile_phase core_phases[3];
  uint64_t run_ns;
  kiln_profile profile;
  kiln_profile_phase *phases;
};

/* Helpers of the compile driver that partition.c shares: the message for
 * an unknown backend name, the function to compile (NULL = the first),
 * and the full options struct a plugin sees from a caller's. */
kiln_status kiln_core_no_backend(const kiln_context *ctx, const char *backend);
kiln_status kiln_core_pick_function(const kiln_module *m, const char *name, kiln_function **out);
void kiln_core_compile_options(const kiln_compile_options *in, kiln_compile_options *out);
/* Does node n read or make a quantized type (supports_quantized then
 * decides too)? */
bool kiln_core_node_is_quantized(const kiln_node *n);

/* Monotonic clock in nanoseconds (for compile phases and run times). */
uint64_t kiln_core_now_ns(void);

/* Duplicate a string with malloc (NULL on failure or NULL input). */
char *kiln_core_strdup(const char *s);

#endif
