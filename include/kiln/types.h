/* kiln/types.h: element types, tensor types, and the allocator interface.
 *
 * A kiln_type is a plain value (no heap memory): copy it freely. Dimensions
 * are static and non-negative; a dimension of 0 makes an empty tensor. The
 * element count of every valid type fits in 63 bits, and so do its byte size
 * and the product of its non-zero dimensions (also for an empty tensor):
 * kiln_type_make refuses anything larger instead of wrapping.
 *
 * Thread safety: all functions here are pure and thread-safe. */
#ifndef KILN_TYPES_H
#define KILN_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. Values are part of the ABI and the text form names them
 * (f64 f32 f16 bf16 i8 u8 i16 u16 i32 u32 i64 u64 bool). Append only. */
typedef enum kiln_elem {
  KILN_F64 = 0,
  KILN_F32 = 1,
  KILN_F16 = 2,
  KILN_BF16 = 3,
  KILN_I8 = 4,
  KILN_U8 = 5,
  KILN_I16 = 6,
  KILN_U16 = 7,
  KILN_I32 = 8,
  KILN_U32 = 9,
  KILN_I64 = 10,
  KILN_U64 = 11,
  KILN_BOOL = 12, /* one byte, 0 or 1 */
  KILN_ELEM_COUNT = 13
} kiln_elem;

#define KILN_MAX_RANK 8

/* A tensor type. `quantized` may be true only for i8, u8 and i32; then the
 * real value of a stored integer q is scale * (q - zero_point). */
typedef struct kiln_type {
  kiln_elem elem;
  uint32_t rank;
  int64_t dims[KILN_MAX_RANK]; /* entries past rank are 0 */
  bool quantized;
  float scale;
  int32_t zero_point;
} kiln_type;

/* Build a type, checking rank <= 8, dims >= 0, and that the element count
 * and byte size fit in 63 bits. On failure *out is zeroed. */
KILN_NODISCARD kiln_status kiln_type_make(kiln_elem elem, uint32_t rank, const int64_t *dims,
                                          kiln_type *out);
/* Same, with quantization parameters (elem must be i8, u8 or i32). */
KILN_NODISCARD kiln_status kiln_type_make_quantized(kiln_elem elem, uint32_t rank,
                                                    const int64_t *dims, float scale,
                                                    int32_t zero_point, kiln_type *out);

size_t kiln_elem_size(kiln_elem e);      /* bytes per element */
const char *kiln_elem_name(kiln_elem e); /* "f32"...; "?" if invalid */
bool kiln_elem_from_name(const char *name, kiln_elem *out);
bool kiln_elem_is_float(kiln_elem e);        /* f64 f32 f16 bf16 */
bool kiln_elem_is_signed_int(kiln_elem e);   /* i8 i16 i32 i64 */
bool kiln_elem_is_unsigned_int(kiln_elem e); /* u8 u16 u32 u64 (not bool) */

int64_t kiln_type_numel(const kiln_type *t); /* product of dims (1 for rank 0) */
int64_t kiln_type_bytes(const kiln_type *t); /* numel * elem size */
/* Row-major strides in elements; out has room for KILN_MAX_RANK. */
void kiln_type_strides(const kiln_type *t, int64_t *out);
/* Element type, dims, and quantization parameters all equal. */
bool kiln_type_equal(const kiln_type *a, const kiln_type *b);
/* Same element type and dims, ignoring quantization. */
bool kiln_type_same_shape(const kiln_type *a, const kiln_type *b);
/* Text form, e.g. "f32[2,3]", "f32[]" (scalar), "i8q(0.5,3)[4]".
 * Writes at most n bytes including the NUL; returns the length it needed
 * (like snprintf). */
int kiln_type_format(const kiln_type *t, char *buf, size_t n);

/* float16 / bfloat16 conversions (round to nearest even, NaN kept NaN). */
float kiln_f16_to_f32(uint16_t h);
uint16_t kiln_f32_to_f16(float f);
float kiln_bf16_to_f32(uint16_t h);
uint16_t kiln_f32_to_bf16(float f);

/* Element i of an array of element type e, as a double (integers
 * converted, bool 0/1, f16/bf16 widened). For comparing and printing
 * tensors of any type; not for exact 64-bit integer work. */
double kiln_elem_load_f64(kiln_elem e, const void *data, int64_t i);
/* The inverse: store v as element i of an array of element type e (data
 * caller-owned, at least i + 1 elements). Floats round to nearest (f16 and
 * bf16 through f32); integers truncate toward zero and saturate to the
 * type's range, NaN giving 0; bool is v != 0. For building test data and
 * constants; exact for every integer a double holds exactly. */
void kiln_elem_store_f64(kiln_elem e, void *data, int64_t i, double v);

/* The allocator kiln uses for a module's memory. `free` receives the size
 * that was asked for. alloc returns NULL on failure (kiln then reports
 * KILN_OUT_OF_MEMORY). The struct must outlive every object made with it. */
typedef struct kiln_allocator {
  void *(*alloc)(void *user, size_t size);
  void (*free)(void *user, void *ptr, size_t size);
  void *user;
} kiln_allocator;

/* malloc/free based. Static; never NULL. */
const kiln_allocator *kiln_default_allocator(void);

/* Memory handed out by libkiln to callers (strings, tensor data), unless a
 * function says otherwise, is released with kiln_free. NULL is accepted. */
void kiln_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
