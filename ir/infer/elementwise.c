/* ir/infer/elementwise.c: inference of the elementwise kinds (unary, binary
 * with numpy broadcasting, variadic, Where, Clip, casts, the Bitwise kinds,
 * Mish, Swish) and of kiln's FusedElementwise. The element type sets follow
 * each ONNX operator's type constraints. */
#include <stdio.h>
#include <string.h>

#include "infer.h"

/* One input, same shape; result elem is `res` or, when negative, the input's. */
static kiln_status unary(const char *kind, const kiln_type *const *in, uint32_t mask, int res,
                         kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", in[0], mask));
  kiln_elem e = res < 0 ? in[0]->elem : (kiln_elem)res;
  return kiln_infer_make(kind, e, in[0]->rank, in[0]->dims, out);
}

#define UNARY(name, mask, res) KILN_INFER_AS(name, unary(#name, in, mask, res, out))

UNARY(Abs, KILN_INFER_NUM, -1)
UNARY(Acos, KILN_INFER_FLOAT, -1)
UNARY(Acosh, KILN_INFER_FLOAT, -1)
UNARY(Asin, KILN_INFER_FLOAT, -1)
UNARY(Asinh, KILN_INFER_FLOAT, -1)
UNARY(Atan, KILN_INFER_FLOAT, -1)
UNARY(Atanh, KILN_INFER_FLOAT, -1)
UNARY(Ceil, KILN_INFER_FLOAT, -1)
UNARY(Cos, KILN_INFER_FLOAT, -1)
UNARY(Cosh, KILN_INFER_FLOAT, -1)
UNARY(Erf, KILN_INFER_NUM, -1)
UNARY(Exp, KILN_INFER_FLOAT, -1)
UNARY(Floor, KILN_INFER_FLOAT, -1)
UNARY(Log, KILN_INFER_FLOAT, -1)
UNARY(Neg, KILN_INFER_SNUM, -1)
UNARY(Not, KILN_INFER_BOOL, -1)
UNARY(Reciprocal, KILN_INFER_FLOAT, -1)
UNARY(Relu, KILN_INFER_SNUM, -1)
UNARY(Round, KILN_INFER_FLOAT, -1)
UNARY(Sigmoid, KILN_INFER_FLOAT, -1)
UNARY(Sign, KILN_INFER_NUM, -1)
UNARY(Sin, KILN_INFER_FLOAT, -1)
UNARY(Sinh, KILN_INFER_FLOAT, -1)
UNARY(Softplus, KILN_INFER_FLOAT, -1)
UNARY(Softsign, KILN_INFER_FLOAT, -1)
UNARY(Sqrt, KILN_INFER_FLOAT, -1)
UNARY(Tan, KILN_INFER_FLOAT, -1)
UNARY(Tanh, KILN_INFER_FLOAT, -1)
UNARY(IsInf, KILN_INFER_FLOAT, KILN_BOOL)
UNARY(IsNaN, KILN_INFER_FLOAT, KILN_BOOL)
UNARY(Elu, KILN_INFER_FLOAT, -1)
UNARY(Selu, KILN_INFER_FLOAT, -1)
UNARY(Celu, KILN_INFER_FLOAT, -1)
UNARY(HardSigmoid, KILN_INFER_FLOAT, -1)
UNARY(HardSwish, KILN_INFER_FLOAT, -1)
UNARY(LeakyRelu, KILN_INFER_FLOAT, -1)
UNARY(ThresholdedRelu, KILN_INFER_FLOAT, -1)
UNARY(Shrink, KILN_INFER_NUM, -1)
UNARY(Identity, KILN_INFER_ALL, -1)

kiln_status kiln_infer_Gelu(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const modes[] = {"none", "tanh", NULL};
  const char *mode;
  KILN_TRY(kiln_infer_enum("Gelu", attrs, "approximate", "none", modes, &mode));
  return unary("Gelu", in, KILN_INFER_FLOAT, -1, out);
}

kiln_status kiln_infer_Dropout(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                               uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs;
  KILN_TRY(unary("Dropout", in, KILN_INFER_FLOAT, -1, &out[0]));
  if (n_results > 1)
    KILN_TRY(kiln_infer_make("Dropout", KILN_BOOL, in[0]->rank, in[0]->dims, &out[1]));
  return NULL;
}

kiln_status kiln_infer_Cast(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  kiln_elem to;
  bool present;
  KILN_TRY(kiln_infer_type_attr("Cast", attrs, "to", KILN_F32, &to, &present));
  if (!present)
    return kiln_infer_fail("Cast", "attribute 'to' (the result element type) is required");
  return unary("Cast", in, KILN_INFER_ALL, (int)to, out);
}

