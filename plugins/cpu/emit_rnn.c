/* plugins/cpu/emit_rnn.c: RNN, GRU and LSTM as calls to kernels/rnn.c.
 * The `activations` attribute (one string of names separated by commas or
 * spaces: kiln attributes have no string-list kind) and activation_alpha /
 * _beta are resolved here into codes and constants per direction. */
#include "emit_util.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const struct {
  const char *name;
  bool has_alpha, has_beta;
  double alpha, beta;
} kcpu_acts[] = {
    /* in the kernel's code order (kernels/rnn.c) */
    {"Relu", false, false, 0, 0},         {"Tanh", false, false, 0, 0},
    {"Sigmoid", false, false, 0, 0},      {"Affine", true, true, 1.0, 0.0},
    {"LeakyRelu", true, false, 0.01, 0},  {"ThresholdedRelu", true, false, 1.0, 0},
    {"ScaledTanh", true, true, 1.0, 1.0}, {"HardSigmoid", true, true, 0.2, 0.5},
    {"Elu", true, false, 1.0, 0},         {"Softsign", false, false, 0, 0},
    {"Softplus", false, false, 0, 0},
};

typedef struct kcpu_rnn_cfg {
  int64_t gates, per_dir, dirs, reverse;
  int64_t act[6], ab[12];
} kcpu_rnn_cfg;

static bool kcpu_rnn_acts(const kiln_attrs *a, const char *const *dflt, kcpu_rnn_cfg *c) {
  const char *names[16];
  size_t lens[16];
  uint32_t n = 0, pd = (uint32_t)c->per_dir, D = (uint32_t)c->dirs;
  const char *s = kiln_attrs_string_or(a, "activations", "");
  while (*s) {
    while (*s && (*s == ',' || *s == ';' || isspace((unsigned char)*s)))
      s++;
    if (!*s)
      break;
    const char *b = s;
    while (*s && *s != ',' && *s != ';' && !isspace((unsigned char)*s))
      s++;
    if (n == 16)
      return false;
    names[n] = b, lens[n] = (size_t)(s - b), n++;
  }
  if (n == 0) {
    for (uint32_t i = 0; i < pd * D; i++)
      names[i] = dflt[i % pd], lens[i] = strlen(names[i]);
    n = pd * D;
  } else if (n == pd && D == 2) {
    for (uint32_t i = 0; i < pd; i++)
      names[pd + i] = names[i], lens[pd + i] = lens[i];
    n = 2 * pd;
  } else if (n != pd * D) {
    return false;
  }
  const kiln_attr *al = kiln_attrs_find(a, "activation_alpha");
  const kiln_attr *be = kiln_attrs_find(a, "activation_beta");
  const double *alv = al ? kiln_attr_floats(al) : NULL, *bev = be ? kiln_attr_floats(be) : NULL;
  uint32_t nal = alv ? kiln_attr_len(al) : 0, nbe = bev ? kiln_attr_len(be) : 0, ia = 0, ib = 0;
  for (uint32_t i = 0; i < 6; i++)
    c->act[i] = 0, c->ab[i] = c->ab[6 + i] = 0;
  for (uint32_t i = 0; i < n; i++) {
    size_t t = 0, nt = sizeof kcpu_acts / sizeof kcpu_acts[0];
    while (t < nt && !(strlen(kcpu_acts[t].name) == lens[i] &&
                       !strncasecmp(kcpu_acts[t].name, names[i], lens[i])))
      t++;
    if (t == nt)
      return false;
    double alpha = kcpu_acts[t].alpha, beta = kcpu_acts[t].beta;
    if (kcpu_acts[t].has_alpha && ia < nal)
      alpha = alv[ia++];
    if (kcpu_acts[t].has_beta && ib < nbe)
      beta = bev[ib++];
    c->act[i] = (int64_t)t;
    memcpy(&c->ab[i], &alpha, sizeof alpha);
    memcpy(&c->ab[6 + i], &beta, sizeof beta);
  }
  return true;
}

static bool kcpu_rnn_cfg_make(const kiln_attrs *a, kiln_node_kind k, kcpu_rnn_cfg *c) {
  static const char *const d_rnn[] = {"Tanh"}, *const d_gru[] = {"Sigmoid", "Tanh"},
                           *const d_lstm[] = {"Sigmoid", "Tanh", "Tanh"};
  c->gates = k == KILN_NODE_RNN ? 1 : k == KILN_NODE_GRU ? 3 : 4;
  c->per_dir = k == KILN_NODE_RNN ? 1 : k == KILN_NODE_GRU ? 2 : 3;
  const char *dir = kiln_attrs_string_or(a, "direction", "forward");
  bool fwd = !strcmp(dir, "forward"), rev = !strcmp(dir, "reverse");
  if (!fwd && !rev && strcmp(dir, "bidirectional"))
    return false;
  c->dirs = fwd || rev ? 1 : 2;
  c->reverse = rev;
  return kcpu_rnn_acts(a, k == KILN_NODE_RNN ? d_rnn : k == KILN_NODE_GRU ? d_gru : d_lstm, c);
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
  return kcpu_rnn_cfg_make(kiln_node_attrs(n), kiln_node_get_kind(n), &c) && w->dims[0] == c.dirs;
}

static kiln_status kcpu_rnn_emit(kcpu_emit *e, const kiln_instr *in, kiln_node_kind k) {
  const kiln_attrs *a = kiln_instr_attrs(in);
  kcpu_rnn_cfg c;
  if (!kcpu_rnn_cfg_make(a, k, &c))
    return kcpu_e_fail(in, "unsupported direction or activations");
  const kiln_type *x = kcpu_i_in_type(in, 0), *r = kcpu_i_in_type(in, 2);
  const kiln_type *lt = kcpu_i_inputs(in) > 4 ? kcpu_i_in_type(in, 4) : NULL;
  int64_t layout1 = kiln_attrs_int_or(a, "layout", 0) != 0;
  int64_t dims[5] = {x->dims[layout1 ? 1 : 0], x->dims[layout1 ? 0 : 1], x->dims[2], r->dims[2],
                     c.dirs};
  uint32_t ni = kcpu_i_inputs(in), nr = kiln_instr_result_count(in);
#define OPT_IN(i) (ni > (i) ? kcpu_e_ptr(e, kcpu_i_in(in, i)) : kcpu_e_null(e))
#define OPT_OUT(i) (nr > (i) ? kcpu_e_ptr(e, kcpu_i_out(in, i)) : kcpu_e_null(e))
  LLVMValueRef args[] = {kcpu_i64(e, x->elem),
                         kcpu_i64(e, c.gates),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_addr(e, kcpu_i_in(in, 2)),
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
                         kcpu_i64_array(e, c.ab, 12)};
#undef OPT_IN
#undef OPT_OUT
  return kcpu_e_call(e, in, "kcpu_k_rnn", args, 22);
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
