/* plugins/interpreter/kernel.c: the private helpers of kernel.h, kept out
 * of the kernel files so that each holds only its operators' semantics. */
#include <kiln/ops_ref.h>

#include "kernel.h"

#include <stdarg.h>

kiln_status interp_bad_elem(const char *kernel, const char *what, kiln_elem e) {
  return kiln_status_make(KILN_UNIMPLEMENTED,
                          "interpreter %s: %s of element type %s is not supported", kernel, what,
                          kiln_elem_name(e));
}

kiln_status interp_scratch(const char *kernel, int64_t n, size_t size, void **out) {
  *out = calloc(n > 0 ? (size_t)n : 1, size);
  if (!*out)
    return kiln_status_make(KILN_OUT_OF_MEMORY,
                            "interpreter %s: no memory for %lld scratch elements", kernel,
                            (long long)n);
  return NULL;
}

const interp_tensor *interp_opt(const interp_tensor *ins, uint32_t n_ins, uint32_t i) {
  return i < n_ins && ins[i].data ? &ins[i] : NULL;
}

kiln_status interp_need_float(const char *name, const interp_tensor *x) {
  if (interp_class_of(x->type.elem) != INTERP_FLOAT)
    return interp_bad_elem(name, "input", x->type.elem);
  return NULL;
}

kiln_status interp_axis_view_make(const char *name, const kiln_type *t, int64_t axis,
                                  interp_axis_view *v) {
  KILN_TRY_CTX(interp_axis(axis, t->rank, &v->axis), "interpreter %s", name);
  v->outer = v->inner = 1;
  v->len = t->rank ? t->dims[v->axis] : 1;
  for (uint32_t d = 0; d < v->axis; d++)
    v->outer *= t->dims[d];
  for (uint32_t d = v->axis + 1; d < t->rank; d++)
    v->inner *= t->dims[d];
  return NULL;
}

interp_mv_cls interp_mv_class(kiln_elem e) {
  if (kiln_elem_is_float(e))
    return INTERP_MV_F;
  if (kiln_elem_is_signed_int(e))
    return INTERP_MV_S;
  return INTERP_MV_U;
}

kiln_status interp_mv_err(kiln_code code, const char *kernel, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = kiln_status_makev(code, fmt, ap);
  va_end(ap);
  return kiln_status_wrap(s, "interpreter %s", kernel);
}

uint32_t interp_mv_ints(const kiln_attrs *a, const char *name, const int64_t **out) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  *out = NULL;
  if (!at || kiln_attr_get_kind(at) != KILN_ATTR_INTS)
    return 0;
  *out = kiln_attr_ints(at);
  return *out ? kiln_attr_len(at) : 0;
}

uint32_t interp_mv_floats(const kiln_attrs *a, const char *name, const double **out) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  *out = NULL;
  if (!at)
    return 0;
  kiln_attr_kind k = kiln_attr_get_kind(at);
  if (k != KILN_ATTR_FLOATS && k != KILN_ATTR_INTS)
    return 0;
  *out = kiln_attr_floats(at);
  return *out ? kiln_attr_len(at) : 0;
}

const interp_tensor *interp_mv_opt(const interp_tensor *ins, uint32_t n_ins, uint32_t i) {
  if (i >= n_ins || ins[i].data == NULL)
    return NULL;
  return &ins[i];
}

int64_t interp_mv_numel(const interp_tensor *t) {
  return kiln_type_numel(&t->type);
}

int64_t interp_mv_prod(const int64_t *dims, uint32_t from, uint32_t to) {
  int64_t p = 1;
  for (uint32_t k = from; k < to; k++)
    p *= dims[k];
  return p;
}

void interp_mv_strides(const int64_t *dims, uint32_t rank, int64_t *st) {
  int64_t s = 1;
  for (uint32_t k = rank; k-- > 0;) {
    st[k] = s;
    s *= dims[k];
  }
}

void interp_mv_unravel(const int64_t *dims, uint32_t rank, int64_t i, int64_t *c) {
  for (uint32_t k = rank; k-- > 0;) {
    int64_t d = dims[k] > 0 ? dims[k] : 1;
    c[k] = i % d;
    i /= d;
  }
}

