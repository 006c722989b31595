/* tools/commands.h: the subcommands of the kiln tool and the small helpers
 * they share (option parsing, error reporting, model loading). Each
 * kiln_cmd_NAME receives argv starting at the subcommand's name and returns
 * the process exit code: 0 ok, 1 failure, 2 usage error. */
#ifndef KILN_TOOLS_COMMANDS_H
#define KILN_TOOLS_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include "kiln/kiln.h"

#define KILN_EXIT_OK 0
#define KILN_EXIT_FAIL 1
#define KILN_EXIT_USAGE 2

int kiln_cmd_dump(int argc, char **argv);
int kiln_cmd_backends(int argc, char **argv);
int kiln_cmd_compile(int argc, char **argv);
int kiln_cmd_run(int argc, char **argv);
int kiln_cmd_conformance(int argc, char **argv); /* tools/conformance.c */
int kiln_cmd_opt(int argc, char **argv);         /* tools/cmd_opt.c */
int kiln_cmd_profile(int argc, char **argv);     /* tools/cmd_quantize.c */
int kiln_cmd_quantize(int argc, char **argv);    /* tools/cmd_quantize.c */

/* --- helpers (tools/util.c) --- */

/* Print "kiln CMD: MESSAGE" and "see kiln CMD --help" to stderr; returns
 * KILN_EXIT_USAGE. */
int tool_usage_error(const char *cmd, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Print "kiln: MESSAGE" for a failed status, free it; returns KILN_EXIT_FAIL. */
int tool_fail(kiln_status s);
/* Match argv[*i] against option `name` taking a value ("--name V" or
 * "--name=V"). Returns 1 and sets *value (advancing *i past a separate
 * value), 0 when argv[*i] is another option, -1 when the value is missing. */
int tool_opt_value(int argc, char **argv, int *i, const char *name, const char **value);
/* Parse a non-negative integer; false if not one. */
bool tool_parse_u64(const char *s, uint64_t *out);
bool tool_parse_i64(const char *s, int64_t *out);

/* --dim NAME=VALUE collection for ONNX models. */
typedef struct tool_dims {
  const char *names[64];
  int64_t values[64];
  uint32_t count;
} tool_dims;
/* Add one "NAME=VALUE"; false with a usage error message on bad text. */
bool tool_dims_add(tool_dims *d, const char *cmd, const char *text);

/* Load a .kir file, or a .onnx file (by extension) with the given symbolic
 * dimensions and ctx for compile-time evaluation; then verify it. */
kiln_status tool_load_module(const char *path, const tool_dims *dims, kiln_context *ctx,
                             kiln_module **out);

/* Options shared by compile, run and dump --dot: --backend, --function,
 * --threads, --cpu, --cpu-features, --device, --device-memory, --dim,
 * --no-cache. */
typedef struct tool_compile_args {
  const char *backend, *function;
  kiln_compile_options opts;
  tool_dims dims;
} tool_compile_args;
void tool_compile_args_init(tool_compile_args *a);
/* Try argv[*i] as one of those options: 1 = consumed, 0 = not one of
 * them, KILN_EXIT_USAGE = bad value (message printed). */
int tool_compile_arg(const char *cmd, int argc, char **argv, int *i, tool_compile_args *a);
/* Help lines for those options. */
extern const char tool_compile_args_help[];

/* Whether exe was compiled from a backend list into regions of their own
 * (docs/partitioning.md); such an executable has no instruction IR of its
 * own (kiln_executable_ir is NULL), its regions' executables have. */
bool tool_exe_partitioned(const kiln_executable *exe);
/* "a, b, c and 4 more": the first `max` node names of a region. */
void tool_region_names(const kiln_region_info *r, uint32_t max, char *buf, size_t size);

/* Fill t with a tensor of `type` (t->data malloc'd; kiln_tensor_free)
 * from the seeded generator *state (splitmix64, the same on every
 * machine): floats uniform in [-1, 1), integers and bools 0 or 1, so that
 * index, token and mask inputs stay in range whatever they index. name is
 * for the out-of-memory message. */
kiln_status tool_random_tensor(const char *name, const kiln_type *type, uint64_t *state,
                               kiln_tensor *t);

/* Write s (NULL = "") as a JSON string, quotes and control characters
 * escaped. */
void tool_json_string(FILE *f, const char *s);

/* Milliseconds from a monotonic clock. */
double tool_now_ms(void);
/* Peak resident set size of this process in bytes. */
uint64_t tool_peak_rss_bytes(void);

#endif
