/* onnx_save_forms.c: the ONNX form of each kiln node kind at the opset the
 * writer targets (ONNX_SAVE_OPSET): operator, attributes with their ONNX
 * types, and the kiln attributes that ONNX takes as inputs there (the
 * importer turned such inputs into attributes; onnx_ops_table.c). Attribute
 * lists follow the ONNX operator schemas of opset 22 (RMSNormalization 23,
 * Swish 24). Kinds without a row have no ONNX form. */
#include "onnx_save.h"

#define I64S ONNX_SAVE_I64S
#define I64_SCALAR ONNX_SAVE_I64_SCALAR
#define I64_ONE ONNX_SAVE_I64_ONE
#define F32S ONNX_SAVE_F32S
#define SCALAR_X ONNX_SAVE_SCALAR_X
#define SCALAR_DTYPE ONNX_SAVE_SCALAR_DTYPE

/* A kind written as the ONNX operator of the same name. */
#define ROW(k, attrs) [KILN_NODE_##k] = {KILN_NODE_##k, NULL, 0, attrs, {{0}}}
/* The same, with kiln attributes that ONNX takes as inputs. */
#define ROWM(k, attrs, ...) [KILN_NODE_##k] = {KILN_NODE_##k, NULL, 0, attrs, {__VA_ARGS__}}
#define MV(attr, pos, form, req)                                                                   \
  { attr, pos, form, req }

#define REDUCE "keepdims:i noop_with_empty_axes:i"
#define CONV_WINDOW "auto_pad:s dilations:I group:i kernel_shape:I pads:I strides:I"
#define RNN_COMMON                                                                                 \
  "activation_alpha:F activation_beta:F activations:S clip:f direction:s hidden_size:i layout:i"
#define WINDOW "output_datatype:d periodic:i"