int64_t interp_mv_bcast(const int64_t *out_dims, uint32_t out_rank, const int64_t *in_dims,
                        uint32_t in_rank, const int64_t *c) {
  int64_t idx = 0;
  for (uint32_t k = 0; k < in_rank; k++) {
    uint32_t ok = out_rank - in_rank + k;
    int64_t x = in_dims[k] == 1 ? 0 : c[ok];
    (void)out_dims;
    idx = idx * in_dims[k] + x;
  }
  return idx;
}

uint64_t interp_mv_load_bits(const interp_tensor *t, int64_t i) {
  switch (interp_mv_class(t->type.elem)) {
  case INTERP_MV_F:
    return (uint64_t)interp_mv_load_int(t, i);
  case INTERP_MV_S:
    return (uint64_t)interp_load_i(t, i);
  default:
    return interp_load_u(t, i);
  }
}

void interp_mv_store_bits(interp_tensor *t, int64_t i, uint64_t v) {
  switch (interp_mv_class(t->type.elem)) {
  case INTERP_MV_F:
    interp_store_f(t, i, (double)(int64_t)v);
    break;
  case INTERP_MV_S:
    interp_store_i(t, i, (int64_t)v);
    break;
  default:
    if (t->type.elem == KILN_BOOL)
      v = v != 0;
    interp_store_u(t, i, v);
  }
}

static int64_t mv_double_to_int(double v) {
  if (isnan(v))
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return (int64_t)v;
}

int64_t interp_mv_load_int(const interp_tensor *t, int64_t i) {
  switch (interp_mv_class(t->type.elem)) {
  case INTERP_MV_F:
    return mv_double_to_int(interp_load_f(t, i));
  case INTERP_MV_S:
    return interp_load_i(t, i);
  default:
    return (int64_t)interp_load_u(t, i);
  }
}

void interp_mv_store_double(interp_tensor *t, int64_t i, double v) {
  switch (interp_mv_class(t->type.elem)) {
  case INTERP_MV_F:
    interp_store_f(t, i, v);
    break;
  case INTERP_MV_S:
    interp_store_i(t, i, mv_double_to_int(v));
    break;
  default:
    if (t->type.elem == KILN_BOOL)
      interp_store_u(t, i, v != 0);
    else if (v >= 18446744073709551615.0)
      interp_store_u(t, i, UINT64_MAX);
    else if (v >= 0)
      interp_store_u(t, i, (uint64_t)v);
    else
      interp_store_u(t, i, (uint64_t)mv_double_to_int(v));
  }
}

void interp_mv_store_zero(interp_tensor *t, int64_t i) {
  size_t es = kiln_elem_size(t->type.elem);
  memset((char *)t->data + (size_t)i * es, 0, es);
}

void interp_mv_copy_run(interp_tensor *dst, int64_t j, const interp_tensor *src, int64_t i,
                        int64_t count) {
  if (count <= 0)
    return;
  size_t es = kiln_elem_size(src->type.elem);
  memmove((char *)dst->data + (size_t)j * es, (const char *)src->data + (size_t)i * es,
          (size_t)count * es);
}

double interp_mv_requant_multiplier(const interp_tensor *xs, int64_t xi, const interp_tensor *ws,
                                    int64_t wi, const interp_tensor *ys) {
  bool f64 = xs->type.elem == KILN_F64 || ws->type.elem == KILN_F64 || ys->type.elem == KILN_F64;
  return kiln_ref_requant_multiplier(interp_load_f(xs, xi), interp_load_f(ws, wi),
                                     interp_load_f(ys, 0), f64);
}

/* The range of an 8/16/32-bit integer type (others: int32's). */
static void mv_int_range(kiln_elem e, double *lo, double *hi) {
  switch (e) {
  case KILN_I8:
    *lo = -128, *hi = 127;
    break;
  case KILN_U8:
    *lo = 0, *hi = 255;
    break;
  case KILN_I16:
    *lo = -32768, *hi = 32767;
    break;
  case KILN_U16:
    *lo = 0, *hi = 65535;
    break;
  case KILN_U32:
    *lo = 0, *hi = 4294967295.0;
    break;
  default:
    *lo = -2147483648.0, *hi = 2147483647.0;
  }
}

int64_t interp_mv_requantize(kiln_elem e, int64_t acc, double multiplier, int64_t zero_point) {
  double lo, hi;
  mv_int_range(e, &lo, &hi);
  return kiln_ref_requantize(acc, multiplier, zero_point, lo, hi);
}
