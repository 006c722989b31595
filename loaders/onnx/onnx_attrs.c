/* onnx_attrs.c: ONNX AttributeProto -> kiln attribute descriptors, and a
 * small fixed-size list that importers edit before emitting a node. */
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

const Onnx__AttributeProto *onnx_node_attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
      return n->attribute[i];
  return NULL;
}

int64_t onnx_attr_int_or(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = onnx_node_attr(n, name);
  if (!a)
    return dflt;
  if (a->has_i)
    return a->i;
  if (a->has_f)
    return onnx_f64_to_i64(a->f);
  return dflt;
}

double onnx_attr_float_or(const Onnx__NodeProto *n, const char *name, double dflt) {
  const Onnx__AttributeProto *a = onnx_node_attr(n, name);
  if (!a)
    return dflt;
  if (a->has_f)
    return a->f;
  if (a->has_i)
    return (double)a->i;
  return dflt;
}

static kiln_status no_room(void) {
  return kiln_status_make(KILN_OUT_OF_RANGE, "too many attributes on one node (max 48)");
}

static kiln_status keep(onnx_attr_list *al, void *p) {
  if (!p)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory converting attributes");
  if (al->n_owned == sizeof al->owned / sizeof al->owned[0]) {
    free(p);
    return no_room();
  }
  al->owned[al->n_owned++] = p;
  return NULL;
}

/* A slot for `name`: the existing entry of that name, else a new one. */
static kiln_status slot(onnx_attr_list *al, const char *name, kiln_attr_desc **out) {
  for (uint32_t i = 0; i < al->n; i++)
    if (!strcmp(al->d[i].name, name)) {
      *out = &al->d[i];
      memset(*out, 0, sizeof **out);
      (*out)->name = name;
      return NULL;
    }
  if (al->n == sizeof al->d / sizeof al->d[0])
    return no_room();
  *out = &al->d[al->n++];
  memset(*out, 0, sizeof **out);
  (*out)->name = name;
  return NULL;
}

kiln_status onnx_attrs_set_int(onnx_attr_list *al, const char *name, int64_t v) {
  kiln_attr_desc *d = NULL;
  KILN_TRY(slot(al, name, &d));
  d->kind = KILN_ATTR_INT;
  d->i = v;
  return NULL;
}

kiln_status onnx_attrs_set_float(onnx_attr_list *al, const char *name, double v) {
  kiln_attr_desc *d = NULL;
  KILN_TRY(slot(al, name, &d));
  d->kind = KILN_ATTR_FLOAT;
  d->f = v;
  return NULL;
}

kiln_status onnx_attrs_set_type(onnx_attr_list *al, const char *name, kiln_elem e) {
  kiln_attr_desc *d = NULL;
  KILN_TRY(slot(al, name, &d));
  d->kind = KILN_ATTR_TYPE;
  d->type = e;
  return NULL;
}

kiln_status onnx_attrs_set_ints(onnx_attr_list *al, const char *name, const int64_t *v,
                                uint32_t len) {
  int64_t *copy = malloc(len ? len * sizeof *copy : 1);
  KILN_TRY(keep(al, copy));
  if (len)
    memcpy(copy, v, len * sizeof *copy);
  kiln_attr_desc *d = NULL;
  KILN_TRY(slot(al, name, &d));
  d->kind = KILN_ATTR_INTS;
  d->ints = copy;
  d->len = len;
  return NULL;
}

kiln_status onnx_attrs_set_floats(onnx_attr_list *al, const char *name, const double *v,
                                  uint32_t len) {
  double *copy = malloc(len ? len * sizeof *copy : 1);
  KILN_TRY(keep(al, copy));
  if (len)
    memcpy(copy, v, len * sizeof *copy);
  kiln_attr_desc *d = NULL;
  KILN_TRY(slot(al, name, &d));
  d->kind = KILN_ATTR_FLOATS;
  d->floats = copy;
  d->len = len;
  return NULL;
}

static kiln_status set_string(onnx_attr_list *al, const char *name, const uint8_t *s, size_t len) {
  char *copy = malloc(len + 1);
  KILN_TRY(keep(al, copy));
  if (len)
    memcpy(copy, s, len);
  copy[len] = '\0';
  kiln_attr_desc *d = NULL;
  KILN_TRY(slot(al, name, &d));
  d->kind = KILN_ATTR_STRING;
  d->s = copy;
  return NULL;
}

