/* tools/graphgen.c: the random graph generator (see graphgen.h).
 *
 * Every tensor in the pool carries a conservative value range [lo, hi]. A
 * candidate node is first checked with kiln_infer_types on plain types, so
 * that a refused draw leaves no stray constants in the module; only then are
 * its fresh operands (constants, inputs) created and the node appended. The
 * ranges decide where a Clip must guard a domain (Log wants positives, a
 * divisor must not reach 0) and reject draws whose results could leave
 * [-1e6, 1e6], which keeps float results finite and integer arithmetic and
 * float-to-integer casts free of overflow on every backend. */
#include "graphgen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GG_POOL 64
#define GG_MAX_NUMEL 4096
#define GG_BOUND 1e6
#define GG_MAX_INPUTS 5
#define GG_MAX_OPS 8

typedef struct gg_val {
  kiln_value *v;
  double lo, hi;
} gg_val;

/* A node operand: an existing value, a fresh constant, or a fresh input. */
typedef struct gg_opnd {
  kiln_value *v; /* existing; NULL = fresh (or absent) */
  kiln_type t;
  double lo, hi;
  bool input;         /* fresh module input instead of a constant */
  bool absent;        /* optional input left out */
  const double *vals; /* fresh constant with exact values (numel entries) */
} gg_opnd;

typedef struct gg {
  uint64_t s;
  kiln_module *m;
  kiln_function *f;
  gg_val pool[GG_POOL];
  uint32_t npool, ninputs, nconsts, nnodes;
  kiln_status err; /* a hard failure; stops generation */
} gg;

