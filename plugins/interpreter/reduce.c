/* plugins/interpreter/reduce.c: reductions over axes (Reduce*) and along
 * one axis (ArgMax, ArgMin, CumSum, TopK). Every input element of a Reduce*
 * or Arg* is folded into the result element whose coordinates equal its own
 * outside the reduced axes; the keepdims shape and the squeezed one share
 * that row-major order, so one index computation serves both. Floats
 * accumulate in double, integers in int64/uint64 with wrap-around. */
#include "kernel.h"

typedef enum {
  R_L1,
  R_L2,
  R_LOGSUM,
  R_LOGSUMEXP,
  R_MAX,
  R_MIN,
  R_MEAN,
  R_PROD,
  R_SUM,
  R_SUMSQUARE
} reduce_op;

/* Reads the axes attribute into a mask. Returns whether reduction happens
 * at all (false: noop_with_empty_axes with no axes). */
static kiln_status reduce_axes(const char *name, const kiln_attrs *attrs, uint32_t rank, bool *mask,
                               bool *reduce) {
  const kiln_attr *a = kiln_attrs_find(attrs, "axes");
  uint32_t n = a ? kiln_attr_len(a) : 0;
  memset(mask, 0, KILN_MAX_RANK * sizeof *mask);
  *reduce = true;
  if (n == 0) {
    if (kiln_attrs_int_or(attrs, "noop_with_empty_axes", 0)) {
      *reduce = false;
      return NULL;
    }
    for (uint32_t d = 0; d < rank; d++)
      mask[d] = true;
    return NULL;
  }
  for (uint32_t k = 0; k < n; k++) {
    uint32_t ax;
    KILN_TRY_CTX(interp_axis(kiln_attr_ints(a)[k], rank, &ax), "interpreter %s: axes[%u]", name, k);
    mask[ax] = true;
  }
  return NULL;
}

/* Flat index of input element i in the keepdims-shaped result. */
static int64_t reduce_target(const kiln_type *in, const bool *mask, int64_t i) {
  int64_t coords[KILN_MAX_RANK];
  interp_unravel(in, i, coords);
  int64_t j = 0;
  for (uint32_t d = 0; d < in->rank; d++)
    j = j * (mask[d] ? 1 : in->dims[d]) + (mask[d] ? 0 : coords[d]);
  return j;
}

static double start_f(reduce_op op) {
  switch (op) {
  case R_MAX:
  case R_LOGSUMEXP: /* holds the running maximum on the first pass */
    return -INFINITY;
  case R_MIN:
    return INFINITY;
  case R_PROD:
    return 1.0;
  default:
    return 0.0;
  }
}

static kiln_status reduce_float(reduce_op op, interp_tensor *y, const interp_tensor *x,
                                const bool *mask) {
  int64_t n_out = interp_numel(y), n_in = interp_numel(x);
  double *acc, *mx = NULL;
  int64_t *count;
  KILN_TRY(interp_scratch("Reduce", n_out, sizeof *acc, (void **)&acc));
  kiln_status s = interp_scratch("Reduce", n_out, sizeof *count, (void **)&count);
  if (!s && op == R_LOGSUMEXP)
    s = interp_scratch("Reduce", n_out, sizeof *mx, (void **)&mx);
  if (s) {
    free(acc);
    free(count);
    return s;
  }
  for (int64_t j = 0; j < n_out; j++) {
    acc[j] = start_f(op);
    if (mx)
      mx[j] = -INFINITY;
  }
  if (mx) /* a max-shift keeps exp() from overflowing */
    for (int64_t i = 0; i < n_in; i++) {
      int64_t j = reduce_target(&x->type, mask, i);
      double v = interp_load_f(x, i);
      if (v > mx[j] || isnan(v))
        mx[j] = isnan(mx[j]) ? mx[j] : v;
      acc[j] = 0.0;
    }
  for (int64_t i = 0; i < n_in; i++) {
    int64_t j = reduce_target(&x->type, mask, i);
    double v = interp_load_f(x, i);
    count[j]++;
    switch (op) {
    case R_L1:
      acc[j] += fabs(v);
      break;
    case R_L2:
    case R_SUMSQUARE:
      acc[j] += v * v;
      break;
    case R_MAX:
      acc[j] = isnan(acc[j]) || isnan(v) ? NAN : fmax(acc[j], v);
      break;
    case R_MIN:
      acc[j] = isnan(acc[j]) || isnan(v) ? NAN : fmin(acc[j], v);
      break;
    case R_PROD:
      acc[j] *= v;
      break;
    case R_LOGSUMEXP:
      acc[j] += isinf(mx[j]) ? exp(v) : exp(v - mx[j]);
      break;
    default:
      acc[j] += v;
      break;
    }
  }
  for (int64_t j = 0; j < n_out; j++) {
    double r = acc[j];
    switch (op) {
    case R_L2:
      r = sqrt(r);
      break;
    case R_LOGSUM:
      r = log(r);
      break;
    case R_LOGSUMEXP:
      r = count[j] == 0 ? -INFINITY : isinf(mx[j]) ? log(r) : log(r) + mx[j];
      break;
    case R_MEAN:
      r = r / (double)count[j]; /* empty: 0/0 = NaN */
      break;
    default:
      break;
    }
    interp_store_f(y, j, r);
  }
  free(acc);
  free(count);
  free(mx);
  return NULL;
}

