/* kiln/plugin.h: the contract between kiln and a backend plugin.
 *
 * A plugin is a shared object named kiln-NAME.so exporting one symbol,
 * KILN_PLUGIN_ENTRY_SYMBOL ("kiln_plugin_entry"), of type kiln_plugin_entry_fn.
 * A plugin writes its descriptor as one `static const kiln_plugin` and
 * exports the entry point with KILN_PLUGIN_DEFINE(descriptor) (below). The
 * core calls the entry once after dlopen(RTLD_NOW | RTLD_LOCAL). Plugins
 * stay loaded for the life of the process (unloading code that may have
 * registered callbacks or thread-local state is a trap; see docs/plugins.md).
 *
 * Host services are ordinary exported libkiln functions (kiln/ir.h,
 * kiln/instr.h, kiln/status.h, kiln/types.h and kiln_plugin_log below); the
 * plugin links against libkiln (pkg-config kiln). See docs/plugins.md for
 * why this was chosen over a table of function pointers.
 *
 * Versioning rules (docs/plugins.md lists the layout with the minor that
 * added each member):
 * - KILN_PLUGIN_ABI_MAJOR changes when anything already released changes
 *   meaning or place; the core refuses a plugin of another major version,
 *   naming both versions. abi_major, abi_minor and struct_size stay the
 *   first three members in every major, so that refusal can always be made.
 * - A minor bump may only append members at the end of kiln_plugin (the
 *   plugin states what it knows with struct_size), append enum values and
 *   append functions to libkiln. A member the plugin's struct_size does not
 *   cover reads as NULL: the core reads optional members only through
 *   KILN_PLUGIN_HOOK.
 * - The offsets of the released layout are frozen by static assertions
 *   (in core/plugin_abi.c), so an accidental change breaks the build.
 * - Public structs grow in one of two ways, each stated beside the struct:
 *   those with a leading struct_size (kiln_plugin, kiln_compile_options)
 *   grow at the end and the reader checks struct_size (KILN_STRUCT_HAS);
 *   the others (kiln_device_info here, kiln_backend_info and friends in
 *   kiln.h, kiln_pass_options in passes.h) keep their size for the whole
 *   major, and new fields come in a new struct beside them, filled by a
 *   new hook or function. */
#ifndef KILN_PLUGIN_H
#define KILN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kiln/instr.h"
#include "kiln/ir.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_PLUGIN_ABI_MAJOR 1
#define KILN_PLUGIN_ABI_MINOR 8 /* 1.1: emit_bundle; 1.2: profile, compile flags; 1.3: cache;
                                   1.4: more fused activations (kiln/ops.h), Conv's
                                   fused residual, ScaledDotProductAttention;
                                   1.5: node_cost, compile options' device_memory;
                                   1.6: the channel-blocked kinds (BlockChannels,
                                   UnblockChannels, BlockedConv);
                                   1.7: BlockedConv of grouped Convs,
                                   kiln_plugin_supports;
                                   1.8: ScaledDotProductAttention's gathers */
#define KILN_PLUGIN_ENTRY_SYMBOL "kiln_plugin_entry"

/* Does the struct at p, whose leading struct_size says how much of `type`
 * its writer knew, cover `member`? */
#define KILN_STRUCT_HAS(p, type, member)                                                           \
  ((size_t)(p)->struct_size >= offsetof(type, member) + sizeof(((type *)0)->member))

/* Options the user gave for a compile (kiln compile/run flags). The plugin
 * reads what it understands and ignores the rest. Strings are borrowed for
 * the duration of compile only.
 * Growth: appended at the end, by a minor bump. A caller sets struct_size
 * to its sizeof and the core reads no further (older callers get defaults
 * for the rest). The core hands a plugin its own full struct; a plugin
 * reads a member added after 1.0 only when KILN_STRUCT_HAS(opts,
 * kiln_compile_options, member), since an older core's struct ends sooner.
 * Every member is of 1.0 unless its comment names a later minor. */
