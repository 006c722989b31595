/* tools/quant_rewrite.c: the rewriting half of quantization. Finds the
 * nodes worth quantizing (Conv, MatMul and Gemm with constant f32 weights)
 * and rebuilds the float function in the QDQ form that ONNX Runtime's
 * quantizer writes and kiln's fuseqdq pass reads: QuantizeLinear /
 * DequantizeLinear pairs on activations (one pair per value, read by every
 * consumer), weights as s8 (symmetric, per output channel or per tensor)
 * behind a DequantizeLinear, biases as int32 at scale x_scale * w_scale.
 * The module is rebuilt node by node rather than edited in place, because
 * a pair inserted on a value must take over every use but its own. */
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "kiln/passes.h"
#include "quant.h"

void quant_plan_free(quant_plan *p) {
  if (!p)
    return;
  for (uint32_t i = 0; p->nodes && i < p->n; i++) {
    free(p->nodes[i].name);
    free(p->nodes[i].out);
    free(p->nodes[i].qout);
    free(p->nodes[i].x);
  }
  free(p->nodes);
  memset(p, 0, sizeof *p);
}

static const kiln_function *rw_function(const kiln_module *m, const char *function) {
  if (function)
    return kiln_module_find_function(m, function);
  return kiln_module_function_count(m) ? kiln_module_function(m, 0) : NULL;
}

static bool rw_const_f32(const kiln_value *v) {
  return v && kiln_value_get_kind(v) == KILN_VALUE_CONSTANT &&
         kiln_value_type(v)->elem == KILN_F32;
}

/* Why node n cannot be quantized, or NULL when it can. */
static const char *rw_unsupported(const kiln_node *n) {
  kiln_node_kind k = kiln_node_get_kind(n);
  const kiln_value *x = kiln_node_input(n, 0), *w = kiln_node_input(n, 1);
  const kiln_value *b = kiln_node_input_count(n) > 2 ? kiln_node_input(n, 2) : NULL;
  const kiln_attrs *a = kiln_node_attrs(n);
  if (kiln_value_type(kiln_node_result(n, 0))->elem != KILN_F32 || !x ||
      kiln_value_type(x)->elem != KILN_F32)
    return "not f32";
  if (kiln_value_get_kind(x) == KILN_VALUE_CONSTANT)
    return "its input 0 is a constant (folded, not computed)";
  if (!rw_const_f32(w))
    return "its weights (input 1) are not a constant";
  if (kiln_attrs_find(a, "activation"))
    return "it carries a fused activation";
  if (b && !rw_const_f32(b))
    return "its bias is not a constant";
  if (k == KILN_NODE_Conv)
    return kiln_value_type(w)->rank >= 3 ? NULL : "its weights are not [M, C/g, k...]";
  if (k == KILN_NODE_MatMul)
    return kiln_value_type(w)->rank == 2 ? NULL : "its weights are not a matrix";
  /* Gemm: A the activation, B the weights */
  if (kiln_attrs_int_or(a, "transA", 0) != 0)
    return "transA = 1";
  if (kiln_attrs_float_or(a, "alpha", 1.0) != 1.0 || kiln_attrs_float_or(a, "beta", 1.0) != 1.0)
    return "alpha or beta is not 1";
  return NULL;
}

/* Multiply-accumulates of a candidate node. */
static double rw_macs(const kiln_node *n) {
  if (!kiln_node_input(n, 0) || !kiln_node_input(n, 1))
    return 0;
  const kiln_type *y = kiln_value_type(kiln_node_result(n, 0));
  const kiln_type *w = kiln_value_type(kiln_node_input(n, 1));
  const kiln_type *x = kiln_value_type(kiln_node_input(n, 0));
  switch (kiln_node_get_kind(n)) {
  case KILN_NODE_Conv:
    return w->dims[0] ? (double)kiln_type_numel(y) * (double)kiln_type_numel(w) / (double)w->dims[0]
                      : 0;
  case KILN_NODE_MatMul:
    return x->rank ? (double)kiln_type_numel(y) * (double)x->dims[x->rank - 1] : 0;
  default: /* Gemm: K is A's columns, or its rows with transA */
    return x->rank == 2 ? (double)kiln_type_numel(y) *
                              (double)x->dims[kiln_attrs_int_or(kiln_node_attrs(n), "transA", 0)
                                                  ? 0
                                                  : 1]
                        : 0;
  }
}

/* An activation fuseqdq absorbs into the integer node: Relu, or Clip with
 * constant bounds (ReLU6). */
static bool rw_absorbable(const kiln_node *u) {
  if (kiln_node_get_kind(u) == KILN_NODE_Relu)
    return true;
  if (kiln_node_get_kind(u) != KILN_NODE_Clip || kiln_attrs_count(kiln_node_attrs(u)) != 0)
    return false;
  for (uint32_t i = 1; i < kiln_node_input_count(u); i++) {
    const kiln_value *b = kiln_node_input(u, i);
    if (b && (kiln_value_get_kind(b) != KILN_VALUE_CONSTANT ||
              kiln_type_numel(kiln_value_type(b)) != 1))
      return false;
  }
  return true;
}

