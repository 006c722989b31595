/* plugins/cpu/emit_movement.c: data movement for every element type, as
 * strided copies (Transpose, Slice, Concat, Split, Expand, Tile, Pad,
 * DepthToSpace, SpaceToDepth) or dedicated kernels (non-constant Pad
 * modes). Strides are worked out here at compile time. Where (elementwise)
 * is here too: it is a broadcast strided select over the same byte-unit
 * mover (kernels/movement.c) and shares the broadcast strides. */
#include "emit_util.h"
#include "kiln/ops.h"

#include <string.h>

#define KCPU_MR 16

/* dst[Σ i*dst_st] = src[Σ i*src_st] over dims; offsets in elements. */
static kiln_status kcpu_copy(kcpu_emit *e, const kiln_instr *in, const kiln_buffer *dst,
                             int64_t dst_off, const int64_t *dst_st, const kiln_buffer *src,
                             int64_t src_off, const int64_t *src_st, uint32_t rank,
                             const int64_t *dims, int64_t esize) {
  if (kcpu_e_prod(dims, 0, rank) == 0)
    return NULL;
  int64_t one = 1, zero = 0;
  if (rank == 0) {
    dims = &one;
    dst_st = src_st = &zero;
    rank = 1;
  }
  LLVMBuilderRef b = kcpu_builder(e);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(kcpu_context(e));
  LLVMValueRef dp = kcpu_addr(e, dst), sp = kcpu_addr(e, src);
  LLVMValueRef doff = kcpu_i64(e, dst_off * esize), soff = kcpu_i64(e, src_off * esize);
  dp = LLVMBuildGEP2(b, i8, dp, &doff, 1, "");
  sp = LLVMBuildGEP2(b, i8, sp, &soff, 1, "");
  LLVMValueRef args[] = {dp,
                         kcpu_i64_array(e, dst_st, rank),
                         sp,
                         kcpu_i64_array(e, src_st, rank),
                         kcpu_i64(e, rank),
                         kcpu_i64_array(e, dims, rank),
                         kcpu_i64(e, esize),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_copy_strided", args, 8);
}

static int64_t kcpu_esize(const kiln_type *t) {
  return (int64_t)kiln_elem_size(t->elem);
}

bool kcpu_supports_Transpose(const kiln_node *n) {
  return kcpu_n_plain(n);
}
kiln_status kcpu_emit_Transpose(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  const int64_t *perm;
  uint32_t np = kcpu_e_ints(kiln_instr_attrs(in), "perm", &perm);
  int64_t xs[KILN_MAX_RANK], ys[KILN_MAX_RANK], ss[KILN_MAX_RANK];
  kcpu_e_strides(x, xs);
  kcpu_e_strides(y, ys);
  for (uint32_t d = 0; d < y->rank; d++) {
    int64_t p = np ? perm[d] : (int64_t)(x->rank - 1 - d);
    if (p < 0)
      p += x->rank;
    if (p < 0 || p >= (int64_t)x->rank)
      return kcpu_e_fail(in, "perm entry out of range");
    ss[d] = xs[p];
  }
  return kcpu_copy(e, in, kcpu_i_out(in, 0), 0, ys, kcpu_i_in(in, 0), 0, ss, y->rank, y->dims,
                   kcpu_esize(x));
}

bool kcpu_supports_Slice(const kiln_node *n) {
  return kcpu_n_plain(n);
}
kiln_status kcpu_emit_Slice(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  kiln_slice sl;
  kiln_status s = kiln_slice_decode(kiln_instr_attrs(in), x, &sl);
  if (s) {
    kiln_status r = kcpu_e_fail(in, "%s", kiln_status_message(s));
    kiln_status_free(s);
    return r;
  }
  int64_t xs[KILN_MAX_RANK], ys[KILN_MAX_RANK], ss[KILN_MAX_RANK], off = 0;
  kcpu_e_strides(x, xs);
  kcpu_e_strides(y, ys);
  for (uint32_t a = 0; a < x->rank; a++) {
    if (y->dims[a] > 0)
      off += sl.start[a] * xs[a];
    ss[a] = xs[a] * sl.step[a];
  }
  return kcpu_copy(e, in, kcpu_i_out(in, 0), 0, ys, kcpu_i_in(in, 0), off, ss, y->rank, y->dims,
                   kcpu_esize(x));
}

bool kcpu_supports_Concat(const kiln_node *n) {
  return kcpu_n_plain(n);
}
kiln_status kcpu_emit_Concat(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *y = kcpu_i_out_type(in, 0);
  int64_t ax, ys[KILN_MAX_RANK], pos = 0;
  if (!kcpu_e_axis(kiln_attrs_int_or(kiln_instr_attrs(in), "axis", 0), y->rank, &ax))
    return kcpu_e_fail(in, "axis out of range");
  kcpu_e_strides(y, ys);
  for (uint32_t i = 0; i < kcpu_i_inputs(in); i++) {
    const kiln_type *x = kcpu_i_in_type(in, i);
    int64_t xs[KILN_MAX_RANK];
    kcpu_e_strides(x, xs);
    KILN_TRY(kcpu_copy(e, in, kcpu_i_out(in, 0), pos * ys[ax], ys, kcpu_i_in(in, i), 0, xs, x->rank,
                       x->dims, kcpu_esize(x)));
    pos += x->dims[ax];
  }
  return NULL;
}

bool kcpu_supports_Split(const kiln_node *n) {
  return kcpu_n_plain(n);
}
kiln_status kcpu_emit_Split(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  int64_t ax, xs[KILN_MAX_RANK], pos = 0;
  if (!kcpu_e_axis(kiln_attrs_int_or(kiln_instr_attrs(in), "axis", 0), x->rank, &ax))
    return kcpu_e_fail(in, "axis out of range");
  kcpu_e_strides(x, xs);
  for (uint32_t i = 0; i < kiln_instr_result_count(in); i++) {
    const kiln_type *y = kcpu_i_out_type(in, i);
    int64_t ys[KILN_MAX_RANK];
    kcpu_e_strides(y, ys);
    KILN_TRY(kcpu_copy(e, in, kcpu_i_out(in, i), 0, ys, kcpu_i_in(in, 0), pos * xs[ax], xs, y->rank,
                       y->dims, kcpu_esize(x)));
    pos += y->dims[ax];
  }
  return NULL;
}

/* Strides that read x broadcast (right-aligned) over y's dims. */
static void kcpu_bcast_strides(const kiln_type *x, const kiln_type *y, int64_t *st) {
  int64_t xs[KILN_MAX_RANK];
  kcpu_e_strides(x, xs);
  for (uint32_t d = 0; d < y->rank; d++) {
    int64_t xd = (int64_t)d - (int64_t)(y->rank - x->rank);
    st[d] = xd < 0 || x->dims[xd] == 1 ? 0 : xs[xd];
  }
}

bool kcpu_supports_Expand(const kiln_node *n) {
  return kcpu_n_plain(n);
}
kiln_status kcpu_emit_Expand(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  int64_t ys[KILN_MAX_RANK], ss[KILN_MAX_RANK];
  kcpu_e_strides(y, ys);
  kcpu_bcast_strides(x, y, ss);
  return kcpu_copy(e, in, kcpu_i_out(in, 0), 0, ys, kcpu_i_in(in, 0), 0, ss, y->rank, y->dims,
                   kcpu_esize(x));
}

bool kcpu_supports_Tile(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  return kcpu_n_plain(n) && x && x->rank <= 8;
}
kiln_status kcpu_emit_Tile(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  int64_t xs[KILN_MAX_RANK], ys[KILN_MAX_RANK], dims[KCPU_MR], ds[KCPU_MR], ss[KCPU_MR];
  kcpu_e_strides(x, xs);
  kcpu_e_strides(y, ys);
  for (uint32_t d = 0; d < x->rank; d++) {
    int64_t rep = x->dims[d] ? y->dims[d] / x->dims[d] : 0;
    dims[2 * d] = rep;
    dims[2 * d + 1] = x->dims[d];
    ds[2 * d] = x->dims[d] * ys[d];
    ds[2 * d + 1] = ys[d];
    ss[2 * d] = 0;
    ss[2 * d + 1] = xs[d];
  }
  return kcpu_copy(e, in, kcpu_i_out(in, 0), 0, ds, kcpu_i_in(in, 0), 0, ss, 2 * x->rank, dims,
                   kcpu_esize(x));
}

bool kcpu_supports_Pad(const kiln_node *n) {
  const char *m = kiln_attrs_string_or(kiln_node_attrs(n), "mode", "constant");
  return kcpu_n_plain(n) && (!strcmp(m, "constant") || !strcmp(m, "edge") ||
                             !strcmp(m, "reflect") || !strcmp(m, "wrap"));
}
kiln_status kcpu_emit_Pad(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  const int64_t *pads, *axes;
  uint32_t np = kcpu_e_ints(a, "pads", &pads), na = kcpu_e_ints(a, "axes", &axes);
  uint32_t cnt = na ? na : x->rank;
  if (np != 2 * cnt)
    return kcpu_e_fail(in, "pads has %u entries, expected %u", np, 2 * cnt);
  int64_t pb[KILN_MAX_RANK] = {0};
  for (uint32_t i = 0; i < cnt; i++) {
    int64_t ax;
    if (!kcpu_e_axis(na ? axes[i] : (int64_t)i, x->rank, &ax))
      return kcpu_e_fail(in, "axis out of range");
    pb[ax] = pads[i];
  }
  const char *mode = kiln_attrs_string_or(a, "mode", "constant");
  int64_t es = kcpu_esize(x);
  if (strcmp(mode, "constant")) {
    int64_t m = !strcmp(mode, "edge") ? 1 : !strcmp(mode, "reflect") ? 2 : 3;
    if (kiln_type_numel(y) == 0)
      return NULL;
    if (kiln_type_numel(x) == 0)
      return kcpu_e_fail(in, "%s padding of an empty tensor", mode);
    LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->rank),
                           kcpu_i64_array(e, x->dims, x->rank),
                           kcpu_i64_array(e, y->dims, y->rank),
                           kcpu_i64_array(e, pb, x->rank),
                           kcpu_i64(e, m),
                           kcpu_i64(e, es)};
    return kcpu_e_call(e, in, "kcpu_k_pad_index", args, 8);
  }
  /* constant: fill, then copy the kept part of x into the interior */
  double v = kiln_attrs_float_or(a, "value", 0.0);
  int64_t bits = 0;
  switch (x->elem) {
  case KILN_F64:
    memcpy(&bits, &v, 8);
    break;
  case KILN_F32: {
    float f = (float)v;
    memcpy(&bits, &f, 4);
    break;
  }
  case KILN_F16:
    bits = kiln_f32_to_f16((float)v);
    break;
  case KILN_BF16:
    bits = kiln_f32_to_bf16((float)v);
    break;
  case KILN_BOOL:
    bits = v != 0;
    break;
  default:
    bits = (int64_t)v;
    break; /* little-endian: low bytes are the value */
  }
  LLVMValueRef fargs[] = {kcpu_addr(e, kcpu_i_out(in, 0)), kcpu_i64(e, kiln_type_numel(y)),
                          kcpu_i64_array(e, &bits, 1), kcpu_i64(e, es)};
  KILN_TRY(kcpu_e_call(e, in, "kcpu_k_fill", fargs, 4));
  int64_t xs[KILN_MAX_RANK], ys[KILN_MAX_RANK], dims[KILN_MAX_RANK], soff = 0, doff = 0;
  kcpu_e_strides(x, xs);
  kcpu_e_strides(y, ys);
  for (uint32_t d = 0; d < x->rank; d++) {
    int64_t s0 = pb[d] < 0 ? -pb[d] : 0, d0 = pb[d] > 0 ? pb[d] : 0;
    int64_t n = x->dims[d] - s0;
    if (n > y->dims[d] - d0)
      n = y->dims[d] - d0;
    dims[d] = n > 0 ? n : 0;
    soff += s0 * xs[d];
    doff += d0 * ys[d];
  }
  return kcpu_copy(e, in, kcpu_i_out(in, 0), doff, ys, kcpu_i_in(in, 0), soff, xs, x->rank, dims,
                   es);
}

