/* core/probe.c: counts the node kinds a backend declares, for `kiln
 * backends`. Support is declared per node, not per kind, so the only
 * honest count is "kinds for which some small probe node was accepted":
 * for each kind we try a handful of input shapes and types (plus the
 * attributes a few kinds cannot be built without) and ask supports_node.
 * A kind no probe can be built for is not counted. */
#include <stdio.h>
#include <string.h>

#include "context.h"

typedef struct probe_input {
  kiln_elem elem;
  uint32_t rank;
  int64_t dims[4];
} probe_input;

/* One probe configuration: input 0, and the type of every other input. */
typedef struct probe_config {
  probe_input first, rest;
} probe_config;

static const probe_config probe_configs[] = {
    {{KILN_F32, 2, {2, 2}}, {KILN_F32, 2, {2, 2}}},
    {{KILN_F32, 4, {1, 2, 4, 4}}, {KILN_F32, 4, {1, 2, 4, 4}}},
    {{KILN_F32, 4, {1, 2, 4, 4}}, {KILN_F32, 1, {2}}},
    {{KILN_F32, 2, {2, 2}}, {KILN_I64, 1, {2}}},
    {{KILN_F32, 2, {2, 2}}, {KILN_F32, 0, {0}}},
    {{KILN_BOOL, 2, {2, 2}}, {KILN_BOOL, 2, {2, 2}}},
    {{KILN_BOOL, 2, {2, 2}}, {KILN_F32, 2, {2, 2}}},
    {{KILN_I64, 2, {2, 2}}, {KILN_I64, 2, {2, 2}}},
    {{KILN_U8, 2, {2, 2}}, {KILN_U8, 2, {2, 2}}},
    {{KILN_F32, 3, {1, 2, 2}}, {KILN_F32, 3, {1, 2, 2}}},
};

/* Attributes without which some kinds cannot be built at all. */
static uint32_t probe_attrs(kiln_node_kind k, kiln_attr_desc *a) {
  static const int64_t two[] = {2}, two2[] = {2, 2}, ones[] = {1, 1}, zero[] = {0}, one[] = {1},
                       pads[] = {0, 0, 0, 0};
  static const double fones[] = {1.0, 1.0};
  switch (k) {
  case KILN_NODE_Reshape:
    a[0] = KILN_ATTR_IS("shape", two2, 2);
    return 1;
  case KILN_NODE_Expand:
    a[0] = KILN_ATTR_IS("shape", two2, 2);
    return 1;
  case KILN_NODE_Tile:
    a[0] = KILN_ATTR_IS("repeats", ones, 2);
    return 1;
  case KILN_NODE_Slice:
    a[0] = KILN_ATTR_IS("ends", one, 1);
    a[1] = KILN_ATTR_IS("starts", zero, 1);
    return 2;
  case KILN_NODE_Pad:
    a[0] = KILN_ATTR_IS("pads", pads, 4);
    return 1;
  case KILN_NODE_Unsqueeze:
    a[0] = KILN_ATTR_IS("axes", zero, 1);
    return 1;
  case KILN_NODE_TopK:
    a[0] = KILN_ATTR_I("k", 1);
    return 1;
  case KILN_NODE_OneHot:
    a[0] = KILN_ATTR_I("depth", 2);
    return 1;
  case KILN_NODE_DepthToSpace:
  case KILN_NODE_SpaceToDepth:
    a[0] = KILN_ATTR_I("blocksize", 1);
    return 1;
  case KILN_NODE_Resize:
  case KILN_NODE_Upsample:
    a[0] = KILN_ATTR_FS("scales", fones, 2);
    return 1;
  case KILN_NODE_Einsum:
    a[0] = KILN_ATTR_S("equation", "ij->ij");
    return 1;
  case KILN_NODE_Cast:
    a[0] = KILN_ATTR_T("to", KILN_F32);
    return 1;
  case KILN_NODE_ConstantOfShape:
    a[0] = KILN_ATTR_IS("shape", two, 1);
    return 1;
  case KILN_NODE_Range:
    a[0] = KILN_ATTR_F("delta", 1.0);
    a[1] = KILN_ATTR_F("limit", 2.0);
    a[2] = KILN_ATTR_F("start", 0.0);
    return 3;
  default:
    return 0;
  }
}

/* Build one probe node of kind k with config c; ask the plugin. */
static bool probe_one(const kiln_plugin *p, kiln_node_kind k, const probe_config *c) {
  const kiln_node_kind_info *info = kiln_node_kind_get_info(k);
  if (!info)
    return false;
  kiln_module *m = NULL;
  kiln_status s = kiln_module_create(NULL, "probe", &m);
  if (s) {
    kiln_status_free(s);
    return false;
  }
  bool ok = false;
  kiln_function *f = NULL;
  kiln_value *in[16] = {0};
  uint32_t n = info->min_inputs < 16 ? info->min_inputs : 16;
  s = kiln_module_add_function(m, "main", &f);
  for (uint32_t i = 0; i < n && !s; i++) {
    const probe_input *pi = i == 0 ? &c->first : &c->rest;
    kiln_type t;
    char name[16];
    snprintf(name, sizeof name, "x%u", i);
    s = kiln_type_make(pi->elem, pi->rank, pi->dims, &t);
    if (!s)
      s = kiln_module_add_input(m, name, &t, &in[i]);
  }
  kiln_attr_desc attrs[4];
  uint32_t na = probe_attrs(k, attrs);
  kiln_node *node = NULL;
  if (!s)
    s = kiln_function_add_node(f, k, "probe", in, n, attrs, na, 0, &node);
  if (!s && node)
    ok = p->supports_node(p->state, node);
  kiln_status_free(s);
  kiln_module_destroy(m);
  return ok;
}

uint32_t kiln_registry_probe_kinds(const kiln_plugin *p) {
  uint32_t count = 0;
  for (int k = 0; k < (int)KILN_NODE_KIND_COUNT; k++) {
    const kiln_node_kind_info *info = kiln_node_kind_get_info((kiln_node_kind)k);
    /* Kinds without inputs do not depend on the config: try once. */
    size_t nc = info && info->min_inputs == 0 ? 1 : sizeof probe_configs / sizeof *probe_configs;
    for (size_t c = 0; c < nc; c++)
      if (probe_one(p, (kiln_node_kind)k, &probe_configs[c])) {
        count++;
        break;
      }
  }
  return count;
}
