/* tests/ir/test_ops.c: the operator semantics of kiln/ops.h, against values
 * worked out by hand from the ONNX operator definitions: window padding
 * under each auto_pad (ConvTranspose's floor-halved totals included),
 * Resize taps per coordinate mode and filter (antialiasing and
 * exclude_outside included), the fused activation list, Einsum's label
 * ids (diagonals, implicit outputs, broadcast ellipses), Slice's clamping,
 * and the messages
 * that name the kind and the culprit. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "kiln/ops.h"
#include "kiln/ops_ref.h"
#include "suites.h"

static kiln_type ty(uint32_t rank, const int64_t *dims) {
  kiln_type t;
  ck_assert_ptr_null(kiln_type_make(KILN_F32, rank, dims, &t));
  return t;
}
#define TY(...) ty(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})
#define ATTRS(...) (kiln_attr_desc[]){__VA_ARGS__}, sizeof((kiln_attr_desc[]){__VA_ARGS__}) / sizeof(kiln_attr_desc)
#define INTS(n, ...) KILN_ATTR_IS(n, ((int64_t[]){__VA_ARGS__}), sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define FLOATS(n, ...) KILN_ATTR_FS(n, ((double[]){__VA_ARGS__}), sizeof((double[]){__VA_ARGS__}) / sizeof(double))

static kiln_attrs *mk(const kiln_attr_desc *d, uint32_t n) {
  kiln_attrs *a = NULL;
  ck_assert_ptr_null(kiln_attrs_create(NULL, d, n, &a));
  return a;
}

static kiln_status window(const char *kind, kiln_attrs *a, kiln_type x, kiln_type y,
                          const int64_t *k, bool tr, kiln_window *w) {
  kiln_status s = kiln_window_decode(kind, a, &x, &y, k, tr, w);
  kiln_attrs_destroy(NULL, a);
  return s;
}

static void expect_fail(kiln_status s, const char *msg) {
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  ck_assert_str_eq(kiln_status_message(s), msg);
  kiln_status_free(s);
}

START_TEST(window_defaults) {
  kiln_window w;
  static const int64_t k[] = {3, 3};
  ck_assert_ptr_null(window("Conv", mk(NULL, 0), TY(1, 1, 5, 5), TY(1, 1, 3, 3), k, false, &w));
  ck_assert_uint_eq(w.rank, 2);
  ck_assert_int_eq(w.auto_pad, KILN_AUTO_PAD_NOTSET);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(w.in[i], 5);
    ck_assert_int_eq(w.out[i], 3);
    ck_assert_int_eq(w.kernel[i], 3);
    ck_assert_int_eq(w.stride[i], 1);
    ck_assert_int_eq(w.dilation[i], 1);
    ck_assert_int_eq(w.pad_begin[i], 0);
    ck_assert_int_eq(w.pad_end[i], 0);
  }
  ck_assert_int_eq(kiln_window_span(&w, 0), 3);
}
END_TEST

START_TEST(window_pads_and_same) {
  kiln_window w;
  /* explicit pads: begins first, then ends */
  ck_assert_ptr_null(window("MaxPool", mk(ATTRS(INTS("kernel_shape", 2, 2), INTS("pads", 1, 2, 3, 4))),
                            TY(1, 1, 4, 4), TY(1, 1, 7, 9), NULL, false, &w));
  ck_assert_int_eq(w.pad_begin[0], 1);
  ck_assert_int_eq(w.pad_begin[1], 2);
  ck_assert_int_eq(w.pad_end[0], 3);
  ck_assert_int_eq(w.pad_end[1], 4);
  /* SAME, stride 2, kernel 3: totals (3-1)*2+3-5 = 2 and (3-1)*2+3-6 = 1 */
  static const int64_t k[] = {3, 3};
  ck_assert_ptr_null(window("Conv", mk(ATTRS(KILN_ATTR_S("auto_pad", "SAME_UPPER"), INTS("strides", 2, 2))),
                            TY(1, 1, 5, 6), TY(1, 1, 3, 3), k, false, &w));
  ck_assert_int_eq(w.pad_begin[0], 1);
  ck_assert_int_eq(w.pad_end[0], 1);
  ck_assert_int_eq(w.pad_begin[1], 0); /* the odd cell goes at the end */
  ck_assert_int_eq(w.pad_end[1], 1);
  ck_assert_ptr_null(window("Conv", mk(ATTRS(KILN_ATTR_S("auto_pad", "SAME_LOWER"), INTS("strides", 2, 2))),
                            TY(1, 1, 5, 6), TY(1, 1, 3, 3), k, false, &w));
  ck_assert_int_eq(w.pad_begin[1], 1);
  ck_assert_int_eq(w.pad_end[1], 0);
  /* VALID ignores pads; dilation widens the span */
  ck_assert_ptr_null(window("Conv", mk(ATTRS(KILN_ATTR_S("auto_pad", "VALID"), INTS("pads", 1, 1, 1, 1),
                                             INTS("dilations", 2, 1))),
                            TY(1, 1, 5, 5), TY(1, 1, 1, 3), k, false, &w));
  ck_assert_int_eq(w.pad_begin[0] + w.pad_end[0] + w.pad_begin[1] + w.pad_end[1], 0);
  ck_assert_int_eq(kiln_window_span(&w, 0), 5);
  ck_assert_int_eq(kiln_window_span(&w, 1), 3);
}
END_TEST

