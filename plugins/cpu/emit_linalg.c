/* plugins/cpu/emit_linalg.c: MatMul and Gemm (f32) as calls to the
 * kernel library's packed SGEMM. Batch broadcasting is resolved here into
 * per-batch offset tables; a batched A against an unbatched B becomes one
 * tall GEMM. A constant B is packed here, once (emit_perf_pack.c), and a
 * fused Relu (`activation`) rides on the GEMM epilogue. */
#include "emit_util.h"

#include <stdlib.h>

#include "emit_perf.h"
#include "gemm_impl.h"

bool kcpu_supports_MatMul(const kiln_node *n) {
  const kiln_type *a = kcpu_n_in(n, 0), *b = kcpu_n_in(n, 1);
  if (!a || !b || a->rank < 1 || b->rank < 1)
    return false;
  kiln_elem el = a->elem;
  return el != KILN_BOOL && kcpu_n_all_elem(n, el);
}

kiln_status kcpu_emit_MatMul(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *a = kcpu_i_in_type(in, 0), *b = kcpu_i_in_type(in, 1);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  if (!a || !b || !y)
    return kcpu_e_fail(in, "needs A, B and Y");
  int64_t M = a->rank >= 2 ? a->dims[a->rank - 2] : 1, K = a->dims[a->rank - 1];
  int64_t N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
  int64_t Kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
  if (K != Kb)
    return kcpu_e_fail(in, "inner dimensions %lld and %lld differ", (long long)K, (long long)Kb);
  /* batch dims, right-aligned to the longer of the two */
  uint32_t ab = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0;
  uint32_t nb = ab > bb ? ab : bb;
  int64_t bd[KILN_MAX_RANK], ad[KILN_MAX_RANK], bdd[KILN_MAX_RANK], batch = 1;
  for (uint32_t i = 0; i < nb; i++) {
    ad[i] = i + ab >= nb ? a->dims[i + ab - nb] : 1;
    bdd[i] = i + bb >= nb ? b->dims[i + bb - nb] : 1;
    bd[i] = ad[i] > bdd[i] ? ad[i] : bdd[i];
    batch *= bd[i];
  }
  int64_t a_batch = kcpu_e_prod(ad, 0, nb), b_batch = kcpu_e_prod(bdd, 0, nb);
  LLVMValueRef aoff = kcpu_e_null(e), boff = kcpu_e_null(e);
  if (b_batch == 1 && a_batch == batch) {
    M *= batch; /* rows of all batches against one B */
    batch = 1;
  } else if (batch > 1 && !(a_batch == batch && b_batch == batch)) {
    int64_t *ao = malloc((size_t)batch * sizeof *ao), *bo = malloc((size_t)batch * sizeof *bo);
    if (!ao || !bo) {
      free(ao), free(bo);
      return kiln_status_make(KILN_OUT_OF_MEMORY, "cpu MatMul: offset tables");
    }
    int64_t idx[KILN_MAX_RANK] = {0};
    for (int64_t t = 0; t < batch; t++) {
      int64_t as = 0, bs = 0;
      for (uint32_t i = 0; i < nb; i++) {
        as = as * ad[i] + (ad[i] == 1 ? 0 : idx[i]);
        bs = bs * bdd[i] + (bdd[i] == 1 ? 0 : idx[i]);
      }
      ao[t] = as * M * K;
      bo[t] = bs * K * N;
      for (int i = (int)nb - 1; i >= 0; i--) {
        if (++idx[i] < bd[i])
          break;
        idx[i] = 0;
      }
    }
    aoff = kcpu_i64_array(e, ao, (uint32_t)batch);
    boff = kcpu_i64_array(e, bo, (uint32_t)batch);
    free(ao), free(bo);
  }
  int64_t act;
  if (!kcpu_perf_act(kiln_instr_attrs(in), &act) || (act != KCPU_ACT_NONE && a->elem != KILN_F32))
    return kcpu_e_fail(in, "activation '%s' is not supported",
                       kiln_attrs_string_or(kiln_instr_attrs(in), "activation", ""));
  if (a->elem != KILN_F32) {
    LLVMValueRef gargs[] = {kcpu_i64(e, a->elem),
                            kcpu_i64(e, batch),
                            aoff,
                            boff,
                            kcpu_i64(e, M),
                            kcpu_i64(e, N),
                            kcpu_i64(e, K),
                            kcpu_addr(e, kcpu_i_in(in, 0)),
                            kcpu_addr(e, kcpu_i_in(in, 1)),
                            kcpu_addr(e, kcpu_i_out(in, 0))};
    return kcpu_e_call(e, in, "kcpu_k_matmul_any", gargs, 10);
  }
  int64_t lanes = kcpu_vector_lanes(e);
  LLVMValueRef bpk = NULL;
  if (batch == 1) /* op(B)(k, n) = B[k*N + n] */
    bpk = kcpu_perf_prepack(e, kcpu_i_in(in, 1), 1, 0, N, K, 1, N, kcpu_gemm_nr(lanes));
  LLVMValueRef args[] = {kcpu_i64(e, batch),
                         aoff,
                         boff,
                         kcpu_i64(e, M),
                         kcpu_i64(e, N),
                         kcpu_i64(e, K),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         bpk ? bpk : kcpu_e_null(e),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, act),
                         kcpu_i64(e, lanes),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_matmul_ex", args, 13);
}

