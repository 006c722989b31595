/* plugins/cpu/emit_perf_pack.c: packing constant GEMM operands (filters,
 * MatMul / Gemm weights) once, at compile time, into the panel layout the
 * kernel library's GEMM engine reads (kernels/gemm_impl.h), so that a run
 * never repacks them: for small-N products (late conv layers, batch-1
 * networks) that packing costs as much as the arithmetic. Also the fused
 * activation the GEMM epilogue applies (kiln_fused_act_decode). The packed
 * copy replaces the original: the emitters then pass no pointer to the
 * unpacked weight, so the executable can drop it (plugin.c). */
#include "emit_perf.h"

#include <kiln/ops.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "gemm_impl.h"

void kcpu_pack_run(const kcpu_pack_job *j) {
  int64_t R = j->R, K = j->K, U = j->U, rs = j->rs, ks = j->ks;
  int64_t RP = (R + U - 1) / U * U, one = kcpu_prepacked_size(R, K, U);
  for (int64_t g = 0; g < j->groups; g++) {
    const float *sg = j->src + g * j->gstride;
    float *dg = j->dst + g * one;
    for (int64_t k0 = 0; k0 < K; k0 += KCPU_KC) {
      int64_t kc = K - k0 < KCPU_KC ? K - k0 : KCPU_KC;
      float *blk = dg + k0 * RP;
      /* Panel ib holds rows ib..ib+U-1, kc steps of U floats; rows past R
       * are zero. Read along whichever index is contiguous in the source:
       * a MatMul weight [K, N] read a column at a time strides by a whole
       * row and runs at a tenth of the speed. */
      for (int64_t ib = 0; ib < RP; ib += U) {
        int64_t n = R - ib < U ? R - ib : U;
        float *panel = blk + ib * kc;
        if (rs <= ks) {
          for (int64_t k = 0; k < kc; k++) {
            const float *row = sg + (k0 + k) * ks + ib * rs;
            float *p = panel + k * U;
            if (rs == 1)
              memcpy(p, row, (size_t)n * sizeof *p);
            else
              for (int64_t q = 0; q < n; q++)
                p[q] = row[q * rs];
            for (int64_t q = n; q < U; q++)
              p[q] = 0;
          }
        } else {
          for (int64_t q = 0; q < U; q++) {
            const float *col = sg + (ib + q) * rs + k0 * ks;
            for (int64_t k = 0; k < kc; k++)
              panel[k * U + q] = q < n ? col[k * ks] : 0;
          }
        }
      }
    }
  }
}

void kcpu_pack_plan(kcpu_pack_jobs *jobs, const bool *read) {
  for (uint32_t i = 0; i < jobs->n; i++) {
    const kiln_buffer *w = jobs->v[i].w;
    bool last = true;
    for (uint32_t k = i + 1; k < jobs->n && last; k++)
      last = jobs->v[k].w != w;
    jobs->v[i].release = last && !read[kiln_buffer_id(w)];
  }
}

LLVMValueRef kcpu_perf_prepack(kcpu_emit *e, const kiln_buffer *w, int64_t groups, int64_t gstride,
                               int64_t R, int64_t K, int64_t rs, int64_t ks, int64_t U) {
  if (!w || kiln_buffer_get_kind(w) != KILN_BUFFER_WEIGHT || R <= 0 || K <= 0 || groups <= 0 ||
      U <= 0)
    return NULL;
  const float *src = kiln_buffer_data(w);
  const kiln_type *t = kiln_buffer_type(w);
  if (!src || t->elem != KILN_F32)
    return NULL;
  int64_t one = kcpu_prepacked_size(R, K, U);
  size_t bytes = (size_t)(groups * one) * sizeof(float);
  /* Every float of dst is written by kcpu_pack_run (padding rows as
   * zeros), now or in the deferred job. */
  float *dst = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!dst)
    return NULL;
  kcpu_pack_job job = {src, dst, groups, gstride, R, K, rs, ks, U, w, false};
  kcpu_pack_jobs *q = kcpu_pack_queue(e);
  if (q && q->n == q->cap) {
    uint32_t nc = q->cap ? q->cap * 2 : 64;
    kcpu_pack_job *v = realloc(q->v, nc * sizeof *v);
    if (!v) {
      free(dst);
      return NULL;
    }
    q->v = v;
    q->cap = nc;
  }
  LLVMValueRef at = kcpu_packed_weight(e, dst); /* dst is the table's now */
  if (!at)
    return NULL;
  if (q)
    q->v[q->n++] = job;
  else
    kcpu_pack_run(&job);
  kcpu_weight_packed(e, w);
  return at;
}

bool kcpu_perf_act(const kiln_attrs *a, int64_t *act, float *act_a, float *act_b) {
  kiln_fused_act_params fa;
  kiln_status st = kiln_fused_act_decode_params("cpu", a, &fa);
  *act = KCPU_ACT_NONE;
  *act_a = (float)fa.alpha;
  *act_b = (float)fa.beta;
  if (st) {
    kiln_status_free(st);
    return false;
  }
  switch (fa.kind) {
  case KILN_FUSED_ACT_NONE:
    return true;
  case KILN_FUSED_ACT_RELU:
    *act = KCPU_ACT_RELU;
    return true;
  case KILN_FUSED_ACT_GELU:
    *act = KCPU_ACT_GELU;
    return true;
  case KILN_FUSED_ACT_CLIP:
    *act = KCPU_ACT_CLIP;
    return true;
  case KILN_FUSED_ACT_HARD_SIGMOID:
    *act = KCPU_ACT_HARD_SIGMOID;
    return true;
  case KILN_FUSED_ACT_HARD_SWISH:
    *act = KCPU_ACT_HARD_SWISH;
    return true;
  case KILN_FUSED_ACT_SWISH:
    *act = KCPU_ACT_SWISH;
    return true;
  default: /* LeakyRelu, Sigmoid, Tanh: not in the epilogue */
    return false;
  }
}