START_TEST(window_transposed) {
  kiln_window w;
  static const int64_t k[] = {3};
  /* total = 2*(3-1) + 0 + 3 - 8 = -1, halved by floor: begin 0, end -1 */
  ck_assert_ptr_null(window("ConvTranspose", mk(ATTRS(INTS("strides", 2), INTS("output_shape", 8))),
                            TY(1, 1, 3), TY(1, 1, 8), k, true, &w));
  ck_assert(w.transposed);
  ck_assert_int_eq(w.pad_begin[0], 0);
  ck_assert_int_eq(w.pad_end[0], -1);
  /* SAME_UPPER: total = 2*2 + 1 + 3 - 6 = 2 with output_padding 1 */
  ck_assert_ptr_null(window("ConvTranspose",
                            mk(ATTRS(INTS("strides", 2), INTS("output_padding", 1),
                                     KILN_ATTR_S("auto_pad", "SAME_UPPER"))),
                            TY(1, 1, 3), TY(1, 1, 6), k, true, &w));
  ck_assert_int_eq(w.output_padding[0], 1);
  ck_assert_int_eq(w.pad_begin[0], 1);
  ck_assert_int_eq(w.pad_end[0], 1);
  /* without output_shape or SAME, the pads are taken as given */
  ck_assert_ptr_null(window("ConvTranspose", mk(ATTRS(INTS("pads", 1, 0))), TY(1, 1, 3), TY(1, 1, 4),
                            k, true, &w));
  ck_assert_int_eq(w.pad_begin[0], 1);
  ck_assert_int_eq(w.pad_end[0], 0);
}
END_TEST

START_TEST(window_errors) {
  kiln_window w;
  static const int64_t k[] = {3, 3};
  expect_fail(window("Conv", mk(ATTRS(INTS("strides", 1, 1, 1))), TY(1, 1, 5, 5), TY(1, 1, 3, 3), k,
                     false, &w),
              "Conv: attribute 'strides' has 3 entries; expected 2");
  expect_fail(window("Conv", mk(ATTRS(INTS("dilations", 1, 0))), TY(1, 1, 5, 5), TY(1, 1, 3, 3), k,
                     false, &w),
              "Conv: attribute 'dilations': entry 1 = 0 must be >= 1");
  expect_fail(window("MaxPool", mk(ATTRS(INTS("kernel_shape", 2, 2), KILN_ATTR_S("auto_pad", "SAME"))),
                     TY(1, 1, 5, 5), TY(1, 1, 3, 3), NULL, false, &w),
              "MaxPool: unknown auto_pad 'SAME'");
  expect_fail(window("AveragePool", mk(NULL, 0), TY(1, 1, 5, 5), TY(1, 1, 3, 3), NULL, false, &w),
              "AveragePool: attribute 'kernel_shape' is required");
  expect_fail(window("MaxPool", mk(ATTRS(INTS("kernel_shape", 2))), TY(5, 5), TY(3, 3), NULL, false, &w),
              "MaxPool: input and result need one rank of at least 3");
}
END_TEST

static kiln_status resize(kiln_node_kind kind, kiln_attrs *a, kiln_type x, kiln_type y,
                          kiln_resize *r) {
  kiln_status s = kiln_resize_decode(kind, a, &x, &y, r);
  kiln_attrs_destroy(NULL, a);
  return s;
}

/* The taps of result index o on axis d must be exactly these. */
static void expect_taps(const kiln_resize *r, uint32_t d, int64_t o, int n, const int64_t *idx,
                        const double *w) {
  double xo;
  ck_assert(kiln_resize_source(r, d, o, &xo));
  ck_assert_int_eq(kiln_resize_tap_count(r, d), n);
  int64_t gi[KILN_RESIZE_MAX_TAPS];
  double gw[KILN_RESIZE_MAX_TAPS];
  kiln_resize_taps(r, d, xo, gi, gw);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(gi[i], idx[i]);
    ck_assert_double_eq_tol(gw[i], w[i], 1e-12);
  }
}

