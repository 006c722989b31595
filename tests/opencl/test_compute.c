/* tests/opencl/test_compute.c: small graphs compiled for opencl and run
 * against the interpreter, several also against hand-computed values:
 * elementwise (broadcast, integer, comparison, cast), fused elementwise,
 * matmul of odd sizes, gemm, conv, pools, softmax, reductions and data
 * movement. */
#include <math.h>
#include <stdlib.h>

#include "helpers.h"

static const int64_t d23[] = {2, 3}, d3[] = {3};

START_TEST(add_broadcast) {
  tg t;
  tg_init(&t);
  kiln_value *a = tg_input(&t, "a", KILN_F32, 2, d23), *b = tg_input(&t, "b", KILN_F32, 1, d3);
  kiln_value *ab[] = {a, b};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Add, ab, 2, NULL, 0));
  float av[] = {1, 2, 3, 4, 5, 6}, bv[] = {10, 20, 30};
  const void *ins[] = {av, bv};
  const float want[] = {11, 22, 33, 14, 25, 36};
  tg_check(&t, ins, 1e-6, want, 6);
  tg_free(&t);
}
END_TEST

START_TEST(unary_float) {
  static const kiln_node_kind kinds[] = {KILN_NODE_Relu,  KILN_NODE_Sigmoid, KILN_NODE_Exp,
                                         KILN_NODE_Tanh,  KILN_NODE_Abs,     KILN_NODE_Floor,
                                         KILN_NODE_Round, KILN_NODE_Erf,     KILN_NODE_Neg,
                                         KILN_NODE_Sign,  KILN_NODE_Elu,     KILN_NODE_HardSwish};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    tg t;
    tg_init(&t);
    kiln_value *x = tg_input(&t, "x", KILN_F32, 2, d23);
    tg_output(&t, "y", tg_node(&t, kinds[k], &x, 1, NULL, 0));
    tg_check(&t, NULL, 1e-5, NULL, 0);
    tg_free(&t);
  }
  /* hand-computed: relu and sigmoid */
  tg t;
  tg_init(&t);
  kiln_value *x = tg_input(&t, "x", KILN_F32, 1, d3);
  kiln_value *r = tg_node(&t, KILN_NODE_Relu, &x, 1, NULL, 0);
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Sigmoid, &r, 1, NULL, 0));
  float xv[] = {-3, 0, 2};
  const void *ins[] = {xv};
  const float want[] = {0.5f, 0.5f, 0.880797078f};
  tg_check(&t, ins, 1e-6, want, 3);
  tg_free(&t);
}
END_TEST

START_TEST(integer_and_compare) {
  static const kiln_node_kind kinds[] = {KILN_NODE_Add, KILN_NODE_Sub,  KILN_NODE_Mul,
                                         KILN_NODE_Mod, KILN_NODE_Less, KILN_NODE_Equal,
                                         KILN_NODE_Max, KILN_NODE_Min};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    tg t;
    tg_init(&t);
    kiln_value *a = tg_input(&t, "a", KILN_I32, 2, d23), *b = tg_input(&t, "b", KILN_I32, 1, d3);
    kiln_value *ab[] = {a, b};
    tg_output(&t, "y", tg_node(&t, kinds[k], ab, 2, NULL, 0));
    tg_check(&t, NULL, 0, NULL, 0);
    tg_free(&t);
  }
  /* integer division truncates toward zero: -7 / 2 = -3 */
  tg t;
  tg_init(&t);
  kiln_value *a = tg_input(&t, "a", KILN_I64, 1, d3), *b = tg_input(&t, "b", KILN_I64, 1, d3);
  kiln_value *ab[] = {a, b};
  kiln_value *q = tg_node(&t, KILN_NODE_Div, ab, 2, NULL, 0);
  kiln_attr_desc to = KILN_ATTR_T("to", KILN_F32);
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Cast, &q, 1, &to, 1));
  int64_t av[] = {-7, 9, 100}, bv[] = {2, -4, 7};
  const void *ins[] = {av, bv};
  const float want[] = {-3, -2, 14};
  tg_check(&t, ins, 0, want, 3);
  tg_free(&t);
}
END_TEST

