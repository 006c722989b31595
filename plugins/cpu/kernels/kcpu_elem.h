/* plugins/cpu/kernels/kcpu_elem.h: element access by type code for the
 * type-generic kernels (losses, generic linear algebra, scatter, pooling
 * with indices...). They trade speed for coverage: every value goes through
 * double (or int64 for integer types), which is exact for every type but
 * 64-bit integers beyond 2^53, and those take the int64 path. */
#ifndef KCPU_ELEM_H
#define KCPU_ELEM_H

#include <stdint.h>
#include <string.h>

#include "kcpu_runtime.h"
#include "kiln/ops_ref.h"

static inline int kcpu_e_is_float(int64_t t) {
  return t == KCPU_F32 || t == KCPU_F64 || t == KCPU_F16 || t == KCPU_BF16;
}

static inline int64_t kcpu_e_size(int64_t t) {
  switch (t) {
  case KCPU_F64:
  case KCPU_I64:
  case KCPU_U64:
    return 8;
  case KCPU_F32:
  case KCPU_I32:
  case KCPU_U32:
    return 4;
  case KCPU_F16:
  case KCPU_BF16:
  case KCPU_I16:
  case KCPU_U16:
    return 2;
  default:
    return 1;
  }
}

static inline double kcpu_e_ldf(int64_t t, const void *p, int64_t i) {
  switch (t) {
  case KCPU_F64:
    return ((const double *)p)[i];
  case KCPU_F32:
    return ((const float *)p)[i];
  case KCPU_F16:
    return kiln_ref_f16_to_f32(((const uint16_t *)p)[i]);
  case KCPU_BF16:
    return kiln_ref_bf16_to_f32(((const uint16_t *)p)[i]);
  case KCPU_I8:
    return ((const int8_t *)p)[i];
  case KCPU_U8:
  case KCPU_BOOL:
    return ((const uint8_t *)p)[i];
  case KCPU_I16:
    return ((const int16_t *)p)[i];
  case KCPU_U16:
    return ((const uint16_t *)p)[i];
  case KCPU_I32:
    return ((const int32_t *)p)[i];
  case KCPU_U32:
    return ((const uint32_t *)p)[i];
  case KCPU_I64:
    return (double)((const int64_t *)p)[i];
  case KCPU_U64:
    return (double)((const uint64_t *)p)[i];
  default:
    return 0.0;
  }
}

static inline int64_t kcpu_e_ldi(int64_t t, const void *p, int64_t i) {
  switch (t) {
  case KCPU_I64:
    return ((const int64_t *)p)[i];
  case KCPU_U64:
    return (int64_t)((const uint64_t *)p)[i];
  case KCPU_I32:
    return ((const int32_t *)p)[i];
  case KCPU_U32:
    return ((const uint32_t *)p)[i];
  case KCPU_I16:
    return ((const int16_t *)p)[i];
  case KCPU_U16:
    return ((const uint16_t *)p)[i];
  case KCPU_I8:
    return ((const int8_t *)p)[i];
  case KCPU_U8:
  case KCPU_BOOL:
    return ((const uint8_t *)p)[i];
  default: {
    double v = kcpu_e_ldf(t, p, i);
    return v != v ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
  }
  }
}

/* Store a float value; integer targets truncate toward zero (wrapping to
 * the width, as C's conversion through int64 does). */
static inline void kcpu_e_stf(int64_t t, void *p, int64_t i, double v) {
  switch (t) {
  case KCPU_F64:
    ((double *)p)[i] = v;
    return;
  case KCPU_F32:
    ((float *)p)[i] = (float)v;
    return;
  case KCPU_F16:
    ((uint16_t *)p)[i] = kiln_ref_f32_to_f16((float)v);
    return;
  case KCPU_BF16:
    ((uint16_t *)p)[i] = kiln_ref_f32_to_bf16((float)v);
    return;
  default: {
    int64_t q = v != v ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
    switch (t) {
    case KCPU_I64:
    case KCPU_U64:
      ((int64_t *)p)[i] = q;
      return;
    case KCPU_I32:
    case KCPU_U32:
      ((uint32_t *)p)[i] = (uint32_t)q;
      return;
    case KCPU_I16:
    case KCPU_U16:
      ((uint16_t *)p)[i] = (uint16_t)q;
      return;
    case KCPU_BOOL:
      ((uint8_t *)p)[i] = v != 0;
      return;
    default:
      ((uint8_t *)p)[i] = (uint8_t)q;
      return;
    }
  }
  }
}

static inline void kcpu_e_sti(int64_t t, void *p, int64_t i, int64_t v) {
  if (kcpu_e_is_float(t)) {
    kcpu_e_stf(t, p, i, (double)v);
    return;
  }
  switch (kcpu_e_size(t)) {
  case 8:
    ((int64_t *)p)[i] = v;
    return;
  case 4:
    ((uint32_t *)p)[i] = (uint32_t)v;
    return;
  case 2:
    ((uint16_t *)p)[i] = (uint16_t)v;
    return;
  default:
    ((uint8_t *)p)[i] = t == KCPU_BOOL ? v != 0 : (uint8_t)v;
    return;
  }
}

#endif
