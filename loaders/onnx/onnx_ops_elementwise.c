/* onnx_ops_elementwise.c: importers of elementwise kinds that need more
 * than the plain row: Cast (the `to` type attribute), Dropout (inference,
 * or training with a constant ratio of 0, is the identity; other training
 * is refused), and the older opsets of
 * Clip (< 11: bounds as attributes) and PRelu (< 7: per-channel slope). */
#include <float.h>

#include "onnx_internal.h"

kiln_status onnx_imp_cast(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  return onnx_emit_with_type_attr(L, n, op, "to", true);
}

/* Dropout's ratio (input 1 since opset 12, else the attribute; default
 * 0.5); *known false when it is an input that is not a constant. */
static void dropout_ratio(onnx_loader *L, const Onnx__NodeProto *n, bool *known, double *ratio) {
  *known = true;
  *ratio = onnx_attr_float_or(n, "ratio", 0.5);
  if (!onnx_input_present(n, 1))
    return;
  onnx_cval c;
  kiln_status s = onnx_const_input(L, n, 1, "ratio", &c);
  if (s) {
    kiln_status_free(s); /* computed at run time: not known to be 0 */
    *known = false;
    return;
  }
  *ratio = kiln_type_numel(&c.t.type) > 0 ? kiln_elem_load_f64(c.t.type.elem, c.t.data, 0) : 0.5;
  onnx_cval_release(&c);
}

kiln_status onnx_imp_dropout(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  if (onnx_input_present(n, 2)) {
    onnx_cval c;
    KILN_TRY(onnx_const_input(L, n, 2, "training_mode", &c));
    bool training =
        kiln_type_numel(&c.t.type) > 0 && kiln_elem_load_f64(c.t.type.elem, c.t.data, 0);
    onnx_cval_release(&c);
    /* Training with a drop ratio of exactly 0 keeps every element (mask
     * all true, scale 1 / (1 - 0)): the identity, as in inference. torch
     * exports it this way (Swin-T under torch 1.13). */
    bool known = false;
    double ratio = 0.5;
    if (training)
      dropout_ratio(L, n, &known, &ratio);
    if (training && !(known && ratio == 0))
      return kiln_status_make(KILN_UNIMPLEMENTED,
                              "%s: node %s: training-mode Dropout (random masks) is not supported "
                              "(only a constant ratio of 0, which is the identity)",
                              L->file, onnx_node_desc(n));
  }
  if (onnx_attr_int_or(n, "is_test", 1) == 0 && L->opset < 7)
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: node %s: training-mode Dropout (is_test=0)",
                            L->file, onnx_node_desc(n));
  kiln_value *x;
  KILN_TRY(onnx_input(L, n, 0, &x));
  return onnx_emit(L, n, op->kind, &x, 1, NULL, 0);
}

/* A scalar constant of element type e holding v. */
static kiln_status scalar_const(onnx_loader *L, kiln_elem e, double v, kiln_value **out) {
  union {
    double f64;
    float f32;
    uint16_t u16;
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
  } u = {0};
  switch (e) {
  case KILN_F64:
    u.f64 = v;
    break;
  case KILN_F32:
    u.f32 = (float)v;
    break;
  case KILN_F16:
    u.u16 = kiln_f32_to_f16((float)v);
    break;
  case KILN_BF16:
    u.u16 = kiln_f32_to_bf16((float)v);
    break;
  default:
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: Clip before opset 11 on %s", L->file,
                            kiln_elem_name(e));
  }
  kiln_type t;
  KILN_TRY(kiln_type_make(e, 0, NULL, &t));
  return onnx_add_constant(L, &t, &u, out);
}

/* Clip before opset 11 has min and max as attributes; now they are inputs. */
kiln_status onnx_imp_clip_old(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  kiln_value *ins[3] = {0};
  KILN_TRY(onnx_input(L, n, 0, &ins[0]));
  if (!ins[0])
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input 0 is missing", L->file,
                            onnx_node_desc(n));
  kiln_elem e = kiln_value_type(ins[0])->elem;
  /* Opset 6 defaults are the float range: the same as no bound. */
  if (onnx_node_attr(n, "min"))
    KILN_TRY(scalar_const(L, e, onnx_attr_float_or(n, "min", -FLT_MAX), &ins[1]));
  if (onnx_node_attr(n, "max"))
    KILN_TRY(scalar_const(L, e, onnx_attr_float_or(n, "max", FLT_MAX), &ins[2]));
  return onnx_emit(L, n, op->kind, ins, ins[2] ? 3 : ins[1] ? 2 : 1, NULL, 0);
}

/* PRelu before opset 7 applies a slope of shape [C] along axis 1 (channel);
 * from opset 7 the slope broadcasts numpy-style, so give it shape [C,1,..]. */
kiln_status onnx_imp_prelu_old(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  kiln_value *ins[2];
  KILN_TRY(onnx_input(L, n, 0, &ins[0]));
  KILN_TRY(onnx_input(L, n, 1, &ins[1]));
  if (!ins[0] || !ins[1])
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: node %s: input missing", L->file,
                            onnx_node_desc(n));
  const kiln_type *xt = kiln_value_type(ins[0]), *st = kiln_value_type(ins[1]);
  if (xt->rank > 2 && st->rank == 1 && st->dims[0] == xt->dims[1] && st->dims[0] != 1) {
    int64_t shape[KILN_MAX_RANK];
    shape[0] = st->dims[0];
    for (uint32_t i = 1; i + 1 < xt->rank; i++)
      shape[i] = 1;
    kiln_attr_desc a = KILN_ATTR_IS("shape", shape, xt->rank - 1);
    kiln_node *r;
    KILN_TRY(onnx_emit_helper(L, n, KILN_NODE_Reshape, &ins[1], 1, &a, 1, &r));
    ins[1] = kiln_node_result(r, 0);
  }
  return onnx_emit(L, n, op->kind, ins, 2, NULL, 0);
}
