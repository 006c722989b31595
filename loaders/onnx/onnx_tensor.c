/* onnx_tensor.c: ONNX element types and TensorProto decoding (every data
 * form, plus external data confined to the model's folder), written
 * straight into the destination (a module constant's storage): no buffer in
 * between. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx_internal.h"

static const char *const dtype_names[] = {
    "UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
    "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
    "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
    "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
    "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0",
    "UINT2",          "INT2"};

const char *onnx_dtype_name(int32_t dt) {
  if (dt >= 0 && (size_t)dt < sizeof dtype_names / sizeof dtype_names[0])
    return dtype_names[dt];
  return "unknown";
}

/* ONNX TensorProto.DataType -> kiln element; -1 where kiln has none. */
static int elem_of_dtype(int32_t dt) {
  switch (dt) {
  case 1:
    return KILN_F32;
  case 2:
    return KILN_U8;
  case 3:
    return KILN_I8;
  case 4:
    return KILN_U16;
  case 5:
    return KILN_I16;
  case 6:
    return KILN_I32;
  case 7:
    return KILN_I64;
  case 9:
    return KILN_BOOL;
  case 10:
    return KILN_F16;
  case 11:
    return KILN_F64;
  case 12:
    return KILN_U32;
  case 13:
    return KILN_U64;
  case 16:
    return KILN_BF16;
  default:
    return -1;
  }
}

kiln_status onnx_elem_from_dtype(int32_t dt, const char *what, kiln_elem *out) {
  int e = elem_of_dtype(dt);
  if (e < 0) {
    if (dt <= 0 || dt > 64)
      return kiln_status_make(KILN_PARSE_ERROR, "%s: invalid ONNX data type %d", what, (int)dt);
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: ONNX type %s is not supported by kiln", what,
                            onnx_dtype_name(dt));
  }
  *out = (kiln_elem)e;
  return NULL;
}

int32_t onnx_dtype_from_elem(kiln_elem e) {
  static const int32_t map[KILN_ELEM_COUNT] = {
      [KILN_F64] = 11, [KILN_F32] = 1,  [KILN_F16] = 10, [KILN_BF16] = 16, [KILN_I8] = 3,
      [KILN_U8] = 2,   [KILN_I16] = 5,  [KILN_U16] = 4,  [KILN_I32] = 6,   [KILN_U32] = 12,
      [KILN_I64] = 7,  [KILN_U64] = 13, [KILN_BOOL] = 9};
  return (unsigned)e < KILN_ELEM_COUNT ? map[e] : 0;
}

/* Store the low bytes of v as one element of type e (int32_data / uint64_data
 * carry narrower types widened). */
static void put_bits(kiln_elem e, void *dst, int64_t i, uint64_t v) {
  switch (kiln_elem_size(e)) {
  case 1:
    ((uint8_t *)dst)[i] = (uint8_t)(e == KILN_BOOL ? v != 0 : v);
    break;
  case 2:
    ((uint16_t *)dst)[i] = (uint16_t)v;
    break;
  case 4:
    ((uint32_t *)dst)[i] = (uint32_t)v;
    break;
  default:
    ((uint64_t *)dst)[i] = v;
    break;
  }
}

/* Is `loc` a relative path without '..' components? */
static bool location_is_plain(const char *loc) {
  if (loc[0] == '/' || loc[0] == '\0')
    return false;
  const char *p = loc;
  while (*p) {
    const char *q = strchr(p, '/');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return false;
    if (!q)
      break;
    p = q + 1;
  }
  return true;
}

static kiln_status parse_u64(const char *s, const char *key, const char *what, int64_t *out) {
  char *end;
  errno = 0;
  if (!s || !*s || *s == '-')
    return kiln_status_make(KILN_PARSE_ERROR, "%s: external data %s '%s' is not a number", what,
                            key, s ? s : "");
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v > (unsigned long long)INT64_MAX)
    return kiln_status_make(KILN_PARSE_ERROR, "%s: external data %s '%s' is not a number", what,
                            key, s);
  *out = (int64_t)v;
  return NULL;
}

