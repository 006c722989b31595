/* ir/kinds.c: the node kind tables (arity from node_kinds.def, what each
 * kind is from node_schema.def), name lookup, and the generic attribute
 * check the verifier runs on every node. */
#include <math.h>
#include <string.h>

#include "kiln/ir.h"

static const kiln_node_kind_info kind_table[KILN_NODE_KIND_COUNT] = {
#define KILN_NODE(name, min_in, max_in, min_out, max_out, flags)                                   \
  {#name, min_in, max_in, min_out, max_out, flags},
#include "kiln/node_kinds.def"
#undef KILN_NODE
};

typedef struct schema_row {
  kiln_node_family family;
  kiln_primitive primitive;
  uint32_t classes;
  bool inputs_list;
  const char *no_onnx;
} schema_row;

#define SCHEMA_INPUTS_NAMED false
#define SCHEMA_INPUTS_LIST true

/* Indexed by kind, so a row names its kind once and a second row for the
 * same kind is an override-init warning (an error under -Werror). */
static const schema_row schema_table[KILN_NODE_KIND_COUNT] = {
#define KILN_NODE_SCHEMA(name, family, primitive, classes, inputs, no_onnx)                        \
  [KILN_NODE_##name] = {KILN_FAMILY_##family, KILN_PRIMITIVE_##primitive, KILN_ELEM_CLASSES_##classes, \
                        SCHEMA_INPUTS_##inputs, no_onnx},
#include "kiln/node_schema.def"
#undef KILN_NODE_SCHEMA
};

/* With no duplicates, as many rows as kinds means every kind has one. */
_Static_assert(0
#define KILN_NODE_SCHEMA(name, family, primitive, classes, inputs, no_onnx) +1
#include "kiln/node_schema.def"
#undef KILN_NODE_SCHEMA
                   == KILN_NODE_KIND_COUNT,
               "node_schema.def needs exactly one row per row of node_kinds.def");

static const kiln_node_attr_schema attr_table[] = {
#define KILN_NODE_ATTR(name, attr, type, minimum, maximum)                                         \
  {KILN_NODE_##name, #attr, KILN_ATTR_##type, minimum, maximum},
#include "kiln/node_schema.def"
#undef KILN_NODE_ATTR
};

static const char *const family_names[KILN_FAMILY_COUNT] = {
    [KILN_FAMILY_ELEMENTWISE] = "elementwise", [KILN_FAMILY_REDUCE] = "reduce",
    [KILN_FAMILY_NORM] = "norm",               [KILN_FAMILY_LINALG] = "linalg",
    [KILN_FAMILY_CONV] = "conv",               [KILN_FAMILY_POOL] = "pool",
    [KILN_FAMILY_MOVEMENT] = "movement",       [KILN_FAMILY_INDEX] = "index",
    [KILN_FAMILY_GENERATOR] = "generator",     [KILN_FAMILY_RESIZE] = "resize",
    [KILN_FAMILY_RNN] = "rnn",                 [KILN_FAMILY_QUANT] = "quant",
    [KILN_FAMILY_LOSS] = "loss",
};

static bool kind_ok(kiln_node_kind k) {
  return (unsigned)k < KILN_NODE_KIND_COUNT;
}

const kiln_node_kind_info *kiln_node_kind_get_info(kiln_node_kind k) {
  if (!kind_ok(k))
    return NULL;
  return &kind_table[k];
}

const char *kiln_node_kind_name(kiln_node_kind k) {
  const kiln_node_kind_info *i = kiln_node_kind_get_info(k);
  return i ? i->name : "?";
}

bool kiln_node_kind_from_name(const char *name, kiln_node_kind *out) {
  if (!name)
    return false;
  for (int k = 0; k < KILN_NODE_KIND_COUNT; k++) {
    if (strcmp(kind_table[k].name, name) == 0) {
      if (out)
        *out = (kiln_node_kind)k;
      return true;
    }
  }
  return false;
}

kiln_node_family kiln_node_kind_family(kiln_node_kind k) {
  return kind_ok(k) ? schema_table[k].family : KILN_FAMILY_COUNT;
}

const char *kiln_node_family_name(kiln_node_family f) {
  return (unsigned)f < KILN_FAMILY_COUNT ? family_names[f] : "?";
}

const char *kiln_node_kind_family_name(kiln_node_kind k) {
  return kiln_node_family_name(kiln_node_kind_family(k));
}

kiln_primitive kiln_node_kind_primitive(kiln_node_kind k) {
  return kind_ok(k) ? schema_table[k].primitive : KILN_PRIMITIVE_NO;
}

bool kiln_node_kind_is_primitive(kiln_node_kind k) {
  return kiln_node_kind_primitive(k) != KILN_PRIMITIVE_NO;
}

uint32_t kiln_node_kind_elem_classes(kiln_node_kind k) {
  return kind_ok(k) ? schema_table[k].classes : 0;
}

uint32_t kiln_elem_class(kiln_elem e) {
  if (kiln_elem_is_float(e))
    return KILN_ELEM_CLASS_FLOAT;
  if (kiln_elem_is_signed_int(e))
    return KILN_ELEM_CLASS_SIGNED;
  if (kiln_elem_is_unsigned_int(e))
    return KILN_ELEM_CLASS_UNSIGNED;
  return e == KILN_BOOL ? KILN_ELEM_CLASS_BOOL : 0;
}

bool kiln_node_kind_inputs_are_list(kiln_node_kind k) {
  return kind_ok(k) && schema_table[k].inputs_list;
}

const char *kiln_node_kind_no_onnx_reason(kiln_node_kind k) {
  return kind_ok(k) ? schema_table[k].no_onnx : NULL;
}

uint32_t kiln_node_kind_attr_count(kiln_node_kind k) {
  uint32_t n = 0;
  for (size_t i = 0; i < sizeof attr_table / sizeof *attr_table; i++)
    n += attr_table[i].node_kind == k;
  return n;
}

const kiln_node_attr_schema *kiln_node_kind_attr_at(kiln_node_kind k, uint32_t i) {
  for (size_t r = 0; r < sizeof attr_table / sizeof *attr_table; r++)
    if (attr_table[r].node_kind == k && i-- == 0)
      return &attr_table[r];
  return NULL;
}

static const char *attr_kind_word(kiln_attr_kind k) {
  switch (k) {
  case KILN_ATTR_INT:
    return "an int";
  case KILN_ATTR_FLOAT:
    return "a float";
  case KILN_ATTR_STRING:
    return "a string";
  case KILN_ATTR_INTS:
    return "an int list";
  case KILN_ATTR_FLOATS:
    return "a float list";
  case KILN_ATTR_TYPE:
    return "an element type";
  }
  return "?";
}

static bool attr_kind_fits(kiln_attr_kind want, kiln_attr_kind got) {
  bool want_num = want == KILN_ATTR_INT || want == KILN_ATTR_FLOAT;
  bool got_num = got == KILN_ATTR_INT || got == KILN_ATTR_FLOAT;
  return want == got || (want_num && got_num);
}

kiln_status kiln_node_kind_check_attrs(kiln_node_kind k, const kiln_attrs *attrs) {
  for (uint32_t i = 0;; i++) {
    const kiln_node_attr_schema *row = kiln_node_kind_attr_at(k, i);
    if (!row)
      return NULL;
    const kiln_attr *a = kiln_attrs_find(attrs, row->name);
    if (!a)
      continue;
    kiln_attr_kind got = kiln_attr_get_kind(a);
    if (!attr_kind_fits(row->kind, got))
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: attribute '%s' is %s; the kind takes %s",
                              kiln_node_kind_name(k), row->name, attr_kind_word(got),
                              attr_kind_word(row->kind));
    if (row->kind != KILN_ATTR_INT && row->kind != KILN_ATTR_FLOAT)
      continue;
    double v = kiln_attr_float(a);
    if (!(v >= row->min && v <= row->max))
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "%s: attribute '%s' = %g is outside the allowed range [%g, %g]",
                              kiln_node_kind_name(k), row->name, v, row->min, row->max);
  }
}
