/* tests/cpu/test_qlinear.c: QLinearMatMul and QLinearConv on the cpu's
 * int8 kernels (kernels/quant_gemm.c) against the interpreter, for integer
 * equality: odd sizes, u8 and s8 activations and weights, per-tensor and
 * per-column weights, extreme zero points, ties (a multiplier of 0.5 on
 * odd sums), saturation, sums at the int32 bound, padding with a non-zero
 * input zero point, strides, dilations, groups, depthwise, batches. Each
 * graph runs on the cpu with the AVX512-VNNI path where the host has it,
 * with 1 and 2 threads, and compiled for a target without AVX-512 (the
 * portable path); the compiled code must hold the integer node (nothing
 * lowered to float). Also: fuseqdq turns a QDQ Conv and MatMul into the
 * integer kinds on the cpu, and a hand-computed tie. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

/* ---- a growable text buffer ---- */
typedef struct qt_text {
  char *s;
  size_t n, cap;
} qt_text;

static void qt_add(qt_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void qt_add(qt_text *t, const char *fmt, ...) {
  if (!t->cap) {
    t->cap = 4096;
    t->s = malloc(t->cap);
    ck_assert_ptr_nonnull(t->s);
  }
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    ck_assert_int_ge(k, 0);
    if ((size_t)k < t->cap - t->n) {
      t->n += (size_t)k;
      return;
    }
    t->cap = (t->cap + (size_t)k) * 2 + 4096;
    t->s = realloc(t->s, t->cap);
    ck_assert_ptr_nonnull(t->s);
  }
}

static uint32_t qt_rng(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* const %name : elem[dims] = [n values]: `fill` >= -128 gives every value
 * fill, else random values of the type (u8 0..255, i8 -128..127), seeded. */
static void qt_const_int(qt_text *t, const char *name, const char *elem, const char *dims,
                         int64_t n, int fill, uint32_t seed) {
  bool u8 = strcmp(elem, "u8") == 0;
  qt_add(t, "const %%%s : %s[%s] = [", name, elem, dims);
  uint32_t s = seed * 2654435761u + 7u;
  for (int64_t i = 0; i < n; i++) {
    int v = fill >= -128 ? fill : (int)(qt_rng(&s) & 255u) - (u8 ? 0 : 128);
    qt_add(t, "%s%d", i ? ", " : "", v);
  }
  qt_add(t, "]\n");
}

/* ---- running a graph ---- */
typedef struct qt_out {
  uint8_t *y;
  int64_t bytes;
  uint32_t integer_nodes; /* QLinearMatMul / QLinearConv instructions compiled */
} qt_out;

static void qt_fail(kiln_status s, const char *what, const char *text) {
  if (s) {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s: %s\n%.600s", what, kiln_status_message(s), text);
    kiln_status_free(s);
    ck_abort_msg("%s", msg);
  }
}

/* Compile text for backend (features: a cpu feature list or NULL), run
 * once on 8-bit inputs filled from seeds (input_fill >= -128: that value
 * everywhere), keep output 0's bytes. */
static void qt_run(const char *text, const char *backend, uint32_t threads, const char *features,
                   int input_fill, qt_out *o) {
  memset(o, 0, sizeof *o);
  kiln_module *m = NULL;
  kiln_executable *exe = NULL;
  qt_fail(kiln_module_parse(text, strlen(text), "qlinear.kir", NULL, &m), "parse", text);
  kiln_compile_options opt = {.struct_size = sizeof opt,
                              .threads = threads,
                              .device = -1,
                              .cpu_features = features,
                              .flags = KILN_COMPILE_NO_CACHE};
  qt_fail(kiln_compile(kt_ctx(), m, NULL, backend, &opt, &exe), backend, text);
  const kiln_ir *ir = kiln_executable_ir(exe);
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++) {
    kiln_instr_kind k = kiln_instr_get_kind(kiln_ir_instr(ir, i));
    if (k == kiln_instr_kind_for_node(KILN_NODE_QLinearMatMul) ||
        k == kiln_instr_kind_for_node(KILN_NODE_QLinearConv))
      o->integer_nodes++;
  }
  uint32_t ni = kiln_executable_input_count(exe);
  ck_assert_uint_le(ni, 8);
  void *ins[8] = {0};
  for (uint32_t i = 0; i < ni; i++) {
    kiln_io_info io;
    kiln_executable_input(exe, i, &io);
    int64_t n = kiln_type_bytes(&io.type);
    ins[i] = malloc((size_t)n + 1);
    uint32_t s = (i + 1) * 40503u;
    for (int64_t k = 0; k < n; k++)
      ((uint8_t *)ins[i])[k] = input_fill >= -128 ? (uint8_t)input_fill : (uint8_t)qt_rng(&s);
  }
  kiln_io_info io;
  kiln_executable_output(exe, 0, &io);
  o->bytes = kiln_type_bytes(&io.type);
  o->y = malloc((size_t)o->bytes + 1);
  void *outs[1] = {o->y};
  qt_fail(kiln_run(exe, (const void *const *)ins, (void *const *)outs), "run", text);
  for (uint32_t i = 0; i < ni; i++)
    free(ins[i]);
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
}