bool kcpu_supports_Gemm(const kiln_node *n) {
  const kiln_type *a = kcpu_n_in(n, 0), *b = kcpu_n_in(n, 1), *c = kcpu_n_in(n, 2);
  return a && b && a->rank == 2 && b->rank == 2 && (!c || c->rank <= 2) &&
         (kcpu_n_all_elem(n, KILN_F32) || kcpu_n_all_elem(n, KILN_F64) ||
          kcpu_n_all_elem(n, KILN_F16) || kcpu_n_all_elem(n, KILN_BF16));
}

kiln_status kcpu_emit_Gemm(kcpu_emit *e, const kiln_instr *in) {
  const kiln_attrs *at = kiln_instr_attrs(in);
  const kiln_type *a = kcpu_i_in_type(in, 0), *c = kcpu_i_in_type(in, 2);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  if (!a || !y || y->rank != 2)
    return kcpu_e_fail(in, "needs 2-D A and Y");
  int64_t ta = kiln_attrs_int_or(at, "transA", 0) != 0,
          tb = kiln_attrs_int_or(at, "transB", 0) != 0;
  int64_t M = y->dims[0], N = y->dims[1], K = ta ? a->dims[0] : a->dims[1];
  int64_t c_rs = 0, c_cs = 0;
  if (c) {
    int64_t cm = c->rank == 2 ? c->dims[0] : 1, cn = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
    c_rs = cm == 1 ? 0 : cn;
    c_cs = cn == 1 ? 0 : 1;
  }
  int64_t act;
  if (!kcpu_perf_act(at, &act) || (act != KCPU_ACT_NONE && a->elem != KILN_F32))
    return kcpu_e_fail(in, "activation '%s' is not supported",
                       kiln_attrs_string_or(at, "activation", ""));
  if (a->elem != KILN_F32) { /* f64 / f16: in double, one rounding */
    LLVMValueRef gargs[] = {kcpu_i64(e, a->elem),
                            kcpu_i64(e, M),
                            kcpu_i64(e, N),
                            kcpu_i64(e, K),
                            kcpu_f64(e, kiln_attrs_float_or(at, "alpha", 1.0)),
                            kcpu_f64(e, kiln_attrs_float_or(at, "beta", 1.0)),
                            kcpu_addr(e, kcpu_i_in(in, 0)),
                            kcpu_i64(e, ta),
                            kcpu_addr(e, kcpu_i_in(in, 1)),
                            kcpu_i64(e, tb),
                            kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                            kcpu_i64(e, c_rs),
                            kcpu_i64(e, c_cs),
                            kcpu_addr(e, kcpu_i_out(in, 0))};
    return kcpu_e_call(e, in, "kcpu_k_gemm_any", gargs, 14);
  }
  /* op(B)(k, n) = tb ? B[n*K + k] : B[k*N + n] */
  int64_t lanes = kcpu_vector_lanes(e);
  LLVMValueRef bpk = kcpu_perf_prepack(e, kcpu_i_in(in, 1), 1, 0, N, K, tb ? K : 1, tb ? 1 : N,
                                       kcpu_gemm_nr(lanes));
  LLVMValueRef args[] = {kcpu_i64(e, M),
                         kcpu_i64(e, N),
                         kcpu_i64(e, K),
                         kcpu_f32(e, (float)kiln_attrs_float_or(at, "alpha", 1.0)),
                         kcpu_f32(e, (float)kiln_attrs_float_or(at, "beta", 1.0)),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_i64(e, ta),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_i64(e, tb),
                         bpk ? bpk : kcpu_e_null(e),
                         kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                         kcpu_i64(e, c_rs),
                         kcpu_i64(e, c_cs),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, act),
                         kcpu_i64(e, lanes),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_gemm_ex", args, 17);
}
