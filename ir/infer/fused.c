/* ir/infer/fused.c: inference for kiln's own FusedElementwise kind: the
 * inputs broadcast to the result, all of one float element type, and the
 * body must parse (ir/fused.c). */
#include "infer.h"

kiln_status kiln_infer_FusedElementwise(const kiln_type *const *in, uint32_t n_in,
                                        const kiln_attrs *attrs, uint32_t n_results,
                                        kiln_type *out) {
  (void)n_results;
  const char *K = "FusedElementwise";
  for (uint32_t i = 0; i < n_in; i++) {
    KILN_TRY(kiln_infer_check_elem(K, "input", in[i], KILN_INFER_FLOAT));
    if (i)
      KILN_TRY(kiln_infer_same_elem(K, "input 0", in[0], "input", in[i]));
  }
  const kiln_attr *body = kiln_attrs_find(attrs, "body");
  if (!body || kiln_attr_get_kind(body) != KILN_ATTR_STRING)
    return kiln_infer_fail(K, "attribute 'body' (string) is required");
  kiln_fused_op ops[KILN_FUSED_MAX_OPS];
  uint32_t n_ops;
  kiln_status s = kiln_fused_parse(kiln_attr_string(body), n_in, ops, KILN_FUSED_MAX_OPS, &n_ops);
  if (s)
    return kiln_status_wrap(s, "%s", K);
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank;
  KILN_TRY(kiln_infer_broadcast(K, in, n_in, dims, &rank));
  return kiln_infer_make(K, in[0]->elem, rank, dims, out);
}
