/* plugins/cpu/plugin.c: the cpu backend's plugin entry. compile generates
 * one LLVM module (kernel library + entry function), optimizes it for the
 * chosen cpu and JITs it; run calls the entry with a per-run frame (an
 * activation arena and a thread pool) taken from a lock-protected free
 * list, so concurrent runs never share one and repeated runs reuse them.
 * Each run passes a zeroed fault record of its own; a fault a kernel
 * records (an index out of range) becomes the run's status. Weights are
 * not compiled into the code: the entry reads them through a table of
 * pointers to the IR's (shared) constant data and to the weights packed at
 * compile time, and each weight used only in packed form is released from
 * the IR, so a weight is held once. Compiled for profiling
 * (KILN_COMPILE_PROFILE), the code reads a clock around every instruction
 * (kcpu_profile_plan) and runs are serialized so that one events array
 * serves them; without it no timer is generated. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Linker.h>

#include "cpu.h"
#include "kcpu_runtime.h"

/* Calls into JIT'd code are not checked by UBSan's function sanitizer
 * (clang's -fsanitize=function, part of undefined): it reads a type
 * signature just before the callee, which LLVM's JIT code does not carry,
 * and when the callee starts its mapping that read faults. */
#if defined(__clang__)
#define KCPU_JIT_CALLER __attribute__((no_sanitize("function")))
#else
#define KCPU_JIT_CALLER
#endif

typedef int32_t (*kcpu_entry_fn)(const void *weights, void *arena, const void *const *inputs,
                                 void *const *outputs, void *pool, kcpu_fault *fault);
typedef void *(*kcpu_pool_create_fn)(int threads);
typedef void (*kcpu_pool_destroy_fn)(void *pool);

typedef struct kcpu_frame {
  void *arena, *pool;
  struct kcpu_frame *next;
} kcpu_frame;

typedef struct kcpu_exec {
  const kiln_ir *ir; /* kept alive by the core for the executable's life */
  kcpu_jit *jit;
  kcpu_weight_table weights; /* what the entry reads as `weights` */
  kcpu_entry_fn entry;
  kcpu_pool_create_fn pool_create;
  kcpu_pool_destroy_fn pool_destroy;
  uint32_t threads;
  uint64_t arena_bytes;
  pthread_mutex_t lock;
  kcpu_frame *free_frames;
  /* Profiling: the plan codegen made, the events the timers write (the
   * last run's, relative to its start), one run at a time, and the
   * compile's phases. */
  bool profiling;
  kcpu_profile_plan plan;
  kiln_profile_event *events;
  pthread_mutex_t run_lock;
  kiln_profile_phase phases[5];
} kcpu_exec;

_Static_assert(sizeof(kiln_profile_event) == 24 && offsetof(kiln_profile_event, start_ns) == 8 &&
                   offsetof(kiln_profile_event, dur_ns) == 16,
               "kcpu_k_prof_record writes the kiln_profile_event layout");

static uint64_t kcpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef bool (*kcpu_supports_fn)(const kiln_node *n);

static bool kcpu_supports_node(void *state, const kiln_node *node) {
  (void)state;
  static const kcpu_supports_fn table[] = {
#define KILN_NODE(name, a, b, c, d, f) kcpu_supports_##name,
#include <kiln/node_kinds.def>
#undef KILN_NODE
  };
  kiln_node_kind k = kiln_node_get_kind(node);
  if ((uint32_t)k >= KILN_NODE_KIND_COUNT || !table[k])
    return false;
  return table[k](node) && kcpu_has_emitter(k);
}

static uint32_t kcpu_default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t)n : 1;
}

KCPU_JIT_CALLER static void kcpu_frame_free(kcpu_exec *x, kcpu_frame *f) {
  if (f->pool && x->pool_destroy)
    x->pool_destroy(f->pool);
  free(f->arena);
  free(f);
}

static void kcpu_destroy(void *executable) {
  kcpu_exec *x = executable;
  if (!x)
    return;
  while (x->free_frames) {
    kcpu_frame *f = x->free_frames;
    x->free_frames = f->next;
    kcpu_frame_free(x, f);
  }
  pthread_mutex_destroy(&x->lock);
  pthread_mutex_destroy(&x->run_lock);
  free(x->plan.instr);
  free(x->events);
  kcpu_jit_destroy(x->jit);
  kcpu_weight_table_free(&x->weights);
  free(x);
}

