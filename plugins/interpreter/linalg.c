/* plugins/interpreter/linalg.c: MatMul (numpy batch broadcasting), Gemm,
 * Einsum (direct summation), Det (Gaussian elimination) and
 * ScaledDotProductAttention (row by row, in double). MatMulInteger
 * and QLinearMatMul, of the quant family, are here too: they are MatMul's
 * batched walk with another cell function. Floats accumulate in double,
 * integers in 64 bits (wrapping), then are stored in the result type. */
#include "kernel.h"

#include <kiln/ops.h>
#include <kiln/ops_ref.h>

#include <math.h>
#include <string.h>

/* The batched-matrix layout of one MatMul operand. A 1-D operand is a row
 * (A) or column (B) vector whose unit dimension is not in the result. */
typedef struct mv_mm {
  uint32_t batch_rank;
  int64_t batch[KILN_MAX_RANK];
  int64_t rows, cols;
} mv_mm;

static void mv_mm_shape(const kiln_type *t, bool is_a, mv_mm *m) {
  if (t->rank == 1) {
    m->batch_rank = 0;
    m->rows = is_a ? 1 : t->dims[0];
    m->cols = is_a ? t->dims[0] : 1;
    return;
  }
  m->batch_rank = t->rank - 2;
  for (uint32_t k = 0; k < m->batch_rank; k++)
    m->batch[k] = t->dims[k];
  m->rows = t->dims[t->rank - 2];
  m->cols = t->dims[t->rank - 1];
}

/* Shared by MatMul, MatMulInteger and QLinearMatMul: walk every (batch, m,
 * n) result cell and hand the operand offsets to `cell`. */
typedef void (*mv_cell_fn)(void *ctx, int64_t out_i, int64_t a_off, int64_t b_off, int64_t m,
                           int64_t n, int64_t K, int64_t N);

static kiln_status mv_matmul_walk(const char *k, const interp_tensor *A, const interp_tensor *B,
                                  interp_tensor *Y, mv_cell_fn cell, void *ctx) {
  if (A->type.rank < 1 || B->type.rank < 1)
    return interp_mv_err(KILN_INVALID_ARGUMENT, k, "operands must have rank >= 1");
  mv_mm a, b;
  mv_mm_shape(&A->type, true, &a);
  mv_mm_shape(&B->type, false, &b);
  if (a.cols != b.rows)
    return interp_mv_err(KILN_INVALID_ARGUMENT, k, "inner dimensions differ (%lld vs %lld)",
                         (long long)a.cols, (long long)b.rows);
  int64_t M = a.rows, K = a.cols, N = b.cols;
  uint32_t br = a.batch_rank > b.batch_rank ? a.batch_rank : b.batch_rank;
  int64_t bdims[KILN_MAX_RANK];
  for (uint32_t i = 0; i < br; i++) {
    int64_t da = i + a.batch_rank >= br ? a.batch[i + a.batch_rank - br] : 1;
    int64_t db = i + b.batch_rank >= br ? b.batch[i + b.batch_rank - br] : 1;
    if (da != db && da != 1 && db != 1)
      return interp_mv_err(KILN_INVALID_ARGUMENT, k, "batch dimensions %lld and %lld differ",
                           (long long)da, (long long)db);
    bdims[i] = da == 1 ? db : da;
  }
  int64_t nb = interp_mv_prod(bdims, 0, br);
  if (interp_mv_numel(Y) != nb * M * N)
    return interp_mv_err(KILN_INVALID_ARGUMENT, k, "result has %lld elements, expected %lld",
                         (long long)interp_mv_numel(Y), (long long)(nb * M * N));
  int64_t c[KILN_MAX_RANK];
  for (int64_t bi = 0; bi < nb; bi++) {
    interp_mv_unravel(bdims, br, bi, c);
    int64_t ab = interp_mv_bcast(bdims, br, a.batch, a.batch_rank, c);
    int64_t bb = interp_mv_bcast(bdims, br, b.batch, b.batch_rank, c);
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++)
        cell(ctx, (bi * M + m) * N + n, ab * M * K + m * K, bb * K * N + n, m, n, K, N);
  }
  return NULL;
}

