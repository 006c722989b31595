/* tools/profile.c: `kiln run --profile` and `--profile-json`. Collects the
 * executable's profile after every run (kiln_executable_profile), then
 * prints where the time went, per instruction and per node kind, with the
 * work each did (FLOPs counted from the instruction's shapes for the
 * compute-bound kinds, bytes of its operands for the others) and the rate
 * achieved, and writes the last run as a Chrome trace-event file.
 * docs/profiling.md explains the columns. */
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
};

kiln_status tool_profile_create(const kiln_executable *exe, tool_profile **out) {
  tool_profile *p = calloc(1, sizeof *p);
  if (!p)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for a profile");
  p->ir = kiln_executable_ir(exe);
  p->n_instr = kiln_ir_instr_count(p->ir);
  p->timed = calloc(p->n_instr ? p->n_instr : 1, sizeof *p->timed);
  if (!p->timed) {
    tool_profile_destroy(p);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for a profile");
  }
  *out = p;
  return NULL;
}

void tool_profile_destroy(tool_profile *p) {
  if (!p)
    return;
  free(p->run_ns);
  free(p->instr_ns);
  free(p->timed);
  free(p->phases);
  free(p->last);
  free(p);
}

kiln_status tool_profile_add_run(tool_profile *p, kiln_executable *exe) {
  const kiln_profile *pr = NULL;
  KILN_TRY(kiln_executable_profile(exe, &pr));
  if (p->runs == p->cap_runs) {
    uint64_t cap = p->cap_runs ? p->cap_runs * 2 : 8;
    uint64_t *r = realloc(p->run_ns, cap * sizeof *r);
    if (r)
      p->run_ns = r;
    uint64_t *t = r ? realloc(p->instr_ns, cap * (p->n_instr ? p->n_instr : 1) * sizeof *t) : NULL;
    if (!t)
      return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for the profile of run %llu",
                              (unsigned long long)p->runs + 1);
    p->instr_ns = t;
    p->cap_runs = cap;
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

kiln_status tool_profile_print(FILE *f, tool_profile *p, double load_ms, const char *backend) {
  fprintf(f, "\nprofile (%s)\n\ncompile phases\n", "kiln run --profile; see docs/profiling.md");
  if (load_ms >= 0)
    fprintf(f, "  %-40s %10.3f ms\n", "load (import)", load_ms);
  for (uint32_t i = 0; i < p->phase_count; i++)
    fprintf(f, "  %s%-*s %10.3f ms\n", i >= 3 ? "  " : "", i >= 3 ? 38 : 40, p->phases[i].name,
            (double)p->phases[i].ns * 1e-6);
  if (!p->runs)
    return NULL;
  double run_total = 0;
  uint64_t *tmp = malloc((p->runs ? p->runs : 1) * sizeof *tmp);
  prof_row *rows = calloc(p->n_instr ? p->n_instr : 1, sizeof *rows);
  prof_row *kinds = calloc(p->n_instr ? p->n_instr : 1, sizeof *kinds);
  if (!tmp || !rows || !kinds) {
    free(tmp);
    free(rows);
    free(kinds);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for the profile table");
  }
  for (uint64_t r = 0; r < p->runs; r++) {
    run_total += (double)p->run_ns[r];
    tmp[r] = p->run_ns[r];
  }
  double run_median = prof_median(tmp, p->runs);
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
  fprintf(f, "\nrun: %llu run%s, wall time median %.3f ms, total %.3f ms; the instructions' times "
             "add up to %.1f%% of it\n",
          (unsigned long long)p->runs, p->runs == 1 ? "" : "s", run_median * 1e-6,
          run_total * 1e-6, run_total > 0 ? 100.0 * instr_total / run_total : 0);
  if (p->no_events)
    fprintf(f, "(backend '%s' reports no per-instruction timings)\n", backend ? backend : "?");
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

/* ---- the trace ---------------------------------------------------------- */

static void prof_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void prof_json_shapes(FILE *f, const kiln_instr *in) {
  fputc('[', f);
  for (uint32_t i = 0; i < kiln_instr_operand_count(in); i++) {
    const kiln_buffer *b = kiln_instr_operand(in, i);
    char t[160] = "_";
    if (b)
      kiln_type_format(kiln_buffer_type(b), t, sizeof t);
    if (i)
      fputs(", ", f);
    prof_json_string(f, t);
  }
  fputc(']', f);
}

/* pid 1 is the run (one track per backend thread), pid 0 the compile. */
static kiln_status prof_write_trace(FILE *f, const tool_profile *p, const char *backend) {
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  fprintf(f, "{\"ph\": \"M\", \"pid\": 0, \"tid\": 0, \"name\": \"process_name\", \"args\": "
             "{\"name\": \"compile\"}},\n");
  fprintf(f, "{\"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"name\": \"process_name\", \"args\": "
             "{\"name\": ");
  char pname[160];
  snprintf(pname, sizeof pname, "run (%s)", backend ? backend : "?");
  prof_json_string(f, pname);
  fprintf(f, "}}");
  double at = 0;
  for (uint32_t i = 0; i < p->phase_count; i++) {
    /* The backend's own phases are parts of "backend compile" (the third). */
    bool part = i >= 3;
    if (i == 3)
      at -= (double)p->phases[2].ns * 1e-3;
    fprintf(f, ",\n{\"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"cat\": \"compile\", \"name\": ",
            part ? 1 : 0);
    prof_json_string(f, p->phases[i].name);
    fprintf(f, ", \"ts\": %.3f, \"dur\": %.3f}", at, (double)p->phases[i].ns * 1e-3);
    at += (double)p->phases[i].ns * 1e-3;
  }
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
    fprintf(f, ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, "
               "\"name\": ",
            e->thread, (double)e->start_ns * 1e-3, (double)e->dur_ns * 1e-3);
    prof_json_string(f, name);
    fputs(", \"cat\": ", f);
    prof_json_string(f, kiln_instr_kind_name(kiln_instr_get_kind(in)));
    fprintf(f, ", \"args\": {\"instr\": %u, \"shapes\": ", e->instr);
    prof_json_shapes(f, in);
    fprintf(f, ", \"flops\": %.0f, \"bytes\": %.0f}}", tool_profile_flops(in),
            tool_profile_bytes(in));
  }
  for (uint32_t t = 0; t <= max_thread; t++)
    fprintf(f, ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %u, \"name\": \"thread_name\", "
               "\"args\": {\"name\": \"thread %u\"}}",
            t, t);
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
