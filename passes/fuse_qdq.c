/* passes/fuse_qdq.c: QDQ fusion. A quantized model in the QDQ form (ONNX
 * Runtime's format) is the float graph with DequantizeLinear on each
 * integer operand and QuantizeLinear on the result:
 *
 *   Q(Conv(DQ(x), DQ(w), DQ(b)?)) [a Relu or a constant Clip may sit before the Q]
 *   Q(MatMul(DQ(a), DQ(b)))
 *
 * Where every scale and zero point is constant and of the forms the
 * integer kinds take (activations per tensor, weights per tensor or per
 * output channel / column, an int32 bias at scale x_scale * w_scale with
 * zero point 0, or a float bias that is an exact multiple of that scale,
 * such as the shared zero bias quantizers leave), the chain becomes one
 * QLinearConv / QLinearMatMul, so a
 * backend that runs integers natively never sees the float detour. A
 * kind that only moves or selects values (MaxPool, Reshape, Transpose...)
 * between a DQ and a Q of the same parameters runs on the integers, and
 * an elementwise function of one value between a DQ and a Q becomes a
 * lookup in its 256-entry table. Only
 * where o->supports_node (when set) accepts the new node, because lowering
 * would otherwise turn it straight back into float. DequantizeLinear
 * nodes with other users stay for them; anything that does not match is
 * left as it is (docs/passes.md). */
#include <math.h>
#include <stdlib.h>

#include "pass_util.h"

/* One integer operand of the pattern: the integers, their scale and zero
 * point (NULL when absent), and the DequantizeLinear (or, for the result,
 * QuantizeLinear) node that carries them. */
typedef struct qdq_operand {
  kiln_node *node;
  kiln_value *q, *scale, *zp;
} qdq_operand;

static bool qdq_is_const(const kiln_value *v) {
  return v && kiln_value_get_kind(v) == KILN_VALUE_CONSTANT;
}

/* An attribute that is absent or holds its default integer: a present
 * attribute of another kind is not the default. */
static bool qdq_attr_default(const kiln_node *n, const char *name, int64_t dflt) {
  const kiln_attr *a = kiln_attrs_find(kiln_node_attrs(n), name);
  return !a || (kiln_attr_get_kind(a) == KILN_ATTR_INT && kiln_attr_int(a) == dflt);
}

static bool qdq_is_8bit(kiln_elem e) {
  return e == KILN_U8 || e == KILN_I8;
}

/* A constant f32 scale whose entries are all finite and positive: the
 * requantization divides by them. */
static bool qdq_scale_ok(const kiln_value *s) {
  if (!qdq_is_const(s))
    return false;
  const kiln_type *t = kiln_value_type(s);
  if (t->elem != KILN_F32 || t->quantized)
    return false;
  const void *d = kiln_value_data(s);
  for (int64_t i = 0; i < kiln_type_numel(t); i++) {
    double v = kiln_elem_load_f64(t->elem, d, i);
    if (!isfinite(v) || v <= 0)
      return false;
  }
  return true;
}

/* One value per tensor: a scalar or a [1]. */
static bool qdq_per_tensor(const kiln_type *t) {
  return t->rank <= 1 && kiln_type_numel(t) == 1;
}

/* The normalized `axis` of a quantize node over a rank-`rank` operand;
 * -1 when out of range. */
static int64_t qdq_axis(const kiln_node *n, uint32_t rank) {
  int64_t a = kiln_attrs_int_or(kiln_node_attrs(n), "axis", 1);
  if (a < 0)
    a += rank;
  return a >= 0 && a < (int64_t)rank ? a : -1;
}

/* v = DequantizeLinear(q, scale, zp?) into f32, q of element type `elem`
 * (U8 or I8 when elem is KILN_U8, I32 otherwise), not blocked. Per tensor,
 * or, when axis >= 0, also one scale per entry along that axis of q.
 * need_const: q itself must be a constant (weights and bias). */
