/* core/registry.c: plugin discovery and loading. Scans the build tree's
 * plugin folder (and its immediate subfolders), the install folder and
 * each folder of KILN_PLUGIN_PATH for kiln-NAME.so, loads each with dlopen
 * and checks its descriptor. A plugin that fails any check is recorded as
 * refused, with its path and the reason, and never stops the others. */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "context.h"

#ifndef KILN_PLUGIN_BUILD_DIR
#define KILN_PLUGIN_BUILD_DIR ""
#endif
#ifndef KILN_PLUGIN_INSTALL_DIR
#define KILN_PLUGIN_INSTALL_DIR ""
#endif

/* Every 1.x plugin knows at least the 1.0 layout (through `init`). */
#define REGISTRY_MIN_STRUCT_SIZE KILN_PLUGIN_SIZE_1_0

char *kiln_core_strdup(const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

static kiln_status registry_oom(void) {
  return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory while loading plugins");
}

kiln_status kiln_registry_refuse(kiln_context *ctx, const char *path, const char *reason) {
  if (ctx->refused_count == ctx->refused_cap) {
    uint32_t cap = ctx->refused_cap ? ctx->refused_cap * 2 : 8;
    kiln_registry_refusal *r = realloc(ctx->refused, cap * sizeof *r);
    if (!r)
      return registry_oom();
    ctx->refused = r;
    ctx->refused_cap = cap;
  }
  kiln_registry_refusal *r = &ctx->refused[ctx->refused_count];
  r->path = kiln_core_strdup(path);
  r->reason = kiln_core_strdup(reason);
  if (!r->path || !r->reason) {
    free(r->path);
    free(r->reason);
    return registry_oom();
  }
  ctx->refused_count++;
  return NULL;
}

static kiln_status registry_refusef(kiln_context *ctx, const char *path, const char *fmt, ...)
    KILN_PRINTF(3, 4);
static kiln_status registry_refusef(kiln_context *ctx, const char *path, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return kiln_registry_refuse(ctx, path, buf);
}

kiln_registry_backend *kiln_registry_find(const kiln_context *ctx, const char *name) {
  if (!ctx || !name)
    return NULL;
  for (uint32_t i = 0; i < ctx->backend_count; i++)
    if (strcmp(ctx->backends[i].desc.name, name) == 0)
      return &ctx->backends[i];
  return NULL;
}

/* Same file already loaded through another folder or a link: skip it
 * quietly rather than call it a duplicate of itself. */
static bool registry_already_loaded(const kiln_context *ctx, const char *path) {
  char a[PATH_MAX], b[PATH_MAX];
  if (!realpath(path, a))
    return false;
  for (uint32_t i = 0; i < ctx->backend_count; i++)
    if (realpath(ctx->backends[i].path, b) && strcmp(a, b) == 0)
      return true;
  return false;
}

/* "kiln-NAME.so" -> NAME into buf; false if the file name does not fit. */
static bool registry_name_from_file(const char *file, char *buf, size_t n) {
  size_t len = strlen(file);
  if (len <= 8 || strncmp(file, "kiln-", 5) != 0 || strcmp(file + len - 3, ".so") != 0)
    return false;
  size_t nl = len - 8;
  if (nl + 1 > n)
    return false;
  memcpy(buf, file + 5, nl);
  buf[nl] = '\0';
  return true;
}

static kiln_status registry_add(kiln_context *ctx, const kiln_plugin *desc, const char *path,
                                void *handle) {
  if (ctx->backend_count == ctx->backend_cap) {
    uint32_t cap = ctx->backend_cap ? ctx->backend_cap * 2 : 4;
    kiln_registry_backend *b = realloc(ctx->backends, cap * sizeof *b);
    if (!b)
      return registry_oom();
    ctx->backends = b;
    ctx->backend_cap = cap;
  }
  kiln_registry_backend *b = &ctx->backends[ctx->backend_count];
  b->desc = *desc;
  b->handle = handle;
  b->supported_kinds = -1;
  b->path = kiln_core_strdup(path);
  if (!b->path)
    return registry_oom();
  ctx->backend_count++;
  return NULL;
}

/* Load one candidate. Returns non-NULL only when out of memory; every
 * problem with the plugin itself becomes a refusal. */
static kiln_status registry_load(kiln_context *ctx, const char *path, const char *file_name) {
  if (registry_already_loaded(ctx, path))
    return NULL;
  /* Plugins are never dlclose'd, refused ones included: their constructors
   * have run, they may have started threads, registered atexit handlers or
   * thread-local destructors, and a status message or function pointer of
   * theirs may still be held by someone. Unloading code that might still be
   * reached is a crash at an unrelated place later; keeping a few unused
   * pages mapped is harmless. */
  dlerror();
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *e = dlerror();
    return registry_refusef(ctx, path, "not a loadable shared object: %s", e ? e : "unknown");
  }
  dlerror();
  void *sym = dlsym(handle, KILN_PLUGIN_ENTRY_SYMBOL);
  if (!sym)
    return registry_refusef(ctx, path,
                            "missing entry symbol '" KILN_PLUGIN_ENTRY_SYMBOL
                            "' (is it exported with KILN_PLUGIN_EXPORT?)");
  kiln_plugin_entry_fn entry;
  memcpy(&entry, &sym, sizeof entry);

  kiln_plugin desc;
  memset(&desc, 0, sizeof desc);
  kiln_status s = entry(&desc, KILN_PLUGIN_ABI_MAJOR, KILN_PLUGIN_ABI_MINOR);
  if (s) {
    kiln_status r =
        registry_refusef(ctx, path, "entry point returned an error: %s", kiln_status_message(s));
    kiln_status_free(s);
    return r;
  }
  if (desc.abi_major != KILN_PLUGIN_ABI_MAJOR)
    return registry_refusef(ctx, path, "plugin built for ABI %u.%u, kiln has %u.%u", desc.abi_major,
                            desc.abi_minor, KILN_PLUGIN_ABI_MAJOR, KILN_PLUGIN_ABI_MINOR);
  if (desc.struct_size < REGISTRY_MIN_STRUCT_SIZE)
    return registry_refusef(ctx, path,
                            "descriptor struct_size %u is smaller than the ABI %u.0 layout (%zu "
                            "bytes); set struct_size = sizeof(kiln_plugin)",
                            desc.struct_size, KILN_PLUGIN_ABI_MAJOR,
                            (size_t)REGISTRY_MIN_STRUCT_SIZE);
  /* Members the plugin did not know about read as NULL, whatever its entry
   * left there: the core reads them through KILN_PLUGIN_HOOK, and callers
   * of kiln_context_find_backend that read the copy directly see zeroes. */
  if (desc.struct_size < sizeof desc)
    memset((char *)&desc + desc.struct_size, 0, sizeof desc - desc.struct_size);
  if (!desc.name || !desc.name[0])
    return registry_refusef(ctx, path, "descriptor has no name");
  char missing[128] = "";
  if (!desc.supports_node)
    strcat(missing, " supports_node");
  if (!desc.compile)
    strcat(missing, " compile");
  if (!desc.run)
    strcat(missing, " run");
  if (!desc.destroy)
    strcat(missing, " destroy");
  if (missing[0])
    return registry_refusef(ctx, path, "backend '%s' lacks required hooks:%s", desc.name, missing);
  if (strcmp(desc.name, file_name) != 0)
    return registry_refusef(ctx, path,
                            "plugin calls itself '%s' but its file name says '%s' (a "
                            "plugin named NAME must be kiln-NAME.so)",
                            desc.name, file_name);
  kiln_registry_backend *prev = kiln_registry_find(ctx, desc.name);
  if (prev)
    return registry_refusef(ctx, path,
                            "duplicate backend '%s': kept %s (found first: build tree before "
                            "install dir before KILN_PLUGIN_PATH), refused %s",
                            desc.name, prev->path, path);
  kiln_status (*init)(void *) = KILN_PLUGIN_HOOK(&desc, init);
  if (init) {
    s = init(desc.state);
    if (s) {
      kiln_status r = registry_refusef(ctx, path, "backend '%s' init failed: %s", desc.name,
                                       kiln_status_message(s));
      kiln_status_free(s);
      return r;
    }
  }
  return registry_add(ctx, &desc, path, handle);
}