START_TEST(where_and_cast) {
  tg t;
  tg_init(&t);
  kiln_value *c = tg_input(&t, "c", KILN_BOOL, 1, d3);
  kiln_value *x = tg_input(&t, "x", KILN_F32, 2, d23), *y = tg_input(&t, "y", KILN_F32, 1, d3);
  kiln_value *cxy[] = {c, x, y};
  kiln_value *w = tg_node(&t, KILN_NODE_Where, cxy, 3, NULL, 0);
  kiln_attr_desc to = KILN_ATTR_T("to", KILN_I32);
  tg_output(&t, "w", w);
  tg_output(&t, "i", tg_node(&t, KILN_NODE_Cast, &w, 1, &to, 1));
  uint8_t cv[] = {1, 0, 1};
  float xv[] = {1.5f, 2.5f, -3.5f, 4, 5, 6}, yv[] = {-1, -2, -3};
  const void *ins[] = {cv, xv, yv};
  const float want[] = {1.5f, -2, -3.5f, 4, -2, 6};
  tg_check(&t, ins, 0, want, 6);
  tg_free(&t);
}
END_TEST

START_TEST(fused) {
  tg t;
  tg_init(&t);
  kiln_value *a = tg_input(&t, "a", KILN_F32, 2, d23), *b = tg_input(&t, "b", KILN_F32, 1, d3);
  kiln_value *ab[] = {a, b};
  kiln_attr_desc body = KILN_ATTR_S("body", "x0 1.5 Mul 0.5 Add Tanh x1 Mul x0 Max");
  tg_output(&t, "y", tg_node(&t, KILN_NODE_FusedElementwise, ab, 2, &body, 1));
  float av[] = {0, 1, -1, 2, -2, 0.5f}, bv[] = {2, -1, 3};
  const void *ins[] = {av, bv};
  /* max(tanh(1.5 a + 0.5) * b, a) */
  float want[6];
  for (int i = 0; i < 6; i++) {
    float v = tanhf(1.5f * av[i] + 0.5f) * bv[i % 3];
    want[i] = v > av[i] ? v : av[i];
  }
  tg_check(&t, ins, 1e-5, want, 6);
  tg_free(&t);
}
END_TEST

static void matmul_case(uint32_t ra, const int64_t *da, uint32_t rb, const int64_t *db) {
  tg t;
  tg_init(&t);
  kiln_value *a = tg_input(&t, "a", KILN_F32, ra, da), *b = tg_input(&t, "b", KILN_F32, rb, db);
  kiln_value *ab[] = {a, b};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_MatMul, ab, 2, NULL, 0));
  tg_check(&t, NULL, 1e-4, NULL, 0);
  tg_free(&t);
}

START_TEST(matmul) {
  /* hand-computed 2x2 */
  tg t;
  tg_init(&t);
  static const int64_t d22[] = {2, 2};
  kiln_value *a = tg_input(&t, "a", KILN_F32, 2, d22), *b = tg_input(&t, "b", KILN_F32, 2, d22);
  kiln_value *ab[] = {a, b};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_MatMul, ab, 2, NULL, 0));
  float av[] = {1, 2, 3, 4}, bv[] = {5, 6, 7, 8};
  const void *ins[] = {av, bv};
  const float want[] = {19, 22, 43, 50};
  tg_check(&t, ins, 0, want, 4);
  tg_free(&t);
  /* odd sizes, batching with broadcast, 1-D operands */
  static const int64_t a1[] = {3, 17}, b1[] = {17, 5};
  matmul_case(2, a1, 2, b1);
  static const int64_t a2[] = {2, 1, 5, 33}, b2[] = {3, 33, 19};
  matmul_case(4, a2, 3, b2);
  static const int64_t a3[] = {7}, b3[] = {7, 4};
  matmul_case(1, a3, 2, b3);
  /* big enough for 4x4 and 2x2 register blocks per work item, with ragged
   * edges in every direction */
  static const int64_t a4[] = {70, 45}, b4[] = {45, 130};
  matmul_case(2, a4, 2, b4);
  static const int64_t a5[] = {2, 40, 20}, b5[] = {20, 33};
  matmul_case(3, a5, 2, b5);
}
END_TEST

