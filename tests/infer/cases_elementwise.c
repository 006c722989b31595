/* tests/infer/cases_elementwise.c: unary, binary, variadic, Where, Clip,
 * casts, Bitwise*, Mish, Swish. Expected shapes follow numpy broadcasting, worked out by hand. */
#include "harness.h"

/* One valid and one invalid input per unary kind, grouped by the ONNX type
 * constraint of the kind. */
static void unary_table(void) {
  static const kiln_node_kind float_only[] = {KILN_NODE_Acos,
                                              KILN_NODE_Acosh,
                                              KILN_NODE_Asin,
                                              KILN_NODE_Asinh,
                                              KILN_NODE_Atan,
                                              KILN_NODE_Atanh,
                                              KILN_NODE_Ceil,
                                              KILN_NODE_Cos,
                                              KILN_NODE_Cosh,
                                              KILN_NODE_Exp,
                                              KILN_NODE_Floor,
                                              KILN_NODE_Log,
                                              KILN_NODE_Reciprocal,
                                              KILN_NODE_Round,
                                              KILN_NODE_Sigmoid,
                                              KILN_NODE_Sin,
                                              KILN_NODE_Sinh,
                                              KILN_NODE_Softplus,
                                              KILN_NODE_Softsign,
                                              KILN_NODE_Sqrt,
                                              KILN_NODE_Tan,
                                              KILN_NODE_Tanh,
                                              KILN_NODE_Elu,
                                              KILN_NODE_Selu,
                                              KILN_NODE_Celu,
                                              KILN_NODE_HardSigmoid,
                                              KILN_NODE_HardSwish,
                                              KILN_NODE_LeakyRelu,
                                              KILN_NODE_ThresholdedRelu};
  for (size_t i = 0; i < sizeof float_only / sizeof float_only[0]; i++) {
    infer_ok(float_only[i], "f16[2,3]", NULL, 0, 0, "f16[2,3]", __LINE__);
    infer_err(float_only[i], "i32[2]", NULL, 0, 0, KILN_INVALID_ARGUMENT,
              "input 0 is i32[2]; its element type must be one of f64, f32, f16, bf16", __LINE__);
  }
  static const kiln_node_kind numeric[] = {KILN_NODE_Abs, KILN_NODE_Erf, KILN_NODE_Sign,
                                           KILN_NODE_Shrink};
  for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++) {
    infer_ok(numeric[i], "u16[4]", NULL, 0, 0, "u16[4]", __LINE__);
    infer_err(numeric[i], "bool[4]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "input 0 is bool[4]",
              __LINE__);
  }
  static const kiln_node_kind signed_kinds[] = {KILN_NODE_Neg, KILN_NODE_Relu};
  for (size_t i = 0; i < 2; i++) {
    infer_ok(signed_kinds[i], "i8[]", NULL, 0, 0, "i8[]", __LINE__);
    infer_err(signed_kinds[i], "u8[2]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "input 0 is u8[2]",
              __LINE__);
  }
  static const kiln_node_kind to_bool[] = {KILN_NODE_IsInf, KILN_NODE_IsNaN};
  for (size_t i = 0; i < 2; i++) {
    infer_ok(to_bool[i], "f64[3,1]", NULL, 0, 0, "bool[3,1]", __LINE__);
    infer_err(to_bool[i], "i64[3]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "input 0 is i64[3]",
              __LINE__);
  }
}

