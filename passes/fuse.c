/* passes/fuse.c: elementwise fusion. A tree of float elementwise nodes
 * whose intermediate results have the root's type and exactly one use
 * becomes one FusedElementwise node, whose body (an RPN string,
 * kiln_fused_parse) a code generator turns into a single loop: the
 * intermediates never touch memory. Scalar constants become numbers in the
 * body instead of inputs. Only groups of two or more nodes are rewritten; a
 * lone node gains nothing. The backend decides: a node joins a group only
 * when o->supports_fused(node, FusedElementwise) says yes, and the fused
 * node is kept only when o->supports_node accepts it. Without those hooks
 * the pass changes nothing. Clip, HardSigmoid, HardSwish and Swish are
 * outside the body language but join as their expansions into it: a
 * backend keeps them as nodes so that fuseact can put them on a Conv or
 * MatMul, and the ones left over should fuse as well as their lowered
 * forms did. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"

#define FUSE_MAX_INPUTS 16
#define FUSE_MAX_NODES 64

typedef struct fuse_group {
  kiln_node *nodes[FUSE_MAX_NODES]; /* nodes[0] is the root */
  uint32_t n_nodes;
  kiln_value *inputs[FUSE_MAX_INPUTS];
  uint32_t n_inputs;
  char body[4096];
  size_t len;
  bool inline_consts, overflow;
} fuse_group;

/* The kinds that join a body as their expansion (fuse_emit_expansion). */
static bool fuse_expands(kiln_node_kind k) {
  return k == KILN_NODE_Clip || k == KILN_NODE_HardSigmoid || k == KILN_NODE_HardSwish ||
         k == KILN_NODE_Swish;
}

/* Expansions that read their operand twice: growing into its producer
 * would put that producer's subtree in the body twice. */
static bool fuse_operand_twice(kiln_node_kind k) {
  return k == KILN_NODE_HardSwish || k == KILN_NODE_Swish;
}

/* Can n be part of a fused body, as the language and the backend allow? */
static bool fuse_candidate(const kiln_pass_options *o, const kiln_node *n) {
  kiln_node_kind k = kiln_node_get_kind(n);
  uint32_t arity = kiln_fused_arity(k), n_in = kiln_node_input_count(n);
  if (kiln_node_result_count(n) != 1)
    return false;
  if (fuse_expands(k)) {
    if (k != KILN_NODE_Clip && n_in != 1)
      return false;
  } else if (arity == 0 || n_in != arity) {
    return false;
  }
  const kiln_type *t = kiln_value_type(kiln_node_result(n, 0));
  if ((t->elem != KILN_F32 && t->elem != KILN_F64) || t->quantized)
    return false;
  for (uint32_t i = 0; i < n_in; i++) {
    const kiln_value *v = kiln_node_input(n, i);
    if (!v && i > 0 && k == KILN_NODE_Clip)
      continue; /* an absent bound */
    if (!v || kiln_value_type(v)->elem != t->elem || kiln_value_type(v)->quantized)
      return false;
    if (i > 0 && k == KILN_NODE_Clip && kiln_type_numel(kiln_value_type(v)) != 1)
      return false; /* Clip's bounds are scalars */
  }
  if (k == KILN_NODE_Gelu &&
      strcmp(kiln_attrs_string_or(kiln_node_attrs(n), "approximate", "none"), "none") != 0)
    return false;
  return o->supports_fused(o->backend_user, n, KILN_NODE_FusedElementwise);
}

static bool fuse_in_group(const fuse_group *g, const kiln_node *n) {
  for (uint32_t i = 0; i < g->n_nodes; i++)
    if (g->nodes[i] == n)
      return true;
  return false;
}

/* Grow the group from `n` through single-use producers of the root's type. */
static void fuse_grow(const kiln_pass_options *o, fuse_group *g, kiln_node *n,
                      const kiln_type *rt) {
  if (fuse_operand_twice(kiln_node_get_kind(n)))
    return;
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
    kiln_value *v = kiln_node_input(n, i);
    kiln_node *p = v ? kiln_value_producer(v, NULL) : NULL;
    if (!p || !fuse_candidate(o, p) || kiln_value_use_count(v) != 1 ||
        !kiln_type_equal(kiln_value_type(v), rt) || fuse_in_group(g, p) ||
        g->n_nodes >= FUSE_MAX_NODES)
      continue;
    /* (a function output counts as a use, so outputs stay materialized) */
    g->nodes[g->n_nodes++] = p;
    fuse_grow(o, g, p, rt);
  }
}

