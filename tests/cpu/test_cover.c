/* tests/cpu/test_cover.c: the kinds the cpu backend runs through its
 * generic kernels (libm unary kinds, Mod, Pow with mixed types, N-D and
 * transposed convolution, pooling with indices, losses, Resize, TopK,
 * scatters, Einsum, Det, recurrent cells, DynamicQuantizeLinear), each
 * compiled from a small graph and compared with the interpreter, plus a
 * few hand-computed results. Outputs are read as f32 (byte-exact compare
 * for u8 results). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "suites.h"

static void kc_vs_interp(const char *text, double rtol, double atol) {
  kt_run a, b, c;
  kt_run_text(text, "cpu", 1, &a);
  kt_run_text(text, "cpu", 2, &c);
  kt_run_text(text, "interpreter", 0, &b);
  kt_assert_close(&a, &b, rtol, atol);
  /* threads never change these kernels' results */
  for (uint32_t i = 0; i < a.n_out; i++)
    ck_assert_mem_eq(a.out[i], c.out[i], (size_t)a.n[i] * sizeof(float));
  kt_run_free(&a);
  kt_run_free(&b);
  kt_run_free(&c);
}

START_TEST(libm_unary_kinds) {
  static const char *const kinds[] = {"Atan",  "Asin", "Acos", "Acosh", "Asinh",
                                      "Atanh", "Cosh", "Sinh", "Tan"};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
    for (int f64 = 0; f64 < 2; f64++) {
      char text[512];
      /* f64 goes through a Cast so that the graph's input and output stay f32 */
      if (f64)
        snprintf(text, sizeof text,
                 "module @t\ninput %%x : f32[37]\nfunc @main {\n"
                 "  %%d : f64[37] = Cast(%%x) {to = f64}\n  %%y : f64[37] = %s(%%d)\n"
                 "  %%z : f32[37] = Cast(%%y) {to = f32}\n  output %%o = %%z\n}\n",
                 kinds[k]);
      else
        snprintf(text, sizeof text,
                 "module @t\ninput %%x : f32[37]\nfunc @main {\n"
                 "  %%y : f32[37] = %s(%%x)\n  output %%o = %%y\n}\n",
                 kinds[k]);
      kc_vs_interp(text, 1e-6, 1e-6);
    }
}
END_TEST

START_TEST(mod_hand_computed) {
  /* An i32 input reads -5, -2, 1, 4 (kt_run_text), so nothing folds.
   * fmod=0 follows the divisor's sign, fmod=1 the dividend's. */
  const char *text = "module @t\n"
                     "input %a : i32[4]\n"
                     "const %b : i32[4] = [3, -3, 3, -1]\n"
                     "const %h : f32[] = [0.5]\n"
                     "const %two : f32[] = [2]\n"
                     "func @main {\n"
                     "  %m : i32[4] = Mod(%a, %b)\n"
                     "  %f : i32[4] = Mod(%a, %b) {fmod = 1}\n"
                     "  %af : f32[4] = Cast(%a) {to = f32}\n"
                     "  %ah : f32[4] = Add(%af, %h)\n"
                     "  %g : f32[4] = Mod(%ah, %two) {fmod = 1}\n"
                     "  %mc : f32[4] = Cast(%m) {to = f32}\n"
                     "  %fc : f32[4] = Cast(%f) {to = f32}\n"
                     "  output %o1 = %mc\n  output %o2 = %fc\n  output %o3 = %g\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  const float m[4] = {1, -2, 1, 0}, f[4] = {-2, -2, 1, 0}, g[4] = {-0.5f, -1.5f, 1.5f, 0.5f};
  for (int i = 0; i < 4; i++) {
    ck_assert_float_eq(r.out[0][i], m[i]);
    ck_assert_float_eq(r.out[1][i], f[i]);
    ck_assert_float_eq(r.out[2][i], g[i]);
  }
  kt_run_free(&r);
}
END_TEST

