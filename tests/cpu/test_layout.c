/* tests/cpu/test_layout.c: whole graphs in the channel-blocked layout on
 * the cpu backend (passes/layout.c, kernels/conv_blocked*.c): a chain of
 * the nodes the layout pass moves (a stem reading the plain image, dense
 * and depthwise convolutions at strides 1 and 2, ReLU6, max pooling, a
 * squeeze-and-excitation scale, a batch norm, a Concat, a residual Add,
 * a global pool) at the channel counts the issue names (1, 3, 7, 17, 24,
 * 40) and plane widths around a vector (15, 16, 17), against the
 * interpreter running the plain graph; 1 and 2 threads give the same
 * bits, and the compiled program holds BlockedConv nodes. Then ResNeXt-
 * and RegNet-style blocks (1x1, grouped 3x3, 1x1) at the group widths the
 * cpu backend runs blocked (8, 16, 32 channels) and one it leaves plain
 * (4). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

typedef struct lt_buf {
  char *p;
  size_t n, cap;
} lt_buf;

static void lt_printf(lt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lt_printf(lt_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  ck_assert_int_ge(k, 0);
  ck_assert_uint_lt(b->n + (size_t)k, b->cap);
  b->n += (size_t)k;
}

/* A constant of n values in [lo, lo + span) from a fixed LCG. */
static void lt_const(lt_buf *b, const char *name, const char *type, int64_t n, uint32_t seed,
                     double lo, double span) {
  uint32_t s = seed * 2654435761u + 11;
  lt_printf(b, "const %%%s : %s = [", name, type);
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    lt_printf(b, "%s%.4f", i ? ", " : "", lo + span * (double)((s >> 8) & 0xffff) / 65536.0);
  }
  lt_printf(b, "]\n");
}

/* The chain for C input channels on an H x W image: M = C + 5 channels
 * after the 3x3 stem; depthwise 3x3 stride 2 with ReLU6; 3x3 max pool
 * stride 1; SE (global average, 1x1 to M, Sigmoid, Mul); batch norm;
 * Concat of a 1x1 conv to 16 channels (whole blocks) and the SE result;
 * a 1x1 conv back to M with the stem's pooled result added; Relu; the
 * global average as a second output. */