/* ---- randomness (splitmix64: tiny, fast, and the same everywhere) ---- */
static uint64_t gg_next(gg *g) {
  uint64_t z = (g->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint32_t gg_below(gg *g, uint32_t n) {
  return n ? (uint32_t)(gg_next(g) % n) : 0;
}
static int64_t gg_irange(gg *g, int64_t lo, int64_t hi) {
  return hi <= lo ? lo : lo + (int64_t)(gg_next(g) % (uint64_t)(hi - lo + 1));
}
static double gg_unit(gg *g) {
  return (double)(gg_next(g) >> 11) * 0x1.0p-53;
}
static bool gg_chance(gg *g, double p) {
  return gg_unit(g) < p;
}
static double gg_uniform(gg *g, double lo, double hi) {
  return lo + (hi - lo) * gg_unit(g);
}

/* Attribute floats on a 1/16 grid print short and are exact in f16. */
static double gg_param(gg *g, double lo, double hi) {
  return round(gg_uniform(g, lo, hi) * 16.0) / 16.0;
}

/* ---- element types and data ---- */
#define GG_BIT(e) (1u << (e))
#define GG_FLOATS (GG_BIT(KILN_F32) | GG_BIT(KILN_F64) | GG_BIT(KILN_F16) | GG_BIT(KILN_BF16))
#define GG_SINTS (GG_BIT(KILN_I8) | GG_BIT(KILN_I16) | GG_BIT(KILN_I32) | GG_BIT(KILN_I64))
#define GG_UINTS (GG_BIT(KILN_U8) | GG_BIT(KILN_U16) | GG_BIT(KILN_U32) | GG_BIT(KILN_U64))
#define GG_INTS (GG_SINTS | GG_UINTS)
#define GG_NUMS (GG_FLOATS | GG_INTS)
#define GG_SIGNED (GG_FLOATS | GG_SINTS)
/* MatMul and CumSum: floats and the 32- and 64-bit integers. */
#define GG_MATMUL                                                                                  \
  (GG_FLOATS | GG_BIT(KILN_I32) | GG_BIT(KILN_I64) | GG_BIT(KILN_U32) | GG_BIT(KILN_U64))
#define GG_BOOLS GG_BIT(KILN_BOOL)

static bool gg_isint(kiln_elem e) {
  return kiln_elem_is_signed_int(e) || kiln_elem_is_unsigned_int(e);
}

/* The ranges kiln_graphgen_inputs draws from, per element type. */
static void gg_input_range(kiln_elem e, double *lo, double *hi) {
  if (e == KILN_BOOL) {
    *lo = 0, *hi = 1;
  } else if (kiln_elem_is_unsigned_int(e)) {
    *lo = 0, *hi = 4;
  } else if (gg_isint(e)) {
    *lo = -4, *hi = 4;
  } else {
    *lo = -2, *hi = 2;
  }
}

static void gg_elem_bounds(kiln_elem e, double *lo, double *hi);

/* A random element in [lo, hi] (cut to what e holds): integers uniformly,
 * floats on a 1/64 grid (exact in every float type up to 4 in magnitude,
 * so backends see identical data). */
static double gg_rand_value(gg *g, kiln_elem e, double lo, double hi) {
  if (e == KILN_BOOL)
    return (double)gg_below(g, 2);
  double el, eh;
  gg_elem_bounds(e, &el, &eh);
  lo = fmax(lo, el), hi = fmin(hi, eh);
  if (hi < lo)
    hi = lo;
  if (gg_isint(e))
    return (double)gg_irange(g, (int64_t)ceil(lo), (int64_t)floor(hi));
  double v = round(gg_uniform(g, lo, hi) * 64.0) / 64.0;
  return v < lo ? lo : v > hi ? hi : v;
}

static kiln_type gg_mk(kiln_elem e, uint32_t rank, const int64_t *dims) {
  kiln_type t;
  kiln_status s = kiln_type_make(e, rank, dims, &t);
  kiln_status_free(s); /* callers only build small, valid shapes */
  return t;
}

static int64_t gg_dim(gg *g) {
  static const int64_t d[] = {1, 1, 2, 3, 4, 5, 7};
  return d[gg_below(g, 7)];
}

static kiln_elem gg_pick_elem(gg *g, uint32_t mask) {
  /* f32 dominates, as in real models. */
  if ((mask & GG_BIT(KILN_F32)) && gg_chance(g, 0.7))
    return KILN_F32;
  kiln_elem c[KILN_ELEM_COUNT];
  uint32_t n = 0;
  for (int e = 0; e < KILN_ELEM_COUNT; e++)
    if (mask & GG_BIT(e))
      c[n++] = (kiln_elem)e;
  return c[gg_below(g, n)];
}

/* What an element type holds exactly enough for range tracking: results
 * must stay inside it (no integer wrap-around, no float16 overflow). */
static void gg_elem_bounds(kiln_elem e, double *lo, double *hi) {
  switch (e) {
  case KILN_I8:
    *lo = -128, *hi = 127;
    return;
  case KILN_U8:
    *lo = 0, *hi = 255;
    return;
  case KILN_I16:
    *lo = -32768, *hi = 32767;
    return;
  case KILN_U16:
    *lo = 0, *hi = 65535;
    return;
  case KILN_F16:
    *lo = -6e4, *hi = 6e4;
    return;
  case KILN_U32:
  case KILN_U64:
    *lo = 0, *hi = GG_BOUND;
    return;
  case KILN_BOOL:
    *lo = 0, *hi = 1;
    return;
  default:
    *lo = -GG_BOUND, *hi = GG_BOUND;
    return;
  }
}

static bool gg_range_ok(kiln_elem e, double lo, double hi) {
  double el, eh;
  gg_elem_bounds(e, &el, &eh);
  return isfinite(lo) && isfinite(hi) && lo >= el && hi <= eh && lo <= hi;
}

static double gg_absmax(double lo, double hi) {
  return fmax(fabs(lo), fabs(hi));
}

/* ---- the pool ---- */
static void gg_push(gg *g, kiln_value *v, double lo, double hi) {
  if (g->npool == GG_POOL) {
    memmove(g->pool, g->pool + 1, (GG_POOL - 1) * sizeof g->pool[0]);
    g->npool--;
  }
  const kiln_type *t = kiln_value_type(v);
  if (t->elem == KILN_BOOL)
    lo = 0, hi = 1;
  g->pool[g->npool++] = (gg_val){v, lo, hi};
}

typedef struct gg_want {
  uint32_t elems;
  uint32_t min_rank, max_rank;
  bool empty_ok; /* the generator is defined on zero-size tensors */
} gg_want;

static bool gg_fits(const kiln_type *t, const gg_want *w) {
  return (w->elems & GG_BIT(t->elem)) && t->rank >= w->min_rank && t->rank <= w->max_rank &&
         (w->empty_ok || kiln_type_numel(t) > 0);
}

static kiln_status gg_add_input(gg *g, const kiln_type *t, gg_val *out) {
  char name[16];
  snprintf(name, sizeof name, "x%u", g->ninputs);
  kiln_value *v;
  KILN_TRY(kiln_module_add_input(g->m, name, t, &v));
  g->ninputs++;
  double lo, hi;
  gg_input_range(t->elem, &lo, &hi);
  gg_push(g, v, lo, hi);
  *out = g->pool[g->npool - 1];
  return NULL;
}

static bool gg_emit(gg *g, kiln_node_kind kind, gg_opnd *ops, uint32_t n,
                    const kiln_attr_desc *attrs, uint32_t na, uint32_t nres, const double *lo,
                    const double *hi);

static gg_opnd gg_use(const gg_val *v) {
  return (gg_opnd){.v = v->v, .t = *kiln_value_type(v->v), .lo = v->lo, .hi = v->hi};
}

/* A random new input matching w (a bf16 one is an f32 input and a Cast,
 * since .npy files have no bf16). */
static bool gg_new_input(gg *g, const gg_want *w, gg_val *out) {
  if (g->ninputs >= GG_MAX_INPUTS)
    return false;
  uint32_t hi = w->max_rank < 4 ? w->max_rank : 4;
  uint32_t lo = w->min_rank > hi ? hi : w->min_rank;
  uint32_t rank = (uint32_t)gg_irange(g, lo, hi);
  if (rank == 0 && lo == 0 && hi > 0 && gg_chance(g, 0.8))
    rank = 1 + gg_below(g, hi);
  int64_t dims[KILN_MAX_RANK] = {0};
  for (uint32_t i = 0; i < rank; i++)
    dims[i] = gg_dim(g);
  /* Now and then an empty tensor, for the kinds that are defined on one. */
  if (w->empty_ok && rank > 0 && gg_chance(g, 0.05))
    dims[gg_below(g, rank)] = 0;
  kiln_elem e = gg_pick_elem(g, w->elems);
  bool bf16 = e == KILN_BF16;
  if (bf16)
    e = KILN_F32; /* an f32 input, then a Cast */
  kiln_type t = gg_mk(e, rank, dims);
  kiln_status s = gg_add_input(g, &t, out);
  if (s) {
    g->err = s;
    return false;
  }
  if (bf16) {
    kiln_attr_desc at[1] = {KILN_ATTR_T("to", KILN_BF16)};
    gg_opnd op = gg_use(out);
    if (!gg_emit(g, KILN_NODE_Cast, &op, 1, at, 1, 1, &out->lo, &out->hi))
      return false;
    *out = g->pool[g->npool - 1];
  }
  return true;
}

/* A base operand: mostly the newest fitting value (chains), sometimes an
 * older one (diamonds), sometimes a new input. */
static bool gg_base(gg *g, const gg_want *w, gg_val *out) {
  uint32_t idx[GG_POOL], n = 0;
  for (uint32_t i = 0; i < g->npool; i++)
    if (gg_fits(kiln_value_type(g->pool[i].v), w))
      idx[n++] = i;
  if (n == 0 || gg_chance(g, 0.08))
    if (gg_new_input(g, w, out))
      return true;
  if (n == 0)
    return false;
  *out = g->pool[gg_chance(g, 0.55) ? idx[n - 1] : idx[gg_below(g, n)]];
  return true;
}

/* A fresh constant; its range is cut to what e holds (an unsigned
 * operand drawn from [-1, 1] gets [0, 1]). */
static gg_opnd gg_fresh(kiln_elem e, uint32_t rank, const int64_t *dims, double lo, double hi) {
  double el, eh;
  gg_elem_bounds(e, &el, &eh);
  lo = fmax(lo, el), hi = fmin(hi, eh);
  if (hi < lo)
    lo = hi = el;
  return (gg_opnd){.t = gg_mk(e, rank, dims), .lo = lo, .hi = hi};
}

/* Numpy broadcasting of two shapes; false if incompatible or too big. */
static bool gg_bcast(const kiln_type *a, const kiln_type *b, kiln_type *out) {
  uint32_t r = a->rank > b->rank ? a->rank : b->rank;
  int64_t d[KILN_MAX_RANK] = {0};
  for (uint32_t i = 0; i < r; i++) {
    int64_t x = i < r - a->rank ? 1 : a->dims[i - (r - a->rank)];
    int64_t y = i < r - b->rank ? 1 : b->dims[i - (r - b->rank)];
    if (x != y && x != 1 && y != 1)
      return false;
    d[i] = x == 1 ? y : x;
  }
  *out = gg_mk(a->elem, r, d);
  return kiln_type_numel(out) <= GG_MAX_NUMEL;
}

/* A second operand for an elementwise node on `a`: a pool value of the
 * same element type that broadcasts with a, or a fresh one whose shape is
 * a's with leading dims dropped and some dims set to 1 (and, if expand, some
 * of a's 1-dims grown). Fresh constants take values in [lo, hi]. */
static gg_opnd gg_second(gg *g, const kiln_type *a, kiln_elem e, double lo, double hi, bool expand,
                         bool input_ok) {
  if (gg_chance(g, 0.4)) {
    uint32_t idx[GG_POOL], n = 0;
    for (uint32_t i = 0; i < g->npool; i++) {
      const kiln_type *t = kiln_value_type(g->pool[i].v);
      kiln_type r;
      if (t->elem != e || !gg_bcast(a, t, &r))
        continue;
      if (!expand && !(r.rank == a->rank && memcmp(r.dims, a->dims, sizeof r.dims) == 0))
        continue;
      if (g->pool[i].lo < lo || g->pool[i].hi > hi)
        continue;
      idx[n++] = i;
    }
    if (n)
      return gg_use(&g->pool[idx[gg_below(g, n)]]);
  }
  uint32_t drop = gg_chance(g, 0.3) ? gg_below(g, a->rank + 1) : 0;
  int64_t d[KILN_MAX_RANK] = {0};
  uint32_t r = a->rank - drop;
  for (uint32_t i = 0; i < r; i++) {
    d[i] = a->dims[drop + i];
    if (gg_chance(g, 0.25))
      d[i] = 1;
    else if (expand && d[i] == 1 && gg_chance(g, 0.2))
      d[i] = gg_dim(g);
  }
  gg_opnd o = gg_fresh(e, r, d, lo, hi);
  double ilo, ihi;
  gg_input_range(e, &ilo, &ihi);
  if (input_ok && e != KILN_BF16 && g->ninputs < GG_MAX_INPUTS && ilo >= lo && ihi <= hi &&
      gg_chance(g, 0.25)) {
    o.input = true;
    o.lo = ilo, o.hi = ihi;
  }
  return o;
}

/* ---- checking and appending nodes ---- */
static bool gg_infer(gg *g, kiln_node_kind kind, const gg_opnd *ops, uint32_t n,
                     const kiln_attr_desc *attrs, uint32_t na, uint32_t nres, kiln_type *rt,
                     uint32_t *nr) {
  const kiln_type *in[GG_MAX_OPS];
  for (uint32_t i = 0; i < n; i++)
    in[i] = ops[i].absent ? NULL : &ops[i].t;
  kiln_attrs *as = NULL;
  kiln_status s = kiln_attrs_create(NULL, attrs, na, &as);
  if (!s)
    s = kiln_infer_types(kind, in, n, as, nres, rt, nr);
  kiln_attrs_destroy(NULL, as);
  if (s) {
    kiln_status_free(s);
    return false;
  }
  (void)g;
  /* An empty result only from an empty operand: otherwise some attribute
   * (a slice, a split) came out degenerate. */
  bool empty_in = false;
  for (uint32_t i = 0; i < n; i++)
    empty_in = empty_in || (!ops[i].absent && kiln_type_numel(&ops[i].t) == 0);
  for (uint32_t i = 0; i < *nr; i++)
    if (kiln_type_numel(&rt[i]) > GG_MAX_NUMEL || (kiln_type_numel(&rt[i]) == 0 && !empty_in))
      return false;
  return true;
}

static kiln_status gg_materialize(gg *g, gg_opnd *o) {
  if (o->v || o->absent)
    return NULL;
  if (o->input) {
    gg_val v;
    KILN_TRY(gg_add_input(g, &o->t, &v));
    o->v = v.v;
    return NULL;
  }
  int64_t n = kiln_type_numel(&o->t);
  size_t bytes = (size_t)kiln_type_bytes(&o->t);
  void *data = calloc(1, bytes ? bytes : 1);
  if (!data)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "graphgen: constant data of %zu bytes", bytes);
  for (int64_t i = 0; i < n; i++)
    kiln_elem_store_f64(o->t.elem, data, i,
                        o->vals ? o->vals[i] : gg_rand_value(g, o->t.elem, o->lo, o->hi));
  char name[16];
  snprintf(name, sizeof name, "c%u", g->nconsts++);
  kiln_status s = kiln_module_add_constant(g->m, name, &o->t, data, &o->v);
  free(data);
  return s;
}

/* Append a node whose inference already passed; its results join the pool
 * with the given ranges. */
static bool gg_emit(gg *g, kiln_node_kind kind, gg_opnd *ops, uint32_t n,
                    const kiln_attr_desc *attrs, uint32_t na, uint32_t nres, const double *lo,
                    const double *hi) {
  kiln_value *vals[GG_MAX_OPS];
  for (uint32_t i = 0; i < n; i++) {
    kiln_status s = gg_materialize(g, &ops[i]);
    if (s) {
      g->err = s;
      return false;
    }
    vals[i] = ops[i].absent ? NULL : ops[i].v;
  }
  kiln_node *node;
  kiln_status s = kiln_function_add_node(g->f, kind, NULL, vals, n, attrs, na, nres, &node);
  if (s) {
    g->err = kiln_status_wrap(s, "graphgen: %s passed kiln_infer_types but the builder refused it",
                              kiln_node_kind_name(kind));
    return false;
  }
  g->nnodes++;
  for (uint32_t i = 0; i < kiln_node_result_count(node); i++)
    gg_push(g, kiln_node_result(node, i), lo[i], hi[i]);
  return true;
}

static bool gg_try1(gg *g, kiln_node_kind kind, gg_opnd *ops, uint32_t n,
                    const kiln_attr_desc *attrs, uint32_t na, double lo, double hi) {
  kiln_type rt[4];
  uint32_t nr;
  if (!gg_infer(g, kind, ops, n, attrs, na, 1, rt, &nr))
    return false;
  if (rt[0].elem == KILN_BOOL)
    lo = 0, hi = 1;
  if (gg_isint(rt[0].elem))
    lo = floor(lo), hi = ceil(hi);
  if (!gg_range_ok(rt[0].elem, lo, hi))
    return false;
  return gg_emit(g, kind, ops, n, attrs, na, 1, &lo, &hi);
}

/* Clip v into [lo, hi] (a guard before a domain-restricted node). */
static bool gg_clip(gg *g, gg_val *v, double lo, double hi) {
  kiln_elem e = kiln_value_type(v->v)->elem;
  if (gg_isint(e))
    lo = ceil(lo), hi = floor(hi);
  double el, eh;
  gg_elem_bounds(e, &el, &eh);
  lo = fmax(lo, el), hi = fmin(hi, eh);
  if (hi < lo)
    hi = lo;
  gg_opnd ops[3] = {gg_use(v), gg_fresh(e, 0, NULL, lo, lo), gg_fresh(e, 0, NULL, hi, hi)};
  ops[1].vals = &lo;
  ops[2].vals = &hi;
  double rlo = fmin(fmax(v->lo, lo), hi), rhi = fmin(fmax(v->hi, lo), hi);
  if (!gg_try1(g, KILN_NODE_Clip, ops, 3, NULL, 0, rlo, rhi))
    return false;
  *v = g->pool[g->npool - 1];
  return true;
}

static int64_t gg_norm_axis(int64_t axis, uint32_t rank) {
  return axis < 0 ? axis + rank : axis;
}
static int64_t gg_axis(gg *g, uint32_t rank) {
  int64_t a = gg_irange(g, 0, (int64_t)rank - 1);
  return gg_chance(g, 0.3) ? a - rank : a;
}

/* ---- generators: each draws one node (plus guards) and returns whether
 * it appended anything ---- */

typedef struct gg_unary_row {
  kiln_node_kind kind;
  uint32_t elems;
  double dlo, dhi; /* domain the input must stay in */
} gg_unary_row;

static const gg_unary_row gg_unary_rows[] = {
    {KILN_NODE_Abs, GG_NUMS, -INFINITY, INFINITY},
    {KILN_NODE_Neg, GG_SIGNED, -INFINITY, INFINITY},
    {KILN_NODE_Sign, GG_NUMS, -INFINITY, INFINITY},
    {KILN_NODE_Relu, GG_SIGNED, -INFINITY, INFINITY},
    {KILN_NODE_Identity, GG_NUMS | GG_BOOLS, -INFINITY, INFINITY},
    {KILN_NODE_Not, GG_BOOLS, -INFINITY, INFINITY},
    {KILN_NODE_Acos, GG_FLOATS, -1, 1},
    {KILN_NODE_Acosh, GG_FLOATS, 1, INFINITY},
    {KILN_NODE_Asin, GG_FLOATS, -1, 1},
    {KILN_NODE_Asinh, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Atan, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Atanh, GG_FLOATS, -0.875, 0.875},
    {KILN_NODE_Ceil, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Cos, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Cosh, GG_FLOATS, -8, 8},
    {KILN_NODE_Erf, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Exp, GG_FLOATS, -INFINITY, 8},
    {KILN_NODE_Floor, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Log, GG_FLOATS, 0.5, INFINITY},
    {KILN_NODE_Reciprocal, GG_FLOATS, 0.5, INFINITY},
    {KILN_NODE_Round, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Sigmoid, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Sin, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Sinh, GG_FLOATS, -8, 8},
    {KILN_NODE_Softplus, GG_FLOATS, -INFINITY, 20},
    {KILN_NODE_Softsign, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Sqrt, GG_FLOATS, 0.25, INFINITY},
    {KILN_NODE_Tan, GG_FLOATS, -1.375, 1.375},
    {KILN_NODE_Tanh, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_IsInf, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_IsNaN, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Elu, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Selu, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Celu, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_HardSigmoid, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_HardSwish, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_LeakyRelu, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_ThresholdedRelu, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Shrink, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Gelu, GG_FLOATS, -INFINITY, INFINITY},
    {KILN_NODE_Dropout, GG_FLOATS, -INFINITY, INFINITY},
};

/* Double-precision reference of a unary kind, only for range tracking. */
static double gg_eval_unary(kiln_node_kind k, double x, double a, double b, bool approx) {
  switch (k) {
  case KILN_NODE_Abs:
    return fabs(x);
  case KILN_NODE_Neg:
    return -x;
  case KILN_NODE_Sign:
    return x > 0 ? 1 : x < 0 ? -1 : 0;
  case KILN_NODE_Relu:
    return x > 0 ? x : 0;
  case KILN_NODE_Not:
    return x == 0;
  case KILN_NODE_Acos:
    return acos(x);
  case KILN_NODE_Acosh:
    return acosh(x);
  case KILN_NODE_Asin:
    return asin(x);
  case KILN_NODE_Asinh:
    return asinh(x);
  case KILN_NODE_Atan:
    return atan(x);
  case KILN_NODE_Atanh:
    return atanh(x);
  case KILN_NODE_Ceil:
    return ceil(x);
  case KILN_NODE_Cos:
    return cos(x);
  case KILN_NODE_Cosh:
    return cosh(x);
  case KILN_NODE_Erf:
    return erf(x);
  case KILN_NODE_Exp:
    return exp(x);
  case KILN_NODE_Floor:
    return floor(x);
  case KILN_NODE_Log:
    return log(x);
  case KILN_NODE_Reciprocal:
    return 1.0 / x;
  case KILN_NODE_Round:
    return nearbyint(x);
  case KILN_NODE_Sigmoid:
    return 1.0 / (1.0 + exp(-x));
  case KILN_NODE_Sin:
    return sin(x);
  case KILN_NODE_Sinh:
    return sinh(x);
  case KILN_NODE_Softplus:
    return log1p(exp(x));
  case KILN_NODE_Softsign:
    return x / (1.0 + fabs(x));
  case KILN_NODE_Sqrt:
    return sqrt(x);
  case KILN_NODE_Tan:
    return tan(x);
  case KILN_NODE_Tanh:
    return tanh(x);
  case KILN_NODE_IsInf:
  case KILN_NODE_IsNaN:
    return 0;
  case KILN_NODE_Elu:
    return x < 0 ? a * (exp(x) - 1) : x;
  case KILN_NODE_Selu:
    return b * (x > 0 ? x : a * (exp(x) - 1));
  case KILN_NODE_Celu:
    return fmax(0, x) + fmin(0, a * (exp(x / a) - 1));
  case KILN_NODE_HardSigmoid:
    return fmax(0, fmin(1, a * x + b));
  case KILN_NODE_HardSwish:
    return x * fmax(0, fmin(1, x / 6 + 0.5));
  case KILN_NODE_LeakyRelu:
    return x < 0 ? a * x : x;
  case KILN_NODE_ThresholdedRelu:
    return x > a ? x : 0;
  case KILN_NODE_Shrink:
    return x < -b ? x + a : x > b ? x - a : 0;
  case KILN_NODE_Gelu:
    return approx ? 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
                  : 0.5 * x * (1 + erf(x / sqrt(2.0)));
  default:
    return x;
  }
}

static bool gg_gen_unary(gg *g) {
  const gg_unary_row *r = &gg_unary_rows[gg_below(g, sizeof gg_unary_rows / sizeof *gg_unary_rows)];
  gg_val a;
  if (!gg_base(g, &(gg_want){r->elems, 0, KILN_MAX_RANK, true}, &a))
    return false;
  if (a.lo < r->dlo || a.hi > r->dhi) {
    double lo = r->dlo, hi = isfinite(r->dhi) ? r->dhi : fmax(a.hi, lo + 1);
    if (!gg_clip(g, &a, isfinite(lo) ? lo : fmax(a.lo, hi - 4), hi))
      return false;
  }
  kiln_attr_desc at[2];
  uint32_t na = 0;
  double p0 = 1, p1 = 0;
  bool approx = false;
  switch (r->kind) {
  case KILN_NODE_Elu:
  case KILN_NODE_Celu:
  case KILN_NODE_LeakyRelu:
  case KILN_NODE_ThresholdedRelu:
    p0 = gg_param(g, 0.125, 2);
    at[na++] = KILN_ATTR_F("alpha", p0);
    break;
  case KILN_NODE_Selu:
    p0 = gg_param(g, 0.5, 2), p1 = gg_param(g, 0.5, 1.5);
    at[na++] = KILN_ATTR_F("alpha", p0);
    at[na++] = KILN_ATTR_F("gamma", p1);
    break;
  case KILN_NODE_HardSigmoid:
    p0 = gg_param(g, 0.125, 1), p1 = gg_param(g, 0, 1);
    at[na++] = KILN_ATTR_F("alpha", p0);
    at[na++] = KILN_ATTR_F("beta", p1);
    break;
  case KILN_NODE_Shrink:
    p0 = gg_param(g, 0, 1), p1 = gg_param(g, 0, 1);
    at[na++] = KILN_ATTR_F("bias", p0);
    at[na++] = KILN_ATTR_F("lambd", p1);
    break;
  case KILN_NODE_Gelu:
    approx = gg_chance(g, 0.5);
    at[na++] = KILN_ATTR_S("approximate", approx ? "tanh" : "none");
    break;
  default:
    break;
  }
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i <= 64; i++) {
    double x = a.lo + (a.hi - a.lo) * i / 64.0;
    double y = gg_eval_unary(r->kind, x, p0, p1, approx);
    lo = fmin(lo, y), hi = fmax(hi, y);
  }
  if (a.lo < 0 && a.hi > 0) {
    double y = gg_eval_unary(r->kind, 0, p0, p1, approx);
    lo = fmin(lo, y), hi = fmax(hi, y);
  }
  if (!gg_isint(kiln_value_type(a.v)->elem)) {
    double m = 1e-3 * (hi - lo) + 1e-3;
    lo -= m, hi += m;
  }
  gg_opnd op = gg_use(&a);
  return gg_try1(g, r->kind, &op, 1, at, na, lo, hi);
}