static kiln_status read_external(const Onnx__TensorProto *t, const char *base_dir, const char *what,
                                 void *dst, int64_t bytes) {
  const char *loc = NULL;
  int64_t offset = 0, length = -1;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = t->external_data[i];
    if (!e->key)
      continue;
    if (!strcmp(e->key, "location"))
      loc = e->value;
    else if (!strcmp(e->key, "offset"))
      KILN_TRY(parse_u64(e->value, "offset", what, &offset));
    else if (!strcmp(e->key, "length"))
      KILN_TRY(parse_u64(e->value, "length", what, &length));
  }
  if (!loc)
    return kiln_status_make(KILN_PARSE_ERROR, "%s: external data without a location", what);
  if (!base_dir)
    return kiln_status_make(
        KILN_INVALID_ARGUMENT,
        "%s: external data '%s' but the model has no folder (loaded from memory)", what, loc);
  if (!location_is_plain(loc))
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: external data location '%s' must be a relative path inside the "
                            "model's folder (absolute paths and '..' are refused)",
                            what, loc);
  if (length >= 0 && length != bytes)
    return kiln_status_make(KILN_PARSE_ERROR,
                            "%s: external data length %lld does not match the tensor's %lld bytes",
                            what, (long long)length, (long long)bytes);
  size_t plen = strlen(base_dir) + strlen(loc) + 2;
  char *path = malloc(plen);
  if (!path)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", what);
  snprintf(path, plen, "%s/%s", base_dir, loc);
  /* Symlinks may point anywhere: compare the resolved path with the folder. */
  char *real_dir = realpath(base_dir, NULL);
  char *real_file = realpath(path, NULL);
  kiln_status s = NULL;
  if (!real_dir || !real_file) {
    s = kiln_status_make(KILN_IO_ERROR, "%s: cannot open external data '%s': %s", what, path,
                         strerror(errno));
    goto out;
  }
  size_t dl = strlen(real_dir);
  if (strncmp(real_file, real_dir, dl) != 0 || (real_file[dl] != '/' && dl != 1)) {
    s = kiln_status_make(KILN_INVALID_ARGUMENT,
                         "%s: external data '%s' resolves to '%s', outside the model's folder '%s'",
                         what, loc, real_file, real_dir);
    goto out;
  }
  FILE *fp = fopen(real_file, "rb");
  if (!fp) {
    s = kiln_status_make(KILN_IO_ERROR, "%s: cannot open external data '%s': %s", what, path,
                         strerror(errno));
    goto out;
  }
  if (fseeko(fp, (off_t)offset, SEEK_SET) != 0 ||
      (bytes > 0 && fread(dst, 1, (size_t)bytes, fp) != (size_t)bytes))
    s = kiln_status_make(KILN_IO_ERROR,
                         "%s: external data '%s' is too short for %lld bytes at offset %lld", what,
                         path, (long long)bytes, (long long)offset);
  fclose(fp);
out:
  free(real_dir);
  free(real_file);
  free(path);
  return s;
}

static kiln_status count_mismatch(const char *what, const char *field, size_t have, int64_t want) {
  return kiln_status_make(KILN_PARSE_ERROR, "%s: %s holds %zu values but the shape needs %lld",
                          what, field, have, (long long)want);
}

kiln_status onnx_tensor_type(const Onnx__TensorProto *t, const onnx_raw *raw, const char *what,
                             kiln_type *out) {
  if (t->segment)
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: segmented tensors are not supported", what);
  kiln_elem e = KILN_F32; /* set by the dtype check below; -O3 cannot see it */
  KILN_TRY(onnx_elem_from_dtype(t->has_data_type ? t->data_type : 0, what, &e));
  if (t->n_dims > KILN_MAX_RANK)
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: rank %zu exceeds kiln's maximum of %d", what,
                            t->n_dims, KILN_MAX_RANK);
  for (size_t i = 0; i < t->n_dims; i++)
    if (t->dims[i] < 0)
      return kiln_status_make(KILN_PARSE_ERROR, "%s: dim %zu is negative (%lld)", what, i,
                              (long long)t->dims[i]);
  kiln_type ty;
  KILN_TRY_CTX(kiln_type_make(e, (uint32_t)t->n_dims, t->dims, &ty), "%s", what);
  int64_t bytes = kiln_type_bytes(&ty);
  bool external =
      t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  /* Inline data must be present in the message: check its size before
   * allocating what the dims claim (a corrupt file may claim terabytes). */
  if (!external) {
    size_t have = raw             ? raw->len
                  : t->has_raw_data ? t->raw_data.len
                  : t->n_float_data ? t->n_float_data * 4
                  : t->n_int32_data ? t->n_int32_data * kiln_elem_size(e)
                  : t->n_int64_data ? t->n_int64_data * 8
                  : t->n_double_data ? t->n_double_data * 8
                  : t->n_uint64_data ? t->n_uint64_data * kiln_elem_size(e)
                                     : 0;
    if ((uint64_t)bytes > (uint64_t)have)
      return kiln_status_make(KILN_PARSE_ERROR,
                              "%s: its shape needs %lld bytes of %s but the tensor holds %zu", what,
                              (long long)bytes, kiln_elem_name(e), have);
    if (bytes > (int64_t)1 << 40)
      return kiln_status_make(KILN_OUT_OF_RANGE, "%s: %lld bytes is too large", what,
                              (long long)bytes);
  }
  *out = ty;
  return NULL;
}

/* raw_data kept out of the unpacked message: copied from the caller's
 * memory, or read from the model file straight into dst. */
static kiln_status read_raw(const onnx_raw *raw, const char *what, void *dst, size_t bytes) {
  if (raw->fd < 0) {
    memcpy(dst, raw->base + raw->offset, bytes);
    return NULL;
  }
  size_t done = 0;
  while (done < bytes) {
    ssize_t r = pread(raw->fd, (char *)dst + done, bytes - done, (off_t)(raw->offset + done));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return kiln_status_make(KILN_IO_ERROR, "%s: reading %zu bytes of raw_data: %s", what, bytes,
                              r < 0 ? strerror(errno) : "the file is shorter than it was");
    done += (size_t)r;
  }
  return NULL;
}