/* The cpu's results (VNNI where present, 1 and 2 threads; the portable
 * path) equal the interpreter's byte for byte, and the cpu ran the
 * integer node natively. */
static void qt_check(const char *text, int input_fill) {
  qt_out ref, c1, c2, cp;
  qt_run(text, "interpreter", 0, NULL, input_fill, &ref);
  qt_run(text, "cpu", 1, NULL, input_fill, &c1);
  qt_run(text, "cpu", 2, NULL, input_fill, &c2);
  qt_run(text, "cpu", 2, "+avx2,-avx512f", input_fill, &cp);
  const qt_out *all[3] = {&c1, &c2, &cp};
  static const char *const names[3] = {"1 thread", "2 threads", "portable"};
  for (int v = 0; v < 3; v++) {
    ck_assert_msg(all[v]->integer_nodes >= 1, "cpu (%s) lowered the integer node:\n%.400s",
                  names[v], text);
    ck_assert_int_eq(all[v]->bytes, ref.bytes);
    for (int64_t i = 0; i < ref.bytes; i++)
      ck_assert_msg(all[v]->y[i] == ref.y[i], "cpu (%s) byte %lld: %u, interpreter %u\n%.400s",
                    names[v], (long long)i, all[v]->y[i], ref.y[i], text);
  }
  free(ref.y), free(c1.y), free(c2.y), free(cp.y);
}

/* ---- QLinearMatMul graphs ---- */
typedef struct qt_mm {
  const char *adims, *bdims, *ydims; /* shapes as text */
  int64_t bn, N;                     /* B's element count, its columns */
  const char *a_el, *b_el, *y_el;
  bool per_col, b_input; /* per-column scale and zero point; B a graph input */
  int za, zb, zy;        /* zero points (per column: zb is the first, then varied) */
  float xs, ws, ys;
  int b_fill; /* >= -128: every weight this value */
} qt_mm;

