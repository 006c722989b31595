/* plugins/cpu/emit_elementwise_loop.c: the elementwise loop generator. Every elementwise
 * instruction (a plain unary or binary kind, or a FusedElementwise body) is
 * one loop that reads each input once per element and writes the output
 * once. Shapes are static, so broadcasting is resolved here: dims are
 * collapsed, each input gets strides, and the innermost dim is a counted
 * loop where every input is either contiguous or loop-invariant, which the
 * O3 loop vectorizer turns into vector code of the target width (the f32
 * math helpers are branch-free and inlined for that). The sizes and
 * strides are passed at run time, so one worker function serves every
 * instruction of the same structure. Large loops run on the thread pool
 * over a flat element range. */
#include <stdio.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "cpu.h"
#include "emit_elementwise_ops.h"

/* Below this many elements a loop runs on the calling thread: waking the
 * pool costs more than it saves. */
#define KCPU_EW_PARALLEL_MIN 32768

/* Rows from 16 up to this long (a blocked layout's 16 channels, where an
 * input broadcast over pixels keeps rows from merging) also get a loop of
 * constant trip count, run over whole rows in runs (ew_worker): LLVM
 * vectorizes a row of 16 into one vector operation, where with a run-time
 * count it went to the scalar remainder. */
#define KCPU_EW_FIXED_MAX 64

typedef struct ew_gen {
  kcpu_emit *e;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef ty; /* element type of the computation */
  LLVMTypeRef st; /* as stored in memory (half for f16, i16 for bf16, else ty) */
  bool bf16;
  LLVMTypeRef out_ty; /* of the result in memory (i8 for bool) */
  kiln_elem elem;
  /* alias scopes of a worker: its output's (on the store) and the list
   * that inputs apart from the output are tagged noalias with */
  LLVMValueRef out_scope;
  unsigned scope_kind, noalias_kind;
} ew_gen;

/* f16 (stored as half) and bf16 (stored as i16: the top half of an f32)
 * are computed in f32, one rounding per loop's result, like the
 * reference's rounding of each kind's output. */
static bool ew_is_float(kiln_elem el) {
  return el == KILN_F32 || el == KILN_F64 || el == KILN_F16 || el == KILN_BF16;
}
static bool ew_is_int(kiln_elem el) {
  return el == KILN_I8 || el == KILN_U8 || el == KILN_I16 || el == KILN_U16 || el == KILN_I32 ||
         el == KILN_U32 || el == KILN_I64 || el == KILN_U64;
}

static bool ew_is_unsigned(kiln_elem el) {
  return el == KILN_U8 || el == KILN_U16 || el == KILN_U32 || el == KILN_U64;
}

static bool ew_op_ok(kiln_elem el, int32_t kind) {
  if (kind == KILN_FUSED_INPUT || kind == KILN_FUSED_CONST)
    return true;
  if (kind == KCPU_EW_FMOD)
    return ew_is_float(el) || ew_is_int(el);
  if (kind == KCPU_EW_SHL || kind == KCPU_EW_SHR)
    return ew_is_unsigned(el);
  if ((unsigned)kind >= KILN_NODE_KIND_COUNT)
    return false;
  switch ((kiln_node_kind)kind) {
  case KILN_NODE_Add:
  case KILN_NODE_Sub:
  case KILN_NODE_Mul:
  case KILN_NODE_Div:
  case KILN_NODE_Max:
  case KILN_NODE_Min:
  case KILN_NODE_Neg:
  case KILN_NODE_Abs:
  case KILN_NODE_Relu:
  case KILN_NODE_Sign:
  case KILN_NODE_Identity:
    return ew_is_float(el) || ew_is_int(el);
  case KILN_NODE_Ceil:
  case KILN_NODE_Floor:
  case KILN_NODE_Round:
  case KILN_NODE_Sqrt:
  case KILN_NODE_Reciprocal:
  case KILN_NODE_Exp:
  case KILN_NODE_Log:
  case KILN_NODE_Tanh:
  case KILN_NODE_Sigmoid:
  case KILN_NODE_Erf:
  case KILN_NODE_Sin:
  case KILN_NODE_Cos:
  case KILN_NODE_Tan:
  case KILN_NODE_Softplus:
  case KILN_NODE_Softsign:
  case KILN_NODE_Gelu:
  case KILN_NODE_Pow:
  case KILN_NODE_Atan:
  case KILN_NODE_Acos:
  case KILN_NODE_Asin:
  case KILN_NODE_Acosh:
  case KILN_NODE_Asinh:
  case KILN_NODE_Atanh:
  case KILN_NODE_Cosh:
  case KILN_NODE_Sinh:
    return ew_is_float(el);
  case KILN_NODE_Mod:
    return ew_is_float(el) || ew_is_int(el);
  case KILN_NODE_BitwiseAnd:
  case KILN_NODE_BitwiseOr:
  case KILN_NODE_BitwiseXor:
  case KILN_NODE_BitwiseNot:
    return ew_is_int(el);
  case KILN_NODE_Equal:
  case KILN_NODE_Greater:
  case KILN_NODE_GreaterOrEqual:
  case KILN_NODE_Less:
  case KILN_NODE_LessOrEqual:
    return ew_is_float(el) || ew_is_int(el) || el == KILN_BOOL;
  case KILN_NODE_IsNaN:
    return ew_is_float(el);
  case KILN_NODE_And:
  case KILN_NODE_Or:
  case KILN_NODE_Xor:
  case KILN_NODE_Not:
    return el == KILN_BOOL;
  default:
    return false;
  }
}

/* Operands of an op in a body: fused vocabulary, plus the comparisons and
 * logical kinds the plain-kind path uses. */
static uint32_t ew_arity(kiln_node_kind k) {
  if ((int)k == KCPU_EW_FMOD || (int)k == KCPU_EW_SHL || (int)k == KCPU_EW_SHR ||
      k == KILN_NODE_BitwiseAnd || k == KILN_NODE_BitwiseOr || k == KILN_NODE_BitwiseXor)
    return 2;
  if (k == KILN_NODE_BitwiseNot)
    return 1;
  uint32_t a = kiln_fused_arity(k);
  if (a)
    return a;
  const kiln_node_kind_info *info = kiln_node_kind_get_info(k);
  return info && (info->flags & KILN_NK_BINARY) ? 2 : 1;
}

/* Does the body's last op make a bool from non-bool operands? */
static bool ew_makes_bool(kiln_node_kind k) {
  return k == KILN_NODE_Equal || k == KILN_NODE_Greater || k == KILN_NODE_GreaterOrEqual ||
         k == KILN_NODE_Less || k == KILN_NODE_LessOrEqual || k == KILN_NODE_IsNaN;
}

