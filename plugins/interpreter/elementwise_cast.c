/* plugins/interpreter/elementwise_cast.c: elementwise kernels of one input
 * that change or keep the element type without arithmetic: predicates
 * (IsInf, IsNaN, Not), copies (Identity, Dropout) and conversions (Cast,
 * CastLike). */
#include "kernel.h"

static void copy_all(interp_tensor *y, const interp_tensor *x) {
  size_t bytes = (size_t)interp_numel(y) * kiln_elem_size(y->type.elem);
  if (bytes && y->data != x->data)
    memmove(y->data, x->data, bytes); /* in-place reuse may alias */
}

INTERP_KERNEL(IsInf) {
  INTERP_ARITY(IsInf, 1, 1);
  bool neg = kiln_attrs_int_or(attrs, "detect_negative", 1) != 0;
  bool pos = kiln_attrs_int_or(attrs, "detect_positive", 1) != 0;
  int64_t n = interp_numel(&outs[0]);
  bool is_float = interp_class_of(ins[0].type.elem) == INTERP_FLOAT;
  for (int64_t i = 0; i < n; i++) {
    double v = is_float ? interp_load_f(&ins[0], i) : 0.0; /* integers are never infinite */
    interp_store_i(&outs[0], i, isinf(v) && ((v > 0 && pos) || (v < 0 && neg)));
  }
  return NULL;
}

INTERP_KERNEL(IsNaN) {
  (void)attrs;
  INTERP_ARITY(IsNaN, 1, 1);
  int64_t n = interp_numel(&outs[0]);
  bool is_float = interp_class_of(ins[0].type.elem) == INTERP_FLOAT;
  for (int64_t i = 0; i < n; i++)
    interp_store_i(&outs[0], i, is_float && isnan(interp_load_f(&ins[0], i)));
  return NULL;
}

INTERP_KERNEL(Not) {
  (void)attrs;
  INTERP_ARITY(Not, 1, 1);
  if (ins[0].type.elem != KILN_BOOL)
    return interp_bad_elem("Not", "input", ins[0].type.elem);
  int64_t n = interp_numel(&outs[0]);
  for (int64_t i = 0; i < n; i++)
    interp_store_i(&outs[0], i, interp_load_i(&ins[0], i) == 0);
  return NULL;
}

INTERP_KERNEL(Identity) {
  (void)attrs;
  INTERP_ARITY(Identity, 1, 1);
  copy_all(&outs[0], &ins[0]);
  return NULL;
}

INTERP_KERNEL(Dropout) {
  (void)attrs;
  INTERP_ARITY(Dropout, 1, 1);
  copy_all(&outs[0], &ins[0]);
  if (n_outs > 1 && outs[1].data) {
    int64_t n = interp_numel(&outs[1]);
    for (int64_t i = 0; i < n; i++)
      interp_store_i(&outs[1], i, 1); /* inference: nothing is dropped */
  }
  return NULL;
}

/* Converts every element of x into y's element type (docs/interpreter.md,
 * "Cast"): float -> integer truncates toward zero (NaN -> 0, saturating at
 * the 64-bit range, then wrapping to the width), anything -> bool is
 * "nonzero" (NaN is nonzero), integer -> integer wraps, float -> float
 * rounds to nearest even. */
static void cast_all(interp_tensor *y, const interp_tensor *x) {
  int64_t n = interp_numel(y);
  switch (interp_class_of(x->type.elem)) {
  case INTERP_FLOAT:
    for (int64_t i = 0; i < n; i++)
      interp_store_f(y, i, interp_load_f(x, i));
    break;
  case INTERP_SIGNED:
    for (int64_t i = 0; i < n; i++)
      interp_store_i(y, i, interp_load_i(x, i));
    break;
  default:
    for (int64_t i = 0; i < n; i++)
      interp_store_u(y, i, interp_load_u(x, i));
    break;
  }
}

INTERP_KERNEL(Cast) {
  (void)attrs;
  INTERP_ARITY(Cast, 1, 1);
  if (outs[0].type.elem == ins[0].type.elem)
    copy_all(&outs[0], &ins[0]);
  else
    cast_all(&outs[0], &ins[0]);
  return NULL;
}

INTERP_KERNEL(CastLike) {
  (void)attrs;
  if (n_outs < 1 || n_ins < 1)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter CastLike: expected 1 result and 2 inputs");
  INTERP_ARITY(CastLike, 1, 1); /* input 1 only lends its type */
  if (outs[0].type.elem == ins[0].type.elem)
    copy_all(&outs[0], &ins[0]);
  else
    cast_all(&outs[0], &ins[0]);
  return NULL;
}