kiln_status kiln_infer_CastLike(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  KILN_TRY(kiln_infer_check_elem("CastLike", "input 1", in[1], KILN_INFER_ALL));
  return unary("CastLike", in, KILN_INFER_ALL, (int)in[1]->elem, out);
}

/* Two inputs of one element type in mask, broadcast; result elem `res` or
 * the inputs'. */
static kiln_status binary(const char *kind, const kiln_type *const *in, uint32_t mask, int res,
                          kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", in[0], mask));
  KILN_TRY(kiln_infer_check_elem(kind, "input 1", in[1], mask));
  KILN_TRY(kiln_infer_same_elem(kind, "input 0", in[0], "input 1", in[1]));
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_broadcast(kind, in, 2, dims, &rank));
  kiln_elem e = res < 0 ? in[0]->elem : (kiln_elem)res;
  return kiln_infer_make(kind, e, rank, dims, out);
}

#define BINARY(name, mask, res) KILN_INFER_AS(name, binary(#name, in, mask, res, out))

BINARY(Add, KILN_INFER_NUM, -1)
BINARY(Sub, KILN_INFER_NUM, -1)
BINARY(Mul, KILN_INFER_NUM, -1)
BINARY(Div, KILN_INFER_NUM, -1)
BINARY(And, KILN_INFER_BOOL, -1)
BINARY(Or, KILN_INFER_BOOL, -1)
BINARY(Xor, KILN_INFER_BOOL, -1)
BINARY(Equal, KILN_INFER_ALL, KILN_BOOL)
BINARY(Greater, KILN_INFER_NUM, KILN_BOOL)
BINARY(GreaterOrEqual, KILN_INFER_NUM, KILN_BOOL)
BINARY(Less, KILN_INFER_NUM, KILN_BOOL)
BINARY(LessOrEqual, KILN_INFER_NUM, KILN_BOOL)

kiln_status kiln_infer_Pow(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                           uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  /* ONNX lets the exponent have its own numeric type. */
  uint32_t base = KILN_INFER_FLOAT | KILN_INFER_M(KILN_I32) | KILN_INFER_M(KILN_I64);
  KILN_TRY(kiln_infer_check_elem("Pow", "input 0", in[0], base));
  KILN_TRY(kiln_infer_check_elem("Pow", "input 1", in[1], KILN_INFER_NUM));
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_broadcast("Pow", in, 2, dims, &rank));
  return kiln_infer_make("Pow", in[0]->elem, rank, dims, out);
}

kiln_status kiln_infer_Mod(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                           uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  int64_t fmod = kiln_attrs_int_or(attrs, "fmod", 0);
  if (fmod != 0 && fmod != 1)
    return kiln_infer_fail("Mod", "attribute 'fmod' = %lld must be 0 or 1", (long long)fmod);
  if (fmod == 0 && kiln_elem_is_float(in[0]->elem))
    return kiln_infer_fail("Mod", "input 0 is %s: floating-point inputs need fmod = 1",
                           KILN_INFER_TS(in[0]));
  return binary("Mod", in, KILN_INFER_NUM, -1, out);
}

kiln_status kiln_infer_BitShift(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const dirs[] = {"LEFT", "RIGHT", NULL};
  const char *dir;
  if (!kiln_attrs_find(attrs, "direction"))
    return kiln_infer_fail("BitShift", "attribute 'direction' (\"LEFT\" or \"RIGHT\") is required");
  KILN_TRY(kiln_infer_enum("BitShift", attrs, "direction", "LEFT", dirs, &dir));
  return binary("BitShift", in, KILN_INFER_UINT, -1, out);
}

kiln_status kiln_infer_PRelu(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  uint32_t mask = KILN_INFER_FLOAT | KILN_INFER_M(KILN_I32) | KILN_INFER_M(KILN_I64) |
                  KILN_INFER_M(KILN_U32) | KILN_INFER_M(KILN_U64);
  KILN_TRY(kiln_infer_check_elem("PRelu", "input 0", in[0], mask));
  KILN_TRY(kiln_infer_same_elem("PRelu", "input 0", in[0], "slope", in[1]));
  if (!kiln_infer_broadcasts_to(in[1], in[0]))
    return kiln_infer_fail("PRelu", "slope %s does not broadcast to input 0 %s",
                           KILN_INFER_TS(in[1]), KILN_INFER_TS(in[0]));
  return kiln_infer_make("PRelu", in[0]->elem, in[0]->rank, in[0]->dims, out);
}

