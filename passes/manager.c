/* passes/manager.c: the pass manager. Parses a pipeline string into steps,
 * runs each (once or to a fixed point), verifies, prints and times. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry.h"

typedef struct step {
  const kiln_pass_entry *pass;
  uint32_t cap; /* 0 = run once; else fixed point with at most cap runs */
} step;

kiln_pass_options kiln_pass_options_default(void) {
  kiln_pass_options o;
  memset(&o, 0, sizeof o);
  o.verify = true;
  return o;
}

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n';
}

/* Parses "a,b*,c*8" into steps (caller frees *out). */
static kiln_status parse(const char *p, step **out, uint32_t *n) {
  *out = NULL;
  *n = 0;
  if (!p)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "pipeline: no pipeline given");
  size_t cap = 8, len = 0;
  step *s = malloc(cap * sizeof *s);
  if (!s)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "pipeline: no memory");
  const char *c = p;
  while (*c) {
    while (is_space(*c))
      c++;
    const char *name = c;
    while (*c && *c != ',' && *c != '*' && !is_space(*c))
      c++;
    size_t nl = (size_t)(c - name);
    if (nl == 0) {
      free(s);
      return kiln_status_make(KILN_PARSE_ERROR, "pipeline '%s': empty pass name at column %zu", p,
                              (size_t)(name - p) + 1);
    }
    const kiln_pass_entry *e = kiln_pass_find(name, nl);
    if (!e) {
      free(s);
      return kiln_status_make(KILN_NOT_FOUND,
                              "pipeline '%s': no pass named '%.*s' (see kiln opt --help)", p,
                              (int)nl, name);
    }
    uint32_t steps_cap = 0;
    if (*c == '*') {
      c++;
      steps_cap = KILN_PASS_DEFAULT_CAP;
      if (*c >= '0' && *c <= '9') {
        char *end;
        unsigned long v = strtoul(c, &end, 10);
        if (v == 0 || v > 100000) {
          free(s);
          return kiln_status_make(
              KILN_PARSE_ERROR, "pipeline '%s': cap of '%.*s' must be 1..100000", p, (int)nl, name);
        }
        steps_cap = (uint32_t)v;
        c = end;
      }
    }
    while (is_space(*c))
      c++;
    if (*c == ',')
      c++;
    else if (*c) {
      free(s);
      return kiln_status_make(KILN_PARSE_ERROR, "pipeline '%s': unexpected '%c' at column %zu", p,
                              *c, (size_t)(c - p) + 1);
    }
    if (len == cap) {
      cap *= 2;
      step *ns = realloc(s, cap * sizeof *s);
      if (!ns) {
        free(s);
        return kiln_status_make(KILN_OUT_OF_MEMORY, "pipeline: no memory");
      }
      s = ns;
    }
    s[len].pass = e;
    s[len].cap = steps_cap;
    len++;
  }
  *out = s;
  *n = (uint32_t)len;
  return NULL;
}

kiln_status kiln_pass_parse_check(const char *pipeline) {
  step *s;
  uint32_t n;
  KILN_TRY(parse(pipeline, &s, &n));
  free(s);
  return NULL;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool wants(const char *sel, const char *name) {
  return sel && (strcmp(sel, "all") == 0 || strcmp(sel, name) == 0);
}

static kiln_status print_target(const kiln_pass_target *t, kiln_pass_level lvl, FILE *f,
                                const char *when, const char *name, uint32_t stepno) {
  fprintf(f, "; ---- IR %s %s (step %u) ----\n", when, name, stepno);
  if (lvl == KILN_PASS_GRAPH) {
    char *txt = NULL;
    KILN_TRY(kiln_module_print(t->module, &txt));
    fputs(txt, f);
    kiln_module_free_string(t->module, txt);
  } else {
    char *txt = NULL;
    KILN_TRY(kiln_ir_print(t->ir, &txt));
    fputs(txt, f);
    kiln_free(txt);
  }
  return NULL;
}

static kiln_status ensure_ir(kiln_pass_target *t) {
  if (t->ir)
    return NULL;
  if (!t->module)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "pass manager: neither a module nor an IR");
  kiln_function *f = t->function ? kiln_module_find_function(t->module, t->function)
                                 : kiln_module_function(t->module, 0);
  if (!f)
    return kiln_status_make(KILN_NOT_FOUND, "pass manager: module '%s' has no function '%s'",
                            kiln_module_name(t->module), t->function ? t->function : "(first)");
  KILN_TRY_CTX(kiln_irgen(f, &t->ir), "IRGen before the first instruction pass");
  return NULL;
}

