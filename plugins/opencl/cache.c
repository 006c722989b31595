/* plugins/opencl/cache.c: the key of the opencl backend's program cache
 * entries (a device binary; the store itself is the host's kiln_cache_*,
 * backend "opencl", files ending in ".clbin"). The key covers everything
 * the binary depends on: the generated source, the device name, the
 * driver version, the device version and the build options. */
#include <string.h>

#include "ocl.h"

void ocl_cache_key_of(const char *source, const ocl_device *d, const char *options,
                      kiln_cache_key *out) {
  const char *parts[] = {source, d->name, d->driver, d->version, options};
  kiln_sha256 s;
  kiln_sha256_init(&s);
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    kiln_cache_key_add(&s, parts[i], strlen(parts[i]));
  kiln_sha256_final(&s, out->bytes);
}