START_TEST(resize_linear_and_nearest) {
  kiln_resize r;
  /* half_pixel, 4 -> 8: result 0 reads -0.25 (clamped left tap), result 3 reads 1.25 */
  ck_assert_ptr_null(resize(KILN_NODE_Resize, mk(ATTRS(KILN_ATTR_S("mode", "linear"), FLOATS("scales", 1, 2))),
                            TY(1, 4), TY(1, 8), &r));
  ck_assert_double_eq(r.scale[0], 1);
  ck_assert_double_eq(r.scale[1], 2);
  expect_taps(&r, 1, 0, 2, (int64_t[]){0, 0}, (double[]){0.25, 0.75});
  expect_taps(&r, 1, 3, 2, (int64_t[]){1, 2}, (double[]){0.75, 0.25});
  /* nearest, asymmetric, sizes 3 -> 4 (scale 4/3): 1 reads 0.75 -> 1; 2 reads 1.5 */
  ck_assert_ptr_null(resize(KILN_NODE_Resize,
                            mk(ATTRS(KILN_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                                     INTS("sizes", 4))),
                            TY(3), TY(4), &r));
  expect_taps(&r, 0, 1, 1, (int64_t[]){1}, (double[]){1});
  expect_taps(&r, 0, 2, 1, (int64_t[]){1}, (double[]){1}); /* round_prefer_floor */
  ck_assert_ptr_null(resize(KILN_NODE_Resize,
                            mk(ATTRS(KILN_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                                     KILN_ATTR_S("nearest_mode", "round_prefer_ceil"), INTS("sizes", 4))),
                            TY(3), TY(4), &r));
  expect_taps(&r, 0, 2, 1, (int64_t[]){2}, (double[]){1});
  /* Upsample: asymmetric, floor */
  ck_assert_ptr_null(resize(KILN_NODE_Upsample, mk(ATTRS(FLOATS("scales", 1, 3))), TY(1, 2), TY(1, 6), &r));
  ck_assert_int_eq(r.coord, KILN_RESIZE_ASYMMETRIC);
  expect_taps(&r, 1, 2, 1, (int64_t[]){0}, (double[]){1}); /* 2/3 floors to 0 */
  expect_taps(&r, 1, 3, 1, (int64_t[]){1}, (double[]){1});
}
END_TEST

START_TEST(resize_cubic_and_antialias) {
  kiln_resize r;
  /* cubic, A = -0.75, asymmetric x2: result 1 reads 0.5, Keys' weights at
   * 1.5, 0.5, 0.5, 1.5 are -0.09375, 0.59375, 0.59375, -0.09375 */
  ck_assert_ptr_null(resize(KILN_NODE_Resize,
                            mk(ATTRS(KILN_ATTR_S("mode", "cubic"),
                                     KILN_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                                     FLOATS("scales", 2))),
                            TY(4), TY(8), &r));
  expect_taps(&r, 0, 1, 4, (int64_t[]){0, 0, 1, 2}, (double[]){-0.09375, 0.59375, 0.59375, -0.09375});
  ck_assert_double_eq_tol(kiln_resize_cubic(-0.75, 1.5), -0.09375, 1e-15);
  ck_assert_double_eq_tol(kiln_resize_cubic(-0.75, -0.5), 0.59375, 1e-15);
  ck_assert_double_eq(kiln_resize_cubic(-0.75, 2.5), 0);
  /* exclude_outside drops the tap at -1 and renormalizes */
  ck_assert_ptr_null(resize(KILN_NODE_Resize,
                            mk(ATTRS(KILN_ATTR_S("mode", "cubic"), KILN_ATTR_I("exclude_outside", 1),
                                     KILN_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                                     FLOATS("scales", 2))),
                            TY(4), TY(8), &r));
  expect_taps(&r, 0, 1, 4, (int64_t[]){0, 0, 1, 2},
              (double[]){0, 0.59375 / 1.09375, 0.59375 / 1.09375, -0.09375 / 1.09375});
  /* antialiased linear 8 -> 4: four taps at distances -0.75 .. 0.75 */
  ck_assert_ptr_null(resize(KILN_NODE_Resize,
                            mk(ATTRS(KILN_ATTR_S("mode", "linear"), KILN_ATTR_I("antialias", 1),
                                     FLOATS("scales", 0.5))),
                            TY(8), TY(4), &r));
  ck_assert(r.antialias);
  expect_taps(&r, 0, 0, 4, (int64_t[]){0, 0, 1, 2}, (double[]){0.125, 0.375, 0.375, 0.125});
  /* nearest ignores antialias */
  ck_assert_ptr_null(resize(KILN_NODE_Resize, mk(ATTRS(KILN_ATTR_I("antialias", 1), FLOATS("scales", 0.5))),
                            TY(8), TY(4), &r));
  ck_assert(!r.antialias);
  ck_assert_int_eq(kiln_resize_tap_count(&r, 0), 1);
}
END_TEST

START_TEST(resize_policies_and_crop) {
  kiln_resize r;
  /* not_larger: one scale, the smaller of 2/4 and 2/8, on the listed axes */
  ck_assert_ptr_null(resize(KILN_NODE_Resize,
                            mk(ATTRS(KILN_ATTR_S("keep_aspect_ratio_policy", "not_larger"),
                                     INTS("axes", 2, -1), INTS("sizes", 2, 2))),
                            TY(1, 1, 4, 8), TY(1, 1, 1, 2), &r));
  ck_assert_double_eq(r.scale[0], 1);
  ck_assert_double_eq(r.scale[2], 0.25);
  ck_assert_double_eq(r.scale[3], 0.25);
  /* tf_crop_and_resize: roi [0.5, 1.5] of 3 cells, 3 results: 1, 2, 3 (outside) */
  ck_assert_ptr_null(resize(KILN_NODE_Resize,
                            mk(ATTRS(KILN_ATTR_S("coordinate_transformation_mode", "tf_crop_and_resize"),
                                     FLOATS("roi", 0.5, 1.5), INTS("sizes", 3),
                                     KILN_ATTR_F("extrapolation_value", -1))),
                            TY(3), TY(3), &r));
  double xo;
  ck_assert(kiln_resize_source(&r, 0, 1, &xo));
  ck_assert_double_eq_tol(xo, 2, 1e-12);
  ck_assert(!kiln_resize_source(&r, 0, 2, &xo));
  ck_assert_double_eq(r.extrapolation, -1);
}
END_TEST

