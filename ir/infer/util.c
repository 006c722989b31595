/* ir/infer/util.c: helpers shared by the inference families: messages,
 * element type checks, broadcasting, axes and attribute reading. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "infer.h"
#include "kiln/ops.h"

kiln_infer_tstr kiln_infer_tstr_of(const kiln_type *t) {
  kiln_infer_tstr r;
  r.s[0] = '\0';
  if (!t) {
    snprintf(r.s, sizeof r.s, "absent");
    return r;
  }
  (void)kiln_type_format(t, r.s, sizeof r.s);
  return r;
}

kiln_infer_tstr kiln_infer_dstr_of(const int64_t *dims, uint32_t n) {
  kiln_infer_tstr r;
  size_t used = 0;
  r.s[used++] = '[';
  for (uint32_t i = 0; i < n && used < sizeof r.s - 24; i++) {
    int w = snprintf(r.s + used, sizeof r.s - used, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  if (used < sizeof r.s - 1)
    r.s[used++] = ']';
  r.s[used] = '\0';
  return r;
}

kiln_status kiln_infer_fail(const char *kind, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = kiln_status_makev(KILN_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return kiln_status_wrap(s, "%s", kind);
}

/* "f32, f16, ..." for a mask, so a message lists what would be accepted. */
static void mask_names(uint32_t mask, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (int e = 0; e < KILN_ELEM_COUNT; e++) {
    if (!(mask & KILN_INFER_M(e)))
      continue;
    int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", kiln_elem_name(e));
    if (w < 0 || (size_t)w >= n - used)
      break;
    used += (size_t)w;
  }
}

kiln_status kiln_infer_check_elem(const char *kind, const char *what, const kiln_type *t,
                                  uint32_t mask) {
  if ((unsigned)t->elem < KILN_ELEM_COUNT && (mask & KILN_INFER_M(t->elem)))
    return NULL;
  char names[160];
  mask_names(mask, names, sizeof names);
  return kiln_infer_fail(kind, "%s is %s; its element type must be one of %s", what,
                         KILN_INFER_TS(t), names);
}

kiln_status kiln_infer_same_elem(const char *kind, const char *wa, const kiln_type *a,
                                 const char *wb, const kiln_type *b) {
  if (a->elem == b->elem)
    return NULL;
  return kiln_infer_fail(kind, "element types differ: %s is %s, %s is %s", wa, KILN_INFER_TS(a), wb,
                         KILN_INFER_TS(b));
}

kiln_status kiln_infer_check_rank(const char *kind, const char *what, const kiln_type *t,
                                  uint32_t rank, bool min_only) {
  if (min_only ? t->rank >= rank : t->rank == rank)
    return NULL;
  return kiln_infer_fail(kind, "%s is %s; expected rank %s%u", what, KILN_INFER_TS(t),
                         min_only ? ">= " : "", rank);
}

kiln_status kiln_infer_make(const char *kind, kiln_elem e, uint32_t rank, const int64_t *dims,
                            kiln_type *out) {
  kiln_status s = kiln_type_make(e, rank, dims, out);
  if (!s)
    return NULL;
  kiln_code code = kiln_status_code(s);
  kiln_status r =
      kiln_status_make(code, "%s: invalid result type %s%s: %s", kind, kiln_elem_name(e),
                       KILN_INFER_DS(dims, rank > 16 ? 16 : rank), kiln_status_message(s));
  kiln_status_free(s);
  return r;
}

