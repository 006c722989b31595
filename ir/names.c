/* ir/names.c: the name -> object hash table (open addressing with
 * tombstones) behind kiln_module_find_value and unique buffer names, and the
 * arena array growth helper. Storage comes from the owner's arena so a
 * failing allocator is reported, never crashed on. */
#include <string.h>

#include "ir_internal.h"

struct kiln_ir_name_slot {
  const char *name; /* NULL = empty */
  void *p;          /* NULL with a name = tombstone */
};

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

void kiln_ir_names_init(kiln_ir_names *t, kiln_arena *arena) {
  memset(t, 0, sizeof *t);
  t->arena = arena;
}

void *kiln_ir_names_find(const kiln_ir_names *t, const char *name) {
  if (!t->cap || !name)
    return NULL;
  uint32_t mask = t->cap - 1;
  for (uint32_t i = (uint32_t)hash_name(name) & mask;; i = (i + 1) & mask) {
    struct kiln_ir_name_slot *s = &t->slots[i];
    if (!s->name)
      return NULL;
    if (s->p && strcmp(s->name, name) == 0)
      return s->p;
  }
}

static void raw_insert(struct kiln_ir_name_slot *slots, uint32_t cap, const char *name, void *p) {
  uint32_t mask = cap - 1;
  uint32_t i = (uint32_t)hash_name(name) & mask;
  while (slots[i].name && slots[i].p)
    i = (i + 1) & mask;
  slots[i].name = name;
  slots[i].p = p;
}

bool kiln_ir_names_reserve(kiln_ir_names *t, uint32_t extra) {
  /* keep the load (tombstones included) at most one half */
  if ((uint64_t)(t->used + extra) * 2 <= t->cap)
    return true;
  uint64_t cap = t->cap ? t->cap : 16;
  while ((uint64_t)(t->live + extra) * 2 > cap)
    cap *= 2;
  if (cap > (1u << 31))
    return false;
  struct kiln_ir_name_slot *slots = kiln_arena_alloc(t->arena, (size_t)cap * sizeof *slots);
  if (!slots)
    return false;
  for (uint32_t i = 0; i < t->cap; i++)
    if (t->slots[i].name && t->slots[i].p)
      raw_insert(slots, (uint32_t)cap, t->slots[i].name, t->slots[i].p);
  t->slots = slots;
  t->cap = (uint32_t)cap;
  t->used = t->live;
  return true;
}

void kiln_ir_names_insert(kiln_ir_names *t, const char *name, void *p) {
  uint32_t mask = t->cap - 1;
  uint32_t i = (uint32_t)hash_name(name) & mask;
  while (t->slots[i].name && t->slots[i].p)
    i = (i + 1) & mask;
  if (!t->slots[i].name)
    t->used++;
  t->slots[i].name = name;
  t->slots[i].p = p;
  t->live++;
}

void kiln_ir_names_remove(kiln_ir_names *t, const char *name) {
  if (!t->cap || !name)
    return;
  uint32_t mask = t->cap - 1;
  for (uint32_t i = (uint32_t)hash_name(name) & mask;; i = (i + 1) & mask) {
    struct kiln_ir_name_slot *s = &t->slots[i];
    if (!s->name)
      return;
    if (s->p && strcmp(s->name, name) == 0) {
      s->p = NULL; /* tombstone: keeps probe chains intact */
      t->live--;
      return;
    }
  }
}

bool kiln_ir_grow(kiln_arena *a, void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap)
    return true;
  uint64_t nc = *cap ? (uint64_t)*cap * 2 : 8;
  while (nc < need)
    nc *= 2;
  if (nc > UINT32_MAX)
    return false;
  void *n = kiln_arena_alloc(a, (size_t)nc * elem);
  if (!n)
    return false;
  if (*cap)
    memcpy(n, *arr, (size_t)*cap * elem);
  *arr = n;
  *cap = (uint32_t)nc;
  return true;
}
