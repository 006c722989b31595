/* passes/lower_elementwise.c: lowering rules for the elementwise kinds:
 * removals (Identity, Dropout, CastLike), the variadic kinds (Sum, Mean,
 * Max, Min) and Clip, the activations, unary float math, comparisons and
 * logic, the bitwise kinds (BitwiseAnd stays primitive; Or, Xor and Not are
 * modular arithmetic around it), Mish, Swish, and FusedElementwise (its body
 * back into nodes). Rules may produce non-primitive kinds (Mean -> Sum ->
 * Add); the driver repeats. Every rule keeps the result's element type and
 * shape exactly. */
#include <math.h>
#include <stdlib.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)
#define X1 kiln_node_input(c->n, 1)

static bool is_float(kiln_lower_ctx *c) {
  return kiln_elem_is_float(c->elem);
}

bool kiln_lower_Identity(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = X0;
  return true;
}

bool kiln_lower_Dropout(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = X0;
  if (kiln_node_result_count(c->n) > 1 && kiln_value_use_count(kiln_node_result(c->n, 1)))
    c->s = kiln_pass_const_fill(kiln_function_module(c->f),
                                kiln_value_type(kiln_node_result(c->n, 1)), 1, &r[1]);
  return true;
}

bool kiln_lower_CastLike(kiln_lower_ctx *c, kiln_value **r) {
  kiln_attr_desc a = KILN_ATTR_T("to", kiln_value_type(kiln_node_input(c->n, 1))->elem);
  kiln_value *x = X0;
  r[0] = lower_emit(c, KILN_NODE_Cast, &x, 1, &a, 1);
  return true;
}

/* ---- variadic elementwise ---- */

static kiln_value *chain(kiln_lower_ctx *c, kiln_node_kind k) {
  kiln_value *acc = kiln_node_input(c->n, 0);
  for (uint32_t i = 1; i < kiln_node_input_count(c->n); i++)
    acc = lower_bin(c, k, acc, kiln_node_input(c->n, i));
  return acc;
}

bool kiln_lower_Sum(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = chain(c, KILN_NODE_Add);
  return true;
}

bool kiln_lower_Mean(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_bin(c, KILN_NODE_Div, chain(c, KILN_NODE_Add),
                   lower_sc(c, kiln_node_input_count(c->n)));
  return true;
}

bool kiln_lower_minmax(kiln_lower_ctx *c, kiln_value **r) {
  kiln_node_kind k = kiln_node_get_kind(c->n);
  kiln_value *acc = kiln_node_input(c->n, 0);
  uint32_t n = kiln_node_input_count(c->n);
  if (n == 1) {
    r[0] = acc;
    return true;
  }
  if (n == 2)
    return false; /* already the primitive form */
  /* Pairs (a, b) stay binary Max / Min, the primitive form. */
  for (uint32_t i = 1; i < n; i++) {
    kiln_value *in[2] = {acc, kiln_node_input(c->n, i)};
    acc = lower_emit(c, k, in, 2, NULL, 0);
  }
  r[0] = acc;
  return true;
}

bool kiln_lower_Clip(kiln_lower_ctx *c, kiln_value **r) {
  kiln_value *y = X0;
  uint32_t n = kiln_node_input_count(c->n);
  kiln_value *lo = n > 1 ? kiln_node_input(c->n, 1) : NULL,
             *hi = n > 2 ? kiln_node_input(c->n, 2) : NULL;
  if (lo)
    y = lower_bin(c, KILN_NODE_Max, y, lo);
  if (hi)
    y = lower_bin(c, KILN_NODE_Min, y, hi);
  if (!lo && !hi)
    y = lower_un(c, KILN_NODE_Identity, y);
  r[0] = y;
  return true;
}

/* ---- activations (float) ---- */

