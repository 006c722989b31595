/* passes/lower.c: the lowering driver and the primitive set. Nodes the
 * backend does not run are rewritten by their rule, round after round,
 * until every node is run natively. The primitive set is the schema's
 * `primitive` column (include/kiln/node_schema.def) plus the per-node
 * conditions below; docs/passes.md justifies each entry. Every kind outside
 * it has a rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_rules.h"
#include "pass_util.h"

#define LOWER_MAX_ROUNDS 64
#define KILN_STR_(x) #x
#define KILN_STR(x) KILN_STR_(x)

bool kiln_pass_has_lowering(kiln_node_kind k) {
  return kiln_lower_rule_for(k) != NULL;
}

/* The primitive set: the kinds whose `primitive` column in node_schema.def
 * is CORE (every lowering ends in them) or KEPT (no lowering yet, or none
 * cheaper than a native kernel, so every backend must run them too),
 * narrowed here by the per-node conditions the schema cannot state. */
bool kiln_pass_node_is_primitive(const kiln_node *n) {
  kiln_node_kind k = kiln_node_get_kind(n);
  if (!kiln_node_kind_is_primitive(k))
    return false;
  switch (k) {
  case KILN_NODE_Max:
  case KILN_NODE_Min:
    return kiln_node_input_count(n) == 2;
  case KILN_NODE_Conv: /* ungrouped, without kiln's fused residual (input 3) */
    return kiln_attrs_int_or(kiln_node_attrs(n), "group", 1) == 1 &&
           (kiln_node_input_count(n) < 4 || !kiln_node_input(n, 3));
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

/* A node of f16 or bf16 that is about to be lowered is first rewritten to
 * compute in f32 (Cast in, the same node in f32, Cast back), so that the
 * many small nodes of its lowering round once, not at every step: the
 * reference computes each node in double and rounds its result once.
 * Applies when every float input and result has the same half type, no
 * attribute names a type, and inference agrees on the promoted node. */
static kiln_status lower_promote_half(kiln_function *f, kiln_node *nd, bool *done) {
  *done = false;
  kiln_elem half = KILN_F32;
  uint32_t n_in = kiln_node_input_count(nd), n_res = kiln_node_result_count(nd);
  if (n_in == 0 || n_in > 16 || n_res > 8)
    return NULL;
  for (uint32_t i = 0; i < n_in + n_res; i++) {
    const kiln_value *v = i < n_in ? kiln_node_input(nd, i) : kiln_node_result(nd, i - n_in);
    if (!v)
      continue;
    const kiln_type *t = kiln_value_type(v);
    if (t->quantized)
      return NULL;
    if (!kiln_elem_is_float(t->elem))
      continue;
    if ((t->elem != KILN_F16 && t->elem != KILN_BF16) || (half != KILN_F32 && t->elem != half))
      return NULL;
    half = t->elem;
  }
  if (half == KILN_F32)
    return NULL;
  const kiln_attrs *as = kiln_node_attrs(nd);
  for (uint32_t i = 0; i < kiln_attrs_count(as); i++)
    if (kiln_attr_get_kind(kiln_attrs_at(as, i)) == KILN_ATTR_TYPE)
      return NULL;
  /* Check with inference before changing anything. */
  kiln_type in_t[16], want[8];
  const kiln_type *in_p[16];
  for (uint32_t i = 0; i < n_in; i++) {
    const kiln_value *v = kiln_node_input(nd, i);
    in_p[i] = NULL;
    if (!v)
      continue;
    in_t[i] = *kiln_value_type(v);
    if (in_t[i].elem == half)
      in_t[i].elem = KILN_F32;
    in_p[i] = &in_t[i];
  }
  uint32_t got_n = 0;
  kiln_status s = kiln_infer_types(kiln_node_get_kind(nd), in_p, n_in, as, n_res, want, &got_n);
  if (s) {
    kiln_status_free(s);
    return NULL;
  }
  for (uint32_t r = 0; r < n_res; r++) {
    kiln_type orig = *kiln_value_type(kiln_node_result(nd, r));
    if (orig.elem == half)
      orig.elem = KILN_F32;
    if (!kiln_type_equal(&orig, &want[r]))
      return NULL;
  }
  kiln_attr_desc to32 = KILN_ATTR_T("to", KILN_F32), tohalf = KILN_ATTR_T("to", half);
  kiln_value *ins[16];
  for (uint32_t i = 0; i < n_in; i++) {
    kiln_value *v = kiln_node_input(nd, i);
    ins[i] = v;
    if (v && kiln_value_type(v)->elem == half)
      KILN_TRY(kiln_pass_emit(f, nd, KILN_NODE_Cast, &v, 1, &to32, 1, &ins[i]));
  }
  kiln_attr_desc *descs = NULL;
  uint32_t n_descs = 0;
  KILN_TRY(kiln_pass_attrs_descs(as, 0, &descs, &n_descs));
  kiln_function_set_insert_point(f, nd);
  kiln_node *wide = NULL;
  s = kiln_function_add_node(f, kiln_node_get_kind(nd), kiln_node_name(nd), ins, n_in, descs,
                             n_descs, n_res, &wide);
  kiln_function_set_insert_point(f, NULL);
  free(descs);
  KILN_TRY(s);
  kiln_value *repl[8] = {0};
  for (uint32_t r = 0; r < n_res; r++) {
    kiln_value *w = kiln_node_result(wide, r);
    repl[r] = w;
    if (kiln_value_type(kiln_node_result(nd, r))->elem == half)
      KILN_TRY(kiln_pass_emit(f, nd, KILN_NODE_Cast, &w, 1, &tohalf, 1, &repl[r]));
  }
  KILN_TRY(kiln_pass_replace_node(f, nd, repl));
  *done = true;
  return NULL;
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
    /* Promotion comes first: a backend that lacks a half-precision kind
     * often runs its f32 form, even when the kind is a primitive. */
    bool promoted = false;
    s = lower_promote_half(f, nd, &promoted);
    if (s)
      break;
    if (promoted) {
      (*changes)++;
      continue;
    }
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
