/* ir/text/owner.c: an allocator wrapper that lets a parsed instruction IR
 * own its weight data. instr.h lets an IR only borrow weight bytes, but a
 * parsed IR has nobody else to own them; so the parser gives the IR this
 * allocator, which counts the IR's live blocks and, once the IR has freed
 * the last of them (kiln_ir_destroy), frees the weights and itself. */
#include <stdlib.h>

#include "text_internal.h"

typedef struct adopted {
  struct adopted *next;
  size_t size;
} adopted;

struct kiln_text_owner {
  kiln_allocator self;
  const kiln_allocator *inner;
  size_t live;
  bool armed;
  adopted *blocks;
};

static void owner_release(kiln_text_owner *o) {
  adopted *b = o->blocks;
  while (b) {
    adopted *next = b->next;
    o->inner->free(o->inner->user, b, sizeof *b + b->size);
    b = next;
  }
  const kiln_allocator *inner = o->inner;
  inner->free(inner->user, o, sizeof *o);
}

static void *owner_alloc(void *user, size_t size) {
  kiln_text_owner *o = user;
  void *p = o->inner->alloc(o->inner->user, size);
  if (p)
    o->live++;
  return p;
}

static void owner_free(void *user, void *ptr, size_t size) {
  kiln_text_owner *o = user;
  if (!ptr)
    return;
  o->inner->free(o->inner->user, ptr, size);
  if (o->live > 0 && --o->live == 0 && o->armed)
    owner_release(o);
}

kiln_text_owner *kiln_text_owner_create(const kiln_allocator *inner) {
  if (!inner)
    inner = kiln_default_allocator();
  kiln_text_owner *o = inner->alloc(inner->user, sizeof *o);
  if (!o)
    return NULL;
  o->self.alloc = owner_alloc;
  o->self.free = owner_free;
  o->self.user = o;
  o->inner = inner;
  o->live = 0;
  o->armed = false;
  o->blocks = NULL;
  return o;
}

const kiln_allocator *kiln_text_owner_allocator(kiln_text_owner *o) {
  return &o->self;
}

void *kiln_text_owner_adopt_alloc(kiln_text_owner *o, size_t n) {
  adopted *b = o->inner->alloc(o->inner->user, sizeof *b + n);
  if (!b)
    return NULL;
  b->size = n;
  b->next = o->blocks;
  o->blocks = b;
  /* The header is 16 bytes on the usual ABIs, keeping the data aligned. */
  return (unsigned char *)b + sizeof *b;
}

void kiln_text_owner_arm(kiln_text_owner *o) {
  o->armed = true;
}

void kiln_text_owner_destroy(kiln_text_owner *o) {
  if (o)
    owner_release(o);
}
