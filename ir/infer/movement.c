/* ir/infer/movement.c: inference of the data movement kinds: Reshape,
 * Flatten, Squeeze, Unsqueeze, Transpose, Expand, Tile, Slice, Pad, Concat,
 * Split, DepthToSpace, SpaceToDepth, Trilu, ReverseSequence, CenterCropPad,
 * Shape and Size. Their compile-time ONNX inputs are attributes here. */
#include <stdio.h>
#include <string.h>

#include "infer.h"
#include "kiln/ops.h"

/* A required INTS attribute. */
static kiln_status required_ints(const char *kind, const kiln_attrs *attrs, const char *name,
                                 const int64_t **p, uint32_t *n) {
  bool present;
  KILN_TRY(kiln_infer_ints(kind, attrs, name, p, n, &present));
  if (!present)
    return kiln_infer_fail(kind, "attribute '%s' is required", name);
  return NULL;
}

kiln_status kiln_infer_Reshape(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                               uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  const int64_t *shape;
  uint32_t n;
  KILN_TRY(required_ints("Reshape", attrs, "shape", &shape, &n));
  if (n > KILN_MAX_RANK)
    return kiln_infer_fail("Reshape", "attribute 'shape' %s has rank %u > %d",
                           KILN_INFER_DS(shape, n), n, KILN_MAX_RANK);
  bool allowzero = kiln_attrs_int_or(attrs, "allowzero", 0) != 0;
  int64_t dims[KILN_MAX_RANK];
  int infer_at = -1;
  int64_t known = 1;
  bool has_zero = false;
  for (uint32_t i = 0; i < n; i++) {
    int64_t d = shape[i];
    if (d == -1) {
      if (infer_at >= 0)
        return kiln_infer_fail("Reshape", "attribute 'shape' %s has more than one -1",
                               KILN_INFER_DS(shape, n));
      infer_at = (int)i;
      dims[i] = 1;
      continue;
    }
    if (d < -1)
      return kiln_infer_fail("Reshape", "attribute 'shape' %s: entry %u = %lld is invalid",
                             KILN_INFER_DS(shape, n), i, (long long)d);
    if (d == 0 && !allowzero) {
      if (i >= x->rank)
        return kiln_infer_fail("Reshape",
                               "attribute 'shape' %s: entry %u is 0 (copy) but input 0 %s has "
                               "no dim %u",
                               KILN_INFER_DS(shape, n), i, KILN_INFER_TS(x), i);
      d = x->dims[i];
    } else if (d == 0) {
      has_zero = true;
    }
    dims[i] = d;
    if (d != 0 && known > INT64_MAX / d)
      return kiln_infer_fail("Reshape", "attribute 'shape' %s overflows", KILN_INFER_DS(shape, n));
    known *= d;
  }
  if (allowzero && has_zero && infer_at >= 0)
    return kiln_infer_fail("Reshape", "attribute 'shape' %s has both 0 and -1 with allowzero = 1",
                           KILN_INFER_DS(shape, n));
  int64_t numel = kiln_type_numel(x);
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      return kiln_infer_fail("Reshape", "cannot reshape input 0 %s to %s: %lld elements",
                             KILN_INFER_TS(x), KILN_INFER_DS(shape, n), (long long)numel);
    dims[infer_at] = numel / known;
  } else if (known != numel) {
    return kiln_infer_fail(
        "Reshape", "cannot reshape input 0 %s (%lld elements) to %s (%lld elements)",
        KILN_INFER_TS(x), (long long)numel, KILN_INFER_DS(dims, n), (long long)known);
  }
  return kiln_infer_make("Reshape", x->elem, n, dims, out);
}

kiln_status kiln_infer_Flatten(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                               uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  /* ONNX Flatten: axis in [-r, r], and a negative axis counts from r (not
   * r + 1 as for an insertion point such as OneHot's). */
  int64_t a = kiln_attrs_int_or(attrs, "axis", 1);
  if (a < -(int64_t)x->rank || a > (int64_t)x->rank)
    return kiln_infer_fail("Flatten",
                           "attribute 'axis' = %lld is out of range [%lld, %lld] for rank %u",
                           (long long)a, -(long long)x->rank, (long long)x->rank, x->rank);
  uint32_t axis = (uint32_t)(a < 0 ? a + (int64_t)x->rank : a);
  int64_t dims[2] = {1, 1};
  for (uint32_t i = 0; i < x->rank; i++)
    dims[i < axis ? 0 : 1] *= x->dims[i];
  return kiln_infer_make("Flatten", x->elem, 2, dims, out);
}

