/* passes/lower_rules.h: the lowering rule table and the builder helpers
 * the rule files share (private to passes/). A rule rewrites one node into
 * simpler nodes inserted before it and returns the values that replace its
 * results. The rules live in one file per op family,
 * passes/lower_{elementwise,reduce,norm,linalg,conv,pool,movement,index,
 * generator,resize,quant,loss}.c; the table and the shared constant builders
 * in lower_rules.c. */
#ifndef KILN_PASS_LOWER_RULES_H
#define KILN_PASS_LOWER_RULES_H

#include "kiln/passes.h"
#include "pass_util.h"

/* Builder state threaded through a rule: the first failure sticks and
 * every later helper call returns NULL, so rules read as straight-line
 * expressions and check ctx->s once at the end. */
typedef struct kiln_lower_ctx {
  kiln_function *f;
  kiln_node *n;   /* the node being lowered; new nodes go before it */
  kiln_elem elem; /* element type of scalar constants */
  kiln_status s;
} kiln_lower_ctx;

/* repl has room for the node's results; a rule fills each used one.
 * Returns false when the rule does not apply to this node (then the
 * node stays and, if the backend does not run it, lowering fails). */
typedef bool (*kiln_lower_rule)(kiln_lower_ctx *c, kiln_value **repl);

/* The rule for kind k, or NULL. */
kiln_lower_rule kiln_lower_rule_for(kiln_node_kind k);

/* The rules of one kind each, by family, listed in the table of
 * lower_rules.c. */
/* clang-format off */
#define KILN_LOWER_RULES_EXTERN(X) \
  /* elementwise */ \
  X(Identity) X(Dropout) X(CastLike) X(Sum) X(Mean) X(Clip) X(Softplus) X(Softsign) X(Elu) \
  X(Selu) X(Celu) X(HardSigmoid) X(HardSwish) X(LeakyRelu) X(PRelu) X(ThresholdedRelu) \
  X(Shrink) X(Gelu) X(Sigmoid) X(Relu) X(Reciprocal) X(Tan) X(Sinh) X(Cosh) X(Asin) X(Acos) \
  X(Asinh) X(Acosh) X(Atanh) X(Ceil) X(Sign) X(IsInf) X(Greater) X(GreaterOrEqual) \
  X(LessOrEqual) X(Or) X(Xor) X(BitwiseOr) X(BitwiseXor) X(BitwiseNot) X(Mish) X(Swish) \
  X(FusedElementwise) \
  /* reduce */ \
  X(ReduceMean) X(ReduceSumSquare) X(ReduceL1) X(ReduceL2) X(ReduceLogSum) X(ReduceLogSumExp) \
  X(ArgMin) X(ReduceMin) X(ReduceProd) X(CumSum) \
  /* norm */ \
  X(BatchNormalization) X(InstanceNormalization) X(LayerNormalization) \
  X(MeanVarianceNormalization) X(Hardmax) X(LRN) X(RMSNormalization) X(LpNormalization) \
  X(GroupNormalization) \
  /* linalg */ \
  X(Gemm) X(Einsum) X(ScaledDotProductAttention) \
  /* conv */ \
  X(Conv) X(Col2Im) X(BlockedConv) \
  /* pool */ \
  X(AveragePool) X(LpPool) X(MaxUnpool) \
  /* movement */ \
  X(Split) X(Tile) X(DepthToSpace) X(SpaceToDepth) X(ReverseSequence) X(Trilu) X(CenterCropPad) \
  X(BlockChannels) X(UnblockChannels) \
  /* index */ \
  X(OneHot) X(GatherElements) X(GatherND) \
  /* generator */ \
  X(ConstantOfShape) X(EyeLike) X(Range) X(HannWindow) X(HammingWindow) X(BlackmanWindow) \
  /* resize */ \
  X(Resize) X(Upsample) \
  /* quant */ \
  X(MatMulInteger) X(ConvInteger) X(DequantizeLinear) X(QuantizeLinear) X(QLinearMatMul) \
  X(QLinearConv) X(DynamicQuantizeLinear) \
  /* loss */ \
  X(NegativeLogLikelihoodLoss) X(SoftmaxCrossEntropyLoss)