static atomic_uint_fast64_t kcpu_builds, kcpu_hits, kcpu_whole_loads, kcpu_declared_loads;

uint64_t kiln_cpu_object_builds(void) {
  return atomic_load(&kcpu_builds);
}
uint64_t kiln_cpu_cache_hits(void) {
  return atomic_load(&kcpu_hits);
}
uint64_t kiln_cpu_library_loads(int declared) {
  return atomic_load(declared ? &kcpu_declared_loads : &kcpu_whole_loads);
}
int kiln_cpu_has_declared_library(void) {
  return kcpu_has_declared_library();
}

/* The cached object for key, or NULL (a miss, or a damaged entry, which
 * kiln_cache_load reported and removed). */
static LLVMMemoryBufferRef kcpu_cache_fetch(const kiln_cache_key *key) {
  void *data = NULL;
  size_t len = 0;
  if (kiln_cache_load("cpu", "o", key, &data, &len) != KILN_CACHE_HIT)
    return NULL;
  LLVMMemoryBufferRef b =
      LLVMCreateMemoryBufferWithMemoryRangeCopy(data, len, "kcpu-cached-object");
  free(data);
  if (b)
    atomic_fetch_add(&kcpu_hits, 1);
  return b;
}

/* Optimize mod (internalizing all but keep) and make its object; the time
 * of the optimization alone into *opt_ns. Dumps the optimized module to
 * `dump` when given. */
static kiln_status kcpu_machine_code(LLVMModuleRef mod, const kcpu_target *t,
                                     const char *const *keep, uint32_t n_keep, const char *dump,
                                     LLVMMemoryBufferRef *obj, uint64_t *opt_ns) {
  uint64_t a = kcpu_now_ns();
  KILN_TRY(kcpu_finish_module(mod, t, keep, n_keep));
  *opt_ns = kcpu_now_ns() - a;
  if (dump) {
    char *err = NULL;
    if (LLVMPrintModuleToFile(mod, dump, &err))
      kiln_plugin_log("cpu", KILN_LOG_WARN, "KILN_CPU_DUMP_IR=%s: %s", dump, err ? err : "");
    LLVMDisposeMessage(err);
  }
  atomic_fetch_add(&kcpu_builds, 1);
  return kcpu_emit_object(mod, t, obj);
}

/* *mod, the model's code generated into the library's stubs
 * (kcpu_load_library_stubs), linked into the declared library for the
 * optimizer: *mod becomes the linked module. */
static kiln_status kcpu_link_declared(LLVMContextRef ctx, const kcpu_target *t,
                                      LLVMModuleRef *mod) {
  LLVMModuleRef lib = NULL;
  KILN_TRY(kcpu_load_declared_library(ctx, t, &lib));
  if (!lib)
    return kiln_status_make(KILN_INTERNAL, "cpu: the declared kernel library is missing");
  bool bad = LLVMLinkModules2(lib, *mod); /* consumes *mod either way */
  *mod = NULL;
  if (bad) {
    LLVMDisposeModule(lib);
    return kiln_status_make(KILN_INTERNAL,
                            "cpu: the model's code does not link with the kernel library");
  }
  *mod = lib;
  return NULL;
}

/* The deferred packing jobs, run on their own thread. */
static void *kcpu_pack_thread(void *arg) {
  kcpu_pack_jobs *jobs = arg;
  for (uint32_t i = 0; i < jobs->n; i++) {
    kcpu_pack_run(&jobs->v[i]);
    if (jobs->v[i].release)
      kiln_buffer_release_data(jobs->v[i].w);
  }
  return NULL;
}

