/* tests/core/test_npy.c: .npy reading (files written by numpy, committed in
 * data/), writing (byte-identical to numpy's own file), round trips, and
 * refusals of what kiln cannot represent; and kiln_file_read beneath them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"

static const char *data_path(const char *name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/data/%s", TEST_SRC_DIR, name);
  return buf;
}

static void expect_dims(const kiln_tensor *t, kiln_elem e, uint32_t rank, const int64_t *dims) {
  ck_assert_int_eq(t->type.elem, e);
  ck_assert_uint_eq(t->type.rank, rank);
  for (uint32_t i = 0; i < rank; i++)
    ck_assert_int_eq(t->type.dims[i], dims[i]);
}

START_TEST(read_f32_matrix) {
  kiln_tensor t;
  EXPECT_OK(kiln_tensor_read_npy(data_path("f32_2x3.npy"), &t));
  expect_dims(&t, KILN_F32, 2, (int64_t[]){2, 3});
  const float want[] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
  ck_assert_mem_eq(t.data, want, sizeof want);
  kiln_tensor_free(&t);
  ck_assert_ptr_null(t.data);
}
END_TEST

START_TEST(read_ints_bools_halves) {
  kiln_tensor t;
  EXPECT_OK(kiln_tensor_read_npy(data_path("i64_3.npy"), &t));
  expect_dims(&t, KILN_I64, 1, (int64_t[]){3});
  const int64_t wi[] = {-1, 0, 7};
  ck_assert_mem_eq(t.data, wi, sizeof wi);
  kiln_tensor_free(&t);

  EXPECT_OK(kiln_tensor_read_npy(data_path("bool_4.npy"), &t));
  expect_dims(&t, KILN_BOOL, 1, (int64_t[]){4});
  const unsigned char wb[] = {1, 0, 0, 1};
  ck_assert_mem_eq(t.data, wb, sizeof wb);
  kiln_tensor_free(&t);

  EXPECT_OK(kiln_tensor_read_npy(data_path("f16_2.npy"), &t));
  expect_dims(&t, KILN_F16, 1, (int64_t[]){2});
  const uint16_t wh[] = {0x3e00, 0xc000}; /* 1.5 and -2.0 in binary16 */
  ck_assert_mem_eq(t.data, wh, sizeof wh);
  kiln_tensor_free(&t);
}
END_TEST

START_TEST(read_scalar_and_empty) {
  kiln_tensor t;
  EXPECT_OK(kiln_tensor_read_npy(data_path("u8_scalar.npy"), &t));
  ck_assert_int_eq(t.type.elem, KILN_U8);
  ck_assert_uint_eq(t.type.rank, 0);
  ck_assert_uint_eq(((unsigned char *)t.data)[0], 200);
  kiln_tensor_free(&t);

  EXPECT_OK(kiln_tensor_read_npy(data_path("f32_empty.npy"), &t));
  expect_dims(&t, KILN_F32, 2, (int64_t[]){0, 3});
  kiln_tensor_free(&t);
}
END_TEST

START_TEST(read_versions_2_and_3) {
  kiln_tensor t;
  EXPECT_OK(kiln_tensor_read_npy(data_path("f64_v2.npy"), &t));
  expect_dims(&t, KILN_F64, 2, (int64_t[]){2, 1});
  const double wd[] = {1.25, -3.0};
  ck_assert_mem_eq(t.data, wd, sizeof wd);
  kiln_tensor_free(&t);

  EXPECT_OK(kiln_tensor_read_npy(data_path("i16_v3.npy"), &t));
  expect_dims(&t, KILN_I16, 1, (int64_t[]){2});
  const int16_t ws[] = {-300, 300};
  ck_assert_mem_eq(t.data, ws, sizeof ws);
  kiln_tensor_free(&t);
}
END_TEST

START_TEST(refusals_name_the_reason) {
  kiln_tensor t;
  EXPECT_FAIL(kiln_tensor_read_npy(data_path("f32_big_endian.npy"), &t), KILN_UNIMPLEMENTED,
              "big-endian");
  EXPECT_FAIL(kiln_tensor_read_npy(data_path("f32_fortran.npy"), &t), KILN_UNIMPLEMENTED,
              "fortran_order True");
  EXPECT_FAIL(kiln_tensor_read_npy(data_path("object.npy"), &t), KILN_UNIMPLEMENTED,
              "dtype '|O' is not supported");
  EXPECT_FAIL(kiln_tensor_read_npy(data_path("c64.npy"), &t), KILN_UNIMPLEMENTED, "dtype '<c8'");
  EXPECT_FAIL(kiln_tensor_read_npy(data_path("f32_truncated.npy"), &t), KILN_PARSE_ERROR,
              "needs 24 data bytes but the file has 20");
  EXPECT_FAIL(kiln_tensor_read_npy(data_path("f32_trailing.npy"), &t), KILN_INVALID_ARGUMENT,
              "size mismatch");
  EXPECT_FAIL(kiln_tensor_read_npy(data_path("not_npy.npy"), &t), KILN_PARSE_ERROR,
              "not a .npy file");
  EXPECT_FAIL(kiln_tensor_read_npy(data_path("header_truncated.npy"), &t), KILN_PARSE_ERROR,
              "truncated .npy header");
  EXPECT_FAIL(kiln_tensor_read_npy(data_path("no_such_file.npy"), &t), KILN_IO_ERROR,
              "no_such_file.npy");
  ck_assert_ptr_null(t.data);
}
END_TEST