/* Integers: L2, LogSum and LogSumExp go through double; the rest stay
 * exact in 64 bits. Empty Max/Min give the type's lowest/highest value. */
static kiln_status reduce_int(reduce_op op, interp_tensor *y, const interp_tensor *x,
                              const bool *mask) {
  bool sgn = interp_class_of(x->type.elem) == INTERP_SIGNED;
  int64_t n_out = interp_numel(y), n_in = interp_numel(x);
  uint64_t *acc;
  int64_t *count;
  KILN_TRY(interp_scratch("Reduce", n_out, sizeof *acc, (void **)&acc));
  kiln_status s = interp_scratch("Reduce", n_out, sizeof *count, (void **)&count);
  if (s) {
    free(acc);
    return s;
  }
  int bits = (int)kiln_elem_size(x->type.elem) * 8;
  uint64_t umax = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
  if (x->type.elem == KILN_BOOL) /* Max is "any", Min is "all" (empty: true) */
    umax = 1;
  int64_t smax = (int64_t)(umax >> 1), smin = -smax - 1;
  for (int64_t j = 0; j < n_out; j++)
    acc[j] = op == R_PROD  ? 1
             : op == R_MAX ? (sgn ? (uint64_t)smin : 0)
             : op == R_MIN ? (sgn ? (uint64_t)smax : umax)
                           : 0;
  for (int64_t i = 0; i < n_in; i++) {
    int64_t j = reduce_target(&x->type, mask, i);
    uint64_t v = sgn ? (uint64_t)interp_load_i(x, i) : interp_load_u(x, i);
    count[j]++;
    switch (op) {
    case R_L1:
      acc[j] += (sgn && (int64_t)v < 0) ? 0 - v : v;
      break;
    case R_SUMSQUARE:
      acc[j] += v * v;
      break;
    case R_MAX:
      if (sgn ? (int64_t)v > (int64_t)acc[j] : v > acc[j])
        acc[j] = v;
      break;
    case R_MIN:
      if (sgn ? (int64_t)v < (int64_t)acc[j] : v < acc[j])
        acc[j] = v;
      break;
    case R_PROD:
      acc[j] *= v;
      break;
    default:
      acc[j] += v;
      break;
    }
  }
  for (int64_t j = 0; j < n_out; j++) {
    if (op == R_MEAN) {
      if (count[j] == 0)
        interp_store_u(y, j, 0);
      else if (sgn)
        interp_store_i(y, j, (int64_t)acc[j] / count[j]);
      else
        interp_store_u(y, j, acc[j] / (uint64_t)count[j]);
    } else {
      interp_store_u(y, j, acc[j]);
    }
  }
  free(acc);
  free(count);
  return NULL;
}

static kiln_status reduce_run(const char *name, reduce_op op, const kiln_attrs *attrs,
                              interp_tensor *outs, uint32_t n_outs, const interp_tensor *ins,
                              uint32_t n_ins) {
  INTERP_ARITY(reduce, 1, 1);
  interp_tensor *y = &outs[0];
  const interp_tensor *x = &ins[0];
  interp_class c = interp_class_of(x->type.elem);
  /* ONNX allows bool for Max and Min only (logical or / and) */
  if (c == INTERP_BOOL && op != R_MAX && op != R_MIN)
    return interp_bad_elem(name, "input", x->type.elem);
  bool mask[KILN_MAX_RANK], reduce;
  KILN_TRY(reduce_axes(name, attrs, x->type.rank, mask, &reduce));
  if (!reduce) {
    int64_t n = interp_numel(y);
    for (int64_t i = 0; i < n; i++)
      interp_copy_elem(y, i, x, i);
    return NULL;
  }
  if (c == INTERP_FLOAT || op == R_L2 || op == R_LOGSUM || op == R_LOGSUMEXP)
    return reduce_float(op, y, x, mask);
  return reduce_int(op, y, x, mask);
}

