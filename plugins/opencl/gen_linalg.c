/* plugins/opencl/gen_linalg.c: the linalg family. MatMul (numpy batching
 * and broadcasting, 1-D operands) and Gemm, as one local-memory tiled kernel
 * with register blocking (see tiled()). TS comes from the device's limits
 * (exec.c: tile_for).
 *
 * Det, the determinant of each square matrix of the batch by LU
 * decomposition with partial pivoting, one matrix per work item. The
 * matrix is copied into a private array (there is no scratch buffer), which
 * bounds n; the elimination is kiln_ref_det's (kiln/ops_ref.h, which the
 * interpreter runs) step for step, written out in OpenCL C, in double where the device has it, so results
 * agree to rounding. */
#include <stdio.h>
#include <string.h>

#include "ocl.h"

typedef struct mm_shape {
  int64_t M, N, K, batch;
  uint32_t nb; /* result batch rank */
  int64_t bd[KILN_MAX_RANK];
} mm_shape;

static void matrix_dims(const kiln_type *t, bool is_b, int64_t *rows, int64_t *cols) {
  if (t->rank == 1) {
    *rows = is_b ? t->dims[0] : 1;
    *cols = is_b ? 1 : t->dims[0];
  } else {
    *rows = t->dims[t->rank - 2];
    *cols = t->dims[t->rank - 1];
  }
}

/* Flat offset of A's (or B's) matrix for batch coordinates bb*. */
static void batch_offset(ocl_gen *g, const kiln_type *t, const mm_shape *s, int64_t mat) {
  uint32_t tb = t->rank >= 2 ? t->rank - 2 : 0;
  int64_t stride = mat;
  bool any = false;
  for (uint32_t i = tb; i-- > 0;) {
    if (t->dims[i] != 1) {
      ocl_sb_printf(g->src, "%sbb%u * %lldL", any ? " + " : "", s->nb - tb + i, (long long)stride);
      any = true;
    }
    stride *= t->dims[i];
  }
  if (!any)
    ocl_sb_printf(g->src, "0");
}

/* The tiled kernel: a TSxTS work group computes a (TS*RM)x(TS*RN) tile of
 * the result, staging TS-deep slices of A and B in local memory; each
 * item keeps an RMxRN block of accumulators in registers (rows ly + i*TS,
 * columns lx + j*TS), so every staged value is reused RM or RN times.
 * Each result still sums k in increasing order. a_idx / b_idx: index
 * expressions in (row, ka) and (kb, col) after the bases; the epilogue
 * writes p0 from acc, row, col and bt. */
static void tiled(ocl_gen *g, const mm_shape *s, const char *a_idx, const char *b_idx,
                  const kiln_type *a, const kiln_type *b, const char *epilogue) {
  uint32_t ts = g->matmul_tile;
  uint32_t rm = ocl_block_edge(s->M, ts), rn = ocl_block_edge(s->N, ts);
  uint64_t lmem = g->dev ? g->dev->local_mem : 0;
  while ((rm > 1 || rn > 1) &&
         ((uint64_t)ts * rm * (ts + 1) + (uint64_t)ts * (ts * rn + 1)) * 8 > lmem) {
    if (rm >= rn)
      rm /= 2;
    else
      rn /= 2;
  }
  const char *t = ocl_ctype(g->ops[0].type->elem);
  ocl_launch *l = g->launch;
  ocl_gen_begin(g);
  l->dims = 3;
  l->local[0] = l->local[1] = ts;
  l->local[2] = 1;
  l->global[0] = (size_t)((s->N + ts * rn - 1) / (ts * rn)) * ts;
  l->global[1] = (size_t)((s->M + ts * rm - 1) / (ts * rm)) * ts;
  l->global[2] = (size_t)s->batch;
  l->empty = s->M * s->N * s->batch == 0;
  ocl_sb_printf(g->src,
                "  int lx = get_local_id(0), ly = get_local_id(1);\n"
                "  long bt = get_global_id(2);\n"
                "  long row0 = (long)get_group_id(1) * %u, col0 = (long)get_group_id(0) * %u;\n"
                "  __local %s As[%u][%u], Bs[%u][%u];\n"
                "  %s accs[%u][%u];\n"
                "  for (int i = 0; i < %u; i++) for (int j = 0; j < %u; j++) accs[i][j] = 0;\n",
                ts * rm, ts * rn, t, ts * rm, ts + 1, ts, ts * rn + 1, t, rm, rn, rm, rn);
  ocl_gen_unravel(g, "bt", s->bd, s->nb, "bb");
  ocl_sb_printf(g->src, "  long abase = ");
  batch_offset(g, a, s, s->M * s->K);
  ocl_sb_printf(g->src, ";\n  long bbase = ");
  batch_offset(g, b, s, s->K * s->N);
  ocl_sb_printf(g->src,
                ";\n  for (long t0 = 0; t0 < %lldL; t0 += %u) {\n"
                "    for (int i = 0; i < %u; i++) {\n"
                "      long row = row0 + ly + i * %u, ka = t0 + lx;\n"
                "      As[ly + i * %u][lx] = (row < %lldL && ka < %lldL) ? p1[abase + %s] : 0;\n"
                "    }\n"
                "    for (int j = 0; j < %u; j++) {\n"
                "      long kb = t0 + ly, col = col0 + lx + j * %u;\n"
                "      Bs[ly][lx + j * %u] = (kb < %lldL && col < %lldL) ? p2[bbase + %s] : 0;\n"
                "    }\n"
                "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                "    for (int k = 0; k < %u; k++) {\n"
                "      %s av[%u], bv[%u];\n"
                "      for (int i = 0; i < %u; i++) av[i] = As[ly + i * %u][k];\n"
                "      for (int j = 0; j < %u; j++) bv[j] = Bs[k][lx + j * %u];\n"
                "      for (int i = 0; i < %u; i++)\n"
                "        for (int j = 0; j < %u; j++) accs[i][j] += av[i] * bv[j];\n"
                "    }\n"
                "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                "  }\n"
                "  for (int i = 0; i < %u; i++)\n"
                "    for (int j = 0; j < %u; j++) {\n"
                "      long row = row0 + ly + i * %u, col = col0 + lx + j * %u;\n"
                "      %s acc = accs[i][j];\n"
                "      if (row < %lldL && col < %lldL) {\n%s  }\n"
                "    }\n",
                (long long)s->K, ts, rm, ts, ts, (long long)s->M, (long long)s->K, a_idx, rn, ts,
                ts, (long long)s->K, (long long)s->N, b_idx, ts, t, rm, rn, rm, ts, rn, ts, rm, rn,
                rm, rn, ts, ts, t, (long long)s->M, (long long)s->N, epilogue);
  ocl_gen_end(g);
}

