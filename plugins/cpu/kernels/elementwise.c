/* plugins/cpu/kernels/elementwise.c: the elementwise kinds the loop
 * generator (plugins/cpu/emit_elementwise_loop.c) does not emit inline:
 * Pow with differing base and exponent types, and Cast between every pair
 * of element types.
 *
 * Cast takes each element through a wide intermediate (double for floats, int64 /
 * uint64 for integers), which is exact for every source type; the common
 * f32 <-> integer pairs get direct loops. Float to integer truncates toward
 * zero; NaN and out-of-range values (undefined in ONNX) give 0 instead of
 * C's undefined behaviour. f16 / bf16 round to nearest even. */
#include "kcpu_elem.h"
#include "kcpu_runtime.h"
#include "kiln/ops_ref.h"

#include <math.h>
#include <string.h>

typedef struct kcpu_scalar {
  int kind; /* 0 double, 1 int64, 2 uint64 */
  double d;
  int64_t i;
  uint64_t u;
} kcpu_scalar;

static kcpu_scalar kcpu_load(const char *p, int64_t t) {
  kcpu_scalar s = {0, 0, 0, 0};
  switch (t) {
  case KCPU_F64:
    memcpy(&s.d, p, 8);
    break;
  case KCPU_F32: {
    float f;
    memcpy(&f, p, 4);
    s.d = f;
    break;
  }
  case KCPU_F16: {
    uint16_t h;
    memcpy(&h, p, 2);
    s.d = kiln_ref_f16_to_f32(h);
    break;
  }
  case KCPU_BF16: {
    uint16_t h;
    memcpy(&h, p, 2);
    s.d = kiln_ref_bf16_to_f32(h);
    break;
  }
  case KCPU_I8:
    s.kind = 1;
    s.i = *(const int8_t *)p;
    break;
  case KCPU_U8:
    s.kind = 1;
    s.i = *(const uint8_t *)p;
    break;
  case KCPU_BOOL:
    s.kind = 1;
    s.i = *(const uint8_t *)p != 0;
    break;
  case KCPU_I16: {
    int16_t v;
    memcpy(&v, p, 2);
    s.kind = 1;
    s.i = v;
    break;
  }
  case KCPU_U16: {
    uint16_t v;
    memcpy(&v, p, 2);
    s.kind = 1;
    s.i = v;
    break;
  }
  case KCPU_I32: {
    int32_t v;
    memcpy(&v, p, 4);
    s.kind = 1;
    s.i = v;
    break;
  }
  case KCPU_U32: {
    uint32_t v;
    memcpy(&v, p, 4);
    s.kind = 1;
    s.i = v;
    break;
  }
  case KCPU_I64:
    s.kind = 1;
    memcpy(&s.i, p, 8);
    break;
  case KCPU_U64:
    s.kind = 2;
    memcpy(&s.u, p, 8);
    break;
  default:
    break;
  }
  return s;
}

static int64_t kcpu_as_i64(kcpu_scalar s) {
  if (s.kind == 1)
    return s.i;
  if (s.kind == 2)
    return (int64_t)s.u;
  if (!(s.d > -9223372036854775808.0 && s.d < 9223372036854775808.0))
    return s.d >= 9223372036854775808.0 && s.d < 18446744073709551616.0 ? (int64_t)(uint64_t)s.d
                                                                        : 0;
  return (int64_t)s.d;
}

static double kcpu_as_f64(kcpu_scalar s) {
  return s.kind == 0 ? s.d : s.kind == 1 ? (double)s.i : (double)s.u;
}

