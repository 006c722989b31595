/* plugins/opencl/device.c: the devices of every OpenCL platform, queried
 * once per process (the ICD loader's view does not change while we run),
 * and the choice of one for a compile (--device N or KILN_OPENCL_DEVICE). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

#define OCL_MAX_DEVICES 64

static ocl_device g_devs[OCL_MAX_DEVICES];
static uint32_t g_n;
static const char *g_why = "no OpenCL platform";
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void dev_str(cl_device_id d, cl_device_info what, char *buf, size_t n) {
  buf[0] = 0;
  if (clGetDeviceInfo(d, what, n, buf, NULL) != CL_SUCCESS)
    buf[0] = 0;
  buf[n - 1] = 0;
}

static void dev_fill(cl_platform_id p, cl_device_id id, ocl_device *d) {
  memset(d, 0, sizeof *d);
  d->platform = p;
  d->id = id;
  dev_str(id, CL_DEVICE_NAME, d->name, sizeof d->name);
  dev_str(id, CL_DRIVER_VERSION, d->driver, sizeof d->driver);
  dev_str(id, CL_DEVICE_VERSION, d->version, sizeof d->version);
  cl_device_type t = 0;
  clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
  strcpy(d->kind, (t & CL_DEVICE_TYPE_GPU)           ? "gpu"
                  : (t & CL_DEVICE_TYPE_CPU)         ? "cpu"
                  : (t & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator"
                                                     : "other");
  cl_ulong v = 0;
  if (clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof v, &v, NULL) == CL_SUCCESS)
    d->mem_bytes = v;
  v = 0;
  if (clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof v, &v, NULL) == CL_SUCCESS)
    d->local_mem = v;
  size_t wg = 0;
  if (clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) != CL_SUCCESS || !wg)
    wg = 1;
  d->max_wg = wg;
  size_t n = 0;
  if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &n) == CL_SUCCESS && n) {
    char *ext = malloc(n + 1);
    if (ext && clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, n, ext, NULL) == CL_SUCCESS) {
      ext[n] = 0;
      d->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
      d->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    }
    free(ext);
  }
}

static void enumerate(void) {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err != CL_SUCCESS || np == 0) {
    g_why = "no OpenCL platform (clGetPlatformIDs found none)";
    return;
  }
  cl_platform_id *ps = calloc(np, sizeof *ps);
  if (!ps || clGetPlatformIDs(np, ps, NULL) != CL_SUCCESS) {
    free(ps);
    g_why = "clGetPlatformIDs failed";
    return;
  }
  for (cl_uint i = 0; i < np && g_n < OCL_MAX_DEVICES; i++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd)
      continue;
    cl_device_id ids[OCL_MAX_DEVICES];
    if (nd > OCL_MAX_DEVICES - g_n)
      nd = OCL_MAX_DEVICES - g_n;
    if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, nd, ids, NULL) != CL_SUCCESS)
      continue;
    for (cl_uint j = 0; j < nd; j++)
      dev_fill(ps[i], ids[j], &g_devs[g_n++]);
  }
  free(ps);
  if (!g_n)
    g_why = "no OpenCL device on any platform";
}

void ocl_devices(const ocl_device **out, uint32_t *n, const char **why) {
  pthread_once(&g_once, enumerate);
  *out = g_devs;
  *n = g_n;
  if (why)
    *why = g_why;
}

/* -1 when unset or malformed (then the default applies). */
static int32_t env_device(void) {
  const char *e = getenv("KILN_OPENCL_DEVICE");
  if (!e || !*e)
    return -1;
  char *end;
  long v = strtol(e, &end, 10);
  if (*end || v < 0 || v > INT32_MAX) {
    kiln_plugin_log(OCL_NAME, KILN_LOG_WARN, "KILN_OPENCL_DEVICE='%s' is not a device index", e);
    return -1;
  }
  return (int32_t)v;
}

kiln_status ocl_pick_device(const kiln_compile_options *opts, const ocl_device **out) {
  const ocl_device *ds;
  uint32_t n;
  const char *why;
  ocl_devices(&ds, &n, &why);
  *out = NULL;
  if (!n)
    return kiln_status_make(KILN_UNAVAILABLE, "opencl: no OpenCL device (%s)", why);
  int32_t want = opts && opts->device >= 0 ? opts->device : env_device();
  if (want < 0)
    want = 0;
  if ((uint32_t)want >= n)
    return kiln_status_make(KILN_OUT_OF_RANGE,
                            "opencl: device %d asked for, but there are %u OpenCL device(s) "
                            "(0..%u; see kiln backends)",
                            (int)want, n, n - 1);
  *out = &ds[want];
  return NULL;
}

const ocl_device *ocl_default_device(void) {
  const ocl_device *d;
  kiln_status s = ocl_pick_device(NULL, &d);
  kiln_status_free(s);
  return d;
}