START_TEST(resize_errors) {
  kiln_resize r;
  expect_fail(resize(KILN_NODE_Resize, mk(ATTRS(KILN_ATTR_S("mode", "bicubic"))), TY(4), TY(8), &r),
              "Resize: unknown mode 'bicubic'");
  expect_fail(resize(KILN_NODE_Resize, mk(ATTRS(FLOATS("scales", 1, 2))), TY(4), TY(8), &r),
              "Resize: scales has 2 entries, expected 1");
  expect_fail(resize(KILN_NODE_Resize, mk(ATTRS(FLOATS("scales", 0))), TY(4), TY(8), &r),
              "Resize: scale of axis 0 is not positive");
  expect_fail(resize(KILN_NODE_Resize,
                     mk(ATTRS(KILN_ATTR_S("coordinate_transformation_mode", "tf_crop_and_resize"),
                              FLOATS("scales", 2))),
                     TY(4), TY(8), &r),
              "Resize: tf_crop_and_resize needs roi with 2 entries, got 0");
  expect_fail(resize(KILN_NODE_Upsample, mk(ATTRS(FLOATS("scales", 2))), TY(1, 4), TY(1, 8), &r),
              "Upsample: scales has 1 entries, rank is 2");
}
END_TEST

START_TEST(fused_activations) {
  kiln_fused_act a;
  kiln_attrs *at = mk(NULL, 0);
  ck_assert_ptr_null(kiln_fused_act_decode("Conv", at, &a));
  ck_assert_int_eq(a.kind, KILN_FUSED_ACT_NONE);
  kiln_attrs_destroy(NULL, at);
  at = mk(ATTRS(KILN_ATTR_S("activation", "LeakyRelu")));
  ck_assert_ptr_null(kiln_fused_act_decode("Gemm", at, &a));
  ck_assert_int_eq(a.kind, KILN_FUSED_ACT_LEAKY_RELU);
  ck_assert_double_eq(a.alpha, 0.01);
  kiln_attrs_destroy(NULL, at);
  at = mk(ATTRS(KILN_ATTR_S("activation", "LeakyRelu"), KILN_ATTR_F("activation_alpha", 0.2)));
  ck_assert_ptr_null(kiln_fused_act_decode("Gemm", at, &a));
  ck_assert_double_eq(a.alpha, 0.2);
  kiln_attrs_destroy(NULL, at);
  at = mk(ATTRS(KILN_ATTR_S("activation", "Gelu")));
  ck_assert_ptr_null(kiln_fused_act_decode("MatMul", at, &a));
  ck_assert_int_eq(a.kind, KILN_FUSED_ACT_GELU);
  kiln_attrs_destroy(NULL, at);
  at = mk(ATTRS(KILN_ATTR_S("activation", "Elu")));
  expect_fail(kiln_fused_act_decode("MatMul", at, &a),
              "MatMul: unknown activation 'Elu' (Relu, LeakyRelu, Sigmoid, Tanh, Gelu, Clip, "
              "HardSigmoid, HardSwish or Swish)");
  kiln_attrs_destroy(NULL, at);
  ck_assert_int_eq(kiln_fused_act_node_kind(KILN_FUSED_ACT_TANH), KILN_NODE_Tanh);
  ck_assert_int_eq(kiln_fused_act_node_kind(KILN_FUSED_ACT_NONE), KILN_NODE_KIND_COUNT);
  ck_assert_int_eq(kiln_fused_act_of_node_kind(KILN_NODE_Sigmoid), KILN_FUSED_ACT_SIGMOID);
  ck_assert_int_eq(kiln_fused_act_of_node_kind(KILN_NODE_Elu), KILN_FUSED_ACT_NONE);
}
END_TEST

/* The parameters of the ABI 1.4 activations, with ONNX's defaults where an
 * attribute is left out. */
