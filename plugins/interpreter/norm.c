/* plugins/interpreter/norm.c: normalization kernels (BatchNormalization in
 * inference form, InstanceNormalization, LayerNormalization,
 * MeanVarianceNormalization, LRN, RMSNormalization, LpNormalization,
 * GroupNormalization) and the softmax kinds (Softmax, LogSoftmax, Hardmax).
 * Statistics are computed in double with the two-pass formula (mean first,
 * then squared deviations), which loses nothing for the sizes an
 * interpreter meets. */
#include "kernel.h"

/* Channels and the product of the dims after them (x is N x C x ...). */
static void channel_layout(const kiln_type *t, int64_t *n, int64_t *c, int64_t *inner) {
  *n = t->rank > 0 ? t->dims[0] : 1;
  *c = t->rank > 1 ? t->dims[1] : 1;
  *inner = 1;
  for (uint32_t d = 2; d < t->rank; d++)
    *inner *= t->dims[d];
}

INTERP_KERNEL(BatchNormalization) {
  INTERP_ARITY(BatchNormalization, 1, 5);
  KILN_TRY(interp_need_float("BatchNormalization", &ins[0]));
  double eps = kiln_attrs_float_or(attrs, "epsilon", 1e-5);
  int64_t n, c, inner;
  channel_layout(&ins[0].type, &n, &c, &inner);
  for (int64_t ch = 0; ch < c; ch++) {
    double scale = interp_load_f(&ins[1], ch), bias = interp_load_f(&ins[2], ch);
    double mean = interp_load_f(&ins[3], ch), var = interp_load_f(&ins[4], ch);
    double k = scale / sqrt(var + eps);
    for (int64_t b = 0; b < n; b++)
      for (int64_t i = 0; i < inner; i++) {
        int64_t idx = (b * c + ch) * inner + i;
        interp_store_f(&outs[0], idx, (interp_load_f(&ins[0], idx) - mean) * k + bias);
      }
  }
  return NULL;
}

INTERP_KERNEL(InstanceNormalization) {
  INTERP_ARITY(InstanceNormalization, 1, 3);
  KILN_TRY(interp_need_float("InstanceNormalization", &ins[0]));
  double eps = kiln_attrs_float_or(attrs, "epsilon", 1e-5);
  int64_t n, c, inner;
  channel_layout(&ins[0].type, &n, &c, &inner);
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++) {
      int64_t base = (b * c + ch) * inner;
      double mean = 0.0, var = 0.0;
      for (int64_t i = 0; i < inner; i++)
        mean += interp_load_f(&ins[0], base + i);
      mean /= (double)inner;
      for (int64_t i = 0; i < inner; i++) {
        double d = interp_load_f(&ins[0], base + i) - mean;
        var += d * d;
      }
      var /= (double)inner;
      double k = interp_load_f(&ins[1], ch) / sqrt(var + eps), bias = interp_load_f(&ins[2], ch);
      for (int64_t i = 0; i < inner; i++)
        interp_store_f(&outs[0], base + i, (interp_load_f(&ins[0], base + i) - mean) * k + bias);
    }
  return NULL;
}

/* LayerNormalization normalizes over dims [axis, rank); Scale and B
 * broadcast to X (numpy rules); results 1 and 2 are Mean and InvStdDev of
 * shape X with those dims set to 1. */
INTERP_KERNEL(LayerNormalization) {
  INTERP_ARITY(LayerNormalization, 1, 2);
  const interp_tensor *x = &ins[0];
  KILN_TRY(interp_need_float("LayerNormalization", x));
  double eps = kiln_attrs_float_or(attrs, "epsilon", 1e-5);
  uint32_t axis;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", -1), x->type.rank, &axis),
               "interpreter LayerNormalization");
  int64_t outer = 1, inner = 1;
  for (uint32_t d = 0; d < x->type.rank; d++)
    *(d < axis ? &outer : &inner) *= x->type.dims[d];
  const interp_tensor *bias = interp_opt(ins, n_ins, 2);
  interp_tensor *mean_out = n_outs > 1 && outs[1].data ? &outs[1] : NULL;
  interp_tensor *inv_out = n_outs > 2 && outs[2].data ? &outs[2] : NULL;
  for (int64_t o = 0; o < outer; o++) {
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < inner; i++)
      mean += interp_load_f(x, o * inner + i);
    mean /= (double)inner;
    for (int64_t i = 0; i < inner; i++) {
      double d = interp_load_f(x, o * inner + i) - mean;
      var += d * d;
    }
    var /= (double)inner;
    double inv = 1.0 / sqrt(var + eps);
    for (int64_t i = 0; i < inner; i++) {
      int64_t idx = o * inner + i;
      double s = interp_load_f(&ins[1], interp_broadcast_index(&x->type, &ins[1].type, idx));
      double b = bias ? interp_load_f(bias, interp_broadcast_index(&x->type, &bias->type, idx)) : 0;
      interp_store_f(&outs[0], idx, (interp_load_f(x, idx) - mean) * inv * s + b);
    }
    if (mean_out)
      interp_store_f(mean_out, o, mean);
    if (inv_out)
      interp_store_f(inv_out, o, inv);
  }
  return NULL;
}