static kiln_status kcpu_compile(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                                void **out) {
  (void)state;
  *out = NULL;
  kcpu_target t;
  KILN_TRY(kcpu_target_resolve(opts, &t));
  kcpu_exec *x = calloc(1, sizeof *x);
  if (!x) {
    kcpu_target_free(&t);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "cpu: no memory for an executable");
  }
  pthread_mutex_init(&x->lock, NULL);
  pthread_mutex_init(&x->run_lock, NULL);
  x->profiling = opts && KILN_STRUCT_HAS(opts, kiln_compile_options, flags) &&
                 (opts->flags & KILN_COMPILE_PROFILE);
  x->ir = ir;
  x->threads = opts && opts->threads ? opts->threads : kcpu_default_threads();
  x->arena_bytes = kiln_ir_activation_bytes(ir);

  const char *lib = NULL;
  size_t lib_len = 0;
  kcpu_pack_jobs jobs = {0};
  bool native = kcpu_native_library(&t, &lib, &lib_len);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  /* With the native library, the code is generated into stubs of the
   * library as kcpu_declare_library would leave it, both made at build
   * time with the native object (kcpu_native_library applies only with
   * them), and the library is linked in only to optimize (a cache miss):
   * parsing the whole library took 80-90 ms of a 100-120 ms cached
   * compile, the declared one 7-8 ms of 14. */
  bool stubs = native;
  kiln_status s = stubs ? kcpu_load_library_stubs(ctx, &t, &mod)
                        : kcpu_load_library(ctx, &t, &mod);
  atomic_fetch_add(stubs ? &kcpu_declared_loads : &kcpu_whole_loads, 1);
  if (!s && !mod)
    s = kiln_status_make(KILN_INTERNAL, "cpu: the kernel library stubs are missing");
  kcpu_codegen_opts co = {.entry_name = "kiln_entry",
                          .threads = x->threads,
                          .lanes = t.lanes,
                          .vnni = t.vnni,
                          .weights = KCPU_WEIGHTS_TABLE,
                          .table = &x->weights,
                          .pack = &jobs};
  if (!s && x->profiling) {
    x->plan.instr = calloc(kiln_ir_instr_count(ir) + 1, sizeof *x->plan.instr);
    co.profile = &x->plan;
    if (!x->plan.instr)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "cpu: no memory for the profile plan");
  }
  uint64_t t0 = kcpu_now_ns();
  if (!s)
    s = kcpu_codegen(mod, ir, &co);
  /* Packing (a memory-bound copy of the weights) overlaps LLVM's work. */
  pthread_t packer;
  bool packing = false;
  if (!s && jobs.n) {
    kcpu_pack_plan(&jobs, x->weights.read);
    packing = pthread_create(&packer, NULL, kcpu_pack_thread, &jobs) == 0;
    if (!packing)
      kcpu_pack_thread(&jobs);
  }
  uint64_t t1 = kcpu_now_ns();
  /* With the native library the pool functions are its; otherwise they are
   * compiled with the model and must survive internalization. */
  static const char *const keep[] = {"kiln_entry", "kcpu_pool_create", "kcpu_pool_destroy"};
  uint32_t n_keep = native ? 1 : 3;
  const char *dump = getenv("KILN_CPU_DUMP_IR"); /* a file for the optimized module */
  /* the stubs have nothing to trim */
  if (!s && !stubs)
    s = kcpu_trim_module(mod, &t, keep, n_keep);
  /* A dump needs the optimized module, which a cache hit never makes. */
  bool use_cache = !s && !dump && kiln_cache_enabled(opts);
  kiln_cache_key key;
  if (use_cache) {
    kiln_status ks = kcpu_cache_key(mod, &t, native, &key);
    use_cache = !ks; /* no memory for the key: compile as without a cache */
    kiln_status_free(ks);
  }
  LLVMMemoryBufferRef obj = use_cache ? kcpu_cache_fetch(&key) : NULL;
  bool hit = obj != NULL;
  uint64_t t2 = kcpu_now_ns(), t3 = t2, t_opt = 0;
  if (!s && !obj && stubs) {
    s = kcpu_link_declared(ctx, &t, &mod);
    stubs = false;
  }
  if (!s && !obj) {
    s = kcpu_machine_code(mod, &t, keep, n_keep, dump, &obj, &t_opt);
    t3 = kcpu_now_ns();
    if (!s && use_cache)
      kiln_cache_store("cpu", "o", &key, LLVMGetBufferStart(obj), LLVMGetBufferSize(obj));
  }
  uint64_t addrs[3] = {0};
  if (!s)
    s = kcpu_jit_create(&t, native ? lib : NULL, lib_len, obj, keep, 3, addrs, &x->jit);
  if (s && hit) {
    /* An entry whole by its checksum but not a usable object (another
     * build's, say): replaced by a fresh compile. */
    kiln_plugin_log("cpu", KILN_LOG_WARN,
                    "compile cache entry for %s did not link (%s); compiling again and "
                    "replacing it",
                    kiln_ir_name(ir), kiln_status_message(s));
    kiln_status_free(s);
    kiln_cache_remove("cpu", "o", &key);
    hit = false;
    t2 = kcpu_now_ns();
    s = stubs ? kcpu_link_declared(ctx, &t, &mod) : NULL;
    if (!s)
      s = kcpu_machine_code(mod, &t, keep, n_keep, NULL, &obj, &t_opt);
    t3 = kcpu_now_ns();
    if (!s)
      kiln_cache_store("cpu", "o", &key, LLVMGetBufferStart(obj), LLVMGetBufferSize(obj));
    if (!s)
      s = kcpu_jit_create(&t, native ? lib : NULL, lib_len, obj, keep, 3, addrs, &x->jit);
  }
  uint64_t t4 = kcpu_now_ns();
  if (packing)
    pthread_join(packer, NULL);
  free(jobs.v);
  uint64_t t5 = kcpu_now_ns();
  if (mod)
    LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  kcpu_target_free(&t);
  x->phases[0] = (kiln_profile_phase){"cpu: code generation", t1 - t0};
  if (hit) {
    x->phases[1] = (kiln_profile_phase){"cpu: compile cache hit (key and load)", t2 - t1};
    x->phases[2] = (kiln_profile_phase){"cpu: machine code (from the cache)", 0};
  } else {
    x->phases[1] = (kiln_profile_phase){"cpu: LLVM optimization", (t2 - t1) + t_opt};
    x->phases[2] = (kiln_profile_phase){"cpu: machine code", t3 - t2 - t_opt};
  }
  x->phases[3] = (kiln_profile_phase){"cpu: JIT link", t4 - t3};
  x->phases[4] = (kiln_profile_phase){"cpu: weight packing (beyond what overlapped)", t5 - t4};
  if (!s && x->profiling) {
    x->events = calloc(x->plan.count ? x->plan.count : 1, sizeof *x->events);
    if (!x->events)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "cpu: no memory for profile events");
    for (uint32_t k = 0; !s && k < x->plan.count; k++)
      x->events[k].instr = x->plan.instr[k];
  }
  if (s) {
    kcpu_destroy(x);
    return kiln_status_wrap(s, "cpu: compiling %s", kiln_ir_name(ir));
  }
  /* A weight the code reads only in its packed form is released: the
   * executable holds the packed copy alone. */
  for (uint32_t i = 0; i < kiln_ir_buffer_count(ir); i++) {
    const kiln_buffer *b = kiln_ir_buffer(ir, i);
    if (kiln_buffer_get_kind(b) == KILN_BUFFER_WEIGHT && !x->weights.read[i])
      kiln_buffer_release_data(b);
  }
  x->entry = (kcpu_entry_fn)(uintptr_t)addrs[0];
  x->pool_create = (kcpu_pool_create_fn)(uintptr_t)addrs[1];
  x->pool_destroy = (kcpu_pool_destroy_fn)(uintptr_t)addrs[2];
  *out = x;
  return NULL;
}

