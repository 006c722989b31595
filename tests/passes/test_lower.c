/* tests/passes/test_lower.c: lowering. Property test: for each kind with a
 * rule, a small graph is lowered to the primitive set, verified, and run on
 * the interpreter next to the unlowered graph on the same random inputs;
 * the outputs must agree. Also: the error for a node with no way down. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

typedef struct lcase {
  const char *name, *text;
  bool positive; /* inputs in [0.25, 2] instead of [-2, 2] */
} lcase;

#define M(decl, body) "module @t\n" decl "func @main {\n" body "}\n"

static const lcase cases[] = {
    /* kiln's fused residual back into Conv + Add + the activation, for a
     * backend that does not take it (grouped here, so the result is
     * lowered further; bounds of the Clip crossed on both sides) */
    {"Conv residual",
     M("input %x : f32[1,2,4,4]\ninput %z : f32[1,4,4,4]\n"
       "const %w : f32[4,1,3,3] = [0.5, -0.25, 0.75, 1, -1, 0.5, 0.25, -0.5, 0.125, "
       "-0.75, 0.5, 0.25, 1, 0.5, -0.25, 0.75, -1, 0.5, 0.25, 0.5, -0.125, 0.5, -0.5, 1, "
       "0.75, -0.75, 0.25, -1, 0.5, 0.25, 0.125, 1, -0.5, 0.25, 0.75, -0.25]\n"
       "const %b : f32[4] = [0.5, -0.5, 0.25, 0]\n",
       "  %y : f32[1,4,4,4] = Conv(%x, %w, %b, %z) {activation = \"Clip\", activation_alpha = "
       "-1.0, activation_beta = 1.5, group = 2, kernel_shape = [3, 3], pads = [1, 1, 1, 1]}\n"
       "  output %o = %y\n"),
     false},
    {"Conv residual swish",
     M("input %x : f32[1,3,5,5]\ninput %z : f32[1,2,5,5]\n"
       "const %w : f32[2,3,1,1] = [0.5, -0.25, 0.75, 1, -1, 0.5]\n",
       "  %y : f32[1,2,5,5] = Conv(%x, %w, _, %z) {activation = \"Swish\", activation_alpha = "
       "0.5, kernel_shape = [1, 1]}\n  output %o = %y\n"),
     false},
    {"Gemm",
     M("input %a : f32[3,2]\ninput %b : f32[4,3]\ninput %c : f32[4]\n",
       "  %y : f32[2,4] = Gemm(%a, %b, %c) {alpha = 0.5, beta = 2, transA = 1, transB = "
       "1}\n  output %o = %y\n"),
     false},
    {"Softmax",
     M("input %x : f32[2,5]\n", "  %y : f32[2,5] = Softmax(%x) {axis = 1}\n"
                                "  output %o = %y\n"),
     false},
    {"LogSoftmax",
     M("input %x : f32[3,4]\n", "  %y : f32[3,4] = LogSoftmax(%x) {axis = 0}\n"
                                "  output %o = %y\n"),
     false},
    {"Softplus", M("input %x : f32[6]\n", "  %y : f32[6] = Softplus(%x)\n  output %o = %y\n"),
     false},
    {"Softsign", M("input %x : f32[6]\n", "  %y : f32[6] = Softsign(%x)\n  output %o = %y\n"),
     false},
    {"Elu", M("input %x : f32[6]\n", "  %y : f32[6] = Elu(%x) {alpha = 0.7}\n  output %o = %y\n"),
     false},
    {"Selu", M("input %x : f32[6]\n", "  %y : f32[6] = Selu(%x)\n  output %o = %y\n"), false},
    {"Celu", M("input %x : f32[6]\n", "  %y : f32[6] = Celu(%x) {alpha = 2}\n  output %o = %y\n"),
     false},
    {"HardSigmoid",
     M("input %x : f32[8]\n", "  %y : f32[8] = HardSigmoid(%x) {alpha = 0.4}\n"
                              "  output %o = %y\n"),
     false},
    {"HardSwish", M("input %x : f32[8]\n", "  %y : f32[8] = HardSwish(%x)\n  output %o = %y\n"),
     false},
    {"LeakyRelu",
     M("input %x : f32[8]\n", "  %y : f32[8] = LeakyRelu(%x) {alpha = 0.2}\n"
                              "  output %o = %y\n"),
     false},
    /* the other two forms of its lowering: Min above 1, Where below 0 */
    {"LeakyRelu",
     M("input %x : f32[8]\n", "  %y : f32[8] = LeakyRelu(%x) {alpha = 2.5}\n"
                              "  output %o = %y\n"),
     false},
    {"LeakyRelu",
     M("input %x : f32[8]\n", "  %y : f32[8] = LeakyRelu(%x) {alpha = -0.5}\n"
                              "  output %o = %y\n"),
     false},
    {"PRelu",
     M("input %x : f32[2,3]\nconst %s : f32[3] = [0.1, 0.5, 2]\n",
       "  %y : f32[2,3] = PRelu(%x, %s)\n  output %o = %y\n"),
     false},
    {"ThresholdedRelu",
     M("input %x : f32[8]\n", "  %y : f32[8] = ThresholdedRelu(%x) {alpha = "
                              "0.5}\n  output %o = %y\n"),
     false},
    {"Shrink",
     M("input %x : f32[8]\n", "  %y : f32[8] = Shrink(%x) {bias = 0.3, lambd = 0.6}\n"
                              "  output %o = %y\n"),
     false},
    {"Gelu", M("input %x : f32[8]\n", "  %y : f32[8] = Gelu(%x)\n  output %o = %y\n"), false},
    {"GeluTanh",
     M("input %x : f32[8]\n", "  %y : f32[8] = Gelu(%x) {approximate = \"tanh\"}\n"
                              "  output %o = %y\n"),
     false},
    {"ReduceMean",
     M("input %x : f32[2,3,4]\n", "  %y : f32[2,1,4] = ReduceMean(%x) {axes = [1]}\n"
                                  "  output %o = %y\n"),
     false},
    {"ReduceSumSquare",
     M("input %x : f32[2,3]\n", "  %y : f32[2] = ReduceSumSquare(%x) {axes = "
                                "[1], keepdims = 0}\n  output %o = %y\n"),
     false},
    {"ReduceL1", M("input %x : f32[2,3]\n", "  %y : f32[1,1] = ReduceL1(%x)\n  output %o = %y\n"),
     false},
    {"ReduceL2",
     M("input %x : f32[2,3]\n", "  %y : f32[2,1] = ReduceL2(%x) {axes = [-1]}\n"
                                "  output %o = %y\n"),
     false},
    {"ReduceLogSum",
     M("input %x : f32[2,3]\n", "  %y : f32[1,3] = ReduceLogSum(%x) {axes = [0]}\n"
                                "  output %o = %y\n"),
     true},
    {"ReduceLogSumExp",
     M("input %x : f32[2,3]\n", "  %y : f32[2] = ReduceLogSumExp(%x) {axes = "
                                "[1], keepdims = 0}\n  output %o = %y\n"),
     false},
    {"BatchNormalization",
     M("input %x : f32[2,3,2,2]\nconst %s : f32[3] = [1, 2, 0.5]\nconst %b : f32[3] = [0, 1, "
       "-1]\nconst %m : f32[3] = [0.5, -0.5, 0]\nconst %v : f32[3] = [1, 4, 0.25]\n",
       "  %y : f32[2,3,2,2] = BatchNormalization(%x, %s, %b, %m, %v)\n  output %o = %y\n"),
     false},
    {"InstanceNormalization",
     M("input %x : f32[2,3,4]\nconst %s : f32[3] = [1, 2, 0.5]\nconst %b : f32[3] = [0, 1, -1]\n",
       "  %y : f32[2,3,4] = InstanceNormalization(%x, %s, %b)\n  output %o = %y\n"),
     false},
    {"LayerNormalization",
     M("input %x : f32[2,3,4]\nconst %s : f32[4] = [1, 2, 0.5, 1]\nconst %b : f32[4] = [0, 1, "
       "-1, 0]\n",
       "  %y : f32[2,3,4] = LayerNormalization(%x, %s, %b) {axis = -1}\n  output %o = %y\n"),
     false},
    {"MeanVarianceNormalization",
     M("input %x : f32[2,3,2,2]\n",
       "  %y : f32[2,3,2,2] = MeanVarianceNormalization(%x)\n  output %o = %y\n"),
     false},
    {"Mean",
     M("input %a : f32[3]\ninput %b : f32[2,3]\ninput %c : f32[3]\n",
       "  %y : f32[2,3] = Mean(%a, %b, %c)\n  output %o = %y\n"),
     false},
    {"Sum",
     M("input %a : f32[3]\ninput %b : f32[3]\ninput %c : f32[3]\n",
       "  %y : f32[3] = Sum(%a, %b, %c)\n  output %o = %y\n"),
     false},
    {"Max3",
     M("input %a : f32[3]\ninput %b : f32[3]\ninput %c : f32[3]\n",
       "  %y : f32[3] = Max(%a, %b, %c)\n  output %o = %y\n"),
     false},
    {"Min3",
     M("input %a : f32[3]\ninput %b : f32[3]\ninput %c : f32[3]\n",
       "  %y : f32[3] = Min(%a, %b, %c)\n  output %o = %y\n"),
     false},
    {"Clip",
     M("input %x : f32[8]\nconst %lo : f32[] = [-0.5]\nconst %hi : f32[] = [1]\n",
       "  %y : f32[8] = Clip(%x, %lo, %hi)\n  output %o = %y\n"),
     false},
    {"Flatten",
     M("input %x : f32[2,3,4]\n", "  %y : f32[6,4] = Flatten(%x) {axis = 2}\n"
                                  "  output %o = %y\n"),
     false},
    {"Squeeze",
     M("input %x : f32[2,1,3]\n", "  %y : f32[2,3] = Squeeze(%x) {axes = [1]}\n"
                                  "  output %o = %y\n"),
     false},
    {"Unsqueeze",
     M("input %x : f32[2,3]\n", "  %y : f32[2,3,1] = Unsqueeze(%x) {axes = [2]}\n"
                                "  %z : f32[2,3,1] = Relu(%y)\n  output %o = %z\n"),
     false},
    {"IdentityDropout",
     M("input %x : f32[4]\n", "  %i : f32[4] = Identity(%x)\n"
                              "  %d : f32[4] = Dropout(%i)\n"
                              "  %e : f32[4] = Exp(%d)\n  output %o = %e\n"),
     false},
    {"CastLike",
     M("input %x : f32[4]\ninput %l : f64[1]\n",
       "  %y : f64[4] = CastLike(%x, %l)\n  output %o = %y\n"),
     false},
    {"GlobalAveragePool",
     M("input %x : f32[1,2,3,3]\n", "  %y : f32[1,2,1,1] = "
                                    "GlobalAveragePool(%x)\n  output %o = "
                                    "%y\n"),
     false},
    {"GlobalMaxPool",
     M("input %x : f32[1,2,3,3]\n", "  %y : f32[1,2,1,1] = GlobalMaxPool(%x)\n"
                                    "  output %o = %y\n"),
     false},
    {"ShapeSize",
     M("input %x : f32[2,3]\n", "  %s : i64[2] = Shape(%x)\n  %n : i64[] = Size(%x)\n"
                                "  output %o = %s\n  output %p = %n\n"),
     false},
};

