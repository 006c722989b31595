/* passes/layout.c: the channel-blocked layout. Convolution regions of a
 * graph move into the layout [N, ceil(C/B), H, W, B] (kiln/node_kinds.def,
 * BlockChannels) where the backend declares it, so that its kernels read
 * B channels of one pixel as one vector and no convolution repacks its
 * input.
 *
 * 1. Each 2-D float Conv (any group count) becomes a BlockedConv for
 *    the first block size B of 16, 8, 4 whose BlockedConv the backend
 *    declares (o->supports_node): its input taken blocked (from the
 *    BlockedConv or region that made it, else through a BlockChannels; a
 *    Conv of at most 4 input channels, a stem, reads its plain input
 *    directly), its fused residual likewise, and an UnblockChannels after
 *    it for the consumers.
 * 2. Nodes that compute channel by channel follow their blocked inputs
 *    into the layout, in graph order: elementwise kinds of one result of
 *    the input's shape (their other operands blocked too, or scalars),
 *    Max/AveragePool (as the 3-D pool with a window of 1 over the block)
 *    and the global pools (the same with the whole plane as the window),
 *    Concat on channels where every input but the last fills whole
 *    blocks, BatchNormalization with constant parameters (as a Mul and
 *    an Add of blocked per-channel constants), and ReduceMean over the
 *    plane (as the global average pool, reshaped where keepdims = 0).
 *    Each again only where the backend declares the rewritten node.
 * A value that a consumer needs plain keeps its UnblockChannels; the
 * others die (dce). Lanes past C hold whatever the kinds compute from the
 * zeros a BlockChannels or BlockedConv put there; no node reads them as
 * data (a convolution skips them, an UnblockChannels drops them). Without
 * o->supports_node the pass changes nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"

static const int64_t layout_blocks[] = {16, 8, 4};

/* v's block size when v is the plain view (UnblockChannels) of a blocked
 * value, which *blocked receives; else 0. */
static int64_t layout_blocked_of(const kiln_value *v, kiln_value **blocked) {
  kiln_node *p = v ? kiln_value_producer(v, NULL) : NULL;
  if (!p || kiln_node_get_kind(p) != KILN_NODE_UnblockChannels)
    return 0;
  kiln_value *b = kiln_node_input(p, 0);
  const kiln_type *t = kiln_value_type(b);
  if (blocked)
    *blocked = b;
  return t->dims[t->rank - 1];
}

/* Nodes made for one attempt, removed again (newest first) when the
 * backend declines the result. */
typedef struct layout_trial {
  kiln_node *made[72]; /* up to 64 inputs blocked, the node, its view */
  uint32_t n;
} layout_trial;

static kiln_status layout_undo(kiln_function *f, layout_trial *t) {
  while (t->n > 0) {
    kiln_node *n = t->made[--t->n];
    bool used = false;
    for (uint32_t i = 0; i < kiln_node_result_count(n); i++)
      used |= kiln_value_use_count(kiln_node_result(n, i)) > 0;
    if (!used)
      KILN_TRY(kiln_function_remove_node(f, n));
  }
  return NULL;
}

/* Add a node before `at`, recorded in t; its result 0 in *out. */
static kiln_status layout_emit(kiln_function *f, kiln_node *at, layout_trial *t, kiln_node_kind k,
                               kiln_value *const *in, uint32_t n_in, const kiln_attr_desc *a,
                               uint32_t na, kiln_value **out) {
  if (t->n == sizeof t->made / sizeof t->made[0])
    return kiln_status_make(KILN_INTERNAL, "layout: too many nodes in one rewrite");
  kiln_value *r = NULL;
  KILN_TRY(kiln_pass_emit(f, at, k, in, n_in, a, na, &r));
  t->made[t->n++] = kiln_value_producer(r, NULL);
  *out = r;
  return NULL;
}

/* v in the blocked layout of block B: the blocked value behind its
 * UnblockChannels, or a new BlockChannels of it. */
