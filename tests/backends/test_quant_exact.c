/* tests/backends/test_quant_exact.c: the integer kinds compute the same
 * integers on every backend. QLinearConv and QLinearMatMul cases built
 * for the corners of the ONNX formula (ties that round half to even,
 * saturation at both ends, accumulators near 2^28, per-channel weight
 * scales and zero points, padding read as the input's non-zero zero
 * point, strides, dilations, groups and depthwise, u8 and s8 inputs) run
 * on each backend found (interpreter, cpu, opencl with a device) and must
 * equal, integer for integer, the reference computed here from the ONNX
 * definition, written independently of every backend:
 *   acc = sum (x - x_zp)(w - w_zp) [+ bias], m = f32(f32(xs*ws)/ys),
 *   y = saturate(round_half_even((double)acc * m) + y_zp).
 * MaxPool on u8 and i8 (kept in integers between quantized convolutions)
 * is checked the same way against the largest value of each window.
 * A backend that cannot run a case (no device) is skipped, saying why. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

static int failures, passes, skips;

/* splitmix64 for repeatable data */
static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int64_t sat(kiln_elem e, double v) {
  double lo = e == KILN_U8 ? 0 : -128, hi = e == KILN_U8 ? 255 : 127;
  return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

static int64_t ld(kiln_elem e, const void *p, int64_t i) {
  return e == KILN_U8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

static void st(kiln_elem e, void *p, int64_t i, int64_t v) {
  if (e == KILN_U8)
    ((uint8_t *)p)[i] = (uint8_t)v;
  else
    ((int8_t *)p)[i] = (int8_t)v;
}

static double requant(int64_t acc, float xs, float ws, float ys, int64_t yzp, kiln_elem ye) {
  float m = (float)((float)(xs * ws) / ys);
  return (double)sat(ye, nearbyint((double)acc * (double)m) + (double)yzp);
}

/* One QLinearConv case, 2-D, NCHW. */
typedef struct conv_case {
  const char *name;
  kiln_elem xe, ye;
  int64_t N, C, H, W, M, kh, kw, group, stride, dil, pad;
  float xs, ys, ws_base; /* ws[m] = ws_base * (1 + m % 3) */
  int64_t xzp, yzp, wzp_span; /* wzp[m] = m % (wzp_span + 1) - wzp_span / 2 */
  int x_mode;                 /* 0 random, 1 all at the type's top, 2 zp - 2 .. zp + 2 */
  bool bias;
  int w_mode;                 /* 0 random, 1 all 127, 2 -1 .. 1 */
} conv_case;

static void conv_ref(const conv_case *k, const void *x, const int8_t *w, const float *ws,
                     const int8_t *wzp, const int32_t *b, void *y, int64_t OH, int64_t OW) {
  int64_t Cg = k->C / k->group, Mg = k->M / k->group;
  for (int64_t n = 0; n < k->N; n++)
    for (int64_t m = 0; m < k->M; m++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          int64_t acc = 0, g = m / Mg;
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t i = 0; i < k->kh; i++)
              for (int64_t j = 0; j < k->kw; j++) {
                int64_t ih = oh * k->stride - k->pad + i * k->dil;
                int64_t iw = ow * k->stride - k->pad + j * k->dil;
                int64_t xv = k->xzp; /* padding holds the zero point */
                if (ih >= 0 && ih < k->H && iw >= 0 && iw < k->W)
                  xv = ld(k->xe, x, ((n * k->C + g * Cg + c) * k->H + ih) * k->W + iw);
                int64_t wv = w[((m * Cg + c) * k->kh + i) * k->kw + j];
                acc += (xv - k->xzp) * (wv - wzp[m]);
              }
          if (b)
            acc += b[m];
          st(k->ye, y, ((n * k->M + m) * OH + oh) * OW + ow,
             (int64_t)requant(acc, k->xs, ws[m], k->ys, k->yzp, k->ye));
        }
}

static kiln_status add_const(kiln_module *mod, const char *name, kiln_elem e, uint32_t rank,
                             const int64_t *dims, const void *data, kiln_value **out) {
  kiln_type t;
  KILN_TRY(kiln_type_make(e, rank, dims, &t));
  return kiln_module_add_constant(mod, name, &t, data, out);
}

/* Compile m on every backend and compare its one output with want. */
static void run_everywhere(const char *name, kiln_module *mod, const void *x, size_t xbytes,
                           const void *want, size_t ybytes) {
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  if (s) {
    printf("FAIL %s: context: %s\n", name, kiln_status_message(s));
    kiln_status_free(s);
    failures++;
    return;
  }
  (void)xbytes;
  for (uint32_t i = 0; i < kiln_context_backend_count(ctx); i++) {
    kiln_backend_info bi;
    s = kiln_context_backend(ctx, i, &bi);
    if (s) {
      kiln_status_free(s);
      continue;
    }
    kiln_executable *exe = NULL;
    s = kiln_compile(ctx, mod, NULL, bi.name, NULL, &exe);
    if (s) {
      /* a backend without a device cannot run anything: not a failure */
      if (strstr(kiln_status_message(s), "device")) {
        printf("SKIP %s on %s: %s\n", name, bi.name, kiln_status_message(s));
        skips++;
      } else {
        printf("FAIL %s on %s: compile: %s\n", name, bi.name, kiln_status_message(s));
        failures++;
      }
      kiln_status_free(s);
      continue;
    }
    void *got = calloc(1, ybytes);
    const void *ins[1] = {x};
    void *outs[1] = {got};
    s = kiln_run(exe, ins, outs);
    if (s) {
      printf("FAIL %s on %s: run: %s\n", name, bi.name, kiln_status_message(s));
      kiln_status_free(s);
      failures++;
    } else if (memcmp(got, want, ybytes) != 0) {
      size_t at = 0;
      while (((const uint8_t *)got)[at] == ((const uint8_t *)want)[at])
        at++;
      printf("FAIL %s on %s: byte %zu is %u, the reference says %u\n", name, bi.name, at,
             ((const uint8_t *)got)[at], ((const uint8_t *)want)[at]);
      failures++;
    } else {
      printf("ok   %s on %s\n", name, bi.name);
      passes++;
    }
    free(got);
    kiln_executable_destroy(exe);
  }
  kiln_context_destroy(ctx);
}

static void conv_case_run(const conv_case *k) {
  int64_t Cg = k->C / k->group;
  int64_t OH = (k->H + 2 * k->pad - k->dil * (k->kh - 1) - 1) / k->stride + 1;
  int64_t OW = (k->W + 2 * k->pad - k->dil * (k->kw - 1) - 1) / k->stride + 1;
  int64_t nx = k->N * k->C * k->H * k->W, nw = k->M * Cg * k->kh * k->kw;
  int64_t ny = k->N * k->M * OH * OW;
  uint8_t *x = malloc((size_t)nx);
  int8_t *w = malloc((size_t)nw), *wzp = malloc((size_t)k->M);
  float *ws = malloc((size_t)k->M * sizeof *ws);
  int32_t *b = malloc((size_t)k->M * sizeof *b);
  uint8_t *y = malloc((size_t)ny);
  uint64_t seed = 7;
  for (int64_t i = 0; i < nx; i++)
    st(k->xe, x, i,
       k->x_mode == 1   ? (k->xe == KILN_U8 ? 255 : 127)
       : k->x_mode == 2 ? k->xzp + (int64_t)(rnd(&seed) % 5) - 2
                        : (int64_t)(rnd(&seed) % 256) - (k->xe == KILN_U8 ? 0 : 128));
  for (int64_t i = 0; i < nw; i++)
    w[i] = k->w_mode == 1   ? 127
           : k->w_mode == 2 ? (int8_t)((int64_t)(rnd(&seed) % 3) - 1)
                            : (int8_t)((int64_t)(rnd(&seed) % 255) - 127);
  for (int64_t m = 0; m < k->M; m++) {
    ws[m] = k->ws_base * (float)(1 + m % 3);
    wzp[m] = (int8_t)(k->wzp_span ? m % (k->wzp_span + 1) - k->wzp_span / 2 : 0);
    b[m] = (int32_t)((int64_t)(rnd(&seed) % 2001) - 1000);
  }
  conv_ref(k, x, w, ws, wzp, k->bias ? b : NULL, y, OH, OW);

  kiln_module *mod = NULL;
  kiln_function *f = NULL;
  kiln_value *in[9] = {0}, *xv = NULL;
  kiln_type xt;
  int64_t xd[4] = {k->N, k->C, k->H, k->W}, wd[4] = {k->M, Cg, k->kh, k->kw}, md = k->M;
  uint8_t xzp = (uint8_t)k->xzp, yzp = (uint8_t)k->yzp;
  kiln_status s = kiln_module_create(NULL, k->name, &mod);
  if (!s)
    s = kiln_type_make(k->xe, 4, xd, &xt);
  if (!s)
    s = kiln_module_add_input(mod, "x", &xt, &xv);
  if (!s)
    s = add_const(mod, "xs", KILN_F32, 0, NULL, &k->xs, &in[1]);
  if (!s)
    s = add_const(mod, "xzp", k->xe, 0, NULL, &xzp, &in[2]);
  if (!s)
    s = add_const(mod, "w", KILN_I8, 4, wd, w, &in[3]);
  if (!s)
    s = add_const(mod, "ws", KILN_F32, 1, &md, ws, &in[4]);
  if (!s)
    s = add_const(mod, "wzp", KILN_I8, 1, &md, wzp, &in[5]);
  if (!s)
    s = add_const(mod, "ys", KILN_F32, 0, NULL, &k->ys, &in[6]);
  if (!s)
    s = add_const(mod, "yzp", k->ye, 0, NULL, &yzp, &in[7]);
  if (!s && k->bias)
    s = add_const(mod, "b", KILN_I32, 1, &md, b, &in[8]);
  in[0] = xv;
  int64_t strides[2] = {k->stride, k->stride}, dil[2] = {k->dil, k->dil};
  int64_t pads[4] = {k->pad, k->pad, k->pad, k->pad}, ks[2] = {k->kh, k->kw};
  kiln_attr_desc a[5] = {KILN_ATTR_IS("strides", strides, 2), KILN_ATTR_IS("dilations", dil, 2),
                         KILN_ATTR_IS("pads", pads, 4), KILN_ATTR_IS("kernel_shape", ks, 2),
                         KILN_ATTR_I("group", k->group)};
  kiln_node *n = NULL;
  if (!s)
    s = kiln_module_add_function(mod, "main", &f);
  if (!s)
    s = kiln_function_add_node(f, KILN_NODE_QLinearConv, "qconv", in, k->bias ? 9 : 8, a, 5, 0,
                               &n);
  if (!s)
    s = kiln_function_add_output(f, "y", kiln_node_result(n, 0));
  if (s) {
    printf("FAIL %s: building: %s\n", k->name, kiln_status_message(s));
    kiln_status_free(s);
    failures++;
  } else {
    run_everywhere(k->name, mod, x, (size_t)nx, y, (size_t)ny);
  }
  kiln_module_destroy(mod);
  free(x), free(w), free(wzp), free(ws), free(b), free(y);
}

/* QLinearMatMul [M,K] x [K,N], per-column weight scales and zero points. */
static void matmul_case(const char *name, kiln_elem ae, int64_t M, int64_t K, int64_t N,
                        float as, int64_t azp, float ws_base, float ys, int64_t yzp,
                        bool top) {
  uint8_t *a = malloc((size_t)(M * K));
  int8_t *b = malloc((size_t)(K * N)), *bzp = malloc((size_t)N);
  float *bs = malloc((size_t)N * sizeof *bs);
  uint8_t *y = malloc((size_t)(M * N));
  uint64_t seed = 11;
  for (int64_t i = 0; i < M * K; i++)
    st(ae, a, i, top ? (ae == KILN_U8 ? 255 : -128)
                     : (int64_t)(rnd(&seed) % 256) - (ae == KILN_U8 ? 0 : 128));
  for (int64_t i = 0; i < K * N; i++)
    b[i] = top ? -127 : (int8_t)((int64_t)(rnd(&seed) % 255) - 127);
  for (int64_t j = 0; j < N; j++) {
    bs[j] = ws_base * (float)(1 + j % 4);
    bzp[j] = (int8_t)(j % 5 - 2);
  }
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc += (ld(ae, a, i * K + k) - azp) * (b[k * N + j] - bzp[j]);
      st(KILN_U8, y, i * N + j, (int64_t)requant(acc, as, bs[j], ys, yzp, KILN_U8));
    }
  kiln_module *mod = NULL;
  kiln_function *f = NULL;
  kiln_value *in[8] = {0};
  kiln_type at;
  int64_t ad[2] = {M, K}, bd[2] = {K, N}, nd = N;
  uint8_t azp8 = (uint8_t)azp, yzp8 = (uint8_t)yzp;
  kiln_node *n = NULL;
  kiln_status s = kiln_module_create(NULL, name, &mod);
  if (!s)
    s = kiln_type_make(ae, 2, ad, &at);
  if (!s)
    s = kiln_module_add_input(mod, "a", &at, &in[0]);
  if (!s)
    s = add_const(mod, "as", KILN_F32, 0, NULL, &as, &in[1]);
  if (!s)
    s = add_const(mod, "azp", ae, 0, NULL, &azp8, &in[2]);
  if (!s)
    s = add_const(mod, "b", KILN_I8, 2, bd, b, &in[3]);
  if (!s)
    s = add_const(mod, "bs", KILN_F32, 1, &nd, bs, &in[4]);
  if (!s)
    s = add_const(mod, "bzp", KILN_I8, 1, &nd, bzp, &in[5]);
  if (!s)
    s = add_const(mod, "ys", KILN_F32, 0, NULL, &ys, &in[6]);
  if (!s)
    s = add_const(mod, "yzp", KILN_U8, 0, NULL, &yzp8, &in[7]);
  if (!s)
    s = kiln_module_add_function(mod, "main", &f);
  if (!s)
    s = kiln_function_add_node(f, KILN_NODE_QLinearMatMul, "qmm", in, 8, NULL, 0, 0, &n);
  if (!s)
    s = kiln_function_add_output(f, "y", kiln_node_result(n, 0));
  if (s) {
    printf("FAIL %s: building: %s\n", name, kiln_status_message(s));
    kiln_status_free(s);
    failures++;
  } else {
    run_everywhere(name, mod, a, (size_t)(M * K), y, (size_t)(M * N));
  }
  kiln_module_destroy(mod);
  free(a), free(b), free(bzp), free(bs), free(y);
}