static void kcpu_store(char *p, int64_t t, kcpu_scalar s) {
  switch (t) {
  case KCPU_F64: {
    double v = kcpu_as_f64(s);
    memcpy(p, &v, 8);
    break;
  }
  /* int64 -> f32 directly, not through double, to round once */
  case KCPU_F32: {
    float v = s.kind == 1 ? (float)s.i : s.kind == 2 ? (float)s.u : (float)s.d;
    memcpy(p, &v, 4);
    break;
  }
  case KCPU_F16: {
    uint16_t v = kiln_ref_f32_to_f16((float)kcpu_as_f64(s));
    memcpy(p, &v, 2);
    break;
  }
  case KCPU_BF16: {
    uint16_t v = kiln_ref_f32_to_bf16((float)kcpu_as_f64(s));
    memcpy(p, &v, 2);
    break;
  }
  case KCPU_BOOL:
    *(uint8_t *)p = s.kind == 0 ? s.d != 0 : s.kind == 1 ? s.i != 0 : s.u != 0;
    break;
  case KCPU_I8:
    *(int8_t *)p = (int8_t)kcpu_as_i64(s);
    break;
  case KCPU_U8:
    *(uint8_t *)p = (uint8_t)kcpu_as_i64(s);
    break;
  case KCPU_I16: {
    int16_t v = (int16_t)kcpu_as_i64(s);
    memcpy(p, &v, 2);
    break;
  }
  case KCPU_U16: {
    uint16_t v = (uint16_t)kcpu_as_i64(s);
    memcpy(p, &v, 2);
    break;
  }
  case KCPU_I32: {
    int32_t v = (int32_t)kcpu_as_i64(s);
    memcpy(p, &v, 4);
    break;
  }
  case KCPU_U32: {
    uint32_t v = (uint32_t)kcpu_as_i64(s);
    memcpy(p, &v, 4);
    break;
  }
  case KCPU_I64: {
    int64_t v = kcpu_as_i64(s);
    memcpy(p, &v, 8);
    break;
  }
  case KCPU_U64: {
    uint64_t v = s.kind == 2 ? s.u
                 : s.kind == 0 && s.d >= 9223372036854775808.0 && s.d < 18446744073709551616.0
                     ? (uint64_t)s.d
                     : (uint64_t)kcpu_as_i64(s);
    memcpy(p, &v, 8);
    break;
  }
  default:
    break;
  }
}

static const int64_t kcpu_esz[13] = {8, 4, 2, 2, 1, 1, 2, 2, 4, 4, 8, 8, 1};

int kcpu_k_cast(const void *x, int64_t from, void *y, int64_t to, int64_t n) {
  if (from < 0 || from > 12 || to < 0 || to > 12)
    return -1;
  if (from == to) {
    memmove(y, x, (size_t)(n * kcpu_esz[from]));
    return 0;
  }
  if (from == KCPU_F32 && to == KCPU_F16) {
    for (int64_t i = 0; i < n; i++)
      ((uint16_t *)y)[i] = kiln_ref_f32_to_f16(((const float *)x)[i]);
    return 0;
  }
  if (from == KCPU_F16 && to == KCPU_F32) {
    for (int64_t i = 0; i < n; i++)
      ((float *)y)[i] = kiln_ref_f16_to_f32(((const uint16_t *)x)[i]);
    return 0;
  }
  if (from == KCPU_I64 && to == KCPU_F32) {
    for (int64_t i = 0; i < n; i++)
      ((float *)y)[i] = (float)((const int64_t *)x)[i];
    return 0;
  }
  if (from == KCPU_I32 && to == KCPU_F32) {
    for (int64_t i = 0; i < n; i++)
      ((float *)y)[i] = (float)((const int32_t *)x)[i];
    return 0;
  }
  const char *src = x;
  char *dst = y;
  for (int64_t i = 0; i < n; i++)
    kcpu_store(dst + i * kcpu_esz[to], to, kcpu_load(src + i * kcpu_esz[from], from));
  return 0;
}

/* out[i] = a^b over the output dims[rank], a and b read with their own
 * strides (0 = broadcast); the result has a's type. Integer ** integer is
 * exact (kiln_ref_ipow, as the interpreter computes it), anything with a
 * float goes through double pow. */
void kcpu_k_pow_mixed(int64_t at, const void *a, const int64_t *a_st, int64_t bt, const void *b,
                      const int64_t *b_st, void *out, int64_t rank, const int64_t *dims) {
  int64_t n = 1, c[16] = {0};
  for (int64_t d = 0; d < rank; d++)
    n *= dims[d];
  int ints = !kcpu_e_is_float(at) && !kcpu_e_is_float(bt);
  for (int64_t i = 0; i < n; i++) {
    int64_t ia = 0, ib = 0;
    for (int64_t d = 0; d < rank; d++) {
      ia += c[d] * a_st[d];
      ib += c[d] * b_st[d];
    }
    if (ints)
      kcpu_e_sti(at, out, i, kiln_ref_ipow(kcpu_e_ldi(at, a, ia), kcpu_e_ldi(bt, b, ib)));
    else
      kcpu_e_stf(at, out, i, pow(kcpu_e_ldf(at, a, ia), kcpu_e_ldf(bt, b, ib)));
    for (int64_t d = rank - 1; d >= 0; d--) {
      if (++c[d] < dims[d])
        break;
      c[d] = 0;
    }
  }
}
