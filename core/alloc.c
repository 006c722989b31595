/* core/alloc.c: the default malloc-based allocator and kiln_free. */
#include <stdlib.h>

#include "kiln/types.h"

static void *default_alloc(void *user, size_t size) {
  (void)user;
  return malloc(size ? size : 1);
}

static void default_free(void *user, void *ptr, size_t size) {
  (void)user;
  (void)size;
  free(ptr);
}

static const kiln_allocator default_allocator = {default_alloc, default_free, NULL};

const kiln_allocator *kiln_default_allocator(void) {
  return &default_allocator;
}

void kiln_free(void *p) {
  free(p);
}