static char *qt_mm_text(const qt_mm *c) {
  qt_text t = {0};
  qt_add(&t, "module @q\ninput %%a : %s[%s]\n", c->a_el, c->adims);
  if (c->b_input)
    qt_add(&t, "input %%b : %s[%s]\n", c->b_el, c->bdims);
  else
    qt_const_int(&t, "b", c->b_el, c->bdims, c->bn, c->b_fill, 3);
  qt_add(&t, "const %%xs : f32[] = [%.9g]\nconst %%ys : f32[] = [%.9g]\n", c->xs, c->ys);
  qt_add(&t, "const %%za : %s[] = [%d]\nconst %%zy : %s[] = [%d]\n", c->a_el, c->za, c->y_el,
         c->zy);
  if (c->per_col) {
    qt_add(&t, "const %%ws : f32[%lld] = [", (long long)c->N);
    for (int64_t j = 0; j < c->N; j++)
      qt_add(&t, "%s%.9g", j ? ", " : "", c->ws * (float)(1 + j % 5) * 0.5f);
    qt_add(&t, "]\nconst %%zb : %s[%lld] = [", c->b_el, (long long)c->N);
    bool u8 = strcmp(c->b_el, "u8") == 0;
    for (int64_t j = 0; j < c->N; j++) {
      int z = c->zb + (int)(j % 7) * 9;
      z = u8 ? (z > 255 ? 255 : z) : (z > 127 ? 127 : z);
      qt_add(&t, "%s%d", j ? ", " : "", z);
    }
    qt_add(&t, "]\n");
  } else {
    qt_add(&t, "const %%ws : f32[] = [%.9g]\nconst %%zb : %s[] = [%d]\n", c->ws, c->b_el, c->zb);
  }
  qt_add(&t,
         "func @main {\n  %%y : %s[%s] = QLinearMatMul(%%a, %%xs, %%za, %%b, %%ws, %%zb, %%ys, "
         "%%zy)\n  output %%o = %%y\n}\n",
         c->y_el, c->ydims);
  return t.s;
}

static void qt_mm_check(const qt_mm *c, int input_fill) {
  char *text = qt_mm_text(c);
  qt_check(text, input_fill);
  free(text);
}

/* M x K times K x N with the given types and parameters. */
static void qt_mm_shape(int64_t M, int64_t K, int64_t N, qt_mm c, int input_fill) {
  char ad[64], bd[64], yd[64];
  snprintf(ad, sizeof ad, "%lld,%lld", (long long)M, (long long)K);
  snprintf(bd, sizeof bd, "%lld,%lld", (long long)K, (long long)N);
  snprintf(yd, sizeof yd, "%lld,%lld", (long long)M, (long long)N);
  c.adims = ad, c.bdims = bd, c.ydims = yd, c.bn = K * N, c.N = N;
  qt_mm_check(&c, input_fill);
}

static const qt_mm qt_mm_base = {.a_el = "u8",
                                 .b_el = "i8",
                                 .y_el = "u8",
                                 .za = 3,
                                 .zb = 0,
                                 .zy = 128,
                                 .xs = 0.02f,
                                 .ws = 0.01f,
                                 .ys = 0.05f,
                                 .b_fill = -999};

START_TEST(qlinear_matmul_odd_sizes) {
  static const int64_t sz[][3] = {{1, 1, 1},   {3, 7, 17}, {7, 17, 3},   {17, 65, 7},
                                  {65, 3, 65}, {1, 64, 1}, {13, 5, 129}, {6, 4, 64}};
  for (size_t i = 0; i < sizeof sz / sizeof *sz; i++)
    qt_mm_shape(sz[i][0], sz[i][1], sz[i][2], qt_mm_base, -999);
}
END_TEST

START_TEST(qlinear_matmul_types_and_zero_points) {
  /* every combination of u8 / s8 for A, B and Y, per tensor and per
   * column, with zero points at and inside the types' ends */
  static const char *const el[2] = {"u8", "i8"};
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int y = 0; y < 2; y++)
        for (int pc = 0; pc < 2; pc++) {
          qt_mm c = qt_mm_base;
          c.a_el = el[a], c.b_el = el[b], c.y_el = el[y], c.per_col = pc;
          c.za = a ? -128 + 37 * pc : 255 - 100 * pc;
          c.zb = b ? (pc ? -128 : 127) : (pc ? 0 : 255);
          c.zy = y ? (pc ? 127 : -128) : (pc ? 255 : 0);
          qt_mm_shape(5, 19, 33, c, -999);
        }
}
END_TEST