static void fuse_put(fuse_group *g, const char *s) {
  size_t n = strlen(s);
  if (g->len + n + 2 >= sizeof g->body) {
    g->overflow = true;
    return;
  }
  if (g->len)
    g->body[g->len++] = ' ';
  memcpy(g->body + g->len, s, n + 1);
  g->len += n;
}

static bool fuse_scalar_const(const kiln_value *v, double *out) {
  if (kiln_value_get_kind(v) != KILN_VALUE_CONSTANT || kiln_type_numel(kiln_value_type(v)) != 1)
    return false;
  const void *d = kiln_value_data(v);
  if (!d)
    return false;
  if (kiln_value_type(v)->elem == KILN_F32) {
    float x;
    memcpy(&x, d, sizeof x);
    *out = x;
  } else {
    memcpy(out, d, sizeof *out);
  }
  return isfinite(*out);
}

static void fuse_emit(fuse_group *g, const kiln_node *n);

static void fuse_put_number(fuse_group *g, double c) {
  char tok[48];
  snprintf(tok, sizeof tok, "%.17g", c);
  fuse_put(g, tok);
}

/* Operand v of a member: the producer's subtree, a number or an input. */
static void fuse_emit_operand(fuse_group *g, kiln_value *v) {
  kiln_node *p = kiln_value_producer(v, NULL);
  double c;
  char tok[48];
  if (p && fuse_in_group(g, p)) {
    fuse_emit(g, p);
    return;
  }
  if (g->inline_consts && fuse_scalar_const(v, &c)) {
    fuse_put_number(g, c);
    return;
  }
  uint32_t j = 0;
  while (j < g->n_inputs && g->inputs[j] != v)
    j++;
  if (j == g->n_inputs) {
    if (g->n_inputs == FUSE_MAX_INPUTS) {
      g->overflow = true;
      return;
    }
    g->inputs[g->n_inputs++] = v;
  }
  snprintf(tok, sizeof tok, "x%u", j);
  fuse_put(g, tok);
}

/* The expansions, in the operations (and order) of the lowering rules
 * and of ONNX's definitions: Clip = Min(Max(x, min), max) (an absent
 * bound is left out), HardSigmoid = Min(Max(alpha x + beta, 0), 1),
 * HardSwish = x HardSigmoid(x) with alpha 1/6, beta 1/2, Swish = x
 * Sigmoid(alpha x). */
static void fuse_emit_expansion(fuse_group *g, const kiln_node *n) {
  kiln_node_kind k = kiln_node_get_kind(n);
  const kiln_attrs *a = kiln_node_attrs(n);
  kiln_value *x = kiln_node_input(n, 0);
  uint32_t n_in = kiln_node_input_count(n);
  fuse_emit_operand(g, x);
  if (k == KILN_NODE_Clip) {
    kiln_value *lo = n_in > 1 ? kiln_node_input(n, 1) : NULL;
    kiln_value *hi = n_in > 2 ? kiln_node_input(n, 2) : NULL;
    if (lo) {
      fuse_emit_operand(g, lo);
      fuse_put(g, "Max");
    }
    if (hi) {
      fuse_emit_operand(g, hi);
      fuse_put(g, "Min");
    }
    if (!lo && !hi)
      fuse_put(g, "Identity");
    return;
  }
  double alpha = k == KILN_NODE_HardSigmoid ? kiln_attrs_float_or(a, "alpha", 0.2)
                 : k == KILN_NODE_HardSwish ? 1.0 / 6.0
                                            : kiln_attrs_float_or(a, "alpha", 1.0);
  if (k != KILN_NODE_HardSigmoid)
    fuse_emit_operand(g, x); /* the factor x of x * f(x) */
  if (k == KILN_NODE_Swish) {
    if (alpha != 1.0) {
      fuse_put_number(g, alpha);
      fuse_put(g, "Mul");
    }
    fuse_put(g, "Sigmoid");
  } else {
    fuse_put_number(g, alpha);
    fuse_put(g, "Mul");
    fuse_put_number(g, k == KILN_NODE_HardSigmoid ? kiln_attrs_float_or(a, "beta", 0.5) : 0.5);
    fuse_put(g, "Add 0 Max 1 Min");
  }
  if (k != KILN_NODE_HardSigmoid)
    fuse_put(g, "Mul");
}

