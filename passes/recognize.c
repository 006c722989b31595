/* passes/recognize.c: pattern recognition. Exporters write some operators
 * out as chains of primitives (torch at opsets below 17 writes LayerNorm as
 * ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add); a backend with a
 * kernel for the operator runs the chain many times slower than the one
 * node. This pass rebuilds the node where the chain computes exactly the
 * operator:
 *   LayerNorm   (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* g] [+ b]
 *   RMSNorm     x / sqrt(mean(x^2) + eps) [* g]   (or x * 1/sqrt(...))
 *   Gelu        x * 0.5 * (1 + erf(x / sqrt 2)), and the tanh form
 *   Swish       x * sigmoid(x)
 *   Softmax     exp(x [- max(x)]) / sum(exp(x [- max(x)]))
 * with products and sums in any operand order. Every intermediate must be
 * used only inside the chain. The rebuilt node is kept only when the
 * backend's supports_node accepts it (no hook: always), so a backend
 * without the kernel sees the graph it had. A chain that starts like a
 * norm but does not match is noted on opts->log with the reason. Roots are
 * visited last to first so that the longest chain (with scale and bias)
 * is taken; replaced nodes are left dead for dce. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"

typedef struct rz_ctx {
  kiln_function *f;
  const kiln_pass_options *o;
  uint32_t changes;
  /* nodes of the snapshot removed so far (open addressing, cap a power
   * of two, at least twice the snapshot) */
  const kiln_node **gone;
  size_t cap;
} rz_ctx;

static size_t rz_slot(const rz_ctx *c, const kiln_node *n) {
  size_t h = ((uintptr_t)n >> 4) * 0x9E3779B97F4A7C15u;
  size_t i = h & (c->cap - 1);
  while (c->gone[i] && c->gone[i] != n)
    i = (i + 1) & (c->cap - 1);
  return i;
}

static bool rz_gone(const rz_ctx *c, const kiln_node *n) {
  return c->gone[rz_slot(c, n)] == n;
}

/* Remove n if nothing uses it, then the producers that leaves unused: a
 * matched chain goes at once, so no later root sees its pieces. */
static kiln_status rz_remove_dead(rz_ctx *c, kiln_node *n) {
  if (rz_gone(c, n))
    return NULL; /* reached through two inputs */
  for (uint32_t i = 0; i < kiln_node_result_count(n); i++)
    if (kiln_value_use_count(kiln_node_result(n, i)) > 0)
      return NULL;
  kiln_node *prods[8];
  uint32_t np = 0;
  for (uint32_t i = 0; i < kiln_node_input_count(n) && np < 8; i++) {
    kiln_node *p = kiln_node_input(n, i) ? kiln_value_producer(kiln_node_input(n, i), NULL) : NULL;
    bool dup = false;
    for (uint32_t j = 0; j < np; j++)
      dup = dup || prods[j] == p;
    if (p && !dup)
      prods[np++] = p;
  }
  KILN_TRY(kiln_function_remove_node(c->f, n));
  c->gone[rz_slot(c, n)] = n;
  for (uint32_t j = 0; j < np; j++)
    KILN_TRY(rz_remove_dead(c, prods[j]));
  return NULL;
}

/* v's producer when it is a single-result node of kind k, else NULL. */
static kiln_node *rz_prod(const kiln_value *v, kiln_node_kind k) {
  kiln_node *p = v ? kiln_value_producer(v, NULL) : NULL;
  return p && kiln_node_get_kind(p) == k && kiln_node_result_count(p) == 1 ? p : NULL;
}

static kiln_value *rz_in(const kiln_node *n, uint32_t i) {
  return n && i < kiln_node_input_count(n) ? kiln_node_input(n, i) : NULL;
}

static kiln_value *rz_out(const kiln_node *n) {
  return kiln_node_result(n, 0);
}

static bool rz_once(const kiln_value *v) {
  return kiln_value_use_count(v) == 1;
}

static bool rz_scalar(const kiln_value *v, double *d) {
  return kiln_pass_const_splat(v, d);
}

static bool rz_near(double a, double b) {
  return fabs(a - b) <= 1e-4 * fabs(b);
}

static bool rz_same_type(const kiln_value *a, const kiln_value *b) {
  return kiln_type_equal(kiln_value_type(a), kiln_value_type(b));
}

