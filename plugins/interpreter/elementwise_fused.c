/* plugins/interpreter/elementwise_fused.c: FusedElementwise, evaluated
 * element by element with a small stack machine over the parsed body, in
 * double. The unary steps call the unfused kernels' own functions
 * (interp_unary_scalar), so that fusing never changes a result beyond the
 * final rounding. */
#include "kernel.h"

static double fused_apply2(kiln_node_kind k, double a, double b) {
  switch (k) {
  case KILN_NODE_Add:
    return a + b;
  case KILN_NODE_Sub:
    return a - b;
  case KILN_NODE_Mul:
    return a * b;
  case KILN_NODE_Div:
    return a / b;
  case KILN_NODE_Pow:
    return pow(a, b);
  case KILN_NODE_Max:
    return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
  default:
    return isnan(a) || isnan(b) ? NAN : (a < b ? a : b); /* Min */
  }
}

INTERP_KERNEL(FusedElementwise) {
  if (n_outs < 1 || n_ins < 1)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter FusedElementwise: no operands");
  kiln_fused_op ops[KILN_FUSED_MAX_OPS];
  uint32_t n_ops;
  KILN_TRY_CTX(kiln_fused_parse(kiln_attrs_string_or(attrs, "body", NULL), n_ins, ops,
                                KILN_FUSED_MAX_OPS, &n_ops),
               "interpreter FusedElementwise");
  interp_tensor *y = &outs[0];
  int64_t n = interp_numel(y);
  double stack[KILN_FUSED_MAX_OPS];
  for (int64_t i = 0; i < n; i++) {
    uint32_t sp = 0;
    for (uint32_t j = 0; j < n_ops; j++) {
      const kiln_fused_op *op = &ops[j];
      if (op->kind == KILN_FUSED_INPUT) {
        const interp_tensor *x = &ins[op->input];
        stack[sp++] = interp_load_f(x, interp_broadcast_index(&y->type, &x->type, i));
      } else if (op->kind == KILN_FUSED_CONST) {
        stack[sp++] = op->value;
      } else if (kiln_fused_arity((kiln_node_kind)op->kind) == 1) {
        stack[sp - 1] = interp_unary_scalar((kiln_node_kind)op->kind, stack[sp - 1]);
      } else {
        sp--;
        stack[sp - 1] = fused_apply2((kiln_node_kind)op->kind, stack[sp - 1], stack[sp]);
      }
    }
    interp_store_f(y, i, stack[0]);
  }
  return NULL;
}
