/* ir/text/buf.c: the growable string the printers write into. An append
 * that cannot grow the buffer marks it out of memory instead of failing on
 * the spot, so printers check once at the end. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_internal.h"

static bool buf_reserve(kiln_text_buf *b, size_t extra) {
  if (b->oom)
    return false;
  if (b->len + extra + 1 <= b->cap)
    return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = true;
    return false;
  }
  b->p = p;
  b->cap = cap;
  return true;
}

void kiln_text_buf_putn(kiln_text_buf *b, const char *s, size_t n) {
  if (!buf_reserve(b, n))
    return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void kiln_text_buf_puts(kiln_text_buf *b, const char *s) {
  kiln_text_buf_putn(b, s, strlen(s));
}

void kiln_text_buf_printf(kiln_text_buf *b, const char *fmt, ...) {
  char small[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = true;
    return;
  }
  if ((size_t)n < sizeof small) {
    kiln_text_buf_putn(b, small, (size_t)n);
    return;
  }
  if (!buf_reserve(b, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void kiln_text_buf_free(kiln_text_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}
