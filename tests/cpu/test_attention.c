/* tests/cpu/test_attention.c: ScaledDotProductAttention on the cpu
 * (kernels/attention.c) against the interpreter's reference kernel, at
 * sizes around the kernel's tiles (sequences 1, 7, 65; head sizes 32, 64,
 * 80; 1 and 6 heads), with no mask, an additive mask and a bool causal
 * mask, in the plain [B, H, S, D] layout and in the head-split layout
 * (perms) and as slices of one QKV tensor (gathers); one and two threads
 * give the same bits; and a GPT-style chain of primitives reaches the
 * kernel through the fuseattn pass. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

/* Appends to a growing text buffer (the test aborts when it overflows). */
typedef struct at_buf {
  char *p;
  size_t n, cap;
} at_buf;

static void at_put(at_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void at_put(at_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  ck_assert_msg(w >= 0 && (size_t)w < b->cap - b->n, "test text buffer too small");
  b->n += (size_t)w;
}

/* A module with one attention node. layout 0: Q, K, V [B, H, S, D];
 * layout 1: Q, V as [B, S, H, D] (q_perm, v_perm [0, 2, 1, 3]), K as Kᵀ
 * [B, H, D, S] (k_perm [0, 1, 3, 2]) and the result [B, S, H, Dv]
 * (out_perm [0, 2, 1, 3]). mask 0: none; 1: an f32 input [B, 1, 1, Sk];
 * 2: a constant bool [Sq, Sk] keeping key j for query i when j <= i.
 * scale: the node's scale attribute. */
static char *at_text(int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv,
                     int layout, int mask, double scale) {
  at_buf b = {.cap = 64 + (size_t)(Sq * Sk) * 3 + 4096};
  b.p = malloc(b.cap);
  ck_assert_ptr_nonnull(b.p);
  at_put(&b, "module @t\n");
  if (layout == 0)
    at_put(&b,
           "input %%q : f32[%lld,%lld,%lld,%lld]\ninput %%k : f32[%lld,%lld,%lld,%lld]\n"
           "input %%v : f32[%lld,%lld,%lld,%lld]\n",
           (long long)B, (long long)H, (long long)Sq, (long long)D, (long long)B, (long long)H,
           (long long)Sk, (long long)D, (long long)B, (long long)H, (long long)Sk, (long long)Dv);
  else
    at_put(&b,
           "input %%q : f32[%lld,%lld,%lld,%lld]\ninput %%k : f32[%lld,%lld,%lld,%lld]\n"
           "input %%v : f32[%lld,%lld,%lld,%lld]\n",
           (long long)B, (long long)Sq, (long long)H, (long long)D, (long long)B, (long long)H,
           (long long)D, (long long)Sk, (long long)B, (long long)Sk, (long long)H, (long long)Dv);
  if (mask == 1)
    at_put(&b, "input %%m : f32[%lld,1,1,%lld]\n", (long long)B, (long long)Sk);
  if (mask == 2) {
    at_put(&b, "const %%m : bool[%lld,%lld] = [", (long long)Sq, (long long)Sk);
    for (int64_t i = 0; i < Sq; i++)
      for (int64_t j = 0; j < Sk; j++)
        at_put(&b, "%s%d", i || j ? ", " : "", j <= i);
    at_put(&b, "]\n");
  }
  at_put(&b, "func @main {\n  %%y : f32[%lld,%lld,%lld,%lld] = ScaledDotProductAttention(%%q, %%k, %%v%s) {",
         (long long)B, (long long)(layout ? Sq : H), (long long)(layout ? H : Sq), (long long)Dv,
         mask ? ", %m" : "");
  if (layout)
    at_put(&b, "k_perm = [0, 1, 3, 2], out_perm = [0, 2, 1, 3], q_perm = [0, 2, 1, 3], ");
  at_put(&b, "scale = %g%s}\n  output %%o = %%y\n}\n", scale,
         layout ? ", v_perm = [0, 2, 1, 3]" : "");
  return b.p;
}

static void at_vs_interp_tol(const char *text, double rtol, double atol) {
  kt_run a, b;
  kt_run_text(text, "cpu", 2, &a);
  kt_run_text(text, "interpreter", 0, &b);
  kt_assert_close(&a, &b, rtol, atol);
  kt_run_free(&a);
  kt_run_free(&b);
}

static void at_vs_interp(const char *text) {
  at_vs_interp_tol(text, 2e-5, 2e-6);
}

START_TEST(attention_sizes_vs_interp) {
  static const int64_t seqs[3] = {1, 7, 65}, dims[3] = {32, 64, 80};
  int n = 0;
  for (int s = 0; s < 3; s++)
    for (int d = 0; d < 3; d++)
      for (int mask = 0; mask < 3; mask++, n++) {
        int64_t H = n % 2 ? 6 : 1, B = n % 4 == 3 ? 2 : 1;
        int64_t Sq = seqs[s], Sk = mask == 2 ? Sq : seqs[(s + n) % 3];
        int layout = (n / 2) % 2;
        char *text = at_text(B, H, Sq, Sk, dims[d], dims[(d + mask) % 3], layout, mask,
                             1.3 / (double)dims[d]);
        ck_assert_uint_eq(
            kt_count_instrs(text, "cpu", KILN_NODE_ScaledDotProductAttention), 1);
        at_vs_interp(text);
        free(text);
      }
}
END_TEST

/* The kernel's softmax folds a positive scale into its maximum pass and
 * takes other scales apart. With a scale of +-2 the scores (inputs in
 * [-3, 3], 48 products) spread over more than 87, so that many
 * exponentials fall below the normal range, where the kernel's exp gives
 * 0; the scores' own f32 rounding (~1e-5 of them) then moves results by
 * ~1e-4 relative, hence the wider tolerance there. Sequences of 33 and 65
 * keys use both the whole-block and the edge paths of the Kᵀ pack. */
START_TEST(attention_scale_signs) {
  static const double scales[4] = {-0.05, 0.0, 2.0, -2.0};
  for (int c = 0; c < 4; c++)
    for (int layout = 0; layout < 2; layout++) {
      char *text = at_text(1, 2, 17, c % 2 ? 33 : 65, 48, 32, layout, c == 3 ? 1 : 0, scales[c]);
      if (c < 2)
        at_vs_interp(text);
      else
        at_vs_interp_tol(text, 1e-3, 1e-4);
      free(text);
    }
}
END_TEST

START_TEST(attention_threads_bit_identical) {
  char *text = at_text(2, 3, 70, 70, 64, 64, 1, 2, 0.02);
  kt_run a, b;
  kt_run_text(text, "cpu", 1, &a);
  kt_run_text(text, "cpu", 2, &b);
  ck_assert_uint_eq(a.n_out, b.n_out);
  ck_assert_int_eq(a.n[0], b.n[0]);
  ck_assert_int_eq(memcmp(a.out[0], b.out[0], sizeof(float) * (size_t)a.n[0]), 0);
  kt_run_free(&a);
  kt_run_free(&b);
  free(text);
}
END_TEST

/* Q, K and V as slices of one [B, S, 3, H, D] projection: the node with
 * gathers on the cpu against the interpreter running explicit Gathers
 * into a node without them (an implementation that shares nothing with
 * the gathered path), at sequences 1, 7 and 65, head sizes 32 and 80, with
 * and without a mask; and the interpreter's own gathered path against the
 * same. */
static char *at_gathered_text(int64_t B, int64_t S, int64_t H, int64_t D, int mask, int gathers) {
  at_buf b = {.cap = 4096};
  b.p = malloc(b.cap);
  ck_assert_ptr_nonnull(b.p);
  at_put(&b, "module @t\ninput %%x : f32[%lld,%lld,3,%lld,%lld]\n", (long long)B, (long long)S,
         (long long)H, (long long)D);
  if (mask)
    at_put(&b, "input %%m : f32[%lld,1,1,%lld]\n", (long long)B, (long long)S);
  at_put(&b, "const %%i0 : i64[] = [0]\nconst %%i1 : i64[] = [1]\nconst %%i2 : i64[] = [2]\n"
             "func @main {\n");
  const char *ops = "%x, %x, %x";
  if (!gathers) {
    for (int i = 0; i < 3; i++)
      at_put(&b, "  %%g%d : f32[%lld,%lld,%lld,%lld] = Gather(%%x, %%i%d) {axis = 2}\n", i,
             (long long)B, (long long)S, (long long)H, (long long)D, i);
    ops = "%g0, %g1, %g2";
  }
  at_put(&b,
         "  %%y : f32[%lld,%lld,%lld,%lld] = ScaledDotProductAttention(%s%s) {%sk_perm = [0, 2, "
         "1, 3], out_perm = [0, 2, 1, 3], %sq_perm = [0, 2, 1, 3], scale = 0.1, %sv_perm = [0, "
         "2, 1, 3]}\n  output %%o = %%y\n}\n",
         (long long)B, (long long)S, (long long)H, (long long)D, ops, mask ? ", %m" : "",
         gathers ? "k_gather = [2, 1], " : "", gathers ? "q_gather = [2, 0], " : "",
         gathers ? "v_gather = [2, 2], " : "");
  return b.p;
}

START_TEST(attention_gathered_qkv_vs_interp) {
  static const int64_t seqs[3] = {1, 7, 65}, dims[2] = {32, 80};
  for (int s = 0; s < 3; s++)
    for (int d = 0; d < 2; d++) {
      int mask = (s + d) % 2;
      int64_t B = s == 1 ? 2 : 1, H = d ? 3 : 2;
      char *g = at_gathered_text(B, seqs[s], H, dims[d], mask, 1);
      char *plain = at_gathered_text(B, seqs[s], H, dims[d], mask, 0);
      ck_assert_uint_eq(kt_count_instrs(g, "cpu", KILN_NODE_ScaledDotProductAttention), 1);
      ck_assert_uint_eq(kt_count_instrs(g, "cpu", KILN_NODE_Gather), 0);
      kt_run a, ig, ip;
      kt_run_text(g, "cpu", 2, &a);
      kt_run_text(g, "interpreter", 0, &ig);
      kt_run_text(plain, "interpreter", 0, &ip);
      kt_assert_close(&a, &ip, 2e-5, 2e-6);
      kt_assert_close(&ig, &ip, 1e-6, 1e-7);
      kt_run_free(&a);
      kt_run_free(&ig);
      kt_run_free(&ip);
      free(g);
      free(plain);
    }
}
END_TEST

/* A bool constant [1, 1, S, S] of a causal mask: 1 where key j comes
 * after query i when `future`, else where it does not. */
static void at_put_causal(at_buf *b, int S, int future) {
  at_put(b, "const %%causal : bool[1,1,%d,%d] = [", S, S);
  for (int i = 0; i < S; i++)
    for (int j = 0; j < S; j++)
      at_put(b, "%s%d", i || j ? ", " : "", future ? j > i : j <= i);
  at_put(b, "]\n");
}

/* The chain in text reaches the cpu as one attention instruction, with
 * none of `gone` (a kind the fusion makes dead, besides Softmax and
 * Transpose) left, and agrees with the interpreter. Frees text. */
static void at_fused_vs_interp(char *text, kiln_node_kind gone) {
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_ScaledDotProductAttention), 1);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Softmax), 0);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Transpose), 0);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", gone), 0);
  at_vs_interp(text);
  free(text);
}

