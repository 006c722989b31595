/* tools/profile.c: `kiln run --profile` and `--profile-json`. Collects the
 * executable's profile after every run (kiln_executable_profile), then
 * prints where the time went, per instruction and per node kind, with the
 * work each did (FLOPs counted from the instruction's shapes for the
 * compute-bound kinds, bytes of its operands for the others) and the rate
 * achieved, and writes the last run as a Chrome trace-event file. For an
 * executable split into regions over a backend list, each region's
 * executable has its own profile (the partitioned one has no
 * instructions): the time is attributed to regions, to what lies outside
 * them (hand-over between regions, output copies), and within each region
 * to its instructions. docs/profiling.md explains the columns. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "profile.h"

struct tool_profile {
  const kiln_ir *ir;
  uint32_t n_instr;
  uint64_t runs, cap_runs;
  uint64_t *run_ns;   /* per run: the core's wall time */
  uint64_t *instr_ns; /* [run * n_instr + i]: instruction i's time in that run */
  bool *timed;        /* instruction i had events in some run */
  kiln_profile_phase *phases;
  uint32_t phase_count;
  kiln_profile_event *last; /* the last run's events */
  uint32_t last_count;
  bool no_events; /* the backend reports none */
  /* A partitioned executable: its regions (info borrowed from the
   * executable, which outlives the profile), each region's own profile
   * and its time per run, [run * region_count + r]. */
  uint32_t region_count;
  kiln_region_info *rinfo;
  tool_profile **regions;
  uint64_t *region_ns;
};

kiln_status tool_profile_create(const kiln_executable *exe, tool_profile **out) {
  *out = NULL;
  tool_profile *p = calloc(1, sizeof *p);
  if (!p)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for a profile");
  /* A partitioned executable has no IR (NULL): nothing to time of its own. */
  p->ir = kiln_executable_ir(exe);
  p->n_instr = p->ir ? kiln_ir_instr_count(p->ir) : 0;
  p->timed = calloc(p->n_instr ? p->n_instr : 1, sizeof *p->timed);
  kiln_status s = p->timed ? NULL : kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for a profile");
  if (!s && tool_exe_partitioned(exe)) {
    uint32_t n = kiln_executable_region_count(exe);
    p->rinfo = calloc(n ? n : 1, sizeof *p->rinfo);
    p->regions = calloc(n ? n : 1, sizeof *p->regions);
    if (!p->rinfo || !p->regions)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for a profile");
    for (uint32_t r = 0; !s && r < n; r++) {
      p->rinfo[r].struct_size = sizeof p->rinfo[r];
      s = kiln_executable_region(exe, r, &p->rinfo[r]);
      if (!s)
        s = tool_profile_create(p->rinfo[r].exe, &p->regions[r]);
      if (!s)
        p->region_count = r + 1;
    }
  }
  if (s) {
    tool_profile_destroy(p);
    return s;
  }
  *out = p;
  return NULL;
}

void tool_profile_destroy(tool_profile *p) {
  if (!p)
    return;
  for (uint32_t r = 0; p->regions && r < p->region_count; r++)
    tool_profile_destroy(p->regions[r]);
  free(p->regions);
  free(p->rinfo);
  free(p->region_ns);
  free(p->run_ns);
  free(p->instr_ns);
  free(p->timed);
  free(p->phases);
  free(p->last);
  free(p);
}

/* Room for one more run in the per-run arrays. */
static kiln_status prof_grow(tool_profile *p) {
  if (p->runs < p->cap_runs)
    return NULL;
  uint64_t cap = p->cap_runs ? p->cap_runs * 2 : 8;
  uint64_t *r = realloc(p->run_ns, cap * sizeof *r);
  if (r)
    p->run_ns = r;
  uint64_t *t = r ? realloc(p->instr_ns, cap * (p->n_instr ? p->n_instr : 1) * sizeof *t) : NULL;
  if (t)
    p->instr_ns = t;
  uint64_t *g = t ? realloc(p->region_ns, cap * (p->region_count ? p->region_count : 1) * sizeof *g)
                  : NULL;
  if (!g)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for the profile of run %llu",
                            (unsigned long long)p->runs + 1);
  p->region_ns = g;
  p->cap_runs = cap;
  return NULL;
}

