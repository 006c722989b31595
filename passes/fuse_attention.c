/* passes/fuse_attention.c: attention fusion (`fuseattn`). Exporters write
 * scaled dot-product attention as
 *   Softmax(scale(Q · Kᵀ) [+ mask | Where(mask, scores, fill)], axis -1) · V
 * with Q, K, V [B, H, S, D] reached through the head split (Reshape +
 * Transpose copies) and the result sent through the head merge (Transpose +
 * Reshape). A backend with an attention kernel runs that as one pass over
 * cache-resident tiles instead of materializing the scores, so this pass
 * rebuilds one ScaledDotProductAttention node where the backend's
 * supports_node takes it. Q, K and V are traced back through their
 * Transposes and Reshapes to the deepest tensor of which they are a
 * Reshape + Transpose view; the node reads that tensor through a perm
 * attribute, so the head-split copies and Kᵀ go dead, and a Transpose that
 * is the product's only use (the head merge) becomes out_perm. Where the
 * walk ends at a Gather of one constant index or at a Split (Q, K and V
 * taken apart from one QKV projection), the node reads the tensor gathered
 * from or split through a gather attribute, so those copies go dead too
 * (a part of a Split is a gathered slice where its start is a multiple of
 * its extent, and that extent divides the axis). The scale may
 * be a Mul or Div of the scores by a constant, or of Q and K separately
 * (torch's sqrt(sqrt(d)) on both): the constants multiply. swin's window
 * mask, added to the scores seen as [1, windows, H, S, S], joins the mask.
 * Every
 * intermediate must be used only inside the chain. A MatMul of a Softmax
 * result that does not match is noted on opts->log with the reason. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"

#define FA_MAX_CHAIN 12

typedef struct fa_view {
  kiln_value *base;  /* the tensor read */
  int64_t src[5];    /* base reshaped to src (a view; 4-D, or 5-D when gathered) ... */
  int64_t gather[2]; /* ... taken at index gather[1] on axis gather[0] (-1: no Gather) ... */
  int64_t perm[4];   /* ... then transposed by perm is the logical operand */
  bool transposed;   /* a Transpose was crossed on the way */
} fa_view;

static kiln_node *fa_prod(const kiln_value *v) {
  return v ? kiln_value_producer(v, NULL) : NULL;
}

static kiln_node_kind fa_kind(const kiln_value *v) {
  kiln_node *p = fa_prod(v);
  return p ? kiln_node_get_kind(p) : KILN_NODE_KIND_COUNT;
}

/* A constant holding one value (any rank, every dim 1): its value. */
static bool fa_scalar_const(const kiln_value *v, double *out) {
  const kiln_type *t = kiln_value_type(v);
  return kiln_value_get_kind(v) == KILN_VALUE_CONSTANT && kiln_type_numel(t) == 1 &&
         kiln_pass_const_splat(v, out);
}

/* Peels Mul / Div by a scalar constant off v (each result used once, the
 * shape unchanged), multiplying *scale. */
static kiln_value *fa_peel_scale(kiln_value *v, double *scale) {
  for (int guard = 0; guard < 4; guard++) {
    kiln_node *p = fa_prod(v);
    if (!p || kiln_value_use_count(v) != 1)
      return v;
    kiln_node_kind k = kiln_node_get_kind(p);
    if (k != KILN_NODE_Mul && k != KILN_NODE_Div)
      return v;
    kiln_value *a = kiln_node_input(p, 0), *b = kiln_node_input(p, 1), *x = NULL;
    double c;
    if (fa_scalar_const(b, &c))
      x = a;
    else if (k == KILN_NODE_Mul && fa_scalar_const(a, &c))
      x = b;
    if (!x || !kiln_type_equal(kiln_value_type(x), kiln_value_type(v)) || c == 0 || !isfinite(c))
      return v;
    *scale *= k == KILN_NODE_Mul ? c : 1.0 / c;
    v = x;
  }
  return v;
}

