/* plugins/cpu/emit_loss.c: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss as calls to the kernel library (kernels/loss.c).
 * The reduction attribute and ignore_index become constant arguments; a
 * target outside [0, C) is a run-time fault (see emit.h). */
#include "emit_util.h"

#include <string.h>

static bool kcpu_loss_float(kiln_elem e) {
  return e == KILN_F32 || e == KILN_F64 || e == KILN_F16 || e == KILN_BF16;
}

static bool kcpu_loss_int(kiln_elem e) {
  return e == KILN_I32 || e == KILN_I64 || e == KILN_I8 || e == KILN_U8 || e == KILN_I16 ||
         e == KILN_U16 || e == KILN_U32 || e == KILN_U64;
}

static int kcpu_loss_red(const kiln_attrs *a) {
  const char *r = kiln_attrs_string_or(a, "reduction", "mean");
  return !strcmp(r, "none") ? 0 : !strcmp(r, "sum") ? 1 : !strcmp(r, "mean") ? 2 : -1;
}

static bool kcpu_loss_ok(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *t = kcpu_n_in(n, 1), *w = kcpu_n_in(n, 2);
  if (!x || !t || x->rank < 2 || x->quantized || t->quantized || !kcpu_loss_float(x->elem) ||
      !kcpu_loss_int(t->elem) || kcpu_loss_red(kiln_node_attrs(n)) < 0)
    return false;
  if (w && (w->quantized || !kcpu_loss_float(w->elem)))
    return false;
  for (uint32_t i = 0; i < kiln_node_result_count(n); i++) {
    const kiln_type *y = kcpu_n_out(n, i);
    if (y && (y->elem != x->elem || y->quantized))
      return false;
  }
  return true;
}

static kiln_status kcpu_loss_emit(kcpu_emit *e, const kiln_instr *in, bool sce) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *t = kcpu_i_in_type(in, 1),
                  *w = kcpu_i_in_type(in, 2);
  const kiln_attrs *a = kiln_instr_attrs(in);
  int red = kcpu_loss_red(a);
  if (!x || !t || x->rank < 2 || red < 0)
    return kcpu_e_fail(in, "needs [N, C, ...] input, a target and a known reduction");
  const kiln_attr *ig = kiln_attrs_find(a, "ignore_index");
  int64_t inner = kcpu_e_prod(x->dims, 2, x->rank);
  const kiln_buffer *logp = sce && kiln_instr_result_count(in) > 1 ? kcpu_i_out(in, 1) : NULL;
  LLVMValueRef args[16];
  unsigned n = 0;
  args[n++] = kcpu_i64(e, x->elem);
  args[n++] = kcpu_addr(e, kcpu_i_in(in, 0));
  args[n++] = kcpu_i64(e, t->elem);
  args[n++] = kcpu_addr(e, kcpu_i_in(in, 1));
  args[n++] = kcpu_i64(e, w ? w->elem : x->elem);
  args[n++] = kcpu_e_ptr(e, kcpu_i_in(in, 2));
  args[n++] = kcpu_addr(e, kcpu_i_out(in, 0));
  if (sce)
    args[n++] = kcpu_e_ptr(e, logp);
  args[n++] = kcpu_i64(e, x->dims[0]);
  args[n++] = kcpu_i64(e, x->dims[1]);
  args[n++] = kcpu_i64(e, inner);
  args[n++] = kcpu_i64(e, red);
  args[n++] = kcpu_i64(e, ig != NULL);
  args[n++] = kcpu_i64(e, ig ? kiln_attr_int(ig) : 0);
  n += kcpu_e_fault_args(e, in, args + n);
  return kcpu_e_call(e, in, sce ? "kcpu_k_sce" : "kcpu_k_nll", args, n);
}

bool kcpu_supports_NegativeLogLikelihoodLoss(const kiln_node *n) {
  return kcpu_loss_ok(n);
}
kiln_status kcpu_emit_NegativeLogLikelihoodLoss(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_loss_emit(e, in, false);
}
bool kcpu_supports_SoftmaxCrossEntropyLoss(const kiln_node *n) {
  return kcpu_loss_ok(n);
}
kiln_status kcpu_emit_SoftmaxCrossEntropyLoss(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_loss_emit(e, in, true);
}
