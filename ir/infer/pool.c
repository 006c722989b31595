/* ir/infer/pool.c: inference of the pools: AveragePool, LpPool, MaxPool,
 * GlobalAveragePool, GlobalMaxPool and MaxUnpool. Their window attributes
 * are read by conv.c's readers (infer.h). */
#include "infer.h"

static kiln_status pool(const char *kind, const kiln_type *x, const kiln_attrs *attrs,
                        uint32_t mask, uint32_t n_results, kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, mask));
  KILN_TRY(kiln_infer_check_rank(kind, "input 0", x, 3, true));
  kiln_infer_window win;
  KILN_TRY(kiln_infer_read_window(kind, attrs, x->rank - 2, NULL, &win));
  bool ceil_mode = kiln_attrs_int_or(attrs, "ceil_mode", 0) != 0;
  int64_t dims[KILN_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (uint32_t i = 0; i < win.n; i++) {
    KILN_TRY(kiln_infer_window_out(kind, &win, i, x->dims[2 + i], ceil_mode, &dims[2 + i]));
  }
  KILN_TRY(kiln_infer_make(kind, x->elem, x->rank, dims, &out[0]));
  if (n_results > 1)
    KILN_TRY(kiln_infer_make(kind, KILN_I64, x->rank, dims, &out[1]));
  return NULL;
}

kiln_status kiln_infer_AveragePool(const kiln_type *const *in, uint32_t n_in,
                                   const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in;
  return pool("AveragePool", in[0], attrs, KILN_INFER_FLOAT, n_results, out);
}

kiln_status kiln_infer_LpPool(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in;
  int64_t p = kiln_attrs_int_or(attrs, "p", 2);
  if (p < 1)
    return kiln_infer_fail("LpPool", "attribute 'p' = %lld must be positive", (long long)p);
  return pool("LpPool", in[0], attrs, KILN_INFER_FLOAT, n_results, out);
}

kiln_status kiln_infer_MaxPool(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                               uint32_t n_results, kiln_type *out) {
  (void)n_in;
  int64_t so = kiln_attrs_int_or(attrs, "storage_order", 0);
  if (so != 0 && so != 1)
    return kiln_infer_fail("MaxPool", "attribute 'storage_order' = %lld must be 0 or 1",
                           (long long)so);
  uint32_t mask = KILN_INFER_FLOAT | KILN_INFER_M(KILN_I8) | KILN_INFER_M(KILN_U8);
  return pool("MaxPool", in[0], attrs, mask, n_results, out);
}

static kiln_status global_pool(const char *kind, const kiln_type *x, kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank(kind, "input 0", x, 3, true));
  int64_t dims[KILN_MAX_RANK];
  for (uint32_t i = 0; i < x->rank; i++)
    dims[i] = i < 2 ? x->dims[i] : 1;
  return kiln_infer_make(kind, x->elem, x->rank, dims, out);
}

kiln_status kiln_infer_GlobalAveragePool(const kiln_type *const *in, uint32_t n_in,
                                         const kiln_attrs *attrs, uint32_t n_results,
                                         kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return global_pool("GlobalAveragePool", in[0], out);
}

kiln_status kiln_infer_GlobalMaxPool(const kiln_type *const *in, uint32_t n_in,
                                     const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return global_pool("GlobalMaxPool", in[0], out);
}

kiln_status kiln_infer_MaxUnpool(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                 uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "MaxUnpool";
  const kiln_type *x = in[0], *idx = in[1];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 3, true));
  KILN_TRY(kiln_infer_check_elem(k, "indices (input 1)", idx, KILN_INFER_M(KILN_I64)));
  bool same = x->rank == idx->rank;
  for (uint32_t i = 0; same && i < x->rank; i++)
    same = x->dims[i] == idx->dims[i];
  if (!same)
    return kiln_infer_fail(k, "indices (input 1) %s must have the shape of input 0 %s",
                           KILN_INFER_TS(idx), KILN_INFER_TS(x));
  uint32_t n = x->rank - 2;
  int64_t kern[KILN_MAX_RANK], strides[KILN_MAX_RANK], pads[2 * KILN_MAX_RANK];
  KILN_TRY(kiln_infer_explicit_window(k, attrs, n, "kernel_shape", kern, strides, pads, NULL));
  int64_t dims[KILN_MAX_RANK] = {x->dims[0], x->dims[1]};
  for (uint32_t i = 0; i < n; i++) {
    int64_t d;
    if (__builtin_mul_overflow(x->dims[2 + i] - 1, strides[i], &d) ||
        __builtin_add_overflow(d, kern[i], &d) || __builtin_sub_overflow(d, pads[i], &d) ||
        __builtin_sub_overflow(d, pads[n + i], &d))
      return kiln_status_make(KILN_OUT_OF_RANGE, "%s: the result dim %u of input 0 %s overflows",
                              k, 2 + i, KILN_INFER_TS(x));
    dims[2 + i] = d;
  }
  const int64_t *os;
  uint32_t nos;
  bool has_os;
  KILN_TRY(kiln_infer_ints(k, attrs, "output_shape", &os, &nos, &has_os));
  if (has_os) {
    if (nos != x->rank)
      return kiln_infer_fail(k, "attribute 'output_shape' has %u entries, expected %u", nos,
                             x->rank);
    for (uint32_t i = 0; i < nos; i++) {
      if (i < 2 ? os[i] != x->dims[i] : os[i] < dims[i])
        return kiln_infer_fail(
            k, "attribute 'output_shape' %s does not fit input 0 %s (at least %s)",
            KILN_INFER_DS(os, nos), KILN_INFER_TS(x), KILN_INFER_DS(dims, x->rank));
      dims[i] = os[i];
    }
  }
  for (uint32_t i = 0; i < x->rank; i++)
    if (dims[i] <= 0)
      return kiln_infer_fail(k, "the result %s would be empty", KILN_INFER_DS(dims, x->rank));
  return kiln_infer_make(k, x->elem, x->rank, dims, out);
}