static kiln_status layout_block_value(kiln_function *f, kiln_node *at, layout_trial *t,
                                      kiln_value *v, int64_t B, kiln_value **out) {
  kiln_value *b = NULL;
  if (layout_blocked_of(v, &b) == B) {
    *out = b;
    return NULL;
  }
  kiln_attr_desc a = KILN_ATTR_I("block", B);
  return layout_emit(f, at, t, KILN_NODE_BlockChannels, &v, 1, &a, 1, out);
}

/* Replace n's result 0 by the plain view of blocked value y (C channels)
 * and remove n; or, when the backend declines the last node made, undo. */
static kiln_status layout_commit(kiln_function *f, const kiln_pass_options *o, kiln_node *n,
                                 layout_trial *t, kiln_value *y, int64_t C, bool *done) {
  *done = false;
  if (!o->supports_node(o->backend_user, kiln_value_producer(y, NULL)))
    return layout_undo(f, t);
  kiln_attr_desc a = KILN_ATTR_I("channels", C);
  kiln_value *plain = NULL;
  KILN_TRY(kiln_pass_emit(f, n, KILN_NODE_UnblockChannels, &y, 1, &a, 1, &plain));
  KILN_TRY(kiln_pass_replace_node(f, n, &plain));
  *done = true;
  return NULL;
}

/* ---- 1. convolutions ---- */
static bool layout_conv_applies(const kiln_node *n) {
  if (kiln_node_get_kind(n) != KILN_NODE_Conv || kiln_node_result_count(n) != 1)
    return false;
  const kiln_type *x = kiln_value_type(kiln_node_input(n, 0));
  const kiln_type *w = kiln_value_type(kiln_node_input(n, 1));
  if (x->rank != 4 || w->rank != 4 || !kiln_elem_is_float(x->elem))
    return false;
  /* any group count: whether a grouped one runs blocked is the backend's
   * call (kiln_plugin_supports keeps it from plugins before ABI 1.7) */
  return kiln_attrs_int_or(kiln_node_attrs(n), "group", 1) >= 1;
}

static kiln_status layout_conv(kiln_function *f, kiln_node *n, const kiln_pass_options *o,
                               bool *done) {
  *done = false;
  if (!layout_conv_applies(n))
    return NULL;
  kiln_value *x = kiln_node_input(n, 0);
  int64_t C = kiln_value_type(x)->dims[1], M = kiln_value_type(kiln_node_result(n, 0))->dims[1];
  int64_t g = kiln_attrs_int_or(kiln_node_attrs(n), "group", 1);
  uint32_t n_in = kiln_node_input_count(n);
  kiln_attr_desc *d = NULL;
  uint32_t nd = 0;
  KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(n), 1, &d, &nd));
  kiln_status s = NULL;
  for (size_t bi = 0; bi < sizeof layout_blocks / sizeof *layout_blocks && !s && !*done; bi++) {
    int64_t B = layout_blocks[bi];
    layout_trial t = {.n = 0};
    kiln_value *in[4] = {x, kiln_node_input(n, 1), n_in > 2 ? kiln_node_input(n, 2) : NULL,
                         n_in > 3 ? kiln_node_input(n, 3) : NULL};
    /* a stem's few channels are read plain rather than padded to a block */
    if (g > 1 || C > 4 || layout_blocked_of(x, NULL) == B)
      s = layout_block_value(f, n, &t, x, B, &in[0]);
    if (!s && in[3])
      s = layout_block_value(f, n, &t, in[3], B, &in[3]);
    d[nd] = KILN_ATTR_I("block", B);
    kiln_value *y = NULL;
    if (!s)
      s = layout_emit(f, n, &t, KILN_NODE_BlockedConv, in, n_in, d, nd + 1, &y);
    if (!s)
      s = layout_commit(f, o, n, &t, y, M, done);
  }
  free(d);
  return s ? kiln_status_wrap(s, "layout: Conv '%s'", kiln_node_name(n)) : NULL;
}

/* ---- 2. the nodes that follow their inputs into the layout ---- */
static bool layout_elementwise(kiln_node_kind k) {
  const kiln_node_kind_info *i = kiln_node_kind_get_info(k);
  if (k == KILN_NODE_Cast || k == KILN_NODE_IsInf || k == KILN_NODE_IsNaN || k == KILN_NODE_Not)
    return false;
  return (i && (i->flags & (KILN_NK_UNARY | KILN_NK_BINARY | KILN_NK_VARIADIC))) ||
         k == KILN_NODE_Clip || k == KILN_NODE_Swish || k == KILN_NODE_Mish;
}

