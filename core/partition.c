/* core/partition.c: one function across several backends (`--backend
 * A+B+...`). Places each node on the first entry of the list that runs it
 * (natively, else after lowering), within each device's memory, forms
 * acyclic regions per entry, compiles each region as a function of its own
 * through the ordinary pipeline, and runs the region DAG with host buffers
 * between regions. docs/partitioning.md is the user's view. */
#include "partition.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "kiln/passes.h"

/* The cost model's price of moving a byte between two entries (a host copy
 * at about 10 GB/s), used only when a backend estimates node costs. */
#define PART_NS_PER_BYTE 0.1

/* ---- small helpers ------------------------------------------------------ */

static char *part_strdup(const char *s) {
  return kiln_core_strdup(s ? s : "");
}

/* A map from pointers to indexes (open addressing; never shrinks). */
typedef struct part_map {
  const void **keys;
  uint32_t *vals;
  uint32_t cap, count;
} part_map;

static size_t part_hash(const void *p, uint32_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)(x & (cap - 1));
}

static bool part_map_get(const part_map *m, const void *k, uint32_t *v) {
  if (!m->cap)
    return false;
  for (size_t i = part_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i])
      return false;
    if (m->keys[i] == k) {
      if (v)
        *v = m->vals[i];
      return true;
    }
  }
}

static kiln_status part_map_put(part_map *m, const void *k, uint32_t v) {
  if ((m->count + 1) * 2 > m->cap) {
    part_map g = {.cap = m->cap ? m->cap * 2 : 64};
    g.keys = calloc(g.cap, sizeof *g.keys);
    g.vals = calloc(g.cap, sizeof *g.vals);
    if (!g.keys || !g.vals) {
      free(g.keys);
      free(g.vals);
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory placing nodes");
    }
    for (uint32_t i = 0; i < m->cap; i++)
      if (m->keys[i]) {
        size_t j = part_hash(m->keys[i], g.cap);
        while (g.keys[j])
          j = (j + 1) & (g.cap - 1);
        g.keys[j] = m->keys[i];
        g.vals[j] = m->vals[i];
        g.count++;
      }
    free(m->keys);
    free(m->vals);
    *m = g;
  }
  size_t i = part_hash(k, m->cap);
  while (m->keys[i] && m->keys[i] != k)
    i = (i + 1) & (m->cap - 1);
  if (!m->keys[i])
    m->count++;
  m->keys[i] = k;
  m->vals[i] = v;
  return NULL;
}

static void part_map_free(part_map *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---- the backend list --------------------------------------------------- */

/* "12", "64K", "3M", "1G" (powers of 1024) into bytes. */
static bool part_parse_bytes(const char *s, size_t n, uint64_t *out) {
  if (n == 0)
    return false;
  uint64_t v = 0, mul = 1;
  size_t i = 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > UINT64_MAX / 10 - 9)
      return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (i == 0)
    return false;
  if (i + 1 == n) {
    char c = s[i];
    mul = c == 'K' || c == 'k' ? 1ull << 10 : c == 'M' ? 1ull << 20 : c == 'G' ? 1ull << 30 : 0;
    if (!mul)
      return false;
  } else if (i != n) {
    return false;
  }
  if (v > UINT64_MAX / mul)
    return false;
  *out = v * mul;
  return true;
}

kiln_status kiln_part_parse(const kiln_context *ctx, const char *list, const char *device_memory,
                            kiln_part_entry *entries, uint32_t *count) {
  *count = 0;
  const char *p = list;
  while (true) {
    const char *end = strchr(p, '+');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "backend list '%s' has an empty entry (write A+B, each a backend "
                              "name with an optional :DEVICE)",
                              list);
    if (*count == KILN_PART_MAX_ENTRIES)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "backend list '%s' has more than %d entries",
                              list, KILN_PART_MAX_ENTRIES);
    kiln_part_entry *e = &entries[*count];
    memset(e, 0, sizeof *e);
    if (len >= sizeof e->label)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "backend list entry '%.*s...' is too long",
                              40, p);
    memcpy(e->label, p, len);
    e->label[len] = 0;
    e->device = -1;
    char name[96];
    memcpy(name, e->label, len + 1);
    char *colon = strchr(name, ':');
    if (colon) {
      *colon = 0;
      char *dend = NULL;
      errno = 0;
      long d = strtol(colon + 1, &dend, 10);
      if (!colon[1] || *dend || errno || d < 0 || d > INT32_MAX)
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "backend list entry '%s': the device after ':' must be a "
                                "number (e.g. %s:0)",
                                e->label, name);
      e->device = (int32_t)d;
    }
    const kiln_registry_backend *be = kiln_registry_find(ctx, name);
    if (!be)
      return kiln_status_wrap(kiln_core_no_backend(ctx, name), "backend list '%s'", list);
    e->plugin = &be->desc;
    uint32_t (*dc)(void *) = KILN_PLUGIN_HOOK(e->plugin, device_count);
    kiln_status (*di)(void *, uint32_t, kiln_device_info *) =
        KILN_PLUGIN_HOOK(e->plugin, device_info);
    uint32_t ndev = dc ? dc(e->plugin->state) : 0;
    if (e->device >= 0 && (uint32_t)e->device >= ndev && !(ndev == 0 && e->device == 0))
      return kiln_status_make(KILN_OUT_OF_RANGE,
                              "backend list entry '%s': backend '%s' has %u device%s (0 to %d)",
                              e->label, name, ndev, ndev == 1 ? "" : "s", (int)ndev - 1);
    uint32_t dev = e->device >= 0 ? (uint32_t)e->device : 0;
    if (di && dev < ndev) {
      kiln_device_info info;
      memset(&info, 0, sizeof info);
      kiln_status s = di(e->plugin->state, dev, &info);
      if (s)
        kiln_status_free(s); /* no report: no limit */
      else
        e->mem_cap = info.memory_bytes;
    }
    for (uint32_t i = 0; i < *count; i++)
      if (entries[i].plugin == e->plugin &&
          (entries[i].device < 0 ? 0 : entries[i].device) == (e->device < 0 ? 0 : e->device))
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "backend list '%s' names the same device twice ('%s' and '%s')",
                                list, entries[i].label, e->label);
    (*count)++;
    if (!end)
      break;
    p = end + 1;
  }
  /* --device-memory NAME=BYTES,...: NAME is an entry as written, or a
   * backend name that stands for its entry without a device. */
  for (const char *q = device_memory; q && *q;) {
    const char *end = strchr(q, ',');
    size_t len = end ? (size_t)(end - q) : strlen(q);
    const char *eq = memchr(q, '=', len);
    uint64_t bytes = 0;
    if (!eq || eq == q || !part_parse_bytes(eq + 1, len - (size_t)(eq - q) - 1, &bytes))
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "device memory '%.*s': write NAME=BYTES, e.g. cpu=64M (K, M, G "
                              "are powers of 1024)",
                              (int)len, q);
    size_t nl = (size_t)(eq - q);
    bool found = false;
    for (uint32_t i = 0; i < *count; i++) {
      kiln_part_entry *e = &entries[i];
      bool match = strlen(e->label) == nl && memcmp(e->label, q, nl) == 0;
      if (!match && e->device <= 0) {
        /* "opencl" names "opencl:0" and the reverse */
        const char *nm = e->plugin->name;
        char alt[96];
        snprintf(alt, sizeof alt, e->device == 0 ? "%s" : "%s:0", nm);
        match = strlen(alt) == nl && memcmp(alt, q, nl) == 0;
      }
      if (match) {
        e->mem_cap = bytes;
        found = true;
      }
    }
    if (!found)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "device memory '%.*s': no entry '%.*s' in the backend list '%s'",
                              (int)len, q, (int)nl, q, list);
    q = end ? end + 1 : q + len;
  }
  return NULL;
}