/* Any number of broadcast inputs of one element type in mask. */
static kiln_status variadic(const char *kind, const kiln_type *const *in, uint32_t n_in,
                            uint32_t mask, kiln_type *out) {
  for (uint32_t i = 0; i < n_in; i++) {
    char what[24];
    snprintf(what, sizeof what, "input %u", i);
    KILN_TRY(kiln_infer_check_elem(kind, what, in[i], mask));
    if (i > 0 && in[i]->elem != in[0]->elem)
      return kiln_infer_fail(kind, "element types differ: input 0 is %s, input %u is %s",
                             KILN_INFER_TS(in[0]), i, KILN_INFER_TS(in[i]));
  }
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_broadcast(kind, in, n_in, dims, &rank));
  return kiln_infer_make(kind, in[0]->elem, rank, dims, out);
}

#define VARIADIC(name, mask) KILN_INFER_AS(name, variadic(#name, in, n_in, mask, out))

VARIADIC(Max, KILN_INFER_NUM)
VARIADIC(Min, KILN_INFER_NUM)
VARIADIC(Mean, KILN_INFER_FLOAT)
VARIADIC(Sum, KILN_INFER_FLOAT)

kiln_status kiln_infer_Where(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  KILN_TRY(kiln_infer_check_elem("Where", "condition (input 0)", in[0], KILN_INFER_BOOL));
  KILN_TRY(kiln_infer_same_elem("Where", "input 1", in[1], "input 2", in[2]));
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_broadcast("Where", in, 3, dims, &rank));
  return kiln_infer_make("Where", in[1]->elem, rank, dims, out);
}

kiln_status kiln_infer_Clip(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)attrs, (void)n_results;
  KILN_TRY(kiln_infer_check_elem("Clip", "input 0", in[0], KILN_INFER_NUM));
  static const char *const names[] = {"input", "min (input 1)", "max (input 2)"};
  for (uint32_t i = 1; i < n_in; i++) {
    if (!in[i])
      continue;
    KILN_TRY(kiln_infer_same_elem("Clip", names[0], in[0], names[i], in[i]));
    if (kiln_type_numel(in[i]) != 1 || in[i]->rank > 1)
      return kiln_infer_fail("Clip", "%s is %s; it must be a scalar", names[i],
                             KILN_INFER_TS(in[i]));
  }
  return kiln_infer_make("Clip", in[0]->elem, in[0]->rank, in[0]->dims, out);
}

static kiln_status bitwise(const char *kind, const kiln_type *const *in, kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", in[0], KILN_INFER_INT));
  KILN_TRY(kiln_infer_same_elem(kind, "input 0", in[0], "input 1", in[1]));
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_broadcast(kind, in, 2, dims, &rank));
  return kiln_infer_make(kind, in[0]->elem, rank, dims, out);
}

#define BITWISE(name) KILN_INFER_AS(name, bitwise(#name, in, out))
BITWISE(BitwiseAnd)
BITWISE(BitwiseOr)
BITWISE(BitwiseXor)

static kiln_status same_as_input(const char *kind, const kiln_type *x, uint32_t mask,
                                 kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, mask));
  return kiln_infer_make(kind, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_BitwiseNot(const kiln_type *const *in, uint32_t n_in,
                                  const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return same_as_input("BitwiseNot", in[0], KILN_INFER_INT, out);
}

kiln_status kiln_infer_Mish(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return same_as_input("Mish", in[0], KILN_INFER_FLOAT, out);
}

kiln_status kiln_infer_Swish(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return same_as_input("Swish", in[0], KILN_INFER_FLOAT, out);
}

/* kiln's own FusedElementwise: the inputs broadcast to the result, all of
 * one float element type, and the body must parse (ir/fused.c). */
kiln_status kiln_infer_FusedElementwise(const kiln_type *const *in, uint32_t n_in,
                                        const kiln_attrs *attrs, uint32_t n_results,
                                        kiln_type *out) {
  (void)n_results;
  const char *K = "FusedElementwise";
  for (uint32_t i = 0; i < n_in; i++) {
    KILN_TRY(kiln_infer_check_elem(K, "input", in[i], KILN_INFER_FLOAT));
    if (i)
      KILN_TRY(kiln_infer_same_elem(K, "input 0", in[0], "input", in[i]));
  }
  const kiln_attr *body = kiln_attrs_find(attrs, "body");
  if (!body || kiln_attr_get_kind(body) != KILN_ATTR_STRING)
    return kiln_infer_fail(K, "attribute 'body' (string) is required");
  kiln_fused_op ops[KILN_FUSED_MAX_OPS];
  uint32_t n_ops;
  kiln_status s = kiln_fused_parse(kiln_attr_string(body), n_in, ops, KILN_FUSED_MAX_OPS, &n_ops);
  if (s)
    return kiln_status_wrap(s, "%s", K);
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_broadcast(K, in, n_in, dims, &rank));
  return kiln_infer_make(K, in[0]->elem, rank, dims, out);
}
