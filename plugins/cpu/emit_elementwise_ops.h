/* plugins/cpu/emit_elementwise_ops.h: body op codes private to the cpu
 * plugin's elementwise generator (emit_elementwise_loop.c) and its kinds
 * (emit_elementwise.c), for plain kinds
 * whose meaning depends on an attribute that a fused body cannot carry:
 * Mod with fmod=1 and BitShift's direction. They sit past the node kinds,
 * so they never collide with a parsed FusedElementwise body. */
#ifndef KCPU_EW_OPS_H
#define KCPU_EW_OPS_H

#include <kiln/ir.h>

enum {
  KCPU_EW_FMOD = KILN_NODE_KIND_COUNT + 1, /* C's fmod / %: sign of the dividend */
  KCPU_EW_SHL = KILN_NODE_KIND_COUNT + 2,
  KCPU_EW_SHR = KILN_NODE_KIND_COUNT + 3,
};

#endif
