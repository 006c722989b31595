/* tests/infer/cases_reduce.c: reductions, softmax family, CumSum, TopK and
 * the normalizations (RMSNormalization, LpNormalization and
 * GroupNormalization included). */
#include "harness.h"

void cases_reduce(void) {
  OK(ArgMax, "f32[3,4,5]", "i64[3,5]", KILN_ATTR_I("axis", 1), KILN_ATTR_I("keepdims", 0));
  OK(ArgMax, "f32[3,4,5]", "i64[1,4,5]");
  ERR(ArgMax, "f32[3,4,5]", "attribute 'axis' = 3 is out of range [-3, 2]", KILN_ATTR_I("axis", 3));
  OK(ArgMin, "i32[2,3]", "i64[2,1]", KILN_ATTR_I("axis", -1));
  ERR(ArgMin, "bool[2]", "input 0 is bool[2]");

  static const kiln_node_kind reds[] = {KILN_NODE_ReduceL1,     KILN_NODE_ReduceL2,
                                        KILN_NODE_ReduceLogSum, KILN_NODE_ReduceLogSumExp,
                                        KILN_NODE_ReduceMax,    KILN_NODE_ReduceMean,
                                        KILN_NODE_ReduceMin,    KILN_NODE_ReduceProd,
                                        KILN_NODE_ReduceSum,    KILN_NODE_ReduceSumSquare};
  for (size_t i = 0; i < sizeof reds / sizeof reds[0]; i++) {
    kiln_attr_desc keep0[] = {IS("axes", 0, 2), KILN_ATTR_I("keepdims", 0)};
    infer_ok(reds[i], "f32[2,3,4]", keep0, 2, 0, "f32[3]", __LINE__);
    infer_ok(reds[i], "f32[2,3,4]", keep0, 1, 0, "f32[1,3,1]", __LINE__);
    infer_ok(reds[i], "i32[2,3,4]", NULL, 0, 0, "i32[1,1,1]", __LINE__);
    kiln_attr_desc noop[] = {KILN_ATTR_I("noop_with_empty_axes", 1)};
    infer_ok(reds[i], "f32[2,3,4]", noop, 1, 0, "f32[2,3,4]", __LINE__);
    kiln_attr_desc bad[] = {IS("axes", 1, -2)};
    infer_err(reds[i], "f32[2,3,4]", bad, 1, 0, KILN_INVALID_ARGUMENT,
              "attribute 'axes' names axis 1 twice", __LINE__);
    kiln_attr_desc out_of_range[] = {IS("axes", 3)};
    infer_err(reds[i], "f32[2,3,4]", out_of_range, 1, 0, KILN_INVALID_ARGUMENT, "out of range",
              __LINE__);
  }
  OK(ReduceMax, "bool[2,2]", "bool[2]", IS("axes", 0), KILN_ATTR_I("keepdims", 0));
  ERR(ReduceSum, "bool[2,2]", "input 0 is bool[2,2]");

  static const kiln_node_kind soft[] = {KILN_NODE_Softmax, KILN_NODE_LogSoftmax, KILN_NODE_Hardmax};
  for (int i = 0; i < 3; i++) {
    infer_ok(soft[i], "f32[2,5]", NULL, 0, 0, "f32[2,5]", __LINE__);
    kiln_attr_desc ax[] = {KILN_ATTR_I("axis", 2)};
    infer_err(soft[i], "f32[2,5]", ax, 1, 0, KILN_INVALID_ARGUMENT, "attribute 'axis' = 2",
              __LINE__);
    infer_err(soft[i], "i32[2,5]", NULL, 0, 0, KILN_INVALID_ARGUMENT, "input 0 is i32[2,5]",
              __LINE__);
  }
  OK(CumSum, "i64[3,4]", "i64[3,4]", KILN_ATTR_I("axis", 1));
  ERR(CumSum, "i64[3,4]", "attribute 'axis' is required");
  ERR(CumSum, "i8[3]", "input 0 is i8[3]", KILN_ATTR_I("axis", 0));
  OK(TopK, "f32[3,10]", "f32[3,4] i64[3,4]", KILN_ATTR_I("k", 4));
  OK(TopK, "i32[6,2]", "i32[2,2] i64[2,2]", KILN_ATTR_I("k", 2), KILN_ATTR_I("axis", 0));
  ERR(TopK, "f32[3,10]", "attribute 'k' = 11 is out of range [0, 10]", KILN_ATTR_I("k", 11));
  ERR(TopK, "f32[3,10]", "attribute 'k' is required");

  OK(BatchNormalization, "f32[2,3,4,4] f32[3] f32[3] f32[3] f32[3]", "f32[2,3,4,4]");
  ERR(BatchNormalization, "f32[2,3,4,4] f32[4] f32[3] f32[3] f32[3]",
      "scale (input 1) is f32[4]; expected shape [3]");
  ERR(BatchNormalization, "f32[2,3] f32[3] f32[3] f32[3]", "takes 5 inputs, got 4");
  OK(InstanceNormalization, "f32[2,3,5] f32[3] f32[3]", "f32[2,3,5]");
  ERR(InstanceNormalization, "f32[2,3] f32[3] f32[3]", "input 0 is f32[2,3]; expected rank >= 3");
  OKN(LayerNormalization, "f32[2,3,4] f32[4] f32[4]", 3, "f32[2,3,4] f32[2,3,1] f32[2,3,1]");
  OKN(LayerNormalization, "f16[2,3,4] f16[3,4]", 2, "f16[2,3,4] f32[2,1,1]",
      KILN_ATTR_I("axis", 1));
  OK(LayerNormalization, "f32[2,3,4] f32[4] _", "f32[2,3,4]");
  ERR(LayerNormalization, "f32[2,3,4] f32[5]", "scale (input 1) does not broadcast");
  OK(MeanVarianceNormalization, "f32[2,3,4,5]", "f32[2,3,4,5]");
  OK(MeanVarianceNormalization, "f32[2,3]", "f32[2,3]", IS("axes", 1));
  ERR(MeanVarianceNormalization, "f32[2,3]", "attribute 'axes' = 2 is out of range");
  OK(LRN, "f32[1,4,5,5]", "f32[1,4,5,5]", KILN_ATTR_I("size", 3));
  ERR(LRN, "f32[1,4,5,5]", "attribute 'size' is required");

  OK(RMSNormalization, "f32[2,3,4] f32[4]", "f32[2,3,4]");
  OK(RMSNormalization, "f16[2,3,4] f16[3,4]", "f16[2,3,4]", KILN_ATTR_I("axis", 1));
  ERR(RMSNormalization, "f32[2,3,4] f32[5]", "scale (input 1) f32[5] does not broadcast");
  ERR(RMSNormalization, "i32[2,3] i32[3]", "input 0 is i32[2,3]");
  ERR(RMSNormalization, "f32[2,3] f32[3]", "axis", KILN_ATTR_I("axis", 2));

  OK(LpNormalization, "f32[2,3]", "f32[2,3]", KILN_ATTR_I("axis", 0), KILN_ATTR_I("p", 1));
  ERR(LpNormalization, "f32[2,3]", "attribute 'p' = 3 must be 1 or 2", KILN_ATTR_I("p", 3));
  ERR(LpNormalization, "f32[2,3]", "axis", KILN_ATTR_I("axis", -3));

  OK(GroupNormalization, "f32[2,4,3,3] f32[4] f32[4]", "f32[2,4,3,3]",
     KILN_ATTR_I("num_groups", 2));
  OK(GroupNormalization, "f16[1,6] f16[6] f16[6]", "f16[1,6]", KILN_ATTR_I("num_groups", 3),
     KILN_ATTR_I("stash_type", 1));
  ERR(GroupNormalization, "f32[2,4,3] f32[4] f32[4]",
      "'num_groups' = 3 must be positive and divide", KILN_ATTR_I("num_groups", 3));
  ERR(GroupNormalization, "f32[2,4,3] f32[2] f32[2]",
      "scale f32[2] and bias f32[2] must both be [4]", KILN_ATTR_I("num_groups", 2));
  ERR(GroupNormalization, "f32[2,4,3] f32[4] f32[4]", "attribute 'num_groups' is required");
}
