/* plugins/cpu/bundle.c: ahead-of-time bundles (the emit_bundle hook; see
 * docs/bundles.md). The same code generator as the JIT, with weights read
 * through a caller pointer instead of embedded, wrapped in three exported
 * functions (NAME_init, NAME_run, NAME_fini) and written as an object for
 * the chosen target, plus NAME.h (sizes, io table) and NAME.weights. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "kcpu_runtime.h"

/* NAME_init(i32 threads) -> i32, NAME_fini(), NAME_run(w, act, in, out)
 * -> i32 and NAME_run_fault(w, act, in, out, fault) -> i32: the pool lives
 * in a module global; NAME_run gives the entry a fault record on its own
 * stack, NAME_run_fault the caller's (zeroed here). */
static kiln_status bundle_wrappers(LLVMModuleRef mod, const char *name, const char *entry) {
  LLVMContextRef C = LLVMGetModuleContext(mod);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(C, 0), i32 = LLVMInt32TypeInContext(C);
  LLVMTypeRef vd = LLVMVoidTypeInContext(C);
  char buf[512];
  LLVMValueRef pool = LLVMAddGlobal(mod, ptr, "kcpu.bundle.pool");
  LLVMSetInitializer(pool, LLVMConstNull(ptr));
  LLVMSetLinkage(pool, LLVMInternalLinkage);
  LLVMValueRef create = LLVMGetNamedFunction(mod, "kcpu_pool_create");
  LLVMValueRef destroy = LLVMGetNamedFunction(mod, "kcpu_pool_destroy");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(C);

  snprintf(buf, sizeof buf, "%s_init", name);
  LLVMValueRef init = LLVMAddFunction(mod, buf, LLVMFunctionType(i32, &i32, 1, 0));
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(C, init, "entry"));
  if (create && !LLVMIsDeclaration(create)) {
    LLVMValueRef arg = LLVMGetParam(init, 0);
    LLVMValueRef p = LLVMBuildCall2(b, LLVMGlobalGetValueType(create), create, &arg, 1, "");
    LLVMBuildStore(b, p, pool);
  }
  LLVMBuildRet(b, LLVMConstInt(i32, 0, 0));

  snprintf(buf, sizeof buf, "%s_fini", name);
  LLVMValueRef fini = LLVMAddFunction(mod, buf, LLVMFunctionType(vd, NULL, 0, 0));
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(C, fini, "entry"));
  if (destroy && !LLVMIsDeclaration(destroy)) {
    LLVMValueRef p = LLVMBuildLoad2(b, ptr, pool, "");
    LLVMBuildCall2(b, LLVMGlobalGetValueType(destroy), destroy, &p, 1, "");
    LLVMBuildStore(b, LLVMConstNull(ptr), pool);
  }
  LLVMBuildRetVoid(b);

  LLVMValueRef ent = LLVMGetNamedFunction(mod, entry);
  LLVMTypeRef fault_t = LLVMArrayType2(LLVMInt64TypeInContext(C), sizeof(kcpu_fault) / 8);
  for (int checked = 0; checked < 2; checked++) {
    snprintf(buf, sizeof buf, checked ? "%s_run_fault" : "%s_run", name);
    LLVMTypeRef rp[5] = {ptr, ptr, ptr, ptr, ptr};
    LLVMValueRef run = LLVMAddFunction(mod, buf, LLVMFunctionType(i32, rp, 4 + checked, 0));
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(C, run, "entry"));
    LLVMValueRef fault = checked ? LLVMGetParam(run, 4) : LLVMBuildAlloca(b, fault_t, "fault");
    LLVMBuildStore(b, LLVMConstNull(fault_t), fault);
    LLVMValueRef args[6] = {LLVMGetParam(run, 0), LLVMGetParam(run, 1), LLVMGetParam(run, 2),
                            LLVMGetParam(run, 3), LLVMBuildLoad2(b, ptr, pool, ""),    fault};
    LLVMBuildRet(b, LLVMBuildCall2(b, LLVMGlobalGetValueType(ent), ent, args, 6, ""));
  }
  LLVMDisposeBuilder(b);
  return NULL;
}

static kiln_status bundle_open(const char *dir, const char *name, const char *ext, FILE **out,
                               char *path, size_t cap) {
  snprintf(path, cap, "%s/%s%s", dir, name, ext);
  *out = fopen(path, "wb");
  if (!*out)
    return kiln_status_make(KILN_IO_ERROR, "cpu bundle: cannot write %s: %s", path,
                            strerror(errno));
  return NULL;
}

