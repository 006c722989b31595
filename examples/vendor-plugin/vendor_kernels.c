/* examples/vendor-plugin/vendor_kernels.c: the vendor backend's kernels,
 * f32 only: elementwise unary and broadcasting binary kinds, MatMul,
 * Reshape, Transpose, ReduceSum / ReduceMax and Softmax. Everything else is
 * declined in vendor_node_ok and the core lowers it into these. */
#include <math.h>
#include <string.h>

#include "vendor.h"

bool vendor_kind_supported(kiln_node_kind k) {
  switch (k) {
  case KILN_NODE_Abs:
  case KILN_NODE_Neg:
  case KILN_NODE_Exp:
  case KILN_NODE_Log:
  case KILN_NODE_Sqrt:
  case KILN_NODE_Relu:
  case KILN_NODE_Tanh:
  case KILN_NODE_Sigmoid:
  case KILN_NODE_Reciprocal:
  case KILN_NODE_Add:
  case KILN_NODE_Sub:
  case KILN_NODE_Mul:
  case KILN_NODE_Div:
  case KILN_NODE_Max:
  case KILN_NODE_Min:
  case KILN_NODE_MatMul:
  case KILN_NODE_Reshape:
  case KILN_NODE_Transpose:
  case KILN_NODE_ReduceSum:
  case KILN_NODE_ReduceMax:
  case KILN_NODE_Softmax:
    return true;
  default:
    return false;
  }
}

static bool f32_plain(const kiln_value *v) {
  return !v || (kiln_value_type(v)->elem == KILN_F32 && !kiln_value_type(v)->quantized);
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
  if (k == KILN_NODE_Max || k == KILN_NODE_Min)
    return n == 2; /* the core splits longer lists into pairs */
  if (k == KILN_NODE_MatMul) {
    const kiln_type *a = kiln_value_type(kiln_node_input(node, 0));
    const kiln_type *b = kiln_value_type(kiln_node_input(node, 1));
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
  }
  return true;
}

static float unary(kiln_node_kind k, float x) {
  switch (k) {
  case KILN_NODE_Abs:
    return fabsf(x);
  case KILN_NODE_Neg:
    return -x;
  case KILN_NODE_Exp:
    return expf(x);
  case KILN_NODE_Log:
    return logf(x);
  case KILN_NODE_Sqrt:
    return sqrtf(x);
  case KILN_NODE_Relu:
    return x > 0 ? x : 0;
  case KILN_NODE_Tanh:
    return tanhf(x);
  case KILN_NODE_Sigmoid:
    return 1.0f / (1.0f + expf(-x));
  default:
    return 1.0f / x; /* Reciprocal */
  }
}

