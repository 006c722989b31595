/* tools/main.c: the kiln command line: dispatches `kiln CMD ...` to the
 * subcommand's function (one file per subcommand). */
#include <stdio.h>
#include <string.h>

#include "commands.h"

typedef struct tool_command {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
} tool_command;

static const tool_command tool_commands[] = {
    {"dump", kiln_cmd_dump, "print a model (.kir or .onnx) as text or Graphviz DOT"},
    {"backends", kiln_cmd_backends, "list the backends found, and the plugins refused and why"},
    {"compile", kiln_cmd_compile,
     "compile a model for a backend (or a list, A+B); report time, memory, sizes"},
    {"run", kiln_cmd_run, "compile and run a model on inputs from .npy / .pb files"},
    {"profile", kiln_cmd_profile, "record the range of every float value on calibration inputs"},
    {"quantize", kiln_cmd_quantize,
     "quantize a model to int8 (QDQ), measure what it cost, fall back where needed"},
#ifdef KILN_HAVE_OPT
    {"opt", kiln_cmd_opt, "run a pass pipeline on a model and print the result"},
#endif
#ifdef KILN_HAVE_CONFORMANCE
    {"conformance", kiln_cmd_conformance,
     "run ONNX conformance cases, or generated graphs (--generate), on backends"},
#endif
};

#define TOOL_NCOMMANDS (sizeof tool_commands / sizeof *tool_commands)

static void tool_help(FILE *out) {
  fprintf(out, "usage: kiln COMMAND [OPTIONS]\n\ncommands:\n");
  for (size_t i = 0; i < TOOL_NCOMMANDS; i++)
    fprintf(out, "  %-12s %s\n", tool_commands[i].name, tool_commands[i].summary);
  fprintf(out, "\n`kiln COMMAND --help` explains each command's options.\n"
               "Exit codes: 0 success, 1 failure, 2 usage error.\n"
               "Plugins are searched in the build tree, the install folder and\n"
               "KILN_PLUGIN_PATH (colon-separated); KILN_PLUGIN_PATH_ONLY=1 searches\n"
               "only KILN_PLUGIN_PATH. KILN_LOG_LEVEL=debug|info|warn|error sets plugin\n"
               "logging.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    tool_help(stderr);
    return KILN_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    tool_help(stdout);
    return KILN_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("kiln (plugin ABI %d.%d)\n", KILN_PLUGIN_ABI_MAJOR, KILN_PLUGIN_ABI_MINOR);
    return KILN_EXIT_OK;
  }
  for (size_t i = 0; i < TOOL_NCOMMANDS; i++)
    if (strcmp(cmd, tool_commands[i].name) == 0)
      return tool_commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "kiln: unknown command '%s'\nsee kiln --help\n", cmd);
  return KILN_EXIT_USAGE;
}