/* Strides of a reshape of a strided view, where it is still one (the
 * chunking rule: each run of old dims that is contiguous in itself must
 * split into whole new dims). */
static bool fa_reshape_view(uint32_t rank, const int64_t *dims, const int64_t *st,
                            uint32_t nrank, const int64_t *ndims, int64_t *nst) {
  if (rank == 0)
    return false;
  int vd = (int)nrank - 1;
  int64_t base = st[rank - 1], tn = 1, vn = 1;
  for (int td = (int)rank - 1; td >= 0; td--) {
    tn *= dims[td];
    if (td == 0 || (dims[td - 1] != 1 && st[td - 1] != tn * base)) {
      while (vd >= 0 && (vn < tn || ndims[vd] == 1)) {
        nst[vd] = vn * base;
        vn *= ndims[vd];
        vd--;
      }
      if (vn != tn)
        return false;
      if (td > 0) {
        base = st[td - 1];
        tn = vn = 1;
      }
    }
  }
  return vd == -1;
}

/* Replays chain[from..0] (Transposes and Reshapes, last applied first in
 * the array's reverse) over a view of `rank` dims d0 and strides s0,
 * giving the 4-D view's strides; false when a Reshape stops being a
 * view. */
static bool fa_replay(kiln_node **chain, int from, uint32_t rank, const int64_t *d0,
                      const int64_t *s0, int64_t *dims, int64_t *st, bool *transposed) {
  int64_t d[KILN_MAX_RANK], s[KILN_MAX_RANK];
  memcpy(d, d0, sizeof(int64_t) * rank);
  memcpy(s, s0, sizeof(int64_t) * rank);
  *transposed = false;
  for (int c = from; c >= 0; c--) {
    kiln_node *n = chain[c];
    const kiln_type *ot = kiln_value_type(kiln_node_result(n, 0));
    int64_t nd[KILN_MAX_RANK], ns[KILN_MAX_RANK];
    if (kiln_node_get_kind(n) == KILN_NODE_Transpose) {
      int64_t perm[KILN_MAX_RANK];
      kiln_pass_transpose_perm(n, rank, perm);
      for (uint32_t i = 0; i < rank; i++)
        nd[i] = d[perm[i]], ns[i] = s[perm[i]];
      *transposed = true;
    } else {
      memcpy(nd, ot->dims, sizeof(int64_t) * ot->rank);
      if (!fa_reshape_view(rank, d, s, ot->rank, nd, ns))
        return false;
    }
    rank = ot->rank;
    memcpy(d, nd, sizeof(int64_t) * rank);
    memcpy(s, ns, sizeof(int64_t) * rank);
  }
  if (rank != 4)
    return false;
  memcpy(dims, d, sizeof d[0] * 4);
  memcpy(st, s, sizeof s[0] * 4);
  return true;
}

/* The 4 axes of a view in storage order: those of size 1 first (their
 * strides do not matter), then the others by falling stride. Returns how
 * many of size 1 there are. */
static int fa_stride_order(const int64_t *dims, const int64_t *st, int *order) {
  int n = 0;
  for (int j = 0; j < 4; j++)
    if (dims[j] == 1)
      order[n++] = j;
  int first = n;
  for (int j = 0; j < 4; j++)
    if (dims[j] != 1) {
      int k = n++;
      while (k > first && st[order[k - 1]] < st[j]) {
        order[k] = order[k - 1];
        k--;
      }
      order[k] = j;
    }
  return first;
}

/* A 4-D strided view over `numel` contiguous elements as Transpose(
 * Reshape(base, src), perm): the axes ordered by falling stride must be
 * contiguous (unit axes go first; they may sit anywhere). */
static bool fa_as_reshape_transpose(const int64_t *dims, const int64_t *st, int64_t numel,
                                    int64_t *src, int64_t *perm) {
  int order[4], first = fa_stride_order(dims, st, order);
  int64_t expect = 1;
  for (int p = 3; p >= first; p--) {
    if (st[order[p]] != expect)
      return false;
    expect *= dims[order[p]];
  }
  if (expect != numel)
    return false;
  for (int p = 0; p < 4; p++) {
    src[p] = dims[order[p]];
    perm[order[p]] = p;
  }
  return true;
}

