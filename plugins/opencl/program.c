/* plugins/opencl/program.c: one program per model, built once at compile
 * time: from the disk cache when an entry for this exact (source, device,
 * driver, options) exists, else from source (then stored). A failed build
 * reports the compiler's log. Counters of source builds and cache hits are
 * exported for the tests (the cache test checks that a second compile of a
 * model does not compile from source). */
#include <stdatomic.h>
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

static bool from_cache(cl_context ctx, const ocl_device *d, const ocl_cache_key *k,
                       const char *options, cl_program *out) {
  unsigned char *bin;
  size_t len;
  bool damaged;
  if (!ocl_cache_load(k, &bin, &len, &damaged)) {
    if (damaged)
      ocl_cache_remove(k);
    return false;
  }
  cl_int err, st = CL_SUCCESS;
  const unsigned char *bins[1] = {bin};
  cl_program p = clCreateProgramWithBinary(ctx, 1, &d->id, &len, bins, &st, &err);
  free(bin);
  if (err == CL_SUCCESS && st == CL_SUCCESS)
    err = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
  else if (err == CL_SUCCESS)
    err = st;
  if (err != CL_SUCCESS) {
    kiln_plugin_log(OCL_NAME, KILN_LOG_WARN,
                    "program cache entry %016llx%016llx did not load (%s); rebuilding it",
                    (unsigned long long)k->h[0], (unsigned long long)k->h[1], ocl_err_name(err));
    if (p)
      clReleaseProgram(p);
    ocl_cache_remove(k);
    return false;
  }
  atomic_fetch_add(&g_cache_hits, 1);
  *out = p;
  return true;
}

static void store(cl_program p, const ocl_cache_key *k) {
  size_t len = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || !len)
    return;
  unsigned char *bin = malloc(len);
  unsigned char *bins[1] = {bin};
  if (bin && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
    ocl_cache_store(k, bin, len);
  free(bin);
}

kiln_status ocl_program_build(cl_context ctx, const ocl_device *d, const char *source,
                              const char *options, cl_program *out) {
  *out = NULL;
  ocl_cache_key k = ocl_cache_key_of(source, d, options);
  if (from_cache(ctx, d, &k, options, out))
    return NULL;
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
  store(p, &k);
  *out = p;
  return NULL;
}