/* clang-format on */
#define KILN_LOWER_DECL(k) bool kiln_lower_##k(kiln_lower_ctx *c, kiln_value **r);
KILN_LOWER_RULES_EXTERN(KILN_LOWER_DECL)
#undef KILN_LOWER_DECL

/* Rules shared by several kinds: Flatten, Squeeze, Unsqueeze onto Reshape
 * (lower_movement.c); Shape and Size as constants (lower_movement.c); Max
 * and Min as chains of binary Max / Min (lower_elementwise.c); Softmax and LogSoftmax
 * (lower_norm.c); the global pools as reductions (lower_pool.c). */
bool kiln_lower_to_reshape(kiln_lower_ctx *c, kiln_value **r);
bool kiln_lower_shape_const(kiln_lower_ctx *c, kiln_value **r);
bool kiln_lower_minmax(kiln_lower_ctx *c, kiln_value **r);
bool kiln_lower_softmax(kiln_lower_ctx *c, kiln_value **r);
bool kiln_lower_global_pool(kiln_lower_ctx *c, kiln_value **r);

/* ---- builder helpers: NULL in, NULL out, first failure kept ---- */

static inline kiln_value *lower_emit(kiln_lower_ctx *c, kiln_node_kind k, kiln_value *const *in,
                                     uint32_t n, const kiln_attr_desc *a, uint32_t na) {
  if (c->s)
    return NULL;
  for (uint32_t i = 0; i < n; i++)
    if (!in[i])
      return NULL;
  kiln_value *out = NULL;
  c->s = kiln_pass_emit(c->f, c->n, k, in, n, a, na, &out);
  return out;
}
static inline kiln_value *lower_un(kiln_lower_ctx *c, kiln_node_kind k, kiln_value *x) {
  return lower_emit(c, k, &x, 1, NULL, 0);
}
static inline kiln_value *lower_bin(kiln_lower_ctx *c, kiln_node_kind k, kiln_value *a,
                                    kiln_value *b) {
  kiln_value *in[2] = {a, b};
  return lower_emit(c, k, in, 2, NULL, 0);
}
/* Scalar constant of element type e. */
static inline kiln_value *lower_sce(kiln_lower_ctx *c, kiln_elem e, double x) {
  if (c->s)
    return NULL;
  kiln_value *v = NULL;
  c->s = kiln_pass_const_scalar(kiln_function_module(c->f), e, x, &v);
  return v;
}
static inline kiln_value *lower_sc(kiln_lower_ctx *c, double x) {
  return lower_sce(c, c->elem, x);
}
static inline kiln_value *lower_where(kiln_lower_ctx *c, kiln_value *cond, kiln_value *a,
                                      kiln_value *b) {
  kiln_value *in[3] = {cond, a, b};
  return lower_emit(c, KILN_NODE_Where, in, 3, NULL, 0);
}
static inline kiln_value *lower_cast(kiln_lower_ctx *c, kiln_value *x, kiln_elem to) {
  kiln_attr_desc a = KILN_ATTR_T("to", to);
  return lower_emit(c, KILN_NODE_Cast, &x, 1, &a, 1);
}
static inline kiln_value *lower_reshape(kiln_lower_ctx *c, kiln_value *x, const int64_t *dims,
                                        uint32_t r) {
  bool zero = false;
  for (uint32_t i = 0; i < r; i++)
    zero |= dims[i] == 0;
  kiln_attr_desc a[2] = {KILN_ATTR_I("allowzero", zero), KILN_ATTR_IS("shape", dims, r)};
  return lower_emit(c, KILN_NODE_Reshape, &x, 1, a, 2);
}
static inline kiln_value *lower_transpose(kiln_lower_ctx *c, kiln_value *x, const int64_t *perm,
                                          uint32_t r) {
  kiln_attr_desc a = KILN_ATTR_IS("perm", perm, r);
  return lower_emit(c, KILN_NODE_Transpose, &x, 1, &a, 1);
}
/* x[start:end] along one axis (step 1). */
static inline kiln_value *lower_slice(kiln_lower_ctx *c, kiln_value *x, int64_t axis, int64_t start,
                                      int64_t end) {
  int64_t one = 1;
  kiln_attr_desc a[4] = {KILN_ATTR_IS("axes", &axis, 1), KILN_ATTR_IS("ends", &end, 1),
                         KILN_ATTR_IS("starts", &start, 1), KILN_ATTR_IS("steps", &one, 1)};
  return lower_emit(c, KILN_NODE_Slice, &x, 1, a, 4);
}
static inline kiln_value *lower_concat(kiln_lower_ctx *c, kiln_value *const *xs, uint32_t n,
                                       int64_t axis) {
  kiln_attr_desc a = KILN_ATTR_I("axis", axis);
  return n == 1 ? xs[0] : lower_emit(c, KILN_NODE_Concat, xs, n, &a, 1);
}
static inline kiln_value *lower_reduce(kiln_lower_ctx *c, kiln_node_kind k, kiln_value *x,
                                       const int64_t *axes, uint32_t n, int64_t keepdims) {
  kiln_attr_desc a[2] = {KILN_ATTR_IS("axes", axes, n), KILN_ATTR_I("keepdims", keepdims)};
  return lower_emit(c, k, &x, 1, a, 2);
}
/* A constant of type t whose element i is fill(i, user) (stored as t's
 * element type). */
