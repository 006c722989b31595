/* plugins/cpu/emit_rnn.c: RNN, GRU and LSTM as calls to kernels/rnn.c.
 * The activation lists are resolved by kiln_rnn_activations into codes and
 * constants per direction; the kernel's codes are kiln_rnn_act_kind's. */
#include "emit_util.h"

#include <string.h>

#include "emit_perf.h"
#include "gemm_impl.h"

_Static_assert(KILN_RNN_ACT_RELU == 0 && KILN_RNN_ACT_SOFTPLUS == 10,
               "kernels/rnn.c numbers its activations as kiln_rnn_act_kind");

typedef struct kcpu_rnn_cfg {
  int64_t gates, per_dir, dirs, reverse;
  int64_t act[6], ab[12];
} kcpu_rnn_cfg;

static kiln_status kcpu_rnn_acts(const kiln_attrs *a, kiln_node_kind k, kcpu_rnn_cfg *c) {
  kiln_rnn_act acts[KILN_RNN_MAX_ACTS];
  uint32_t n;
  KILN_TRY(kiln_rnn_activations(k, a, (uint32_t)c->dirs, acts, KILN_RNN_MAX_ACTS, &n));
  for (uint32_t i = 0; i < 6; i++)
    c->act[i] = 0, c->ab[i] = c->ab[6 + i] = 0;
  for (uint32_t i = 0; i < n; i++) {
    c->act[i] = (int64_t)acts[i].kind;
    /* the kernel takes alpha and beta as the bits of doubles */
    memcpy(&c->ab[i], &acts[i].alpha, sizeof acts[i].alpha);
    memcpy(&c->ab[6 + i], &acts[i].beta, sizeof acts[i].beta);
  }
  return NULL;
}

static kiln_status kcpu_rnn_cfg_make(const kiln_attrs *a, kiln_node_kind k, kcpu_rnn_cfg *c) {
  c->gates = k == KILN_NODE_RNN ? 1 : k == KILN_NODE_GRU ? 3 : 4;
  c->per_dir = k == KILN_NODE_RNN ? 1 : k == KILN_NODE_GRU ? 2 : 3;
  const char *dir = kiln_attrs_string_or(a, "direction", "forward");
  bool fwd = !strcmp(dir, "forward"), rev = !strcmp(dir, "reverse");
  if (!fwd && !rev && strcmp(dir, "bidirectional"))
    return kiln_status_make(KILN_UNIMPLEMENTED, "unknown direction '%s'", dir);
  c->dirs = fwd || rev ? 1 : 2;
  c->reverse = rev;
  return kcpu_rnn_acts(a, k, c);
}

static bool kcpu_rnn_ok(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *w = kcpu_n_in(n, 1), *r = kcpu_n_in(n, 2);
  if (!x || !w || !r || x->rank != 3 || w->rank != 3 || r->rank != 3 || x->quantized)
    return false;
  kiln_elem el = x->elem;
  if (el != KILN_F32 && el != KILN_F64 && el != KILN_F16 && el != KILN_BF16)
    return false;
  for (uint32_t i = 0; i < kcpu_n_inputs(n); i++) {
    const kiln_type *t = kcpu_n_in(n, i);
    if (t && i != 4 && (t->elem != el || t->quantized))
      return false;
    if (t && i == 4 && t->elem != KILN_I32 && t->elem != KILN_I64)
      return false;
  }
  for (uint32_t i = 0; i < kiln_node_result_count(n); i++) {
    const kiln_type *t = kcpu_n_out(n, i);
    if (t && (t->elem != el || t->quantized))
      return false;
  }
  kcpu_rnn_cfg c;
  kiln_status s = kcpu_rnn_cfg_make(kiln_node_attrs(n), kiln_node_get_kind(n), &c);
  if (s) {
    kiln_status_free(s);
    return false;
  }
  return w->dims[0] == c.dirs;
}

/* The condition under which kcpu_k_rnn takes its f32 path (kernels/rnn.c,
 * kcpu_rnn32_ok): f32, at most two directions, each with the kind's
 * default activations. Only then are packed weights of use to it. */
static bool kcpu_rnn_fast(const kcpu_rnn_cfg *c, kiln_elem el) {
  if (el != KILN_F32 || c->dirs > 2)
    return false;
  for (int64_t d = 0; d < c->dirs; d++)
    for (int64_t i = 0; i < c->per_dir; i++) {
      int64_t want = i == 0 && c->gates != 1 ? KILN_RNN_ACT_SIGMOID : KILN_RNN_ACT_TANH;
      if (c->act[d * c->per_dir + i] != want)
        return false;
    }
  return true;
}