/* An INTS attribute of exactly `len` entries, or NULL. */
static const int64_t *layout_ints(const kiln_attrs *a, const char *name, uint32_t len) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  return at && kiln_attr_len(at) == len ? kiln_attr_ints(at) : NULL;
}

/* A pool's window attributes for the blocked input: one more spatial
 * dimension, the block, with a window of 1 (a global pool: the plane). */
static void layout_pool_attrs(const kiln_node *n, const kiln_type *x, kiln_attr_desc *d,
                              uint32_t *nd, int64_t *store) {
  const kiln_attrs *a = kiln_node_attrs(n);
  kiln_node_kind k = kiln_node_get_kind(n);
  bool global = k == KILN_NODE_GlobalAveragePool || k == KILN_NODE_GlobalMaxPool ||
                k == KILN_NODE_ReduceMean;
  int64_t *ks = store, *st = store + 3, *dl = store + 6, *pd = store + 9;
  const int64_t *p = NULL;
  for (int i = 0; i < 2; i++) {
    ks[i] = global ? x->dims[2 + i] : 1;
    st[i] = dl[i] = 1;
    pd[i] = pd[3 + i] = 0;
  }
  ks[2] = st[2] = dl[2] = 1;
  pd[2] = pd[5] = 0;
  *nd = 0;
  if (!global) {
    if ((p = layout_ints(a, "kernel_shape", 2)))
      ks[0] = p[0], ks[1] = p[1];
    if ((p = layout_ints(a, "strides", 2)))
      st[0] = p[0], st[1] = p[1];
    if ((p = layout_ints(a, "dilations", 2)))
      dl[0] = p[0], dl[1] = p[1];
    if ((p = layout_ints(a, "pads", 4)))
      pd[0] = p[0], pd[1] = p[1], pd[3] = p[2], pd[4] = p[3];
    const char *ap = kiln_attrs_string_or(a, "auto_pad", NULL);
    if (ap)
      d[(*nd)++] = KILN_ATTR_S("auto_pad", ap);
    d[(*nd)++] = KILN_ATTR_I("ceil_mode", kiln_attrs_int_or(a, "ceil_mode", 0));
    if (k == KILN_NODE_AveragePool)
      d[(*nd)++] = KILN_ATTR_I("count_include_pad", kiln_attrs_int_or(a, "count_include_pad", 0));
  }
  d[(*nd)++] = KILN_ATTR_IS("dilations", dl, 3);
  d[(*nd)++] = KILN_ATTR_IS("kernel_shape", ks, 3);
  if (!kiln_attrs_string_or(a, "auto_pad", NULL) || global)
    d[(*nd)++] = KILN_ATTR_IS("pads", pd, 6);
  d[(*nd)++] = KILN_ATTR_IS("strides", st, 3);
}

/* May operand v (of node n, whose result is plain [N, C, H, W]) join the
 * blocked form: a scalar stays as it is (*keep), a per-channel or full
 * operand of rank 4 is blocked. */
static bool layout_operand_ok(const kiln_value *v, const kiln_type *y, bool *keep) {
  const kiln_type *t = kiln_value_type(v);
  *keep = kiln_type_numel(t) == 1 && t->rank <= 4;
  if (*keep)
    return true;
  if (t->rank != 4 || t->dims[1] != y->dims[1] || !kiln_elem_is_float(t->elem))
    return false;
  for (uint32_t i = 0; i < 4; i++)
    if (i != 1 && t->dims[i] != 1 && t->dims[i] != y->dims[i])
      return false;
  return true;
}

