/* plugins/interpreter/dispatch.c: node kind -> kernel, and the element
 * classes a kind's kernel is called on. The kernel table is built from the
 * weak declarations of interp.h, so a kernel nobody wrote reads as NULL here
 * instead of failing the link. */
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

/* The element classes each kind takes on input 0 are the `classes` column
 * of node_schema.def; the kernels still refuse what they cannot run with an
 * UNIMPLEMENTED status. */
static const uint32_t class_bit[] = {
    [INTERP_FLOAT] = KILN_ELEM_CLASS_FLOAT,
    [INTERP_SIGNED] = KILN_ELEM_CLASS_SIGNED,
    [INTERP_UNSIGNED] = KILN_ELEM_CLASS_UNSIGNED,
    [INTERP_BOOL] = KILN_ELEM_CLASS_BOOL,
};

bool interp_elem_supported(kiln_node_kind kind, kiln_elem first_input) {
  return (kiln_node_kind_elem_classes(kind) & class_bit[interp_class_of(first_input)]) != 0;
}