START_TEST(fused_activation_params) {
  kiln_fused_act_params p;
  kiln_attrs *at = mk(ATTRS(KILN_ATTR_S("activation", "Clip"), KILN_ATTR_F("activation_beta", 6)));
  ck_assert_ptr_null(kiln_fused_act_decode_params("Conv", at, &p));
  ck_assert_int_eq(p.kind, KILN_FUSED_ACT_CLIP);
  ck_assert(isinf(p.alpha) && p.alpha < 0);
  ck_assert_double_eq(p.beta, 6);
  kiln_fused_act old;
  ck_assert_ptr_null(kiln_fused_act_decode("Conv", at, &old)); /* the 1.0 form still decodes */
  ck_assert_int_eq(old.kind, KILN_FUSED_ACT_CLIP);
  kiln_attrs_destroy(NULL, at);
  at = mk(ATTRS(KILN_ATTR_S("activation", "HardSigmoid")));
  ck_assert_ptr_null(kiln_fused_act_decode_params("Conv", at, &p));
  ck_assert_int_eq(p.kind, KILN_FUSED_ACT_HARD_SIGMOID);
  ck_assert_double_eq(p.alpha, 0.2);
  ck_assert_double_eq(p.beta, 0.5);
  kiln_attrs_destroy(NULL, at);
  at = mk(ATTRS(KILN_ATTR_S("activation", "HardSwish")));
  ck_assert_ptr_null(kiln_fused_act_decode_params("Gemm", at, &p));
  ck_assert_int_eq(p.kind, KILN_FUSED_ACT_HARD_SWISH);
  ck_assert_double_eq_tol(p.alpha, 1.0 / 6, 1e-15);
  ck_assert_double_eq(p.beta, 0.5);
  kiln_attrs_destroy(NULL, at);
  at = mk(ATTRS(KILN_ATTR_S("activation", "Swish"), KILN_ATTR_F("activation_alpha", 1.5)));
  ck_assert_ptr_null(kiln_fused_act_decode_params("MatMul", at, &p));
  ck_assert_int_eq(p.kind, KILN_FUSED_ACT_SWISH);
  ck_assert_double_eq(p.alpha, 1.5);
  ck_assert_double_eq(p.beta, 0);
  kiln_attrs_destroy(NULL, at);
  ck_assert_int_eq(kiln_fused_act_of_node_kind(KILN_NODE_Swish), KILN_FUSED_ACT_SWISH);
  ck_assert_int_eq(kiln_fused_act_node_kind(KILN_FUSED_ACT_CLIP), KILN_NODE_Clip);
}
END_TEST

/* Decodes eq against the n types; NULL eq leaves the attribute out. */
static kiln_status einsum(const char *eq, kiln_einsum *es, uint32_t n, const kiln_type *t) {
  kiln_attrs *a = eq ? mk(ATTRS(KILN_ATTR_S("equation", eq))) : mk(NULL, 0);
  const kiln_type *ts[4];
  for (uint32_t i = 0; i < n; i++)
    ts[i] = &t[i];
  kiln_status s = kiln_einsum_decode(a, ts, n, es);
  kiln_attrs_destroy(NULL, a);
  return s;
}
#define TYS(...) ((kiln_type[]){__VA_ARGS__})
#define L(c) ((c) >= 'a' ? (c) - 'a' : 26 + (c) - 'A') /* a letter's label id */
#define ELL(k) (KILN_EINSUM_LETTERS + (k))

static void expect_labels(const uint8_t *got, uint32_t n, const uint8_t *want) {
  for (uint32_t i = 0; i < n; i++)
    ck_assert_uint_eq(got[i], want[i]);
}

START_TEST(einsum_products) {
  kiln_einsum es;
  /* matrix product: j occurs twice and is summed */
  ck_assert_ptr_null(einsum("ij,jk->ik", &es, 2, TYS(TY(2, 3), TY(3, 4))));
  ck_assert_uint_eq(es.n_inputs, 2);
  ck_assert_uint_eq(es.rank[0], 2);
  ck_assert_uint_eq(es.rank[1], 2);
  expect_labels(es.label[0], 2, (uint8_t[]){L('i'), L('j')});
  expect_labels(es.label[1], 2, (uint8_t[]){L('j'), L('k')});
  ck_assert_uint_eq(es.out_rank, 2);
  expect_labels(es.out_label, 2, (uint8_t[]){L('i'), L('k')});
  ck_assert_int_eq(es.size[L('i')], 2);
  ck_assert_int_eq(es.size[L('j')], 3);
  ck_assert_int_eq(es.size[L('k')], 4);
  ck_assert_int_eq(es.size[L('a')], -1);
  ck_assert_uint_eq(es.count[L('j')], 2);
  ck_assert_uint_eq(es.count[L('i')], 1);
  ck_assert_uint_eq(es.ell_rank, 0);
  ck_assert_uint_eq(es.n_labels, KILN_EINSUM_LETTERS);
  ck_assert_uint_eq(es.n_summed, 1);
  ck_assert_uint_eq(es.summed[0], L('j'));
  /* implicit: the letters seen once, sorted; j is summed */
  ck_assert_ptr_null(einsum("ij,jk", &es, 2, TYS(TY(2, 3), TY(3, 4))));
  ck_assert_uint_eq(es.out_rank, 2);
  expect_labels(es.out_label, 2, (uint8_t[]){L('i'), L('k')});
  /* implicit sorts in ASCII order, as numpy: A before b */
  ck_assert_ptr_null(einsum("bA", &es, 1, TYS(TY(2, 3))));
  ck_assert_uint_eq(es.out_rank, 2);
  expect_labels(es.out_label, 2, (uint8_t[]){L('A'), L('b')});
  ck_assert_int_eq(es.size[L('A')], 3);
  ck_assert_int_eq(es.size[L('b')], 2);
  ck_assert_uint_eq(es.n_summed, 0);
  /* spaces are ignored, "->" included */
  ck_assert_ptr_null(einsum(" bij, bjk - > bik", &es, 2, TYS(TY(2, 3, 4), TY(2, 4, 5))));
  expect_labels(es.out_label, 3, (uint8_t[]){L('b'), L('i'), L('k')});
  ck_assert_uint_eq(es.n_summed, 1);
  ck_assert_uint_eq(es.summed[0], L('j'));
}
END_TEST