bool kcpu_ew_supported(kiln_elem elem, const kiln_fused_op *ops, uint32_t n_ops) {
  for (uint32_t i = 0; i < n_ops; i++)
    if (!ew_op_ok(elem, ops[i].kind))
      return false;
  return n_ops > 0;
}

static bool ew_signed(kiln_elem el) {
  return el == KILN_I8 || el == KILN_I16 || el == KILN_I32 || el == KILN_I64;
}

static LLVMValueRef ew_intrinsic(ew_gen *g, const char *name, LLVMValueRef *args, unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef tys[1] = {g->ty};
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, tys, 1);
  LLVMTypeRef ft = LLVMIntrinsicGetType(g->ctx, id, tys, 1);
  return LLVMBuildCall2(g->b, ft, fn, args, n, "");
}

/* A scalar math function: the library's kcpu_m_NAME for f32, libm's NAME
 * (resolved from the process in the JIT, from -lm in bundles) for f64. */
static LLVMValueRef ew_math(ew_gen *g, const char *name, LLVMValueRef x) {
  char buf[64];
  bool f32 = g->elem == KILN_F32;
  snprintf(buf, sizeof buf, f32 ? "kcpu_m_%s" : "%s", name);
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, buf);
  LLVMTypeRef ft = LLVMFunctionType(g->ty, &g->ty, 1, 0);
  if (!fn) {
    fn = LLVMAddFunction(g->mod, buf, ft);
    if (!f32) /* libm without errno: lets the optimizer treat it as pure */
      LLVMAddAttributeAtIndex(
          fn, LLVMAttributeFunctionIndex,
          LLVMCreateEnumAttribute(g->ctx, LLVMGetEnumAttributeKindForName("nounwind", 8), 0));
  }
  return LLVMBuildCall2(g->b, ft, fn, &x, 1, "");
}

/* A libm function without a vectorizable library twin: NAMEf for f32
 * (and f16, computed in f32), NAME for f64. */
static LLVMValueRef ew_libm(ew_gen *g, const char *name, LLVMValueRef x) {
  char buf[64];
  snprintf(buf, sizeof buf, g->elem == KILN_F64 ? "%s" : "%sf", name);
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, buf);
  LLVMTypeRef ft = LLVMFunctionType(g->ty, &g->ty, 1, 0);
  if (!fn) {
    fn = LLVMAddFunction(g->mod, buf, ft);
    LLVMAddAttributeAtIndex(
        fn, LLVMAttributeFunctionIndex,
        LLVMCreateEnumAttribute(g->ctx, LLVMGetEnumAttributeKindForName("nounwind", 8), 0));
  }
  return LLVMBuildCall2(g->b, ft, fn, &x, 1, "");
}

static LLVMValueRef ew_fconst(ew_gen *g, double v) {
  return LLVMConstReal(g->ty, v);
}

static LLVMValueRef ew_unary(ew_gen *g, kiln_node_kind k, LLVMValueRef x) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(g->ctx);
  if (k == KILN_NODE_Not)
    return LLVMBuildXor(b, x, LLVMConstInt(i8, 1, 0), "");
  if (k == KILN_NODE_IsNaN)
    return LLVMBuildZExt(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), i8, "");
  if (k == KILN_NODE_BitwiseNot)
    return LLVMBuildNot(b, x, "");
  if (ew_is_int(g->elem)) {
    LLVMValueRef zero = LLVMConstNull(g->ty);
    switch (k) {
    case KILN_NODE_Neg:
      return LLVMBuildSub(b, zero, x, "");
    case KILN_NODE_Abs:
      if (!ew_signed(g->elem))
        return x;
      return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, x, zero, ""),
                             LLVMBuildSub(b, zero, x, ""), x, "");
    case KILN_NODE_Relu:
      if (!ew_signed(g->elem))
        return x;
      return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, x, zero, ""), x, zero, "");
    case KILN_NODE_Sign: {
      LLVMValueRef one = LLVMConstInt(g->ty, 1, 0);
      LLVMValueRef pos = LLVMBuildSelect(
          b, LLVMBuildICmp(b, ew_signed(g->elem) ? LLVMIntSGT : LLVMIntUGT, x, zero, ""), one, zero,
          "");
      if (!ew_signed(g->elem))
        return pos;
      return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, x, zero, ""), LLVMConstAllOnes(g->ty),
                             pos, "");
    }
    default:
      return x; /* Identity */
    }
  }
  LLVMValueRef zero = ew_fconst(g, 0.0), one = ew_fconst(g, 1.0);
  switch (k) {
  case KILN_NODE_Abs:
    return ew_intrinsic(g, "llvm.fabs", &x, 1);
  case KILN_NODE_Ceil:
    return ew_intrinsic(g, "llvm.ceil", &x, 1);
  case KILN_NODE_Floor:
    return ew_intrinsic(g, "llvm.floor", &x, 1);
  case KILN_NODE_Round:
    return ew_intrinsic(g, "llvm.roundeven", &x, 1);
  case KILN_NODE_Sqrt:
    return ew_intrinsic(g, "llvm.sqrt", &x, 1);
  case KILN_NODE_Neg:
    return LLVMBuildFNeg(b, x, "");
  case KILN_NODE_Reciprocal:
    return LLVMBuildFDiv(b, one, x, "");
  case KILN_NODE_Relu: /* unordered-or-greater keeps NaN, like the reference */
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUGT, x, zero, ""), x, zero, "");
  case KILN_NODE_Sign: {
    LLVMValueRef neg =
        LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, zero, ""), ew_fconst(g, -1.0), x, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, zero, ""), one, neg, "");
  }
  case KILN_NODE_Softsign: {
    LLVMValueRef a = ew_intrinsic(g, "llvm.fabs", &x, 1);
    return LLVMBuildFDiv(b, x, LLVMBuildFAdd(b, one, a, ""), "");
  }
  case KILN_NODE_Exp:
    return ew_math(g, "exp", x);
  case KILN_NODE_Log:
    return ew_math(g, "log", x);
  case KILN_NODE_Tanh:
    return ew_math(g, "tanh", x);
  case KILN_NODE_Erf:
    return ew_math(g, "erf", x);
  case KILN_NODE_Sin:
    return ew_math(g, "sin", x);
  case KILN_NODE_Cos:
    return ew_math(g, "cos", x);
  case KILN_NODE_Tan:
    return ew_math(g, "tan", x);
  case KILN_NODE_Atan:
    return ew_libm(g, "atan", x);
  case KILN_NODE_Acos:
    return ew_libm(g, "acos", x);
  case KILN_NODE_Asin:
    return ew_libm(g, "asin", x);
  case KILN_NODE_Acosh:
    return ew_libm(g, "acosh", x);
  case KILN_NODE_Asinh:
    return ew_libm(g, "asinh", x);
  case KILN_NODE_Atanh:
    return ew_libm(g, "atanh", x);
  case KILN_NODE_Cosh:
    return ew_libm(g, "cosh", x);
  case KILN_NODE_Sinh:
    return ew_libm(g, "sinh", x);
  case KILN_NODE_Sigmoid:
    if (g->elem == KILN_F32)
      return ew_math(g, "sigmoid", x);
    return LLVMBuildFDiv(b, one,
                         LLVMBuildFAdd(b, one, ew_math(g, "exp", LLVMBuildFNeg(b, x, "")), ""), "");
  case KILN_NODE_Softplus:
    if (g->elem == KILN_F32)
      return ew_math(g, "softplus", x);
    {
      LLVMValueRef a = ew_intrinsic(g, "llvm.fabs", &x, 1);
      LLVMValueRef t = ew_math(g, "log1p", ew_math(g, "exp", LLVMBuildFNeg(b, a, "")));
      LLVMValueRef args[2] = {x, zero};
      return LLVMBuildFAdd(b, ew_intrinsic(g, "llvm.maxnum", args, 2), t, "");
    }
  case KILN_NODE_Gelu:
    if (g->elem == KILN_F32)
      return ew_math(g, "gelu", x);
    {
      LLVMValueRef er =
          ew_math(g, "erf", LLVMBuildFMul(b, x, ew_fconst(g, 0.70710678118654752440), ""));
      return LLVMBuildFMul(b, LLVMBuildFMul(b, ew_fconst(g, 0.5), x, ""),
                           LLVMBuildFAdd(b, one, er, ""), "");
    }
  default:
    return x; /* Identity */
  }
}