/* A 4-D strided view starting `off` elements into `numel` contiguous ones
 * as Transpose(Gather(Reshape(base, src), index, axis), perm), src 5-D:
 * the axes ordered by falling stride are contiguous but for one gap, which
 * the gathered axis fills (or it lies outside them all), and off is a
 * whole index along it. Q, K and V taken apart from one QKV projection
 * read so. */
static bool fa_as_gathered(const int64_t *dims, const int64_t *st, int64_t numel, int64_t off,
                           int64_t *src, int64_t *gather, int64_t *perm) {
  int order[4], first = fa_stride_order(dims, st, order);
  /* from the innermost axis out: gp, the position (in order) the gathered
   * axis goes before, its size G and stride gs */
  int64_t expect = 1, G = 0, gs = 0;
  int gp = -1;
  for (int p = 3; p >= first; p--) {
    int64_t s = st[order[p]];
    if (s != expect) {
      if (gp >= 0 || s < expect || s % expect)
        return false;
      gp = p + 1, G = s / expect, gs = expect, expect = s;
    }
    expect *= dims[order[p]];
  }
  if (gp < 0) {
    if (numel % expect || numel == expect)
      return false;
    gp = first, G = numel / expect, gs = expect, expect = numel;
  }
  if (expect != numel || off % gs || off / gs >= G)
    return false;
  /* src: the unit axes, then by falling stride with the gathered one at gp */
  for (int p = 0, q = 0; p < 4; p++) {
    if (p == gp)
      src[q++] = G;
    src[q++] = dims[order[p]];
    perm[order[p]] = p;
  }
  if (gp == 4)
    src[4] = G;
  gather[0] = gp;
  gather[1] = off / gs;
  return true;
}

/* Where v is a part of a tensor taken apart, a Gather of one constant
 * index or a part of a Split: that tensor, and v as a view of it (*r0
 * dims d0 and strides s0, starting *off elements in); else NULL. */
static kiln_value *fa_taken_apart(kiln_value *v, uint32_t *r0, int64_t *d0, int64_t *s0,
                                  int64_t *off) {
  uint32_t part = 0;
  int64_t gi = 0;
  kiln_node *g = v ? kiln_value_producer(v, &part) : NULL;
  bool split = g && kiln_node_get_kind(g) == KILN_NODE_Split;
  if (!split && !kiln_pass_gather_scalar(g, &gi))
    return NULL;
  kiln_value *x = kiln_node_input(g, 0);
  const kiln_type *xt = kiln_value_type(x);
  int64_t ax = kiln_attrs_int_or(kiln_node_attrs(g), "axis", 0), xs[KILN_MAX_RANK];
  ax = ax < 0 ? ax + (int64_t)xt->rank : ax;
  if (ax < 0 || ax >= (int64_t)xt->rank || xt->rank < 2)
    return NULL;
  kiln_type_strides(xt, xs);
  if (split) {
    /* the input's strides, the part's own extent along the axis, starting
     * where the parts before it end */
    int64_t start = 0;
    for (uint32_t i = 0; i < part; i++)
      start += kiln_value_type(kiln_node_result(g, i))->dims[ax];
    *r0 = xt->rank;
    memcpy(d0, xt->dims, sizeof(int64_t) * *r0);
    memcpy(s0, xs, sizeof(int64_t) * *r0);
    d0[ax] = kiln_value_type(v)->dims[ax];
    *off = start * xs[ax];
    return x;
  }
  gi = gi < 0 ? gi + xt->dims[ax] : gi;
  if (gi < 0 || gi >= xt->dims[ax])
    return NULL;
  *r0 = 0;
  for (uint32_t i = 0; i < xt->rank; i++)
    if ((int64_t)i != ax)
      d0[*r0] = xt->dims[i], s0[(*r0)++] = xs[i];
  *off = gi * xs[ax];
  return x;
}

