/* tools/cmd_compile.c: `kiln compile FILE --backend NAME [...]`: compile a
 * model and report how long it took, the peak memory of the process and,
 * with --stats, the sizes of the result. With --bundle DIR the backend
 * writes an ahead-of-time bundle there instead (docs/bundles.md). */
#include <kiln/passes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

static void compile_help(void) {
  printf("usage: kiln compile FILE --backend LIST [--stats] [options]\n\n"
         "Compile FILE (.onnx by extension, otherwise .kir) for a backend and report\n"
         "the compile time (wall clock, loading excluded) and the peak resident memory\n"
         "of the process.\n\n"
         "  --stats               also print weight bytes, activation arena bytes and\n"
         "                        the instruction count of the compiled program; for a\n"
         "                        backend list that splits the model, one row per region\n"
         "                        (placement, backend, device, level, nodes, sizes, bytes\n"
         "                        in and out) and the bytes crossing between regions\n"
         "  --bundle DIR          write an ahead-of-time bundle into DIR (created if\n"
         "                        missing): NAME.o, NAME.h, NAME.weights\n"
         "  --name NAME           the bundle's name, a C identifier (default: model)\n"
         "  --target TRIPLE       target triple of the bundle, e.g. aarch64-linux-gnu\n"
         "                        (default: host)\n"
         "  --weights-c           also write NAME_weights.c, the weights as a C array\n"
         "%s"
         "  --help                this text\n",
         tool_compile_args_help);
}

/* DIR/NAME.weights -> DIR/NAME_weights.c: `NAME_weights` (64-byte aligned)
 * and `NAME_weights_size`, so a bundle can be linked without a data file. */
static kiln_status compile_weights_c(const char *dir, const char *name) {
  char in_path[4096], out_path[4096];
  snprintf(in_path, sizeof in_path, "%s/%s.weights", dir, name);
  snprintf(out_path, sizeof out_path, "%s/%s_weights.c", dir, name);
  FILE *in = fopen(in_path, "rb");
  if (!in)
    return kiln_status_make(KILN_IO_ERROR, "%s: cannot open", in_path);
  FILE *out = fopen(out_path, "w");
  if (!out) {
    fclose(in);
    return kiln_status_make(KILN_IO_ERROR, "%s: cannot write", out_path);
  }
  fprintf(out, "/* %s_weights.c: the weights of bundle %s (from %s.weights). */\n", name, name,
          name);
  fprintf(out, "_Alignas(64) const unsigned char %s_weights[] = {", name);
  int c;
  unsigned long n = 0;
  while ((c = fgetc(in)) != EOF)
    fprintf(out, "%s%d", n++ % 24 ? "," : (n > 1 ? ",\n" : "\n"), c);
  if (n == 0)
    fprintf(out, "0");
  fprintf(out, "};\nconst unsigned long %s_weights_size = %lulu;\n", name, n);
  bool bad = ferror(in) || ferror(out);
  fclose(in);
  if (fclose(out) || bad)
    return kiln_status_make(KILN_IO_ERROR, "%s: writing failed", out_path);
  return NULL;
}

/* --stats of an executable of one backend: its instruction IR's sizes. */
static void compile_stats(const kiln_executable *exe) {
  const kiln_ir *ir = kiln_executable_ir(exe);
  printf("weights: %llu bytes\n", (unsigned long long)kiln_ir_weight_bytes(ir));
  uint64_t lower = 0;
  kiln_status ls = kiln_pass_plan_lower_bound(ir, &lower);
  if (ls) {
    printf("activation arena: %llu bytes (lower bound unknown: %s)\n",
           (unsigned long long)kiln_ir_activation_bytes(ir), kiln_status_message(ls));
    kiln_status_free(ls);
  } else {
    printf("activation arena: %llu bytes (memory plan peak; lower bound %llu bytes: the most "
           "activation bytes alive at once)\n",
           (unsigned long long)kiln_ir_activation_bytes(ir), (unsigned long long)lower);
  }
  printf("instructions: %u\n", kiln_ir_instr_count(ir));
  printf("inputs: %u, outputs: %u\n", kiln_executable_input_count(exe),
         kiln_executable_output_count(exe));
}

/* --stats of a partitioned executable: one row per region, then totals.
 * Its own IR is NULL; each region's executable has one. */