kiln_value *kiln_lower_const_fn(kiln_lower_ctx *c, const kiln_type *t,
                                double (*fill)(int64_t i, const void *user), const void *user);
/* A constant of element type e and the given dims, from a double array. */
kiln_value *kiln_lower_const_vals(kiln_lower_ctx *c, kiln_elem e, uint32_t rank,
                                  const int64_t *dims, const double *vals);
/* fill functions for kiln_lower_const_fn: all zeros (user unused), and the
 * 0/1 triangle, band or diagonal of kiln_lower_tri_fill (CumSum, Trilu,
 * EyeLike). */
double kiln_lower_fill_zero(int64_t i, const void *user);
typedef struct kiln_lower_tri_fill {
  int64_t n, m, k;
  int mode; /* CumSum: 0 inclusive, 1 exclusive, +2 reverse; Trilu: 4 upper, 5 lower; 6 eye */
} kiln_lower_tri_fill;
double kiln_lower_fill_tri(int64_t idx, const void *user);
/* An i64 constant of `rank` dims, all 1 except `dim` at `axis`, counting
 * 0..dim-1 along it (OneHot, ReverseSequence). */
kiln_value *kiln_lower_iota_along(kiln_lower_ctx *c, uint32_t rank, uint32_t axis, int64_t dim);

static inline kiln_value *lower_in(kiln_lower_ctx *c, uint32_t i) {
  return i < kiln_node_input_count(c->n) ? kiln_node_input(c->n, i) : NULL;
}
static inline const kiln_type *lower_tin(kiln_lower_ctx *c, uint32_t i) {
  return kiln_value_type(kiln_node_input(c->n, i));
}
static inline const kiln_type *lower_tout(kiln_lower_ctx *c, uint32_t i) {
  return kiln_value_type(kiln_node_result(c->n, i));
}
static inline int64_t lower_iattr(kiln_lower_ctx *c, const char *name, int64_t d) {
  return kiln_attrs_int_or(kiln_node_attrs(c->n), name, d);
}
static inline double lower_fattr(kiln_lower_ctx *c, const char *name, double d) {
  return kiln_attrs_float_or(kiln_node_attrs(c->n), name, d);
}
/* An ints attribute into out (at most cap entries); returns its length,
 * 0 when absent. */
static inline uint32_t lower_ints(kiln_lower_ctx *c, const char *name, int64_t *out, uint32_t cap) {
  const kiln_attr *a = kiln_attrs_find(kiln_node_attrs(c->n), name);
  uint32_t n = a && kiln_attr_ints(a) ? kiln_attr_len(a) : 0;
  if (n > cap)
    n = cap;
  for (uint32_t i = 0; i < n; i++)
    out[i] = kiln_attr_ints(a)[i];
  return n;
}

#endif
