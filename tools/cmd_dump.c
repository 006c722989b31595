/* tools/cmd_dump.c: `kiln dump FILE [--dot]`: load a model (.kir text or
 * .onnx), verify it, and print it as text or as Graphviz DOT. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static void dump_help(void) {
  printf("usage: kiln dump FILE [--dot] [--dim NAME=VALUE]...\n\n"
         "Load FILE (.onnx by extension, otherwise the .kir text form), verify it\n"
         "and print it.\n\n"
         "  --dot              print Graphviz DOT instead of the text form\n"
         "                     (render with: kiln dump net.kir --dot | dot -Tsvg > net.svg)\n"
         "  --dim NAME=VALUE   give symbolic dimension NAME of an ONNX model a value\n"
         "                     (repeatable)\n"
         "  --help             this text\n");
}

int kiln_cmd_dump(int argc, char **argv) {
  const char *file = NULL;
  bool dot = false;
  tool_dims dims = {0};
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    int r;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      dump_help();
      return KILN_EXIT_OK;
    } else if (strcmp(argv[i], "--dot") == 0) {
      dot = true;
    } else if ((r = tool_opt_value(argc, argv, &i, "--dim", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("dump", "--dim needs NAME=VALUE");
      if (!tool_dims_add(&dims, "dump", v))
        return KILN_EXIT_USAGE;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return tool_usage_error("dump", "unknown option '%s'", argv[i]);
    } else if (!file) {
      file = argv[i];
    } else {
      return tool_usage_error("dump", "more than one FILE ('%s' and '%s')", file, argv[i]);
    }
  }
  if (!file)
    return tool_usage_error("dump", "missing FILE");

  kiln_context *ctx = NULL;
  kiln_module *m = NULL;
  kiln_status s = kiln_context_create(&ctx);
  if (!s)
    s = tool_load_module(file, &dims, ctx, &m);
  if (!s && dot) {
    s = kiln_module_write_dot(m, stdout);
  } else if (!s) {
    char *text = NULL;
    s = kiln_module_print(m, &text);
    if (!s) {
      fputs(text, stdout);
      kiln_module_free_string(m, text);
    }
  }
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  return s ? tool_fail(s) : KILN_EXIT_OK;
}