/* Traces v (a 4-D operand; with swap, the operand is v with its last two
 * axes swapped: Kᵀ given, K wanted) back through Transposes and Reshapes
 * to the deepest tensor it is a Reshape + Transpose view of; where the
 * walk ends at a Gather of one constant index or a Split, to the tensor
 * gathered from or split, read through its strides. */
static void fa_trace(kiln_value *v, bool swap, bool gathers, fa_view *out) {
  kiln_node *chain[FA_MAX_CHAIN];
  int n = 0;
  out->base = NULL;
  if (kiln_type_numel(kiln_value_type(v)) == 0)
    return; /* an empty operand: nothing to gain, and no strides to speak of */
  kiln_value *cur = v;
  while (n < FA_MAX_CHAIN) {
    kiln_node *p = fa_prod(cur);
    if (!p)
      break;
    kiln_node_kind k = kiln_node_get_kind(p);
    if (k != KILN_NODE_Transpose && k != KILN_NODE_Reshape)
      break;
    chain[n++] = p;
    cur = kiln_node_input(p, 0);
  }
  out->gather[0] = -1;
  out->gather[1] = 0;
  /* deepest base first (from n: the tensor a Gather or Split at the
   * chain's end reads); the value itself (from -1, no chain) always works */
  for (int from = n; from >= -1; from--) {
    kiln_value *base = from >= 0 && from < n ? kiln_node_input(chain[from], 0) : v;
    int64_t d0[KILN_MAX_RANK], s0[KILN_MAX_RANK], off = 0;
    uint32_t r0;
    if (from == n) {
      base = gathers ? fa_taken_apart(n ? kiln_node_input(chain[n - 1], 0) : v, &r0, d0, s0,
                                      &off)
                     : NULL;
      if (!base)
        continue;
    } else {
      const kiln_type *bt = kiln_value_type(base);
      r0 = bt->rank;
      memcpy(d0, bt->dims, sizeof(int64_t) * r0);
      kiln_type_strides(bt, s0);
    }
    int64_t dims[4], st[4];
    bool tr = false;
    if (from >= 0 && !fa_replay(chain, from == n ? n - 1 : from, r0, d0, s0, dims, st, &tr))
      continue;
    if (from < 0) {
      memcpy(dims, d0, sizeof dims);
      memcpy(st, s0, sizeof st);
    }
    if (swap) {
      int64_t t = dims[2];
      dims[2] = dims[3], dims[3] = t;
      t = st[2];
      st[2] = st[3], st[3] = t;
    }
    int64_t numel = kiln_type_numel(kiln_value_type(base));
    if (from == n ? fa_as_gathered(dims, st, numel, off, out->src, out->gather, out->perm)
                  : fa_as_reshape_transpose(dims, st, numel, out->src, out->perm)) {
      out->base = base;
      out->transposed = tr;
      return;
    }
  }
}

typedef struct fa_ctx {
  kiln_function *f;
  const kiln_pass_options *o;
  uint32_t changes;
} fa_ctx;

static void fa_note(fa_ctx *c, const kiln_node *n, const char *why) {
  if (c->o->log)
    fprintf(c->o->log, "kiln: fuseattn: node '%s' (MatMul of a Softmax) is left as it is: %s\n",
            kiln_node_name(n), why);
}

/* The node's input for a traced operand: base, or a Reshape of it to src
 * (a view after IRGen). */
static kiln_status fa_input(fa_ctx *c, kiln_node *before, const fa_view *v, kiln_value **out) {
  const kiln_type *bt = kiln_value_type(v->base);
  uint32_t r = v->gather[0] >= 0 ? 5 : 4;
  if (bt->rank == r && memcmp(bt->dims, v->src, sizeof(int64_t) * r) == 0) {
    *out = v->base;
    return NULL;
  }
  kiln_attr_desc a[2] = {KILN_ATTR_I("allowzero", 0), KILN_ATTR_IS("shape", v->src, r)};
  return kiln_pass_emit(c->f, before, KILN_NODE_Reshape, &v->base, 1, a, 2, out);
}

