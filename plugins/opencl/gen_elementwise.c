/* plugins/opencl/gen_elementwise.c: the elementwise family, kernels
 * computing one result element per work item: unary, binary and variadic
 * kinds with numpy broadcasting, Where, Clip, flat copies, and
 * FusedElementwise from its RPN body. The flat copy (ocl_gen_copy) also
 * serves the movement kinds that only relabel the shape (Reshape, Flatten,
 * Squeeze, Unsqueeze) and a reduction over no axes. The formulas follow the
 * interpreter (docs/interpreter.md): NaN propagates through Max/Min, Relu
 * keeps NaN, integer division by zero gives 0 here (the interpreter reports
 * an error; OpenCL kernels cannot). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ocl.h"

#define F(v) ocl_gen_const(e, (v), el)

static double attr_f(const ocl_gen *g, const char *n, double d) {
  return kiln_attrs_float_or(g->attrs, n, d);
}

/* Write the value of a float-only unary kind applied to x (type el). */
static bool float_unary(ocl_gen *g, ocl_sb *e, kiln_node_kind k, kiln_elem el, const char *x) {
  const char *fn = NULL, *T = ocl_ctype(el);
  switch (k) {
  case KILN_NODE_Acos:
    fn = "acos";
    break;
  case KILN_NODE_Acosh:
    fn = "acosh";
    break;
  case KILN_NODE_Asin:
    fn = "asin";
    break;
  case KILN_NODE_Asinh:
    fn = "asinh";
    break;
  case KILN_NODE_Atan:
    fn = "atan";
    break;
  case KILN_NODE_Atanh:
    fn = "atanh";
    break;
  case KILN_NODE_Ceil:
    fn = "ceil";
    break;
  case KILN_NODE_Cos:
    fn = "cos";
    break;
  case KILN_NODE_Cosh:
    fn = "cosh";
    break;
  case KILN_NODE_Erf:
    fn = "erf";
    break;
  case KILN_NODE_Exp:
    fn = "exp";
    break;
  case KILN_NODE_Floor:
    fn = "floor";
    break;
  case KILN_NODE_Log:
    fn = "log";
    break;
  case KILN_NODE_Round:
    fn = "rint";
    break;
  case KILN_NODE_Sin:
    fn = "sin";
    break;
  case KILN_NODE_Sinh:
    fn = "sinh";
    break;
  case KILN_NODE_Sqrt:
    fn = "sqrt";
    break;
  case KILN_NODE_Tan:
    fn = "tan";
    break;
  case KILN_NODE_Tanh:
    fn = "tanh";
    break;
  default:
    break;
  }
  if (fn) {
    ocl_sb_printf(e, "%s(%s)", fn, x);
    return true;
  }
  switch (k) {
  case KILN_NODE_Reciprocal:
    ocl_sb_printf(e, "(");
    F(1);
    ocl_sb_printf(e, " / %s)", x);
    return true;
  case KILN_NODE_Sigmoid:
    ocl_sb_printf(e, "(%s >= 0 ? 1 / (1 + exp(-%s)) : exp(%s) / (1 + exp(%s)))", x, x, x, x);
    return true;
  case KILN_NODE_Softplus:
    ocl_sb_printf(e, "(%s > 30 ? %s + log1p(exp(-%s)) : log1p(exp(%s)))", x, x, x, x);
    return true;
  case KILN_NODE_Softsign:
    ocl_sb_printf(e, "(%s / (1 + fabs(%s)))", x, x);
    return true;
  case KILN_NODE_HardSwish:
    ocl_sb_printf(e, "(%s * fmax((%s)0, fmin((%s)1, %s / 6 + ", x, T, T, x);
    F(0.5);
    ocl_sb_printf(e, ")))");
    return true;
  case KILN_NODE_Elu:
    ocl_sb_printf(e, "(%s < 0 ? ", x);
    F(attr_f(g, "alpha", 1.0));
    ocl_sb_printf(e, " * (exp(%s) - 1) : %s)", x, x);
    return true;
  case KILN_NODE_Selu: {
    double a = attr_f(g, "alpha", 1.67326319217681884765625);
    double gm = attr_f(g, "gamma", 1.05070102214813232421875);
    ocl_sb_printf(e, "(%s > 0 ? ", x);
    F(gm);
    ocl_sb_printf(e, " * %s : ", x);
    F(gm);
    ocl_sb_printf(e, " * (");
    F(a);
    ocl_sb_printf(e, " * exp(%s) - ", x);
    F(a);
    ocl_sb_printf(e, "))");
    return true;
  }
  case KILN_NODE_Celu: {
    double a = attr_f(g, "alpha", 1.0);
    ocl_sb_printf(e, "(fmax((%s)0, %s) + fmin((%s)0, ", T, x, T);
    F(a);
    ocl_sb_printf(e, " * (exp(%s / ", x);
    F(a);
    ocl_sb_printf(e, ") - 1)))");
    return true;
  }
  case KILN_NODE_HardSigmoid:
    ocl_sb_printf(e, "fmax((%s)0, fmin((%s)1, ", T, T);
    F(attr_f(g, "alpha", 0.2));
    ocl_sb_printf(e, " * %s + ", x);
    F(attr_f(g, "beta", 0.5));
    ocl_sb_printf(e, "))");
    return true;
  case KILN_NODE_LeakyRelu:
    ocl_sb_printf(e, "(%s < 0 ? ", x);
    F(attr_f(g, "alpha", 0.01));
    ocl_sb_printf(e, " * %s : %s)", x, x);
    return true;
  case KILN_NODE_ThresholdedRelu:
    ocl_sb_printf(e, "(%s > ", x);
    F(attr_f(g, "alpha", 1.0));
    ocl_sb_printf(e, " ? %s : 0)", x);
    return true;
  case KILN_NODE_Shrink: {
    double l = attr_f(g, "lambd", 0.5), b = attr_f(g, "bias", 0.0);
    ocl_sb_printf(e, "(%s < -", x);
    F(l);
    ocl_sb_printf(e, " ? %s + ", x);
    F(b);
    ocl_sb_printf(e, " : %s > ", x);
    F(l);
    ocl_sb_printf(e, " ? %s - ", x);
    F(b);
    ocl_sb_printf(e, " : 0)");
    return true;
  }
  case KILN_NODE_Gelu:
    if (!strcmp(kiln_attrs_string_or(g->attrs, "approximate", "none"), "tanh")) {
      ocl_sb_printf(e, "(0.5f * %s * (1 + tanh(", x);
      F(sqrt(2.0 / M_PI));
      ocl_sb_printf(e, " * (%s + ", x);
      F(0.044715);
      ocl_sb_printf(e, " * %s * %s * %s))))", x, x, x);
    } else {
      ocl_sb_printf(e, "(0.5f * %s * (1 + erf(%s / ", x, x);
      F(sqrt(2.0));
      ocl_sb_printf(e, ")))");
    }
    return true;
  default:
    return false;
  }
}

