/* plugins/cpu/emit_linalg.c: MatMul, Gemm, Det and Einsum. f32 MatMul
 * and Gemm are calls to the kernel library's packed SGEMM
 * (kernels/linalg_gemm.c), other types go to the generic kernels of
 * kernels/linalg.c, as do Det and Einsum (the equation, decoded by
 * kiln_einsum_decode, becomes per-label strides here). Batch broadcasting
 * is resolved here into per-batch offset tables; a batched A against an
 * unbatched B becomes one tall GEMM. A constant B is packed here, once (emit_perf_pack.c), and a
 * fused activation (`activation`) rides on the GEMM epilogue. */
#include "emit_util.h"

#include <kiln/ops.h>
#include <stdlib.h>
#include <string.h>

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
  float act_a, act_b;
  if (!kcpu_perf_act(kiln_instr_attrs(in), &act, &act_a, &act_b) ||
      (act != KCPU_ACT_NONE && a->elem != KILN_F32))
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
                         bpk ? kcpu_e_null(e) : kcpu_addr(e, kcpu_i_in(in, 1)),
                         bpk ? bpk : kcpu_e_null(e),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, act),
                         kcpu_f32(e, act_a),
                         kcpu_f32(e, act_b),
                         kcpu_i64(e, lanes),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_matmul_ex", args, 15);
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
  float act_a, act_b;
  if (!kcpu_perf_act(at, &act, &act_a, &act_b) || (act != KCPU_ACT_NONE && a->elem != KILN_F32))
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
                         bpk ? kcpu_e_null(e) : kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_i64(e, tb),
                         bpk ? bpk : kcpu_e_null(e),
                         kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                         kcpu_i64(e, c_rs),
                         kcpu_i64(e, c_cs),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, act),
                         kcpu_f32(e, act_a),
                         kcpu_f32(e, act_b),
                         kcpu_i64(e, lanes),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_gemm_ex", args, 19);
}

/* ---- Det ---- */
bool kcpu_supports_Det(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  return x && x->rank >= 2 && x->dims[x->rank - 1] == x->dims[x->rank - 2] &&
         (x->elem == KILN_F32 || x->elem == KILN_F64 || x->elem == KILN_F16 ||
          x->elem == KILN_BF16) &&
         kcpu_n_all_elem(n, x->elem);
}

kiln_status kcpu_emit_Det(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  int64_t n = x->dims[x->rank - 1];
  LLVMValueRef args[] = {kcpu_i64(e, x->elem), kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, kcpu_e_prod(x->dims, 0, x->rank - 2)), kcpu_i64(e, n)};
  return kcpu_e_call(e, in, "kcpu_k_det", args, 5);
}

/* ---- Einsum ---- */
#define KCPU_EIN_MAXIN 3

/* The equation decoded (kiln_einsum_decode) for these types, and a result
 * of out_rank dims. */
static bool kcpu_ein_parse(const kiln_attrs *attrs, const kiln_type *const *ins, uint32_t n_in,
                           uint32_t out_rank, kiln_einsum *p) {
  if (n_in == 0 || n_in > KCPU_EIN_MAXIN)
    return false;
  kiln_status s = kiln_einsum_decode(attrs, ins, n_in, p);
  if (s) {
    kiln_status_free(s);
    return false;
  }
  return p->out_rank == out_rank;
}

static bool kcpu_ein_types(const kiln_node *n, const kiln_type **ins, uint32_t *n_in) {
  *n_in = kcpu_n_inputs(n);
  if (*n_in == 0 || *n_in > KCPU_EIN_MAXIN)
    return false;
  for (uint32_t j = 0; j < *n_in; j++) {
    ins[j] = kcpu_n_in(n, j);
    if (!kcpu_e_plain(ins[j]))
      return false;
  }
  return true;
}

bool kcpu_supports_Einsum(const kiln_node *n) {
  const kiln_type *ins[KCPU_EIN_MAXIN], *y = kcpu_n_out(n, 0);
  uint32_t n_in;
  kiln_einsum p;
  return kcpu_ein_types(n, ins, &n_in) && kcpu_e_plain(y) && kcpu_e_numeric(y->elem) &&
         kcpu_n_all_elem(n, y->elem) && kcpu_ein_parse(kiln_node_attrs(n), ins, n_in, y->rank, &p);
}

kiln_status kcpu_emit_Einsum(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *ins[KCPU_EIN_MAXIN], *y = kcpu_i_out_type(in, 0);
  uint32_t n_in = kcpu_i_inputs(in);
  if (n_in == 0 || n_in > KCPU_EIN_MAXIN)
    return kcpu_e_fail(in, "%u inputs (at most %d)", n_in, KCPU_EIN_MAXIN);
  for (uint32_t j = 0; j < n_in; j++)
    ins[j] = kcpu_i_in_type(in, j);
  kiln_einsum p;
  if (!kcpu_ein_parse(kiln_instr_attrs(in), ins, n_in, y->rank, &p))
    return kcpu_e_fail(in, "cannot parse the equation");
  /* labels: output ones in output order, then the summed ones */
  int order[KILN_EINSUM_MAX_LABELS], pos[KILN_EINSUM_MAX_LABELS];
  int64_t ldims[KILN_EINSUM_MAX_LABELS];
  uint32_t nl = 0;
  for (int l = 0; l < KILN_EINSUM_MAX_LABELS; l++) {
    pos[l] = -1;
    ldims[l] = 1;
  }
  for (uint32_t d = 0; d < p.out_rank; d++) {
    int l = p.out_label[d];
    pos[l] = (int)nl;
    order[nl++] = l;
    ldims[pos[l]] = y->dims[d];
  }
  uint32_t n_out = nl;
  for (uint32_t j = 0; j < n_in; j++)
    for (uint32_t d = 0; d < p.rank[j]; d++) {
      int l = p.label[j][d];
      if (pos[l] < 0) {
        pos[l] = (int)nl;
        order[nl++] = l;
        ldims[pos[l]] = 1;
      }
      if (ins[j]->dims[d] != 1)
        ldims[pos[l]] = ins[j]->dims[d];
    }
  (void)order;
  int64_t st[KCPU_EIN_MAXIN * KILN_EINSUM_MAX_LABELS] = {0};
  for (uint32_t j = 0; j < n_in; j++) {
    int64_t acc = 1;
    for (int d = (int)p.rank[j] - 1; d >= 0; d--) {
      if (ins[j]->dims[d] != 1)
        st[j * nl + (uint32_t)pos[p.label[j][d]]] += acc;
      acc *= ins[j]->dims[d];
    }
  }
  if (nl > 32)
    return kcpu_e_fail(in, "%u labels (at most 32)", nl);
  LLVMValueRef args[] = {kcpu_i64(e, y->elem),
                         kcpu_i64(e, n_in),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         n_in > 1 ? kcpu_addr(e, kcpu_i_in(in, 1)) : kcpu_e_null(e),
                         n_in > 2 ? kcpu_addr(e, kcpu_i_in(in, 2)) : kcpu_e_null(e),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, nl),
                         kcpu_i64(e, n_out),
                         kcpu_i64_array(e, ldims, nl ? nl : 1),
                         kcpu_i64_array(e, st, nl ? n_in * nl : 1)};
  return kcpu_e_call(e, in, "kcpu_k_einsum", args, 10);
}