static kiln_status layout_follow(kiln_function *f, kiln_node *n, const kiln_pass_options *o,
                                 bool *done) {
  *done = false;
  kiln_node_kind k = kiln_node_get_kind(n);
  bool pool = k == KILN_NODE_MaxPool || k == KILN_NODE_AveragePool ||
              k == KILN_NODE_GlobalAveragePool || k == KILN_NODE_GlobalMaxPool;
  bool concat = k == KILN_NODE_Concat;
  if ((!pool && !concat && !layout_elementwise(k)) || kiln_node_result_count(n) != 1)
    return NULL;
  const kiln_type *y = kiln_value_type(kiln_node_result(n, 0));
  uint32_t n_in = kiln_node_input_count(n);
  if (y->rank != 4 || !kiln_elem_is_float(y->elem) || n_in > 64)
    return NULL;
  /* the block size of the blocked inputs, which must agree; outside a
   * Concat each has the result's channels (a 1-channel map broadcast
   * over C channels would meet padding lanes in the blocked form) */
  int64_t B = 0;
  for (uint32_t i = 0; i < n_in; i++) {
    const kiln_value *v = kiln_node_input(n, i);
    int64_t b = layout_blocked_of(v, NULL);
    if (b && ((B && b != B) || (!concat && kiln_value_type(v)->dims[1] != y->dims[1])))
      return NULL;
    B = b ? b : B;
  }
  if (!B)
    return NULL;
  if (concat) {
    int64_t axis = kiln_attrs_int_or(kiln_node_attrs(n), "axis", 0);
    if (axis != 1 && axis != -3)
      return NULL;
    for (uint32_t i = 0; i + 1 < n_in; i++)
      if (kiln_value_type(kiln_node_input(n, i))->dims[1] % B)
        return NULL;
  }
  if (pool) {
    const kiln_type *x = kiln_value_type(kiln_node_input(n, 0));
    if (x->rank != 4 || kiln_attrs_int_or(kiln_node_attrs(n), "storage_order", 0) != 0)
      return NULL;
  }
  kiln_value **in = calloc(n_in ? n_in : 1, sizeof *in);
  if (!in)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "layout: out of memory");
  layout_trial t = {.n = 0};
  kiln_status s = NULL;
  bool ok = true;
  for (uint32_t i = 0; i < n_in && ok && !s; i++) {
    kiln_value *v = kiln_node_input(n, i);
    bool keep = false;
    if (!v || (!concat && !pool && !layout_blocked_of(v, NULL) && !layout_operand_ok(v, y, &keep)))
      ok = v == NULL;
    else if (concat && !layout_blocked_of(v, NULL) &&
             (kiln_value_type(v)->rank != 4 || !kiln_elem_is_float(kiln_value_type(v)->elem)))
      ok = false;
    else if (keep)
      in[i] = v;
    else
      s = layout_block_value(f, n, &t, v, B, &in[i]);
  }
  kiln_value *r = NULL;
  if (!s && ok) {
    kiln_attr_desc *d = NULL, pd[8];
    uint32_t nd = 0;
    int64_t store[16];
    kiln_node_kind nk = k == KILN_NODE_GlobalAveragePool ? KILN_NODE_AveragePool
                        : k == KILN_NODE_GlobalMaxPool   ? KILN_NODE_MaxPool
                                                         : k;
    if (pool) {
      layout_pool_attrs(n, kiln_value_type(kiln_node_input(n, 0)), pd, &nd, store);
      d = pd;
      s = layout_emit(f, n, &t, nk, in, 1, d, nd, &r);
    } else {
      s = kiln_pass_attrs_descs(kiln_node_attrs(n), 0, &d, &nd);
      if (!s)
        s = layout_emit(f, n, &t, k, in, n_in, d, nd, &r);
      free(d);
    }
  }
  free(in);
  if (!s && ok)
    s = layout_commit(f, o, n, &t, r, y->dims[1], done);
  else if (!s)
    s = layout_undo(f, &t);
  return s ? kiln_status_wrap(s, "layout: %s '%s'", kiln_node_kind_name(k), kiln_node_name(n))
           : NULL;
}

/* BlockChannels of the plain view of a value of the same block: the
 * value itself. */
static kiln_status layout_cancel(kiln_function *f, kiln_node *n, const kiln_pass_options *o,
                                 bool *done) {
  (void)o;
  *done = false;
  if (kiln_node_get_kind(n) != KILN_NODE_BlockChannels)
    return NULL;
  kiln_value *b = NULL;
  if (layout_blocked_of(kiln_node_input(n, 0), &b) !=
      kiln_attrs_int_or(kiln_node_attrs(n), "block", 0))
    return NULL;
  KILN_TRY(kiln_pass_replace_node(f, n, &b));
  *done = true;
  return NULL;
}