kiln_status kiln_infer_Squeeze(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                               uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  const int64_t *axes;
  uint32_t n;
  bool present, drop[KILN_MAX_RANK] = {false};
  KILN_TRY(kiln_infer_ints("Squeeze", attrs, "axes", &axes, &n, &present));
  if (!present) {
    for (uint32_t i = 0; i < x->rank; i++)
      drop[i] = x->dims[i] == 1;
  }
  for (uint32_t i = 0; i < n; i++) {
    uint32_t a;
    KILN_TRY(kiln_infer_axis("Squeeze", "axes", axes[i], x->rank, false, &a));
    if (drop[a])
      return kiln_infer_fail("Squeeze", "attribute 'axes' names axis %u twice", a);
    if (x->dims[a] != 1)
      return kiln_infer_fail("Squeeze", "axis %u of input 0 %s has size %lld, not 1", a,
                             KILN_INFER_TS(x), (long long)x->dims[a]);
    drop[a] = true;
  }
  int64_t dims[KILN_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t i = 0; i < x->rank; i++) {
    if (!drop[i])
      dims[r++] = x->dims[i];
  }
  return kiln_infer_make("Squeeze", x->elem, r, dims, out);
}

kiln_status kiln_infer_Unsqueeze(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                 uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  const int64_t *axes;
  uint32_t n;
  KILN_TRY(required_ints("Unsqueeze", attrs, "axes", &axes, &n));
  uint32_t r = x->rank + n;
  if (r > KILN_MAX_RANK)
    return kiln_infer_fail("Unsqueeze", "result rank %u of input 0 %s with axes %s exceeds %d", r,
                           KILN_INFER_TS(x), KILN_INFER_DS(axes, n), KILN_MAX_RANK);
  bool ins[KILN_MAX_RANK] = {false};
  for (uint32_t i = 0; i < n; i++) {
    uint32_t a;
    KILN_TRY(kiln_infer_axis("Unsqueeze", "axes", axes[i], r, false, &a));
    if (ins[a])
      return kiln_infer_fail("Unsqueeze", "attribute 'axes' names axis %u twice", a);
    ins[a] = true;
  }
  int64_t dims[KILN_MAX_RANK];
  for (uint32_t i = 0, j = 0; i < r; i++)
    dims[i] = ins[i] ? 1 : x->dims[j++];
  return kiln_infer_make("Unsqueeze", x->elem, r, dims, out);
}

kiln_status kiln_infer_Transpose(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                                 uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  const int64_t *perm;
  uint32_t n;
  bool present, seen[KILN_MAX_RANK] = {false};
  KILN_TRY(kiln_infer_ints("Transpose", attrs, "perm", &perm, &n, &present));
  int64_t dims[KILN_MAX_RANK];
  if (!present) {
    for (uint32_t i = 0; i < x->rank; i++)
      dims[i] = x->dims[x->rank - 1 - i];
    return kiln_infer_make("Transpose", x->elem, x->rank, dims, out);
  }
  if (n != x->rank)
    return kiln_infer_fail("Transpose", "attribute 'perm' %s has %u entries but input 0 is %s",
                           KILN_INFER_DS(perm, n), n, KILN_INFER_TS(x));
  for (uint32_t i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= (int64_t)n || seen[perm[i]])
      return kiln_infer_fail("Transpose", "attribute 'perm' %s is not a permutation of 0..%u",
                             KILN_INFER_DS(perm, n), n ? n - 1 : 0);
    seen[perm[i]] = true;
    dims[i] = x->dims[perm[i]];
  }
  return kiln_infer_make("Transpose", x->elem, x->rank, dims, out);
}

