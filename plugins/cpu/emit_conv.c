/* plugins/cpu/emit_conv.c: Conv (1-D and 2-D, groups, pads, strides,
 * dilations, auto_pad), MaxPool / AveragePool (1-D and 2-D) and the global
 * pools, f32 NCHW, as calls to the kernel library. Pads are resolved here
 * exactly as the reference interpreter does (SAME_UPPER puts the odd pad at
 * the end). Constant filters of GEMM-based convolutions are packed here,
 * once, and a fused Relu (`activation`) rides on the GEMM epilogue. */
#include "emit_nd.h"

#include <string.h>

#include "emit_perf.h"
#include "gemm_impl.h"

typedef struct kcpu_win {
  int64_t in[2], out[2], k[2], s[2], d[2], pb[2], pe[2];
} kcpu_win;

/* Window geometry for spatial rank sp (1 or 2) lifted to 2-D (H = 1). */
static bool kcpu_win_make(const kiln_attrs *a, const kiln_type *x, const kiln_type *y,
                          const int64_t *kshape, uint32_t sp, kcpu_win *w) {
  const int64_t *st, *dl, *pads;
  uint32_t ns = kcpu_e_ints(a, "strides", &st), nd = kcpu_e_ints(a, "dilations", &dl);
  uint32_t np = kcpu_e_ints(a, "pads", &pads);
  if ((ns && ns != sp) || (nd && nd != sp) || (np && np != 2 * sp))
    return false;
  const char *ap = kiln_attrs_string_or(a, "auto_pad", "NOTSET");
  bool upper = !strcmp(ap, "SAME_UPPER"), lower = !strcmp(ap, "SAME_LOWER");
  bool valid = !strcmp(ap, "VALID");
  if (!upper && !lower && !valid && strcmp(ap, "NOTSET"))
    return false;
  for (int i = 0; i < 2; i++) {
    w->in[i] = w->out[i] = w->k[i] = w->s[i] = w->d[i] = 1;
    w->pb[i] = w->pe[i] = 0;
  }
  for (uint32_t i = 0; i < sp; i++) {
    uint32_t j = i + 2 - sp;
    w->in[j] = x->dims[2 + i];
    w->out[j] = y->dims[2 + i];
    w->k[j] = kshape[i];
    w->s[j] = ns ? st[i] : 1;
    w->d[j] = nd ? dl[i] : 1;
    if (upper || lower) {
      int64_t total = (w->out[j] - 1) * w->s[j] + (w->k[j] - 1) * w->d[j] + 1 - w->in[j];
      if (total < 0)
        total = 0;
      w->pb[j] = upper ? total / 2 : total - total / 2;
      w->pe[j] = total - w->pb[j];
    } else if (!valid && np) {
      w->pb[j] = pads[i];
      w->pe[j] = pads[sp + i];
    }
    if (w->s[j] < 1 || w->d[j] < 1 || w->pb[j] < 0 || w->pe[j] < 0)
      return false;
  }
  return true;
}

static bool kcpu_conv_fast(const kiln_type *x, const kiln_type *w, const kiln_type *y) {
  return x && w && y && (x->rank == 3 || x->rank == 4) && w->rank == x->rank &&
         x->elem == KILN_F32 && w->elem == KILN_F32 && y->elem == KILN_F32;
}

bool kcpu_supports_Conv(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *w = kcpu_n_in(n, 1);
  return (x && w && (x->rank == 3 || x->rank == 4) && w->rank == x->rank &&
          kcpu_n_all_elem(n, KILN_F32)) ||
         kcpu_nd_conv_ok(n);
}