/* A blocked constant [1, Cb, 1, 1, B] of per-channel values v[C] (lanes
 * past C zero). */
static kiln_status layout_channel_const(kiln_function *f, const kiln_type *like, int64_t C,
                                        int64_t B, const double *v, kiln_value **out) {
  int64_t Cb = (C + B - 1) / B, dims[5] = {1, Cb, 1, 1, B};
  kiln_type t;
  KILN_TRY(kiln_type_make(like->elem, 5, dims, &t));
  size_t es = kiln_elem_size(like->elem);
  char *data = calloc((size_t)(Cb * B), es);
  if (!data)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "layout: out of memory");
  for (int64_t c = 0; c < C; c++)
    kiln_pass_elem_set(data, like->elem, c, v[c]);
  kiln_status s = kiln_module_add_constant(kiln_function_module(f), NULL, &t, data, out);
  free(data);
  return s;
}

/* BatchNormalization (inference form, constant parameters) of a blocked
 * input: x * s + t with s = scale / sqrt(var + eps), t = B - mean * s as
 * blocked per-channel constants, a Mul and an Add that follow the input
 * into the layout (and the elementwise fusion after it). */
static kiln_status layout_batchnorm(kiln_function *f, kiln_node *n, const kiln_pass_options *o,
                                    bool *done) {
  *done = false;
  kiln_value *xb = NULL, *x = kiln_node_input(n, 0);
  int64_t B = layout_blocked_of(x, &xb);
  const kiln_type *xt = kiln_value_type(x);
  if (!B || xt->rank != 4 || kiln_node_result_count(n) != 1)
    return NULL;
  int64_t C = xt->dims[1];
  const void *p[4];
  for (uint32_t i = 0; i < 4; i++) {
    const kiln_value *v = kiln_node_input(n, i + 1);
    const kiln_type *t = kiln_value_type(v);
    p[i] = kiln_value_data(v);
    if (!p[i] || kiln_value_get_kind(v) != KILN_VALUE_CONSTANT || t->rank != 1 || t->dims[0] != C ||
        !kiln_elem_is_float(t->elem))
      return NULL;
  }
  double eps = kiln_attrs_float_or(kiln_node_attrs(n), "epsilon", 1e-5);
  double *st = malloc(sizeof(double) * (size_t)(2 * C));
  if (!st)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "layout: out of memory");
  for (int64_t c = 0; c < C; c++) {
    double g = kiln_elem_load_f64(kiln_value_type(kiln_node_input(n, 1))->elem, p[0], c);
    double b = kiln_elem_load_f64(kiln_value_type(kiln_node_input(n, 2))->elem, p[1], c);
    double m = kiln_elem_load_f64(kiln_value_type(kiln_node_input(n, 3))->elem, p[2], c);
    double v = kiln_elem_load_f64(kiln_value_type(kiln_node_input(n, 4))->elem, p[3], c);
    st[c] = g / sqrt(v + eps);
    st[C + c] = b - m * st[c];
  }
  kiln_value *sc = NULL, *tc = NULL, *y = NULL;
  layout_trial t = {.n = 0};
  kiln_status s = layout_channel_const(f, xt, C, B, st, &sc);
  if (!s)
    s = layout_channel_const(f, xt, C, B, st + C, &tc);
  free(st);
  kiln_value *in[2] = {xb, sc};
  if (!s)
    s = layout_emit(f, n, &t, KILN_NODE_Mul, in, 2, NULL, 0, &y);
  in[0] = y, in[1] = tc;
  if (!s && !o->supports_node(o->backend_user, kiln_value_producer(y, NULL)))
    return layout_undo(f, &t);
  if (!s)
    s = layout_emit(f, n, &t, KILN_NODE_Add, in, 2, NULL, 0, &y);
  if (!s)
    s = layout_commit(f, o, n, &t, y, C, done);
  return s ? kiln_status_wrap(s, "layout: BatchNormalization '%s'", kiln_node_name(n)) : NULL;
}