/* The value whose quantized form stands for n's result: a Relu or ReLU6
 * that is the result's only user takes it over, as fuseqdq then absorbs
 * it. */
static const kiln_value *rw_quant_out(const kiln_function *f, const kiln_node *n) {
  const kiln_value *y = kiln_node_result(n, 0);
  if (kiln_value_use_count(y) != 1)
    return y;
  for (uint32_t o = 0; o < kiln_function_output_count(f); o++)
    if (kiln_function_output_value(f, o) == y)
      return y;
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++) {
    const kiln_node *u = kiln_function_node(f, i);
    if (rw_absorbable(u) && kiln_node_input(u, 0) == y)
      return kiln_node_result(u, 0);
  }
  return y;
}

static bool rw_keep(const kiln_node *n, const char *const *keep, uint32_t n_keep) {
  for (uint32_t i = 0; i < n_keep; i++)
    if (fnmatch(keep[i], kiln_node_name(n), 0) == 0 ||
        fnmatch(keep[i], kiln_node_kind_name(kiln_node_get_kind(n)), 0) == 0)
      return true;
  return false;
}

kiln_status quant_plan_make(const kiln_module *m, const char *function,
                            const char *const *keep, uint32_t n_keep, quant_plan *out) {
  memset(out, 0, sizeof *out);
  const kiln_function *f = rw_function(m, function);
  if (!f)
    return kiln_status_make(KILN_NOT_FOUND, "the model has no function '%s'",
                            function ? function : "(none)");
  uint32_t nn = kiln_function_node_count(f);
  out->nodes = calloc(nn + 1, sizeof *out->nodes);
  if (!out->nodes)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory for the quantization plan");
  for (uint32_t i = 0; i < nn; i++) {
    const kiln_node *n = kiln_function_node(f, i);
    kiln_node_kind k = kiln_node_get_kind(n);
    if (k != KILN_NODE_Conv && k != KILN_NODE_MatMul && k != KILN_NODE_Gemm)
      continue;
    quant_node *q = &out->nodes[out->n++];
    q->kind = k;
    q->name = strdup(kiln_node_name(n));
    q->out = strdup(kiln_value_name(rw_quant_out(f, n)));
    q->x = strdup(kiln_node_input(n, 0) ? kiln_value_name(kiln_node_input(n, 0)) : "");
    if (!q->name || !q->out || !q->x) {
      quant_plan_free(out);
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory for the quantization plan");
    }
    q->macs = rw_macs(n);
    const char *why = rw_unsupported(n);
    if (why) {
      q->state = QUANT_UNSUPPORTED;
      snprintf(q->why, sizeof q->why, "%s", why);
      continue;
    }
    if (rw_keep(n, keep, n_keep)) {
      q->state = QUANT_KEPT_FLOAT;
      snprintf(q->why, sizeof q->why, "--keep-float");
    }
  }
  return NULL;
}

static kiln_status rw_evaluate(void *user, const kiln_module *m, const kiln_value *v,
                               kiln_tensor *out) {
  return kiln_evaluate_value(user, m, v, out);
}

/* Gemm(x, W, b) with constant W, transA 0, alpha and beta 1 as MatMul(x,
 * W [K, N]) + b: the same values, in the form whose quantized product
 * fuseqdq turns into QLinearMatMul (no integer kind takes Gemm's bias). */
