/* plugins/cpu/emit_pool.c: MaxPool, AveragePool and the global pools.
 * f32 1-D and 2-D windows go to kernels/pool.c; other spatial ranks and
 * types (integer MaxPool, the Indices result) to the type-generic kernel
 * of kernels/conv_nd.c, except 8-bit 2-D MaxPool, which has its own
 * kernel in kernels/pool.c; f32 global pools to kernels/pool.c's plane
 * kernel. Window geometry: emit_window.c. */
#include "emit_window.h"

/* ---- type-generic N-D MaxPool / AveragePool ---- */
static bool kcpu_nd_pool_ok(const kiln_node *n, int mode) {
  const kiln_type *x = kcpu_n_in(n, 0);
  const int64_t *ks;
  if (!x || x->rank < 3 || x->rank - 2 > KCPU_ND_MAX || x->quantized ||
      kcpu_e_ints(kiln_node_attrs(n), "kernel_shape", &ks) != x->rank - 2)
    return false;
  bool ok_elem = kcpu_nd_float(x->elem) ||
                 (mode == 0 && (x->elem == KILN_U8 || x->elem == KILN_I8 || x->elem == KILN_I32 ||
                                x->elem == KILN_I16 || x->elem == KILN_U16));
  if (!ok_elem || !kcpu_nd_same(n, x->elem, 1))
    return false;
  if (kiln_node_result_count(n) > 1) {
    const kiln_type *ind = kcpu_n_out(n, 1);
    if (mode != 0 || (ind && ind->elem != KILN_I64))
      return false;
  }
  return true;
}

static kiln_status kcpu_nd_pool_emit(kcpu_emit *e, const kiln_instr *in, int mode) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  const int64_t *ks;
  kcpu_ndwin w;
  if (!x || !y || kcpu_e_ints(a, "kernel_shape", &ks) != x->rank - 2 ||
      !kcpu_nd_win(a, x, y, ks, false, &w))
    return kcpu_e_fail(in, "unsupported window attributes");
  uint32_t sp = (uint32_t)w.sp;
  const kiln_buffer *ind = kiln_instr_result_count(in) > 1 ? kcpu_i_out(in, 1) : NULL;
  LLVMValueRef args[16] = {kcpu_i64(e, x->elem), kcpu_addr(e, kcpu_i_in(in, 0)),
                           kcpu_addr(e, kcpu_i_out(in, 0)), kcpu_e_ptr(e, ind),
                           kcpu_i64(e, x->dims[0] * x->dims[1])};
  kcpu_ndwin_args(e, &w, args + 5);
  args[5 + KCPU_NDWIN_ARGS] = kcpu_i64_array(e, w.pe, sp);
  args[6 + KCPU_NDWIN_ARGS] = kcpu_i64(e, mode);
  args[7 + KCPU_NDWIN_ARGS] = kcpu_i64(e, kiln_attrs_int_or(a, "count_include_pad", 0) != 0);
  args[8 + KCPU_NDWIN_ARGS] = kcpu_i64(e, kiln_attrs_int_or(a, "storage_order", 0) != 0);
  return kcpu_e_call(e, in, "kcpu_k_poolnd", args, 16);
}
/* ---- f32 1-D / 2-D pools ---- */
static bool kcpu_pool_ok(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  const int64_t *ks;
  return x && (x->rank == 3 || x->rank == 4) && kiln_node_result_count(n) == 1 &&
         kcpu_e_ints(kiln_node_attrs(n), "kernel_shape", &ks) == x->rank - 2 &&
         kcpu_n_all_elem(n, KILN_F32);
}

static kiln_status kcpu_emit_pool(kcpu_emit *e, const kiln_instr *in, int64_t mode) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  const int64_t *ks;
  uint32_t sp = x->rank - 2;
  kcpu_win w;
  if (kcpu_e_ints(a, "kernel_shape", &ks) != sp || !kcpu_win_make(a, x, y, ks, sp, &w))
    return kcpu_e_fail(in, "unsupported window attributes");
  LLVMValueRef args[20] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->dims[0] * x->dims[1]),
                           kcpu_i64(e, w.in[0]),
                           kcpu_i64(e, w.in[1]),
                           kcpu_i64(e, w.out[0]),
                           kcpu_i64(e, w.out[1])};
  kcpu_win_args(e, &w, args + 7);
  args[7 + KCPU_WIN_ARGS] = kcpu_i64(e, w.pe[0]);
  args[8 + KCPU_WIN_ARGS] = kcpu_i64(e, w.pe[1]);
  args[9 + KCPU_WIN_ARGS] = kcpu_i64(e, mode);
  args[10 + KCPU_WIN_ARGS] = kcpu_i64(e, kiln_attrs_int_or(a, "count_include_pad", 0) != 0);
  args[11 + KCPU_WIN_ARGS] = kcpu_pool(e);
  return kcpu_e_call(e, in, "kcpu_k_pool2d", args, 20);
}

/* The f32 2-D kernel for what it takes, the generic N-D one otherwise. */
static bool kcpu_pool_fast(const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  return kiln_instr_result_count(in) == 1 && x && y && (x->rank == 3 || x->rank == 4) &&
         x->elem == KILN_F32 && y->elem == KILN_F32;
}

/* 8-bit 2-D MaxPool, one result (the quantized networks' pools between
 * integer convolutions): the separable kernel of kernels/pool.c. */
static bool kcpu_pool8(const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  return kiln_instr_result_count(in) == 1 && x && y && x->rank == 4 && !x->quantized &&
         (x->elem == KILN_U8 || x->elem == KILN_I8) && y->elem == x->elem && x->dims[3] <= 4096;
}