static kiln_status kcpu_rnn_emit(kcpu_emit *e, const kiln_instr *in, kiln_node_kind k) {
  const kiln_attrs *a = kiln_instr_attrs(in);
  kcpu_rnn_cfg c;
  kiln_status s = kcpu_rnn_cfg_make(a, k, &c);
  if (s) {
    kiln_status f = kcpu_e_fail(in, "%s", kiln_status_message(s));
    kiln_status_free(s);
    return f;
  }
  const kiln_type *x = kcpu_i_in_type(in, 0), *r = kcpu_i_in_type(in, 2);
  const kiln_type *lt = kcpu_i_inputs(in) > 4 ? kcpu_i_in_type(in, 4) : NULL;
  int64_t layout1 = kiln_attrs_int_or(a, "layout", 0) != 0;
  int64_t dims[5] = {x->dims[layout1 ? 1 : 0], x->dims[layout1 ? 0 : 1], x->dims[2], r->dims[2],
                     c.dirs};
  uint32_t ni = kcpu_i_inputs(in), nr = kiln_instr_result_count(in);
  /* Constant W and R are packed once here into the layouts the f32 path
   * reads (kcpu_k_rnn), instead of at every run; the kernel packs them
   * itself when they are not constants or the weights live in a bundle. */
  int64_t lanes = kcpu_vector_lanes(e);
  LLVMValueRef wpk = NULL, rpk = NULL;
  if (kcpu_rnn_fast(&c, x->elem)) {
    int64_t D = c.dirs, GH = c.gates * dims[3], I = dims[2], H = dims[3];
    wpk = kcpu_perf_prepack(e, kcpu_i_in(in, 1), D, GH * I, GH, I, I, 1, kcpu_gemm_nr(lanes));
    rpk = kcpu_perf_prepack(e, kcpu_i_in(in, 2), D * c.gates, H * H, H, H, H, 1,
                            kcpu_rnn_unit(lanes));
  }
#define OPT_IN(i) (ni > (i) ? kcpu_e_ptr(e, kcpu_i_in(in, i)) : kcpu_e_null(e))
#define OPT_OUT(i) (nr > (i) ? kcpu_e_ptr(e, kcpu_i_out(in, i)) : kcpu_e_null(e))
  LLVMValueRef args[] = {kcpu_i64(e, x->elem),
                         kcpu_i64(e, c.gates),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         wpk ? kcpu_e_null(e) : kcpu_addr(e, kcpu_i_in(in, 1)),
                         rpk ? kcpu_e_null(e) : kcpu_addr(e, kcpu_i_in(in, 2)),
                         wpk ? wpk : kcpu_e_null(e),
                         rpk ? rpk : kcpu_e_null(e),
                         OPT_IN(3),
                         kcpu_i64(e, lt ? lt->elem : KILN_I32),
                         OPT_IN(4),
                         OPT_IN(5),
                         k == KILN_NODE_LSTM ? OPT_IN(6) : kcpu_e_null(e),
                         k == KILN_NODE_LSTM ? OPT_IN(7) : kcpu_e_null(e),
                         OPT_OUT(0),
                         OPT_OUT(1),
                         k == KILN_NODE_LSTM ? OPT_OUT(2) : kcpu_e_null(e),
                         kcpu_i64_array(e, dims, 5),
                         kcpu_i64(e, c.reverse),
                         kcpu_i64(e, layout1),
                         kcpu_i64(e, kiln_attrs_int_or(a, "linear_before_reset", 0) != 0),
                         kcpu_i64(e, kiln_attrs_int_or(a, "input_forget", 0) != 0),
                         kcpu_f64(e, kiln_attrs_float_or(a, "clip", 0.0)),
                         kcpu_i64_array(e, c.act, 6),
                         kcpu_i64_array(e, c.ab, 12),
                         kcpu_i64(e, lanes),
                         kcpu_pool(e)};
#undef OPT_IN
#undef OPT_OUT
  return kcpu_e_call(e, in, "kcpu_k_rnn", args, 26);
}

bool kcpu_supports_RNN(const kiln_node *n) {
  return kcpu_rnn_ok(n);
}
kiln_status kcpu_emit_RNN(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_rnn_emit(e, in, KILN_NODE_RNN);
}
bool kcpu_supports_GRU(const kiln_node *n) {
  return kcpu_rnn_ok(n);
}
kiln_status kcpu_emit_GRU(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_rnn_emit(e, in, KILN_NODE_GRU);
}
bool kcpu_supports_LSTM(const kiln_node *n) {
  return kcpu_rnn_ok(n);
}
kiln_status kcpu_emit_LSTM(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_rnn_emit(e, in, KILN_NODE_LSTM);
}