/* MVN: (x - mean) / (sqrt(var) + 1e-9) over `axes` (default [0, 2, 3]),
 * the epsilon of the ONNX function body. */
INTERP_KERNEL(MeanVarianceNormalization) {
  INTERP_ARITY(MeanVarianceNormalization, 1, 1);
  const interp_tensor *x = &ins[0];
  KILN_TRY(interp_need_float("MeanVarianceNormalization", x));
  static const int64_t dflt[] = {0, 2, 3};
  const kiln_attr *a = kiln_attrs_find(attrs, "axes");
  const int64_t *axes = a ? kiln_attr_ints(a) : dflt;
  uint32_t n_axes = a ? kiln_attr_len(a) : 3;
  bool mask[KILN_MAX_RANK] = {0};
  for (uint32_t k = 0; k < n_axes; k++) {
    uint32_t ax;
    KILN_TRY_CTX(interp_axis(axes[k], x->type.rank, &ax),
                 "interpreter MeanVarianceNormalization: axes[%u]", k);
    mask[ax] = true;
  }
  kiln_type st = x->type; /* the statistics' shape: reduced dims set to 1 */
  for (uint32_t d = 0; d < st.rank; d++)
    if (mask[d])
      st.dims[d] = 1;
  int64_t n_st = 1, n = interp_numel(x);
  for (uint32_t d = 0; d < st.rank; d++)
    n_st *= st.dims[d];
  double *sum, *sq;
  KILN_TRY(interp_scratch("MeanVarianceNormalization", n_st, sizeof *sum, (void **)&sum));
  kiln_status s = interp_scratch("MeanVarianceNormalization", n_st, sizeof *sq, (void **)&sq);
  if (s) {
    free(sum);
    return s;
  }
  double count = n_st ? (double)n / (double)n_st : 1.0;
  for (int64_t i = 0; i < n; i++)
    sum[interp_broadcast_index(&x->type, &st, i)] += interp_load_f(x, i);
  for (int64_t i = 0; i < n; i++) {
    int64_t j = interp_broadcast_index(&x->type, &st, i);
    double d = interp_load_f(x, i) - sum[j] / count;
    sq[j] += d * d;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t j = interp_broadcast_index(&x->type, &st, i);
    double mean = sum[j] / count, sd = sqrt(sq[j] / count);
    interp_store_f(&outs[0], i, (interp_load_f(x, i) - mean) / (sd + 1e-9));
  }
  free(sum);
  free(sq);
  return NULL;
}

/* LRN across channels: the window for channel c is
 * [c - floor((size-1)/2), c + ceil((size-1)/2)], clipped to the tensor. */
INTERP_KERNEL(LRN) {
  INTERP_ARITY(LRN, 1, 1);
  const interp_tensor *x = &ins[0];
  KILN_TRY(interp_need_float("LRN", x));
  double alpha = kiln_attrs_float_or(attrs, "alpha", 1e-4);
  double beta = kiln_attrs_float_or(attrs, "beta", 0.75);
  double bias = kiln_attrs_float_or(attrs, "bias", 1.0);
  int64_t size = kiln_attrs_int_or(attrs, "size", 0);
  if (size <= 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter LRN: size must be positive, got %lld", (long long)size);
  int64_t n, c, inner;
  channel_layout(&x->type, &n, &c, &inner);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t i = 0; i < inner; i++) {
        double sq = 0.0;
        /* the window clipped first: size is an attribute, as large as a
         * model asks */
        int64_t k0 = ch - (lo < ch ? lo : ch), k1 = ch + (hi < c - 1 - ch ? hi : c - 1 - ch);
        for (int64_t k = k0; k <= k1; k++) {
          double v = interp_load_f(x, (b * c + k) * inner + i);
          sq += v * v;
        }
        int64_t idx = (b * c + ch) * inner + i;
        interp_store_f(&outs[0], idx,
                       interp_load_f(x, idx) / pow(bias + alpha / (double)size * sq, beta));
      }
  return NULL;
}

