/* onnx_pb.c: kiln_tensor_read_pb / kiln_tensor_write_pb, single TensorProto
 * files as found in the ONNX test data (test_data_set_N/input_K.pb). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

kiln_status kiln_tensor_read_pb(const char *path, kiln_tensor *out) {
  if (!path || !out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_tensor_read_pb: NULL argument");
  memset(out, 0, sizeof *out);
  void *buf;
  size_t len;
  KILN_TRY(kiln_file_read(path, &buf, &len));
  Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, buf);
  kiln_free(buf);
  if (!t)
    return kiln_status_make(KILN_PARSE_ERROR,
                            "%s: not a valid ONNX TensorProto (truncated or "
                            "corrupt protobuf)",
                            path);
  /* External data in a .pb file is relative to the file's folder. */
  char *dir_copy = strdup(path);
  kiln_status s;
  if (!dir_copy)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", path);
  else
    s = onnx_tensor_from_proto(t, dirname(dir_copy), path, out);
  free(dir_copy);
  onnx__tensor_proto__free_unpacked(t, NULL);
  return s;
}

kiln_status kiln_tensor_write_pb(const char *path, const kiln_tensor *t) {
  if (!path || !t)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_tensor_write_pb: NULL argument");
  if (t->type.quantized)
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "%s: quantized tensors have no TensorProto form (write scale and "
                            "zero point separately)",
                            path);
  int32_t dt = onnx_dtype_from_elem(t->type.elem);
  if (!dt || t->type.rank > KILN_MAX_RANK)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: invalid tensor type", path);
  int64_t bytes = kiln_type_bytes(&t->type);
  if (bytes > 0 && !t->data)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: tensor has no data", path);
  Onnx__TensorProto p = ONNX__TENSOR_PROTO__INIT;
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, t->type.dims, sizeof dims);
  p.n_dims = t->type.rank;
  p.dims = dims;
  p.has_data_type = 1;
  p.data_type = dt;
  p.name = t->name;
  p.has_raw_data = 1;
  p.raw_data.len = (size_t)bytes;
  p.raw_data.data = (uint8_t *)t->data;
  size_t n = onnx__tensor_proto__get_packed_size(&p);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory", path);
  onnx__tensor_proto__pack(&p, buf);
  FILE *fp = fopen(path, "wb");
  kiln_status s = NULL;
  if (!fp)
    s = kiln_status_make(KILN_IO_ERROR, "%s: cannot create: %s", path, strerror(errno));
  else {
    if (fwrite(buf, 1, n, fp) != n)
      s = kiln_status_make(KILN_IO_ERROR, "%s: write failed: %s", path, strerror(errno));
    if (fclose(fp) != 0 && !s)
      s = kiln_status_make(KILN_IO_ERROR, "%s: close failed: %s", path, strerror(errno));
  }
  free(buf);
  return s;
}
