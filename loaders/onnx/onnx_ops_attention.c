/* onnx_ops_attention.c: importer of ONNX Attention (opsets 23 to 25). kiln
 * has no attention node kind, so the operator is expanded into MatMul,
 * Transpose, Reshape, Softmax, Where ... the way the ONNX function body
 * computes it. Shapes are static, so every shape decision (3-D or 4-D
 * inputs, head repetition for GQA/MQA, past key/value concatenation, the
 * causal mask, mask padding) is taken here in C and masks that depend only
 * on shapes become constants. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

typedef struct attn_ctx {
  onnx_expand x;
  kiln_elem t; /* element type of Q, K, V and of every float output */
} attn_ctx;

static kiln_status attn_err(const attn_ctx *c, kiln_code code, const char *why) {
  return kiln_status_make(code, "%s: node %s: Attention: %s", c->x.L->file, onnx_node_desc(c->x.n),
                          why);
}

static kiln_status attn_where(attn_ctx *c, kiln_value *cond, kiln_value *x, kiln_value *y,
                              kiln_value **out) {
  kiln_value *in[3] = {cond, x, y};
  kiln_node *r;
  KILN_TRY(onnx_emit_helper(c->x.L, c->x.n, KILN_NODE_Where, in, 3, NULL, 0, &r));
  *out = kiln_node_result(r, 0);
  return NULL;
}

/* A constant of element type e and the given shape; vals NULL fills every
 * element with `fill`. */
static kiln_status attn_const(attn_ctx *c, kiln_elem e, uint32_t rank, const int64_t *dims,
                              const double *vals, double fill, kiln_value **out) {
  kiln_type t;
  KILN_TRY(kiln_type_make(e, rank, dims, &t));
  int64_t n = kiln_type_numel(&t);
  void *data = calloc(n ? (size_t)kiln_type_bytes(&t) : 1, 1);
  if (!data)
    return attn_err(c, KILN_OUT_OF_MEMORY, "out of memory building a constant");
  for (int64_t i = 0; i < n; i++)
    kiln_elem_store_f64(e, data, i, vals ? vals[i] : fill);
  kiln_status s = onnx_add_constant(c->x.L, &t, data, out);
  free(data);
  return s;
}

static kiln_status attn_scalar(attn_ctx *c, double v, kiln_value **out) {
  return attn_const(c, c->t, 0, NULL, NULL, v, out);
}

/* Bind ONNX output i (when the model asks for it) through a named Identity,
 * so that the graph output keeps the ONNX name even when v is an input. */
static kiln_status attn_bind(attn_ctx *c, uint32_t i, kiln_value *v) {
  const Onnx__NodeProto *n = c->x.n;
  if (i >= n->n_output || !n->output[i][0])
    return NULL;
  if (onnx_map_find(c->x.L, n->output[i]) || kiln_module_find_value(c->x.L->m, n->output[i]))
    return kiln_status_make(KILN_PARSE_ERROR, "%s: node %s: output '%s' is defined twice",
                            c->x.L->file, onnx_node_desc(n), n->output[i]);
  const char *names[1] = {n->output[i]};
  kiln_node *r;
  kiln_status s = kiln_function_add_node_named(c->x.L->f, KILN_NODE_Identity, NULL, &v, 1, NULL, 0,
                                               1, names, &r);
  if (s)
    return kiln_status_wrap(s, "%s: node %s: output %u", c->x.L->file, onnx_node_desc(n), i);
  return onnx_map_put(c->x.L, n->output[i], kiln_node_result(r, 0), -1);
}

/* 3-D [B, S, heads*size] -> 4-D [B, heads, S, size]. */
static kiln_status attn_split_heads(attn_ctx *c, kiln_value *x, int64_t heads, const char *what,
                                    kiln_value **out) {
  const kiln_type *t = kiln_value_type(x);
  if (heads <= 0 || t->dims[2] % heads)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: node %s: Attention: 3-D %s has last dimension %lld, not a "
                            "multiple of its number of heads %lld (set q_num_heads and "
                            "kv_num_heads for 3-D inputs)",
                            c->x.L->file, onnx_node_desc(c->x.n), what, (long long)t->dims[2],
                            (long long)heads);
  int64_t shape[4] = {t->dims[0], t->dims[1], heads, t->dims[2] / heads};
  static const int64_t perm[4] = {0, 2, 1, 3};
  kiln_value *r;
  KILN_TRY(onnx_expand_ints(&c->x, KILN_NODE_Reshape, "shape", x, shape, 4, &r));
  return onnx_expand_ints(&c->x, KILN_NODE_Transpose, "perm", r, perm, 4, out);
}