static bool fa_perm_is_identity(const int64_t *p) {
  return p[0] == 0 && p[1] == 1 && p[2] == 2 && p[3] == 3;
}

/* Does mask m broadcast to scores type s (rank at most 4, dims 1 or equal)? */
static bool fa_mask_fits(const kiln_type *m, const kiln_type *s) {
  if (m->rank > 4)
    return false;
  for (uint32_t i = 0; i < m->rank; i++) {
    int64_t d = m->dims[m->rank - 1 - i];
    if (d != 1 && d != s->dims[3 - i])
      return false;
  }
  return true;
}

/* Strips Expands off a mask while what is left still broadcasts to the
 * scores (the node broadcasts it itself, without the copy). */
static kiln_value *fa_unexpand(kiln_value *m, const kiln_type *scores) {
  while (fa_kind(m) == KILN_NODE_Expand &&
         fa_mask_fits(kiln_value_type(kiln_node_input(fa_prod(m), 0)), scores))
    m = kiln_node_input(fa_prod(m), 0);
  return m;
}

/* swin's shifted windows add their window mask to the scores seen as
 * [1, N, H, S, S]: Reshape(Add(Reshape(y, [1, N, H, S, S]), m), y's shape).
 * That is y plus m without its leading unit axis, broadcast over y: returns
 * y and sets *wmask to m (of rank at most 5, dims[0] 1 at rank 5), else
 * returns x. */
static kiln_value *fa_window_mask(kiln_value *x, kiln_value **wmask) {
  kiln_node *r2 = fa_prod(x), *add, *r1;
  if (!r2 || kiln_node_get_kind(r2) != KILN_NODE_Reshape || kiln_value_use_count(x) != 1)
    return x;
  kiln_value *a = kiln_node_input(r2, 0);
  if (!(add = fa_prod(a)) || kiln_node_get_kind(add) != KILN_NODE_Add ||
      kiln_value_use_count(a) != 1)
    return x;
  const kiln_type *xt = kiln_value_type(x), *at = kiln_value_type(a);
  for (uint32_t side = 0; side < 2; side++) {
    kiln_value *r = kiln_node_input(add, side), *m = kiln_node_input(add, 1 - side);
    if (!(r1 = fa_prod(r)) || kiln_node_get_kind(r1) != KILN_NODE_Reshape ||
        kiln_value_use_count(r) != 1)
      continue;
    kiln_value *y = kiln_node_input(r1, 0);
    const kiln_type *yt = kiln_value_type(y), *mt = kiln_value_type(m);
    if (!kiln_type_equal(yt, xt) || xt->rank != 4 || at->rank != 5 || at->dims[0] != 1 ||
        memcmp(at->dims + 1, xt->dims, sizeof(int64_t) * 4) != 0 ||
        !kiln_type_equal(kiln_value_type(r), at) || mt->elem != xt->elem || mt->rank > 5 ||
        (mt->rank == 5 && mt->dims[0] != 1))
      continue;
    *wmask = m;
    return y;
  }
  return x;
}

/* root: MatMul(P, V) with P a Softmax result; out_t: its only use when that
 * is a Transpose (the head merge), else NULL. With gathers false, no
 * operand is read through a Gather or Split: the retry for a backend that
 * declines the node with them (kiln_plugin_supports: every plugin built
 * before ABI 1.8). */