typedef struct mv_mm_ctx {
  const interp_tensor *a, *b, *azp, *bzp, *as, *bs, *ys, *yzp;
  interp_tensor *y;
} mv_mm_ctx;

static void mv_cell_plain(void *vc, int64_t oi, int64_t ao, int64_t bo, int64_t m, int64_t n,
                          int64_t K, int64_t N) {
  mv_mm_ctx *c = vc;
  (void)m, (void)n;
  if (interp_mv_class(c->y->type.elem) == INTERP_MV_F) {
    double acc = 0;
    for (int64_t k = 0; k < K; k++)
      acc += interp_load_f(c->a, ao + k) * interp_load_f(c->b, bo + k * N);
    interp_store_f(c->y, oi, acc);
  } else {
    uint64_t acc = 0;
    for (int64_t k = 0; k < K; k++)
      acc += interp_mv_load_bits(c->a, ao + k) * interp_mv_load_bits(c->b, bo + k * N);
    interp_mv_store_bits(c->y, oi, acc);
  }
}

kiln_status interp_MatMul(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  mv_mm_ctx c = {.a = &ins[0], .b = &ins[1], .y = &outs[0]};
  KILN_TRY(mv_matmul_walk("MatMul", &ins[0], &ins[1], &outs[0], mv_cell_plain, &c));
  return interp_apply_activation("MatMul", attrs, &outs[0]);
}

/* A zero point / scale that is a scalar or one entry per row (A) or column
 * (B); absent means 0. */
static int64_t mv_qparam_i(const interp_tensor *t, int64_t i) {
  if (!t)
    return 0;
  return interp_mv_load_int(t, interp_mv_numel(t) == 1 ? 0 : i);
}

static int64_t mv_int_dot(const mv_mm_ctx *c, int64_t ao, int64_t bo, int64_t m, int64_t n,
                          int64_t K, int64_t N) {
  int64_t za = mv_qparam_i(c->azp, m), zb = mv_qparam_i(c->bzp, n), acc = 0;
  for (int64_t k = 0; k < K; k++)
    acc += (interp_mv_load_int(c->a, ao + k) - za) * (interp_mv_load_int(c->b, bo + k * N) - zb);
  return acc;
}

static void mv_cell_integer(void *vc, int64_t oi, int64_t ao, int64_t bo, int64_t m, int64_t n,
                            int64_t K, int64_t N) {
  mv_mm_ctx *c = vc;
  interp_mv_store_bits(c->y, oi, (uint64_t)mv_int_dot(c, ao, bo, m, n, K, N));
}

kiln_status interp_MatMulInteger(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                 const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs;
  mv_mm_ctx c = {.a = &ins[0],
                 .b = &ins[1],
                 .azp = interp_mv_opt(ins, n_ins, 2),
                 .bzp = interp_mv_opt(ins, n_ins, 3),
                 .y = &outs[0]};
  return mv_matmul_walk("MatMulInteger", &ins[0], &ins[1], &outs[0], mv_cell_integer, &c);
}

static void mv_cell_qlinear(void *vc, int64_t oi, int64_t ao, int64_t bo, int64_t m, int64_t n,
                            int64_t K, int64_t N) {
  mv_mm_ctx *c = vc;
  int64_t acc = mv_int_dot(c, ao, bo, m, n, K, N);
  double s = interp_mv_requant_multiplier(c->as, interp_mv_numel(c->as) == 1 ? 0 : m, c->bs,
                                          interp_mv_numel(c->bs) == 1 ? 0 : n, c->ys);
  interp_mv_store_bits(c->y, oi,
                       (uint64_t)interp_mv_requantize(c->y->type.elem, acc, s,
                                                      mv_qparam_i(c->yzp, 0)));
}