static char *lt_module(int C, int H, int W) {
  lt_buf b = {malloc(1 << 20), 0, 1 << 20};
  ck_assert_ptr_nonnull(b.p);
  int M = C + 5, OH = (H + 1) / 2, OW = (W + 1) / 2;
  char t[64];
  lt_printf(&b, "module @t\ninput %%x : f32[1,%d,%d,%d]\n", C, H, W);
  snprintf(t, sizeof t, "f32[%d,%d,3,3]", M, C);
  lt_const(&b, "w1", t, (int64_t)M * C * 9, 1, -0.5, 1);
  snprintf(t, sizeof t, "f32[%d]", M);
  lt_const(&b, "b1", t, M, 2, -0.5, 1);
  snprintf(t, sizeof t, "f32[%d,1,3,3]", M);
  lt_const(&b, "wd", t, (int64_t)M * 9, 3, -0.5, 1);
  snprintf(t, sizeof t, "f32[%d,%d,1,1]", M, M);
  lt_const(&b, "ws", t, (int64_t)M * M, 4, -0.5, 1);
  snprintf(t, sizeof t, "f32[%d]", M);
  lt_const(&b, "g", t, M, 5, 0.5, 1);
  lt_const(&b, "be", t, M, 6, -0.5, 1);
  lt_const(&b, "mu", t, M, 7, -0.5, 1);
  lt_const(&b, "var", t, M, 8, 0.5, 1);
  snprintf(t, sizeof t, "f32[16,%d,1,1]", M);
  lt_const(&b, "wa", t, (int64_t)16 * M, 9, -0.5, 1);
  snprintf(t, sizeof t, "f32[%d,%d,1,1]", M, 16 + M);
  lt_const(&b, "wb", t, (int64_t)M * (16 + M), 10, -0.5, 1);
  lt_printf(&b, "const %%lo : f32[] = [0]\nconst %%hi : f32[] = [6]\nfunc @main {\n");
  lt_printf(&b,
            "  %%c1 : f32[1,%d,%d,%d] = Conv(%%x, %%w1, %%b1) {kernel_shape = [3, 3], pads = [1, "
            "1, 1, 1]}\n",
            M, H, W);
  lt_printf(&b, "  %%r1 : f32[1,%d,%d,%d] = Relu(%%c1)\n", M, H, W);
  lt_printf(&b,
            "  %%d : f32[1,%d,%d,%d] = Conv(%%r1, %%wd) {group = %d, kernel_shape = [3, 3], pads "
            "= [1, 1, 1, 1], strides = [2, 2]}\n",
            M, OH, OW, M);
  lt_printf(&b, "  %%d6 : f32[1,%d,%d,%d] = Clip(%%d, %%lo, %%hi)\n", M, OH, OW);
  lt_printf(&b,
            "  %%p : f32[1,%d,%d,%d] = MaxPool(%%d6) {kernel_shape = [3, 3], pads = [1, 1, 1, "
            "1]}\n",
            M, OH, OW);
  lt_printf(&b, "  %%q : f32[1,%d,1,1] = GlobalAveragePool(%%p)\n", M);
  lt_printf(&b, "  %%s : f32[1,%d,1,1] = Conv(%%q, %%ws) {kernel_shape = [1, 1]}\n", M);
  lt_printf(&b, "  %%h : f32[1,%d,1,1] = Sigmoid(%%s)\n", M);
  lt_printf(&b, "  %%e : f32[1,%d,%d,%d] = Mul(%%p, %%h)\n", M, OH, OW);
  lt_printf(&b,
            "  %%n : f32[1,%d,%d,%d] = BatchNormalization(%%e, %%g, %%be, %%mu, %%var) {epsilon "
            "= 0.001}\n",
            M, OH, OW);
  lt_printf(&b, "  %%a : f32[1,16,%d,%d] = Conv(%%n, %%wa) {kernel_shape = [1, 1]}\n", OH, OW);
  lt_printf(&b, "  %%k : f32[1,%d,%d,%d] = Concat(%%a, %%n) {axis = 1}\n", 16 + M, OH, OW);
  lt_printf(&b, "  %%o : f32[1,%d,%d,%d] = Conv(%%k, %%wb) {kernel_shape = [1, 1]}\n", M, OH, OW);
  lt_printf(&b, "  %%z : f32[1,%d,%d,%d] = Add(%%o, %%p)\n", M, OH, OW);
  lt_printf(&b, "  %%y : f32[1,%d,%d,%d] = Relu(%%z)\n", M, OH, OW);
  lt_printf(&b, "  %%v : f32[1,%d,1,1] = GlobalAveragePool(%%y)\n", M);
  lt_printf(&b, "  output %%out = %%y\n  output %%avg = %%v\n}\n");
  return b.p;
}

START_TEST(layout_chain_vs_interpreter) {
  static const int chans[] = {1, 3, 7, 17, 24, 40};
  static const int widths[] = {15, 16, 17};
  for (size_t i = 0; i < sizeof chans / sizeof *chans; i++)
    for (size_t j = 0; j < sizeof widths / sizeof *widths; j++) {
      char *text = lt_module(chans[i], 9, widths[j]);
      /* the stem, the depthwise, the SE 1x1, the two 1x1s */
      ck_assert_msg(kt_count_instrs(text, "cpu", KILN_NODE_BlockedConv) == 5,
                    "C %d W %d: not every Conv runs blocked", chans[i], widths[j]);
      ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Conv), 0);
      kt_run a, a1, r;
      kt_run_text(text, "cpu", 2, &a);
      kt_run_text(text, "cpu", 1, &a1);
      kt_run_text(text, "interpreter", 0, &r);
      /* stems of 16 channels or more run by Winograd F(4x4, 3x3), whose
       * rounding is some 1e-5 of the result (docs/cpu.md) */
      double tol = chans[i] >= 16 ? 1e-4 : 2e-5;
      kt_assert_close(&a, &r, tol, tol);
      ck_assert_uint_eq(a.n_out, a1.n_out);
      for (uint32_t o = 0; o < a.n_out; o++)
        ck_assert_msg(memcmp(a.out[o], a1.out[o], (size_t)a.n[o] * sizeof(float)) == 0,
                      "C %d W %d: output %u differs between 1 and 2 threads", chans[i], widths[j],
                      o);
      kt_run_free(&a);
      kt_run_free(&a1);
      kt_run_free(&r);
      free(text);
    }
}
END_TEST

/* 1x1 C -> M with Relu, grouped 3x3 (G groups, stride s, pad 1, a bias)
 * with Relu, 1x1 M -> M + 3. */
