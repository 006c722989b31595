/* tests/core/profile_check.h: one profiling check shared by the
 * interpreter, cpu and opencl suites. A chain of six named MatMul + Relu
 * layers ([rows,256] x [256,256]; each backend picks rows so that a run's
 * fixed cost, and for opencl the launch gaps between kernels, are small
 * next to its instructions) is compiled with KILN_COMPILE_PROFILE and run;
 * then kiln_executable_profile must give:
 * - an event for every compute instruction, each inside the run
 *   (start + dur <= run_ns, with 5% slack for the two clocks) and naming a
 *   real instruction;
 * - per-instruction times that add up to the run's wall time: the sum of
 *   the events' durations on thread 0 within [50%, 105%] of run_ns, for
 *   each of three runs (the rule docs/profiling.md states: below 100%
 *   because a run also binds buffers and takes its arena, above only by
 *   clock granularity);
 * - the ONNX-style names: every compute instruction's kiln_instr_name is
 *   its node's ("layerK", "actK", or "layerK+1" where the Relu was fused
 *   into the MatMul);
 * - the core's three compile phases, named;
 * and an executable compiled without the flag refuses with
 * FAILED_PRECONDITION. */
#ifndef KILN_TEST_PROFILE_CHECK_H
#define KILN_TEST_PROFILE_CHECK_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/kiln.h>

#define PROF_LAYERS 6
#define PROF_WIDTH 256

static kiln_status prof_fill(void *user, void *dst, size_t bytes) {
  unsigned seed = *(unsigned *)user;
  float *w = dst;
  for (size_t i = 0; i < bytes / sizeof *w; i++)
    w[i] = (float)((int)((i * 7 + seed * 3) % 13) - 6) * (1.0f / 256);
  return NULL;
}

static kiln_module *prof_model(int64_t rows) {
  kiln_module *m = NULL;
  kiln_function *f = NULL;
  kiln_value *h = NULL;
  kiln_type xt, wt;
  int64_t xd[] = {rows, PROF_WIDTH}, wd[] = {PROF_WIDTH, PROF_WIDTH};
  kiln_status s = kiln_type_make(KILN_F32, 2, xd, &xt);
  if (!s)
    s = kiln_type_make(KILN_F32, 2, wd, &wt);
  if (!s)
    s = kiln_module_create(NULL, "profiled", &m);
  if (!s)
    s = kiln_module_add_input(m, "x", &xt, &h);
  if (!s)
    s = kiln_module_add_function(m, "main", &f);
  for (unsigned k = 0; k < PROF_LAYERS && !s; k++) {
    kiln_value *w = NULL;
    char wn[32], ln[32], an[32];
    snprintf(wn, sizeof wn, "w%u", k);
    snprintf(ln, sizeof ln, "layer%u", k);
    snprintf(an, sizeof an, "act%u", k);
    s = kiln_module_add_constant_fill(m, wn, &wt, prof_fill, &k, &w);
    kiln_node *mm = NULL, *act = NULL;
    kiln_value *in[2] = {h, w};
    if (!s)
      s = kiln_function_add_node(f, KILN_NODE_MatMul, ln, in, 2, NULL, 0, 0, &mm);
    kiln_value *r = mm ? kiln_node_result(mm, 0) : NULL;
    if (!s)
      s = kiln_function_add_node(f, KILN_NODE_Relu, an, &r, 1, NULL, 0, 0, &act);
    if (!s)
      h = kiln_node_result(act, 0);
  }
  if (!s)
    s = kiln_function_add_output(f, "y", h);
  ck_assert_msg(!s, "building the model: %s", kiln_status_message(s));
  return m;
}

/* Is name the name of a node of the model (or a fusion of two)? */
static bool prof_name_ok(const char *name) {
  unsigned k;
  char rest[8] = "";
  if (!name)
    return false;
  if (sscanf(name, "layer%u%7s", &k, rest) >= 1 && k < PROF_LAYERS)
    return rest[0] == '\0' || strcmp(rest, "+1") == 0;
  if (sscanf(name, "act%u%7s", &k, rest) == 1 && k < PROF_LAYERS)
    return true;
  return false;
}

