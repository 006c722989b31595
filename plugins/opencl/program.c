/* plugins/opencl/program.c: one program per model, built once at compile
 * time: from the disk cache (the host's shared kiln_cache_*) when an entry
 * for this exact (source, device, driver, options) exists, else from
 * source (then stored); with the cache disabled (--no-cache,
 * KILN_CACHE_DIR=off) it neither loads nor stores. A failed build reports
 * the compiler's log. Counters of source builds and cache hits are
 * exported for the tests (the cache test checks that a second compile of a
 * model does not compile from source). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

static atomic_uint_fast64_t g_source_builds, g_cache_hits;

uint64_t kiln_opencl_source_builds(void) {
  return atomic_load(&g_source_builds);
}
uint64_t kiln_opencl_cache_hits(void) {
  return atomic_load(&g_cache_hits);
}

static char *build_log(cl_program p, cl_device_id d) {
  size_t n = 0;
  if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || !n)
    return NULL;
  char *log = malloc(n + 1);
  if (log && clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS) {
    free(log);
    return NULL;
  }
  if (log)
    log[n] = 0;
  return log;
}

/* The key's first 16 bytes in hex: enough to find the entry's file. */
static void key_prefix(const kiln_cache_key *k, char hex[33]) {
  for (int i = 0; i < 16; i++)
    snprintf(hex + 2 * i, 3, "%02x", k->bytes[i]);
}

/* A miss, or a damaged entry (kiln_cache_load reported and removed it),
 * or one the driver refuses (reported and removed here): false, and the
 * caller builds from source and stores the result again. */
static bool from_cache(cl_context ctx, const ocl_device *d, const kiln_cache_key *k,
                       const char *options, cl_program *out) {
  void *data;
  size_t len;
  if (kiln_cache_load(OCL_NAME, OCL_CACHE_EXT, k, &data, &len) != KILN_CACHE_HIT)
    return false;
  cl_int err, st = CL_SUCCESS;
  const unsigned char *bins[1] = {data};
  cl_program p = clCreateProgramWithBinary(ctx, 1, &d->id, &len, bins, &st, &err);
  free(data);
  if (err == CL_SUCCESS && st == CL_SUCCESS)
    err = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
  else if (err == CL_SUCCESS)
    err = st;
  if (err != CL_SUCCESS) {
    char hex[33];
    key_prefix(k, hex);
    kiln_plugin_log(OCL_NAME, KILN_LOG_WARN,
                    "compile cache entry %s... (%s) did not load (%s); building from source "
                    "and replacing it",
                    hex, d->name, ocl_err_name(err));
    if (p)
      clReleaseProgram(p);
    kiln_cache_remove(OCL_NAME, OCL_CACHE_EXT, k);
    return false;
  }
  atomic_fetch_add(&g_cache_hits, 1);
  *out = p;
  return true;
}

static void store(cl_program p, const kiln_cache_key *k) {
  size_t len = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || !len)
    return;
  unsigned char *bin = malloc(len);
  unsigned char *bins[1] = {bin};
  if (bin && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
    kiln_cache_store(OCL_NAME, OCL_CACHE_EXT, k, bin, len);
  free(bin);
}

kiln_status ocl_program_build(cl_context ctx, const ocl_device *d, const char *source,
                              const char *options, bool use_cache, cl_program *out) {
  *out = NULL;
  kiln_cache_key k = {{0}};
  if (use_cache) {
    ocl_cache_key_of(source, d, options, &k);
    if (from_cache(ctx, d, &k, options, out))
      return NULL;
  }
  cl_int err;
  size_t len = strlen(source);
  cl_program p = clCreateProgramWithSource(ctx, 1, &source, &len, &err);
  if (err != CL_SUCCESS)
    return ocl_fail(err, "clCreateProgramWithSource", "%zu bytes of generated source", len);
  atomic_fetch_add(&g_source_builds, 1);
  kiln_plugin_log(OCL_NAME, KILN_LOG_DEBUG, "building a program of %zu bytes for %s", len, d->name);
  err = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char *log = build_log(p, d->id);
    kiln_status s = ocl_fail(err, "clBuildProgram", "device %s; build log:\n%.8000s", d->name,
                             log ? log : "(no log)");
    free(log);
    clReleaseProgram(p);
    return s;
  }
  char *log = build_log(p, d->id);
  if (log && strstr(log, "warning"))
    kiln_plugin_log(OCL_NAME, KILN_LOG_DEBUG, "build log:\n%.4000s", log);
  free(log);
  if (use_cache)
    store(p, &k);
  *out = p;
  return NULL;
}
