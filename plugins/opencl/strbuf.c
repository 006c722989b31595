/* plugins/opencl/strbuf.c: a growable string for generated OpenCL C
 * source; an allocation failure is remembered (oom) instead of reported at
 * every append, and checked once when the source is complete. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ocl.h"

void ocl_sb_printf(ocl_sb *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->n;
    int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? room : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = true;
      return;
    }
    if (b->p && (size_t)k < room) {
      b->n += (size_t)k;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->n + (size_t)k + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
}

void ocl_sb_free(ocl_sb *b) {
  free(b->p);
  *b = (ocl_sb){0};
}
