/* plugins/interpreter/elementwise_variadic.c: elementwise kernels over any
 * number of broadcast inputs (Max, Min, Mean, Sum) and the selection
 * kernels Where and Clip. Max and Min propagate NaN like
 * numpy.maximum/minimum. */
#include "kernel.h"

typedef enum { V_MAX, V_MIN, V_MEAN, V_SUM } variadic_op;

static double fold_f(variadic_op op, double acc, double v) {
  switch (op) {
  case V_MAX:
    return isnan(acc) || isnan(v) ? NAN : (v > acc ? v : acc);
  case V_MIN:
    return isnan(acc) || isnan(v) ? NAN : (v < acc ? v : acc);
  default:
    return acc + v;
  }
}

static kiln_status variadic_run(const char *name, variadic_op op, interp_tensor *outs,
                                uint32_t n_outs, const interp_tensor *ins, uint32_t n_ins) {
  INTERP_ARITY(variadic, 1, 1);
  for (uint32_t k = 0; k < n_ins; k++)
    if (!ins[k].data && interp_numel(&ins[k]) > 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter %s: input %u is absent", name, k);
  interp_tensor *y = &outs[0];
  interp_class c = interp_class_of(y->type.elem);
  if (c == INTERP_BOOL || (op == V_MEAN && c != INTERP_FLOAT))
    return interp_bad_elem(name, "input", y->type.elem);
  int64_t n = interp_numel(y);
  for (int64_t i = 0; i < n; i++) {
    if (c == INTERP_FLOAT) {
      double acc = interp_load_f(&ins[0], interp_broadcast_index(&y->type, &ins[0].type, i));
      for (uint32_t k = 1; k < n_ins; k++)
        acc = fold_f(op, acc,
                     interp_load_f(&ins[k], interp_broadcast_index(&y->type, &ins[k].type, i)));
      interp_store_f(y, i, op == V_MEAN ? acc / n_ins : acc);
    } else if (c == INTERP_SIGNED) {
      int64_t acc = interp_load_i(&ins[0], interp_broadcast_index(&y->type, &ins[0].type, i));
      for (uint32_t k = 1; k < n_ins; k++) {
        int64_t v = interp_load_i(&ins[k], interp_broadcast_index(&y->type, &ins[k].type, i));
        acc = op == V_MAX   ? (v > acc ? v : acc)
              : op == V_MIN ? (v < acc ? v : acc)
                            : (int64_t)((uint64_t)acc + (uint64_t)v);
      }
      interp_store_i(y, i, acc);
    } else {
      uint64_t acc = interp_load_u(&ins[0], interp_broadcast_index(&y->type, &ins[0].type, i));
      for (uint32_t k = 1; k < n_ins; k++) {
        uint64_t v = interp_load_u(&ins[k], interp_broadcast_index(&y->type, &ins[k].type, i));
        acc = op == V_MAX ? (v > acc ? v : acc) : op == V_MIN ? (v < acc ? v : acc) : acc + v;
      }
      interp_store_u(y, i, acc);
    }
  }
  return NULL;
}

INTERP_KERNEL(Max) {
  (void)attrs;
  return variadic_run("Max", V_MAX, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(Min) {
  (void)attrs;
  return variadic_run("Min", V_MIN, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(Mean) {
  (void)attrs;
  return variadic_run("Mean", V_MEAN, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(Sum) {
  (void)attrs;
  return variadic_run("Sum", V_SUM, outs, n_outs, ins, n_ins);
}

INTERP_KERNEL(Where) {
  (void)attrs;
  INTERP_ARITY(Where, 1, 3);
  if (ins[0].type.elem != KILN_BOOL)
    return interp_bad_elem("Where", "condition", ins[0].type.elem);
  interp_tensor *y = &outs[0];
  int64_t n = interp_numel(y);
  for (int64_t i = 0; i < n; i++) {
    bool cond = interp_load_i(&ins[0], interp_broadcast_index(&y->type, &ins[0].type, i)) != 0;
    const interp_tensor *src = cond ? &ins[1] : &ins[2];
    interp_copy_elem(y, i, src, interp_broadcast_index(&y->type, &src->type, i));
  }
  return NULL;
}

/* Clip: absent bounds are unbounded; min > max gives max everywhere (the
 * ONNX rule, which falls out of applying min first); NaN stays NaN. */
INTERP_KERNEL(Clip) {
  (void)attrs;
  INTERP_ARITY(Clip, 1, 1);
  const interp_tensor *lo = interp_opt(ins, n_ins, 1), *hi = interp_opt(ins, n_ins, 2);
  interp_tensor *y = &outs[0];
  interp_class c = interp_class_of(y->type.elem);
  if (c == INTERP_BOOL)
    return interp_bad_elem("Clip", "input", y->type.elem);
  int64_t n = interp_numel(y);
  for (int64_t i = 0; i < n; i++) {
    if (c == INTERP_FLOAT) {
      double v = interp_load_f(&ins[0], i);
      if (lo && v < interp_load_f(lo, 0))
        v = interp_load_f(lo, 0);
      if (hi && v > interp_load_f(hi, 0))
        v = interp_load_f(hi, 0);
      interp_store_f(y, i, v);
    } else if (c == INTERP_SIGNED) {
      int64_t v = interp_load_i(&ins[0], i);
      if (lo && v < interp_load_i(lo, 0))
        v = interp_load_i(lo, 0);
      if (hi && v > interp_load_i(hi, 0))
        v = interp_load_i(hi, 0);
      interp_store_i(y, i, v);
    } else {
      uint64_t v = interp_load_u(&ins[0], i);
      if (lo && v < interp_load_u(lo, 0))
        v = interp_load_u(lo, 0);
      if (hi && v > interp_load_u(hi, 0))
        v = interp_load_u(hi, 0);
      interp_store_u(y, i, v);
    }
  }
  return NULL;
}