static bool ew_const_is(LLVMValueRef v, double want) {
  if (!LLVMIsAConstantFP(v))
    return false;
  LLVMBool lost;
  return LLVMConstRealGetDouble(v, &lost) == want;
}

static LLVMValueRef ew_compare(ew_gen *g, kiln_node_kind k, LLVMValueRef a, LLVMValueRef c) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef r;
  if (ew_is_float(g->elem)) {
    LLVMRealPredicate p = k == KILN_NODE_Equal            ? LLVMRealOEQ
                          : k == KILN_NODE_Greater        ? LLVMRealOGT
                          : k == KILN_NODE_GreaterOrEqual ? LLVMRealOGE
                          : k == KILN_NODE_Less           ? LLVMRealOLT
                                                          : LLVMRealOLE;
    r = LLVMBuildFCmp(b, p, a, c, "");
  } else {
    bool sg = ew_signed(g->elem);
    LLVMIntPredicate p = k == KILN_NODE_Equal            ? LLVMIntEQ
                         : k == KILN_NODE_Greater        ? (sg ? LLVMIntSGT : LLVMIntUGT)
                         : k == KILN_NODE_GreaterOrEqual ? (sg ? LLVMIntSGE : LLVMIntUGE)
                         : k == KILN_NODE_Less           ? (sg ? LLVMIntSLT : LLVMIntULT)
                                                         : (sg ? LLVMIntSLE : LLVMIntULE);
    r = LLVMBuildICmp(b, p, a, c, "");
  }
  return LLVMBuildZExt(b, r, LLVMInt8TypeInContext(g->ctx), "");
}

static LLVMValueRef ew_binary(ew_gen *g, kiln_node_kind k, LLVMValueRef a, LLVMValueRef c) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef args[2] = {a, c};
  if (ew_makes_bool(k))
    return ew_compare(g, k, a, c);
  if (k == KILN_NODE_And || k == KILN_NODE_BitwiseAnd)
    return LLVMBuildAnd(b, a, c, "");
  if (k == KILN_NODE_Or || k == KILN_NODE_BitwiseOr)
    return LLVMBuildOr(b, a, c, "");
  if (k == KILN_NODE_Xor || k == KILN_NODE_BitwiseXor)
    return LLVMBuildXor(b, a, c, "");
  if ((int)k == KCPU_EW_SHL || (int)k == KCPU_EW_SHR) {
    /* shifting by the width or more gives 0 (LLVM would make poison) */
    unsigned w = LLVMGetIntTypeWidth(g->ty);
    LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGE, c, LLVMConstInt(g->ty, w, 0), "");
    LLVMValueRef amt = LLVMBuildSelect(b, big, LLVMConstNull(g->ty), c, "");
    LLVMValueRef r =
        (int)k == KCPU_EW_SHL ? LLVMBuildShl(b, a, amt, "") : LLVMBuildLShr(b, a, amt, "");
    return LLVMBuildSelect(b, big, LLVMConstNull(g->ty), r, "");
  }
  if (ew_is_int(g->elem) && (k == KILN_NODE_Mod || (int)k == KCPU_EW_FMOD)) {
    /* x % 0 answers 0 (the reference rejects it; a loop cannot fail), and
     * x % -1 is 0 without computing INT_MIN % -1 */
    bool sg = ew_signed(g->elem);
    LLVMValueRef zero = LLVMConstNull(g->ty), one = LLVMConstInt(g->ty, 1, 0);
    LLVMValueRef bad = LLVMBuildICmp(b, LLVMIntEQ, c, zero, "");
    if (sg)
      bad = LLVMBuildOr(b, bad, LLVMBuildICmp(b, LLVMIntEQ, c, LLVMConstAllOnes(g->ty), ""), "");
    LLVMValueRef d = LLVMBuildSelect(b, bad, one, c, "");
    LLVMValueRef r = sg ? LLVMBuildSRem(b, a, d, "") : LLVMBuildURem(b, a, d, "");
    if (sg && k == KILN_NODE_Mod) { /* floored: the sign of the divisor */
      LLVMValueRef fix =
          LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntNE, r, zero, ""),
                       LLVMBuildICmp(b, LLVMIntNE, LLVMBuildICmp(b, LLVMIntSLT, r, zero, ""),
                                     LLVMBuildICmp(b, LLVMIntSLT, d, zero, ""), ""),
                       "");
      r = LLVMBuildSelect(b, fix, LLVMBuildAdd(b, r, d, ""), r, "");
    }
    return LLVMBuildSelect(b, bad, zero, r, "");
  }
  if (k == KILN_NODE_Mod || (int)k == KCPU_EW_FMOD) {
    LLVMValueRef r = LLVMBuildFRem(b, a, c, ""), zero = ew_fconst(g, 0.0);
    if (k == KILN_NODE_Mod) {
      LLVMValueRef fix =
          LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealUNE, r, zero, ""),
                       LLVMBuildICmp(b, LLVMIntNE, LLVMBuildFCmp(b, LLVMRealOLT, r, zero, ""),
                                     LLVMBuildFCmp(b, LLVMRealOLT, c, zero, ""), ""),
                       "");
      r = LLVMBuildSelect(b, fix, LLVMBuildFAdd(b, r, c, ""), r, "");
    }
    return r;
  }
  if (ew_is_int(g->elem)) {
    bool sg = ew_signed(g->elem);
    switch (k) {
    case KILN_NODE_Add:
      return LLVMBuildAdd(b, a, c, "");
    case KILN_NODE_Sub:
      return LLVMBuildSub(b, a, c, "");
    case KILN_NODE_Mul:
      return LLVMBuildMul(b, a, c, "");
    case KILN_NODE_Div: {
      /* Division by zero (and INT_MIN / -1) is undefined in LLVM; divide
       * by 1 there instead and answer 0, so a bad input never traps. */
      LLVMValueRef zero = LLVMConstNull(g->ty), one = LLVMConstInt(g->ty, 1, 0);
      LLVMValueRef bad = LLVMBuildICmp(b, LLVMIntEQ, c, zero, "");
      if (sg) {
        LLVMValueRef m1 = LLVMBuildICmp(b, LLVMIntEQ, c, LLVMConstAllOnes(g->ty), "");
        unsigned w = LLVMGetIntTypeWidth(g->ty);
        LLVMValueRef mn =
            LLVMBuildICmp(b, LLVMIntEQ, a, LLVMConstInt(g->ty, 1ULL << (w - 1), 0), "");
        bad = LLVMBuildOr(b, bad, LLVMBuildAnd(b, m1, mn, ""), "");
      }
      LLVMValueRef d = LLVMBuildSelect(b, bad, one, c, "");
      LLVMValueRef q = sg ? LLVMBuildSDiv(b, a, d, "") : LLVMBuildUDiv(b, a, d, "");
      return LLVMBuildSelect(b, bad, zero, q, "");
    }
    case KILN_NODE_Max:
      return ew_intrinsic(g, sg ? "llvm.smax" : "llvm.umax", args, 2);
    default:
      return ew_intrinsic(g, sg ? "llvm.smin" : "llvm.umin", args, 2); /* Min */
    }
  }
  switch (k) {
  case KILN_NODE_Add:
    return LLVMBuildFAdd(b, a, c, "");
  case KILN_NODE_Sub:
    return LLVMBuildFSub(b, a, c, "");
  case KILN_NODE_Mul:
    return LLVMBuildFMul(b, a, c, "");
  case KILN_NODE_Div:
    return LLVMBuildFDiv(b, a, c, "");
  case KILN_NODE_Max:
    return ew_intrinsic(g, "llvm.maximum", args, 2);
  case KILN_NODE_Min:
    return ew_intrinsic(g, "llvm.minimum", args, 2);
  case KILN_NODE_Pow:
    if (ew_const_is(c, 1.0))
      return a;
    if (ew_const_is(c, 2.0))
      return LLVMBuildFMul(b, a, a, "");
    if (ew_const_is(c, 3.0))
      return LLVMBuildFMul(b, LLVMBuildFMul(b, a, a, ""), a, "");
    if (ew_const_is(c, 0.5))
      return ew_intrinsic(g, "llvm.sqrt", &a, 1);
    return ew_intrinsic(g, "llvm.pow", args, 2);
  default:
    return a;
  }
}