START_TEST(gemm) {
  tg t;
  tg_init(&t);
  static const int64_t da[] = {5, 3}, db[] = {4, 5}, dc[] = {4};
  kiln_value *a = tg_input(&t, "a", KILN_F32, 2, da), *b = tg_input(&t, "b", KILN_F32, 2, db);
  kiln_value *c = tg_input(&t, "c", KILN_F32, 1, dc);
  kiln_value *abc[] = {a, b, c};
  kiln_attr_desc at[] = {KILN_ATTR_F("alpha", 0.5), KILN_ATTR_F("beta", 2.0),
                         KILN_ATTR_I("transA", 1), KILN_ATTR_I("transB", 1)};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Gemm, abc, 3, at, 4));
  tg_check(&t, NULL, 1e-5, NULL, 0);
  tg_free(&t);
  /* register-blocked: 67 x 50 result, transposed operands */
  tg_init(&t);
  static const int64_t ea[] = {29, 67}, eb[] = {50, 29}, ec[] = {67, 1};
  kiln_value *a2 = tg_input(&t, "a", KILN_F32, 2, ea), *b2 = tg_input(&t, "b", KILN_F32, 2, eb);
  kiln_value *abc2[] = {a2, b2, tg_input(&t, "c", KILN_F32, 2, ec)};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Gemm, abc2, 3, at, 4));
  tg_check(&t, NULL, 1e-5, NULL, 0);
  tg_free(&t);
}
END_TEST

START_TEST(conv) {
  /* hand-computed: 1x1x3x3 input, 2x2 kernel of ones, bias 1, no pad */
  tg t;
  tg_init(&t);
  static const int64_t dx[] = {1, 1, 3, 3}, dw[] = {1, 1, 2, 2}, db[] = {1};
  kiln_value *x = tg_input(&t, "x", KILN_F32, 4, dx);
  float wv[] = {1, 1, 1, 1}, bv[] = {1};
  kiln_value *xwb[] = {x, tg_const(&t, KILN_F32, 4, dw, wv), tg_const(&t, KILN_F32, 1, db, bv)};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Conv, xwb, 3, NULL, 0));
  float xv[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const void *ins[] = {xv};
  const float want[] = {13, 17, 25, 29};
  tg_check(&t, ins, 0, want, 4);
  tg_free(&t);
  /* groups, stride, pads, dilation, against the interpreter */
  tg_init(&t);
  static const int64_t dx2[] = {2, 4, 9, 8}, dw2[] = {6, 2, 3, 3}, db2[] = {6};
  kiln_value *x2 = tg_input(&t, "x", KILN_F32, 4, dx2);
  kiln_value *w2 = tg_input(&t, "w", KILN_F32, 4, dw2), *b2 = tg_input(&t, "b", KILN_F32, 1, db2);
  static const int64_t pads[] = {1, 2, 1, 0}, strides[] = {2, 1}, dil[] = {1, 2};
  kiln_attr_desc at[] = {KILN_ATTR_I("group", 2), KILN_ATTR_IS("pads", pads, 4),
                         KILN_ATTR_IS("strides", strides, 2), KILN_ATTR_IS("dilations", dil, 2)};
  kiln_value *xwb2[] = {x2, w2, b2};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Conv, xwb2, 3, at, 4));
  tg_check(&t, NULL, 1e-4, NULL, 0);
  tg_free(&t);
  /* 3-D, 3x2x3 kernel with stride and padding, against the interpreter
   * (the kernel window index must nest over all three dimensions) */
  tg_init(&t);
  static const int64_t dx3[] = {1, 2, 4, 5, 6}, dw3[] = {3, 2, 3, 2, 3};
  kiln_value *x3 = tg_input(&t, "x", KILN_F32, 5, dx3);
  kiln_value *w3 = tg_input(&t, "w", KILN_F32, 5, dw3);
  static const int64_t pads3[] = {1, 0, 1, 1, 0, 1}, strides3[] = {1, 2, 1};
  kiln_attr_desc at3[] = {KILN_ATTR_IS("pads", pads3, 6), KILN_ATTR_IS("strides", strides3, 3)};
  kiln_value *xw3[] = {x3, w3};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Conv, xw3, 2, at3, 2));
  tg_check(&t, NULL, 1e-4, NULL, 0);
  tg_free(&t);
}
END_TEST