static bool rz_is_f32(const kiln_value *v) {
  const kiln_type *t = kiln_value_type(v);
  return t->elem == KILN_F32 && !t->quantized;
}

/* A reduction over a suffix of the axes [*axis, rank) with keepdims = 1. */
static bool rz_reduce_suffix(const kiln_node *r, uint32_t rank, int64_t *axis) {
  const kiln_attrs *a = kiln_node_attrs(r);
  const kiln_attr *ax = kiln_attrs_find(a, "axes");
  if (!ax || kiln_attrs_int_or(a, "keepdims", 1) != 1 || kiln_attr_len(ax) == 0)
    return false;
  uint32_t n = kiln_attr_len(ax);
  bool seen[KILN_MAX_RANK] = {false};
  int64_t lo = rank;
  for (uint32_t i = 0; i < n; i++) {
    int64_t v = kiln_attr_ints(ax)[i];
    if (v < 0)
      v += rank;
    if (v < 0 || v >= (int64_t)rank || seen[v])
      return false;
    seen[v] = true;
    lo = v < lo ? v : lo;
  }
  if (lo + (int64_t)n != (int64_t)rank)
    return false;
  *axis = lo;
  return true;
}

static bool rz_same_axes(const kiln_node *a, const kiln_node *b, uint32_t rank) {
  int64_t x, y;
  return rz_reduce_suffix(a, rank, &x) && rz_reduce_suffix(b, rank, &y) && x == y;
}

/* Operands of a commutative binary node n, with `want` (when not NULL)
 * matched against either: *other gets the other operand. */
static bool rz_other(const kiln_node *n, const kiln_value *want, kiln_value **other) {
  kiln_value *a = rz_in(n, 0), *b = rz_in(n, 1);
  if (a == want) {
    *other = b;
    return true;
  }
  if (b == want) {
    *other = a;
    return true;
  }
  return false;
}

/* One operand of commutative n is a splat constant near c; *other is the
 * other. */
static bool rz_const_operand(const kiln_node *n, double c, kiln_value **other) {
  double d;
  for (uint32_t i = 0; i < 2; i++)
    if (rz_scalar(rz_in(n, i), &d) && rz_near(d, c) && rz_in(n, 1 - i) &&
        rz_same_type(rz_in(n, 1 - i), rz_out(n))) {
      *other = rz_in(n, 1 - i);
      return true;
    }
  return false;
}

/* v = u^2 written as Pow(u, 2) or Mul(u, u); *u set. */
static bool rz_square(const kiln_value *v, kiln_value **u, uint32_t *uses) {
  kiln_node *p = rz_prod(v, KILN_NODE_Pow);
  double e;
  if (p && rz_scalar(rz_in(p, 1), &e) && e == 2 && rz_same_type(rz_in(p, 0), v)) {
    *u = rz_in(p, 0);
    *uses = 1;
    return true;
  }
  p = rz_prod(v, KILN_NODE_Mul);
  if (p && rz_in(p, 0) == rz_in(p, 1) && rz_same_type(rz_in(p, 0), v)) {
    *u = rz_in(p, 0);
    *uses = 2;
    return true;
  }
  return false;
}

/* ------------------------------------------------------------------------
 * Norms. The core is the normalized value before scale and bias. */

typedef struct rz_norm {
  kiln_value *x; /* the input */
  int64_t axis;
  double eps;
  bool centred; /* LayerNorm (x - mean), else RMSNorm */
  kiln_value *scale, *bias;
  kiln_node *root; /* the last node of the chain */
} rz_norm;

/* s = sqrt(mean(sq) + eps) with sq = u^2: *u, *axis, *eps, and how many
 * uses of u the square makes; every step used once. why gets the reason
 * when it fails. */