/* Collapsed iteration space: dims c[m], per input strides s[j][m]. */
typedef struct ew_space {
  uint32_t m;
  int64_t c[KILN_MAX_RANK];
  int64_t s[16][KILN_MAX_RANK];
  uint32_t same; /* inputs held in the output's buffer, read through it */
  int64_t fixed; /* the inner dim when short (KCPU_EW_FIXED_MAX), else 0 */
  uint32_t apart; /* inputs in other memory than the output (ew_load_in) */
} ew_space;

static void ew_collapse(const kiln_type *out, const kiln_type *const *ins, uint32_t n_in,
                        ew_space *sp) {
  int64_t st[16][KILN_MAX_RANK];
  uint32_t r = out->rank;
  for (uint32_t j = 0; j < n_in; j++) {
    const kiln_type *t = ins[j];
    int64_t acc = 1;
    for (int k = (int)r - 1; k >= 0; k--) {
      int ik = k - (int)(r - t->rank);
      int64_t d = ik >= 0 ? t->dims[ik] : 1;
      st[j][k] = d == 1 ? 0 : acc;
      acc *= d;
    }
  }
  sp->m = 0;
  for (uint32_t k = 0; k < r; k++) {
    if (out->dims[k] == 1)
      continue;
    bool merge = sp->m > 0;
    for (uint32_t j = 0; merge && j < n_in; j++)
      merge = sp->s[j][sp->m - 1] == st[j][k] * out->dims[k];
    if (merge) {
      sp->c[sp->m - 1] *= out->dims[k];
      for (uint32_t j = 0; j < n_in; j++)
        sp->s[j][sp->m - 1] = st[j][k];
      continue;
    }
    sp->c[sp->m] = out->dims[k];
    for (uint32_t j = 0; j < n_in; j++)
      sp->s[j][sp->m] = st[j][k];
    sp->m++;
  }
  if (sp->m == 0) {
    sp->m = 1;
    sp->c[0] = 1;
    for (uint32_t j = 0; j < n_in; j++)
      sp->s[j][0] = 0;
  }
}

static LLVMValueRef ew_i64(ew_gen *g, int64_t v) {
  return LLVMConstInt(LLVMInt64TypeInContext(g->ctx), (unsigned long long)v, 1);
}

static LLVMValueRef ew_gep(ew_gen *g, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(g->b, g->st, base, &idx, 1, "");
}

/* Load an input element as the computation type; `apart`: the input lies
 * in another root buffer than the output, which the memory plan then
 * guarantees does not overlap it (buffers alive at the same time never
 * share bytes), said to LLVM by alias scopes so that the loops vectorize
 * without run-time overlap checks. Views of the output's own root (and
 * sp.same inputs) are left to LLVM's analysis. */
static LLVMValueRef ew_load_in(ew_gen *g, LLVMValueRef p, bool apart) {
  LLVMValueRef v = LLVMBuildLoad2(g->b, g->st, p, "");
  if (apart && g->out_scope)
    LLVMSetMetadata(v, g->noalias_kind, g->out_scope);
  if (g->bf16) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(g->ctx);
    v = LLVMBuildShl(g->b, LLVMBuildZExt(g->b, v, i32, ""), LLVMConstInt(i32, 16, 0), "");
    return LLVMBuildBitCast(g->b, v, g->ty, "");
  }
  return g->st == g->ty ? v : LLVMBuildFPExt(g->b, v, g->ty, "");
}