#define N_CASES (int)(sizeof cases / sizeof cases[0])

/* Runs module m on the interpreter with the given inputs; outputs are
 * malloc'd into outs[i]. */
static void run_module(const kiln_module *m, void **ins, void **outs) {
  kiln_context *ctx = tp_context();
  kiln_executable *exe = NULL;
  kiln_status s = kiln_compile(ctx, m, NULL, "interpreter", NULL, &exe);
  ck_assert_msg(!s, "compile: %s", kiln_status_message(s));
  for (uint32_t i = 0; i < kiln_executable_output_count(exe); i++) {
    kiln_io_info io;
    kiln_executable_output(exe, i, &io);
    outs[i] = calloc(1, (size_t)kiln_type_bytes(&io.type) + 1);
  }
  s = kiln_run(exe, (const void *const *)ins, outs);
  ck_assert_msg(!s, "run: %s", kiln_status_message(s));
  kiln_executable_destroy(exe);
}

START_TEST(lowering_matches) {
  const lcase *c = &cases[_i];
  if (!tp_context()) {
    fprintf(stderr, "lowering %s: unsupported (no interpreter plugin)\n", c->name);
    return;
  }
  kiln_module *orig = tp_parse(c->text), *low = NULL;
  ck_assert_ptr_null(kiln_module_clone(orig, &low));
  kiln_pass_target t = {.module = low};
  kiln_status s = kiln_pass_run(&t, "lower,dce", NULL, NULL);
  ck_assert_msg(!s, "%s: %s", c->name, kiln_status_message(s));
  kiln_function *f = kiln_module_function(low, 0);
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++)
    ck_assert_msg(kiln_pass_node_is_primitive(kiln_function_node(f, i)), "%s: %s left", c->name,
                  kiln_node_kind_name(kiln_node_get_kind(kiln_function_node(f, i))));
  ck_assert_ptr_null(kiln_module_verify(low));

  void *ins[8] = {0}, *o1[4] = {0}, *o2[4] = {0};
  uint32_t ni = kiln_module_input_count(orig);
  uint32_t seed = 99u + (uint32_t)_i;
  for (uint32_t i = 0; i < ni; i++) {
    const kiln_type *ty = kiln_value_type(kiln_module_input(orig, i));
    int64_t n = kiln_type_numel(ty);
    ins[i] = calloc((size_t)n + 1, kiln_elem_size(ty->elem));
    for (int64_t k = 0; k < n; k++) {
      seed = seed * 1664525u + 1013904223u;
      double u = (double)(seed >> 8) / 16777216.0;
      double v = c->positive ? 0.25 + 1.75 * u : -2 + 4 * u;
      if (ty->elem == KILN_F32)
        ((float *)ins[i])[k] = (float)v;
      else
        ((double *)ins[i])[k] = v;
    }
  }
  run_module(orig, ins, o1);
  run_module(low, ins, o2);
  kiln_function *of = kiln_module_function(orig, 0);
  for (uint32_t o = 0; o < kiln_function_output_count(of); o++) {
    const kiln_type *ty = kiln_value_type(kiln_function_output_value(of, o));
    for (int64_t k = 0; k < kiln_type_numel(ty); k++) {
      double a, b;
      if (ty->elem == KILN_F32) {
        a = ((float *)o1[o])[k];
        b = ((float *)o2[o])[k];
      } else if (ty->elem == KILN_F64) {
        a = ((double *)o1[o])[k];
        b = ((double *)o2[o])[k];
      } else {
        a = (double)((int64_t *)o1[o])[k];
        b = (double)((int64_t *)o2[o])[k];
      }
      ck_assert_msg(fabs(a - b) <= 1e-4 + 1e-4 * fabs(a), "%s: output %u[%lld]: %g vs lowered %g",
                    c->name, o, (long long)k, a, b);
    }
    free(o1[o]);
    free(o2[o]);
  }
  for (uint32_t i = 0; i < ni; i++)
    free(ins[i]);
  kiln_module_destroy(orig);
  kiln_module_destroy(low);
}
END_TEST