/* Repeat each of the kvh heads of x [B, kvh, L, D] rep times (GQA / MQA):
 * query head h reads kv head h / rep. */
static kiln_status attn_repeat_heads(attn_ctx *c, kiln_value *x, int64_t rep, kiln_value **out) {
  if (rep == 1) {
    *out = x;
    return NULL;
  }
  const kiln_type *t = kiln_value_type(x);
  int64_t b = t->dims[0], h = t->dims[1], l = t->dims[2], d = t->dims[3];
  static const int64_t axis2[1] = {2};
  int64_t wide[5] = {b, h, rep, l, d}, flat[4] = {b, h * rep, l, d};
  kiln_value *u, *e;
  KILN_TRY(onnx_expand_ints(&c->x, KILN_NODE_Unsqueeze, "axes", x, axis2, 1, &u));
  KILN_TRY(onnx_expand_ints(&c->x, KILN_NODE_Expand, "shape", u, wide, 5, &e));
  return onnx_expand_ints(&c->x, KILN_NODE_Reshape, "shape", e, flat, 4, out);
}

/* The additive bias from attn_mask: a bool mask becomes 0 / -inf, a float
 * mask is used as is; a mask shorter than the total kv length is padded
 * with -inf on its last axis (the padded keys take no part). */
static kiln_status attn_mask_bias(attn_ctx *c, kiln_value *mask, int64_t total, kiln_value **out) {
  const kiln_type *mt = kiln_value_type(mask);
  if (mt->rank < 1 || mt->rank > 4)
    return attn_err(c, KILN_INVALID_ARGUMENT, "attn_mask must have rank 1 to 4");
  kiln_value *bias = mask;
  if (mt->elem == KILN_BOOL) {
    kiln_value *zero, *ninf;
    KILN_TRY(attn_scalar(c, 0.0, &zero));
    KILN_TRY(attn_scalar(c, -INFINITY, &ninf));
    KILN_TRY(attn_where(c, mask, zero, ninf, &bias));
  } else if (kiln_elem_is_float(mt->elem)) {
    if (mt->elem != c->t) {
      kiln_attr_desc to = KILN_ATTR_T("to", c->t);
      KILN_TRY(onnx_expand_op(&c->x, KILN_NODE_Cast, mask, NULL, &to, 1, &bias));
    }
  } else {
    return attn_err(c, KILN_UNIMPLEMENTED, "attn_mask must be bool or a float type");
  }
  int64_t last = mt->dims[mt->rank - 1];
  if (last > total)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: node %s: Attention: attn_mask's last dimension %lld exceeds the "
                            "total kv sequence length %lld",
                            c->x.L->file, onnx_node_desc(c->x.n), (long long)last,
                            (long long)total);
  if (last < total) {
    int64_t dims[KILN_MAX_RANK];
    memcpy(dims, mt->dims, sizeof(int64_t) * mt->rank);
    dims[mt->rank - 1] = total - last;
    kiln_value *pad;
    KILN_TRY(attn_const(c, c->t, mt->rank, dims, NULL, -INFINITY, &pad));
    kiln_attr_desc ax = KILN_ATTR_I("axis", (int64_t)mt->rank - 1);
    KILN_TRY(onnx_expand_op(&c->x, KILN_NODE_Concat, bias, pad, &ax, 1, &bias));
  }
  *out = bias;
  return NULL;
}

/* Causal mask [S, total]: query i (at absolute position past + i) sees keys
 * 0 .. past + i. */