/* ---- can an entry run a node? ------------------------------------------ */

static bool part_declares(const kiln_plugin *p, const kiln_node *n) {
  if (!kiln_plugin_supports(p, n))
    return false;
  if (kiln_core_node_is_quantized(n))
    return KILN_PLUGIN_HOOK(p, supports_quantized) && p->supports_quantized(p->state, n);
  return true;
}

static bool part_supports_cb(void *user, const kiln_node *n) {
  return kiln_plugin_supports(user, n);
}

/* Copy node n (of another module) into f with inputs `in`. */
static kiln_status part_copy_node(kiln_function *f, const kiln_node *n, kiln_value *const *in,
                                  bool keep_names, kiln_node **out) {
  const kiln_attrs *a = kiln_node_attrs(n);
  uint32_t na = kiln_attrs_count(a), nr = kiln_node_result_count(n);
  kiln_attr_desc *d = calloc(na ? na : 1, sizeof *d);
  const char **names = calloc(nr ? nr : 1, sizeof *names);
  if (!d || !names) {
    free(d);
    free(names);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory copying a node");
  }
  for (uint32_t i = 0; i < na; i++) {
    const kiln_attr *x = kiln_attrs_at(a, i);
    d[i].name = kiln_attr_name(x);
    d[i].kind = kiln_attr_get_kind(x);
    switch (d[i].kind) {
    case KILN_ATTR_INT: d[i].i = kiln_attr_int(x); break;
    case KILN_ATTR_FLOAT: d[i].f = kiln_attr_float(x); break;
    case KILN_ATTR_STRING: d[i].s = kiln_attr_string(x); break;
    case KILN_ATTR_INTS:
      d[i].ints = kiln_attr_ints(x);
      d[i].len = kiln_attr_len(x);
      break;
    case KILN_ATTR_FLOATS:
      d[i].floats = kiln_attr_floats(x);
      d[i].len = kiln_attr_len(x);
      break;
    case KILN_ATTR_TYPE: d[i].type = kiln_attr_type(x); break;
    }
  }
  for (uint32_t i = 0; i < nr; i++)
    names[i] = keep_names ? kiln_value_name(kiln_node_result(n, i)) : NULL;
  kiln_status s = kiln_function_add_node_named(f, kiln_node_get_kind(n), kiln_node_name(n), in,
                                               kiln_node_input_count(n), d, na, nr, names, out);
  free(d);
  free(names);
  return s;
}

/* Does entry p run n after lowering? Lowers a copy of n alone in a module
 * of its own with p's declarations and checks that p declares every node
 * that comes out. On false, why holds the reason. */
static bool part_lowers_on(const kiln_plugin *p, const kiln_node *n, char *why, size_t why_n) {
  kiln_module *m = NULL;
  kiln_function *f = NULL;
  kiln_status s = kiln_module_create(NULL, "trial", &m);
  if (!s)
    s = kiln_module_add_function(m, "main", &f);
  uint32_t ni = kiln_node_input_count(n);
  kiln_value **in = calloc(ni ? ni : 1, sizeof *in);
  if (!s && !in)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
  for (uint32_t i = 0; !s && i < ni; i++) {
    const kiln_value *v = kiln_node_input(n, i);
    if (!v)
      continue;
    char nm[32];
    snprintf(nm, sizeof nm, "in%u", i);
    if (kiln_value_get_kind(v) == KILN_VALUE_CONSTANT)
      s = kiln_module_add_constant_from(m, nm, v, &in[i]);
    else
      s = kiln_module_add_input(m, nm, kiln_value_type(v), &in[i]);
  }
  kiln_node *c = NULL;
  if (!s)
    s = part_copy_node(f, n, in, false, &c);
  for (uint32_t i = 0; !s && i < kiln_node_result_count(c); i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "out%u", i);
    s = kiln_function_add_output(f, nm, kiln_node_result(c, i));
  }
  free(in);
  if (!s) {
    kiln_pass_options po = kiln_pass_options_default();
    po.verify = false;
    po.supports_node = part_supports_cb;
    po.backend_user = (void *)p;
    po.backend_name = p->name;
    kiln_pass_target t = {.module = m, .function = "main"};
    s = kiln_pass_run(&t, "lower,dce", &po, NULL);
  }
  bool ok = !s;
  if (s) { /* the lowering pass's own words, without the pipeline's prefix */
    const char *msg = kiln_status_message(s), *at = strstr(msg, "lower: ");
    snprintf(why, why_n, "%s", at ? at + 7 : msg);
  }
  for (uint32_t i = 0; ok && i < kiln_function_node_count(f); i++) {
    const kiln_node *x = kiln_function_node(f, i);
    if (!part_declares(p, x)) {
      snprintf(why, why_n, "lowering leaves %s, which it does not run",
               kiln_node_kind_name(kiln_node_get_kind(x)));
      ok = false;
    }
  }
  kiln_status_free(s);
  kiln_module_destroy(m);
  return ok;
}

/* ---- the plan ----------------------------------------------------------- */

void kiln_part_plan_free(kiln_part_plan *p) {
  if (!p)
    return;
  for (uint32_t r = 0; r < p->region_count; r++) {
    free(p->regions[r].nodes);
    free(p->regions[r].deps);
  }
  free(p->regions);
  free(p->node_entry);
  free(p->node_region);
  free(p->node_lowered);
  free(p);
}

static inline bool part_dep(const kiln_part_plan *p, uint32_t r, uint32_t on) {
  return (p->regions[r].deps[on / 64] >> (on % 64)) & 1;
}

/* Room for one more region (growing every bit set when the words run out). */
static kiln_status part_new_region(kiln_part_plan *p, uint32_t entry, uint32_t *out) {
  if (p->region_count == p->region_cap) {
    uint32_t cap = p->region_cap ? p->region_cap * 2 : 64;
    kiln_part_region *r = realloc(p->regions, cap * sizeof *r);
    if (!r)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory forming regions");
    p->regions = r;
    uint32_t words = (cap + 63) / 64;
    for (uint32_t i = 0; i < p->region_count; i++) {
      uint64_t *d = realloc(r[i].deps, words * sizeof *d);
      if (!d)
        return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory forming regions");
      memset(d + p->dep_words, 0, (words - p->dep_words) * sizeof *d);
      r[i].deps = d;
    }
    p->dep_words = words;
    p->region_cap = cap;
  }
  kiln_part_region *r = &p->regions[p->region_count];
  memset(r, 0, sizeof *r);
  r->entry = entry;
  r->deps = calloc(p->dep_words, sizeof *r->deps);
  if (!r->deps)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory forming regions");
  *out = p->region_count++;
  return NULL;
}

