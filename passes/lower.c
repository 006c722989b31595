/* passes/lower.c: the lowering driver and the primitive set. Nodes the
 * backend does not run are rewritten by their rule, round after round,
 * until every node is run natively. The primitive set is the explicit table
 * below (kind plus attribute conditions); docs/passes.md justifies each
 * entry. Every kind outside it has a rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/lower_rules.h"
#include "passes/pass_util.h"

#define LOWER_MAX_ROUNDS 64
#define KILN_STR_(x) #x
#define KILN_STR(x) KILN_STR_(x)

bool kiln_pass_has_lowering(kiln_node_kind k) {
  return kiln_lower_rule_for(k) != NULL;
}

/* The primitive set, in one place. CORE kinds are the ones every lowering
 * ends in; KEPT kinds have no lowering yet (or none cheaper than a native
 * kernel) and so every backend must run them too. */
enum { PRIM_NO = 0, PRIM_CORE = 1, PRIM_KEPT = 2 };
static const unsigned char primitive_kinds[KILN_NODE_KIND_COUNT] = {
    /* elementwise, one input */
    [KILN_NODE_Abs] = PRIM_CORE,
    [KILN_NODE_Neg] = PRIM_CORE,
    [KILN_NODE_Exp] = PRIM_CORE,
    [KILN_NODE_Log] = PRIM_CORE,
    [KILN_NODE_Sqrt] = PRIM_CORE,
    [KILN_NODE_Erf] = PRIM_CORE,
    [KILN_NODE_Tanh] = PRIM_CORE,
    [KILN_NODE_Sin] = PRIM_CORE,
    [KILN_NODE_Cos] = PRIM_CORE,
    [KILN_NODE_Atan] = PRIM_CORE,
    [KILN_NODE_Floor] = PRIM_CORE,
    [KILN_NODE_Round] = PRIM_CORE,
    [KILN_NODE_Not] = PRIM_CORE,
    [KILN_NODE_IsNaN] = PRIM_CORE,
    [KILN_NODE_Cast] = PRIM_CORE,
    /* elementwise, two or three inputs */
    [KILN_NODE_Add] = PRIM_CORE,
    [KILN_NODE_Sub] = PRIM_CORE,
    [KILN_NODE_Mul] = PRIM_CORE,
    [KILN_NODE_Div] = PRIM_CORE,
    [KILN_NODE_Pow] = PRIM_CORE,
    [KILN_NODE_Max] = PRIM_CORE,
    [KILN_NODE_Min] = PRIM_CORE,
    [KILN_NODE_And] = PRIM_CORE,
    [KILN_NODE_Equal] = PRIM_CORE,
    [KILN_NODE_Less] = PRIM_CORE,
    [KILN_NODE_Where] = PRIM_CORE,
    [KILN_NODE_Mod] = PRIM_KEPT,
    [KILN_NODE_BitShift] = PRIM_KEPT,
    [KILN_NODE_BitwiseAnd] = PRIM_KEPT,
    /* reductions */
    [KILN_NODE_ReduceSum] = PRIM_CORE,
    [KILN_NODE_ReduceMax] = PRIM_CORE,
    [KILN_NODE_ArgMax] = PRIM_CORE,
    [KILN_NODE_TopK] = PRIM_KEPT,
    /* linear algebra, convolution, pooling */
    [KILN_NODE_MatMul] = PRIM_CORE,
    [KILN_NODE_Conv] = PRIM_CORE,
    [KILN_NODE_MaxPool] = PRIM_CORE,
    [KILN_NODE_ConvTranspose] = PRIM_KEPT,
    [KILN_NODE_Einsum] = PRIM_KEPT,
    [KILN_NODE_Det] = PRIM_KEPT,
    /* data movement */
    [KILN_NODE_Reshape] = PRIM_CORE,
    [KILN_NODE_Transpose] = PRIM_CORE,
    [KILN_NODE_Slice] = PRIM_CORE,
    [KILN_NODE_Concat] = PRIM_CORE,
    [KILN_NODE_Pad] = PRIM_CORE,
    [KILN_NODE_Expand] = PRIM_CORE,
    [KILN_NODE_Gather] = PRIM_CORE,
    [KILN_NODE_ScatterND] = PRIM_KEPT,
    [KILN_NODE_ScatterElements] = PRIM_KEPT,
    [KILN_NODE_Resize] = PRIM_KEPT,
    /* recurrent, quantization */
    [KILN_NODE_RNN] = PRIM_KEPT,
    [KILN_NODE_GRU] = PRIM_KEPT,
    [KILN_NODE_LSTM] = PRIM_KEPT,
};

