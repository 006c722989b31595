/* plugins/interpreter/movement.c: shape and data-movement kernels
 * (Reshape ... ReverseSequence, CenterCropPad, Shape, Size). Output shapes
 * come from the inferred result types; these kernels only move elements,
 * bit-exactly (CenterCropPad's padding is zeros). */
#include "kernel.h"
#include "kiln/ops.h"

#include <math.h>
#include <string.h>

/* Reshape, Flatten, Squeeze and Unsqueeze keep row-major order: a copy. */
static kiln_status mv_same_order(const char *k, interp_tensor *outs, const interp_tensor *ins) {
  int64_t n = interp_mv_numel(&ins[0]);
  if (n != interp_mv_numel(&outs[0]))
    return interp_mv_err(KILN_INVALID_ARGUMENT, k, "input has %lld elements, result %lld",
                         (long long)n, (long long)interp_mv_numel(&outs[0]));
  interp_mv_copy_run(&outs[0], 0, &ins[0], 0, n);
  return NULL;
}

kiln_status interp_Reshape(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                           const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  return mv_same_order("Reshape", outs, ins);
}

kiln_status interp_Flatten(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                           const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  return mv_same_order("Flatten", outs, ins);
}

kiln_status interp_Squeeze(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                           const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  return mv_same_order("Squeeze", outs, ins);
}

kiln_status interp_Unsqueeze(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                             const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  return mv_same_order("Unsqueeze", outs, ins);
}

kiln_status interp_Transpose(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                             const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *it = &ins[0].type;
  uint32_t r = it->rank;
  int64_t perm[KILN_MAX_RANK];
  const int64_t *p;
  uint32_t np = interp_mv_ints(attrs, "perm", &p);
  if (np == 0) {
    for (uint32_t k = 0; k < r; k++)
      perm[k] = r - 1 - k;
  } else {
    if (np != r)
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Transpose", "perm has %u entries, rank is %u",
                           np, r);
    for (uint32_t k = 0; k < r; k++) {
      perm[k] = p[k] < 0 ? p[k] + r : p[k];
      if (perm[k] < 0 || perm[k] >= (int64_t)r)
        return interp_mv_err(KILN_INVALID_ARGUMENT, "Transpose", "perm entry %lld out of range",
                             (long long)p[k]);
    }
  }
  int64_t ist[KILN_MAX_RANK], c[KILN_MAX_RANK];
  interp_mv_strides(it->dims, r, ist);
  int64_t n = interp_mv_numel(&outs[0]);
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(outs[0].type.dims, r, o, c);
    int64_t src = 0;
    for (uint32_t k = 0; k < r; k++)
      src += c[k] * ist[perm[k]];
    interp_copy_elem(&outs[0], o, &ins[0], src);
  }
  return NULL;
}

kiln_status interp_Expand(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  const kiln_type *ot = &outs[0].type, *it = &ins[0].type;
  if (it->rank > ot->rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Expand", "input rank %u above result rank %u",
                         it->rank, ot->rank);
  int64_t c[KILN_MAX_RANK], n = interp_mv_numel(&outs[0]);
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(ot->dims, ot->rank, o, c);
    interp_copy_elem(&outs[0], o, &ins[0],
                     interp_mv_bcast(ot->dims, ot->rank, it->dims, it->rank, c));
  }
  return NULL;
}

kiln_status interp_Tile(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                        const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  const kiln_type *ot = &outs[0].type, *it = &ins[0].type;
  if (it->rank != ot->rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Tile", "result rank differs from input's");
  int64_t c[KILN_MAX_RANK], n = interp_mv_numel(&outs[0]);
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(ot->dims, ot->rank, o, c);
    int64_t src = 0;
    for (uint32_t k = 0; k < it->rank; k++)
      src = src * it->dims[k] + c[k] % it->dims[k];
    interp_copy_elem(&outs[0], o, &ins[0], src);
  }
  return NULL;
}