START_TEST(einsum_diagonals_and_transpose) {
  kiln_einsum es;
  /* trace: i twice in one term, so the implicit output is empty */
  ck_assert_ptr_null(einsum("ii", &es, 1, TYS(TY(3, 3))));
  expect_labels(es.label[0], 2, (uint8_t[]){L('i'), L('i')});
  ck_assert_uint_eq(es.count[L('i')], 2);
  ck_assert_uint_eq(es.out_rank, 0);
  ck_assert_uint_eq(es.n_summed, 1);
  ck_assert_uint_eq(es.summed[0], L('i'));
  /* diagonal: nothing summed */
  ck_assert_ptr_null(einsum("ii->i", &es, 1, TYS(TY(3, 3))));
  ck_assert_uint_eq(es.out_rank, 1);
  ck_assert_uint_eq(es.out_label[0], L('i'));
  ck_assert_int_eq(es.size[L('i')], 3);
  ck_assert_uint_eq(es.n_summed, 0);
  /* transpose */
  ck_assert_ptr_null(einsum("ij->ji", &es, 1, TYS(TY(3, 4))));
  expect_labels(es.out_label, 2, (uint8_t[]){L('j'), L('i')});
  ck_assert_uint_eq(es.n_summed, 0);
  /* a full sum */
  ck_assert_ptr_null(einsum("ij->", &es, 1, TYS(TY(3, 4))));
  ck_assert_uint_eq(es.out_rank, 0);
  ck_assert_uint_eq(es.n_summed, 2);
  expect_labels(es.summed, 2, (uint8_t[]){L('i'), L('j')});
}
END_TEST

START_TEST(einsum_ellipsis) {
  kiln_einsum es;
  /* [2,1] broadcasts with the right-aligned [5] into [2,5]; the second
   * input's one ellipsis dim takes the rightmost id */
  ck_assert_ptr_null(einsum("...ij,...jk->...ik", &es, 2, TYS(TY(2, 1, 3, 4), TY(5, 4, 6))));
  ck_assert_uint_eq(es.ell_rank, 2);
  ck_assert_uint_eq(es.n_labels, KILN_EINSUM_LETTERS + 2);
  expect_labels(es.label[0], 4, (uint8_t[]){ELL(0), ELL(1), L('i'), L('j')});
  expect_labels(es.label[1], 3, (uint8_t[]){ELL(1), L('j'), L('k')});
  ck_assert_int_eq(es.size[ELL(0)], 2);
  ck_assert_int_eq(es.size[ELL(1)], 5);
  ck_assert_uint_eq(es.count[ELL(0)], 1);
  ck_assert_uint_eq(es.count[ELL(1)], 2);
  ck_assert_uint_eq(es.out_rank, 4);
  expect_labels(es.out_label, 4, (uint8_t[]){ELL(0), ELL(1), L('i'), L('k')});
  ck_assert_uint_eq(es.n_summed, 1);
  ck_assert_uint_eq(es.summed[0], L('j'));
  /* implicit: the ellipsis dims first; a diagonal under "..." */
  ck_assert_ptr_null(einsum("...ji", &es, 1, TYS(TY(5, 2, 3))));
  expect_labels(es.out_label, 3, (uint8_t[]){ELL(0), L('i'), L('j')});
  ck_assert_ptr_null(einsum("...ii->...i", &es, 1, TYS(TY(5, 3, 3))));
  expect_labels(es.out_label, 2, (uint8_t[]){ELL(0), L('i')});
  ck_assert_int_eq(es.size[ELL(0)], 5);
  /* an ellipsis of no dims, and ellipsis dims left out of the output are summed */
  ck_assert_ptr_null(einsum("...i->i", &es, 1, TYS(TY(3))));
  ck_assert_uint_eq(es.ell_rank, 0);
  ck_assert_ptr_null(einsum("...i->i", &es, 1, TYS(TY(4, 3))));
  ck_assert_uint_eq(es.n_summed, 1);
  ck_assert_uint_eq(es.summed[0], ELL(0));
}
END_TEST

static kiln_status slice(kiln_attrs *a, kiln_type x, kiln_slice *sl) {
  kiln_status s = kiln_slice_decode(a, &x, sl);
  kiln_attrs_destroy(NULL, a);
  return s;
}