kiln_status kiln_infer_broadcast(const char *kind, const kiln_type *const *ts, uint32_t n,
                                 int64_t *dims, uint32_t *rank) {
  uint32_t r = 0;
  int64_t acc[KILN_MAX_RANK] = {0};
  bool any = false;
  for (uint32_t i = 0; i < n; i++) {
    const kiln_type *t = ts[i];
    if (!t)
      continue;
    uint32_t nr = t->rank > r ? t->rank : r;
    int64_t next[KILN_MAX_RANK] = {0};
    for (uint32_t k = 0; k < nr; k++) {
      /* Align from the right: position k of the result. */
      int64_t a = k + r >= nr ? acc[k + r - nr] : 1;
      int64_t b = k + t->rank >= nr ? t->dims[k + t->rank - nr] : 1;
      if (any && a != b && a != 1 && b != 1) {
        return kiln_infer_fail(kind,
                               "cannot broadcast input %u (%s) with shape %s of the inputs "
                               "before it: dimension %lld vs %lld",
                               i, KILN_INFER_TS(t), KILN_INFER_DS(acc, r), (long long)b,
                               (long long)a);
      }
      next[k] = !any ? b : (a == 1 ? b : a);
    }
    memcpy(acc, next, sizeof acc);
    r = nr;
    any = true;
  }
  memcpy(dims, acc, sizeof acc);
  *rank = r;
  return NULL;
}

bool kiln_infer_broadcasts_to(const kiln_type *from, const kiln_type *to) {
  if (from->rank > to->rank)
    return false;
  for (uint32_t k = 0; k < from->rank; k++) {
    int64_t f = from->dims[from->rank - 1 - k];
    int64_t t = to->dims[to->rank - 1 - k];
    if (f != t && f != 1)
      return false;
  }
  return true;
}

kiln_status kiln_infer_axis(const char *kind, const char *attr, int64_t axis, uint32_t rank,
                            bool inclusive_end, uint32_t *out) {
  int64_t lo = -(int64_t)rank - (inclusive_end ? 1 : 0);
  int64_t hi = (int64_t)rank - (inclusive_end ? 0 : 1);
  if (axis < lo || axis > hi) {
    return kiln_infer_fail(kind, "attribute '%s' = %lld is out of range [%lld, %lld] for rank %u",
                           attr, (long long)axis, (long long)lo, (long long)hi, rank);
  }
  int64_t span = (int64_t)rank + (inclusive_end ? 1 : 0);
  *out = (uint32_t)(axis < 0 ? axis + span : axis);
  return NULL;
}

kiln_status kiln_infer_mark_axes(const char *kind, const char *attr, const int64_t *axes,
                                 uint32_t n, uint32_t rank, bool *mark) {
  memset(mark, 0, sizeof(bool) * KILN_MAX_RANK);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t a = 0; /* set by kiln_infer_axis; gcc cannot see it across the call */
    KILN_TRY(kiln_infer_axis(kind, attr, axes[i], rank, false, &a));
    if (mark[a])
      return kiln_infer_fail(kind, "attribute '%s' names axis %u twice", attr, a);
    mark[a] = true;
  }
  return NULL;
}

kiln_status kiln_infer_ints(const char *kind, const kiln_attrs *a, const char *name,
                            const int64_t **p, uint32_t *n, bool *present) {
  *p = NULL;
  *n = 0;
  *present = false;
  const kiln_attr *at = kiln_attrs_find(a, name);
  if (!at)
    return NULL;
  if (kiln_attr_get_kind(at) != KILN_ATTR_INTS)
    return kiln_infer_fail(kind, "attribute '%s' must be a list of ints", name);
  *p = kiln_attr_ints(at);
  *n = kiln_attr_len(at);
  *present = true;
  return NULL;
}

kiln_status kiln_infer_floats(const char *kind, const kiln_attrs *a, const char *name, double *buf,
                              uint32_t cap, uint32_t *n, bool *present) {
  *n = 0;
  *present = false;
  const kiln_attr *at = kiln_attrs_find(a, name);
  if (!at)
    return NULL;
  kiln_attr_kind k = kiln_attr_get_kind(at);
  if (k != KILN_ATTR_FLOATS && k != KILN_ATTR_INTS)
    return kiln_infer_fail(kind, "attribute '%s' must be a list of floats", name);
  uint32_t len = kiln_attr_len(at);
  if (len > cap)
    return kiln_infer_fail(kind, "attribute '%s' has %u entries; at most %u allowed", name, len,
                           cap);
  for (uint32_t i = 0; i < len; i++)
    buf[i] = k == KILN_ATTR_FLOATS ? kiln_attr_floats(at)[i] : (double)kiln_attr_ints(at)[i];
  *n = len;
  *present = true;
  return NULL;
}