static bool qdq_match_dq(kiln_value *v, bool want_i32, int64_t axis, bool need_const,
                         qdq_operand *out) {
  kiln_node *n = v ? kiln_value_producer(v, NULL) : NULL;
  if (!n || kiln_node_get_kind(n) != KILN_NODE_DequantizeLinear ||
      kiln_value_type(v)->elem != KILN_F32 || !qdq_attr_default(n, "block_size", 0))
    return false;
  kiln_value *q = kiln_node_input(n, 0), *s = kiln_node_input(n, 1);
  kiln_value *zp = kiln_node_input_count(n) > 2 ? kiln_node_input(n, 2) : NULL;
  const kiln_type *qt = kiln_value_type(q);
  if (qt->quantized || (want_i32 ? qt->elem != KILN_I32 : !qdq_is_8bit(qt->elem)) ||
      (need_const && !qdq_is_const(q)) || !qdq_scale_ok(s) || (zp && !qdq_is_const(zp)))
    return false;
  const kiln_type *st = kiln_value_type(s);
  if (!qdq_per_tensor(st)) {
    if (axis < 0 || st->rank != 1 || qdq_axis(n, qt->rank) != axis || st->dims[0] != qt->dims[axis])
      return false;
  }
  *out = (qdq_operand){.node = n, .q = q, .scale = s, .zp = zp};
  return true;
}

/* qn = QuantizeLinear(v, scale, zp?) from f32 to u8 / i8, per tensor, every
 * attribute at its default (an explicit one is a sign of a form this pass
 * was not written for, so it declines rather than guesses). */
static bool qdq_match_q(kiln_node *qn, qdq_operand *out) {
  if (kiln_node_get_kind(qn) != KILN_NODE_QuantizeLinear)
    return false;
  kiln_value *v = kiln_node_input(qn, 0), *s = kiln_node_input(qn, 1);
  kiln_value *zp = kiln_node_input_count(qn) > 2 ? kiln_node_input(qn, 2) : NULL;
  const kiln_type *yt = kiln_value_type(kiln_node_result(qn, 0));
  if (kiln_value_type(v)->elem != KILN_F32 || !qdq_is_8bit(yt->elem) || yt->quantized ||
      !qdq_scale_ok(s) || !qdq_per_tensor(kiln_value_type(s)) || (zp && !qdq_is_const(zp)) ||
      !qdq_attr_default(qn, "axis", 1) || !qdq_attr_default(qn, "saturate", 1) ||
      !qdq_attr_default(qn, "block_size", 0))
    return false;
  *out = (qdq_operand){.node = qn, .q = kiln_node_result(qn, 0), .scale = s, .zp = zp};
  return true;
}

static double qdq_load(const kiln_value *v, int64_t i) {
  const kiln_type *t = kiln_value_type(v);
  return kiln_elem_load_f64(t->elem, kiln_value_data(v), kiln_type_numel(t) == 1 ? 0 : i);
}

/* The bias DQ(b, b_scale, 0): int32, one per output channel, and at
 * exactly the scale the integer kinds add it at, x_scale * w_scale[m]
 * rounded to f32 (how quantizers compute it); any other scale would make
 * the fused result differ from the float graph's. */
static bool qdq_match_bias(kiln_value *b, const qdq_operand *x, const qdq_operand *w, int64_t m,
                           qdq_operand *out) {
  if (!qdq_match_dq(b, true, 0, true, out))
    return false;
  const kiln_type *bt = kiln_value_type(out->q);
  if (bt->rank != 1 || bt->dims[0] != m || (out->zp && !kiln_pass_const_is(out->zp, 0)))
    return false;
  double xs = qdq_load(x->scale, 0);
  for (int64_t i = 0; i < m; i++)
    if (qdq_load(out->scale, i) != (double)(float)(xs * qdq_load(w->scale, i)))
      return false;
  return true;
}

/* The value behind a chain of Identity nodes (exporters share equal
 * initializers, such as zero biases, that way). */
static kiln_value *qdq_through_identity(kiln_value *v) {
  for (int i = 0; v && i < 16; i++) {
    kiln_node *p = kiln_value_producer(v, NULL);
    if (!p || kiln_node_get_kind(p) != KILN_NODE_Identity)
      return v;
    v = kiln_node_input(p, 0);
  }
  return NULL;
}