/* Indexed by kind; a kind without a row has attrs NULL. */
static const onnx_save_form forms[KILN_NODE_KIND_COUNT] = {
    /* elementwise */
    ROW(Abs, ""),
    ROW(Acos, ""),
    ROW(Acosh, ""),
    ROW(Asin, ""),
    ROW(Asinh, ""),
    ROW(Atan, ""),
    ROW(Atanh, ""),
    ROW(Ceil, ""),
    ROW(Cos, ""),
    ROW(Cosh, ""),
    ROW(Erf, ""),
    ROW(Exp, ""),
    ROW(Floor, ""),
    ROW(Log, ""),
    ROW(Neg, ""),
    ROW(Not, ""),
    ROW(Reciprocal, ""),
    ROW(Relu, ""),
    ROW(Round, ""),
    ROW(Sigmoid, ""),
    ROW(Sign, ""),
    ROW(Sin, ""),
    ROW(Sinh, ""),
    ROW(Softplus, ""),
    ROW(Softsign, ""),
    ROW(Sqrt, ""),
    ROW(Tan, ""),
    ROW(Tanh, ""),
    ROW(IsInf, "detect_negative:i detect_positive:i"),
    ROW(IsNaN, ""),
    ROW(Elu, "alpha:f"),
    ROW(Selu, "alpha:f gamma:f"),
    ROW(Celu, "alpha:f"),
    ROW(HardSigmoid, "alpha:f beta:f"),
    ROW(HardSwish, ""),
    ROW(LeakyRelu, "alpha:f"),
    ROW(ThresholdedRelu, "alpha:f"),
    ROW(Shrink, "bias:f lambd:f"),
    ROW(Gelu, "approximate:s"),
    ROW(Identity, ""),
    ROW(Dropout, "seed:i"),
    ROW(Cast, "saturate:i to:d"),
    ROW(CastLike, "saturate:i"),
    ROW(Add, ""),
    ROW(Sub, ""),
    ROW(Mul, ""),
    ROW(Div, ""),
    ROW(Pow, ""),
    ROW(Mod, "fmod:i"),
    ROW(And, ""),
    ROW(Or, ""),
    ROW(Xor, ""),
    ROW(Equal, ""),
    ROW(Greater, ""),
    ROW(GreaterOrEqual, ""),
    ROW(Less, ""),
    ROW(LessOrEqual, ""),
    ROW(BitShift, "direction:s"),
    ROW(PRelu, ""),
    ROW(Max, ""),
    ROW(Min, ""),
    ROW(Mean, ""),
    ROW(Sum, ""),
    ROW(Where, ""),
    ROW(Clip, ""),
    ROW(BitwiseAnd, ""),
    ROW(BitwiseOr, ""),
    ROW(BitwiseXor, ""),
    ROW(BitwiseNot, ""),
    ROW(Mish, ""),
    [KILN_NODE_Swish] = {KILN_NODE_Swish, NULL, 24, "alpha:f", {{0}}},
    /* reduce */
    ROW(ArgMax, "axis:i keepdims:i select_last_index:i"),
    ROW(ArgMin, "axis:i keepdims:i select_last_index:i"),
    ROWM(ReduceL1, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(ReduceL2, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(ReduceLogSum, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(ReduceLogSumExp, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(ReduceMax, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(ReduceMean, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(ReduceMin, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(ReduceProd, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(ReduceSum, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(ReduceSumSquare, REDUCE, MV("axes", 1, I64S, false)),
    ROWM(CumSum, "exclusive:i reverse:i", MV("axis", 1, I64_SCALAR, true)),
    ROWM(TopK, "axis:i largest:i sorted:i", MV("k", 1, I64_ONE, true)),
    /* norm */
    ROW(Softmax, "axis:i"),
    ROW(LogSoftmax, "axis:i"),
    ROW(Hardmax, "axis:i"),
    ROW(BatchNormalization, "epsilon:f momentum:f training_mode:i"),
    ROW(InstanceNormalization, "epsilon:f"),
    ROW(LayerNormalization, "axis:i epsilon:f stash_type:i"),
    ROW(MeanVarianceNormalization, "axes:I"),
    ROW(LRN, "alpha:f beta:f bias:f size:i"),
    ROW(LpNormalization, "axis:i p:i"),
    ROW(GroupNormalization, "epsilon:f num_groups:i stash_type:i"),
    [KILN_NODE_RMSNormalization] =
        {KILN_NODE_RMSNormalization, NULL, 23, "axis:i epsilon:f stash_type:i", {{0}}},
    /* linalg (kiln's fused `activation` attributes have no ONNX form) */
    ROW(MatMul, ""),
    ROW(Gemm, "alpha:f beta:f transA:i transB:i"),
    ROW(Einsum, "equation:s"),
    ROW(Det, ""),
    /* conv (Conv's fourth input, kiln's residual, is refused by the writer) */
    ROW(Conv, CONV_WINDOW),
    ROW(ConvTranspose, CONV_WINDOW " output_padding:I output_shape:I"),
    ROWM(Col2Im, "dilations:I pads:I strides:I", MV("image_shape", 1, I64S, true),
         MV("block_shape", 2, I64S, true)),
    /* pool */
    ROW(AveragePool,
        "auto_pad:s ceil_mode:i count_include_pad:i dilations:I kernel_shape:I pads:I strides:I"),
    ROW(MaxPool, "auto_pad:s ceil_mode:i dilations:I kernel_shape:I pads:I storage_order:i "
                 "strides:I"),
    ROW(GlobalAveragePool, ""),
    ROW(GlobalMaxPool, ""),
    ROW(LpPool, "auto_pad:s ceil_mode:i dilations:I kernel_shape:I p:i pads:I strides:I"),
    ROWM(MaxUnpool, "kernel_shape:I pads:I strides:I", MV("output_shape", 2, I64S, false)),
    /* movement */
    ROWM(Reshape, "allowzero:i", MV("shape", 1, I64S, true)),
    ROW(Flatten, "axis:i"),
    ROWM(Squeeze, "", MV("axes", 1, I64S, false)),
    ROWM(Unsqueeze, "", MV("axes", 1, I64S, true)),
    ROW(Transpose, "perm:I"),
    ROWM(Expand, "", MV("shape", 1, I64S, true)),
    ROWM(Tile, "", MV("repeats", 1, I64S, true)),
    ROWM(Slice, "", MV("starts", 1, I64S, true), MV("ends", 2, I64S, true),
         MV("axes", 3, I64S, false), MV("steps", 4, I64S, false)),
    ROWM(Pad, "mode:s", MV("pads", 1, I64S, true), MV("value", 2, SCALAR_X, false),
         MV("axes", 3, I64S, false)),
    ROW(Concat, "axis:i"),
    /* num_outputs is left out when split is given (ONNX takes one of them) */
    ROWM(Split, "axis:i num_outputs:i", MV("split", 1, I64S, false)),
    ROW(Shape, "end:i start:i"),
    ROW(Size, ""),
    ROW(DepthToSpace, "blocksize:i mode:s"),
    ROW(SpaceToDepth, "blocksize:i"),
    ROWM(Trilu, "upper:i", MV("k", 1, I64_SCALAR, false)),
    ROW(ReverseSequence, "batch_axis:i time_axis:i"),
    ROWM(CenterCropPad, "axes:I", MV("shape", 1, I64S, true)),
    /* index */
    ROW(Gather, "axis:i"),
    ROW(GatherElements, "axis:i"),
    ROW(GatherND, "batch_dims:i"),
    ROW(ScatterND, "reduction:s"),
    ROW(ScatterElements, "axis:i reduction:s"),
    /* OneHot(indices, depth, values): kiln's second input goes to position 2 */
    ROWM(OneHot, "axis:i", MV("depth", 1, ONNX_SAVE_DEPTH, true)),
    /* generator: value and dtype of ConstantOfShape become its `value`
     * tensor (onnx_save.c) */
    ROWM(ConstantOfShape, "value:- dtype:-", MV("shape", 0, I64S, true)),
    ROW(EyeLike, "dtype:d k:i"),
    ROWM(Range, "dtype:-", MV("start", 0, SCALAR_DTYPE, true), MV("limit", 1, SCALAR_DTYPE, true),
         MV("delta", 2, SCALAR_DTYPE, true)),
    ROWM(HannWindow, WINDOW, MV("size", 0, I64_SCALAR, true)),
    ROWM(HammingWindow, WINDOW, MV("size", 0, I64_SCALAR, true)),
    ROWM(BlackmanWindow, WINDOW, MV("size", 0, I64_SCALAR, true)),
    /* resize */
    ROWM(Resize,
         "antialias:i axes:I coordinate_transformation_mode:s cubic_coeff_a:f exclude_outside:i "
         "extrapolation_value:f keep_aspect_ratio_policy:s mode:s nearest_mode:s",
         MV("roi", 1, F32S, false), MV("scales", 2, F32S, false), MV("sizes", 3, I64S, false)),
    /* Upsample is deprecated since opset 10: written as the Resize it is
     * (asymmetric coordinates, floor for nearest; onnx_save.c adds them) */
    [KILN_NODE_Upsample] =
        {KILN_NODE_Upsample, "Resize", 0, "mode:s", {MV("scales", 2, F32S, true)}},
    /* rnn */
    ROW(RNN, RNN_COMMON),
    ROW(GRU, RNN_COMMON " linear_before_reset:i"),
    ROW(LSTM, RNN_COMMON " input_forget:i"),
    /* quant */
    ROW(QuantizeLinear, "axis:i block_size:i output_dtype:i saturate:i"),
    ROW(DequantizeLinear, "axis:i block_size:i"),
    ROW(DynamicQuantizeLinear, ""),
    ROW(MatMulInteger, ""),
    ROW(ConvInteger, CONV_WINDOW),
    ROW(QLinearMatMul, ""),
    ROW(QLinearConv, CONV_WINDOW),
    /* loss */
    ROW(NegativeLogLikelihoodLoss, "ignore_index:i reduction:s"),
    ROW(SoftmaxCrossEntropyLoss, "ignore_index:i reduction:s"),
};

const onnx_save_form *onnx_save_form_find(kiln_node_kind k) {
  if ((unsigned)k >= KILN_NODE_KIND_COUNT || !forms[k].attrs)
    return NULL;
  return &forms[k];
}