/* ReduceMean over the plane (axes 2 and 3, no axes input) of a rank-4
 * float image: MNASNet's and ShuffleNetV2's x.mean([2, 3]). */
static bool layout_plane_mean(const kiln_node *n) {
  if (kiln_node_get_kind(n) != KILN_NODE_ReduceMean || kiln_node_result_count(n) != 1 ||
      kiln_node_input_count(n) != 1)
    return false;
  const kiln_type *x = kiln_value_type(kiln_node_input(n, 0));
  const int64_t *ax = layout_ints(kiln_node_attrs(n), "axes", 2);
  if (x->rank != 4 || !kiln_elem_is_float(x->elem) || !ax)
    return false;
  int64_t a0 = ax[0] < 0 ? ax[0] + 4 : ax[0], a1 = ax[1] < 0 ? ax[1] + 4 : ax[1];
  return (a0 == 2 && a1 == 3) || (a0 == 3 && a1 == 2);
}

/* A plane mean of a blocked image: the global average pool's blocked
 * form, then the plain view, reshaped to [N, C] where keepdims = 0 (it
 * would otherwise wait for an UnblockChannels of the whole image and run
 * as a plain reduction). */
static kiln_status layout_reduce_mean(kiln_function *f, kiln_node *n, const kiln_pass_options *o,
                                      bool *done) {
  *done = false;
  kiln_value *xb = NULL, *x = kiln_node_input(n, 0);
  int64_t B = layout_blocked_of(x, &xb);
  if (!B || !layout_plane_mean(n))
    return NULL;
  const kiln_type *xt = kiln_value_type(x), *yt = kiln_value_type(kiln_node_result(n, 0));
  kiln_attr_desc pd[8];
  uint32_t nd = 0;
  int64_t store[16];
  layout_pool_attrs(n, xt, pd, &nd, store);
  layout_trial t = {.n = 0};
  kiln_value *p = NULL, *plain = NULL, *r = NULL;
  kiln_status s = layout_emit(f, n, &t, KILN_NODE_AveragePool, &xb, 1, pd, nd, &p);
  if (!s && kiln_attrs_int_or(kiln_node_attrs(n), "keepdims", 1))
    s = layout_commit(f, o, n, &t, p, xt->dims[1], done);
  else if (!s && !o->supports_node(o->backend_user, kiln_value_producer(p, NULL)))
    s = layout_undo(f, &t);
  else if (!s) {
    kiln_attr_desc ua = KILN_ATTR_I("channels", xt->dims[1]);
    kiln_attr_desc ra[2] = {KILN_ATTR_I("allowzero", 0), KILN_ATTR_IS("shape", yt->dims, yt->rank)};
    s = kiln_pass_emit(f, n, KILN_NODE_UnblockChannels, &p, 1, &ua, 1, &plain);
    if (!s)
      s = kiln_pass_emit(f, n, KILN_NODE_Reshape, &plain, 1, ra, 2, &r);
    if (!s)
      s = kiln_pass_replace_node(f, n, &r);
    *done = !s;
  }
  return s ? kiln_status_wrap(s, "layout: ReduceMean '%s'", kiln_node_name(n)) : NULL;
}

/* In graph order, so that a node sees its inputs' final layout. */
static kiln_status layout_node(kiln_function *f, kiln_node *n, const kiln_pass_options *o,
                               bool *done) {
  if (kiln_node_get_kind(n) == KILN_NODE_Conv)
    return layout_conv(f, n, o, done);
  if (kiln_node_get_kind(n) == KILN_NODE_BatchNormalization)
    return layout_batchnorm(f, n, o, done);
  if (kiln_node_get_kind(n) == KILN_NODE_ReduceMean)
    return layout_reduce_mean(f, n, o, done);
  return layout_follow(f, n, o, done);
}

kiln_status kiln_pass_layout(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  if (!o || !o->supports_node)
    return NULL;
  KILN_TRY(kiln_pass_each_node(f, o, layout_node, changes));
  return kiln_pass_each_node(f, o, layout_cancel, changes);
}