static kiln_status rw_split_gemm(kiln_function *f, kiln_node *n, bool *done) {
  *done = false;
  const kiln_attrs *a = kiln_node_attrs(n);
  kiln_value *x = kiln_node_input(n, 0), *w = kiln_node_input(n, 1);
  kiln_value *b = kiln_node_input_count(n) > 2 ? kiln_node_input(n, 2) : NULL;
  if (kiln_node_get_kind(n) != KILN_NODE_Gemm || !rw_const_f32(w) ||
      kiln_value_type(x)->elem != KILN_F32 || kiln_attrs_int_or(a, "transA", 0) != 0 ||
      kiln_attrs_float_or(a, "alpha", 1.0) != 1.0 || kiln_attrs_float_or(a, "beta", 1.0) != 1.0)
    return NULL;
  const kiln_type *wt = kiln_value_type(w);
  bool tb = kiln_attrs_int_or(a, "transB", 0) != 0;
  int64_t K = wt->dims[tb ? 1 : 0], N = wt->dims[tb ? 0 : 1];
  kiln_module *m = kiln_function_module(f);
  kiln_value *wk = w;
  if (tb) {
    const float *d = kiln_value_data(w);
    float *t = malloc((size_t)(K * N) * sizeof *t + 1);
    if (!t)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory transposing '%s'",
                              kiln_value_name(w));
    for (int64_t i = 0; i < N; i++)
      for (int64_t k = 0; k < K; k++)
        t[k * N + i] = d[i * K + k];
    kiln_type tt;
    int64_t dims[2] = {K, N};
    kiln_status s = kiln_type_make(KILN_F32, 2, dims, &tt);
    char nm[512];
    snprintf(nm, sizeof nm, "%.480s.kn", kiln_value_name(w));
    if (!s)
      s = kiln_module_add_constant(m, kiln_module_find_value(m, nm) ? NULL : nm, &tt, t, &wk);
    free(t);
    KILN_TRY(s);
  }
  kiln_function_set_insert_point(f, n);
  char nm[512];
  snprintf(nm, sizeof nm, "%.480s", kiln_node_name(n));
  kiln_value *in[2] = {x, wk};
  kiln_node *mm = NULL, *add = NULL;
  /* results named after the Gemm's ("logits.matmul", "logits.bias") */
  const char *yn = kiln_value_name(kiln_node_result(n, 0));
  char rn[2][520];
  snprintf(rn[0], sizeof rn[0], "%.480s.matmul", yn);
  snprintf(rn[1], sizeof rn[1], "%.480s.bias", yn);
  const char *r0[1] = {kiln_module_find_value(m, rn[0]) ? NULL : rn[0]};
  const char *r1[1] = {kiln_module_find_value(m, rn[1]) ? NULL : rn[1]};
  kiln_status s =
      kiln_function_add_node_named(f, KILN_NODE_MatMul, nm, in, 2, NULL, 0, 1, r0, &mm);
  kiln_value *r = s ? NULL : kiln_node_result(mm, 0);
  if (!s && b) {
    kiln_value *ain[2] = {r, b};
    char an[520];
    snprintf(an, sizeof an, "%.480s.bias", nm);
    s = kiln_function_add_node_named(f, KILN_NODE_Add, an, ain, 2, NULL, 0, 1, r1, &add);
    if (!s)
      r = kiln_node_result(add, 0);
  }
  kiln_function_set_insert_point(f, NULL);
  if (!s && !kiln_type_equal(kiln_value_type(r), kiln_value_type(kiln_node_result(n, 0))))
    s = kiln_status_make(KILN_INTERNAL, "splitting Gemm '%s' changed its result type", nm);
  if (!s)
    s = kiln_function_replace_uses(f, kiln_node_result(n, 0), r);
  if (!s)
    s = kiln_function_remove_node(f, n);
  if (s)
    return kiln_status_wrap(s, "splitting Gemm '%s' for quantization", nm);
  *done = true;
  return NULL;
}

kiln_status quant_prepare(kiln_context *ctx, kiln_module *m) {
  kiln_pass_options o = kiln_pass_options_default();
  o.evaluate = rw_evaluate;
  o.evaluate_user = ctx;
  kiln_pass_target t = {.module = m};
  kiln_status s = kiln_pass_run(&t, "dce,cse,fold*,simplify*,dce", &o, NULL);
  if (s)
    return kiln_status_wrap(s, "cleaning up the model before quantizing");
  for (uint32_t fi = 0; fi < kiln_module_function_count(m); fi++) {
    kiln_function *f = kiln_module_function(m, fi);
    for (uint32_t i = 0; i < kiln_function_node_count(f); i++) {
      /* the MatMul (and Add) take the Gemm's place: not Gemms, passed over */
      bool done = false;
      KILN_TRY(rw_split_gemm(f, kiln_function_node(f, i), &done));
    }
  }
  kiln_module_remove_unused_constants(m);
  return NULL;
}

/* ------------------------------------------------------------ rebuilding */

typedef struct rw_ctx {
  const kiln_module *src;
  const kiln_function *f;
  kiln_module *dst;
  kiln_function *g;
  const quant_profile *p;
  const quant_settings *s;
  quant_plan *plan;
  /* values quantized so far: the old value's name and its DequantizeLinear */
  uint32_t nq, capq;
  const char **qname;
  kiln_value **qdq;
  bool iso;
} rw_ctx;

/* A value the QDQ model quantizes that is also a model output under its
 * own name: the output keeps the name for the dequantized value (ONNX
 * binds outputs by value name), so the float value becomes NAME.float. */
static bool rw_renamed(const rw_ctx *c, const kiln_value *v) {
  if (c->iso || kiln_value_get_kind(v) != KILN_VALUE_RESULT)
    return false;
  bool quantized = false;
  for (uint32_t i = 0; i < c->plan->n && !quantized; i++)
    quantized = c->plan->nodes[i].state == QUANT_QDQ &&
                strcmp(c->plan->nodes[i].out, kiln_value_name(v)) == 0;
  for (uint32_t o = 0; quantized && o < kiln_function_output_count(c->f); o++)
    if (kiln_function_output_value(c->f, o) == v &&
        strcmp(kiln_function_output_name(c->f, o), kiln_value_name(v)) == 0)
      return true;
  return false;
}