static bool gg_gen_cast(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS | GG_BOOLS, 0, KILN_MAX_RANK, true}, &a))
    return false;
  kiln_elem to = gg_pick_elem(g, GG_NUMS | GG_BOOLS);
  kiln_elem from = kiln_value_type(a.v)->elem;
  /* Negative values have no unsigned counterpart: clamp them away first. */
  if (kiln_elem_is_unsigned_int(to) && from != KILN_BOOL && a.lo < 0 &&
      !gg_clip(g, &a, 0, fmax(a.hi, 1)))
    return false;
  kiln_attr_desc at[1] = {KILN_ATTR_T("to", to)};
  double lo = a.lo, hi = a.hi;
  if (gg_isint(to))
    lo = trunc(lo), hi = trunc(hi);
  gg_opnd op = gg_use(&a);
  return gg_try1(g, KILN_NODE_Cast, &op, 1, at, 1, lo, hi);
}

static void gg_interval(kiln_node_kind k, double al, double ah, double bl, double bh, double *lo,
                        double *hi) {
  double c[4];
  switch (k) {
  case KILN_NODE_Add:
    *lo = al + bl, *hi = ah + bh;
    return;
  case KILN_NODE_Sub:
    *lo = al - bh, *hi = ah - bl;
    return;
  case KILN_NODE_Mul:
    c[0] = al * bl, c[1] = al * bh, c[2] = ah * bl, c[3] = ah * bh;
    break;
  case KILN_NODE_Div:
    c[0] = al / bl, c[1] = al / bh, c[2] = ah / bl, c[3] = ah / bh;
    break;
  case KILN_NODE_Pow:
    c[0] = pow(al, bl), c[1] = pow(al, bh), c[2] = pow(ah, bl), c[3] = pow(ah, bh);
    break;
  case KILN_NODE_PRelu:
    c[0] = fmin(0, al) * bl, c[1] = fmin(0, al) * bh, c[2] = fmax(0, ah), c[3] = fmin(al, 0);
    break;
  case KILN_NODE_Mod:
    *hi = gg_absmax(bl, bh), *lo = -*hi;
    return;
  case KILN_NODE_Max:
    *lo = fmax(al, bl), *hi = fmax(ah, bh);
    return;
  case KILN_NODE_Min:
    *lo = fmin(al, bl), *hi = fmin(ah, bh);
    return;
  default:
    *lo = 0, *hi = 1;
    return;
  }
  *lo = fmin(fmin(c[0], c[1]), fmin(c[2], c[3]));
  *hi = fmax(fmax(c[0], c[1]), fmax(c[2], c[3]));
}

static bool gg_gen_binary(gg *g) {
  static const kiln_node_kind kinds[] = {KILN_NODE_Add,
                                         KILN_NODE_Sub,
                                         KILN_NODE_Mul,
                                         KILN_NODE_Div,
                                         KILN_NODE_Pow,
                                         KILN_NODE_Mod,
                                         KILN_NODE_Equal,
                                         KILN_NODE_Greater,
                                         KILN_NODE_Less,
                                         KILN_NODE_LessOrEqual,
                                         KILN_NODE_GreaterOrEqual,
                                         KILN_NODE_And,
                                         KILN_NODE_Or,
                                         KILN_NODE_Xor,
                                         KILN_NODE_PRelu,
                                         KILN_NODE_BitShift,
                                         KILN_NODE_Add,
                                         KILN_NODE_Mul,
                                         KILN_NODE_Sub};
  kiln_node_kind k = kinds[gg_below(g, sizeof kinds / sizeof *kinds)];
  uint32_t elems = GG_NUMS;
  if (k == KILN_NODE_And || k == KILN_NODE_Or || k == KILN_NODE_Xor)
    elems = GG_BOOLS;
  else if (k == KILN_NODE_Pow || k == KILN_NODE_PRelu)
    elems = GG_FLOATS;
  else if (k == KILN_NODE_BitShift)
    elems = GG_UINTS;
  gg_val a;
  if (!gg_base(g, &(gg_want){elems, 0, KILN_MAX_RANK, true}, &a))
    return false;
  const kiln_type *at = kiln_value_type(a.v);
  bool isint = gg_isint(at->elem);
  double blo = isint ? -3 : -1, bhi = isint ? 3 : 1;
  bool guard_b = false;
  if (k == KILN_NODE_Div || k == KILN_NODE_Mod) {
    blo = isint ? 1 : 0.5, bhi = isint ? 3 : 2;
    guard_b = true;
  } else if (k == KILN_NODE_Pow) {
    if (a.lo < 0.5 && !gg_clip(g, &a, 0.5, fmax(a.hi, 1.5)))
      return false;
    at = kiln_value_type(a.v);
    blo = -2, bhi = 2;
  } else if (elems == GG_BOOLS) {
    blo = 0, bhi = 1;
  } else if (k == KILN_NODE_BitShift) {
    blo = 0, bhi = 3; /* shifts stay far below the bit width */
  }
  gg_opnd ops[2] = {gg_use(&a), gg_second(g, at, at->elem, blo, bhi, k != KILN_NODE_PRelu,
                                          !guard_b && k != KILN_NODE_Pow)};
  (void)guard_b;
  bool swap = k != KILN_NODE_PRelu && k != KILN_NODE_Div && k != KILN_NODE_Mod &&
              k != KILN_NODE_Pow && k != KILN_NODE_BitShift && gg_chance(g, 0.3);
  if (swap) {
    gg_opnd t = ops[0];
    ops[0] = ops[1], ops[1] = t;
  }
  kiln_attr_desc attrs[1];
  uint32_t na = 0;
  if (k == KILN_NODE_Mod)
    attrs[na++] = KILN_ATTR_I("fmod", isint ? (int64_t)gg_below(g, 2) : 1);
  double lo, hi;
  gg_interval(k, ops[0].lo, ops[0].hi, ops[1].lo, ops[1].hi, &lo, &hi);
  if (k == KILN_NODE_BitShift) {
    bool left = gg_chance(g, 0.5);
    attrs[na++] = KILN_ATTR_S("direction", left ? "LEFT" : "RIGHT");
    lo = 0, hi = left ? ops[0].hi * ldexp(1, (int)ops[1].hi) : ops[0].hi;
  }
  return gg_try1(g, k, ops, 2, attrs, na, lo, hi);
}