static bool rz_rms_denominator(const kiln_value *s, uint32_t rank, kiln_value **u, int64_t *axis,
                               double *eps, uint32_t *sq_uses, const char **why) {
  kiln_node *sq = rz_prod(s, KILN_NODE_Sqrt);
  kiln_node *add = sq && rz_once(rz_in(sq, 0)) ? rz_prod(rz_in(sq, 0), KILN_NODE_Add) : NULL;
  if (!add) {
    *why = "the divisor is not Sqrt(Add(...)) used once";
    return false;
  }
  kiln_value *mean = NULL;
  double e = 0;
  if (rz_scalar(rz_in(add, 1), &e) && rz_same_type(rz_in(add, 0), rz_out(add)))
    mean = rz_in(add, 0);
  else if (rz_scalar(rz_in(add, 0), &e) && rz_same_type(rz_in(add, 1), rz_out(add)))
    mean = rz_in(add, 1);
  if (!mean || !(e >= 0)) {
    *why = "epsilon is not a non-negative scalar constant";
    return false;
  }
  kiln_node *rm = rz_once(mean) ? rz_prod(mean, KILN_NODE_ReduceMean) : NULL;
  if (!rm || !rz_reduce_suffix(rm, rank, axis) || !rz_once(rz_in(rm, 0))) {
    *why = "the variance is not a ReduceMean over the last axes (keepdims) used once";
    return false;
  }
  if (!rz_square(rz_in(rm, 0), u, sq_uses)) {
    *why = "the variance does not average a square (Pow 2 or Mul by itself)";
    return false;
  }
  *eps = e;
  return true;
}

/* v = n / s, n * (1 / s) or n * Reciprocal(s): *n, *s, and whether the
 * division nodes are used once. */
static bool rz_division(const kiln_value *v, kiln_value **num, kiln_value **den) {
  kiln_node *d = rz_prod(v, KILN_NODE_Div);
  if (d) {
    *num = rz_in(d, 0);
    *den = rz_in(d, 1);
    return true;
  }
  kiln_node *m = rz_prod(v, KILN_NODE_Mul);
  for (uint32_t i = 0; m && i < 2; i++) {
    kiln_value *r = rz_in(m, i);
    kiln_node *rp = rz_once(r) ? rz_prod(r, KILN_NODE_Reciprocal) : NULL;
    double one;
    kiln_node *dp = rz_once(r) ? rz_prod(r, KILN_NODE_Div) : NULL;
    if (rp) {
      *num = rz_in(m, 1 - i);
      *den = rz_in(rp, 0);
      return true;
    }
    if (dp && rz_scalar(rz_in(dp, 0), &one) && one == 1 && rz_same_type(rz_in(dp, 1), r)) {
      *num = rz_in(m, 1 - i);
      *den = rz_in(dp, 1);
      return true;
    }
  }
  return false;
}

/* Does v (the normalized value) end a LayerNorm or RMSNorm core? *why is
 * set (non-NULL) when it starts like one but does not match. */
static bool rz_norm_core(const kiln_value *v, rz_norm *nm, const char **why) {
  *why = NULL;
  kiln_value *num = NULL, *den = NULL;
  if (!rz_is_f32(v) || !rz_division(v, &num, &den) || !rz_same_type(num, v) ||
      !rz_once(den))
    return false;
  uint32_t rank = kiln_value_type(v)->rank;
  if (rank == 0)
    return false;
  kiln_node *sub = rz_prod(num, KILN_NODE_Sub);
  kiln_node *mean = sub ? rz_prod(rz_in(sub, 1), KILN_NODE_ReduceMean) : NULL;
  kiln_value *u = NULL;
  int64_t axis = 0;
  double eps = 0;
  uint32_t sq_uses = 0;
  if (mean && rz_in(mean, 0) == rz_in(sub, 0)) {
    /* LayerNorm: num = x - mean(x), used by the square and the division. */
    if (!rz_rms_denominator(den, rank, &u, &axis, &eps, &sq_uses, why))
      return false;
    int64_t a0;
    if (u != num || kiln_value_use_count(num) != sq_uses + 1 ||
        !rz_once(rz_in(sub, 1))) {
      *why = "the centred value is used outside the norm, or the variance is not of it";
      return false;
    }
    if (!rz_reduce_suffix(mean, rank, &a0) || a0 != axis) {
      *why = "the mean and the variance reduce different axes";
      return false;
    }
    nm->x = rz_in(sub, 0);
    nm->centred = true;
  } else {
    /* RMSNorm: num = x, the square is of x itself. */
    const char *w = NULL;
    if (!rz_rms_denominator(den, rank, &u, &axis, &eps, &sq_uses, &w) || u != num)
      return false;
    nm->x = num;
    nm->centred = false;
  }
  if (!rz_same_type(nm->x, v))
    return false;
  nm->axis = axis;
  nm->eps = eps;
  nm->scale = nm->bias = NULL;
  return true;
}

/* p (an operand of the scale Mul or bias Add) applies per normalized
 * element: its dims, right-aligned against x's, are 1 before axis. */