bool kiln_lower_Softplus(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* max(x, 0) + log(1 + exp(-|x|)): exp never overflows, and large x
   * stays x instead of becoming inf. */
  kiln_value *x = X0;
  kiln_value *t =
      lower_un(c, KILN_NODE_Exp, lower_un(c, KILN_NODE_Neg, lower_un(c, KILN_NODE_Abs, x)));
  r[0] = lower_bin(c, KILN_NODE_Add, lower_bin(c, KILN_NODE_Max, x, lower_sc(c, 0)),
                   lower_un(c, KILN_NODE_Log, lower_bin(c, KILN_NODE_Add, t, lower_sc(c, 1))));
  return true;
}

bool kiln_lower_Softsign(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  r[0] = lower_bin(c, KILN_NODE_Div, x,
                   lower_bin(c, KILN_NODE_Add, lower_un(c, KILN_NODE_Abs, x), lower_sc(c, 1)));
  return true;
}

/* alpha * (exp(x) - 1) */
static kiln_value *expm1_scaled(kiln_lower_ctx *c, kiln_value *x, double alpha) {
  return lower_bin(c, KILN_NODE_Mul,
                   lower_bin(c, KILN_NODE_Sub, lower_un(c, KILN_NODE_Exp, x), lower_sc(c, 1)),
                   lower_sc(c, alpha));
}

bool kiln_lower_Elu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  r[0] = lower_where(c, lower_bin(c, KILN_NODE_Less, x, lower_sc(c, 0)),
                     expm1_scaled(c, x, lower_fattr(c, "alpha", 1)), x);
  return true;
}

bool kiln_lower_Selu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  double alpha = lower_fattr(c, "alpha", 1.67326319217681884765625),
         gamma = lower_fattr(c, "gamma", 1.05070102214813232421875);
  kiln_value *inner = lower_where(c, lower_bin(c, KILN_NODE_Greater, x, lower_sc(c, 0)), x,
                                  expm1_scaled(c, x, alpha));
  r[0] = lower_bin(c, KILN_NODE_Mul, inner, lower_sc(c, gamma));
  return true;
}

bool kiln_lower_Celu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  double alpha = lower_fattr(c, "alpha", 1);
  kiln_value *neg = expm1_scaled(c, lower_bin(c, KILN_NODE_Div, x, lower_sc(c, alpha)), alpha);
  r[0] = lower_bin(c, KILN_NODE_Add, lower_bin(c, KILN_NODE_Max, x, lower_sc(c, 0)),
                   lower_bin(c, KILN_NODE_Min, neg, lower_sc(c, 0)));
  return true;
}

static kiln_value *hard_sigmoid(kiln_lower_ctx *c, kiln_value *x, double alpha, double beta) {
  kiln_value *lin = lower_bin(c, KILN_NODE_Add, lower_bin(c, KILN_NODE_Mul, x, lower_sc(c, alpha)),
                              lower_sc(c, beta));
  return lower_bin(c, KILN_NODE_Max, lower_bin(c, KILN_NODE_Min, lin, lower_sc(c, 1)),
                   lower_sc(c, 0));
}

bool kiln_lower_HardSigmoid(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = hard_sigmoid(c, X0, lower_fattr(c, "alpha", 0.2), lower_fattr(c, "beta", 0.5));
  return true;
}

bool kiln_lower_HardSwish(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  r[0] = lower_bin(c, KILN_NODE_Mul, x, hard_sigmoid(c, x, 1.0 / 6.0, 0.5));
  return true;
}

/* max(x, alpha x) for 0 <= alpha <= 1, min(x, alpha x) above 1: the same
 * values as the Where form (signed zeros and NaN included), in kinds that
 * fuse into one elementwise loop; the Where form (a compare, a product and
 * a select over three tensors) ran a vocoder's LeakyRelus at 15 GB/s. */