/* RMSNormalization: over dims [axis, rank), y = x / sqrt(mean(x^2) + eps)
 * * scale, scale broadcast to x. */
INTERP_KERNEL(RMSNormalization) {
  INTERP_ARITY(RMSNormalization, 1, 2);
  const interp_tensor *x = &ins[0], *scale = &ins[1];
  KILN_TRY(interp_need_float("RMSNormalization", x));
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

/* LpNormalization: each line along `axis` divided by its L1 (sum of |x|)
 * or L2 norm; a line of zeros stays zeros (the ONNX test data wants 0, not
 * 0/0). */
INTERP_KERNEL(LpNormalization) {
  INTERP_ARITY(LpNormalization, 1, 1);
  const interp_tensor *x = &ins[0];
  KILN_TRY(interp_need_float("LpNormalization", x));
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

/* GroupNormalization (opset-21 form): the channels of each sample are split
 * into num_groups groups; each group (its channels and all spatial points)
 * is normalized by its own mean and variance, then every channel gets its
 * scale and bias. */
INTERP_KERNEL(GroupNormalization) {
  INTERP_ARITY(GroupNormalization, 1, 3);
  const interp_tensor *x = &ins[0], *scale = &ins[1], *bias = &ins[2];
  KILN_TRY(interp_need_float("GroupNormalization", x));
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

typedef enum { SM_SOFT, SM_LOG, SM_HARD } softmax_kind;

static kiln_status softmax_run(const char *name, softmax_kind kind, const kiln_attrs *attrs,
                               interp_tensor *outs, uint32_t n_outs, const interp_tensor *ins,
                               uint32_t n_ins) {
  INTERP_ARITY(softmax, 1, 1);
  const interp_tensor *x = &ins[0];
  interp_tensor *y = &outs[0];
  if (interp_class_of(x->type.elem) != INTERP_FLOAT)
    return interp_bad_elem(name, "input", x->type.elem);
  interp_axis_view v;
  KILN_TRY(interp_axis_view_make(name, &x->type, kiln_attrs_int_or(attrs, "axis", -1), &v));
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t in = 0; in < v.inner; in++) {
      double mx = -INFINITY;
      int64_t arg = 0;
      for (int64_t k = 0; k < v.len; k++) {
        double e = interp_load_f(x, interp_axis_at(&v, o, in, k));
        if (e > mx || (isnan(e) && !isnan(mx))) {
          mx = e;
          arg = k;
        }
      }
      if (kind == SM_HARD) {
        for (int64_t k = 0; k < v.len; k++)
          interp_store_f(y, interp_axis_at(&v, o, in, k), k == arg ? 1.0 : 0.0);
        continue;
      }
      /* Subtracting the maximum keeps exp() finite; an all -inf lane
       * stays NaN like the reference. */
      double sum = 0.0;
      for (int64_t k = 0; k < v.len; k++)
        sum += exp(interp_load_f(x, interp_axis_at(&v, o, in, k)) - mx);
      for (int64_t k = 0; k < v.len; k++) {
        double d = interp_load_f(x, interp_axis_at(&v, o, in, k)) - mx;
        interp_store_f(y, interp_axis_at(&v, o, in, k),
                       kind == SM_LOG ? d - log(sum) : exp(d) / sum);
      }
    }
  return NULL;
}

INTERP_KERNEL(Softmax) {
  return softmax_run("Softmax", SM_SOFT, attrs, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(LogSoftmax) {
  return softmax_run("LogSoftmax", SM_LOG, attrs, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(Hardmax) {
  return softmax_run("Hardmax", SM_HARD, attrs, outs, n_outs, ins, n_ins);
}
