/* core/compile.c: the compile driver, kiln_compile. Runs the pipeline of
 * DESIGN.md on a private copy of the module: verify, (passes and lowering,
 * once passes/ provides them), the support check against the backend,
 * IRGen, IR verification, and the plugin's compile; then wraps the result
 * in a kiln_executable. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "context.h"
#include "partition.h"
#include "kiln/passes.h"

/* The default pipelines. Graph: clean up, turn QDQ chains into the
 * integer kinds the backend runs (before fold, which would turn the
 * DequantizeLinear of a constant weight into float data and hide the
 * pattern), fold constants (ONNX shape arithmetic), fold batch norms,
 * rebuild the norms and activations that exporters write out (where the
 * backend runs them), lower what the backend does not run,
 * clean up what lowering made, fold bias adds into the MatMuls before them,
 * fuse activations into their producers, move convolution regions into the
 * channel-blocked layout (where the backend declares it), and fuse
 * elementwise trees into single nodes where the backend declares it. Instructions: copy
 * elimination, in-place reuse, concat elimination (after in-place reuse, so
 * an input computed in place in another buffer is still written in place
 * into the Concat's result), lifetime shrinking, then the static plan. */
#define KILN_GRAPH_PIPELINE                                                                        \
  "dce,cse,fuseqdq,fold*,simplify*,bnfold,convtrim,dce,recognize,fuseattn,dce,lower,fold*,simplify*,cse,dce,fusebias,fuseact,layout,cse,dce,fuse,dce"
#define KILN_INSTR_PIPELINE "copyelim,inplace,concatelim,shrink,plan"

/* "f32[1,3,8,8], f32[4,3,3,3]": the input types of a node, for messages. */
static void compile_format_inputs(const kiln_node *n, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < kiln_node_input_count(n) && used + 1 < size; i++) {
    const kiln_value *v = kiln_node_input(n, i);
    char t[160];
    if (v)
      kiln_type_format(kiln_value_type(v), t, sizeof t);
    else
      snprintf(t, sizeof t, "_");
    int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", t);
    if (w < 0)
      break;
    used += (size_t)w;
  }
}

/* kiln/plugin.h: the contract of each minor is what it declared then. */
bool kiln_plugin_supports(const kiln_plugin *p, const kiln_node *n) {
  if (p->abi_minor < 7 && kiln_node_get_kind(n) == KILN_NODE_BlockedConv) {
    int64_t g = kiln_attrs_int_or(kiln_node_attrs(n), "group", 1);
    const kiln_type *w = kiln_value_type(kiln_node_input(n, 1));
    if (g != 1 && !(w && w->rank == 4 && w->dims[1] == 1 && w->dims[0] == g))
      return false;
  }
  if (p->abi_minor < 8 && kiln_node_get_kind(n) == KILN_NODE_ScaledDotProductAttention) {
    const kiln_attrs *a = kiln_node_attrs(n);
    if (kiln_attrs_find(a, "q_gather") || kiln_attrs_find(a, "k_gather") ||
        kiln_attrs_find(a, "v_gather"))
      return false;
  }
  return p->supports_node(p->state, n);
}

bool kiln_core_node_is_quantized(const kiln_node *n) {
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
    const kiln_value *v = kiln_node_input(n, i);
    if (v && kiln_value_type(v)->quantized)
      return true;
  }
  for (uint32_t i = 0; i < kiln_node_result_count(n); i++)
    if (kiln_value_type(kiln_node_result(n, i))->quantized)
      return true;
  return false;
}

/* Every node must be declared by the backend: lowering (when it lands)
 * runs before this, so what is left here has no way to run. */