typedef struct kiln_compile_options {
  uint32_t struct_size;     /* sizeof(kiln_compile_options) of the caller */
  uint32_t threads;         /* 0 = plugin default (e.g. online cores) */
  int32_t device;           /* -1 = plugin default */
  const char *cpu;          /* target CPU name, NULL = host */
  const char *cpu_features; /* e.g. "+avx2,-avx512f", NULL = host */
  const char *target;       /* target triple, NULL = host */
  /* ABI 1.2: KILN_COMPILE_* bits. A plugin reads it only when
   * KILN_STRUCT_HAS(opts, kiln_compile_options, flags). */
  uint32_t flags;
  uint32_t reserved1; /* 0 */
  /* ABI 1.5: memory limits of the devices in a backend list
   * ("NAME=BYTES,...", NAME an entry of the list such as opencl:1; K, M, G
   * suffixes are powers of 1024), over what the devices report
   * (docs/partitioning.md). NULL = none. The core reads it; a plugin sees
   * it cleared. */
  const char *device_memory;
} kiln_compile_options;

/* Record per-instruction timings of every run (the `profile` hook and
 * kiln_executable_profile). A backend adds timers only when asked: code
 * compiled without this bit is what it would be without profiling. */
#define KILN_COMPILE_PROFILE 1u
/* ABI 1.3: neither read nor write the compile cache (kiln_cache_enabled;
 * `--no-cache`). A backend without a cache ignores it. */
#define KILN_COMPILE_NO_CACHE 2u

/* One timed piece of a run: instruction `instr` (kiln_instr_index) ran on
 * the backend's thread `thread` (0 = the thread that called run; a backend
 * numbers its others 1, 2, ...) from start_ns to start_ns + dur_ns, in
 * nanoseconds since the run began. An instruction may have several events
 * (several threads, or several pieces); instructions that cost nothing
 * (alloc, dealloc, view) may have none. Growth: none within a major (its
 * size, 24 bytes, is frozen in core/plugin_abi.c). */
typedef struct kiln_profile_event {
  uint32_t instr;
  uint32_t thread;
  uint64_t start_ns;
  uint64_t dur_ns;
} kiln_profile_event;

/* A named phase of a compile and how long it took ("backend codegen"...).
 * Growth: none within a major (16 bytes, frozen). */
typedef struct kiln_profile_phase {
  const char *name;
  uint64_t ns;
} kiln_profile_phase;

/* The profile of an executable's last run. The profile hook fills events
 * (and optionally phases: the backend's own compile phases); the core adds
 * its compile phases and run_ns for kiln_executable_profile (kiln.h).
 * Arrays and strings are owned by whoever filled them (the backend's
 * executable, or the core's) and stay valid until the next run of the
 * executable or its destruction. Growth: appended at the end by a minor
 * bump; a reader checks struct_size (KILN_STRUCT_HAS). */
typedef struct kiln_profile {
  uint32_t struct_size; /* sizeof(kiln_profile) of whoever made the struct */
  uint32_t event_count;
  const kiln_profile_event *events;
  uint32_t phase_count;
  uint32_t reserved0;
  const kiln_profile_phase *phases;
  uint64_t run_ns; /* wall time of the last kiln_run, measured by the core */
} kiln_profile;

/* One device of a backend, filled by the plugin's device_info hook into
 * the caller's zeroed struct. Growth: none within a major (its size, 168
 * bytes on LP64, is frozen); new fields come in a new struct with a
 * leading struct_size, filled by a new hook appended to kiln_plugin, and
 * this struct and device_info stay as they are. */
typedef struct kiln_device_info {
  char name[128];
  uint64_t memory_bytes; /* 0 when unknown */
  char kind[32];         /* "cpu", "gpu", "accelerator", ... */
} kiln_device_info;