START_TEST(qlinear_matmul_ties_and_saturation) {
  /* multiplier 1 * 1 / 2 = 0.5: every odd sum lands on a tie */
  qt_mm c = qt_mm_base;
  c.xs = 1, c.ws = 1, c.ys = 2, c.zy = 100, c.za = 0;
  qt_mm_shape(9, 3, 20, c, -999);
  c.a_el = "i8", c.y_el = "i8", c.zy = 0;
  qt_mm_shape(9, 5, 20, c, -999);
  /* a large multiplier: most results saturate at either end */
  c = qt_mm_base;
  c.ys = 0.0001f;
  qt_mm_shape(4, 30, 40, c, -999);
  c.y_el = "i8", c.zy = 0;
  qt_mm_shape(4, 30, 40, c, -999);
}
END_TEST

START_TEST(qlinear_matmul_large_accumulators) {
  /* K = 32768 (the largest the kernel takes) with a = 255 (za 0) and
   * b = -128 (zb 127): every sum is 32768 * 255 * -255, just inside int32;
   * the multiplier 2^-27 brings it into range */
  qt_mm c = qt_mm_base;
  c.za = 0, c.zb = 127, c.b_fill = -128, c.xs = 1, c.ws = 1, c.ys = 134217728.0f, c.zy = 100;
  qt_mm_shape(2, 32768, 3, c, 255);
  /* the same sums with the zero points carrying them: a = 0 (za 255),
   * b = 127 (zb -128), so the correction terms are the large ones */
  c.za = 255, c.zb = -128, c.b_fill = 127;
  qt_mm_shape(2, 32768, 3, c, 0);
  /* random values, K well past the packing's blocks */
  qt_mm_shape(3, 4099, 5, qt_mm_base, -999);
}
END_TEST

START_TEST(qlinear_matmul_batched_and_runtime_b) {
  qt_mm c = qt_mm_base;
  c.adims = "2,3,5,7", c.bdims = "7,17", c.ydims = "2,3,5,17", c.bn = 7 * 17, c.N = 17;
  qt_mm_check(&c, -999);
  /* B batched like A: one product per batch */
  c.adims = "2,3,5,7", c.bdims = "2,3,7,4", c.ydims = "2,3,5,4", c.bn = 2 * 3 * 7 * 4, c.N = 4;
  qt_mm_check(&c, -999);
  /* A as a vector */
  c.adims = "7", c.bdims = "7,9", c.ydims = "9", c.bn = 63, c.N = 9;
  qt_mm_check(&c, -999);
  /* B not a constant: packed by the kernel at each run */
  c = qt_mm_base;
  c.b_input = true, c.per_col = true;
  qt_mm_shape(11, 23, 70, c, -999);
}
END_TEST

START_TEST(qlinear_matmul_hand_computed_ties) {
  /* The input A [1, 2] is filled with 1s. With B = [[1, 0, 1], [2, 1, 3]]
   * the sums are 3, 1, 4; times 1 * 1 / 2: 1.5, 0.5, 2, rounded half to
   * even 2, 0, 2; plus the zero point 10: 12, 10, 12. */
  const char *text = "module @q\ninput %a : u8[1,2]\n"
                     "const %b : i8[2,3] = [1, 0, 1, 2, 1, 3]\n"
                     "const %xs : f32[] = [1]\nconst %ws : f32[] = [1]\n"
                     "const %ys : f32[] = [2]\nconst %za : u8[] = [0]\n"
                     "const %zb : i8[] = [0]\nconst %zy : u8[] = [10]\n"
                     "func @main {\n  %y : u8[1,3] = QLinearMatMul(%a, %xs, %za, %b, %ws, %zb, "
                     "%ys, %zy)\n  output %o = %y\n}\n";
  qt_out o;
  qt_run(text, "cpu", 1, NULL, 1, &o);
  ck_assert_uint_eq(o.integer_nodes, 1);
  ck_assert_int_eq(o.bytes, 3);
  ck_assert_uint_eq(o.y[0], 12);
  ck_assert_uint_eq(o.y[1], 10);
  ck_assert_uint_eq(o.y[2], 12);
  free(o.y);
  qt_check(text, 1);
}
END_TEST