static bool gg_gen_variadic(gg *g) {
  static const kiln_node_kind kinds[] = {KILN_NODE_Max, KILN_NODE_Min, KILN_NODE_Mean,
                                         KILN_NODE_Sum};
  kiln_node_kind k = kinds[gg_below(g, 4)];
  gg_val a;
  if (!gg_base(g, &(gg_want){k == KILN_NODE_Mean ? GG_FLOATS : GG_NUMS, 0, KILN_MAX_RANK, true},
               &a))
    return false;
  const kiln_type *at = kiln_value_type(a.v);
  bool isint = gg_isint(at->elem);
  uint32_t n = 1 + gg_below(g, 4);
  gg_opnd ops[4];
  ops[0] = gg_use(&a);
  kiln_type shape = *at;
  double lo = a.lo, hi = a.hi, slo = a.lo, shi = a.hi;
  for (uint32_t i = 1; i < n; i++) {
    ops[i] = gg_second(g, &shape, at->elem, isint ? -3 : -1, isint ? 3 : 1, true, true);
    if (!gg_bcast(&shape, &ops[i].t, &shape))
      return false;
    slo += ops[i].lo, shi += ops[i].hi;
    if (k == KILN_NODE_Max)
      lo = fmax(lo, ops[i].lo), hi = fmax(hi, ops[i].hi);
    else
      lo = fmin(lo, ops[i].lo), hi = fmax(hi, ops[i].hi);
  }
  if (k == KILN_NODE_Sum)
    lo = slo, hi = shi;
  else if (k == KILN_NODE_Min)
    hi = fmin(hi, a.hi);
  return gg_try1(g, k, ops, n, NULL, 0, lo, hi);
}

static bool gg_gen_where(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS, 0, KILN_MAX_RANK, false}, &a))
    return false;
  const kiln_type *at = kiln_value_type(a.v);
  bool isint = gg_isint(at->elem);
  gg_opnd ops[3];
  ops[0] = gg_second(g, at, KILN_BOOL, 0, 1, true, true);
  ops[1] = gg_use(&a);
  ops[2] = gg_second(g, at, at->elem, isint ? -3 : -1, isint ? 3 : 1, true, true);
  if (gg_chance(g, 0.5)) {
    gg_opnd t = ops[1];
    ops[1] = ops[2], ops[2] = t;
  }
  return gg_try1(g, KILN_NODE_Where, ops, 3, NULL, 0, fmin(ops[1].lo, ops[2].lo),
                 fmax(ops[1].hi, ops[2].hi));
}

static bool gg_gen_clip(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS, 0, KILN_MAX_RANK, false}, &a))
    return false;
  kiln_elem e = kiln_value_type(a.v)->elem;
  double mid = (a.lo + a.hi) / 2;
  double mn = gg_rand_value(g, e, a.lo - 1, mid), mx = gg_rand_value(g, e, mid, a.hi + 1);
  if (mx < mn)
    mx = mn;
  gg_opnd ops[3] = {gg_use(&a), gg_fresh(e, 0, NULL, mn, mn), gg_fresh(e, 0, NULL, mx, mx)};
  ops[1].vals = &mn;
  ops[2].vals = &mx;
  uint32_t n = 3;
  if (gg_chance(g, 0.25))
    ops[1].absent = true, mn = -INFINITY;
  if (gg_chance(g, 0.25))
    ops[2].absent = true, mx = INFINITY;
  if (ops[2].absent)
    n = ops[1].absent ? 1 : 2;
  double lo = fmin(fmax(a.lo, mn), mx), hi = fmin(fmax(a.hi, mn), mx);
  return gg_try1(g, KILN_NODE_Clip, ops, n, NULL, 0, lo, hi);
}

/* Elements along the given axes (all when n == 0). */
static int64_t gg_count(const kiln_type *t, const int64_t *axes, uint32_t n) {
  if (n == 0)
    return kiln_type_numel(t);
  int64_t c = 1;
  for (uint32_t i = 0; i < n; i++)
    c *= t->dims[gg_norm_axis(axes[i], t->rank)];
  return c;
}

static uint32_t gg_axes(gg *g, uint32_t rank, int64_t *axes) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < rank; i++)
    if (gg_chance(g, 0.5))
      axes[n++] = gg_chance(g, 0.3) ? (int64_t)i - rank : (int64_t)i;
  return n;
}

static bool gg_gen_reduce(gg *g) {
  static const kiln_node_kind kinds[] = {KILN_NODE_ReduceL1,     KILN_NODE_ReduceL2,
                                         KILN_NODE_ReduceLogSum, KILN_NODE_ReduceLogSumExp,
                                         KILN_NODE_ReduceMax,    KILN_NODE_ReduceMean,
                                         KILN_NODE_ReduceMin,    KILN_NODE_ReduceProd,
                                         KILN_NODE_ReduceSum,    KILN_NODE_ReduceSumSquare};
  kiln_node_kind k = kinds[gg_below(g, 10)];
  bool floaty = k == KILN_NODE_ReduceL2 || k == KILN_NODE_ReduceLogSum ||
                k == KILN_NODE_ReduceLogSumExp || k == KILN_NODE_ReduceMean;
  gg_val a;
  if (!gg_base(g, &(gg_want){floaty ? GG_FLOATS : GG_NUMS, 1, KILN_MAX_RANK, false}, &a))
    return false;
  if (k == KILN_NODE_ReduceLogSum && a.lo < 0.5 && !gg_clip(g, &a, 0.5, fmax(a.hi, 1)))
    return false;
  if (k == KILN_NODE_ReduceLogSumExp && a.hi > 8 && !gg_clip(g, &a, fmin(a.lo, 0), 8))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  int64_t axes[KILN_MAX_RANK];
  uint32_t n = gg_axes(g, t->rank, axes);
  double c = (double)gg_count(t, axes, n), b = gg_absmax(a.lo, a.hi), lo, hi;
  switch (k) {
  case KILN_NODE_ReduceL1:
    lo = 0, hi = c * b;
    break;
  case KILN_NODE_ReduceL2:
    lo = 0, hi = sqrt(c) * b + 1e-3;
    break;
  case KILN_NODE_ReduceLogSum:
    lo = log(c * a.lo) - 1e-3, hi = log(c * a.hi) + 1e-3;
    break;
  case KILN_NODE_ReduceLogSumExp:
    lo = a.lo - 1e-3, hi = a.hi + log(c) + 1e-3;
    break;
  case KILN_NODE_ReduceProd:
    hi = b <= 1 ? b : pow(b, c), lo = -hi;
    break;
  case KILN_NODE_ReduceSum:
    lo = c * fmin(a.lo, 0), hi = c * fmax(a.hi, 0);
    break;
  case KILN_NODE_ReduceSumSquare:
    lo = 0, hi = c * b * b;
    break;
  default:
    lo = a.lo, hi = a.hi;
    break;
  }
  kiln_attr_desc at[2];
  uint32_t na = 0;
  if (n)
    at[na++] = KILN_ATTR_IS("axes", axes, n);
  at[na++] = KILN_ATTR_I("keepdims", (int64_t)gg_below(g, 2));
  gg_opnd op = gg_use(&a);
  return gg_try1(g, k, &op, 1, at, na, lo, hi);
}