kiln_status interp_QLinearMatMul(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                 const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs;
  if (n_ins < 8)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "QLinearMatMul", "needs 8 inputs, got %u", n_ins);
  mv_mm_ctx c = {.a = &ins[0],
                 .as = &ins[1],
                 .azp = interp_mv_opt(ins, n_ins, 2),
                 .b = &ins[3],
                 .bs = &ins[4],
                 .bzp = interp_mv_opt(ins, n_ins, 5),
                 .ys = &ins[6],
                 .yzp = interp_mv_opt(ins, n_ins, 7),
                 .y = &outs[0]};
  return mv_matmul_walk("QLinearMatMul", &ins[0], &ins[3], &outs[0], mv_cell_qlinear, &c);
}

kiln_status interp_Gemm(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                        const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs;
  const interp_tensor *A = &ins[0], *B = &ins[1], *C = interp_mv_opt(ins, n_ins, 2);
  if (A->type.rank != 2 || B->type.rank != 2)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Gemm", "A and B must be 2-D");
  bool ta = kiln_attrs_int_or(attrs, "transA", 0) != 0;
  bool tb = kiln_attrs_int_or(attrs, "transB", 0) != 0;
  double alpha = kiln_attrs_float_or(attrs, "alpha", 1.0);
  double beta = kiln_attrs_float_or(attrs, "beta", 1.0);
  int64_t M = A->type.dims[ta ? 1 : 0], K = A->type.dims[ta ? 0 : 1];
  int64_t N = B->type.dims[tb ? 0 : 1];
  if (B->type.dims[tb ? 1 : 0] != K)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Gemm", "inner dimensions differ");
  if (interp_mv_numel(&outs[0]) != M * N)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Gemm", "result size mismatch");
  int64_t ydims[2] = {M, N};
  bool isf = interp_mv_class(outs[0].type.elem) == INTERP_MV_F;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      int64_t c2[2] = {m, n}, ci = 0;
      if (C)
        ci = interp_mv_bcast(ydims, 2, C->type.dims, C->type.rank, c2);
      if (isf) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc += interp_load_f(A, ta ? k * M + m : m * K + k) *
                 interp_load_f(B, tb ? n * K + k : k * N + n);
        acc *= alpha;
        if (C)
          acc += beta * interp_load_f(C, ci);
        interp_store_f(&outs[0], m * N + n, acc);
      } else {
        uint64_t acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc += interp_mv_load_bits(A, ta ? k * M + m : m * K + k) *
                 interp_mv_load_bits(B, tb ? n * K + k : k * N + n);
        acc *= (uint64_t)(int64_t)alpha;
        if (C)
          acc += (uint64_t)(int64_t)beta * interp_mv_load_bits(C, ci);
        interp_mv_store_bits(&outs[0], m * N + n, acc);
      }
    }
  return interp_apply_activation("Gemm", attrs, &outs[0]);
}

/* Einsum by direct summation over every label assignment, with the
 * equation decoded by kiln_einsum_decode: explicit ("ij,jk->ik") and
 * implicit ("ij,jk") outputs, repeated labels (diagonals), and "..." with
 * numpy broadcasting of the ellipsis dimensions. */