/* A decoder's causal attention written out as torch exports it (head
 * split, Kᵀ, scale, Where(causal, -inf, scores), Softmax, head merge): the
 * cpu runs one attention instruction and no Softmax or Transpose. */
START_TEST(attention_fused_from_primitives) {
  at_buf b = {.cap = 8192};
  b.p = malloc(b.cap);
  ck_assert_ptr_nonnull(b.p);
  at_put(&b, "module @t\ninput %%x : f32[1,9,96]\n");
  at_put_causal(&b, 9, 1);
  at_put(&b,
         "const %%ninf : f32[] = [-inf]\nconst %%s : f32[] = [0.17677669]\n"
         "func @main {\n"
         "  %%q4 : f32[1,9,3,32] = Reshape(%%x) {allowzero = 0, shape = [1, 9, 3, 32]}\n"
         "  %%e : f32[1,9,96] = Exp(%%x)\n"
         "  %%k4 : f32[1,9,3,32] = Reshape(%%e) {allowzero = 0, shape = [1, 9, 3, 32]}\n"
         "  %%n : f32[1,9,96] = Neg(%%x)\n"
         "  %%v4 : f32[1,9,3,32] = Reshape(%%n) {allowzero = 0, shape = [1, 9, 3, 32]}\n"
         "  %%qt : f32[1,3,9,32] = Transpose(%%q4) {perm = [0, 2, 1, 3]}\n"
         "  %%kt : f32[1,3,32,9] = Transpose(%%k4) {perm = [0, 2, 3, 1]}\n"
         "  %%vt : f32[1,3,9,32] = Transpose(%%v4) {perm = [0, 2, 1, 3]}\n"
         "  %%sc : f32[1,3,9,9] = MatMul(%%qt, %%kt)\n"
         "  %%ss : f32[1,3,9,9] = Mul(%%sc, %%s)\n"
         "  %%sw : f32[1,3,9,9] = Where(%%causal, %%ninf, %%ss)\n"
         "  %%p : f32[1,3,9,9] = Softmax(%%sw) {axis = -1}\n"
         "  %%o : f32[1,3,9,32] = MatMul(%%p, %%vt)\n"
         "  %%ot : f32[1,9,3,32] = Transpose(%%o) {perm = [0, 2, 1, 3]}\n"
         "  %%y : f32[1,9,96] = Reshape(%%ot) {allowzero = 0, shape = [1, 9, 96]}\n"
         "  output %%out = %%y\n}\n");
  at_fused_vs_interp(b.p, KILN_NODE_Where);
}
END_TEST

