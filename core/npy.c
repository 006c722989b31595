/* core/npy.c: reading and writing NumPy .npy files (format versions 1.0,
 * 2.0 and 3.0; little-endian, C order). The header is a Python dict
 * literal; we parse just enough of it (descr, fortran_order, shape) and
 * refuse anything we cannot represent exactly rather than guess. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

static const struct {
  char code[3];
  kiln_elem elem;
} npy_dtypes[] = {
    {"f8", KILN_F64}, {"f4", KILN_F32}, {"f2", KILN_F16}, {"i1", KILN_I8},
    {"u1", KILN_U8},  {"i2", KILN_I16}, {"u2", KILN_U16}, {"i4", KILN_I32},
    {"u4", KILN_U32}, {"i8", KILN_I64}, {"u8", KILN_U64}, {"b1", KILN_BOOL},
};

#define NPY_NDTYPES (sizeof npy_dtypes / sizeof *npy_dtypes)

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* Find `'key':` in the header dict; returns the text after the colon. */
static const char *npy_find_key(const char *h, const char *key) {
  char pat[32];
  for (int q = 0; q < 2; q++) {
    snprintf(pat, sizeof pat, q ? "\"%s\"" : "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p)
      continue;
    p += strlen(pat);
    while (isspace((unsigned char)*p))
      p++;
    if (*p != ':')
      return NULL;
    p++;
    while (isspace((unsigned char)*p))
      p++;
    return p;
  }
  return NULL;
}

static kiln_status npy_parse_descr(const char *path, const char *h, kiln_elem *out) {
  const char *p = npy_find_key(h, "descr");
  if (!p)
    return kiln_status_make(KILN_PARSE_ERROR, "%s: .npy header has no 'descr'", path);
  if (*p != '\'' && *p != '"')
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "%s: structured dtypes are not supported (descr is not a string)",
                            path);
  char quote = *p++;
  const char *end = strchr(p, quote);
  if (!end)
    return kiln_status_make(KILN_PARSE_ERROR, "%s: unterminated 'descr' in .npy header", path);
  size_t len = (size_t)(end - p);
  char d[16];
  if (len >= sizeof d)
    len = sizeof d - 1;
  memcpy(d, p, len);
  d[len] = '\0';
  if (len != 3 || !strchr("<>|=", d[0]))
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "%s: dtype '%s' is not supported (kiln reads f8 f4 f2 i1 u1 i2 u2 i4 "
                            "u4 i8 u8 b1)",
                            path, d);
  for (size_t i = 0; i < NPY_NDTYPES; i++) {
    if (strcmp(d + 1, npy_dtypes[i].code) != 0)
      continue;
    size_t es = kiln_elem_size(npy_dtypes[i].elem);
    /* '=' is native order, which on the little-endian hosts kiln runs on
     * is '<'; single bytes have no order at all. */
    if (es > 1 && d[0] == '>')
      return kiln_status_make(KILN_UNIMPLEMENTED,
                              "%s: big-endian dtype '%s' is not supported (save with "
                              "array.astype('<%s'))",
                              path, d, d + 1);
    if (es > 1 && d[0] == '|')
      return kiln_status_make(KILN_PARSE_ERROR, "%s: dtype '%s' needs a byte order", path, d);
    *out = npy_dtypes[i].elem;
    return NULL;
  }
  return kiln_status_make(KILN_UNIMPLEMENTED,
                          "%s: dtype '%s' is not supported (kiln reads f8 f4 f2 i1 u1 i2 u2 i4 "
                          "u4 i8 u8 b1)",
                          path, d);
}

static kiln_status npy_parse_shape(const char *path, const char *h, uint32_t *rank, int64_t *dims) {
  const char *p = npy_find_key(h, "shape");
  if (!p || *p != '(')
    return kiln_status_make(KILN_PARSE_ERROR, "%s: .npy header has no 'shape' tuple", path);
  p++;
  *rank = 0;
  for (;;) {
    while (isspace((unsigned char)*p))
      p++;
    if (*p == ')')
      return NULL;
    if (!isdigit((unsigned char)*p))
      return kiln_status_make(KILN_PARSE_ERROR, "%s: bad 'shape' in .npy header near '%.10s'", path,
                              p);
    if (*rank == KILN_MAX_RANK)
      return kiln_status_make(KILN_OUT_OF_RANGE, "%s: rank above %d is not supported", path,
                              KILN_MAX_RANK);
    errno = 0;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (errno)
      return kiln_status_make(KILN_OUT_OF_RANGE, "%s: dimension too large in 'shape'", path);
    dims[(*rank)++] = v;
    p = end;
    while (isspace((unsigned char)*p) || *p == 'L')
      p++;
    if (*p == ',')
      p++;
    else if (*p != ')')
      return kiln_status_make(KILN_PARSE_ERROR, "%s: bad 'shape' in .npy header near '%.10s'", path,
                              p);
  }
}

