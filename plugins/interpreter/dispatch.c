/* plugins/interpreter/dispatch.c: node kind -> kernel. The table is built
 * from the weak declarations of interp.h, so a kernel nobody wrote reads as
 * NULL here instead of failing the link. */
#include "interp.h"

static const interp_kernel_fn interp_kernels[KILN_NODE_KIND_COUNT] = {
#define KILN_NODE(name, a, b, c, d, e) [KILN_NODE_##name] = interp_##name,
#include <kiln/node_kinds.def>
#undef KILN_NODE
};

interp_kernel_fn interp_kernel_for(kiln_node_kind kind) {
  if ((int)kind < 0 || kind >= KILN_NODE_KIND_COUNT)
    return NULL;
  return interp_kernels[kind];
}

/* Element classes each of D1's kinds accepts on input 0 (bit per
 * interp_class). Kinds not listed accept every class; their kernels still
 * refuse what they cannot run with an UNIMPLEMENTED status. */
#define CF (1u << INTERP_FLOAT)
#define CS (1u << INTERP_SIGNED)
#define CU (1u << INTERP_UNSIGNED)
#define CB (1u << INTERP_BOOL)

static unsigned interp_classes_for(kiln_node_kind kind) {
  switch (kind) {
  case KILN_NODE_Abs:
  case KILN_NODE_Neg:
  case KILN_NODE_Sign:
  case KILN_NODE_Relu:
  case KILN_NODE_Shrink:
  case KILN_NODE_Add:
  case KILN_NODE_Sub:
  case KILN_NODE_Mul:
  case KILN_NODE_Div:
  case KILN_NODE_Pow:
  case KILN_NODE_Mod:
  case KILN_NODE_Greater:
  case KILN_NODE_GreaterOrEqual:
  case KILN_NODE_Less:
  case KILN_NODE_LessOrEqual:
  case KILN_NODE_PRelu:
  case KILN_NODE_Max:
  case KILN_NODE_Min:
  case KILN_NODE_Sum:
  case KILN_NODE_Clip:
  case KILN_NODE_ArgMax:
  case KILN_NODE_ArgMin:
  case KILN_NODE_ReduceL1:
  case KILN_NODE_ReduceL2:
  case KILN_NODE_ReduceLogSum:
  case KILN_NODE_ReduceLogSumExp:
  case KILN_NODE_ReduceMean:
  case KILN_NODE_ReduceProd:
  case KILN_NODE_ReduceSum:
  case KILN_NODE_ReduceSumSquare:
  case KILN_NODE_CumSum:
  case KILN_NODE_TopK:
  case KILN_NODE_QuantizeLinear:
    return CF | CS | CU;
  case KILN_NODE_Not:
  case KILN_NODE_And:
  case KILN_NODE_Or:
  case KILN_NODE_Xor:
  case KILN_NODE_Where:
    return CB;
  case KILN_NODE_BitShift:
    return CU;
  case KILN_NODE_DequantizeLinear:
    return CS | CU;
  case KILN_NODE_ReduceMax:
  case KILN_NODE_ReduceMin:
  case KILN_NODE_Identity:
  case KILN_NODE_Dropout:
  case KILN_NODE_Cast:
  case KILN_NODE_CastLike:
  case KILN_NODE_Equal:
    return CF | CS | CU | CB;
  default:
    break;
  }
  if (kind < KILN_NODE_MatMul) /* the rest of D1's rows before D2's: float only */
    return CF;
  switch (kind) {
  case KILN_NODE_BitwiseAnd:
  case KILN_NODE_BitwiseOr:
  case KILN_NODE_BitwiseXor:
  case KILN_NODE_BitwiseNot:
    return CS | CU;
  case KILN_NODE_RMSNormalization:
  case KILN_NODE_Mish:
  case KILN_NODE_Swish:
  case KILN_NODE_LpNormalization:
  case KILN_NODE_LpPool:
  case KILN_NODE_Det:
  case KILN_NODE_GroupNormalization:
  case KILN_NODE_MaxUnpool:
  case KILN_NODE_DynamicQuantizeLinear:
  case KILN_NODE_NegativeLogLikelihoodLoss:
  case KILN_NODE_SoftmaxCrossEntropyLoss:
    return CF;
  default:
    return CF | CS | CU | CB;
  }
}

bool interp_elem_supported(kiln_node_kind kind, kiln_elem first_input) {
  return (interp_classes_for(kind) >> interp_class_of(first_input)) & 1u;
}