bool kiln_lower_LeakyRelu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  double alpha = lower_fattr(c, "alpha", 0.01);
  kiln_value *ax = lower_bin(c, KILN_NODE_Mul, x, lower_sc(c, alpha));
  if (alpha >= 0)
    r[0] = lower_bin(c, alpha <= 1 ? KILN_NODE_Max : KILN_NODE_Min, x, ax);
  else
    r[0] = lower_where(c, lower_bin(c, KILN_NODE_Less, x, lower_sc(c, 0)), ax, x);
  return true;
}

bool kiln_lower_PRelu(kiln_lower_ctx *c, kiln_value **r) {
  kiln_value *x = X0, *slope = kiln_node_input(c->n, 1);
  r[0] = lower_where(c, lower_bin(c, KILN_NODE_Less, x, lower_sc(c, 0)),
                     lower_bin(c, KILN_NODE_Mul, x, slope), x);
  return true;
}

bool kiln_lower_ThresholdedRelu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  kiln_value *zeros = lower_bin(c, KILN_NODE_Mul, x, lower_sc(c, 0));
  r[0] = lower_where(c, lower_bin(c, KILN_NODE_Greater, x, lower_sc(c, lower_fattr(c, "alpha", 1))),
                     x, zeros);
  return true;
}

bool kiln_lower_Shrink(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0;
  double b = lower_fattr(c, "bias", 0), l = lower_fattr(c, "lambd", 0.5);
  kiln_value *zeros = lower_bin(c, KILN_NODE_Mul, x, lower_sc(c, 0));
  kiln_value *hi = lower_where(c, lower_bin(c, KILN_NODE_Greater, x, lower_sc(c, l)),
                               lower_bin(c, KILN_NODE_Sub, x, lower_sc(c, b)), zeros);
  r[0] = lower_where(c, lower_bin(c, KILN_NODE_Less, x, lower_sc(c, -l)),
                     lower_bin(c, KILN_NODE_Add, x, lower_sc(c, b)), hi);
  return true;
}

bool kiln_lower_Gelu(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *x = X0, *inner;
  const char *approx = kiln_attrs_string_or(kiln_node_attrs(c->n), "approximate", "none");
  if (approx[0] == 't') {
    kiln_value *x3 = lower_bin(c, KILN_NODE_Mul, lower_bin(c, KILN_NODE_Mul, x, x), x);
    kiln_value *arg = lower_bin(
        c, KILN_NODE_Mul,
        lower_bin(c, KILN_NODE_Add, x, lower_bin(c, KILN_NODE_Mul, x3, lower_sc(c, 0.044715))),
        lower_sc(c, sqrt(2.0 / 3.14159265358979323846)));
    inner = lower_un(c, KILN_NODE_Tanh, arg);
  } else {
    inner =
        lower_un(c, KILN_NODE_Erf, lower_bin(c, KILN_NODE_Mul, x, lower_sc(c, 1.0 / sqrt(2.0))));
  }
  r[0] = lower_bin(c, KILN_NODE_Mul, lower_bin(c, KILN_NODE_Mul, x, lower_sc(c, 0.5)),
                   lower_bin(c, KILN_NODE_Add, inner, lower_sc(c, 1)));
  return true;
}

/* ---- unary math (floats) ---- */

bool kiln_lower_Sigmoid(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* exp(-x) overflows to inf for very negative x, and 1/inf = 0 is right. */
  r[0] = lower_bin(c, KILN_NODE_Div, lower_sc(c, 1),
                   lower_bin(c, KILN_NODE_Add,
                             lower_un(c, KILN_NODE_Exp, lower_un(c, KILN_NODE_Neg, X0)),
                             lower_sc(c, 1)));
  return true;
}

bool kiln_lower_Relu(kiln_lower_ctx *c, kiln_value **r) {
  if (c->elem == KILN_BOOL)
    return false;
  r[0] = lower_bin(c, KILN_NODE_Max, X0, lower_sc(c, 0));
  return true;
}

