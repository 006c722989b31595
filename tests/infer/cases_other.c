/* tests/infer/cases_other.c: recurrent, quantization and loss kinds. */
#include "harness.h"

void cases_other(void) {
  /* X [seq 5, batch 2, input 3], hidden 4. */
  OK(RNN, "f32[5,2,3] f32[1,4,3] f32[1,4,4] f32[1,8]", "f32[5,1,2,4] f32[1,2,4]",
     KILN_ATTR_I("hidden_size", 4));
  ERR(RNN, "f32[5,2,3] f32[1,8,3] f32[1,4,4]", "W (input 1) is f32[1,8,3]; expected shape [1,4,3]");
  OK(GRU, "f32[5,2,3] f32[2,12,3] f32[2,12,4] f32[2,24] _ f32[2,2,4]", "f32[5,2,2,4] f32[2,2,4]",
     KILN_ATTR_S("direction", "bidirectional"));
  ERR(GRU, "f32[5,2,3] f32[1,12,3] f32[1,12,4]", "attribute 'hidden_size' = 5 does not match",
      KILN_ATTR_I("hidden_size", 5));
  /* layout 1: X [batch 2, seq 5, input 3]. */
  OK(LSTM, "f32[2,5,3] f32[1,16,3] f32[1,16,4] f32[1,32] i32[2] _ _ f32[1,12]",
     "f32[2,5,1,4] f32[2,1,4] f32[2,1,4]", KILN_ATTR_I("layout", 1));
  /* layout 1 with initial_h [batch 3, dirs 2, hidden 4] (ONNX: [B, D, H]) */
  OK(GRU, "f32[3,5,2] f32[2,12,2] f32[2,12,4] _ _ f32[3,2,4]", "f32[3,5,2,4] f32[3,2,4]",
     KILN_ATTR_I("layout", 1), KILN_ATTR_S("direction", "bidirectional"));
  ERR(GRU, "f32[3,5,2] f32[2,12,2] f32[2,12,4] _ _ f32[2,3,4]",
      "initial_h (input 5) is f32[2,3,4]; expected shape [3,2,4]", KILN_ATTR_I("layout", 1),
      KILN_ATTR_S("direction", "bidirectional"));
  ERR(LSTM, "f32[5,2,3] f32[1,16,3] f32[1,16,4] _ i64[2]", "sequence_lens (input 4) is i64[2]");
  ERR(LSTM, "f32[5,2,3] f32[1,16,3] f32[1,16,4]", "attribute 'direction' = \"both\"",
      KILN_ATTR_S("direction", "both"));

  OK(QuantizeLinear, "f32[2,3] f32[] i8[]", "i8[2,3]");
  OK(QuantizeLinear, "f32[2,3] f32[]", "u8[2,3]");
  OK(QuantizeLinear, "f32[2,3] f32[3] u8[3]", "u8[2,3]");
  OK(QuantizeLinear, "f32[2,3] f32[2]", "i16[2,3]", KILN_ATTR_I("axis", 0),
     KILN_ATTR_T("output_dtype", KILN_I16));
  OK(QuantizeLinear, "f32[2,4] f32[2,2]", "u8[2,4]", KILN_ATTR_I("block_size", 2));
  ERR(QuantizeLinear, "f32[2,3] f32[4]", "scale f32[4] must be a scalar or have shape [3]");
  ERR(QuantizeLinear, "f32[2,3] f32[] f32[]", "zero point (input 2) is f32[]");
  ERR(QuantizeLinear, "f32[2,3] f32[] i8[]", "attribute 'output_dtype' u8 differs",
      KILN_ATTR_T("output_dtype", KILN_U8));
  OK(DequantizeLinear, "i8[2,3] f32[] i8[]", "f32[2,3]");
  OK(DequantizeLinear, "u8[4] f16[]", "f16[4]");
  OK(DequantizeLinear, "i32[2,3] f32[2]", "f32[2,3]", KILN_ATTR_I("axis", 0));
  /* per tensor as ONNX Runtime's quantizer writes it: scale [1], zero point [] */
  OK(DequantizeLinear, "i32[4] f32[1] i32[]", "f32[4]");
  OK(QuantizeLinear, "f32[4] f32[] u8[1]", "u8[4]");
  ERR(DequantizeLinear, "i8[4] f32[1] i8[2]", "must have the shape of scale");
  ERR(DequantizeLinear, "f32[2] f32[]", "input 0 is f32[2]");
  ERR(DequantizeLinear, "i8[2] f32[] u8[]", "element types differ: input 0 is i8[2]");
  OK(DynamicQuantizeLinear, "f32[2,3]", "u8[2,3] f32[] u8[]");
  ERR(DynamicQuantizeLinear, "f64[2]", "input 0 is f64[2]");
  OK(MatMulInteger, "u8[2,3] i8[3,4] u8[] i8[]", "i32[2,4]");
  OK(MatMulInteger, "i8[5,2,3] i8[3,4]", "i32[5,2,4]");
  ERR(MatMulInteger, "f32[2,3] f32[3,4]", "input 0 (A) is f32[2,3]");
  ERR(MatMulInteger, "u8[2,3] u8[4,4]", "inner dimensions differ");
  /* Zero points and scales: one value, or one per row (A) / column (B) /
   * output channel; any other length used to be read past its end. */
  OK(MatMulInteger, "u8[2,3] i8[3,4] u8[2] i8[4]", "i32[2,4]");
  ERR(MatMulInteger, "u8[2,3] i8[3,4] u8[0]", "a_zero_point (input 2) is u8[0]; expected a "
                                              "scalar or [2] (one per row of A)");
  ERR(MatMulInteger, "u8[2,3] i8[3,4] u8[] i8[3]", "b_zero_point (input 3) is i8[3]; expected a "
                                                   "scalar or [4] (one per column of B)");
  ERR(ConvInteger, "u8[1,1,4,4] u8[2,1,3,3] u8[2]", "x_zero_point (input 2) is u8[2]; expected a "
                                                    "scalar");
  ERR(ConvInteger, "u8[1,1,4,4] u8[2,1,3,3] u8[] u8[3]", "w_zero_point (input 3) is u8[3]; "
                                                         "expected a scalar or [2] (one per output channel)");
  ERR(QLinearMatMul, "u8[2,3] f32[3] u8[] i8[3,4] f32[] i8[] f32[] u8[]",
      "a_scale (input 1) is f32[3]; expected a scalar or [2]");
  ERR(QLinearMatMul, "u8[2,3] f32[] u8[] i8[3,4] f32[] i8[0] f32[] u8[]",
      "b_zero_point (input 5) is i8[0]; expected a scalar or [4]");
  ERR(QLinearConv, "u8[1,1,4,4] f32[0] u8[] u8[2,1,3,3] f32[2] u8[2] f32[] i8[]",
      "x_scale (input 1) is f32[0]; expected a scalar");
  ERR(QLinearConv, "u8[1,1,4,4] f32[] u8[] u8[2,1,3,3] f32[2] u8[3] f32[] i8[]",
      "w_zero_point (input 5) is u8[3]; expected a scalar or [2] (one per output channel)");
  OK(ConvInteger, "u8[1,1,4,4] u8[2,1,3,3] u8[]", "i32[1,2,2,2]");
  ERR(ConvInteger, "u8[1,2,4,4] u8[2,1,3,3]", "channels differ");
  OK(QLinearMatMul, "u8[2,3] f32[] u8[] i8[3,4] f32[] i8[] f32[] u8[]", "u8[2,4]");
  ERR(QLinearMatMul, "u8[2,3] f32[] i8[] i8[3,4] f32[] i8[] f32[] u8[]",
      "element types differ: input 0 is u8[2,3]");
  OK(QLinearConv, "u8[1,1,4,4] f32[] u8[] u8[2,1,3,3] f32[2] u8[2] f32[] i8[] i32[2]",
     "i8[1,2,2,2]");
  ERR(QLinearConv, "u8[1,1,4,4] f32[] u8[] u8[2,1,3,3] f32[2] u8[2] f32[] i8[] i32[3]",
      "B (input 8) is i32[3]; expected [2]");

  OK(NegativeLogLikelihoodLoss, "f32[3,5] i64[3] f32[5]", "f32[]");
  OK(NegativeLogLikelihoodLoss, "f32[3,5,2] i64[3,2]", "f32[3,2]",
     KILN_ATTR_S("reduction", "none"));
  ERR(NegativeLogLikelihoodLoss, "f32[3,5] i64[3,5]",
      "target (input 1) i64[3,5] must be input 0 f32[3,5] without its class dim");
  OKN(SoftmaxCrossEntropyLoss, "f32[3,5] i64[3]", 2, "f32[] f32[3,5]");
  OK(SoftmaxCrossEntropyLoss, "f64[3,5,2] i32[3,2] f64[5]", "f64[3,2]",
     KILN_ATTR_S("reduction", "none"));
  ERR(SoftmaxCrossEntropyLoss, "f32[3,5] i64[3]", "attribute 'reduction' = \"avg\"",
      KILN_ATTR_S("reduction", "avg"));
}
