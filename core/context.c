/* core/context.c: the kiln_context object: creation (which runs plugin
 * discovery), destruction, and the read-only views of the registry that
 * kiln.h offers (backends, refusals). */
#include <stdlib.h>
#include <string.h>

#include "context.h"

kiln_status kiln_context_create(kiln_context **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_context_create: out is NULL");
  *out = NULL;
  kiln_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory creating a kiln context");
  kiln_status s = kiln_registry_discover(ctx);
  if (s) {
    kiln_context_destroy(ctx);
    return kiln_status_wrap(s, "creating a kiln context");
  }
  *out = ctx;
  return NULL;
}

void kiln_context_destroy(kiln_context *ctx) {
  if (!ctx)
    return;
  kiln_registry_release(ctx);
  free(ctx);
}

uint32_t kiln_context_backend_count(const kiln_context *ctx) {
  return ctx ? ctx->backend_count : 0;
}

kiln_status kiln_context_backend(const kiln_context *ctx, uint32_t i, kiln_backend_info *out) {
  if (!ctx || !out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_context_backend: %s is NULL",
                            ctx ? "out" : "ctx");
  if (i >= ctx->backend_count)
    return kiln_status_make(KILN_OUT_OF_RANGE,
                            "kiln_context_backend: index %u out of range (%u backends)", i,
                            ctx->backend_count);
  /* The probe count is computed on first request: it builds a few hundred
   * small modules, which a context that only compiles should not pay for.
   * The cache is the only thing that changes behind the const. */
  kiln_registry_backend *b = &((kiln_context *)ctx)->backends[i];
  if (b->supported_kinds < 0)
    b->supported_kinds = kiln_registry_probe_kinds(&b->desc);
  memset(out, 0, sizeof *out);
  out->name = b->desc.name;
  out->version = b->desc.version ? b->desc.version : "";
  out->description = b->desc.description ? b->desc.description : "";
  out->path = b->path;
  out->abi_major = b->desc.abi_major;
  out->abi_minor = b->desc.abi_minor;
  out->supported_kinds = (uint32_t)b->supported_kinds;
  uint32_t (*device_count)(void *) = KILN_PLUGIN_HOOK(&b->desc, device_count);
  out->device_count = device_count ? device_count(b->desc.state) : 0;
  return NULL;
}

const kiln_plugin *kiln_context_find_backend(const kiln_context *ctx, const char *name) {
  kiln_registry_backend *b = kiln_registry_find(ctx, name);
  return b ? &b->desc : NULL;
}

uint32_t kiln_context_refused_count(const kiln_context *ctx) {
  return ctx ? ctx->refused_count : 0;
}

void kiln_context_refused(const kiln_context *ctx, uint32_t i, const char **out_path,
                          const char **out_reason) {
  const char *p = NULL, *r = NULL;
  if (ctx && i < ctx->refused_count) {
    p = ctx->refused[i].path;
    r = ctx->refused[i].reason;
  }
  if (out_path)
    *out_path = p;
  if (out_reason)
    *out_reason = r;
}
