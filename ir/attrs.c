/* ir/attrs.c: attribute sets. A set lives in one contiguous block (items,
 * then names, strings and lists) so it can come from an arena or from a
 * plain allocator and be freed in one call. */
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

static const int64_t empty_list[1] = {0};
static const double empty_flist[1] = {0};

static size_t round8(size_t v) {
  return (v + 7) & ~(size_t)7;
}

static int cmp_desc_ptr(const void *a, const void *b) {
  const kiln_attr_desc *x = *(const kiln_attr_desc *const *)a;
  const kiln_attr_desc *y = *(const kiln_attr_desc *const *)b;
  return strcmp(x->name, y->name);
}

void *kiln_ir_arena_block(void *arena, size_t size) {
  return kiln_arena_alloc(arena, size);
}

kiln_status kiln_ir_attrs_build(kiln_ir_block_fn get, void *ctx, const kiln_attr_desc *descs,
                                uint32_t n, kiln_attrs **out) {
  *out = NULL;
  if (n && !descs)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "attributes: %u given but the array is NULL", n);
  size_t size = round8(sizeof(kiln_attrs) + (size_t)n * sizeof(kiln_attr));
  for (uint32_t i = 0; i < n; i++) {
    const kiln_attr_desc *d = &descs[i];
    if (!d->name || !d->name[0])
      return kiln_status_make(KILN_INVALID_ARGUMENT, "attribute %u has no name", i);
    size += round8(strlen(d->name) + 1);
    switch (d->kind) {
    case KILN_ATTR_INT:
    case KILN_ATTR_FLOAT:
      break;
    case KILN_ATTR_STRING:
      size += round8((d->s ? strlen(d->s) : 0) + 1);
      break;
    case KILN_ATTR_INTS:
    case KILN_ATTR_FLOATS:
      if (d->len && !(d->kind == KILN_ATTR_INTS ? (const void *)d->ints : (const void *)d->floats))
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "attribute '%s': list of %u entries but no data", d->name, d->len);
      size += (size_t)d->len * 8;
      break;
    case KILN_ATTR_TYPE:
      if ((int)d->type < 0 || d->type >= KILN_ELEM_COUNT)
        return kiln_status_make(KILN_INVALID_ARGUMENT, "attribute '%s': invalid element type %d",
                                d->name, (int)d->type);
      break;
    default:
      return kiln_status_make(KILN_INVALID_ARGUMENT, "attribute '%s': invalid kind %d", d->name,
                              (int)d->kind);
    }
  }
  /* Sort pointers first so duplicates are found before anything is made. */
  const kiln_attr_desc *local[16];
  const kiln_attr_desc **order = local;
  if (n > 16) {
    order = malloc((size_t)n * sizeof *order);
    if (!order)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory sorting %u attributes", n);
  }
  for (uint32_t i = 0; i < n; i++)
    order[i] = &descs[i];
  if (n > 1)
    qsort(order, n, sizeof *order, cmp_desc_ptr);
  for (uint32_t i = 1; i < n; i++) {
    if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
      kiln_status s =
          kiln_status_make(KILN_INVALID_ARGUMENT, "attribute '%s' given twice", order[i]->name);
      if (order != local)
        free(order);
      return s;
    }
  }
  unsigned char *block = get(ctx, size);
  if (!block) {
    if (order != local)
      free(order);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory for %u attributes", n);
  }
  kiln_attrs *as = (kiln_attrs *)block;
  memset(as, 0, sizeof *as + (size_t)n * sizeof(kiln_attr));
  as->block_size = size;
  as->n = n;
  size_t off = round8(sizeof(kiln_attrs) + (size_t)n * sizeof(kiln_attr));
  for (uint32_t i = 0; i < n; i++) {
    const kiln_attr_desc *d = order[i];
    kiln_attr *a = &as->items[i];
    size_t nl = strlen(d->name) + 1;
    memcpy(block + off, d->name, nl);
    a->name = (const char *)(block + off);
    off += round8(nl);
    a->kind = d->kind;
    switch (d->kind) {
    case KILN_ATTR_INT:
      a->i = d->i;
      break;
    case KILN_ATTR_FLOAT:
      a->f = d->f;
      break;
    case KILN_ATTR_STRING: {
      size_t sl = (d->s ? strlen(d->s) : 0) + 1;
      if (d->s)
        memcpy(block + off, d->s, sl);
      else
        block[off] = '\0';
      a->s = (const char *)(block + off);
      off += round8(sl);
      break;
    }
    case KILN_ATTR_INTS:
      a->len = d->len;
      if (d->len) {
        memcpy(block + off, d->ints, (size_t)d->len * 8);
        a->ints = (const int64_t *)(block + off);
        off += (size_t)d->len * 8;
      } else {
        a->ints = empty_list;
      }
      break;
    case KILN_ATTR_FLOATS:
      a->len = d->len;
      if (d->len) {
        memcpy(block + off, d->floats, (size_t)d->len * 8);
        a->floats = (const double *)(block + off);
        off += (size_t)d->len * 8;
      } else {
        a->floats = empty_flist;
      }
      break;
    case KILN_ATTR_TYPE:
      a->type = d->type;
      break;
    }
  }
  if (order != local)
    free(order);
  *out = as;
  return NULL;
}