/* ---- QLinearConv graphs ---- */
typedef struct qt_conv {
  int64_t N, C, H, W, M, KH, KW, group;
  const char *attrs; /* pads, strides, dilations, group as text */
  int64_t OH, OW;
  const char *x_el, *w_el, *y_el;
  bool per_ch, bias;
  int zx, zw, zy;
} qt_conv;

static void qt_conv_check(const qt_conv *c) {
  qt_text t = {0};
  int64_t Cg = c->C / c->group, wn = c->M * Cg * c->KH * c->KW;
  qt_add(&t, "module @q\ninput %%x : %s[%lld,%lld,%lld,%lld]\n", c->x_el, (long long)c->N,
         (long long)c->C, (long long)c->H, (long long)c->W);
  char wd[96];
  snprintf(wd, sizeof wd, "%lld,%lld,%lld,%lld", (long long)c->M, (long long)Cg, (long long)c->KH,
           (long long)c->KW);
  qt_const_int(&t, "w", c->w_el, wd, wn, -999, 11);
  qt_add(&t, "const %%xs : f32[] = [0.03]\nconst %%ys : f32[] = [0.07]\n");
  qt_add(&t, "const %%zx : %s[] = [%d]\nconst %%zy : %s[] = [%d]\n", c->x_el, c->zx, c->y_el,
         c->zy);
  if (c->per_ch) {
    qt_add(&t, "const %%ws : f32[%lld] = [", (long long)c->M);
    for (int64_t j = 0; j < c->M; j++)
      qt_add(&t, "%s%.9g", j ? ", " : "", 0.004 * (double)(1 + j % 3));
    qt_add(&t, "]\nconst %%zw : %s[%lld] = [", c->w_el, (long long)c->M);
    for (int64_t j = 0; j < c->M; j++)
      qt_add(&t, "%s%d", j ? ", " : "", c->zw + (int)(j % 3) * (c->zw > 0 ? -5 : 5));
    qt_add(&t, "]\n");
  } else {
    qt_add(&t, "const %%ws : f32[] = [0.005]\nconst %%zw : %s[] = [%d]\n", c->w_el, c->zw);
  }
  if (c->bias) {
    qt_add(&t, "const %%bias : i32[%lld] = [", (long long)c->M);
    for (int64_t j = 0; j < c->M; j++)
      qt_add(&t, "%s%lld", j ? ", " : "", (long long)((j * 7919) % 4001 - 2000));
    qt_add(&t, "]\n");
  }
  qt_add(&t,
         "func @main {\n  %%y : %s[%lld,%lld,%lld,%lld] = QLinearConv(%%x, %%xs, %%zx, %%w, "
         "%%ws, %%zw, %%ys, %%zy%s) {kernel_shape = [%lld, %lld]%s%s}\n  output %%o = %%y\n}\n",
         c->y_el, (long long)c->N, (long long)c->M, (long long)c->OH, (long long)c->OW,
         c->bias ? ", %bias" : "", (long long)c->KH, (long long)c->KW, c->attrs[0] ? ", " : "",
         c->attrs);
  qt_check(t.s, -999);
  free(t.s);
}

static const qt_conv qt_conv_base = {.N = 1,
                                     .C = 3,
                                     .H = 7,
                                     .W = 9,
                                     .M = 5,
                                     .KH = 3,
                                     .KW = 3,
                                     .group = 1,
                                     .attrs = "",
                                     .OH = 5,
                                     .OW = 7,
                                     .x_el = "u8",
                                     .w_el = "i8",
                                     .y_el = "u8",
                                     .per_ch = true,
                                     .bias = true,
                                     .zx = 131,
                                     .zw = 0,
                                     .zy = 120};