kiln_status kiln_infer_Expand(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  const int64_t *shape;
  uint32_t n;
  KILN_TRY(required_ints("Expand", attrs, "shape", &shape, &n));
  if (n > KILN_MAX_RANK)
    return kiln_infer_fail("Expand", "attribute 'shape' %s has rank %u > %d",
                           KILN_INFER_DS(shape, n), n, KILN_MAX_RANK);
  kiln_type st = {.elem = x->elem, .rank = n};
  for (uint32_t i = 0; i < n; i++) {
    if (shape[i] < 0)
      return kiln_infer_fail("Expand", "attribute 'shape' %s has a negative entry",
                             KILN_INFER_DS(shape, n));
    st.dims[i] = shape[i];
  }
  const kiln_type *both[2] = {x, &st};
  int64_t dims[KILN_MAX_RANK];
  uint32_t r;
  kiln_status s = kiln_infer_broadcast("Expand", both, 2, dims, &r);
  if (s) {
    kiln_status_free(s);
    return kiln_infer_fail("Expand", "input 0 %s does not broadcast with shape %s",
                           KILN_INFER_TS(x), KILN_INFER_DS(shape, n));
  }
  return kiln_infer_make("Expand", x->elem, r, dims, out);
}

kiln_status kiln_infer_Tile(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  const int64_t *rep;
  uint32_t n;
  KILN_TRY(required_ints("Tile", attrs, "repeats", &rep, &n));
  if (n != x->rank)
    return kiln_infer_fail("Tile", "attribute 'repeats' %s has %u entries but input 0 is %s",
                           KILN_INFER_DS(rep, n), n, KILN_INFER_TS(x));
  int64_t dims[KILN_MAX_RANK];
  for (uint32_t i = 0; i < n; i++) {
    if (rep[i] < 0)
      return kiln_infer_fail("Tile", "attribute 'repeats' %s has a negative entry",
                             KILN_INFER_DS(rep, n));
    if (rep[i] != 0 && x->dims[i] > INT64_MAX / rep[i])
      return kiln_status_make(KILN_OUT_OF_RANGE, "Tile: dim %u of input 0 %s times %lld overflows",
                              i, KILN_INFER_TS(x), (long long)rep[i]);
    dims[i] = x->dims[i] * rep[i];
  }
  return kiln_infer_make("Tile", x->elem, x->rank, dims, out);
}

kiln_status kiln_infer_Slice(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  kiln_slice sl;
  KILN_TRY(kiln_slice_decode(attrs, in[0], &sl));
  return kiln_infer_make("Slice", in[0]->elem, in[0]->rank, sl.len, out);
}

kiln_status kiln_infer_Pad(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                           uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const modes[] = {"constant", "reflect", "edge", "wrap", NULL};
  const kiln_type *x = in[0];
  const int64_t *pads, *axes;
  uint32_t np, na;
  bool has_axes, seen[KILN_MAX_RANK] = {false};
  const char *mode;
  KILN_TRY(kiln_infer_enum("Pad", attrs, "mode", "constant", modes, &mode));
  KILN_TRY(required_ints("Pad", attrs, "pads", &pads, &np));
  KILN_TRY(kiln_infer_ints("Pad", attrs, "axes", &axes, &na, &has_axes));
  uint32_t n = has_axes ? na : x->rank;
  if (np != 2 * n)
    return kiln_infer_fail("Pad", "attribute 'pads' %s has %u entries; expected %u for %s",
                           KILN_INFER_DS(pads, np), np, 2 * n,
                           has_axes ? "the axes given" : KILN_INFER_TS(x));
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t a = i;
    if (has_axes)
      KILN_TRY(kiln_infer_axis("Pad", "axes", axes[i], x->rank, false, &a));
    if (seen[a])
      return kiln_infer_fail("Pad", "attribute 'axes' names axis %u twice", a);
    seen[a] = true;
    int64_t d;
    if (__builtin_add_overflow(x->dims[a], pads[i], &d) ||
        __builtin_add_overflow(d, pads[n + i], &d))
      return kiln_status_make(KILN_OUT_OF_RANGE, "Pad: pads %s overflow axis %u of input 0 %s",
                              KILN_INFER_DS(pads, np), a, KILN_INFER_TS(x));
    if (d < 0)
      return kiln_infer_fail("Pad", "pads %s make axis %u of input 0 %s negative",
                             KILN_INFER_DS(pads, np), a, KILN_INFER_TS(x));
    if (strcmp(mode, "constant") != 0 && x->dims[a] == 0 && d > 0)
      return kiln_infer_fail("Pad", "mode \"%s\" cannot pad empty axis %u of input 0 %s", mode, a,
                             KILN_INFER_TS(x));
    dims[a] = d;
  }
  return kiln_infer_make("Pad", x->elem, x->rank, dims, out);
}

