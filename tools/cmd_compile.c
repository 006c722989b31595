/* tools/cmd_compile.c: `kiln compile FILE --backend NAME [...]`: compile a
 * model and report how long it took, the peak memory of the process and,
 * with --stats, the sizes of the result. Nothing is written. */
#include <stdio.h>
#include <string.h>

#include "tools/commands.h"

static void compile_help(void) {
  printf("usage: kiln compile FILE --backend NAME [--stats] [options]\n\n"
         "Compile FILE (.onnx by extension, otherwise .kir) for a backend and report\n"
         "the compile time (wall clock, loading excluded) and the peak resident memory\n"
         "of the process.\n\n"
         "  --stats               also print weight bytes, activation arena bytes and\n"
         "                        the instruction count of the compiled program\n"
         "%s"
         "  --help                this text\n",
         tool_compile_args_help);
}

int kiln_cmd_compile(int argc, char **argv) {
  const char *file = NULL;
  bool stats = false;
  tool_compile_args ca;
  tool_compile_args_init(&ca);
  for (int i = 1; i < argc; i++) {
    int r;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      compile_help();
      return KILN_EXIT_OK;
    } else if (strcmp(argv[i], "--stats") == 0) {
      stats = true;
    } else if ((r = tool_compile_arg("compile", argc, argv, &i, &ca)) != 0) {
      if (r != 1)
        return r;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return tool_usage_error("compile", "unknown option '%s'", argv[i]);
    } else if (!file) {
      file = argv[i];
    } else {
      return tool_usage_error("compile", "more than one FILE ('%s' and '%s')", file, argv[i]);
    }
  }
  if (!file)
    return tool_usage_error("compile", "missing FILE");
  if (!ca.backend)
    return tool_usage_error("compile", "missing --backend NAME");

  kiln_context *ctx = NULL;
  kiln_module *m = NULL;
  kiln_executable *exe = NULL;
  kiln_status s = kiln_context_create(&ctx);
  if (!s)
    s = tool_load_module(file, &ca.dims, ctx, &m);
  double t0 = tool_now_ms();
  if (!s)
    s = kiln_compile(ctx, m, ca.function, ca.backend, &ca.opts, &exe);
  double t1 = tool_now_ms();
  if (!s) {
    printf("compiled %s for %s in %.3f ms\n", file, ca.backend, t1 - t0);
    printf("peak RSS: %.1f MiB\n", (double)tool_peak_rss_bytes() / (1024.0 * 1024.0));
    if (stats) {
      const kiln_ir *ir = kiln_executable_ir(exe);
      printf("weights: %llu bytes\n", (unsigned long long)kiln_ir_weight_bytes(ir));
      printf("activation arena: %llu bytes\n", (unsigned long long)kiln_ir_activation_bytes(ir));
      printf("instructions: %u\n", kiln_ir_instr_count(ir));
      printf("inputs: %u, outputs: %u\n", kiln_executable_input_count(exe),
             kiln_executable_output_count(exe));
    }
  }
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  return s ? tool_fail(s) : KILN_EXIT_OK;
}