START_TEST(pow_mixed_and_bitshift) {
  /* input -5, -2, 1: f32 ** i32, i64 ** i32 (a negative exponent of an
   * integer truncates: (-2)^-1 = 0), and u8 shifts of 5, 8, 11 (by 8: 0) */
  const char *text = "module @t\n"
                     "input %a : i32[3]\n"
                     "const %e : i32[3] = [3, -1, 5]\n"
                     "const %ten : i32[] = [10]\n"
                     "const %s : u8[3] = [3, 1, 8]\n"
                     "func @main {\n"
                     "  %b : f32[3] = Cast(%a) {to = f32}\n"
                     "  %ib : i64[3] = Cast(%a) {to = i64}\n"
                     "  %p : f32[3] = Pow(%b, %e)\n"
                     "  %q : i64[3] = Pow(%ib, %e)\n"
                     "  %a10 : i32[3] = Add(%a, %ten)\n"
                     "  %u : u8[3] = Cast(%a10) {to = u8}\n"
                     "  %l : u8[3] = BitShift(%u, %s) {direction = \"LEFT\"}\n"
                     "  %r : u8[3] = BitShift(%u, %s) {direction = \"RIGHT\"}\n"
                     "  %qc : f32[3] = Cast(%q) {to = f32}\n"
                     "  %lc : f32[3] = Cast(%l) {to = f32}\n"
                     "  %rc : f32[3] = Cast(%r) {to = f32}\n"
                     "  output %o1 = %p\n  output %o2 = %qc\n  output %o3 = %lc\n"
                     "  output %o4 = %rc\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  const float p[3] = {-125, -0.5f, 1}, q[3] = {-125, 0, 1}, l[3] = {40, 16, 0}, s[3] = {0, 4, 0};
  for (int i = 0; i < 3; i++) {
    ck_assert_float_eq(r.out[0][i], p[i]);
    ck_assert_float_eq(r.out[1][i], q[i]);
    ck_assert_float_eq(r.out[2][i], l[i]);
    ck_assert_float_eq(r.out[3][i], s[i]);
  }
  kt_run_free(&r);
}
END_TEST