static kiln_status compile_check_support(const kiln_plugin *p, const kiln_function *f) {
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++) {
    const kiln_node *n = kiln_function_node(f, i);
    bool quant = kiln_core_node_is_quantized(n);
    bool ok = kiln_plugin_supports(p, n);
    if (ok && quant)
      ok = KILN_PLUGIN_HOOK(p, supports_quantized) && p->supports_quantized(p->state, n);
    if (!ok) {
      char types[1024];
      compile_format_inputs(n, types, sizeof types);
      return kiln_status_make(KILN_UNIMPLEMENTED,
                              "backend '%s' does not run node '%s' (%s %s)%s and kiln has no "
                              "lowering for it yet",
                              p->name, kiln_node_name(n),
                              kiln_node_kind_name(kiln_node_get_kind(n)), types,
                              quant ? " on quantized types" : "");
    }
  }
  return NULL;
}

kiln_status kiln_core_pick_function(const kiln_module *m, const char *name, kiln_function **out) {
  uint32_t n = kiln_module_function_count(m);
  if (!name) {
    if (n == 0)
      return kiln_status_make(KILN_NOT_FOUND, "module '%s' has no function to compile",
                              kiln_module_name(m));
    *out = kiln_module_function(m, 0);
    return NULL;
  }
  *out = kiln_module_find_function(m, name);
  if (*out)
    return NULL;
  char list[512] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < n && used + 1 < sizeof list; i++) {
    int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                     kiln_function_name(kiln_module_function(m, i)));
    if (w < 0)
      break;
    used += (size_t)w;
  }
  return kiln_status_make(KILN_NOT_FOUND, "module '%s' has no function '%s' (it has: %s)",
                          kiln_module_name(m), name, n ? list : "none");
}

kiln_status kiln_core_no_backend(const kiln_context *ctx, const char *backend) {
  char list[512] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < ctx->backend_count && used + 1 < sizeof list; i++) {
    int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                     ctx->backends[i].desc.name);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  /* A refused plugin of that name is the likely story: say why. */
  char want[300];
  snprintf(want, sizeof want, "/kiln-%s.so", backend);
  for (uint32_t i = 0; i < ctx->refused_count; i++) {
    const char *p = ctx->refused[i].path;
    size_t lp = strlen(p), lw = strlen(want);
    if (lp >= lw && strcmp(p + lp - lw, want) == 0)
      return kiln_status_make(KILN_NOT_FOUND, "no backend '%s': %s was refused: %s (available: %s)",
                              backend, p, ctx->refused[i].reason, used ? list : "none");
  }
  return kiln_status_make(KILN_NOT_FOUND,
                          "no backend '%s' (available: %s; see `kiln backends` for where kiln "
                          "looks and what it refused)",
                          backend, used ? list : "none");
}

static kiln_status compile_io(kiln_executable *exe, const kiln_function *f) {
  const kiln_ir *ir = exe->ir;
  exe->input_count = kiln_ir_input_count(ir);
  exe->output_count = kiln_ir_output_count(ir);
  exe->inputs = calloc(exe->input_count ? exe->input_count : 1, sizeof *exe->inputs);
  exe->outputs = calloc(exe->output_count ? exe->output_count : 1, sizeof *exe->outputs);
  if (!exe->inputs || !exe->outputs)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory building executable io");
  /* Output buffers are indexed like the function's outputs, whose names
   * (not the names of the values bound to them) are what users see. */
  bool named_outputs = kiln_function_output_count(f) == exe->output_count;
  for (uint32_t i = 0; i < exe->input_count; i++) {
    const kiln_buffer *b = kiln_ir_input(ir, i);
    exe->inputs[i].type = *kiln_buffer_type(b);
    exe->inputs[i].name = kiln_core_strdup(kiln_buffer_name(b) ? kiln_buffer_name(b) : "");
    if (!exe->inputs[i].name)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory building executable io");
  }
  for (uint32_t i = 0; i < exe->output_count; i++) {
    const kiln_buffer *b = kiln_ir_output(ir, i);
    exe->outputs[i].type = *kiln_buffer_type(b);
    const char *name = named_outputs ? kiln_function_output_name(f, i) : kiln_buffer_name(b);
    exe->outputs[i].name = kiln_core_strdup(name ? name : "");
    if (!exe->outputs[i].name)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory building executable io");
  }
  return NULL;
}