static bool no_det(void *user, const kiln_node *n) {
  (void)user;
  return kiln_node_get_kind(n) != KILN_NODE_Det;
}

START_TEST(lower_error_names_node) {
  /* Det is a primitive (no rule): a backend without it cannot run it. */
  kiln_module *m = tp_parse(M("input %a : f32[2,3,3]\n", "  %y : f32[2] = Det(%a)\n"
                                                          "  output %o = %y\n"));
  kiln_pass_options o = kiln_pass_options_default();
  o.supports_node = no_det;
  o.backend_name = "toy";
  uint32_t ch = 0;
  kiln_status s = kiln_pass_lower(kiln_module_function(m, 0), &o, &ch);
  ck_assert_ptr_nonnull(s);
  const char *msg = kiln_status_message(s);
  ck_assert_ptr_nonnull(strstr(msg, "Det"));
  ck_assert_ptr_nonnull(strstr(msg, "toy"));
  ck_assert_ptr_nonnull(strstr(msg, "f32[2,3,3]"));
  ck_assert_ptr_nonnull(strstr(msg, "'y'"));
  kiln_status_free(s);
  kiln_module_destroy(m);
}
END_TEST

/* The rule table and the primitive set split the kinds between them. */
START_TEST(primitive_set_is_total) {
  ck_assert(kiln_pass_has_lowering(KILN_NODE_Gemm));
  ck_assert(kiln_pass_has_lowering(KILN_NODE_Softmax));
  ck_assert(kiln_pass_has_lowering(KILN_NODE_Sigmoid));
  ck_assert(!kiln_pass_has_lowering(KILN_NODE_Tanh));
  ck_assert(!kiln_pass_has_lowering(KILN_NODE_MatMul));
  ck_assert(!kiln_pass_has_lowering(KILN_NODE_Add));
  ck_assert(!kiln_pass_has_lowering(KILN_NODE_ReduceSum));
}
END_TEST

/* From test_lower_total.c. */
TCase *lower_total_tcase(void);

Suite *lower_suite(void) {
  Suite *s = suite_create("lowering");
  TCase *tc = tcase_create("lower");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, lowering_matches, 0, N_CASES);
  tcase_add_test(tc, lower_error_names_node);
  tcase_add_test(tc, primitive_set_is_total);
  suite_add_tcase(s, tc);
  suite_add_tcase(s, lower_total_tcase());
  return s;
}