/* f32 to bf16 bits: round to nearest even; NaN stays a quiet NaN. */
static LLVMValueRef ew_to_bf16(ew_gen *g, LLVMValueRef f) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(g->ctx), i16 = LLVMInt16TypeInContext(g->ctx);
  LLVMValueRef u = LLVMBuildBitCast(b, f, i32, "");
  LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, u, LLVMConstInt(i32, 16, 0), ""),
                                  LLVMConstInt(i32, 1, 0), "");
  LLVMValueRef r = LLVMBuildAdd(b, u, LLVMBuildAdd(b, lsb, LLVMConstInt(i32, 0x7fff, 0), ""), "");
  LLVMValueRef rounded = LLVMBuildLShr(b, r, LLVMConstInt(i32, 16, 0), "");
  LLVMValueRef nan_bits = LLVMBuildOr(b, LLVMBuildLShr(b, u, LLVMConstInt(i32, 16, 0), ""),
                                      LLVMConstInt(i32, 0x40, 0), "");
  LLVMValueRef is_nan = LLVMBuildFCmp(b, LLVMRealUNO, f, f, "");
  return LLVMBuildTrunc(b, LLVMBuildSelect(b, is_nan, nan_bits, rounded, ""), i16, "");
}

/* Build `void worker(ptr ctx, i64 begin, i64 end)`; ctx holds the output
 * pointer then the input pointers. */
/* Word q of the i64 array at p (loaded where the builder is). */
static LLVMValueRef ew_word(ew_gen *g, LLVMValueRef p, uint32_t q) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(g->ctx);
  LLVMValueRef idx = ew_i64(g, q);
  LLVMValueRef v = LLVMBuildLoad2(g->b, i64, LLVMBuildInBoundsGEP2(g->b, i64, p, &idx, 1, ""), "");
  LLVMSetAlignment(v, 8);
  return v;
}

/* The run-time words of a worker: c[0..m), then per input its nonzero
 * outer strides s[j][0..m-1), in the order ew_worker reads them. */
static uint32_t ew_shape_words(const ew_space *sp, uint32_t n_in, int64_t *out) {
  uint32_t w = 0;
  for (uint32_t k = 0; k < sp->m; k++)
    out[w++] = sp->c[k];
  for (uint32_t j = 0; j < n_in; j++)
    for (uint32_t k = 0; k + 1 < sp->m; k++)
      if (sp->s[j][k])
        out[w++] = sp->s[j][k];
  return w;
}

/* One column loop's body at colb: the fused ops on element t of each
 * input (hoisted: loaded once per row), stored at obase[t]; then t + 1 and
 * back to the loop's head colh, t's phi completed (from `from`: 0). */
static LLVMValueRef ew_column_loop(ew_gen *g, const kiln_fused_op *ops, uint32_t n_ops,
                                   uint32_t apart, LLVMValueRef *base, LLVMValueRef *hoisted,
                                   LLVMValueRef obase, LLVMValueRef t, LLVMBasicBlockRef colh,
                                   LLVMBasicBlockRef colb, LLVMBasicBlockRef from) {
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, colb);
  LLVMValueRef stack[KILN_FUSED_MAX_OPS];
  uint32_t top = 0;
  for (uint32_t o = 0; o < n_ops; o++) {
    const kiln_fused_op *op = &ops[o];
    if (op->kind == KILN_FUSED_INPUT) {
      uint32_t j = op->input;
      stack[top++] =
          hoisted[j] ? hoisted[j] : ew_load_in(g, ew_gep(g, base[j], t), apart & (1u << j));
    } else if (op->kind == KILN_FUSED_CONST) {
      stack[top++] = ew_is_int(g->elem)
                         ? LLVMConstInt(g->ty, (unsigned long long)(int64_t)op->value, 1)
                         : ew_fconst(g, op->value);
    } else if (ew_arity((kiln_node_kind)op->kind) == 2) {
      top--;
      stack[top - 1] = ew_binary(g, (kiln_node_kind)op->kind, stack[top - 1], stack[top]);
    } else {
      stack[top - 1] = ew_unary(g, (kiln_node_kind)op->kind, stack[top - 1]);
    }
  }
  LLVMValueRef res = stack[0];
  if (g->out_ty != LLVMTypeOf(res))
    res = g->bf16 ? ew_to_bf16(g, res) : LLVMBuildFPTrunc(b, res, g->out_ty, "");
  LLVMValueRef st = LLVMBuildStore(b, res, LLVMBuildInBoundsGEP2(b, g->out_ty, obase, &t, 1, ""));
  if (g->out_scope)
    LLVMSetMetadata(st, g->scope_kind, g->out_scope);
  LLVMValueRef t1 = LLVMBuildAdd(b, t, ew_i64(g, 1), "");
  LLVMValueRef back = LLVMBuildBr(b, colh);
  LLVMValueRef tv[2] = {ew_i64(g, 0), t1};
  LLVMBasicBlockRef tb[2] = {from, colb};
  LLVMAddIncoming(t, tv, tb, 2);
  return back;
}

/* Marks the loop whose back edge is `back` as not to be unrolled: a
 * constant count of 16 was unrolled into scalar code before the loop
 * vectorizer ran, which the SLP vectorizer then left scalar. */
static void ew_no_unroll(ew_gen *g, LLVMValueRef back) {
  LLVMContextRef C = g->ctx;
  const char *name = "llvm.loop.unroll.disable";
  LLVMMetadataRef str = LLVMMDStringInContext2(C, name, strlen(name));
  LLVMMetadataRef hint = LLVMMDNodeInContext2(C, &str, 1);
  LLVMMetadataRef self = LLVMTemporaryMDNode(C, NULL, 0);
  LLVMMetadataRef ops[2] = {self, hint};
  LLVMMetadataRef loop = LLVMMDNodeInContext2(C, ops, 2);
  LLVMMetadataReplaceAllUsesWith(self, loop); /* the loop id refers to itself */
  LLVMSetMetadata(back, LLVMGetMDKindIDInContext(C, "llvm.loop", 9), LLVMMetadataAsValue(C, loop));
}

/* A distinct node !{!self, rest...} (scope and domain ids refer to
 * themselves). */
static LLVMMetadataRef ew_self_node(LLVMContextRef C, LLVMMetadataRef *rest, size_t n) {
  LLVMMetadataRef ops[3];
  LLVMMetadataRef self = LLVMTemporaryMDNode(C, NULL, 0);
  ops[0] = self;
  for (size_t i = 0; i < n; i++)
    ops[1 + i] = rest[i];
  LLVMMetadataRef node = LLVMMDNodeInContext2(C, ops, 1 + n);
  LLVMMetadataReplaceAllUsesWith(self, node);
  return node;
}

