/* tests/core/index_faults.h: one table of models whose index tensor is a
 * graph input, run through kiln_compile / kiln_run on a named backend by the
 * interpreter, cpu and opencl suites alike. Each model runs with in-range
 * indices (negative ones included: the result is hand-computed), then with
 * an out-of-range value (KILN_OUT_OF_RANGE, the message naming the
 * instruction's result and the value), then in range again (a fault does not
 * stick to the executable). OneHot is the exception ONNX defines: an index
 * out of range gives an all-off row, not an error. */
#ifndef KILN_TEST_INDEX_FAULTS_H
#define KILN_TEST_INDEX_FAULTS_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/kiln.h>

typedef struct ifault_case {
  const char *kind;
  const char *text; /* input 0 is the index tensor, output 0 an f32 tensor */
  kiln_elem elem;   /* of the indices: KILN_I64 or KILN_I32 */
  uint32_t n_idx;
  int64_t good[16], bad[16];
  uint32_t n_out;
  float want[16];    /* output 0 for `good` */
  const char *value; /* in the message for `bad`; NULL: `bad` is not an error */
  const char *node;  /* in the message too: the value the instruction computes (a graph
                      * output's name where it writes one); NULL where lowering renames it */
  float want_bad[16]; /* output 0 for `bad` when value is NULL */
  bool loss;          /* a loss: opencl lowers it to a compare that cannot fail */
} ifault_case;

/* Flags for ifault_check: backends that lower the losses (see above). */
#define IFAULT_LOSS_LOWERED 1u

static const ifault_case ifault_cases[] = {
    {"Gather",
     "module @t\ninput %i : i64[2]\nconst %d : f32[3,2] = [1, 2, 3, 4, 5, 6]\nfunc @main {\n"
     "  %gathered : f32[2,2] = Gather(%d, %i) {axis = 0}\n"
     "  %negated : f32[2,2] = Neg(%gathered)\n  output %y = %negated\n}\n",
     KILN_I64, 2, {-1, 0}, {0, 3}, 4, {-5, -6, -1, -2},
     "index 3 out of range for dimension 3", "'gathered'", {0}, false},
    {"Gather (i32, axis 1)",
     "module @t\ninput %i : i32[3]\nconst %d : f32[2,2] = [1, 2, 3, 4]\nfunc @main {\n"
     "  %picked : f32[2,3] = Gather(%d, %i) {axis = 1}\n  output %y = %picked\n}\n",
     KILN_I32, 3, {1, -2, -1}, {1, -3, 0}, 6, {2, 1, 2, 4, 3, 4},
     "index -3 out of range for dimension 2", "'y'", {0}, false},
    {"GatherElements",
     "module @t\ninput %i : i64[2,2]\nconst %d : f32[2,3] = [1, 2, 3, 4, 5, 6]\nfunc @main {\n"
     "  %elems : f32[2,2] = GatherElements(%d, %i) {axis = 1}\n  output %y = %elems\n}\n",
     KILN_I64, 4, {-1, 0, 1, -3}, {0, 1, 3, 0}, 4, {3, 1, 5, 4},
     "index 3 out of range for dimension 3", "'y'", {0}, false},
    {"GatherND",
     "module @t\ninput %i : i64[2,2]\nconst %d : f32[2,3] = [1, 2, 3, 4, 5, 6]\nfunc @main {\n"
     "  %tuples : f32[2] = GatherND(%d, %i) {batch_dims = 0}\n  output %y = %tuples\n}\n",
     KILN_I64, 4, {1, -1, 0, -3}, {0, 0, 2, 0}, 2, {6, 1},
     "index 2 out of range for dimension 2", "'y'", {0}, false},
    {"ScatterND",
     "module @t\ninput %i : i64[2,1]\nconst %d : f32[4] = [1, 2, 3, 4]\n"
     "const %u : f32[2] = [10, 20]\nfunc @main {\n"
     "  %scattered : f32[4] = ScatterND(%d, %i, %u) {reduction = \"none\"}\n"
     "  output %y = %scattered\n}\n",
     KILN_I64, 2, {-1, 0}, {1, 4}, 4, {20, 2, 3, 10},
     "index 4 out of range for dimension 4", "'y'", {0}, false},
    {"ScatterElements",
     "module @t\ninput %i : i64[1,2]\nconst %d : f32[2,2] = [1, 2, 3, 4]\n"
     "const %u : f32[1,2] = [10, 20]\nfunc @main {\n"
     "  %placed : f32[2,2] = ScatterElements(%d, %i, %u) {axis = 1, reduction = \"add\"}\n"
     "  output %y = %placed\n}\n",
     KILN_I64, 2, {-1, 0}, {-3, 0}, 4, {21, 12, 3, 4},
     "index -3 out of range for dimension 2", "'y'", {0}, false},
    /* lowered to a ScatterND on cpu and opencl: the flat index is checked
     * against the unpooled block, under the lowered node's name */
    {"MaxUnpool",
     "module @t\ninput %i : i64[1,1,2,2]\nconst %x : f32[1,1,2,2] = [1, 2, 3, 4]\n"
     "func @main {\n"
     "  %unpooled : f32[1,1,4,4] = MaxUnpool(%x, %i) {kernel_shape = [2, 2], strides = [2, 2]}\n"
     "  output %y = %unpooled\n}\n",
     KILN_I64, 4, {0, 3, 9, 15}, {0, 3, 16, 15}, 16,
     {1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 4},
     "index 16 out of range for dimension 16", NULL, {0}, false},
    /* x [time 4, batch 2]; lengths 4, 2 reverse column 0 whole and the
     * first two steps of column 1. A length past the time axis is out of
     * range (lowered: as a GatherElements index, 5 - 1 - t) */
    {"ReverseSequence",
     "module @t\ninput %i : i64[2]\nconst %x : f32[4,2] = [0, 1, 2, 3, 4, 5, 6, 7]\n"
     "func @main {\n  %rev : f32[4,2] = ReverseSequence(%x, %i) {batch_axis = 1, time_axis = 0}\n"
     "  output %y = %rev\n}\n",
     KILN_I64, 2, {4, 2}, {5, 2}, 8, {6, 3, 4, 1, 2, 5, 0, 7}, "out of range for dimension 4",
     NULL, {0}, false},
    /* ONNX: an index outside [-depth, depth) gives a row of off_value */
    {"OneHot",
     "module @t\ninput %i : i64[4]\nconst %v : f32[2] = [0, 1]\nfunc @main {\n"
     "  %hot : f32[4,3] = OneHot(%i, %v) {axis = -1, depth = 3}\n  output %y = %hot\n}\n",
     KILN_I64, 4, {-1, 0, 2, -3}, {3, -4, 1000000, 1}, 12,
     {0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0}, NULL, NULL,
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}, false},
    /* logp [2, 3] = [[-1, -2, -3], [-4, -5, -6]]; classes 2, 0 -> 3, 4 */
    {"NegativeLogLikelihoodLoss",
     "module @t\ninput %i : i64[2]\nconst %p : f32[2,3] = [-1, -2, -3, -4, -5, -6]\n"
     "func @main {\n"
     "  %nll : f32[2] = NegativeLogLikelihoodLoss(%p, %i) {reduction = \"none\"}\n"
     "  output %y = %nll\n}\n",
     KILN_I64, 2, {2, 0}, {2, 3}, 2, {3, 4}, "index 3 out of range for dimension 3", "'y'",
     {0}, true},
};

