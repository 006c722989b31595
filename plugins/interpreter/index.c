/* plugins/interpreter/index.c: indexed reads and writes (Gather,
 * GatherElements, GatherND, ScatterND, ScatterElements) and OneHot.
 * Negative indices count from the end; an index out of range is an error
 * naming the kernel (OneHot instead leaves such a row all off_value). */
#include "kernel.h"

#include <string.h>

static kiln_status mv_index(const char *k, const interp_tensor *idx, int64_t i, int64_t dim,
                            int64_t *out) {
  int64_t v = interp_mv_load_int(idx, i);
  if (v < 0)
    v += dim;
  if (v < 0 || v >= dim)
    return interp_mv_err(KILN_OUT_OF_RANGE, k,
                         "index %lld out of range for dimension %lld (element %lld of the "
                         "indices)",
                         (long long)interp_mv_load_int(idx, i), (long long)dim, (long long)i);
  *out = v;
  return NULL;
}

kiln_status interp_Gather(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *dt = &ins[0].type;
  uint32_t a;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", 0), dt->rank, &a),
               "interpreter Gather");
  int64_t outer = interp_mv_prod(dt->dims, 0, a), inner = interp_mv_prod(dt->dims, a + 1, dt->rank);
  int64_t nidx = interp_mv_numel(&ins[1]), d = dt->dims[a];
  if (interp_mv_numel(&outs[0]) != outer * nidx * inner)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Gather", "result size mismatch");
  for (int64_t k = 0; k < nidx; k++) {
    int64_t x = 0;
    KILN_TRY(mv_index("Gather", &ins[1], k, d, &x));
    for (int64_t o = 0; o < outer; o++)
      interp_mv_copy_run(&outs[0], (o * nidx + k) * inner, &ins[0], (o * d + x) * inner, inner);
  }
  return NULL;
}

kiln_status interp_GatherElements(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                  const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *dt = &ins[0].type, *it = &ins[1].type;
  uint32_t a;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", 0), dt->rank, &a),
               "interpreter GatherElements");
  if (it->rank != dt->rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "GatherElements", "indices rank differs");
  int64_t st[KILN_MAX_RANK], c[KILN_MAX_RANK], n = interp_mv_numel(&ins[1]);
  interp_mv_strides(dt->dims, dt->rank, st);
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(it->dims, it->rank, o, c);
    KILN_TRY(mv_index("GatherElements", &ins[1], o, dt->dims[a], &c[a]));
    int64_t src = 0;
    for (uint32_t k = 0; k < dt->rank; k++)
      src += c[k] * st[k];
    interp_copy_elem(&outs[0], o, &ins[0], src);
  }
  return NULL;
}

/* Shared walk of GatherND/ScatterND: for tuple t of `indices` (all dims but
 * the last), the flat offset of the addressed slice in data. */
static kiln_status mv_nd_offset(const char *k, const kiln_type *dt, const interp_tensor *idx,
                                int64_t b, int64_t t, int64_t tuples_per_batch, int64_t *off) {
  const kiln_type *it = &idx->type;
  int64_t m = it->dims[it->rank - 1];
  int64_t batch = t / tuples_per_batch;
  int64_t o = batch * interp_mv_prod(dt->dims, (uint32_t)b, dt->rank);
  for (int64_t j = 0; j < m; j++) {
    int64_t x = 0;
    KILN_TRY(mv_index(k, idx, t * m + j, dt->dims[b + j], &x));
    o += x * interp_mv_prod(dt->dims, (uint32_t)(b + j + 1), dt->rank);
  }
  *off = o;
  return NULL;
}

kiln_status interp_GatherND(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                            const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *dt = &ins[0].type, *it = &ins[1].type;
  int64_t b = kiln_attrs_int_or(attrs, "batch_dims", 0);
  if (it->rank < 1 || b < 0 || b >= (int64_t)it->rank ||
      b + it->dims[it->rank - 1] > (int64_t)dt->rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "GatherND", "bad batch_dims or index depth");
  int64_t m = it->dims[it->rank - 1];
  int64_t slice = interp_mv_prod(dt->dims, (uint32_t)(b + m), dt->rank);
  int64_t tuples = interp_mv_prod(it->dims, 0, it->rank - 1);
  int64_t per_batch = interp_mv_prod(it->dims, (uint32_t)b, it->rank - 1);
  if (interp_mv_numel(&outs[0]) != tuples * slice)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "GatherND", "result size mismatch");
  for (int64_t t = 0; t < tuples; t++) {
    int64_t off;
    KILN_TRY(mv_nd_offset("GatherND", dt, &ins[1], b, t, per_batch ? per_batch : 1, &off));
    interp_mv_copy_run(&outs[0], t * slice, &ins[0], off, slice);
  }
  return NULL;
}

typedef enum { MV_RED_NONE, MV_RED_ADD, MV_RED_MUL, MV_RED_MAX, MV_RED_MIN } mv_red;

static kiln_status mv_reduction(const char *k, const kiln_attrs *attrs, mv_red *out) {
  const char *r = kiln_attrs_string_or(attrs, "reduction", "none");
  *out = !strcmp(r, "none")  ? MV_RED_NONE
         : !strcmp(r, "add") ? MV_RED_ADD
         : !strcmp(r, "mul") ? MV_RED_MUL
         : !strcmp(r, "max") ? MV_RED_MAX
         : !strcmp(r, "min") ? MV_RED_MIN
                             : (mv_red)-1;
  if ((int)*out < 0)
    return interp_mv_err(KILN_INVALID_ARGUMENT, k, "unknown reduction '%s'", r);
  return NULL;
}

