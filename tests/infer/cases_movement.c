/* tests/infer/cases_movement.c: shape and data movement kinds (CenterCropPad
 * included) and the generators (ConstantOfShape, EyeLike, Range, the
 * windows). */
#include "harness.h"

void cases_movement(void) {
  OK(Reshape, "f32[2,3,4]", "f32[2,12]", IS("shape", 0, -1));
  OK(Reshape, "f32[0,3]", "f32[0,3]", IS("shape", 0, 3), KILN_ATTR_I("allowzero", 1));
  OK(Reshape, "i8[6]", "i8[1,6,1]", IS("shape", 1, 6, 1), KILN_ATTR_I("allowzero", 0));
  ERR(Reshape, "f32[2,3,4]", "cannot reshape input 0 f32[2,3,4] to [5,-1]", IS("shape", 5, -1));
  ERR(Reshape, "f32[2,3,4]", "has more than one -1", IS("shape", -1, -1));
  ERR(Reshape, "f32[2,3,4]", "attribute 'shape' is required");
  OK(Flatten, "f32[2,3,4]", "f32[6,4]", KILN_ATTR_I("axis", 2));
  OK(Flatten, "f32[2,3,4]", "f32[1,24]", KILN_ATTR_I("axis", 0));
  OK(Flatten, "f32[2,3,4]", "f32[2,12]");
  OK(Flatten, "f32[2,3,4]", "f32[6,4]", KILN_ATTR_I("axis", -1));
  OK(Flatten, "f32[2,3,4]", "f32[1,24]", KILN_ATTR_I("axis", -3));
  ERR(Flatten, "f32[2,3,4]", "attribute 'axis' = 4 is out of range [-3, 3]",
      KILN_ATTR_I("axis", 4));
  OK(Squeeze, "f32[1,3,1,2]", "f32[3,2]");
  OK(Squeeze, "f32[1,3,1,2]", "f32[1,3,2]", IS("axes", -2));
  ERR(Squeeze, "f32[1,3,1,2]", "axis 1 of input 0 f32[1,3,1,2] has size 3, not 1", IS("axes", 1));
  OK(Unsqueeze, "f32[3,4]", "f32[1,3,4,1]", IS("axes", 0, -1));
  OK(Unsqueeze, "f32[]", "f32[1]", IS("axes", 0));
  ERR(Unsqueeze, "f32[3,4]", "attribute 'axes' is required");
  ERR(Unsqueeze, "f32[3,4]", "names axis 1 twice", IS("axes", 1, -3));
  OK(Transpose, "f32[2,3,4]", "f32[4,3,2]");
  OK(Transpose, "f32[2,3,4]", "f32[3,2,4]", IS("perm", 1, 0, 2));
  ERR(Transpose, "f32[2,3,4]", "attribute 'perm' [0,0,1] is not a permutation",
      IS("perm", 0, 0, 1));
  OK(Expand, "f32[3,1]", "f32[2,3,4]", IS("shape", 2, 1, 4));
  OK(Expand, "f32[2,3]", "f32[2,3]", IS("shape", 1));
  ERR(Expand, "f32[3,2]", "input 0 f32[3,2] does not broadcast with shape [4]", IS("shape", 4));
  OK(Tile, "f32[2,3]", "f32[4,3]", IS("repeats", 2, 1));
  ERR(Tile, "f32[2,3]", "attribute 'repeats' [2] has 1 entries but input 0 is f32[2,3]",
      IS("repeats", 2));
  /* axis 0: 1,3,5 -> 3; axis 1: start 4, end clamps to -1, step -1 -> 5. */
  OK(Slice, "f32[10,5]", "f32[3,5]", IS("starts", 1, -1), IS("ends", 7, -100000), IS("axes", 0, 1),
     IS("steps", 2, -1));
  OK(Slice, "f32[10,5]", "f32[8,5]", IS("starts", 2), IS("ends", INT64_MAX));
  OK(Slice, "f32[10,5]", "f32[10,0]", IS("starts", 3), IS("ends", 1), IS("axes", -1));
  ERR(Slice, "f32[10,5]", "attribute 'steps' entry 0 is 0", IS("starts", 0), IS("ends", 1),
      IS("steps", 0));
  ERR(Slice, "f32[10,5]", "different lengths", IS("starts", 0, 0), IS("ends", 1));
  OK(Pad, "f32[2,3]", "f32[4,5]", IS("pads", 1, 0, 1, 2));
  OK(Pad, "f32[2,3]", "f32[2,5]", IS("pads", 1, 1), IS("axes", 1), KILN_ATTR_S("mode", "reflect"));
  OK(Pad, "f32[2,3]", "f32[2,2]", IS("pads", 0, -1, 0, 0));
  ERR(Pad, "f32[2,3]", "attribute 'pads' [1,1,1] has 3 entries; expected 4", IS("pads", 1, 1, 1));
  ERR(Pad, "f32[2,3]", "attribute 'mode' = \"mirror\"", IS("pads", 0, 0, 0, 0),
      KILN_ATTR_S("mode", "mirror"));
  OK(Concat, "f32[2,3] f32[2,5] f32[2,1]", "f32[2,9]", KILN_ATTR_I("axis", -1));
  ERR(Concat, "f32[2,3] f32[3,3]", "input 1 f32[3,3] differs from input 0 f32[2,3] in dim 0",
      KILN_ATTR_I("axis", 1));
  ERR(Concat, "f32[2,3] f32[2,3]", "attribute 'axis' is required");
  OK(Split, "f32[6,2]", "f32[1,2] f32[5,2]", IS("split", 1, 5));
  OK(Split, "f32[6,2]", "f32[2,2] f32[2,2] f32[2,2]", KILN_ATTR_I("num_outputs", 3));
  OKN(Split, "f32[6,2]", 2, "f32[6,1] f32[6,1]", KILN_ATTR_I("axis", 1));
  OK(Split, "f32[7]", "f32[2] f32[2] f32[2] f32[1]", KILN_ATTR_I("num_outputs", 4));
  ERR(Split, "f32[6,2]", "attribute 'split' [1,2] sums to 3 but axis 0", IS("split", 1, 2));
  ERR(Split, "f32[6,2]", "the number of results is unknown");
  ERRN(Split, "f32[6,2]", 3, KILN_INVALID_ARGUMENT, "3 results requested but 'split' gives 2",
       IS("split", 3, 3));

  OK(Gather, "f32[5,4,3] i64[2,7]", "f32[5,2,7,3]", KILN_ATTR_I("axis", 1));
  OK(Gather, "f32[5,4] i32[]", "f32[4]");
  ERR(Gather, "f32[5,4] f32[2]", "indices (input 1) is f32[2]");
  OK(GatherElements, "f32[3,3] i64[2,3]", "f32[2,3]", KILN_ATTR_I("axis", 1));
  ERR(GatherElements, "f32[3,3] i64[3]", "indices i64[3] must have the rank of input 0 f32[3,3]");
  /* The model: indices longer than data off the axis. */
  ERR(GatherElements, "f32[2,2] i64[6,2]",
      "indices (input 1) i64[6,2] exceed input 0 f32[2,2] in dim 0 (6 > 2); only dim 1",
      KILN_ATTR_I("axis", 1));
  OK(GatherElements, "f32[2,2] i64[6,2]", "f32[6,2]", KILN_ATTR_I("axis", 0));
  ERR(ScatterElements, "f32[3,3] i64[4,1] f32[4,1]",
      "indices (input 1) i64[4,1] exceed input 0 f32[3,3] in dim 0 (4 > 3)", KILN_ATTR_I("axis", 1));
  OK(GatherND, "f32[2,3,4] i64[5,2]", "f32[5,4]");
  OK(GatherND, "f32[2,3,4] i64[2,1]", "f32[2,4]", KILN_ATTR_I("batch_dims", 1));
  ERR(GatherND, "f32[2,3,4] i64[5,4]", "the last dim of indices i64[5,4] must be in [1, 3]");
  OK(ScatterND, "f32[4,5] i64[3,1] f32[3,5]", "f32[4,5]");
  ERR(ScatterND, "f32[4,5] i64[3,1] f32[3,4]", "updates f32[3,4] must have shape [3,5]");
  OK(ScatterElements, "f32[3,3] i64[1,2] f32[1,2]", "f32[3,3]", KILN_ATTR_I("axis", 1),
     KILN_ATTR_S("reduction", "add"));
  ERR(ScatterElements, "f32[3,3] i64[1,2] f32[1,2]", "attribute 'reduction' = \"avg\"",
      KILN_ATTR_S("reduction", "avg"));
  ERR(ScatterElements, "f32[3,3] i64[1,2] f32[2,1]", "must have the same shape");

  OK(Shape, "f32[2,3,4]", "i64[3]");
  OK(Shape, "f32[2,3,4]", "i64[2]", KILN_ATTR_I("start", 1));
  OK(Shape, "f32[2,3,4]", "i64[1]", KILN_ATTR_I("start", -1));
  OK(Shape, "f32[2,3,4]", "i64[0]", KILN_ATTR_I("end", -5));
  ERR(Shape, "f32[2] f32[2]", "Shape: takes 1 input, got 2");
  OK(Size, "f32[2,3]", "i64[]");
  ERR(Size, "", "Size: takes 1 input, got 0");
  OK(ConstantOfShape, "", "i32[2,3]", IS("shape", 2, 3), KILN_ATTR_T("dtype", KILN_I32));
  OK(ConstantOfShape, "", "f32[2,3]", IS("shape", 2, 3), KILN_ATTR_F("value", 1.5));
  OK(ConstantOfShape, "", "f32[]", KILN_ATTR_IS("shape", NULL, 0));
  ERR(ConstantOfShape, "", "attribute 'shape' is required");
  ERR(ConstantOfShape, "", "has a negative entry", IS("shape", 2, -3));
  OK(EyeLike, "f32[3,4]", "i64[3,4]", KILN_ATTR_T("dtype", KILN_I64));
  OK(EyeLike, "u8[2,2]", "u8[2,2]", KILN_ATTR_I("k", 1));
  ERR(EyeLike, "f32[3,4,5]", "input 0 is f32[3,4,5]; expected rank 2");
  OK(Range, "", "i32[4]", KILN_ATTR_F("start", 0), KILN_ATTR_F("limit", 10),
     KILN_ATTR_F("delta", 3), KILN_ATTR_T("dtype", KILN_I32));
  OK(Range, "", "f32[4]", KILN_ATTR_F("start", 1), KILN_ATTR_F("limit", 0),
     KILN_ATTR_F("delta", -0.25));
  OK(Range, "", "f64[0]", KILN_ATTR_F("start", 5), KILN_ATTR_F("limit", 1), KILN_ATTR_F("delta", 1),
     KILN_ATTR_T("dtype", KILN_F64));
  ERR(Range, "", "do not make a finite range", KILN_ATTR_F("start", 0), KILN_ATTR_F("limit", 1),
      KILN_ATTR_F("delta", 0));
  ERR(Range, "", "attribute 'dtype') is bool", KILN_ATTR_F("start", 0), KILN_ATTR_F("limit", 1),
      KILN_ATTR_F("delta", 1), KILN_ATTR_T("dtype", KILN_BOOL));
  OK(OneHot, "i64[2,3] f32[2]", "f32[2,3,5]", KILN_ATTR_I("depth", 5));
  OK(OneHot, "i32[2,3] i8[2]", "i8[5,2,3]", KILN_ATTR_I("depth", 5), KILN_ATTR_I("axis", 0));
  ERR(OneHot, "i64[2,3] f32[2]", "attribute 'depth' is required");
  ERR(OneHot, "i64[2,3] f32[3]", "values (input 1) is f32[3]", KILN_ATTR_I("depth", 5));
  OK(DepthToSpace, "f32[1,8,2,3]", "f32[1,2,4,6]", KILN_ATTR_I("blocksize", 2),
     KILN_ATTR_S("mode", "CRD"));
  ERR(DepthToSpace, "f32[1,6,2,3]", "not divisible by blocksize^2 = 4",
      KILN_ATTR_I("blocksize", 2));
  OK(SpaceToDepth, "f32[1,2,4,6]", "f32[1,8,2,3]", KILN_ATTR_I("blocksize", 2));
  ERR(SpaceToDepth, "f32[1,2,5,6]", "not divisible by blocksize 2", KILN_ATTR_I("blocksize", 2));
  OK(Resize, "f32[1,3,4,4]", "f32[1,3,8,6]", FS("scales", 1, 1, 2, 1.5));
  OK(Resize, "f32[1,3,4,4]", "f32[1,3,7,9]", IS("sizes", 7, 9), IS("axes", 2, 3),
     KILN_ATTR_S("mode", "linear"));
  OK(Resize, "f32[1,3,4,8]", "f32[1,3,4,8]", IS("sizes", 8, 8), IS("axes", 2, 3),
     KILN_ATTR_S("keep_aspect_ratio_policy", "not_larger"));
  OK(Resize, "f32[1,3,4,8]", "f32[1,3,8,16]", IS("sizes", 8, 8), IS("axes", 2, 3),
     KILN_ATTR_S("keep_aspect_ratio_policy", "not_smaller"));
  OK(Resize, "f32[1,1,10,10]", "f32[1,1,4,10]", FS("scales", 1, 1, 0.8, 1),
     FS("roi", 0, 0, 0.25, 0, 1, 1, 0.75, 1),
     KILN_ATTR_S("coordinate_transformation_mode", "tf_crop_and_resize"));
  ERR(Resize, "f32[1,3,4,4]", "exactly one of attributes 'scales' and 'sizes'",
      FS("scales", 1, 1, 2, 2), IS("sizes", 1, 3, 8, 8));
  ERR(Resize, "f32[1,3,4,4]", "attribute 'scales' has 2 entries; expected 4", FS("scales", 2, 2));
  OK(Upsample, "f32[1,1,2,3]", "f32[1,1,4,6]", FS("scales", 1, 1, 2, 2));
  ERR(Upsample, "f32[1,1,2,3]", "attribute 'scales' entry 2 = 0.5 must be >= 1",
      FS("scales", 1, 1, 0.5, 1));
  OK(Trilu, "f32[3,4]", "f32[3,4]", KILN_ATTR_I("k", 1));
  OK(Trilu, "i64[2,3,4]", "i64[2,3,4]", KILN_ATTR_I("upper", 0));
  ERR(Trilu, "f32[3]", "input 0 is f32[3]; expected rank >= 2");
  OK(ReverseSequence, "f32[4,2,3] i64[2]", "f32[4,2,3]");
  OK(ReverseSequence, "f32[2,4] i64[2]", "f32[2,4]", KILN_ATTR_I("batch_axis", 0),
     KILN_ATTR_I("time_axis", 1));
  ERR(ReverseSequence, "f32[4,2,3] i64[4]", "sequence_lens i64[4] must have shape [2]");

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

  OK(CenterCropPad, "f32[20,10,3]", "f32[10,7,3]", IS("shape", 10, 7, 3));
  OK(CenterCropPad, "i32[3,20,8]", "i32[3,10,12]", IS("shape", 10, 12), IS("axes", -2, 2));
  ERR(CenterCropPad, "f32[20,10,3]", "attribute 'shape' has 2 entries, expected 3",
      IS("shape", 10, 7));
  ERR(CenterCropPad, "f32[20,10,3]", "attribute 'shape' is required");
  ERR(CenterCropPad, "f32[20,10]", "repeats axis 0", IS("shape", 1, 2), IS("axes", 0, -2));
  /* Sizes that overflow or read nothing are refused at compile time. */
  ERR(Slice, "f32[4]", "attribute 'steps' entry 0 = -9223372036854775808 is out of range",
      IS("starts", 0), IS("ends", 4), IS("steps", INT64_MIN));
  ERRN(Pad, "f32[4]", 0, KILN_OUT_OF_RANGE,
       "Pad: pads [9223372036854775807,1] overflow axis 0 of input 0 f32[4]", IS("pads", INT64_MAX, 1));
  ERR(Resize, "f32[1,0]", "cannot resize empty axis 1 of input 0 f32[1,0] to 4", IS("sizes", 1, 4));
  OK(BlockChannels, "f32[2,17,3,5]", "f32[2,2,3,5,16]", KILN_ATTR_I("block", 16));
  OK(BlockChannels, "f32[1,8,7]", "f32[1,1,7,8]", KILN_ATTR_I("block", 8));
  ERR(BlockChannels, "f32[2,17]", "input 0 is f32[2,17]; expected rank >= 3", KILN_ATTR_I("block", 16));
  ERR(BlockChannels, "i32[1,4,4]", "input 0", KILN_ATTR_I("block", 16));
  /* a block past 63 bits: refused, with no overflow on the way (a fuzzer's) */
  ERRN(BlockChannels, "f32[1,20,3]", 0, KILN_OUT_OF_RANGE,
       "invalid result type f32[1,1,3,9223372036854775807]: type: element count overflows",
       KILN_ATTR_I("block", INT64_MAX));
  OK(BlockChannels, "f32[1,20,3]", "f32[1,1,3,1099511627776]",
     KILN_ATTR_I("block", 1099511627776));
  OK(UnblockChannels, "f32[2,2,3,5,16]", "f32[2,17,3,5]", KILN_ATTR_I("channels", 17));
  ERR(UnblockChannels, "f32[2,2,3,5,16]", "'channels' = 16 does not fit", KILN_ATTR_I("channels", 16));
  ERR(UnblockChannels, "f32[2,2,3,5,16]", "'channels' = 33 does not fit", KILN_ATTR_I("channels", 33));
}
