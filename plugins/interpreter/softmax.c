/* plugins/interpreter/softmax.c: kernels that work along one axis, seeing
 * the tensor as [outer, len, inner]: Softmax, LogSoftmax, Hardmax, CumSum
 * and TopK. */
#include "kernel.h"

typedef struct axis_view {
  uint32_t axis;
  int64_t outer, len, inner;
} axis_view;

static kiln_status axis_view_make(const char *name, const kiln_type *t, int64_t axis,
                                  axis_view *v) {
  KILN_TRY_CTX(interp_axis(axis, t->rank, &v->axis), "interpreter %s", name);
  v->outer = v->inner = 1;
  v->len = t->rank ? t->dims[v->axis] : 1;
  for (uint32_t d = 0; d < v->axis; d++)
    v->outer *= t->dims[d];
  for (uint32_t d = v->axis + 1; d < t->rank; d++)
    v->inner *= t->dims[d];
  return NULL;
}

/* Flat index of position k along the axis in lane (o, in). */
static int64_t at(const axis_view *v, int64_t o, int64_t in, int64_t k) {
  return (o * v->len + k) * v->inner + in;
}

typedef enum { SM_SOFT, SM_LOG, SM_HARD } softmax_kind;

static kiln_status softmax_run(const char *name, softmax_kind kind, const kiln_attrs *attrs,
                               interp_tensor *outs, uint32_t n_outs, const interp_tensor *ins,
                               uint32_t n_ins) {
  INTERP_ARITY(softmax, 1, 1);
  const interp_tensor *x = &ins[0];
  interp_tensor *y = &outs[0];
  if (interp_class_of(x->type.elem) != INTERP_FLOAT)
    return interp_bad_elem(name, "input", x->type.elem);
  axis_view v;
  KILN_TRY(axis_view_make(name, &x->type, kiln_attrs_int_or(attrs, "axis", -1), &v));
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t in = 0; in < v.inner; in++) {
      double mx = -INFINITY;
      int64_t arg = 0;
      for (int64_t k = 0; k < v.len; k++) {
        double e = interp_load_f(x, at(&v, o, in, k));
        if (e > mx || (isnan(e) && !isnan(mx))) {
          mx = e;
          arg = k;
        }
      }
      if (kind == SM_HARD) {
        for (int64_t k = 0; k < v.len; k++)
          interp_store_f(y, at(&v, o, in, k), k == arg ? 1.0 : 0.0);
        continue;
      }
      /* Subtracting the maximum keeps exp() finite; an all -inf lane
       * stays NaN like the reference. */
      double sum = 0.0;
      for (int64_t k = 0; k < v.len; k++)
        sum += exp(interp_load_f(x, at(&v, o, in, k)) - mx);
      for (int64_t k = 0; k < v.len; k++) {
        double d = interp_load_f(x, at(&v, o, in, k)) - mx;
        interp_store_f(y, at(&v, o, in, k), kind == SM_LOG ? d - log(sum) : exp(d) / sum);
      }
    }
  return NULL;
}

INTERP_KERNEL(Softmax) {
  return softmax_run("Softmax", SM_SOFT, attrs, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(LogSoftmax) {
  return softmax_run("LogSoftmax", SM_LOG, attrs, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(Hardmax) {
  return softmax_run("Hardmax", SM_HARD, attrs, outs, n_outs, ins, n_ins);
}

INTERP_KERNEL(CumSum) {
  INTERP_ARITY(CumSum, 1, 1);
  const interp_tensor *x = &ins[0];
  interp_tensor *y = &outs[0];
  interp_class c = interp_class_of(x->type.elem);
  if (c == INTERP_BOOL)
    return interp_bad_elem("CumSum", "input", x->type.elem);
  axis_view v;
  KILN_TRY(axis_view_make("CumSum", &x->type, kiln_attrs_int_or(attrs, "axis", 0), &v));
  bool excl = kiln_attrs_int_or(attrs, "exclusive", 0) != 0;
  bool rev = kiln_attrs_int_or(attrs, "reverse", 0) != 0;
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t in = 0; in < v.inner; in++) {
      double sf = 0.0;
      uint64_t si = 0; /* signed and unsigned sums share the wrapping bits */
      for (int64_t s = 0; s < v.len; s++) {
        int64_t idx = at(&v, o, in, rev ? v.len - 1 - s : s);
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
  axis_view v;
  KILN_TRY(axis_view_make("TopK", &x->type, kiln_attrs_int_or(attrs, "axis", -1), &v));
  int64_t k = kiln_attrs_int_or(attrs, "k", -1);
  if (k < 0 || k > v.len)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter TopK: k = %lld is outside [0, %lld] (axis %u)",
                            (long long)k, (long long)v.len, v.axis);
  bool largest = kiln_attrs_int_or(attrs, "largest", 1) != 0;
  /* sorted = 0 leaves the order unspecified; sorted order is one such. */
  topk_item *items;
  KILN_TRY(interp_scratch("TopK", v.len, sizeof *items, (void **)&items));
  axis_view ov = v;
  ov.len = k;
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t in = 0; in < v.inner; in++) {
      for (int64_t j = 0; j < v.len; j++) {
        int64_t idx = at(&v, o, in, j);
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
        int64_t dst = at(&ov, o, in, j);
        interp_copy_elem(&outs[0], dst, x, at(&v, o, in, items[j].index));
        interp_store_i(&outs[1], dst, items[j].index);
      }
    }
  free(items);
  return NULL;
}