static bool rz_norm_param(const kiln_value *p, const kiln_type *xt, int64_t axis) {
  const kiln_type *t = kiln_value_type(p);
  if (t->elem != xt->elem || t->quantized || t->rank > xt->rank)
    return false;
  for (uint32_t j = 0; j < t->rank; j++) {
    int64_t xi = (int64_t)(xt->rank - t->rank + j);
    if (xi < axis ? t->dims[j] != 1 : t->dims[j] != xt->dims[xi] && t->dims[j] != 1)
      return false;
  }
  return true;
}

/* p as a value of exactly the normalized shape: itself when it already is,
 * a broadcast copy when it is a constant, NULL when neither. */
static kiln_status rz_norm_param_value(kiln_module *m, kiln_value *p, const kiln_type *xt,
                                       int64_t axis, kiln_value **out) {
  *out = NULL;
  const kiln_type *t = kiln_value_type(p);
  kiln_type nt;
  KILN_TRY(kiln_type_make(xt->elem, xt->rank - (uint32_t)axis, xt->dims + axis, &nt));
  if (kiln_type_equal(t, &nt)) {
    *out = p;
    return NULL;
  }
  if (kiln_value_get_kind(p) != KILN_VALUE_CONSTANT)
    return NULL;
  int64_t n = kiln_type_numel(&nt);
  float *buf = malloc(sizeof *buf * (size_t)(n ? n : 1));
  if (!buf)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "recognize: no memory");
  const float *src = kiln_value_data(p);
  for (int64_t i = 0; i < n; i++) {
    /* index of element i of the normalized shape in p (right-aligned) */
    int64_t rem = i, off = 0, stride = 1;
    for (int64_t d = (int64_t)nt.rank - 1; d >= 0; d--) {
      int64_t c = rem % nt.dims[d];
      rem /= nt.dims[d];
      int64_t pd = d - ((int64_t)nt.rank - (int64_t)t->rank);
      if (pd >= 0) {
        if (t->dims[pd] != 1)
          off += c * stride;
        stride *= t->dims[pd];
      }
    }
    buf[i] = src[off];
  }
  kiln_status s = kiln_module_add_constant(m, NULL, &nt, buf, out);
  free(buf);
  return s;
}

/* Grow the core ending in v by a scale Mul and a bias Add (in the node
 * r that uses it, when r is given): *nm->root is set to the last node. */
static bool rz_norm_tail(kiln_node *r, const kiln_value *core_v, rz_norm *nm) {
  const kiln_type *xt = kiln_value_type(nm->x);
  kiln_value *other = NULL;
  kiln_node_kind k = kiln_node_get_kind(r);
  if ((k != KILN_NODE_Mul && k != KILN_NODE_Add) || !rz_other(r, core_v, &other) ||
      other == core_v || !rz_same_type(rz_out(r), core_v) || !rz_norm_param(other, xt, nm->axis))
    return false;
  if (k == KILN_NODE_Mul) {
    if (nm->scale || nm->bias)
      return false;
    nm->scale = other;
  } else {
    if (nm->bias || !nm->centred)
      return false;
    nm->bias = other;
  }
  nm->root = r;
  return true;
}

/* ------------------------------------------------------------------------
 * Rewriting. */

/* Add node kind(ins) before root; keep it (replacing root's result) when
 * its type matches and the backend takes it. */
static kiln_status rz_replace(rz_ctx *c, kiln_node *root, kiln_node_kind k, kiln_value *const *ins,
                              uint32_t n_in, const kiln_attr_desc *attrs, uint32_t n_attrs,
                              bool *done) {
  *done = false;
  kiln_node *n = NULL;
  kiln_function_set_insert_point(c->f, root);
  kiln_status s = kiln_function_add_node(c->f, k, kiln_pass_given_name(root), ins, n_in, attrs,
                                         n_attrs, 1, &n);
  kiln_function_set_insert_point(c->f, NULL);
  KILN_TRY(s);
  kiln_value *old = rz_out(root), *nv = rz_out(n);
  bool declined = c->o->supports_node && !c->o->supports_node(c->o->backend_user, n);
  if (!rz_same_type(old, nv) || declined) {
    if (declined && c->o->log)
      fprintf(c->o->log, "kiln: recognize: node '%s': the backend does not take the %s it computes\n",
              kiln_node_name(root), kiln_node_kind_name(k));
    return kiln_function_remove_node(c->f, n);
  }
  KILN_TRY(kiln_function_replace_uses(c->f, old, nv));
  c->changes++;
  *done = true;
  return rz_remove_dead(c, root);
}