/* A grouped, padded Conv big enough for the tiled (implicit GEMM) kernel,
 * with a fused activation, once with the generator's own choice and once
 * with each kernel forced; every run must agree with the interpreter. */
/* extra: activation parameters; res: a residual input (kiln's fourth Conv
 * input, which opencl declines: lowered back to Conv + Add) */
static void conv_tiled_case_ex(const char *mode, const char *act, const kiln_attr_desc *extra,
                               uint32_t n_extra, bool res) {
  if (mode)
    setenv("KILN_OPENCL_CONV", mode, 1);
  else
    unsetenv("KILN_OPENCL_CONV");
  tg t;
  tg_init(&t);
  static const int64_t dx[] = {2, 16, 21, 19}, dw[] = {24, 8, 3, 3}, db[] = {24};
  kiln_value *x = tg_input(&t, "x", KILN_F32, 4, dx);
  kiln_value *w = tg_input(&t, "w", KILN_F32, 4, dw), *b = tg_input(&t, "b", KILN_F32, 1, db);
  static const int64_t pads[] = {1, 0, 2, 1}, strides[] = {1, 2}, dil[] = {2, 1};
  kiln_attr_desc at[8] = {KILN_ATTR_I("group", 2), KILN_ATTR_IS("pads", pads, 4),
                          KILN_ATTR_IS("strides", strides, 2), KILN_ATTR_IS("dilations", dil, 2),
                          KILN_ATTR_S("activation", act)};
  uint32_t na = act ? 5 : 4;
  for (uint32_t i = 0; i < n_extra && na < 8; i++)
    at[na++] = extra[i];
  static const int64_t dy[] = {2, 24, 20, 9};
  kiln_value *xwb[] = {x, w, b, res ? tg_input(&t, "z", KILN_F32, 4, dy) : NULL};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Conv, xwb, res ? 4 : 3, at, na));
  tg_check(&t, NULL, 1e-4, NULL, 0);
  tg_free(&t);
  unsetenv("KILN_OPENCL_CONV");
}

static void conv_tiled_case(const char *mode, const char *act) {
  conv_tiled_case_ex(mode, act, NULL, 0, false);
}

START_TEST(conv_tiled) {
  conv_tiled_case(NULL, NULL);
  conv_tiled_case("tiled", "Relu");
  conv_tiled_case("direct", "Relu");
  conv_tiled_case("tiled", "Sigmoid");
  conv_tiled_case("tiled", "Gelu");
  conv_tiled_case("direct", "Gelu");
  /* the ABI 1.4 activations, with their parameters */
  kiln_attr_desc clip[] = {KILN_ATTR_F("activation_alpha", -0.5),
                           KILN_ATTR_F("activation_beta", 0.5)};
  conv_tiled_case_ex("tiled", "Clip", clip, 2, false);
  conv_tiled_case_ex("direct", "Clip", clip + 1, 1, false);
  kiln_attr_desc hsig[] = {KILN_ATTR_F("activation_alpha", 0.3),
                           KILN_ATTR_F("activation_beta", 0.4)};
  conv_tiled_case_ex("tiled", "HardSigmoid", hsig, 2, false);
  conv_tiled_case("direct", "HardSwish");
  kiln_attr_desc sw[] = {KILN_ATTR_F("activation_alpha", 1.5)};
  conv_tiled_case_ex("tiled", "Swish", sw, 1, false);
  conv_tiled_case_ex("direct", "Swish", sw, 1, false);
  /* a fused residual: declined by opencl, lowered back, same result */
  conv_tiled_case_ex("tiled", "Clip", clip, 2, true);
}
END_TEST

/* MatMul and Gemm carrying a fused activation: the epilogue must apply it
 * (the interpreter does), not drop it. Hand-computed: [[1,-2],[3,4]] x I. */
