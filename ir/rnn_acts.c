/* ir/rnn_acts.c: the activation lists of RNN, GRU and LSTM nodes. One
 * parser shared by the interpreter and the code generators, so that every
 * backend reads the same names, defaults and alpha / beta order. Messages
 * are "<Kind>: <reason>"; the interpreter prefixes "interpreter ", which
 * gives back the texts it has always produced. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "kiln/ir.h"

/* The ONNX names and defaults, indexed by kiln_rnn_act_kind. */
static const struct {
  const char *name;
  bool has_alpha, has_beta;
  double alpha, beta;
} rnn_act_table[KILN_RNN_ACT_KIND_COUNT] = {
    [KILN_RNN_ACT_RELU] = {"Relu", false, false, 0, 0},
    [KILN_RNN_ACT_TANH] = {"Tanh", false, false, 0, 0},
    [KILN_RNN_ACT_SIGMOID] = {"Sigmoid", false, false, 0, 0},
    [KILN_RNN_ACT_AFFINE] = {"Affine", true, true, 1.0, 0.0},
    [KILN_RNN_ACT_LEAKY_RELU] = {"LeakyRelu", true, false, 0.01, 0},
    [KILN_RNN_ACT_THRESHOLDED_RELU] = {"ThresholdedRelu", true, false, 1.0, 0},
    [KILN_RNN_ACT_SCALED_TANH] = {"ScaledTanh", true, true, 1.0, 1.0},
    [KILN_RNN_ACT_HARD_SIGMOID] = {"HardSigmoid", true, true, 0.2, 0.5},
    [KILN_RNN_ACT_ELU] = {"Elu", true, false, 1.0, 0},
    [KILN_RNN_ACT_SOFTSIGN] = {"Softsign", false, false, 0, 0},
    [KILN_RNN_ACT_SOFTPLUS] = {"Softplus", false, false, 0, 0},
};

/* More names than this is an error even before the count check, as the
 * interpreter has always said "too many activations" for them. */
#define RNN_ACTS_MAX_NAMES 16

static bool rnn_acts_sep(char c) {
  return c == ',' || c == ';' || isspace((unsigned char)c);
}

/* Split s into at most RNN_ACTS_MAX_NAMES names; false when there are more. */
static bool rnn_acts_split(const char *s, const char **names, size_t *lens, uint32_t *n) {
  *n = 0;
  for (;;) {
    while (*s && rnn_acts_sep(*s))
      s++;
    if (!*s)
      return true;
    const char *b = s;
    while (*s && !rnn_acts_sep(*s))
      s++;
    if (*n == RNN_ACTS_MAX_NAMES)
      return false;
    names[*n] = b, lens[*n] = (size_t)(s - b), (*n)++;
  }
}

static bool rnn_acts_lookup(const char *name, size_t len, kiln_rnn_act_kind *out) {
  for (int t = 0; t < KILN_RNN_ACT_KIND_COUNT; t++)
    if (strlen(rnn_act_table[t].name) == len && !strncasecmp(rnn_act_table[t].name, name, len)) {
      *out = (kiln_rnn_act_kind)t;
      return true;
    }
  return false;
}

/* Both FLOATS and (empty) INTS read as a list; anything else as none. */
static uint32_t rnn_acts_floats(const kiln_attrs *a, const char *name, const double **out) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  *out = at ? kiln_attr_floats(at) : NULL;
  return *out ? kiln_attr_len(at) : 0;
}

kiln_status kiln_rnn_activations(kiln_node_kind kind, const kiln_attrs *attrs, uint32_t dirs,
                                 kiln_rnn_act *out, uint32_t cap, uint32_t *n_out) {
  static const char *const d_rnn[] = {"Tanh"};
  static const char *const d_gru[] = {"Sigmoid", "Tanh"};
  static const char *const d_lstm[] = {"Sigmoid", "Tanh", "Tanh"};
  const char *const *dflt;
  uint32_t per;
  if (kind == KILN_NODE_RNN)
    per = 1, dflt = d_rnn;
  else if (kind == KILN_NODE_GRU)
    per = 2, dflt = d_gru;
  else if (kind == KILN_NODE_LSTM)
    per = 3, dflt = d_lstm;
  else {
    const kiln_node_kind_info *info = kiln_node_kind_get_info(kind);
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s: activation lists belong to RNN, GRU and LSTM only",
                            info ? info->name : "unknown node kind");
  }
  const char *kn = kiln_node_kind_get_info(kind)->name;
  if (dirs != 1 && dirs != 2)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: %u directions, expected 1 or 2", kn, dirs);
  if (cap < per * dirs || !out)
    return kiln_status_make(KILN_OUT_OF_RANGE, "%s: room for %u activations, %u needed", kn,
                            out ? cap : 0, per * dirs);

  const char *names[RNN_ACTS_MAX_NAMES];
  size_t lens[RNN_ACTS_MAX_NAMES];
  uint32_t n;
  if (!rnn_acts_split(kiln_attrs_string_or(attrs, "activations", ""), names, lens, &n))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: too many activations", kn);
  if (n == 0) {
    for (uint32_t i = 0; i < per * dirs; i++)
      names[i] = dflt[i % per], lens[i] = strlen(names[i]);
    n = per * dirs;
  } else if (n == per && dirs == 2) {
    for (uint32_t i = 0; i < per; i++)
      names[per + i] = names[i], lens[per + i] = lens[i];
    n = 2 * per;
  } else if (n != per * dirs) {
    return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: %u activations given, expected %u", kn, n,
                            per * dirs);
  }

  const double *al, *be;
  uint32_t nal = rnn_acts_floats(attrs, "activation_alpha", &al);
  uint32_t nbe = rnn_acts_floats(attrs, "activation_beta", &be);
  uint32_t ia = 0, ib = 0;
  for (uint32_t i = 0; i < n; i++) {
    kiln_rnn_act_kind k;
    if (!rnn_acts_lookup(names[i], lens[i], &k))
      return kiln_status_make(KILN_INVALID_ARGUMENT, "%s: unknown activation '%.*s'", kn,
                              (int)lens[i], names[i]);
    out[i].kind = k;
    out[i].alpha = rnn_act_table[k].alpha;
    out[i].beta = rnn_act_table[k].beta;
    /* a duplicated one-direction list takes the next values for direction 1 */
    if (rnn_act_table[k].has_alpha && ia < nal)
      out[i].alpha = al[ia++];
    if (rnn_act_table[k].has_beta && ib < nbe)
      out[i].beta = be[ib++];
  }
  if (n_out)
    *n_out = n;
  return NULL;
}