static kiln_status rz_emit_norm(rz_ctx *c, rz_norm *nm, bool *done) {
  kiln_module *m = kiln_function_module(c->f);
  const kiln_type *xt = kiln_value_type(nm->x);
  kiln_value *scale = NULL, *bias = NULL;
  *done = false;
  if (nm->scale) {
    KILN_TRY(rz_norm_param_value(m, nm->scale, xt, nm->axis, &scale));
    if (!scale)
      return NULL;
  } else {
    kiln_type st;
    KILN_TRY(kiln_type_make(xt->elem, xt->rank - (uint32_t)nm->axis, xt->dims + nm->axis, &st));
    KILN_TRY(kiln_pass_const_fill(m, &st, 1.0, &scale));
  }
  if (nm->bias) {
    KILN_TRY(rz_norm_param_value(m, nm->bias, xt, nm->axis, &bias));
    if (!bias)
      return NULL;
  }
  kiln_value *ins[3] = {nm->x, scale, bias};
  kiln_attr_desc a[2] = {KILN_ATTR_I("axis", nm->axis), KILN_ATTR_F("epsilon", nm->eps)};
  return rz_replace(c, nm->root,
                    nm->centred ? KILN_NODE_LayerNormalization : KILN_NODE_RMSNormalization, ins,
                    bias ? 3 : 2, a, 2, done);
}

/* r is the last node of a norm: the core itself, core * scale,
 * core + bias or (core * scale) + bias. */
static kiln_status rz_try_norm(rz_ctx *c, kiln_node *r, bool *done) {
  rz_norm nm;
  const char *why = NULL;
  kiln_node_kind k = kiln_node_get_kind(r);
  /* (core * scale) + bias, core + bias, core * scale */
  for (uint32_t i = 0; (k == KILN_NODE_Add || k == KILN_NODE_Mul) && i < 2; i++) {
    kiln_value *u = rz_in(r, i);
    if (!rz_once(u))
      continue;
    kiln_node *mul = k == KILN_NODE_Add ? rz_prod(u, KILN_NODE_Mul) : NULL;
    for (uint32_t j = 0; mul && j < 2; j++) {
      kiln_value *cv = rz_in(mul, j);
      if (rz_once(cv) && rz_norm_core(cv, &nm, &why) && rz_norm_tail(mul, cv, &nm) &&
          rz_norm_tail(r, u, &nm))
        return rz_emit_norm(c, &nm, done);
    }
    if (rz_norm_core(u, &nm, &why) && rz_norm_tail(r, u, &nm))
      return rz_emit_norm(c, &nm, done);
  }
  if (rz_norm_core(rz_out(r), &nm, &why)) {
    nm.root = r;
    return rz_emit_norm(c, &nm, done);
  }
  if (why && c->o->log)
    fprintf(c->o->log, "kiln: recognize: node '%s' starts a LayerNorm but is left as it is: %s\n",
            kiln_node_name(r), why);
  return NULL;
}

/* ------------------------------------------------------------------------
 * Activations and Softmax. */

/* The factors of a product tree rooted at v (inner Muls used once). */
typedef struct rz_factors {
  kiln_value *v[8];
  uint32_t n;
} rz_factors;

static bool rz_collect(const kiln_value *v, const kiln_type *t, rz_factors *fs, bool root) {
  kiln_node *m = rz_prod(v, KILN_NODE_Mul);
  if (m && (root || rz_once(v)) && rz_same_type(rz_out(m), v) &&
      kiln_type_equal(kiln_value_type(v), t)) {
    kiln_value *a = rz_in(m, 0), *b = rz_in(m, 1);
    double d;
    /* a scalar constant is a factor; an operand of t's type may be a
     * product itself */
    for (uint32_t i = 0; i < 2; i++) {
      kiln_value *o = i ? b : a;
      if (kiln_type_equal(kiln_value_type(o), t)) {
        if (!rz_collect(o, t, fs, false))
          return false;
      } else if (rz_scalar(o, &d)) {
        if (fs->n == 8)
          return false;
        fs->v[fs->n++] = o;
      } else {
        return false;
      }
    }
    return true;
  }
  if (root || fs->n == 8)
    return false;
  fs->v[fs->n++] = (kiln_value *)v;
  return true;
}