kiln_status ocl_gen_matmul(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *a = g->ops[1].type, *b = g->ops[2].type;
  if (!a || !b || a->elem != b->elem || a->elem == KILN_BOOL)
    return ocl_gen_unsupported(g, "MatMul needs two inputs of one numeric type");
  mm_shape s = {0};
  int64_t kb;
  matrix_dims(a, false, &s.M, &s.K);
  matrix_dims(b, true, &kb, &s.N);
  if (kb != s.K)
    return ocl_gen_unsupported(g, "MatMul inner dimensions differ");
  uint32_t na = a->rank >= 2 ? a->rank - 2 : 0, nbb = b->rank >= 2 ? b->rank - 2 : 0;
  s.nb = na > nbb ? na : nbb;
  s.batch = 1;
  for (uint32_t i = 0; i < s.nb; i++) {
    int64_t da = i + na >= s.nb ? a->dims[i + na - s.nb] : 1;
    int64_t db = i + nbb >= s.nb ? b->dims[i + nbb - s.nb] : 1;
    s.bd[i] = da == 1 ? db : da;
    s.batch *= s.bd[i];
  }
  if (s.batch * s.M * s.N != kiln_type_numel(y))
    return ocl_gen_unsupported(g, "MatMul result size does not match its operands");
  char ai[64], bi[64];
  snprintf(ai, sizeof ai, "row * %lldL + ka", (long long)s.K);
  snprintf(bi, sizeof bi, "kb * %lldL + col", (long long)s.N);
  ocl_sb e = {0};
  ocl_sb_printf(&e, "    %s r = acc;\n", ocl_ctype(y->elem));
  if (!ocl_gen_activation(&e, g->attrs, y->elem, "r", "    ")) {
    ocl_sb_free(&e);
    return ocl_gen_unsupported(g, "unknown fused activation");
  }
  ocl_sb_printf(&e, "    p0[(bt * %lldL + row) * %lldL + col] = r;\n", (long long)s.M,
                (long long)s.N);
  kiln_status st = e.oom ? kiln_status_make(KILN_OUT_OF_MEMORY, "opencl: MatMul epilogue") : NULL;
  if (!st)
    tiled(g, &s, ai, bi, a, b, e.p);
  ocl_sb_free(&e);
  return st;
}