kiln_status kiln_ir_attrs_copy(kiln_arena *arena, const kiln_attrs *src, kiln_attrs **out) {
  *out = NULL;
  if (!src)
    return NULL;
  unsigned char *block = kiln_arena_alloc(arena, src->block_size);
  if (!block)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory copying %u attributes", src->n);
  memcpy(block, src, src->block_size);
  /* Pointers inside the block are rebased; the shared empty lists are not. */
  const unsigned char *old = (const unsigned char *)src;
  kiln_attrs *as = (kiln_attrs *)block;
#define REBASE(p)                                                                                  \
  do {                                                                                             \
    const unsigned char *q_ = (const unsigned char *)(p);                                          \
    if (q_ >= old && q_ < old + src->block_size)                                                   \
      (p) = (void *)(block + (q_ - old));                                                          \
  } while (0)
  for (uint32_t i = 0; i < as->n; i++) {
    kiln_attr *a = &as->items[i];
    REBASE(a->name);
    if (a->s)
      REBASE(a->s);
    if (a->ints)
      REBASE(a->ints);
    if (a->floats)
      REBASE(a->floats);
  }
#undef REBASE
  *out = as;
  return NULL;
}

typedef struct {
  const kiln_allocator *alloc;
} alloc_ctx;

static void *alloc_block(void *ctx, size_t size) {
  const kiln_allocator *a = ((alloc_ctx *)ctx)->alloc;
  return a->alloc(a->user, size);
}

kiln_status kiln_attrs_create(const kiln_allocator *alloc, const kiln_attr_desc *descs, uint32_t n,
                              kiln_attrs **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_attrs_create: no output");
  alloc_ctx ctx = {alloc ? alloc : kiln_default_allocator()};
  return kiln_ir_attrs_build(alloc_block, &ctx, descs, n, out);
}

void kiln_attrs_destroy(const kiln_allocator *alloc, kiln_attrs *a) {
  if (!a)
    return;
  if (!alloc)
    alloc = kiln_default_allocator();
  alloc->free(alloc->user, a, a->block_size);
}

uint32_t kiln_attrs_count(const kiln_attrs *a) {
  return a ? a->n : 0;
}

const kiln_attr *kiln_attrs_at(const kiln_attrs *a, uint32_t i) {
  return a && i < a->n ? &a->items[i] : NULL;
}

const kiln_attr *kiln_attrs_find(const kiln_attrs *a, const char *name) {
  if (!a || !name)
    return NULL;
  uint32_t lo = 0, hi = a->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int c = strcmp(a->items[mid].name, name);
    if (c == 0)
      return &a->items[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

const char *kiln_attr_name(const kiln_attr *a) {
  return a ? a->name : "";
}

kiln_attr_kind kiln_attr_get_kind(const kiln_attr *a) {
  return a->kind;
}

int64_t kiln_attr_int(const kiln_attr *a) {
  if (!a)
    return 0;
  if (a->kind == KILN_ATTR_INT)
    return a->i;
  if (a->kind == KILN_ATTR_FLOAT) {
    /* Truncation of an out-of-range double is undefined in C: clamp. */
    if (a->f != a->f)
      return 0;
    if (a->f >= 9.2233720368547758e18)
      return INT64_MAX;
    if (a->f <= -9.2233720368547758e18)
      return INT64_MIN;
    return (int64_t)a->f;
  }
  return 0;
}

double kiln_attr_float(const kiln_attr *a) {
  if (!a)
    return 0.0;
  if (a->kind == KILN_ATTR_FLOAT)
    return a->f;
  if (a->kind == KILN_ATTR_INT)
    return (double)a->i;
  return 0.0;
}

const char *kiln_attr_string(const kiln_attr *a) {
  return a && a->kind == KILN_ATTR_STRING ? a->s : "";
}

uint32_t kiln_attr_len(const kiln_attr *a) {
  return a && (a->kind == KILN_ATTR_INTS || a->kind == KILN_ATTR_FLOATS) ? a->len : 0;
}

const int64_t *kiln_attr_ints(const kiln_attr *a) {
  if (!a)
    return NULL;
  if (a->kind == KILN_ATTR_INTS)
    return a->ints;
  if (a->kind == KILN_ATTR_FLOATS && a->len == 0)
    return empty_list; /* "[]" in text is ambiguous: it reads as either */
  return NULL;
}

const double *kiln_attr_floats(const kiln_attr *a) {
  if (!a)
    return NULL;
  if (a->kind == KILN_ATTR_FLOATS)
    return a->floats;
  if (a->kind == KILN_ATTR_INTS && a->len == 0)
    return empty_flist;
  return NULL;
}

kiln_elem kiln_attr_type(const kiln_attr *a) {
  return a && a->kind == KILN_ATTR_TYPE ? a->type : KILN_F32;
}

int64_t kiln_attrs_int_or(const kiln_attrs *a, const char *name, int64_t dflt) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  if (!at || (at->kind != KILN_ATTR_INT && at->kind != KILN_ATTR_FLOAT))
    return dflt;
  return kiln_attr_int(at);
}

double kiln_attrs_float_or(const kiln_attrs *a, const char *name, double dflt) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  if (!at || (at->kind != KILN_ATTR_INT && at->kind != KILN_ATTR_FLOAT))
    return dflt;
  return kiln_attr_float(at);
}

const char *kiln_attrs_string_or(const kiln_attrs *a, const char *name, const char *dflt) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  if (!at || at->kind != KILN_ATTR_STRING)
    return dflt;
  return at->s;
}

kiln_elem kiln_attrs_type_or(const kiln_attrs *a, const char *name, kiln_elem dflt) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  if (!at || at->kind != KILN_ATTR_TYPE)
    return dflt;
  return at->type;
}