KCPU_JIT_CALLER static kiln_status kcpu_take_frame(kcpu_exec *x, kcpu_frame **out) {
  pthread_mutex_lock(&x->lock);
  kcpu_frame *f = x->free_frames;
  if (f)
    x->free_frames = f->next;
  pthread_mutex_unlock(&x->lock);
  if (f) {
    *out = f;
    return NULL;
  }
  f = calloc(1, sizeof *f);
  if (f && x->arena_bytes)
    f->arena = aligned_alloc(64, (size_t)((x->arena_bytes + 63) & ~(uint64_t)63));
  if (!f || (x->arena_bytes && !f->arena)) {
    free(f);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "cpu: no memory for a %llu-byte activation arena",
                            (unsigned long long)x->arena_bytes);
  }
  /* No pool (threads 1, or threads could not start) runs kernels inline. */
  if (x->threads > 1 && x->pool_create)
    f->pool = x->pool_create((int)x->threads);
  *out = f;
  return NULL;
}

/* The status for a recorded fault, naming the instruction by index, kind
 * and result (the graph value it computes). */
static kiln_status kcpu_fault_status(const kcpu_exec *x, const kcpu_fault *ft) {
  uint32_t site = (uint32_t)ft->site;
  const kiln_instr *in = site < kiln_ir_instr_count(x->ir) ? kiln_ir_instr(x->ir, site) : NULL;
  const kiln_buffer *res = in && kiln_instr_operand_count(in) ? kiln_instr_operand(in, 0) : NULL;
  return kiln_status_make(KILN_OUT_OF_RANGE,
                          "cpu: instruction %u (%s -> '%s'): index %lld out of range for "
                          "dimension %lld (element %lld of the indices)",
                          site, in ? kiln_instr_kind_name(kiln_instr_get_kind(in)) : "?",
                          res ? kiln_buffer_name(res) : "?", (long long)ft->value,
                          (long long)ft->bound, (long long)ft->at);
}