kiln_status tool_profile_add_run(tool_profile *p, kiln_executable *exe) {
  const kiln_profile *pr = NULL;
  KILN_TRY(kiln_executable_profile(exe, &pr));
  KILN_TRY(prof_grow(p));
  /* Each region's time in this run, and its own profile. */
  for (uint32_t r = 0; r < p->region_count; r++) {
    kiln_region_info ri = {.struct_size = sizeof ri};
    KILN_TRY(kiln_executable_region(exe, r, &ri));
    p->region_ns[p->runs * p->region_count + r] = ri.last_run_ns;
    KILN_TRY_CTX(tool_profile_add_run(p->regions[r], ri.exe), "the profile of region %u", r);
  }
  uint64_t *row = p->instr_ns + p->runs * p->n_instr;
  memset(row, 0, p->n_instr * sizeof *row);
  /* An instruction's time in a run is the span of its events: from its
   * first start to its last end, so that events of several threads at
   * once count once. */
  uint64_t *first = calloc(p->n_instr ? p->n_instr : 1, sizeof *first);
  if (!first)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for a profile");
  for (uint32_t k = 0; k < pr->event_count; k++) {
    const kiln_profile_event *e = &pr->events[k];
    if (e->instr >= p->n_instr)
      continue;
    uint64_t end = e->start_ns + e->dur_ns;
    if (first[e->instr] == 0 && row[e->instr] == 0) {
      first[e->instr] = e->start_ns + 1; /* +1: 0 means unset */
      row[e->instr] = e->dur_ns;
    } else {
      uint64_t s0 = first[e->instr] - 1, e0 = s0 + row[e->instr];
      uint64_t s1 = e->start_ns < s0 ? e->start_ns : s0, e1 = end > e0 ? end : e0;
      first[e->instr] = s1 + 1;
      row[e->instr] = e1 - s1;
    }
    p->timed[e->instr] = true;
  }
  free(first);
  p->run_ns[p->runs++] = pr->run_ns;
  p->no_events = pr->event_count == 0;
  kiln_profile_event *last = malloc((pr->event_count ? pr->event_count : 1) * sizeof *last);
  kiln_profile_phase *ph = malloc((pr->phase_count ? pr->phase_count : 1) * sizeof *ph);
  if (!last || !ph) {
    free(last);
    free(ph);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for a profile");
  }
  if (pr->event_count)
    memcpy(last, pr->events, pr->event_count * sizeof *last);
  if (pr->phase_count)
    memcpy(ph, pr->phases, pr->phase_count * sizeof *ph);
  free(p->last);
  free(p->phases);
  p->last = last;
  p->last_count = pr->event_count;
  p->phases = ph;
  p->phase_count = pr->phase_count;
  return NULL;
}

/* ---- work per instruction ---------------------------------------------- */

static double prof_numel(const kiln_buffer *b) {
  return b ? (double)kiln_type_numel(kiln_buffer_type(b)) : 0;
}

static const kiln_buffer *prof_input(const kiln_instr *in, uint32_t i) {
  uint32_t at = kiln_instr_result_count(in) + i;
  return at < kiln_instr_operand_count(in) ? kiln_instr_operand(in, at) : NULL;
}

/* numel(b) / b's first dimension: a weight's elements per output channel. */
static double prof_per_first(const kiln_buffer *b) {
  if (!b)
    return 0;
  const kiln_type *t = kiln_buffer_type(b);
  if (t->rank < 1 || t->dims[0] <= 0)
    return 0;
  return (double)kiln_type_numel(t) / (double)t->dims[0];
}

static double prof_last_dim(const kiln_buffer *b) {
  if (!b)
    return 0;
  const kiln_type *t = kiln_buffer_type(b);
  return t->rank ? (double)t->dims[t->rank - 1] : 1;
}

/* Multiply-adds counted as 2 FLOPs; 0 for a kind that is not counted
 * (then the instruction is taken as memory-bound). */
