/* plugins/interpreter/later.c: kernels of the kinds appended to
 * node_kinds.def after the first set (RMSNormalization, the Bitwise family,
 * Mish, Swish, LpNormalization, the Hann/Hamming/Blackman windows, Det,
 * GroupNormalization, CenterCropPad, MaxUnpool, Col2Im;
 * LpPool is with the pools in movement/pool.c). They
 * follow the house rules of the older families: floats in double, integers
 * as 64-bit patterns. */
#include "kernel.h"

static kiln_status later_need_float(const char *name, const interp_tensor *x) {
  if (interp_class_of(x->type.elem) != INTERP_FLOAT)
    return interp_bad_elem(name, "input", x->type.elem);
  return NULL;
}

/* RMSNormalization: over dims [axis, rank), y = x / sqrt(mean(x^2) + eps)
 * * scale, scale broadcast to x. */
INTERP_KERNEL(RMSNormalization) {
  INTERP_ARITY(RMSNormalization, 1, 2);
  const interp_tensor *x = &ins[0], *scale = &ins[1];
  KILN_TRY(later_need_float("RMSNormalization", x));
  double eps = kiln_attrs_float_or(attrs, "epsilon", 1e-5);
  uint32_t axis;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", -1), x->type.rank, &axis),
               "interpreter RMSNormalization");
  int64_t outer = 1, inner = 1;
  for (uint32_t d = 0; d < x->type.rank; d++)
    *(d < axis ? &outer : &inner) *= x->type.dims[d];
  for (int64_t o = 0; o < outer; o++) {
    int64_t base = o * inner;
    double ss = 0;
    for (int64_t i = 0; i < inner; i++) {
      double v = interp_load_f(x, base + i);
      ss += v * v;
    }
    double inv = 1.0 / sqrt(ss / (double)inner + eps);
    for (int64_t i = 0; i < inner; i++) {
      int64_t si = interp_broadcast_index(&x->type, &scale->type, base + i);
      interp_store_f(&outs[0], base + i,
                     interp_load_f(x, base + i) * inv * interp_load_f(scale, si));
    }
  }
  return NULL;
}

/* The Bitwise kinds work on the bit pattern: signed values are
 * sign-extended to 64 bits and the store keeps the low bits. */
static uint64_t later_bits(const interp_tensor *t, int64_t i) {
  return interp_class_of(t->type.elem) == INTERP_SIGNED ? (uint64_t)interp_load_i(t, i)
                                                        : interp_load_u(t, i);
}

static kiln_status later_need_int(const char *name, const interp_tensor *x) {
  interp_class c = interp_class_of(x->type.elem);
  if (c != INTERP_SIGNED && c != INTERP_UNSIGNED)
    return interp_bad_elem(name, "input", x->type.elem);
  return NULL;
}

enum { LATER_AND, LATER_OR, LATER_XOR };

static kiln_status later_bitwise(const char *name, int op, interp_tensor *outs, uint32_t n_outs,
                                 const interp_tensor *ins, uint32_t n_ins) {
  INTERP_ARITY(bitwise, 1, 2);
  KILN_TRY(later_need_int(name, &ins[0]));
  interp_tensor *y = &outs[0];
  int64_t n = interp_numel(y);
  for (int64_t i = 0; i < n; i++) {
    uint64_t a = later_bits(&ins[0], interp_broadcast_index(&y->type, &ins[0].type, i));
    uint64_t b = later_bits(&ins[1], interp_broadcast_index(&y->type, &ins[1].type, i));
    interp_store_u(y, i, op == LATER_AND ? a & b : op == LATER_OR ? a | b : a ^ b);
  }
  return NULL;
}