/* A bias known at compile time: an f32 constant, or DequantizeLinear of a
 * constant int32 per tensor or along axis 0 with a constant scale and no
 * non-zero zero point (a bias quantized for another node and shared). Its
 * dims[0] entries come from qdq_bias_at. */
static bool qdq_known_bias(kiln_value *v) {
  if (qdq_is_const(v))
    return kiln_value_type(v)->elem == KILN_F32 && !kiln_value_type(v)->quantized;
  kiln_node *p = kiln_value_producer(v, NULL);
  if (!p || kiln_node_get_kind(p) != KILN_NODE_DequantizeLinear ||
      kiln_value_type(v)->elem != KILN_F32)
    return false;
  kiln_value *q = kiln_node_input(p, 0), *sc = kiln_node_input(p, 1);
  kiln_value *zp = kiln_node_input_count(p) > 2 ? kiln_node_input(p, 2) : NULL;
  const kiln_type *qt = kiln_value_type(q);
  return qdq_is_const(q) && qt->elem == KILN_I32 && qt->rank == 1 && qdq_is_const(sc) &&
         kiln_value_type(sc)->elem == KILN_F32 && (!zp || kiln_pass_const_is(zp, 0)) &&
         (kiln_type_numel(kiln_value_type(sc)) == 1 ||
          kiln_type_numel(kiln_value_type(sc)) == qt->dims[0]);
}

static double qdq_bias_at(const kiln_value *v, int64_t i) {
  if (qdq_is_const(v))
    return qdq_load(v, i);
  kiln_node *p = kiln_value_producer(v, NULL);
  return (double)((float)qdq_load(kiln_node_input(p, 0), i) *
                  (float)qdq_load(kiln_node_input(p, 1), i));
}

/* A float bias that is an exact integer multiple of the integer kinds'
 * bias scale f32(x_scale * w_scale[m]) in every channel, as quantizers
 * leave a zero bias shared between nodes (ONNX Runtime's skips it, or
 * quantizes it once for its first user): the int32 bias those integers
 * make adds exactly what the float graph adds. out->scale holds the bias
 * value; out->q is made by qdq_int_bias. */
static bool qdq_float_bias(kiln_value *bv, const qdq_operand *x, const qdq_operand *w, int64_t m,
                           qdq_operand *out) {
  kiln_value *c = qdq_through_identity(bv);
  if (!c || !qdq_known_bias(c))
    return false;
  const kiln_type *t = kiln_value_type(c);
  if (t->rank != 1 || t->dims[0] != m)
    return false;
  double xs = qdq_load(x->scale, 0);
  for (int64_t i = 0; i < m; i++) {
    double bs = (double)(float)(xs * qdq_load(w->scale, i)), b = qdq_bias_at(c, i);
    double k = b / bs;
    if (k != nearbyint(k) || fabs(k) > 2147483647.0 || (double)(float)(k * bs) != b)
      return false;
  }
  *out = (qdq_operand){.node = NULL, .q = NULL, .scale = c, .zp = NULL};
  return true;
}

/* The int32 bias of a float one qdq_float_bias accepted. */
static kiln_status qdq_int_bias(kiln_module *mod, const qdq_operand *x, const qdq_operand *w,
                                qdq_operand *b) {
  int64_t m = kiln_value_type(b->scale)->dims[0];
  int32_t *q = malloc((size_t)m * sizeof *q + 1);
  if (!q)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "fuseqdq: no memory for a bias of %lld",
                            (long long)m);
  double xs = qdq_load(x->scale, 0);
  for (int64_t i = 0; i < m; i++)
    q[i] = (int32_t)(qdq_bias_at(b->scale, i) / (double)(float)(xs * qdq_load(w->scale, i)));
  kiln_type it;
  kiln_status s = kiln_type_make(KILN_I32, 1, &m, &it);
  if (!s)
    s = kiln_module_add_constant(mod, NULL, &it, q, &b->q);
  free(q);
  return s;
}

/* A zero point for an operand whose DequantizeLinear has none: zeros of
 * the integer type, shaped like its scale (the integer kinds need one). */