bool kiln_lower_Reciprocal(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = lower_bin(c, KILN_NODE_Div, lower_sc(c, 1), X0);
  return true;
}

bool kiln_lower_Tan(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] =
      lower_bin(c, KILN_NODE_Div, lower_un(c, KILN_NODE_Sin, X0), lower_un(c, KILN_NODE_Cos, X0));
  return true;
}

static bool sinh_cosh(kiln_lower_ctx *c, kiln_value **r, kiln_node_kind k) {
  if (!is_float(c))
    return false;
  kiln_value *a = lower_un(c, KILN_NODE_Exp, X0),
             *b = lower_un(c, KILN_NODE_Exp, lower_un(c, KILN_NODE_Neg, X0));
  r[0] = lower_bin(c, KILN_NODE_Mul, lower_bin(c, k, a, b), lower_sc(c, 0.5));
  return true;
}
bool kiln_lower_Sinh(kiln_lower_ctx *c, kiln_value **r) {
  return sinh_cosh(c, r, KILN_NODE_Sub);
}
bool kiln_lower_Cosh(kiln_lower_ctx *c, kiln_value **r) {
  return sinh_cosh(c, r, KILN_NODE_Add);
}

/* 1 - x*x, or x*x + s */
static kiln_value *sq_plus(kiln_lower_ctx *c, kiln_value *x, double s, bool neg) {
  kiln_value *sq = lower_bin(c, KILN_NODE_Mul, x, x);
  return neg ? lower_bin(c, KILN_NODE_Sub, lower_sc(c, s), sq)
             : lower_bin(c, KILN_NODE_Add, sq, lower_sc(c, s));
}

bool kiln_lower_Asin(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* asin x = atan(x / sqrt(1 - x^2)); at |x| = 1 the quotient is +-inf. */
  r[0] = lower_un(
      c, KILN_NODE_Atan,
      lower_bin(c, KILN_NODE_Div, X0, lower_un(c, KILN_NODE_Sqrt, sq_plus(c, X0, 1, true))));
  return true;
}

bool kiln_lower_Acos(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* acos x = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near 1. */
  kiln_value *q = lower_bin(c, KILN_NODE_Div, lower_bin(c, KILN_NODE_Sub, lower_sc(c, 1), X0),
                            lower_bin(c, KILN_NODE_Add, lower_sc(c, 1), X0));
  r[0] = lower_bin(c, KILN_NODE_Mul, lower_un(c, KILN_NODE_Atan, lower_un(c, KILN_NODE_Sqrt, q)),
                   lower_sc(c, 2));
  return true;
}

bool kiln_lower_Asinh(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  /* Odd function: computing on |x| avoids cancellation for negative x. */
  kiln_value *a = lower_un(c, KILN_NODE_Abs, X0);
  kiln_value *y = lower_un(
      c, KILN_NODE_Log,
      lower_bin(c, KILN_NODE_Add, a, lower_un(c, KILN_NODE_Sqrt, sq_plus(c, a, 1, false))));
  r[0] = lower_where(c, lower_bin(c, KILN_NODE_Less, X0, lower_sc(c, 0)),
                     lower_un(c, KILN_NODE_Neg, y), y);
  return true;
}

bool kiln_lower_Acosh(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = lower_un(
      c, KILN_NODE_Log,
      lower_bin(c, KILN_NODE_Add, X0, lower_un(c, KILN_NODE_Sqrt, sq_plus(c, X0, -1, false))));
  return true;
}

bool kiln_lower_Atanh(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  kiln_value *q = lower_bin(c, KILN_NODE_Div, lower_bin(c, KILN_NODE_Add, lower_sc(c, 1), X0),
                            lower_bin(c, KILN_NODE_Sub, lower_sc(c, 1), X0));
  r[0] = lower_bin(c, KILN_NODE_Mul, lower_un(c, KILN_NODE_Log, q), lower_sc(c, 0.5));
  return true;
}