/* Unary kinds that also run on integers (and floats). */
static bool any_unary(ocl_sb *e, kiln_node_kind k, kiln_elem el, const char *x) {
  bool f = ocl_is_float(el), u = kiln_elem_is_unsigned_int(el) || el == KILN_BOOL;
  switch (k) {
  case KILN_NODE_Abs:
    if (f)
      ocl_sb_printf(e, "fabs(%s)", x);
    else if (u)
      ocl_sb_printf(e, "%s", x);
    else
      ocl_sb_printf(e, "(%s < 0 ? -%s : %s)", x, x, x);
    return el != KILN_BOOL;
  case KILN_NODE_Neg:
    ocl_sb_printf(e, "(0 - %s)", x);
    return el != KILN_BOOL;
  case KILN_NODE_Sign:
    if (f)
      ocl_sb_printf(e, "(isnan(%s) ? %s : (%s > 0) - (%s < 0))", x, x, x, x);
    else if (u)
      ocl_sb_printf(e, "(%s != 0)", x);
    else
      ocl_sb_printf(e, "((%s > 0) - (%s < 0))", x, x);
    return el != KILN_BOOL;
  case KILN_NODE_Relu:
    ocl_sb_printf(e, "(%s < 0 ? 0 : %s)", x, x);
    return el != KILN_BOOL;
  case KILN_NODE_Not:
    ocl_sb_printf(e, "(!%s)", x);
    return el == KILN_BOOL;
  case KILN_NODE_Identity:
    ocl_sb_printf(e, "%s", x);
    return true;
  case KILN_NODE_BitwiseNot:
    ocl_sb_printf(e, "(~%s)", x);
    return !f && el != KILN_BOOL;
  default:
    return false;
  }
}