kiln_status kiln_infer_enum(const char *kind, const kiln_attrs *a, const char *name,
                            const char *dflt, const char *const *allowed, const char **out) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  if (!at) {
    *out = dflt;
    return NULL;
  }
  if (kiln_attr_get_kind(at) != KILN_ATTR_STRING)
    return kiln_infer_fail(kind, "attribute '%s' must be a string", name);
  const char *v = kiln_attr_string(at);
  char list[200];
  size_t used = 0;
  list[0] = '\0';
  for (uint32_t i = 0; allowed[i]; i++) {
    if (strcmp(v, allowed[i]) == 0) {
      *out = allowed[i];
      return NULL;
    }
    int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", allowed[i]);
    if (w > 0 && (size_t)w < sizeof list - used)
      used += (size_t)w;
  }
  return kiln_infer_fail(kind, "attribute '%s' = \"%s\" is not one of %s", name, v, list);
}

/* ONNX TensorProto.DataType codes of the element types kiln has. */
static bool onnx_code_elem(int64_t code, kiln_elem *out) {
  static const struct {
    int64_t code;
    kiln_elem e;
  } map[] = {{1, KILN_F32},  {2, KILN_U8},   {3, KILN_I8},   {4, KILN_U16},  {5, KILN_I16},
             {6, KILN_I32},  {7, KILN_I64},  {9, KILN_BOOL}, {10, KILN_F16}, {11, KILN_F64},
             {12, KILN_U32}, {13, KILN_U64}, {16, KILN_BF16}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    if (map[i].code == code) {
      *out = map[i].e;
      return true;
    }
  }
  return false;
}

kiln_status kiln_infer_type_attr(const char *kind, const kiln_attrs *a, const char *name,
                                 kiln_elem dflt, kiln_elem *out, bool *present) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  if (present)
    *present = at != NULL;
  *out = dflt;
  if (!at)
    return NULL;
  if (kiln_attr_get_kind(at) == KILN_ATTR_TYPE) {
    kiln_elem e = kiln_attr_type(at);
    if ((unsigned)e >= KILN_ELEM_COUNT)
      return kiln_infer_fail(kind, "attribute '%s' holds invalid element type %d", name, (int)e);
    *out = e;
    return NULL;
  }
  if (kiln_attr_get_kind(at) == KILN_ATTR_INT) {
    if (onnx_code_elem(kiln_attr_int(at), out))
      return NULL;
    return kiln_infer_fail(kind, "attribute '%s' = %lld is not a supported ONNX data type", name,
                           (long long)kiln_attr_int(at));
  }
  return kiln_infer_fail(kind, "attribute '%s' must be an element type", name);
}

kiln_status kiln_infer_activation(const char *kind, const kiln_attrs *a, const kiln_type *result) {
  if (!kiln_attrs_find(a, "activation"))
    return NULL;
  /* the names of kiln/ops.h's fusable activations, in its order */
  const char *allowed[KILN_FUSED_ACT_KIND_COUNT];
  for (int i = 1; i < KILN_FUSED_ACT_KIND_COUNT; i++)
    allowed[i - 1] = kiln_node_kind_name(kiln_fused_act_node_kind((kiln_fused_act_kind)i));
  allowed[KILN_FUSED_ACT_KIND_COUNT - 1] = NULL;
  const char *act;
  KILN_TRY(kiln_infer_enum(kind, a, "activation", "Relu", allowed, &act));
  if (!kiln_elem_is_float(result->elem))
    return kiln_infer_fail(kind, "attribute 'activation' = \"%s\" needs a float result, not %s",
                           act, KILN_INFER_TS(result));
  return NULL;
}