/* x * c (or x / (1/c)): *x. */
static bool rz_scaled(const kiln_value *v, double c, kiln_value **x) {
  kiln_node *m = rz_prod(v, KILN_NODE_Mul);
  if (m && rz_const_operand(m, c, x))
    return true;
  kiln_node *d = rz_prod(v, KILN_NODE_Div);
  double k;
  if (d && rz_scalar(rz_in(d, 1), &k) && k != 0 && rz_near(1 / k, c) &&
      rz_same_type(rz_in(d, 0), v)) {
    *x = rz_in(d, 0);
    return true;
  }
  return false;
}

/* v = 1 + f(inner) for the unary kind f; *inner. */
static bool rz_one_plus(const kiln_value *v, kiln_node_kind f, kiln_value **inner) {
  kiln_node *a = rz_once(v) ? rz_prod(v, KILN_NODE_Add) : NULL;
  kiln_value *o = NULL;
  if (!a || !rz_const_operand(a, 1.0, &o) || !rz_once(o))
    return false;
  kiln_node *u = rz_prod(o, f);
  if (!u)
    return false;
  *inner = rz_in(u, 0);
  return true;
}

/* v = x^3 as Pow(x, 3), x * x * x in any grouping. */
static bool rz_cube(const kiln_value *v, const kiln_value *x) {
  kiln_node *p = rz_prod(v, KILN_NODE_Pow);
  double e;
  if (p)
    return rz_in(p, 0) == x && rz_scalar(rz_in(p, 1), &e) && e == 3;
  rz_factors fs = {.n = 0};
  if (!rz_collect(v, kiln_value_type(v), &fs, true) || fs.n != 3)
    return false;
  for (uint32_t i = 0; i < 3; i++)
    if (fs.v[i] != x)
      return false;
  return true;
}

/* inner = sqrt(2/pi) * (x + 0.044715 x^3), the tanh Gelu's argument. */
static bool rz_gelu_tanh_arg(const kiln_value *inner, const kiln_value *x) {
  kiln_value *s = NULL, *o = NULL;
  if (!rz_scaled(inner, 0.7978845608028654, &s) || !rz_once(s))
    return false;
  kiln_node *add = rz_prod(s, KILN_NODE_Add);
  if (!add || !rz_other(add, x, &o) || !rz_once(o))
    return false;
  kiln_value *cube = NULL;
  return rz_scaled(o, 0.044715, &cube) && rz_once(cube) && rz_cube(cube, x);
}

/* r = x * 0.5 * (1 + erf(x / sqrt 2)) or the tanh form, as a product tree
 * of the three factors. */
static kiln_status rz_try_gelu(rz_ctx *c, kiln_node *r, bool *done) {
  rz_factors fs = {.n = 0};
  const kiln_type *t = kiln_value_type(rz_out(r));
  if (kiln_node_get_kind(r) != KILN_NODE_Mul || !rz_is_f32(rz_out(r)) ||
      !rz_collect(rz_out(r), t, &fs, true) || fs.n != 3)
    return NULL;
  for (uint32_t h = 0; h < 3; h++) {
    double half;
    if (!rz_scalar(fs.v[h], &half) || !rz_near(half, 0.5))
      continue;
    for (uint32_t xi = 0; xi < 3; xi++) {
      if (xi == h)
        continue;
      kiln_value *x = fs.v[xi], *g = fs.v[3 - h - xi], *inner = NULL, *e = NULL;
      if (!kiln_type_equal(kiln_value_type(x), t))
        continue;
      const char *approx = NULL;
      if (rz_one_plus(g, KILN_NODE_Erf, &inner) && rz_once(inner) &&
          rz_scaled(inner, 0.7071067811865476, &e) && e == x)
        approx = "none";
      else if (rz_one_plus(g, KILN_NODE_Tanh, &inner) && rz_once(inner) &&
               rz_gelu_tanh_arg(inner, x))
        approx = "tanh";
      if (!approx)
        continue;
      kiln_attr_desc a = KILN_ATTR_S("approximate", approx);
      return rz_replace(c, r, KILN_NODE_Gelu, &x, 1, &a, 1, done);
    }
  }
  return NULL;
}