static kiln_status part_region_add(kiln_part_region *r, uint32_t node) {
  if (r->node_count == r->node_cap) {
    uint32_t cap = r->node_cap ? r->node_cap * 2 : 16;
    uint32_t *n = realloc(r->nodes, cap * sizeof *n);
    if (!n)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory forming regions");
    r->nodes = n;
    r->node_cap = cap;
  }
  r->nodes[r->node_count++] = node;
  return NULL;
}

/* Bytes of the constants n reads that entry e does not hold yet (marking
 * them held when commit). held maps a constant to a mask of entries. */
static kiln_status part_weight_bytes(part_map *held, const kiln_node *n, uint32_t e, bool commit,
                                     uint64_t *out) {
  *out = 0;
  for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
    const kiln_value *v = kiln_node_input(n, i);
    if (!v || kiln_value_get_kind(v) != KILN_VALUE_CONSTANT)
      continue;
    bool again = false; /* a constant read twice by one node counts once */
    for (uint32_t j = 0; j < i && !again; j++)
      again = kiln_node_input(n, j) == v;
    uint32_t mask = 0;
    part_map_get(held, v, &mask);
    if (again || (mask & (1u << e)))
      continue;
    *out += (uint64_t)kiln_type_bytes(kiln_value_type(v));
    if (commit)
      KILN_TRY(part_map_put(held, v, mask | (1u << e)));
  }
  return NULL;
}

static uint64_t part_result_bytes(const kiln_node *n) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < kiln_node_result_count(n); i++)
    b += (uint64_t)kiln_type_bytes(kiln_value_type(kiln_node_result(n, i)));
  return b;
}

static uint64_t part_rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Place node i (n) among the entries: fill *entry and *lowered. */
static kiln_status part_place(const kiln_part_entry *es, uint32_t ne, const kiln_node *n,
                              const kiln_part_plan *p, const part_map *node_index,
                              part_map *held, const uint64_t *used, bool *closed, uint64_t *rng,
                              uint32_t *entry, bool *lowered) {
  bool native[KILN_PART_MAX_ENTRIES] = {0}, fits[KILN_PART_MAX_ENTRIES] = {0};
  uint64_t need[KILN_PART_MAX_ENTRIES] = {0};
  uint32_t n_native = 0;
  for (uint32_t e = 0; e < ne; e++) {
    native[e] = part_declares(es[e].plugin, n);
    n_native += native[e];
    uint64_t w = 0;
    KILN_TRY(part_weight_bytes(held, n, e, false, &w));
    need[e] = w + part_result_bytes(n);
    fits[e] = !closed[e] && (!es[e].mem_cap || used[e] + need[e] <= es[e].mem_cap);
    /* A device that once had no room for a node takes no later one:
     * otherwise small nodes would hop back onto it between the nodes that
     * spilled, each hop a transfer. */
    if (native[e] && !fits[e])
      closed[e] = true;
  }
  bool cand[KILN_PART_MAX_ENTRIES] = {0};
  uint32_t nc = 0;
  char why[KILN_PART_MAX_ENTRIES][200];
  memset(why, 0, sizeof why);
  if (n_native) {
    for (uint32_t e = 0; e < ne; e++)
      nc += cand[e] = native[e] && fits[e];
    *lowered = false;
  }
  if (!nc) {
    /* Nobody (with room) runs it as it is: try lowering it for each entry. */
    for (uint32_t e = 0; e < ne; e++) {
      if (native[e]) {
        snprintf(why[e], sizeof why[e], "it runs the node but its memory is full");
        continue;
      }
      if (!part_lowers_on(es[e].plugin, n, why[e], sizeof why[e]))
        continue;
      if (!fits[e]) {
        closed[e] = true;
        snprintf(why[e], sizeof why[e], "it runs the node after lowering but its memory is full");
        continue;
      }
      cand[e] = true;
      nc++;
      if (!rng)
        break; /* priority: the first is enough */
    }
    *lowered = true;
  }
  if (!nc) {
    char list[2048];
    size_t used_c = 0;
    list[0] = 0;
    for (uint32_t e = 0; e < ne && used_c + 1 < sizeof list; e++) {
      int w = snprintf(list + used_c, sizeof list - used_c, "%s%s: %s", e ? "; " : "",
                       es[e].label, why[e][0] ? why[e] : "no");
      if (w < 0)
        break;
      used_c += (size_t)w;
    }
    char t[160] = "";
    if (kiln_node_result_count(n))
      kiln_type_format(kiln_value_type(kiln_node_result(n, 0)), t, sizeof t);
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "no backend in the list runs node '%s' (%s -> %s), natively or after "
                            "lowering (%s)",
                            kiln_node_name(n), kiln_node_kind_name(kiln_node_get_kind(n)), t,
                            list);
  }
  if (rng) {
    uint32_t pick = (uint32_t)(part_rng(rng) % nc);
    for (uint32_t e = 0; e < ne; e++)
      if (cand[e] && pick-- == 0) {
        *entry = e;
        return NULL;
      }
  }
  /* Priority, unless a candidate backend estimates costs: then the
   * cheapest of compute + bytes that would cross (docs/partitioning.md). */
  uint32_t first = 0;
  while (!cand[first])
    first++;
  bool any_cost = false;
  double est[KILN_PART_MAX_ENTRIES];
  double min_known = -1;
  for (uint32_t e = 0; e < ne; e++) {
    est[e] = -1;
    double (*cost)(void *, const kiln_node *, int32_t) = KILN_PLUGIN_HOOK(es[e].plugin, node_cost);
    if (!cand[e] || !cost || *lowered)
      continue;
    est[e] = cost(es[e].plugin->state, n, es[e].device);
    if (est[e] >= 0) {
      any_cost = true;
      if (min_known < 0 || est[e] < min_known)
        min_known = est[e];
    }
  }
  if (!any_cost) {
    *entry = first;
    return NULL;
  }
  double best = 0;
  *entry = first;
  bool have = false;
  for (uint32_t e = 0; e < ne; e++) {
    if (!cand[e])
      continue;
    double c = est[e] >= 0 ? est[e] : min_known;
    for (uint32_t i = 0; i < kiln_node_input_count(n); i++) {
      const kiln_value *v = kiln_node_input(n, i);
      const kiln_node *pr = v ? kiln_value_producer(v, NULL) : NULL;
      uint32_t pi;
      if (pr && part_map_get(node_index, pr, &pi) && p->node_entry[pi] != e)
        c += (double)kiln_type_bytes(kiln_value_type(v)) * PART_NS_PER_BYTE;
    }
    if (!have || c < best) {
      best = c;
      *entry = e;
      have = true;
    }
  }
  return NULL;
}

/* Regions in an order where every region comes after those it depends on
 * (ties by first node), renumbering node_region to match. */
