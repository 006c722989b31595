/* tests/cpu/test_fuse.c: elementwise fusion on the cpu backend: which
 * chains become one FusedElementwise instruction (and which must not), and
 * that fused results match the interpreter on odd sizes. */
#include <stdio.h>

#include "suites.h"

static void kt_vs_interp(const char *text, double rtol, double atol) {
  kt_run a, b;
  kt_run_text(text, "cpu", 2, &a);
  kt_run_text(text, "interpreter", 0, &b);
  kt_assert_close(&a, &b, rtol, atol);
  kt_run_free(&a);
  kt_run_free(&b);
}

START_TEST(chain_becomes_one_node) {
  const char *text = "module @t\ninput %x : f32[3,17]\ninput %b : f32[17]\n"
                     "const %h : f32[] = [0.5]\nfunc @main {\n"
                     "  %a : f32[3,17] = Add(%x, %b)\n  %t : f32[3,17] = Tanh(%a)\n"
                     "  %m : f32[3,17] = Mul(%t, %h)\n  %e : f32[3,17] = Exp(%m)\n"
                     "  output %y = %e\n}\n";
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_FusedElementwise), 1);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Tanh), 0);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Add), 0);
  kt_vs_interp(text, 2e-6, 1e-6);
}
END_TEST

START_TEST(shared_intermediate_not_fused_through) {
  /* %a has two users: it stays materialized; each user chain fuses alone
   * only when it has two nodes. Here: Exp(a) and Neg(a) are single nodes,
   * Add(Exp, Neg) fuses with both (they are single-use) -> one node. */
  const char *text = "module @t\ninput %x : f32[7]\nfunc @main {\n"
                     "  %a : f32[7] = Sigmoid(%x)\n  %e : f32[7] = Exp(%a)\n"
                     "  %n : f32[7] = Neg(%a)\n  %s : f32[7] = Add(%e, %n)\n"
                     "  output %y = %s\n  output %z = %a\n}\n";
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Sigmoid), 1);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_FusedElementwise), 1);
  kt_vs_interp(text, 2e-6, 1e-6);
}
END_TEST

START_TEST(single_node_not_fused) {
  const char *text = "module @t\ninput %x : f32[9]\nfunc @main {\n  %a : f32[9] = Exp(%x)\n"
                     "  output %y = %a\n}\n";
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_FusedElementwise), 0);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Exp), 1);
}
END_TEST

START_TEST(lowered_activations_fuse) {
  /* Gelu (tanh form), HardSwish and Elu lower to arithmetic, comparisons
   * and Where; the arithmetic parts fuse. */
  static const int sizes[] = {1, 7, 15, 16, 17, 33};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    char text[1024];
    snprintf(text, sizeof text,
             "module @t\ninput %%x : f32[3,%d]\ninput %%b : f32[%d]\nfunc @main {\n"
             "  %%a : f32[3,%d] = Add(%%x, %%b)\n"
             "  %%g : f32[3,%d] = Gelu(%%a) {approximate = \"tanh\"}\n"
             "  %%h : f32[3,%d] = HardSwish(%%g)\n  %%e : f32[3,%d] = Elu(%%h)\n"
             "  %%q : f32[3,%d] = Gelu(%%e)\n  output %%y = %%q\n}\n",
             sizes[s], sizes[s], sizes[s], sizes[s], sizes[s], sizes[s], sizes[s]);
    ck_assert_uint_ge(kt_count_instrs(text, "cpu", KILN_NODE_FusedElementwise), 1);
    kt_vs_interp(text, 1e-5, 2e-6);
  }
}
END_TEST

START_TEST(explicit_fused_node) {
  const char *text = "module @t\ninput %x : f32[5,33]\ninput %w : f32[33]\nfunc @main {\n"
                     "  %f : f32[5,33] = FusedElementwise(%x, %w) "
                     "{body = \"x0 1.5 Mul 0.5 Add Tanh x1 Mul x0 Max Sqrt\"}\n"
                     "  output %y = %f\n}\n";
  kt_vs_interp(text, 2e-6, 1e-6);
}
END_TEST

START_TEST(short_rows_under_broadcast) {
  /* An input broadcast over the dim above a short inner one keeps rows
   * from merging: rows of 16 (a blocked layout's per-channel BatchNorm),
   * 20 and 64 elements take the worker's constant-count loop in runs
   * that wrap into the dims above, and rows cut at the 2-thread split the
   * general one; every element must still match the interpreter. */
  static const char *shapes[][3] = {
      {"1,3,37,31,16", "1,3,1,1,16", "3,1,1,16"}, /* halves cut row 1720 */
      {"2,3,37,31,16", "1,3,1,1,16", "2,1,1,1,16"},
      {"1701,20", "20", "1701,1"},
      {"3,401,64", "3,1,64", "64"},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "module @t\ninput %%x : f32[%s]\ninput %%s : f32[%s]\ninput %%b : f32[%s]\n"
             "func @main {\n  %%m : f32[%s] = Mul(%%x, %%s)\n  %%a : f32[%s] = Add(%%m, %%b)\n"
             "  %%r : f32[%s] = Relu(%%a)\n  output %%y = %%r\n}\n",
             shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][0], shapes[i][0], shapes[i][0]);
    ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_FusedElementwise), 1);
    kt_vs_interp(text, 1e-6, 1e-7);
  }
}
END_TEST

