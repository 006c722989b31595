/* examples/vendor-plugin/vendor.h: what the vendor backend's entry file and
 * its kernels share: one resolved compute step and the kernel signature. */
#ifndef VENDOR_H
#define VENDOR_H

#include <kiln/plugin.h>

#define VENDOR_MAX_OPS 8

/* One compute instruction ready to run: operand i lives at ptr[i] (NULL =
 * absent) with type type[i]. Operand 0 is the result; the rest are the
 * node's inputs, in the node's order (kiln/instr_kinds.def). */
typedef struct vendor_step {
  kiln_node_kind kind;
  uint32_t index; /* instruction number, for messages */
  const kiln_attrs *attrs;
  uint32_t n_ops;
  void *ptr[VENDOR_MAX_OPS];
  const kiln_type *type[VENDOR_MAX_OPS];
} vendor_step;

/* The node kinds this backend runs (all f32), and whether a node of that
 * kind with these types and attributes is one we can run. */
bool vendor_kind_supported(kiln_node_kind k);
bool vendor_node_ok(const kiln_node *node);

/* Run one compute step. */
kiln_status vendor_run_step(const vendor_step *st);

#endif