kiln_status onnx_attrs_set_string(onnx_attr_list *al, const char *name, const char *v) {
  return set_string(al, name, (const uint8_t *)v, strlen(v));
}

void onnx_attrs_remove(onnx_attr_list *al, const char *name) {
  for (uint32_t i = 0; i < al->n; i++)
    if (!strcmp(al->d[i].name, name)) {
      memmove(&al->d[i], &al->d[i + 1], (al->n - i - 1) * sizeof al->d[0]);
      al->n--;
      return;
    }
}

bool onnx_attrs_has(const onnx_attr_list *al, const char *name) {
  for (uint32_t i = 0; i < al->n; i++)
    if (!strcmp(al->d[i].name, name))
      return true;
  return false;
}

void onnx_attrs_free(onnx_attr_list *al) {
  for (uint32_t i = 0; i < al->n_owned; i++)
    free(al->owned[i]);
  al->n_owned = 0;
  al->n = 0;
}

static bool skipped(const char *name, const char *const *skip) {
  for (; skip && *skip; skip++)
    if (!strcmp(*skip, name))
      return true;
  return false;
}

/* Older writers leave `type` unset: infer it from the field that is set. */
static int attr_type(const Onnx__AttributeProto *a) {
  if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
    return a->type;
  if (a->n_floats)
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
  if (a->n_ints)
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  if (a->n_strings)
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  if (a->has_f)
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  if (a->has_i)
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  if (a->has_s)
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  if (a->t)
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
  if (a->g)
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

kiln_status onnx_attrs_from_node(onnx_loader *L, const Onnx__NodeProto *n, const char *const *skip,
                                 onnx_attr_list *al) {
  (void)L;
  static const char *const legacy[] = {"consumed_inputs", NULL};
  for (size_t i = 0; i < n->n_attribute; i++) {
    const Onnx__AttributeProto *a = n->attribute[i];
    if (!a->name || !*a->name)
      return kiln_status_make(KILN_PARSE_ERROR, "node %s: attribute %zu has no name",
                              onnx_node_desc(n), i);
    if (skipped(a->name, skip) || skipped(a->name, legacy))
      continue;
    if (a->ref_attr_name && *a->ref_attr_name)
      return kiln_status_make(KILN_UNIMPLEMENTED,
                              "node %s: attribute '%s' refers to a function attribute",
                              onnx_node_desc(n), a->name);
    switch (attr_type(a)) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
      KILN_TRY(onnx_attrs_set_float(al, a->name, a->f));
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
      KILN_TRY(onnx_attrs_set_int(al, a->name, a->i));
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
      KILN_TRY(set_string(al, a->name, a->s.data, a->s.len));
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
      if (a->n_ints > UINT32_MAX)
        return kiln_status_make(KILN_OUT_OF_RANGE, "node %s: attribute '%s' too long",
                                onnx_node_desc(n), a->name);
      KILN_TRY(onnx_attrs_set_ints(al, a->name, a->ints, (uint32_t)a->n_ints));
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
      if (a->n_floats > UINT32_MAX)
        return kiln_status_make(KILN_OUT_OF_RANGE, "node %s: attribute '%s' too long",
                                onnx_node_desc(n), a->name);
      double *tmp = malloc(a->n_floats ? a->n_floats * sizeof *tmp : 1);
      if (!tmp)
        return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
      for (size_t k = 0; k < a->n_floats; k++)
        tmp[k] = a->floats[k];
      kiln_status s = onnx_attrs_set_floats(al, a->name, tmp, (uint32_t)a->n_floats);
      free(tmp);
      KILN_TRY(s);
      break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
      /* kiln has no string-list attribute: join with ','. */
      size_t total = 1;
      for (size_t k = 0; k < a->n_strings; k++)
        total += a->strings[k].len + 1;
      uint8_t *buf = malloc(total);
      if (!buf)
        return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
      size_t at = 0;
      for (size_t k = 0; k < a->n_strings; k++) {
        if (k)
          buf[at++] = ',';
        if (a->strings[k].len)
          memcpy(buf + at, a->strings[k].data, a->strings[k].len);
        at += a->strings[k].len;
      }
      kiln_status s = set_string(al, a->name, buf, at);
      free(buf);
      KILN_TRY(s);
      break;
    }
    default:
      return kiln_status_make(KILN_UNIMPLEMENTED,
                              "node %s: attribute '%s' has a kind kiln does not support here "
                              "(tensor, graph, sparse tensor or type)",
                              onnx_node_desc(n), a->name);
    }
  }
  return NULL;
}