static kiln_status part_sort_regions(kiln_part_plan *p) {
  uint32_t nr = p->region_count;
  uint32_t *order = malloc((nr ? nr : 1) * sizeof *order);
  bool *done = calloc(nr ? nr : 1, sizeof *done);
  uint64_t *pending = calloc(p->dep_words ? p->dep_words : 1, sizeof *pending);
  for (uint32_t r = 0; pending && r < nr; r++)
    pending[r / 64] |= 1ull << (r % 64);
  uint32_t *newid = malloc((nr ? nr : 1) * sizeof *newid);
  kiln_part_region *sorted = malloc((p->region_cap ? p->region_cap : 1) * sizeof *sorted);
  if (!order || !done || !newid || !sorted || !pending) {
    free(pending);
    free(order);
    free(done);
    free(newid);
    free(sorted);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory ordering regions");
  }
  for (uint32_t k = 0; k < nr; k++) {
    /* the ready region with the smallest first node */
    uint32_t best = UINT32_MAX;
    for (uint32_t r = 0; r < nr; r++) {
      if (done[r])
        continue;
      bool ready = true; /* nothing it depends on is still pending */
      for (uint32_t w = 0; w < p->dep_words && ready; w++)
        ready = (p->regions[r].deps[w] & pending[w]) == 0;
      if (ready && (best == UINT32_MAX || p->regions[r].nodes[0] < p->regions[best].nodes[0]))
        best = r;
    }
    if (best == UINT32_MAX) { /* cannot happen: the deps are acyclic */
      free(pending);
      free(order);
      free(done);
      free(newid);
      free(sorted);
      return kiln_status_make(KILN_INTERNAL, "partition: the regions form a cycle");
    }
    done[best] = true;
    pending[best / 64] &= ~(1ull << (best % 64));
    order[k] = best;
    newid[best] = k;
  }
  for (uint32_t k = 0; k < nr; k++) {
    sorted[k] = p->regions[order[k]];
    uint64_t *d = calloc(p->dep_words, sizeof *d);
    if (!d) {
      for (uint32_t j = 0; j < k; j++)
        free(sorted[j].deps);
      free(pending);
      free(order);
      free(done);
      free(newid);
      free(sorted);
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory ordering regions");
    }
    for (uint32_t q = 0; q < nr; q++)
      if (part_dep(p, order[k], q))
        d[newid[q] / 64] |= 1ull << (newid[q] % 64);
    sorted[k].deps = d;
  }
  for (uint32_t r = 0; r < nr; r++)
    free(p->regions[r].deps);
  free(p->regions);
  p->regions = sorted;
  for (uint32_t i = 0; i < p->node_count; i++)
    p->node_region[i] = newid[p->node_region[i]];
  free(pending);
  free(order);
  free(done);
  free(newid);
  return NULL;
}