START_TEST(matmul_activation) {
  tg t;
  tg_init(&t);
  static const int64_t d22[] = {2, 2};
  kiln_value *a = tg_input(&t, "a", KILN_F32, 2, d22), *b = tg_input(&t, "b", KILN_F32, 2, d22);
  kiln_value *ab[] = {a, b};
  kiln_attr_desc at[] = {KILN_ATTR_S("activation", "Relu")};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_MatMul, ab, 2, at, 1));
  float av[] = {1, -2, 3, 4}, bv[] = {1, 0, 0, 1};
  const void *ins[] = {av, bv};
  const float want[] = {1, 0, 3, 4};
  tg_check(&t, ins, 0, want, 4);
  tg_free(&t);
  /* exact Gelu on a [5, 7] x [7, 3] product, against the interpreter */
  tg_init(&t);
  static const int64_t d57[] = {5, 7}, d73[] = {7, 3};
  kiln_value *g[] = {tg_input(&t, "a", KILN_F32, 2, d57), tg_input(&t, "b", KILN_F32, 2, d73)};
  kiln_attr_desc gt[] = {KILN_ATTR_S("activation", "Gelu")};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_MatMul, g, 2, gt, 1));
  tg_check(&t, NULL, 1e-5, NULL, 0);
  tg_free(&t);
  /* the ABI 1.4 activations on the same product, each against the
   * interpreter */
  static const kiln_attr_desc acts[][3] = {
      {KILN_ATTR_S("activation", "Clip"), KILN_ATTR_F("activation_beta", 0.25)},
      {KILN_ATTR_S("activation", "HardSigmoid"), KILN_ATTR_F("activation_alpha", 0.5),
       KILN_ATTR_F("activation_beta", 0.25)},
      {KILN_ATTR_S("activation", "HardSwish")},
      {KILN_ATTR_S("activation", "Swish"), KILN_ATTR_F("activation_alpha", 0.5)}};
  static const uint32_t n_attrs[] = {2, 3, 1, 2};
  for (int i = 0; i < 4; i++) {
    tg_init(&t);
    kiln_value *h[] = {tg_input(&t, "a", KILN_F32, 2, d57), tg_input(&t, "b", KILN_F32, 2, d73)};
    tg_output(&t, "y", tg_node(&t, KILN_NODE_MatMul, h, 2, acts[i], n_attrs[i]));
    tg_check(&t, NULL, 1e-5, NULL, 0);
    tg_free(&t);
  }
}
END_TEST

/* Instructions of kind k in the opencl executable of t's module. */
static uint32_t count_instrs(tg *t, kiln_node_kind k) {
  kiln_executable *exe = NULL;
  kiln_status s = kiln_compile(tg_ctx(), t->m, NULL, "opencl", NULL, &exe);
  ck_assert_msg(!s, "compile: %s", s ? kiln_status_message(s) : "");
  const kiln_ir *ir = kiln_executable_ir(exe);
  uint32_t c = 0;
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++)
    if (kiln_instr_get_kind(kiln_ir_instr(ir, i)) == kiln_instr_kind_for_node(k))
      c++;
  kiln_executable_destroy(exe);
  return c;
}

/* The backend's supports_fused hook: an elementwise chain becomes one
 * FusedElementwise kernel, and a Relu after a MatMul rides on it. */
START_TEST(fusion) {
  tg t;
  tg_init(&t);
  static const int64_t d[] = {5, 33}, db[] = {33};
  kiln_value *x = tg_input(&t, "x", KILN_F32, 2, d), *b = tg_input(&t, "b", KILN_F32, 1, db);
  kiln_value *xb[] = {x, b};
  kiln_value *a = tg_node(&t, KILN_NODE_Add, xb, 2, NULL, 0);
  kiln_value *th = tg_node(&t, KILN_NODE_Tanh, &a, 1, NULL, 0);
  kiln_value *e = tg_node(&t, KILN_NODE_Exp, &th, 1, NULL, 0);
  kiln_value *se[] = {e, x};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Sub, se, 2, NULL, 0));
  ck_assert_uint_eq(count_instrs(&t, KILN_NODE_FusedElementwise), 1);
  ck_assert_uint_eq(count_instrs(&t, KILN_NODE_Tanh), 0);
  tg_check(&t, NULL, 1e-5, NULL, 0);
  tg_free(&t);
  tg_init(&t);
  static const int64_t da[] = {6, 9}, dm[] = {9, 4};
  kiln_value *p = tg_input(&t, "p", KILN_F32, 2, da), *q = tg_input(&t, "q", KILN_F32, 2, dm);
  kiln_value *pq[] = {p, q};
  kiln_value *mm = tg_node(&t, KILN_NODE_MatMul, pq, 2, NULL, 0);
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Relu, &mm, 1, NULL, 0));
  ck_assert_uint_eq(count_instrs(&t, KILN_NODE_Relu), 0);
  ck_assert_uint_eq(count_instrs(&t, KILN_NODE_MatMul), 1);
  tg_check(&t, NULL, 1e-5, NULL, 0);
  tg_free(&t);
}
END_TEST