static void fuse_emit(fuse_group *g, const kiln_node *n) {
  if (fuse_expands(kiln_node_get_kind(n))) {
    fuse_emit_expansion(g, n);
    return;
  }
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++)
    fuse_emit_operand(g, kiln_node_input(n, i));
  fuse_put(g, kiln_node_kind_name(kiln_node_get_kind(n)));
}

/* Build the fused node before the root; NULL *out when the body does not
 * reproduce the root's type (inlined constants can drop a broadcast). */
static kiln_status fuse_build(const kiln_pass_options *o, kiln_function *f, fuse_group *g,
                              kiln_node **out) {
  *out = NULL;
  g->n_inputs = 0;
  g->len = 0;
  g->overflow = false;
  g->body[0] = 0;
  fuse_emit(g, g->nodes[0]);
  if (g->overflow || g->n_inputs == 0)
    return NULL;
  kiln_attr_desc a = KILN_ATTR_S("body", g->body);
  kiln_function_set_insert_point(f, g->nodes[0]);
  kiln_node *fn = NULL;
  char nm[256];
  kiln_status s = kiln_function_add_node(
      f, KILN_NODE_FusedElementwise, kiln_pass_merged_name(g->nodes[0], g->n_nodes - 1, nm, sizeof nm),
      g->inputs, g->n_inputs, &a, 1, 1, &fn);
  kiln_function_set_insert_point(f, NULL);
  if (s)
    return kiln_status_wrap(s, "fuse: fusing at node '%s'", kiln_node_name(g->nodes[0]));
  if (!kiln_type_equal(kiln_value_type(kiln_node_result(fn, 0)),
                       kiln_value_type(kiln_node_result(g->nodes[0], 0))) ||
      (o->supports_node && !o->supports_node(o->backend_user, fn))) {
    return kiln_function_remove_node(f, fn);
  }
  *out = fn;
  return NULL;
}

kiln_status kiln_pass_fuse(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  if (!o || !o->supports_fused)
    return NULL;
  uint32_t n = kiln_function_node_count(f);
  kiln_node **snap = calloc(n ? n : 1, sizeof *snap);
  bool *taken = calloc(n ? n : 1, sizeof *taken);
  fuse_group *g = calloc(1, sizeof *g);
  kiln_status s = NULL;
  if (!snap || !taken || !g) {
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "fuse: no memory for function %s",
                         kiln_function_name(f));
    goto done;
  }
  for (uint32_t i = 0; i < n; i++)
    snap[i] = kiln_function_node(f, i);
  /* Roots from the end, so each group is as large as it can be. */
  for (uint32_t r = n; !s && r-- > 0;) {
    kiln_node *root = snap[r];
    if (taken[r] || !fuse_candidate(o, root))
      continue;
    g->n_nodes = 1;
    g->nodes[0] = root;
    const kiln_type *rt = kiln_value_type(kiln_node_result(root, 0));
    fuse_grow(o, g, root, rt);
    if (g->n_nodes < 2)
      continue;
    kiln_node *fused = NULL;
    g->inline_consts = true;
    s = fuse_build(o, f, g, &fused);
    if (!s && !fused) {
      g->inline_consts = false;
      s = fuse_build(o, f, g, &fused);
    }
    if (s || !fused)
      continue;
    s = kiln_function_replace_uses(f, kiln_node_result(root, 0), kiln_node_result(fused, 0));
    /* Members go root first: each is unused once the one above is gone.
     * Mark them in the snapshot, which the removals leave valid. */
    for (uint32_t i = 0; i < n; i++)
      if (fuse_in_group(g, snap[i]))
        taken[i] = true;
    for (uint32_t i = 0; !s && i < g->n_nodes; i++)
      s = kiln_function_remove_node(f, g->nodes[i]);
    if (!s && changes)
      (*changes)++;
  }
done:
  free(snap);
  free(taken);
  free(g);
  return s;
}
