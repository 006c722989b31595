/* plugins/cpu/cache.c: the key of the cpu backend's compile cache entries
 * (the model's object file; the store itself is the host's kiln_cache_*).
 * The key covers everything the object depends on: the model's module as
 * generated (its bitcode, before optimization: instructions, shapes,
 * weights-table slots, threads, profiling timers), the target (triple, cpu,
 * features), LLVM's version, the optimization pipeline and object format,
 * and the plugin's own code (the embedded kernel library and, when linked,
 * the native library object). Weights are not in the key: the code reads
 * them through a table filled at every compile. */
#include <pthread.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "cpu.h"

/* Bump when what the object depends on changes outside the key's parts
 * (object emission settings, the entry function's contract). */
#define KCPU_CACHE_FORMAT "kiln-cpu object cache 1: pic, small code model, O3"

extern const char kcpu_bitcode_host[], kcpu_bitcode_host_end[];
extern const char kcpu_bitcode_aarch64[], kcpu_bitcode_aarch64_end[];
extern const char kcpu_native_bc[] __attribute__((weak));
extern const char kcpu_native_bc_end[] __attribute__((weak));

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static unsigned char lib_digest[32];

/* The embedded libraries change only with the plugin: hashed once. */
static void kcpu_hash_library(void) {
  kiln_sha256 s;
  kiln_sha256_init(&s);
  kiln_cache_key_add(&s, kcpu_bitcode_host, (size_t)(kcpu_bitcode_host_end - kcpu_bitcode_host));
  kiln_cache_key_add(&s, kcpu_bitcode_aarch64,
                     (size_t)(kcpu_bitcode_aarch64_end - kcpu_bitcode_aarch64));
  if (kcpu_native_bc && (uintptr_t)kcpu_native_bc_end > (uintptr_t)kcpu_native_bc)
    kiln_cache_key_add(&s, kcpu_native_bc, (size_t)(kcpu_native_bc_end - kcpu_native_bc));
  kiln_sha256_final(&s, lib_digest);
}

static void add_str(kiln_sha256 *s, const char *v) {
  kiln_cache_key_add(s, v ? v : "", v ? strlen(v) : 0);
}

kiln_status kcpu_cache_key(LLVMModuleRef mod, const kcpu_target *t, const char *native,
                           size_t native_len, kiln_cache_key *out) {
  pthread_once(&lib_once, kcpu_hash_library);
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
  kiln_cache_key_add(&s, lib_digest, sizeof lib_digest);
  /* The native library is part of the program the object links against. */
  kiln_cache_key_add(&s, native ? native : "", native ? native_len : 0);
  add_str(&s, t->triple);
  add_str(&s, t->cpu);
  add_str(&s, t->features);
  kiln_cache_key_add(&s, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
  LLVMDisposeMemoryBuffer(bc);
  kiln_sha256_final(&s, out->bytes);
  return NULL;
}