static kiln_status attn_causal(attn_ctx *c, int64_t s, int64_t total, int64_t past,
                               kiln_value **out) {
  if (s * total > (1 << 24))
    return attn_err(c, KILN_OUT_OF_RANGE, "causal mask too large to build as a constant");
  double *v = malloc((size_t)(s * total > 0 ? s * total : 1) * sizeof *v);
  if (!v)
    return attn_err(c, KILN_OUT_OF_MEMORY, "out of memory building the causal mask");
  for (int64_t i = 0; i < s; i++)
    for (int64_t j = 0; j < total; j++)
      v[i * total + j] = j > i + past ? -INFINITY : 0.0;
  int64_t dims[2] = {s, total};
  kiln_status st = attn_const(c, c->t, 2, dims, v, 0, out);
  free(v);
  return st;
}

/* Opset 24's nonpad_kv_seqlen [B]: keys at positions >= nonpad[b] of batch
 * b are masked; a [B, 1, 1, L] bias computed at run time. */
static kiln_status attn_nonpad(attn_ctx *c, kiln_value *np, int64_t b, int64_t l,
                               kiln_value **out) {
  const kiln_type *t = kiln_value_type(np);
  if (t->rank != 1 || t->dims[0] != b)
    return attn_err(c, KILN_INVALID_ARGUMENT, "nonpad_kv_seqlen must have shape [batch_size]");
  if (t->elem != KILN_I64) {
    kiln_attr_desc to = KILN_ATTR_T("to", KILN_I64);
    KILN_TRY(onnx_expand_op(&c->x, KILN_NODE_Cast, np, NULL, &to, 1, &np));
  }
  double *pos = malloc((size_t)(l ? l : 1) * sizeof *pos);
  if (!pos)
    return attn_err(c, KILN_OUT_OF_MEMORY, "out of memory");
  for (int64_t j = 0; j < l; j++)
    pos[j] = (double)j;
  int64_t rdims[2] = {1, l}, col[2] = {b, 1}, bias4[4] = {b, 1, 1, l};
  kiln_value *range, *npc, *keep, *zero, *ninf, *m;
  kiln_status s = attn_const(c, KILN_I64, 2, rdims, pos, 0, &range);
  free(pos);
  KILN_TRY(s);
  KILN_TRY(onnx_expand_ints(&c->x, KILN_NODE_Reshape, "shape", np, col, 2, &npc));
  KILN_TRY(onnx_expand_op(&c->x, KILN_NODE_Less, range, npc, NULL, 0, &keep));
  KILN_TRY(attn_scalar(c, 0.0, &zero));
  KILN_TRY(attn_scalar(c, -INFINITY, &ninf));
  KILN_TRY(attn_where(c, keep, zero, ninf, &m));
  return onnx_expand_ints(&c->x, KILN_NODE_Reshape, "shape", m, bias4, 4, out);
}

static kiln_status attn_add_bias(attn_ctx *c, kiln_value **bias, kiln_value *more) {
  if (!*bias) {
    *bias = more;
    return NULL;
  }
  return onnx_expand_op(&c->x, KILN_NODE_Add, *bias, more, NULL, 0, bias);
}

/* Inputs, checked and brought to the 4-D [B, heads, S, size] form. */
typedef struct attn_io {
  kiln_value *q, *k, *v, *mask, *past_k, *past_v, *nonpad;
  int64_t rank, qh, kvh, b, s, kv_len, hs, vhs;
} attn_io;

