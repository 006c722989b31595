/* tests/infer/cases_later.c: the kinds appended to node_kinds.def later
 * (RMSNormalization, Bitwise*, Mish, Swish, LpNormalization, windows,
 * LpPool, Det, GroupNormalization, CenterCropPad, MaxUnpool, Col2Im). */
#include "harness.h"

void cases_later(void) {
  OK(RMSNormalization, "f32[2,3,4] f32[4]", "f32[2,3,4]");
  OK(RMSNormalization, "f16[2,3,4] f16[3,4]", "f16[2,3,4]", KILN_ATTR_I("axis", 1));
  ERR(RMSNormalization, "f32[2,3,4] f32[5]", "scale (input 1) f32[5] does not broadcast");
  ERR(RMSNormalization, "i32[2,3] i32[3]", "input 0 is i32[2,3]");
  ERR(RMSNormalization, "f32[2,3] f32[3]", "axis", KILN_ATTR_I("axis", 2));

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

  OK(LpNormalization, "f32[2,3]", "f32[2,3]", KILN_ATTR_I("axis", 0), KILN_ATTR_I("p", 1));
  ERR(LpNormalization, "f32[2,3]", "attribute 'p' = 3 must be 1 or 2", KILN_ATTR_I("p", 3));
  ERR(LpNormalization, "f32[2,3]", "axis", KILN_ATTR_I("axis", -3));

  OK(HannWindow, "", "f32[10]", KILN_ATTR_I("size", 10));
  OK(HammingWindow, "", "f64[0]", KILN_ATTR_I("size", 0), KILN_ATTR_T("output_datatype", KILN_F64));
  OK(BlackmanWindow, "", "i32[3]", KILN_ATTR_I("size", 3), KILN_ATTR_T("output_datatype", KILN_I32),
     KILN_ATTR_I("periodic", 0));
  ERR(HannWindow, "", "attribute 'size' is required");
  ERR(HammingWindow, "", "attribute 'size' = -1 must not be negative", KILN_ATTR_I("size", -1));
  ERR(BlackmanWindow, "", "attribute 'periodic' = 2 must be 0 or 1", KILN_ATTR_I("size", 4),
      KILN_ATTR_I("periodic", 2));
  ERR(BlackmanWindow, "", "output_datatype", KILN_ATTR_I("size", 4),
      KILN_ATTR_T("output_datatype", KILN_BOOL));

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

  OK(GroupNormalization, "f32[2,4,3,3] f32[4] f32[4]", "f32[2,4,3,3]",
     KILN_ATTR_I("num_groups", 2));
  OK(GroupNormalization, "f16[1,6] f16[6] f16[6]", "f16[1,6]", KILN_ATTR_I("num_groups", 3),
     KILN_ATTR_I("stash_type", 1));
  ERR(GroupNormalization, "f32[2,4,3] f32[4] f32[4]",
      "'num_groups' = 3 must be positive and divide", KILN_ATTR_I("num_groups", 3));
  ERR(GroupNormalization, "f32[2,4,3] f32[2] f32[2]",
      "scale f32[2] and bias f32[2] must both be [4]", KILN_ATTR_I("num_groups", 2));
  ERR(GroupNormalization, "f32[2,4,3] f32[4] f32[4]", "attribute 'num_groups' is required");

  OK(CenterCropPad, "f32[20,10,3]", "f32[10,7,3]", IS("shape", 10, 7, 3));
  OK(CenterCropPad, "i32[3,20,8]", "i32[3,10,12]", IS("shape", 10, 12), IS("axes", -2, 2));
  ERR(CenterCropPad, "f32[20,10,3]", "attribute 'shape' has 2 entries, expected 3",
      IS("shape", 10, 7));
  ERR(CenterCropPad, "f32[20,10,3]", "attribute 'shape' is required");
  ERR(CenterCropPad, "f32[20,10]", "repeats axis 0", IS("shape", 1, 2), IS("axes", 0, -2));

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