static kiln_status qdq_zp(kiln_module *m, const qdq_operand *op, kiln_elem elem, kiln_value **out) {
  *out = op->zp;
  if (op->zp)
    return NULL;
  kiln_type t = *kiln_value_type(op->scale);
  t.elem = elem;
  return kiln_pass_const_fill(m, &t, 0, out);
}

/* The float product under the Q: Conv or MatMul in f32 without a fused
 * activation, directly or through a Relu, each result used only by the
 * next step. *relu is the Relu (or constant Clip) or NULL. */
/* Clip with constant scalar bounds (or none), f32: monotonic like Relu. */
static bool qdq_const_clip(const kiln_node *p) {
  if (kiln_node_get_kind(p) != KILN_NODE_Clip || kiln_attrs_count(kiln_node_attrs(p)) != 0)
    return false;
  for (uint32_t i = 1; i < kiln_node_input_count(p); i++) {
    const kiln_value *b = kiln_node_input(p, i);
    if (b && (!qdq_is_const(b) || kiln_type_numel(kiln_value_type(b)) != 1 ||
              kiln_value_type(b)->elem != KILN_F32))
      return false;
  }
  return true;
}

static kiln_node *qdq_producer(kiln_value *v, kiln_node **relu) {
  *relu = NULL;
  kiln_node *p = kiln_value_producer(v, NULL);
  if (p && (kiln_node_get_kind(p) == KILN_NODE_Relu || qdq_const_clip(p)) &&
      kiln_value_use_count(v) == 1) {
    *relu = p;
    v = kiln_node_input(p, 0);
    p = kiln_value_producer(v, NULL);
  }
  if (!p || kiln_value_use_count(v) != 1 || kiln_value_type(v)->elem != KILN_F32 ||
      kiln_attrs_find(kiln_node_attrs(p), "activation"))
    return NULL;
  kiln_node_kind k = kiln_node_get_kind(p);
  if (k == KILN_NODE_Conv && kiln_node_input_count(p) <= 3)
    return p;
  if (k == KILN_NODE_MatMul)
    return p;
  return NULL;
}

/* The 8 or 9 inputs of the integer node from the matched operands. */
static kiln_status qdq_inputs(kiln_module *m, const qdq_operand *x, const qdq_operand *w,
                              const qdq_operand *y, const qdq_operand *b, kiln_value **ins,
                              uint32_t *n) {
  ins[0] = x->q, ins[1] = x->scale;
  KILN_TRY(qdq_zp(m, x, kiln_value_type(x->q)->elem, &ins[2]));
  ins[3] = w->q, ins[4] = w->scale;
  KILN_TRY(qdq_zp(m, w, kiln_value_type(w->q)->elem, &ins[5]));
  ins[6] = y->scale;
  KILN_TRY(qdq_zp(m, y, kiln_value_type(y->q)->elem, &ins[7]));
  *n = 8;
  if (b)
    ins[(*n)++] = b->q;
  return NULL;
}

/* Relu or Clip under the Q: quantizing is monotonic, so
 * Q(Clip(v, a, b)) = clamp(Q(v), Q(a), Q(b)) and Q(Relu(v)) = max(Q(v),
 * Q(0)) with Q(0) the zero point. A bound at or past the type's end is
 * the Q's own saturation and goes; any other becomes a Max / Min with the
 * quantized bound after the fused node, if the backend runs it. *r is the
 * value to use, NULL when the backend declines. */
static double qdq_quantize_bound(const qdq_operand *y, double v) {
  kiln_elem e = kiln_value_type(y->q)->elem;
  double lo = e == KILN_U8 ? 0 : -128, hi = e == KILN_U8 ? 255 : 127;
  float q = (float)v / (float)qdq_load(y->scale, 0); /* as QuantizeLinear divides */
  double z = nearbyint((double)q) + (y->zp ? qdq_load(y->zp, 0) : 0);
  return z < lo ? lo : z > hi ? hi : z;
}