static int registry_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void registry_free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

/* Scan `dir` for kiln-*.so (sorted, so the order is reproducible); with
 * subdirs, then the same in each immediate subfolder. A missing or
 * unreadable folder is skipped: most search folders need not exist. */
static kiln_status registry_scan(kiln_context *ctx, const char *dir, bool subdirs) {
  if (!dir || !dir[0])
    return NULL;
  DIR *d = opendir(dir);
  if (!d)
    return NULL;
  char **names = NULL;
  size_t n = 0, cap = 0;
  kiln_status s = NULL;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) {
        s = registry_oom();
        break;
      }
      names = nn;
    }
    if (!(names[n] = kiln_core_strdup(e->d_name))) {
      s = registry_oom();
      break;
    }
    n++;
  }
  closedir(d);
  if (s) {
    registry_free_names(names, n);
    return s;
  }
  if (n)
    qsort(names, n, sizeof *names, registry_cmp);
  char path[PATH_MAX], pname[256];
  /* Files of this folder first, then subfolders. */
  for (int pass = 0; pass < 2 && !s; pass++) {
    for (size_t i = 0; i < n && !s; i++) {
      if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path)
        continue;
      struct stat st;
      if (stat(path, &st) != 0)
        continue;
      if (pass == 0 && !S_ISDIR(st.st_mode) &&
          registry_name_from_file(names[i], pname, sizeof pname))
        s = registry_load(ctx, path, pname);
      else if (pass == 1 && subdirs && S_ISDIR(st.st_mode))
        s = registry_scan(ctx, path, false);
    }
  }
  registry_free_names(names, n);
  return s;
}

kiln_status kiln_registry_discover(kiln_context *ctx) {
  const char *only = getenv("KILN_PLUGIN_PATH_ONLY");
  bool path_only = only && strcmp(only, "1") == 0;
  if (!path_only) {
    KILN_TRY(registry_scan(ctx, KILN_PLUGIN_BUILD_DIR, true));
    KILN_TRY(registry_scan(ctx, KILN_PLUGIN_INSTALL_DIR, false));
  }
  const char *env = getenv("KILN_PLUGIN_PATH");
  if (!env)
    return NULL;
  char *copy = kiln_core_strdup(env);
  if (!copy)
    return registry_oom();
  kiln_status s = NULL;
  char *save = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir && !s; dir = strtok_r(NULL, ":", &save))
    s = registry_scan(ctx, dir, false);
  free(copy);
  return s;
}

void kiln_registry_release(kiln_context *ctx) {
  for (uint32_t i = 0; i < ctx->backend_count; i++)
    free(ctx->backends[i].path);
  free(ctx->backends);
  for (uint32_t i = 0; i < ctx->refused_count; i++) {
    free(ctx->refused[i].path);
    free(ctx->refused[i].reason);
  }
  free(ctx->refused);
  ctx->backends = NULL;
  ctx->refused = NULL;
  ctx->backend_count = ctx->backend_cap = ctx->refused_count = ctx->refused_cap = 0;
}