/* Tensor layouts. No hook takes them: the slot once meant for a per-node
 * layout preference stays reserved (reserved_layout below). Since 1.6 a
 * backend asks for the channel-blocked layout by declaring the blocked
 * kinds in supports_node (BlockedConv at the block size it wants; the
 * layout pass, docs/passes.md, asks about 16, 8 and 4). */
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
 * them. `state` is the plugin's, passed back to every hook. Every member
 * is of ABI 1.0 unless its comment names a later minor. */
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
  /* Reserved; must be NULL, and the core ignores it. ABI 1.0 called this
   * slot preferred_layout, but no core ever called it, so it was retired
   * (in 1.1) before it became a promise. The slot keeps its place so that
   * the members after it do not move. The layout pass (1.6) needs no
   * hook: it asks supports_node about the BlockedConv it would make. */
  void *reserved_layout;
  /* Optional: can `node` absorb a following activation of kind
   * `activation` (fused conv+relu, matmul+gelu...)? Default: false.
   * Asked with activation == KILN_NODE_FusedElementwise, it means: may this
   * elementwise node become part of a FusedElementwise body? (The fuse
   * pass then also asks supports_node about the fused node it made.)
   * Asked with KILN_NODE_Add about a MatMul or (ABI 1.4) a Conv: may an
   * Add after it ride on it, as Gemm's C or as the Conv's residual (its
   * fourth input, kiln/node_kinds.def)? Clip, HardSigmoid, HardSwish and
   * Swish (ABI 1.4) are asked about only as activations and as members
   * of a FusedElementwise body (which they join as their expansion). */
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
  /* --- end of the ABI 1.0 layout (KILN_PLUGIN_SIZE_1_0) --- */

  /* ABI 1.1. Optional: write an ahead-of-time bundle of the IR into folder
   * `dir` (which exists): NAME.o, NAME.h, NAME.weights, as the backend
   * documents (cpu: docs/bundles.md). NULL (or not covered by struct_size):
   * the backend makes no bundles. */
  kiln_status (*emit_bundle)(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                             const char *dir, const char *name);
  /* --- end of the ABI 1.1 layout (KILN_PLUGIN_SIZE_1_1) --- */

  /* ABI 1.2. Optional: the timings of the last run of an executable that
   * was compiled with KILN_COMPILE_PROFILE in opts->flags. The core passes
   * *out zeroed with struct_size set; the hook sets events / event_count
   * (and may set phases / phase_count: its own compile phases), pointing
   * at memory of the executable that stays valid until its next run or
   * destroy. Not called while a run of the executable is in flight. NULL:
   * the backend reports no timings (kiln_executable_profile then has the
   * core's compile phases and run_ns only). */
  kiln_status (*profile)(void *executable, kiln_profile *out);

  /* ABI 1.5. Optional: an estimate, in nanoseconds, of running `node` on
   * device `device` (-1 = the default) of this backend, for placing nodes
   * across a backend list (docs/partitioning.md: a node that several
   * entries run goes to the cheapest, counting bytes that would cross at
   * 0.1 ns each). Negative = no estimate. NULL (or not covered by
   * struct_size): the list's order decides. Thread-safe, no side effects. */
  double (*node_cost)(void *state, const kiln_node *node, int32_t device);
} kiln_plugin;

/* Bytes of the descriptor as each minor of major 1 lays it out. */
#define KILN_PLUGIN_SIZE_1_0 offsetof(kiln_plugin, emit_bundle)
#define KILN_PLUGIN_SIZE_1_1 (offsetof(kiln_plugin, emit_bundle) + sizeof(void (*)(void)))
#define KILN_PLUGIN_SIZE_1_2 (offsetof(kiln_plugin, profile) + sizeof(void (*)(void)))
#define KILN_PLUGIN_SIZE_1_5 (offsetof(kiln_plugin, node_cost) + sizeof(void (*)(void)))

/* Does descriptor p cover `member`? */
#define KILN_PLUGIN_HAS(p, member) KILN_STRUCT_HAS(p, kiln_plugin, member)
/* Member `member` of descriptor p, or NULL when p's struct_size does not
 * cover it (a plugin built against an older minor). The core reads every
 * optional member this way. */
#define KILN_PLUGIN_HOOK(p, member) (KILN_PLUGIN_HAS(p, member) ? (p)->member : NULL)

