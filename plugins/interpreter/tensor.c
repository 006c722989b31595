/* plugins/interpreter/tensor.c: element access and index helpers shared by
 * every interpreter kernel. Loads widen to double / int64 / uint64; stores
 * narrow with the documented rules (docs/interpreter.md): floats round to
 * nearest even, integers wrap, bool stores nonzero as 1. Memory is accessed
 * with memcpy so that unaligned views never trip the sanitizer. */
#include <math.h>
#include <string.h>

#include "interp.h"

#include <kiln/ops.h>

static char *elem_ptr(const interp_tensor *t, int64_t i) {
  return (char *)t->data + (size_t)i * kiln_elem_size(t->type.elem);
}

int64_t interp_numel(const interp_tensor *t) {
  int64_t n = 1;
  for (uint32_t d = 0; d < t->type.rank; d++)
    n *= t->type.dims[d];
  return n;
}

interp_class interp_class_of(kiln_elem e) {
  switch (e) {
  case KILN_F64:
  case KILN_F32:
  case KILN_F16:
  case KILN_BF16:
    return INTERP_FLOAT;
  case KILN_I8:
  case KILN_I16:
  case KILN_I32:
  case KILN_I64:
    return INTERP_SIGNED;
  case KILN_BOOL:
    return INTERP_BOOL;
  default:
    return INTERP_UNSIGNED;
  }
}

