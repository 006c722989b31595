/* core/probe_nodes.c: the probe nodes (core/probe.h). Support is declared
 * per node, not per kind, so a kind is probed on a handful of input shapes
 * and types, plus the attributes a few kinds cannot be built without. Uses
 * the public API only: tests/backends compiles this file too. */
#include <stdio.h>
#include <string.h>

#include "probe.h"

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

#define PROBE_CONFIGS ((uint32_t)(sizeof probe_configs / sizeof *probe_configs))

uint32_t kiln_probe_config_count(kiln_node_kind k) {
  const kiln_node_kind_info *info = kiln_node_kind_get_info(k);
  if (!info)
    return 0;
  return info->min_inputs == 0 ? 1 : PROBE_CONFIGS;
}

void kiln_probe_describe(uint32_t c, char *buf, size_t n) {
  if (c >= PROBE_CONFIGS) {
    snprintf(buf, n, "?");
    return;
  }
  char a[64] = "?", b[64] = "?";
  kiln_type t;
  const probe_config *pc = &probe_configs[c];
  kiln_status s = kiln_type_make(pc->first.elem, pc->first.rank, pc->first.dims, &t);
  if (!s)
    kiln_type_format(&t, a, sizeof a);
  kiln_status_free(s);
  s = kiln_type_make(pc->rest.elem, pc->rest.rank, pc->rest.dims, &t);
  if (!s)
    kiln_type_format(&t, b, sizeof b);
  kiln_status_free(s);
  snprintf(buf, n, "%s, rest %s", a, b);
}

kiln_status kiln_probe_build(kiln_node_kind k, uint32_t c, kiln_module **out_m,
                             kiln_node **out_node) {
  *out_m = NULL;
  *out_node = NULL;
  const kiln_node_kind_info *info = kiln_node_kind_get_info(k);
  if (!info || c >= PROBE_CONFIGS)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "probe: no kind %d or configuration %u", (int)k,
                            c);
  kiln_module *m = NULL;
  KILN_TRY(kiln_module_create(NULL, "probe", &m));
  kiln_function *f = NULL;
  kiln_value *in[16] = {0};
  uint32_t n = info->min_inputs < 16 ? info->min_inputs : 16;
  kiln_status s = kiln_module_add_function(m, "main", &f);
  const probe_config *pc = &probe_configs[c];
  for (uint32_t i = 0; i < n && !s; i++) {
    const probe_input *pi = i == 0 ? &pc->first : &pc->rest;
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
  for (uint32_t i = 0; !s && i < kiln_node_result_count(node); i++) {
    char name[16];
    snprintf(name, sizeof name, "y%u", i);
    s = kiln_function_add_output(f, name, kiln_node_result(node, i));
  }
  if (s) {
    kiln_module_destroy(m);
    return s;
  }
  *out_m = m;
  *out_node = node;
  return NULL;
}