uint64_t kiln_core_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The options a plugin sees: always a full struct, defaults where the
 * caller's (possibly older, smaller) struct says nothing. */
void kiln_core_compile_options(const kiln_compile_options *in, kiln_compile_options *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->device = -1;
  if (!in)
    return;
  size_t n = in->struct_size < sizeof *out ? in->struct_size : sizeof *out;
  if (n > sizeof out->struct_size)
    memcpy((char *)out + sizeof out->struct_size, (const char *)in + sizeof in->struct_size,
           n - sizeof in->struct_size);
}

static kiln_status compile_any(kiln_context *ctx, const kiln_module *m, kiln_module *owned,
                               const char *function, const char *backend,
                               const kiln_compile_options *opts, bool run_passes,
                               const char *bundle_dir, const char *bundle_name,
                               kiln_executable **out);

/* Create a folder and its parents (like mkdir -p). */
static kiln_status kiln_core_mkdirs(const char *dir) {
  char buf[4096];
  size_t n = strlen(dir);
  if (n >= sizeof buf)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "path too long: %s", dir);
  memcpy(buf, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == 0) {
      char c = buf[i];
      buf[i] = 0;
      if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return kiln_status_make(KILN_IO_ERROR, "cannot create folder '%s': %s", buf,
                                strerror(errno));
      buf[i] = c;
    }
  }
  return NULL;
}

/* Adapters from the pass options' callbacks to the plugin's hooks. */
static kiln_status compile_evaluate(void *user, const kiln_module *m, const kiln_value *v,
                                    kiln_tensor *out) {
  return kiln_evaluate_value((kiln_context *)user, m, v, out);
}
static bool compile_supports(void *user, const kiln_node *n) {
  return kiln_plugin_supports(user, n);
}
static bool compile_keep(void *user, const kiln_node *n) {
  const kiln_plugin *p = user;
  return p->keep_node(p->state, n);
}
static bool compile_fused(void *user, const kiln_node *n, kiln_node_kind act) {
  const kiln_plugin *p = user;
  return p->supports_fused(p->state, n, act);
}

/* owned: the module itself, taken over (m == owned); else m is cloned. The
 * copy shares m's constant data, so only the graph is copied. */