double tool_profile_flops(const kiln_instr *in) {
  int node = kiln_instr_kind_node(kiln_instr_get_kind(in));
  const kiln_buffer *out = kiln_instr_result_count(in) ? kiln_instr_operand(in, 0) : NULL;
  const kiln_attrs *at = kiln_instr_attrs(in);
  switch (node) {
  case KILN_NODE_MatMul:
  case KILN_NODE_MatMulInteger:
    return 2 * prof_numel(out) * prof_last_dim(prof_input(in, 0));
  case KILN_NODE_QLinearMatMul:
    return 2 * prof_numel(out) * prof_last_dim(prof_input(in, 0));
  case KILN_NODE_Gemm: {
    const kiln_buffer *a = prof_input(in, 0);
    if (!a || kiln_buffer_type(a)->rank != 2)
      return 0;
    int64_t ta = kiln_attrs_int_or(at, "transA", 0);
    return 2 * prof_numel(out) * (double)kiln_buffer_type(a)->dims[ta ? 0 : 1];
  }
  case KILN_NODE_Conv:
  case KILN_NODE_ConvInteger:
    /* W is [Cout, Cin/group, k...]: each output element takes that much. */
    return 2 * prof_numel(out) * prof_per_first(prof_input(in, 1));
  case KILN_NODE_QLinearConv:
    return 2 * prof_numel(out) * prof_per_first(prof_input(in, 3));
  case KILN_NODE_BlockedConv: {
    /* the result [N, Mb, OH, OW, B] holds W's dims[0] real channels */
    const kiln_buffer *w = prof_input(in, 1);
    if (!out || !w || kiln_buffer_type(out)->rank != 5)
      return 0;
    const kiln_type *yt = kiln_buffer_type(out);
    double per_lane = prof_numel(out) / (double)(yt->dims[1] * yt->dims[4]);
    return 2 * per_lane * (double)kiln_buffer_type(w)->dims[0] * prof_per_first(w);
  }
  case KILN_NODE_ConvTranspose:
    /* W is [Cin, Cout/group, k...]: each input element feeds that much. */
    return 2 * prof_numel(prof_input(in, 0)) * prof_per_first(prof_input(in, 1));
  case KILN_NODE_RNN:
  case KILN_NODE_GRU:
  case KILN_NODE_LSTM: {
    /* X is [seq, batch, I] (or [batch, seq, I]); per step and batch row,
     * W [dirs, gates*H, I] and R [dirs, gates*H, H] are each applied once. */
    const kiln_buffer *x = prof_input(in, 0);
    if (!x || kiln_buffer_type(x)->rank != 3)
      return 0;
    const kiln_type *xt = kiln_buffer_type(x);
    double steps = (double)xt->dims[0] * (double)xt->dims[1];
    return 2 * steps * (prof_numel(prof_input(in, 1)) + prof_numel(prof_input(in, 2)));
  }
  default:
    return 0;
  }
}

/* Bytes written (every result) plus bytes read (every distinct input):
 * an instruction working in place still reads and writes its buffer. */
double tool_profile_bytes(const kiln_instr *in) {
  double bytes = 0;
  uint32_t n = kiln_instr_operand_count(in), nr = kiln_instr_result_count(in);
  for (uint32_t i = 0; i < n; i++) {
    const kiln_buffer *b = kiln_instr_operand(in, i);
    bool seen = !b;
    for (uint32_t j = nr; i >= nr && j < i && !seen; j++)
      seen = kiln_instr_operand(in, j) == b;
    if (!seen)
      bytes += (double)kiln_type_bytes(kiln_buffer_type(b));
  }
  return bytes;
}

/* ---- the table ---------------------------------------------------------- */