/* A name not yet used in dst: base, else base.2, base.3, ... */
static void rw_fresh(const rw_ctx *c, const char *base, char *buf, size_t size) {
  int keep = size > 16 ? (int)(size - 16) : 0; /* room for ".N" */
  snprintf(buf, size, "%.*s", keep, base);
  for (unsigned k = 2; kiln_module_find_value(c->dst, buf); k++)
    snprintf(buf, size, "%.*s.%u", keep, base, k);
}

static kiln_status rw_const(rw_ctx *c, const char *base, kiln_elem e, uint32_t rank,
                            const int64_t *dims, const void *data, kiln_value **out) {
  kiln_type t;
  KILN_TRY(kiln_type_make(e, rank, dims, &t));
  char nm[512];
  rw_fresh(c, base, nm, sizeof nm);
  return kiln_module_add_constant(c->dst, nm, &t, data, out);
}

/* dst's value for src's v (copied constants are shared, not duplicated). */
static kiln_status rw_value(rw_ctx *c, const kiln_value *v, bool quantized, kiln_value **out) {
  *out = NULL;
  if (!v)
    return NULL;
  if (quantized)
    for (uint32_t i = 0; i < c->nq; i++)
      if (strcmp(c->qname[i], kiln_value_name(v)) == 0) {
        *out = c->qdq[i];
        return NULL;
      }
  char alt[520];
  snprintf(alt, sizeof alt, "%.500s.float", kiln_value_name(v));
  kiln_value *d = kiln_module_find_value(c->dst, rw_renamed(c, v) ? alt : kiln_value_name(v));
  if (!d && kiln_value_get_kind(v) == KILN_VALUE_CONSTANT)
    KILN_TRY(kiln_module_add_constant_from(c->dst, kiln_value_name(v), v, &d));
  if (!d)
    return kiln_status_make(KILN_INTERNAL, "rebuilding: value '%s' is used before it is made",
                            kiln_value_name(v));
  *out = d;
  return NULL;
}

/* The node's attributes as builder descriptions (strings and lists
 * borrowed from the node, which outlives the call). */
static uint32_t rw_descs(const kiln_node *n, kiln_attr_desc *d, uint32_t cap) {
  const kiln_attrs *a = kiln_node_attrs(n);
  uint32_t k = 0;
  for (uint32_t i = 0; i < kiln_attrs_count(a) && k < cap; i++) {
    const kiln_attr *at = kiln_attrs_at(a, i);
    kiln_attr_desc x = {.name = kiln_attr_name(at), .kind = kiln_attr_get_kind(at)};
    switch (x.kind) {
    case KILN_ATTR_INT:
      x.i = kiln_attr_int(at);
      break;
    case KILN_ATTR_FLOAT:
      x.f = kiln_attr_float(at);
      break;
    case KILN_ATTR_STRING:
      x.s = kiln_attr_string(at);
      break;
    case KILN_ATTR_INTS:
      x.ints = kiln_attr_ints(at), x.len = kiln_attr_len(at);
      break;
    case KILN_ATTR_FLOATS:
      x.floats = kiln_attr_floats(at), x.len = kiln_attr_len(at);
      break;
    case KILN_ATTR_TYPE:
      x.type = kiln_attr_type(at);
      break;
    }
    d[k++] = x;
  }
  return k;
}

#define RW_MAX_ATTRS 64
#define RW_MAX_IO 64

/* Add a copy of n reading `ins`, its results named by prefix + their
 * names (prefix "" = the same names). */
static kiln_status rw_copy(rw_ctx *c, const kiln_node *n, kiln_value *const *ins,
                           const char *prefix, kiln_node **out) {
  kiln_attr_desc d[RW_MAX_ATTRS];
  uint32_t nd = rw_descs(n, d, RW_MAX_ATTRS);
  uint32_t nr = kiln_node_result_count(n);
  if (nr > RW_MAX_IO || kiln_node_input_count(n) > RW_MAX_IO ||
      kiln_attrs_count(kiln_node_attrs(n)) > RW_MAX_ATTRS)
    return kiln_status_make(KILN_UNIMPLEMENTED, "node '%s' has too many operands or attributes "
                                                "to rebuild", kiln_node_name(n));
  char names[RW_MAX_IO][512];
  const char *rn[RW_MAX_IO];
  for (uint32_t r = 0; r < nr; r++) {
    const kiln_value *v = kiln_node_result(n, r);
    snprintf(names[r], sizeof names[r], "%s%.480s%s", prefix, kiln_value_name(v),
             !*prefix && rw_renamed(c, v) ? ".float" : "");
    rn[r] = names[r];
  }
  char nm[512];
  snprintf(nm, sizeof nm, "%s%s", prefix, kiln_node_name(n));
  return kiln_function_add_node_named(c->g, kiln_node_get_kind(n), nm, ins,
                                      kiln_node_input_count(n), d, nd, nr, rn, out);
}

/* The value whose range quantizes src value `name`: itself, or through
 * pass-through kinds (kiln_pass_qdq_passes_through) the first value
 * upstream that is not one: quantized with their input's parameters,
 * their result is exact (no second rounding) and fuseqdq can run them on
 * the integers. */