/* Cast from `from` to `to` of value x. */
static void cast_expr(ocl_sb *e, kiln_elem from, kiln_elem to, const char *x) {
  const char *t = ocl_ctype(to);
  if (to == KILN_BOOL)
    ocl_sb_printf(e, "(uchar)(%s != 0)", x);
  else if (ocl_is_float(from) && !ocl_is_float(to))
    ocl_sb_printf(e, "convert_%s_sat_rtz(%s)", t, x);
  else
    ocl_sb_printf(e, "(%s)(%s)", t, x);
}

kiln_status ocl_gen_unary(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  if (!x || kiln_type_numel(x) != kiln_type_numel(y))
    return ocl_gen_unsupported(g, "unary operand shapes differ");
  ocl_sb e = {0};
  bool ok;
  kiln_elem el = ocl_math_elem(x->elem), yl = ocl_math_elem(y->elem);
  if (g->kind == KILN_NODE_Cast) {
    cast_expr(&e, el, yl, "x");
    ok = true;
  } else if (g->kind == KILN_NODE_IsNaN) {
    ocl_sb_printf(&e, "(uchar)(isnan(x) != 0)");
    ok = ocl_is_float(el);
  } else if (g->kind == KILN_NODE_IsInf) {
    int neg = kiln_attrs_int_or(g->attrs, "detect_negative", 1) != 0;
    int pos = kiln_attrs_int_or(g->attrs, "detect_positive", 1) != 0;
    ocl_sb_printf(&e, "%s",
                  pos && neg ? "(uchar)(isinf(x) != 0)"
                  : pos      ? "(uchar)(isinf(x) && x > 0)"
                  : neg      ? "(uchar)(isinf(x) && x < 0)"
                             : "(uchar)0");
    ok = ocl_is_float(el);
  } else {
    ok = any_unary(&e, g->kind, el, "x");
    if (!ok && ocl_is_float(el)) {
      e.n = 0;
      ok = float_unary(g, &e, g->kind, el, "x");
    }
  }
  if (!ok || e.oom) {
    ocl_sb_free(&e);
    return ocl_gen_unsupported(g, "no OpenCL formula for this kind on this element type");
  }
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_sb_printf(g->src, "  %s x = %s(p1[gid]);\n  p0[gid] = %s((%s)%s);\n", ocl_ctype(el),
                ocl_load_fn(x->elem), ocl_store_fn(y->elem), ocl_ctype(yl), e.p);
  ocl_gen_end(g);
  ocl_sb_free(&e);
  return NULL;
}

