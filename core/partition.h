/* core/partition.h: placing one function's nodes on several backends
 * (`--backend A+B+...`) and running the regions that result (private to
 * core/; docs/partitioning.md is the user's view).
 *
 * The plan is made on a function that has been through the graph passes
 * that come before lowering; each region then becomes a function of its
 * own, compiled by the ordinary single-backend pipeline for its backend
 * and device. */
#ifndef KILN_CORE_PARTITION_H
#define KILN_CORE_PARTITION_H

#include "kiln/kiln.h"

/* One entry of a backend list, as written ("opencl:1"). */
typedef struct kiln_part_entry {
  const kiln_plugin *plugin; /* borrowed */
  char label[96];            /* the entry as written: NAME or NAME:DEVICE */
  int32_t device;            /* -1 = the plugin's default */
  uint64_t mem_cap;          /* bytes the device may hold; 0 = no limit */
} kiln_part_entry;

/* The most entries one list may have (bit masks of entries are 32 wide). */
#define KILN_PART_MAX_ENTRIES 16

/* Parse "A+B:1+C" against the loaded backends (ctx) into entries[], checking
 * names and device indexes, and apply the caps of device_memory
 * ("NAME=BYTES,...", NULL = none) over what each device reports. */
KILN_NODISCARD kiln_status kiln_part_parse(const kiln_context *ctx, const char *list,
                                           const char *device_memory, kiln_part_entry *entries,
                                           uint32_t *count);

/* A region: nodes of one entry, in the function's order. */
typedef struct kiln_part_region {
  uint32_t entry;
  uint32_t *nodes; /* indexes into the function's node list */
  uint32_t node_count, node_cap;
  uint64_t *deps; /* bit set of the regions this one depends on, transitively */
  uint64_t weight_bytes, activation_bytes;
} kiln_part_region;

typedef struct kiln_part_plan {
  uint32_t node_count;
  uint32_t *node_entry;  /* per node: the entry it was placed on */
  uint32_t *node_region; /* per node: its region */
  bool *node_lowered;    /* placed on an entry that runs it only after lowering */
  kiln_part_region *regions; /* in an order where each region's inputs come first */
  uint32_t region_count, region_cap;
  uint32_t dep_words;
} kiln_part_plan;

/* Place f's nodes on the entries and form regions (docs/partitioning.md:
 * priority, lowering, the cost hook, memory limits, acyclic regions).
 * KILN_PARTITION_SEED=N in the environment places every node on a random
 * entry among those that can run it (for tests). Caller frees *out with
 * kiln_part_plan_free. */
KILN_NODISCARD kiln_status kiln_part_plan_make(const kiln_function *f,
                                               const kiln_part_entry *entries, uint32_t count,
                                               kiln_part_plan **out);
void kiln_part_plan_free(kiln_part_plan *p);

/* Compile function `function` of m across the list `backends` into *exe
 * (whose core fields the caller has set: ctx). Called by kiln_compile when
 * the backend string names more than one entry; a plan with one region
 * compiles as that entry alone. */
typedef struct kiln_part_exe kiln_part_exe;
KILN_NODISCARD kiln_status kiln_part_compile(kiln_context *ctx, const kiln_module *m,
                                             kiln_module *owned, const char *function,
                                             const char *backends,
                                             const kiln_compile_options *opts,
                                             kiln_executable **out);
KILN_NODISCARD kiln_status kiln_part_run(kiln_executable *exe, const void *const *inputs,
                                         void *const *outputs);
void kiln_part_exe_destroy(kiln_part_exe *px);

#endif
