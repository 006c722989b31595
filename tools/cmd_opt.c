/* tools/cmd_opt.c: `kiln opt`, running a pass pipeline on a model and
 * printing the result in the text form (the tool pass tests are made of). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "kiln/passes.h"
#include "commands.h"

int kiln_cmd_opt(int argc, char **argv);

static void help(FILE *out) {
  fprintf(out,
          "usage: kiln opt FILE --passes=LIST [options]\n"
          "\n"
          "Run passes on FILE (.kir text, or .onnx) and print the result as text.\n"
          "\n"
          "  --passes=LIST        comma-separated steps, run left to right. A step is\n"
          "                       NAME (once), NAME* (until no change, at most %d runs)\n"
          "                       or NAME*N (at most N runs). Instruction passes run\n"
          "                       after IRGen; the output is then the instruction IR.\n"
          "  --print-before=P     print the IR before every step of pass P (or 'all')\n"
          "  --print-after=P      print the IR after every step of pass P (or 'all')\n"
          "                       (both go to stderr)\n"
          "  --stop-after=N       stop after step N (1-based) and print what there is\n"
          "  --time-passes        print a table to stderr: pass, runs, changes, ms\n"
          "  --no-verify          do not run the verifier after each pass\n"
          "  --backend=NAME       lower and fuse for this backend's declared support (default:\n"
          "                       the primitive set); fold evaluates on the interpreter\n"
          "  --function=NAME      the function IRGen lowers (default: the first)\n"
          "  -o OUT               write the result to OUT instead of stdout\n"
          "  --help               this text\n"
          "\n"
          "Passes:\n",
          KILN_PASS_DEFAULT_CAP);
  for (uint32_t i = 0; i < kiln_pass_count(); i++) {
    const kiln_pass_info *p = kiln_pass_get_info(i);
    fprintf(out, "  %-10s %-6s %s\n", p->name, p->level == KILN_PASS_GRAPH ? "graph" : "instr",
            p->summary);
  }
}

typedef struct backend_ref {
  const kiln_plugin *plugin;
} backend_ref;

static bool supports(void *user, const kiln_node *n) {
  const backend_ref *b = user;
  return kiln_plugin_supports(b->plugin, n);
}
static bool keeps(void *user, const kiln_node *n) {
  const backend_ref *b = user;
  return b->plugin->keep_node && b->plugin->keep_node(b->plugin->state, n);
}
static bool fuses(void *user, const kiln_node *n, kiln_node_kind act) {
  const backend_ref *b = user;
  return b->plugin->supports_fused(b->plugin->state, n, act);
}
static kiln_status evaluate(void *user, const kiln_module *m, const kiln_value *v,
                            kiln_tensor *out) {
  return kiln_evaluate_value(user, m, v, out);
}

static int write_result(const kiln_pass_target *t, const char *out_path) {
  char *txt = NULL;
  kiln_status s = t->ir ? kiln_ir_print(t->ir, &txt) : kiln_module_print(t->module, &txt);
  if (s)
    return tool_fail(s);
  FILE *f = out_path ? fopen(out_path, "w") : stdout;
  int rc = KILN_EXIT_OK;
  if (!f) {
    fprintf(stderr, "kiln opt: cannot write '%s'\n", out_path);
    rc = KILN_EXIT_FAIL;
  } else {
    fputs(txt, f);
    if (out_path)
      fclose(f);
  }
  if (t->ir)
    kiln_free(txt);
  else
    kiln_module_free_string(t->module, txt);
  return rc;
}

int kiln_cmd_opt(int argc, char **argv) {
  const char *file = NULL, *passes = NULL, *out_path = NULL, *backend = NULL, *function = NULL,
             *v = NULL;
  kiln_pass_options o = kiln_pass_options_default();
  bool time_passes = false;
  for (int i = 1; i < argc; i++) {
    int r;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      help(stdout);
      return KILN_EXIT_OK;
    } else if ((r = tool_opt_value(argc, argv, &i, "--passes", &passes)) != 0) {
      if (r < 0)
        return tool_usage_error("opt", "--passes needs a list");
    } else if ((r = tool_opt_value(argc, argv, &i, "--print-before", &o.print_before)) != 0) {
      if (r < 0)
        return tool_usage_error("opt", "--print-before needs a pass name or 'all'");
    } else if ((r = tool_opt_value(argc, argv, &i, "--print-after", &o.print_after)) != 0) {
      if (r < 0)
        return tool_usage_error("opt", "--print-after needs a pass name or 'all'");
    } else if ((r = tool_opt_value(argc, argv, &i, "--stop-after", &v)) != 0) {
      uint64_t n;
      if (r < 0 || !tool_parse_u64(v, &n) || n == 0 || n > UINT32_MAX)
        return tool_usage_error("opt", "--stop-after needs a step number >= 1");
      o.stop_after = (uint32_t)n;
    } else if ((r = tool_opt_value(argc, argv, &i, "--backend", &backend)) != 0) {
      if (r < 0)
        return tool_usage_error("opt", "--backend needs a name");
    } else if ((r = tool_opt_value(argc, argv, &i, "--function", &function)) != 0) {
      if (r < 0)
        return tool_usage_error("opt", "--function needs a name");
    } else if (strcmp(argv[i], "-o") == 0) {
      if (i + 1 >= argc)
        return tool_usage_error("opt", "-o needs a file name");
      out_path = argv[++i];
    } else if (strcmp(argv[i], "--time-passes") == 0) {
      time_passes = true;
    } else if (strcmp(argv[i], "--no-verify") == 0) {
      o.verify = false;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return tool_usage_error("opt", "unknown option '%s'", argv[i]);
    } else if (!file) {
      file = argv[i];
    } else {
      return tool_usage_error("opt", "more than one input file ('%s' and '%s')", file, argv[i]);
    }
  }
  if (!file)
    return tool_usage_error("opt", "no input file");
  if (!passes)
    return tool_usage_error("opt", "no --passes given");
  kiln_status s = kiln_pass_parse_check(passes);
  if (s)
    return tool_fail(s);

  kiln_context *ctx = NULL;
  s = kiln_context_create(&ctx);
  if (s)
    return tool_fail(s);
  backend_ref ref = {NULL};
  if (backend) {
    ref.plugin = kiln_context_find_backend(ctx, backend);
    if (!ref.plugin) {
      kiln_context_destroy(ctx);
      /* A list is placed node by node at compile time; opt shows one
       * backend's view of the whole graph. */
      if (strchr(backend, '+') || strchr(backend, ':'))
        return tool_usage_error("opt", "--backend takes one backend name, not a list or a device "
                                       "('%s'); see where a list places each node with kiln dump "
                                       "--dot --backend %s",
                                backend, backend);
      return tool_fail(
          kiln_status_make(KILN_NOT_FOUND, "no backend named '%s' (see kiln backends)", backend));
    }
    o.supports_node = supports;
    o.keep_node = keeps;
    /* so that fuse, fuseact and fusebias show what they do for it */
    if (ref.plugin->supports_fused)
      o.supports_fused = fuses;
    o.backend_user = &ref;
    o.backend_name = backend;
  }
  if (kiln_context_find_backend(ctx, "interpreter")) {
    o.evaluate = evaluate;
    o.evaluate_user = ctx;
  }
  o.print_to = stderr;
  o.log = stderr;

  kiln_module *m = NULL;
  s = tool_load_module(file, NULL, ctx, &m);
  if (s) {
    kiln_context_destroy(ctx);
    return tool_fail(s);
  }
  kiln_pass_target t = {.module = m, .function = function, .ir = NULL};
  kiln_pass_report rep;
  s = kiln_pass_run(&t, passes, &o, &rep);
  int rc = KILN_EXIT_OK;
  if (time_passes)
    kiln_pass_report_print(&rep, stderr);
  if (s)
    rc = tool_fail(kiln_status_wrap(s, "kiln opt %s", file));
  else
    rc = write_result(&t, out_path);
  kiln_ir_destroy(t.ir);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  return rc;
}