static kiln_status kcpu_emit_pool8(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  const int64_t *ks;
  kcpu_win w;
  if (kcpu_e_ints(a, "kernel_shape", &ks) != 2 || !kcpu_win_make(a, x, y, ks, 2, &w))
    return kcpu_e_fail(in, "unsupported window attributes");
  LLVMValueRef args[17] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->elem == KILN_I8),
                           kcpu_i64(e, x->dims[0] * x->dims[1]),
                           kcpu_i64(e, w.in[0]),
                           kcpu_i64(e, w.in[1]),
                           kcpu_i64(e, w.out[0]),
                           kcpu_i64(e, w.out[1])};
  kcpu_win_args(e, &w, args + 8);
  args[16] = kcpu_pool(e);
  return kcpu_e_call(e, in, "kcpu_k_pool2d_8", args, 17);
}

/* f32 pools over the channel-blocked layout (the layout pass's 3-D pool
 * of [N, Cb, H, W, B] with a window of 1 over the block of 16):
 * kernels/pool.c's blocked kernel, every lane a channel. */
static bool kcpu_pool_blocked_win(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                                  kcpu_ndwin *w) {
  const int64_t *ks;
  if (!x || !y || x->rank != 5 || x->dims[4] != 16 || x->elem != KILN_F32 || y->elem != KILN_F32 ||
      kcpu_e_ints(a, "kernel_shape", &ks) != 3 || !kcpu_nd_win(a, x, y, ks, false, w))
    return false;
  return w->sp == 3 && w->k[2] == 1 && w->s[2] == 1 && w->pb[2] == 0 && w->pe[2] == 0 &&
         w->out[2] == 16;
}

static bool kcpu_pool_blocked_ok(const kiln_node *n) {
  kcpu_ndwin w;
  return kiln_node_result_count(n) == 1 &&
         kcpu_pool_blocked_win(kiln_node_attrs(n), kcpu_n_in(n, 0), kcpu_n_out(n, 0), &w);
}

static kiln_status kcpu_emit_pool_blocked(kcpu_emit *e, const kiln_instr *in, int64_t mode,
                                          bool *done) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  kcpu_ndwin w;
  *done = kiln_instr_result_count(in) == 1 && kcpu_pool_blocked_win(a, x, y, &w);
  if (!*done)
    return NULL;
  LLVMValueRef args[20] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, x->dims[0] * x->dims[1]),
                           kcpu_i64(e, w.in[0]),
                           kcpu_i64(e, w.in[1]),
                           kcpu_i64(e, w.out[0]),
                           kcpu_i64(e, w.out[1]),
                           kcpu_i64(e, w.k[0]),
                           kcpu_i64(e, w.k[1]),
                           kcpu_i64(e, w.s[0]),
                           kcpu_i64(e, w.s[1]),
                           kcpu_i64(e, w.d[0]),
                           kcpu_i64(e, w.d[1]),
                           kcpu_i64(e, w.pb[0]),
                           kcpu_i64(e, w.pb[1]),
                           kcpu_i64(e, w.pe[0]),
                           kcpu_i64(e, w.pe[1]),
                           kcpu_i64(e, mode),
                           kcpu_i64(e, kiln_attrs_int_or(a, "count_include_pad", 0) != 0),
                           kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_pool2d_blocked", args, 20);
}

bool kcpu_supports_MaxPool(const kiln_node *n) {
  return kcpu_pool_ok(n) || kcpu_pool_blocked_ok(n) || kcpu_nd_pool_ok(n, 0);
}
kiln_status kcpu_emit_MaxPool(kcpu_emit *e, const kiln_instr *in) {
  bool done;
  KILN_TRY(kcpu_emit_pool_blocked(e, in, 0, &done));
  if (done)
    return NULL;
  if (kcpu_pool8(in))
    return kcpu_emit_pool8(e, in);
  return kcpu_pool_fast(in) ? kcpu_emit_pool(e, in, 0) : kcpu_nd_pool_emit(e, in, 0);
}
bool kcpu_supports_AveragePool(const kiln_node *n) {
  return kcpu_pool_ok(n) || kcpu_pool_blocked_ok(n) || kcpu_nd_pool_ok(n, 1);
}
kiln_status kcpu_emit_AveragePool(kcpu_emit *e, const kiln_instr *in) {
  bool done;
  KILN_TRY(kcpu_emit_pool_blocked(e, in, 1, &done));
  if (done)
    return NULL;
  return kcpu_pool_fast(in) ? kcpu_emit_pool(e, in, 1) : kcpu_nd_pool_emit(e, in, 1);
}

/* Global pools: kernels/pool.c's plane kernel, which sums in the order of
 * the reduction kernels (kcpu_k_reduce) and splits planes over threads. */
static kiln_status kcpu_emit_global(kcpu_emit *e, const kiln_instr *in, int64_t mode) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, x->dims[0] * x->dims[1]),
                         kcpu_i64(e, kcpu_e_prod(x->dims, 2, x->rank)),
                         kcpu_i64(e, mode),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_gpool", args, 6);
}

bool kcpu_supports_GlobalAveragePool(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  return x && x->rank >= 3 && kcpu_n_all_elem(n, KILN_F32);
}
kiln_status kcpu_emit_GlobalAveragePool(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_emit_global(e, in, 1 /* average */);
}
bool kcpu_supports_GlobalMaxPool(const kiln_node *n) {
  return kcpu_supports_GlobalAveragePool(n);
}
kiln_status kcpu_emit_GlobalMaxPool(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_emit_global(e, in, 0 /* max */);
}
