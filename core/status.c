/* core/status.c: the kiln_status error values (code + heap message).
 *
 * Statuses are malloc'd (not taken from a module allocator) so that an error
 * can always be reported even when the module's allocator is the thing that
 * failed; when malloc itself fails a static out-of-memory status stands in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/status.h"

struct kiln_status_rep {
  kiln_code code;
  int is_static;
  char *msg;
};

static char oom_text[] = "out of memory";
static struct kiln_status_rep oom_status = {KILN_OUT_OF_MEMORY, 1, oom_text};

static char *format_alloc(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int len = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (len < 0)
    return NULL;
  char *buf = malloc((size_t)len + 1);
  if (!buf)
    return NULL;
  vsnprintf(buf, (size_t)len + 1, fmt, ap);
  return buf;
}

kiln_status kiln_status_makev(kiln_code code, const char *fmt, va_list ap) {
  /* KILN_OK would make a "failure" that reads as success: treat it as a bug. */
  if (code <= KILN_OK || code >= KILN_CODE_COUNT_)
    code = KILN_INTERNAL;
  struct kiln_status_rep *s = malloc(sizeof *s);
  if (!s)
    return &oom_status;
  s->msg = format_alloc(fmt ? fmt : "", ap);
  if (!s->msg) {
    free(s);
    return &oom_status;
  }
  s->code = code;
  s->is_static = 0;
  return s;
}

kiln_status kiln_status_make(kiln_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = kiln_status_makev(code, fmt, ap);
  va_end(ap);
  return s;
}

kiln_status kiln_status_wrap(kiln_status s, const char *fmt, ...) {
  if (!s)
    return NULL;
  va_list ap;
  va_start(ap, fmt);
  char *ctx = format_alloc(fmt ? fmt : "", ap);
  va_end(ap);
  if (!ctx)
    return s; /* keep the original failure rather than losing it */
  size_t cl = strlen(ctx), ol = strlen(s->msg);
  char *msg = malloc(cl + 2 + ol + 1);
  if (!msg) {
    free(ctx);
    return s;
  }
  memcpy(msg, ctx, cl);
  memcpy(msg + cl, ": ", 2);
  memcpy(msg + cl + 2, s->msg, ol + 1);
  free(ctx);
  if (s->is_static) {
    struct kiln_status_rep *n = malloc(sizeof *n);
    if (!n) {
      free(msg);
      return s;
    }
    n->code = s->code;
    n->is_static = 0;
    n->msg = msg;
    return n;
  }
  free(s->msg);
  s->msg = msg;
  return s;
}

kiln_code kiln_status_code(kiln_status s) {
  return s ? s->code : KILN_OK;
}

const char *kiln_status_message(kiln_status s) {
  return s ? s->msg : "ok";
}

const char *kiln_code_name(kiln_code code) {
  static const char *const names[] = {
      "OK",           "INVALID_ARGUMENT",    "NOT_FOUND",    "UNIMPLEMENTED", "OUT_OF_MEMORY",
      "IO_ERROR",     "PARSE_ERROR",         "VERIFY_ERROR", "INTERNAL",      "UNAVAILABLE",
      "OUT_OF_RANGE", "FAILED_PRECONDITION", "ABI_MISMATCH"};
  if ((int)code < 0 || code >= KILN_CODE_COUNT_)
    return "UNKNOWN";
  return names[code];
}

void kiln_status_free(kiln_status s) {
  if (!s || s->is_static)
    return;
  free(s->msg);
  free(s);
}
