/* ir/types.c: element types, tensor types (checked construction, sizes,
 * strides, text form) and float16 / bfloat16 conversions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/ops_ref.h"
#include "kiln/types.h"

static const struct {
  const char *name;
  size_t size;
} elem_table[KILN_ELEM_COUNT] = {
    [KILN_F64] = {"f64", 8},   [KILN_F32] = {"f32", 4}, [KILN_F16] = {"f16", 2},
    [KILN_BF16] = {"bf16", 2}, [KILN_I8] = {"i8", 1},   [KILN_U8] = {"u8", 1},
    [KILN_I16] = {"i16", 2},   [KILN_U16] = {"u16", 2}, [KILN_I32] = {"i32", 4},
    [KILN_U32] = {"u32", 4},   [KILN_I64] = {"i64", 8}, [KILN_U64] = {"u64", 8},
    [KILN_BOOL] = {"bool", 1},
};

static bool elem_valid(kiln_elem e) {
  return (int)e >= 0 && e < KILN_ELEM_COUNT;
}

size_t kiln_elem_size(kiln_elem e) {
  return elem_valid(e) ? elem_table[e].size : 0;
}

const char *kiln_elem_name(kiln_elem e) {
  return elem_valid(e) ? elem_table[e].name : "?";
}

bool kiln_elem_from_name(const char *name, kiln_elem *out) {
  if (!name)
    return false;
  for (int i = 0; i < KILN_ELEM_COUNT; i++) {
    if (strcmp(name, elem_table[i].name) == 0) {
      if (out)
        *out = (kiln_elem)i;
      return true;
    }
  }
  return false;
}

bool kiln_elem_is_float(kiln_elem e) {
  return e == KILN_F64 || e == KILN_F32 || e == KILN_F16 || e == KILN_BF16;
}

bool kiln_elem_is_signed_int(kiln_elem e) {
  return e == KILN_I8 || e == KILN_I16 || e == KILN_I32 || e == KILN_I64;
}

bool kiln_elem_is_unsigned_int(kiln_elem e) {
  return e == KILN_U8 || e == KILN_U16 || e == KILN_U32 || e == KILN_U64;
}

static kiln_status type_make(kiln_elem elem, uint32_t rank, const int64_t *dims, kiln_type *out) {
  memset(out, 0, sizeof *out);
  if (!elem_valid(elem))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "type: invalid element type %d", (int)elem);
  if (rank > KILN_MAX_RANK)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "type: rank %u exceeds the maximum of %d", rank,
                            KILN_MAX_RANK);
  if (rank > 0 && !dims)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "type: rank %u but no dimensions given", rank);
  /* The limit is 2^63 - 1 for both numel and bytes; checking before each
   * multiply keeps the arithmetic itself from overflowing. */
  const int64_t limit = INT64_MAX;
  int64_t numel = 1;
  bool empty = false;
  for (uint32_t i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "type: dimension %u is negative (%lld)", i,
                              (long long)dims[i]);
    if (dims[i] == 0)
      empty = true;
  }
  /* The product of the non-zero dimensions must fit too, also in an empty
   * tensor: strides and partial products over the dims are then never an
   * overflow anywhere else. */
  for (uint32_t i = 0; i < rank; i++) {
    int64_t d = dims[i] ? dims[i] : 1;
    if (numel > limit / d)
      return kiln_status_make(KILN_OUT_OF_RANGE,
                              "type: element count overflows 63 bits at dimension %u", i);
    numel *= d;
  }
  if (!empty) {
    int64_t es = (int64_t)elem_table[elem].size;
    if (numel > limit / es)
      return kiln_status_make(KILN_OUT_OF_RANGE,
                              "type: byte size of %lld %s elements overflows 63 bits",
                              (long long)numel, elem_table[elem].name);
  }
  out->elem = elem;
  out->rank = rank;
  for (uint32_t i = 0; i < rank; i++)
    out->dims[i] = dims[i];
  return NULL;
}

kiln_status kiln_type_make(kiln_elem elem, uint32_t rank, const int64_t *dims, kiln_type *out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "type: no output");
  return type_make(elem, rank, dims, out);
}

kiln_status kiln_type_make_quantized(kiln_elem elem, uint32_t rank, const int64_t *dims,
                                     float scale, int32_t zero_point, kiln_type *out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "type: no output");
  memset(out, 0, sizeof *out);
  if (elem != KILN_I8 && elem != KILN_U8 && elem != KILN_I32)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "type: quantized element type must be i8, u8 or i32, not %s",
                            kiln_elem_name(elem));
  if (!isfinite(scale) || scale <= 0.0f)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "type: quantization scale must be finite and positive, got %g",
                            (double)scale);
  kiln_status s = type_make(elem, rank, dims, out);
  if (s)
    return s;
  out->quantized = true;
  out->scale = scale;
  out->zero_point = zero_point;
  return NULL;
}

int64_t kiln_type_numel(const kiln_type *t) {
  int64_t n = 1;
  for (uint32_t i = 0; i < t->rank && i < KILN_MAX_RANK; i++)
    n *= t->dims[i];
  return n;
}

int64_t kiln_type_bytes(const kiln_type *t) {
  return kiln_type_numel(t) * (int64_t)kiln_elem_size(t->elem);
}

void kiln_type_strides(const kiln_type *t, int64_t *out) {
  int64_t s = 1;
  for (uint32_t i = 0; i < KILN_MAX_RANK; i++)
    out[i] = 0;
  for (uint32_t i = t->rank; i-- > 0;) {
    out[i] = s;
    s *= t->dims[i];
  }
}