kiln_status kiln_infer_Concat(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                              uint32_t n_results, kiln_type *out) {
  (void)n_results;
  const kiln_type *x = in[0];
  if (!kiln_attrs_find(attrs, "axis"))
    return kiln_infer_fail("Concat", "attribute 'axis' is required");
  uint32_t axis;
  KILN_TRY(kiln_infer_axis("Concat", "axis", kiln_attrs_int_or(attrs, "axis", 0), x->rank, false,
                           &axis));
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  for (uint32_t i = 1; i < n_in; i++) {
    const kiln_type *t = in[i];
    if (t->elem != x->elem || t->rank != x->rank)
      return kiln_infer_fail("Concat", "input %u is %s but input 0 is %s", i, KILN_INFER_TS(t),
                             KILN_INFER_TS(x));
    for (uint32_t k = 0; k < x->rank; k++) {
      if (k != axis && t->dims[k] != x->dims[k])
        return kiln_infer_fail("Concat", "input %u %s differs from input 0 %s in dim %u", i,
                               KILN_INFER_TS(t), KILN_INFER_TS(x), k);
    }
    dims[axis] += t->dims[axis];
  }
  return kiln_infer_make("Concat", x->elem, x->rank, dims, out);
}

kiln_status kiln_infer_Split(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)n_in;
  const kiln_type *x = in[0];
  uint32_t axis;
  KILN_TRY(
      kiln_infer_axis("Split", "axis", kiln_attrs_int_or(attrs, "axis", 0), x->rank, false, &axis));
  const int64_t *split;
  uint32_t n;
  bool present;
  KILN_TRY(kiln_infer_ints("Split", attrs, "split", &split, &n, &present));
  int64_t d = x->dims[axis];
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  if (present) {
    int64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (split[i] < 0)
        return kiln_infer_fail("Split", "attribute 'split' %s has a negative entry",
                               KILN_INFER_DS(split, n));
      sum += split[i];
    }
    if (sum != d)
      return kiln_infer_fail("Split",
                             "attribute 'split' %s sums to %lld but axis %u of input 0 "
                             "%s has size %lld",
                             KILN_INFER_DS(split, n), (long long)sum, axis, KILN_INFER_TS(x),
                             (long long)d);
    for (uint32_t i = 0; i < n_results; i++) {
      dims[axis] = split[i];
      KILN_TRY(kiln_infer_make("Split", x->elem, x->rank, dims, &out[i]));
    }
    return NULL;
  }
  /* Equal chunks of ceil(d / n); the last one takes the rest. */
  int64_t chunk = (d + n_results - 1) / n_results;
  int64_t last = d - chunk * (n_results - 1);
  if (last < 0)
    return kiln_infer_fail("Split",
                           "axis %u of input 0 %s (size %lld) cannot be split into %u "
                           "parts",
                           axis, KILN_INFER_TS(x), (long long)d, n_results);
  for (uint32_t i = 0; i < n_results; i++) {
    dims[axis] = i + 1 < n_results ? chunk : last;
    KILN_TRY(kiln_infer_make("Split", x->elem, x->rank, dims, &out[i]));
  }
  return NULL;
}

static kiln_status blocksize(const char *kind, const kiln_attrs *attrs, int64_t *bs) {
  if (!kiln_attrs_find(attrs, "blocksize"))
    return kiln_infer_fail(kind, "attribute 'blocksize' is required");
  *bs = kiln_attrs_int_or(attrs, "blocksize", 0);
  if (*bs < 1)
    return kiln_infer_fail(kind, "attribute 'blocksize' = %lld must be positive", (long long)*bs);
  return NULL;
}