kiln_status interp_Slice(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                         const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *it = &ins[0].type, *ot = &outs[0].type;
  uint32_t r = it->rank;
  kiln_slice sl;
  KILN_TRY_CTX(kiln_slice_decode(attrs, it, &sl), "interpreter");
  if (ot->rank != r)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Slice", "result rank differs from input's");
  for (uint32_t k = 0; k < r; k++)
    if (ot->dims[k] != sl.len[k])
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Slice",
                           "result shape does not match starts/ends on axis %u", k);
  int64_t ist[KILN_MAX_RANK], c[KILN_MAX_RANK], n = interp_mv_numel(&outs[0]);
  interp_mv_strides(it->dims, r, ist);
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(ot->dims, r, o, c);
    int64_t src = 0;
    for (uint32_t k = 0; k < r; k++)
      src += (sl.start[k] + c[k] * sl.step[k]) * ist[k];
    interp_copy_elem(&outs[0], o, &ins[0], src);
  }
  return NULL;
}

kiln_status interp_Pad(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                       const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *it = &ins[0].type, *ot = &outs[0].type;
  uint32_t r = it->rank;
  const int64_t *pads, *axes;
  uint32_t np = interp_mv_ints(attrs, "pads", &pads);
  uint32_t na = interp_mv_ints(attrs, "axes", &axes);
  uint32_t nax = na ? na : r;
  if (np != 2 * nax)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Pad", "pads has %u entries, expected %u", np,
                         2 * nax);
  int64_t begin[KILN_MAX_RANK] = {0};
  for (uint32_t j = 0; j < nax; j++) {
    uint32_t a;
    KILN_TRY(interp_axis(na ? axes[j] : (int64_t)j, r, &a));
    begin[a] = pads[j];
  }
  const char *mode = kiln_attrs_string_or(attrs, "mode", "constant");
  int m = !strcmp(mode, "constant")  ? 0
          : !strcmp(mode, "reflect") ? 1
          : !strcmp(mode, "edge")    ? 2
          : !strcmp(mode, "wrap")    ? 3
                                     : -1;
  if (m < 0)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Pad", "unknown mode '%s'", mode);
  double value = kiln_attrs_float_or(attrs, "value", 0.0);
  int64_t ist[KILN_MAX_RANK], c[KILN_MAX_RANK], n = interp_mv_numel(&outs[0]);
  interp_mv_strides(it->dims, r, ist);
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(ot->dims, r, o, c);
    int64_t src = 0;
    bool outside = false;
    for (uint32_t k = 0; k < r && !outside; k++) {
      int64_t d = it->dims[k], x = c[k] - begin[k];
      if (x < 0 || x >= d) {
        if (m == 0 || d == 0) {
          outside = true;
          break;
        }
        if (m == 2) {
          x = x < 0 ? 0 : d - 1;
        } else if (m == 3) {
          x = ((x % d) + d) % d;
        } else if (d == 1) {
          x = 0;
        } else {
          int64_t period = 2 * (d - 1);
          x = ((x % period) + period) % period;
          if (x >= d)
            x = period - x;
        }
      }
      src += x * ist[k];
    }
    if (outside)
      interp_mv_store_double(&outs[0], o, value);
    else
      interp_copy_elem(&outs[0], o, &ins[0], src);
  }
  return NULL;
}

kiln_status interp_Concat(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs;
  const kiln_type *ot = &outs[0].type;
  uint32_t a;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", 0), ot->rank, &a),
               "interpreter Concat");
  int64_t outer = interp_mv_prod(ot->dims, 0, a);
  int64_t inner = interp_mv_prod(ot->dims, a + 1, ot->rank);
  int64_t orow = ot->dims[a] * inner, pos = 0;
  for (uint32_t j = 0; j < n_ins; j++) {
    if (ins[j].type.rank != ot->rank)
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Concat", "input %u has rank %u, result %u", j,
                           ins[j].type.rank, ot->rank);
    int64_t row = ins[j].type.dims[a] * inner;
    if (pos + row > orow)
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Concat", "inputs exceed the result's axis");
    for (int64_t o = 0; o < outer; o++)
      interp_mv_copy_run(&outs[0], o * orow + pos, &ins[j], o * row, row);
    pos += row;
  }
  return NULL;
}