static kiln_status attn_inputs(attn_ctx *c, attn_io *io) {
  onnx_loader *L = c->x.L;
  const Onnx__NodeProto *n = c->x.n;
  kiln_value **slot[7] = {&io->q, &io->k, &io->v, &io->mask, &io->past_k, &io->past_v, &io->nonpad};
  for (uint32_t i = 0; i < 7; i++)
    KILN_TRY(onnx_input(L, n, i, slot[i]));
  if (n->n_input > 7 || n->n_output > 4)
    return attn_err(c, KILN_INVALID_ARGUMENT, "more than 7 inputs or 4 outputs");
  if (!io->q || !io->k || !io->v)
    return attn_err(c, KILN_INVALID_ARGUMENT, "inputs Q, K and V are required");
  if (io->nonpad && L->opset < 24)
    return attn_err(c, KILN_INVALID_ARGUMENT, "nonpad_kv_seqlen needs opset 24");
  if (!io->past_k != !io->past_v)
    return attn_err(c, KILN_INVALID_ARGUMENT,
                    "past_key and past_value must be given together or not at all");
  const kiln_type *qt = kiln_value_type(io->q), *kt = kiln_value_type(io->k),
                  *vt = kiln_value_type(io->v);
  c->t = qt->elem;
  if (!kiln_elem_is_float(c->t))
    return attn_err(c, KILN_UNIMPLEMENTED, "Q, K and V must be a float type");
  if (kt->elem != c->t || vt->elem != c->t)
    return attn_err(c, KILN_INVALID_ARGUMENT, "Q, K and V must have one element type");
  io->rank = qt->rank;
  if ((io->rank != 3 && io->rank != 4) || kt->rank != qt->rank || vt->rank != qt->rank)
    return attn_err(c, KILN_INVALID_ARGUMENT, "Q, K and V must all be 3-D or all be 4-D");
  if (io->rank == 3) {
    io->qh = onnx_attr_int_or(n, "q_num_heads", 0);
    io->kvh = onnx_attr_int_or(n, "kv_num_heads", 0);
    KILN_TRY(attn_split_heads(c, io->q, io->qh, "Q", &io->q));
    KILN_TRY(attn_split_heads(c, io->k, io->kvh, "K", &io->k));
    KILN_TRY(attn_split_heads(c, io->v, io->kvh, "V", &io->v));
    qt = kiln_value_type(io->q);
    kt = kiln_value_type(io->k);
    vt = kiln_value_type(io->v);
  }
  io->b = qt->dims[0];
  io->qh = qt->dims[1];
  io->s = qt->dims[2];
  io->hs = qt->dims[3];
  io->kvh = kt->dims[1];
  io->kv_len = kt->dims[2];
  io->vhs = vt->dims[3];
  if (kt->dims[0] != io->b || vt->dims[0] != io->b || kt->dims[3] != io->hs ||
      vt->dims[1] != io->kvh || vt->dims[2] != io->kv_len)
    return attn_err(c, KILN_INVALID_ARGUMENT,
                    "shapes of Q, K and V disagree (batch, heads, sequence or head size)");
  if (io->kvh <= 0 || io->qh % io->kvh)
    return attn_err(c, KILN_INVALID_ARGUMENT,
                    "the number of query heads must be a multiple of the number of kv heads");
  if (io->past_k) {
    const kiln_type *pk = kiln_value_type(io->past_k), *pv = kiln_value_type(io->past_v);
    if (pk->rank != 4 || pv->rank != 4 || pk->elem != c->t || pv->elem != c->t ||
        pk->dims[0] != io->b || pk->dims[1] != io->kvh || pk->dims[3] != io->hs ||
        pv->dims[0] != io->b || pv->dims[1] != io->kvh || pv->dims[2] != pk->dims[2] ||
        pv->dims[3] != io->vhs)
      return attn_err(c, KILN_INVALID_ARGUMENT,
                      "past_key / past_value must be [batch, kv_num_heads, past_length, "
                      "head_size] of Q's type, matching K and V");
    if (io->nonpad)
      return attn_err(c, KILN_UNIMPLEMENTED,
                      "nonpad_kv_seqlen together with past_key / past_value");
  }
  return NULL;
}