static kiln_status bundle_weights(const kiln_ir *ir, const char *dir, const char *name,
                                  uint64_t *out_bytes) {
  uint32_t nb = kiln_ir_buffer_count(ir);
  uint64_t *offs = calloc(nb ? nb : 1, sizeof *offs);
  if (!offs)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "cpu bundle: no memory for the weight layout");
  uint64_t total = kcpu_weight_layout(ir, offs);
  *out_bytes = total;
  char path[4096];
  FILE *f;
  kiln_status s = bundle_open(dir, name, ".weights", &f, path, sizeof path);
  static const char zeros[64];
  uint64_t at = 0;
  for (uint32_t i = 0; !s && i < nb; i++) {
    const kiln_buffer *b = kiln_ir_buffer(ir, i);
    if (kiln_buffer_get_kind(b) != KILN_BUFFER_WEIGHT)
      continue;
    while (at < offs[i]) { /* alignment padding */
      uint64_t k = offs[i] - at > 64 ? 64 : offs[i] - at;
      fwrite(zeros, 1, (size_t)k, f);
      at += k;
    }
    int64_t bytes = kiln_type_bytes(kiln_buffer_type(b));
    if (bytes > 0 && kiln_buffer_data(b))
      fwrite(kiln_buffer_data(b), 1, (size_t)bytes, f);
    at += (uint64_t)(bytes > 0 ? bytes : 0);
  }
  while (!s && at < total) {
    uint64_t k = total - at > 64 ? 64 : total - at;
    fwrite(zeros, 1, (size_t)k, f);
    at += k;
  }
  if (!s && (ferror(f) | fclose(f)))
    s = kiln_status_make(KILN_IO_ERROR, "cpu bundle: writing %s failed", path);
  free(offs);
  return s;
}