kiln_status kiln_part_plan_make(const kiln_function *f, const kiln_part_entry *es, uint32_t ne,
                                kiln_part_plan **out) {
  *out = NULL;
  uint32_t nn = kiln_function_node_count(f);
  kiln_part_plan *p = calloc(1, sizeof *p);
  if (!p)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory placing nodes");
  p->node_count = nn;
  p->node_entry = calloc(nn ? nn : 1, sizeof *p->node_entry);
  p->node_region = calloc(nn ? nn : 1, sizeof *p->node_region);
  p->node_lowered = calloc(nn ? nn : 1, sizeof *p->node_lowered);
  part_map index = {0}, held = {0};
  uint64_t used[KILN_PART_MAX_ENTRIES] = {0};
  bool closed[KILN_PART_MAX_ENTRIES] = {0};
  kiln_status s = NULL;
  if (!p->node_entry || !p->node_region || !p->node_lowered)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory placing nodes");
  uint64_t seed = 0, *rng = NULL;
  const char *env = getenv("KILN_PARTITION_SEED");
  if (env && *env) {
    seed = strtoull(env, NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
    rng = &seed;
  }
  uint32_t *prod = malloc((nn ? nn : 1) * sizeof *prod);
  if (!s && !prod)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory placing nodes");
  for (uint32_t i = 0; !s && i < nn; i++) {
    const kiln_node *n = kiln_function_node(f, i);
    s = part_map_put(&index, n, i);
    uint32_t e = 0;
    bool low = false;
    if (!s)
      s = part_place(es, ne, n, p, &index, &held, used, closed, rng, &e, &low);
    if (s)
      break;
    uint64_t w = 0;
    s = part_weight_bytes(&held, n, e, true, &w);
    if (s)
      break;
    used[e] += w + part_result_bytes(n);
    p->node_entry[i] = e;
    p->node_lowered[i] = low;

    /* Regions: join a region of this entry that no other region this node
     * reads from depends on (that would close a cycle), preferring the
     * producers' own; else start one. */
    uint32_t np = 0;
    for (uint32_t k = 0; k < kiln_node_input_count(n); k++) {
      const kiln_value *v = kiln_node_input(n, k);
      const kiln_node *pr = v ? kiln_value_producer(v, NULL) : NULL;
      uint32_t pi;
      if (!pr || !part_map_get(&index, pr, &pi))
        continue;
      uint32_t r = p->node_region[pi];
      bool dup = false;
      for (uint32_t q = 0; q < np; q++)
        dup |= prod[q] == r;
      if (!dup)
        prod[np++] = r;
    }
    uint32_t join = UINT32_MAX;
    for (uint32_t pass = 0; pass < 2 && join == UINT32_MAX; pass++) {
      /* pass 0: the producers' regions; pass 1: any, latest first */
      uint32_t cnt = pass == 0 ? np : p->region_count;
      for (uint32_t c = 0; c < cnt && join == UINT32_MAX; c++) {
        uint32_t r = pass == 0 ? prod[c] : p->region_count - 1 - c;
        if (p->regions[r].entry != e)
          continue;
        bool ok = true;
        for (uint32_t q = 0; q < np && ok; q++)
          if (prod[q] != r && part_dep(p, prod[q], r))
            ok = false;
        if (ok)
          join = r;
      }
    }
    if (join == UINT32_MAX) {
      s = part_new_region(p, e, &join);
      if (s)
        break;
    }
    kiln_part_region *R = &p->regions[join];
    s = part_region_add(R, i);
    if (s)
      break;
    p->node_region[i] = join;
    bool grew = false;
    for (uint32_t q = 0; q < np; q++) {
      if (prod[q] == join)
        continue;
      const kiln_part_region *Q = &p->regions[prod[q]];
      for (uint32_t w2 = 0; w2 < p->dep_words; w2++) {
        uint64_t add = Q->deps[w2] | (w2 == prod[q] / 64 ? 1ull << (prod[q] % 64) : 0);
        grew |= (R->deps[w2] | add) != R->deps[w2];
        R->deps[w2] |= add;
      }
    }
    if (grew) /* those that depend on R now depend on what R does */
      for (uint32_t x = 0; x < p->region_count; x++)
        if (x != join && part_dep(p, x, join))
          for (uint32_t w2 = 0; w2 < p->dep_words; w2++)
            p->regions[x].deps[w2] |= R->deps[w2];
  }
  free(prod);
  part_map_free(&index);
  part_map_free(&held);
  if (!s)
    s = part_sort_regions(p);
  /* Sizes per region: its weights and its results (an upper bound of its
   * activations: no reuse counted). */
  part_map seen = {0};
  for (uint32_t r = 0; !s && r < p->region_count; r++) {
    kiln_part_region *R = &p->regions[r];
    for (uint32_t k = 0; !s && k < R->node_count; k++) {
      const kiln_node *n = kiln_function_node(f, R->nodes[k]);
      R->activation_bytes += part_result_bytes(n);
      for (uint32_t i = 0; !s && i < kiln_node_input_count(n); i++) {
        const kiln_value *v = kiln_node_input(n, i);
        uint32_t last;
        if (!v || kiln_value_get_kind(v) != KILN_VALUE_CONSTANT)
          continue;
        if (part_map_get(&seen, v, &last) && last == r + 1)
          continue;
        R->weight_bytes += (uint64_t)kiln_type_bytes(kiln_value_type(v));
        s = part_map_put(&seen, v, r + 1);
      }
    }
  }
  part_map_free(&seen);
  if (s) {
    kiln_part_plan_free(p);
    return s;
  }
  *out = p;
  return NULL;
}

/* ---- the partitioned executable ----------------------------------------- */

typedef enum part_slot_kind { PART_SLOT_INPUT, PART_SLOT_CONST, PART_SLOT_TEMP } part_slot_kind;

/* A host buffer a value lives in between regions: a user input, a copy of
 * a constant (an output bound straight to one), or a piece of the run's
 * scratch block. */
typedef struct part_slot {
  part_slot_kind kind;
  uint32_t input;  /* PART_SLOT_INPUT: the executable's input index */
  uint64_t offset; /* PART_SLOT_TEMP: offset in the scratch block */
  size_t bytes;
  void *data; /* PART_SLOT_CONST: malloc'd copy */
} part_slot;

typedef struct part_region_rt {
  kiln_executable *exe;
  uint32_t entry;
  uint32_t level; /* 1 + the deepest level of the regions it reads from */
  uint32_t *in_slots, *out_slots;
  uint32_t n_in, n_out;
  char **nodes;
  uint32_t node_count;
  uint64_t weight_bytes, activation_bytes, bytes_in, bytes_out;
  uint64_t last_ns;
} part_region_rt;

struct kiln_part_exe {
  kiln_part_entry entries[KILN_PART_MAX_ENTRIES];
  uint32_t entry_count;
  part_region_rt *regions;
  uint32_t region_count;
  part_slot *slots;
  uint32_t slot_count, slot_cap;
  uint64_t temp_bytes;
  uint32_t *out_slots; /* per output of the executable */
  uint32_t level_count;
  /* The scratch block of the run in flight; a concurrent run (kiln_run
   * may be called from several threads) allocates its own. */
  unsigned char *scratch;
  bool scratch_busy;
};

void kiln_part_exe_destroy(kiln_part_exe *px) {
  if (!px)
    return;
  for (uint32_t r = 0; r < px->region_count; r++) {
    part_region_rt *R = &px->regions[r];
    kiln_executable_destroy(R->exe);
    free(R->in_slots);
    free(R->out_slots);
    for (uint32_t k = 0; R->nodes && k < R->node_count; k++)
      free(R->nodes[k]);
    free(R->nodes);
  }
  free(px->regions);
  for (uint32_t i = 0; i < px->slot_count; i++)
    free(px->slots[i].data);
  free(px->slots);
  free(px->out_slots);
  free(px->scratch);
  free(px);
}

static kiln_status part_add_slot(kiln_part_exe *px, part_slot sl, uint32_t *out) {
  if (px->slot_count == px->slot_cap) {
    uint32_t cap = px->slot_cap ? px->slot_cap * 2 : 32;
    part_slot *n = realloc(px->slots, cap * sizeof *n);
    if (!n)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory building a partitioned executable");
    px->slots = n;
    px->slot_cap = cap;
  }
  if (sl.kind == PART_SLOT_TEMP) {
    sl.offset = (px->temp_bytes + 63) & ~(uint64_t)63;
    px->temp_bytes = sl.offset + sl.bytes;
  }
  px->slots[px->slot_count] = sl;
  *out = px->slot_count++;
  return NULL;
}

/* "relu1, conv2 and 3 more" for messages. */
static void part_region_names(const part_region_rt *R, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (uint32_t k = 0; k < R->node_count && k < 3 && used + 1 < n; k++) {
    int w = snprintf(buf + used, n - used, "%s%s", k ? ", " : "", R->nodes[k]);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  if (R->node_count > 3 && used + 1 < n)
    snprintf(buf + used, n - used, " and %u more", R->node_count - 3);
}

/* Build region r of plan p as a module of its own ("NAME.rK", function
 * "main"): its nodes in order, every value it reads from outside as an
 * input (ext_in, in the module's input order), every value another region
 * or the function's outputs read as an output (ext_out, in output order).
 * crossing: the values that some other region or an output reads. */
static kiln_status part_extract(const kiln_function *f, const kiln_part_plan *p, uint32_t r,
                                const part_map *crossing, const char *mname, kiln_module **out,
                                const kiln_value ***ext_in, uint32_t *n_in,
                                const kiln_value ***ext_out, uint32_t *n_out) {
  const kiln_part_region *R = &p->regions[r];
  kiln_module *m = NULL;
  kiln_function *g = NULL;
  part_map vmap = {0};
  kiln_value **nv = NULL; /* new values by vmap index */
  uint32_t nv_count = 0, nv_cap = 0;
  const kiln_value **ins = NULL, **outs = NULL;
  uint32_t ni = 0, no = 0, in_cap = 0, out_cap = 0;
  kiln_value **args = NULL;
  uint32_t args_cap = 0;
  kiln_status s = kiln_module_create(NULL, mname, &m);
  if (!s)
    s = kiln_module_add_function(m, "main", &g);
#define PART_GROW(arr, count, cap)                                                                 \
  do {                                                                                             \
    if ((count) == (cap)) {                                                                        \
      uint32_t c2 = (cap) ? (cap) * 2 : 16;                                                        \
      void *n2 = realloc((void *)(arr), c2 * sizeof *(arr));                                       \
      if (!n2) {                                                                                   \
        s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory extracting a region");            \
        break;                                                                                     \
      }                                                                                            \
      (arr) = n2;                                                                                  \
      (cap) = c2;                                                                                  \
    }                                                                                              \
  } while (0)
  for (uint32_t k = 0; !s && k < R->node_count; k++) {
    const kiln_node *n = kiln_function_node(f, R->nodes[k]);
    uint32_t na = kiln_node_input_count(n);
    if (na > args_cap) {
      kiln_value **a2 = realloc(args, na * sizeof *a2);
      if (!a2) {
        s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory extracting a region");
        break;
      }
      args = a2;
      args_cap = na;
    }
    for (uint32_t i = 0; !s && i < na; i++) {
      const kiln_value *v = kiln_node_input(n, i);
      uint32_t idx;
      args[i] = NULL;
      if (!v)
        continue;
      if (part_map_get(&vmap, v, &idx)) {
        args[i] = nv[idx];
        continue;
      }
      kiln_value *x = NULL;
      if (kiln_value_get_kind(v) == KILN_VALUE_CONSTANT) {
        s = kiln_module_add_constant_from(m, kiln_value_name(v), v, &x);
      } else {
        s = kiln_module_add_input(m, kiln_value_name(v), kiln_value_type(v), &x);
        if (!s) {
          PART_GROW(ins, ni, in_cap);
          if (!s)
            ins[ni++] = v;
        }
      }
      if (!s)
        PART_GROW(nv, nv_count, nv_cap);
      if (!s)
        s = part_map_put(&vmap, v, nv_count);
      if (!s) {
        nv[nv_count++] = x;
        args[i] = x;
      }
    }
    kiln_node *c = NULL;
    if (!s)
      s = part_copy_node(g, n, args, true, &c);
    for (uint32_t i = 0; !s && i < kiln_node_result_count(n); i++) {
      const kiln_value *v = kiln_node_result(n, i);
      PART_GROW(nv, nv_count, nv_cap);
      if (!s)
        s = part_map_put(&vmap, v, nv_count);
      if (!s)
        nv[nv_count++] = kiln_node_result(c, i);
      if (!s && part_map_get(crossing, v, NULL)) {
        PART_GROW(outs, no, out_cap);
        if (!s)
          s = kiln_function_add_output(g, kiln_value_name(v), kiln_node_result(c, i));
        if (!s)
          outs[no++] = v;
      }
    }
  }
#undef PART_GROW
  part_map_free(&vmap);
  free(nv);
  free(args);
  if (s) {
    kiln_module_destroy(m);
    free(ins);
    free(outs);
    return s;
  }
  *out = m;
  *ext_in = ins;
  *n_in = ni;
  *ext_out = outs;
  *n_out = no;
  return NULL;
}

/* The graph passes that come before lowering, for the whole function: a
 * node is rebuilt (LayerNorm, attention) where any entry runs it. */
#define PART_PRE_PIPELINE "dce,cse,fuseqdq,fold*,simplify*,bnfold,convtrim,dce,recognize,fuseattn,dce"

typedef struct part_union {
  const kiln_part_entry *es;
  uint32_t n;
} part_union;

static bool part_union_supports(void *user, const kiln_node *n) {
  const part_union *u = user;
  for (uint32_t e = 0; e < u->n; e++)
    if (kiln_plugin_supports(u->es[e].plugin, n))
      return true;
  return false;
}

static kiln_status part_evaluate(void *user, const kiln_module *m, const kiln_value *v,
                                 kiln_tensor *out) {
  return kiln_evaluate_value((kiln_context *)user, m, v, out);
}

/* Compile the plan's regions into px and the executable's io into exe. */
static kiln_status part_build(kiln_context *ctx, kiln_module *mod, const kiln_function *f,
                              const kiln_part_plan *p, const kiln_compile_options *opts,
                              kiln_part_exe *px, kiln_executable *exe) {
  part_map crossing = {0}, slot_of = {0}, node_index = {0};
  kiln_status s = NULL;
  for (uint32_t i = 0; !s && i < p->node_count; i++)
    s = part_map_put(&node_index, kiln_function_node(f, i), i);
  for (uint32_t i = 0; !s && i < p->node_count; i++) {
    const kiln_node *n = kiln_function_node(f, i);
    for (uint32_t k = 0; !s && k < kiln_node_input_count(n); k++) {
      const kiln_value *v = kiln_node_input(n, k);
      const kiln_node *pr = v ? kiln_value_producer(v, NULL) : NULL;
      uint32_t pi;
      if (pr && part_map_get(&node_index, pr, &pi) && p->node_region[pi] != p->node_region[i])
        s = part_map_put(&crossing, v, 1);
    }
  }
  for (uint32_t i = 0; !s && i < kiln_function_output_count(f); i++)
    if (kiln_value_get_kind(kiln_function_output_value(f, i)) == KILN_VALUE_RESULT)
      s = part_map_put(&crossing, kiln_function_output_value(f, i), 1);
  /* Inputs of the executable: the module's, in order. */
  exe->input_count = kiln_module_input_count(mod);
  exe->output_count = kiln_function_output_count(f);
  exe->inputs = calloc(exe->input_count ? exe->input_count : 1, sizeof *exe->inputs);
  exe->outputs = calloc(exe->output_count ? exe->output_count : 1, sizeof *exe->outputs);
  px->out_slots = calloc(exe->output_count ? exe->output_count : 1, sizeof *px->out_slots);
  px->regions = calloc(p->region_count ? p->region_count : 1, sizeof *px->regions);
  if (!s && (!exe->inputs || !exe->outputs || !px->out_slots || !px->regions))
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory building a partitioned executable");
  for (uint32_t i = 0; !s && i < exe->input_count; i++) {
    const kiln_value *v = kiln_module_input(mod, i);
    exe->inputs[i].type = *kiln_value_type(v);
    exe->inputs[i].name = part_strdup(kiln_value_name(v));
    uint32_t sl = 0;
    part_slot in = {.kind = PART_SLOT_INPUT,
                    .input = i,
                    .bytes = (size_t)kiln_type_bytes(kiln_value_type(v))};
    s = exe->inputs[i].name ? part_add_slot(px, in, &sl)
                            : kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
    if (!s)
      s = part_map_put(&slot_of, v, sl);
  }
  uint64_t phase[3] = {0};
  for (uint32_t r = 0; !s && r < p->region_count; r++) {
    part_region_rt *R = &px->regions[r];
    const kiln_part_region *PR = &p->regions[r];
    const kiln_part_entry *e = &px->entries[PR->entry];
    R->entry = PR->entry;
    R->weight_bytes = PR->weight_bytes;
    R->nodes = calloc(PR->node_count ? PR->node_count : 1, sizeof *R->nodes);
    if (!R->nodes) {
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory building a partitioned executable");
      break;
    }
    px->region_count = r + 1;
    for (uint32_t k = 0; !s && k < PR->node_count; k++) {
      R->nodes[k] = part_strdup(kiln_node_name(kiln_function_node(f, PR->nodes[k])));
      R->node_count = k + 1;
      if (!R->nodes[k])
        s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
    }
    char mname[300];
    snprintf(mname, sizeof mname, "%s.r%u", kiln_module_name(mod), r);
    kiln_module *rm = NULL;
    const kiln_value **ins = NULL, **outs = NULL;
    uint32_t ni = 0, no = 0;
    if (!s)
      s = part_extract(f, p, r, &crossing, mname, &rm, &ins, &ni, &outs, &no);
    if (!s) {
      R->in_slots = calloc(ni ? ni : 1, sizeof *R->in_slots);
      R->out_slots = calloc(no ? no : 1, sizeof *R->out_slots);
      if (!R->in_slots || !R->out_slots)
        s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t i = 0; !s && i < ni; i++) {
      uint32_t sl = 0;
      if (!part_map_get(&slot_of, ins[i], &sl))
        s = kiln_status_make(KILN_INTERNAL, "partition: region %u reads '%s' before it is made",
                             r, kiln_value_name(ins[i]));
      R->in_slots[i] = sl;
      R->n_in = i + 1;
      if (px->slots[sl].kind == PART_SLOT_TEMP)
        R->bytes_in += px->slots[sl].bytes;
    }
    /* level: one after the deepest region it depends on (the plan's
     * regions come in an order where those are earlier) */
    for (uint32_t q = 0; q < r; q++)
      if (part_dep(p, r, q) && px->regions[q].level + 1 > R->level)
        R->level = px->regions[q].level + 1;
    for (uint32_t i = 0; !s && i < no; i++) {
      uint32_t sl = 0;
      part_slot t = {.kind = PART_SLOT_TEMP,
                     .bytes = (size_t)kiln_type_bytes(kiln_value_type(outs[i]))};
      s = part_add_slot(px, t, &sl);
      if (!s)
        s = part_map_put(&slot_of, outs[i], sl);
      R->out_slots[i] = sl;
      R->n_out = i + 1;
      R->bytes_out += t.bytes;
    }
    free(ins);
    free(outs);
    if (s) {
      kiln_module_destroy(rm);
      break;
    }
    kiln_compile_options o;
    kiln_core_compile_options(opts, &o);
    o.device_memory = NULL; /* the placement already kept to it */
    if (e->device >= 0)
      o.device = e->device;
    s = kiln_compile_take(ctx, &rm, "main", e->plugin->name, &o, &R->exe);
    if (s) {
      char names[256];
      part_region_names(R, names, sizeof names);
      s = kiln_status_wrap(s, "region %u on '%s' (%s)", r, e->label, names);
      break;
    }
    if (kiln_executable_input_count(R->exe) != R->n_in ||
        kiln_executable_output_count(R->exe) != R->n_out) {
      s = kiln_status_make(KILN_INTERNAL,
                           "partition: region %u compiled to %u inputs and %u outputs, not %u "
                           "and %u",
                           r, kiln_executable_input_count(R->exe),
                           kiln_executable_output_count(R->exe), R->n_in, R->n_out);
      break;
    }
    const kiln_ir *rir = kiln_executable_ir(R->exe);
    R->activation_bytes = rir ? kiln_ir_activation_bytes(rir) : PR->activation_bytes;
    for (int k = 0; k < 3; k++)
      phase[k] += R->exe->core_phases[k].ns;
    if (R->level + 1 > px->level_count)
      px->level_count = R->level + 1;
  }
  for (uint32_t i = 0; !s && i < exe->output_count; i++) {
    const kiln_value *v = kiln_function_output_value(f, i);
    exe->outputs[i].type = *kiln_value_type(v);
    exe->outputs[i].name = part_strdup(kiln_function_output_name(f, i));
    if (!exe->outputs[i].name) {
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
      break;
    }
    uint32_t sl = 0;
    if (kiln_value_get_kind(v) == KILN_VALUE_CONSTANT) {
      size_t b = (size_t)kiln_type_bytes(kiln_value_type(v));
      part_slot c = {.kind = PART_SLOT_CONST, .bytes = b, .data = malloc(b ? b : 1)};
      if (!c.data) {
        s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
        break;
      }
      if (b)
        memcpy(c.data, kiln_value_data(v), b);
      s = part_add_slot(px, c, &sl);
      if (s)
        free(c.data);
    } else if (!part_map_get(&slot_of, v, &sl)) {
      s = kiln_status_make(KILN_INTERNAL, "partition: output '%s' is made by no region",
                           kiln_function_output_name(f, i));
    }
    px->out_slots[i] = sl;
  }
  exe->core_phases[1] = (kiln_profile_phase){"instructions and memory plan", phase[1]};
  exe->core_phases[2] = (kiln_profile_phase){"backend compile", phase[2]};
  exe->core_phases[0].ns += phase[0];
  part_map_free(&crossing);
  part_map_free(&slot_of);
  part_map_free(&node_index);
  return s;
}

kiln_status kiln_part_compile(kiln_context *ctx, const kiln_module *m, kiln_module *owned,
                              const char *function, const char *backends,
                              const kiln_compile_options *user_opts, kiln_executable **out) {
  *out = NULL;
  kiln_compile_options opts;
  kiln_core_compile_options(user_opts, &opts);
  kiln_part_exe *px = calloc(1, sizeof *px);
  if (!px) {
    kiln_module_destroy(owned);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
  }
  const char *dm = KILN_STRUCT_HAS(&opts, kiln_compile_options, device_memory)
                       ? opts.device_memory
                       : NULL;
  kiln_status s = kiln_part_parse(ctx, backends, dm, px->entries, &px->entry_count);
  if (!s && px->entry_count == 1 && !(dm && *dm)) {
    /* one entry, no limit: the ordinary compile, on the device named */
    const kiln_part_entry e = px->entries[0];
    free(px);
    if (e.device >= 0)
      opts.device = e.device;
    opts.device_memory = NULL;
    if (owned)
      return kiln_compile_take(ctx, &owned, function, e.plugin->name, &opts, out);
    return kiln_compile(ctx, m, function, e.plugin->name, &opts, out);
  }
  kiln_module *mod = owned;
  if (!s && !mod)
    s = kiln_module_clone(m, &mod);
  kiln_function *f = NULL;
  if (!s) {
    kiln_module_set_release_constants(mod, true);
    s = kiln_core_pick_function(mod, function, &f);
  }
  if (!s)
    s = kiln_module_verify(mod);
  uint64_t t0 = kiln_core_now_ns();
  if (!s) {
    part_union u = {px->entries, px->entry_count};
    kiln_pass_options po = kiln_pass_options_default();
    po.evaluate = part_evaluate;
    po.evaluate_user = ctx;
    po.supports_node = part_union_supports;
    po.backend_user = &u;
    po.backend_name = backends;
    po.verify = getenv("KILN_VERIFY_EACH_PASS") != NULL;
    po.fold_max_bytes = 64u << 20;
    kiln_pass_target t = {.module = mod, .function = kiln_function_name(f)};
    s = kiln_pass_run(&t, PART_PRE_PIPELINE, &po, NULL);
  }
  kiln_part_plan *plan = NULL;
  if (!s)
    s = kiln_part_plan_make(f, px->entries, px->entry_count, &plan);
  if (!s && plan->region_count == 1 && !getenv("KILN_PARTITION_SEED")) {
    /* everything on one entry: no partition, no overhead */
    const kiln_part_entry e = px->entries[plan->regions[0].entry];
    kiln_part_plan_free(plan);
    free(px);
    if (e.device >= 0)
      opts.device = e.device;
    opts.device_memory = NULL;
    char fname[256];
    snprintf(fname, sizeof fname, "%s", kiln_function_name(f));
    return kiln_compile_take(ctx, &mod, fname, e.plugin->name, &opts, out);
  }
  kiln_executable *exe = NULL;
  if (!s) {
    exe = calloc(1, sizeof *exe);
    if (!exe)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
  }
  if (!s) {
    exe->ctx = ctx;
    exe->part = px;
    exe->profiling = (opts.flags & KILN_COMPILE_PROFILE) != 0;
    exe->backend_label = part_strdup(backends);
    exe->core_phases[0] =
        (kiln_profile_phase){"graph passes and lowering", kiln_core_now_ns() - t0};
    if (!exe->backend_label)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
  }
  if (!s)
    s = part_build(ctx, mod, f, plan, &opts, px, exe);
  kiln_part_plan_free(plan);
  kiln_module_destroy(mod);
  if (s) {
    if (exe)
      kiln_executable_destroy(exe);
    else
      kiln_part_exe_destroy(px);
    return s;
  }
  *out = exe;
  return NULL;
}

/* ---- running ------------------------------------------------------------ */

typedef struct part_job {
  kiln_executable *exe;
  const void *const *inputs;
  unsigned char *temp;
  uint32_t level, entry;
  kiln_status status;
  uint32_t failed_region;
} part_job;

static void *part_slot_ptr(const kiln_part_exe *px, uint32_t sl, const void *const *inputs,
                           unsigned char *temp) {
  const part_slot *s = &px->slots[sl];
  switch (s->kind) {
  case PART_SLOT_INPUT: return (void *)(uintptr_t)inputs[s->input];
  case PART_SLOT_CONST: return s->data;
  case PART_SLOT_TEMP: return temp + s->offset;
  }
  return NULL;
}

/* Run the regions of one level that sit on one entry, in order. */
static void *part_job_run(void *arg) {
  part_job *j = arg;
  kiln_part_exe *px = j->exe->part;
  const void *in[64];
  void *outb[64];
  for (uint32_t r = 0; r < px->region_count && !j->status; r++) {
    part_region_rt *R = &px->regions[r];
    if (R->level != j->level || R->entry != j->entry)
      continue;
    const void **ip = R->n_in <= 64 ? in : malloc(R->n_in * sizeof *ip);
    void **op = R->n_out <= 64 ? outb : malloc(R->n_out * sizeof *op);
    if (!ip || !op) {
      j->status = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory running region %u", r);
      j->failed_region = r;
      break;
    }
    for (uint32_t i = 0; i < R->n_in; i++)
      ip[i] = part_slot_ptr(px, R->in_slots[i], j->inputs, j->temp);
    for (uint32_t i = 0; i < R->n_out; i++)
      op[i] = part_slot_ptr(px, R->out_slots[i], j->inputs, j->temp);
    /* The plugin's run itself: the buffers are the executable's own, and
     * the region's message wraps whatever the backend says. */
    uint64_t t0 = j->exe->profiling ? kiln_core_now_ns() : 0;
    j->status = R->exe->plugin->run(R->exe->plugin_exe, ip, (void *const *)op);
    if (j->exe->profiling) {
      uint64_t dt = kiln_core_now_ns() - t0;
      __atomic_store_n(&R->last_ns, dt, __ATOMIC_RELAXED);
      __atomic_store_n(&R->exe->run_ns, dt, __ATOMIC_RELAXED);
    }
    j->failed_region = r;
    if (ip != in)
      free(ip);
    if (op != outb)
      free(op);
  }
  return NULL;
}

kiln_status kiln_part_run(kiln_executable *exe, const void *const *inputs, void *const *outputs) {
  kiln_part_exe *px = exe->part;
  unsigned char *temp = NULL;
  bool own = false;
  if (px->temp_bytes) {
    own = !__atomic_exchange_n(&px->scratch_busy, true, __ATOMIC_ACQUIRE);
    if (own && !px->scratch)
      px->scratch = aligned_alloc(64, (px->temp_bytes + 63) & ~(uint64_t)63);
    if (own && !px->scratch) {
      __atomic_store_n(&px->scratch_busy, false, __ATOMIC_RELEASE);
      own = false;
    }
    temp = own ? px->scratch : aligned_alloc(64, (px->temp_bytes + 63) & ~(uint64_t)63);
    if (!temp)
      return kiln_status_make(KILN_OUT_OF_MEMORY,
                              "out of memory for the %" PRIu64 " bytes that cross between regions",
                              px->temp_bytes);
  }
  kiln_status s = NULL;
  part_job jobs[KILN_PART_MAX_ENTRIES];
  pthread_t th[KILN_PART_MAX_ENTRIES];
  for (uint32_t L = 0; L < px->level_count && !s; L++) {
    /* one job per entry with regions at this level; entries run side by
     * side, one entry's regions one after another */
    uint32_t nj = 0;
    for (uint32_t e = 0; e < px->entry_count; e++) {
      bool any = false;
      for (uint32_t r = 0; r < px->region_count && !any; r++)
        any = px->regions[r].level == L && px->regions[r].entry == e;
      if (any)
        jobs[nj++] = (part_job){.exe = exe, .inputs = inputs, .temp = temp, .level = L, .entry = e};
    }
    bool started[KILN_PART_MAX_ENTRIES] = {0};
    for (uint32_t k = 1; k < nj; k++)
      started[k] = pthread_create(&th[k], NULL, part_job_run, &jobs[k]) == 0;
    part_job_run(&jobs[0]);
    for (uint32_t k = 1; k < nj; k++) {
      if (started[k])
        pthread_join(th[k], NULL);
      else
        part_job_run(&jobs[k]);
    }
    for (uint32_t k = 0; k < nj; k++) {
      if (jobs[k].status && !s) {
        const part_region_rt *R = &px->regions[jobs[k].failed_region];
        char names[256];
        part_region_names(R, names, sizeof names);
        s = kiln_status_wrap(jobs[k].status, "region %u of %u on '%s' (nodes %s) failed",
                             jobs[k].failed_region, px->region_count, px->entries[R->entry].label,
                             names);
      } else if (jobs[k].status) {
        kiln_status_free(jobs[k].status);
      }
    }
  }
  /* Outputs only once every region has succeeded: none is half-written. */
  for (uint32_t i = 0; !s && i < exe->output_count; i++) {
    const part_slot *sl = &px->slots[px->out_slots[i]];
    if (sl->bytes)
      memcpy(outputs[i], part_slot_ptr(px, px->out_slots[i], inputs, temp), sl->bytes);
  }
  if (own)
    __atomic_store_n(&px->scratch_busy, false, __ATOMIC_RELEASE);
  else
    free(temp);
  return s;
}

/* ---- regions of an executable (kiln.h) ---------------------------------- */

uint32_t kiln_executable_region_count(const kiln_executable *exe) {
  if (!exe)
    return 0;
  return exe->part ? exe->part->region_count : 1;
}

kiln_status kiln_executable_region(const kiln_executable *exe, uint32_t i, kiln_region_info *out) {
  if (!exe || !out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_executable_region: %s is NULL",
                            exe ? "out" : "executable");
  uint32_t n = kiln_executable_region_count(exe);
  if (i >= n)
    return kiln_status_make(KILN_OUT_OF_RANGE, "the executable has %u region%s, not %u", n,
                            n == 1 ? "" : "s", i + 1);
  uint32_t size = out->struct_size;
  if (size < offsetof(kiln_region_info, last_run_ns) + sizeof out->last_run_ns)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "kiln_executable_region: set struct_size to sizeof(kiln_region_info)");
  kiln_region_info r;
  memset(&r, 0, sizeof r);
  r.struct_size = (uint32_t)sizeof r;
  if (!exe->part) {
    r.backend = exe->plugin ? exe->plugin->name : "";
    r.placement = r.backend;
    r.device = -1;
    r.exe = (kiln_executable *)exe;
    r.weight_bytes = exe->ir ? kiln_ir_weight_bytes(exe->ir) : 0;
    r.activation_bytes = exe->ir ? kiln_ir_activation_bytes(exe->ir) : 0;
    r.last_run_ns = __atomic_load_n(&((kiln_executable *)exe)->run_ns, __ATOMIC_RELAXED);
  } else {
    const part_region_rt *R = &exe->part->regions[i];
    const kiln_part_entry *e = &exe->part->entries[R->entry];
    r.node_count = R->node_count;
    r.nodes = (const char *const *)R->nodes;
    r.backend = e->plugin->name;
    r.placement = e->label;
    r.device = e->device;
    r.exe = R->exe;
    r.weight_bytes = R->weight_bytes;
    r.activation_bytes = R->activation_bytes;
    r.bytes_in = R->bytes_in;
    r.bytes_out = R->bytes_out;
    r.level = R->level;
    r.last_run_ns = __atomic_load_n(&((part_region_rt *)R)->last_ns, __ATOMIC_RELAXED);
  }
  memcpy(out, &r, size < sizeof r ? size : sizeof r);
  out->struct_size = size < sizeof r ? size : (uint32_t)sizeof r;
  return NULL;
}