/* r = x * sigmoid(x) (SiLU) -> Swish with alpha 1. */
static kiln_status rz_try_swish(rz_ctx *c, kiln_node *r, bool *done) {
  if (kiln_node_get_kind(r) != KILN_NODE_Mul || !rz_is_f32(rz_out(r)))
    return NULL;
  for (uint32_t i = 0; i < 2; i++) {
    kiln_value *s = rz_in(r, i), *x = rz_in(r, 1 - i);
    kiln_node *sg = rz_once(s) ? rz_prod(s, KILN_NODE_Sigmoid) : NULL;
    if (sg && rz_in(sg, 0) == x && rz_same_type(x, rz_out(r))) {
      kiln_attr_desc a = KILN_ATTR_F("alpha", 1.0);
      return rz_replace(c, r, KILN_NODE_Swish, &x, 1, &a, 1, done);
    }
  }
  return NULL;
}

/* r = e / ReduceSum(e) over one axis, e = Exp(x) or Exp(x - ReduceMax(x)). */
static kiln_status rz_try_softmax(rz_ctx *c, kiln_node *r, bool *done) {
  if (kiln_node_get_kind(r) != KILN_NODE_Div || !rz_is_f32(rz_out(r)))
    return NULL;
  kiln_value *e = rz_in(r, 0), *s = rz_in(r, 1);
  uint32_t rank = kiln_value_type(e)->rank;
  kiln_node *ex = rz_prod(e, KILN_NODE_Exp);
  kiln_node *sum = rz_once(s) ? rz_prod(s, KILN_NODE_ReduceSum) : NULL;
  int64_t axis;
  if (!ex || !sum || rz_in(sum, 0) != e || kiln_value_use_count(e) != 2 ||
      !rz_same_type(e, rz_out(r)) || rank == 0)
    return NULL;
  const kiln_attr *ax = kiln_attrs_find(kiln_node_attrs(sum), "axes");
  if (!ax || kiln_attr_len(ax) != 1 || kiln_attrs_int_or(kiln_node_attrs(sum), "keepdims", 1) != 1)
    return NULL;
  axis = kiln_attr_ints(ax)[0] < 0 ? kiln_attr_ints(ax)[0] + rank : kiln_attr_ints(ax)[0];
  if (axis < 0 || axis >= (int64_t)rank || kiln_node_input_count(sum) != 1)
    return NULL;
  kiln_value *x = rz_in(ex, 0);
  kiln_node *sub = rz_once(x) ? rz_prod(x, KILN_NODE_Sub) : NULL;
  kiln_node *mx = sub && rz_once(rz_in(sub, 1)) ? rz_prod(rz_in(sub, 1), KILN_NODE_ReduceMax)
                                                 : NULL;
  if (mx && rz_in(mx, 0) == rz_in(sub, 0) && rz_same_axes(mx, sum, rank) &&
      rz_same_type(rz_in(sub, 0), x))
    x = rz_in(sub, 0); /* the max subtraction is Softmax's own */
  if (!rz_same_type(x, rz_out(r)))
    return NULL;
  kiln_attr_desc a = KILN_ATTR_I("axis", axis);
  return rz_replace(c, r, KILN_NODE_Softmax, &x, 1, &a, 1, done);
}

kiln_status kiln_pass_recognize(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  kiln_node **nodes = NULL;
  uint32_t n = 0;
  KILN_TRY(kiln_pass_snapshot(f, &nodes, &n));
  rz_ctx c = {f, o, 0, NULL, 16};
  while (c.cap < 2 * (size_t)n)
    c.cap *= 2;
  c.gone = calloc(c.cap, sizeof *c.gone);
  if (!c.gone) {
    free(nodes);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "recognize: no memory for %u nodes", n);
  }
  kiln_status s = NULL;
  for (uint32_t i = n; i-- > 0 && !s;) {
    kiln_node *r = nodes[i];
    if (rz_gone(&c, r) || kiln_node_result_count(r) != 1 ||
        kiln_value_use_count(kiln_node_result(r, 0)) == 0)
      continue;
    bool done = false;
    s = rz_try_norm(&c, r, &done);
    if (!s && !done)
      s = rz_try_gelu(&c, r, &done);
    if (!s && !done)
      s = rz_try_swish(&c, r, &done);
    if (!s && !done)
      s = rz_try_softmax(&c, r, &done);
    if (s)
      s = kiln_status_wrap(s, "recognize: node '%s'", kiln_node_name(r));
  }
  free(nodes);
  free(c.gone);
  if (changes)
    *changes += c.changes;
  return s;
}
