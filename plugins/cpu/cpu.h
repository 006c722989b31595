/* plugins/cpu/cpu.h: private interfaces between the cpu plugin's files:
 * target selection and LLVM plumbing (llvm_util.c), the code generator
 * (codegen.c), the elementwise loop generator (emit_elementwise_loop.c), the JIT (jit.c),
 * bundles (bundle.c) and the fusion pass (fuse.c). */
#ifndef KCPU_CPU_H
#define KCPU_CPU_H

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>
#include <stdbool.h>
#include <stdint.h>

#include <kiln/instr.h>
#include <kiln/plugin.h>

#include "emit.h"

/* The machine code is made for: triple, cpu and features (owned strings). */
typedef struct kcpu_target {
  char *triple, *cpu, *features;
  bool aarch64;
  uint32_t lanes; /* f32 lanes of the widest vector unit */
  /* x86 with AVX512-VNNI (and AVX512F/BW) enabled in the feature string:
   * the int8 GEMM may use vpdpbusd. A cpu name alone (no feature list)
   * never turns it on. */
  bool vnni;
} kcpu_target;

kiln_status kcpu_llvm_init(void);
/* Resolve opts (target, cpu, cpu_features; NULL = host) into *t. */
kiln_status kcpu_target_resolve(const kiln_compile_options *opts, kcpu_target *t);
void kcpu_target_free(kcpu_target *t);
kiln_status kcpu_target_machine(const kcpu_target *t, LLVMRelocMode reloc, LLVMCodeModel cm,
                                LLVMTargetMachineRef *out);
/* Parse the embedded kernel library for t's architecture into ctx. */
kiln_status kcpu_load_library(LLVMContextRef ctx, const kcpu_target *t, LLVMModuleRef *out);
/* The host library as kcpu_declare_library leaves it, made at build time
 * (mknative): for a compile where kcpu_native_library applies, a much
 * smaller parse than kcpu_load_library's. *out is NULL (and the status
 * too) where the build made none. */
kiln_status kcpu_load_declared_library(LLVMContextRef ctx, const kcpu_target *t,
                                       LLVMModuleRef *out);
bool kcpu_has_declared_library(void);
/* The declared library's external functions as declarations only, made
 * with it: a module to generate a model's code into when the library is
 * linked in only for a cache miss (kcpu_compile). *out is NULL where the
 * build made none. */
kiln_status kcpu_load_library_stubs(LLVMContextRef ctx, const kcpu_target *t, LLVMModuleRef *out);
/* The machine code of the whole kernel library made at build time for the
 * build host (mknative.c), when t is exactly that target (triple, cpu and
 * features), the build made the declared library and its stubs with it,
 * and KILN_CPU_NATIVE is not 0: linked into each JIT, so that
 * its KCPU_PREBUILT kernels (which gain nothing from a model's constants)
 * are not optimized and compiled again per model. *obj stays valid for the
 * life of the process. */
bool kcpu_native_library(const kcpu_target *t, const char **obj, size_t *len);
/* Turn the library's KCPU_PREBUILT kernels in mod into declarations (the
 * native library object defines them); the rest stay, to be specialized
 * with the model. `last` is LLVMGetLastFunction(mod) taken right
 * after kcpu_load_library: functions after it are the model's own. Run
 * at build time (mknative), for the declared library. */
kiln_status kcpu_declare_library(LLVMModuleRef mod, LLVMValueRef last);
/* Give every function t's cpu and features (replacing what clang wrote),
 * mark the math helpers always-inline, internalize every definition but
 * the `keep` names (keep NULL: internalize nothing, as for the library
 * object), verify and run the O3 pipeline. */
kiln_status kcpu_finish_module(LLVMModuleRef mod, const kcpu_target *t, const char *const *keep,
                               uint32_t n_keep);
/* Its cheap first steps alone (retarget, internalize, drop what nothing
 * uses), so that the compile cache hashes only live code; finishing the
 * module afterwards is still right. */