static int prof_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static double prof_median(uint64_t *v, uint64_t n) {
  if (!n)
    return 0;
  qsort(v, n, sizeof *v, prof_cmp_u64);
  return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

typedef struct prof_row {
  const char *kind;
  char name[96];
  uint32_t instr;
  uint64_t calls;
  uint64_t total_ns;
  double median_ns;
  double flops, bytes; /* summed over calls */
} prof_row;

static int prof_cmp_rows(const void *a, const void *b) {
  const prof_row *x = a, *y = b;
  return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

/* "1.23 M" + unit: decimal prefixes, three significant digits. */
static void prof_si(char *buf, size_t n, double v, const char *unit) {
  static const char *const pre[] = {"", "k", "M", "G", "T"};
  int k = 0;
  while (v >= 1000 && k < 4) {
    v /= 1000;
    k++;
  }
  snprintf(buf, n, "%.3g %s%s", v, pre[k], unit);
}

/* Work per call and rate: FLOPs and GFLOP/s for compute-bound rows, bytes
 * and GB/s for the others. */
static void prof_rate(const prof_row *r, char *work, size_t nw, char *rate, size_t nr) {
  double s = (double)r->total_ns * 1e-9;
  bool compute = r->flops > 0;
  double amount = compute ? r->flops : r->bytes;
  prof_si(work, nw, amount / (double)(r->calls ? r->calls : 1), compute ? "FLOP" : "B");
  if (s > 0)
    snprintf(rate, nr, "%.3g %s", amount / s * 1e-9, compute ? "GFLOP/s" : "GB/s");
  else
    snprintf(rate, nr, "-");
}

static void prof_print_row(FILE *f, const prof_row *r, double run_total, bool by_instr) {
  char work[48], rate[48];
  prof_rate(r, work, sizeof work, rate, sizeof rate);
  double share = run_total > 0 ? 100.0 * (double)r->total_ns / run_total : 0;
  if (by_instr)
    fprintf(f, "%5u  %-22.22s %-28.28s", r->instr, r->kind, r->name);
  else
    fprintf(f, "%-28.28s", r->kind);
  fprintf(f, " %6llu %11.3f %11.1f %6.1f%% %14s %14s\n", (unsigned long long)r->calls,
          (double)r->total_ns * 1e-6, r->median_ns * 1e-3, share, work, rate);
}

static void prof_header(FILE *f, bool by_instr) {
  if (by_instr)
    fprintf(f, "%5s  %-22s %-28s", "instr", "kind", "node");
  else
    fprintf(f, "%-28s", "kind");
  fprintf(f, " %6s %11s %11s %7s %14s %14s\n", "calls", "total ms", "median us", "share",
          "work/call", "rate");
}

/* The node an instruction came from, or its result buffer's name. */
static void prof_instr_name(const kiln_instr *in, char *buf, size_t n) {
  const char *nm = kiln_instr_name(in);
  const kiln_buffer *r = kiln_instr_operand_count(in) ? kiln_instr_operand(in, 0) : NULL;
  if (nm && *nm)
    snprintf(buf, n, "%s", nm);
  else if (r && kiln_buffer_name(r))
    snprintf(buf, n, "%%%s", kiln_buffer_name(r));
  else
    snprintf(buf, n, "#%u", kiln_instr_index(in));
}

static void prof_intro_run(FILE *f, const void *ctx, double instr_total);

/* The by-kind and by-instruction tables of p's instructions. Shares are
 * of run_total, the whole run's wall time summed over runs (for a region,
 * the partitioned executable's). `intro` prints the line that comes
 * before the tables, given the instructions' summed time. */
static kiln_status prof_tables(FILE *f, const tool_profile *p, double run_total,
                               void (*intro)(FILE *f, const void *ctx, double instr_total),
                               const void *ctx) {
  uint64_t *tmp = malloc((p->runs ? p->runs : 1) * sizeof *tmp);
  prof_row *rows = calloc(p->n_instr ? p->n_instr : 1, sizeof *rows);
  prof_row *kinds = calloc(p->n_instr ? p->n_instr : 1, sizeof *kinds);
  if (!tmp || !rows || !kinds) {
    free(tmp);
    free(rows);
    free(kinds);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for the profile table");
  }
  uint32_t nrows = 0, nkinds = 0;
  double instr_total = 0;
  for (uint32_t i = 0; i < p->n_instr; i++) {
    if (!p->timed[i])
      continue;
    const kiln_instr *in = kiln_ir_instr(p->ir, i);
    prof_row *row = &rows[nrows++];
    row->kind = kiln_instr_kind_name(kiln_instr_get_kind(in));
    row->instr = i;
    prof_instr_name(in, row->name, sizeof row->name);
    row->calls = p->runs;
    for (uint64_t r = 0; r < p->runs; r++) {
      tmp[r] = p->instr_ns[r * p->n_instr + i];
      row->total_ns += tmp[r];
    }
    row->median_ns = prof_median(tmp, p->runs);
    row->flops = tool_profile_flops(in) * (double)p->runs;
    row->bytes = tool_profile_bytes(in) * (double)p->runs;
    instr_total += (double)row->total_ns;
    prof_row *k = NULL;
    for (uint32_t j = 0; j < nkinds && !k; j++)
      if (strcmp(kinds[j].kind, row->kind) == 0)
        k = &kinds[j];
    if (!k) {
      k = &kinds[nkinds++];
      k->kind = row->kind;
    }
    k->calls += row->calls;
    k->total_ns += row->total_ns;
    k->flops += row->flops;
    k->bytes += row->bytes;
  }
  /* A kind's median is over its calls: every instruction of it in every run. */
  for (uint32_t j = 0; j < nkinds; j++) {
    uint64_t *v = malloc(kinds[j].calls * sizeof *v);
    uint64_t n = 0;
    for (uint32_t i = 0; v && i < nrows; i++)
      if (strcmp(rows[i].kind, kinds[j].kind) == 0)
        for (uint64_t r = 0; r < p->runs; r++)
          v[n++] = p->instr_ns[r * p->n_instr + rows[i].instr];
    kinds[j].median_ns = v ? prof_median(v, n) : 0;
    free(v);
  }
  intro(f, ctx, instr_total);
  /* A region whose backend times nothing: the note in the intro says so. */
  if (nrows == 0 && p->no_events && intro != prof_intro_run) {
    free(tmp);
    free(rows);
    free(kinds);
    return NULL;
  }
  qsort(kinds, nkinds, sizeof *kinds, prof_cmp_rows);
  qsort(rows, nrows, sizeof *rows, prof_cmp_rows);
  fprintf(f, "\nby kind\n");
  prof_header(f, false);
  for (uint32_t j = 0; j < nkinds; j++)
    prof_print_row(f, &kinds[j], run_total, false);
  fprintf(f, "\nby instruction (slowest first)\n");
  prof_header(f, true);
  for (uint32_t i = 0; i < nrows; i++)
    prof_print_row(f, &rows[i], run_total, true);
  free(tmp);
  free(rows);
  free(kinds);
  return NULL;
}

typedef struct prof_run_line {
  const tool_profile *p;
  double run_median, run_total;
  const char *backend;
} prof_run_line;

/* One backend's executable: the run line, then its tables. */
static void prof_intro_run(FILE *f, const void *ctx, double instr_total) {
  const prof_run_line *l = ctx;
  fprintf(f, "\nrun: %llu run%s, wall time median %.3f ms, total %.3f ms; the instructions' times "
             "add up to %.1f%% of it\n",
          (unsigned long long)l->p->runs, l->p->runs == 1 ? "" : "s", l->run_median * 1e-6,
          l->run_total * 1e-6, l->run_total > 0 ? 100.0 * instr_total / l->run_total : 0);
  if (l->p->no_events)
    fprintf(f, "(backend '%s' reports no per-instruction timings)\n",
            l->backend ? l->backend : "?");
}

typedef struct prof_region_line {
  const tool_profile *p; /* the partitioned executable's */
  uint32_t r;
  double region_total;
} prof_region_line;

/* A region: a title naming it, then its tables. */
static void prof_intro_region(FILE *f, const void *ctx, double instr_total) {
  const prof_region_line *l = ctx;
  const kiln_region_info *ri = &l->p->rinfo[l->r];
  char names[256];
  tool_region_names(ri, 3, names, sizeof names);
  fprintf(f, "\nregion %u on %s (nodes %s): %.3f ms in %llu run%s; ", l->r, ri->placement, names,
          l->region_total * 1e-6, (unsigned long long)l->p->runs, l->p->runs == 1 ? "" : "s");
  if (l->p->regions[l->r]->no_events)
    fprintf(f, "backend '%s' reports no per-instruction timings\n", ri->backend);
  else
    fprintf(f, "its instructions' times add up to %.1f%% of it\n",
            l->region_total > 0 ? 100.0 * instr_total / l->region_total : 0);
}

/* The time of run `run` on its critical path through the regions: levels
 * run one after another; in a level, each list entry runs its regions one
 * after another, and the entries side by side. */
static uint64_t prof_critical_ns(const tool_profile *p, uint64_t run) {
  uint64_t total = 0;
  uint32_t levels = 0;
  for (uint32_t r = 0; r < p->region_count; r++)
    levels = p->rinfo[r].level + 1 > levels ? p->rinfo[r].level + 1 : levels;
  for (uint32_t L = 0; L < levels; L++) {
    uint64_t longest = 0;
    for (uint32_t r = 0; r < p->region_count; r++) {
      if (p->rinfo[r].level != L)
        continue;
      bool first = true; /* the first region of its entry at this level */
      for (uint32_t q = 0; q < r && first; q++)
        first = !(p->rinfo[q].level == L && strcmp(p->rinfo[q].placement, p->rinfo[r].placement) == 0);
      if (!first)
        continue;
      uint64_t sum = 0;
      for (uint32_t q = r; q < p->region_count; q++)
        if (p->rinfo[q].level == L && strcmp(p->rinfo[q].placement, p->rinfo[r].placement) == 0)
          sum += p->region_ns[run * p->region_count + q];
      longest = sum > longest ? sum : longest;
    }
    total += longest;
  }
  return total;
}

/* A partitioned executable: the regions' table, the time outside them,
 * then each region's own tables. */
static kiln_status prof_print_regions(FILE *f, tool_profile *p, double run_total,
                                      double run_median, const char *backend) {
  uint64_t *tmp = malloc((p->runs ? p->runs : 1) * sizeof *tmp);
  if (!tmp)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for the profile table");
  double crit_total = 0;
  for (uint64_t r = 0; r < p->runs; r++) {
    uint64_t c = prof_critical_ns(p, r);
    crit_total += (double)c;
    tmp[r] = p->run_ns[r] > c ? p->run_ns[r] - c : 0; /* outside the regions */
  }
  double outside_total = run_total > crit_total ? run_total - crit_total : 0;
  double outside_median = prof_median(tmp, p->runs);
  fprintf(f, "\nrun: %llu run%s, wall time median %.3f ms, total %.3f ms; the regions' times on "
             "the critical path add up to %.1f%% of it\n",
          (unsigned long long)p->runs, p->runs == 1 ? "" : "s", run_median * 1e-6,
          run_total * 1e-6, run_total > 0 ? 100.0 * crit_total / run_total : 0);
  int wp = 9;
  for (uint32_t r = 0; r < p->region_count; r++) {
    int l = (int)strlen(p->rinfo[r].placement);
    wp = l > wp ? l : wp;
  }
  fprintf(f, "\nby region (backend list %s; a level's regions on different entries run side by "
             "side)\n",
          backend ? backend : "?");
  fprintf(f, "%6s  %-*s %5s %5s %6s %11s %11s %7s %11s %11s  %s\n", "region", wp, "placement",
          "level", "nodes", "calls", "total ms", "median us", "share", "bytes in", "bytes out",
          "nodes (first)");
  for (uint32_t r = 0; r < p->region_count; r++) {
    const kiln_region_info *ri = &p->rinfo[r];
    double total = 0;
    for (uint64_t k = 0; k < p->runs; k++) {
      tmp[k] = p->region_ns[k * p->region_count + r];
      total += (double)tmp[k];
    }
    char names[256];
    tool_region_names(ri, 3, names, sizeof names);
    fprintf(f, "%6u  %-*s %5u %5u %6llu %11.3f %11.1f %6.1f%% %11llu %11llu  %s\n", r, wp,
            ri->placement, ri->level, ri->node_count, (unsigned long long)p->runs, total * 1e-6,
            prof_median(tmp, p->runs) * 1e-3, run_total > 0 ? 100.0 * total / run_total : 0,
            (unsigned long long)ri->bytes_in, (unsigned long long)ri->bytes_out, names);
  }
  fprintf(f, "%6s  %-*s %5s %5s %6llu %11.3f %11.1f %6.1f%%  (hand-over between regions, output "
             "copies)\n",
          "-", wp, "outside regions", "", "", (unsigned long long)p->runs, outside_total * 1e-6,
          outside_median * 1e-3, run_total > 0 ? 100.0 * outside_total / run_total : 0);
  free(tmp);
  for (uint32_t r = 0; r < p->region_count; r++) {
    double total = 0;
    for (uint64_t k = 0; k < p->runs; k++)
      total += (double)p->region_ns[k * p->region_count + r];
    prof_region_line l = {p, r, total};
    KILN_TRY(prof_tables(f, p->regions[r], run_total, prof_intro_region, &l));
  }
  return NULL;
}

kiln_status tool_profile_print(FILE *f, tool_profile *p, double load_ms, const char *backend) {
  fprintf(f, "\nprofile (%s)\n\ncompile phases\n", "kiln run --profile; see docs/profiling.md");
  if (load_ms >= 0)
    fprintf(f, "  %-40s %10.3f ms\n", "load (import)", load_ms);
  for (uint32_t i = 0; i < p->phase_count; i++)
    fprintf(f, "  %s%-*s %10.3f ms\n", i >= 3 ? "  " : "", i >= 3 ? 38 : 40, p->phases[i].name,
            (double)p->phases[i].ns * 1e-6);
  /* A partitioned executable's phases are its regions' summed; the
   * backends' own parts of "backend compile" are per region. */
  for (uint32_t r = 0; r < p->region_count; r++) {
    const tool_profile *rp = p->regions[r];
    for (uint32_t i = 3; i < rp->phase_count; i++) {
      char name[160];
      snprintf(name, sizeof name, "region %u: %s", r, rp->phases[i].name);
      fprintf(f, "    %-38s %10.3f ms\n", name, (double)rp->phases[i].ns * 1e-6);
    }
  }
  if (!p->runs)
    return NULL;
  double run_total = 0;
  uint64_t *tmp = malloc(p->runs * sizeof *tmp);
  if (!tmp)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for the profile table");
  for (uint64_t r = 0; r < p->runs; r++) {
    run_total += (double)p->run_ns[r];
    tmp[r] = p->run_ns[r];
  }
  double run_median = prof_median(tmp, p->runs);
  free(tmp);
  if (p->region_count)
    return prof_print_regions(f, p, run_total, run_median, backend);
  prof_run_line l = {p, run_median, run_total, backend};
  return prof_tables(f, p, run_total, prof_intro_run, &l);
}

/* ---- the trace ---------------------------------------------------------- */

static void prof_json_shapes(FILE *f, const kiln_instr *in) {
  fputc('[', f);
  for (uint32_t i = 0; i < kiln_instr_operand_count(in); i++) {
    const kiln_buffer *b = kiln_instr_operand(in, i);
    char t[160] = "_";
    if (b)
      kiln_type_format(kiln_buffer_type(b), t, sizeof t);
    if (i)
      fputs(", ", f);
    tool_json_string(f, t);
  }
  fputc(']', f);
}

/* p's last run's instruction events as complete events of process pid,
 * shifted by at_us; then a name for each thread track. */
static void prof_write_events(FILE *f, const tool_profile *p, uint32_t pid, double at_us) {
  uint32_t max_thread = 0;
  for (uint32_t k = 0; k < p->last_count; k++) {
    const kiln_profile_event *e = &p->last[k];
    if (e->instr >= p->n_instr)
      continue;
    if (e->thread > max_thread)
      max_thread = e->thread;
    const kiln_instr *in = kiln_ir_instr(p->ir, e->instr);
    char name[160];
    prof_instr_name(in, name, sizeof name);
    fprintf(f, ",\n{\"ph\": \"X\", \"pid\": %u, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, "
               "\"name\": ",
            pid, e->thread, at_us + (double)e->start_ns * 1e-3, (double)e->dur_ns * 1e-3);
    tool_json_string(f, name);
    fputs(", \"cat\": ", f);
    tool_json_string(f, kiln_instr_kind_name(kiln_instr_get_kind(in)));
    fprintf(f, ", \"args\": {\"instr\": %u, \"shapes\": ", e->instr);
    prof_json_shapes(f, in);
    fprintf(f, ", \"flops\": %.0f, \"bytes\": %.0f}}", tool_profile_flops(in),
            tool_profile_bytes(in));
  }
  for (uint32_t t = 0; t <= max_thread; t++)
    fprintf(f, ",\n{\"ph\": \"M\", \"pid\": %u, \"tid\": %u, \"name\": \"thread_name\", "
               "\"args\": {\"name\": \"thread %u\"}}",
            pid, t, t);
}

static void prof_json_process(FILE *f, uint32_t pid, const char *name) {
  fprintf(f, ",\n{\"ph\": \"M\", \"pid\": %u, \"tid\": 0, \"name\": \"process_name\", \"args\": "
             "{\"name\": ",
          pid);
  tool_json_string(f, name);
  fprintf(f, "}}");
}

/* A partitioned run: pid 1 has one track per list entry with a span per
 * region, pid 2 + r region r's instructions. The regions report their
 * durations, not their starts, so the spans are laid out as the executable
 * runs them: levels one after another, each entry's regions of a level one
 * after another, entries side by side; the time outside the regions
 * follows on a track of its own. */
static void prof_write_regions(FILE *f, const tool_profile *p) {
  uint64_t last = p->runs - 1;
  const char *entries[64];
  uint32_t n_entries = 0;
  uint32_t levels = 0;
  for (uint32_t r = 0; r < p->region_count; r++) {
    uint32_t e = 0;
    while (e < n_entries && strcmp(entries[e], p->rinfo[r].placement) != 0)
      e++;
    if (e == n_entries && n_entries < 64)
      entries[n_entries++] = p->rinfo[r].placement;
    levels = p->rinfo[r].level + 1 > levels ? p->rinfo[r].level + 1 : levels;
  }
  double level_at = 0;
  for (uint32_t L = 0; L < levels; L++) {
    double longest = 0;
    for (uint32_t e = 0; e < n_entries; e++) {
      double at = level_at;
      for (uint32_t r = 0; r < p->region_count; r++) {
        const kiln_region_info *ri = &p->rinfo[r];
        if (ri->level != L || strcmp(ri->placement, entries[e]) != 0)
          continue;
        double dur = (double)p->region_ns[last * p->region_count + r] * 1e-3;
        char name[320], names[256];
        tool_region_names(ri, 3, names, sizeof names);
        snprintf(name, sizeof name, "region %u (%s)", r, names);
        fprintf(f, ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, "
                   "\"cat\": \"region\", \"name\": ",
                e, at, dur);
        tool_json_string(f, name);
        fprintf(f, ", \"args\": {\"region\": %u, \"placement\": ", r);
        tool_json_string(f, ri->placement);
        fprintf(f, ", \"backend\": ");
        tool_json_string(f, ri->backend);
        fprintf(f, ", \"level\": %u, \"nodes\": %u, \"bytes_in\": %llu, \"bytes_out\": %llu}}",
                ri->level, ri->node_count, (unsigned long long)ri->bytes_in,
                (unsigned long long)ri->bytes_out);
        char pname[320];
        snprintf(pname, sizeof pname, "region %u on %s", r, ri->placement);
        prof_json_process(f, 2 + r, pname);
        prof_write_events(f, p->regions[r], 2 + r, at);
        at += dur;
      }
      longest = at - level_at > longest ? at - level_at : longest;
    }
    level_at += longest;
  }
  for (uint32_t e = 0; e < n_entries; e++) {
    fprintf(f, ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %u, \"name\": \"thread_name\", "
               "\"args\": {\"name\": ",
            e);
    tool_json_string(f, entries[e]);
    fprintf(f, "}}");
  }
  double run_us = (double)p->run_ns[last] * 1e-3;
  fprintf(f, ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, \"cat\": "
             "\"outside\", \"name\": \"outside regions (hand-over between regions, output "
             "copies)\"}",
          n_entries, level_at, run_us > level_at ? run_us - level_at : 0);
  fprintf(f, ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %u, \"name\": \"thread_name\", \"args\": "
             "{\"name\": \"outside regions\"}}",
          n_entries);
}

/* pid 1 is the run (one track per backend thread, or per list entry), pid
 * 0 the compile. */
static kiln_status prof_write_trace(FILE *f, const tool_profile *p, const char *backend) {
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  fprintf(f, "{\"ph\": \"M\", \"pid\": 0, \"tid\": 0, \"name\": \"process_name\", \"args\": "
             "{\"name\": \"compile\"}}");
  char pname[160];
  snprintf(pname, sizeof pname, "run (%s)", backend ? backend : "?");
  prof_json_process(f, 1, pname);
  double at = 0;
  for (uint32_t i = 0; i < p->phase_count; i++) {
    /* The backend's own phases are parts of "backend compile" (the third). */
    bool part = i >= 3;
    if (i == 3)
      at -= (double)p->phases[2].ns * 1e-3;
    fprintf(f, ",\n{\"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"cat\": \"compile\", \"name\": ",
            part ? 1 : 0);
    tool_json_string(f, p->phases[i].name);
    fprintf(f, ", \"ts\": %.3f, \"dur\": %.3f}", at, (double)p->phases[i].ns * 1e-3);
    at += (double)p->phases[i].ns * 1e-3;
  }
  if (p->region_count && p->runs)
    prof_write_regions(f, p);
  else
    prof_write_events(f, p, 1, 0);
  fprintf(f, "\n]}\n");
  return ferror(f) ? kiln_status_make(KILN_IO_ERROR, "write error") : NULL;
}

kiln_status tool_profile_write_json(const tool_profile *p, const char *path, const char *backend) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f)
    return kiln_status_make(KILN_IO_ERROR, "%s: cannot write: %s", tmp, strerror(errno));
  kiln_status s = prof_write_trace(f, p, backend);
  if (fclose(f) != 0 && !s)
    s = kiln_status_make(KILN_IO_ERROR, "%s: %s", tmp, strerror(errno));
  if (!s && rename(tmp, path) != 0)
    s = kiln_status_make(KILN_IO_ERROR, "%s: cannot rename from %s: %s", path, tmp,
                         strerror(errno));
  if (s) {
    remove(tmp);
    return kiln_status_wrap(s, "writing the profile trace '%s'", path);
  }
  return NULL;
}