void cases_elementwise(void) {
  unary_table();
  OK(Relu, "bf16[1,2,3]", "bf16[1,2,3]");
  ERR(Relu, "bool[2,3]", "Relu: input 0 is bool[2,3]");
  OK(Not, "bool[3]", "bool[3]");
  ERR(Not, "f32[3]", "must be one of bool");
  OK(Identity, "bool[1,2]", "bool[1,2]");
  ERR(Identity, "f32[2] f32[2]", "takes 1 input, got 2");
  OK(Gelu, "f32[4]", "f32[4]", KILN_ATTR_S("approximate", "tanh"));
  ERR(Gelu, "f32[4]", "attribute 'approximate' = \"exact\"", KILN_ATTR_S("approximate", "exact"));
  OKN(Dropout, "f32[2,2]", 2, "f32[2,2] bool[2,2]");
  OK(Dropout, "f16[5]", "f16[5]");
  ERRN(Dropout, "f32[2,2]", 3, KILN_INVALID_ARGUMENT, "has 1 to 2 results, 3 requested");
  OK(Cast, "f32[2,3]", "i64[2,3]", KILN_ATTR_T("to", KILN_I64));
  OK(Cast, "bool[]", "f16[]", KILN_ATTR_I("to", 10)); /* ONNX FLOAT16 code */
  ERR(Cast, "f32[2]", "attribute 'to'");
  OK(CastLike, "f32[2] i8[]", "i8[2]");
  ERR(CastLike, "f32[2]", "takes 2 inputs, got 1");

  /* Binary arithmetic. */
  static const char *arith[] = {"Add", "Sub", "Mul", "Div"};
  static const kiln_node_kind arith_k[] = {KILN_NODE_Add, KILN_NODE_Sub, KILN_NODE_Mul,
                                           KILN_NODE_Div};
  for (int i = 0; i < 4; i++) {
    (void)arith[i];
    infer_ok(arith_k[i], "f32[2,1] f32[3]", NULL, 0, 0, "f32[2,3]", __LINE__);
    infer_ok(arith_k[i], "i64[4,1,5] i64[3,1]", NULL, 0, 0, "i64[4,3,5]", __LINE__);
    infer_err(arith_k[i], "f32[2] f32[3]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "cannot broadcast",
              __LINE__);
    infer_err(arith_k[i], "f32[2] i32[2]", NULL, 0, 0, KILN_INVALID_ARGUMENT,
              "element types differ: input 0 is f32[2], input 1 is i32[2]", __LINE__);
    infer_err(arith_k[i], "bool[2] bool[2]", NULL, 0, 0, KILN_INVALID_ARGUMENT,
              "input 0 is bool[2]", __LINE__);
  }
  OK(Pow, "f32[2,2] i64[2]", "f32[2,2]");
  ERR(Pow, "u8[2] u8[2]", "input 0 is u8[2]");
  OK(Mod, "i32[3] i32[1]", "i32[3]");
  OK(Mod, "f32[3] f32[3]", "f32[3]", KILN_ATTR_I("fmod", 1));
  ERR(Mod, "f32[3] f32[3]", "floating-point inputs need fmod = 1");
  static const kiln_node_kind logic[] = {KILN_NODE_And, KILN_NODE_Or, KILN_NODE_Xor};
  for (int i = 0; i < 3; i++) {
    infer_ok(logic[i], "bool[4] bool[1]", NULL, 0, 0, "bool[4]", __LINE__);
    infer_err(logic[i], "i32[4] i32[4]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "must be one of bool",
              __LINE__);
  }
  OK(Equal, "i32[2,3] i32[3]", "bool[2,3]");
  OK(Equal, "bool[2] bool[2]", "bool[2]");
  ERR(Equal, "f32[2] i32[2]", "element types differ");
  static const kiln_node_kind cmp[] = {KILN_NODE_Greater, KILN_NODE_GreaterOrEqual, KILN_NODE_Less,
                                       KILN_NODE_LessOrEqual};
  for (int i = 0; i < 4; i++) {
    infer_ok(cmp[i], "f32[5] f32[]", NULL, 0, 0, "bool[5]", __LINE__);
    infer_err(cmp[i], "bool[2] bool[2]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "input 0 is bool[2]",
              __LINE__);
  }
  OK(BitShift, "u8[4] u8[]", "u8[4]", KILN_ATTR_S("direction", "LEFT"));
  ERR(BitShift, "u8[4] u8[]", "attribute 'direction'");
  ERR(BitShift, "i32[4] i32[]", "input 0 is i32[4]", KILN_ATTR_S("direction", "RIGHT"));
  OK(PRelu, "f32[1,3,4,4] f32[3,1,1]", "f32[1,3,4,4]");
  ERR(PRelu, "f32[3] f32[2,3]", "slope f32[2,3] does not broadcast to input 0 f32[3]");

  /* Variadic. */
  OK(Max, "i32[2,1] i32[3] i32[1,1]", "i32[2,3]");
  OK(Max, "f32[7]", "f32[7]");
  ERR(Max, "i32[2] f32[2]", "element types differ: input 0 is i32[2], input 1 is f32[2]");
  OK(Min, "u8[3,1] u8[1,4]", "u8[3,4]");
  ERR(Min, "u8[3] u8[4]", "cannot broadcast input 1 (u8[4])");
  OK(Mean, "f32[4] f32[4]", "f32[4]");
  ERR(Mean, "i32[4]", "input 0 is i32[4]");
  OK(Sum, "f64[2,3] f64[2,3] f64[1,3]", "f64[2,3]");
  ERR(Sum, "f32[2] f32[2] f32[3]", "cannot broadcast input 2");
  ERR(Sum, "f32[2] _", "input 1 is absent but required");
  OK(FusedElementwise, "f32[2,1] f32[3]", "f32[2,3]", KILN_ATTR_S("body", "x0 1.5 Mul x1 Add Tanh"));
  ERR(FusedElementwise, "f32[2] f32[2]", "'x2' names no input", KILN_ATTR_S("body", "x0 x2 Add"));
  ERR(FusedElementwise, "f32[2]", "'Add' needs 2 operands", KILN_ATTR_S("body", "x0 Add"));
  ERR(FusedElementwise, "f32[2]", "'Conv' is not allowed", KILN_ATTR_S("body", "x0 Conv"));
  ERR(FusedElementwise, "i32[2]", "input", KILN_ATTR_S("body", "x0"));
  OK(Where, "bool[2,1] f32[3] f32[2,3]", "f32[2,3]");
  ERR(Where, "i32[2] f32[2] f32[2]", "condition (input 0) is i32[2]");
  ERR(Where, "bool[2] f32[2] f16[2]", "element types differ");
  OK(Clip, "f32[4] _ f32[]", "f32[4]");
  OK(Clip, "i32[2,2]", "i32[2,2]");
  ERR(Clip, "f32[4] f32[2]", "min (input 1) is f32[2]; it must be a scalar");
  ERR(Clip, "f32[4] i32[]", "element types differ");

  static const kiln_node_kind bitwise[] = {KILN_NODE_BitwiseAnd, KILN_NODE_BitwiseOr,
                                           KILN_NODE_BitwiseXor};
  for (size_t i = 0; i < 3; i++) {
    infer_ok(bitwise[i], "u8[2,1] u8[3]", NULL, 0, 0, "u8[2,3]", __LINE__);
    infer_ok(bitwise[i], "i64[] i64[4]", NULL, 0, 0, "i64[4]", __LINE__);
    infer_err(bitwise[i], "f32[2] f32[2]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "input 0 is f32[2]",
              __LINE__);
    infer_err(bitwise[i], "i32[2] i16[2]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "i16[2]", __LINE__);
    infer_err(bitwise[i], "i32[2] i32[3]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "broadcast",
              __LINE__);
  }
  OK(BitwiseNot, "i16[2,2]", "i16[2,2]");
  ERR(BitwiseNot, "bool[2]", "input 0 is bool[2]");

  OK(Mish, "f64[3]", "f64[3]");
  ERR(Mish, "i32[3]", "input 0 is i32[3]");
  OK(Swish, "bf16[2,2]", "bf16[2,2]", KILN_ATTR_F("alpha", 0.5));
  ERR(Swish, "u8[2]", "input 0 is u8[2]");
}