kiln_status interp_Einsum(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs;
  if (n_ins > KILN_EINSUM_MAX_INPUTS)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "%u inputs (at most %d)", n_ins,
                         KILN_EINSUM_MAX_INPUTS);
  const kiln_type *tin[KILN_EINSUM_MAX_INPUTS];
  for (uint32_t t = 0; t < n_ins; t++)
    tin[t] = &ins[t].type;
  kiln_einsum es;
  KILN_TRY(kiln_einsum_decode(attrs, tin, n_ins, &es));
  const kiln_type *ot = &outs[0].type;
  uint32_t on = es.out_rank, ns = es.n_summed;
  if (on != ot->rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "output has %u labels, result rank %u",
                         on, ot->rank);
  const uint8_t *olab = es.out_label, *sum_lab = es.summed;
  const int64_t *size = es.size;
  int64_t sum_dims[KILN_EINSUM_MAX_LABELS];
  for (uint32_t k = 0; k < ns; k++)
    sum_dims[k] = size[sum_lab[k]];
  /* effective stride of each label in each input (0 where broadcast) */
  int64_t stride[KILN_EINSUM_MAX_INPUTS][KILN_EINSUM_MAX_LABELS];
  for (uint32_t t = 0; t < n_ins; t++) {
    int64_t st[KILN_MAX_RANK];
    interp_mv_strides(ins[t].type.dims, ins[t].type.rank, st);
    for (uint32_t l = 0; l < es.n_labels; l++)
      stride[t][l] = 0;
    for (uint32_t d = 0; d < es.rank[t]; d++)
      if (ins[t].type.dims[d] != 1 || size[es.label[t][d]] == 1)
        stride[t][es.label[t][d]] += st[d];
  }
  int64_t nsum = 1;
  for (uint32_t k = 0; k < ns; k++)
    nsum *= sum_dims[k];
  bool isf = interp_mv_class(ot->elem) == INTERP_MV_F;
  int64_t n = interp_mv_numel(&outs[0]), coord[KILN_EINSUM_MAX_LABELS] = {0};
  int64_t oc[KILN_MAX_RANK], sc[KILN_EINSUM_MAX_LABELS];
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(ot->dims, ot->rank, o, oc);
    for (uint32_t k = 0; k < on; k++)
      coord[olab[k]] = oc[k];
    double facc = 0;
    uint64_t iacc = 0;
    for (int64_t s = 0; s < nsum; s++) {
      interp_mv_unravel(sum_dims, ns, s, sc);
      for (uint32_t k = 0; k < ns; k++)
        coord[sum_lab[k]] = sc[k];
      double fp = 1;
      uint64_t ip = 1;
      for (uint32_t t = 0; t < n_ins; t++) {
        int64_t off = 0;
        for (uint32_t l = 0; l < es.n_labels; l++)
          off += coord[l] * stride[t][l];
        if (isf)
          fp *= interp_load_f(&ins[t], off);
        else
          ip *= interp_mv_load_bits(&ins[t], off);
      }
      facc += fp;
      iacc += ip;
    }
    if (isf)
      interp_store_f(&outs[0], o, facc);
    else
      interp_mv_store_bits(&outs[0], o, iacc);
  }
  return NULL;
}

/* Det: Gaussian elimination with partial pivoting in double, per matrix of
 * the stack; the sign flips with every row swap. */
INTERP_KERNEL(Det) {
  (void)attrs;
  INTERP_ARITY(Det, 1, 1);
  const interp_tensor *x = &ins[0];
  KILN_TRY(interp_need_float("Det", x));
  uint32_t r = x->type.rank;
  if (r < 2 || x->type.dims[r - 1] != x->type.dims[r - 2])
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter Det: input is not a stack of square matrices");
  int64_t m = x->type.dims[r - 1], count = interp_numel(&outs[0]);
  double *a;
  KILN_TRY(interp_scratch("Det", m * m, sizeof *a, (void **)&a));
  for (int64_t b = 0; b < count; b++) {
    for (int64_t i = 0; i < m * m; i++)
      a[i] = interp_load_f(x, b * m * m + i);
    double det = kiln_ref_det(a, m);
    interp_store_f(&outs[0], b, det);
  }
  free(a);
  return NULL;
}

/* Element strides, sizes and first element of an input read as
 * Transpose(input, perm), after Gather(input, index, axis) where the
 * gather attribute [axis, index] is present (a 5-D input): logical axis j
 * walks axis perm[j] of the gathered 4-D tensor. */
static void sdpa_in_strides(const interp_tensor *t, const kiln_attrs *attrs, const char *perm_name,
                            const char *gather_name, int64_t *st, int64_t *dims, int64_t *off) {
  int64_t rs[KILN_MAX_RANK], gs[4], gd[4], perm[4] = {0, 1, 2, 3};
  const kiln_attr *a = kiln_attrs_find(attrs, perm_name);
  if (a && kiln_attr_ints(a) && kiln_attr_len(a) == 4)
    memcpy(perm, kiln_attr_ints(a), sizeof perm);
  const kiln_attr *g = kiln_attrs_find(attrs, gather_name);
  int64_t axis = -1, r = t->type.rank;
  *off = 0;
  kiln_type_strides(&t->type, rs);
  if (g && kiln_attr_ints(g) && kiln_attr_len(g) == 2) {
    axis = kiln_attr_ints(g)[0];
    *off = kiln_attr_ints(g)[1] * rs[axis];
  }
  for (int64_t j = 0, k = 0; j < r && k < 4; j++)
    if (j != axis) {
      gs[k] = rs[j];
      gd[k++] = t->type.dims[j];
    }
  for (int j = 0; j < 4; j++) {
    st[j] = gs[perm[j]];
    dims[j] = gd[perm[j]];
  }
}