/* The worker's output scope, in a domain of its own: !{scope}. */
static void ew_scopes(ew_gen *g) {
  LLVMContextRef C = g->ctx;
  LLVMMetadataRef dname = LLVMMDStringInContext2(C, "kcpu.ew", 7);
  LLVMMetadataRef domain = ew_self_node(C, &dname, 1);
  LLVMMetadataRef scope = ew_self_node(C, &domain, 1);
  LLVMMetadataRef list = LLVMMDNodeInContext2(C, &scope, 1);
  g->out_scope = LLVMMetadataAsValue(C, list);
  g->scope_kind = LLVMGetMDKindIDInContext(C, "alias.scope", 11);
  g->noalias_kind = LLVMGetMDKindIDInContext(C, "noalias", 7);
}

static LLVMValueRef ew_worker(ew_gen *g, const ew_space *sp, uint32_t n_in,
                              const kiln_fused_op *ops, uint32_t n_ops, uint32_t id) {
  LLVMContextRef C = g->ctx;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(C, 0), i64 = LLVMInt64TypeInContext(C);
  LLVMTypeRef params[3] = {ptr, i64, i64};
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(C), params, 3, 0);
  char name[48];
  snprintf(name, sizeof name, "kcpu.ew.%u", id);
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, ft);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  ew_scopes(g);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(C, fn, "entry");
  LLVMBasicBlockRef rowh = LLVMAppendBasicBlockInContext(C, fn, "row");
  LLVMBasicBlockRef rowb = LLVMAppendBasicBlockInContext(C, fn, "row.body");
  LLVMBasicBlockRef colh = LLVMAppendBasicBlockInContext(C, fn, "col");
  LLVMBasicBlockRef colb = LLVMAppendBasicBlockInContext(C, fn, "col.body");
  LLVMBasicBlockRef runp = NULL, runh = NULL, runb = NULL, runl = NULL, fxh = NULL, fxb = NULL;
  if (sp->fixed) {
    runp = LLVMAppendBasicBlockInContext(C, fn, "run");
    runh = LLVMAppendBasicBlockInContext(C, fn, "run.row");
    runb = LLVMAppendBasicBlockInContext(C, fn, "run.body");
    fxh = LLVMAppendBasicBlockInContext(C, fn, "fixed");
    fxb = LLVMAppendBasicBlockInContext(C, fn, "fixed.body");
    runl = LLVMAppendBasicBlockInContext(C, fn, "run.next");
  }
  LLVMBasicBlockRef rowe = LLVMAppendBasicBlockInContext(C, fn, "row.end");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(C, fn, "done");
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef ctx = LLVMGetParam(fn, 0), begin = LLVMGetParam(fn, 1), end = LLVMGetParam(fn, 2);
  LLVMValueRef ptrs[18];
  for (uint32_t j = 0; j <= n_in + 1; j++) {
    LLVMValueRef idx = ew_i64(g, j);
    ptrs[j] = LLVMBuildLoad2(b, ptr, LLVMBuildInBoundsGEP2(b, ptr, ctx, &idx, 1, ""), "");
  }
  /* The sizes and strides arrive at run time (ctx slot n_in + 1, see
   * ew_shape_words), so that one worker serves every shape with the same
   * structure: they only index rows; the inner loop, which the vectorizer
   * works on, depends on the structure alone. */
  uint32_t m = sp->m;
  LLVMValueRef dim[KILN_MAX_RANK], str[16][KILN_MAX_RANK];
  uint32_t w = 0;
  for (uint32_t k = 0; k < m; k++)
    dim[k] = ew_word(g, ptrs[n_in + 1], w++);
  for (uint32_t j = 0; j < n_in; j++)
    for (uint32_t k = 0; k + 1 < m; k++)
      str[j][k] = sp->s[j][k] ? ew_word(g, ptrs[n_in + 1], w++) : NULL;
  /* The first row, its column and its index over the outer dims come
   * from divisions; after that each row starts at column 0 of the next
   * and its index is counted (a 64-bit division per row cost more than a
   * short row's vector loop: blocked layouts make rows of 16). */
  LLVMValueRef inner = dim[m - 1];
  LLVMValueRef row0 = LLVMBuildSDiv(b, begin, inner, "row0");
  LLVMValueRef col0 = LLVMBuildSRem(b, begin, inner, "col0");
  LLVMValueRef idx0[KILN_MAX_RANK] = {0};
  LLVMValueRef rem0 = row0;
  for (int k = (int)m - 2; k >= 0; k--) {
    if (k == 0) { /* row < the product of the outer dims: no wrap left */
      idx0[0] = rem0;
      break;
    }
    idx0[k] = LLVMBuildSRem(b, rem0, dim[k], "");
    rem0 = LLVMBuildSDiv(b, rem0, dim[k], "");
  }
  LLVMBuildBr(b, rowh);

  /* row: i = phi(begin, i + cnt), col = phi(col0, 0), idx[k] = phi(the
   * first row's, counted); stop at end */
  LLVMPositionBuilderAtEnd(b, rowh);
  LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
  LLVMValueRef col = LLVMBuildPhi(b, i64, "col");
  LLVMValueRef idx[KILN_MAX_RANK] = {0};
  for (uint32_t k = 0; k + 1 < m; k++)
    idx[k] = LLVMBuildPhi(b, i64, "idx");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, i, end, ""), rowb, done);

  LLVMPositionBuilderAtEnd(b, rowb);
  LLVMValueRef left_row = LLVMBuildSub(b, inner, col, "");
  LLVMValueRef left_all = LLVMBuildSub(b, end, i, "");
  LLVMValueRef cnt = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, left_row, left_all, ""),
                                     left_row, left_all, "cnt");
  LLVMValueRef base[16], hoisted[16];
  for (uint32_t j = 0; j < n_in; j++) {
    LLVMValueRef off = ew_i64(g, 0);
    for (uint32_t k = 0; k + 1 < m; k++)
      if (str[j][k])
        off = LLVMBuildAdd(b, off, LLVMBuildMul(b, idx[k], str[j][k], ""), "");
    if (sp->s[j][m - 1])
      off = LLVMBuildAdd(b, off, col, "");
    base[j] = ew_gep(g, ptrs[j + 1], off);
    /* an input constant along the inner dim is loaded once per row */
    hoisted[j] = sp->s[j][m - 1] ? NULL : ew_load_in(g, base[j], sp->apart & (1u << j));
  }
  LLVMValueRef obase = LLVMBuildInBoundsGEP2(b, g->out_ty, ptrs[0], &i, 1, "");
  for (uint32_t j = 0; j < n_in; j++)
    if (sp->same & (1u << j))
      base[j] = obase; /* its offset is i, as the output's */
  /* whole rows (all but a task's first and last) go in runs, up to the
   * end of the dim above the inner one, through the constant-count loop:
   * each row's bases a stride on from the last (the row bookkeeping above
   * costs more than a row of 16 itself); the general loop has the same
   * body */
  if (sp->fixed)
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, cnt, ew_i64(g, sp->fixed), ""), runp, colh);
  else
    LLVMBuildBr(b, colh);

  LLVMPositionBuilderAtEnd(b, colh);
  LLVMValueRef t = LLVMBuildPhi(b, i64, "t");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, t, cnt, ""), colb, rowe);

  ew_column_loop(g, ops, n_ops, sp->apart, base, hoisted, obase, t, colh, colb, rowb);
  LLVMValueRef nrows = NULL, runstep = NULL, r = NULL;
  if (sp->fixed) {
    LLVMValueRef fx = ew_i64(g, sp->fixed);
    LLVMPositionBuilderAtEnd(b, runp);
    LLVMValueRef in_dim = LLVMBuildSub(b, dim[m - 2], idx[m - 2], "");
    LLVMValueRef in_all = LLVMBuildSDiv(b, left_all, fx, "");
    nrows = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, in_dim, in_all, ""), in_dim, in_all,
                            "nrows");
    runstep = LLVMBuildMul(b, nrows, fx, "");
    LLVMBuildBr(b, runh);

    LLVMPositionBuilderAtEnd(b, runh);
    r = LLVMBuildPhi(b, i64, "r");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, r, nrows, ""), runb, rowe);

    LLVMPositionBuilderAtEnd(b, runb);
    LLVMValueRef roff = LLVMBuildMul(b, r, fx, "");
    LLVMValueRef ob = LLVMBuildInBoundsGEP2(b, g->out_ty, obase, &roff, 1, "");
    LLVMValueRef rb[16], rh[16];
    for (uint32_t j = 0; j < n_in; j++) {
      rb[j] = sp->same & (1u << j) ? ob
              : str[j][m - 2]      ? ew_gep(g, base[j], LLVMBuildMul(b, r, str[j][m - 2], ""))
                                   : base[j];
      rh[j] = sp->s[j][m - 1] ? NULL : ew_load_in(g, rb[j], sp->apart & (1u << j));
    }
    LLVMBuildBr(b, fxh);

    LLVMPositionBuilderAtEnd(b, fxh);
    LLVMValueRef tf = LLVMBuildPhi(b, i64, "tf");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, tf, fx, ""), fxb, runl);
    ew_no_unroll(g, ew_column_loop(g, ops, n_ops, sp->apart, rb, rh, ob, tf, fxh, fxb, runb));

    LLVMPositionBuilderAtEnd(b, runl);
    LLVMValueRef r1 = LLVMBuildAdd(b, r, ew_i64(g, 1), "");
    LLVMBuildBr(b, runh);
    LLVMValueRef rv[2] = {ew_i64(g, 0), r1};
    LLVMBasicBlockRef rbk[2] = {runp, runl};
    LLVMAddIncoming(r, rv, rbk, 2);
  }

  LLVMPositionBuilderAtEnd(b, rowe);
  /* elements and rows done: a row of cnt (the general loop), or a run */
  LLVMValueRef step = cnt, adv = ew_i64(g, 1);
  if (sp->fixed) {
    step = LLVMBuildPhi(b, i64, "step");
    adv = LLVMBuildPhi(b, i64, "adv");
    LLVMValueRef sv[2] = {cnt, runstep}, av[2] = {ew_i64(g, 1), nrows};
    LLVMBasicBlockRef from[2] = {colh, runh};
    LLVMAddIncoming(step, sv, from, 2);
    LLVMAddIncoming(adv, av, from, 2);
  }
  LLVMValueRef i1 = LLVMBuildAdd(b, i, step, "");
  /* the next row's index: the innermost outer dim counts up, wrapping
   * into the one above it (branch-free) */
  LLVMValueRef idx1[KILN_MAX_RANK] = {0};
  LLVMValueRef carry = adv; /* a run ends at most at the end of its dim */
  for (int k = (int)m - 2; k >= 0; k--) {
    LLVMValueRef nk = LLVMBuildAdd(b, idx[k], carry, "");
    if (k == 0) {
      idx1[0] = nk;
      break;
    }
    LLVMValueRef wrap = LLVMBuildICmp(b, LLVMIntEQ, nk, dim[k], "");
    idx1[k] = LLVMBuildSelect(b, wrap, ew_i64(g, 0), nk, "");
    carry = LLVMBuildZExt(b, wrap, i64, "");
  }
  LLVMBuildBr(b, rowh);
  LLVMValueRef iv[2] = {begin, i1}, cv[2] = {col0, ew_i64(g, 0)};
  LLVMBasicBlockRef ib[2] = {entry, rowe};
  LLVMAddIncoming(i, iv, ib, 2);
  LLVMAddIncoming(col, cv, ib, 2);
  for (uint32_t k = 0; k + 1 < m; k++) {
    LLVMValueRef xv[2] = {idx0[k], idx1[k]};
    LLVMAddIncoming(idx[k], xv, ib, 2);
  }

  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  return fn;
}

