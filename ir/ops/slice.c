/* ir/ops/slice.c: Slice's starts / ends / axes / steps resolved against the
 * input shape (kiln_slice_decode in kiln/ops.h): one clamping rule for
 * inference, the interpreter and every code generator. */
#include <string.h>

#include "kiln/ops.h"

/* An INTS attribute: *present says whether it exists at all (an empty
 * list is present), so that a list of the wrong length is caught. */
static kiln_status slice_ints(const kiln_attrs *a, const char *name, bool required,
                              const int64_t **v, uint32_t *n, bool *present) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  *v = NULL;
  *n = 0;
  *present = at != NULL;
  if (!at) {
    if (required)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "Slice: attribute '%s' is required", name);
    return NULL;
  }
  if (kiln_attr_get_kind(at) != KILN_ATTR_INTS)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "Slice: attribute '%s' must be a list of ints",
                            name);
  *v = kiln_attr_ints(at);
  *n = kiln_attr_len(at);
  return NULL;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

kiln_status kiln_slice_decode(const kiln_attrs *attrs, const kiln_type *x, kiln_slice *out) {
  memset(out, 0, sizeof *out);
  if (!x)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "Slice: no input type");
  const int64_t *starts, *ends, *axes, *steps;
  uint32_t ns, ne, na, nst;
  bool present, has_axes, has_steps, seen[KILN_MAX_RANK] = {false};
  KILN_TRY(slice_ints(attrs, "starts", true, &starts, &ns, &present));
  KILN_TRY(slice_ints(attrs, "ends", true, &ends, &ne, &present));
  KILN_TRY(slice_ints(attrs, "axes", false, &axes, &na, &has_axes));
  KILN_TRY(slice_ints(attrs, "steps", false, &steps, &nst, &has_steps));
  if (ne != ns || (has_axes && na != ns) || (has_steps && nst != ns))
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "Slice: attributes starts/ends/axes/steps have different lengths "
                            "(%u, %u, %u, %u)",
                            ns, ne, has_axes ? na : ns, has_steps ? nst : ns);
  if (!has_axes && ns > x->rank)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "Slice: attribute 'starts' has %u entries but input 0 has rank %u", ns,
                            x->rank);
  out->rank = x->rank;
  for (uint32_t a = 0; a < x->rank; a++)
    out->start[a] = 0, out->step[a] = 1, out->len[a] = x->dims[a];
  for (uint32_t i = 0; i < ns; i++) {
    int64_t ax = has_axes ? axes[i] : (int64_t)i;
    if (ax < -(int64_t)x->rank || ax >= (int64_t)x->rank)
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "Slice: attribute 'axes' entry %u = %lld is out of range for rank %u",
                              i, (long long)ax, x->rank);
    uint32_t a = (uint32_t)(ax < 0 ? ax + x->rank : ax);
    if (seen[a])
      return kiln_status_make(KILN_INVALID_ARGUMENT, "Slice: attribute 'axes' names axis %u twice",
                              a);
    seen[a] = true;
    int64_t step = has_steps ? steps[i] : 1, d = x->dims[a];
    if (step == 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "Slice: attribute 'steps' entry %u is 0", i);
    if (step == INT64_MIN) /* its length below would negate it */
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "Slice: attribute 'steps' entry %u = %lld is out of range", i,
                              (long long)step);
    int64_t s = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + d : ends[i];
    int64_t len;
    if (step > 0) {
      s = clamp64(s, 0, d);
      e = clamp64(e, 0, d);
      len = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      s = clamp64(s, 0, d - 1);
      e = clamp64(e, -1, d - 1);
      len = s > e ? (s - e - 1) / (-step) + 1 : 0;
    }
    out->start[a] = s;
    out->step[a] = step;
    out->len[a] = len;
  }
  return NULL;
}