/* MaxPool on 8-bit integers (what runs between integer convolutions):
 * the largest value of each window clipped to the input. */
static void maxpool_case(const char *name, kiln_elem e, int64_t C, int64_t H, int64_t W,
                         int64_t k, int64_t sd, int64_t dil, int64_t pad, int64_t ceil_mode) {
  int64_t span = dil * (k - 1) + 1, num_h = H + 2 * pad - span, num_w = W + 2 * pad - span;
  int64_t OH = (ceil_mode ? (num_h + sd - 1) / sd : num_h / sd) + 1;
  int64_t OW = (ceil_mode ? (num_w + sd - 1) / sd : num_w / sd) + 1;
  /* ONNX: with ceil_mode the last window must start inside the padded input */
  if (ceil_mode && (OH - 1) * sd >= H + pad)
    OH--;
  if (ceil_mode && (OW - 1) * sd >= W + pad)
    OW--;
  uint8_t *x = malloc((size_t)(C * H * W)), *y = malloc((size_t)(C * OH * OW));
  uint64_t seed = 5;
  for (int64_t i = 0; i < C * H * W; i++)
    x[i] = (uint8_t)rnd(&seed);
  for (int64_t c = 0; c < C; c++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t m = e == KILN_U8 ? 0 : -128;
        for (int64_t i = 0; i < k; i++)
          for (int64_t j = 0; j < k; j++) {
            int64_t ih = oh * sd - pad + i * dil, iw = ow * sd - pad + j * dil;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
              int64_t v = ld(e, x, (c * H + ih) * W + iw);
              m = v > m ? v : m;
            }
          }
        st(e, y, (c * OH + oh) * OW + ow, m);
      }
  kiln_module *mod = NULL;
  kiln_function *f = NULL;
  kiln_value *xv = NULL;
  kiln_node *n = NULL;
  kiln_type xt;
  int64_t xd[4] = {1, C, H, W}, ks[2] = {k, k}, ss[2] = {sd, sd}, ds[2] = {dil, dil};
  int64_t ps[4] = {pad, pad, pad, pad};
  kiln_attr_desc a[5] = {KILN_ATTR_IS("kernel_shape", ks, 2), KILN_ATTR_IS("strides", ss, 2),
                         KILN_ATTR_IS("dilations", ds, 2), KILN_ATTR_IS("pads", ps, 4),
                         KILN_ATTR_I("ceil_mode", ceil_mode)};
  kiln_status s = kiln_module_create(NULL, name, &mod);
  if (!s)
    s = kiln_type_make(e, 4, xd, &xt);
  if (!s)
    s = kiln_module_add_input(mod, "x", &xt, &xv);
  if (!s)
    s = kiln_module_add_function(mod, "main", &f);
  if (!s)
    s = kiln_function_add_node(f, KILN_NODE_MaxPool, "pool", &xv, 1, a, 5, 1, &n);
  if (!s && kiln_type_numel(kiln_value_type(kiln_node_result(n, 0))) != C * OH * OW)
    s = kiln_status_make(KILN_INTERNAL, "the result has %lld elements, the reference %lld",
                         (long long)kiln_type_numel(kiln_value_type(kiln_node_result(n, 0))),
                         (long long)(C * OH * OW));
  if (!s)
    s = kiln_function_add_output(f, "y", kiln_node_result(n, 0));
  if (s) {
    printf("FAIL %s: building: %s\n", name, kiln_status_message(s));
    kiln_status_free(s);
    failures++;
  } else {
    run_everywhere(name, mod, x, (size_t)(C * H * W), y, (size_t)(C * OH * OW));
  }
  kiln_module_destroy(mod);
  free(x), free(y);
}