/* The entry point. The core passes its own ABI version and a zeroed
 * descriptor as large as its own minor lays it out; the plugin fills *out
 * and returns NULL, or a status to refuse loading. KILN_PLUGIN_DEFINE
 * writes it; there is no need to write one by hand. */
typedef kiln_status (*kiln_plugin_entry_fn)(kiln_plugin *out, uint32_t host_abi_major,
                                            uint32_t host_abi_minor);

/* Bytes of the descriptor the host of ABI 1.host_minor passed in. */
static inline size_t kiln_plugin_size_for_minor(uint32_t host_minor) {
  return host_minor == 0   ? KILN_PLUGIN_SIZE_1_0
         : host_minor == 1 ? KILN_PLUGIN_SIZE_1_1
         : host_minor <= 4 ? KILN_PLUGIN_SIZE_1_2
                           : KILN_PLUGIN_SIZE_1_5;
}

/* What KILN_PLUGIN_DEFINE's entry does: copy the plugin's descriptor into
 * the host's, no more of it than the host's layout holds (a host of an
 * older minor passes a smaller struct) and no more than desc->struct_size,
 * and say in out->struct_size how much was written. A host of another
 * major gets only the three version members and a KILN_ABI_MISMATCH
 * status naming both versions, which it reports as the refusal. */
static inline kiln_status kiln_plugin_fill(kiln_plugin *out, const kiln_plugin *desc,
                                           uint32_t host_abi_major, uint32_t host_abi_minor) {
  size_t n = offsetof(kiln_plugin, reserved0); /* abi_major, abi_minor, struct_size */
  size_t host = kiln_plugin_size_for_minor(host_abi_minor);
  bool same_major = host_abi_major == desc->abi_major;
  if (same_major && desc->struct_size > n)
    n = desc->struct_size < host ? desc->struct_size : host;
  memcpy(out, desc, n);
  if (same_major && desc->struct_size > host)
    out->struct_size = (uint32_t)host;
  if (!same_major)
    return kiln_status_make(KILN_ABI_MISMATCH, "%s: built for plugin ABI %u.%u, host has %u.%u",
                            desc->name ? desc->name : "plugin", (unsigned)desc->abi_major,
                            (unsigned)desc->abi_minor, (unsigned)host_abi_major,
                            (unsigned)host_abi_minor);
  return NULL;
}

/* The version members a descriptor starts with (designated initializer):
 *   static const kiln_plugin mine = {KILN_PLUGIN_HEADER, .name = "mine", ...};
 */
#define KILN_PLUGIN_HEADER                                                                         \
  .abi_major = KILN_PLUGIN_ABI_MAJOR, .abi_minor = KILN_PLUGIN_ABI_MINOR,                          \
  .struct_size = sizeof(kiln_plugin)

/* Export the entry point for the `static const kiln_plugin` named desc:
 *   KILN_PLUGIN_DEFINE(mine);
 * at file scope, once per plugin. */
#define KILN_PLUGIN_DEFINE(desc)                                                                   \
  KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t host_abi_major,      \
                                                   uint32_t host_abi_minor);                       \
  KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t host_abi_major,      \
                                                   uint32_t host_abi_minor) {                      \
    return kiln_plugin_fill(out, &(desc), host_abi_major, host_abi_minor);                         \
  }                                                                                                \
  KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t host_abi_major,      \
                                                   uint32_t host_abi_minor)

/* device_count for a backend with exactly one device (the host cpu, the
 * vendor example): `.device_count = kiln_plugin_one_device`. */
static inline uint32_t kiln_plugin_one_device(void *state) {
  (void)state;
  return 1;
}

/* What a device_info hook does first: refuse an index at or past `count`
 * (what its device_count says) with KILN_OUT_OF_RANGE naming the plugin
 * (a status the caller owns, to hand on), else clear *out for the hook to
 * fill and return NULL. `plugin` is borrowed for the call. */
static inline kiln_status kiln_plugin_device_check(const char *plugin, uint32_t index,
                                                   uint32_t count, kiln_device_info *out) {
  if (index >= count)
    return kiln_status_make(KILN_OUT_OF_RANGE, "%s: no device %u (there are %u)", plugin,
                            (unsigned)index, (unsigned)count);
  memset(out, 0, sizeof *out);
  return NULL;
}