static void bundle_io(FILE *f, const char *up, const char *what, uint32_t i, const kiln_buffer *b) {
  const kiln_type *t = kiln_buffer_type(b);
  fprintf(f, "#define %s_%s%u_NAME \"%s\"\n", up, what, i, kiln_buffer_name(b));
  fprintf(f, "#define %s_%s%u_ELEM \"%s\"\n", up, what, i, kiln_elem_name(t->elem));
  fprintf(f, "#define %s_%s%u_BYTES %lldu\n", up, what, i, (long long)kiln_type_bytes(t));
  fprintf(f, "#define %s_%s%u_RANK %u\n", up, what, i, t->rank);
  fprintf(f, "#define %s_%s%u_DIMS {", up, what, i);
  for (uint32_t d = 0; d < t->rank; d++)
    fprintf(f, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
  fprintf(f, "%s}\n", t->rank ? "" : "1");
}

static kiln_status bundle_header(const kiln_ir *ir, const char *dir, const char *name,
                                 const kcpu_target *t, uint64_t weight_bytes) {
  char up[256], path[4096];
  size_t n = strlen(name);
  for (size_t i = 0; i <= n && i < sizeof up; i++)
    up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
  up[sizeof up - 1] = 0;
  FILE *f;
  KILN_TRY(bundle_open(dir, name, ".h", &f, path, sizeof path));
  fprintf(f,
          "/* %s.h: ahead-of-time bundle of '%s' made by kiln's cpu backend for %s (cpu %s).\n"
          " * Link %s.o with -lm -lpthread. Usage (docs/bundles.md):\n"
          " *   %s_init(threads);   once (0 or 1 = run on the calling thread)\n"
          " *   %s_run(weights, activations, inputs, outputs);   any number of times:\n"
          " *     0, or 1 when an index tensor held a value out of range (outputs then\n"
          " *     partly written); %s_run_fault also says where (%s_fault)\n"
          " *   %s_fini();\n"
          " * weights: the bytes of %s.weights (or %s_weights from %s_weights.c),\n"
          " * activations: %s_ACTIVATIONS_BYTES of scratch; both %s_ALIGN-byte aligned.\n"
          " * inputs[i] / outputs[i]: the buffers of input / output i (sizes below).\n"
          " * One run at a time per activations buffer. */\n",
          name, kiln_ir_name(ir), t->triple, t->cpu, name, name, name, name, name, name, name, name,
          name, up, up);
  fprintf(f, "#ifndef %s_BUNDLE_H\n#define %s_BUNDLE_H\n\n", up, up);
  fprintf(f, "#define %s_ALIGN 64\n", up);
  fprintf(f, "#define %s_WEIGHTS_BYTES %lluu\n", up, (unsigned long long)weight_bytes);
  fprintf(f, "#define %s_ACTIVATIONS_BYTES %lluu\n", up,
          (unsigned long long)kiln_ir_activation_bytes(ir));
  fprintf(f, "#define %s_NUM_INPUTS %u\n#define %s_NUM_OUTPUTS %u\n\n", up, kiln_ir_input_count(ir),
          up, kiln_ir_output_count(ir));
  for (uint32_t i = 0; i < kiln_ir_input_count(ir); i++)
    bundle_io(f, up, "INPUT", i, kiln_ir_input(ir, i));
  for (uint32_t i = 0; i < kiln_ir_output_count(ir); i++)
    bundle_io(f, up, "OUTPUT", i, kiln_ir_output(ir, i));
  fprintf(f, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
  fprintf(f, "int %s_init(int threads);\nvoid %s_fini(void);\n", name, name);
  fprintf(f,
          "int %s_run(const void *weights, void *activations, const void *const *inputs,\n"
          "           void *const *outputs);\n",
          name);
  fprintf(f,
          "/* The first index fault of a run: instruction (its position in the\n"
          " * compiled instruction list), the value read, the dimension it indexes\n"
          " * (valid: [-bound, bound)) and the value's element in its tensor. */\n"
          "typedef struct %s_fault {\n"
          "  int claimed, code; /* code 1: index out of range */\n"
          "  long long instruction, value, bound, at;\n"
          "} %s_fault;\n"
          "int %s_run_fault(const void *weights, void *activations, const void *const *inputs,\n"
          "                 void *const *outputs, %s_fault *fault);\n",
          name, name, name, name);
  fprintf(f, "#ifdef __cplusplus\n}\n#endif\n#endif\n");
  if (ferror(f) | fclose(f))
    return kiln_status_make(KILN_IO_ERROR, "cpu bundle: writing %s failed", path);
  return NULL;
}

static bool bundle_name_ok(const char *name) {
  if (!name || !name[0] || strlen(name) > 200 || (name[0] >= '0' && name[0] <= '9'))
    return false;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return false;
  return true;
}

kiln_status kcpu_emit_bundle(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                             const char *dir, const char *name) {
  (void)state;
  if (!bundle_name_ok(name))
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "cpu bundle: name '%s' is not a C identifier (letters, digits, _)",
                            name ? name : "(null)");
  kcpu_target t;
  KILN_TRY(kcpu_target_resolve(opts, &t));
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  char entry[256], path[4096];
  snprintf(entry, sizeof entry, "%s_entry", name);
  char k_init[256], k_run[256], k_runf[256], k_fini[256];
  snprintf(k_init, sizeof k_init, "%s_init", name);
  snprintf(k_run, sizeof k_run, "%s_run", name);
  snprintf(k_runf, sizeof k_runf, "%s_run_fault", name);
  snprintf(k_fini, sizeof k_fini, "%s_fini", name);
  const char *keep[4] = {k_init, k_run, k_runf, k_fini};
  /* Parallel code when threads may be > 1 at run time; NAME_init decides. */
  kcpu_codegen_opts co = {.entry_name = entry,
                          .threads = opts && opts->threads == 1 ? 1 : 2,
                          .lanes = t.lanes,
                          .vnni = t.vnni,
                          .weights = KCPU_WEIGHTS_REGION};
  kiln_status s = kcpu_load_library(ctx, &t, &mod);
  if (!s)
    s = kcpu_codegen(mod, ir, &co);
  if (!s)
    s = bundle_wrappers(mod, name, entry);
  if (!s)
    s = kcpu_finish_module(mod, &t, keep, 4);
  LLVMTargetMachineRef tm = NULL;
  if (!s)
    s = kcpu_target_machine(&t, LLVMRelocPIC, LLVMCodeModelDefault, &tm);
  if (!s) {
    snprintf(path, sizeof path, "%s/%s.o", dir, name);
    char *err = NULL;
    if (LLVMTargetMachineEmitToFile(tm, mod, path, LLVMObjectFile, &err))
      s = kcpu_status_from_message(err, path);
    else
      LLVMDisposeMessage(err);
  }
  if (tm)
    LLVMDisposeTargetMachine(tm);
  if (mod)
    LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  uint64_t wbytes = 0;
  if (!s)
    s = bundle_weights(ir, dir, name, &wbytes);
  if (!s)
    s = bundle_header(ir, dir, name, &t, wbytes);
  kcpu_target_free(&t);
  return s ? kiln_status_wrap(s, "cpu: bundle '%s' of %s", name, kiln_ir_name(ir)) : NULL;
}
