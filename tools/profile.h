/* tools/profile.h: the profile that `kiln run --profile` collects over its
 * runs, prints as a table and writes as a Chrome trace (tools/profile.c). */
#ifndef KILN_TOOLS_PROFILE_H
#define KILN_TOOLS_PROFILE_H

#include <stdio.h>

#include "kiln/kiln.h"

typedef struct tool_profile tool_profile;
/* For an executable compiled with KILN_COMPILE_PROFILE. Caller owns *out. */
kiln_status tool_profile_create(const kiln_executable *exe, tool_profile **out);
void tool_profile_destroy(tool_profile *p); /* NULL accepted */
/* Take the profile of the run that just ended. */
kiln_status tool_profile_add_run(tool_profile *p, kiln_executable *exe);
/* The table: compile phases (load_ms < 0: not shown), then per kind and per
 * instruction, slowest first. */
kiln_status tool_profile_print(FILE *f, tool_profile *p, double load_ms, const char *backend);
/* The last run and the compile phases as a Chrome trace-event file, written
 * to PATH.tmp and renamed. */
kiln_status tool_profile_write_json(const tool_profile *p, const char *path, const char *backend);
/* FLOPs of one execution of an instruction (0: not a counted kind) and the
 * bytes it moves (its results written, its distinct inputs read). */
double tool_profile_flops(const kiln_instr *in);
double tool_profile_bytes(const kiln_instr *in);

#endif
