/* tests/cpu/test_fuse_act.c: activations fused into Conv, MatMul and Gemm
 * on the cpu backend (the fuseact pass, applied by the GEMM epilogue and
 * the depthwise kernels, or by the channel-blocked kernels where the
 * layout pass moves the Conv into that layout, as it does every one here
 * but the grouped one): each activation after convolutions of every
 * shape (dense 3x3, pointwise, grouped, depthwise 3x3 / 5x5 at
 * strides 1 and 2, one channel, 64+ channels) and after products (tiled, matrix-vector,
 * Gemm with a bias), at channel counts and spatial sizes that leave edge
 * tiles; and a residual Add between a Conv and its activation, which rides
 * on the Conv too. The activation node must be gone from the compiled program, the
 * results must match the interpreter running the unfused graph, and 1 and
 * 2 threads must give the same bits. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

typedef struct conv_spec {
  int c, m, h, w, k, s, p, g, bias;
} conv_spec;

static const conv_spec convs[] = {
    {3, 7, 9, 9, 3, 1, 1, 1, 1},      /* dense 3x3 */
    {17, 24, 5, 7, 1, 1, 0, 1, 0},    /* pointwise */
    {6, 9, 8, 8, 3, 1, 1, 3, 1},      /* grouped */
    {17, 17, 13, 13, 3, 1, 1, 17, 1}, /* depthwise 3x3, stride 1 */
    {24, 24, 14, 14, 3, 2, 1, 24, 0}, /* depthwise 3x3, stride 2 */
    {40, 40, 7, 7, 5, 1, 2, 40, 1},   /* depthwise 5x5, stride 1 */
    {7, 7, 15, 15, 5, 2, 2, 7, 1},    /* depthwise 5x5, stride 2 */
    {1, 1, 9, 9, 3, 1, 1, 1, 0},      /* one channel */
    {64, 72, 9, 10, 3, 1, 1, 1, 1},   /* dense 3x3, 64+ channels each side (Winograd's, plain) */
};
#define N_CONVS (sizeof convs / sizeof convs[0])

typedef struct text_buf {
  char *p;
  size_t n, cap;
} text_buf;

static void tb_printf(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(text_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  ck_assert_int_ge(k, 0);
  ck_assert_uint_lt(b->n + (size_t)k, b->cap);
  b->n += (size_t)k;
}

/* n weights in [-0.5, 0.5) from a fixed LCG, as a text-form list. */
static void tb_weights(text_buf *b, int64_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 7;
  tb_printf(b, "[");
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    tb_printf(b, "%s%.4f", i ? ", " : "", (double)((s >> 8) & 0xffff) / 65536.0 - 0.5);
  }
  tb_printf(b, "]\n");
}

/* The activation applied to %<src> giving %<dst>, as a node line.
 * Clip's bounds are the module's constants %lo, %hi. */
static void tb_act(text_buf *b, const char *act, const char *dst, const char *src,
                   const char *type) {
  if (!strcmp(act, "Clip"))
    tb_printf(b, "  %%%s : %s = Clip(%%%s, %%lo, %%hi)\n", dst, type, src);
  else if (!strcmp(act, "ClipMax"))
    tb_printf(b, "  %%%s : %s = Clip(%%%s, _, %%hi)\n", dst, type, src);
  else if (!strcmp(act, "HardSigmoid"))
    tb_printf(b, "  %%%s : %s = HardSigmoid(%%%s) {alpha = 0.3, beta = 0.4}\n", dst, type, src);
  else if (!strcmp(act, "SwishHalf"))
    tb_printf(b, "  %%%s : %s = Swish(%%%s) {alpha = 0.5}\n", dst, type, src);
  else if (!strcmp(act, "Swish"))
    tb_printf(b, "  %%%s : %s = Swish(%%%s) {alpha = 1.0}\n", dst, type, src);
  else
    tb_printf(b, "  %%%s : %s = %s(%%%s)\n", dst, type, act, src);
}

/* A module: every conv of convs[] (part 0) or three products (part 1),
 * each followed by the activation `act` (with, when `residual`, an Add of
 * an input of the result's shape in between), each an output. */