/* Run the check on `backend`; returns the number of runs checked (3). */
static unsigned prof_check(kiln_context *ctx, const char *backend, uint32_t threads,
                           int64_t rows) {
  kiln_module *m = prof_model(rows);
  kiln_compile_options o = {.struct_size = sizeof o, .device = -1, .threads = threads};
  kiln_executable *plain = NULL, *exe = NULL;
  kiln_status s = kiln_compile(ctx, m, NULL, backend, &o, &plain);
  ck_assert_msg(!s, "%s: compile: %s", backend, kiln_status_message(s));
  const kiln_profile *pr = NULL;
  s = kiln_executable_profile(plain, &pr);
  ck_assert_msg(s && kiln_status_code(s) == KILN_FAILED_PRECONDITION,
                "%s: a profile of an executable compiled without profiling", backend);
  kiln_status_free(s);
  kiln_executable_destroy(plain);

  o.flags = KILN_COMPILE_PROFILE;
  s = kiln_compile(ctx, m, NULL, backend, &o, &exe);
  ck_assert_msg(!s, "%s: compile for profiling: %s", backend, kiln_status_message(s));
  kiln_module_destroy(m);
  const kiln_ir *ir = kiln_executable_ir(exe);
  uint32_t n = kiln_ir_instr_count(ir);

  float *x = malloc(sizeof(float) * (size_t)rows * PROF_WIDTH);
  float *y = malloc(sizeof(float) * (size_t)rows * PROF_WIDTH);
  ck_assert(x && y);
  for (int64_t i = 0; i < rows * PROF_WIDTH; i++)
    x[i] = (float)(i % 17 - 8) * 0.125f;
  const void *in[] = {x};
  void *out[] = {y};
  s = kiln_run(exe, in, out); /* warm: first-run costs (pages, pools) do not count */
  ck_assert_msg(!s, "%s: run: %s", backend, kiln_status_message(s));
  unsigned checked = 0;
  uint32_t *seen = calloc(n, sizeof *seen);
  ck_assert(seen);
  for (int run = 0; run < 3; run++) {
    s = kiln_run(exe, in, out);
    ck_assert_msg(!s, "%s: run: %s", backend, kiln_status_message(s));
    s = kiln_executable_profile(exe, &pr);
    ck_assert_msg(!s, "%s: profile: %s", backend, kiln_status_message(s));
    ck_assert_uint_ge(pr->struct_size, sizeof *pr);
    ck_assert_uint_gt(pr->run_ns, 0);
    ck_assert_uint_ge(pr->phase_count, 3);
    ck_assert_str_eq(pr->phases[0].name, "graph passes and lowering");
    ck_assert_str_eq(pr->phases[1].name, "instructions and memory plan");
    ck_assert_str_eq(pr->phases[2].name, "backend compile");
    memset(seen, 0, n * sizeof *seen);
    double sum = 0;
    for (uint32_t k = 0; k < pr->event_count; k++) {
      const kiln_profile_event *e = &pr->events[k];
      ck_assert_msg(e->instr < n, "%s: event %u names instruction %u of %u", backend, k,
                    e->instr, n);
      ck_assert_msg((double)(e->start_ns + e->dur_ns) <= 1.05 * (double)pr->run_ns + 1e4,
                    "%s: event of instruction %u ends at %llu ns, after the run (%llu ns)",
                    backend, e->instr, (unsigned long long)(e->start_ns + e->dur_ns),
                    (unsigned long long)pr->run_ns);
      seen[e->instr]++;
      if (e->thread == 0)
        sum += (double)e->dur_ns;
    }
    for (uint32_t i = 0; i < n; i++) {
      const kiln_instr *ins = kiln_ir_instr(ir, i);
      if (kiln_instr_kind_node(kiln_instr_get_kind(ins)) < 0)
        continue;
      ck_assert_msg(seen[i] > 0, "%s: compute instruction %u (%s) has no event", backend, i,
                    kiln_instr_kind_name(kiln_instr_get_kind(ins)));
      ck_assert_msg(prof_name_ok(kiln_instr_name(ins)),
                    "%s: instruction %u (%s) is named '%s', not after its model node", backend,
                    i, kiln_instr_kind_name(kiln_instr_get_kind(ins)),
                    kiln_instr_name(ins) ? kiln_instr_name(ins) : "(none)");
    }
    double ratio = sum / (double)pr->run_ns;
    fprintf(stderr, "%s: run %d: %u events, instructions %.3f ms of %.3f ms (%.1f%%)\n", backend,
            run, pr->event_count, sum * 1e-6, (double)pr->run_ns * 1e-6, 100 * ratio);
    ck_assert_msg(ratio >= 0.5 && ratio <= 1.05,
                  "%s: the instructions' times add up to %.1f%% of the run's wall time, not "
                  "50%% to 105%%",
                  backend, 100 * ratio);
    checked++;
  }
  free(seen);
  free(x);
  free(y);
  kiln_executable_destroy(exe);
  return checked;
}

#endif
