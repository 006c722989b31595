/* tests/ir/test_types.c: element and tensor types, formatting, overflow
 * limits, f16/bf16 conversions and statuses, against hand-computed values. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "kiln/types.h"
#include "suites.h"

START_TEST(test_sizes_strides) {
  kiln_type t;
  int64_t d[] = {2, 3, 4};
  ck_assert_ptr_null(kiln_type_make(KILN_F32, 3, d, &t));
  ck_assert_int_eq(kiln_type_numel(&t), 24);
  ck_assert_int_eq(kiln_type_bytes(&t), 96);
  int64_t s[KILN_MAX_RANK];
  kiln_type_strides(&t, s);
  ck_assert_int_eq(s[0], 12);
  ck_assert_int_eq(s[1], 4);
  ck_assert_int_eq(s[2], 1);
  ck_assert_int_eq(t.dims[3], 0);
  kiln_type sc;
  ck_assert_ptr_null(kiln_type_make(KILN_F64, 0, NULL, &sc));
  ck_assert_int_eq(kiln_type_numel(&sc), 1);
  ck_assert_int_eq(kiln_type_bytes(&sc), 8);
  ck_assert_int_eq(kiln_elem_size(KILN_BF16), 2);
  ck_assert_int_eq(kiln_elem_size(KILN_BOOL), 1);
  ck_assert(kiln_elem_is_float(KILN_BF16));
  ck_assert(!kiln_elem_is_unsigned_int(KILN_BOOL));
  ck_assert(kiln_elem_is_signed_int(KILN_I16));
  kiln_elem e;
  ck_assert(kiln_elem_from_name("u16", &e));
  ck_assert_int_eq(e, KILN_U16);
  ck_assert(!kiln_elem_from_name("f128", &e));
  ck_assert_str_eq(kiln_elem_name((kiln_elem)99), "?");
}
END_TEST

static kiln_code make_code(kiln_elem e, uint32_t rank, const int64_t *d) {
  kiln_type t;
  kiln_status s = kiln_type_make(e, rank, d, &t);
  kiln_code c = kiln_status_code(s);
  kiln_status_free(s);
  return c;
}

START_TEST(test_overflow) {
  int64_t p62x2[] = {(int64_t)1 << 62, 2}; /* numel 2^63: one past the limit */
  ck_assert_int_eq(make_code(KILN_I8, 2, p62x2), KILN_OUT_OF_RANGE);
  int64_t p31sq[] = {(int64_t)1 << 31, (int64_t)1 << 31}; /* numel 2^62 */
  ck_assert_int_eq(make_code(KILN_I8, 2, p31sq), KILN_OK);
  ck_assert_int_eq(make_code(KILN_I16, 2, p31sq), KILN_OUT_OF_RANGE); /* 2^63 bytes */
  int64_t max1[] = {INT64_MAX};
  ck_assert_int_eq(make_code(KILN_U8, 1, max1), KILN_OK); /* 2^63-1 bytes */
  ck_assert_int_eq(make_code(KILN_BOOL, 1, max1), KILN_OK);
  ck_assert_int_eq(make_code(KILN_U16, 1, max1), KILN_OUT_OF_RANGE);
  int64_t p61[] = {(int64_t)1 << 61};
  ck_assert_int_eq(make_code(KILN_U16, 1, p61), KILN_OK);           /* 2^62 bytes */
  ck_assert_int_eq(make_code(KILN_U32, 1, p61), KILN_OUT_OF_RANGE); /* 2^63 bytes */
  int64_t huge3[] = {INT64_MAX, INT64_MAX, 3};
  ck_assert_int_eq(make_code(KILN_F32, 3, huge3), KILN_OUT_OF_RANGE);
  /* an empty tensor: zero elements, but the other dimensions' product must
   * still fit (strides are computed from it; a fuzzer found the overflow) */
  int64_t empty[] = {INT64_MAX, 0, 1};
  kiln_type t;
  ck_assert_ptr_null(kiln_type_make(KILN_F64, 3, empty, &t));
  ck_assert_int_eq(kiln_type_numel(&t), 0);
  ck_assert_int_eq(kiln_type_bytes(&t), 0);
  int64_t empty_huge[] = {1208790, 13785258001805, 0};
  ck_assert_int_eq(make_code(KILN_F32, 3, empty_huge), KILN_OUT_OF_RANGE);
  int64_t neg[] = {2, -1};
  ck_assert_int_eq(make_code(KILN_F32, 2, neg), KILN_INVALID_ARGUMENT);
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  ck_assert_int_eq(make_code(KILN_F32, 9, nine), KILN_INVALID_ARGUMENT);
  ck_assert_int_eq(make_code((kiln_elem)77, 1, nine), KILN_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_format) {
  kiln_type t;
  char buf[64];
  int64_t d[] = {2, 3};
  ck_assert_ptr_null(kiln_type_make(KILN_F32, 2, d, &t));
  ck_assert_int_eq(kiln_type_format(&t, buf, sizeof buf), 8);
  ck_assert_str_eq(buf, "f32[2,3]");
  ck_assert_int_eq(kiln_type_format(&t, buf, 4), 8); /* truncated like snprintf */
  ck_assert_str_eq(buf, "f32");
  ck_assert_ptr_null(kiln_type_make(KILN_BOOL, 0, NULL, &t));
  kiln_type_format(&t, buf, sizeof buf);
  ck_assert_str_eq(buf, "bool[]");
  int64_t four[] = {4};
  ck_assert_ptr_null(kiln_type_make_quantized(KILN_I8, 1, four, 0.5f, 3, &t));
  kiln_type_format(&t, buf, sizeof buf);
  ck_assert_str_eq(buf, "i8q(0.5,3)[4]");
  ck_assert_ptr_null(kiln_type_make_quantized(KILN_U8, 1, four, 0.1f, -2, &t));
  kiln_type_format(&t, buf, sizeof buf);
  ck_assert_str_eq(buf, "u8q(0.1,-2)[4]");
  /* 1/3 as a float is 0.3333333432...; 8 digits are the shortest that round-trip */
  ck_assert_ptr_null(kiln_type_make_quantized(KILN_I32, 0, NULL, 1.0f / 3.0f, 0, &t));
  kiln_type_format(&t, buf, sizeof buf);
  ck_assert_str_eq(buf, "i32q(0.33333334,0)[]");
  kiln_status s = kiln_type_make_quantized(KILN_F32, 1, four, 0.5f, 0, &t);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  kiln_status_free(s);
}
END_TEST