/* AveragePool with attributes a[0, na) (the last is count_include_pad),
 * AveragePool and MaxPool with a[0, na - 1), and with globals the global
 * pools, of one input: opencl against the interpreter. */
static void pool_pair(uint32_t rank, const int64_t *dx, const kiln_attr_desc *a, uint32_t na,
                      bool globals) {
  tg t;
  tg_init(&t);
  kiln_value *x = tg_input(&t, "x", KILN_F32, rank, dx);
  tg_output(&t, "avg", tg_node(&t, KILN_NODE_AveragePool, &x, 1, a, na));
  tg_output(&t, "avg_data", tg_node(&t, KILN_NODE_AveragePool, &x, 1, a, na - 1));
  tg_output(&t, "max", tg_node(&t, KILN_NODE_MaxPool, &x, 1, a, na - 1));
  if (globals) {
    tg_output(&t, "gavg", tg_node(&t, KILN_NODE_GlobalAveragePool, &x, 1, NULL, 0));
    tg_output(&t, "gmax", tg_node(&t, KILN_NODE_GlobalMaxPool, &x, 1, NULL, 0));
  }
  tg_check(&t, NULL, 1e-5, NULL, 0);
  tg_free(&t);
}

START_TEST(pool) {
  static const int64_t dx[] = {1, 1, 4, 4}, k[] = {2, 2};
  float xv[16];
  for (int i = 0; i < 16; i++)
    xv[i] = (float)i;
  const void *ins[] = {xv};
  kiln_attr_desc at[] = {KILN_ATTR_IS("kernel_shape", k, 2), KILN_ATTR_IS("strides", k, 2)};
  tg t;
  tg_init(&t);
  kiln_value *x = tg_input(&t, "x", KILN_F32, 4, dx);
  tg_output(&t, "y", tg_node(&t, KILN_NODE_MaxPool, &x, 1, at, 2));
  const float want_max[] = {5, 7, 13, 15};
  tg_check(&t, ins, 0, want_max, 4);
  tg_free(&t);
  tg_init(&t);
  x = tg_input(&t, "x", KILN_F32, 4, dx);
  tg_output(&t, "y", tg_node(&t, KILN_NODE_AveragePool, &x, 1, at, 2));
  const float want_avg[] = {2.5f, 4.5f, 10.5f, 12.5f};
  tg_check(&t, ins, 0, want_avg, 4);
  tg_free(&t);
  /* padded 3x3 windows, count_include_pad, global pools */
  static const int64_t dx2[] = {2, 3, 7, 6}, k3[] = {3, 3}, p1[] = {1, 1, 1, 1};
  kiln_attr_desc a2[] = {KILN_ATTR_IS("kernel_shape", k3, 2), KILN_ATTR_IS("pads", p1, 4),
                         KILN_ATTR_I("count_include_pad", 1)};
  pool_pair(4, dx2, a2, 3, true);
  /* windows of 10^7 x 10^7 taps inside their pads (each covers the whole
   * plane): the kernels walk only the taps inside the input, or these
   * would not finish */
  static const int64_t dx3[] = {1, 2, 4, 5}, kf[] = {10000001, 10000001},
                       pf[] = {5000000, 5000000, 5000000, 5000000};
  kiln_attr_desc a3[] = {KILN_ATTR_IS("kernel_shape", kf, 2), KILN_ATTR_IS("pads", pf, 4),
                         KILN_ATTR_I("count_include_pad", 1)};
  pool_pair(4, dx3, a3, 3, false);
  /* 3-D, dilated, strided, ceil_mode: windows clipped at both ends, cells
   * past the pads not counted */
  static const int64_t dx4[] = {1, 2, 5, 6, 7}, k4[] = {3, 2, 3}, dl4[] = {2, 1, 3},
                       p4[] = {2, 0, 1, 1, 2, 0}, s4[] = {2, 1, 2};
  kiln_attr_desc a4[] = {KILN_ATTR_IS("kernel_shape", k4, 3), KILN_ATTR_IS("dilations", dl4, 3),
                         KILN_ATTR_IS("pads", p4, 6), KILN_ATTR_IS("strides", s4, 3),
                         KILN_ATTR_I("ceil_mode", 1), KILN_ATTR_I("count_include_pad", 1)};
  pool_pair(5, dx4, a4, 6, false);
}
END_TEST

