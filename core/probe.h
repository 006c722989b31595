/* core/probe.h: the probe nodes, small one-node modules per node kind that
 * ask a backend what it supports. `kiln backends` counts the kinds a
 * backend accepts on them (probe.c), and tests/backends compiles every
 * accepted probe, so that a support answer the emitter would refuse is
 * caught. Built on the public API alone (probe_nodes.c), so a test can
 * compile the same file. Not installed. */
#ifndef KILN_CORE_PROBE_H
#define KILN_CORE_PROBE_H

#include <stddef.h>

#include "kiln/ir.h"

/* How many input configurations kind k is probed with: one for kinds
 * without inputs (the configuration does not matter), else every one. */
uint32_t kiln_probe_config_count(kiln_node_kind k);

/* Builds the probe of kind k in configuration c: a module whose inputs
 * have the configuration's shapes and types, holding one node of kind k
 * (with the attributes a few kinds cannot be built without) whose results
 * are the function's outputs. Fails when inference refuses the node on
 * these inputs (then nothing is left to free). The caller destroys *out_m;
 * *out_node lives in it. */
KILN_NODISCARD kiln_status kiln_probe_build(kiln_node_kind k, uint32_t c, kiln_module **out_m,
                                            kiln_node **out_node);

/* "f32[2,2], rest f32[2,2]": configuration c's input types, for messages. */
void kiln_probe_describe(uint32_t c, char *buf, size_t n);

#endif
