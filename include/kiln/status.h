/* kiln/status.h: the error convention of every fallible kiln call.
 *
 * A kiln_status is a pointer: NULL means success, anything else is a failure
 * that carries a canonical code and a human-readable message. The caller that
 * receives a non-NULL status owns it and must release it with
 * kiln_status_free() (or hand it on, e.g. by returning it). Messages name the
 * culprit (file, node, backend) and the reason.
 *
 *   kiln_status s = kiln_module_load_text("net.kir", NULL, &m);
 *   if (s) { fprintf(stderr, "%s\n", kiln_status_message(s)); kiln_status_free(s); }
 *
 * Creating a status never fails from the caller's point of view: when memory
 * for the message cannot be had, a static "out of memory" status is returned
 * (kiln_status_free accepts it and does nothing).
 *
 * Thread safety: statuses are plain values; distinct statuses may be used from
 * distinct threads freely. */
#ifndef KILN_STATUS_H
#define KILN_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KILN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define KILN_NODISCARD __attribute__((warn_unused_result))
#else
#define KILN_PRINTF(f, a)
#define KILN_NODISCARD
#endif

/* Canonical codes. Values are part of the ABI: append only. */
typedef enum kiln_code {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,     /* caller passed something malformed */
  KILN_NOT_FOUND = 2,            /* a named thing does not exist */
  KILN_UNIMPLEMENTED = 3,        /* valid, but not supported (yet / here) */
  KILN_OUT_OF_MEMORY = 4,        /* an allocation failed */
  KILN_IO_ERROR = 5,             /* reading or writing a file failed */
  KILN_PARSE_ERROR = 6,          /* text or binary input is malformed */
  KILN_VERIFY_ERROR = 7,         /* IR breaks an invariant */
  KILN_INTERNAL = 8,             /* a bug in kiln or a plugin */
  KILN_UNAVAILABLE = 9,          /* a device or service is not there */
  KILN_OUT_OF_RANGE = 10,        /* a size or index overflows its limit */
  KILN_FAILED_PRECONDITION = 11, /* called in the wrong state */
  KILN_ABI_MISMATCH = 12,        /* a plugin was built for another ABI */
  KILN_CODE_COUNT_ = 13
} kiln_code;

typedef struct kiln_status_rep *kiln_status;

/* Make a failure status with a printf-style message. code must not be
 * KILN_OK. Returns a status owned by the caller. */
KILN_NODISCARD kiln_status kiln_status_make(kiln_code code, const char *fmt, ...) KILN_PRINTF(2, 3);
KILN_NODISCARD kiln_status kiln_status_makev(kiln_code code, const char *fmt, va_list ap);

/* Add context in front of a failure's message ("while X: <old message>"),
 * keeping its code. Takes ownership of `s` and returns the (possibly new)
 * status, which the caller then owns. Passing NULL returns NULL. */
KILN_NODISCARD kiln_status kiln_status_wrap(kiln_status s, const char *fmt, ...) KILN_PRINTF(2, 3);

/* The code of a status (KILN_OK for NULL). */
kiln_code kiln_status_code(kiln_status s);
/* The message; "ok" for NULL. Valid until the status is freed. */
const char *kiln_status_message(kiln_status s);
/* The name of a code, e.g. "INVALID_ARGUMENT". Static string. */
const char *kiln_code_name(kiln_code code);
/* Release a status. NULL is accepted. */
void kiln_status_free(kiln_status s);

/* Return early with the status of `expr` when it failed. */
#define KILN_TRY(expr)                                                                             \
  do {                                                                                             \
    kiln_status kiln_try_s_ = (expr);                                                              \
    if (kiln_try_s_)                                                                               \
      return kiln_try_s_;                                                                          \
  } while (0)

/* Like KILN_TRY, adding context to the message on the way up. */
#define KILN_TRY_CTX(expr, ...)                                                                    \
  do {                                                                                             \
    kiln_status kiln_try_s_ = (expr);                                                              \
    if (kiln_try_s_)                                                                               \
      return kiln_status_wrap(kiln_try_s_, __VA_ARGS__);                                           \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