/* Binary formulas of a (type el) and b. Statements end by assigning r. */
static bool binary_stmt(ocl_gen *g, kiln_elem el, kiln_elem eb, const char *rt) {
  ocl_sb *s = g->src;
  bool f = ocl_is_float(el), u = kiln_elem_is_unsigned_int(el), bo = el == KILN_BOOL;
  const char *op = NULL;
  switch (g->kind) {
  case KILN_NODE_Add:
    op = "+";
    break;
  case KILN_NODE_Sub:
    op = "-";
    break;
  case KILN_NODE_Mul:
    op = "*";
    break;
  case KILN_NODE_Equal:
    op = "==";
    break;
  case KILN_NODE_Greater:
    op = ">";
    break;
  case KILN_NODE_GreaterOrEqual:
    op = ">=";
    break;
  case KILN_NODE_Less:
    op = "<";
    break;
  case KILN_NODE_LessOrEqual:
    op = "<=";
    break;
  default:
    break;
  }
  if (op) {
    if (bo && g->kind != KILN_NODE_Equal)
      return false;
    ocl_sb_printf(s, "  %s r = (%s)(a %s b);\n", rt, rt, op);
    return true;
  }
  switch (g->kind) {
  case KILN_NODE_Div:
    if (bo)
      return false;
    if (f)
      ocl_sb_printf(s, "  %s r = a / b;\n", rt);
    else if (u)
      ocl_sb_printf(s, "  %s r = b == 0 ? 0 : a / b;\n", rt);
    else
      ocl_sb_printf(s, "  %s r = b == 0 ? 0 : b == -1 ? (%s)(0 - a) : a / b;\n", rt, rt);
    return true;
  case KILN_NODE_Mod: {
    int fm = kiln_attrs_int_or(g->attrs, "fmod", 0) != 0;
    if (bo)
      return false;
    if (f)
      ocl_sb_printf(s,
                    "  %s r = fmod(a, b);\n  if (!%d && r != 0 && ((r < 0) != (b < 0))) r += b;\n",
                    rt, fm);
    else if (u)
      ocl_sb_printf(s, "  %s r = b == 0 ? 0 : a %% b;\n", rt);
    else
      ocl_sb_printf(s,
                    "  %s r = (b == 0 || b == -1) ? 0 : a %% b;\n"
                    "  if (!%d && r != 0 && ((r < 0) != (b < 0))) r += b;\n",
                    rt, fm);
    return true;
  }
  case KILN_NODE_Pow:
    if (bo || eb == KILN_BOOL)
      return false;
    if (f || ocl_is_float(eb)) {
      const char *ct = (el == KILN_F64 || eb == KILN_F64) ? "double" : "float";
      if (f)
        ct = ocl_ctype(el);
      ocl_sb_printf(s, "  %s r = (%s)pow((%s)a, (%s)b);\n", rt, rt, ct, ct);
    } else {
      ocl_sb_printf(
          s,
          "  long e = (long)b; ulong bb = (ulong)(long)a, rr = 1;\n"
          "  if (e < 0) rr = (long)a == 1 ? 1 : (long)a == -1 ? ((e & 1) ? (ulong)-1 : 1) : 0;\n"
          "  else while (e) { if (e & 1) rr *= bb; bb *= bb; e >>= 1; }\n"
          "  %s r = (%s)rr;\n",
          rt, rt);
    }
    return true;
  case KILN_NODE_And:
  case KILN_NODE_Or:
  case KILN_NODE_Xor:
    if (!bo)
      return false;
    ocl_sb_printf(s, "  %s r = (%s)(%s);\n", rt, rt,
                  g->kind == KILN_NODE_And  ? "a && b"
                  : g->kind == KILN_NODE_Or ? "a || b"
                                            : "(a != 0) != (b != 0)");
    return true;
  case KILN_NODE_BitShift: {
    if (!u)
      return false;
    bool left = !strcmp(kiln_attrs_string_or(g->attrs, "direction", ""), "LEFT");
    ocl_sb_printf(s, "  %s r = (%s)((ulong)b >= 64 ? 0 : (ulong)a %s (ulong)b);\n", rt, rt,
                  left ? "<<" : ">>");
    return true;
  }
  case KILN_NODE_BitwiseAnd:
  case KILN_NODE_BitwiseOr:
  case KILN_NODE_BitwiseXor:
    if (bo || f)
      return false;
    ocl_sb_printf(s, "  %s r = (%s)(a %s b);\n", rt, rt,
                  g->kind == KILN_NODE_BitwiseAnd  ? "&"
                  : g->kind == KILN_NODE_BitwiseOr ? "|"
                                                   : "^");
    return true;
  case KILN_NODE_PRelu:
    if (bo)
      return false;
    ocl_sb_printf(s, "  %s r = a < 0 ? (%s)(a * b) : a;\n", rt, rt);
    return true;
  default:
    return false;
  }
}

kiln_status ocl_gen_binary(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *a = g->ops[1].type, *b = g->ops[2].type;
  if (g->n_ops != 3 || !a || !b)
    return ocl_gen_unsupported(g, "binary kind needs two inputs");
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  kiln_elem ea = ocl_math_elem(a->elem), eb = ocl_math_elem(b->elem);
  ocl_sb_printf(g->src, "  %s a = %s(p1[", ocl_ctype(ea), ocl_load_fn(a->elem));
  ocl_gen_bcast_index(g, a, y->rank, "c");
  ocl_sb_printf(g->src, "]);\n  %s b = %s(p2[", ocl_ctype(eb), ocl_load_fn(b->elem));
  ocl_gen_bcast_index(g, b, y->rank, "c");
  ocl_sb_printf(g->src, "]);\n");
  if (!binary_stmt(g, ea, eb, ocl_ctype(ocl_math_elem(y->elem))))
    return ocl_gen_unsupported(g, "no OpenCL formula for this kind on this element type");
  ocl_sb_printf(g->src, "  p0[gid] = %s(r);\n", ocl_store_fn(y->elem));
  ocl_gen_end(g);
  return NULL;
}

/* NaN-propagating max/min as in numpy.maximum (floats), plain for ints. */
static void minmax(ocl_sb *s, bool is_max, bool f, const char *a, const char *b) {
  if (f)
    ocl_sb_printf(s, "((isnan(%s) || isnan(%s)) ? %s + %s : %s(%s, %s))", a, b, a, b,
                  is_max ? "fmax" : "fmin", a, b);
  else
    ocl_sb_printf(s, "(%s %s %s ? %s : %s)", a, is_max ? ">" : "<", b, a, b);
}