START_TEST(activation_fuses_into_conv_and_matmul) {
  /* Conv + Relu and MatMul + Relu: the Relu disappears into its producer
   * (the fuseact pass, accepted by the cpu's supports_fused hook), and the
   * results still match the interpreter running the unfused graph. */
  const char *text =
      "module @t\ninput %x : f32[1,3,9,7]\ninput %m : f32[5,13]\n"
      "const %w : f32[4,3,3,3] = [0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8, 0.9, -1, 1.1, "
      "-1.2, 0.13, -0.14, 0.15, -0.16, 0.17, -0.18, 0.19, -0.2, 0.21, -0.22, 0.23, -0.24, "
      "0.25, -0.26, 0.27, 0.3, -0.2, 0.1, -0.4, 0.5, -0.6, 0.2, -0.8, 0.9, -0.1, 1.1, -1.2, "
      "0.13, -0.14, 0.15, -0.16, 0.17, -0.18, 0.19, -0.2, 0.21, -0.22, 0.23, -0.24, 0.25, "
      "-0.26, 0.27, 0.3, -0.2, 0.1, -0.4, 0.5, -0.6, 0.2, -0.8, 0.9, -0.1, 1.1, -1.2, 0.13, "
      "-0.14, 0.15, -0.16, 0.17, -0.18, 0.19, -0.2, 0.21, -0.22, 0.23, -0.24, 0.25, -0.26, "
      "0.27, 0.3, -0.2, 0.1, -0.4, 0.5, -0.6, 0.2, -0.8, 0.9, -0.1, 1.1, -1.2, 0.13, -0.14, "
      "0.15, -0.16, 0.17, -0.18, 0.19, -0.2, 0.21, -0.22, 0.23, -0.24, 0.25, -0.26, 0.27]\n"
      "const %v : f32[13,6] = [0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, 0.25, -0.25, 1, -1, "
      "0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, 0.25, -0.25, 1, "
      "-1, 0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, 0.25, "
      "-0.25, 1, -1, 0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, "
      "0.25, -0.25, 1, -1, 0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, 0.25, -0.25, 1, -1]\n"
      "func @main {\n"
      "  %c : f32[1,4,9,7] = Conv(%x, %w) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]}\n"
      "  %r : f32[1,4,9,7] = Relu(%c)\n"
      "  %p : f32[5,6] = MatMul(%m, %v)\n  %q : f32[5,6] = Relu(%p)\n"
      "  output %y = %r\n  output %z = %q\n}\n";
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Relu), 0);
  /* the Conv may run in the channel-blocked layout (passes/layout.c) */
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Conv) +
                        kt_count_instrs(text, "cpu", KILN_NODE_BlockedConv),
                    1);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_MatMul), 1);
  kt_vs_interp(text, 1e-5, 1e-6);
}
END_TEST

START_TEST(bias_residual_and_gelu_fuse_into_gemm) {
  /* torch's Linear on 3-D input + exact Gelu: MatMul + Add(bias) + Gelu
   * becomes one Gemm (fusebias, then fuseact) on a [6, 13] view; a product
   * plus a residual of its own shape too; and a single row (the
   * matrix-vector path) with bias and Gelu. Results match the interpreter
   * running the unfused graph. */
  char v[2048];
  size_t n = 0;
  for (int i = 0; i < 13 * 6; i++)
    n += (size_t)snprintf(v + n, sizeof v - n, "%s%g", i ? ", " : "", 0.05 * (i % 11) - 0.25);
  char text[8192];
  snprintf(text, sizeof text,
           "module @t\ninput %%x : f32[2,3,13]\ninput %%x2 : f32[2,3,13]\ninput %%r : f32[2,3,6]\n"
           "input %%o : f32[1,13]\n"
           "const %%v : f32[13,6] = [%s]\nconst %%b : f32[6] = [0.5, -1, 0.25, 2, -0.5, 0]\n"
           "func @main {\n"
           "  %%p : f32[2,3,6] = MatMul(%%x, %%v)\n  %%q : f32[2,3,6] = Add(%%p, %%b)\n"
           "  %%g : f32[2,3,6] = Gelu(%%q)\n"
           "  %%p2 : f32[2,3,6] = MatMul(%%x2, %%v)\n  %%q2 : f32[2,3,6] = Add(%%r, %%p2)\n"
           "  %%p3 : f32[1,6] = MatMul(%%o, %%v)\n  %%q3 : f32[1,6] = Add(%%b, %%p3)\n"
           "  %%g3 : f32[1,6] = Gelu(%%q3)\n"
           "  output %%y = %%g\n  output %%y2 = %%q2\n  output %%y3 = %%g3\n}\n",
           v);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Gelu), 0);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Add), 0);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_MatMul), 0);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Gemm), 3);
  kt_vs_interp(text, 1e-5, 1e-6);
}
END_TEST

Suite *kcpu_fuse_suite(void) {
  Suite *s = suite_create("cpu-fuse");
  TCase *tc = tcase_create("fuse");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, chain_becomes_one_node);
  tcase_add_test(tc, shared_intermediate_not_fused_through);
  tcase_add_test(tc, single_node_not_fused);
  tcase_add_test(tc, lowered_activations_fuse);
  tcase_add_test(tc, explicit_fused_node);
  tcase_add_test(tc, short_rows_under_broadcast);
  tcase_add_test(tc, activation_fuses_into_conv_and_matmul);
  tcase_add_test(tc, bias_residual_and_gelu_fuse_into_gemm);
  suite_add_tcase(s, tc);
  return s;
}
