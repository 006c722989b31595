/* passes/lower_later.c: lowering rules for the kinds appended to
 * node_kinds.def after the first table (RMSNormalization, the bitwise
 * kinds, Mish, Swish, LpNormalization, the window generators). BitwiseAnd
 * stays primitive; Or, Xor and Not are modular arithmetic around it. */
#include <math.h>

#include "lower_rules.h"

#define X0 kiln_node_input(c->n, 0)
#define X1 kiln_node_input(c->n, 1)

static bool is_int(kiln_elem e) {
  return kiln_elem_is_signed_int(e) || kiln_elem_is_unsigned_int(e);
}

/* a | b = a + b - (a & b), and a ^ b = a + b - 2 (a & b), both exact in
 * wrapping integer arithmetic. */
static bool bitwise(kiln_lower_ctx *c, kiln_value **r, int times) {
  if (!is_int(c->elem))
    return false;
  kiln_value *both = lower_bin(c, KILN_NODE_BitwiseAnd, X0, X1);
  kiln_value *sum = lower_bin(c, KILN_NODE_Add, X0, X1);
  for (int i = 0; i < times; i++)
    sum = lower_bin(c, KILN_NODE_Sub, sum, both);
  r[0] = sum;
  return true;
}
bool kiln_lower_BitwiseOr(kiln_lower_ctx *c, kiln_value **r) {
  return bitwise(c, r, 1);
}
bool kiln_lower_BitwiseXor(kiln_lower_ctx *c, kiln_value **r) {
  return bitwise(c, r, 2);
}
bool kiln_lower_BitwiseNot(kiln_lower_ctx *c, kiln_value **r) {
  if (!is_int(c->elem))
    return false;
  /* ~x = (0 - 1) - x: all ones minus x, for every width and signedness. */
  kiln_value *ones = lower_bin(c, KILN_NODE_Sub, lower_sc(c, 0), lower_sc(c, 1));
  r[0] = lower_bin(c, KILN_NODE_Sub, ones, X0);
  return true;
}

bool kiln_lower_Mish(kiln_lower_ctx *c, kiln_value **r) {
  if (!kiln_elem_is_float(c->elem))
    return false;
  r[0] = lower_bin(c, KILN_NODE_Mul, X0,
                   lower_un(c, KILN_NODE_Tanh, lower_un(c, KILN_NODE_Softplus, X0)));
  return true;
}

bool kiln_lower_Swish(kiln_lower_ctx *c, kiln_value **r) {
  if (!kiln_elem_is_float(c->elem))
    return false;
  double alpha = lower_fattr(c, "alpha", 1.0);
  kiln_value *ax = alpha == 1.0 ? X0 : lower_bin(c, KILN_NODE_Mul, X0, lower_sc(c, alpha));
  r[0] = lower_bin(c, KILN_NODE_Mul, X0, lower_un(c, KILN_NODE_Sigmoid, ax));
  return true;
}

bool kiln_lower_RMSNormalization(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  if (!kiln_elem_is_float(c->elem) || t->rank == 0)
    return false;
  int64_t axis = lower_iattr(c, "axis", -1), axes[KILN_MAX_RANK];
  if (axis < 0)
    axis += t->rank;
  uint32_t n = 0;
  for (int64_t i = axis; i < (int64_t)t->rank; i++)
    axes[n++] = i;
  kiln_value *ms =
      lower_reduce(c, KILN_NODE_ReduceMean, lower_bin(c, KILN_NODE_Mul, X0, X0), axes, n, 1);
  kiln_value *rms =
      lower_un(c, KILN_NODE_Sqrt,
               lower_bin(c, KILN_NODE_Add, ms, lower_sc(c, lower_fattr(c, "epsilon", 1e-5))));
  r[0] = lower_bin(c, KILN_NODE_Mul, lower_bin(c, KILN_NODE_Div, X0, rms), X1);
  return true;
}

bool kiln_lower_LpNormalization(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tin(c, 0);
  int64_t p = lower_iattr(c, "p", 2), axis = lower_iattr(c, "axis", -1);
  if (!kiln_elem_is_float(c->elem) || t->rank == 0 || (p != 1 && p != 2))
    return false;
  if (axis < 0)
    axis += t->rank;
  kiln_value *norm =
      p == 1 ? lower_reduce(c, KILN_NODE_ReduceSum, lower_un(c, KILN_NODE_Abs, X0), &axis, 1, 1)
             : lower_un(c, KILN_NODE_Sqrt,
                        lower_reduce(c, KILN_NODE_ReduceSum, lower_bin(c, KILN_NODE_Mul, X0, X0),
                                     &axis, 1, 1));
  /* A line of zeros stays zeros: divide it by 1 instead of 0. */
  kiln_value *zero = lower_sc(c, 0);
  norm = lower_where(c, lower_bin(c, KILN_NODE_Equal, norm, zero), lower_sc(c, 1), norm);
  r[0] = lower_bin(c, KILN_NODE_Div, X0, norm);
  return true;
}

typedef struct window {
  double a0, a1, a2, n;
  bool trunc;
} window;
static double fill_window(int64_t i, const void *u) {
  const window *w = u;
  double t = 2 * 3.14159265358979323846 * (double)i / w->n;
  double v = w->a0 - w->a1 * cos(t) + w->a2 * cos(2 * t);
  return w->trunc ? trunc(v) : v; /* an integer window is the cast float one */
}
static bool make_window(kiln_lower_ctx *c, kiln_value **r, double a0, double a1, double a2) {
  const kiln_type *t = lower_tout(c, 0);
  int64_t n = kiln_type_numel(t);
  window w = {a0, a1, a2, (double)(lower_iattr(c, "periodic", 1) ? n : n - 1),
              !kiln_elem_is_float(t->elem)};
  r[0] = kiln_lower_const_fn(c, t, fill_window, &w);
  return true;
}
bool kiln_lower_HannWindow(kiln_lower_ctx *c, kiln_value **r) {
  return make_window(c, r, 0.5, 0.5, 0);
}
bool kiln_lower_HammingWindow(kiln_lower_ctx *c, kiln_value **r) {
  return make_window(c, r, 25.0 / 46, 21.0 / 46, 0);
}
bool kiln_lower_BlackmanWindow(kiln_lower_ctx *c, kiln_value **r) {
  return make_window(c, r, 0.42, 0.5, 0.08);
}