START_TEST(slice_clamping) {
  kiln_slice sl;
  /* [10, 5, 6]: axis 0 from 1 to 7 step 2 reads 1, 3, 5 (3 cells); axis -2
   * (= 1) from -1 (= 4) down to -100000 (clamped to -1) step -2 reads 4, 2,
   * 0; axis 2 is not named: 0, 1, all 6. */
  ck_assert_ptr_null(slice(mk(ATTRS(INTS("starts", 1, -1), INTS("ends", 7, -100000),
                                    INTS("axes", 0, -2), INTS("steps", 2, -2))),
                           TY(10, 5, 6), &sl));
  ck_assert_uint_eq(sl.rank, 3);
  ck_assert_int_eq(sl.start[0], 1);
  ck_assert_int_eq(sl.step[0], 2);
  ck_assert_int_eq(sl.len[0], 3);
  ck_assert_int_eq(sl.start[1], 4);
  ck_assert_int_eq(sl.step[1], -2);
  ck_assert_int_eq(sl.len[1], 3);
  ck_assert_int_eq(sl.start[2], 0);
  ck_assert_int_eq(sl.step[2], 1);
  ck_assert_int_eq(sl.len[2], 6);
  /* No axes: entry i is axis i. A start past the end clamps to the dim (a
   * positive step reads nothing); with a negative step it clamps to the
   * last index: 9, 8, ..., 0 for ends = INT64_MIN. */
  ck_assert_ptr_null(slice(mk(ATTRS(INTS("starts", 12, 1000), INTS("ends", 20, INT64_MIN),
                                    INTS("steps", 1, -1))),
                           TY(10, 10), &sl));
  ck_assert_int_eq(sl.start[0], 10);
  ck_assert_int_eq(sl.len[0], 0);
  ck_assert_int_eq(sl.start[1], 9);
  ck_assert_int_eq(sl.step[1], -1);
  ck_assert_int_eq(sl.len[1], 10);
  /* ends = INT64_MAX reads to the end: 2..7 of 8 with step 3 is 2, 5. */
  ck_assert_ptr_null(slice(mk(ATTRS(INTS("starts", -6), INTS("ends", INT64_MAX), INTS("steps", 3))),
                           TY(8), &sl));
  ck_assert_int_eq(sl.start[0], 2);
  ck_assert_int_eq(sl.len[0], 2);
}
END_TEST

START_TEST(slice_errors) {
  kiln_slice sl;
  expect_fail(slice(mk(ATTRS(INTS("ends", 1))), TY(4), &sl),
              "Slice: attribute 'starts' is required");
  expect_fail(slice(mk(ATTRS(INTS("starts", 0, 0), INTS("ends", 1))), TY(4, 4), &sl),
              "Slice: attributes starts/ends/axes/steps have different lengths (2, 1, 2, 2)");
  expect_fail(slice(mk(ATTRS(INTS("starts", 0), INTS("ends", 1), INTS("steps", 0))), TY(4), &sl),
              "Slice: attribute 'steps' entry 0 is 0");
  expect_fail(slice(mk(ATTRS(INTS("starts", 0), INTS("ends", 1), INTS("axes", 2))), TY(4, 4), &sl),
              "Slice: attribute 'axes' entry 0 = 2 is out of range for rank 2");
  expect_fail(slice(mk(ATTRS(INTS("starts", 0, 0), INTS("ends", 1, 1), INTS("axes", 1, -1))),
                    TY(4, 4), &sl),
              "Slice: attribute 'axes' names axis 1 twice");
  expect_fail(slice(mk(ATTRS(INTS("starts", 0, 0), INTS("ends", 1, 1))), TY(4), &sl),
              "Slice: attribute 'starts' has 2 entries but input 0 has rank 1");
}
END_TEST

START_TEST(einsum_errors) {
  kiln_einsum es;
  expect_fail(einsum(NULL, &es, 1, TYS(TY(2, 3))),
              "Einsum: attribute 'equation' (a string) is required");
  expect_fail(einsum("ij,jk->ik", &es, 2, TYS(TY(2, 3), TY(4, 4))),
              "Einsum: equation \"ij,jk->ik\": label 'j' has size 4 in input 1 (f32[4,4]) but 3 "
              "elsewhere");
  expect_fail(einsum("ii", &es, 1, TYS(TY(2, 3))),
              "Einsum: equation \"ii\": label 'i' has size 3 in input 0 (f32[2,3]) but 2 elsewhere");
  expect_fail(einsum("ijk->i", &es, 1, TYS(TY(2, 3))),
              "Einsum: equation \"ijk->i\": term 0 has 3 labels but input 0 is f32[2,3]");
  expect_fail(einsum("ij->z", &es, 1, TYS(TY(2, 3))),
              "Einsum: equation \"ij->z\": output label 'z' is not in any input");
  expect_fail(einsum("ij->ii", &es, 1, TYS(TY(2, 3))),
              "Einsum: equation \"ij->ii\": output label 'i' is repeated");
  expect_fail(einsum("ij->i.", &es, 1, TYS(TY(2, 3))),
              "Einsum: equation \"ij->i.\": output has an invalid character '.'");
  expect_fail(einsum("i1", &es, 1, TYS(TY(2, 3))),
              "Einsum: equation \"i1\": term 0 has an invalid character '1'");
  expect_fail(einsum("......", &es, 1, TYS(TY(2, 3))),
              "Einsum: equation \"......\": term 0 has an invalid character '.'");
  expect_fail(einsum("ij,jk", &es, 1, TYS(TY(2, 3))),
              "Einsum: equation \"ij,jk\" has more terms than the 1 inputs");
  expect_fail(einsum("ij", &es, 2, TYS(TY(2, 3), TY(3))),
              "Einsum: equation \"ij\" has 1 terms but there are 2 inputs");
  expect_fail(einsum("...i,...i", &es, 2, TYS(TY(2, 3), TY(4, 3))),
              "Einsum: equation \"...i,...i\": the '...' dims of input 1 (f32[4,3]) do not "
              "broadcast with earlier inputs");
  expect_fail(einsum("abcdefgh,ij", &es, 2, TYS(TY(1, 1, 1, 1, 1, 1, 1, 1), TY(1, 1))),
              "Einsum: equation \"abcdefgh,ij\": the output has more than 8 dims");
}
END_TEST