START_TEST(conv_family_nd) {
  static const char *const texts[] = {
      /* 3-D convolution with pads and strides */
      "module @t\ninput %x : f32[1,2,5,6,4]\ninput %w : f32[3,2,3,3,2]\ninput %b : f32[3]\n"
      "func @main {\n  %y : f32[1,3,3,3,5] = Conv(%x, %w, %b) {pads = [1, 1, 1, 1, 1, 1], "
      "strides = [2, 2, 1]}\n  output %o = %y\n}\n",
      /* f64 2-D convolution, groups */
      "module @t\ninput %x : f32[2,4,5,5]\ninput %w : f32[2,2,3,3]\nfunc @main {\n"
      "  %xd : f64[2,4,5,5] = Cast(%x) {to = f64}\n  %wd : f64[2,2,3,3] = Cast(%w) {to = f64}\n"
      "  %y : f64[2,2,3,3] = Conv(%xd, %wd) {group = 2}\n  %z : f32[2,2,3,3] = Cast(%y) {to = "
      "f32}\n  output %o = %z\n}\n",
      /* transposed convolution: strides, pads, output_padding, groups, bias */
      "module @t\ninput %x : f32[1,4,3,4]\ninput %w : f32[4,3,3,3]\ninput %b : f32[6]\n"
      "func @main {\n  %y : f32[1,6,6,8] = ConvTranspose(%x, %w, %b) {group = 2, pads = [1, 1, "
      "1, 1], strides = [2, 2], output_padding = [1, 1]}\n  output %o = %y\n}\n",
      /* 1-D transposed with dilations */
      "module @t\ninput %x : f32[2,2,5]\ninput %w : f32[2,3,2]\nfunc @main {\n"
      "  %y : f32[2,3,7] = ConvTranspose(%x, %w) {dilations = [2]}\n  output %o = %y\n}\n",
      /* 3-D pools */
      "module @t\ninput %x : f32[1,2,5,5,5]\nfunc @main {\n  %y : f32[1,2,3,3,3] = "
      "MaxPool(%x) {kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1], strides = [2, 2, 2]}\n"
      "  %a : f32[1,2,3,3,3] = AveragePool(%x) {count_include_pad = 1, kernel_shape = [3, 3, "
      "3], pads = [1, 1, 1, 1, 1, 1], strides = [2, 2, 2]}\n  output %o = %y\n  output %p = "
      "%a\n}\n",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    kc_vs_interp(texts[i], 1e-5, 1e-5);
}
END_TEST

START_TEST(maxpool_indices_hand_computed) {
  /* x = c + in/100 with the i32 input (3k-5, under 0.45 in magnitude
   * after scaling), so the pattern c decides the maxima: 2x2 windows,
   * stride 2 over a 4x4 plane give 9, 8, 7, 5 at flat indices 1, 6, 8, 15
   * (row-major) or 4, 9, 2, 15 (storage_order 1: column-major) */
  const char *text = "module @t\n"
                     "input %in : i32[1,1,4,4]\n"
                     "const %c : f32[1,1,4,4] = [1, 9, 2, 3, 4, 5, 8, 6, 7, 0, 1, 1, 2, 3, 4, 5]\n"
                     "const %k : f32[] = [100]\n"
                     "func @main {\n"
                     "  %f : f32[1,1,4,4] = Cast(%in) {to = f32}\n"
                     "  %s : f32[1,1,4,4] = Div(%f, %k)\n"
                     "  %x : f32[1,1,4,4] = Add(%c, %s)\n"
                     "  %y : f32[1,1,2,2], %i : i64[1,1,2,2] = MaxPool(%x) {kernel_shape = [2, "
                     "2], strides = [2, 2]}\n"
                     "  %y2 : f32[1,1,2,2], %j : i64[1,1,2,2] = MaxPool(%x) {kernel_shape = [2, "
                     "2], storage_order = 1, strides = [2, 2]}\n"
                     "  %ic : f32[1,1,2,2] = Cast(%i) {to = f32}\n"
                     "  %jc : f32[1,1,2,2] = Cast(%j) {to = f32}\n"
                     "  output %o = %y\n  output %p = %ic\n  output %q = %jc\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  const float y[4] = {9, 8, 7, 5}, ri[4] = {1, 6, 8, 15}, ci[4] = {4, 9, 2, 15};
  for (int i = 0; i < 4; i++) {
    ck_assert_float_eq_tol(r.out[0][i], y[i], 0.5f);
    ck_assert_float_eq(r.out[1][i], ri[i]);
    ck_assert_float_eq(r.out[2][i], ci[i]);
  }
  kt_run_free(&r);
}
END_TEST

START_TEST(losses) {
  static const char *const texts[] = {
      "module @t\ninput %x : f32[3,5,2]\nconst %t : i64[3,2] = [0, 4, 2, 1, 1, 3]\n"
      "const %w : f32[5] = [1, 0.5, 2, 1.5, 0.25]\nfunc @main {\n"
      "  %l : f32[] = NegativeLogLikelihoodLoss(%x, %t, %w) {ignore_index = 1}\n"
      "  %n : f32[3,2] = NegativeLogLikelihoodLoss(%x, %t) {reduction = \"none\"}\n"
      "  output %o = %l\n  output %p = %n\n}\n",
      "module @t\ninput %x : f32[3,5,2]\nconst %t : i64[3,2] = [0, 4, 2, 1, 1, 3]\n"
      "func @main {\n  %l : f32[], %lp : f32[3,5,2] = SoftmaxCrossEntropyLoss(%x, %t) "
      "{reduction = \"sum\"}\n  output %o = %l\n  output %p = %lp\n}\n",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    kc_vs_interp(texts[i], 1e-5, 1e-6);
}
END_TEST

START_TEST(nll_hand_computed) {
  /* x = the i32 input as f32: [[-5, -2], [1, 4], [7, 10]]; targets 0, 2
   * (ignored), 0 with weights 2, 1: mean = (5*2 + -7*2) / (2 + 2) = -1 */
  const char *text = "module @t\n"
                     "input %in : i32[3,2]\n"
                     "const %t : i64[3] = [0, 2, 0]\n"
                     "const %w : f32[2] = [2, 1]\n"
                     "func @main {\n"
                     "  %x : f32[3,2] = Cast(%in) {to = f32}\n"
                     "  %l : f32[] = NegativeLogLikelihoodLoss(%x, %t, %w) {ignore_index = 2}\n"
                     "  output %o = %l\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  ck_assert_float_eq_tol(r.out[0][0], -1.0f, 1e-6f);
  kt_run_free(&r);
}
END_TEST

START_TEST(resize_modes) {
  static const char *const modes[] = {
      "mode = \"linear\"",
      "coordinate_transformation_mode = \"align_corners\", mode = \"linear\"",
      "mode = \"cubic\"",
      "cubic_coeff_a = -0.5, exclude_outside = 1, mode = \"cubic\"",
      ("coordinate_transformation_mode = \"asymmetric\", mode = \"nearest\", nearest_mode = "
       "\"floor\""),
      "coordinate_transformation_mode = \"pytorch_half_pixel\", mode = \"linear\"",
  };
  for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
    for (int up = 0; up < 2; up++) {
      char text[1024];
      snprintf(text, sizeof text,
               "module @t\ninput %%x : f32[1,2,4,6]\nfunc @main {\n"
               "  %%y : f32[1,2,%s] = Resize(%%x) {%s, scales = [1.0, 1.0, %s]}\n"
               "  output %%o = %%y\n}\n",
               up ? "8,9" : "2,3", modes[m], up ? "2.0, 1.5" : "0.5, 0.5");
      kc_vs_interp(text, 1e-5, 1e-5);
    }
  /* the separable kernel's two orders over several blocks of output rows:
   * a segmentation head's 8x upsampling and a cubic growth in height
   * (columns first), a shrink by 3 (rows first) */
  static const char *const big[] = {
      "f32[1,3,28,28]", "f32[1,3,224,224]", "mode = \"linear\", scales = [1.0, 1.0, 8.0, 8.0]",
      "f32[2,1,7,40]", "f32[2,1,49,41]",
      "mode = \"cubic\", scales = [1.0, 1.0, 7.0, 1.025]",
      "f32[1,2,60,45]", "f32[1,2,20,15]",
      "mode = \"linear\", scales = [1.0, 1.0, 0.33333334, 0.33333334]"};
  for (size_t c = 0; c < sizeof big / sizeof *big; c += 3) {
    char text[1024];
    snprintf(text, sizeof text,
             "module @t\ninput %%x : %s\nfunc @main {\n"
             "  %%y : %s = Resize(%%x) {%s}\n  output %%o = %%y\n}\n",
             big[c], big[c + 1], big[c + 2]);
    kc_vs_interp(text, 1e-5, 1e-5);
  }
}
END_TEST

START_TEST(resize_hand_computed) {
  /* linear, half_pixel, [-5, -2] from 2 to 4: source coordinates -0.25,
   * 0.25, 0.75, 1.25 clamped at the edges: -5, -4.25, -2.75, -2 */
  const char *text = "module @t\ninput %in : i32[2]\nfunc @main {\n"
                     "  %x : f32[2] = Cast(%in) {to = f32}\n"
                     "  %y : f32[4] = Resize(%x) {mode = \"linear\", scales = [2.0]}\n"
                     "  output %o = %y\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  const float want[4] = {-5, -4.25f, -2.75f, -2};
  for (int i = 0; i < 4; i++)
    ck_assert_float_eq_tol(r.out[0][i], want[i], 1e-6f);
  kt_run_free(&r);
  /* infinities beside taps of weight 0 (align_corners puts the first and
   * last outputs exactly on an input, the second tap weighing 0): skipped,
   * not 0 * inf = NaN.
   * x = [[-5, -inf], [-inf, 4]] grown to 4x4: row 0 starts -5, then -inf;
   * the corner outputs are the corner inputs. */
  const char *inf = "module @t\ninput %in : i32[1,1,2,2]\n"
                    "const %c : f32[1,1,2,2] = [1, inf, -inf, 1]\nfunc @main {\n"
                    "  %x : f32[1,1,2,2] = Cast(%in) {to = f32}\n"
                    "  %m : f32[1,1,2,2] = Mul(%x, %c)\n"
                    "  %y : f32[1,1,4,4] = Resize(%m) {coordinate_transformation_mode = "
                    "\"align_corners\", mode = \"linear\", scales = [1.0, 1.0, 2.0, 2.0]}\n"
                    "  output %o = %y\n}\n";
  for (uint32_t t = 1; t <= 2; t++) {
    kt_run_text(inf, "cpu", t, &r);
    ck_assert_float_eq(r.out[0][0], -5.0f);
    ck_assert(isinf(r.out[0][1]) && r.out[0][1] < 0);
    ck_assert(isinf(r.out[0][12]) && r.out[0][12] < 0);
    ck_assert_float_eq(r.out[0][15], 4.0f);
    kt_run_free(&r);
  }
}
END_TEST

START_TEST(selection_and_scatter) {
  static const char *const texts[] = {
      "module @t\ninput %x : f32[3,7,2]\nfunc @main {\n"
      "  %v : f32[3,3,2], %i : i64[3,3,2] = TopK(%x) {axis = 1, k = 3}\n"
      "  %s : f32[3,7,1], %j : i64[3,7,1] = TopK(%x) {axis = -1, k = 1, largest = 0}\n"
      "  output %o = %v\n  output %p = %s\n}\n",
      "module @t\ninput %d : f32[3,4]\ninput %u : f32[2,4]\n"
      "const %i : i64[2,4] = [0, 2, 1, -1, 2, 2, 0, 0]\nfunc @main {\n"
      "  %y : f32[3,4] = ScatterElements(%d, %i, %u) {axis = 0, reduction = \"add\"}\n"
      "  %z : f32[3,4] = ScatterElements(%d, %i, %u) {axis = 0}\n"
      "  output %o = %y\n  output %p = %z\n}\n",
      "module @t\ninput %d : f32[4,3,2]\ninput %u : f32[2,3,2]\n"
      "const %i : i64[2,1] = [3, 1]\nfunc @main {\n"
      "  %y : f32[4,3,2] = ScatterND(%d, %i, %u) {reduction = \"mul\"}\n"
      "  %z : f32[4,3,2] = ScatterND(%d, %i, %u)\n"
      "  output %o = %y\n  output %p = %z\n}\n",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    kc_vs_interp(texts[i], 0, 0);
}
END_TEST

START_TEST(topk_hand_computed) {
  /* Floor(c + in/100) = [2, 0, 4, 1, 5, 4]: the top 3 are 5, 4, 4 at 4, 2,
   * 5 (a tie keeps the lower index first) */
  const char *text = "module @t\ninput %in : i32[6]\n"
                     "const %c : f32[6] = [3, 1, 4, 1, 5, 4]\nconst %k : f32[] = [100]\n"
                     "func @main {\n"
                     "  %f : f32[6] = Cast(%in) {to = f32}\n  %s : f32[6] = Div(%f, %k)\n"
                     "  %a : f32[6] = Add(%c, %s)\n  %x : f32[6] = Floor(%a)\n"
                     "  %v : f32[3], %i : i64[3] = TopK(%x) {k = 3}\n"
                     "  %ic : f32[3] = Cast(%i) {to = f32}\n"
                     "  output %o = %v\n  output %p = %ic\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  const float v[3] = {5, 4, 4}, i[3] = {4, 2, 5};
  for (int k = 0; k < 3; k++) {
    ck_assert_float_eq(r.out[0][k], v[k]);
    ck_assert_float_eq(r.out[1][k], i[k]);
  }
  kt_run_free(&r);
}
END_TEST

/* 8-bit sum-like reductions wrap as the type does. The i32 input reads
 * -5, -2, 1, 4: as u8 251, 254, 1, 4, sum 510 = 254 (mod 256); times 10 as
 * i8 -50, -20, 10, 40: product 400000 = -128, L1 120, sum of squares
 * 4600 = -8 (mod 256, as i8). */
START_TEST(narrow_int_reductions_hand_computed) {
  const char *text = "module @t\ninput %in : i32[4]\nconst %ten : i32[] = [10]\n"
                     "func @main {\n"
                     "  %u : u8[4] = Cast(%in) {to = u8}\n"
                     "  %s : u8[] = ReduceSum(%u) {keepdims = 0}\n"
                     "  %t : i32[4] = Mul(%in, %ten)\n  %b : i8[4] = Cast(%t) {to = i8}\n"
                     "  %p : i8[] = ReduceProd(%b) {keepdims = 0}\n"
                     "  %l : i8[] = ReduceL1(%b) {keepdims = 0}\n"
                     "  %q : i8[] = ReduceSumSquare(%b) {keepdims = 0}\n"
                     "  %sf : f32[] = Cast(%s) {to = f32}\n  %pf : f32[] = Cast(%p) {to = f32}\n"
                     "  %lf : f32[] = Cast(%l) {to = f32}\n  %qf : f32[] = Cast(%q) {to = f32}\n"
                     "  output %o1 = %sf\n  output %o2 = %pf\n  output %o3 = %lf\n"
                     "  output %o4 = %qf\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  ck_assert_float_eq(r.out[0][0], 254);
  ck_assert_float_eq(r.out[1][0], -128);
  ck_assert_float_eq(r.out[2][0], 120);
  ck_assert_float_eq(r.out[3][0], -8);
  kt_run_free(&r);
}
END_TEST

START_TEST(einsum_det_dynquant) {
  static const char *const texts[] = {
      "module @t\ninput %a : f32[2,3,4]\ninput %b : f32[2,4,5]\nfunc @main {\n"
      "  %y : f32[2,3,5] = Einsum(%a, %b) {equation = \"bij,bjk->bik\"}\n"
      "  output %o = %y\n}\n",
      "module @t\ninput %a : f32[2,3,3]\nfunc @main {\n"
      "  %y : f32[2,3] = Einsum(%a) {equation = \"...ii->...i\"}\n"
      "  %t : f32[3,2,3] = Einsum(%a) {equation = \"bij->jbi\"}\n"
      "  %s : f32[] = Einsum(%a, %a) {equation = \"bij,bij\"}\n"
      "  output %o = %y\n  output %p = %t\n  output %q = %s\n}\n",
      "module @t\ninput %a : f32[3,4,4]\nfunc @main {\n"
      "  %d : f32[3] = Det(%a)\n  output %o = %d\n}\n",
      "module @t\ninput %x : f32[5,7]\nfunc @main {\n"
      "  %y : u8[5,7], %s : f32[], %z : u8[] = DynamicQuantizeLinear(%x)\n"
      "  output %o = %y\n  output %p = %s\n  output %q = %z\n}\n",
      /* blocked quantization (blocks of 2 along axis 1) and back */
      "module @t\ninput %x : f32[3,4]\nconst %s : f32[3,2] = [0.02, 0.05, 0.1, 0.01, 0.03, "
      "0.04]\nconst %z : u8[3,2] = [128, 100, 3, 250, 0, 60]\nfunc @main {\n"
      "  %q : u8[3,4] = QuantizeLinear(%x, %s, %z) {axis = 1, block_size = 2}\n"
      "  %d : f32[3,4] = DequantizeLinear(%q, %s, %z) {axis = 1, block_size = 2}\n"
      "  output %o = %q\n  output %p = %d\n}\n",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    kc_vs_interp(texts[i], 1e-5, 1e-5);
}
END_TEST

START_TEST(det_hand_computed) {
  /* [[-5, -2], [1, 4]] -> -18; [[7, 10], [13, 16]] -> -18 (a pivot swap) */
  const char *text = "module @t\ninput %in : i32[2,2,2]\nfunc @main {\n"
                     "  %a : f32[2,2,2] = Cast(%in) {to = f32}\n"
                     "  %d : f32[2] = Det(%a)\n  output %o = %d\n}\n";
  kt_run r;
  kt_run_text(text, "cpu", 1, &r);
  ck_assert_float_eq_tol(r.out[0][0], -18.0f, 1e-5f);
  ck_assert_float_eq_tol(r.out[0][1], -18.0f, 1e-5f);
  kt_run_free(&r);
}
END_TEST

START_TEST(recurrent_cells) {
  static const char *const texts[] = {
      "module @t\ninput %x : f32[4,2,3]\ninput %w : f32[2,20,3]\ninput %r : f32[2,20,5]\n"
      "input %b : f32[2,40]\nfunc @main {\n"
      "  %y : f32[4,2,2,5], %h : f32[2,2,5], %c : f32[2,2,5] = LSTM(%x, %w, %r, %b) "
      "{direction = \"bidirectional\", hidden_size = 5}\n"
      "  output %o = %y\n  output %p = %h\n  output %q = %c\n}\n",
      "module @t\ninput %x : f32[2,4,3]\ninput %w : f32[1,15,3]\ninput %r : f32[1,15,5]\n"
      "const %l : i32[2] = [4, 2]\nfunc @main {\n"
      "  %y : f32[2,4,1,5], %h : f32[2,1,5] = GRU(%x, %w, %r, _, %l) {hidden_size = 5, layout "
      "= 1, linear_before_reset = 1}\n"
      "  output %o = %y\n  output %p = %h\n}\n",
      "module @t\ninput %x : f32[4,2,3]\ninput %w : f32[1,5,3]\ninput %r : f32[1,5,5]\n"
      "func @main {\n"
      "  %y : f32[4,1,2,5], %h : f32[1,2,5] = RNN(%x, %w, %r) {activations = \"Relu\", "
      "direction = \"reverse\", hidden_size = 5}\n"
      "  output %o = %y\n  output %p = %h\n}\n",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    kc_vs_interp(texts[i], 1e-5, 1e-5);
}
END_TEST

Suite *kcpu_cover_suite(void) {
  Suite *s = suite_create("cpu-cover");
  TCase *tc = tcase_create("cover");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, libm_unary_kinds);
  tcase_add_test(tc, mod_hand_computed);
  tcase_add_test(tc, pow_mixed_and_bitshift);
  tcase_add_test(tc, conv_family_nd);
  tcase_add_test(tc, maxpool_indices_hand_computed);
  tcase_add_test(tc, losses);
  tcase_add_test(tc, nll_hand_computed);
  tcase_add_test(tc, resize_modes);
  tcase_add_test(tc, resize_hand_computed);
  tcase_add_test(tc, selection_and_scatter);
  tcase_add_test(tc, topk_hand_computed);
  tcase_add_test(tc, einsum_det_dynquant);
  tcase_add_test(tc, narrow_int_reductions_hand_computed);
  tcase_add_test(tc, det_hand_computed);
  tcase_add_test(tc, recurrent_cells);
  suite_add_tcase(s, tc);
  return s;
}