kiln_status kcpu_emit_elementwise(kcpu_emit *e, const kiln_instr *in, const kiln_fused_op *ops,
                                  uint32_t n_ops) {
  return kcpu_emit_elementwise_first(e, in, kiln_instr_operand_count(in) - 1, ops, n_ops);
}

kiln_status kcpu_emit_elementwise_first(kcpu_emit *e, const kiln_instr *in, uint32_t n_in,
                                        const kiln_fused_op *ops, uint32_t n_ops) {
  uint32_t nr = kiln_instr_result_count(in), n = kiln_instr_operand_count(in);
  if (nr != 1 || n < 2 || n_in < 1 || n_in > n - 1 || n_in > 16)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "cpu: elementwise instruction %u has %u results and %u operands",
                            kiln_instr_index(in), nr, n);
  const kiln_buffer *out = kiln_instr_operand(in, 0);
  const kiln_type *ot = kiln_buffer_type(out);
  const kiln_type *its[16];
  for (uint32_t j = 0; j < n_in; j++) {
    const kiln_buffer *x = kiln_instr_operand(in, 1 + j);
    if (!x)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "cpu: elementwise instruction %u has an absent input %u",
                              kiln_instr_index(in), j);
    its[j] = kiln_buffer_type(x);
    if (its[j]->elem != its[0]->elem)
      return kiln_status_make(KILN_UNIMPLEMENTED, "cpu: elementwise instruction %u mixes %s and %s",
                              kiln_instr_index(in), kiln_elem_name(its[j]->elem),
                              kiln_elem_name(ot->elem));
  }
  kiln_elem el = its[0]->elem;
  bool to_bool =
      n_ops > 0 && ops[n_ops - 1].kind >= 0 && ew_makes_bool((kiln_node_kind)ops[n_ops - 1].kind);
  if (!kcpu_ew_supported(el, ops, n_ops) || (to_bool ? ot->elem != KILN_BOOL : ot->elem != el))
    return kiln_status_make(KILN_UNIMPLEMENTED, "cpu: elementwise instruction %u from %s to %s",
                            kiln_instr_index(in), kiln_elem_name(el), kiln_elem_name(ot->elem));
  int64_t total = kiln_type_numel(ot);
  if (total == 0)
    return NULL;
  ew_space sp;
  ew_collapse(ot, its, n_in, &sp);
  /* Inputs the inplace pass put in the output's own buffer (same shape):
   * the worker reads them through the output pointer, so LLVM sees that
   * each element is read before it is written at the same address and
   * vectorizes without a run-time overlap check (which such a loop always
   * failed, running the scalar fallback). */
  uint32_t same = 0;
  for (uint32_t j = 0; j < n_in; j++)
    if (kiln_instr_operand(in, 1 + j) == out && kiln_type_equal(its[j], ot) && !to_bool)
      same |= 1u << j;
  sp.same = same;
  const kiln_buffer *oroot = out;
  while (kiln_buffer_base(oroot))
    oroot = kiln_buffer_base(oroot);
  sp.apart = 0;
  for (uint32_t j = 0; j < n_in; j++) {
    const kiln_buffer *r = kiln_instr_operand(in, 1 + j);
    while (kiln_buffer_base(r))
      r = kiln_buffer_base(r);
    if (r != oroot)
      sp.apart |= 1u << j;
  }
  sp.fixed = sp.m >= 2 && sp.c[sp.m - 1] >= 16 && sp.c[sp.m - 1] <= KCPU_EW_FIXED_MAX
                 ? sp.c[sp.m - 1]
                 : 0;

  LLVMContextRef C = kcpu_context(e);
  LLVMTypeRef ty, st;
  switch (el) {
  case KILN_F32:
  case KILN_F16:
  case KILN_BF16:
    ty = LLVMFloatTypeInContext(C);
    break;
  case KILN_F64:
    ty = LLVMDoubleTypeInContext(C);
    break;
  default:
    ty = LLVMIntTypeInContext(C, (unsigned)(8 * kiln_elem_size(el)));
    break;
  }
  LLVMBuilderRef eb = kcpu_builder(e);
  LLVMBasicBlockRef at = LLVMGetInsertBlock(eb);
  st = el == KILN_F16 ? LLVMHalfTypeInContext(C) : el == KILN_BF16 ? LLVMInt16TypeInContext(C) : ty;
  /* f16 and bf16 compute as f32: the math helpers pick their f32 forms */
  ew_gen g = {.e = e,
              .ctx = C,
              .mod = kcpu_module(e),
              .ty = ty,
              .st = st,
              .bf16 = el == KILN_BF16,
              .elem = el == KILN_F16 || el == KILN_BF16 ? KILN_F32 : el};
  g.out_ty = to_bool ? LLVMInt8TypeInContext(C) : st;
  /* The worker is a function of these alone (sizes and strides are its
   * run-time words). Repeated blocks (a transformer's layers, a CNN's
   * stages at every channel count) ask for the same loop many times; it is
   * made, optimized and compiled once. */
  unsigned char key[32 + 16 * KILN_MAX_RANK + KILN_FUSED_MAX_OPS * 16];
  size_t kn = 0;
  uint32_t head[7] = {(uint32_t)el, to_bool, n_in, sp.m, sp.same, (uint32_t)sp.fixed, sp.apart};
  memcpy(key + kn, head, sizeof head), kn += sizeof head;
  for (uint32_t j = 0; j < n_in; j++)
    for (uint32_t k = 0; k < sp.m; k++)
      key[kn++] = sp.s[j][k] != 0; /* which strides are zero: the structure */
  for (uint32_t k = 0; k < n_ops && k < KILN_FUSED_MAX_OPS; k++) {
    int32_t ki[2] = {ops[k].kind, (int32_t)ops[k].input};
    memcpy(key + kn, ki, sizeof ki), kn += sizeof ki;
    memcpy(key + kn, &ops[k].value, sizeof ops[k].value), kn += sizeof ops[k].value;
  }
  LLVMValueRef worker = kcpu_helper_find(e, key, kn);
  if (!worker) {
    g.b = LLVMCreateBuilderInContext(C);
    worker = ew_worker(&g, &sp, n_in, ops, n_ops, kcpu_next_id(e));
    LLVMDisposeBuilder(g.b);
    kcpu_helper_add(e, key, kn, worker);
  }

  /* The context array lives in the entry block so it is one stack slot
   * however many loops the caller's code has. */
  LLVMTypeRef ptr = LLVMPointerTypeInContext(C, 0);
  LLVMTypeRef arr = LLVMArrayType2(ptr, n_in + 2);
  LLVMBuilderRef ab = LLVMCreateBuilderInContext(C);
  LLVMBasicBlockRef first = LLVMGetEntryBasicBlock(kcpu_function(e));
  LLVMValueRef fi = LLVMGetFirstInstruction(first);
  if (fi)
    LLVMPositionBuilderBefore(ab, fi);
  else
    LLVMPositionBuilderAtEnd(ab, first);
  LLVMValueRef slots = LLVMBuildAlloca(ab, arr, "ew.ctx");
  LLVMDisposeBuilder(ab);
  LLVMPositionBuilderAtEnd(eb, at);
  for (uint32_t j = 0; j <= n_in; j++) {
    LLVMValueRef idx = kcpu_i64(e, j);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(eb, ptr, slots, &idx, 1, "");
    LLVMBuildStore(eb, kcpu_addr(e, kiln_instr_operand(in, j)), slot);
  }
  int64_t words[KILN_MAX_RANK * 17];
  uint32_t nw = ew_shape_words(&sp, n_in, words);
  LLVMValueRef widx = kcpu_i64(e, n_in + 1);
  LLVMBuildStore(eb, kcpu_i64_array(e, words, nw),
                 LLVMBuildInBoundsGEP2(eb, ptr, slots, &widx, 1, ""));
  /* a declaration too where the native library defines it */
  LLVMValueRef pf = LLVMGetNamedFunction(kcpu_module(e), "kcpu_parallel_for");
  if (kcpu_threads(e) > 1 && total >= KCPU_EW_PARALLEL_MIN && pf) {
    LLVMValueRef args[4] = {kcpu_pool(e), kcpu_i64(e, total), worker, slots};
    LLVMBuildCall2(eb, LLVMGlobalGetValueType(pf), pf, args, 4, "");
  } else {
    LLVMValueRef args[3] = {slots, kcpu_i64(e, 0), kcpu_i64(e, total)};
    LLVMBuildCall2(eb, LLVMGlobalGetValueType(worker), worker, args, 3, "");
  }
  return NULL;
}