#define REDUCE_KERNEL(name, op)                                                                    \
  INTERP_KERNEL(name) {                                                                            \
    return reduce_run(#name, op, attrs, outs, n_outs, ins, n_ins);                                 \
  }
REDUCE_KERNEL(ReduceL1, R_L1)
REDUCE_KERNEL(ReduceL2, R_L2)
REDUCE_KERNEL(ReduceLogSum, R_LOGSUM)
REDUCE_KERNEL(ReduceLogSumExp, R_LOGSUMEXP)
REDUCE_KERNEL(ReduceMax, R_MAX)
REDUCE_KERNEL(ReduceMean, R_MEAN)
REDUCE_KERNEL(ReduceMin, R_MIN)
REDUCE_KERNEL(ReduceProd, R_PROD)
REDUCE_KERNEL(ReduceSum, R_SUM)
REDUCE_KERNEL(ReduceSumSquare, R_SUMSQUARE)

/* Is a strictly better than b for ArgMax (want_max) or ArgMin? NaN beats
 * every number, so the first NaN wins (numpy's rule). */
static bool arg_better(interp_class c, const interp_tensor *x, int64_t a, int64_t b,
                       bool want_max) {
  if (c == INTERP_FLOAT) {
    double va = interp_load_f(x, a), vb = interp_load_f(x, b);
    if (isnan(vb))
      return false;
    if (isnan(va))
      return true;
    return want_max ? va > vb : va < vb;
  }
  if (c == INTERP_SIGNED) {
    int64_t va = interp_load_i(x, a), vb = interp_load_i(x, b);
    return want_max ? va > vb : va < vb;
  }
  uint64_t va = interp_load_u(x, a), vb = interp_load_u(x, b);
  return want_max ? va > vb : va < vb;
}

static bool arg_equal(interp_class c, const interp_tensor *x, int64_t a, int64_t b) {
  if (c == INTERP_FLOAT) {
    double va = interp_load_f(x, a), vb = interp_load_f(x, b);
    return va == vb || (isnan(va) && isnan(vb));
  }
  return interp_load_u(x, a) == interp_load_u(x, b);
}

static kiln_status arg_run(const char *name, bool want_max, const kiln_attrs *attrs,
                           interp_tensor *outs, uint32_t n_outs, const interp_tensor *ins,
                           uint32_t n_ins) {
  INTERP_ARITY(arg, 1, 1);
  const interp_tensor *x = &ins[0];
  interp_class c = interp_class_of(x->type.elem);
  if (c == INTERP_BOOL)
    return interp_bad_elem(name, "input", x->type.elem);
  interp_axis_view v;
  KILN_TRY(interp_axis_view_make(name, &x->type, kiln_attrs_int_or(attrs, "axis", 0), &v));
  bool last = kiln_attrs_int_or(attrs, "select_last_index", 0) != 0;
  if (v.len == 0 && v.outer * v.inner > 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter %s: reduced axis %u is empty", name,
                            v.axis);
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t in = 0; in < v.inner; in++) {
      int64_t best = 0;
      for (int64_t k = 1; k < v.len; k++) {
        int64_t cur = interp_axis_at(&v, o, in, k), bi = interp_axis_at(&v, o, in, best);
        if (arg_better(c, x, cur, bi, want_max) || (last && arg_equal(c, x, cur, bi)))
          best = k;
      }
      interp_store_i(&outs[0], o * v.inner + in, best);
    }
  return NULL;
}

