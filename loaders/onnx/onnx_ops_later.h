/* onnx_ops_later.h: importers of the operators added by NEWOPS
 * (GroupNormalization, CenterCropPad, MaxUnpool, Col2Im), used by the
 * table in onnx_ops_table.c. */
#ifndef KILN_ONNX_OPS_LATER_H
#define KILN_ONNX_OPS_LATER_H

#include "loaders/onnx/onnx_internal.h"

kiln_status onnx_imp_groupnorm_18(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_center_crop_pad(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_maxunpool(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);
kiln_status onnx_imp_col2im(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op);

#endif
