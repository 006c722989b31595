/* core/cache.c: the on-disk compile cache, a host service that backends
 * share (kiln/plugin.h). A key is the SHA-256 of the key material the
 * backend feeds in (each part length-prefixed, so parts cannot run into
 * each other); an entry is a header (magic, format, key, size, checksum)
 * plus the backend's bytes, written to a temporary file in the same folder
 * and renamed into place, so concurrent writers never interleave and a
 * reader sees a whole entry or none. A damaged entry (bad header, size,
 * key or checksum) is reported, removed and rebuilt by the caller. A folder
 * that cannot be written is reported once per process; compiles go on
 * without the cache. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kiln/plugin.h>

/* ---- SHA-256 (FIPS 180-4) ---- */

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t ror(uint32_t x, unsigned n) {
  return (x >> n) | (x << (32 - n));
}

static void sha_block(uint32_t *h, const unsigned char *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
           p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
    uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void kiln_sha256_init(kiln_sha256 *s) {
  static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, h0, sizeof h0);
  s->bytes = 0;
}

void kiln_sha256_update(kiln_sha256 *s, const void *data, size_t n) {
  const unsigned char *p = data;
  size_t have = (size_t)(s->bytes % 64);
  s->bytes += n;
  if (have) {
    size_t take = 64 - have < n ? 64 - have : n;
    memcpy(s->buf + have, p, take);
    p += take, n -= take, have += take;
    if (have < 64)
      return;
    sha_block(s->h, s->buf);
  }
  for (; n >= 64; p += 64, n -= 64)
    sha_block(s->h, p);
  if (n)
    memcpy(s->buf, p, n);
}

void kiln_sha256_final(kiln_sha256 *s, unsigned char out[32]) {
  uint64_t bits = s->bytes * 8;
  unsigned char pad[72] = {0x80};
  size_t have = (size_t)(s->bytes % 64), n = (have < 56 ? 56 : 120) - have;
  for (int i = 0; i < 8; i++)
    pad[n + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
  kiln_sha256_update(s, pad, n + 8);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 4; j++)
      out[4 * i + j] = (unsigned char)(s->h[i] >> (24 - 8 * j));
}

void kiln_cache_key_add(kiln_sha256 *s, const void *part, size_t n) {
  unsigned char len[8];
  for (int i = 0; i < 8; i++)
    len[i] = (unsigned char)((uint64_t)n >> (8 * i));
  kiln_sha256_update(s, len, 8);
  kiln_sha256_update(s, part, n);
}

/* ---- entries ---- */

static const char entry_magic[8] = {'K', 'I', 'L', 'N', 'C', 'C', 'H', '1'};

typedef struct entry_header {
  char magic[8];
  unsigned char key[32];
  uint64_t size, sum;
} entry_header;

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

bool kiln_cache_enabled(const kiln_compile_options *opts) {
  if (opts && KILN_STRUCT_HAS(opts, kiln_compile_options, flags) &&
      (opts->flags & KILN_COMPILE_NO_CACHE))
    return false;
  const char *d = getenv("KILN_CACHE_DIR");
  return !(d && strcmp(d, "off") == 0);
}

bool kiln_cache_dir(const char *backend, char *buf, size_t n) {
  const char *k = getenv("KILN_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  int len;
  if (k && *k)
    len = snprintf(buf, n, "%s", k);
  else if (x && *x)
    len = snprintf(buf, n, "%s/kiln/%s", x, backend);
  else if (h && *h)
    len = snprintf(buf, n, "%s/.cache/kiln/%s", h, backend);
  else
    return false;
  return len > 0 && (size_t)len < n;
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

static bool entry_path(const char *backend, const char *ext, const kiln_cache_key *k, char *buf,
                       size_t n, char *dir, size_t dn) {
  if (!kiln_cache_dir(backend, dir, dn))
    return false;
  char hex[65];
  for (int i = 0; i < 32; i++)
    snprintf(hex + 2 * i, 3, "%02x", k->bytes[i]);
  int len = snprintf(buf, n, "%s/%s.%s", dir, hex, ext);
  return len > 0 && (size_t)len < n;
}

kiln_cache_result kiln_cache_load(const char *backend, const char *ext, const kiln_cache_key *k,
                                  void **data, size_t *len) {
  char path[4400], dir[4096];
  *data = NULL;
  *len = 0;
  if (!entry_path(backend, ext, k, path, sizeof path, dir, sizeof dir))
    return KILN_CACHE_MISS;
  FILE *f = fopen(path, "rb");
  if (!f)
    return KILN_CACHE_MISS;
  entry_header hd;
  bool ok = fread(&hd, sizeof hd, 1, f) == 1 && !memcmp(hd.magic, entry_magic, 8) &&
            !memcmp(hd.key, k->bytes, 32) && hd.size > 0 && hd.size < ((uint64_t)1 << 34);
  void *b = ok ? malloc((size_t)hd.size) : NULL;
  ok = ok && b && fread(b, 1, (size_t)hd.size, f) == hd.size && fgetc(f) == EOF &&
       fnv(b, (size_t)hd.size) == hd.sum;
  fclose(f);
  if (!ok) {
    free(b);
    kiln_plugin_log(backend, KILN_LOG_WARN,
                    "compile cache entry %s is damaged (bad header, size, key or checksum); "
                    "compiling again and replacing it",
                    path);
    remove(path);
    return KILN_CACHE_DAMAGED;
  }
  *data = b;
  *len = (size_t)hd.size;
  return KILN_CACHE_HIT;
}

static atomic_flag warned_unwritable = ATOMIC_FLAG_INIT;

static void unwritable(const char *backend, const char *what, const char *path) {
  if (!atomic_flag_test_and_set(&warned_unwritable))
    kiln_plugin_log(backend, KILN_LOG_WARN,
                    "compile cache: cannot %s %s: %s; compiling without the cache (set "
                    "KILN_CACHE_DIR to a writable folder, or pass --no-cache)",
                    what, path, strerror(errno));
}

bool kiln_cache_store(const char *backend, const char *ext, const kiln_cache_key *k,
                      const void *data, size_t len) {
  static atomic_uint serial;
  char path[4400], tmp[4500], dir[4096];
  if (!len || !entry_path(backend, ext, k, path, sizeof path, dir, sizeof dir))
    return false;
  if (!mkdirs(dir)) {
    unwritable(backend, "create the folder", dir);
    return false;
  }
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&serial, 1));
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    unwritable(backend, "write in", dir);
    return false;
  }
  entry_header hd = {.size = len, .sum = fnv(data, len)};
  memcpy(hd.magic, entry_magic, 8);
  memcpy(hd.key, k->bytes, 32);
  bool ok = fwrite(&hd, sizeof hd, 1, f) == 1 && fwrite(data, 1, len, f) == len;
  ok = !fclose(f) && ok;
  if (!ok || rename(tmp, path)) {
    unwritable(backend, "store an entry in", dir);
    remove(tmp);
    return false;
  }
  return true;
}

void kiln_cache_remove(const char *backend, const char *ext, const kiln_cache_key *k) {
  char path[4400], dir[4096];
  if (entry_path(backend, ext, k, path, sizeof path, dir, sizeof dir))
    remove(path);
}