kiln_status interp_Split(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                         const interp_tensor *ins, uint32_t n_ins) {
  (void)n_ins;
  const kiln_type *it = &ins[0].type;
  uint32_t a;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "axis", 0), it->rank, &a), "interpreter Split");
  int64_t outer = interp_mv_prod(it->dims, 0, a);
  int64_t inner = interp_mv_prod(it->dims, a + 1, it->rank);
  int64_t irow = it->dims[a] * inner, pos = 0;
  for (uint32_t j = 0; j < n_outs; j++) {
    int64_t row = outs[j].type.dims[a] * inner;
    if (pos + row > irow)
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Split", "results exceed the input's axis");
    for (int64_t o = 0; o < outer; o++)
      interp_mv_copy_run(&outs[j], o * row, &ins[0], o * irow + pos, row);
    pos += row;
  }
  return NULL;
}

kiln_status interp_Shape(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                         const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  int64_t r = ins[0].type.rank;
  int64_t s = kiln_attrs_int_or(attrs, "start", 0);
  if (s < 0)
    s += r;
  s = s < 0 ? 0 : (s > r ? r : s);
  int64_t n = interp_mv_numel(&outs[0]);
  if (s + n > r)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Shape", "result too long for rank %lld",
                         (long long)r);
  for (int64_t k = 0; k < n; k++)
    interp_store_i(&outs[0], k, ins[0].type.dims[s + k]);
  return NULL;
}

kiln_status interp_Size(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                        const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  interp_store_i(&outs[0], 0, interp_mv_numel(&ins[0]));
  return NULL;
}

/* DepthToSpace / SpaceToDepth share one index map between a [N,C,H,W]
 * tensor and its [N,C/(b*b),H*b,W*b] counterpart. */
static int64_t mv_d2s_src(const kiln_type *deep, int64_t b, bool crd, int64_t n, int64_t c,
                          int64_t h, int64_t w) {
  int64_t C = deep->dims[1], H = deep->dims[2], W = deep->dims[3], Cs = C / (b * b);
  int64_t i = h % b, j = w % b, hh = h / b, ww = w / b;
  int64_t cd = crd ? c * b * b + i * b + j : (i * b + j) * Cs + c;
  return ((n * C + cd) * H + hh) * W + ww;
}

kiln_status interp_DepthToSpace(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *ot = &outs[0].type;
  int64_t b = kiln_attrs_int_or(attrs, "blocksize", 0);
  if (b <= 0 || ot->rank != 4 || ins[0].type.rank != 4)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "DepthToSpace", "needs rank 4 and blocksize > 0");
  const char *mode = kiln_attrs_string_or(attrs, "mode", "DCR");
  bool crd = !strcmp(mode, "CRD");
  if (!crd && strcmp(mode, "DCR"))
    return interp_mv_err(KILN_INVALID_ARGUMENT, "DepthToSpace", "unknown mode '%s'", mode);
  int64_t c[4], n = interp_mv_numel(&outs[0]);
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(ot->dims, 4, o, c);
    interp_copy_elem(&outs[0], o, &ins[0],
                     mv_d2s_src(&ins[0].type, b, crd, c[0], c[1], c[2], c[3]));
  }
  return NULL;
}

kiln_status interp_SpaceToDepth(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *it = &ins[0].type;
  int64_t b = kiln_attrs_int_or(attrs, "blocksize", 0);
  if (b <= 0 || it->rank != 4 || outs[0].type.rank != 4)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "SpaceToDepth", "needs rank 4 and blocksize > 0");
  int64_t c[4], n = interp_mv_numel(&ins[0]);
  /* walk the shallow (input) tensor; the deep one is the result, DCR order */
  for (int64_t i = 0; i < n; i++) {
    interp_mv_unravel(it->dims, 4, i, c);
    interp_copy_elem(&outs[0], mv_d2s_src(&outs[0].type, b, false, c[0], c[1], c[2], c[3]), &ins[0],
                     i);
  }
  return NULL;
}

kiln_status interp_Trilu(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                         const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *t = &ins[0].type;
  if (t->rank < 2)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Trilu", "rank %u, expected >= 2", t->rank);
  int64_t k = kiln_attrs_int_or(attrs, "k", 0);
  bool upper = kiln_attrs_int_or(attrs, "upper", 1) != 0;
  int64_t R = t->dims[t->rank - 2], C = t->dims[t->rank - 1], n = interp_mv_numel(&ins[0]);
  for (int64_t o = 0; o < n; o++) {
    int64_t j = o % C, i = (o / C) % R;
    bool keep = upper ? j - i >= k : j - i <= k;
    if (keep)
      interp_copy_elem(&outs[0], o, &ins[0], o);
    else
      interp_mv_store_zero(&outs[0], o);
  }
  return NULL;
}