static kiln_status compile_region_stats(const kiln_executable *exe) {
  uint32_t n = kiln_executable_region_count(exe);
  int wp = 9, wb = 7; /* column widths: the longest placement and backend */
  for (uint32_t i = 0; i < n; i++) {
    kiln_region_info r = {.struct_size = sizeof r};
    KILN_TRY(kiln_executable_region(exe, i, &r));
    int lp = (int)strlen(r.placement), lb = (int)strlen(r.backend);
    wp = lp > wp ? lp : wp;
    wb = lb > wb ? lb : wb;
  }
  printf("regions: %u (backend list %s; levels run in order, the regions of one level on "
         "different entries side by side)\n",
         n, kiln_executable_backend(exe));
  printf("%6s  %-*s  %-*s  %6s  %5s  %5s  %6s  %10s  %13s  %9s  %9s  %s\n", "region", wp,
         "placement", wb, "backend", "device", "level", "nodes", "instrs", "weights B",
         "activations B", "bytes in", "bytes out", "nodes (first)");
  uint64_t weights = 0, acts = 0, in = 0, out = 0;
  for (uint32_t i = 0; i < n; i++) {
    kiln_region_info r = {.struct_size = sizeof r};
    KILN_TRY(kiln_executable_region(exe, i, &r));
    char dev[16], names[512], instrs[16] = "-";
    if (r.device < 0)
      snprintf(dev, sizeof dev, "-");
    else
      snprintf(dev, sizeof dev, "%d", (int)r.device);
    const kiln_ir *rir = r.exe ? kiln_executable_ir(r.exe) : NULL;
    if (rir)
      snprintf(instrs, sizeof instrs, "%u", kiln_ir_instr_count(rir));
    tool_region_names(&r, 4, names, sizeof names);
    printf("%6u  %-*s  %-*s  %6s  %5u  %5u  %6s  %10llu  %13llu  %9llu  %9llu  %s\n", i, wp,
           r.placement, wb, r.backend, dev, r.level, r.node_count, instrs,
           (unsigned long long)r.weight_bytes, (unsigned long long)r.activation_bytes,
           (unsigned long long)r.bytes_in, (unsigned long long)r.bytes_out, names);
    weights += r.weight_bytes;
    acts += r.activation_bytes;
    in += r.bytes_in;
    out += r.bytes_out;
  }
  printf("total: %u region%s, weights %llu bytes, activation arenas %llu bytes; per run %llu "
         "bytes cross between regions (read from another region's results, through host "
         "memory) and the regions hand on %llu bytes (to regions or outputs)\n",
         n, n == 1 ? "" : "s", (unsigned long long)weights, (unsigned long long)acts,
         (unsigned long long)in,
         (unsigned long long)out);
  printf("inputs: %u, outputs: %u\n", kiln_executable_input_count(exe),
         kiln_executable_output_count(exe));
  return NULL;
}

int kiln_cmd_compile(int argc, char **argv) {
  const char *file = NULL, *bundle = NULL, *name = NULL, *v = NULL;
  bool stats = false, weights_c = false;
  tool_compile_args ca;
  tool_compile_args_init(&ca);
  for (int i = 1; i < argc; i++) {
    int r;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      compile_help();
      return KILN_EXIT_OK;
    } else if (strcmp(argv[i], "--stats") == 0) {
      stats = true;
    } else if (strcmp(argv[i], "--weights-c") == 0) {
      weights_c = true;
    } else if ((r = tool_opt_value(argc, argv, &i, "--bundle", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("compile", "--bundle wants a folder");
      bundle = v;
    } else if ((r = tool_opt_value(argc, argv, &i, "--name", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("compile", "--name wants a C identifier");
      name = v;
    } else if ((r = tool_opt_value(argc, argv, &i, "--target", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("compile", "--target wants a target triple");
      ca.opts.target = v;
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
  if ((name || weights_c || ca.opts.target) && !bundle)
    return tool_usage_error("compile", "--name, --target and --weights-c need --bundle DIR");

  kiln_context *ctx = NULL;
  kiln_module *m = NULL;
  kiln_executable *exe = NULL;
  kiln_status s = kiln_context_create(&ctx);
  if (!s)
    s = tool_load_module(file, &ca.dims, ctx, &m);
  double t0 = tool_now_ms();
  if (!s && bundle) {
    const char *bname = name ? name : kiln_module_name(m);
    s = kiln_compile_bundle(ctx, m, ca.function, ca.backend, &ca.opts, bundle, bname);
    if (!s && weights_c)
      s = compile_weights_c(bundle, bname);
    if (!s)
      printf("wrote bundle %s/%s.{o,h,weights}%s in %.3f ms\n", bundle, bname,
             weights_c ? " and _weights.c" : "", tool_now_ms() - t0);
    kiln_module_destroy(m);
    kiln_context_destroy(ctx);
    return s ? tool_fail(s) : KILN_EXIT_OK;
  }
  /* The module is not needed after: handing it over lets the compile free
   * each weight it replaces or packs at once (kiln_compile_take). */
  if (!s)
    s = kiln_compile_take(ctx, &m, ca.function, ca.backend, &ca.opts, &exe);
  double t1 = tool_now_ms();
  if (!s) {
    printf("compiled %s for %s in %.3f ms\n", file, ca.backend, t1 - t0);
    /* A list whose nodes all landed on one entry: say which. */
    if (!tool_exe_partitioned(exe) && strcmp(kiln_executable_backend(exe), ca.backend) != 0)
      printf("placed: the whole function on %s (one region, no partition)\n",
             kiln_executable_backend(exe));
    printf("peak RSS: %.1f MiB\n", (double)tool_peak_rss_bytes() / (1024.0 * 1024.0));
    if (stats && tool_exe_partitioned(exe))
      s = compile_region_stats(exe);
    else if (stats)
      compile_stats(exe);
  }
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  return s ? tool_fail(s) : KILN_EXIT_OK;
}
