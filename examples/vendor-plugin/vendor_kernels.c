/* examples/vendor-plugin/vendor_kernels.c: the vendor backend's kernels,
 * f32 only: Conv (2-D), MatMul, Gemm, Relu and Add. vendor_node_ok turns
 * down every node these kernels do not cover; in a backend list
 * (`--backend vendor+cpu`) the core then places it on the next backend. */
#include <kiln/ops.h>

#include "vendor.h"

bool vendor_kind_supported(kiln_node_kind k) {
  switch (k) {
  case KILN_NODE_Conv:
  case KILN_NODE_MatMul:
  case KILN_NODE_Gemm:
  case KILN_NODE_Relu:
  case KILN_NODE_Add:
    return true;
  default:
    return false;
  }
}

static bool f32_plain(const kiln_value *v) {
  return !v || (kiln_value_type(v)->elem == KILN_F32 && !kiln_value_type(v)->quantized);
}

static const kiln_type *input_type(const kiln_node *node, uint32_t i) {
  const kiln_value *v = i < kiln_node_input_count(node) ? kiln_node_input(node, i) : NULL;
  return v ? kiln_value_type(v) : NULL;
}

/* Conv as the kernel below runs it: 2-D (NCHW), no residual input. The
 * window decoder checks the attributes against the shapes once here, so
 * that the kernel can trust them. */
static bool conv_ok(const kiln_node *node) {
  const kiln_type *x = input_type(node, 0), *w = input_type(node, 1);
  const kiln_type *y = kiln_value_type(kiln_node_result(node, 0));
  if (x->rank != 4 || w->rank != 4 || input_type(node, 3))
    return false;
  kiln_window win;
  kiln_status s =
      kiln_window_decode("Conv", kiln_node_attrs(node), x, y, w->dims + 2, false, &win);
  if (s) {
    kiln_status_free(s);
    return false;
  }
  return true;
}

bool vendor_node_ok(const kiln_node *node) {
  kiln_node_kind k = kiln_node_get_kind(node);
  uint32_t n = kiln_node_input_count(node);
  for (uint32_t i = 0; i < n; i++)
    if (!f32_plain(kiln_node_input(node, i)))
      return false;
  for (uint32_t i = 0; i < kiln_node_result_count(node); i++)
    if (!f32_plain(kiln_node_result(node, i)))
      return false;
  /* A fused activation is kiln's own attribute, set only for backends that
   * declare fused forms (this one declares none); turn it down anyway
   * rather than ignore it. */
  if (kiln_attrs_find(kiln_node_attrs(node), "activation"))
    return false;
  switch (k) {
  case KILN_NODE_Conv:
    return conv_ok(node);
  case KILN_NODE_MatMul: {
    const kiln_type *a = input_type(node, 0), *b = input_type(node, 1);
    if (a->rank < 2 || b->rank < 2)
      return false;
    if (b->rank == 2)
      return true;
    /* Batched: identical batch dims on both sides. */
    if (a->rank != b->rank)
      return false;
    for (uint32_t i = 0; i + 2 < a->rank; i++)
      if (a->dims[i] != b->dims[i])
        return false;
    return true;
  }
  case KILN_NODE_Gemm: {
    const kiln_type *c = input_type(node, 2);
    return input_type(node, 0)->rank == 2 && input_type(node, 1)->rank == 2 &&
           (!c || c->rank <= 2);
  }
  default:
    return vendor_kind_supported(k);
  }
}

/* Strides of `in` aligned to the trailing dims of an output of rank r,
 * 0 where `in` is broadcast. */
static void bcast_strides(const kiln_type *in, uint32_t r, int64_t *st) {
  int64_t s[KILN_MAX_RANK];
  kiln_type_strides(in, s);
  for (uint32_t i = 0; i < r; i++) {
    int64_t j = (int64_t)i - (int64_t)(r - in->rank);
    st[i] = j < 0 || in->dims[j] == 1 ? 0 : s[j];
  }
}

static void run_add(const vendor_step *st) {
  const kiln_type *o = st->type[0];
  int64_t sa[KILN_MAX_RANK], sb[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
  bcast_strides(st->type[1], o->rank, sa);
  bcast_strides(st->type[2], o->rank, sb);
  const float *a = st->ptr[1], *b = st->ptr[2];
  float *y = st->ptr[0];
  int64_t n = kiln_type_numel(o), oa = 0, ob = 0;
  for (int64_t i = 0; i < n; i++) {
    y[i] = a[oa] + b[ob];
    /* Odometer step over the output index, keeping both input offsets. */
    for (int64_t d = (int64_t)o->rank - 1; d >= 0; d--) {
      oa += sa[d], ob += sb[d];
      if (++idx[d] < o->dims[d])
        break;
      oa -= sa[d] * idx[d], ob -= sb[d] * idx[d];
      idx[d] = 0;
    }
  }
}

static void run_matmul(const vendor_step *st) {
  const kiln_type *a = st->type[1], *b = st->type[2];
  int64_t K = a->dims[a->rank - 1], M = a->dims[a->rank - 2], N = b->dims[b->rank - 1];
  int64_t batches = 1;
  for (uint32_t i = 0; i + 2 < a->rank; i++)
    batches *= a->dims[i];
  bool shared_b = b->rank == 2;
  const float *A = st->ptr[1], *B = st->ptr[2];
  float *C = st->ptr[0];
  for (int64_t p = 0; p < batches; p++) {
    const float *Ap = A + p * M * K, *Bp = shared_b ? B : B + p * K * N;
    float *Cp = C + p * M * N;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        float acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc += Ap[i * K + k] * Bp[k * N + j];
        Cp[i * N + j] = acc;
      }
  }
}