START_TEST(softmax_reduce) {
  tg t;
  tg_init(&t);
  kiln_value *x = tg_input(&t, "x", KILN_F32, 1, d3);
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Softmax, &x, 1, NULL, 0));
  float xv[] = {1, 2, 3};
  const void *ins[] = {xv};
  /* e^k / (e + e^2 + e^3) */
  const float want[] = {0.0900305732f, 0.244728471f, 0.665240956f};
  tg_check(&t, ins, 1e-6, want, 3);
  tg_free(&t);
  static const int64_t d[] = {3, 4, 5}, ax[] = {0, 2};
  tg_init(&t);
  x = tg_input(&t, "x", KILN_F32, 3, d);
  kiln_attr_desc a1 = KILN_ATTR_I("axis", 1);
  kiln_attr_desc ra[] = {KILN_ATTR_IS("axes", ax, 2), KILN_ATTR_I("keepdims", 0)};
  tg_output(&t, "sm", tg_node(&t, KILN_NODE_Softmax, &x, 1, &a1, 1));
  tg_output(&t, "lsm", tg_node(&t, KILN_NODE_LogSoftmax, &x, 1, &a1, 1));
  tg_output(&t, "sum", tg_node(&t, KILN_NODE_ReduceSum, &x, 1, ra, 2));
  tg_output(&t, "max", tg_node(&t, KILN_NODE_ReduceMax, &x, 1, ra, 1));
  tg_output(&t, "mean", tg_node(&t, KILN_NODE_ReduceMean, &x, 1, ra, 2));
  tg_output(&t, "lse", tg_node(&t, KILN_NODE_ReduceLogSumExp, &x, 1, ra, 2));
  tg_output(&t, "am", tg_node(&t, KILN_NODE_ArgMax, &x, 1, &a1, 1));
  tg_check(&t, NULL, 1e-5, NULL, 0);
  tg_free(&t);
}
END_TEST