static const char *rw_range_source(const rw_ctx *c, const char *name) {
  for (int depth = 0; depth < 64; depth++) {
    const kiln_value *v = kiln_module_find_value(c->src, name);
    const kiln_node *p = v ? kiln_value_producer(v, NULL) : NULL;
    const kiln_value *in = p ? kiln_node_input(p, 0) : NULL;
    if (!p || !in || !kiln_pass_qdq_passes_through(kiln_node_get_kind(p)) ||
        kiln_value_type(in)->elem != KILN_F32 || !quant_profile_find(c->p, kiln_value_name(in)))
      return name;
    name = kiln_value_name(in);
  }
  return name;
}

static kiln_status rw_range(const rw_ctx *c, const char *name, float *scale, int32_t *zp) {
  name = rw_range_source(c, name);
  const quant_range *r = quant_profile_find(c->p, name);
  if (!r)
    return kiln_status_make(KILN_NOT_FOUND, "the profile has no range for value '%s'", name);
  double lo, hi;
  quant_choose_range(r, c->s, &lo, &hi);
  quant_act_params(lo, hi, c->s->act, scale, zp);
  return NULL;
}

/* Quantize-dequantize float value v (already in dst) with the range of
 * src value `name`: the DequantizeLinear's result. */
static kiln_status rw_qdq(rw_ctx *c, kiln_value *v, const char *name, const char *prefix,
                          kiln_value **out) {
  float scale;
  int32_t zp;
  KILN_TRY(rw_range(c, name, &scale, &zp));
  char base[512], nm[2][512];
  kiln_value *sv, *zv;
  snprintf(base, sizeof base, "%s%s.scale", prefix, name);
  KILN_TRY(rw_const(c, base, KILN_F32, 0, NULL, &scale, &sv));
  snprintf(base, sizeof base, "%s%s.zero_point", prefix, name);
  if (c->s->act == KILN_U8) {
    uint8_t z = (uint8_t)zp;
    KILN_TRY(rw_const(c, base, KILN_U8, 0, NULL, &z, &zv));
  } else {
    int8_t z = (int8_t)zp;
    KILN_TRY(rw_const(c, base, KILN_I8, 0, NULL, &z, &zv));
  }
  snprintf(base, sizeof base, "%s%s.quantized", prefix, name);
  rw_fresh(c, base, nm[0], sizeof nm[0]);
  kiln_value *qin[3] = {v, sv, zv};
  kiln_node *qn = NULL, *dn = NULL;
  const char *r0[1] = {nm[0]};
  KILN_TRY(kiln_function_add_node_named(c->g, KILN_NODE_QuantizeLinear, nm[0], qin, 3, NULL, 0, 1,
                                        r0, &qn));
  snprintf(base, sizeof base, "%s%s.dequantized", prefix, name);
  rw_fresh(c, base, nm[1], sizeof nm[1]);
  kiln_value *din[3] = {kiln_node_result(qn, 0), sv, zv};
  const char *r1[1] = {nm[1]};
  KILN_TRY(kiln_function_add_node_named(c->g, KILN_NODE_DequantizeLinear, nm[1], din, 3, NULL, 0,
                                        1, r1, &dn));
  *out = kiln_node_result(dn, 0);
  return NULL;
}

/* The quantized form of src value v for its users: made on first demand
 * (right before the node that asks) and shared after. */
static kiln_status rw_act(rw_ctx *c, const kiln_value *v, kiln_value **out) {
  for (uint32_t i = 0; i < c->nq; i++)
    if (strcmp(c->qname[i], kiln_value_name(v)) == 0) {
      *out = c->qdq[i];
      return NULL;
    }
  kiln_value *d = NULL;
  KILN_TRY(rw_value(c, v, false, &d));
  KILN_TRY(rw_qdq(c, d, kiln_value_name(v), "", out));
  if (c->nq == c->capq) {
    uint32_t cap = c->capq ? c->capq * 2 : 64;
    const char **qn = realloc(c->qname, cap * sizeof *qn);
    if (qn)
      c->qname = qn;
    kiln_value **qd = realloc(c->qdq, cap * sizeof *qd);
    if (qd)
      c->qdq = qd;
    if (!qn || !qd)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory rebuilding the model");
    c->capq = cap;
  }
  c->qname[c->nq] = kiln_value_name(v);
  c->qdq[c->nq++] = *out;
  return NULL;
}

/* Weight w (f32 constant) as DQ(s8 w_q, scale, 0) along `axis` (per
 * channel) or per tensor; its scales go to *scales (caller frees). */
