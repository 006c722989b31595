/* onnx_ops_later.h: importers of the operators added by NEWOPS
 * (GroupNormalization, CenterCropPad, MaxUnpool, Col2Im), used by the
 * table in onnx_ops_table.c. */
#ifndef KILN_ONNX_OPS_LATER_H
#define KILN_ONNX_OPS_LATER_H

#include "onnx_internal.h"

kiln_status onnx_imp_groupnorm_18(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_center_crop_pad(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_maxunpool(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_col2im(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
/* Attention (opsets 23, 24) and RotaryEmbedding (opset 23), expanded into
 * existing kinds (onnx_ops_attention.c, onnx_ops_rotary.c). */
kiln_status onnx_imp_attention(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_rotary_embedding(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);

#endif