START_TEST(movement) {
  static const int64_t d[] = {2, 3, 4}, perm[] = {2, 0, 1};
  static const int64_t st[] = {1, -1}, en[] = {3, -100}, axs[] = {1, 2}, steps[] = {1, -2};
  static const int64_t pads[] = {0, 1, 2, 1, 0, 0};
  tg t;
  tg_init(&t);
  kiln_value *x = tg_input(&t, "x", KILN_F32, 3, d);
  kiln_attr_desc ap = KILN_ATTR_IS("perm", perm, 3);
  tg_output(&t, "tr", tg_node(&t, KILN_NODE_Transpose, &x, 1, &ap, 1));
  kiln_attr_desc as[] = {KILN_ATTR_IS("starts", st, 2), KILN_ATTR_IS("ends", en, 2),
                         KILN_ATTR_IS("axes", axs, 2), KILN_ATTR_IS("steps", steps, 2)};
  tg_output(&t, "sl", tg_node(&t, KILN_NODE_Slice, &x, 1, as, 4));
  kiln_value *xx[] = {x, x};
  kiln_attr_desc ax = KILN_ATTR_I("axis", 1);
  tg_output(&t, "cat", tg_node(&t, KILN_NODE_Concat, xx, 2, &ax, 1));
  kiln_attr_desc apad[] = {KILN_ATTR_IS("pads", pads, 6), KILN_ATTR_S("mode", "reflect")};
  tg_output(&t, "pad", tg_node(&t, KILN_NODE_Pad, &x, 1, apad, 2));
  int64_t iv[] = {2, 0, -1};
  static const int64_t di[] = {3};
  kiln_value *xi[] = {x, tg_const(&t, KILN_I64, 1, di, iv)};
  kiln_attr_desc ag = KILN_ATTR_I("axis", 2);
  tg_output(&t, "gat", tg_node(&t, KILN_NODE_Gather, xi, 2, &ag, 1));
  tg_check(&t, NULL, 0, NULL, 0);
  tg_free(&t);
  /* hand-computed transpose of a 2x3 */
  tg_init(&t);
  x = tg_input(&t, "x", KILN_F32, 2, d23);
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Transpose, &x, 1, NULL, 0));
  float xv[] = {1, 2, 3, 4, 5, 6};
  const void *ins[] = {xv};
  const float want[] = {1, 4, 2, 5, 3, 6};
  tg_check(&t, ins, 0, want, 6);
  tg_free(&t);
}
END_TEST

START_TEST(cumsum_depth) {
  tg t;
  tg_init(&t);
  kiln_value *x = tg_input(&t, "x", KILN_F32, 2, d23);
  kiln_attr_desc ac[] = {KILN_ATTR_I("axis", 1), KILN_ATTR_I("reverse", 1)};
  tg_output(&t, "y", tg_node(&t, KILN_NODE_CumSum, &x, 1, ac, 2));
  float xv[] = {1, 2, 3, 4, 5, 6};
  const void *ins[] = {xv};
  const float want[] = {6, 5, 3, 15, 11, 6};
  tg_check(&t, ins, 0, want, 6);
  tg_free(&t);
  static const int64_t d[] = {1, 8, 2, 3};
  tg_init(&t);
  x = tg_input(&t, "x", KILN_F32, 4, d);
  kiln_attr_desc ab[] = {KILN_ATTR_I("blocksize", 2), KILN_ATTR_S("mode", "CRD")};
  kiln_value *ds = tg_node(&t, KILN_NODE_DepthToSpace, &x, 1, ab, 2);
  tg_output(&t, "d2s", ds);
  tg_output(&t, "s2d", tg_node(&t, KILN_NODE_SpaceToDepth, &ds, 1, ab, 1));
  tg_check(&t, NULL, 0, NULL, 0);
  tg_free(&t);
}
END_TEST

START_TEST(f64) {
  tg t;
  tg_init(&t);
  kiln_value *a = tg_input(&t, "a", KILN_F64, 2, d23), *b = tg_input(&t, "b", KILN_F64, 1, d3);
  kiln_value *ab[] = {a, b};
  kiln_value *m = tg_node(&t, KILN_NODE_Mul, ab, 2, NULL, 0);
  tg_output(&t, "y", tg_node(&t, KILN_NODE_Exp, &m, 1, NULL, 0));
  tg_check(&t, NULL, 1e-12, NULL, 0);
  tg_free(&t);
}
END_TEST

Suite *ocl_compute_suite(void) {
  Suite *s = suite_create("opencl_compute");
  TCase *tc = tcase_create("compute");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, add_broadcast);
  tcase_add_test(tc, unary_float);
  tcase_add_test(tc, integer_and_compare);
  tcase_add_test(tc, where_and_cast);
  tcase_add_test(tc, fused);
  tcase_add_test(tc, matmul);
  tcase_add_test(tc, gemm);
  tcase_add_test(tc, conv);
  tcase_add_test(tc, conv_tiled);
  tcase_add_test(tc, matmul_activation);
  tcase_add_test(tc, fusion);
  tcase_add_test(tc, pool);
  tcase_add_test(tc, softmax_reduce);
  tcase_add_test(tc, movement);
  tcase_add_test(tc, cumsum_depth);
  tcase_add_test(tc, f64);
  suite_add_tcase(s, tc);
  return s;
}