static char *lt_grouped(int C, int M, int G, int s, int H, int W) {
  lt_buf b = {malloc(1 << 20), 0, 1 << 20};
  ck_assert_ptr_nonnull(b.p);
  int OH = (H - 1) / s + 1, OW = (W - 1) / s + 1, M3 = M + 3;
  char t[64];
  lt_printf(&b, "module @g\ninput %%x : f32[1,%d,%d,%d]\n", C, H, W);
  snprintf(t, sizeof t, "f32[%d,%d,1,1]", M, C);
  lt_const(&b, "w1", t, (int64_t)M * C, 21, -0.5, 1);
  snprintf(t, sizeof t, "f32[%d,%d,3,3]", M, M / G);
  lt_const(&b, "wg", t, (int64_t)M * (M / G) * 9, 22, -0.5, 1);
  snprintf(t, sizeof t, "f32[%d]", M);
  lt_const(&b, "bg", t, M, 23, -0.5, 1);
  snprintf(t, sizeof t, "f32[%d,%d,1,1]", M3, M);
  lt_const(&b, "w3", t, (int64_t)M3 * M, 24, -0.5, 1);
  lt_printf(&b, "func @main {\n");
  lt_printf(&b, "  %%a : f32[1,%d,%d,%d] = Conv(%%x, %%w1)\n", M, H, W);
  lt_printf(&b, "  %%ar : f32[1,%d,%d,%d] = Relu(%%a)\n", M, H, W);
  lt_printf(&b,
            "  %%g : f32[1,%d,%d,%d] = Conv(%%ar, %%wg, %%bg) {group = %d, pads = [1, 1, 1, 1], "
            "strides = [%d, %d]}\n",
            M, OH, OW, G, s, s);
  lt_printf(&b, "  %%gr : f32[1,%d,%d,%d] = Relu(%%g)\n", M, OH, OW);
  lt_printf(&b, "  %%y : f32[1,%d,%d,%d] = Conv(%%gr, %%w3)\n", M3, OH, OW);
  lt_printf(&b, "  output %%out = %%y\n}\n");
  return b.p;
}

START_TEST(layout_grouped_vs_interpreter) {
  static const struct {
    int C, M, G, s, H, W, blocked; /* blocked: the grouped Conv runs blocked */
  } cases[] = {
      {17, 40, 5, 1, 9, 15, 1},  /* 8 a group, the last block half full */
      {24, 104, 13, 2, 9, 17, 1}, /* RegNetY-400MF's second stage */
      {7, 32, 2, 1, 8, 16, 1},   /* 16 a group: whole blocks */
      {20, 64, 2, 2, 11, 9, 1},  /* 32 a group: 2 blocks each */
      {16, 96, 12, 1, 7, 7, 1},  /* 8 a group, 6 whole blocks */
      {9, 24, 6, 1, 9, 9, 1},    /* 4 a group: the tiled kernel */
      {10, 12, 6, 2, 9, 11, 1},  /* 2 a group, stride 2 */
      {9, 24, 8, 1, 9, 9, 0},    /* 3 a group: left plain */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *text = lt_grouped(cases[i].C, cases[i].M, cases[i].G, cases[i].s, cases[i].H,
                            cases[i].W);
    uint32_t blocked = (uint32_t)cases[i].blocked;
    ck_assert_msg(kt_count_instrs(text, "cpu", KILN_NODE_BlockedConv) == 2 + blocked,
                  "case %zu: the grouped Conv does not run as expected", i);
    ck_assert_uint_eq(kt_count_instrs(text, "cpu", KILN_NODE_Conv), 1 - blocked);
    kt_run a, a1, r;
    kt_run_text(text, "cpu", 2, &a);
    kt_run_text(text, "cpu", 1, &a1);
    kt_run_text(text, "interpreter", 0, &r);
    kt_assert_close(&a, &r, 2e-5, 2e-5);
    for (uint32_t o = 0; o < a.n_out; o++)
      ck_assert_msg(memcmp(a.out[o], a1.out[o], (size_t)a.n[o] * sizeof(float)) == 0,
                    "case %zu: output %u differs between 1 and 2 threads", i, o);
    kt_run_free(&a);
    kt_run_free(&a1);
    kt_run_free(&r);
    free(text);
  }
}
END_TEST

Suite *kcpu_layout_suite(void) {
  Suite *s = suite_create("layout");
  TCase *tc = tcase_create("chain");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, layout_chain_vs_interpreter);
  tcase_add_test(tc, layout_grouped_vs_interpreter);
  suite_add_tcase(s, tc);
  return s;
}