INTERP_KERNEL(BitwiseAnd) {
  (void)attrs;
  return later_bitwise("BitwiseAnd", LATER_AND, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(BitwiseOr) {
  (void)attrs;
  return later_bitwise("BitwiseOr", LATER_OR, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(BitwiseXor) {
  (void)attrs;
  return later_bitwise("BitwiseXor", LATER_XOR, outs, n_outs, ins, n_ins);
}

INTERP_KERNEL(BitwiseNot) {
  (void)attrs;
  INTERP_ARITY(BitwiseNot, 1, 1);
  KILN_TRY(later_need_int("BitwiseNot", &ins[0]));
  int64_t n = interp_numel(&outs[0]);
  for (int64_t i = 0; i < n; i++)
    interp_store_u(&outs[0], i, ~later_bits(&ins[0], i));
  return NULL;
}

/* softplus without overflow: log1p(exp(x)) is x itself for large x. */
static double later_softplus(double x) {
  return x > 30.0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double later_sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

INTERP_KERNEL(Mish) {
  (void)attrs;
  INTERP_ARITY(Mish, 1, 1);
  KILN_TRY(later_need_float("Mish", &ins[0]));
  int64_t n = interp_numel(&outs[0]);
  for (int64_t i = 0; i < n; i++) {
    double x = interp_load_f(&ins[0], i);
    interp_store_f(&outs[0], i, x * tanh(later_softplus(x)));
  }
  return NULL;
}

INTERP_KERNEL(Swish) {
  INTERP_ARITY(Swish, 1, 1);
  KILN_TRY(later_need_float("Swish", &ins[0]));
  double alpha = kiln_attrs_float_or(attrs, "alpha", 1.0);
  int64_t n = interp_numel(&outs[0]);
  for (int64_t i = 0; i < n; i++) {
    double x = interp_load_f(&ins[0], i);
    interp_store_f(&outs[0], i, x * later_sigmoid(alpha * x));
  }
  return NULL;
}

/* LpNormalization: each line along `axis` divided by its L1 (sum of |x|)
 * or L2 norm; a line of zeros stays zeros (the ONNX test data wants 0, not
 * 0/0). */
INTERP_KERNEL(LpNormalization) {
  INTERP_ARITY(LpNormalization, 1, 1);
  const interp_tensor *x = &ins[0];
  KILN_TRY(later_need_float("LpNormalization", x));
  uint32_t axis;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", -1), x->type.rank, &axis),
               "interpreter LpNormalization");
  int64_t p = kiln_attrs_int_or(attrs, "p", 2);
  if (p != 1 && p != 2)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter LpNormalization: p = %lld, expected 1 or 2", (long long)p);
  int64_t outer = 1, len = x->type.rank ? x->type.dims[axis] : 1, inner = 1;
  for (uint32_t d = 0; d < x->type.rank; d++) {
    if (d < axis)
      outer *= x->type.dims[d];
    else if (d > axis)
      inner *= x->type.dims[d];
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * len * inner + in;
      double norm = 0;
      for (int64_t j = 0; j < len; j++) {
        double v = interp_load_f(x, base + j * inner);
        norm += p == 1 ? fabs(v) : v * v;
      }
      if (p == 2)
        norm = sqrt(norm);
      for (int64_t j = 0; j < len; j++)
        interp_store_f(&outs[0], base + j * inner,
                       norm == 0 ? 0.0 : interp_load_f(x, base + j * inner) / norm);
    }
  return NULL;
}

/* Windows: w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), with
 * N = size (periodic) or size - 1 (symmetric). */
static kiln_status later_window(const kiln_attrs *attrs, interp_tensor *y, double a0, double a1,
                                double a2) {
  int64_t n = interp_numel(y);
  double N = (double)(kiln_attrs_int_or(attrs, "periodic", 1) ? n : n - 1);
  const double pi = 3.14159265358979323846;
  for (int64_t i = 0; i < n; i++) {
    double t = 2 * pi * (double)i / N;
    double v = a0 - a1 * cos(t) + a2 * cos(2 * t);
    if (interp_class_of(y->type.elem) == INTERP_FLOAT)
      interp_store_f(y, i, v);
    else
      interp_store_i(y, i, (int64_t)v); /* truncates, as a cast of the float window */
  }
  return NULL;
}

INTERP_KERNEL(HannWindow) {
  (void)ins, (void)n_ins;
  if (n_outs < 1)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter HannWindow: no result");
  return later_window(attrs, &outs[0], 0.5, 0.5, 0);
}

INTERP_KERNEL(HammingWindow) {
  (void)ins, (void)n_ins;
  if (n_outs < 1)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter HammingWindow: no result");
  return later_window(attrs, &outs[0], 25.0 / 46, 21.0 / 46, 0);
}

INTERP_KERNEL(BlackmanWindow) {
  (void)ins, (void)n_ins;
  if (n_outs < 1)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter BlackmanWindow: no result");
  return later_window(attrs, &outs[0], 0.42, 0.5, 0.08);
}

/* Det: Gaussian elimination with partial pivoting in double, per matrix of
 * the stack; the sign flips with every row swap. */
INTERP_KERNEL(Det) {
  (void)attrs;
  INTERP_ARITY(Det, 1, 1);
  const interp_tensor *x = &ins[0];
  KILN_TRY(later_need_float("Det", x));
  uint32_t r = x->type.rank;
  if (r < 2 || x->type.dims[r - 1] != x->type.dims[r - 2])
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter Det: input is not a stack of square matrices");
  int64_t m = x->type.dims[r - 1], count = interp_numel(&outs[0]);
  double *a;
  KILN_TRY(interp_scratch("Det", m * m, sizeof *a, (void **)&a));
  for (int64_t b = 0; b < count; b++) {
    for (int64_t i = 0; i < m * m; i++)
      a[i] = interp_load_f(x, b * m * m + i);
    double det = 1;
    for (int64_t c = 0; c < m && det != 0; c++) {
      int64_t piv = c;
      for (int64_t i = c + 1; i < m; i++)
        if (fabs(a[i * m + c]) > fabs(a[piv * m + c]))
          piv = i;
      if (a[piv * m + c] == 0) {
        det = 0;
        break;
      }
      if (piv != c) {
        for (int64_t j = 0; j < m; j++) {
          double t = a[c * m + j];
          a[c * m + j] = a[piv * m + j];
          a[piv * m + j] = t;
        }
        det = -det;
      }
      det *= a[c * m + c];
      for (int64_t i = c + 1; i < m; i++) {
        double f = a[i * m + c] / a[c * m + c];
        for (int64_t j = c; j < m; j++)
          a[i * m + j] -= f * a[c * m + j];
      }
    }
    interp_store_f(&outs[0], b, det);
  }
  free(a);
  return NULL;
}

/* GroupNormalization (opset-21 form): the channels of each sample are split
 * into num_groups groups; each group (its channels and all spatial points)
 * is normalized by its own mean and variance, then every channel gets its
 * scale and bias. */
INTERP_KERNEL(GroupNormalization) {
  INTERP_ARITY(GroupNormalization, 1, 3);
  const interp_tensor *x = &ins[0], *scale = &ins[1], *bias = &ins[2];
  KILN_TRY(later_need_float("GroupNormalization", x));
  int64_t g = kiln_attrs_int_or(attrs, "num_groups", 0);
  double eps = kiln_attrs_float_or(attrs, "epsilon", 1e-5);
  if (x->type.rank < 2 || g <= 0 || x->type.dims[1] % g != 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter GroupNormalization: num_groups %lld does not divide the "
                            "channels",
                            (long long)g);
  int64_t n = x->type.dims[0], c = x->type.dims[1], spatial = 1;
  for (uint32_t d = 2; d < x->type.rank; d++)
    spatial *= x->type.dims[d];
  int64_t len = c / g * spatial;
  for (int64_t b = 0; b < n * g; b++) {
    int64_t base = b * len;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < len; i++)
      mean += interp_load_f(x, base + i);
    mean /= (double)len;
    for (int64_t i = 0; i < len; i++) {
      double dv = interp_load_f(x, base + i) - mean;
      var += dv * dv;
    }
    double inv = 1.0 / sqrt(var / (double)len + eps);
    for (int64_t i = 0; i < len; i++) {
      int64_t ch = (base + i) / spatial % c;
      double v = (interp_load_f(x, base + i) - mean) * inv;
      interp_store_f(&outs[0], base + i, v * interp_load_f(scale, ch) + interp_load_f(bias, ch));
    }
  }
  return NULL;
}

/* CenterCropPad: along each dimension the result window is centred on the
 * input (crop offset floor((in - out) / 2), or a pad of floor((out - in) / 2)
 * before); padded elements are zero. */
INTERP_KERNEL(CenterCropPad) {
  (void)attrs;
  INTERP_ARITY(CenterCropPad, 1, 1);
  const interp_tensor *x = &ins[0];
  interp_tensor *y = &outs[0];
  if (y->type.rank != x->type.rank)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter CenterCropPad: rank mismatch");
  memset(y->data, 0, (size_t)kiln_type_bytes(&y->type));
  int64_t n = interp_numel(y), co[KILN_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    interp_unravel(&y->type, i, co);
    bool inside = true;
    for (uint32_t d = 0; d < y->type.rank && inside; d++) {
      int64_t din = x->type.dims[d], dout = y->type.dims[d];
      co[d] += din >= dout ? (din - dout) / 2 : -((dout - din) / 2);
      inside = co[d] >= 0 && co[d] < din;
    }
    if (inside)
      interp_copy_elem(y, i, x, interp_ravel(&x->type, co));
  }
  return NULL;
}

/* MaxUnpool: zeros, then every input value written at its index, a flat
 * position in the shape that MaxPool's window attributes give back
 * ((in - 1) * stride + kernel - pads). A larger output_shape extends that
 * block with zeros at the end of each dimension (as the ONNX reference
 * does). An index past the block is an error. */
INTERP_KERNEL(MaxUnpool) {
  INTERP_ARITY(MaxUnpool, 1, 2);
  const interp_tensor *x = &ins[0], *idx = &ins[1];
  interp_tensor *y = &outs[0];
  uint32_t nd = x->type.rank - 2;
  const kiln_attr *ak = kiln_attrs_find(attrs, "kernel_shape");
  const kiln_attr *as = kiln_attrs_find(attrs, "strides"), *ap = kiln_attrs_find(attrs, "pads");
  if (x->type.rank < 3 || !ak || kiln_attr_len(ak) != nd)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter MaxUnpool: bad 'kernel_shape'");
  kiln_type block = y->type;
  for (uint32_t d = 0; d < nd; d++) {
    int64_t st = as && kiln_attr_len(as) == nd ? kiln_attr_ints(as)[d] : 1;
    int64_t pb = ap && kiln_attr_len(ap) == 2 * nd ? kiln_attr_ints(ap)[d] : 0;
    int64_t pe = ap && kiln_attr_len(ap) == 2 * nd ? kiln_attr_ints(ap)[nd + d] : 0;
    block.dims[2 + d] = (x->type.dims[2 + d] - 1) * st + kiln_attr_ints(ak)[d] - pb - pe;
  }
  memset(y->data, 0, (size_t)kiln_type_bytes(&y->type));
  int64_t n = interp_numel(x), total = kiln_type_numel(&block), co[KILN_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    int64_t j = interp_load_i(idx, i);
    if (j < 0 || j >= total)
      return kiln_status_make(KILN_OUT_OF_RANGE,
                              "interpreter MaxUnpool: index %lld at position %lld is outside the "
                              "%lld-element unpooled block",
                              (long long)j, (long long)i, (long long)total);
    interp_unravel(&block, j, co);
    interp_copy_elem(y, interp_ravel(&y->type, co), x, i);
  }
  return NULL;
}

/* Col2Im: the inverse of im2col. Column (c, kernel offset k) of block l
 * adds into image position l*stride - pad_begin + k*dilation; positions in
 * the padding are dropped. */
INTERP_KERNEL(Col2Im) {
  INTERP_ARITY(Col2Im, 1, 1);
  const interp_tensor *x = &ins[0];
  interp_tensor *y = &outs[0];
  uint32_t nd = y->type.rank - 2;
  int64_t blk[KILN_MAX_RANK], st[KILN_MAX_RANK], pad[2 * KILN_MAX_RANK], dil[KILN_MAX_RANK];
  int64_t nblk[KILN_MAX_RANK];
  const kiln_attr *ab = kiln_attrs_find(attrs, "block_shape");
  const kiln_attr *as = kiln_attrs_find(attrs, "strides"), *ap = kiln_attrs_find(attrs, "pads");
  const kiln_attr *ad = kiln_attrs_find(attrs, "dilations");
  if (!ab || kiln_attr_len(ab) != nd)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter Col2Im: bad 'block_shape'");
  int64_t kprod = 1, lprod = 1;
  for (uint32_t d = 0; d < nd; d++) {
    blk[d] = kiln_attr_ints(ab)[d];
    st[d] = as && kiln_attr_len(as) == nd ? kiln_attr_ints(as)[d] : 1;
    dil[d] = ad && kiln_attr_len(ad) == nd ? kiln_attr_ints(ad)[d] : 1;
    pad[d] = ap && kiln_attr_len(ap) == 2 * nd ? kiln_attr_ints(ap)[d] : 0;
    pad[nd + d] = ap && kiln_attr_len(ap) == 2 * nd ? kiln_attr_ints(ap)[nd + d] : 0;
    nblk[d] = (y->type.dims[2 + d] + pad[d] + pad[nd + d] - dil[d] * (blk[d] - 1) - 1) / st[d] + 1;
    kprod *= blk[d];
    lprod *= nblk[d];
  }
  if (x->type.dims[2] != lprod)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter Col2Im: input has %lld blocks, "
                            "expected %lld",
                            (long long)x->type.dims[2], (long long)lprod);
  bool is_float = interp_class_of(y->type.elem) == INTERP_FLOAT;
  int64_t total = interp_numel(y), img = total / (y->type.dims[0] * y->type.dims[1]);
  double *acc;
  KILN_TRY(interp_scratch("Col2Im", total, sizeof *acc, (void **)&acc));
  int64_t nc = y->type.dims[0] * y->type.dims[1];
  for (int64_t b = 0; b < nc; b++)
    for (int64_t k = 0; k < kprod; k++)
      for (int64_t l = 0; l < lprod; l++) {
        int64_t kr = k, lr = l, pos = 0;
        bool inside = true;
        for (int d = (int)nd - 1, stride = 1; d >= 0; d--) {
          int64_t kd = kr % blk[d], ld = lr % nblk[d];
          kr /= blk[d], lr /= nblk[d];
          int64_t p = ld * st[d] - pad[d] + kd * dil[d];
          inside = inside && p >= 0 && p < y->type.dims[2 + d];
          pos += p * stride;
          stride *= (int)y->type.dims[2 + d];
        }
        if (inside) {
          int64_t xi = (b * kprod + k) * lprod + l;
          acc[b * img + pos] += is_float ? interp_load_f(x, xi) : (double)interp_load_i(x, xi);
        }
      }
  for (int64_t i = 0; i < total; i++) {
    if (is_float)
      interp_store_f(y, i, acc[i]);
    else
      interp_store_i(y, i, (int64_t)acc[i]);
  }
  free(acc);
  return NULL;
}
