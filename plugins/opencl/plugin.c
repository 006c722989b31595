/* plugins/opencl/plugin.c: the OpenCL backend's plugin entry and device
 * hooks. The plugin loads even where no OpenCL platform or device exists;
 * compiling then fails with KILN_UNAVAILABLE "no OpenCL device". */
#include <stdio.h>
#include <string.h>

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
  if (index >= n)
    return kiln_status_make(KILN_OUT_OF_RANGE, "opencl: device %u asked for, there are %u", index,
                            n);
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%.90s (%.30s)", ds[index].name, ds[index].version);
  out->memory_bytes = ds[index].mem_bytes;
  snprintf(out->kind, sizeof out->kind, "%s", ds[index].kind);
  return NULL;
}

KILN_PLUGIN_EXPORT kiln_status kiln_plugin_entry(kiln_plugin *out, uint32_t host_abi_major,
                                                 uint32_t host_abi_minor) {
  (void)host_abi_minor;
  if (host_abi_major != KILN_PLUGIN_ABI_MAJOR)
    return kiln_status_make(KILN_ABI_MISMATCH, "opencl: built for plugin ABI %u, host has %u",
                            (unsigned)KILN_PLUGIN_ABI_MAJOR, (unsigned)host_abi_major);
  out->abi_major = KILN_PLUGIN_ABI_MAJOR;
  out->abi_minor = KILN_PLUGIN_ABI_MINOR;
  out->struct_size = sizeof *out;
  out->name = OCL_NAME;
  out->version = "0.1.0";
  out->description = "OpenCL C kernels generated per model, through the ICD loader";
  out->supports_node = ocl_supports_node;
  out->supports_fused = ocl_supports_fused;
  out->compile = ocl_compile;
  out->run = ocl_run;
  out->destroy = ocl_destroy;
  out->device_count = ocl_device_count;
  out->device_info = ocl_device_info;
  return NULL;
}