static kiln_status rw_weight(rw_ctx *c, const kiln_value *w, int axis, const char *prefix,
                             kiln_value **out, float **scales, int64_t *n_scales) {
  const kiln_type *t = kiln_value_type(w);
  const float *d = kiln_value_data(w);
  int64_t n = kiln_type_numel(t);
  int64_t ch = c->s->per_tensor ? 1 : t->dims[axis];
  int64_t inner = 1;
  for (uint32_t i = (uint32_t)axis + 1; i < t->rank; i++)
    inner *= t->dims[i];
  float *sc = calloc((size_t)ch + 1, sizeof *sc);
  int8_t *q = malloc((size_t)n + 1);
  int8_t *z = calloc((size_t)ch + 1, 1);
  if (!sc || !q || !z) {
    free(sc), free(q), free(z);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory quantizing '%s'",
                            kiln_value_name(w));
  }
  double *mx = calloc((size_t)ch + 1, sizeof *mx);
  if (!mx) {
    free(sc), free(q), free(z);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory quantizing '%s'",
                            kiln_value_name(w));
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t k = ch == 1 ? 0 : (i / inner) % ch;
    double a = fabs((double)d[i]);
    if (isfinite(a) && a > mx[k])
      mx[k] = a;
  }
  for (int64_t k = 0; k < ch; k++)
    sc[k] = mx[k] > 0 ? (float)(mx[k] / 127.0) : 1.0f;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = ch == 1 ? 0 : (i / inner) % ch;
    double v = isfinite(d[i]) ? nearbyint((double)(d[i] / sc[k])) : 0;
    q[i] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
  }
  free(mx);
  char base[512];
  kiln_value *qv = NULL, *sv = NULL, *zv = NULL;
  snprintf(base, sizeof base, "%s%s.quantized", prefix, kiln_value_name(w));
  kiln_status s = rw_const(c, base, KILN_I8, t->rank, t->dims, q, &qv);
  snprintf(base, sizeof base, "%s%s.scale", prefix, kiln_value_name(w));
  if (!s)
    s = rw_const(c, base, KILN_F32, ch == 1 ? 0 : 1, &ch, sc, &sv);
  snprintf(base, sizeof base, "%s%s.zero_point", prefix, kiln_value_name(w));
  if (!s)
    s = rw_const(c, base, KILN_I8, ch == 1 ? 0 : 1, &ch, z, &zv);
  free(q), free(z);
  kiln_node *dn = NULL;
  if (!s) {
    kiln_attr_desc ax = KILN_ATTR_I("axis", axis);
    kiln_value *in[3] = {qv, sv, zv};
    char nm[512];
    snprintf(base, sizeof base, "%s%s.dequantized", prefix, kiln_value_name(w));
    rw_fresh(c, base, nm, sizeof nm);
    const char *rn[1] = {nm};
    s = kiln_function_add_node_named(c->g, KILN_NODE_DequantizeLinear, nm, in, 3, &ax,
                                     ch == 1 ? 0 : 1, 1, rn, &dn);
  }
  if (s) {
    free(sc);
    return kiln_status_wrap(s, "quantizing weights '%s'", kiln_value_name(w));
  }
  *out = kiln_node_result(dn, 0);
  *scales = sc;
  *n_scales = ch;
  return NULL;
}

/* Bias b (f32 [M] constant) as DQ(int32 b_q, x_scale * w_scale, 0). */
static kiln_status rw_bias(rw_ctx *c, const kiln_value *b, float xs, const float *ws,
                           int64_t nws, const char *prefix, kiln_value **out) {
  const kiln_type *t = kiln_value_type(b);
  const float *d = kiln_value_data(b);
  int64_t m = t->dims[0];
  float *sc = malloc((size_t)m * sizeof *sc + 1);
  int32_t *q = malloc((size_t)m * sizeof *q + 1);
  if (!sc || !q) {
    free(sc), free(q);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory quantizing '%s'",
                            kiln_value_name(b));
  }
  for (int64_t i = 0; i < m; i++) {
    /* the product rounded to f32, as fuseqdq and the integer kinds take it */
    sc[i] = (float)((double)xs * (double)ws[nws == 1 ? 0 : i]);
    double v = isfinite(d[i]) ? nearbyint((double)d[i] / (double)sc[i]) : 0;
    q[i] = (int32_t)(v < -2147483647.0 ? -2147483647.0 : v > 2147483647.0 ? 2147483647.0 : v);
  }
  char base[512];
  kiln_value *qv = NULL, *sv = NULL;
  snprintf(base, sizeof base, "%s%s.quantized", prefix, kiln_value_name(b));
  kiln_status s = rw_const(c, base, KILN_I32, 1, &m, q, &qv);
  snprintf(base, sizeof base, "%s%s.scale", prefix, kiln_value_name(b));
  if (!s)
    s = rw_const(c, base, KILN_F32, 1, &m, sc, &sv);
  free(sc), free(q);
  kiln_node *dn = NULL;
  if (!s) {
    kiln_attr_desc ax = KILN_ATTR_I("axis", 0);
    kiln_value *in[2] = {qv, sv};
    char nm[512];
    snprintf(base, sizeof base, "%s%s.dequantized", prefix, kiln_value_name(b));
    rw_fresh(c, base, nm, sizeof nm);
    const char *rn[1] = {nm};
    s = kiln_function_add_node_named(c->g, KILN_NODE_DequantizeLinear, nm, in, 2, &ax, 1, 1, rn,
                                     &dn);
  }
  if (s)
    return kiln_status_wrap(s, "quantizing bias '%s'", kiln_value_name(b));
  *out = kiln_node_result(dn, 0);
  return NULL;
}

