/* plugins/opencl/supports.c: which nodes the OpenCL backend runs natively.
 * The answer mirrors what the generators (gen_*.c) accept, so a declared
 * node never fails to generate; everything else is lowered by the core.
 * Element types: f32 and the integer types and bool everywhere the kind
 * allows them, f64 only when the device has cl_khr_fp64; f16 and bf16 as
 * storage for elementwise and data-movement kinds only (see docs/opencl.md). */
#include <string.h>

#include <kiln/ops.h>

#include "ocl.h"

bool ocl_elem_ok(const ocl_device *d, kiln_elem e) {
  if (e == KILN_F64)
    return d && d->fp64;
  return ocl_ctype(e) != NULL;
}

static kiln_elem in_elem(const kiln_node *n, uint32_t i) {
  const kiln_value *v = kiln_node_input(n, i);
  return v ? kiln_value_type(v)->elem : KILN_ELEM_COUNT;
}

static bool unary_ok(kiln_node_kind k, kiln_elem e) {
  switch (k) {
  case KILN_NODE_Abs:
  case KILN_NODE_Neg:
  case KILN_NODE_Sign:
  case KILN_NODE_Relu:
    return e != KILN_BOOL;
  case KILN_NODE_Not:
    return e == KILN_BOOL;
  case KILN_NODE_Identity:
  case KILN_NODE_Cast:
    return true;
  case KILN_NODE_Dropout:
    return false; /* lowered away (its mask becomes a constant) */
  default:
    return ocl_is_float(ocl_math_elem(e));
  }
}

static bool binary_ok(kiln_node_kind k, kiln_elem a, kiln_elem b) {
  switch (k) {
  case KILN_NODE_And:
  case KILN_NODE_Or:
  case KILN_NODE_Xor:
    return a == KILN_BOOL;
  case KILN_NODE_BitShift:
    return kiln_elem_is_unsigned_int(a);
  case KILN_NODE_Equal:
    return true;
  case KILN_NODE_Pow:
    return a != KILN_BOOL && b != KILN_BOOL;
  default:
    return a != KILN_BOOL;
  }
}

static bool reduce_ok(kiln_node_kind k, kiln_elem e) {
  if (e == KILN_BOOL) /* any / all */
    return k == KILN_NODE_ReduceMax || k == KILN_NODE_ReduceMin;
  switch (k) {
  case KILN_NODE_ReduceL2:
  case KILN_NODE_ReduceLogSum:
  case KILN_NODE_ReduceLogSumExp:
    return ocl_is_float(e);
  default:
    return true;
  }
}