static bool gg_gen_axis_op(gg *g) {
  static const kiln_node_kind kinds[] = {KILN_NODE_ArgMax,     KILN_NODE_ArgMin,  KILN_NODE_Softmax,
                                         KILN_NODE_LogSoftmax, KILN_NODE_Hardmax, KILN_NODE_CumSum};
  kiln_node_kind k = kinds[gg_below(g, 6)];
  bool args = k == KILN_NODE_ArgMax || k == KILN_NODE_ArgMin;
  gg_val a;
  uint32_t elems = args ? GG_NUMS : k == KILN_NODE_CumSum ? GG_MATMUL : GG_FLOATS;
  if (!gg_base(g, &(gg_want){elems, 1, KILN_MAX_RANK, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  int64_t axis = gg_axis(g, t->rank);
  double d = (double)t->dims[gg_norm_axis(axis, t->rank)], lo = 0, hi = 1;
  kiln_attr_desc at[3];
  uint32_t na = 0;
  at[na++] = KILN_ATTR_I("axis", axis);
  if (args) {
    at[na++] = KILN_ATTR_I("keepdims", (int64_t)gg_below(g, 2));
    at[na++] = KILN_ATTR_I("select_last_index", (int64_t)gg_below(g, 2));
    hi = d - 1;
  } else if (k == KILN_NODE_LogSoftmax) {
    lo = -(a.hi - a.lo) - log(d) - 1e-3, hi = 1e-3;
  } else if (k == KILN_NODE_CumSum) {
    at[na++] = KILN_ATTR_I("exclusive", (int64_t)gg_below(g, 2));
    at[na++] = KILN_ATTR_I("reverse", (int64_t)gg_below(g, 2));
    lo = d * fmin(a.lo, 0), hi = d * fmax(a.hi, 0);
  }
  gg_opnd op = gg_use(&a);
  return gg_try1(g, k, &op, 1, at, na, lo, hi);
}

static bool gg_gen_topk(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS, 1, KILN_MAX_RANK, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  int64_t axis = gg_axis(g, t->rank), d = t->dims[gg_norm_axis(axis, t->rank)];
  /* sorted = 1: an unsorted TopK may order its results any way it likes. */
  kiln_attr_desc at[4] = {KILN_ATTR_I("k", gg_irange(g, 1, d)), KILN_ATTR_I("axis", axis),
                          KILN_ATTR_I("largest", (int64_t)gg_below(g, 2)),
                          KILN_ATTR_I("sorted", 1)};
  gg_opnd op = gg_use(&a);
  kiln_type rt[4];
  uint32_t nr;
  if (!gg_infer(g, KILN_NODE_TopK, &op, 1, at, 4, 2, rt, &nr))
    return false;
  double lo[2] = {a.lo, 0}, hi[2] = {a.hi, (double)d - 1};
  return gg_emit(g, KILN_NODE_TopK, &op, 1, at, 4, 2, lo, hi);
}

static bool gg_gen_matmul(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_MATMUL, 1, 4, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  bool isint = gg_isint(t->elem);
  int64_t K = t->dims[t->rank - 1], d[KILN_MAX_RANK] = {0};
  uint32_t r = 2;
  uint32_t pick = gg_below(g, 10);
  if (pick < 2) {
    r = 1, d[0] = K;
  } else if (pick < 4 && t->rank > 2) {
    r = t->rank;
    for (uint32_t i = 0; i + 2 < r; i++)
      d[i] = gg_chance(g, 0.5) ? 1 : t->dims[i];
    d[r - 2] = K, d[r - 1] = gg_dim(g);
  } else {
    d[0] = K, d[1] = gg_dim(g);
  }
  double bb = isint ? 2 : 1;
  gg_opnd ops[2] = {gg_use(&a), gg_fresh(t->elem, r, d, -bb, bb)};
  double hi = (double)K * gg_absmax(a.lo, a.hi) * bb;
  return gg_try1(g, KILN_NODE_MatMul, ops, 2, NULL, 0, -hi, hi);
}

static bool gg_gen_gemm(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_FLOATS, 2, 2, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  int64_t ta = gg_below(g, 2), tb = gg_below(g, 2);
  int64_t M = t->dims[ta ? 1 : 0], K = t->dims[ta ? 0 : 1], N = gg_dim(g);
  int64_t bd[2] = {tb ? N : K, tb ? K : N};
  int64_t cd[2];
  uint32_t cr;
  switch (gg_below(g, 5)) {
  case 0:
    cr = 1, cd[0] = N;
    break;
  case 1:
    cr = 2, cd[0] = M, cd[1] = N;
    break;
  case 2:
    cr = 2, cd[0] = 1, cd[1] = N;
    break;
  case 3:
    cr = 2, cd[0] = M, cd[1] = 1;
    break;
  default:
    cr = 0;
    break;
  }
  gg_opnd ops[3] = {gg_use(&a), gg_fresh(t->elem, 2, bd, -1, 1), gg_fresh(t->elem, cr, cd, -1, 1)};
  uint32_t n = gg_chance(g, 0.25) ? 2 : 3;
  double alpha = gg_param(g, 0.5, 1.5), beta = gg_param(g, 0.5, 1.5);
  kiln_attr_desc at[4] = {KILN_ATTR_F("alpha", alpha), KILN_ATTR_F("beta", beta),
                          KILN_ATTR_I("transA", ta), KILN_ATTR_I("transB", tb)};
  double hi = alpha * (double)K * gg_absmax(a.lo, a.hi) + (n == 3 ? beta : 0);
  return gg_try1(g, KILN_NODE_Gemm, ops, n, at, 4, -hi, hi);
}

/* Conv and the pools share the spatial attribute drawing. */
static bool gg_spatial(gg *g, const kiln_type *t, bool dilate, int64_t *k, int64_t *s, int64_t *p,
                       int64_t *dl) {
  uint32_t ns = t->rank - 2;
  for (uint32_t i = 0; i < ns; i++) {
    int64_t len = t->dims[2 + i];
    dl[i] = dilate && gg_chance(g, 0.25) ? 2 : 1;
    p[i] = gg_below(g, 2), p[ns + i] = gg_below(g, 2);
    int64_t room = len + p[i] + p[ns + i];
    int64_t kmax = (room - 1) / dl[i] + 1;
    if (kmax < 1)
      return false;
    k[i] = gg_irange(g, 1, kmax < 3 ? kmax : 3);
    s[i] = 1 + gg_below(g, 2);
    /* Pads must be smaller than the kernel for the pools to be defined. */
    if (p[i] >= k[i])
      p[i] = k[i] - 1;
    if (p[ns + i] >= k[i])
      p[ns + i] = k[i] - 1;
  }
  return true;
}

static bool gg_gen_conv(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_FLOATS, 3, 4, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  uint32_t ns = t->rank - 2;
  int64_t k[2], s[2], p[4], dl[2];
  if (!gg_spatial(g, t, true, k, s, p, dl))
    return false;
  int64_t C = t->dims[1], group = C > 1 && gg_chance(g, 0.3) ? C : 1;
  int64_t M = group > 1 ? C * (1 + gg_below(g, 2)) : 1 + gg_below(g, 4);
  int64_t wd[4] = {M, C / group, k[0], ns > 1 ? k[1] : 0};
  gg_opnd ops[3] = {gg_use(&a), gg_fresh(t->elem, t->rank, wd, -1, 1),
                    gg_fresh(t->elem, 1, &M, -1, 1)};
  uint32_t n = gg_chance(g, 0.5) ? 3 : 2;
  kiln_attr_desc at[5] = {KILN_ATTR_IS("kernel_shape", k, ns), KILN_ATTR_IS("strides", s, ns),
                          KILN_ATTR_IS("pads", p, 2 * ns), KILN_ATTR_IS("dilations", dl, ns),
                          KILN_ATTR_I("group", group)};
  double hi =
      (double)(C / group) * (double)k[0] * (ns > 1 ? (double)k[1] : 1) * gg_absmax(a.lo, a.hi) + 1;
  return gg_try1(g, KILN_NODE_Conv, ops, n, at, 5, -hi, hi);
}

static bool gg_gen_pool(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_FLOATS, 3, 4, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  uint32_t ns = t->rank - 2;
  gg_opnd op = gg_use(&a);
  uint32_t pick = gg_below(g, 6);
  double lo = fmin(a.lo, 0), hi = fmax(a.hi, 0);
  if (pick >= 4)
    return gg_try1(g, pick == 4 ? KILN_NODE_GlobalAveragePool : KILN_NODE_GlobalMaxPool, &op, 1,
                   NULL, 0, a.lo, a.hi);
  int64_t k[2], s[2], p[4], dl[2];
  if (!gg_spatial(g, t, false, k, s, p, dl))
    return false;
  /* ceil_mode: the last window may hang over the end (never starting in
   * the right pad); for AveragePool only without count_include_pad, where
   * ONNX and PyTorch agree on the divisor. */
  int64_t cip = (int64_t)gg_below(g, 2), ceil_mode = (int64_t)gg_below(g, 2);
  if (pick >= 2 && cip)
    ceil_mode = 0;
  kiln_attr_desc at[5] = {KILN_ATTR_IS("kernel_shape", k, ns), KILN_ATTR_IS("strides", s, ns),
                          KILN_ATTR_IS("pads", p, 2 * ns), KILN_ATTR_I("ceil_mode", ceil_mode),
                          KILN_ATTR_I("count_include_pad", cip)};
  if (pick < 2)
    return gg_try1(g, KILN_NODE_MaxPool, &op, 1, at, 4, lo, hi);
  return gg_try1(g, KILN_NODE_AveragePool, &op, 1, at, 5, lo, hi);
}

static bool gg_gen_shape_op(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS | GG_BOOLS, 1, KILN_MAX_RANK, true}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  uint32_t r = t->rank;
  gg_opnd op = gg_use(&a);
  int64_t v[KILN_MAX_RANK * 2];
  kiln_attr_desc at[4];
  uint32_t na = 0;
  kiln_node_kind k;
  switch (gg_below(g, 6)) {
  case 0: /* Transpose */
    k = KILN_NODE_Transpose;
    for (uint32_t i = 0; i < r; i++)
      v[i] = i;
    for (uint32_t i = r; i > 1; i--) {
      uint32_t j = gg_below(g, i);
      int64_t x = v[i - 1];
      v[i - 1] = v[j], v[j] = x;
    }
    if (gg_chance(g, 0.8))
      at[na++] = KILN_ATTR_IS("perm", v, r);
    break;
  case 1: { /* Reshape: factor the element count anew */
    k = KILN_NODE_Reshape;
    int64_t left = kiln_type_numel(t);
    if (left == 0)
      return false; /* -1 would be ambiguous */
    uint32_t nr = 0, want = 1 + gg_below(g, 4);
    while (nr + 1 < want) {
      int64_t divs[16], nd = 0;
      for (int64_t x = 1; x <= left && nd < 16; x++)
        if (left % x == 0)
          divs[nd++] = x;
      int64_t x = divs[gg_below(g, (uint32_t)nd)];
      v[nr++] = x, left /= x;
    }
    v[nr++] = left;
    if (gg_chance(g, 0.3))
      v[gg_below(g, nr)] = -1;
    at[na++] = KILN_ATTR_IS("shape", v, nr);
    break;
  }
  case 2:
    k = KILN_NODE_Flatten;
    at[na++] = KILN_ATTR_I("axis", gg_irange(g, -(int64_t)r, r));
    break;
  case 3: { /* Squeeze size-1 dims */
    k = KILN_NODE_Squeeze;
    uint32_t n = 0;
    for (uint32_t i = 0; i < r; i++)
      if (t->dims[i] == 1 && gg_chance(g, 0.7))
        v[n++] = gg_chance(g, 0.3) ? (int64_t)i - r : (int64_t)i;
    if (n == 0 && gg_chance(g, 0.5))
      k = KILN_NODE_Identity;
    else if (n)
      at[na++] = KILN_ATTR_IS("axes", v, n);
    break;
  }
  case 4: { /* Unsqueeze */
    k = KILN_NODE_Unsqueeze;
    uint32_t n = 1 + gg_below(g, 2), out = r + n, m = 0;
    for (uint32_t i = 0; i < out && m < n; i++)
      if (gg_below(g, out - i) < n - m)
        v[m++] = gg_chance(g, 0.3) ? (int64_t)i - out : (int64_t)i;
    at[na++] = KILN_ATTR_IS("axes", v, n);
    break;
  }
  default: { /* Expand or Tile */
    if (gg_chance(g, 0.5)) {
      k = KILN_NODE_Expand;
      uint32_t extra = gg_below(g, 2);
      for (uint32_t i = 0; i < extra; i++)
        v[i] = gg_dim(g);
      for (uint32_t i = 0; i < r; i++)
        v[extra + i] = t->dims[i] == 1 ? gg_dim(g) : gg_chance(g, 0.2) ? 1 : t->dims[i];
      at[na++] = KILN_ATTR_IS("shape", v, extra + r);
    } else {
      k = KILN_NODE_Tile;
      for (uint32_t i = 0; i < r; i++)
        v[i] = 1 + gg_below(g, 2);
      at[na++] = KILN_ATTR_IS("repeats", v, r);
    }
    break;
  }
  }
  return gg_try1(g, k, &op, 1, at, na, a.lo, a.hi);
}

static bool gg_gen_slice_pad(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS, 1, KILN_MAX_RANK, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  uint32_t r = t->rank;
  gg_opnd op = gg_use(&a);
  if (gg_chance(g, 0.5)) {
    int64_t st[KILN_MAX_RANK], en[KILN_MAX_RANK], ax[KILN_MAX_RANK], sp[KILN_MAX_RANK];
    uint32_t n = 0;
    for (uint32_t i = 0; i < r; i++) {
      if (!gg_chance(g, 0.6))
        continue;
      int64_t d = t->dims[i];
      int64_t step = (gg_chance(g, 0.7) ? 1 : 2) * (gg_chance(g, 0.7) ? 1 : -1);
      int64_t s0 = gg_irange(g, 0, d - 1), e0;
      if (step > 0) {
        e0 = gg_irange(g, s0 + 1, d);
        en[n] = e0 == d && gg_chance(g, 0.3) ? INT64_MAX : e0;
      } else {
        e0 = gg_irange(g, -1, s0 - 1);
        en[n] = e0 == -1 ? -d - 1 : e0;
      }
      st[n] = gg_chance(g, 0.3) ? s0 - d : s0;
      ax[n] = gg_chance(g, 0.3) ? (int64_t)i - r : (int64_t)i;
      sp[n] = step;
      n++;
    }
    if (n == 0)
      return false;
    kiln_attr_desc at[4] = {KILN_ATTR_IS("starts", st, n), KILN_ATTR_IS("ends", en, n),
                            KILN_ATTR_IS("axes", ax, n), KILN_ATTR_IS("steps", sp, n)};
    return gg_try1(g, KILN_NODE_Slice, &op, 1, at, 4, a.lo, a.hi);
  }
  static const char *modes[] = {"constant", "edge", "reflect"};
  const char *mode = modes[gg_below(g, 3)];
  int64_t pads[2 * KILN_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) {
    int64_t lim = strcmp(mode, "reflect") == 0 ? t->dims[i] - 1 : 2;
    lim = lim > 2 ? 2 : lim;
    pads[i] = gg_irange(g, 0, lim), pads[r + i] = gg_irange(g, 0, lim);
  }
  bool isint = gg_isint(t->elem);
  double value = kiln_elem_is_unsigned_int(t->elem) ? (double)gg_irange(g, 0, 2)
                 : isint                            ? (double)gg_irange(g, -2, 2)
                                                    : gg_param(g, -1, 1);
  kiln_attr_desc at[3] = {KILN_ATTR_IS("pads", pads, 2 * r), KILN_ATTR_S("mode", mode),
                          KILN_ATTR_F("value", value)};
  uint32_t na = strcmp(mode, "constant") == 0 ? 3 : 2;
  double lo = a.lo, hi = a.hi;
  if (na == 3)
    lo = fmin(lo, value), hi = fmax(hi, value);
  return gg_try1(g, KILN_NODE_Pad, &op, 1, at, na, lo, hi);
}

static bool gg_gen_concat_split(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS | GG_BOOLS, 1, KILN_MAX_RANK, true}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  int64_t axis = gg_axis(g, t->rank), ax = gg_norm_axis(axis, t->rank);
  if (gg_chance(g, 0.5)) {
    gg_opnd ops[4] = {gg_use(&a)};
    uint32_t n = 1 + gg_below(g, 3);
    double lo = a.lo, hi = a.hi;
    bool isint = gg_isint(t->elem);
    for (uint32_t i = 1; i < n; i++) {
      gg_opnd o = {0};
      bool found = false;
      for (uint32_t j = 0; j < g->npool && !found && gg_chance(g, 0.5); j++) {
        const kiln_type *u = kiln_value_type(g->pool[j].v);
        if (u->elem != t->elem || u->rank != t->rank)
          continue;
        bool same = true;
        for (uint32_t q = 0; q < t->rank; q++)
          same = same && (q == ax || u->dims[q] == t->dims[q]);
        if (same)
          o = gg_use(&g->pool[j]), found = true;
      }
      if (!found) {
        int64_t d[KILN_MAX_RANK];
        memcpy(d, t->dims, sizeof d);
        d[ax] = gg_dim(g);
        double blo = t->elem == KILN_BOOL ? 0 : isint ? -3 : -1;
        o = gg_fresh(t->elem, t->rank, d, blo, -blo + (t->elem == KILN_BOOL));
      }
      ops[i] = o;
      lo = fmin(lo, o.lo), hi = fmax(hi, o.hi);
    }
    kiln_attr_desc at[1] = {KILN_ATTR_I("axis", axis)};
    return gg_try1(g, KILN_NODE_Concat, ops, n, at, 1, lo, hi);
  }
  int64_t d = t->dims[ax];
  if (d < 2)
    return false;
  int64_t sp[4];
  uint32_t n = 0;
  int64_t left = d;
  while (left > 0 && n < 3) {
    sp[n] = gg_irange(g, 1, left);
    left -= sp[n++];
  }
  if (left > 0)
    sp[n++] = left;
  if (n < 2)
    return false;
  kiln_attr_desc at[2] = {KILN_ATTR_I("axis", axis), KILN_ATTR_IS("split", sp, n)};
  gg_opnd op = gg_use(&a);
  kiln_type rt[4];
  uint32_t nr;
  if (!gg_infer(g, KILN_NODE_Split, &op, 1, at, 2, n, rt, &nr))
    return false;
  double lo[4] = {a.lo, a.lo, a.lo, a.lo}, hi[4] = {a.hi, a.hi, a.hi, a.hi};
  return gg_emit(g, KILN_NODE_Split, &op, 1, at, 2, n, lo, hi);
}

static bool gg_gen_gather(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS | GG_BOOLS, 1, KILN_MAX_RANK, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  int64_t axis = gg_axis(g, t->rank), d = t->dims[gg_norm_axis(axis, t->rank)];
  uint32_t q = gg_below(g, 3);
  int64_t id[2] = {gg_dim(g), gg_dim(g)};
  gg_opnd ops[2] = {gg_use(&a), gg_fresh(gg_chance(g, 0.7) ? KILN_I64 : KILN_I32, q, id, (double)-d,
                                         (double)d - 1)};
  kiln_attr_desc at[1] = {KILN_ATTR_I("axis", axis)};
  return gg_try1(g, KILN_NODE_Gather, ops, 2, at, 1, a.lo, a.hi);
}

static bool gg_gen_norm(gg *g) {
  gg_val a;
  bool layer = gg_chance(g, 0.5);
  if (!gg_base(g, &(gg_want){GG_FLOATS, layer ? 1 : 2, KILN_MAX_RANK, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  double eps = gg_chance(g, 0.5) ? 1e-5 : 0.0625;
  double b = gg_absmax(a.lo, a.hi);
  if (layer) {
    int64_t axis = gg_axis(g, t->rank), ax = gg_norm_axis(axis, t->rank);
    uint32_t nr = t->rank - (uint32_t)ax;
    gg_opnd ops[3] = {gg_use(&a), gg_fresh(t->elem, nr, t->dims + ax, -1, 1),
                      gg_fresh(t->elem, nr, t->dims + ax, -1, 1)};
    uint32_t n = gg_chance(g, 0.3) ? 2 : 3;
    kiln_attr_desc at[2] = {KILN_ATTR_I("axis", axis), KILN_ATTR_F("epsilon", eps)};
    double c = 1;
    for (uint32_t i = (uint32_t)ax; i < t->rank; i++)
      c *= (double)t->dims[i];
    double hi = sqrt(c) + 1;
    return gg_try1(g, KILN_NODE_LayerNormalization, ops, n, at, 2, -hi, hi);
  }
  int64_t C = t->dims[1];
  gg_opnd ops[5] = {gg_use(&a), gg_fresh(t->elem, 1, &C, -1, 1), gg_fresh(t->elem, 1, &C, -1, 1),
                    gg_fresh(t->elem, 1, &C, -1, 1), gg_fresh(t->elem, 1, &C, 0.5, 1.5)};
  kiln_attr_desc at[1] = {KILN_ATTR_F("epsilon", eps)};
  double hi = (b + 1) / sqrt(0.5) + 1;
  return gg_try1(g, KILN_NODE_BatchNormalization, ops, 5, at, 1, -hi, hi);
}

/* GatherElements and GatherND, with every index inside the data's dims
 * (negative ones too). */
static bool gg_gen_gather2(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS | GG_BOOLS, 1, 4, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  uint32_t r = t->rank;
  if (kiln_type_numel(t) == 0)
    return false;
  static double vals[GG_MAX_NUMEL];
  kiln_elem ie = gg_chance(g, 0.7) ? KILN_I64 : KILN_I32;
  int64_t d[KILN_MAX_RANK] = {0};
  if (gg_chance(g, 0.5)) {
    int64_t axis = gg_axis(g, r), ax = gg_norm_axis(axis, r), D = t->dims[ax];
    for (uint32_t i = 0; i < r; i++)
      d[i] = (int64_t)i == ax ? gg_dim(g) : 1 + (int64_t)gg_below(g, (uint32_t)t->dims[i]);
    kiln_type it = gg_mk(ie, r, d);
    int64_t n = kiln_type_numel(&it);
    if (n > GG_MAX_NUMEL)
      return false;
    for (int64_t j = 0; j < n; j++)
      vals[j] = (double)gg_irange(g, -D, D - 1);
    gg_opnd ops[2] = {gg_use(&a), gg_fresh(ie, r, d, (double)-D, (double)D - 1)};
    ops[1].vals = vals;
    kiln_attr_desc at[1] = {KILN_ATTR_I("axis", axis)};
    return gg_try1(g, KILN_NODE_GatherElements, ops, 2, at, 1, a.lo, a.hi);
  }
  uint32_t q = 1 + gg_below(g, r), ir = 1 + gg_below(g, 2);
  for (uint32_t i = 0; i + 1 < ir; i++)
    d[i] = gg_dim(g);
  d[ir - 1] = q;
  kiln_type it = gg_mk(ie, ir, d);
  int64_t n = kiln_type_numel(&it), dmax = 1;
  for (int64_t j = 0; j < n; j++) {
    int64_t D = t->dims[j % q];
    dmax = D > dmax ? D : dmax;
    vals[j] = (double)gg_irange(g, -D, D - 1);
  }
  gg_opnd ops[2] = {gg_use(&a), gg_fresh(ie, ir, d, (double)-dmax, (double)dmax - 1)};
  ops[1].vals = vals;
  return gg_try1(g, KILN_NODE_GatherND, ops, 2, NULL, 0, a.lo, a.hi);
}

/* ScatterElements and ScatterND. Indices never repeat, so that the
 * result does not depend on the order in which updates land. */
static bool gg_gen_scatter(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_NUMS, 1, 4, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  uint32_t r = t->rank;
  kiln_elem e = t->elem;
  if (kiln_type_numel(t) == 0)
    return false;
  static const char *const reds[] = {"none", "add", "mul", "max", "min"};
  uint32_t red = gg_below(g, 5);
  bool isint = gg_isint(e);
  static double vals[GG_MAX_NUMEL];
  static int64_t perm[GG_MAX_NUMEL];
  int64_t d[KILN_MAX_RANK] = {0};
  uint32_t ur;
  int64_t ud[KILN_MAX_RANK] = {0};
  gg_opnd ops[3];
  kiln_attr_desc at[2];
  uint32_t na = 0;
  kiln_node_kind kind;
  if (gg_chance(g, 0.5)) {
    kind = KILN_NODE_ScatterElements;
    int64_t axis = gg_axis(g, r), ax = gg_norm_axis(axis, r), D = t->dims[ax];
    for (uint32_t i = 0; i < r; i++)
      d[i] = (int64_t)i == ax ? 1 + (int64_t)gg_below(g, (uint32_t)D)
                              : 1 + (int64_t)gg_below(g, (uint32_t)t->dims[i]);
    int64_t outer = 1, inner = 1, k = d[ax];
    for (uint32_t i = 0; i < r; i++)
      outer *= (int64_t)i < ax ? d[i] : 1, inner *= (int64_t)i > ax ? d[i] : 1;
    if (D > GG_MAX_NUMEL || outer * k * inner > GG_MAX_NUMEL)
      return false;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t in = 0; in < inner; in++) {
        for (int64_t c = 0; c < D; c++)
          perm[c] = c;
        for (int64_t c = 0; c < k; c++) {
          int64_t j = gg_irange(g, c, D - 1), x = perm[c];
          perm[c] = perm[j], perm[j] = x;
          vals[(o * k + c) * inner + in] = (double)(gg_chance(g, 0.3) ? perm[c] - D : perm[c]);
        }
      }
    ops[1] = gg_fresh(KILN_I64, r, d, (double)-D, (double)D - 1);
    ur = r;
    memcpy(ud, d, sizeof ud);
    at[na++] = KILN_ATTR_I("axis", axis);
  } else {
    kind = KILN_NODE_ScatterND;
    uint32_t q = 1 + gg_below(g, r);
    int64_t P = 1;
    for (uint32_t i = 0; i < q; i++)
      P *= t->dims[i];
    if (P > GG_MAX_NUMEL)
      return false;
    int64_t m = 1 + (int64_t)gg_below(g, (uint32_t)(P < 4 ? P : 4));
    for (int64_t c = 0; c < P; c++)
      perm[c] = c;
    for (int64_t c = 0; c < m; c++) {
      int64_t j = gg_irange(g, c, P - 1), x = perm[c];
      perm[c] = perm[j], perm[j] = x;
      int64_t f = perm[c];
      for (int64_t col = (int64_t)q - 1; col >= 0; col--) {
        vals[c * q + col] = (double)(f % t->dims[col]);
        f /= t->dims[col];
      }
    }
    d[0] = m, d[1] = q;
    ops[1] = gg_fresh(KILN_I64, 2, d, 0, (double)GG_MAX_NUMEL);
    ur = 1 + r - q;
    ud[0] = m;
    for (uint32_t i = q; i < r; i++)
      ud[1 + i - q] = t->dims[i];
  }
  ops[1].vals = vals;
  ops[0] = gg_use(&a);
  ops[2] = gg_fresh(e, ur, ud, isint ? -3 : -1, isint ? 3 : 1);
  if (red)
    at[na++] = KILN_ATTR_S("reduction", reds[red]);
  double lo, hi, ul = ops[2].lo, uh = ops[2].hi;
  switch (red) {
  case 1:
    lo = fmin(a.lo, a.lo + ul), hi = fmax(a.hi, a.hi + uh);
    break;
  case 2:
    gg_interval(KILN_NODE_Mul, a.lo, a.hi, ul, uh, &lo, &hi);
    lo = fmin(lo, a.lo), hi = fmax(hi, a.hi);
    break;
  default:
    lo = fmin(a.lo, ul), hi = fmax(a.hi, uh);
    break;
  }
  return gg_try1(g, kind, ops, 3, at, na, lo, hi);
}

/* RNN, GRU and LSTM with their default activations: small weights, any
 * direction; the hidden states stay in [-1, 1], an LSTM cell in
 * [-seq, seq]. */
static bool gg_gen_rnn(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_BIT(KILN_F32) | GG_BIT(KILN_F64) | GG_BIT(KILN_F16), 3, 3, false},
               &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  if (kiln_type_numel(t) == 0)
    return false;
  static const kiln_node_kind kinds[] = {KILN_NODE_RNN, KILN_NODE_GRU, KILN_NODE_LSTM};
  static const int64_t gates[] = {1, 3, 4};
  static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
  uint32_t which = gg_below(g, 3), dir = gg_below(g, 3);
  int64_t nd = dir == 2 ? 2 : 1, H = 1 + (int64_t)gg_below(g, 4), G = gates[which];
  int64_t wd[3] = {nd, G * H, t->dims[2]}, rd[3] = {nd, G * H, H}, bd[2] = {nd, 2 * G * H};
  gg_opnd ops[4] = {gg_use(&a), gg_fresh(t->elem, 3, wd, -0.5, 0.5),
                    gg_fresh(t->elem, 3, rd, -0.5, 0.5), gg_fresh(t->elem, 2, bd, -0.5, 0.5)};
  uint32_t n = gg_chance(g, 0.3) ? 3 : 4;
  kiln_attr_desc at[3] = {KILN_ATTR_S("direction", dirs[dir]), KILN_ATTR_I("hidden_size", H)};
  uint32_t na = 2;
  if (kinds[which] == KILN_NODE_GRU)
    at[na++] = KILN_ATTR_I("linear_before_reset", (int64_t)gg_below(g, 2));
  uint32_t nres = which == 2 ? 3 : 2;
  kiln_type rt[4];
  uint32_t nr;
  if (!gg_infer(g, kinds[which], ops, n, at, na, nres, rt, &nr))
    return false;
  double seq = (double)t->dims[0];
  double lo[3] = {-1, -1, -seq}, hi[3] = {1, 1, seq};
  return gg_emit(g, kinds[which], ops, n, at, na, nres, lo, hi);
}

/* QuantizeLinear to u8 or i8, often followed by the DequantizeLinear that
 * undoes it. Scales are odd multiples of 1/64, so that the float grid of
 * the inputs rarely meets a rounding tie. */
static bool gg_gen_quant(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_BIT(KILN_F32) | GG_BIT(KILN_F16), 0, KILN_MAX_RANK, false}, &a))
    return false;
  kiln_elem e = kiln_value_type(a.v)->elem;
  double scale = (double)(1 + 2 * gg_below(g, 4)) / 64.0 * (gg_chance(g, 0.5) ? 1 : 4);
  bool u8 = gg_chance(g, 0.5);
  kiln_elem qe = u8 ? KILN_U8 : KILN_I8;
  double zp = u8 ? (double)gg_irange(g, 0, 255) : (double)gg_irange(g, -128, 127);
  double qmin = u8 ? 0 : -128, qmax = u8 ? 255 : 127;
  gg_opnd ops[3] = {gg_use(&a), gg_fresh(e, 0, NULL, scale, scale), gg_fresh(qe, 0, NULL, zp, zp)};
  ops[1].vals = &scale;
  ops[2].vals = &zp;
  double lo = fmin(fmax(floor(a.lo / scale) + zp, qmin), qmax);
  double hi = fmin(fmax(ceil(a.hi / scale) + zp, qmin), qmax);
  if (!gg_try1(g, KILN_NODE_QuantizeLinear, ops, 3, NULL, 0, lo, hi))
    return false;
  if (gg_chance(g, 0.4))
    return true;
  gg_val q = g->pool[g->npool - 1];
  gg_opnd dops[3] = {gg_use(&q), gg_fresh(e, 0, NULL, scale, scale), gg_fresh(qe, 0, NULL, zp, zp)};
  dops[1].vals = &scale;
  dops[2].vals = &zp;
  return gg_try1(g, KILN_NODE_DequantizeLinear, dops, 3, NULL, 0, (q.lo - zp) * scale - 1e-3,
                 (q.hi - zp) * scale + 1e-3);
}

