/* passes/lower_generator.c: lowering rules for the kinds whose result is a
 * compile-time constant: ConstantOfShape, EyeLike, Range and the window
 * generators HannWindow, HammingWindow, BlackmanWindow. */
#include <math.h>

#include "lower_rules.h"

bool kiln_lower_ConstantOfShape(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *ot = lower_tout(c, 0);
  c->elem = ot->elem;
  kiln_value *v = lower_sc(c, lower_fattr(c, "value", 0));
  kiln_attr_desc a = KILN_ATTR_IS("shape", ot->dims, ot->rank);
  r[0] = v ? lower_emit(c, KILN_NODE_Expand, &v, 1, &a, 1) : NULL;
  return true;
}

bool kiln_lower_EyeLike(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *t = lower_tout(c, 0);
  if (t->rank != 2)
    return false;
  kiln_lower_tri_fill tf = {t->dims[0] ? t->dims[0] : 1, t->dims[1] ? t->dims[1] : 1,
                            lower_iattr(c, "k", 0), 6};
  r[0] = kiln_lower_const_fn(c, t, kiln_lower_fill_tri, &tf);
  return true;
}

typedef struct range_fill {
  double start, delta;
} range_fill;
static double fill_range(int64_t i, const void *u) {
  const range_fill *f = u;
  return f->start + (double)i * f->delta;
}
bool kiln_lower_Range(kiln_lower_ctx *c, kiln_value **r) {
  range_fill f = {lower_fattr(c, "start", 0), lower_fattr(c, "delta", 1)};
  r[0] = kiln_lower_const_fn(c, lower_tout(c, 0), fill_range, &f);
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
