/* plugins/cpu/cache.c: the key of the cpu backend's compile cache entries
 * (the model's object file; the store itself is the host's kiln_cache_*).
 * The key covers everything the object depends on: the model's module as
 * generated (its bitcode, before optimization: instructions, shapes,
 * weights-table slots, threads, profiling timers), the target (triple, cpu,
 * features), LLVM's version, the optimization pipeline and object format,
 * and the plugin's own code (the embedded kernel library and, when linked,
 * the native library object, by their digests made at build time).
 * Weights are not in the key: the code reads them through a table filled
 * at every compile. */
#include <string.h>

#include <llvm-c/Core.h>

#include "cpu.h"

/* Bump when what the object depends on changes outside the key's parts
 * (object emission settings, the entry function's contract). */
#define KCPU_CACHE_FORMAT "kiln-cpu object cache 1: pic, small code model, O3"

/* SHA-256 of the embedded kernel libraries (host, then aarch64: written
 * by mkbitcode.py) and of the native object with the declared library
 * (mknative.c), made at build time: the libraries change only with the
 * plugin. */
extern const unsigned char kcpu_bitcode_digest[64];
extern const unsigned char kcpu_native_digest[32];

static void add_str(kiln_sha256 *s, const char *v) {
  kiln_cache_key_add(s, v ? v : "", v ? strlen(v) : 0);
}

kiln_status kcpu_cache_key(LLVMModuleRef mod, const kcpu_target *t, bool native,
                           kiln_cache_key *out) {
  LLVMMemoryBufferRef bc = kcpu_module_bitcode(mod);
  if (!bc)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "cpu: no memory for the compile cache key");
  unsigned major = 0, minor = 0, patch = 0;
  LLVMGetVersion(&major, &minor, &patch);
  uint32_t llvm[3] = {major, minor, patch};
  kiln_sha256 s;
  kiln_sha256_init(&s);
  add_str(&s, KCPU_CACHE_FORMAT);
  kiln_cache_key_add(&s, llvm, sizeof llvm);
  kiln_cache_key_add(&s, kcpu_bitcode_digest, sizeof kcpu_bitcode_digest);
  /* The native library is part of the program the object links against. */
  kiln_cache_key_add(&s, native ? kcpu_native_digest : (const unsigned char *)"",
                     native ? sizeof kcpu_native_digest : 0);
  add_str(&s, t->triple);
  add_str(&s, t->cpu);
  add_str(&s, t->features);
  kiln_cache_key_add(&s, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
  LLVMDisposeMemoryBuffer(bc);
  kiln_sha256_final(&s, out->bytes);
  return NULL;
}