static float binary(kiln_node_kind k, float a, float b) {
  switch (k) {
  case KILN_NODE_Add:
    return a + b;
  case KILN_NODE_Sub:
    return a - b;
  case KILN_NODE_Mul:
    return a * b;
  case KILN_NODE_Div:
    return a / b;
  /* NaN propagates, as in the reference interpreter and numpy. */
  case KILN_NODE_Max:
    return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  default:
    return isnan(a) || isnan(b) ? NAN : a < b ? a : b; /* Min */
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

static void run_binary(const vendor_step *st) {
  const kiln_type *o = st->type[0];
  int64_t sa[KILN_MAX_RANK], sb[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
  bcast_strides(st->type[1], o->rank, sa);
  bcast_strides(st->type[2], o->rank, sb);
  const float *a = st->ptr[1], *b = st->ptr[2];
  float *y = st->ptr[0];
  int64_t n = kiln_type_numel(o), oa = 0, ob = 0;
  for (int64_t i = 0; i < n; i++) {
    y[i] = binary(st->kind, a[oa], b[ob]);
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
  int64_t batches = kiln_type_numel(a) / (M * K);
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

static kiln_status run_transpose(const vendor_step *st) {
  const kiln_type *x = st->type[1], *o = st->type[0];
  const kiln_attr *pa = kiln_attrs_find(st->attrs, "perm");
  int64_t perm[KILN_MAX_RANK], xs[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
  for (uint32_t i = 0; i < x->rank; i++)
    perm[i] = pa ? kiln_attr_ints(pa)[i] : (int64_t)(x->rank - 1 - i);
  if (pa && kiln_attr_len(pa) != x->rank)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "vendor: Transpose %u: perm has %u entries",
                            st->index, kiln_attr_len(pa));
  kiln_type_strides(x, xs);
  const float *X = st->ptr[1];
  float *Y = st->ptr[0];
  int64_t n = kiln_type_numel(o);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (uint32_t d = 0; d < o->rank; d++)
      off += idx[d] * xs[perm[d]];
    Y[i] = X[off];
    for (int64_t d = (int64_t)o->rank - 1; d >= 0; d--) {
      if (++idx[d] < o->dims[d])
        break;
      idx[d] = 0;
    }
  }
  return NULL;
}

static void run_reduce(const vendor_step *st) {
  const kiln_type *x = st->type[1];
  const kiln_attr *aa = kiln_attrs_find(st->attrs, "axes");
  bool reduced[KILN_MAX_RANK] = {false};
  uint32_t na = aa ? kiln_attr_len(aa) : 0;
  const float *X = st->ptr[1];
  float *Y = st->ptr[0];
  int64_t n = kiln_type_numel(x);
  if (na == 0 && kiln_attrs_int_or(st->attrs, "noop_with_empty_axes", 0)) {
    memmove(Y, X, (size_t)n * sizeof *X);
    return;
  }
  for (uint32_t i = 0; i < x->rank; i++)
    reduced[i] = na == 0;
  for (uint32_t i = 0; i < na; i++) {
    int64_t a = kiln_attr_ints(aa)[i];
    reduced[a < 0 ? a + x->rank : a] = true;
  }
  /* Output offsets: strides of x's shape with reduced dims set to 1. */
  kiln_type kept = *x;
  for (uint32_t i = 0; i < x->rank; i++)
    if (reduced[i])
      kept.dims[i] = 1;
  int64_t ks[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
  kiln_type_strides(&kept, ks);
  bool is_max = st->kind == KILN_NODE_ReduceMax;
  for (int64_t i = 0; i < kiln_type_numel(&kept); i++)
    Y[i] = is_max ? -INFINITY : 0.0f;
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (uint32_t d = 0; d < x->rank; d++)
      off += reduced[d] ? 0 : idx[d] * ks[d];
    Y[off] = is_max ? (isnan(X[i]) || X[i] > Y[off] ? X[i] : Y[off]) : Y[off] + X[i];
    for (int64_t d = (int64_t)x->rank - 1; d >= 0; d--) {
      if (++idx[d] < x->dims[d])
        break;
      idx[d] = 0;
    }
  }
}

static void run_softmax(const vendor_step *st) {
  const kiln_type *x = st->type[1];
  int64_t axis = kiln_attrs_int_or(st->attrs, "axis", -1);
  if (axis < 0)
    axis += x->rank;
  int64_t outer = 1, inner = 1, n = x->rank ? x->dims[axis] : 1;
  for (int64_t i = 0; i < axis; i++)
    outer *= x->dims[i];
  for (uint32_t i = (uint32_t)axis + 1; i < x->rank; i++)
    inner *= x->dims[i];
  const float *X = st->ptr[1];
  float *Y = st->ptr[0];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      const float *xp = X + o * n * inner + j;
      float *yp = Y + o * n * inner + j;
      float mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; k++)
        mx = xp[k * inner] > mx ? xp[k * inner] : mx;
      for (int64_t k = 0; k < n; k++)
        sum += yp[k * inner] = expf(xp[k * inner] - mx);
      for (int64_t k = 0; k < n; k++)
        yp[k * inner] /= sum;
    }
}

kiln_status vendor_run_step(const vendor_step *st) {
  for (uint32_t i = 0; i < st->n_ops; i++)
    if (!st->ptr[i] && kiln_type_numel(st->type[i]) > 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "vendor: %s (instruction %u): operand %u "
                              "has no memory",
                              kiln_node_kind_name(st->kind), st->index, i);
  int64_t n = kiln_type_numel(st->type[0]);
  switch (st->kind) {
  case KILN_NODE_Add:
  case KILN_NODE_Sub:
  case KILN_NODE_Mul:
  case KILN_NODE_Div:
  case KILN_NODE_Max:
  case KILN_NODE_Min:
    if (st->n_ops != 3)
      return kiln_status_make(KILN_UNIMPLEMENTED, "vendor: %s (instruction %u) with %u inputs",
                              kiln_node_kind_name(st->kind), st->index, st->n_ops - 1);
    run_binary(st);
    return NULL;
  case KILN_NODE_MatMul:
    run_matmul(st);
    return NULL;
  case KILN_NODE_Reshape:
    if (st->ptr[0] != st->ptr[1])
      memmove(st->ptr[0], st->ptr[1], (size_t)kiln_type_bytes(st->type[0]));
    return NULL;
  case KILN_NODE_Transpose:
    return run_transpose(st);
  case KILN_NODE_ReduceSum:
  case KILN_NODE_ReduceMax:
    run_reduce(st);
    return NULL;
  case KILN_NODE_Softmax:
    run_softmax(st);
    return NULL;
  default:
    if (!vendor_kind_supported(st->kind))
      return kiln_status_make(KILN_UNIMPLEMENTED, "vendor: no kernel for %s (instruction %u)",
                              kiln_node_kind_name(st->kind), st->index);
    for (int64_t i = 0; i < n; i++)
      ((float *)st->ptr[0])[i] = unary(st->kind, ((const float *)st->ptr[1])[i]);
    return NULL;
  }
}
