/* passes/lower_resize.c: the Resize lowering (and Upsample, a Resize). Interpolation is
 * separable, so each resampled axis becomes, per filter tap, a Gather of a
 * constant index table along that axis times a constant weight table, and
 * the taps are added. The tables are computed here from the static shapes
 * by kiln_resize_* (kiln/ops.h), whose coordinate and filter formulas the
 * interpreter's kernel (plugins/interpreter/resize.c) reads too,
 * antialiased downsampling included (its wider filter only means more
 * taps). */
#include <stdlib.h>

#include "kiln/ops.h"
#include "lower_rules.h"

/* Resample axis d of y (rank `rank`) as described by r; *outside, when
 * some result index extrapolates, gets a bool mask along d. */
static kiln_value *rs_axis_emit(kiln_lower_ctx *c, kiln_value *y, uint32_t rank, uint32_t d,
                                const kiln_resize *r, kiln_value **outside) {
  int64_t n = r->out[d];
  int nt = kiln_resize_tap_count(r, d);
  if (nt < 1)
    return NULL;                                   /* the caller checked the count first */
  size_t cells = (size_t)nt * (size_t)(n ? n : 1); /* no malloc(0) for an empty result */
  int64_t *idx = malloc(sizeof(int64_t) * cells);
  double *w = malloc(sizeof(double) * cells), *col = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!idx || !w || !col) {
    free(idx), free(w), free(col);
    if (!c->s)
      c->s =
          kiln_status_make(KILN_OUT_OF_MEMORY, "lower Resize '%s': tap tables of %lld x %d entries",
                           kiln_node_name(c->n), (long long)n, nt);
    return NULL;
  }
  bool any_out = false;
  for (int64_t x = 0; x < n; x++) {
    double xo;
    bool inside = kiln_resize_source(r, d, x, &xo);
    kiln_resize_taps(r, d, xo, idx + (size_t)nt * (size_t)x, w + (size_t)nt * (size_t)x);
    col[x] = !inside;
    any_out |= col[x] != 0;
  }
  int64_t wdims[KILN_MAX_RANK];
  for (uint32_t k = 0; k < rank; k++)
    wdims[k] = k == d ? n : 1;
  *outside = any_out ? kiln_lower_const_vals(c, KILN_BOOL, rank, wdims, col) : NULL;
  kiln_attr_desc ax = KILN_ATTR_I("axis", d);
  kiln_value *sum = NULL;
  for (int k = 0; k < nt; k++) {
    for (int64_t x = 0; x < n; x++)
      col[x] = (double)idx[(size_t)nt * (size_t)x + (size_t)k];
    kiln_value *in[2] = {y, kiln_lower_const_vals(c, KILN_I64, 1, &n, col)};
    kiln_value *g = lower_emit(c, KILN_NODE_Gather, in, 2, &ax, 1);
    if (nt > 1) {
      for (int64_t x = 0; x < n; x++)
        col[x] = w[(size_t)nt * (size_t)x + (size_t)k];
      g = lower_bin(c, KILN_NODE_Mul, g, kiln_lower_const_vals(c, c->elem, rank, wdims, col));
    }
    sum = sum ? lower_bin(c, KILN_NODE_Add, sum, g) : g;
  }
  free(idx), free(w), free(col);
  return sum;
}

/* Not for: non-float data, scales or sizes left as runtime inputs, an
 * antialiased axis needing more taps than the interpreter allows. tf_crop_and_resize's extrapolated
 * cells are set by one Where at the end, so that no tap ever reads them. */
bool kiln_lower_Resize(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_type *it = lower_tin(c, 0), *ot = lower_tout(c, 0);
  if (!kiln_elem_is_float(it->elem))
    return false;
  for (uint32_t i = 1; i < kiln_node_input_count(c->n); i++)
    if (kiln_node_input(c->n, i) &&
        kiln_value_get_kind(kiln_node_input(c->n, i)) != KILN_VALUE_CONSTANT)
      return false;
  /* a node the decoder declines is left alone */
  kiln_resize rs;
  kiln_status st = kiln_resize_decode(KILN_NODE_Resize, kiln_node_attrs(c->n), it, ot, &rs);
  if (st) {
    kiln_status_free(st);
    return false;
  }
  uint32_t rank = rs.rank;
  /* every check before the first node is emitted */
  bool skip[KILN_MAX_RANK];
  for (uint32_t d = 0; d < rank; d++) {
    if (it->dims[d] == 0)
      return false;
    skip[d] = ot->dims[d] == it->dims[d] && rs.scale[d] == 1.0 &&
              rs.coord != KILN_RESIZE_TF_CROP_AND_RESIZE;
    if (!skip[d] && kiln_resize_tap_count(&rs, d) < 1)
      return false;
  }
  kiln_value *y = kiln_node_input(c->n, 0), *mask = NULL;
  for (uint32_t d = 0; d < rank; d++) {
    if (skip[d])
      continue;
    kiln_value *out = NULL;
    y = rs_axis_emit(c, y, rank, d, &rs, &out);
    if (out)
      mask = mask ? lower_bin(c, KILN_NODE_Or, mask, out) : out;
  }
  if (mask)
    y = lower_where(c, mask, lower_sc(c, rs.extrapolation), y);
  if (y == kiln_node_input(c->n, 0))
    y = lower_un(c, KILN_NODE_Identity, y);
  r[0] = y;
  return true;
}

bool kiln_lower_Upsample(kiln_lower_ctx *c, kiln_value **r) {
  const kiln_attr *s = kiln_attrs_find(kiln_node_attrs(c->n), "scales");
  if (!s || !kiln_attr_floats(s))
    return false;
  const char *mode = kiln_attrs_string_or(kiln_node_attrs(c->n), "mode", "nearest");
  kiln_attr_desc a[4] = {KILN_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                         KILN_ATTR_S("mode", mode), KILN_ATTR_S("nearest_mode", "floor"),
                         KILN_ATTR_FS("scales", kiln_attr_floats(s), kiln_attr_len(s))};
  kiln_value *x = kiln_node_input(c->n, 0);
  r[0] = lower_emit(c, KILN_NODE_Resize, &x, 1, a, 4);
  return true;
}