kiln_status kiln_infer_DepthToSpace(const kiln_type *const *in, uint32_t n_in,
                                    const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const modes[] = {"DCR", "CRD", NULL};
  const kiln_type *x = in[0];
  const char *mode;
  int64_t bs = 0;
  KILN_TRY(kiln_infer_enum("DepthToSpace", attrs, "mode", "DCR", modes, &mode));
  KILN_TRY(blocksize("DepthToSpace", attrs, &bs));
  KILN_TRY(kiln_infer_check_rank("DepthToSpace", "input 0", x, 4, false));
  if (x->dims[1] % (bs * bs) != 0)
    return kiln_infer_fail("DepthToSpace",
                           "channels of input 0 %s are not divisible by "
                           "blocksize^2 = %lld",
                           KILN_INFER_TS(x), (long long)(bs * bs));
  int64_t dims[4] = {x->dims[0], x->dims[1] / (bs * bs), x->dims[2] * bs, x->dims[3] * bs};
  return kiln_infer_make("DepthToSpace", x->elem, 4, dims, out);
}

kiln_status kiln_infer_SpaceToDepth(const kiln_type *const *in, uint32_t n_in,
                                    const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  int64_t bs = 0;
  KILN_TRY(blocksize("SpaceToDepth", attrs, &bs));
  KILN_TRY(kiln_infer_check_rank("SpaceToDepth", "input 0", x, 4, false));
  if (x->dims[2] % bs != 0 || x->dims[3] % bs != 0)
    return kiln_infer_fail("SpaceToDepth",
                           "height and width of input 0 %s are not divisible by "
                           "blocksize %lld",
                           KILN_INFER_TS(x), (long long)bs);
  int64_t dims[4] = {x->dims[0], x->dims[1] * bs * bs, x->dims[2] / bs, x->dims[3] / bs};
  return kiln_infer_make("SpaceToDepth", x->elem, 4, dims, out);
}