static char *tmp_path(const char *name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/npy_%ld_%s", TEST_BUILD_DIR, (long)getpid(), name);
  return buf;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  unsigned char *buf = malloc(1 << 16);
  *len = fread(buf, 1, 1 << 16, f);
  fclose(f);
  return buf;
}

/* kiln_file_read, the reader under every file format: a file of 10000
 * bytes (past the first 4096-byte buffer) comes back whole, followed by a
 * zero byte; an empty file gives length 0 and a string ""; a missing one
 * names the path. */
START_TEST(file_read_whole_files) {
  const char *p = tmp_path("blob.bin");
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  for (int i = 0; i < 10000; i++)
    fputc(i % 251 + 1, f);
  fclose(f);
  void *data = NULL;
  size_t len = 0;
  ck_assert_ptr_null(kiln_file_read(p, &data, &len));
  ck_assert_uint_eq(len, 10000);
  const unsigned char *b = data;
  for (int i = 0; i < 10000; i++)
    ck_assert_uint_eq(b[i], (unsigned)(i % 251 + 1));
  ck_assert_uint_eq(b[10000], 0);
  kiln_free(data);
  f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  ck_assert_ptr_null(kiln_file_read(p, &data, &len));
  ck_assert_uint_eq(len, 0);
  ck_assert_str_eq((const char *)data, "");
  kiln_free(data);
  unlink(p);
  EXPECT_FAIL(kiln_file_read(p, &data, &len), KILN_IO_ERROR, "cannot open");
  ck_assert_ptr_null(data);
}
END_TEST

START_TEST(write_matches_numpy_bytes) {
  const float v[] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
  kiln_tensor t = {.data = (void *)v};
  EXPECT_OK(kiln_type_make(KILN_F32, 2, (int64_t[]){2, 3}, &t.type));
  const char *p = tmp_path("f32.npy");
  EXPECT_OK(kiln_tensor_write_npy(p, &t));
  size_t la, lb;
  unsigned char *a = slurp(p, &la), *b = slurp(data_path("f32_2x3.npy"), &lb);
  ck_assert_uint_eq(la, lb);
  ck_assert_mem_eq(a, b, la);
  free(a);
  free(b);
  remove(p);
}
END_TEST

static void round_trip(kiln_elem e, uint32_t rank, const int64_t *dims) {
  kiln_tensor t = {0}, back;
  EXPECT_OK(kiln_type_make(e, rank, dims, &t.type));
  size_t bytes = (size_t)kiln_type_bytes(&t.type);
  unsigned char *d = malloc(bytes + 1);
  for (size_t i = 0; i < bytes; i++)
    d[i] = e == KILN_BOOL ? (unsigned char)(i % 2) : (unsigned char)(i * 37 + 11);
  t.data = d;
  const char *p = tmp_path("rt.npy");
  EXPECT_OK(kiln_tensor_write_npy(p, &t));
  EXPECT_OK(kiln_tensor_read_npy(p, &back));
  ck_assert(kiln_type_equal(&t.type, &back.type));
  if (bytes)
    ck_assert_mem_eq(back.data, d, bytes);
  kiln_tensor_free(&back);
  free(d);
  remove(p);
}

START_TEST(round_trips_every_dtype) {
  const kiln_elem elems[] = {KILN_F64, KILN_F32, KILN_F16, KILN_I8,  KILN_U8,  KILN_I16,
                             KILN_U16, KILN_I32, KILN_U32, KILN_I64, KILN_U64, KILN_BOOL};
  for (size_t i = 0; i < sizeof elems / sizeof *elems; i++) {
    round_trip(elems[i], 0, NULL);
    round_trip(elems[i], 1, (int64_t[]){5});
    round_trip(elems[i], 3, (int64_t[]){2, 1, 3});
    round_trip(elems[i], 2, (int64_t[]){0, 4});
  }
}
END_TEST

START_TEST(write_refuses_bf16) {
  uint16_t v[2] = {0};
  kiln_tensor t = {.data = v};
  EXPECT_OK(kiln_type_make(KILN_BF16, 1, (int64_t[]){2}, &t.type));
  EXPECT_FAIL(kiln_tensor_write_npy(tmp_path("bf16.npy"), &t), KILN_UNIMPLEMENTED, "bf16");
}
END_TEST

Suite *npy_suite(void) {
  Suite *s = suite_create("npy");
  TCase *tc = tcase_create("npy");
  tcase_add_test(tc, read_f32_matrix);
  tcase_add_test(tc, read_ints_bools_halves);
  tcase_add_test(tc, read_scalar_and_empty);
  tcase_add_test(tc, read_versions_2_and_3);
  tcase_add_test(tc, refusals_name_the_reason);
  tcase_add_test(tc, write_matches_numpy_bytes);
  tcase_add_test(tc, round_trips_every_dtype);
  tcase_add_test(tc, write_refuses_bf16);
  tcase_add_test(tc, file_read_whole_files);
  suite_add_tcase(s, tc);
  return s;
}