static kiln_status compile_steps(kiln_context *ctx, const kiln_module *m, kiln_module *owned,
                                 const char *function, const kiln_registry_backend *be,
                                 const kiln_compile_options *user_opts, bool run_passes,
                                 const char *bundle_dir, const char *bundle_name,
                                 kiln_executable *exe) {
  const kiln_plugin *p = &be->desc;
  if (owned)
    exe->module = owned;
  else
    KILN_TRY_CTX(kiln_module_clone(m, &exe->module), "copying module '%s'", kiln_module_name(m));
  kiln_module_set_release_constants(exe->module, true);
  kiln_function *f = NULL;
  KILN_TRY(kiln_core_pick_function(exe->module, function, &f));
  KILN_TRY_CTX(kiln_module_verify(exe->module), "verifying module '%s'", kiln_module_name(m));

  /* The graph pipeline: simplify, lower what the backend does not run,
   * simplify again. Skipped for the tiny all-constant modules that constant
   * folding itself compiles (kiln_evaluate_value), which would otherwise
   * fold forever. */
  uint64_t t0 = kiln_core_now_ns();
  if (run_passes) {
    kiln_pass_options po = kiln_pass_options_default();
    po.evaluate = compile_evaluate;
    po.evaluate_user = ctx;
    po.supports_node = compile_supports;
    po.keep_node = KILN_PLUGIN_HOOK(p, keep_node) ? compile_keep : NULL;
    po.supports_fused = KILN_PLUGIN_HOOK(p, supports_fused) ? compile_fused : NULL;
    po.backend_user = (void *)p;
    po.backend_name = p->name;
    po.verify = getenv("KILN_VERIFY_EACH_PASS") != NULL;
    po.fold_max_bytes = 64u << 20;
    kiln_pass_target t = {.module = exe->module, .function = kiln_function_name(f)};
    const char *pipe = getenv("KILN_PIPELINE");
    KILN_TRY(kiln_pass_run(&t, pipe ? pipe : KILN_GRAPH_PIPELINE, &po, NULL));
  }

  /* The backend's own graph rewrite (fusion, layout) comes after lowering;
   * its result is verified like any pass output. */
  if (KILN_PLUGIN_HOOK(p, rewrite_graph)) {
    KILN_TRY_CTX(p->rewrite_graph(p->state, f), "backend '%s' rewrite_graph", p->name);
    KILN_TRY_CTX(kiln_module_verify(exe->module),
                 "verifying module '%s' after backend '%s' "
                 "rewrote it",
                 kiln_module_name(m), p->name);
  }

  KILN_TRY(compile_check_support(p, f));
  uint64_t t1 = kiln_core_now_ns();
  exe->core_phases[0] = (kiln_profile_phase){"graph passes and lowering", t1 - t0};

  KILN_TRY_CTX(kiln_irgen(f, &exe->ir), "generating instructions for function '%s'",
               kiln_function_name(f));

  if (run_passes) {
    kiln_pass_options po = kiln_pass_options_default();
    po.verify = getenv("KILN_VERIFY_EACH_PASS") != NULL;
    kiln_pass_target t = {.module = exe->module, .function = kiln_function_name(f), .ir = exe->ir};
    KILN_TRY(kiln_pass_run(&t, KILN_INSTR_PIPELINE, &po, NULL));
    KILN_TRY(kiln_pass_validate_plan(exe->ir));
  }
  KILN_TRY_CTX(kiln_ir_verify(exe->ir), "verifying instructions of function '%s'",
               kiln_function_name(f));
  KILN_TRY(compile_io(exe, f));
  uint64_t t2 = kiln_core_now_ns();
  exe->core_phases[1] = (kiln_profile_phase){"instructions and memory plan", t2 - t1};
  /* From here on only the IR is used, which holds its own share of every
   * weight it reads and copies of everything else: the module copy (or the
   * module taken over) goes now, so that a weight the backend releases
   * once it has packed it is freed at once. */
  char fname[256];
  snprintf(fname, sizeof fname, "%s", kiln_function_name(f));
  kiln_module_destroy(exe->module);
  exe->module = NULL;
  f = NULL;
  m = NULL;

  kiln_compile_options opts;
  kiln_core_compile_options(user_opts, &opts);
  if (bundle_dir) {
    if (!KILN_PLUGIN_HOOK(p, emit_bundle)) {
      if (!KILN_PLUGIN_HAS(p, emit_bundle))
        return kiln_status_make(KILN_UNIMPLEMENTED,
                                "backend '%s' does not make bundles (it is built for plugin ABI "
                                "%u.%u, which has no emit_bundle hook)",
                                p->name, p->abi_major, p->abi_minor);
      return kiln_status_make(KILN_UNIMPLEMENTED, "backend '%s' does not make bundles", p->name);
    }
    KILN_TRY_CTX(kiln_core_mkdirs(bundle_dir), "creating bundle folder");
    KILN_TRY_CTX(p->emit_bundle(p->state, exe->ir, &opts, bundle_dir, bundle_name),
                 "backend '%s' writing bundle '%s' into '%s'", p->name, bundle_name, bundle_dir);
    return NULL;
  }
  exe->profiling = (opts.flags & KILN_COMPILE_PROFILE) != 0;
  void *pexe = NULL;
  kiln_status s = p->compile(p->state, exe->ir, &opts, &pexe);
  exe->core_phases[2] = (kiln_profile_phase){"backend compile", kiln_core_now_ns() - t2};
  if (s)
    return kiln_status_wrap(s, "backend '%s' failed to compile function '%s'", p->name, fname);
  if (!pexe)
    return kiln_status_make(KILN_INTERNAL,
                            "backend '%s' compile returned success but no executable", p->name);
  exe->plugin_exe = pexe;
  (void)ctx;
  return NULL;
}