static kiln_status fa_try(fa_ctx *c, kiln_node *root, kiln_node *out_t, bool gathers) {
  kiln_value *pv = kiln_node_input(root, 0), *vv = kiln_node_input(root, 1);
  kiln_node *sm = fa_prod(pv);
  const kiln_type *pt = kiln_value_type(pv), *vt = kiln_value_type(vv);
  if (pt->rank != 4 || vt->rank != 4) {
    fa_note(c, root, "the operands are not 4-D ([B, H, S, D])");
    return NULL;
  }
  if (!kiln_elem_is_float(pt->elem)) {
    fa_note(c, root, "the element type is not a float type");
    return NULL;
  }
  int64_t ax = kiln_attrs_int_or(kiln_node_attrs(sm), "axis", -1);
  if (ax != -1 && ax != 3) {
    fa_note(c, root, "the Softmax is not on the last axis");
    return NULL;
  }
  if (kiln_value_use_count(pv) != 1) {
    fa_note(c, root, "the Softmax result has other uses");
    return NULL;
  }
  /* mask */
  kiln_value *x = kiln_node_input(sm, 0), *mask = NULL, *wmask = NULL;
  const kiln_type *xt = kiln_value_type(x);
  x = fa_window_mask(x, &wmask);
  bool bool_mask = false, invert = false;
  double fill = -INFINITY;
  kiln_node *mp = fa_prod(x);
  if (mp && kiln_value_use_count(x) == 1 && kiln_node_get_kind(mp) == KILN_NODE_Add) {
    kiln_value *a = kiln_node_input(mp, 0), *b = kiln_node_input(mp, 1);
    /* the scores are the operand that leads to the MatMul */
    double s1 = 1;
    bool a_scores = fa_kind(fa_peel_scale(a, &s1)) == KILN_NODE_MatMul &&
                    kiln_type_equal(kiln_value_type(a), xt);
    x = a_scores ? a : b;
    mask = a_scores ? b : a;
    if (!kiln_type_equal(kiln_value_type(x), xt)) {
      fa_note(c, root, "the mask Add broadcasts the scores to another shape");
      return NULL;
    }
  } else if (mp && kiln_value_use_count(x) == 1 && kiln_node_get_kind(mp) == KILN_NODE_Where) {
    kiln_value *cond = kiln_node_input(mp, 0), *a = kiln_node_input(mp, 1),
               *b = kiln_node_input(mp, 2);
    bool a_fill = fa_scalar_const(a, &fill), b_fill = !a_fill && fa_scalar_const(b, &fill);
    if (!a_fill && !b_fill) {
      fa_note(c, root, "the Where before the Softmax does not pick a constant fill");
      return NULL;
    }
    x = a_fill ? b : a;
    invert = a_fill; /* Where(cond, fill, scores): cond marks the masked scores */
    mask = cond;
    bool_mask = true;
    if (!kiln_type_equal(kiln_value_type(x), xt)) {
      fa_note(c, root, "the Where broadcasts the scores to another shape");
      return NULL;
    }
  }
  if (wmask && mask && bool_mask) {
    fa_note(c, root, "a window mask and a bool mask together");
    return NULL;
  }
  if (mask) {
    mask = fa_unexpand(mask, xt);
    const kiln_type *mt = kiln_value_type(mask);
    if (!fa_mask_fits(mt, xt)) {
      fa_note(c, root, "the mask does not broadcast to the scores without growing them");
      return NULL;
    }
    if (!bool_mask && mt->elem != xt->elem) {
      fa_note(c, root, "the additive mask has another element type than the scores");
      return NULL;
    }
  }
  kiln_type wt4 = wmask ? *kiln_value_type(wmask) : *xt;
  if (wt4.rank == 5) {
    memmove(wt4.dims, wt4.dims + 1, sizeof(int64_t) * 4);
    wt4.rank = 4;
  }
  if (wmask && !fa_mask_fits(&wt4, xt)) {
    fa_note(c, root, "the window mask does not broadcast to the scores");
    return NULL;
  }
  /* scale, then Q·Kᵀ */
  double scale = 1;
  x = fa_peel_scale(x, &scale);
  kiln_node *qk = fa_prod(x);
  if (!qk || kiln_node_get_kind(qk) != KILN_NODE_MatMul || kiln_value_use_count(x) != 1) {
    fa_note(c, root,
            "the Softmax input is not Q·Kᵀ, scaled by constants, plus an optional mask "
            "(a scale that is not a constant, or an intermediate with other uses, stops it)");
    return NULL;
  }
  if (kiln_attrs_find(kiln_node_attrs(qk), "activation")) {
    fa_note(c, root, "Q·Kᵀ carries an activation");
    return NULL;
  }
  kiln_value *q = fa_peel_scale(kiln_node_input(qk, 0), &scale);
  kiln_value *kt = fa_peel_scale(kiln_node_input(qk, 1), &scale);
  if (kiln_value_type(q)->rank != 4 || kiln_value_type(kt)->rank != 4) {
    fa_note(c, root, "Q and Kᵀ are not 4-D");
    return NULL;
  }
  fa_view qv, kv, vvw;
  fa_trace(q, false, gathers, &qv);
  fa_trace(kt, true, gathers, &kv);
  fa_trace(vv, false, gathers, &vvw);
  if (!qv.base || !kv.base || !vvw.base) {
    fa_note(c, root, "an operand is not a Reshape + Transpose view of a tensor");
    return NULL;
  }
  if (!kv.transposed) {
    fa_note(c, root, "the second operand of Q·Kᵀ is not a transposed K");
    return NULL;
  }
  /* Q·Kᵀ's batch dims must not broadcast: the node has none */
  const kiln_type *qt = kiln_value_type(q), *ktt = kiln_value_type(kt);
  if (qt->dims[0] != ktt->dims[0] || qt->dims[1] != ktt->dims[1] || vt->dims[0] != qt->dims[0] ||
      vt->dims[1] != qt->dims[1]) {
    fa_note(c, root, "Q, K and V differ in their batch or head dims (broadcast)");
    return NULL;
  }
  /* build */
  kiln_node *at = out_t ? out_t : root;
  kiln_value *ins[4];
  KILN_TRY(fa_input(c, at, &qv, &ins[0]));
  KILN_TRY(fa_input(c, at, &kv, &ins[1]));
  KILN_TRY(fa_input(c, at, &vvw, &ins[2]));
  ins[3] = mask;
  if (mask && invert)
    KILN_TRY(kiln_pass_emit(c->f, at, KILN_NODE_Not, &mask, 1, NULL, 0, &ins[3]));
  if (wmask) {
    const kiln_type *wt = kiln_value_type(wmask);
    if (wt->rank == 5) {
      kiln_attr_desc ra[2] = {KILN_ATTR_I("allowzero", 0), KILN_ATTR_IS("shape", wt->dims + 1, 4)};
      KILN_TRY(kiln_pass_emit(c->f, at, KILN_NODE_Reshape, &wmask, 1, ra, 2, &wmask));
    }
    /* a constant sum of two constant masks folds later in the pipeline */
    kiln_value *both[2] = {mask, wmask};
    if (mask)
      KILN_TRY(kiln_pass_emit(c->f, at, KILN_NODE_Add, both, 2, NULL, 0, &ins[3]));
    else
      ins[3] = wmask;
    mask = ins[3];
  }
  int64_t operm[4] = {0, 1, 2, 3};
  if (out_t)
    kiln_pass_transpose_perm(out_t, 4, operm);
  kiln_attr_desc attrs[10];
  uint32_t na = 0;
  attrs[na++] = KILN_ATTR_F("scale", scale);
  if (bool_mask)
    attrs[na++] = KILN_ATTR_F("mask_fill", fill);
  if (!fa_perm_is_identity(qv.perm))
    attrs[na++] = KILN_ATTR_IS("q_perm", qv.perm, 4);
  if (!fa_perm_is_identity(kv.perm))
    attrs[na++] = KILN_ATTR_IS("k_perm", kv.perm, 4);
  if (!fa_perm_is_identity(vvw.perm))
    attrs[na++] = KILN_ATTR_IS("v_perm", vvw.perm, 4);
  if (qv.gather[0] >= 0)
    attrs[na++] = KILN_ATTR_IS("q_gather", qv.gather, 2);
  if (kv.gather[0] >= 0)
    attrs[na++] = KILN_ATTR_IS("k_gather", kv.gather, 2);
  if (vvw.gather[0] >= 0)
    attrs[na++] = KILN_ATTR_IS("v_gather", vvw.gather, 2);
  if (!fa_perm_is_identity(operm))
    attrs[na++] = KILN_ATTR_IS("out_perm", operm, 4);
  kiln_node *n = NULL;
  kiln_function_set_insert_point(c->f, at);
  kiln_status s = kiln_function_add_node(c->f, KILN_NODE_ScaledDotProductAttention,
                                         kiln_pass_given_name(root), ins, mask ? 4 : 3, attrs, na,
                                         1, &n);
  kiln_function_set_insert_point(c->f, NULL);
  KILN_TRY(s);
  kiln_value *old = kiln_node_result(at, 0), *nv = kiln_node_result(n, 0);
  bool declined = c->o->supports_node && !c->o->supports_node(c->o->backend_user, n);
  if (declined && (qv.gather[0] >= 0 || kv.gather[0] >= 0 || vvw.gather[0] >= 0)) {
    KILN_TRY(kiln_function_remove_node(c->f, n));
    return fa_try(c, root, out_t, false);
  }
  if (declined || !kiln_type_equal(kiln_value_type(old), kiln_value_type(nv))) {
    if (declined && c->o->log)
      fprintf(c->o->log, "kiln: fuseattn: node '%s': the backend does not take the attention it "
                         "computes\n",
              kiln_node_name(root));
    /* the Reshapes and Not made for it are dead now; dce takes them */
    return kiln_function_remove_node(c->f, n);
  }
  KILN_TRY(kiln_function_replace_uses(c->f, old, nv));
  c->changes++;
  return NULL;
}

