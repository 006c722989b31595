/* plugins/cpu/jit.c: in-process linking with ORC LLJIT. The code arrives as
 * objects already compiled for the chosen cpu and features (the model's,
 * freshly made or from the compile cache, and the native kernel library's);
 * the JIT links them, resolves libc, libm and pthreads from the process,
 * and owns the machine code until kcpu_jit_destroy. */
#include <stdlib.h>

#include <llvm-c/LLJIT.h>
#include <llvm-c/OrcEE.h>

#include "cpu.h"

struct kcpu_jit {
  LLVMOrcLLJITRef lljit;
};

void kcpu_jit_destroy(kcpu_jit *j) {
  if (!j)
    return;
  if (j->lljit) {
    LLVMErrorRef err = LLVMOrcDisposeLLJIT(j->lljit);
    if (err) {
      char *msg = LLVMGetErrorMessage(err);
      kiln_plugin_log("cpu", KILN_LOG_WARN, "disposing the JIT: %s", msg);
      LLVMDisposeErrorMessage(msg);
    }
  }
  free(j);
}

kiln_status kcpu_jit_create(const kcpu_target *t, const char *lib, size_t lib_len,
                            LLVMMemoryBufferRef obj, const char *const *names, uint32_t n,
                            uint64_t *addrs, kcpu_jit **out) {
  *out = NULL;
  kcpu_jit *j = calloc(1, sizeof *j);
  if (!j) {
    LLVMDisposeMemoryBuffer(obj);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "cpu: no memory for a JIT");
  }
  LLVMTargetMachineRef tm = NULL;
  kiln_status s = kcpu_target_machine(t, LLVMRelocPIC, LLVMCodeModelDefault, &tm);
  if (s) {
    LLVMDisposeMemoryBuffer(obj);
    free(j);
    return s;
  }
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  /* Both take ownership: the TM goes to the JTMB, the JTMB to the builder,
   * the builder to LLVMOrcCreateLLJIT. */
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
      builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
  s = kcpu_status_from_error(LLVMOrcCreateLLJIT(&j->lljit, builder), "creating the JIT");
  if (s) {
    LLVMDisposeMemoryBuffer(obj);
    free(j);
    return s;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->lljit);
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  s = kcpu_status_from_error(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                                 &gen, LLVMOrcLLJITGetGlobalPrefix(j->lljit), NULL, NULL),
                             "making the process symbol generator");
  if (s) {
    LLVMDisposeMemoryBuffer(obj);
    kcpu_jit_destroy(j);
    return s;
  }
  LLVMOrcJITDylibAddGenerator(jd, gen);
  if (lib) {
    /* Borrowed bytes: the buffer does not copy them and they outlive the JIT. */
    LLVMMemoryBufferRef lb = LLVMCreateMemoryBufferWithMemoryRange(lib, lib_len, "kcpu-native", 0);
    s = kcpu_status_from_error(LLVMOrcLLJITAddObjectFile(j->lljit, jd, lb),
                               "adding the kernel library to the JIT");
    if (s) {
      LLVMDisposeMemoryBuffer(obj);
      kcpu_jit_destroy(j);
      return s;
    }
  }
  s = kcpu_status_from_error(LLVMOrcLLJITAddObjectFile(j->lljit, jd, obj),
                             "adding the model's code to the JIT");
  if (s) {
    kcpu_jit_destroy(j);
    return s;
  }
  for (uint32_t i = 0; i < n; i++) {
    LLVMOrcExecutorAddress a = 0;
    LLVMErrorRef err = LLVMOrcLLJITLookup(j->lljit, &a, names[i]);
    if (err && i == 0) { /* the entry: required; its failure says why code is missing */
      kcpu_jit_destroy(j);
      return kcpu_status_from_error(err, "linking the entry function");
    }
    if (err) {
      /* Optional symbols (the pool) may be absent; the caller decides. */
      char *msg = LLVMGetErrorMessage(err);
      LLVMDisposeErrorMessage(msg);
      a = 0;
    }
    addrs[i] = a;
  }
  *out = j;
  return NULL;
}
