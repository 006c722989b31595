/* ir/infer/later.c: inference of the kinds appended to node_kinds.def after
 * the first set: RMSNormalization, the Bitwise family, Mish, Swish,
 * LpNormalization, the window generators and Det (LpPool is in conv.c with
 * the other pools). */
#include <string.h>

#include "ir/infer/infer.h"

kiln_status kiln_infer_RMSNormalization(const kiln_type *const *in, uint32_t n_in,
                                        const kiln_attrs *attrs, uint32_t n_results,
                                        kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "RMSNormalization";
  const kiln_type *x = in[0], *scale = in[1];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  uint32_t axis;
  KILN_TRY(kiln_infer_axis(k, "axis", kiln_attrs_int_or(attrs, "axis", -1), x->rank, false, &axis));
  KILN_TRY(kiln_infer_same_elem(k, "input 0", x, "scale (input 1)", scale));
  if (!kiln_infer_broadcasts_to(scale, x))
    return kiln_infer_fail(k, "scale (input 1) %s does not broadcast to input 0 %s",
                           KILN_INFER_TS(scale), KILN_INFER_TS(x));
  kiln_elem stash;
  KILN_TRY(kiln_infer_type_attr(k, attrs, "stash_type", KILN_F32, &stash, NULL));
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

static kiln_status bitwise(const char *kind, const kiln_type *const *in, kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", in[0], KILN_INFER_INT));
  KILN_TRY(kiln_infer_same_elem(kind, "input 0", in[0], "input 1", in[1]));
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_broadcast(kind, in, 2, dims, &rank));
  return kiln_infer_make(kind, in[0]->elem, rank, dims, out);
}

#define BITWISE(name)                                                                              \
  kiln_status kiln_infer_##name(const kiln_type *const *in, uint32_t n_in,                         \
                                const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {     \
    (void)n_in, (void)attrs, (void)n_results;                                                      \
    return bitwise(#name, in, out);                                                                \
  }
BITWISE(BitwiseAnd)
BITWISE(BitwiseOr)
BITWISE(BitwiseXor)

static kiln_status same_as_input(const char *kind, const kiln_type *x, uint32_t mask,
                                 kiln_type *out) {
  KILN_TRY(kiln_infer_check_elem(kind, "input 0", x, mask));
  return kiln_infer_make(kind, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_BitwiseNot(const kiln_type *const *in, uint32_t n_in,
                                  const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return same_as_input("BitwiseNot", in[0], KILN_INFER_INT, out);
}

kiln_status kiln_infer_Mish(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return same_as_input("Mish", in[0], KILN_INFER_FLOAT, out);
}

kiln_status kiln_infer_Swish(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  return same_as_input("Swish", in[0], KILN_INFER_FLOAT, out);
}

kiln_status kiln_infer_LpNormalization(const kiln_type *const *in, uint32_t n_in,
                                       const kiln_attrs *attrs, uint32_t n_results,
                                       kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "LpNormalization";
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem(k, "input 0", x, KILN_INFER_FLOAT));
  uint32_t axis;
  KILN_TRY(kiln_infer_axis(k, "axis", kiln_attrs_int_or(attrs, "axis", -1), x->rank, false, &axis));
  int64_t p = kiln_attrs_int_or(attrs, "p", 2);
  if (p != 1 && p != 2)
    return kiln_infer_fail(k, "attribute 'p' = %lld must be 1 or 2", (long long)p);
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

/* A window of `size` samples; the element type is any float or integer
 * (ONNX allows both; integer windows truncate). */
static kiln_status window(const char *kind, const kiln_attrs *attrs, kiln_type *out) {
  if (!kiln_attrs_find(attrs, "size"))
    return kiln_infer_fail(kind, "attribute 'size' is required");
  int64_t size = kiln_attrs_int_or(attrs, "size", 0);
  if (size < 0)
    return kiln_infer_fail(kind, "attribute 'size' = %lld must not be negative", (long long)size);
  int64_t periodic = kiln_attrs_int_or(attrs, "periodic", 1);
  if (periodic != 0 && periodic != 1)
    return kiln_infer_fail(kind, "attribute 'periodic' = %lld must be 0 or 1", (long long)periodic);
  kiln_elem e;
  KILN_TRY(kiln_infer_type_attr(kind, attrs, "output_datatype", KILN_F32, &e, NULL));
  kiln_type probe = {.elem = e};
  KILN_TRY(kiln_infer_check_elem(kind, "the result (attribute 'output_datatype')", &probe,
                                 KILN_INFER_NUM));
  return kiln_infer_make(kind, e, 1, &size, out);
}

#define WINDOW(name)                                                                               \
  kiln_status kiln_infer_##name(const kiln_type *const *in, uint32_t n_in,                         \
                                const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {     \
    (void)in, (void)n_in, (void)n_results;                                                         \
    return window(#name, attrs, out);                                                              \
  }
WINDOW(HannWindow)
WINDOW(HammingWindow)
WINDOW(BlackmanWindow)

kiln_status kiln_infer_Det(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                           uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem("Det", "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank("Det", "input 0", x, 2, true));
  if (x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return kiln_infer_fail("Det", "input 0 %s is not a stack of square matrices", KILN_INFER_TS(x));
  return kiln_infer_make("Det", x->elem, x->rank - 2, x->dims, out);
}