bool kiln_type_same_shape(const kiln_type *a, const kiln_type *b) {
  if (a->elem != b->elem || a->rank != b->rank)
    return false;
  for (uint32_t i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return true;
}

bool kiln_type_equal(const kiln_type *a, const kiln_type *b) {
  if (!kiln_type_same_shape(a, b) || a->quantized != b->quantized)
    return false;
  if (a->quantized && (a->scale != b->scale || a->zero_point != b->zero_point))
    return false;
  return true;
}

/* Shortest %g form that reads back as the same float, so that printing and
 * parsing a quantized type is lossless. */
static void format_float_shortest(float f, char *buf, size_t n) {
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(buf, n, "%.*g", prec, (double)f);
    if (strtof(buf, NULL) == f)
      return;
  }
  snprintf(buf, n, "%.9g", (double)f);
}

int kiln_type_format(const kiln_type *t, char *buf, size_t n) {
  char tmp[64 + KILN_MAX_RANK * 24];
  size_t len = 0;
  len += (size_t)snprintf(tmp + len, sizeof tmp - len, "%s", kiln_elem_name(t->elem));
  if (t->quantized) {
    char sc[32];
    format_float_shortest(t->scale, sc, sizeof sc);
    len += (size_t)snprintf(tmp + len, sizeof tmp - len, "q(%s,%d)", sc, (int)t->zero_point);
  }
  tmp[len++] = '[';
  for (uint32_t i = 0; i < t->rank && i < KILN_MAX_RANK; i++)
    len += (size_t)snprintf(tmp + len, sizeof tmp - len, "%s%lld", i ? "," : "",
                            (long long)t->dims[i]);
  tmp[len++] = ']';
  tmp[len] = '\0';
  if (buf && n) {
    size_t c = len < n - 1 ? len : n - 1;
    memcpy(buf, tmp, c);
    buf[c] = '\0';
  }
  return (int)len;
}

/* ---- half precision ---- */

/* The conversions live in kiln/ops_ref.h, where the cpu backend's bitcode
 * kernels include them too. */
float kiln_f16_to_f32(uint16_t h) {
  return kiln_ref_f16_to_f32(h);
}

uint16_t kiln_f32_to_f16(float f) {
  return kiln_ref_f32_to_f16(f);
}

float kiln_bf16_to_f32(uint16_t h) {
  return kiln_ref_bf16_to_f32(h);
}

uint16_t kiln_f32_to_bf16(float f) {
  return kiln_ref_f32_to_bf16(f);
}

double kiln_elem_load_f64(kiln_elem e, const void *p, int64_t i) {
  switch (e) {
  case KILN_F64:
    return ((const double *)p)[i];
  case KILN_F32:
    return ((const float *)p)[i];
  case KILN_F16:
    return kiln_f16_to_f32(((const uint16_t *)p)[i]);
  case KILN_BF16:
    return kiln_bf16_to_f32(((const uint16_t *)p)[i]);
  case KILN_I8:
    return ((const int8_t *)p)[i];
  case KILN_U8:
    return ((const uint8_t *)p)[i];
  case KILN_I16:
    return ((const int16_t *)p)[i];
  case KILN_U16:
    return ((const uint16_t *)p)[i];
  case KILN_I32:
    return ((const int32_t *)p)[i];
  case KILN_U32:
    return ((const uint32_t *)p)[i];
  case KILN_I64:
    return (double)((const int64_t *)p)[i];
  case KILN_U64:
    return (double)((const uint64_t *)p)[i];
  case KILN_BOOL:
    return ((const uint8_t *)p)[i] != 0;
  default:
    return 0.0;
  }
}

/* v truncated and clamped into [lo, hi]; NaN gives 0. The clamp keeps the
 * conversion defined (C leaves out-of-range float to integer undefined). */
static double elem_int_clamp(double v, double lo, double hi) {
  if (v != v)
    return 0;
  v = trunc(v);
  return v < lo ? lo : v > hi ? hi : v;
}

void kiln_elem_store_f64(kiln_elem e, void *p, int64_t i, double v) {
  switch (e) {
  case KILN_F64:
    ((double *)p)[i] = v;
    break;
  case KILN_F32:
    ((float *)p)[i] = (float)v;
    break;
  case KILN_F16:
    ((uint16_t *)p)[i] = kiln_f32_to_f16((float)v);
    break;
  case KILN_BF16:
    ((uint16_t *)p)[i] = kiln_f32_to_bf16((float)v);
    break;
  case KILN_I8:
    ((int8_t *)p)[i] = (int8_t)elem_int_clamp(v, INT8_MIN, INT8_MAX);
    break;
  case KILN_U8:
    ((uint8_t *)p)[i] = (uint8_t)elem_int_clamp(v, 0, UINT8_MAX);
    break;
  case KILN_I16:
    ((int16_t *)p)[i] = (int16_t)elem_int_clamp(v, INT16_MIN, INT16_MAX);
    break;
  case KILN_U16:
    ((uint16_t *)p)[i] = (uint16_t)elem_int_clamp(v, 0, UINT16_MAX);
    break;
  case KILN_I32:
    ((int32_t *)p)[i] = (int32_t)elem_int_clamp(v, INT32_MIN, INT32_MAX);
    break;
  case KILN_U32:
    ((uint32_t *)p)[i] = (uint32_t)elem_int_clamp(v, 0, UINT32_MAX);
    break;
  case KILN_I64: /* 2^63 is the first double past the range */
    ((int64_t *)p)[i] = v >= 0x1p63 ? INT64_MAX : (int64_t)elem_int_clamp(v, -0x1p63, 0x1p63);
    break;
  case KILN_U64:
    ((uint64_t *)p)[i] = v >= 0x1p64 ? UINT64_MAX : (uint64_t)elem_int_clamp(v, 0, 0x1p64);
    break;
  case KILN_BOOL:
    ((uint8_t *)p)[i] = v != 0;
    break;
  default:
    break;
  }
}
