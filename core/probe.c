/* core/probe.c: counts the node kinds a backend declares, for `kiln
 * backends`. Support is declared per node, not per kind, so the only
 * honest count is "kinds for which some probe node was accepted"
 * (probe_nodes.c builds them). A kind no probe can be built for is not
 * counted. */
#include "context.h"
#include "probe.h"

/* Whether the plugin accepts the probe of kind k in configuration c. */
static bool probe_one(const kiln_plugin *p, kiln_node_kind k, uint32_t c) {
  kiln_module *m = NULL;
  kiln_node *node = NULL;
  kiln_status s = kiln_probe_build(k, c, &m, &node);
  bool ok = !s && kiln_plugin_supports(p, node);
  kiln_status_free(s);
  kiln_module_destroy(m);
  return ok;
}

uint32_t kiln_registry_probe_kinds(const kiln_plugin *p) {
  uint32_t count = 0;
  for (int k = 0; k < (int)KILN_NODE_KIND_COUNT; k++) {
    uint32_t nc = kiln_probe_config_count((kiln_node_kind)k);
    for (uint32_t c = 0; c < nc; c++)
      if (probe_one(p, (kiln_node_kind)k, c)) {
        count++;
        break;
      }
  }
  return count;
}
