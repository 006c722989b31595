/* ir/kinds.c: the node kind table (from node_kinds.def) and name lookup. */
#include <string.h>

#include "kiln/ir.h"

static const kiln_node_kind_info kind_table[KILN_NODE_KIND_COUNT] = {
#define KILN_NODE(name, min_in, max_in, min_out, max_out, flags)                                   \
  {#name, min_in, max_in, min_out, max_out, flags},
#include "kiln/node_kinds.def"
#undef KILN_NODE
};

const kiln_node_kind_info *kiln_node_kind_get_info(kiln_node_kind k) {
  if ((int)k < 0 || k >= KILN_NODE_KIND_COUNT)
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