kiln_status ocl_gen_variadic(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type;
  kiln_elem el = ocl_math_elem(y->elem);
  bool f = ocl_is_float(el);
  if (el == KILN_BOOL && (g->kind == KILN_NODE_Sum || g->kind == KILN_NODE_Mean))
    return ocl_gen_unsupported(g, "Sum/Mean of bool");
  const char *t = ocl_ctype(el);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  for (uint32_t i = 1; i < g->n_ops; i++) {
    if (!g->ops[i].type)
      return ocl_gen_unsupported(g, "absent variadic input");
    ocl_sb_printf(g->src, "  %s v%u = %s(p%u[", t, i, ocl_load_fn(g->ops[i].type->elem), i);
    ocl_gen_bcast_index(g, g->ops[i].type, y->rank, "c");
    ocl_sb_printf(g->src, "]);\n");
    if (i == 1) {
      ocl_sb_printf(g->src, "  %s acc = v1;\n", t);
      continue;
    }
    ocl_sb_printf(g->src, "  acc = ");
    if (g->kind == KILN_NODE_Max || g->kind == KILN_NODE_Min) {
      char vb[16];
      snprintf(vb, sizeof vb, "v%u", i);
      minmax(g->src, g->kind == KILN_NODE_Max, f, "acc", vb);
    } else {
      ocl_sb_printf(g->src, "acc + v%u", i);
    }
    ocl_sb_printf(g->src, ";\n");
  }
  if (g->kind == KILN_NODE_Mean)
    ocl_sb_printf(g->src, "  acc = acc / (%s)%u;\n", t, g->n_ops - 1);
  ocl_sb_printf(g->src, "  p0[gid] = %s(acc);\n", ocl_store_fn(y->elem));
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_where(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type;
  if (g->n_ops != 4 || !g->ops[1].type || !g->ops[2].type || !g->ops[3].type)
    return ocl_gen_unsupported(g, "Where needs three inputs");
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  ocl_sb_printf(g->src, "  p0[gid] = p1[");
  ocl_gen_bcast_index(g, g->ops[1].type, y->rank, "c");
  ocl_sb_printf(g->src, "] ? p2[");
  ocl_gen_bcast_index(g, g->ops[2].type, y->rank, "c");
  ocl_sb_printf(g->src, "] : p3[");
  ocl_gen_bcast_index(g, g->ops[3].type, y->rank, "c");
  ocl_sb_printf(g->src, "];\n");
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_clip(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type;
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  const char *ld = ocl_load_fn(y->elem);
  ocl_sb_printf(g->src, "  %s v = %s(p1[gid]);\n", ocl_ctype(ocl_math_elem(y->elem)), ld);
  if (g->n_ops > 2 && g->ops[2].type)
    ocl_sb_printf(g->src, "  if (v < %s(p2[0])) v = %s(p2[0]);\n", ld, ld);
  if (g->n_ops > 3 && g->ops[3].type)
    ocl_sb_printf(g->src, "  if (v > %s(p3[0])) v = %s(p3[0]);\n", ld, ld);
  ocl_sb_printf(g->src, "  p0[gid] = %s(v);\n", ocl_store_fn(y->elem));
  ocl_gen_end(g);
  return NULL;
}

kiln_status ocl_gen_copy(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type, *x = g->ops[1].type;
  if (!x || x->elem != y->elem || kiln_type_numel(x) != kiln_type_numel(y))
    return ocl_gen_unsupported(g, "copy between buffers of different sizes");
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_sb_printf(g->src, "  p0[gid] = p1[gid];\n");
  ocl_gen_end(g);
  return NULL;
}

bool ocl_fused_kind_ok(kiln_node_kind k, kiln_elem el) {
  switch (kiln_fused_arity(k)) {
  case 2:
    return k == KILN_NODE_Add || k == KILN_NODE_Sub || k == KILN_NODE_Mul || k == KILN_NODE_Div ||
           k == KILN_NODE_Pow || k == KILN_NODE_Max || k == KILN_NODE_Min;
  case 1: {
    /* the same two generators ocl_gen_fused tries, writing to a scratch
     * buffer (a body's Gelu is the exact form: no attributes) */
    ocl_sb tmp = {0};
    ocl_gen probe = {0};
    bool ok = any_unary(&tmp, k, el, "x") || float_unary(&probe, &tmp, k, el, "x");
    ocl_sb_free(&tmp);
    return ok;
  }
  default:
    return false;
  }
}

kiln_status ocl_gen_fused(ocl_gen *g) {
  const kiln_type *y = g->ops[0].type;
  kiln_elem el = y->elem;
  if (!ocl_is_float(el))
    return ocl_gen_unsupported(g, "FusedElementwise on a non-float type");
  uint32_t n_in = g->n_ops - 1, n = 0;
  kiln_fused_op ops[KILN_FUSED_MAX_OPS];
  KILN_TRY_CTX(kiln_fused_parse(kiln_attrs_string_or(g->attrs, "body", ""), n_in, ops,
                                KILN_FUSED_MAX_OPS, &n),
               "opencl: instruction %u (FusedElementwise)", kiln_instr_index(g->in));
  const char *t = ocl_ctype(el);
  ocl_gen_begin_1d(g, kiln_type_numel(y));
  ocl_gen_unravel(g, "gid", y->dims, y->rank, "c");
  for (uint32_t i = 0; i < n_in; i++) {
    if (!g->ops[1 + i].type || g->ops[1 + i].type->elem != el)
      return ocl_gen_unsupported(g, "FusedElementwise inputs must share the result's type");
    ocl_sb_printf(g->src, "  %s x%u = p%u[", t, i, 1 + i);
    ocl_gen_bcast_index(g, g->ops[1 + i].type, y->rank, "c");
    ocl_sb_printf(g->src, "];\n");
  }
  /* The RPN stack becomes temporaries s<depth>_<step>; stack[] holds which
   * temporary is at each depth. */
  uint32_t stack[KILN_FUSED_MAX_OPS], sp = 0;
  for (uint32_t i = 0; i < n; i++) {
    const kiln_fused_op *o = &ops[i];
    ocl_sb *s = g->src;
    ocl_sb_printf(s, "  %s t%u = ", t, i);
    if (o->kind == KILN_FUSED_INPUT) {
      ocl_sb_printf(s, "x%u", o->input);
    } else if (o->kind == KILN_FUSED_CONST) {
      ocl_gen_const(s, o->value, el);
    } else if (kiln_fused_arity((kiln_node_kind)o->kind) == 1) {
      char x[16];
      snprintf(x, sizeof x, "t%u", stack[--sp]);
      kiln_node_kind k = (kiln_node_kind)o->kind;
      ocl_sb tmp = {0};
      if (!any_unary(&tmp, k, el, x)) {
        tmp.n = 0;
        if (tmp.p)
          tmp.p[0] = 0;
        ocl_gen saved = *g;
        saved.attrs = NULL; /* Gelu in a body is the exact erf form */
        if (!float_unary(&saved, &tmp, k, el, x)) {
          ocl_sb_free(&tmp);
          return ocl_gen_unsupported(g, "FusedElementwise body uses an unknown kind");
        }
      }
      ocl_sb_printf(s, "%s", tmp.oom ? "0" : tmp.p);
      ocl_sb_free(&tmp);
    } else {
      uint32_t b = stack[--sp], a = stack[--sp];
      char as[16], bs[16];
      snprintf(as, sizeof as, "t%u", a);
      snprintf(bs, sizeof bs, "t%u", b);
      switch ((kiln_node_kind)o->kind) {
      case KILN_NODE_Add:
        ocl_sb_printf(s, "%s + %s", as, bs);
        break;
      case KILN_NODE_Sub:
        ocl_sb_printf(s, "%s - %s", as, bs);
        break;
      case KILN_NODE_Mul:
        ocl_sb_printf(s, "%s * %s", as, bs);
        break;
      case KILN_NODE_Div:
        ocl_sb_printf(s, "%s / %s", as, bs);
        break;
      case KILN_NODE_Pow:
        ocl_sb_printf(s, "pow(%s, %s)", as, bs);
        break;
      case KILN_NODE_Max:
        minmax(s, true, true, as, bs);
        break;
      case KILN_NODE_Min:
        minmax(s, false, true, as, bs);
        break;
      default:
        return ocl_gen_unsupported(g, "FusedElementwise body uses an unknown binary kind");
      }
    }
    ocl_sb_printf(s, ";\n");
    stack[sp++] = i;
  }
  if (sp != 1)
    return ocl_gen_unsupported(g, "FusedElementwise body leaves no single value");
  ocl_sb_printf(g->src, "  p0[gid] = t%u;\n", stack[0]);
  ocl_gen_end(g);
  return NULL;
}