static void ifault_fill(const ifault_case *c, const int64_t *v, void *buf) {
  for (uint32_t k = 0; k < c->n_idx; k++) {
    if (c->elem == KILN_I32)
      ((int32_t *)buf)[k] = (int32_t)v[k];
    else
      ((int64_t *)buf)[k] = v[k];
  }
}

static void ifault_expect_out(const ifault_case *c, const char *backend, const float *got,
                              const float *want, const char *what) {
  for (uint32_t k = 0; k < c->n_out; k++)
    ck_assert_msg(got[k] == want[k], "%s on %s, %s: output[%u] = %g, expected %g", c->kind,
                  backend, what, k, got[k], want[k]);
}

static kiln_status ifault_run(const ifault_case *c, kiln_executable *exe, const int64_t *v,
                              float *out) {
  int64_t idx[16];
  ifault_fill(c, v, idx);
  const void *ins[1] = {idx};
  void *outs[1] = {out};
  return kiln_run(exe, ins, outs);
}

/* Run every case on `backend`; flags: IFAULT_*. Returns the number of
 * cases run. */
static uint32_t ifault_check(kiln_context *ctx, const char *backend, unsigned flags) {
  uint32_t ran = 0;
  for (size_t ci = 0; ci < sizeof ifault_cases / sizeof *ifault_cases; ci++) {
    const ifault_case *c = &ifault_cases[ci];
    if (c->loss && (flags & IFAULT_LOSS_LOWERED))
      continue;
    kiln_module *m = NULL;
    kiln_executable *exe = NULL;
    kiln_status s = kiln_module_parse(c->text, strlen(c->text), "index_faults.kir", NULL, &m);
    ck_assert_msg(!s, "%s: parse: %s", c->kind, kiln_status_message(s));
    s = kiln_compile(ctx, m, NULL, backend, NULL, &exe);
    ck_assert_msg(!s, "%s on %s: compile: %s", c->kind, backend, kiln_status_message(s));
    float out[16];
    s = ifault_run(c, exe, c->good, out);
    ck_assert_msg(!s, "%s on %s, in range: %s", c->kind, backend, kiln_status_message(s));
    ifault_expect_out(c, backend, out, c->want, "in range");
    memset(out, 0, sizeof out);
    s = ifault_run(c, exe, c->bad, out);
    if (!c->value) {
      ck_assert_msg(!s, "%s on %s, out of range: %s", c->kind, backend, kiln_status_message(s));
      ifault_expect_out(c, backend, out, c->want_bad, "out of range");
    } else {
      ck_assert_msg(s, "%s on %s: an out-of-range index ran without an error", c->kind, backend);
      const char *msg = kiln_status_message(s);
      ck_assert_msg(kiln_status_code(s) == KILN_OUT_OF_RANGE, "%s on %s: code %d: %s", c->kind,
                    backend, (int)kiln_status_code(s), msg);
      ck_assert_msg(strstr(msg, c->value), "%s on %s: '%s' not in: %s", c->kind, backend, c->value,
                    msg);
      ck_assert_msg(!c->node || strstr(msg, c->node), "%s on %s: node '%s' not named in: %s",
                    c->kind, backend, c->node, msg);
      ck_assert_msg(strstr(msg, backend), "%s on %s: backend not named in: %s", c->kind, backend,
                    msg);
      kiln_status_free(s);
    }
    s = ifault_run(c, exe, c->good, out);
    ck_assert_msg(!s, "%s on %s, in range after a fault: %s", c->kind, backend,
                  kiln_status_message(s));
    ifault_expect_out(c, backend, out, c->want, "in range after a fault");
    kiln_executable_destroy(exe);
    kiln_module_destroy(m);
    ran++;
  }
  return ran;
}

#endif