kiln_status kcpu_emit_Conv(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *wt = kcpu_i_in_type(in, 1);
  const kiln_type *y = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  if (!kcpu_conv_fast(x, wt, y))
    return kcpu_nd_conv_emit(e, in);
  uint32_t sp = x->rank - 2;
  kcpu_win w;
  if (!kcpu_win_make(a, x, y, wt->dims + 2, sp, &w))
    return kcpu_e_fail(in, "unsupported strides/dilations/pads/auto_pad");
  int64_t group = kiln_attrs_int_or(a, "group", 1);
  if (group < 1 || x->dims[1] % group || y->dims[1] % group)
    return kcpu_e_fail(in, "group %lld does not divide the channels", (long long)group);
  int64_t act;
  if (!kcpu_perf_act(a, &act))
    return kcpu_e_fail(in, "activation '%s' is not supported",
                       kiln_attrs_string_or(a, "activation", ""));
  int64_t C = x->dims[1], M = y->dims[1], lanes = kcpu_vector_lanes(e);
  LLVMValueRef wpk = NULL;
  if (!(group == C && M == C && group > 1)) { /* not depthwise: GEMM with A = filters */
    int64_t Mg = M / group, Kg = C / group * w.k[0] * w.k[1];
    wpk =
        kcpu_perf_prepack(e, kcpu_i_in(in, 1), group, Mg * Kg, Mg, Kg, Kg, 1, kcpu_gemm_mr(lanes));
  }
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         wpk ? wpk : kcpu_e_null(e),
                         kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, x->dims[0]),
                         kcpu_i64(e, x->dims[1]),
                         kcpu_i64(e, w.in[0]),
                         kcpu_i64(e, w.in[1]),
                         kcpu_i64(e, y->dims[1]),
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
                         kcpu_i64(e, group),
                         kcpu_i64(e, act),
                         kcpu_i64(e, lanes),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_conv2d_ex", args, 24);
}

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
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
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
  return kcpu_e_call(e, in, "kcpu_k_pool2d", args, 20);
}

/* The f32 2-D kernel for what it takes, the generic N-D one otherwise. */
static bool kcpu_pool_fast(const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  return kiln_instr_result_count(in) == 1 && x && y && (x->rank == 3 || x->rank == 4) &&
         x->elem == KILN_F32 && y->elem == KILN_F32;
}

bool kcpu_supports_MaxPool(const kiln_node *n) {
  return kcpu_pool_ok(n) || kcpu_nd_pool_ok(n, 0);
}
kiln_status kcpu_emit_MaxPool(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_pool_fast(in) ? kcpu_emit_pool(e, in, 0) : kcpu_nd_pool_emit(e, in, 0);
}
bool kcpu_supports_AveragePool(const kiln_node *n) {
  return kcpu_pool_ok(n) || kcpu_nd_pool_ok(n, 1);
}
kiln_status kcpu_emit_AveragePool(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_pool_fast(in) ? kcpu_emit_pool(e, in, 1) : kcpu_nd_pool_emit(e, in, 1);
}

/* Global pools: a reduction over every spatial axis. */
static kiln_status kcpu_emit_global(kcpu_emit *e, const kiln_instr *in, int64_t op) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  int64_t dims[3] = {x->dims[0] * x->dims[1], kcpu_e_prod(x->dims, 2, x->rank), 1};
  LLVMValueRef args[] = {kcpu_i64(e, KILN_F32),
                         kcpu_i64(e, op),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, 2),
                         kcpu_i64_array(e, dims, 2),
                         kcpu_i64(e, 2)};
  return kcpu_e_call(e, in, "kcpu_k_reduce", args, 7);
}

bool kcpu_supports_GlobalAveragePool(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  return x && x->rank >= 3 && kcpu_n_all_elem(n, KILN_F32);
}
kiln_status kcpu_emit_GlobalAveragePool(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_emit_global(e, in, 1 /* KCPU_RED_MEAN */);
}
bool kcpu_supports_GlobalMaxPool(const kiln_node *n) {
  return kcpu_supports_GlobalAveragePool(n);
}
kiln_status kcpu_emit_GlobalMaxPool(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_emit_global(e, in, 2 /* KCPU_RED_MAX */);
}