kiln_status onnx_tensor_fill(const Onnx__TensorProto *t, const onnx_raw *raw, const char *base_dir,
                             const char *what, const kiln_type *ty, void *data) {
  kiln_elem e = ty->elem;
  int64_t n = kiln_type_numel(ty), bytes = kiln_type_bytes(ty);
  bool external =
      t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  kiln_status s = NULL;
  if (external) {
    s = read_external(t, base_dir, what, data, bytes);
  } else if (raw || t->has_raw_data) {
    size_t len = raw ? raw->len : t->raw_data.len;
    if ((int64_t)len != bytes)
      s = kiln_status_make(KILN_PARSE_ERROR, "%s: raw_data has %zu bytes but %s needs %lld", what,
                           len, kiln_elem_name(e), (long long)bytes);
    else if (bytes > 0 && raw)
      s = read_raw(raw, what, data, (size_t)bytes);
    else if (bytes > 0)
      memcpy(data, t->raw_data.data, (size_t)bytes);
    if (!s && e == KILN_BOOL)
      for (int64_t i = 0; i < n; i++)
        ((uint8_t *)data)[i] = ((uint8_t *)data)[i] != 0;
  } else if (t->n_float_data) {
    if (e != KILN_F32)
      s = kiln_status_make(KILN_PARSE_ERROR, "%s: float_data used for type %s", what,
                           kiln_elem_name(e));
    else if ((int64_t)t->n_float_data != n)
      s = count_mismatch(what, "float_data", t->n_float_data, n);
    else
      memcpy(data, t->float_data, (size_t)bytes);
  } else if (t->n_int32_data) {
    bool ok = e == KILN_I32 || e == KILN_I16 || e == KILN_I8 || e == KILN_U16 || e == KILN_U8 ||
              e == KILN_BOOL || e == KILN_F16 || e == KILN_BF16;
    if (!ok)
      s = kiln_status_make(KILN_PARSE_ERROR, "%s: int32_data used for type %s", what,
                           kiln_elem_name(e));
    else if ((int64_t)t->n_int32_data != n)
      s = count_mismatch(what, "int32_data", t->n_int32_data, n);
    else
      for (int64_t i = 0; i < n; i++)
        put_bits(e, data, i, (uint64_t)(uint32_t)t->int32_data[i]);
  } else if (t->n_int64_data) {
    if (e != KILN_I64)
      s = kiln_status_make(KILN_PARSE_ERROR, "%s: int64_data used for type %s", what,
                           kiln_elem_name(e));
    else if ((int64_t)t->n_int64_data != n)
      s = count_mismatch(what, "int64_data", t->n_int64_data, n);
    else
      memcpy(data, t->int64_data, (size_t)bytes);
  } else if (t->n_double_data) {
    if (e != KILN_F64)
      s = kiln_status_make(KILN_PARSE_ERROR, "%s: double_data used for type %s", what,
                           kiln_elem_name(e));
    else if ((int64_t)t->n_double_data != n)
      s = count_mismatch(what, "double_data", t->n_double_data, n);
    else
      memcpy(data, t->double_data, (size_t)bytes);
  } else if (t->n_uint64_data) {
    if (e != KILN_U64 && e != KILN_U32)
      s = kiln_status_make(KILN_PARSE_ERROR, "%s: uint64_data used for type %s", what,
                           kiln_elem_name(e));
    else if ((int64_t)t->n_uint64_data != n)
      s = count_mismatch(what, "uint64_data", t->n_uint64_data, n);
    else
      for (int64_t i = 0; i < n; i++)
        put_bits(e, data, i, t->uint64_data[i]);
  } else if (n != 0) {
    s = kiln_status_make(KILN_PARSE_ERROR, "%s: no data for %lld elements", what, (long long)n);
  }
  return s;
}

kiln_status onnx_tensor_from_proto(const Onnx__TensorProto *t, const char *base_dir,
                                   const char *what, kiln_tensor *out) {
  memset(out, 0, sizeof *out);
  kiln_type ty;
  KILN_TRY(onnx_tensor_type(t, NULL, what, &ty));
  int64_t bytes = kiln_type_bytes(&ty);
  void *data = malloc(bytes > 0 ? (size_t)bytes : 1);
  if (!data)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: cannot allocate %lld bytes", what,
                            (long long)bytes);
  kiln_status s = onnx_tensor_fill(t, NULL, base_dir, what, &ty, data);
  if (s) {
    free(data);
    return s;
  }
  out->type = ty;
  out->data = data;
  if (t->name && *t->name) {
    out->name = strdup(t->name);
    if (!out->name) {
      free(data);
      out->data = NULL;
      return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", what);
    }
  }
  return NULL;
}