bool kcpu_supports_Where(const kiln_node *n) {
  const kiln_type *c = kcpu_n_in(n, 0), *y = kcpu_n_out(n, 0);
  return kcpu_n_plain(n) && c && c->elem == KILN_BOOL && y && y->rank <= 16;
}
kiln_status kcpu_emit_Where(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *y = kcpu_i_out_type(in, 0);
  int64_t st[3][KILN_MAX_RANK], one = 1, zero = 0;
  for (uint32_t i = 0; i < 3; i++)
    kcpu_bcast_strides(kcpu_i_in_type(in, i), y, st[i]);
  uint32_t r = y->rank ? y->rank : 1;
  const int64_t *dims = y->rank ? y->dims : &one;
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_i64_array(e, y->rank ? st[0] : &zero, r),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_i64_array(e, y->rank ? st[1] : &zero, r),
                         kcpu_addr(e, kcpu_i_in(in, 2)),
                         kcpu_i64_array(e, y->rank ? st[2] : &zero, r),
                         kcpu_i64(e, r),
                         kcpu_i64_array(e, dims, r),
                         kcpu_i64(e, kcpu_esize(y))};
  if (kiln_type_numel(y) == 0)
    return NULL;
  return kcpu_e_call(e, in, "kcpu_k_where", args, 10);
}

