/* plugins/cpu/emit_misc.h: hooks of emit_misc.c that other emitter files
 * call (Pow with mixed or integer types, taken by ew_kinds.c when the
 * elementwise generator declines). Private to the cpu plugin. */
#ifndef KCPU_EMIT_MISC_H
#define KCPU_EMIT_MISC_H

#include "emit_util.h"

bool kcpu_pow_mixed_ok(const kiln_node *n);
kiln_status kcpu_pow_mixed_emit(kcpu_emit *e, const kiln_instr *in);

#endif