START_TEST(reference_numerics) {
  ck_assert_int_eq(kiln_ref_ipow(3, 4), 81);
  ck_assert_int_eq(kiln_ref_ipow(-2, 3), -8);
  ck_assert_int_eq(kiln_ref_ipow(2, 64), 0); /* wraps */
  ck_assert_int_eq(kiln_ref_ipow(-1, -3), -1);
  ck_assert_int_eq(kiln_ref_ipow(1, -5), 1);
  ck_assert_int_eq(kiln_ref_ipow(5, -1), 0);
  ck_assert_int_eq(kiln_ref_ipow(7, 0), 1);
  /* half 0x0001 is 2^-24; 0x3555 is 1.0100110101b * 2^-2 = 1365/4096 */
  ck_assert_float_eq(kiln_ref_f16_to_f32(0x0001), 0x1p-24f);
  ck_assert_float_eq(kiln_ref_f16_to_f32(0x3555), 1365.0f / 4096);
  /* the f32 NaN 0x7fc02000 keeps its top 10 payload bits, 0x201 */
  ck_assert_uint_eq(kiln_ref_f32_to_f16(kiln_ref_bits_f32(0x7fc02000u)), 0x7e01);
  /* 2^-25 is half of the smallest subnormal: a tie, to even (0); a bit
   * more rounds up to 0x0001 */
  ck_assert_uint_eq(kiln_ref_f32_to_f16(0x1p-25f), 0x0000);
  ck_assert_uint_eq(kiln_ref_f32_to_f16(0x1.01p-25f), 0x0001);
  ck_assert_uint_eq(kiln_ref_f32_to_bf16(kiln_ref_bits_f32(0x3f818000u)), 0x3f82); /* tie, up to even */
  ck_assert_float_eq(kiln_ref_bf16_to_f32(0xbf80), -1.0f);
  /* [[0, 2], [3, 4]] needs a row swap: det = 0*4 - 2*3 = -6 */
  double a[] = {0, 2, 3, 4};
  ck_assert_double_eq_tol(kiln_ref_det(a, 2), -6, 1e-12);
  /* [[2, 0, 1], [1, 3, 2], [1, 1, 1]]: 2*(3-2) - 0 + 1*(1-3) = 0 */
  double b[] = {2, 0, 1, 1, 3, 2, 1, 1, 1};
  ck_assert_double_eq_tol(kiln_ref_det(b, 3), 0, 1e-12);
  /* [[4, 3, 2], [1, 5, 7], [2, 8, 9]]: 4*(45-56) - 3*(9-14) + 2*(8-10) = -33 */
  double c[] = {4, 3, 2, 1, 5, 7, 2, 8, 9};
  ck_assert_double_eq_tol(kiln_ref_det(c, 3), -33, 1e-12);
  double z[] = {1, 2, 2, 4}; /* singular: exactly 0 */
  ck_assert_double_eq(kiln_ref_det(z, 2), 0);
  ck_assert_double_eq(kiln_ref_det(NULL, 0), 1); /* the empty product */
}
END_TEST

Suite *ops_suite(void) {
  Suite *s = suite_create("ops");
  TCase *tc = tcase_create("ops");
  tcase_add_test(tc, window_defaults);
  tcase_add_test(tc, window_pads_and_same);
  tcase_add_test(tc, window_transposed);
  tcase_add_test(tc, window_errors);
  tcase_add_test(tc, resize_linear_and_nearest);
  tcase_add_test(tc, resize_cubic_and_antialias);
  tcase_add_test(tc, resize_policies_and_crop);
  tcase_add_test(tc, resize_errors);
  tcase_add_test(tc, fused_activations);
  tcase_add_test(tc, fused_activation_params);
  tcase_add_test(tc, einsum_products);
  tcase_add_test(tc, einsum_diagonals_and_transpose);
  tcase_add_test(tc, einsum_ellipsis);
  tcase_add_test(tc, einsum_errors);
  tcase_add_test(tc, slice_clamping);
  tcase_add_test(tc, slice_errors);
  tcase_add_test(tc, reference_numerics);
  suite_add_tcase(s, tc);
  return s;
}
