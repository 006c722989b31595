/* core/base/arena.h (private to base and the libraries built on it: ir,
 * passes): a bump arena on top of a kiln_allocator.
 *
 * Modules and instruction IRs keep all their memory in one arena so that
 * destroying them is one walk over a chunk list, and so that a failing
 * allocator only ever makes one call return NULL (never a half-freed
 * object). Memory is released only when the arena is destroyed. */
#ifndef KILN_CORE_ARENA_H
#define KILN_CORE_ARENA_H

#include <stddef.h>

#include "kiln/types.h"

typedef struct kiln_arena kiln_arena;

/* NULL when the allocator fails. */
kiln_arena *kiln_arena_create(const kiln_allocator *alloc);
void kiln_arena_destroy(kiln_arena *a); /* NULL accepted */
/* 16-byte aligned, zero-filled; NULL on failure (size 0 gives a valid pointer). */
void *kiln_arena_alloc(kiln_arena *a, size_t size);
/* align must be a power of two. */
void *kiln_arena_alloc_aligned(kiln_arena *a, size_t size, size_t align);
char *kiln_arena_strdup(kiln_arena *a, const char *s);
void *kiln_arena_memdup(kiln_arena *a, const void *p, size_t size);
const kiln_allocator *kiln_arena_allocator(const kiln_arena *a);

#endif