bool kiln_lower_Ceil(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  r[0] = lower_un(c, KILN_NODE_Neg, lower_un(c, KILN_NODE_Floor, lower_un(c, KILN_NODE_Neg, X0)));
  return true;
}

bool kiln_lower_Sign(kiln_lower_ctx *c, kiln_value **r) {
  if (c->elem == KILN_BOOL)
    return false;
  kiln_value *zero = lower_sc(c, 0);
  kiln_value *pos = lower_where(c, lower_bin(c, KILN_NODE_Less, zero, X0), lower_sc(c, 1), zero);
  if (kiln_elem_is_unsigned_int(c->elem)) {
    r[0] = pos;
    return true;
  }
  /* NaN fails both comparisons; Sign(NaN) is NaN, so keep x there. */
  kiln_value *neg = lower_where(c, lower_bin(c, KILN_NODE_Less, X0, zero), lower_sc(c, -1), pos);
  if (is_float(c))
    neg = lower_where(c, lower_un(c, KILN_NODE_IsNaN, X0), X0, neg);
  r[0] = neg;
  return true;
}

bool kiln_lower_IsInf(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_float(c))
    return false;
  bool neg = lower_iattr(c, "detect_negative", 1), pos = lower_iattr(c, "detect_positive", 1);
  kiln_value *y = NULL;
  if (pos)
    y = lower_bin(c, KILN_NODE_Equal, X0, lower_sc(c, INFINITY));
  if (neg) {
    kiln_value *n = lower_bin(c, KILN_NODE_Equal, X0, lower_sc(c, -INFINITY));
    y = y ? lower_bin(c, KILN_NODE_Or, y, n) : n;
  }
  if (!y) /* detects nothing: all false */
    y = lower_un(c, KILN_NODE_Not, lower_bin(c, KILN_NODE_Equal, X0, X0));
  if (!pos && !neg)
    y = lower_bin(c, KILN_NODE_And, y, lower_bin(c, KILN_NODE_Equal, X0, X0));
  r[0] = y;
  return true;
}

/* ---- comparisons and logic ---- */

bool kiln_lower_Greater(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_bin(c, KILN_NODE_Less, X1, X0);
  return true;
}
/* Or of strict and equal (not Not(Less)): NaN compares false both ways. */
bool kiln_lower_GreaterOrEqual(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_bin(c, KILN_NODE_Or, lower_bin(c, KILN_NODE_Less, X1, X0),
                   lower_bin(c, KILN_NODE_Equal, X0, X1));
  return true;
}
bool kiln_lower_LessOrEqual(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_bin(c, KILN_NODE_Or, lower_bin(c, KILN_NODE_Less, X0, X1),
                   lower_bin(c, KILN_NODE_Equal, X0, X1));
  return true;
}
bool kiln_lower_Or(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_un(
      c, KILN_NODE_Not,
      lower_bin(c, KILN_NODE_And, lower_un(c, KILN_NODE_Not, X0), lower_un(c, KILN_NODE_Not, X1)));
  return true;
}
bool kiln_lower_Xor(kiln_lower_ctx *c, kiln_value **r) {
  r[0] = lower_un(c, KILN_NODE_Not, lower_bin(c, KILN_NODE_Equal, X0, X1));
  return true;
}

static bool is_int(kiln_elem e) {
  return kiln_elem_is_signed_int(e) || kiln_elem_is_unsigned_int(e);
}

/* a | b = a + b - (a & b), and a ^ b = a + b - 2 (a & b), both exact in
 * wrapping integer arithmetic. */
