/* plugins/cpu/emit_perf_pack.c: packing constant GEMM operands (filters,
 * MatMul / Gemm weights) once, at compile time, into the panel layout the
 * kernel library's GEMM engine reads (kernels/gemm_impl.h), so that a run
 * never repacks them: for small-N products (late conv layers, batch-1
 * networks) that packing costs as much as the arithmetic. Also the fused
 * activation the GEMM epilogue applies (kiln_fused_act_decode). */
#include "emit_perf.h"

#include <kiln/ops.h>
#include <stdlib.h>

#include "gemm_impl.h"

LLVMValueRef kcpu_perf_prepack(kcpu_emit *e, const kiln_buffer *w, int64_t groups, int64_t gstride,
                               int64_t R, int64_t K, int64_t rs, int64_t ks, int64_t U) {
  if (!w || kiln_buffer_get_kind(w) != KILN_BUFFER_WEIGHT || R <= 0 || K <= 0 || groups <= 0 ||
      U <= 0)
    return NULL;
  const float *src = kiln_buffer_data(w);
  const kiln_type *t = kiln_buffer_type(w);
  if (!src || t->elem != KILN_F32 || !LLVMIsAGlobalVariable(kcpu_addr(e, w)))
    return NULL;
  int64_t RP = (R + U - 1) / U * U, one = kcpu_prepacked_size(R, K, U);
  size_t bytes = (size_t)(groups * one) * sizeof(float);
  float *dst = calloc(1, bytes);
  if (!dst)
    return NULL;
  for (int64_t g = 0; g < groups; g++) {
    const float *sg = src + g * gstride;
    float *dg = dst + g * one;
    for (int64_t k0 = 0; k0 < K; k0 += KCPU_KC) {
      int64_t kc = K - k0 < KCPU_KC ? K - k0 : KCPU_KC;
      float *blk = dg + k0 * RP;
      for (int64_t i = 0; i < R; i++) {
        float *panel = blk + (i / U) * U * kc + i % U;
        for (int64_t k = 0; k < kc; k++)
          panel[k * U] = sg[i * rs + (k0 + k) * ks];
      }
    }
  }
  LLVMContextRef ctx = kcpu_context(e);
  LLVMValueRef init = LLVMConstStringInContext2(ctx, (const char *)dst, bytes, 1);
  free(dst);
  LLVMValueRef gv = LLVMAddGlobal(kcpu_module(e), LLVMTypeOf(init), "kcpu.prepacked");
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetAlignment(gv, 64);
  return gv;
}

bool kcpu_perf_act(const kiln_attrs *a, int64_t *act) {
  kiln_fused_act fa;
  kiln_status st = kiln_fused_act_decode("cpu", a, &fa);
  *act = KCPU_ACT_NONE;
  if (st) {
    kiln_status_free(st);
    return false;
  }
  if (fa.kind == KILN_FUSED_ACT_RELU)
    *act = KCPU_ACT_RELU;
  return fa.kind == KILN_FUSED_ACT_NONE || fa.kind == KILN_FUSED_ACT_RELU;
}