bool kiln_pass_node_is_primitive(const kiln_node *n) {
  kiln_node_kind k = kiln_node_get_kind(n);
  if ((unsigned)k >= KILN_NODE_KIND_COUNT || !primitive_kinds[k])
    return false;
  switch (k) {
  case KILN_NODE_Max:
  case KILN_NODE_Min:
    return kiln_node_input_count(n) == 2;
  case KILN_NODE_Conv:
    return kiln_attrs_int_or(kiln_node_attrs(n), "group", 1) == 1;
  default:
    return true;
  }
}

static bool native(const kiln_pass_options *o, const kiln_node *n) {
  if (o && o->supports_node)
    return o->supports_node(o->backend_user, n) ||
           (o->keep_node && o->keep_node(o->backend_user, n));
  return kiln_pass_node_is_primitive(n);
}

static kiln_status no_way(const kiln_pass_options *o, const kiln_node *n, const char *why) {
  char types[512] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < kiln_node_input_count(n) && used < sizeof types - 40; i++) {
    const kiln_value *v = kiln_node_input(n, i);
    char t[64] = "_";
    if (v)
      kiln_type_format(kiln_value_type(v), t, sizeof t);
    used += (size_t)snprintf(types + used, sizeof types - used, "%s%s", i ? ", " : "", t);
  }
  return kiln_status_make(KILN_UNIMPLEMENTED,
                          "lower: node '%s' (%s) with inputs (%s): backend '%s' does not run "
                          "it and %s",
                          kiln_node_name(n), kiln_node_kind_name(kiln_node_get_kind(n)), types,
                          o && o->backend_name ? o->backend_name : "primitive set", why);
}

/* One round over a snapshot; *pending counts nodes still not native. */
static kiln_status round_once(kiln_function *f, const kiln_pass_options *o, uint32_t *changes,
                              uint32_t *pending, const kiln_node **stuck) {
  kiln_node **nodes;
  uint32_t n;
  KILN_TRY(kiln_pass_snapshot(f, &nodes, &n));
  kiln_status s = NULL;
  for (uint32_t i = 0; i < n && !s; i++) {
    kiln_node *nd = nodes[i];
    if (native(o, nd))
      continue;
    kiln_lower_rule rule = kiln_lower_rule_for(kiln_node_get_kind(nd));
    if (!rule) {
      s = no_way(o, nd, "no lowering rule exists for it");
      break;
    }
    kiln_value *repl[64] = {0};
    const kiln_value *x = kiln_node_input_count(nd) ? kiln_node_input(nd, 0) : NULL;
    kiln_lower_ctx c = {
        .f = f, .n = nd, .elem = x ? kiln_value_type(x)->elem : KILN_F32, .s = NULL};
    bool applied = rule(&c, repl);
    if (c.s) {
      s = kiln_status_wrap(c.s, "lower: rule for node '%s' (%s)", kiln_node_name(nd),
                           kiln_node_kind_name(kiln_node_get_kind(nd)));
      break;
    }
    if (!applied) {
      (*pending)++;
      *stuck = nd;
      continue;
    }
    for (uint32_t r = 0; r < kiln_node_result_count(nd); r++) {
      kiln_value *res = kiln_node_result(nd, r);
      if (kiln_value_use_count(res) > 0 && !repl[r]) {
        s = kiln_status_make(KILN_INTERNAL, "lower: rule for '%s' (%s) left result %u unset",
                             kiln_node_name(nd), kiln_node_kind_name(kiln_node_get_kind(nd)), r);
        break;
      }
      if (repl[r] && !kiln_type_equal(kiln_value_type(repl[r]), kiln_value_type(res))) {
        char a[64], b[64];
        kiln_type_format(kiln_value_type(repl[r]), a, sizeof a);
        kiln_type_format(kiln_value_type(res), b, sizeof b);
        s = kiln_status_make(
            KILN_INTERNAL, "lower: rule for '%s' (%s) made %s for result %u of type %s",
            kiln_node_name(nd), kiln_node_kind_name(kiln_node_get_kind(nd)), a, r, b);
        break;
      }
    }
    if (!s)
      s = kiln_pass_replace_node(f, nd, repl);
    (*changes)++;
  }
  free(nodes);
  return s;
}

kiln_status kiln_pass_lower(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  uint32_t total = 0;
  for (uint32_t round = 0; round < LOWER_MAX_ROUNDS; round++) {
    uint32_t ch = 0, pending = 0;
    const kiln_node *stuck = NULL;
    KILN_TRY(round_once(f, o, &ch, &pending, &stuck));
    total += ch;
    if (pending && !ch) {
      if (changes)
        *changes += total;
      return no_way(o, stuck, "its lowering rule does not apply to these inputs");
    }
    if (!pending && !ch)
      break;
  }
  if (changes)
    *changes += total;
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++)
    if (!native(o, kiln_function_node(f, i)))
      return no_way(o, kiln_function_node(f, i),
                    "lowering did not settle within " KILN_STR(LOWER_MAX_ROUNDS) " rounds");
  return NULL;
}
