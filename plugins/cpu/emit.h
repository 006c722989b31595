/* plugins/cpu/emit.h: the interface between the cpu plugin's code
 * generator (codegen.c and friends) and the per-kind emitters.
 *
 * The generator makes one LLVM module per compiled function, containing one
 * entry function that runs the instruction list. For each compute
 * instruction it calls the kind's emitter, which emits code at the
 * builder's position: usually a call to a kernel from the kernel library
 * (plugins/cpu/kernels/, plain C compiled to bitcode by clang-19 at build
 * time, embedded in the plugin and linked into every module, so that O3
 * inlines kernels and specializes them on the constant shapes passed here),
 * or an inline loop (fused elementwise).
 *
 * Per kind, two weak symbols (X-macro below); a kind without them is not
 * supported natively by the cpu plugin and gets lowered by the core:
 *   bool kcpu_supports_<Kind>(const kiln_node *n);    which nodes (types, attrs)
 *   kiln_status kcpu_emit_<Kind>(kcpu_emit *e, const kiln_instr *in);
 * The emitter sees the instruction's operands (results first, then inputs,
 * NULL for an absent optional input) and attributes through kiln/instr.h.
 *
 * Kernel library ABI: kernels are C functions named kcpu_k_<what>, taking
 * pointers and int64 sizes (no libkiln types, so that bundles need no kiln
 * at run time), and the thread pool pointer as their last argument when
 * they run in parallel: `struct kcpu_pool *`. Kernels that read index
 * values from a tensor take (kcpu_fault *fault, int64_t site) last: the
 * run's fault record and the instruction's index. */
#ifndef KILN_CPU_EMIT_H
#define KILN_CPU_EMIT_H

#include <llvm-c/Core.h>
#include <stdbool.h>
#include <stdint.h>

#include <kiln/instr.h>
#include <kiln/ir.h>
#include <kiln/status.h>

typedef struct kcpu_emit kcpu_emit;

LLVMContextRef kcpu_context(kcpu_emit *e);
LLVMModuleRef kcpu_module(kcpu_emit *e);
LLVMBuilderRef kcpu_builder(kcpu_emit *e);
/* The entry function being generated (to append basic blocks for loops). */
LLVMValueRef kcpu_function(kcpu_emit *e);

/* Address (an LLVM `ptr`) of the first element of a buffer as seen by the
 * running code: weights, inputs, outputs, activations at their planned
 * offset, views at base + offset. NULL buffer -> a null pointer. */
LLVMValueRef kcpu_addr(kcpu_emit *e, const kiln_buffer *b);
/* For a weight packed at compile time: hand `data` (bytes from
 * aligned_alloc, taken over: freed with the executable, or at once when
 * NULL is returned) to the running code and return its address there.
 * NULL (a C NULL) when the weights mode packs nothing (bundles) or out of
 * memory: the caller then reads the weight itself. */
LLVMValueRef kcpu_packed_weight(kcpu_emit *e, void *data);
/* The current instruction reads weight w only in a packed form (it passes
 * no pointer to w itself): once every instruction naming w has said so,
 * w's data is released at once (kiln_buffer_release_data). */
void kcpu_weight_packed(kcpu_emit *e, const kiln_buffer *w);
/* Where packing jobs go when packing is deferred (NULL: pack now). */
struct kcpu_pack_jobs *kcpu_pack_queue(kcpu_emit *e);
/* The thread pool pointer (`ptr`) the entry function received. */
LLVMValueRef kcpu_pool(kcpu_emit *e);
/* The run's fault record (`ptr` to kcpu_fault, kernels/kcpu_runtime.h),
 * for kernels that check index values read from a tensor. Asking for it
 * marks the current instruction: the entry tests the record right after
 * it and returns early once a fault is recorded. */
LLVMValueRef kcpu_fault_ptr(kcpu_emit *e);
/* Number of threads the executable was compiled for (>= 1). */
uint32_t kcpu_threads(kcpu_emit *e);
/* Vector width in f32 lanes of the target (16 for AVX-512, 8 for AVX2, 4). */
uint32_t kcpu_vector_lanes(kcpu_emit *e);
/* The target has AVX512-VNNI (kernels may use vpdpbusd). */
bool kcpu_target_vnni(kcpu_emit *e);

LLVMValueRef kcpu_i32(kcpu_emit *e, int32_t v);
LLVMValueRef kcpu_i64(kcpu_emit *e, int64_t v);
LLVMValueRef kcpu_f32(kcpu_emit *e, float v);
LLVMValueRef kcpu_f64(kcpu_emit *e, double v);
/* Pointer to a private constant global array holding v[0..n). */
LLVMValueRef kcpu_i64_array(kcpu_emit *e, const int64_t *v, uint32_t n);
LLVMValueRef kcpu_f32_array(kcpu_emit *e, const float *v, uint32_t n);

/* Emit a call to kernel-library function `fn` (it must exist in the
 * library, else an INTERNAL status naming it). Returns the call's value
 * through *out when out is not NULL. */
kiln_status kcpu_call(kcpu_emit *e, const char *fn, LLVMValueRef *args, unsigned n,
                      LLVMValueRef *out);

/* Per-kind hooks (weak; see above). */
#define KILN_NODE(name, a, b, c, d, f)                                                             \
  bool kcpu_supports_##name(const kiln_node *n) __attribute__((weak));                           \
  kiln_status kcpu_emit_##name(kcpu_emit *e, const kiln_instr *in) __attribute__((weak));
#include <kiln/node_kinds.def>
#undef KILN_NODE

#endif