kiln_status interp_ReverseSequence(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                   const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs, (void)n_ins;
  const kiln_type *t = &ins[0].type;
  uint32_t ba, ta;
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "batch_axis", 1), t->rank, &ba),
               "interpreter ReverseSequence batch_axis");
  KILN_TRY_CTX(interp_axis(kiln_attrs_int_or(attrs, "time_axis", 0), t->rank, &ta),
               "interpreter ReverseSequence time_axis");
  int64_t st[KILN_MAX_RANK], c[KILN_MAX_RANK], n = interp_mv_numel(&ins[0]);
  interp_mv_strides(t->dims, t->rank, st);
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(t->dims, t->rank, o, c);
    int64_t len = interp_mv_load_int(&ins[1], c[ba]), tt = c[ta];
    /* Past the time axis, the reversal would read before its start: an
     * index out of range, as where lowering makes it a GatherElements. */
    if (len > t->dims[ta])
      return interp_mv_err(KILN_OUT_OF_RANGE, "ReverseSequence",
                           "index %lld out of range for dimension %lld (sequence length of "
                           "batch element %lld)",
                           (long long)len, (long long)t->dims[ta], (long long)c[ba]);
    int64_t src = o;
    if (tt < len)
      src = o + (len - 1 - tt - tt) * st[ta];
    interp_copy_elem(&outs[0], o, &ins[0], src);
  }
  return NULL;
}

/* CenterCropPad: along each dimension the result window is centred on the
 * input (crop offset floor((in - out) / 2), or a pad of floor((out - in) / 2)
 * before); padded elements are zero. */
INTERP_KERNEL(CenterCropPad) {
  (void)attrs;
  INTERP_ARITY(CenterCropPad, 1, 1);
  const interp_tensor *x = &ins[0];
  interp_tensor *y = &outs[0];
  if (y->type.rank != x->type.rank)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter CenterCropPad: rank mismatch");
  memset(y->data, 0, (size_t)kiln_type_bytes(&y->type));
  int64_t n = interp_numel(y), co[KILN_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    interp_unravel(&y->type, i, co);
    bool inside = true;
    for (uint32_t d = 0; d < y->type.rank && inside; d++) {
      int64_t din = x->type.dims[d], dout = y->type.dims[d];
      co[d] += din >= dout ? (din - dout) / 2 : -((dout - din) / 2);
      inside = co[d] >= 0 && co[d] < din;
    }
    if (inside)
      interp_copy_elem(y, i, x, interp_ravel(&x->type, co));
  }
  return NULL;
}

/* ---- the channel-blocked layout ---- */
void interp_mv_block_copy(interp_tensor *plain, interp_tensor *blocked, bool to_blocked) {
  const kiln_type *b = &blocked->type;
  int64_t N = b->dims[0], Cb = b->dims[1], B = b->dims[b->rank - 1], C = plain->type.dims[1];
  int64_t S = interp_mv_prod(b->dims, 2, b->rank - 1);
  for (int64_t n = 0; n < N; n++)
    for (int64_t cb = 0; cb < Cb; cb++)
      for (int64_t s = 0; s < S; s++)
        for (int64_t l = 0; l < B; l++) {
          int64_t c = cb * B + l, bi = ((n * Cb + cb) * S + s) * B + l, pi = (n * C + c) * S + s;
          if (c >= C) {
            if (to_blocked)
              interp_mv_store_zero(blocked, bi);
          } else if (to_blocked) {
            interp_mv_copy_run(blocked, bi, plain, pi, 1);
          } else {
            interp_mv_copy_run(plain, pi, blocked, bi, 1);
          }
        }
}

kiln_status interp_BlockChannels(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                 const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  interp_mv_block_copy((interp_tensor *)&ins[0], &outs[0], true);
  return NULL;
}

kiln_status interp_UnblockChannels(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                                   const interp_tensor *ins, uint32_t n_ins) {
  (void)attrs, (void)n_outs, (void)n_ins;
  interp_mv_block_copy(&outs[0], (interp_tensor *)&ins[0], false);
  return NULL;
}