kiln_status kiln_compile(kiln_context *ctx, const kiln_module *m, const char *function,
                         const char *backend, const kiln_compile_options *opts,
                         kiln_executable **out) {
  return kiln_core_compile(ctx, m, function, backend, opts, true, out);
}

kiln_status kiln_compile_bundle(kiln_context *ctx, const kiln_module *m, const char *function,
                                const char *backend, const kiln_compile_options *opts,
                                const char *dir, const char *name) {
  if (!dir || !name || !*name)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_compile_bundle: %s is missing",
                            !dir ? "dir" : "name");
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_'))
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "bundle name '%s': use letters, digits and '_' only (it names C "
                              "symbols)",
                              name);
  kiln_executable *exe = NULL;
  kiln_status s = compile_any(ctx, m, NULL, function, backend, opts, true, dir, name, &exe);
  kiln_executable_destroy(exe);
  return s;
}

kiln_status kiln_core_compile(kiln_context *ctx, const kiln_module *m, const char *function,
                              const char *backend, const kiln_compile_options *opts,
                              bool run_passes, kiln_executable **out) {
  return compile_any(ctx, m, NULL, function, backend, opts, run_passes, NULL, NULL, out);
}

kiln_status kiln_compile_take(kiln_context *ctx, kiln_module **m, const char *function,
                              const char *backend, const kiln_compile_options *opts,
                              kiln_executable **out) {
  kiln_module *mod = m ? *m : NULL;
  if (m)
    *m = NULL;
  if (!out || !ctx || !mod || !backend) {
    kiln_module_destroy(mod);
    if (out)
      *out = NULL;
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_compile_take: %s is NULL",
                            !out   ? "out"
                            : !ctx ? "ctx"
                            : !mod ? "module"
                                   : "backend");
  }
  return compile_any(ctx, mod, mod, function, backend, opts, true, NULL, NULL, out);
}

static kiln_status compile_any(kiln_context *ctx, const kiln_module *m, kiln_module *owned,
                               const char *function, const char *backend,
                               const kiln_compile_options *opts, bool run_passes,
                               const char *bundle_dir, const char *bundle_name,
                               kiln_executable **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_compile: out is NULL");
  *out = NULL;
  if (!ctx || !m || !backend)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_compile: %s is NULL",
                            !ctx ? "ctx"
                            : !m ? "module"
                                 : "backend");
  /* A list ("vendor+cpu"), a device ("opencl:1") or a memory limit:
   * partition.c places the nodes and, with several entries, compiles each
   * region for its own. */
  kiln_compile_options full;
  kiln_core_compile_options(opts, &full);
  if (strchr(backend, '+') || strchr(backend, ':') || (full.device_memory && *full.device_memory)) {
    if (bundle_dir) {
      kiln_module_destroy(owned);
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "a bundle is made by one backend, and '%s' names a list or a "
                              "device (give one backend name)",
                              backend);
    }
    (void)run_passes;
    return kiln_part_compile(ctx, m, owned, function, backend, opts, out);
  }
  const kiln_registry_backend *be = kiln_registry_find(ctx, backend);
  if (!be) {
    kiln_module_destroy(owned);
    return kiln_core_no_backend(ctx, backend);
  }
  kiln_executable *exe = calloc(1, sizeof *exe);
  if (!exe) {
    kiln_module_destroy(owned);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory creating an executable");
  }
  exe->ctx = ctx;
  exe->plugin = &be->desc;
  /* Messages name the module: keep its name past a taken module's end. */
  char name[256];
  snprintf(name, sizeof name, "%s", kiln_module_name(m));
  kiln_status s =
      compile_steps(ctx, m, owned, function, be, opts, run_passes, bundle_dir, bundle_name, exe);
  if (s) {
    kiln_executable_destroy(exe);
    return kiln_status_wrap(s, "compiling module '%s' for backend '%s'", name, backend);
  }
  *out = exe;
  return NULL;
}