static char *act_module(const char *act, double lo, double hi, bool residual, int part) {
  text_buf b = {malloc(1 << 20), 0, 1 << 20};
  ck_assert_ptr_nonnull(b.p);
  tb_printf(&b, "module @t\n");
  size_t n_convs = part == 0 ? N_CONVS : 0;
  int n_prods = part == 1 ? 3 : 0;
  for (size_t i = 0; i < n_convs; i++) {
    const conv_spec *c = &convs[i];
    int oh = (c->h + 2 * c->p - c->k) / c->s + 1, ow = (c->w + 2 * c->p - c->k) / c->s + 1;
    tb_printf(&b, "input %%x%zu : f32[1,%d,%d,%d]\n", i, c->c, c->h, c->w);
    if (residual)
      tb_printf(&b, "input %%r%zu : f32[1,%d,%d,%d]\n", i, c->m, oh, ow);
    tb_printf(&b, "const %%w%zu : f32[%d,%d,%d,%d] = ", i, c->m, c->c / c->g, c->k, c->k);
    tb_weights(&b, (int64_t)c->m * (c->c / c->g) * c->k * c->k, (uint32_t)i + 1);
    if (c->bias) {
      tb_printf(&b, "const %%b%zu : f32[%d] = ", i, c->m);
      tb_weights(&b, c->m, (uint32_t)i + 100);
    }
  }
  if (n_prods)
    tb_printf(&b, "input %%a0 : f32[3,17]\ninput %%a1 : f32[1,7]\ninput %%a2 : f32[5,9]\n");
  if (n_prods && residual)
    tb_printf(&b, "input %%s0 : f32[3,40]\ninput %%s1 : f32[1,24]\ninput %%s2 : f32[5,33]\n");
  tb_printf(&b, "const %%v0 : f32[17,40] = ");
  tb_weights(&b, 17 * 40, 200);
  tb_printf(&b, "const %%v1 : f32[7,24] = ");
  tb_weights(&b, 7 * 24, 201);
  tb_printf(&b, "const %%v2 : f32[33,9] = ");
  tb_weights(&b, 33 * 9, 202);
  tb_printf(&b, "const %%gb : f32[33] = ");
  tb_weights(&b, 33, 203);
  tb_printf(&b, "const %%lo : f32[] = [%.17g]\nconst %%hi : f32[] = [%.17g]\nfunc @main {\n", lo,
            hi);
  char type[96], src[16], dst[16];
  for (size_t i = 0; i < n_convs; i++) {
    const conv_spec *c = &convs[i];
    int oh = (c->h + 2 * c->p - c->k) / c->s + 1, ow = (c->w + 2 * c->p - c->k) / c->s + 1;
    snprintf(type, sizeof type, "f32[1,%d,%d,%d]", c->m, oh, ow);
    char bias[16] = "";
    if (c->bias)
      snprintf(bias, sizeof bias, ", %%b%zu", i);
    tb_printf(&b,
              "  %%c%zu : %s = Conv(%%x%zu, %%w%zu%s) {group = %d, kernel_shape = [%d, %d], "
              "pads = [%d, %d, %d, %d], strides = [%d, %d]}\n",
              i, type, i, i, bias, c->g, c->k, c->k, c->p, c->p, c->p, c->p, c->s, c->s);
    snprintf(src, sizeof src, "c%zu", i);
    if (residual) {
      tb_printf(&b, "  %%d%zu : %s = Add(%%c%zu, %%r%zu)\n", i, type, i, i);
      snprintf(src, sizeof src, "d%zu", i);
    }
    snprintf(dst, sizeof dst, "y%zu", i);
    tb_act(&b, act, dst, src, type);
  }
  static const char *const prods[] = {"  %%p0 : f32[3,40] = MatMul(%%a0, %%v0)\n",
                                      "  %%p1 : f32[1,24] = MatMul(%%a1, %%v1)\n",
                                      "  %%p2 : f32[5,33] = Gemm(%%a2, %%v2, %%gb) {transB = 1}\n"};
  static const char *const ptypes[] = {"f32[3,40]", "f32[1,24]", "f32[5,33]"};
  for (int i = 0; i < n_prods; i++) {
    tb_printf(&b, prods[i], "");
    snprintf(src, sizeof src, "p%d", i);
    if (residual) {
      tb_printf(&b, "  %%e%d : %s = Add(%%s%d, %%p%d)\n", i, ptypes[i], i, i);
      snprintf(src, sizeof src, "e%d", i);
    }
    snprintf(dst, sizeof dst, "z%d", i);
    tb_act(&b, act, dst, src, ptypes[i]);
  }
  for (size_t i = 0; i < n_convs; i++)
    tb_printf(&b, "  output %%oy%zu = %%y%zu\n", i, i);
  for (int i = 0; i < n_prods; i++)
    tb_printf(&b, "  output %%oz%d = %%z%d\n", i, i);
  tb_printf(&b, "}\n");
  return b.p;
}