static kiln_status qdq_bound(kiln_function *f, const kiln_pass_options *o, kiln_node *qn,
                             kiln_node_kind k, kiln_value *x, kiln_value *bound, kiln_value **r) {
  kiln_value *in[2] = {x, bound};
  KILN_TRY(kiln_pass_emit(f, qn, k, in, 2, NULL, 0, r));
  kiln_node *n = kiln_value_producer(*r, NULL);
  if (o->supports_node && !o->supports_node(o->backend_user, n)) {
    *r = NULL;
    return kiln_function_remove_node(f, n);
  }
  return NULL;
}

static kiln_status qdq_relu(kiln_function *f, const kiln_pass_options *o, kiln_node *qn,
                            kiln_node *act, const qdq_operand *y, kiln_value *fused,
                            kiln_value **r) {
  kiln_module *m = kiln_function_module(f);
  kiln_elem e = kiln_value_type(y->q)->elem;
  double tlo = e == KILN_U8 ? 0 : -128, thi = e == KILN_U8 ? 255 : 127;
  bool relu = kiln_node_get_kind(act) == KILN_NODE_Relu;
  const kiln_value *a = relu ? NULL : kiln_node_input_count(act) > 1 ? kiln_node_input(act, 1) : NULL;
  const kiln_value *b = relu ? NULL : kiln_node_input_count(act) > 2 ? kiln_node_input(act, 2) : NULL;
  double qlo = relu ? (y->zp ? qdq_load(y->zp, 0) : 0) : a ? qdq_quantize_bound(y, qdq_load(a, 0)) : tlo;
  double qhi = b ? qdq_quantize_bound(y, qdq_load(b, 0)) : thi;
  *r = fused;
  kiln_node *made[2] = {NULL, NULL};
  if (qlo > tlo) {
    kiln_value *zp = relu ? y->zp : NULL;
    if (!zp)
      KILN_TRY(kiln_pass_const_scalar(m, e, qlo, &zp));
    KILN_TRY(qdq_bound(f, o, qn, KILN_NODE_Max, *r, zp, r));
    if (!*r)
      return NULL;
    made[0] = kiln_value_producer(*r, NULL);
  }
  if (qhi < thi) {
    kiln_value *hv = NULL;
    KILN_TRY(kiln_pass_const_scalar(m, e, qhi, &hv));
    KILN_TRY(qdq_bound(f, o, qn, KILN_NODE_Min, *r, hv, r));
    if (!*r && made[0]) /* both or neither */
      KILN_TRY(kiln_function_remove_node(f, made[0]));
  }
  return NULL;
}

/* Remove what the fused node replaced: the float product, the Relu, and
 * each DequantizeLinear nobody else uses any more (once each). */
static kiln_status qdq_remove(kiln_function *f, kiln_node *relu, kiln_node *p,
                              kiln_node *const *dqs, uint32_t n_dqs) {
  if (relu)
    KILN_TRY(kiln_function_remove_node(f, relu));
  KILN_TRY(kiln_function_remove_node(f, p));
  for (uint32_t i = 0; i < n_dqs; i++) {
    bool seen = false;
    for (uint32_t j = 0; j < i; j++)
      seen = seen || dqs[j] == dqs[i];
    if (dqs[i] && !seen && kiln_value_use_count(kiln_node_result(dqs[i], 0)) == 0)
      KILN_TRY(kiln_function_remove_node(f, dqs[i]));
  }
  return NULL;
}

/* Match the operands of Conv / MatMul p; false when one does not fit. */
static bool qdq_match_operands(kiln_node *p, qdq_operand *x, qdq_operand *w, qdq_operand *b,
                               bool *has_b) {
  *has_b = false;
  if (kiln_node_get_kind(p) == KILN_NODE_Conv) {
    /* weights [M, C/g, k...]: per output channel is along axis 0 */
    if (!qdq_match_dq(kiln_node_input(p, 0), false, -1, false, x) ||
        !qdq_match_dq(kiln_node_input(p, 1), false, 0, true, w))
      return false;
    kiln_value *bv = kiln_node_input_count(p) > 2 ? kiln_node_input(p, 2) : NULL;
    if (!bv)
      return true;
    *has_b = true;
    int64_t m = kiln_value_type(w->q)->dims[0];
    return qdq_match_bias(bv, x, w, m, b) || qdq_float_bias(bv, x, w, m, b);
  }
  /* MatMul: B [K, N] constant, per tensor or per column (axis 1) */
  kiln_value *bv = kiln_node_input(p, 1);
  return kiln_value_type(bv)->rank == 2 &&
         qdq_match_dq(kiln_node_input(p, 0), false, -1, false, x) &&
         qdq_match_dq(bv, false, 1, true, w);
}

