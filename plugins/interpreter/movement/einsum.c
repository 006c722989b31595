/* plugins/interpreter/movement/einsum.c: Einsum by direct summation over
 * every label assignment. Handles explicit ("ij,jk->ik") and implicit
 * ("ij,jk") outputs, repeated labels (diagonals), and "..." with numpy
 * broadcasting of the ellipsis dimensions. */
#include "mv.h"

#include <ctype.h>
#include <string.h>

#define MV_LABELS (52 + KILN_MAX_RANK) /* letters, then ellipsis dims */

static int mv_label(char ch) {
  if (ch >= 'a' && ch <= 'z')
    return ch - 'a';
  if (ch >= 'A' && ch <= 'Z')
    return 26 + ch - 'A';
  return -1;
}

/* Parse one term into per-dimension labels, expanding "..." to the
 * `ell` ellipsis labels that end at label 52 + KILN_MAX_RANK. */
static kiln_status mv_term(const char *s, size_t len, uint32_t rank, int *labels, uint32_t *n,
                           bool *has_ell, uint32_t *ell_rank) {
  uint32_t letters = 0;
  bool ell = false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '.') {
      if (ell || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
        return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "malformed ellipsis");
      ell = true;
      i += 2;
    } else if (mv_label(s[i]) >= 0) {
      letters++;
    } else if (!isspace((unsigned char)s[i])) {
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "bad character '%c'", s[i]);
    }
  }
  uint32_t er = 0;
  if (rank != UINT32_MAX) {
    if (letters > rank || (!ell && letters != rank))
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "term '%.*s' has %u labels for rank %u",
                           (int)len, s, letters, rank);
    er = rank - letters;
  } else {
    er = *ell_rank;
  }
  uint32_t k = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '.') {
      for (uint32_t e = 0; e < er; e++)
        labels[k++] = MV_LABELS - er + (int)e;
      i += 2;
    } else if (mv_label(s[i]) >= 0) {
      labels[k++] = mv_label(s[i]);
    }
  }
  *n = k;
  *has_ell = ell;
  if (rank != UINT32_MAX)
    *ell_rank = er;
  return NULL;
}

kiln_status interp_Einsum(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,
                          const interp_tensor *ins, uint32_t n_ins) {
  (void)n_outs;
  const char *eq = kiln_attrs_string_or(attrs, "equation", "");
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  int lab[16][KILN_MAX_RANK];
  uint32_t nl[16];
  int64_t size[MV_LABELS];
  int count[MV_LABELS];
  for (int i = 0; i < MV_LABELS; i++)
    size[i] = -1, count[i] = 0;
  uint32_t ell_rank = 0, term = 0;
  size_t pos = 0;
  while (pos <= lhs_len) {
    size_t end = pos;
    while (end < lhs_len && eq[end] != ',')
      end++;
    if (term >= n_ins || term >= 16)
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "more terms than the %u inputs in '%s'",
                           n_ins, eq);
    bool he;
    uint32_t er;
    KILN_TRY(mv_term(eq + pos, end - pos, ins[term].type.rank, lab[term], &nl[term], &he, &er));
    if (er > ell_rank)
      ell_rank = er;
    for (uint32_t d = 0; d < nl[term]; d++) {
      int l = lab[term][d];
      int64_t dim = ins[term].type.dims[d];
      count[l]++;
      if (size[l] < 0 || size[l] == 1)
        size[l] = dim;
      else if (dim != size[l] && !(l >= 52 && dim == 1))
        return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "label '%c' has sizes %lld and %lld",
                             l < 26 ? 'a' + l : 'A' + l - 26, (long long)size[l], (long long)dim);
    }
    term++;
    pos = end + 1;
  }
  if (term != n_ins)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "%u terms for %u inputs", term, n_ins);
  int olab[KILN_MAX_RANK + 52];
  uint32_t on = 0;
  if (arrow) {
    bool he;
    KILN_TRY(mv_term(arrow + 2, strlen(arrow + 2), UINT32_MAX, olab, &on, &he, &ell_rank));
  } else {
    /* implicit output: ellipsis dims, then labels seen once, alphabetically */
    for (uint32_t e = 0; e < ell_rank; e++)
      olab[on++] = MV_LABELS - (int)ell_rank + (int)e;
    for (int l = 0; l < 52; l++)
      if (count[l] == 1)
        olab[on++] = l;
  }
  const kiln_type *ot = &outs[0].type;
  if (on != ot->rank)
    return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "output has %u labels, result rank %u",
                         on, ot->rank);
  bool in_out[MV_LABELS] = {false};
  for (uint32_t k = 0; k < on; k++) {
    if (size[olab[k]] < 0)
      return interp_mv_err(KILN_INVALID_ARGUMENT, "Einsum", "output label not in any input");
    in_out[olab[k]] = true;
  }
  int sum_lab[MV_LABELS];
  int64_t sum_dims[MV_LABELS];
  uint32_t ns = 0;
  for (int l = 0; l < MV_LABELS; l++)
    if (size[l] >= 0 && !in_out[l])
      sum_lab[ns] = l, sum_dims[ns++] = size[l];
  /* effective stride of each label in each input (0 where broadcast) */
  int64_t stride[16][MV_LABELS];
  for (uint32_t t = 0; t < n_ins; t++) {
    int64_t st[KILN_MAX_RANK];
    interp_mv_strides(ins[t].type.dims, ins[t].type.rank, st);
    for (int l = 0; l < MV_LABELS; l++)
      stride[t][l] = 0;
    for (uint32_t d = 0; d < nl[t]; d++)
      if (ins[t].type.dims[d] != 1 || size[lab[t][d]] == 1)
        stride[t][lab[t][d]] += st[d];
  }
  int64_t nsum = 1;
  for (uint32_t k = 0; k < ns; k++)
    nsum *= sum_dims[k];
  bool isf = interp_mv_class(ot->elem) == INTERP_MV_F;
  int64_t n = interp_mv_numel(&outs[0]), coord[MV_LABELS] = {0};
  int64_t oc[KILN_MAX_RANK + 52], sc[MV_LABELS];
  for (int64_t o = 0; o < n; o++) {
    interp_mv_unravel(ot->dims, ot->rank, o, oc);
    for (uint32_t k = 0; k < on; k++)
      coord[olab[k]] = oc[k];
    double facc = 0;
    uint64_t iacc = 0;
    for (int64_t s = 0; s < nsum; s++) {
      interp_mv_unravel(sum_dims, ns, s, sc);
      for (uint32_t k = 0; k < ns; k++)
        coord[sum_lab[k]] = sc[k];
      double fp = 1;
      uint64_t ip = 1;
      for (uint32_t t = 0; t < n_ins; t++) {
        int64_t off = 0;
        for (int l = 0; l < MV_LABELS; l++)
          off += coord[l] * stride[t][l];
        if (isf)
          fp *= interp_load_f(&ins[t], off);
        else
          ip *= interp_mv_load_bits(&ins[t], off);
      }
      facc += fp;
      iacc += ip;
    }
    if (isf)
      interp_store_f(&outs[0], o, facc);
    else
      interp_mv_store_bits(&outs[0], o, iacc);
  }
  return NULL;
}