kiln_status ocl_gen_gemm(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *a = g->ops[1].type, *b = g->ops[2].type;
  const kiln_type *c = g->n_ops > 3 ? g->ops[3].type : NULL;
  if (!a || !b || a->rank != 2 || b->rank != 2 || y->rank != 2 || !ocl_is_float(y->elem) ||
      a->elem != y->elem || b->elem != y->elem || (c && c->elem != y->elem))
    return ocl_gen_unsupported(g, "Gemm needs 2-D float operands of one type");
  bool ta = kiln_attrs_int_or(g->attrs, "transA", 0) != 0;
  bool tb = kiln_attrs_int_or(g->attrs, "transB", 0) != 0;
  mm_shape s = {.M = y->dims[0], .N = y->dims[1], .K = ta ? a->dims[0] : a->dims[1], .batch = 1};
  char ai[64], bi[64];
  snprintf(ai, sizeof ai, ta ? "ka * %lldL + row" : "row * %lldL + ka",
           (long long)(ta ? s.M : s.K));
  snprintf(bi, sizeof bi, tb ? "col * %lldL + kb" : "kb * %lldL + col",
           (long long)(tb ? s.K : s.N));
  /* The epilogue is generated into its own buffer: alpha*acc + beta*C. */
  ocl_sb e = {0};
  ocl_sb_printf(&e, "    long c0 = row, c1 = col;\n    %s r = ", ocl_ctype(y->elem));
  ocl_gen_const(&e, kiln_attrs_float_or(g->attrs, "alpha", 1.0), y->elem);
  ocl_sb_printf(&e, " * acc;\n");
  if (c) {
    ocl_sb_printf(&e, "    r += ");
    ocl_gen_const(&e, kiln_attrs_float_or(g->attrs, "beta", 1.0), y->elem);
    ocl_sb_printf(&e, " * p3[");
    ocl_sb *saved = g->src;
    g->src = &e;
    ocl_gen_bcast_index(g, c, 2, "c");
    g->src = saved;
    ocl_sb_printf(&e, "];\n");
  }
  if (!ocl_gen_activation(&e, g->attrs, y->elem, "r", "    ")) {
    ocl_sb_free(&e);
    return ocl_gen_unsupported(g, "unknown fused activation");
  }
  ocl_sb_printf(&e, "    p0[row * %lldL + col] = r;\n", (long long)s.N);
  kiln_status st = e.oom ? kiln_status_make(KILN_OUT_OF_MEMORY, "opencl: Gemm epilogue") : NULL;
  if (!st)
    tiled(g, &s, ai, bi, a, b, e.p);
  ocl_sb_free(&e);
  return st;
}

/* Private memory per work item grows with n * n; 16 x 16 doubles (2 KiB)
 * is already more than most GPUs keep in registers. */
#define DET_MAX_N 16

/* NULL when the generator can run Det on these types, else the reason. */
static const char *det_check(const kiln_type *y, const kiln_type *x) {
  if (!x)
    return "X missing";
  if (!ocl_is_float(x->elem) || y->elem != x->elem)
    return "X and Y need one element type, f32 or f64";
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return "X is not a stack of square matrices";
  int64_t n = x->dims[x->rank - 1];
  if (n > DET_MAX_N)
    return "matrices larger than 16 x 16 do not fit in private memory";
  int64_t count = 1;
  for (uint32_t i = 0; i + 2 < x->rank; i++)
    count *= x->dims[i];
  if (kiln_type_numel(y) != count)
    return "Y does not hold one value per matrix";
  return NULL;
}

bool ocl_det_ok(const kiln_node *n) {
  const kiln_value *xv = kiln_node_input_count(n) > 0 ? kiln_node_input(n, 0) : NULL;
  if (kiln_node_result_count(n) < 1)
    return false;
  return !det_check(kiln_value_type(kiln_node_result(n, 0)), xv ? kiln_value_type(xv) : NULL);
}

kiln_status ocl_gen_det(ocl_gen *g) {
  if (g->n_ops < 2)
    return ocl_gen_unsupported(g, "Det needs X");
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  const char *why = det_check(y, x);
  if (why)
    return ocl_gen_unsupported(g, why);
  long long n = (long long)x->dims[x->rank - 1], nn = n * n;
  const char *t = ocl_ctype(x->elem);
  const char *r = g->dev && g->dev->fp64 ? "double" : t;
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  /* The pragma must open its block; contracting f * a + b into fma would
   * round differently from the interpreter. */
  ocl_sb_printf(g->src,
                "  {\n#pragma OPENCL FP_CONTRACT OFF\n"
                "  %s a[%lld];\n"
                "  __global const %s *xs = p1 + gid * %lldL;\n"
                "  for (int i = 0; i < %lld; i++) a[i] = (%s)xs[i];\n"
                "  %s det = 1;\n",
                r, nn > 0 ? nn : 1, t, nn, nn, r, r);
  ocl_sb_printf(g->src,
                "  for (int c = 0; c < %lld && det != 0; c++) {\n"
                "    int piv = c;\n"
                "    for (int i = c + 1; i < %lld; i++)\n"
                "      if (fabs(a[i * %lld + c]) > fabs(a[piv * %lld + c])) piv = i;\n"
                "    if (a[piv * %lld + c] == 0) { det = 0; break; }\n"
                "    if (piv != c) {\n"
                "      for (int j = 0; j < %lld; j++) {\n"
                "        %s s = a[c * %lld + j]; a[c * %lld + j] = a[piv * %lld + j]; a[piv * %lld "
                "+ j] = s;\n"
                "      }\n"
                "      det = -det;\n"
                "    }\n"
                "    det *= a[c * %lld + c];\n"
                "    for (int i = c + 1; i < %lld; i++) {\n"
                "      %s f = a[i * %lld + c] / a[c * %lld + c];\n"
                "      for (int j = c; j < %lld; j++) a[i * %lld + j] -= f * a[c * %lld + j];\n"
                "    }\n"
                "  }\n"
                "  p0[gid] = (%s)det;\n  }\n",
                n, n, n, n, n, n, r, n, n, n, n, n, n, r, n, n, n, n, n, t);
  ocl_gen_end(g);
  return NULL;
}