static kiln_status qdq_node(kiln_function *f, kiln_node *qn, const kiln_pass_options *o,
                            bool *done) {
  qdq_operand y, x, w, b;
  kiln_node *relu = NULL, *p = NULL;
  bool has_b = false;
  if (!qdq_match_q(qn, &y) || !(p = qdq_producer(kiln_node_input(qn, 0), &relu)) ||
      !qdq_match_operands(p, &x, &w, &b, &has_b))
    return NULL;
  bool conv = kiln_node_get_kind(p) == KILN_NODE_Conv;
  kiln_value *ins[9];
  uint32_t n_in = 0;
  if (has_b && !b.q)
    KILN_TRY(qdq_int_bias(kiln_function_module(f), &x, &w, &b));
  KILN_TRY(qdq_inputs(kiln_function_module(f), &x, &w, &y, has_b ? &b : NULL, ins, &n_in));
  kiln_attr_desc *d = NULL;
  uint32_t nd = 0;
  if (conv) /* the window attributes carry over as they are */
    KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(p), 0, &d, &nd));
  kiln_value *fused = NULL;
  char nm[256];
  kiln_status s = kiln_pass_emit_named(f, qn, kiln_pass_merged_name(p, relu ? 2 : 1, nm, sizeof nm),
                                       conv ? KILN_NODE_QLinearConv : KILN_NODE_QLinearMatMul, ins,
                                       n_in, d, nd, &fused);
  free(d);
  if (s)
    return kiln_status_wrap(s, "fuseqdq: fusing '%s' with its quantize nodes", kiln_node_name(p));
  kiln_node *fn = kiln_value_producer(fused, NULL);
  if (o->supports_node && !o->supports_node(o->backend_user, fn))
    return kiln_function_remove_node(f, fn);
  kiln_value *r = fused;
  if (relu) {
    KILN_TRY(qdq_relu(f, o, qn, relu, &y, fused, &r));
    if (!r)
      return kiln_function_remove_node(f, fn);
  }
  KILN_TRY(kiln_pass_replace_node(f, qn, &r));
  /* p and the DQs come before qn in the snapshot and were visited already */
  kiln_node *dqs[3] = {x.node, w.node, has_b ? b.node : NULL};
  KILN_TRY(qdq_remove(f, relu, p, dqs, 3));
  *done = true;
  return NULL;
}

bool kiln_pass_qdq_passes_through(kiln_node_kind k) {
  switch (k) {
  case KILN_NODE_MaxPool:
  case KILN_NODE_Reshape:
  case KILN_NODE_Flatten:
  case KILN_NODE_Transpose:
  case KILN_NODE_Squeeze:
  case KILN_NODE_Unsqueeze:
  case KILN_NODE_Identity:
    return true;
  default:
    return false;
  }
}

/* Equal per-tensor quantization parameters (an absent zero point is 0). */
static bool qdq_same_params(const qdq_operand *a, const qdq_operand *b) {
  if (qdq_load(a->scale, 0) != qdq_load(b->scale, 0) ||
      kiln_value_type(a->scale)->elem != kiln_value_type(b->scale)->elem)
    return false;
  double za = a->zp ? qdq_load(a->zp, 0) : 0, zb = b->zp ? qdq_load(b->zp, 0) : 0;
  return za == zb;
}

/* qn = Q(P(DQ(q))) with P a node `ok` accepts whose first result only the
 * Q reads, both per tensor: P, with *y the Q's and *x the DQ's operand;
 * NULL otherwise. */