START_TEST(qlinear_conv_windows) {
  qt_conv c = qt_conv_base;
  qt_conv_check(&c); /* 3x3, no padding */
  c.attrs = "pads = [1, 1, 1, 1]", c.OH = 7, c.OW = 9, c.zx = 200;
  qt_conv_check(&c); /* padding reads the non-zero input zero point */
  c.attrs = "pads = [1, 0, 2, 1], strides = [2, 2]", c.OH = 4, c.OW = 4;
  qt_conv_check(&c); /* stride 2, uneven pads */
  c.attrs = "pads = [2, 2, 2, 2], dilations = [2, 2]", c.OH = 7, c.OW = 9;
  qt_conv_check(&c); /* dilation 2 */
  c = qt_conv_base;
  c.KH = c.KW = 1, c.OH = 7, c.OW = 9, c.C = 17, c.M = 70, c.N = 2;
  qt_conv_check(&c); /* 1x1, batch 2, more than one column panel */
  c = qt_conv_base;
  c.H = 1, c.KH = 1, c.OH = 1, c.attrs = "pads = [0, 1, 0, 1]", c.OW = 9, c.N = 2;
  qt_conv_check(&c); /* a row (as 1-D is lifted to 2-D) */
  c = qt_conv_base;
  c.C = 8, c.M = 20, c.H = 40, c.W = 41, c.OH = 40, c.OW = 41, c.attrs = "pads = [1, 1, 1, 1]";
  qt_conv_check(&c); /* more positions than one packing run (1024): runs on both threads */
}
END_TEST

START_TEST(qlinear_conv_groups_and_types) {
  qt_conv c = qt_conv_base;
  c.C = 4, c.M = 6, c.group = 2, c.attrs = "group = 2, pads = [1, 1, 1, 1]", c.OH = 7, c.OW = 9;
  qt_conv_check(&c); /* 2 groups */
  c.C = 5, c.M = 5, c.group = 5, c.attrs = "group = 5, pads = [1, 1, 1, 1], strides = [2, 1]";
  c.OH = 4, c.N = 2;
  qt_conv_check(&c); /* depthwise, batch 2 */
  c.x_el = "i8", c.zx = -7, c.w_el = "u8", c.zw = 131, c.per_ch = false;
  c.attrs = "group = 5, pads = [2, 0, 2, 1], dilations = [2, 2], strides = [1, 2]", c.OH = 7;
  c.OW = 3;
  qt_conv_check(&c); /* depthwise with dilation, s8 activations, u8 weights */
  c = qt_conv_base;
  c.C = 3, c.M = 6, c.group = 3, c.attrs = "group = 3, pads = [1, 1, 1, 1]", c.OH = 7, c.OW = 9;
  qt_conv_check(&c); /* two output channels per input channel */
  c = qt_conv_base;
  c.x_el = "i8", c.zx = -100, c.y_el = "i8", c.zy = -3, c.attrs = "pads = [1, 1, 1, 1]";
  c.OH = 7, c.OW = 9, c.per_ch = false, c.zw = 17;
  qt_conv_check(&c); /* s8 activations, per-tensor weights with a zero point */
  c.w_el = "u8", c.zw = 140, c.per_ch = true, c.bias = false;
  qt_conv_check(&c); /* u8 weights per channel, no bias */
}
END_TEST

/* Depthwise (kernels/quant_gemm.c's direct f32 loop: one flat run of
 * positions per plane, the phases of both strides) at the sizes of
 * MobileNet's small planes and their edges: 7x7 and 14x14 with pads 1
 * (the pad columns computed and dropped), odd widths, strides 2 with
 * uneven pads, pads 0 and 2, dilation 2, a 5x5 window, enough planes to
 * split over both threads, and windows at and past 256 taps (the largest
 * f32 sums, then the int32 loop). */
static void qt_dw_check(qt_conv c, int64_t C, int64_t H, int64_t W, int64_t K, const char *pads,
                        int64_t sh, int64_t sw, int64_t dil, int64_t OH, int64_t OW) {
  char attrs[200];
  snprintf(attrs, sizeof attrs,
           "group = %lld, pads = [%s], strides = [%lld, %lld], "
           "dilations = [%lld, %lld]",
           (long long)C, pads, (long long)sh, (long long)sw, (long long)dil, (long long)dil);
  c.C = c.M = c.group = C, c.H = H, c.W = W, c.KH = c.KW = K, c.OH = OH, c.OW = OW;
  c.attrs = attrs;
  qt_conv_check(&c);
}

