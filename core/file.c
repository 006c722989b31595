/* core/file.c: kiln_file_read, the one whole-file reader behind the .npy
 * and .pb tensor readers, the text form and the ONNX loader. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

kiln_status kiln_file_read(const char *path, void **out_data, size_t *out_len) {
  if (!path || !out_data || !out_len)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_file_read: NULL argument");
  *out_data = NULL;
  *out_len = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return kiln_status_make(KILN_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  /* Grow until a read comes back short; the last byte of room is kept for
   * the terminating zero. */
  while (buf) {
    if (len + 1 >= cap) {
      char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - 1 - len, f);
    len += got;
    if (got == 0)
      break;
  }
  int err = buf ? ferror(f) : 0, saved = errno;
  fclose(f);
  if (!buf)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory reading the file", path);
  if (err) {
    free(buf);
    return kiln_status_make(KILN_IO_ERROR, "%s: read failed: %s", path, strerror(saved));
  }
  buf[len] = '\0';
  *out_data = buf;
  *out_len = len;
  return NULL;
}