kiln_status kiln_pass_fuse_attention(kiln_function *f, const kiln_pass_options *o,
                                     uint32_t *changes) {
  kiln_node **nodes;
  uint32_t n;
  KILN_TRY(kiln_pass_snapshot(f, &nodes, &n));
  fa_ctx c = {.f = f, .o = o};
  kiln_status s = NULL;
  /* roots already tried through their head-merge Transpose (few: one per
   * attention), so that a miss is neither tried nor noted twice */
  kiln_node **tried = NULL;
  uint32_t n_tried = 0, cap = 0;
  /* last to first, so that a head-merge Transpose is seen before its MatMul;
   * rewritten nodes stay in place, dead, for dce */
  for (uint32_t i = n; i-- > 0 && !s;) {
    kiln_node *nd = nodes[i], *root = nd, *out_t = NULL;
    if (kiln_value_use_count(kiln_node_result(nd, 0)) == 0)
      continue;
    if (kiln_node_get_kind(nd) == KILN_NODE_Transpose) {
      root = fa_prod(kiln_node_input(nd, 0));
      if (!root || kiln_value_use_count(kiln_node_input(nd, 0)) != 1 ||
          kiln_value_type(kiln_node_input(nd, 0))->rank != 4)
        continue;
      out_t = nd;
    }
    if (kiln_node_get_kind(root) != KILN_NODE_MatMul ||
        fa_kind(kiln_node_input(root, 0)) != KILN_NODE_Softmax ||
        kiln_attrs_find(kiln_node_attrs(root), "activation"))
      continue;
    bool seen = false;
    for (uint32_t j = 0; j < n_tried && !seen; j++)
      seen = tried[j] == root;
    if (seen)
      continue;
    if (n_tried == cap) {
      cap = cap ? 2 * cap : 16;
      kiln_node **t = realloc(tried, sizeof *t * cap);
      if (!t) {
        s = kiln_status_make(KILN_OUT_OF_MEMORY, "fuseattn: out of memory");
        break;
      }
      tried = t;
    }
    tried[n_tried++] = root;
    s = fa_try(&c, root, out_t, true);
  }
  free(tried);
  free(nodes);
  if (!s && changes)
    *changes += c.changes;
  return s;
}