kiln_status onnx_imp_attention(onnx_loader *L, const Onnx__NodeProto *n, const onnx_op *op) {
  (void)op;
  attn_ctx c = {.x = {.L = L, .n = n}};
  attn_io io = {0};
  KILN_TRY(attn_inputs(&c, &io));
  int64_t mode = onnx_attr_int_or(n, "qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    return attn_err(&c, KILN_INVALID_ARGUMENT, "qk_matmul_output_mode must be 0, 1, 2 or 3");
  double softcap = onnx_attr_float_or(n, "softcap", 0.0);
  kiln_elem sm = c.t;
  if (onnx_node_attr(n, "softmax_precision")) {
    KILN_TRY(onnx_elem_from_dtype((int32_t)onnx_attr_int_or(n, "softmax_precision", 1),
                                  "softmax_precision", &sm));
    if (!kiln_elem_is_float(sm))
      return attn_err(&c, KILN_INVALID_ARGUMENT, "softmax_precision must be a float type");
  }

  /* The kv cache: past ++ new along the sequence axis. */
  kiln_value *key = io.k, *val = io.v;
  int64_t past = 0;
  if (io.past_k) {
    past = kiln_value_type(io.past_k)->dims[2];
    kiln_attr_desc ax = KILN_ATTR_I("axis", 2);
    KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Concat, io.past_k, io.k, &ax, 1, &key));
    KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Concat, io.past_v, io.v, &ax, 1, &val));
  }
  int64_t total = past + io.kv_len;

  /* Scale both factors by sqrt(scale), as the ONNX function does, which
   * keeps the products in range for low-precision types. */
  double scale =
      onnx_node_attr(n, "scale") ? onnx_attr_float_or(n, "scale", 1.0) : 1.0 / sqrt((double)io.hs);
  if (!(scale > 0) || !isfinite(scale))
    return attn_err(&c, KILN_INVALID_ARGUMENT, "scale must be positive and finite");
  kiln_value *sq, *qs, *kr, *vr, *kt, *ks, *qk;
  KILN_TRY(attn_scalar(&c, sqrt(scale), &sq));
  KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Mul, io.q, sq, NULL, 0, &qs));
  KILN_TRY(attn_repeat_heads(&c, key, io.qh / io.kvh, &kr));
  KILN_TRY(attn_repeat_heads(&c, val, io.qh / io.kvh, &vr));
  static const int64_t swap_last[4] = {0, 1, 3, 2};
  KILN_TRY(onnx_expand_ints(&c.x, KILN_NODE_Transpose, "perm", kr, swap_last, 4, &kt));
  KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Mul, kt, sq, NULL, 0, &ks));
  KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_MatMul, qs, ks, NULL, 0, &qk));
  kiln_value *stage[4] = {qk, qk, qk, qk}; /* what each qk_matmul_output_mode shows */

  if (softcap != 0.0) {
    if (!(softcap > 0) || !isfinite(softcap))
      return attn_err(&c, KILN_INVALID_ARGUMENT, "softcap must be positive and finite");
    kiln_value *cap, *d, *th;
    KILN_TRY(attn_scalar(&c, softcap, &cap));
    KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Div, qk, cap, NULL, 0, &d));
    KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Tanh, d, NULL, NULL, 0, &th));
    KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Mul, th, cap, NULL, 0, &qk));
  }
  stage[1] = stage[2] = qk;

  kiln_value *bias = NULL, *more;
  if (io.mask) {
    KILN_TRY(attn_mask_bias(&c, io.mask, total, &more));
    KILN_TRY(attn_add_bias(&c, &bias, more));
  }
  if (onnx_attr_int_or(n, "is_causal", 0)) {
    KILN_TRY(attn_causal(&c, io.s, total, past, &more));
    KILN_TRY(attn_add_bias(&c, &bias, more));
  }
  if (io.nonpad) {
    KILN_TRY(attn_nonpad(&c, io.nonpad, io.b, total, &more));
    KILN_TRY(attn_add_bias(&c, &bias, more));
  }
  if (bias)
    KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Add, qk, bias, NULL, 0, &qk));
  stage[2] = qk;

  kiln_value *p;
  kiln_attr_desc to_sm = KILN_ATTR_T("to", sm), to_t = KILN_ATTR_T("to", c.t);
  kiln_attr_desc last = KILN_ATTR_I("axis", -1);
  if (sm != c.t)
    KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Cast, qk, NULL, &to_sm, 1, &qk));
  KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Softmax, qk, NULL, &last, 1, &p));
  if (sm != c.t)
    KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_Cast, p, NULL, &to_t, 1, &p));
  stage[3] = p;

  kiln_value *y;
  KILN_TRY(onnx_expand_op(&c.x, KILN_NODE_MatMul, p, vr, NULL, 0, &y));
  if (io.rank == 3) {
    static const int64_t perm[4] = {0, 2, 1, 3};
    int64_t shape[3] = {io.b, io.s, io.qh * io.vhs};
    KILN_TRY(onnx_expand_ints(&c.x, KILN_NODE_Transpose, "perm", y, perm, 4, &y));
    KILN_TRY(onnx_expand_ints(&c.x, KILN_NODE_Reshape, "shape", y, shape, 3, &y));
  }
  KILN_TRY(attn_bind(&c, 0, y));
  KILN_TRY(attn_bind(&c, 1, key));
  KILN_TRY(attn_bind(&c, 2, val));
  return attn_bind(&c, 3, stage[mode]);
}
