/* passes/registry.h: the table of passes by name (private to passes/). */
#ifndef KILN_PASS_REGISTRY_H
#define KILN_PASS_REGISTRY_H

#include "kiln/passes.h"

typedef kiln_status (*kiln_pass_graph_fn)(kiln_function *f, const kiln_pass_options *o,
                                          uint32_t *changes);
typedef kiln_status (*kiln_pass_instr_fn)(kiln_ir *ir, const kiln_pass_options *o,
                                          uint32_t *changes);

typedef struct kiln_pass_entry {
  kiln_pass_info info;
  kiln_pass_graph_fn graph;
  kiln_pass_instr_fn instr;
} kiln_pass_entry;

/* NULL when no pass has that name. */
const kiln_pass_entry *kiln_pass_find(const char *name, size_t len);
/* Index in the table (for stats); -1 when e is not from the table. */
int kiln_pass_entry_index(const kiln_pass_entry *e);

#endif
