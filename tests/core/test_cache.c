/* tests/core/test_cache.c: the compile cache host service (core/cache.c):
 * SHA-256 against the FIPS 180-2 vectors and lengths around the padding
 * boundary (digests from `sha256sum`), length-prefixed key parts, the entry
 * format (header fields checked against a checksum computed here), every
 * kind of damage reported and removed, a folder that cannot be created,
 * concurrent writers and readers (threads and processes), and which folder
 * and switches the environment selects. */
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kiln/plugin.h>

#include "suites.h"
#include "test_files.h"

#define HDR 56 /* magic 8, key 32, size 8, checksum 8 */

/* ---- helpers ---- */

static void hex32(const unsigned char d[32], char out[65]) {
  for (int i = 0; i < 32; i++)
    snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void digest_of(const void *p, size_t n, char out[65]) {
  kiln_sha256 s;
  unsigned char d[32];
  kiln_sha256_init(&s);
  kiln_sha256_update(&s, p, n);
  kiln_sha256_final(&s, d);
  hex32(d, out);
}

/* A key from one or two parts (b may be NULL: one part). */
static void key_of(const char *a, const char *b, kiln_cache_key *k) {
  kiln_sha256 s;
  kiln_sha256_init(&s);
  kiln_cache_key_add(&s, a, strlen(a));
  if (b)
    kiln_cache_key_add(&s, b, strlen(b));
  kiln_sha256_final(&s, k->bytes);
}

/* FNV-1a 64, written from its definition (offset basis, prime). */
static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 14695981039346656037ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

/* Where the entry for k should be: the folder, the key in hex, ext. */
static void entry_file(const char *dir, const kiln_cache_key *k, const char *ext, char *buf,
                       size_t n) {
  char hex[65];
  hex32(k->bytes, hex);
  snprintf(buf, n, "%s/%s.%s", dir, hex, ext);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Names in dir: how many, and how many contain ".tmp." */
static int count_files(const char *dir, int *tmp) {
  DIR *d = opendir(dir);
  int c = 0;
  *tmp = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    c++;
    if (strstr(de->d_name, ".tmp."))
      (*tmp)++;
  }
  if (d)
    closedir(d);
  return c;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  remove(p);
  return 0;
}

/* The environment a test changes, saved and restored around it, and a
 * fresh folder per test. */
static const char *const env_names[] = {"KILN_CACHE_DIR", "XDG_CACHE_HOME", "HOME",
                                        "KILN_LOG_LEVEL"};
#define N_ENV (sizeof env_names / sizeof *env_names)
static char *env_saved[N_ENV];
static bool env_had[N_ENV];
static char g_dir[64];

static void cache_setup(void) {
  for (size_t i = 0; i < N_ENV; i++) {
    const char *v = getenv(env_names[i]);
    env_had[i] = v != NULL;
    env_saved[i] = v ? strdup(v) : NULL;
  }
  unsetenv("KILN_LOG_LEVEL"); /* warnings shown: some tests read them */
  snprintf(g_dir, sizeof g_dir, "/tmp/kiln-cache-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(g_dir));
  setenv("KILN_CACHE_DIR", g_dir, 1);
}

static void cache_teardown(void) {
  nftw(g_dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
  for (size_t i = 0; i < N_ENV; i++) {
    if (env_had[i])
      setenv(env_names[i], env_saved[i], 1);
    else
      unsetenv(env_names[i]);
    free(env_saved[i]);
    env_saved[i] = NULL;
  }
}


/* ---- SHA-256 ---- */

START_TEST(sha256_fips_vectors) {
  char hex[65];
  digest_of("", 0, hex);
  ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  digest_of("abc", 3, hex);
  ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  digest_of(m448, strlen(m448), hex);
  ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                     "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
  digest_of(m896, strlen(m896), hex);
  ck_assert_str_eq(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  /* The same 448-bit message a byte at a time. */
  kiln_sha256 s;
  unsigned char d[32];
  kiln_sha256_init(&s);
  for (size_t i = 0; i < strlen(m448); i++)
    kiln_sha256_update(&s, m448 + i, 1);
  kiln_sha256_final(&s, d);
  hex32(d, hex);
  ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

START_TEST(sha256_million_a_uneven_chunks) {
  enum { N = 1000000 };
  char *a = malloc(N);
  ck_assert_ptr_nonnull(a);
  memset(a, 'a', N);
  /* Chunks that straddle the 64-byte blocks every which way, and empty
   * updates in between. */
  static const size_t chunks[] = {1, 0, 63, 64, 65, 3, 127, 128, 129, 1000, 55, 56, 57, 4096, 7};
  kiln_sha256 s;
  unsigned char d[32];
  char hex[65];
  kiln_sha256_init(&s);
  size_t off = 0;
  for (size_t i = 0; off < N; i++) {
    size_t c = chunks[i % (sizeof chunks / sizeof *chunks)];
    if (c > N - off)
      c = N - off;
    kiln_sha256_update(&s, a + off, c);
    off += c;
  }
  kiln_sha256_final(&s, d);
  hex32(d, hex);
  ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  /* And in one piece. */
  digest_of(a, N, hex);
  ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(a);
}
END_TEST

/* Lengths where the padding needs one block or two (digests of n 'a's from
 * sha256sum). */
START_TEST(sha256_padding_boundaries) {
  static const struct {
    size_t n;
    const char *hex;
  } v[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  char a[128], hex[65];
  memset(a, 'a', sizeof a);
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    digest_of(a, v[i].n, hex);
    ck_assert_msg(!strcmp(hex, v[i].hex), "%zu 'a's: %s, expected %s", v[i].n, hex, v[i].hex);
  }
}
END_TEST

START_TEST(key_parts_length_prefixed) {
  kiln_cache_key ab_c, a_bc, abc, ab_c2, ab_empty, ab;
  key_of("ab", "c", &ab_c);
  key_of("a", "bc", &a_bc);
  key_of("abc", NULL, &abc);
  key_of("ab", "c", &ab_c2);
  key_of("ab", "", &ab_empty);
  key_of("ab", NULL, &ab);
  ck_assert(memcmp(ab_c.bytes, a_bc.bytes, 32) != 0);
  ck_assert(memcmp(ab_c.bytes, abc.bytes, 32) != 0);
  ck_assert(memcmp(a_bc.bytes, abc.bytes, 32) != 0);
  /* An empty part still counts. */
  ck_assert(memcmp(ab_empty.bytes, ab.bytes, 32) != 0);
  /* Deterministic. */
  ck_assert(memcmp(ab_c.bytes, ab_c2.bytes, 32) == 0);
  /* A key is not the plain digest of the concatenated parts. */
  char plain[65], keyhex[65];
  digest_of("abc", 3, plain);
  hex32(abc.bytes, keyhex);
  ck_assert_str_ne(plain, keyhex);
}
END_TEST

/* ---- entries ---- */

static unsigned char *pattern(size_t n, unsigned seed) {
  unsigned char *p = malloc(n);
  ck_assert_ptr_nonnull(p);
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(seed * 37u + i * 13u + (i >> 8) * 7u);
  return p;
}

START_TEST(store_then_load) {
  kiln_cache_key k;
  key_of("model", "target", &k);
  enum { N = 5000 };
  unsigned char *data = pattern(N, 1);
  void *got = (void *)1;
  size_t len = 99;
  ck_assert_int_eq(kiln_cache_load("test", "o", &k, &got, &len), KILN_CACHE_MISS);
  ck_assert_ptr_null(got);
  ck_assert_uint_eq(len, 0);
  ck_assert(kiln_cache_store("test", "o", &k, data, N));
  char path[256];
  entry_file(g_dir, &k, "o", path, sizeof path);
  ck_assert_msg(exists(path), "no entry %s", path);
  ck_assert_int_eq(file_size(path), HDR + N);
  /* The header, field by field. */
  size_t n;
  unsigned char *raw = slurp(path, &n);
  ck_assert(!memcmp(raw, "KILNCCH1", 8));
  ck_assert(!memcmp(raw + 8, k.bytes, 32));
  uint64_t size, sum;
  memcpy(&size, raw + 40, 8);
  memcpy(&sum, raw + 48, 8);
  ck_assert_uint_eq(size, N);
  ck_assert_uint_eq(sum, fnv1a(data, N));
  ck_assert(!memcmp(raw + HDR, data, N));
  free(raw);
  ck_assert_int_eq(kiln_cache_load("test", "o", &k, &got, &len), KILN_CACHE_HIT);
  ck_assert_uint_eq(len, N);
  ck_assert(!memcmp(got, data, N));
  free(got);
  /* Another extension is another entry; another key misses. */
  ck_assert_int_eq(kiln_cache_load("test", "clbin", &k, &got, &len), KILN_CACHE_MISS);
  kiln_cache_key other;
  key_of("model", "target2", &other);
  ck_assert_int_eq(kiln_cache_load("test", "o", &other, &got, &len), KILN_CACHE_MISS);
  /* A second store replaces the first. */
  unsigned char *d2 = pattern(77, 2);
  ck_assert(kiln_cache_store("test", "o", &k, d2, 77));
  ck_assert_int_eq(kiln_cache_load("test", "o", &k, &got, &len), KILN_CACHE_HIT);
  ck_assert_uint_eq(len, 77);
  ck_assert(!memcmp(got, d2, 77));
  free(got);
  /* remove, and remove again (nothing there: harmless). */
  kiln_cache_remove("test", "o", &k);
  ck_assert(!exists(path));
  kiln_cache_remove("test", "o", &k);
  ck_assert_int_eq(kiln_cache_load("test", "o", &k, &got, &len), KILN_CACHE_MISS);
  int tmp;
  ck_assert_int_eq(count_files(g_dir, &tmp), 0);
  free(data);
  free(d2);
}
END_TEST

START_TEST(store_makes_missing_folders) {
  char deep[128];
  snprintf(deep, sizeof deep, "%s/a/b/c", g_dir);
  setenv("KILN_CACHE_DIR", deep, 1);
  kiln_cache_key k;
  key_of("deep", NULL, &k);
  ck_assert(kiln_cache_store("test", "o", &k, "xyz", 3));
  void *got;
  size_t len;
  ck_assert_int_eq(kiln_cache_load("test", "o", &k, &got, &len), KILN_CACHE_HIT);
  ck_assert_uint_eq(len, 3);
  ck_assert(!memcmp(got, "xyz", 3));
  free(got);
}
END_TEST

/* The ways an entry file can be damaged. */
typedef enum damage {
  FLIP_DATA,
  FLIP_CHECKSUM,
  TRUNCATE_DATA,
  TRUNCATE_HEADER,
  EMPTY_FILE,
  APPEND_BYTE,
  WRONG_MAGIC,
  WRONG_KEY,
  SIZE_TOO_BIG,
  SIZE_TOO_SMALL,
  N_DAMAGE
} damage;

static const char *const damage_names[] = {
    "flipped data byte", "flipped checksum", "truncated data", "truncated header",
    "empty file",        "appended byte",    "wrong magic",    "wrong key",
    "size too big",      "size too small"};

static void apply_damage(unsigned char **raw, size_t *n, damage d) {
  unsigned char *r = *raw;
  uint64_t size;
  switch (d) {
  case FLIP_DATA:
    r[HDR + 1234] ^= 0x01;
    break;
  case FLIP_CHECKSUM:
    r[48 + 3] ^= 0x80;
    break;
  case TRUNCATE_DATA:
    *n -= 1;
    break;
  case TRUNCATE_HEADER:
    *n = 30;
    break;
  case EMPTY_FILE:
    *n = 0;
    break;
  case APPEND_BYTE:
    *raw = r = realloc(r, *n + 1);
    ck_assert_ptr_nonnull(r);
    r[(*n)++] = 0;
    break;
  case WRONG_MAGIC:
    r[7] = '2'; /* "KILNCCH2" */
    break;
  case WRONG_KEY:
    r[8 + 31] ^= 0xff;
    break;
  case SIZE_TOO_BIG:
    memcpy(&size, r + 40, 8);
    size += 1;
    memcpy(r + 40, &size, 8);
    break;
  case SIZE_TOO_SMALL:
    memcpy(&size, r + 40, 8);
    size -= 1;
    memcpy(r + 40, &size, 8);
    break;
  default:
    break;
  }
}

START_TEST(damaged_entries_reported_and_removed) {
  enum { N = 3000 };
  unsigned char *data = pattern(N, 3);
  kiln_cache_key k;
  key_of("damage", NULL, &k);
  char path[256];
  entry_file(g_dir, &k, "o", path, sizeof path);
  for (int d = 0; d < N_DAMAGE; d++) {
    ck_assert(kiln_cache_store("test", "o", &k, data, N));
    size_t n;
    unsigned char *raw = slurp(path, &n);
    ck_assert_uint_eq(n, HDR + N);
    apply_damage(&raw, &n, (damage)d);
    spill(path, raw, n);
    free(raw);
    void *got = (void *)1;
    size_t len = 99;
    capture c;
    cap_begin(&c);
    kiln_cache_result r = kiln_cache_load("test", "o", &k, &got, &len);
    char *log = cap_end(&c);
    ck_assert_msg(r == KILN_CACHE_DAMAGED, "%s: result %d", damage_names[d], (int)r);
    ck_assert_msg(got == NULL && len == 0, "%s: data handed out", damage_names[d]);
    ck_assert_msg(!exists(path), "%s: damaged entry left in place", damage_names[d]);
    ck_assert_msg(strstr(log, "damaged") && strstr(log, path), "%s: no warning naming %s: %s",
                  damage_names[d], path, log);
    free(log);
    ck_assert_int_eq(kiln_cache_load("test", "o", &k, &got, &len), KILN_CACHE_MISS);
  }
  /* An entry of another key copied under this key's name: the key inside
   * does not match. */
  kiln_cache_key other;
  key_of("another", NULL, &other);
  ck_assert(kiln_cache_store("test", "o", &other, data, N));
  char opath[256];
  entry_file(g_dir, &other, "o", opath, sizeof opath);
  ck_assert_int_eq(rename(opath, path), 0);
  void *got;
  size_t len;
  capture c;
  cap_begin(&c);
  kiln_cache_result r = kiln_cache_load("test", "o", &k, &got, &len);
  free(cap_end(&c));
  ck_assert_int_eq(r, KILN_CACHE_DAMAGED);
  ck_assert(!exists(path));
  /* After damage the entry can be stored again and is whole. */
  ck_assert(kiln_cache_store("test", "o", &k, data, N));
  ck_assert_int_eq(kiln_cache_load("test", "o", &k, &got, &len), KILN_CACHE_HIT);
  ck_assert_uint_eq(len, N);
  ck_assert(!memcmp(got, data, N));
  free(got);
  free(data);
}
END_TEST

/* Run by a fresh process (test_main.c, --cache-unwritable-child DIR): two
 * stores into DIR, which cannot be made; 0 when both returned false and
 * loads missed. The parent counts the warnings on its stderr. */
int cache_unwritable_child(const char *dir) {
  setenv("KILN_CACHE_DIR", dir, 1);
  unsetenv("KILN_LOG_LEVEL");
  kiln_cache_key k;
  key_of("unwritable", NULL, &k);
  int rc = 0;
  for (int i = 0; i < 2; i++) {
    if (kiln_cache_store("test", "o", &k, "data", 4))
      rc = 1;
    void *got;
    size_t len;
    if (kiln_cache_load("test", "o", &k, &got, &len) != KILN_CACHE_MISS)
      rc = 2;
  }
  return rc;
}

static char self_exe[4096];

START_TEST(unwritable_folder) {
  /* A folder below a regular file can never be made, even by root. */
  char file[128], dir[160];
  snprintf(file, sizeof file, "%s/regular", g_dir);
  spill(file, "x", 1);
  snprintf(dir, sizeof dir, "%s/sub", file);
  setenv("KILN_CACHE_DIR", dir, 1);
  kiln_cache_key k;
  key_of("unwritable", NULL, &k);
  capture c;
  cap_begin(&c);
  bool stored = kiln_cache_store("test", "o", &k, "data", 4);
  free(cap_end(&c));
  ck_assert(!stored);
  void *got = (void *)1;
  size_t len = 1;
  ck_assert_int_eq(kiln_cache_load("test", "o", &k, &got, &len), KILN_CACHE_MISS);
  ck_assert_ptr_null(got);
  int tmp;
  ck_assert_int_eq(count_files(g_dir, &tmp), 1); /* the regular file alone */
  ck_assert_int_eq(tmp, 0);

  /* The warning: once per process (a fresh one, whose flag is unset). */
  ssize_t m = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  ck_assert_int_gt(m, 0);
  self_exe[m] = 0;
  char logp[] = "/tmp/kiln-cache-child-XXXXXX";
  int fd = mkstemp(logp);
  ck_assert_int_ge(fd, 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fd, 2);
    execl(self_exe, self_exe, "--cache-unwritable-child", dir, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  close(fd);
  size_t n;
  char *log = (char *)slurp(logp, &n);
  log[n] = 0;
  unlink(logp);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d; stderr: %s", st, log);
  int warnings = 0;
  for (const char *p = log; (p = strstr(p, "compile cache: cannot")); p++)
    warnings++;
  ck_assert_msg(warnings == 1, "%d warnings for two failed stores: %s", warnings, log);
  ck_assert_msg(strstr(log, dir) != NULL, "the warning does not name %s: %s", dir, log);
  free(log);
}
END_TEST

/* ---- concurrency ---- */

enum { N_PAY = 4, WRITES = 60 };

static size_t pay_size(int i) {
  return 2000 + (size_t)i * 6007; /* 2000 .. 20021 bytes, all different */
}

static unsigned char *g_pay[N_PAY];

static void make_payloads(void) {
  for (int i = 0; i < N_PAY; i++)
    g_pay[i] = pattern(pay_size(i), 10 + (unsigned)i);
}

static void free_payloads(void) {
  for (int i = 0; i < N_PAY; i++) {
    free(g_pay[i]);
    g_pay[i] = NULL;
  }
}

/* 0: the load missed or returned one payload whole; 1: damaged; 2: a hit
 * that is none of the payloads. */
static int check_load(const kiln_cache_key *k) {
  void *got;
  size_t len;
  kiln_cache_result r = kiln_cache_load("test", "o", k, &got, &len);
  if (r == KILN_CACHE_MISS)
    return 0;
  if (r != KILN_CACHE_HIT)
    return 1;
  int ok = 2;
  for (int i = 0; i < N_PAY; i++)
    if (len == pay_size(i) && !memcmp(got, g_pay[i], len))
      ok = 0;
  free(got);
  return ok;
}

typedef struct worker {
  const kiln_cache_key *k;
  int index; /* writer: its payload */
  atomic_int *writers_left;
  int bad_store, damaged, mixed, hits;
} worker;

static void *writer_main(void *arg) {
  worker *w = arg;
  for (int i = 0; i < WRITES; i++) {
    if (!kiln_cache_store("test", "o", w->k, g_pay[w->index], pay_size(w->index)))
      w->bad_store++;
    int r = check_load(w->k);
    w->damaged += r == 1;
    w->mixed += r == 2;
  }
  atomic_fetch_sub(w->writers_left, 1);
  return NULL;
}

static void *reader_main(void *arg) {
  worker *w = arg;
  while (atomic_load(w->writers_left) > 0) {
    int r = check_load(w->k);
    w->damaged += r == 1;
    w->mixed += r == 2;
  }
  return NULL;
}

/* After the writers: one entry, whole, one of the payloads; no temporaries. */
static void check_after(const kiln_cache_key *k) {
  ck_assert_int_eq(check_load(k), 0);
  void *got;
  size_t len;
  ck_assert_int_eq(kiln_cache_load("test", "o", k, &got, &len), KILN_CACHE_HIT);
  free(got);
  int tmp, n = count_files(g_dir, &tmp);
  ck_assert_msg(tmp == 0, "%d temporary files left", tmp);
  ck_assert_int_eq(n, 1);
}

START_TEST(concurrent_threads) {
  make_payloads();
  kiln_cache_key k;
  key_of("concurrent", "threads", &k);
  enum { READERS = 3 };
  atomic_int left = N_PAY;
  worker w[N_PAY + READERS];
  pthread_t th[N_PAY + READERS];
  for (int i = 0; i < N_PAY + READERS; i++) {
    w[i] = (worker){.k = &k, .index = i, .writers_left = &left};
    ck_assert_int_eq(pthread_create(&th[i], NULL, i < N_PAY ? writer_main : reader_main, &w[i]), 0);
  }
  int bad_store = 0, damaged = 0, mixed = 0;
  for (int i = 0; i < N_PAY + READERS; i++) {
    pthread_join(th[i], NULL);
    bad_store += w[i].bad_store, damaged += w[i].damaged, mixed += w[i].mixed;
  }
  ck_assert_msg(bad_store == 0, "%d stores failed", bad_store);
  ck_assert_msg(damaged == 0, "%d loads saw a damaged entry", damaged);
  ck_assert_msg(mixed == 0, "%d loads returned none of the payloads", mixed);
  check_after(&k);
  free_payloads();
}
END_TEST

START_TEST(concurrent_processes) {
  make_payloads();
  kiln_cache_key k;
  key_of("concurrent", "processes", &k);
  pid_t pids[N_PAY];
  fflush(NULL);
  for (int i = 0; i < N_PAY; i++) {
    pids[i] = fork();
    ck_assert_int_ge(pids[i], 0);
    if (pids[i] == 0) {
      /* No Check macros here: a child is not the runner. */
      atomic_int left = 1;
      worker w = {.k = &k, .index = i, .writers_left = &left};
      writer_main(&w);
      _exit(w.bad_store ? 3 : w.damaged ? 1 : w.mixed ? 2 : 0);
    }
  }
  /* The parent reads until every writer is done. */
  int damaged = 0, mixed = 0, running = N_PAY, status[N_PAY] = {0};
  bool done[N_PAY] = {0};
  while (running > 0) {
    int r = check_load(&k);
    damaged += r == 1;
    mixed += r == 2;
    for (int i = 0; i < N_PAY; i++)
      if (!done[i] && waitpid(pids[i], &status[i], WNOHANG) == pids[i])
        done[i] = true, running--;
  }
  for (int i = 0; i < N_PAY; i++)
    ck_assert_msg(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0,
                  "writer %d: status %d (1 damaged, 2 mixed, 3 store failed)", i, status[i]);
  ck_assert_msg(damaged == 0, "%d loads saw a damaged entry", damaged);
  ck_assert_msg(mixed == 0, "%d loads returned none of the payloads", mixed);
  check_after(&k);
  free_payloads();
}
END_TEST

/* ---- switches and folders ---- */

START_TEST(enabled_switches) {
  unsetenv("KILN_CACHE_DIR");
  ck_assert(kiln_cache_enabled(NULL));
  kiln_compile_options o = {.struct_size = sizeof o, .device = -1};
  ck_assert(kiln_cache_enabled(&o));
  o.flags = KILN_COMPILE_PROFILE;
  ck_assert(kiln_cache_enabled(&o));
  o.flags = KILN_COMPILE_NO_CACHE;
  ck_assert(!kiln_cache_enabled(&o));
  o.flags = KILN_COMPILE_NO_CACHE | KILN_COMPILE_PROFILE;
  ck_assert(!kiln_cache_enabled(&o));
  /* A caller of the layout before flags: the member is not its to set, so
   * it is not read. */
  o.struct_size = (uint32_t)offsetof(kiln_compile_options, flags);
  ck_assert(kiln_cache_enabled(&o));
  o.struct_size = sizeof o;
  o.flags = 0;
  setenv("KILN_CACHE_DIR", "off", 1);
  ck_assert(!kiln_cache_enabled(NULL));
  ck_assert(!kiln_cache_enabled(&o));
  setenv("KILN_CACHE_DIR", "/tmp/off", 1); /* a folder named off is a folder */
  ck_assert(kiln_cache_enabled(NULL));
  setenv("KILN_CACHE_DIR", "", 1);
  ck_assert(kiln_cache_enabled(NULL));
}
END_TEST

START_TEST(folder_precedence) {
  char buf[512];
  setenv("KILN_CACHE_DIR", "/k/dir", 1);
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  setenv("HOME", "/h/user", 1);
  ck_assert(kiln_cache_dir("cpu", buf, sizeof buf));
  ck_assert_str_eq(buf, "/k/dir");
  unsetenv("KILN_CACHE_DIR");
  ck_assert(kiln_cache_dir("cpu", buf, sizeof buf));
  ck_assert_str_eq(buf, "/x/cache/kiln/cpu");
  ck_assert(kiln_cache_dir("opencl", buf, sizeof buf));
  ck_assert_str_eq(buf, "/x/cache/kiln/opencl");
  setenv("KILN_CACHE_DIR", "", 1); /* empty: as unset */
  ck_assert(kiln_cache_dir("cpu", buf, sizeof buf));
  ck_assert_str_eq(buf, "/x/cache/kiln/cpu");
  unsetenv("XDG_CACHE_HOME");
  ck_assert(kiln_cache_dir("cpu", buf, sizeof buf));
  ck_assert_str_eq(buf, "/h/user/.cache/kiln/cpu");
  setenv("XDG_CACHE_HOME", "", 1);
  ck_assert(kiln_cache_dir("cpu", buf, sizeof buf));
  ck_assert_str_eq(buf, "/h/user/.cache/kiln/cpu");
  unsetenv("HOME");
  ck_assert(!kiln_cache_dir("cpu", buf, sizeof buf));
  /* No folder: loads miss, stores fail. */
  unsetenv("KILN_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  kiln_cache_key k;
  key_of("nowhere", NULL, &k);
  void *got;
  size_t len;
  ck_assert_int_eq(kiln_cache_load("test", "o", &k, &got, &len), KILN_CACHE_MISS);
  capture c;
  cap_begin(&c);
  bool stored = kiln_cache_store("test", "o", &k, "d", 1);
  free(cap_end(&c));
  ck_assert(!stored);
  /* A buffer too small for the name. */
  setenv("KILN_CACHE_DIR", "/a/rather/long/folder/name", 1);
  char small[8];
  ck_assert(!kiln_cache_dir("cpu", small, sizeof small));
}
END_TEST

Suite *cache_suite(void) {
  Suite *s = suite_create("cache");
  TCase *tc = tcase_create("cache");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, cache_setup, cache_teardown);
  tcase_add_test(tc, sha256_fips_vectors);
  tcase_add_test(tc, sha256_million_a_uneven_chunks);
  tcase_add_test(tc, sha256_padding_boundaries);
  tcase_add_test(tc, key_parts_length_prefixed);
  tcase_add_test(tc, store_then_load);
  tcase_add_test(tc, store_makes_missing_folders);
  tcase_add_test(tc, damaged_entries_reported_and_removed);
  tcase_add_test(tc, unwritable_folder);
  tcase_add_test(tc, concurrent_threads);
  tcase_add_test(tc, concurrent_processes);
  tcase_add_test(tc, enabled_switches);
  tcase_add_test(tc, folder_precedence);
  suite_add_tcase(s, tc);
  return s;
}