/* The axis of the weights' output channels. */
static int rw_weight_axis(const kiln_node *n) {
  switch (kiln_node_get_kind(n)) {
  case KILN_NODE_Conv:
    return 0;
  case KILN_NODE_MatMul:
    return 1;
  default:
    return kiln_attrs_int_or(kiln_node_attrs(n), "transB", 0) ? 0 : 1;
  }
}

/* The quantized copy of plan node n: its activation input from `x` (a
 * float value of dst, quantized here unless shared is set, in which case
 * x already is a DequantizeLinear), weights and bias quantized. */
static kiln_status rw_quant_node(rw_ctx *c, const kiln_node *n, kiln_value *x, const char *prefix,
                                 kiln_node **out) {
  float xs;
  int32_t xz;
  KILN_TRY(rw_range(c, kiln_value_name(kiln_node_input(n, 0)), &xs, &xz));
  kiln_value *ins[RW_MAX_IO] = {0};
  uint32_t ni = kiln_node_input_count(n);
  ins[0] = x;
  float *ws = NULL;
  int64_t nws = 0;
  KILN_TRY(rw_weight(c, kiln_node_input(n, 1), rw_weight_axis(n), prefix, &ins[1], &ws, &nws));
  kiln_status s = NULL;
  const kiln_value *b = ni > 2 ? kiln_node_input(n, 2) : NULL;
  if (b) {
    const kiln_type *bt = kiln_value_type(b);
    int64_t m = kiln_value_type(kiln_node_input(n, 1))->dims[rw_weight_axis(n)];
    if (bt->rank == 1 && bt->dims[0] == m)
      s = rw_bias(c, b, xs, ws, nws, prefix, &ins[2]);
    else /* a Gemm's broadcast C stays float */
      s = rw_value(c, b, false, &ins[2]);
  }
  for (uint32_t i = 3; !s && i < ni; i++)
    s = rw_value(c, kiln_node_input(n, i), false, &ins[i]);
  free(ws);
  if (!s)
    s = rw_copy(c, n, ins, prefix, out);
  return s;
}

static quant_node *rw_plan_node(quant_plan *plan, const kiln_node *n) {
  for (uint32_t i = 0; i < plan->n; i++)
    if (strcmp(plan->nodes[i].name, kiln_node_name(n)) == 0)
      return &plan->nodes[i];
  return NULL;
}

static bool rw_is_out(const quant_plan *plan, const kiln_value *v) {
  for (uint32_t i = 0; i < plan->n; i++)
    if (plan->nodes[i].state == QUANT_QDQ && strcmp(plan->nodes[i].out, kiln_value_name(v)) == 0)
      return true;
  return false;
}

/* iso: the quantized shadow of plan node q (node n), fed by the float
 * input, with the following Relu when q's result is the Relu's. */
static kiln_status rw_shadow(rw_ctx *c, const kiln_node *n, quant_node *q) {
  char prefix[600];
  snprintf(prefix, sizeof prefix, "kiln.iso.%s.", q->name);
  kiln_value *x = NULL, *xq = NULL;
  KILN_TRY(rw_value(c, kiln_node_input(n, 0), false, &x));
  KILN_TRY(rw_qdq(c, x, kiln_value_name(kiln_node_input(n, 0)), prefix, &xq));
  kiln_node *sn = NULL;
  KILN_TRY(rw_quant_node(c, n, xq, prefix, &sn));
  kiln_value *y = kiln_node_result(sn, 0);
  if (strcmp(q->out, kiln_value_name(kiln_node_result(n, 0))) != 0) {
    /* the absorbed activation (Relu / Clip), copied onto the shadow */
    const kiln_value *act = kiln_module_find_value(c->src, q->out);
    const kiln_node *an = act ? kiln_value_producer(act, NULL) : NULL;
    if (!an || kiln_node_input_count(an) > RW_MAX_IO)
      return kiln_status_make(KILN_INTERNAL, "no activation node for '%s'", q->out);
    kiln_value *ins[RW_MAX_IO] = {y};
    for (uint32_t i = 1; i < kiln_node_input_count(an); i++)
      KILN_TRY(rw_value(c, kiln_node_input(an, i), false, &ins[i]));
    kiln_node *r = NULL;
    KILN_TRY(rw_copy(c, an, ins, prefix, &r));
    y = kiln_node_result(r, 0);
  }
  kiln_value *yq = NULL;
  KILN_TRY(rw_qdq(c, y, q->out, prefix, &yq));
  char on[600];
  snprintf(on, sizeof on, "kiln.iso.%s", q->name);
  return kiln_function_add_output(c->g, on, yq);
}