static bool node_ok(const kiln_node *n, kiln_node_kind k, kiln_elem e0) {
  const kiln_node_kind_info *info = kiln_node_kind_get_info(k);
  const kiln_attrs *a = kiln_node_attrs(n);
  switch (k) {
  case KILN_NODE_Max:
  case KILN_NODE_Min:
    return true;
  case KILN_NODE_Sum:
  case KILN_NODE_Mean:
    return e0 != KILN_BOOL;
  case KILN_NODE_BitwiseAnd:
  case KILN_NODE_BitwiseOr:
  case KILN_NODE_BitwiseXor:
  case KILN_NODE_BitwiseNot:
    return e0 != KILN_BOOL && !kiln_elem_is_float(e0);
  case KILN_NODE_Clip:
    return e0 != KILN_BOOL;
  case KILN_NODE_FusedElementwise:
  case KILN_NODE_Gemm:
  case KILN_NODE_Conv:
  case KILN_NODE_AveragePool:
  case KILN_NODE_GlobalAveragePool:
  case KILN_NODE_GlobalMaxPool:
  case KILN_NODE_Softmax:
  case KILN_NODE_LogSoftmax:
    if (k == KILN_NODE_Gemm && kiln_node_input(n, 2) &&
        kiln_value_type(kiln_node_input(n, 2))->elem != e0)
      return false;
    /* Conv's fused residual (kiln's input 3): the generators have no
     * slot for it, so such a Conv is lowered back to Conv + Add */
    if (k == KILN_NODE_Conv && kiln_node_input_count(n) > 3 && kiln_node_input(n, 3))
      return false;
    return ocl_is_float(e0);
  case KILN_NODE_MaxPool:
    if (kiln_node_result_count(n) > 1 && kiln_value_type(kiln_node_result(n, 1))->elem != KILN_I64)
      return false;
    return e0 != KILN_BOOL;
  case KILN_NODE_MatMul:
    return e0 != KILN_BOOL && in_elem(n, 1) == e0;
  case KILN_NODE_ArgMax:
  case KILN_NODE_ArgMin:
  case KILN_NODE_CumSum:
    return e0 != KILN_BOOL;
  case KILN_NODE_DepthToSpace:
  case KILN_NODE_SpaceToDepth:
  case KILN_NODE_EyeLike:
    return kiln_value_type(kiln_node_input(n, 0))->rank == (k == KILN_NODE_EyeLike ? 2u : 4u);
  case KILN_NODE_Gather:
    return in_elem(n, 1) == KILN_I32 || in_elem(n, 1) == KILN_I64;
  case KILN_NODE_GatherElements:
  case KILN_NODE_GatherND:
    return ocl_gather_ok(n);
  case KILN_NODE_ConvTranspose:
    return ocl_convtranspose_ok(n);
  case KILN_NODE_Det:
    return ocl_det_ok(n);
  case KILN_NODE_ScatterND:
  case KILN_NODE_ScatterElements:
    return ocl_scatter_ok(n);
  case KILN_NODE_TopK:
    return ocl_topk_ok(n);
  case KILN_NODE_RNN:
  case KILN_NODE_GRU:
  case KILN_NODE_LSTM:
    return ocl_rnn_ok(n);
  case KILN_NODE_Pad: {
    const char *m = kiln_attrs_string_or(a, "mode", "constant");
    return !strcmp(m, "constant") || !strcmp(m, "edge") || !strcmp(m, "reflect") ||
           !strcmp(m, "wrap");
  }
  default:
    break;
  }
  if (k >= KILN_NODE_ReduceL1 && k <= KILN_NODE_ReduceSumSquare)
    return reduce_ok(k, e0);
  if (info && (info->flags & KILN_NK_UNARY))
    return unary_ok(k, e0);
  if (info && (info->flags & KILN_NK_BINARY))
    return binary_ok(k, e0, in_elem(n, 1));
  return true; /* data movement: any stored type */
}

bool ocl_supports_node(void *state, const kiln_node *node) {
  (void)state;
  kiln_node_kind k = kiln_node_get_kind(node);
  if ((unsigned)k >= KILN_NODE_KIND_COUNT || !ocl_gen_has(k))
    return false;
  const ocl_device *d = ocl_default_device();
  bool half_ok = ocl_half_kind_ok(k);
  for (uint32_t i = 0; i < kiln_node_input_count(node); i++) {
    const kiln_value *v = kiln_node_input(node, i);
    if (v && (kiln_value_type(v)->quantized || !ocl_elem_ok(d, kiln_value_type(v)->elem) ||
              (!half_ok && ocl_is_half(kiln_value_type(v)->elem))))
      return false;
  }
  for (uint32_t i = 0; i < kiln_node_result_count(node); i++) {
    const kiln_type *t = kiln_value_type(kiln_node_result(node, i));
    if (t->quantized || !ocl_elem_ok(d, t->elem) || (!half_ok && ocl_is_half(t->elem)))
      return false;
  }
  kiln_elem e0 = kiln_node_input_count(node) ? in_elem(node, 0) : KILN_F32;
  return node_ok(node, k, e0);
}

/* The fuse pass asks whether an elementwise node may join a fused body
 * (it has already checked that the kind belongs to the body language and
 * that one element type runs through); fuseact asks whether an activation
 * may ride on a Conv, MatMul or Gemm, whose kernels all end with the
 * ocl_gen_activation epilogue. Both need the node's own types to be ones
 * this device computes natively. */
bool ocl_supports_fused(void *state, const kiln_node *node, kiln_node_kind activation) {
  const ocl_device *d = ocl_default_device();
  kiln_node_kind k = kiln_node_get_kind(node);
  const kiln_type *y = kiln_value_type(kiln_node_result(node, 0));
  if (y->quantized || !ocl_is_float(y->elem) || !ocl_elem_ok(d, y->elem))
    return false;
  if (activation == KILN_NODE_FusedElementwise)
    return ocl_fused_kind_ok(k, y->elem);
  if (kiln_fused_act_of_node_kind(activation) == KILN_FUSED_ACT_NONE)
    return false;
  if (k != KILN_NODE_Conv && k != KILN_NODE_MatMul && k != KILN_NODE_Gemm)
    return false;
  return kiln_node_result_count(node) == 1 && ocl_supports_node(state, node);
}