static bool bitwise(kiln_lower_ctx *c, kiln_value **r, int times) {
  if (!is_int(c->elem))
    return false;
  kiln_value *both = lower_bin(c, KILN_NODE_BitwiseAnd, X0, X1);
  kiln_value *sum = lower_bin(c, KILN_NODE_Add, X0, X1);
  for (int i = 0; i < times; i++)
    sum = lower_bin(c, KILN_NODE_Sub, sum, both);
  r[0] = sum;
  return true;
}
bool kiln_lower_BitwiseOr(kiln_lower_ctx *c, kiln_value **r) {
  return bitwise(c, r, 1);
}
bool kiln_lower_BitwiseXor(kiln_lower_ctx *c, kiln_value **r) {
  return bitwise(c, r, 2);
}
bool kiln_lower_BitwiseNot(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_int(c->elem))
    return false;
  /* ~x = (0 - 1) - x: all ones minus x, for every width and signedness. */
  kiln_value *ones = lower_bin(c, KILN_NODE_Sub, lower_sc(c, 0), lower_sc(c, 1));
  r[0] = lower_bin(c, KILN_NODE_Sub, ones, X0);
  return true;
}

bool kiln_lower_Mish(kiln_lower_ctx *c, kiln_value **r) {
  if (!kiln_elem_is_float(c->elem))
    return false;
  r[0] = lower_bin(c, KILN_NODE_Mul, X0,
                   lower_un(c, KILN_NODE_Tanh, lower_un(c, KILN_NODE_Softplus, X0)));
  return true;
}

bool kiln_lower_Swish(kiln_lower_ctx *c, kiln_value **r) {
  if (!kiln_elem_is_float(c->elem))
    return false;
  double alpha = lower_fattr(c, "alpha", 1.0);
  kiln_value *ax = alpha == 1.0 ? X0 : lower_bin(c, KILN_NODE_Mul, X0, lower_sc(c, alpha));
  r[0] = lower_bin(c, KILN_NODE_Mul, X0, lower_un(c, KILN_NODE_Sigmoid, ax));
  return true;
}

/* ---- FusedElementwise: the body back into nodes ---- */

bool kiln_lower_FusedElementwise(kiln_lower_ctx *c, kiln_value **r) {
  const char *body = kiln_attrs_string_or(kiln_node_attrs(c->n), "body", "");
  kiln_fused_op ops[KILN_FUSED_MAX_OPS];
  uint32_t n = 0, nin = kiln_node_input_count(c->n);
  if (!c->s)
    c->s = kiln_fused_parse(body, nin, ops, KILN_FUSED_MAX_OPS, &n);
  if (c->s)
    return true;
  const kiln_type *ot = lower_tout(c, 0);
  c->elem = ot->elem;
  kiln_value *stack[KILN_FUSED_MAX_OPS];
  uint32_t sp = 0;
  for (uint32_t i = 0; i < n && !c->s; i++) {
    if (ops[i].kind == KILN_FUSED_INPUT) {
      stack[sp++] = kiln_node_input(c->n, ops[i].input);
    } else if (ops[i].kind == KILN_FUSED_CONST) {
      stack[sp++] = lower_sc(c, ops[i].value);
    } else if (kiln_fused_arity((kiln_node_kind)ops[i].kind) == 1 && sp >= 1) {
      stack[sp - 1] = lower_un(c, (kiln_node_kind)ops[i].kind, stack[sp - 1]);
    } else if (sp >= 2) {
      stack[sp - 2] = lower_bin(c, (kiln_node_kind)ops[i].kind, stack[sp - 2], stack[sp - 1]);
      sp--;
    }
  }
  if (c->s)
    return true;
  if (sp != 1) {
    c->s = kiln_status_make(KILN_INTERNAL, "lower: fused body '%s' left %u values", body, sp);
    return true;
  }
  kiln_value *y = stack[0];
  /* The body may not touch the widest input; the result still has the
   * broadcast shape. */
  if (!kiln_type_equal(kiln_value_type(y), ot)) {
    kiln_attr_desc a = KILN_ATTR_IS("shape", ot->dims, ot->rank);
    y = lower_emit(c, KILN_NODE_Expand, &y, 1, &a, 1);
  }
  r[0] = y;
  return true;
}