static kiln_status rw_build(rw_ctx *c, bool iso) {
  for (uint32_t i = 0; i < kiln_module_input_count(c->src); i++) {
    const kiln_value *v = kiln_module_input(c->src, i);
    KILN_TRY(kiln_module_add_input(c->dst, kiln_value_name(v), kiln_value_type(v), NULL));
  }
  KILN_TRY(kiln_module_add_function(c->dst, kiln_function_name(c->f), &c->g));
  /* f32 inputs that a quantized node reads directly get their pair first */
  for (uint32_t i = 0; !iso && i < kiln_function_node_count(c->f); i++) {
    const kiln_node *n = kiln_function_node(c->f, i);
    quant_node *q = rw_plan_node(c->plan, n);
    const kiln_value *x = kiln_node_input(n, 0);
    if (q && q->state == QUANT_QDQ && x && kiln_value_get_kind(x) == KILN_VALUE_INPUT) {
      kiln_value *d;
      KILN_TRY(rw_act(c, x, &d));
    }
  }
  for (uint32_t i = 0; i < kiln_function_node_count(c->f); i++) {
    const kiln_node *n = kiln_function_node(c->f, i);
    quant_node *q = rw_plan_node(c->plan, n);
    bool quant = q && q->state == QUANT_QDQ;
    kiln_node *made = NULL;
    if (quant && !iso) {
      kiln_value *x = NULL;
      KILN_TRY(rw_act(c, kiln_node_input(n, 0), &x));
      KILN_TRY(rw_quant_node(c, n, x, "", &made));
    } else {
      kiln_value *ins[RW_MAX_IO] = {0};
      if (kiln_node_input_count(n) > RW_MAX_IO)
        return kiln_status_make(KILN_UNIMPLEMENTED, "node '%s' has too many inputs to rebuild",
                                kiln_node_name(n));
      for (uint32_t j = 0; j < kiln_node_input_count(n); j++)
        KILN_TRY(rw_value(c, kiln_node_input(n, j), !iso, &ins[j]));
      KILN_TRY(rw_copy(c, n, ins, "", &made));
    }
    if (iso) {
      if (quant)
        KILN_TRY(rw_shadow(c, n, q));
      continue;
    }
    /* a quantized node's result (or its Relu's) is quantized at once */
    for (uint32_t r = 0; r < kiln_node_result_count(n); r++) {
      const kiln_value *v = kiln_node_result(n, r);
      if (!rw_is_out(c->plan, v))
        continue;
      kiln_value *d;
      KILN_TRY(rw_act(c, v, &d));
      for (uint32_t k = 0; k < c->plan->n; k++) {
        quant_node *pq = &c->plan->nodes[k];
        if (pq->state == QUANT_QDQ && strcmp(pq->out, kiln_value_name(v)) == 0 &&
            !(pq->qout = strdup(kiln_value_name(d))))
          return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory for the quantization plan");
      }
    }
  }
  for (uint32_t o = 0; o < kiln_function_output_count(c->f); o++) {
    kiln_value *v = NULL;
    KILN_TRY(rw_value(c, kiln_function_output_value(c->f, o), !iso, &v));
    KILN_TRY(kiln_function_add_output(c->g, kiln_function_output_name(c->f, o), v));
  }
  return NULL;
}

kiln_status quant_rewrite(const kiln_module *m, const char *function, const quant_profile *p,
                          const quant_settings *s, quant_plan *plan, bool iso,
                          kiln_module **out) {
  *out = NULL;
  rw_ctx c = {.src = m, .f = rw_function(m, function), .p = p, .s = s, .plan = plan, .iso = iso};
  if (!c.f)
    return kiln_status_make(KILN_NOT_FOUND, "the model has no function '%s'",
                            function ? function : "(none)");
  /* A node whose input or result has no range stays float, saying so. */
  for (uint32_t i = 0; i < plan->n; i++) {
    quant_node *q = &plan->nodes[i];
    if (q->state != QUANT_QDQ)
      continue;
    const char *miss = !quant_profile_find(p, q->x)    ? q->x
                       : !quant_profile_find(p, q->out) ? q->out
                                                        : NULL;
    if (miss) {
      q->state = QUANT_UNSUPPORTED;
      snprintf(q->why, sizeof q->why, "the profile has no range for '%.100s'", miss);
    }
  }
  for (uint32_t i = 0; !iso && i < plan->n; i++) {
    free(plan->nodes[i].qout);
    plan->nodes[i].qout = NULL;
  }
  KILN_TRY(kiln_module_create(NULL, kiln_module_name(m), &c.dst));
  kiln_status st = rw_build(&c, iso);
  free(c.qname);
  free(c.qdq);
  if (!st)
    st = kiln_module_verify(c.dst);
  if (st) {
    kiln_module_destroy(c.dst);
    return kiln_status_wrap(st, "building the quantized model");
  }
  *out = c.dst;
  return NULL;
}