KCPU_JIT_CALLER static kiln_status kcpu_run(void *executable, const void *const *inputs,
                                          void *const *outputs) {
  kcpu_exec *x = executable;
  kcpu_frame *f = NULL;
  KILN_TRY(kcpu_take_frame(x, &f));
  kcpu_fault fault = {0};
  int32_t rc;
  if (x->profiling) {
    /* The table's slot is shared: one profiled run at a time. */
    pthread_mutex_lock(&x->run_lock);
    x->weights.slots[x->plan.slot] = x->events;
    uint64_t base = kcpu_now_ns();
    rc = x->entry(x->weights.slots, f->arena, inputs, outputs, f->pool, &fault);
    for (uint32_t k = 0; k < x->plan.count; k++)
      x->events[k].start_ns = x->events[k].start_ns >= base ? x->events[k].start_ns - base : 0;
    pthread_mutex_unlock(&x->run_lock);
  } else {
    rc = x->entry(x->weights.slots, f->arena, inputs, outputs, f->pool, &fault);
  }
  pthread_mutex_lock(&x->lock);
  f->next = x->free_frames;
  x->free_frames = f;
  pthread_mutex_unlock(&x->lock);
  return rc || fault.claimed ? kcpu_fault_status(x, &fault) : NULL;
}

/* The last run's events: one per Copy and compute instruction, on the
 * calling thread (a parallel kernel's workers are inside its span), and
 * the compile's own phases. */
static kiln_status kcpu_profile(void *executable, kiln_profile *out) {
  kcpu_exec *x = executable;
  out->events = x->events;
  out->event_count = x->events ? x->plan.count : 0;
  out->phases = x->phases;
  out->phase_count = 5;
  return NULL;
}

static kiln_status kcpu_device_info(void *state, uint32_t index, kiln_device_info *out) {
  KILN_TRY(kiln_plugin_device_check("cpu", index, kiln_plugin_one_device(state), out));
  KILN_TRY(kcpu_llvm_init());
  char *cpu = LLVMGetHostCPUName();
  snprintf(out->name, sizeof out->name, "host cpu (%s, %u threads)", cpu, kcpu_default_threads());
  LLVMDisposeMessage(cpu);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  out->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
  snprintf(out->kind, sizeof out->kind, "cpu");
  return NULL;
}

/* The descriptor; KILN_PLUGIN_DEFINE exports the entry point that hands
 * it to the core. */
static const kiln_plugin kcpu_plugin = {
    KILN_PLUGIN_HEADER,
    .name = "cpu",
    .version = "0.1.0",
    .description = "LLVM code generation for the host cpu: JIT, threads, fusion, AOT bundles",
    .supports_node = kcpu_supports_node,
    .supports_fused = kcpu_supports_fused,
    .compile = kcpu_compile,
    .run = kcpu_run,
    .destroy = kcpu_destroy,
    .device_count = kiln_plugin_one_device,
    .device_info = kcpu_device_info,
    .emit_bundle = kcpu_emit_bundle,
    .profile = kcpu_profile,
};
KILN_PLUGIN_DEFINE(kcpu_plugin);
