/* plugins/cpu/emit_nd.h: the type-generic N-D paths of Conv, MaxPool and
 * AveragePool (emit_nd.c), used by emit_conv.c for the nodes its f32 2-D
 * kernels do not take. Private to the cpu plugin. */
#ifndef KCPU_EMIT_ND_H
#define KCPU_EMIT_ND_H

#include "emit_util.h"

bool kcpu_nd_conv_ok(const kiln_node *n);
kiln_status kcpu_nd_conv_emit(kcpu_emit *e, const kiln_instr *in);
/* mode 0 max (with the optional Indices result), 1 average. */
bool kcpu_nd_pool_ok(const kiln_node *n, int mode);
kiln_status kcpu_nd_pool_emit(kcpu_emit *e, const kiln_instr *in, int mode);

#endif