START_TEST(test_equal) {
  kiln_type a, b, q;
  int64_t d[] = {4};
  ck_assert_ptr_null(kiln_type_make(KILN_I8, 1, d, &a));
  ck_assert_ptr_null(kiln_type_make(KILN_I8, 1, d, &b));
  ck_assert_ptr_null(kiln_type_make_quantized(KILN_I8, 1, d, 0.5f, 1, &q));
  ck_assert(kiln_type_equal(&a, &b));
  ck_assert(!kiln_type_equal(&a, &q));
  ck_assert(kiln_type_same_shape(&a, &q));
}
END_TEST

START_TEST(test_f16) {
  ck_assert_uint_eq(kiln_f32_to_f16(1.0f), 0x3c00);
  ck_assert_uint_eq(kiln_f32_to_f16(-2.0f), 0xc000);
  ck_assert_uint_eq(kiln_f32_to_f16(65504.0f), 0x7bff); /* largest finite */
  ck_assert_uint_eq(kiln_f32_to_f16(65519.0f), 0x7bff); /* below the halfway point */
  ck_assert_uint_eq(kiln_f32_to_f16(65520.0f), 0x7c00); /* halfway to 65536: to inf */
  ck_assert_uint_eq(kiln_f32_to_f16(INFINITY), 0x7c00);
  ck_assert_uint_eq(kiln_f32_to_f16(0.1f), 0x2e66);
  /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0) */
  ck_assert_uint_eq(kiln_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
  /* 1 + 3*2^-11 is halfway between 0x3c01 and 0x3c02: ties to even */
  ck_assert_uint_eq(kiln_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
  ck_assert_uint_eq(kiln_f32_to_f16(0x1p-24f), 0x0001);     /* smallest subnormal */
  ck_assert_uint_eq(kiln_f32_to_f16(0x1p-25f), 0x0000);     /* tie to even: 0 */
  ck_assert_uint_eq(kiln_f32_to_f16(3 * 0x1p-25f), 0x0002); /* 1.5 ulp: tie to 2 */
  ck_assert_uint_eq(kiln_f32_to_f16(0x1p-14f), 0x0400);     /* smallest normal */
  ck_assert_uint_eq(kiln_f32_to_f16(-0.0f), 0x8000);
  uint16_t nan = kiln_f32_to_f16(NAN);
  ck_assert_uint_eq(nan & 0x7c00, 0x7c00);
  ck_assert_uint_ne(nan & 0x3ff, 0);
  ck_assert(kiln_f16_to_f32(0x3c00) == 1.0f);
  ck_assert(kiln_f16_to_f32(0xc000) == -2.0f);
  ck_assert(kiln_f16_to_f32(0x7bff) == 65504.0f);
  ck_assert(kiln_f16_to_f32(0x0001) == 0x1p-24f);
  ck_assert(kiln_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
  ck_assert(isinf(kiln_f16_to_f32(0xfc00)) && kiln_f16_to_f32(0xfc00) < 0);
  ck_assert(isnan(kiln_f16_to_f32(0x7e00)));
}
END_TEST

START_TEST(test_bf16) {
  ck_assert_uint_eq(kiln_f32_to_bf16(1.0f), 0x3f80);
  ck_assert_uint_eq(kiln_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);     /* tie to even */
  ck_assert_uint_eq(kiln_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82); /* tie to even */
  ck_assert_uint_eq(kiln_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  ck_assert_uint_eq(kiln_f32_to_bf16(-3.0f), 0xc040);
  ck_assert(kiln_bf16_to_f32(0x4049) == 3.140625f);
  ck_assert(isnan(kiln_bf16_to_f32(kiln_f32_to_bf16(NAN))));
  ck_assert_uint_eq(kiln_f32_to_bf16(INFINITY), 0x7f80);
}
END_TEST

START_TEST(test_elem_store) {
  /* integers truncate toward zero and saturate; NaN stores 0 */
  int8_t i8[4];
  kiln_elem_store_f64(KILN_I8, i8, 0, -2.7);
  kiln_elem_store_f64(KILN_I8, i8, 1, 300);
  kiln_elem_store_f64(KILN_I8, i8, 2, -1e9);
  kiln_elem_store_f64(KILN_I8, i8, 3, NAN);
  ck_assert_int_eq(i8[0], -2);
  ck_assert_int_eq(i8[1], 127);
  ck_assert_int_eq(i8[2], -128);
  ck_assert_int_eq(i8[3], 0);
  uint8_t u8[2];
  kiln_elem_store_f64(KILN_U8, u8, 0, -5);
  kiln_elem_store_f64(KILN_U8, u8, 1, 255.9);
  ck_assert_uint_eq(u8[0], 0);
  ck_assert_uint_eq(u8[1], 255);
  int64_t i64[2];
  kiln_elem_store_f64(KILN_I64, i64, 0, 1e30);
  kiln_elem_store_f64(KILN_I64, i64, 1, -9007199254740993.0);
  ck_assert(i64[0] == INT64_MAX);
  ck_assert(i64[1] == -9007199254740992LL); /* the double nearest the literal */
  uint64_t u64[1];
  kiln_elem_store_f64(KILN_U64, u64, 0, 1e30);
  ck_assert(u64[0] == UINT64_MAX);
  /* floats round; f16 1/3 is 0x3555, bf16 1.0 is 0x3f80; bool is v != 0 */
  uint16_t h[2];
  kiln_elem_store_f64(KILN_F16, h, 0, 1.0 / 3.0);
  kiln_elem_store_f64(KILN_BF16, h, 1, 1.0);
  ck_assert_uint_eq(h[0], 0x3555);
  ck_assert_uint_eq(h[1], 0x3f80);
  uint8_t b[2];
  kiln_elem_store_f64(KILN_BOOL, b, 0, 0.25);
  kiln_elem_store_f64(KILN_BOOL, b, 1, 0);
  ck_assert_uint_eq(b[0], 1);
  ck_assert_uint_eq(b[1], 0);
  /* and load reads back what store wrote */
  float f[1];
  kiln_elem_store_f64(KILN_F32, f, 0, 0.1);
  ck_assert(kiln_elem_load_f64(KILN_F32, f, 0) == (double)0.1f);
}
END_TEST

START_TEST(test_status) {
  kiln_status s = kiln_status_make(KILN_NOT_FOUND, "no node '%s'", "conv1");
  ck_assert_int_eq(kiln_status_code(s), KILN_NOT_FOUND);
  ck_assert_str_eq(kiln_status_message(s), "no node 'conv1'");
  s = kiln_status_wrap(s, "loading '%s'", "net.kir");
  ck_assert_int_eq(kiln_status_code(s), KILN_NOT_FOUND);
  ck_assert_str_eq(kiln_status_message(s), "loading 'net.kir': no node 'conv1'");
  kiln_status_free(s);
  ck_assert_ptr_null(kiln_status_wrap(NULL, "x"));
  ck_assert_str_eq(kiln_status_message(NULL), "ok");
  ck_assert_int_eq(kiln_status_code(NULL), KILN_OK);
  ck_assert_str_eq(kiln_code_name(KILN_VERIFY_ERROR), "VERIFY_ERROR");
  ck_assert_str_eq(kiln_code_name(KILN_ABI_MISMATCH), "ABI_MISMATCH");
  kiln_status_free(NULL);
}
END_TEST

Suite *types_suite(void) {
  Suite *s = suite_create("types");
  TCase *tc = tcase_create("types");
  tcase_add_test(tc, test_sizes_strides);
  tcase_add_test(tc, test_overflow);
  tcase_add_test(tc, test_format);
  tcase_add_test(tc, test_equal);
  tcase_add_test(tc, test_f16);
  tcase_add_test(tc, test_bf16);
  tcase_add_test(tc, test_elem_store);
  tcase_add_test(tc, test_status);
  suite_add_tcase(s, tc);
  return s;
}