/* The raw bits of an integer element, sign- or zero-extended to 64 bits. */
static int64_t load_int_bits(const interp_tensor *t, int64_t i) {
  const char *p = elem_ptr(t, i);
  switch (t->type.elem) {
  case KILN_I8: {
    int8_t v;
    memcpy(&v, p, 1);
    return v;
  }
  case KILN_U8:
  case KILN_BOOL: {
    uint8_t v;
    memcpy(&v, p, 1);
    return v;
  }
  case KILN_I16: {
    int16_t v;
    memcpy(&v, p, 2);
    return v;
  }
  case KILN_U16: {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
  }
  case KILN_I32: {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  case KILN_U32: {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  default: {
    int64_t v;
    memcpy(&v, p, 8);
    return v;
  }
  }
}

/* Store the low bits of v (wrap-around). */
static void store_int_bits(interp_tensor *t, int64_t i, uint64_t v) {
  char *p = elem_ptr(t, i);
  switch (t->type.elem) {
  case KILN_I8:
  case KILN_U8: {
    uint8_t x = (uint8_t)v;
    memcpy(p, &x, 1);
    break;
  }
  case KILN_BOOL: {
    uint8_t x = v != 0;
    memcpy(p, &x, 1);
    break;
  }
  case KILN_I16:
  case KILN_U16: {
    uint16_t x = (uint16_t)v;
    memcpy(p, &x, 2);
    break;
  }
  case KILN_I32:
  case KILN_U32: {
    uint32_t x = (uint32_t)v;
    memcpy(p, &x, 4);
    break;
  }
  default:
    memcpy(p, &v, 8);
    break;
  }
}

static double load_float(const interp_tensor *t, int64_t i) {
  const char *p = elem_ptr(t, i);
  switch (t->type.elem) {
  case KILN_F64: {
    double v;
    memcpy(&v, p, 8);
    return v;
  }
  case KILN_F32: {
    float v;
    memcpy(&v, p, 4);
    return v;
  }
  case KILN_F16: {
    uint16_t h;
    memcpy(&h, p, 2);
    return kiln_f16_to_f32(h);
  }
  default: {
    uint16_t h;
    memcpy(&h, p, 2);
    return kiln_bf16_to_f32(h);
  }
  }
}

static void store_float(interp_tensor *t, int64_t i, double v) {
  char *p = elem_ptr(t, i);
  switch (t->type.elem) {
  case KILN_F64:
    memcpy(p, &v, 8);
    break;
  case KILN_F32: {
    float f = (float)v;
    memcpy(p, &f, 4);
    break;
  }
  case KILN_F16: {
    /* Two roundings (double->float->half) can differ from one only when
     * the double lies exactly on a half-way point after the first, which
     * f32 inputs never produce; documented in docs/interpreter.md. */
    uint16_t h = kiln_f32_to_f16((float)v);
    memcpy(p, &h, 2);
    break;
  }
  default: {
    uint16_t h = kiln_f32_to_bf16((float)v);
    memcpy(p, &h, 2);
    break;
  }
  }
}

/* double -> 64-bit pattern: truncate toward zero, NaN -> 0, values beyond
 * the 64-bit range saturate, then the store wraps to the element width. */
static uint64_t double_to_bits(double v, bool is_unsigned) {
  if (isnan(v))
    return 0;
  v = trunc(v);
  if (v >= 18446744073709551616.0)
    return is_unsigned ? UINT64_MAX : (uint64_t)INT64_MAX;
  if (v >= 9223372036854775808.0)
    return is_unsigned ? (uint64_t)v : (uint64_t)INT64_MAX;
  if (v < -9223372036854775808.0)
    return (uint64_t)INT64_MIN;
  return (uint64_t)(int64_t)v;
}

double interp_load_f(const interp_tensor *t, int64_t i) {
  switch (interp_class_of(t->type.elem)) {
  case INTERP_FLOAT:
    return load_float(t, i);
  case INTERP_UNSIGNED:
    return (double)(uint64_t)load_int_bits(t, i);
  default:
    return (double)load_int_bits(t, i);
  }
}

void interp_store_f(interp_tensor *t, int64_t i, double v) {
  switch (interp_class_of(t->type.elem)) {
  case INTERP_FLOAT:
    store_float(t, i, v);
    break;
  case INTERP_BOOL:
    store_int_bits(t, i, v != 0.0); /* NaN != 0: true, like numpy */
    break;
  case INTERP_UNSIGNED:
    store_int_bits(t, i, double_to_bits(v, true));
    break;
  default:
    store_int_bits(t, i, double_to_bits(v, false));
    break;
  }
}

int64_t interp_load_i(const interp_tensor *t, int64_t i) {
  if (interp_class_of(t->type.elem) == INTERP_FLOAT)
    return (int64_t)double_to_bits(load_float(t, i), false);
  return load_int_bits(t, i);
}

void interp_store_i(interp_tensor *t, int64_t i, int64_t v) {
  if (interp_class_of(t->type.elem) == INTERP_FLOAT)
    store_float(t, i, (double)v);
  else
    store_int_bits(t, i, (uint64_t)v);
}

uint64_t interp_load_u(const interp_tensor *t, int64_t i) {
  if (interp_class_of(t->type.elem) == INTERP_FLOAT)
    return double_to_bits(load_float(t, i), true);
  return (uint64_t)load_int_bits(t, i);
}

void interp_store_u(interp_tensor *t, int64_t i, uint64_t v) {
  if (interp_class_of(t->type.elem) == INTERP_FLOAT)
    store_float(t, i, (double)v);
  else
    store_int_bits(t, i, v);
}

void interp_copy_elem(interp_tensor *dst, int64_t j, const interp_tensor *src, int64_t i) {
  memcpy(elem_ptr(dst, j), elem_ptr(src, i), kiln_elem_size(src->type.elem));
}

void interp_unravel(const kiln_type *t, int64_t i, int64_t *coords) {
  for (uint32_t d = t->rank; d-- > 0;) {
    int64_t n = t->dims[d];
    coords[d] = n > 0 ? i % n : 0;
    i = n > 0 ? i / n : 0;
  }
}

int64_t interp_ravel(const kiln_type *t, const int64_t *coords) {
  int64_t i = 0;
  for (uint32_t d = 0; d < t->rank; d++)
    i = i * t->dims[d] + coords[d];
  return i;
}

int64_t interp_broadcast_index(const kiln_type *out, const kiln_type *in, int64_t i) {
  int64_t coords[KILN_MAX_RANK];
  interp_unravel(out, i, coords);
  int64_t j = 0;
  uint32_t shift = out->rank - in->rank; /* inputs align to the right */
  for (uint32_t d = 0; d < in->rank; d++) {
    int64_t n = in->dims[d];
    j = j * n + (n == 1 ? 0 : coords[d + shift]);
  }
  return j;
}

kiln_status interp_axis(int64_t axis, uint32_t rank, uint32_t *out) {
  int64_t r = rank;
  if (axis < -r || axis >= (r == 0 ? 1 : r))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "axis %lld out of range for rank %u",
                            (long long)axis, rank);
  *out = (uint32_t)(axis < 0 ? axis + r : axis);
  return NULL;
}

kiln_status interp_apply_activation(const char *kernel, const kiln_attrs *attrs, interp_tensor *y) {
  kiln_fused_act_params act;
  KILN_TRY_CTX(kiln_fused_act_decode_params(kernel, attrs, &act), "interpreter");
  if (act.kind == KILN_FUSED_ACT_NONE)
    return NULL;
  double alpha = act.alpha, beta = act.beta;
  int64_t n = kiln_type_numel(&y->type);
  /* each formula is the standalone kernel's (elementwise_unary.c, Clip in
   * elementwise_variadic.c), so a fused node computes what the pair did */
  for (int64_t i = 0; i < n; i++) {
    double x = interp_load_f(y, i), r, ax;
    switch (act.kind) {
    case KILN_FUSED_ACT_RELU:
      r = x > 0 || isnan(x) ? x : 0.0;
      break;
    case KILN_FUSED_ACT_LEAKY_RELU:
      r = x >= 0 || isnan(x) ? x : alpha * x;
      break;
    case KILN_FUSED_ACT_SIGMOID:
      r = x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
      break;
    case KILN_FUSED_ACT_GELU: /* as the Gelu kernel's exact form */
      r = 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
      break;
    case KILN_FUSED_ACT_CLIP:
      r = x < alpha ? alpha : x;
      r = r > beta ? beta : r;
      break;
    case KILN_FUSED_ACT_HARD_SIGMOID:
      r = fmax(0.0, fmin(1.0, alpha * x + beta));
      break;
    case KILN_FUSED_ACT_HARD_SWISH:
      r = x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
      break;
    case KILN_FUSED_ACT_SWISH:
      ax = alpha * x;
      r = x * (ax >= 0 ? 1.0 / (1.0 + exp(-ax)) : exp(ax) / (1.0 + exp(ax)));
      break;
    default:
      r = tanh(x);
      break;
    }
    interp_store_f(y, i, r);
  }
  return NULL;
}