/* v quantized to u8 at scale s, zero point z, and dequantized: *out is
 * the DequantizeLinear's result. */
static bool gg_qdq_u8(gg *g, const gg_val *v, double s, double z, gg_val *out) {
  gg_opnd q[3] = {gg_use(v), gg_fresh(KILN_F32, 0, NULL, s, s), gg_fresh(KILN_U8, 0, NULL, z, z)};
  q[1].vals = &s, q[2].vals = &z;
  if (!gg_try1(g, KILN_NODE_QuantizeLinear, q, 3, NULL, 0, 0, 255))
    return false;
  gg_val qv = g->pool[g->npool - 1];
  gg_opnd d[3] = {gg_use(&qv), gg_fresh(KILN_F32, 0, NULL, s, s),
                  gg_fresh(KILN_U8, 0, NULL, z, z)};
  d[1].vals = &s, d[2].vals = &z;
  if (!gg_try1(g, KILN_NODE_DequantizeLinear, d, 3, NULL, 0, -z * s, (255 - z) * s))
    return false;
  *out = g->pool[g->npool - 1];
  return true;
}

/* A QDQ convolution as quantizers write it (docs/quantization.md): the
 * input quantized to u8 and dequantized, s8 weights with one scale per
 * output channel, an int32 bias at x_scale * w_scale, an optional Relu,
 * the result quantized and dequantized. Every scale is a power of two and
 * every sum stays far below 2^24 units, so the float QDQ graph and the
 * QLinearConv that fuseqdq makes of it where a backend runs integers
 * compute the same values: backends must agree whichever path they take. */