/* DepthToSpace / SpaceToDepth: a 6-D transpose of [N, C, H, W]. */
static kiln_status kcpu_d2s(kcpu_emit *e, const kiln_instr *in, bool to_space) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  int64_t bs = kiln_attrs_int_or(kiln_instr_attrs(in), "blocksize", 0);
  if (x->rank != 4 || bs < 1)
    return kcpu_e_fail(in, "needs a 4-D input and blocksize >= 1");
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  int64_t dims[6], ss[6], ds[6];
  if (to_space) {
    bool crd = !strcmp(kiln_attrs_string_or(kiln_instr_attrs(in), "mode", "DCR"), "CRD");
    int64_t Cq = C / (bs * bs);
    /* output viewed as [N, Cq, H, b1, W, b2] (contiguous) */
    int64_t od[6] = {N, Cq, H, bs, W, bs};
    memcpy(dims, od, sizeof od);
    /* input channel of (cq, b1, b2): DCR b1*b*Cq + b2*Cq + cq; CRD cq*b*b + b1*b + b2 */
    int64_t cst = H * W;
    ss[0] = C * cst;
    ss[1] = (crd ? bs * bs : 1) * cst;
    ss[2] = W;
    ss[3] = (crd ? bs : bs * Cq) * cst;
    ss[4] = 1;
    ss[5] = (crd ? 1 : Cq) * cst;
  } else {
    /* output [N, b1*b*C + b2*C + c, H/b, W/b], viewed as [N, b1, b2, C, Ho, Wo] */
    int64_t Ho = H / bs, Wo = W / bs;
    int64_t od[6] = {N, bs, bs, C, Ho, Wo};
    memcpy(dims, od, sizeof od);
    ss[0] = C * H * W;
    ss[1] = W; /* b1 moves rows */
    ss[2] = 1; /* b2 moves columns */
    ss[3] = H * W;
    ss[4] = bs * W;
    ss[5] = bs;
  }
  int64_t st = 1;
  for (int d = 5; d >= 0; d--) {
    ds[d] = st;
    st *= dims[d];
  }
  (void)y;
  return kcpu_copy(e, in, kcpu_i_out(in, 0), 0, ds, kcpu_i_in(in, 0), 0, ss, 6, dims,
                   kcpu_esize(x));
}