kiln_status kcpu_trim_module(LLVMModuleRef mod, const kcpu_target *t, const char *const *keep,
                             uint32_t n_keep);
/* mod's machine code for t as an ELF object (owned by the caller). */
kiln_status kcpu_emit_object(LLVMModuleRef mod, const kcpu_target *t, LLVMMemoryBufferRef *out);
/* mod as bitcode (the compile cache's key material); NULL without memory. */
LLVMMemoryBufferRef kcpu_module_bitcode(LLVMModuleRef mod);
/* A status from an LLVM error (consumed) or message (disposed). */
kiln_status kcpu_status_from_error(LLVMErrorRef err, const char *what);
kiln_status kcpu_status_from_message(char *msg, const char *what);

/* The entry function: i32 NAME(ptr weights, ptr arena, ptr inputs,
 * ptr outputs, ptr pool, ptr fault); inputs/outputs are arrays of buffer
 * pointers; fault is a zeroed kcpu_fault (kernels/kcpu_runtime.h), never
 * NULL. Returns 0, or 1 when a kernel recorded a fault (then returned
 * early: later instructions did not run).
 * Weights are never copied into the code. KCPU_WEIGHTS_TABLE (the JIT):
 * `weights` is an array of pointers, one slot per weight the code reads
 * (the module's own constant data, shared, not copied) or per weight the
 * code generator packed at compile time (owned by the table); codegen fills
 * *table. KCPU_WEIGHTS_REGION (bundles): `weights` is one region holding
 * every weight at its offset from kcpu_weight_layout; nothing is packed. */
typedef enum kcpu_weights_mode { KCPU_WEIGHTS_TABLE, KCPU_WEIGHTS_REGION } kcpu_weights_mode;

/* What the JIT's entry reads as `weights` (KCPU_WEIGHTS_TABLE). */
typedef struct kcpu_weight_table {
  const void **slots; /* n slots, passed to the entry */
  uint32_t n, cap;
  void **owned; /* packed weights (aligned_alloc; freed with the table) */
  uint32_t n_owned, cap_owned;
  bool *read; /* per IR buffer id: the code reads this weight's own data */
} kcpu_weight_table;
void kcpu_weight_table_free(kcpu_weight_table *t);

/* Timers (KILN_COMPILE_PROFILE, JIT only): each Copy and compute
 * instruction is timed; event k (instruction instr[k]) writes its start
 * and duration (kcpu_k_prof_record) into the kiln_profile_event array the
 * run puts in weights-table slot `slot`. instr has kiln_ir_instr_count
 * entries (the caller's); codegen sets count and slot. */
typedef struct kcpu_profile_plan {
  uint32_t *instr;
  uint32_t count, slot;
} kcpu_profile_plan;

/* Weight packing deferred past code generation (KCPU_WEIGHTS_TABLE):
 * codegen allocates each packed buffer and records the job; the plugin
 * runs the jobs on a thread of their own while LLVM optimizes and compiles,
 * releasing each original after the last job that reads it when the code
 * never reads it unpacked. A job packs `groups` matrices as
 * kcpu_perf_prepack documents. */
typedef struct kcpu_pack_job {
  const float *src;
  float *dst;
  int64_t groups, gstride, R, K, rs, ks, U;
  const kiln_buffer *w;
  bool release; /* set by kcpu_pack_plan: release w's data after this job */
} kcpu_pack_job;
typedef struct kcpu_pack_jobs {
  kcpu_pack_job *v;
  uint32_t n, cap;
} kcpu_pack_jobs;
void kcpu_pack_run(const kcpu_pack_job *j);
/* After codegen: mark each weight's last job to release it, unless the
 * code reads the weight itself (read: kcpu_weight_table.read). */
void kcpu_pack_plan(kcpu_pack_jobs *jobs, const bool *read);