static kiln_node *qdq_sandwich(kiln_node *qn, bool (*ok)(const kiln_node *), qdq_operand *y,
                               qdq_operand *x) {
  if (!qdq_match_q(qn, y))
    return NULL;
  kiln_value *v = kiln_node_input(qn, 0);
  kiln_node *p = kiln_value_producer(v, NULL);
  if (!p || !ok(p) || kiln_value_use_count(v) != 1 || kiln_node_input(p, 0) == NULL ||
      !qdq_match_dq(kiln_node_input(p, 0), false, -1, false, x) ||
      !qdq_per_tensor(kiln_value_type(x->scale)))
    return NULL;
  return p;
}

static bool qdq_pass_ok(const kiln_node *p) {
  return kiln_pass_qdq_passes_through(kiln_node_get_kind(p));
}

/* Q(P(DQ(q))) with P a pass-through kind and the Q's parameters the DQ's:
 * P on the integers q directly, where the backend runs it on them. */
static kiln_status qdq_pass_node(kiln_function *f, kiln_node *qn, const kiln_pass_options *o,
                                 bool *done) {
  qdq_operand y, x;
  kiln_node *p = qdq_sandwich(qn, qdq_pass_ok, &y, &x);
  if (!p || kiln_value_type(x.q)->elem != kiln_value_type(y.q)->elem || !qdq_same_params(&x, &y))
    return NULL;
  for (uint32_t r = 1; r < kiln_node_result_count(p); r++) /* MaxPool's indices */
    if (kiln_value_use_count(kiln_node_result(p, r)) != 0)
      return NULL;
  kiln_value *ins[8];
  uint32_t ni = kiln_node_input_count(p);
  if (ni > 8)
    return NULL;
  for (uint32_t i = 0; i < ni; i++)
    ins[i] = i == 0 ? x.q : kiln_node_input(p, i);
  kiln_attr_desc *d = NULL;
  uint32_t nd = 0;
  KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(p), 0, &d, &nd));
  kiln_value *r = NULL;
  char nm[256];
  kiln_status s = kiln_pass_emit_named(f, qn, kiln_pass_merged_name(p, 0, nm, sizeof nm),
                                       kiln_node_get_kind(p), ins, ni, d, nd, &r);
  free(d);
  if (s)
    return kiln_status_wrap(s, "fuseqdq: '%s' on integers", kiln_node_name(p));
  kiln_node *pn = kiln_value_producer(r, NULL);
  if (o->supports_node && !o->supports_node(o->backend_user, pn))
    return kiln_function_remove_node(f, pn);
  KILN_TRY(kiln_pass_replace_node(f, qn, &r));
  kiln_node *dqs[1] = {x.node};
  KILN_TRY(qdq_remove(f, NULL, p, dqs, 1));
  *done = true;
  return NULL;
}

/* A function of one f32 value, elementwise: on 8-bit input it takes at
 * most 256 values, so it is a table. */
static bool qdq_tabulable(const kiln_node *p) {
  kiln_node_kind k = kiln_node_get_kind(p);
  if (k == KILN_NODE_Mish || k == KILN_NODE_Swish)
    return true;
  const kiln_node_kind_info *i = kiln_node_kind_get_info(k);
  return i && (i->flags & KILN_NK_UNARY) && k != KILN_NODE_Identity && k != KILN_NODE_Cast &&
         kiln_node_input_count(p) == 1 &&
         kiln_value_type(kiln_node_result(p, 0))->elem == KILN_F32;
}

/* Q(f(DQ(q))) with f elementwise and one input: Gather(T, q as an index)
 * with the 256-entry table T = Q(f(DQ(every value of q's type))), whose
 * nodes have constant inputs only, so that `fold` computes the table once
 * with the reference kernels. Exact by construction: each entry is the
 * QDQ graph's own result for that input. */
