/* core/arena.c: bump arena made of chunks taken from a kiln_allocator. */
#include "arena.h"

#include <stdint.h>
#include <string.h>

/* Chunks start small (so a tiny module costs little, and a failing-allocator
 * walk reaches many failure points) and double up to ARENA_CHUNK_MAX. */
#define ARENA_CHUNK_MIN 512u
#define ARENA_CHUNK_MAX 65536u

typedef struct arena_chunk {
  struct arena_chunk *next;
  size_t size; /* bytes asked of the allocator, handed back to free */
  size_t used; /* bytes of data[] in use */
  size_t cap;
  _Alignas(16) unsigned char data[];
} arena_chunk;

struct kiln_arena {
  const kiln_allocator *alloc;
  arena_chunk *head; /* current chunk first; big one-off chunks go behind it */
  size_t next_cap;   /* data size of the next regular chunk */
};

kiln_arena *kiln_arena_create(const kiln_allocator *alloc) {
  if (!alloc)
    alloc = kiln_default_allocator();
  kiln_arena *a = alloc->alloc(alloc->user, sizeof *a);
  if (!a)
    return NULL;
  a->alloc = alloc;
  a->head = NULL;
  a->next_cap = ARENA_CHUNK_MIN;
  return a;
}

void kiln_arena_destroy(kiln_arena *a) {
  if (!a)
    return;
  arena_chunk *c = a->head;
  while (c) {
    arena_chunk *next = c->next;
    a->alloc->free(a->alloc->user, c, c->size);
    c = next;
  }
  a->alloc->free(a->alloc->user, a, sizeof *a);
}

static arena_chunk *chunk_new(kiln_arena *a, size_t cap) {
  if (cap > SIZE_MAX - sizeof(arena_chunk))
    return NULL;
  size_t size = sizeof(arena_chunk) + cap;
  arena_chunk *c = a->alloc->alloc(a->alloc->user, size);
  if (!c)
    return NULL;
  c->next = NULL;
  c->size = size;
  c->used = 0;
  c->cap = cap;
  return c;
}

static size_t align_up(size_t v, size_t align) {
  return (v + align - 1) & ~(align - 1);
}

void *kiln_arena_alloc_aligned(kiln_arena *a, size_t size, size_t align) {
  if (!a || align == 0 || (align & (align - 1)))
    return NULL;
  if (align < 16)
    align = 16;
  arena_chunk *c = a->head;
  if (c) {
    size_t base = (size_t)(uintptr_t)c->data;
    size_t start = align_up(base + c->used, align) - base;
    if (start <= c->cap && c->cap - start >= size) {
      c->used = start + size;
      void *p = c->data + start;
      memset(p, 0, size);
      return p;
    }
  }
  if (size > SIZE_MAX - align)
    return NULL;
  size_t need = size + align;
  if (need > a->next_cap / 4) {
    /* A big request gets its own chunk, placed behind the current one so
     * the current chunk's free space is not wasted. */
    arena_chunk *big = chunk_new(a, need);
    if (!big)
      return NULL;
    if (a->head) {
      big->next = a->head->next;
      a->head->next = big;
    } else {
      a->head = big;
    }
    size_t start = align_up((size_t)(uintptr_t)big->data, align) - (size_t)(uintptr_t)big->data;
    big->used = start + size;
    memset(big->data + start, 0, size);
    return big->data + start;
  }
  arena_chunk *n = chunk_new(a, a->next_cap);
  if (!n)
    return NULL;
  if (a->next_cap < ARENA_CHUNK_MAX)
    a->next_cap *= 2;
  n->next = a->head;
  a->head = n;
  size_t start = align_up((size_t)(uintptr_t)n->data, align) - (size_t)(uintptr_t)n->data;
  n->used = start + size;
  memset(n->data + start, 0, size);
  return n->data + start;
}

void *kiln_arena_alloc(kiln_arena *a, size_t size) {
  return kiln_arena_alloc_aligned(a, size, 16);
}

char *kiln_arena_strdup(kiln_arena *a, const char *s) {
  if (!s)
    return NULL;
  return kiln_arena_memdup(a, s, strlen(s) + 1);
}

void *kiln_arena_memdup(kiln_arena *a, const void *p, size_t size) {
  void *d = kiln_arena_alloc(a, size);
  if (d && size)
    memcpy(d, p, size);
  return d;
}

const kiln_allocator *kiln_arena_allocator(const kiln_arena *a) {
  return a->alloc;
}
