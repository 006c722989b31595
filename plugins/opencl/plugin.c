/* plugins/opencl/plugin.c: the OpenCL backend's plugin entry and device
 * hooks. The plugin loads even where no OpenCL platform or device exists;
 * compiling then fails with KILN_UNAVAILABLE "no OpenCL device". */
#include <stdio.h>

#include "ocl.h"

static uint32_t ocl_device_count(void *state) {
  (void)state;
  const ocl_device *ds;
  uint32_t n;
  ocl_devices(&ds, &n, NULL);
  return n;
}

static kiln_status ocl_device_info(void *state, uint32_t index, kiln_device_info *out) {
  (void)state;
  const ocl_device *ds;
  uint32_t n;
  ocl_devices(&ds, &n, NULL);
  KILN_TRY(kiln_plugin_device_check(OCL_NAME, index, n, out));
  snprintf(out->name, sizeof out->name, "%.90s (%.30s)", ds[index].name, ds[index].version);
  out->memory_bytes = ds[index].mem_bytes;
  snprintf(out->kind, sizeof out->kind, "%s", ds[index].kind);
  return NULL;
}

/* The descriptor; KILN_PLUGIN_DEFINE exports the entry point that hands
 * it to the core. */
static const kiln_plugin ocl_plugin = {
    KILN_PLUGIN_HEADER,
    .name = OCL_NAME,
    .version = "0.1.0",
    .description = "OpenCL C kernels generated per model, through the ICD loader",
    .supports_node = ocl_supports_node,
    .supports_fused = ocl_supports_fused,
    .compile = ocl_compile,
    .run = ocl_run,
    .destroy = ocl_destroy,
    .profile = ocl_profile,
    .device_count = ocl_device_count,
    .device_info = ocl_device_info,
};
KILN_PLUGIN_DEFINE(ocl_plugin);