START_TEST(qlinear_conv_depthwise_planes) {
  qt_conv c = qt_conv_base;
  qt_dw_check(c, 16, 7, 7, 3, "1, 1, 1, 1", 1, 1, 1, 7, 7);
  qt_dw_check(c, 6, 14, 14, 3, "1, 1, 1, 1", 1, 1, 1, 14, 14);
  qt_dw_check(c, 5, 13, 11, 3, "0, 0, 0, 0", 1, 1, 1, 11, 9);  /* odd, pads 0 */
  qt_dw_check(c, 4, 9, 10, 3, "2, 2, 2, 2", 1, 1, 2, 9, 10);   /* pads 2, dilation 2 */
  qt_dw_check(c, 4, 15, 15, 3, "1, 1, 1, 1", 2, 2, 1, 8, 8);   /* stride 2, odd */
  qt_dw_check(c, 3, 28, 27, 3, "0, 0, 1, 1", 2, 2, 1, 14, 13); /* stride 2, pads after only */
  qt_dw_check(c, 3, 14, 14, 5, "2, 2, 2, 2", 2, 2, 1, 7, 7);   /* 5x5, stride 2 */
  qt_dw_check(c, 3, 17, 13, 3, "2, 1, 0, 2", 2, 1, 2, 8, 12);  /* strides 2 x 1, dilation */
  c.x_el = "i8", c.zx = -90, c.w_el = "u8", c.zw = 140, c.y_el = "i8", c.zy = 5;
  qt_dw_check(c, 7, 14, 13, 3, "1, 1, 1, 1", 1, 1, 1, 14, 13); /* s8 x, u8 w, s8 y */
  c.per_ch = false, c.bias = false, c.N = 2;
  qt_dw_check(c, 3, 7, 9, 3, "1, 2, 1, 0", 2, 2, 1, 4, 5); /* batch 2, no bias */
  c = qt_conv_base;
  qt_dw_check(c, 2, 18, 16, 16, "0, 0, 0, 0", 1, 1, 1, 3, 1); /* 256 taps (f32) */
  qt_dw_check(c, 2, 18, 17, 17, "0, 0, 0, 0", 1, 1, 1, 2, 1); /* 289 taps (int32) */
}
END_TEST

/* 1x1 (the im2col row of a tap is then the input plane itself, copied
 * whole): planes wider than one packing run (1024 positions), so that a
 * run starts inside the plane; with pads and strides, where it is not. */
START_TEST(qlinear_conv_pointwise) {
  qt_conv c = qt_conv_base;
  c.KH = c.KW = 1, c.C = 24, c.M = 13, c.H = 40, c.W = 41, c.OH = 40, c.OW = 41;
  qt_conv_check(&c);
  c.attrs = "pads = [1, 0, 0, 1]", c.C = 5, c.OH = 41, c.OW = 42;
  qt_conv_check(&c);
  c.attrs = "strides = [2, 2]", c.OH = 20, c.OW = 21;
  qt_conv_check(&c);
}
END_TEST