int main(void) {
  /* xs * ws / ys = 0.5 * (1..3) on small accumulators (x within 2 of
   * its zero point, w in -1..1): odd ones land on .5 (ties). */
  static const conv_case convs[] = {
      {"conv_ties_u8", KILN_U8, KILN_U8, 1, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1, 0.5f, 1.0f, 1.0f, 128,
       128, 0, 2, false, 2},
      {"conv_saturate_both_ends", KILN_U8, KILN_U8, 1, 5, 6, 6, 6, 3, 3, 1, 1, 1, 1, 0.05f,
       0.01f, 0.02f, 3, 100, 4, 0, true, 0},
      /* 512 * 9 * 255 * 127: about 2^27.2, times 2^-21 * (1..3) */
      {"conv_big_accumulator", KILN_U8, KILN_U8, 1, 512, 3, 3, 3, 3, 3, 1, 1, 1, 0, 1.0f, 1.0f,
       1.0f / 2097152.0f, 0, 7, 0, 1, false, 1},
      {"conv_pad_nonzero_zp_stride2", KILN_U8, KILN_U8, 2, 4, 9, 8, 5, 3, 3, 1, 2, 1, 1, 0.02f,
       0.05f, 0.01f, 131, 120, 2, 0, true, 0},
      {"conv_dilated_s8", KILN_I8, KILN_I8, 1, 6, 10, 10, 3, 3, 3, 1, 1, 2, 2, 0.03f, 0.04f,
       0.01f, -5, 3, 0, 0, true, 0},
      {"conv_grouped", KILN_U8, KILN_U8, 1, 8, 6, 6, 12, 3, 3, 4, 1, 1, 1, 0.02f, 0.03f, 0.01f,
       17, 128, 2, 0, true, 0},
      {"conv_depthwise_5x5_s2", KILN_U8, KILN_U8, 1, 17, 11, 11, 17, 5, 5, 17, 2, 1, 2, 0.02f,
       0.02f, 0.01f, 120, 128, 2, 0, true, 0},
      /* one channel, a window wider than the 1-wide input, stride 2 */
      {"conv_depthwise_window_past_input", KILN_U8, KILN_U8, 2, 1, 5, 1, 1, 3, 2, 1, 2, 1, 1,
       0.015625f, 0.0078125f, 0.0625f, 128, 128, 0, 0, false, 0},
      {"conv_pointwise_24", KILN_I8, KILN_U8, 1, 24, 5, 5, 40, 1, 1, 1, 1, 1, 0, 0.02f, 0.05f,
       0.01f, 0, 0, 0, 0, true, 0},
  };
  for (size_t i = 0; i < sizeof convs / sizeof *convs; i++)
    conv_case_run(&convs[i]);
  matmul_case("matmul_ties_u8", KILN_U8, 3, 17, 7, 0.5f, 128, 1.0f, 2.0f, 128, false);
  matmul_case("matmul_s8_odd", KILN_I8, 7, 65, 33, 0.02f, -3, 0.01f, 0.05f, 130, false);
  matmul_case("matmul_saturate_low", KILN_U8, 1, 300, 5, 0.1f, 0, 0.1f, 0.5f, 10, true);
  matmul_case("matmul_one_row_wide", KILN_U8, 1, 1024, 65, 0.004f, 120, 0.002f, 0.1f, 128,
              false);
  maxpool_case("maxpool_u8_3x3_s2_pad1", KILN_U8, 5, 17, 19, 3, 2, 1, 1, 0);
  maxpool_case("maxpool_i8_2x2_s2", KILN_I8, 3, 8, 9, 2, 2, 1, 0, 0);
  maxpool_case("maxpool_i8_3x3_s1_dil2_ceil", KILN_I8, 2, 11, 10, 3, 1, 2, 2, 1);
  maxpool_case("maxpool_u8_ceil_s3", KILN_U8, 4, 10, 13, 3, 3, 1, 1, 1);
  printf("quant exactness: %d passed, %d failed, %d skipped\n", passes, failures, skips);
  return failures ? 1 : 0;
}