static void check_act_part(const char *act, kiln_node_kind kind, double lo, double hi,
                           bool residual, int part) {
  char *text = act_module(act, lo, hi, residual, part);
  ck_assert_msg(kt_count_instrs(text, "cpu", kind) == 0, "%s stayed a node of its own", act);
  if (part == 0) /* plain or channel-blocked (passes/layout.c) */
    ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Conv) +
                          kt_count_instrs(text, "cpu", KILN_NODE_BlockedConv),
                      N_CONVS);
  if (residual)
    ck_assert_msg(kt_count_instrs(text, "cpu", KILN_NODE_Add) == 0, "an Add stayed");
  kt_run a, a1, b;
  kt_run_text(text, "cpu", 2, &a);
  kt_run_text(text, "cpu", 1, &a1);
  kt_run_text(text, "interpreter", 0, &b);
  /* the 64 -> 72 layer runs by Winograd F(4x4, 3x3), whose rounding is
   * some 1e-5 of its result where the direct sum's is 1e-6 (docs/cpu.md);
   * still 10x inside the conformance tolerance */
  kt_assert_close(&a, &b, 1e-4, 1e-4);
  ck_assert_uint_eq(a.n_out, a1.n_out);
  for (uint32_t i = 0; i < a.n_out; i++)
    ck_assert_msg(memcmp(a.out[i], a1.out[i], (size_t)a.n[i] * sizeof(float)) == 0,
                  "%s: output %u differs between 1 and 2 threads", act, i);
  kt_run_free(&a);
  kt_run_free(&a1);
  kt_run_free(&b);
  free(text);
}

static void check_act(const char *act, kiln_node_kind kind, double lo, double hi, bool residual) {
  check_act_part(act, kind, lo, hi, residual, 0);
  check_act_part(act, kind, lo, hi, residual, 1);
}

START_TEST(clip_fuses) {
  check_act("Clip", KILN_NODE_Clip, 0, 6, false);    /* ReLU6 */
  check_act("Clip", KILN_NODE_Clip, -1, 0.5, false); /* both bounds crossed often */
  check_act("ClipMax", KILN_NODE_Clip, 0, 0.25, false);
}
END_TEST

START_TEST(hard_activations_fuse) {
  check_act("HardSigmoid", KILN_NODE_HardSigmoid, 0, 0, false);
  check_act("HardSwish", KILN_NODE_HardSwish, 0, 0, false);
}
END_TEST

START_TEST(swish_and_gelu_fuse) {
  check_act("Swish", KILN_NODE_Swish, 0, 0, false);
  check_act("SwishHalf", KILN_NODE_Swish, 0, 0, false);
  check_act("Gelu", KILN_NODE_Gelu, 0, 0, false);
}
END_TEST

START_TEST(residual_fuses_into_conv) {
  /* Conv -> Add(residual) -> activation: one Conv with the residual
   * added before the activation, on every kernel path */
  check_act_part("Relu", KILN_NODE_Relu, 0, 0, true, 0);
  check_act_part("Clip", KILN_NODE_Clip, 0, 6, true, 0);
  check_act_part("HardSwish", KILN_NODE_HardSwish, 0, 0, true, 0);
  check_act_part("Swish", KILN_NODE_Swish, 0, 0, true, 0);
  check_act_part("Identity", KILN_NODE_Identity, 0, 0, true, 0); /* residual alone */
}
END_TEST

START_TEST(standalone_activations_are_one_loop) {
  /* Not after a Conv / MatMul / Gemm: each is one elementwise loop of its
   * own kind (not lowered into several), and next to other elementwise
   * nodes it joins their fused loop. */
  const char *text = "module @t\ninput %x : f32[3,37]\ninput %z : f32[3,37]\n"
                     "const %lo : f32[] = [-1]\nconst %hi : f32[] = [1.5]\nfunc @main {\n"
                     "  %a : f32[3,37] = Clip(%x, %lo, %hi)\n"
                     "  %b : f32[3,37] = HardSwish(%x)\n"
                     "  %c : f32[3,37] = Swish(%z) {alpha = 1.0}\n"
                     "  %d : f32[3,37] = Add(%x, %z)\n  %e : f32[3,37] = Clip(%d, %lo, %hi)\n"
                     "  %f : f32[3,37] = Mul(%e, %z)\n"
                     "  output %y0 = %a\n  output %y1 = %b\n  output %y2 = %c\n"
                     "  output %y3 = %f\n}\n";
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Clip), 1);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_HardSwish), 1);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Swish), 1);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_FusedElementwise), 1);
  ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Max), 0);
  kt_run a, b;
  kt_run_text(text, "cpu", 2, &a);
  kt_run_text(text, "interpreter", 0, &b);
  kt_assert_close(&a, &b, 2e-6, 1e-6);
  kt_run_free(&a);
  kt_run_free(&b);
}
END_TEST

Suite *kcpu_fuse_act_suite(void) {
  Suite *s = suite_create("cpu-fuse-act");
  TCase *tc = tcase_create("fuse-act");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, clip_fuses);
  tcase_add_test(tc, hard_activations_fuse);
  tcase_add_test(tc, swish_and_gelu_fuse);
  tcase_add_test(tc, residual_fuses_into_conv);
  tcase_add_test(tc, standalone_activations_are_one_loop);
  suite_add_tcase(s, tc);
  return s;
}