/* ---- fuseqdq on the cpu ---- */
START_TEST(qdq_fuses_on_cpu) {
  /* Q(Relu(Conv(DQ x, DQ w, DQ bias))) and Q(MatMul(DQ a, DQ b)): the cpu
   * declares the integer kinds, so fuseqdq makes them, and the integers
   * equal the interpreter's (which fuses them the same way) */
  float xs = 0.05f, ws[4] = {0.01f, 0.02f, 0.015f, 0.03f};
  qt_text t = {0};
  qt_add(&t,
         "module @q\ninput %%x : u8[1,3,6,6]\n"
         "const %%xs : f32[] = [%.9g]\nconst %%xz : u8[] = [128]\n",
         xs);
  qt_const_int(&t, "w", "i8", "4,3,3,3", 108, -999, 5);
  qt_add(&t, "const %%ws : f32[4] = [%.9g, %.9g, %.9g, %.9g]\n", ws[0], ws[1], ws[2], ws[3]);
  qt_add(&t, "const %%wz : i8[4] = [0, 0, 0, 0]\nconst %%b : i32[4] = [100, -50, 7, 0]\n");
  /* the bias scale quantizers write: x_scale * w_scale rounded to f32 */
  qt_add(&t, "const %%bs : f32[4] = [");
  for (int i = 0; i < 4; i++)
    qt_add(&t, "%s%.9g", i ? ", " : "", (double)(float)((double)xs * (double)ws[i]));
  qt_add(&t, "]\nconst %%ys : f32[] = [0.1]\nconst %%yz : u8[] = [0]\n");
  qt_const_int(&t, "m", "i8", "36,5", 180, -999, 9);
  qt_add(&t, "const %%ms : f32[] = [0.02]\nconst %%mz : i8[] = [0]\n"
             "const %%os : f32[] = [0.5]\nconst %%oz : u8[] = [128]\n"
             "func @main {\n"
             "  %%dx : f32[1,3,6,6] = DequantizeLinear(%%x, %%xs, %%xz)\n"
             "  %%dw : f32[4,3,3,3] = DequantizeLinear(%%w, %%ws, %%wz) {axis = 0}\n"
             "  %%db : f32[4] = DequantizeLinear(%%b, %%bs) {axis = 0}\n"
             "  %%c : f32[1,4,6,6] = Conv(%%dx, %%dw, %%db) {kernel_shape = [3, 3], "
             "pads = [1, 1, 1, 1]}\n"
             "  %%r : f32[1,4,6,6] = Relu(%%c)\n"
             "  %%q : u8[1,4,6,6] = QuantizeLinear(%%r, %%ys, %%yz)\n"
             "  %%qr : u8[4,36] = Reshape(%%q) {shape = [4, 36]}\n"
             "  %%dq : f32[4,36] = DequantizeLinear(%%qr, %%ys, %%yz)\n"
             "  %%dm : f32[36,5] = DequantizeLinear(%%m, %%ms, %%mz) {axis = 1}\n"
             "  %%mm : f32[4,5] = MatMul(%%dq, %%dm)\n"
             "  %%qo : u8[4,5] = QuantizeLinear(%%mm, %%os, %%oz)\n"
             "  output %%o = %%qo\n}\n");
  qt_out cpu, ref;
  qt_run(t.s, "cpu", 2, NULL, -999, &cpu);
  qt_run(t.s, "interpreter", 0, NULL, -999, &ref);
  ck_assert_uint_eq(cpu.integer_nodes, 2); /* the Conv and the MatMul */
  ck_assert_uint_eq(ref.integer_nodes, 2);
  ck_assert_int_eq(cpu.bytes, ref.bytes);
  ck_assert_mem_eq(cpu.y, ref.y, (size_t)ref.bytes);
  free(cpu.y), free(ref.y), free(t.s);
}
END_TEST

Suite *kcpu_qlinear_suite(void) {
  Suite *s = suite_create("cpu qlinear");
  TCase *tc = tcase_create("int8");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, qlinear_matmul_odd_sizes);
  tcase_add_test(tc, qlinear_matmul_types_and_zero_points);
  tcase_add_test(tc, qlinear_matmul_ties_and_saturation);
  tcase_add_test(tc, qlinear_matmul_large_accumulators);
  tcase_add_test(tc, qlinear_matmul_batched_and_runtime_b);
  tcase_add_test(tc, qlinear_matmul_hand_computed_ties);
  tcase_add_test(tc, qlinear_conv_windows);
  tcase_add_test(tc, qlinear_conv_groups_and_types);
  tcase_add_test(tc, qlinear_conv_depthwise_planes);
  tcase_add_test(tc, qlinear_conv_pointwise);
  tcase_add_test(tc, qdq_fuses_on_cpu);
  suite_add_tcase(s, tc);
  return s;
}
