/* tests/core/test_files.h: file helpers the compile cache tests share
 * (tests/core and tests/cpu): a whole file read, a file written, and
 * stderr caught in a temporary file around a piece of a test. Static,
 * for Check tests (they assert). */
#ifndef KILN_TESTS_TEST_FILES_H
#define KILN_TESTS_TEST_FILES_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The bytes of path (malloc'd, one spare byte), their count in *n. */
static inline unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)sz + 1);
  ck_assert_ptr_nonnull(b);
  ck_assert_uint_eq(fread(b, 1, (size_t)sz, f), (size_t)sz);
  fclose(f);
  *n = (size_t)sz;
  return b;
}

/* path := the n bytes at p. */
static inline void spill(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  ck_assert_uint_eq(fwrite(p, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

typedef struct capture {
  int saved, fd;
  char path[64];
} capture;

static inline void cap_begin(capture *c) {
  snprintf(c->path, sizeof c->path, "/tmp/kiln-test-log-XXXXXX");
  c->fd = mkstemp(c->path);
  ck_assert_int_ge(c->fd, 0);
  fflush(stderr);
  c->saved = dup(2);
  dup2(c->fd, 2);
}

/* What was written to stderr since cap_begin (malloc'd, NUL-ended). */
static inline char *cap_end(capture *c) {
  fflush(stderr);
  dup2(c->saved, 2);
  close(c->saved);
  close(c->fd);
  size_t n;
  char *t = (char *)slurp(c->path, &n);
  t[n] = 0;
  unlink(c->path);
  return t;
}

#endif