/* One run of a pass over the target. */
static kiln_status run_once(kiln_pass_target *t, const kiln_pass_entry *e,
                            const kiln_pass_options *o, uint32_t *changes) {
  if (e->info.level == KILN_PASS_GRAPH) {
    if (!t->module)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "pass '%s' works on the graph, but no module was given",
                              e->info.name);
    if (t->ir)
      return kiln_status_make(KILN_FAILED_PRECONDITION,
                              "graph pass '%s' after an instruction pass: put graph passes "
                              "first",
                              e->info.name);
    uint32_t nf = kiln_module_function_count(t->module);
    for (uint32_t i = 0; i < nf; i++)
      KILN_TRY_CTX(e->graph(kiln_module_function(t->module, i), o, changes),
                   "pass '%s' on function '%s'", e->info.name,
                   kiln_function_name(kiln_module_function(t->module, i)));
    if (kiln_module_releases_constants(t->module))
      kiln_module_remove_unused_constants(t->module);
    return NULL;
  }
  KILN_TRY(ensure_ir(t));
  KILN_TRY_CTX(e->instr(t->ir, o, changes), "pass '%s' on IR '%s'", e->info.name,
               kiln_ir_name(t->ir));
  return NULL;
}

static kiln_pass_stat *stat_for(kiln_pass_report *r, const kiln_pass_entry *e) {
  if (!r)
    return NULL;
  for (uint32_t i = 0; i < r->stat_count; i++)
    if (strcmp(r->stats[i].name, e->info.name) == 0)
      return &r->stats[i];
  if (r->stat_count == KILN_PASS_MAX_STATS)
    return NULL;
  kiln_pass_stat *s = &r->stats[r->stat_count++];
  s->name = e->info.name;
  return s;
}

static kiln_status run_step(kiln_pass_target *t, const step *st, uint32_t stepno,
                            const kiln_pass_options *o, kiln_pass_report *r) {
  const kiln_pass_entry *e = st->pass;
  const char *name = e->info.name;
  if (e->info.level == KILN_PASS_INSTR)
    KILN_TRY(ensure_ir(t));
  if (o->print_to && wants(o->print_before, name))
    KILN_TRY(print_target(t, e->info.level, o->print_to, "before", name, stepno));
  uint32_t max_runs = st->cap ? st->cap : 1, runs = 0;
  bool settled = st->cap == 0;
  while (runs < max_runs) {
    uint32_t changes = 0;
    double t0 = now_ms();
    kiln_status s = run_once(t, e, o, &changes);
    double dt = now_ms() - t0;
    runs++;
    kiln_pass_stat *ps = stat_for(r, e);
    if (ps) {
      ps->runs++;
      ps->changes += changes;
      ps->ms += dt;
    }
    if (s)
      return kiln_status_wrap(s, "step %u", stepno);
    if (o->verify) {
      kiln_status v =
          e->info.level == KILN_PASS_GRAPH ? kiln_module_verify(t->module) : kiln_ir_verify(t->ir);
      if (v)
        return kiln_status_wrap(v, "verifier after pass '%s' (step %u, run %u)", name, stepno,
                                runs);
    }
    if (st->cap && changes == 0) {
      settled = true;
      break;
    }
  }
  if (!settled) {
    if (r)
      r->cap_hits++;
    if (o->log)
      fprintf(o->log, "kiln: pass '%s' (step %u) still changing after its cap of %u runs\n", name,
              stepno, max_runs);
  }
  if (o->print_to && wants(o->print_after, name))
    KILN_TRY(print_target(t, e->info.level, o->print_to, "after", name, stepno));
  return NULL;
}

kiln_status kiln_pass_run(kiln_pass_target *t, const char *pipeline, const kiln_pass_options *opts,
                          kiln_pass_report *report) {
  if (!t)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_pass_run: no target");
  kiln_pass_options dflt = kiln_pass_options_default();
  const kiln_pass_options *o = opts ? opts : &dflt;
  if (report)
    memset(report, 0, sizeof *report);
  step *steps;
  uint32_t n;
  KILN_TRY(parse(pipeline, &steps, &n));
  kiln_status s = NULL;
  for (uint32_t i = 0; i < n && !s; i++) {
    s = run_step(t, &steps[i], i + 1, o, report);
    if (!s && report)
      report->steps_run++;
    if (o->stop_after && i + 1 >= o->stop_after)
      break;
  }
  free(steps);
  return s;
}

void kiln_pass_report_print(const kiln_pass_report *r, FILE *f) {
  fprintf(f, "%-12s %6s %9s %10s\n", "pass", "runs", "changes", "ms");
  double total = 0;
  for (uint32_t i = 0; i < r->stat_count; i++) {
    const kiln_pass_stat *s = &r->stats[i];
    fprintf(f, "%-12s %6u %9llu %10.3f\n", s->name, s->runs, (unsigned long long)s->changes, s->ms);
    total += s->ms;
  }
  fprintf(f, "%-12s %6s %9s %10.3f\n", "total", "", "", total);
  if (r->cap_hits)
    fprintf(f, "%u fixed-point step(s) stopped at their cap\n", r->cap_hits);
}
