/* ir/msgbuf.c: accumulates the one-line-per-problem reports of the
 * verifiers into a single status message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

void kiln_ir_sb_line(kiln_ir_sb *sb, const char *fmt, ...) {
  sb->lines++;
  if (sb->failed)
    return;
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int len = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (len < 0) {
    va_end(ap);
    return;
  }
  size_t need = sb->len + (size_t)len + 2;
  if (need > sb->cap) {
    size_t nc = sb->cap ? sb->cap * 2 : 256;
    while (nc < need)
      nc *= 2;
    char *nb = realloc(sb->buf, nc);
    if (!nb) {
      sb->failed = true;
      va_end(ap);
      return;
    }
    sb->buf = nb;
    sb->cap = nc;
  }
  if (sb->len)
    sb->buf[sb->len++] = '\n';
  vsnprintf(sb->buf + sb->len, (size_t)len + 1, fmt, ap);
  sb->len += (size_t)len;
  va_end(ap);
}

kiln_status kiln_ir_sb_finish(kiln_ir_sb *sb, kiln_code code) {
  kiln_status s = NULL;
  if (sb->lines) {
    if (sb->failed || !sb->buf)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory while reporting %u problem(s)",
                           sb->lines);
    else
      s = kiln_status_make(code, "%s", sb->buf);
  }
  free(sb->buf);
  memset(sb, 0, sizeof *sb);
  return s;
}