/* Host service: log a message tagged with the plugin's name. Goes to stderr
 * when the level is at or above KILN_LOG_LEVEL (env; default warn). */
void kiln_plugin_log(const char *plugin, kiln_log_level level, const char *fmt, ...)
    KILN_PRINTF(3, 4);

/* Host service (ABI 1.7): does plugin p run node n natively? p's
 * supports_node, held to the contract of the minor p was built for: a node
 * that minor's kinds could not hold is declined without asking p (a
 * BlockedConv of a grouped Conv that is not depthwise, for a plugin built
 * before 1.7, when BlockedConv was group 1 or depthwise only; a
 * ScaledDotProductAttention with q_gather, k_gather or v_gather, for one
 * built before 1.8). The core
 * asks every plugin through this; a tool that runs passes for a loaded
 * plugin should too. p and n are borrowed. */
bool kiln_plugin_supports(const kiln_plugin *p, const kiln_node *n);

/* Host service (ABI 1.3): the on-disk compile cache backends share, for
 * code that is costly to make and depends only on what the backend hashes
 * into the key. A backend hashes everything its output depends on (the
 * generated code or IR, target, options, its own and its compiler's
 * versions) with kiln_cache_key_add, finishes the key with
 * kiln_sha256_final, then loads or, after compiling, stores. Entries are
 * written to a temporary file and renamed, so concurrent compiles are safe;
 * a damaged entry is reported (warning), removed and returned as
 * KILN_CACHE_DAMAGED, for the caller to compile and store again; a folder
 * that cannot be written is reported once per process and the compile goes
 * on without it. Folder: $KILN_CACHE_DIR, else
 * $XDG_CACHE_HOME/kiln/BACKEND, else ~/.cache/kiln/BACKEND; entries are
 * named by the key in hex plus `ext`. KILN_CACHE_DIR=off disables the cache
 * as KILN_COMPILE_NO_CACHE does. Thread-safe; no state but the files. */
typedef struct kiln_sha256 {
  uint32_t h[8];
  uint64_t bytes;
  unsigned char buf[64];
} kiln_sha256;
void kiln_sha256_init(kiln_sha256 *s);
void kiln_sha256_update(kiln_sha256 *s, const void *data, size_t n);
/* The digest of everything updated since init, into out. */
void kiln_sha256_final(kiln_sha256 *s, unsigned char out[32]);

typedef struct kiln_cache_key {
  unsigned char bytes[32]; /* SHA-256 of the key material */
} kiln_cache_key;
/* One part of the key material, length-prefixed (so that ("ab", "c") and
 * ("a", "bc") differ). */
void kiln_cache_key_add(kiln_sha256 *s, const void *part, size_t n);
/* May a compile with these options use the cache (opts may be NULL)? */
bool kiln_cache_enabled(const kiln_compile_options *opts);
/* The cache folder for `backend` into buf; false when none can be named. */
bool kiln_cache_dir(const char *backend, char *buf, size_t n);

typedef enum kiln_cache_result {
  KILN_CACHE_MISS = 0,    /* no entry */
  KILN_CACHE_HIT = 1,     /* *data (malloc'd; the caller frees it) and *len set */
  KILN_CACHE_DAMAGED = 2, /* an entry was there but unusable; reported and removed */
} kiln_cache_result;
kiln_cache_result kiln_cache_load(const char *backend, const char *ext, const kiln_cache_key *k,
                                  void **data, size_t *len);
/* Store len bytes (borrowed for the call) as the entry for k; false when
 * it could not be written (reported once per process). */
bool kiln_cache_store(const char *backend, const char *ext, const kiln_cache_key *k,
                      const void *data, size_t len);
/* Remove k's entry, if any (a backend that found a loaded entry unusable). */
void kiln_cache_remove(const char *backend, const char *ext, const kiln_cache_key *k);

#if defined(_WIN32)
#define KILN_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KILN_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif
#endif
