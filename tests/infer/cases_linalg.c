/* tests/infer/cases_linalg.c: MatMul, Gemm, Einsum, Det, convolutions
 * (Col2Im included) and pools (LpPool, MaxUnpool included).
 * Conv sizes: floor((in + pads - dilation*(k-1) - 1) / stride) + 1. */
#include "harness.h"

void cases_linalg(void) {
  OK(MatMul, "f32[2,3] f32[3,4]", "f32[2,4]");
  OK(MatMul, "f32[2,3] f32[3,4]", "f32[2,4]", KILN_ATTR_S("activation", "Relu"));
  ERR(MatMul, "i32[2,3] i32[3,4]", "needs a float result", KILN_ATTR_S("activation", "Relu"));
  OK(Gemm, "f32[2,3] f32[3,4]", "f32[2,4]", KILN_ATTR_S("activation", "Gelu"));
  ERR(Gemm, "f32[2,3] f32[3,4]", "attribute 'activation'", KILN_ATTR_S("activation", "Elu"));
  OK(MatMul, "f32[5,2,3] f32[3]", "f32[5,2]");
  OK(MatMul, "f32[3] f32[3,7]", "f32[7]");
  OK(MatMul, "f32[3] f32[3]", "f32[]");
  OK(MatMul, "i64[2,1,2,3] i64[4,3,5]", "i64[2,4,2,5]");
  ERR(MatMul, "f32[2,3] f32[4,5]",
      "MatMul: inner dimensions differ: input 0 is f32[2,3], input 1 is f32[4,5]");
  ERR(MatMul, "f32[2,2,3] f32[3,3,4]", "batch dimensions do not broadcast");
  ERR(MatMul, "bool[2,2] bool[2,2]", "input 0 is bool[2,2]");
  OK(Gemm, "f32[4,3] f32[5,4] f32[5]", "f32[3,5]", KILN_ATTR_I("transA", 1),
     KILN_ATTR_I("transB", 1));
  OK(Gemm, "f32[2,3] f32[3,4]", "f32[2,4]");
  ERR(Gemm, "f32[2,3] f32[4,5]", "inner dimensions differ");
  ERR(Gemm, "f32[2,3] f32[3,4] f32[3]", "input 2 (C) f32[3] does not broadcast");
  ERR(Gemm, "f32[2,3] _ f32[3]", "Gemm: input 1 is absent but required");

  OK(Einsum, "f32[2,3] f32[3,4]", "f32[2,4]", KILN_ATTR_S("equation", "ij,jk->ik"));
  OK(Einsum, "f32[2,3] f32[3,4]", "f32[2,4]", KILN_ATTR_S("equation", "ij,jk"));
  OK(Einsum, "f32[5,3,3]", "f32[5,3]", KILN_ATTR_S("equation", "...ii->...i"));
  OK(Einsum, "f32[3,3]", "f32[]", KILN_ATTR_S("equation", "ii"));
  OK(Einsum, "f32[2,3,4] f32[2,4,5]", "f32[2,3,5]", KILN_ATTR_S("equation", "bij, bjk -> bik"));
  OK(Einsum, "f32[4,3]", "f32[3,4]", KILN_ATTR_S("equation", "ba"));
  ERR(Einsum, "f32[2,3] f32[4,4]", "label 'j' has size 4", KILN_ATTR_S("equation", "ij,jk->ik"));
  ERR(Einsum, "f32[2,3]", "term 0 has 3 labels", KILN_ATTR_S("equation", "ijk->i"));
  ERR(Einsum, "f32[2,3]", "output label 'z' is not in any input", KILN_ATTR_S("equation", "ij->z"));
  ERR(Einsum, "f32[2,3]", "attribute 'equation'");

  OK(Conv, "f32[1,3,5,5] f32[8,3,3,3]", "f32[1,8,5,5]", IS("pads", 1, 1, 1, 1));
  OK(Conv, "f32[1,3,5,5] f32[8,3,3,3] f32[8]", "f32[1,8,2,2]", IS("strides", 2, 2));
  OK(Conv, "f32[1,4,7,7] f32[6,2,3,3]", "f32[1,6,3,3]", KILN_ATTR_I("group", 2),
     IS("dilations", 2, 2));
  OK(Conv, "f32[2,3,5,6] f32[4,3,3,3]", "f32[2,4,3,3]", KILN_ATTR_S("auto_pad", "SAME_UPPER"),
     IS("strides", 2, 2));
  OK(Conv, "f32[1,1,10] f32[1,1,4]", "f32[1,1,7]", KILN_ATTR_S("auto_pad", "VALID"));
  ERR(Conv, "f32[1,3,5,5] f32[8,4,3,3]", "channels differ: input 0 f32[1,3,5,5] has 3");
  ERR(Conv, "f32[1,3,5,5] f32[8,3,3,3]", "attribute 'kernel_shape' [3] has 1 entries; expected 2",
      IS("kernel_shape", 3));
  ERR(Conv, "f32[1,3,5,5] f32[8,3,3,3]", "attribute 'strides' [0,1]: entry 0 = 0 must be >= 1",
      IS("strides", 0, 1));
  ERR(Conv, "f32[1,3,5,5] f32[8,3,3,3]", "attribute 'pads' [1,1] has 2 entries; expected 4",
      IS("pads", 1, 1));
  ERR(Conv, "f32[1,4,5,5] f32[6,1,3,3]", "group 4 does not divide the 6 output channels",
      KILN_ATTR_I("group", 4), IS("kernel_shape", 3, 3));
  ERR(Conv, "f32[1,3,5,5] f32[8,3,3,3] f32[4]", "input 2 (B) is f32[4]; expected [8]");
  ERR(Conv, "f32[1,3,2,2] f32[8,3,3,3]", "effective kernel 3 is larger than the padded input 2");
  /* kiln's fused residual: exactly the result's type, with or without bias */
  OK(Conv, "f32[1,3,5,5] f32[8,3,3,3] _ f32[1,8,5,5]", "f32[1,8,5,5]", IS("pads", 1, 1, 1, 1));
  OK(Conv, "f32[1,3,5,5] f32[8,3,3,3] f32[8] f32[1,8,3,3]", "f32[1,8,3,3]",
     KILN_ATTR_S("activation", "Relu"));
  ERR(Conv, "f32[1,3,5,5] f32[8,3,3,3] f32[8] f32[1,8,1,1]",
      "input 3 (residual) is f32[1,8,1,1]; expected the result's type f32[1,8,3,3]");
  ERR(Conv, "f32[1,3,5,5] f32[8,3,3,3] _ f64[1,8,3,3]", "input 3 (residual) is f64[1,8,3,3]");
  /* the channel-blocked Conv: blocked or plain X, result blocked */
  OK(BlockedConv, "f32[1,2,5,5,16] f32[20,17,3,3] f32[20]", "f32[1,2,5,5,16]",
     KILN_ATTR_I("block", 16), IS("pads", 1, 1, 1, 1));
  OK(BlockedConv, "f32[1,3,9,9] f32[8,3,3,3]", "f32[1,2,4,4,4]", KILN_ATTR_I("block", 4),
     IS("strides", 2, 2));
  OK(BlockedConv, "f32[2,3,6,6,8] f32[24,1,3,3] _ f32[2,3,6,6,8]", "f32[2,3,6,6,8]",
     KILN_ATTR_I("block", 8), KILN_ATTR_I("group", 24), IS("pads", 1, 1, 1, 1),
     KILN_ATTR_S("activation", "Relu"));
  ERR(BlockedConv, "f32[1,1,5,5,16] f32[20,17,3,3]", "is not 17 channels in blocks of 16",
      KILN_ATTR_I("block", 16));
  /* grouped (ABI 1.7): 40 channels in 5 groups of 8, blocked at 16 */
  OK(BlockedConv, "f32[1,3,7,7,16] f32[40,8,3,3]", "f32[1,3,4,4,16]", KILN_ATTR_I("block", 16),
     KILN_ATTR_I("group", 5), IS("strides", 2, 2), IS("pads", 1, 1, 1, 1));
  ERR(BlockedConv, "f32[1,6,5,5] f32[8,2,3,3]", "group 3 does not divide W f32[8,2,3,3]'s 8",
      KILN_ATTR_I("block", 16), KILN_ATTR_I("group", 3));
  ERR(BlockedConv, "f32[1,3,5,5] f32[8,3,3,3]", "attribute 'block' = 0");
  ERR(BlockedConv, "f32[1,3,5,5] f32[8,3,3,3] _ f32[1,8,3,3]",
      "input 3 (residual) is f32[1,8,3,3]; expected the result's type f32[1,1,3,3,16]",
      KILN_ATTR_I("block", 16));
  /* out = stride*(in-1) + output_padding + (k-1)*dilation + 1 - pads */
  OK(ConvTranspose, "f32[1,2,3,3] f32[2,4,3,3]", "f32[1,4,7,7]", IS("strides", 2, 2));
  OK(ConvTranspose, "f32[1,2,3,3] f32[2,4,3,3]", "f32[1,4,6,6]", IS("strides", 2, 2),
     IS("pads", 1, 1, 1, 1), IS("output_padding", 1, 1));
  OK(ConvTranspose, "f32[1,2,3,3] f32[2,4,3,3] f32[8]", "f32[1,8,5,5]", KILN_ATTR_I("group", 2));
  OK(ConvTranspose, "f32[1,2,3] f32[2,4,3]", "f32[1,4,10]", IS("output_shape", 10));
  ERR(ConvTranspose, "f32[1,3,3,3] f32[2,4,3,3]", "channels differ");
  OK(AveragePool, "f32[1,1,5,5]", "f32[1,1,2,2]", IS("kernel_shape", 2, 2), IS("strides", 2, 2));
  OK(AveragePool, "f32[1,1,5,5]", "f32[1,1,3,3]", IS("kernel_shape", 2, 2), IS("strides", 2, 2),
     KILN_ATTR_I("ceil_mode", 1));
  ERR(AveragePool, "f32[1,1,5,5]", "attribute 'kernel_shape' is required");
  ERR(AveragePool, "f32[1,1,5,5]", "attribute 'auto_pad' = \"SAME\"", IS("kernel_shape", 2, 2),
      KILN_ATTR_S("auto_pad", "SAME"));
  OKN(MaxPool, "f32[1,2,6,6]", 2, "f32[1,2,3,3] i64[1,2,3,3]", IS("kernel_shape", 3, 3),
      IS("pads", 1, 1, 1, 1), IS("strides", 2, 2));
  OK(MaxPool, "u8[1,2,6,7]", "u8[1,2,3,4]", IS("kernel_shape", 3, 3), IS("strides", 2, 2),
     KILN_ATTR_S("auto_pad", "SAME_LOWER"));
  ERR(MaxPool, "f32[1,2,6,6]", "attribute 'kernel_shape' [3] has 1 entries; expected 2",
      IS("kernel_shape", 3));
  ERR(MaxPool, "i32[1,2,6,6]", "input 0 is i32[1,2,6,6]", IS("kernel_shape", 3, 3));
  /* window geometry whose arithmetic would overflow is refused */
  ERRN(MaxPool, "f32[1,1,6,6]", 0, KILN_OUT_OF_RANGE,
       "MaxPool: spatial dim 1: the effective kernel (kernel 1099511627776, dilation 1073741824) "
       "overflows",
       IS("kernel_shape", 3, 1099511627776), IS("dilations", 1, 1073741824),
       KILN_ATTR_S("auto_pad", "SAME_UPPER"));
  ERRN(AveragePool, "f32[1,1,6,6]", 0, KILN_OUT_OF_RANGE,
       "AveragePool: spatial dim 0: the padded input overflows", IS("kernel_shape", 3, 3),
       IS("pads", INT64_MAX, 0, 1, 0));
  OK(MaxPool, "f32[1,1,6,6]", "f32[1,1,6,6]", IS("kernel_shape", 136314879, 2),
     KILN_ATTR_S("auto_pad", "SAME_UPPER"));
  OK(GlobalAveragePool, "f32[2,3,4,5]", "f32[2,3,1,1]");
  ERR(GlobalAveragePool, "f32[2,3]", "expected rank >= 3");
  OK(GlobalMaxPool, "f64[2,3,4,5,6]", "f64[2,3,1,1,1]");
  ERR(GlobalMaxPool, "i8[2,3,4]", "input 0 is i8[2,3,4]");

  OK(LpPool, "f32[1,2,5,5]", "f32[1,2,2,2]", IS("kernel_shape", 2, 2), IS("strides", 2, 2));
  OK(LpPool, "f32[1,2,5,5]", "f32[1,2,3,3]", IS("kernel_shape", 2, 2), IS("strides", 2, 2),
     KILN_ATTR_I("ceil_mode", 1), KILN_ATTR_I("p", 1));
  ERR(LpPool, "f32[1,2,5,5]", "attribute 'p' = 0 must be positive", IS("kernel_shape", 2, 2),
      KILN_ATTR_I("p", 0));
  ERR(LpPool, "i32[1,2,5,5]", "input 0 is i32[1,2,5,5]", IS("kernel_shape", 2, 2));

  OK(Det, "f32[3,3]", "f32[]");
  OK(Det, "f64[2,4,3,3]", "f64[2,4]");
  ERR(Det, "f32[3,2]", "not a stack of square matrices");
  ERR(Det, "f32[3]", "input 0 is f32[3]");
  ERR(Det, "i64[2,2]", "input 0 is i64[2,2]");
  OK(ScaledDotProductAttention, "f32[2,3,5,8] f32[2,3,7,8] f32[2,3,7,4]", "f32[2,3,5,4]");
  OK(ScaledDotProductAttention, "f32[2,5,3,8] f32[2,3,8,7] f32[2,7,3,4] f32[2,1,1,7]",
     "f32[2,5,3,4]", IS("q_perm", 0, 2, 1, 3), IS("k_perm", 0, 1, 3, 2), IS("v_perm", 0, 2, 1, 3),
     IS("out_perm", 0, 2, 1, 3));
  OK(ScaledDotProductAttention, "f32[1,2,5,8] f32[1,2,6,8] f32[1,2,6,8] bool[5,6]",
     "f32[1,2,5,8]");
  ERR(ScaledDotProductAttention, "f32[2,3,5,8] f32[2,3,7,6] f32[2,3,7,4]", "do not agree");
  ERR(ScaledDotProductAttention, "f32[2,3,5,8] f32[2,3,7,8] f32[2,3,7,4] f32[3,7]",
     "mask f32[3,7] does not broadcast");
  ERR(ScaledDotProductAttention, "f32[2,3,5,8] f32[2,3,7,8] f32[2,3,7,4]", "not a permutation",
      IS("q_perm", 0, 1, 1, 3));
  ERR(ScaledDotProductAttention, "i32[2,3,5,8] i32[2,3,7,8] i32[2,3,7,4]", "Q is i32");
  /* Q, K, V as slices of one [B, S, 3, H, D] projection: each operand less
   * the gathered axis, then its perm */
  OK(ScaledDotProductAttention, "f32[2,7,3,4,8] f32[2,7,3,4,8] f32[2,7,3,4,8]", "f32[2,7,4,8]",
     IS("q_gather", 2, 0), IS("k_gather", 2, 1), IS("v_gather", 2, 2), IS("q_perm", 0, 2, 1, 3),
     IS("k_perm", 0, 2, 1, 3), IS("v_perm", 0, 2, 1, 3), IS("out_perm", 0, 2, 1, 3));
  OK(ScaledDotProductAttention, "f32[2,3,5,8] f32[2,2,3,7,8] f32[2,3,7,4]", "f32[2,3,5,4]",
     IS("k_gather", 1, 1));
  ERR(ScaledDotProductAttention, "f32[2,3,5,8] f32[2,2,3,7,8] f32[2,3,7,4]",
      "K is f32[2,2,3,7,8]; expected rank 4");
  ERR(ScaledDotProductAttention, "f32[2,3,5,8] f32[2,3,7,8] f32[2,3,7,4]",
      "Q is f32[2,3,5,8]; expected rank 5", IS("q_gather", 0, 0));
  ERR(ScaledDotProductAttention, "f32[2,3,5,8] f32[2,2,3,7,8] f32[2,3,7,4]",
      "'k_gather' = [1, 2] is not an axis of K f32[2,2,3,7,8] and an index within it",
      IS("k_gather", 1, 2));
  ERR(ScaledDotProductAttention, "f32[2,3,5,8] f32[2,2,3,7,8] f32[2,3,7,4]", "2 ints",
      IS("k_gather", 1));

  OK(MaxUnpool, "f32[1,1,2,2] i64[1,1,2,2]", "f32[1,1,4,4]", IS("kernel_shape", 2, 2),
     IS("strides", 2, 2));
  OK(MaxUnpool, "f32[1,1,2,2] i64[1,1,2,2]", "f32[1,1,5,5]", IS("kernel_shape", 2, 2),
     IS("strides", 2, 2), IS("output_shape", 1, 1, 5, 5));
  ERR(MaxUnpool, "f32[1,1,2,2] i64[1,1,2,2]", "does not fit input 0", IS("kernel_shape", 2, 2),
      IS("strides", 2, 2), IS("output_shape", 1, 1, 3, 5));
  ERR(MaxUnpool, "f32[1,1,2,2] i32[1,1,2,2]", "indices (input 1) is i32", IS("kernel_shape", 2, 2));
  ERR(MaxUnpool, "f32[1,1,2,2] i64[1,1,2,1]", "must have the shape of input 0",
      IS("kernel_shape", 2, 2));
  ERR(MaxUnpool, "f32[1,1,2,2] i64[1,1,2,2]", "'kernel_shape' must have 2 entries");

  OK(Col2Im, "f32[1,5,5]", "f32[1,1,5,5]", IS("image_shape", 5, 5), IS("block_shape", 1, 5));
  OK(Col2Im, "f32[2,8,9]", "f32[2,2,4,4]", IS("image_shape", 4, 4), IS("block_shape", 2, 2),
     IS("pads", 1, 1, 1, 1), IS("strides", 2, 2));
  ERR(Col2Im, "f32[1,5,4]", "must be [N, C*5, 5]", IS("image_shape", 5, 5),
      IS("block_shape", 1, 5));
  ERR(Col2Im, "f32[1,5,5]", "attribute 'image_shape' is required", IS("block_shape", 1, 5));
  ERR(Col2Im, "f32[1,5,5]", "smaller than its dilated block", IS("image_shape", 5, 2),
      IS("block_shape", 1, 5));
}