static bool gg_gen_qdq(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_BIT(KILN_F32), 4, 4, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  int64_t C = t->dims[1];
  if (C > 8)
    return false;
  double amax = fmax(gg_absmax(a.lo, a.hi), 1.0 / 64);
  double xs = exp2(ceil(log2(2 * amax / 255)));
  gg_val dx;
  if (!gg_qdq_u8(g, &a, xs, 128, &dx))
    return false;
  uint32_t ns = t->rank - 2;
  int64_t k[2], st[2], p[4], dl[2];
  if (!gg_spatial(g, t, true, k, st, p, dl))
    return false;
  int64_t group = C > 1 && gg_chance(g, 0.3) ? C : 1;
  int64_t M = group > 1 ? C * (1 + gg_below(g, 2)) : 1 + gg_below(g, 4);
  int64_t wd[4] = {M, C / group, k[0], ns > 1 ? k[1] : 0};
  double ws[16], bs[16], zeros[16] = {0}, wmax = 0;
  for (int64_t m = 0; m < M; m++) {
    ws[m] = exp2(-(double)gg_irange(g, 4, 7));
    bs[m] = xs * ws[m];
    wmax = fmax(wmax, ws[m]);
  }
  kiln_attr_desc ax = KILN_ATTR_I("axis", 0);
  gg_opnd dw[3] = {gg_fresh(KILN_I8, 4, wd, -127, 127), gg_fresh(KILN_F32, 1, &M, 0, 0),
                   gg_fresh(KILN_I8, 1, &M, 0, 0)};
  dw[1].vals = ws, dw[2].vals = zeros;
  if (!gg_try1(g, KILN_NODE_DequantizeLinear, dw, 3, &ax, 1, -127 * wmax, 127 * wmax))
    return false;
  gg_val w = g->pool[g->npool - 1];
  double bmax = 64 * xs * wmax;
  gg_opnd db[2] = {gg_fresh(KILN_I32, 1, &M, -64, 64), gg_fresh(KILN_F32, 1, &M, 0, 0)};
  db[1].vals = bs;
  if (!gg_try1(g, KILN_NODE_DequantizeLinear, db, 2, &ax, 1, -bmax, bmax))
    return false;
  gg_val b = g->pool[g->npool - 1];
  kiln_attr_desc at[5] = {KILN_ATTR_IS("kernel_shape", k, ns), KILN_ATTR_IS("strides", st, ns),
                          KILN_ATTR_IS("pads", p, 2 * ns), KILN_ATTR_IS("dilations", dl, ns),
                          KILN_ATTR_I("group", group)};
  double hi = (double)(C / group) * (double)k[0] * (ns > 1 ? (double)k[1] : 1) * 255 * xs * 127 *
                  wmax + bmax;
  gg_opnd cv[3] = {gg_use(&dx), gg_use(&w), gg_use(&b)};
  if (!gg_try1(g, KILN_NODE_Conv, cv, 3, at, 5, -hi, hi))
    return false;
  gg_val y = g->pool[g->npool - 1];
  bool relu = gg_chance(g, 0.5);
  if (relu) {
    gg_opnd r[1] = {gg_use(&y)};
    if (!gg_try1(g, KILN_NODE_Relu, r, 1, NULL, 0, 0, hi))
      return false;
    y = g->pool[g->npool - 1];
  }
  gg_val dy;
  return gg_qdq_u8(g, &y, exp2(ceil(log2(2 * hi / 255))), relu ? 0 : 128, &dy);
}