/* The GPT-2 form: Q, K, V the parts of a Split of one projection (the
 * exporter's `split(d, dim=2)`). The cpu reads them in place: one
 * attention instruction, no Split, no Transpose. The mask keeps the
 * scores where it is true (Where(causal, scores, -inf)). */
START_TEST(attention_split_qkv_from_primitives) {
  at_buf b = {.cap = 8192};
  b.p = malloc(b.cap);
  ck_assert_ptr_nonnull(b.p);
  at_put(&b, "module @t\ninput %%x : f32[2,9,240]\n");
  at_put_causal(&b, 9, 0);
  at_put(&b,
         "const %%ninf : f32[] = [-inf]\nconst %%s : f32[] = [0.15811388]\n"
         "func @main {\n"
         "  %%q : f32[2,9,80], %%k : f32[2,9,80], %%v : f32[2,9,80] = Split(%%x) {axis = 2}\n"
         "  %%q4 : f32[2,9,1,80] = Reshape(%%q) {allowzero = 0, shape = [2, 9, 1, 80]}\n"
         "  %%k4 : f32[2,9,1,80] = Reshape(%%k) {allowzero = 0, shape = [2, 9, 1, 80]}\n"
         "  %%v4 : f32[2,9,1,80] = Reshape(%%v) {allowzero = 0, shape = [2, 9, 1, 80]}\n"
         "  %%qt : f32[2,1,9,80] = Transpose(%%q4) {perm = [0, 2, 1, 3]}\n"
         "  %%kt : f32[2,1,80,9] = Transpose(%%k4) {perm = [0, 2, 3, 1]}\n"
         "  %%vt : f32[2,1,9,80] = Transpose(%%v4) {perm = [0, 2, 1, 3]}\n"
         "  %%sc : f32[2,1,9,9] = MatMul(%%qt, %%kt)\n"
         "  %%ss : f32[2,1,9,9] = Mul(%%sc, %%s)\n"
         "  %%sw : f32[2,1,9,9] = Where(%%causal, %%ss, %%ninf)\n"
         "  %%p : f32[2,1,9,9] = Softmax(%%sw) {axis = -1}\n"
         "  %%o : f32[2,1,9,80] = MatMul(%%p, %%vt)\n"
         "  %%ot : f32[2,9,1,80] = Transpose(%%o) {perm = [0, 2, 1, 3]}\n"
         "  %%y : f32[2,9,80] = Reshape(%%ot) {allowzero = 0, shape = [2, 9, 80]}\n"
         "  output %%out = %%y\n}\n");
  at_fused_vs_interp(b.p, KILN_NODE_Split);
}
END_TEST

Suite *kcpu_attention_suite(void) {
  Suite *s = suite_create("cpu attention");
  TCase *tc = tcase_create("attention");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, attention_sizes_vs_interp);
  tcase_add_test(tc, attention_scale_signs);
  tcase_add_test(tc, attention_threads_bit_identical);
  tcase_add_test(tc, attention_gathered_qkv_vs_interp);
  tcase_add_test(tc, attention_fused_from_primitives);
  tcase_add_test(tc, attention_split_qkv_from_primitives);
  suite_add_tcase(s, tc);
  return s;
}