static kiln_status qdq_table_node(kiln_function *f, kiln_node *qn, const kiln_pass_options *o,
                                  bool *done) {
  qdq_operand y, x;
  kiln_node *p = qdq_sandwich(qn, qdq_tabulable, &y, &x);
  if (!p || qdq_is_const(x.q)) /* a constant input is fold's, not ours */
    return NULL;
  kiln_module *m = kiln_function_module(f);
  kiln_elem xe = kiln_value_type(x.q)->elem;
  double first = xe == KILN_U8 ? 0 : -128;
  int64_t n = 256;
  kiln_type ct;
  KILN_TRY(kiln_type_make(xe, 1, &n, &ct));
  uint8_t all[256];
  for (int i = 0; i < 256; i++)
    all[i] = (uint8_t)(int)(first + i); /* the two's complement bytes for i8 */
  kiln_value *cv = NULL;
  KILN_TRY(kiln_module_add_constant(m, NULL, &ct, all, &cv));
  kiln_attr_desc *d = NULL;
  uint32_t nd = 0;
  KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(p), 0, &d, &nd));
  kiln_value *din[3] = {cv, x.scale, x.zp}, *dv = NULL, *fv = NULL, *tv = NULL;
  kiln_status s = kiln_pass_emit(f, qn, KILN_NODE_DequantizeLinear, din, x.zp ? 3 : 2, NULL, 0,
                                 &dv);
  if (!s)
    s = kiln_pass_emit(f, qn, kiln_node_get_kind(p), &dv, 1, d, nd, &fv);
  free(d);
  kiln_value *qin[3] = {fv, y.scale, y.zp};
  if (!s)
    s = kiln_pass_emit(f, qn, KILN_NODE_QuantizeLinear, qin, y.zp ? 3 : 2, NULL, 0, &tv);
  kiln_value *idx = NULL, *r = NULL;
  kiln_attr_desc to = KILN_ATTR_T("to", KILN_I32);
  if (!s)
    s = kiln_pass_emit(f, qn, KILN_NODE_Cast, &x.q, 1, &to, 1, &idx);
  if (!s && first != 0) {
    kiln_value *off = NULL;
    s = kiln_pass_const_scalar(m, KILN_I32, -first, &off);
    kiln_value *ain[2] = {idx, off};
    if (!s)
      s = kiln_pass_emit(f, qn, KILN_NODE_Add, ain, 2, NULL, 0, &idx);
  }
  kiln_value *gin[2] = {tv, idx};
  kiln_attr_desc ax = KILN_ATTR_I("axis", 0);
  char nm[256];
  if (!s)
    s = kiln_pass_emit_named(f, qn, kiln_pass_merged_name(p, 0, nm, sizeof nm), KILN_NODE_Gather,
                             gin, 2, &ax, 1, &r);
  if (s)
    return kiln_status_wrap(s, "fuseqdq: tabulating '%s'", kiln_node_name(p));
  /* Where the backend would not run the lookup natively, undo it. */
  kiln_node *made[3] = {kiln_value_producer(r, NULL), kiln_value_producer(idx, NULL),
                        first != 0 ? kiln_value_producer(kiln_node_input(
                                                             kiln_value_producer(idx, NULL), 0),
                                                         NULL)
                                   : NULL};
  bool ok = true;
  for (int i = 0; i < 3 && ok; i++)
    ok = !made[i] || !o->supports_node || o->supports_node(o->backend_user, made[i]);
  if (!ok) {
    kiln_node *order[6] = {made[0], made[1], made[2], kiln_value_producer(tv, NULL),
                           kiln_value_producer(fv, NULL), kiln_value_producer(dv, NULL)};
    for (int i = 0; i < 6; i++)
      if (order[i])
        KILN_TRY(kiln_function_remove_node(f, order[i]));
    return NULL;
  }
  KILN_TRY(kiln_pass_replace_node(f, qn, &r));
  kiln_node *dqs[1] = {x.node};
  KILN_TRY(qdq_remove(f, NULL, p, dqs, 1));
  *done = true;
  return NULL;
}

static kiln_status qdq_any(kiln_function *f, kiln_node *qn, const kiln_pass_options *o,
                           bool *done) {
  KILN_TRY(qdq_node(f, qn, o, done));
  if (!*done)
    KILN_TRY(qdq_pass_node(f, qn, o, done));
  if (!*done)
    KILN_TRY(qdq_table_node(f, qn, o, done));
  return NULL;
}

kiln_status kiln_pass_fuse_qdq(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  if (!o)
    return NULL;
  return kiln_pass_each_node(f, o, qdq_any, changes);
}