kiln_status kiln_infer_Trilu(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)attrs, (void)n_results;
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_rank("Trilu", "input 0", x, 2, true));
  int64_t upper = kiln_attrs_int_or(attrs, "upper", 1);
  if (upper != 0 && upper != 1)
    return kiln_infer_fail("Trilu", "attribute 'upper' = %lld must be 0 or 1", (long long)upper);
  return kiln_infer_make("Trilu", x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_ReverseSequence(const kiln_type *const *in, uint32_t n_in,
                                       const kiln_attrs *attrs, uint32_t n_results,
                                       kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "ReverseSequence";
  const kiln_type *x = in[0], *lens = in[1];
  KILN_TRY(kiln_infer_check_rank(k, "input 0", x, 2, true));
  KILN_TRY(kiln_infer_check_elem(k, "sequence_lens (input 1)", lens, KILN_INFER_M(KILN_I64)));
  int64_t ba = kiln_attrs_int_or(attrs, "batch_axis", 1);
  int64_t ta = kiln_attrs_int_or(attrs, "time_axis", 0);
  if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
    return kiln_infer_fail(k,
                           "attributes batch_axis = %lld and time_axis = %lld must be 0 and 1 "
                           "in some order",
                           (long long)ba, (long long)ta);
  if (lens->rank != 1 || lens->dims[0] != x->dims[ba])
    return kiln_infer_fail(k, "sequence_lens %s must have shape [%lld] (the batch of input 0 %s)",
                           KILN_INFER_TS(lens), (long long)x->dims[ba], KILN_INFER_TS(x));
  return kiln_infer_make(k, x->elem, x->rank, x->dims, out);
}

kiln_status kiln_infer_CenterCropPad(const kiln_type *const *in, uint32_t n_in,
                                     const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  static const char *const k = "CenterCropPad";
  const kiln_type *x = in[0];
  const int64_t *shape, *axes;
  uint32_t ns, na;
  bool has_shape, has_axes;
  KILN_TRY(kiln_infer_ints(k, attrs, "shape", &shape, &ns, &has_shape));
  KILN_TRY(kiln_infer_ints(k, attrs, "axes", &axes, &na, &has_axes));
  if (!has_shape)
    return kiln_infer_fail(k, "attribute 'shape' is required");
  uint32_t want = has_axes ? na : x->rank;
  if (ns != want)
    return kiln_infer_fail(k, "attribute 'shape' has %u entries, expected %u (one per %s)", ns,
                           want, has_axes ? "axis" : "dimension");
  int64_t dims[KILN_MAX_RANK];
  bool seen[KILN_MAX_RANK] = {0};
  memcpy(dims, x->dims, sizeof(int64_t) * x->rank);
  for (uint32_t i = 0; i < ns; i++) {
    uint32_t a = i;
    if (has_axes)
      KILN_TRY(kiln_infer_axis(k, "axes", axes[i], x->rank, false, &a));
    if (seen[a])
      return kiln_infer_fail(k, "attribute 'axes' repeats axis %u", a);
    seen[a] = true;
    if (shape[i] < 0)
      return kiln_infer_fail(k, "attribute 'shape' entry %u = %lld is negative", i,
                             (long long)shape[i]);
    dims[a] = shape[i];
  }
  return kiln_infer_make(k, x->elem, x->rank, dims, out);
}

kiln_status kiln_infer_Shape(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                             uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  int64_t r = in[0]->rank;
  int64_t start = kiln_attrs_int_or(attrs, "start", 0);
  int64_t end = kiln_attrs_int_or(attrs, "end", r);
  /* Negative values count from the back; both clamp to [0, rank]. */
  start = start < 0 ? start + r : start;
  end = end < 0 ? end + r : end;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t len = end > start ? end - start : 0;
  return kiln_infer_make("Shape", KILN_I64, 1, &len, out);
}

kiln_status kiln_infer_Size(const kiln_type *const *in, uint32_t n_in, const kiln_attrs *attrs,
                            uint32_t n_results, kiln_type *out) {
  (void)in, (void)n_in, (void)attrs, (void)n_results;
  int64_t none[1] = {0};
  return kiln_infer_make("Size", KILN_I64, 0, none, out);
}

/* The channel-blocked layout (kiln/node_kinds.def). */
kiln_status kiln_infer_BlockChannels(const kiln_type *const *in, uint32_t n_in,
                                     const kiln_attrs *attrs, uint32_t n_results, kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem("BlockChannels", "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank("BlockChannels", "input 0", x, 3, true));
  int64_t B = kiln_attrs_int_or(attrs, "block", 0);
  if (B < 2)
    return kiln_infer_fail("BlockChannels", "attribute 'block' = %lld must be at least 2",
                           (long long)B);
  if (x->rank + 1 > KILN_MAX_RANK)
    return kiln_infer_fail("BlockChannels", "input 0 %s leaves no room for the block dimension",
                           KILN_INFER_TS(x));
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * x->rank);
  dims[1] = x->dims[1] / B + (x->dims[1] % B != 0); /* ceil, with no C + B - 1 to overflow */
  dims[x->rank] = B;
  return kiln_infer_make("BlockChannels", x->elem, x->rank + 1, dims, out);
}

kiln_status kiln_infer_UnblockChannels(const kiln_type *const *in, uint32_t n_in,
                                       const kiln_attrs *attrs, uint32_t n_results,
                                       kiln_type *out) {
  (void)n_in, (void)n_results;
  const kiln_type *x = in[0];
  KILN_TRY(kiln_infer_check_elem("UnblockChannels", "input 0", x, KILN_INFER_FLOAT));
  KILN_TRY(kiln_infer_check_rank("UnblockChannels", "input 0", x, 4, true));
  int64_t C = kiln_attrs_int_or(attrs, "channels", 0), B = x->dims[x->rank - 1], all, most;
  /* (an empty tensor's dims can multiply past 63 bits) */
  if (C < 1 || x->dims[1] < 1 || __builtin_mul_overflow(x->dims[1], B, &all) || C > all ||
      __builtin_mul_overflow(x->dims[1] - 1, B, &most) || C <= most)
    return kiln_infer_fail("UnblockChannels",
                           "attribute 'channels' = %lld does not fit input 0 %s (%lld blocks of "
                           "%lld)",
                           (long long)C, KILN_INFER_TS(x), (long long)x->dims[1], (long long)B);
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (x->rank - 1));
  dims[1] = C;
  return kiln_infer_make("UnblockChannels", x->elem, x->rank - 1, dims, out);
}