static kiln_status npy_parse(const char *path, const unsigned char *buf, size_t len,
                             kiln_tensor *out) {
  if (len < 10 || memcmp(buf, npy_magic, 6) != 0)
    return kiln_status_make(KILN_PARSE_ERROR, "%s: not a .npy file (bad magic)", path);
  unsigned major = buf[6], minor = buf[7];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12)
      return kiln_status_make(KILN_PARSE_ERROR, "%s: truncated .npy header", path);
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    hstart = 12;
  } else {
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: .npy format version %u.%u is not supported",
                            path, major, minor);
  }
  if (hlen > len - hstart)
    return kiln_status_make(KILN_PARSE_ERROR,
                            "%s: truncated .npy header (%zu header bytes announced, %zu present)",
                            path, hlen, len - hstart);
  char *h = malloc(hlen + 1);
  if (!h)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", path);
  memcpy(h, buf + hstart, hlen);
  h[hlen] = '\0';

  kiln_elem elem = KILN_F32;
  uint32_t rank = 0;
  int64_t dims[KILN_MAX_RANK] = {0};
  kiln_status s = npy_parse_descr(path, h, &elem);
  if (!s) {
    const char *fo = npy_find_key(h, "fortran_order");
    if (!fo)
      s = kiln_status_make(KILN_PARSE_ERROR, "%s: .npy header has no 'fortran_order'", path);
    else if (strncmp(fo, "True", 4) == 0)
      s = kiln_status_make(KILN_UNIMPLEMENTED,
                           "%s: fortran_order True is not supported (save a C-ordered array, "
                           "np.ascontiguousarray)",
                           path);
    else if (strncmp(fo, "False", 5) != 0)
      s = kiln_status_make(KILN_PARSE_ERROR, "%s: bad 'fortran_order' in .npy header", path);
  }
  if (!s)
    s = npy_parse_shape(path, h, &rank, dims);
  free(h);
  kiln_type t;
  if (!s)
    s = kiln_type_make(elem, rank, dims, &t);
  if (s)
    return kiln_status_wrap(s, "reading %s", path);

  size_t bytes = (size_t)kiln_type_bytes(&t);
  size_t have = len - hstart - hlen;
  if (have != bytes) {
    char ts[160];
    kiln_type_format(&t, ts, sizeof ts);
    return kiln_status_make(have < bytes ? KILN_PARSE_ERROR : KILN_INVALID_ARGUMENT,
                            "%s: %s: shape %s needs %zu data bytes but the file has %zu", path,
                            have < bytes ? "truncated .npy file" : "size mismatch", ts, bytes,
                            have);
  }
  void *data = malloc(bytes ? bytes : 1);
  if (!data)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", path, bytes);
  memcpy(data, buf + hstart + hlen, bytes);
  if (elem == KILN_BOOL)
    for (size_t i = 0; i < bytes; i++)
      if (((unsigned char *)data)[i] > 1) {
        free(data);
        return kiln_status_make(KILN_PARSE_ERROR, "%s: bool element %zu is %u, not 0 or 1", path, i,
                                ((unsigned char *)buf)[hstart + hlen + i]);
      }
  out->type = t;
  out->data = data;
  out->name = NULL;
  return NULL;
}

kiln_status kiln_tensor_read_npy(const char *path, kiln_tensor *out) {
  if (!path || !out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_tensor_read_npy: %s is NULL",
                            path ? "out" : "path");
  memset(out, 0, sizeof *out);
  void *buf = NULL;
  size_t len = 0;
  KILN_TRY(kiln_file_read(path, &buf, &len));
  kiln_status s = npy_parse(path, buf, len, out);
  kiln_free(buf);
  return s;
}

kiln_status kiln_tensor_write_npy(const char *path, const kiln_tensor *t) {
  if (!path || !t)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_tensor_write_npy: %s is NULL",
                            path ? "tensor" : "path");
  const char *code = NULL;
  for (size_t i = 0; i < NPY_NDTYPES; i++)
    if (npy_dtypes[i].elem == t->type.elem)
      code = npy_dtypes[i].code;
  if (!code)
    return kiln_status_make(KILN_UNIMPLEMENTED, "%s: element type %s has no .npy dtype", path,
                            kiln_elem_name(t->type.elem));
  int64_t bytes = kiln_type_bytes(&t->type);
  if (bytes > 0 && !t->data)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_tensor_write_npy: %s: data is NULL", path);

  char shape[KILN_MAX_RANK * 24 + 4] = "(";
  size_t used = 1;
  for (uint32_t i = 0; i < t->type.rank && i < KILN_MAX_RANK; i++)
    used += (size_t)snprintf(shape + used, sizeof shape - used, "%lld,%s",
                             (long long)t->type.dims[i], i + 1 < t->type.rank ? " " : "");
  /* numpy writes (3,) for one dimension and (2, 3) for more. */
  if (t->type.rank > 1 && used > 1 && shape[used - 1] == ',')
    shape[--used] = '\0';
  snprintf(shape + used, sizeof shape - used, ")");

  char header[512];
  int hl =
      snprintf(header, sizeof header, "{'descr': '%c%s', 'fortran_order': False, 'shape': %s, }",
               kiln_elem_size(t->type.elem) == 1 ? '|' : '<', code, shape);
  /* Pad with spaces and a final newline so that the data starts at a
   * multiple of 64 bytes, as numpy does. */
  size_t total = 10 + (size_t)hl + 1;
  size_t padded = (total + 63) / 64 * 64;
  size_t pad = padded - total;
  size_t hlen = (size_t)hl + pad + 1;
  unsigned char pre[10];
  memcpy(pre, npy_magic, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(hlen & 0xff);
  pre[9] = (unsigned char)(hlen >> 8);

  FILE *f = fopen(path, "wb");
  if (!f)
    return kiln_status_make(KILN_IO_ERROR, "%s: cannot create: %s", path, strerror(errno));
  bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)hl, f) == (size_t)hl;
  for (size_t i = 0; ok && i < pad; i++)
    ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF;
  if (ok && bytes > 0)
    ok = fwrite(t->data, 1, (size_t)bytes, f) == (size_t)bytes;
  if (fclose(f) != 0)
    ok = false;
  if (!ok)
    return kiln_status_make(KILN_IO_ERROR, "%s: write failed: %s", path, strerror(errno));
  return NULL;
}