/* out[j] = reduce(out[j], upd[i]) in the element type's arithmetic. */
static void mv_apply(mv_red red, interp_tensor *out, int64_t j, const interp_tensor *upd,
                     int64_t i) {
  if (red == MV_RED_NONE) {
    interp_copy_elem(out, j, upd, i);
    return;
  }
  switch (interp_mv_class(out->type.elem)) {
  case INTERP_MV_F: {
    double a = interp_load_f(out, j), b = interp_load_f(upd, i);
    double r = red == MV_RED_ADD   ? a + b
               : red == MV_RED_MUL ? a * b
               : red == MV_RED_MAX ? (a >= b || a != a ? a : b)
                                   : (a <= b || a != a ? a : b);
    interp_store_f(out, j, r);
    break;
  }
  case INTERP_MV_S: {
    int64_t a = interp_load_i(out, j), b = interp_load_i(upd, i);
    uint64_t r = red == MV_RED_ADD   ? (uint64_t)a + (uint64_t)b
                 : red == MV_RED_MUL ? (uint64_t)a * (uint64_t)b
                 : red == MV_RED_MAX ? (uint64_t)(a > b ? a : b)
                                     : (uint64_t)(a < b ? a : b);
    interp_mv_store_bits(out, j, r);
    break;
  }
  default: {
    uint64_t a = interp_load_u(out, j), b = interp_load_u(upd, i);
    uint64_t r = red == MV_RED_ADD   ? a + b
                 : red == MV_RED_MUL ? a * b
                 : red == MV_RED_MAX ? (a > b ? a : b)
                                     : (a < b ? a : b);
    if (out->type.elem == KILN_BOOL && red == MV_RED_ADD)
      r = a || b;
    interp_mv_store_bits(out, j, r);
  }
  }
}

kiln_status interp_ScatterND(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                             const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *dt = &ins[0].type, *it = &ins[1].type;
  mv_red red;
  KILN_TRY(mv_reduction("ScatterND", attrs, &red));
  if (it->rank < 1 || it->dims[it->rank - 1] > (int64_t)dt->rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "ScatterND", "index depth exceeds data rank");
  int64_t m = it->dims[it->rank - 1];
  int64_t slice = interp_mv_prod(dt->dims, (uint32_t)m, dt->rank);
  int64_t tuples = interp_mv_prod(it->dims, 0, it->rank - 1);
  if (interp_mv_numel(&ins[2]) != tuples * slice)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "ScatterND",
                         "updates has %lld elements, expected %lld",
                         (long long)interp_mv_numel(&ins[2]), (long long)(tuples * slice));
  interp_mv_copy_run(&outs[0], 0, &ins[0], 0, interp_mv_numel(&ins[0]));
  for (int64_t t = 0; t < tuples; t++) {
    int64_t off;
    KILN_TRY(mv_nd_offset("ScatterND", dt, &ins[1], 0, t, tuples, &off));
    for (int64_t s = 0; s < slice; s++)
      mv_apply(red, &outs[0], off + s, &ins[2], t * slice + s);
  }
  return NULL;
}

kiln_status interp_ScatterElements(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                   const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *dt = &ins[0].type, *it = &ins[1].type;
  mv_red red;
  KILN_TRY(mv_reduction("ScatterElements", attrs, &red));
  uint32_t a;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", 0), dt->rank, &a),
               "interpreter ScatterElements");
  if (it->rank != dt->rank || interp_mv_numel(&ins[2]) != interp_mv_numel(&ins[1]))
    return interp_mv_err(KILN_INVALID_ARGUMENT, "ScatterElements",
                         "indices and updates must match in shape, and data in rank");
  interp_mv_copy_run(&outs[0], 0, &ins[0], 0, interp_mv_numel(&ins[0]));
  int64_t st[KILN_MAX_RANK], c[KILN_MAX_RANK], n = interp_mv_numel(&ins[1]);
  interp_mv_strides(dt->dims, dt->rank, st);
  for (int64_t i = 0; i < n; i++) {
    interp_mv_unravel(it->dims, it->rank, i, c);
    KILN_TRY(mv_index("ScatterElements", &ins[1], i, dt->dims[a], &c[a]));
    int64_t dst = 0;
    for (uint32_t k = 0; k < dt->rank; k++)
      dst += c[k] * st[k];
    mv_apply(red, &outs[0], dst, &ins[2], i);
  }
  return NULL;
}

kiln_status interp_OneHot(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *ot = &outs[0].type;
  uint32_t a;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", -1), ot->rank, &a),
               "interpreter OneHot");
  int64_t depth = ot->dims[a];
  if (interp_mv_numel(&ins[1]) < 2)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "OneHot", "values needs 2 elements");
  int64_t outer = interp_mv_prod(ot->dims, 0, a);
  int64_t inner = interp_mv_prod(ot->dims, a + 1, ot->rank);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t idx = interp_mv_load_int(&ins[0], o * inner + in);
      if (idx < 0)
        idx += depth;
      for (int64_t d = 0; d < depth; d++)
        interp_copy_elem(&outs[0], (o * depth + d) * inner + in, &ins[1], d == idx ? 1 : 0);
    }
  return NULL;
}