bool kcpu_supports_DepthToSpace(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  return kcpu_n_plain(n) && x && x->rank == 4;
}
kiln_status kcpu_emit_DepthToSpace(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_d2s(e, in, true);
}
bool kcpu_supports_SpaceToDepth(const kiln_node *n) {
  return kcpu_supports_DepthToSpace(n);
}
kiln_status kcpu_emit_SpaceToDepth(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_d2s(e, in, false);
}

/* Reshape-like kinds are views after IRGen; should one reach code
 * generation as an instruction, it is a byte copy. */
static kiln_status kcpu_emit_bytes(kcpu_emit *e, const kiln_instr *in) {
  int64_t bytes = kiln_type_bytes(kcpu_i_out_type(in, 0));
  if (bytes > 0)
    LLVMBuildMemMove(kcpu_builder(e), kcpu_addr(e, kcpu_i_out(in, 0)), 1,
                     kcpu_addr(e, kcpu_i_in(in, 0)), 1, kcpu_i64(e, bytes));
  return NULL;
}

#define KCPU_VIEW_KIND(K)                                                                          \
  bool kcpu_supports_##K(const kiln_node *n) {                                                     \
    return kcpu_n_plain(n);                                                                        \
  }                                                                                                \
  kiln_status kcpu_emit_##K(kcpu_emit *e, const kiln_instr *in) {                                  \
    return kcpu_emit_bytes(e, in);                                                                 \
  }
KCPU_VIEW_KIND(Reshape)
KCPU_VIEW_KIND(Flatten)
KCPU_VIEW_KIND(Squeeze)
KCPU_VIEW_KIND(Unsqueeze)

/* ---- the channel-blocked layout's conversions (kernels/movement_blocked.c):
 * f32, blocks of 16 ---- */
bool kcpu_supports_BlockChannels(const kiln_node *n) {
  const kiln_type *y = kcpu_n_out(n, 0);
  return y && y->dims[y->rank - 1] == 16 && kcpu_n_all_elem(n, KILN_F32);
}
static kiln_status kcpu_emit_blocking(kcpu_emit *e, const kiln_instr *in, const kiln_type *plain,
                                      const char *fn) {
  int64_t S = 1;
  for (uint32_t i = 2; i < plain->rank; i++)
    S *= plain->dims[i];
  LLVMValueRef args[6] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                          kcpu_addr(e, kcpu_i_out(in, 0)),
                          kcpu_i64(e, plain->dims[0]),
                          kcpu_i64(e, plain->dims[1]),
                          kcpu_i64(e, S),
                          kcpu_pool(e)};
  return kcpu_e_call(e, in, fn, args, 6);
}
kiln_status kcpu_emit_BlockChannels(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_emit_blocking(e, in, kcpu_i_in_type(in, 0), "kcpu_k_block_channels");
}
bool kcpu_supports_UnblockChannels(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  return x && x->dims[x->rank - 1] == 16 && kcpu_n_all_elem(n, KILN_F32);
}
kiln_status kcpu_emit_UnblockChannels(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_emit_blocking(e, in, kcpu_i_out_type(in, 0), "kcpu_k_unblock_channels");
}
