/* plugins/opencl/cache.c: the on-disk program cache. An entry is a device
 * binary keyed by a hash of (source, device name, driver version, device
 * version, build options), stored as a small header (magic, size, checksum)
 * plus the binary, written to a temporary file and renamed into place so
 * that a reader never sees half an entry. Folder: $KILN_CACHE_DIR, else
 * $XDG_CACHE_HOME/kiln/opencl, else ~/.cache/kiln/opencl. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ocl.h"

static const char cache_magic[8] = {'K', 'I', 'L', 'N', 'O', 'C', 'L', '1'};

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* Both halves hash every field plus a separator, from different seeds. */
ocl_cache_key ocl_cache_key_of(const char *source, const ocl_device *d, const char *options) {
  const char *parts[] = {source, d->name, d->driver, d->version, options};
  ocl_cache_key k = {{0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL}};
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    for (int h = 0; h < 2; h++) {
      k.h[h] = fnv(k.h[h], parts[i], strlen(parts[i]) + 1);
      if (h == 1)
        k.h[h] ^= k.h[h] >> 29;
    }
  return k;
}

static bool mkdirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    int r = mkdir(path, 0755);
    *p = '/';
    if (r && errno != EEXIST)
      return false;
  }
  return !mkdir(path, 0755) || errno == EEXIST;
}

bool ocl_cache_dir(char *buf, size_t n) {
  const char *k = getenv("KILN_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  int len;
  if (k && *k)
    len = snprintf(buf, n, "%s", k);
  else if (x && *x)
    len = snprintf(buf, n, "%s/kiln/opencl", x);
  else if (h && *h)
    len = snprintf(buf, n, "%s/.cache/kiln/opencl", h);
  else
    return false;
  return len > 0 && (size_t)len < n;
}

static bool entry_path(const ocl_cache_key *k, char *buf, size_t n, bool create) {
  char dir[4096];
  if (!ocl_cache_dir(dir, sizeof dir))
    return false;
  if (create && !mkdirs(dir)) {
    kiln_plugin_log(OCL_NAME, KILN_LOG_INFO, "cannot create cache folder %s: %s", dir,
                    strerror(errno));
    return false;
  }
  int len = snprintf(buf, n, "%s/%016llx%016llx.clbin", dir, (unsigned long long)k->h[0],
                     (unsigned long long)k->h[1]);
  return len > 0 && (size_t)len < n;
}

bool ocl_cache_load(const ocl_cache_key *k, unsigned char **bin, size_t *len, bool *damaged) {
  char path[4200];
  *bin = NULL;
  *len = 0;
  *damaged = false;
  if (!entry_path(k, path, sizeof path, false))
    return false;
  FILE *f = fopen(path, "rb");
  if (!f)
    return false;
  char magic[8];
  uint64_t size = 0, sum = 0;
  bool ok = fread(magic, 1, 8, f) == 8 && !memcmp(magic, cache_magic, 8) &&
            fread(&size, sizeof size, 1, f) == 1 && fread(&sum, sizeof sum, 1, f) == 1 &&
            size > 0 && size < ((uint64_t)1 << 32);
  unsigned char *b = ok ? malloc((size_t)size) : NULL;
  ok = ok && b && fread(b, 1, (size_t)size, f) == size && fgetc(f) == EOF &&
       fnv(0xcbf29ce484222325ULL, b, (size_t)size) == sum;
  fclose(f);
  if (!ok) {
    free(b);
    *damaged = true;
    kiln_plugin_log(OCL_NAME, KILN_LOG_WARN,
                    "program cache entry %s is damaged (bad header, size or checksum); "
                    "rebuilding it",
                    path);
    return false;
  }
  *bin = b;
  *len = (size_t)size;
  return true;
}

void ocl_cache_store(const ocl_cache_key *k, const unsigned char *bin, size_t len) {
  static atomic_uint serial;
  char path[4200], tmp[4300];
  if (!entry_path(k, path, sizeof path, true))
    return;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&serial, 1));
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    kiln_plugin_log(OCL_NAME, KILN_LOG_INFO, "cannot write cache file %s: %s", tmp,
                    strerror(errno));
    return;
  }
  uint64_t size = len, sum = fnv(0xcbf29ce484222325ULL, bin, len);
  bool ok = fwrite(cache_magic, 1, 8, f) == 8 && fwrite(&size, sizeof size, 1, f) == 1 &&
            fwrite(&sum, sizeof sum, 1, f) == 1 && fwrite(bin, 1, len, f) == len;
  ok = !fclose(f) && ok;
  if (!ok || rename(tmp, path)) {
    kiln_plugin_log(OCL_NAME, KILN_LOG_INFO, "cannot store cache entry %s: %s", path,
                    strerror(errno));
    remove(tmp);
  }
}

void ocl_cache_remove(const ocl_cache_key *k) {
  char path[4200];
  if (entry_path(k, path, sizeof path, false))
    remove(path);
}