typedef struct kcpu_codegen_opts {
  const char *entry_name;
  uint32_t threads, lanes;
  bool vnni; /* kcpu_target.vnni */
  kcpu_weights_mode weights;
  kcpu_weight_table *table; /* KCPU_WEIGHTS_TABLE: filled by kcpu_codegen */
  kcpu_profile_plan *profile; /* NULL: no timers, the code is as without profiling */
  kcpu_pack_jobs *pack;       /* NULL: weights are packed as codegen meets them */
} kcpu_codegen_opts;
/* Does any file define kcpu_emit_<k>? */
bool kcpu_has_emitter(kiln_node_kind k);
kiln_status kcpu_codegen(LLVMModuleRef mod, const kiln_ir *ir, const kcpu_codegen_opts *o);
/* Offsets of weights in the external weights region (64-byte aligned, in
 * buffer order); offsets has kiln_ir_buffer_count entries (non-weights 0).
 * Returns the region's size. */
uint64_t kcpu_weight_layout(const kiln_ir *ir, uint64_t *offsets);

/* Elementwise loops: out = body(inputs) with broadcasting, one pass. */
kiln_status kcpu_emit_elementwise(kcpu_emit *e, const kiln_instr *in, const kiln_fused_op *ops,
                                  uint32_t n_ops);
/* The same over the instruction's first n_in inputs only (those after are
 * absent or folded into the body as numbers: Clip's bounds). */
kiln_status kcpu_emit_elementwise_first(kcpu_emit *e, const kiln_instr *in, uint32_t n_in,
                                        const kiln_fused_op *ops, uint32_t n_ops);
/* Is elem usable by the elementwise generator for this body? */
bool kcpu_ew_supported(kiln_elem elem, const kiln_fused_op *ops, uint32_t n_ops);
/* Unique suffix for helper functions in the module. */
uint32_t kcpu_next_id(kcpu_emit *e);
/* Generated helpers by the key of everything they are made from (bytes the
 * caller lays out), so that identical helpers are generated, optimized and
 * compiled once: find returns NULL for a new key; add records fn. */
LLVMValueRef kcpu_helper_find(kcpu_emit *e, const void *key, size_t n);
void kcpu_helper_add(kcpu_emit *e, const void *key, size_t n, LLVMValueRef fn);

/* Fusion (the rewrite_graph hook). */
bool kcpu_supports_fused(void *state, const kiln_node *n, kiln_node_kind activation);

/* JIT: link the native library object (lib, borrowed; NULL when the
 * model's object holds its kernels) and the model's object (obj, always
 * consumed), look up the named symbols; names[0] is required (its failure
 * is the error); absent others get 0. */
typedef struct kcpu_jit kcpu_jit;
kiln_status kcpu_jit_create(const kcpu_target *t, const char *lib, size_t lib_len,
                            LLVMMemoryBufferRef obj, const char *const *names, uint32_t n,
                            uint64_t *addrs, kcpu_jit **out);
void kcpu_jit_destroy(kcpu_jit *j);

/* The compile cache key of mod (the model's module as generated, before
 * optimization) for target t, linking the native library or not. See
 * cache.c for what it covers. */
kiln_status kcpu_cache_key(LLVMModuleRef mod, const kcpu_target *t, bool native,
                           kiln_cache_key *out);
/* Test hooks, exported: objects made by optimizing and compiling, and
 * objects taken from the compile cache, since the plugin was loaded; and
 * JIT compiles that started from the whole kernel library (declared 0) or
 * from the one with the native kernels declared or its stubs (1). */
KILN_PLUGIN_EXPORT uint64_t kiln_cpu_object_builds(void);
KILN_PLUGIN_EXPORT uint64_t kiln_cpu_cache_hits(void);
KILN_PLUGIN_EXPORT uint64_t kiln_cpu_library_loads(int declared);
/* 1 where the build embedded the declared library and its stubs. */
KILN_PLUGIN_EXPORT int kiln_cpu_has_declared_library(void);

/* Bundles (the emit_bundle hook). */
kiln_status kcpu_emit_bundle(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                             const char *dir, const char *name);

#endif