/* Resize of the spatial dims: nearest (asymmetric, floor: exact for the
 * integer and 1/2 scales drawn) or linear (a convex combination, so the
 * range holds). */
static bool gg_gen_resize(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_FLOATS, 3, 4, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  if (kiln_type_numel(t) == 0)
    return false;
  static const double sc[] = {0.5, 1, 2, 3, 1.5};
  static const char *const ctms[] = {"half_pixel", "align_corners", "asymmetric",
                                     "pytorch_half_pixel"};
  bool linear = gg_chance(g, 0.5);
  double scales[KILN_MAX_RANK];
  for (uint32_t i = 0; i < t->rank; i++)
    scales[i] = i < 2 ? 1 : sc[gg_below(g, linear ? 5 : 4)];
  kiln_attr_desc at[4] = {KILN_ATTR_FS("scales", scales, t->rank)};
  uint32_t na = 1;
  if (linear) {
    at[na++] = KILN_ATTR_S("mode", "linear");
    at[na++] = KILN_ATTR_S("coordinate_transformation_mode", ctms[gg_below(g, 4)]);
  } else {
    at[na++] = KILN_ATTR_S("mode", "nearest");
    at[na++] = KILN_ATTR_S("coordinate_transformation_mode", "asymmetric");
    at[na++] = KILN_ATTR_S("nearest_mode", "floor");
  }
  gg_opnd op = gg_use(&a);
  double m = linear ? 1e-3 * (a.hi - a.lo) + 1e-3 : 0;
  return gg_try1(g, KILN_NODE_Resize, &op, 1, at, na, a.lo - m, a.hi + m);
}

/* Einsum on a few equation shapes: transposes, sums, dot, outer and
 * (batched) matrix products. */
static bool gg_gen_einsum(gg *g) {
  gg_val a;
  if (!gg_base(g, &(gg_want){GG_FLOATS | GG_BIT(KILN_I32) | GG_BIT(KILN_I64), 1, 3, false}, &a))
    return false;
  const kiln_type *t = kiln_value_type(a.v);
  kiln_elem e = t->elem;
  double b = gg_absmax(a.lo, a.hi), bb = gg_isint(e) ? 2 : 1;
  const char *eq = NULL;
  int64_t d[3] = {0};
  uint32_t r2 = 0;
  double hi = b;
  uint32_t pick = gg_below(g, 3);
  if (t->rank == 1) {
    eq = pick == 0 ? "i->" : pick == 1 ? "i,i->" : "i,j->ij";
    d[0] = pick == 1 ? t->dims[0] : gg_dim(g);
    r2 = pick == 0 ? 0 : 1;
    hi = pick == 2 ? b * bb : (double)t->dims[0] * b * (pick ? bb : 1);
  } else if (t->rank == 2) {
    eq = pick == 0 ? "ij->ji" : pick == 1 ? "ij->i" : "ij,jk->ik";
    d[0] = t->dims[1], d[1] = gg_dim(g);
    r2 = pick == 2 ? 2 : 0;
    hi = pick == 0 ? b : (double)t->dims[1] * b * (pick == 2 ? bb : 1);
  } else {
    eq = pick == 0 ? "bij->bji" : pick == 1 ? "bij->b" : "bij,bjk->bik";
    d[0] = t->dims[0], d[1] = t->dims[2], d[2] = gg_dim(g);
    r2 = pick == 2 ? 3 : 0;
    hi = pick == 0 ? b
                   : (double)(pick == 1 ? t->dims[1] * t->dims[2] : t->dims[2]) * b *
                         (pick == 2 ? bb : 1);
  }
  gg_opnd ops[2] = {gg_use(&a), gg_fresh(e, r2, d, -bb, bb)};
  kiln_attr_desc at[1] = {KILN_ATTR_S("equation", eq)};
  uint32_t n = strchr(eq, ',') ? 2 : 1;
  return gg_try1(g, KILN_NODE_Einsum, ops, n, at, 1, -hi - 1e-3, hi + 1e-3);
}

typedef struct gg_gen_row {
  bool (*fn)(gg *g);
  uint32_t weight;
} gg_gen_row;

static const gg_gen_row gg_gens[] = {
    {gg_gen_unary, 14}, {gg_gen_binary, 14},  {gg_gen_variadic, 4},  {gg_gen_where, 3},
    {gg_gen_clip, 3},   {gg_gen_cast, 3},     {gg_gen_reduce, 5},    {gg_gen_axis_op, 5},
    {gg_gen_topk, 2},   {gg_gen_matmul, 4},   {gg_gen_gemm, 3},      {gg_gen_conv, 4},
    {gg_gen_pool, 3},   {gg_gen_shape_op, 8}, {gg_gen_slice_pad, 5}, {gg_gen_concat_split, 4},
    {gg_gen_gather, 3}, {gg_gen_norm, 3},     {gg_gen_gather2, 3},   {gg_gen_scatter, 3},
    {gg_gen_rnn, 2},    {gg_gen_quant, 2},    {gg_gen_resize, 2},    {gg_gen_einsum, 2},
    {gg_gen_qdq, 2},
};

static bool gg_draw(gg *g) {
  uint32_t total = 0, n = sizeof gg_gens / sizeof *gg_gens;
  for (uint32_t i = 0; i < n; i++)
    total += gg_gens[i].weight;
  uint32_t x = gg_below(g, total);
  for (uint32_t i = 0; i < n; i++) {
    if (x < gg_gens[i].weight)
      return gg_gens[i].fn(g);
    x -= gg_gens[i].weight;
  }
  return false;
}

static kiln_status gg_build(gg *g, uint64_t seed, uint32_t index) {
  char name[48];
  snprintf(name, sizeof name, "gg_%llx_%u", (unsigned long long)seed, index);
  KILN_TRY(kiln_module_create(NULL, name, &g->m));
  KILN_TRY(kiln_module_add_function(g->m, "main", &g->f));
  /* The first input is mostly a 4-D float tensor, so that Conv and the
   * pools get their chance. */
  gg_val v;
  gg_want w0 = {GG_FLOATS, gg_chance(g, 0.5) ? 4u : 1u, 4, false};
  if (gg_chance(g, 0.15))
    w0 = (gg_want){GG_NUMS | GG_BOOLS, 0, 4, false};
  if (!gg_new_input(g, &w0, &v))
    return g->err ? g->err : kiln_status_make(KILN_INTERNAL, "graphgen: no first input");
  uint32_t target = 2 + gg_below(g, 19);
  for (uint32_t tries = 0; g->nnodes < target && tries < 400 && !g->err; tries++)
    (void)gg_draw(g);
  if (g->err)
    return g->err;
  if (g->nnodes == 0) {
    gg_opnd op = gg_use(&g->pool[0]);
    double lo = g->pool[0].lo, hi = g->pool[0].hi;
    if (!gg_emit(g, KILN_NODE_Identity, &op, 1, NULL, 0, 1, &lo, &hi))
      return g->err ? g->err : kiln_status_make(KILN_INTERNAL, "graphgen: Identity refused");
  }
  /* Every result nobody reads is an output, so nothing is dead code. */
  uint32_t outs = 0;
  for (uint32_t i = 0; i < kiln_function_node_count(g->f); i++) {
    kiln_node *n = kiln_function_node(g->f, i);
    for (uint32_t j = 0; j < kiln_node_result_count(n); j++) {
      kiln_value *r = kiln_node_result(n, j);
      if (kiln_value_use_count(r) > 0)
        continue;
      char on[16];
      snprintf(on, sizeof on, "y%u", outs++);
      KILN_TRY(kiln_function_add_output(g->f, on, r));
    }
  }
  return NULL;
}

kiln_status kiln_graphgen(uint64_t seed, uint32_t index, kiln_module **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_graphgen: out is NULL");
  *out = NULL;
  gg g = {.s = seed ^ ((uint64_t)index * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull)};
  (void)gg_next(&g);
  kiln_status s = gg_build(&g, seed, index);
  if (s) {
    kiln_module_destroy(g.m);
    return kiln_status_wrap(s, "graphgen seed %llu index %u", (unsigned long long)seed, index);
  }
  *out = g.m;
  return NULL;
}

void kiln_graphgen_inputs_free(kiln_tensor *t, uint32_t n) {
  if (!t)
    return;
  for (uint32_t i = 0; i < n; i++)
    kiln_tensor_free(&t[i]);
  kiln_free(t);
}

kiln_status kiln_graphgen_inputs(const kiln_module *m, uint64_t seed, kiln_tensor **out,
                                 uint32_t *n) {
  if (!m || !out || !n)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_graphgen_inputs: NULL argument");
  *out = NULL;
  *n = 0;
  uint32_t count = kiln_module_input_count(m);
  if (count == 0)
    return NULL;
  kiln_tensor *ts = calloc(count, sizeof *ts);
  if (!ts)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "kiln_graphgen_inputs: %u tensors", count);
  for (uint32_t i = 0; i < count; i++) {
    const kiln_value *v = kiln_module_input(m, i);
    const kiln_type *t = kiln_value_type(v);
    gg g = {.s = seed ^ (0xA0761D6478BD642Full * (i + 1))};
    size_t bytes = (size_t)kiln_type_bytes(t);
    ts[i].type = *t;
    ts[i].data = calloc(1, bytes ? bytes : 1);
    ts[i].name = strdup(kiln_value_name(v));
    if (!ts[i].data || !ts[i].name) {
      kiln_graphgen_inputs_free(ts, count);
      return kiln_status_make(KILN_OUT_OF_MEMORY, "kiln_graphgen_inputs: input %s (%zu bytes)",
                              kiln_value_name(v), bytes);
    }
    double lo, hi;
    gg_input_range(t->elem, &lo, &hi);
    for (int64_t j = 0; j < kiln_type_numel(t); j++)
      kiln_elem_store_f64(t->elem, ts[i].data, j, gg_rand_value(&g, t->elem, lo, hi));
  }
  *out = ts;
  *n = count;
  return NULL;
}