kiln_status interp_ScaledDotProductAttention(const kiln_attrs *attrs, interp_tensor *outs,
                                             uint32_t n_outs, const interp_tensor *ins,
                                             uint32_t n_ins) {
  (void)n_outs;
  const interp_tensor *M = interp_mv_opt(ins, n_ins, 3);
  int64_t qs[4], ks[4], vs[4], os[4], ms[4] = {0, 0, 0, 0}, qd[4], kd[4], vd[4], qo, ko, vo;
  sdpa_in_strides(&ins[0], attrs, "q_perm", "q_gather", qs, qd, &qo);
  sdpa_in_strides(&ins[1], attrs, "k_perm", "k_gather", ks, kd, &ko);
  sdpa_in_strides(&ins[2], attrs, "v_perm", "v_gather", vs, vd, &vo);
  /* the result is Transpose(O, out_perm): O's axis out_perm[j] walks result axis j */
  int64_t rs[4], operm[4] = {0, 1, 2, 3};
  const kiln_attr *pa = kiln_attrs_find(attrs, "out_perm");
  if (pa && kiln_attr_ints(pa) && kiln_attr_len(pa) == 4)
    memcpy(operm, kiln_attr_ints(pa), sizeof operm);
  rs[3] = 1;
  for (int j = 2; j >= 0; j--)
    rs[j] = rs[j + 1] * outs[0].type.dims[j + 1];
  for (int j = 0; j < 4; j++)
    os[operm[j]] = rs[j];
  int64_t B = qd[0], H = qd[1], Sq = qd[2], D = qd[3], Sk = kd[2], Dv = vd[3];
  if (M) {
    uint32_t r = M->type.rank;
    int64_t st = 1;
    for (int a = 3; a >= 4 - (int)r; a--) {
      int64_t dim = M->type.dims[a - (4 - (int)r)];
      ms[a] = dim == 1 ? 0 : st;
      st *= dim;
    }
  }
  double scale = kiln_attrs_float_or(attrs, "scale", 1.0 / sqrt((double)D));
  double fill = kiln_attrs_float_or(attrs, "mask_fill", -INFINITY);
  bool bmask = M && M->type.elem == KILN_BOOL;
  double *p = malloc(sizeof(double) * (size_t)(Sk ? Sk : 1));
  if (!p)
    return interp_mv_err(KILN_OUT_OF_MEMORY, "ScaledDotProductAttention", "out of memory");
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t i = 0; i < Sq; i++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < Sk; j++) {
          double acc = 0;
          for (int64_t d = 0; d < D; d++)
            acc += interp_load_f(&ins[0], qo + b * qs[0] + h * qs[1] + i * qs[2] + d * qs[3]) *
                   interp_load_f(&ins[1], ko + b * ks[0] + h * ks[1] + j * ks[2] + d * ks[3]);
          acc *= scale;
          if (M) {
            double m = interp_load_f(M, b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]);
            acc = bmask ? (m != 0 ? acc : fill) : acc + m;
          }
          p[j] = acc;
          mx = acc > mx ? acc : mx;
        }
        /* a row of -inf gives NaN, as the lowered ReduceMax, Sub, Exp does */
        for (int64_t j = 0; j < Sk; j++)
          sum += p[j] = exp(p[j] - mx);
        for (int64_t e = 0; e < Dv; e++) {
          double acc = 0;
          for (int64_t j = 0; j < Sk; j++)
            acc += p[j] / sum *
                   interp_load_f(&ins[2], vo + b * vs[0] + h * vs[1] + j * vs[2] + e * vs[3]);
          interp_store_f(&outs[0], b * os[0] + h * os[1] + i * os[2] + e * os[3], acc);
        }
      }
  free(p);
  return NULL;
}