/* Y = alpha * A' B' + beta * C, A' = A or its transpose (transA), B' the
 * same (transB), C broadcast to M x N. */
static void run_gemm(const vendor_step *st) {
  const kiln_type *a = st->type[1], *b = st->type[2], *y = st->type[0];
  bool ta = kiln_attrs_int_or(st->attrs, "transA", 0) != 0;
  bool tb = kiln_attrs_int_or(st->attrs, "transB", 0) != 0;
  float alpha = (float)kiln_attrs_float_or(st->attrs, "alpha", 1.0);
  float beta = (float)kiln_attrs_float_or(st->attrs, "beta", 1.0);
  int64_t M = y->dims[0], N = y->dims[1], K = a->dims[ta ? 0 : 1];
  /* Element (i, k) of A' and (k, j) of B' through strides. */
  int64_t as_i = ta ? 1 : K, as_k = ta ? M : 1;
  int64_t bs_k = tb ? 1 : N, bs_j = tb ? K : 1;
  (void)b;
  const float *A = st->ptr[1], *B = st->ptr[2], *C = st->n_ops > 3 ? st->ptr[3] : NULL;
  int64_t cs[2] = {0, 0};
  if (C)
    bcast_strides(st->type[3], 2, cs);
  float *Y = st->ptr[0];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      float acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc += A[i * as_i + k * as_k] * B[k * bs_k + j * bs_j];
      Y[i * N + j] = alpha * acc + (C ? beta * C[i * cs[0] + j * cs[1]] : 0.0f);
    }
}

/* Direct 2-D convolution, NCHW input, OIHW filter, optional bias. */
static kiln_status run_conv(const vendor_step *st) {
  const kiln_type *x = st->type[1], *w = st->type[2], *y = st->type[0];
  kiln_window win;
  kiln_status s = kiln_window_decode("Conv", st->attrs, x, y, w->dims + 2, false, &win);
  if (s)
    return kiln_status_wrap(s, "vendor: Conv (instruction %u)", st->index);
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  int64_t M = y->dims[1], OH = y->dims[2], OW = y->dims[3];
  int64_t KH = w->dims[2], KW = w->dims[3], Cg = w->dims[1];
  int64_t groups = kiln_attrs_int_or(st->attrs, "group", 1);
  if (groups < 1 || Cg * groups != C || M % groups)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "vendor: Conv (instruction %u): %lld groups do not divide %lld "
                            "input and %lld output channels",
                            st->index, (long long)groups, (long long)C, (long long)M);
  int64_t Mg = M / groups;
  const float *X = st->ptr[1], *Wt = st->ptr[2];
  const float *Bias = st->n_ops > 3 ? st->ptr[3] : NULL;
  float *Y = st->ptr[0];
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++) {
      int64_t c0 = m / Mg * Cg;
      const float *wm = Wt + m * Cg * KH * KW;
      float *ym = Y + (n * M + m) * OH * OW;
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          float acc = Bias ? Bias[m] : 0.0f;
          for (int64_t c = 0; c < Cg; c++) {
            const float *xc = X + (n * C + c0 + c) * H * W;
            const float *wc = wm + c * KH * KW;
            for (int64_t kh = 0; kh < KH; kh++) {
              int64_t ih = oh * win.stride[0] - win.pad_begin[0] + kh * win.dilation[0];
              if (ih < 0 || ih >= H)
                continue;
              for (int64_t kw = 0; kw < KW; kw++) {
                int64_t iw = ow * win.stride[1] - win.pad_begin[1] + kw * win.dilation[1];
                if (iw >= 0 && iw < W)
                  acc += xc[ih * W + iw] * wc[kh * KW + kw];
              }
            }
          }
          ym[oh * OW + ow] = acc;
        }
    }
  return NULL;
}

kiln_status vendor_run_step(const vendor_step *st) {
  for (uint32_t i = 0; i < st->n_ops; i++)
    if (!st->ptr[i] && st->type[i] && kiln_type_numel(st->type[i]) > 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "vendor: %s (instruction %u): operand %u has no memory",
                              kiln_node_kind_name(st->kind), st->index, i);
  switch (st->kind) {
  case KILN_NODE_Add:
    run_add(st);
    return NULL;
  case KILN_NODE_MatMul:
    run_matmul(st);
    return NULL;
  case KILN_NODE_Gemm:
    run_gemm(st);
    return NULL;
  case KILN_NODE_Conv:
    return run_conv(st);
  case KILN_NODE_Relu: {
    const float *X = st->ptr[1];
    float *Y = st->ptr[0];
    for (int64_t i = 0, n = kiln_type_numel(st->type[0]); i < n; i++)
      Y[i] = X[i] < 0 ? 0.0f : X[i]; /* keeps NaN, as the interpreter does */
    return NULL;
  }
  default:
    return kiln_status_make(KILN_UNIMPLEMENTED, "vendor: no kernel for %s (instruction %u)",
                            kiln_node_kind_name(st->kind), st->index);
  }
}
