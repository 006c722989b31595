/* ir/fused.c: the expression language of FusedElementwise bodies. One
 * parser shared by inference, the interpreter and the code generators, so
 * that every backend agrees on what a body means. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/ir.h"

uint32_t kiln_fused_arity(kiln_node_kind k) {
  switch (k) {
  case KILN_NODE_Abs:
  case KILN_NODE_Ceil:
  case KILN_NODE_Cos:
  case KILN_NODE_Erf:
  case KILN_NODE_Exp:
  case KILN_NODE_Floor:
  case KILN_NODE_Gelu:
  case KILN_NODE_Identity:
  case KILN_NODE_Log:
  case KILN_NODE_Neg:
  case KILN_NODE_Reciprocal:
  case KILN_NODE_Relu:
  case KILN_NODE_Round:
  case KILN_NODE_Sigmoid:
  case KILN_NODE_Sign:
  case KILN_NODE_Sin:
  case KILN_NODE_Softplus:
  case KILN_NODE_Softsign:
  case KILN_NODE_Sqrt:
  case KILN_NODE_Tan:
  case KILN_NODE_Tanh:
    return 1;
  case KILN_NODE_Add:
  case KILN_NODE_Sub:
  case KILN_NODE_Mul:
  case KILN_NODE_Div:
  case KILN_NODE_Pow:
  case KILN_NODE_Max:
  case KILN_NODE_Min:
    return 2;
  default:
    return 0;
  }
}

kiln_status kiln_fused_parse(const char *body, uint32_t n_inputs, kiln_fused_op *ops, uint32_t cap,
                             uint32_t *out_n) {
  *out_n = 0;
  if (!body)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "fused body: missing");
  uint32_t n = 0, depth = 0;
  const char *p = body;
  while (*p) {
    while (*p == ' ')
      p++;
    if (!*p)
      break;
    const char *start = p;
    while (*p && *p != ' ')
      p++;
    size_t len = (size_t)(p - start);
    char tok[64];
    if (len >= sizeof tok)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "fused body: token too long at offset %zu",
                              (size_t)(start - body));
    memcpy(tok, start, len);
    tok[len] = 0;
    if (n == cap)
      return kiln_status_make(KILN_OUT_OF_RANGE, "fused body: more than %u operations", cap);
    kiln_fused_op op = {0};
    kiln_node_kind k;
    if (tok[0] == 'x' && tok[1] >= '0' && tok[1] <= '9') {
      char *end;
      unsigned long v = strtoul(tok + 1, &end, 10);
      if (*end || v >= n_inputs)
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "fused body: '%s' names no input (the node has %u)", tok, n_inputs);
      op.kind = KILN_FUSED_INPUT;
      op.input = (uint32_t)v;
      depth++;
    } else if (kiln_node_kind_from_name(tok, &k)) {
      uint32_t a = kiln_fused_arity(k);
      if (!a)
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "fused body: '%s' is not allowed in a fused body", tok);
      if (depth < a)
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "fused body: '%s' needs %u operands, the stack has %u", tok, a,
                                depth);
      op.kind = (int32_t)k;
      depth = depth - a + 1;
    } else {
      char *end;
      errno = 0;
      double v = strtod(tok, &end);
      if (*end || end == tok)
        return kiln_status_make(KILN_INVALID_ARGUMENT, "fused body: unknown token '%s'", tok);
      op.kind = KILN_FUSED_CONST;
      op.value = v;
      depth++;
    }
    ops[n++] = op;
  }
  if (depth != 1)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "fused body: leaves %u values on the stack, expected 1", depth);
  *out_n = n;
  return NULL;
}
