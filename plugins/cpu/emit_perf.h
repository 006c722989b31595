/* plugins/cpu/emit_perf.h: compile-time helpers of the GEMM-based emitters
 * (emit_linalg.c, emit_conv.c): constant weights packed once into the
 * engine's panel layout, and the fused activation attribute. Private to the
 * cpu plugin. */
#ifndef KCPU_EMIT_PERF_H
#define KCPU_EMIT_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "emit.h"

/* When w is a weight and the code reads weights by table (JIT; bundles
 * keep weights in one region and get NULL), the address of a buffer the
 * executable owns holding `groups` matrices packed one after the other in the prepacked layout of
 * kernels/gemm_impl.h with unit U: matrix g's element (i, k), i < R,
 * k < K, is w[g*gstride + i*rs + k*ks]. NULL (a C NULL) when not
 * applicable or out of memory: the kernel then packs at run time. Given a
 * packed form, the caller passes a null pointer for the original (the
 * kernels never read it then), so that the original can be released. */
LLVMValueRef kcpu_perf_prepack(kcpu_emit *e, const kiln_buffer *w, int64_t groups, int64_t gstride,
                               int64_t R, int64_t K, int64_t rs, int64_t ks, int64_t U);

/* The kernel library's activation code (KCPU_ACT_*) and its parameters
 * for the node's fused activation (kiln_fused_act_decode_params; absent:
 * none); false for one the GEMM epilogue lacks (LeakyRelu, Sigmoid, Tanh)
 * or a name that does not decode. */
bool kcpu_perf_act(const kiln_attrs *a, int64_t *act, float *act_a, float *act_b);

/* An f32 2-D Conv (window w, activation decoded) by Winograd's F(2x2, 3x3)
 * where that applies and pays (emit_conv_winograd.c): *done says whether
 * the call was emitted; otherwise the caller emits the usual kernel. */
struct kcpu_win;
kiln_status kcpu_emit_conv_winograd(kcpu_emit *e, const kiln_instr *in, const struct kcpu_win *w,
                                    int64_t group, int64_t act, float act_a, float act_b,
                                    bool *done);
/* The same for a BlockedConv ([M, C] filters, window w on its plain
 * views) by F(2x2, 3x3) or F(4x4, 3x3) (kernels/conv_blocked_wino.c). */
kiln_status kcpu_emit_convb_winograd(kcpu_emit *e, const kiln_instr *in, const struct kcpu_win *w,
                                     int64_t C, int64_t M, int64_t act, float act_a, float act_b,
                                     bool *done);

#endif