INTERP_KERNEL(ArgMax) {
  return arg_run("ArgMax", true, attrs, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(ArgMin) {
  return arg_run("ArgMin", false, attrs, outs, n_outs, ins, n_ins);
}

INTERP_KERNEL(CumSum) {
  INTERP_ARITY(CumSum, 1, 1);
  const interp_tensor *x = &ins[0];
  interp_tensor *y = &outs[0];
  interp_class c = interp_class_of(x->type.elem);
  if (c == INTERP_BOOL)
    return interp_bad_elem("CumSum", "input", x->type.elem);
  interp_axis_view v;
  KILN_TRY(interp_axis_view_make("CumSum", &x->type, kiln_attrs_int_or(attrs, "axis", 0), &v));
  bool excl = kiln_attrs_int_or(attrs, "exclusive", 0) != 0;
  bool rev = kiln_attrs_int_or(attrs, "reverse", 0) != 0;
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t in = 0; in < v.inner; in++) {
      double sf = 0.0;
      uint64_t si = 0; /* signed and unsigned sums share the wrapping bits */
      for (int64_t s = 0; s < v.len; s++) {
        int64_t idx = interp_axis_at(&v, o, in, rev ? v.len - 1 - s : s);
        if (c == INTERP_FLOAT) {
          double e = interp_load_f(x, idx);
          if (!excl)
            sf += e;
          interp_store_f(y, idx, sf);
          if (excl)
            sf += e;
        } else {
          uint64_t e = c == INTERP_SIGNED ? (uint64_t)interp_load_i(x, idx) : interp_load_u(x, idx);
          if (!excl)
            si += e;
          interp_store_u(y, idx, si);
          if (excl)
            si += e;
        }
      }
    }
  return NULL;
}

/* TopK orders by value, then by index, so the order is total and ties keep
 * the lower index first. NaN counts as larger than every number. */
typedef struct topk_item {
  double f;
  int64_t i;
  uint64_t u;
  int64_t index;
  interp_class c;
  bool largest;
} topk_item;

static int topk_cmp(const void *pa, const void *pb) {
  const topk_item *a = pa, *b = pb;
  int r; /* > 0 when a's value is larger */
  if (a->c == INTERP_FLOAT) {
    bool na = isnan(a->f), nb = isnan(b->f);
    r = na || nb ? (int)na - (int)nb : (a->f > b->f) - (a->f < b->f);
  } else if (a->c == INTERP_SIGNED) {
    r = (a->i > b->i) - (a->i < b->i);
  } else {
    r = (a->u > b->u) - (a->u < b->u);
  }
  if (r != 0)
    return a->largest ? -r : r;
  return (a->index > b->index) - (a->index < b->index);
}

INTERP_KERNEL(TopK) {
  INTERP_ARITY(TopK, 2, 1);
  const interp_tensor *x = &ins[0];
  interp_class c = interp_class_of(x->type.elem);
  if (c == INTERP_BOOL)
    return interp_bad_elem("TopK", "input", x->type.elem);
  interp_axis_view v;
  KILN_TRY(interp_axis_view_make("TopK", &x->type, kiln_attrs_int_or(attrs, "axis", -1), &v));
  int64_t k = kiln_attrs_int_or(attrs, "k", -1);
  if (k < 0 || k > v.len)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter TopK: k = %lld is outside [0, %lld] (axis %u)",
                            (long long)k, (long long)v.len, v.axis);
  bool largest = kiln_attrs_int_or(attrs, "largest", 1) != 0;
  /* sorted = 0 leaves the order unspecified; sorted order is one such. */
  topk_item *items;
  KILN_TRY(interp_scratch("TopK", v.len, sizeof *items, (void **)&items));
  interp_axis_view ov = v;
  ov.len = k;
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t in = 0; in < v.inner; in++) {
      for (int64_t j = 0; j < v.len; j++) {
        int64_t idx = interp_axis_at(&v, o, in, j);
        items[j] = (topk_item){.index = j, .c = c, .largest = largest};
        if (c == INTERP_FLOAT)
          items[j].f = interp_load_f(x, idx);
        else if (c == INTERP_SIGNED)
          items[j].i = interp_load_i(x, idx);
        else
          items[j].u = interp_load_u(x, idx);
      }
      if (v.len > 1)
        qsort(items, (size_t)v.len, sizeof *items, topk_cmp);
      for (int64_t j = 0; j < k; j++) {
        int64_t dst = interp_axis_at(&ov, o, in, j);
        interp_copy_elem(&outs[0], dst, x, interp_axis_at(&v, o, in, items[j].index));
        interp_store_i(&outs[1], dst, items[j].index);
      }
    }
  free(items);
  return NULL;
}
