/* plugins/cpu/emit_misc.c: kinds served by the generic kernels of
 * kernels/select.c, mathx.c and convnd.c: Det, TopK, ScatterElements,
 * ScatterND, Pow with mixed types, QuantizeLinear / DequantizeLinear (per
 * tensor, axis or block), DynamicQuantizeLinear and Einsum (the equation
 * is parsed here into per-label strides). */
#include "emit_misc.h"

#include <string.h>

static bool kcpu_m_numeric(kiln_elem e) {
  return e != KILN_BOOL && e < KILN_ELEM_COUNT;
}

static bool kcpu_m_index(kiln_elem e) {
  return e == KILN_I32 || e == KILN_I64;
}

static bool kcpu_m_plain(const kiln_type *t) {
  return t && !t->quantized;
}

/* ---- Det ---- */
bool kcpu_supports_Det(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  return x && x->rank >= 2 && x->dims[x->rank - 1] == x->dims[x->rank - 2] &&
         (x->elem == KILN_F32 || x->elem == KILN_F64 || x->elem == KILN_F16 ||
          x->elem == KILN_BF16) &&
         kcpu_n_all_elem(n, x->elem);
}

kiln_status kcpu_emit_Det(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  int64_t n = x->dims[x->rank - 1];
  LLVMValueRef args[] = {kcpu_i64(e, x->elem), kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, kcpu_e_prod(x->dims, 0, x->rank - 2)), kcpu_i64(e, n)};
  return kcpu_e_call(e, in, "kcpu_k_det", args, 5);
}

/* ---- TopK ---- */
bool kcpu_supports_TopK(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *v = kcpu_n_out(n, 0), *i = kcpu_n_out(n, 1);
  int64_t axis;
  return kcpu_m_plain(x) && kcpu_m_plain(v) && kcpu_m_numeric(x->elem) && v->elem == x->elem &&
         (!i || i->elem == KILN_I64) && x->rank >= 1 &&
         kcpu_e_axis(kiln_attrs_int_or(kiln_node_attrs(n), "axis", -1), x->rank, &axis);
}

kiln_status kcpu_emit_TopK(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *v = kcpu_i_out_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  int64_t axis;
  if (!kcpu_e_axis(kiln_attrs_int_or(a, "axis", -1), x->rank, &axis))
    return kcpu_e_fail(in, "axis out of range");
  const kiln_buffer *ib = kiln_instr_result_count(in) > 1 ? kcpu_i_out(in, 1) : NULL;
  if (!ib)
    return kcpu_e_fail(in, "needs the Indices result");
  LLVMValueRef args[] = {kcpu_i64(e, x->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_addr(e, ib),
                         kcpu_i64(e, kcpu_e_prod(x->dims, 0, (uint32_t)axis)),
                         kcpu_i64(e, x->dims[axis]),
                         kcpu_i64(e, kcpu_e_prod(x->dims, (uint32_t)axis + 1, x->rank)),
                         kcpu_i64(e, v->dims[axis]),
                         kcpu_i64(e, kiln_attrs_int_or(a, "largest", 1) != 0)};
  return kcpu_e_call(e, in, "kcpu_k_topk", args, 9);
}

/* ---- ScatterElements, ScatterND ---- */
static int kcpu_m_red(const kiln_attrs *a) {
  const char *r = kiln_attrs_string_or(a, "reduction", "none");
  return !strcmp(r, "none")  ? 0
         : !strcmp(r, "add") ? 1
         : !strcmp(r, "mul") ? 2
         : !strcmp(r, "max") ? 3
         : !strcmp(r, "min") ? 4
                             : -1;
}

static bool kcpu_scatter_ok(const kiln_node *n) {
  const kiln_type *d = kcpu_n_in(n, 0), *i = kcpu_n_in(n, 1), *u = kcpu_n_in(n, 2),
                  *y = kcpu_n_out(n, 0);
  int red = kcpu_m_red(kiln_node_attrs(n));
  return kcpu_m_plain(d) && kcpu_m_plain(i) && kcpu_m_plain(u) && kcpu_m_plain(y) &&
         kcpu_m_index(i->elem) && u->elem == d->elem && y->elem == d->elem && red >= 0 &&
         (red == 0 || kcpu_m_numeric(d->elem)) && d->rank <= 16;
}

bool kcpu_supports_ScatterElements(const kiln_node *n) {
  const kiln_type *d = kcpu_n_in(n, 0), *i = kcpu_n_in(n, 1);
  int64_t axis;
  return kcpu_scatter_ok(n) && i->rank == d->rank && d->rank >= 1 &&
         kcpu_e_axis(kiln_attrs_int_or(kiln_node_attrs(n), "axis", 0), d->rank, &axis);
}

kiln_status kcpu_emit_ScatterElements(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *d = kcpu_i_in_type(in, 0), *i = kcpu_i_in_type(in, 1);
  const kiln_attrs *a = kiln_instr_attrs(in);
  int64_t axis;
  if (!kcpu_e_axis(kiln_attrs_int_or(a, "axis", 0), d->rank, &axis))
    return kcpu_e_fail(in, "axis out of range");
  LLVMValueRef args[] = {kcpu_i64(e, d->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_i64(e, i->elem),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_addr(e, kcpu_i_in(in, 2)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, d->rank),
                         kcpu_i64_array(e, d->dims, d->rank),
                         kcpu_i64_array(e, i->dims, i->rank),
                         kcpu_i64(e, axis),
                         kcpu_i64(e, kcpu_m_red(a))};
  return kcpu_e_call(e, in, "kcpu_k_scatter_elements", args, 11);
}

bool kcpu_supports_ScatterND(const kiln_node *n) {
  const kiln_type *d = kcpu_n_in(n, 0), *i = kcpu_n_in(n, 1);
  return kcpu_scatter_ok(n) && i->rank >= 1 && d->rank >= 1 &&
         i->dims[i->rank - 1] <= (int64_t)d->rank;
}

kiln_status kcpu_emit_ScatterND(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *d = kcpu_i_in_type(in, 0), *i = kcpu_i_in_type(in, 1);
  int64_t k = i->dims[i->rank - 1];
  LLVMValueRef args[] = {kcpu_i64(e, d->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_i64(e, i->elem),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_addr(e, kcpu_i_in(in, 2)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, d->rank),
                         kcpu_i64_array(e, d->dims, d->rank),
                         kcpu_i64(e, kcpu_e_prod(i->dims, 0, i->rank - 1)),
                         kcpu_i64(e, k),
                         kcpu_i64(e, kcpu_m_red(kiln_instr_attrs(in)))};
  return kcpu_e_call(e, in, "kcpu_k_scatter_nd", args, 11);
}

/* ---- Pow with mixed types ---- */
bool kcpu_pow_mixed_ok(const kiln_node *n) {
  const kiln_type *a = kcpu_n_in(n, 0), *b = kcpu_n_in(n, 1), *y = kcpu_n_out(n, 0);
  return kcpu_m_plain(a) && kcpu_m_plain(b) && kcpu_m_plain(y) && kcpu_m_numeric(a->elem) &&
         kcpu_m_numeric(b->elem) && y->elem == a->elem && y->rank <= 16;
}

/* Strides of t broadcast to the output's rank (0 on size-1 dims). */
static void kcpu_m_bstrides(const kiln_type *t, const kiln_type *y, int64_t *st) {
  int64_t acc = 1;
  for (int k = (int)y->rank - 1; k >= 0; k--) {
    int ik = k - (int)(y->rank - t->rank);
    int64_t d = ik >= 0 ? t->dims[ik] : 1;
    st[k] = d == 1 ? 0 : acc;
    acc *= d;
  }
}

kiln_status kcpu_pow_mixed_emit(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *a = kcpu_i_in_type(in, 0), *b = kcpu_i_in_type(in, 1),
                  *y = kcpu_i_out_type(in, 0);
  int64_t as[KILN_MAX_RANK], bs[KILN_MAX_RANK];
  kcpu_m_bstrides(a, y, as);
  kcpu_m_bstrides(b, y, bs);
  uint32_t r = y->rank ? y->rank : 1;
  int64_t one = 1, zero = 0;
  LLVMValueRef args[] = {kcpu_i64(e, a->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         y->rank ? kcpu_i64_array(e, as, r) : kcpu_i64_array(e, &zero, 1),
                         kcpu_i64(e, b->elem),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         y->rank ? kcpu_i64_array(e, bs, r) : kcpu_i64_array(e, &zero, 1),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, y->rank ? y->rank : 1),
                         y->rank ? kcpu_i64_array(e, y->dims, r) : kcpu_i64_array(e, &one, 1)};
  return kcpu_e_call(e, in, "kcpu_k_pow_mixed", args, 9);
}

/* ---- DynamicQuantizeLinear ---- */
bool kcpu_supports_DynamicQuantizeLinear(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *y = kcpu_n_out(n, 0), *s = kcpu_n_out(n, 1),
                  *z = kcpu_n_out(n, 2);
  return kcpu_m_plain(x) && x->elem == KILN_F32 && kcpu_m_plain(y) && y->elem == KILN_U8 && s &&
         s->elem == KILN_F32 && z && z->elem == KILN_U8 && !z->quantized;
}

kiln_status kcpu_emit_DynamicQuantizeLinear(kcpu_emit *e, const kiln_instr *in) {
  if (kiln_instr_result_count(in) != 3)
    return kcpu_e_fail(in, "needs y, y_scale and y_zero_point");
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)), kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 1)), kcpu_addr(e, kcpu_i_out(in, 2)),
                         kcpu_i64(e, kiln_type_numel(kcpu_i_in_type(in, 0)))};
  return kcpu_e_call(e, in, "kcpu_k_dynquant", args, 5);
}

/* ---- Einsum ---- */
#define KCPU_EIN_LABELS (52 + KILN_MAX_RANK) /* letters, then ellipsis dims */
#define KCPU_EIN_MAXIN 3

typedef struct kcpu_ein {
  uint32_t n_in, rank[KCPU_EIN_MAXIN + 1];
  int lab[KCPU_EIN_MAXIN + 1][KILN_MAX_RANK]; /* per dim; [n_in] is the output */
} kcpu_ein;

/* One term ("ij", "...ii") into labels; ell = ellipsis dims it stands for. */
static bool kcpu_ein_term(const char *s, size_t len, uint32_t rank, int *lab, uint32_t *n) {
  uint32_t letters = 0;
  bool ell = false;
  for (size_t i = 0; i < len; i++)
    if (s[i] == '.')
      ell = true;
    else if (s[i] != ' ')
      letters++;
  uint32_t ne = ell ? rank - letters : 0;
  if (ell && letters > rank)
    return false;
  *n = 0;
  for (size_t i = 0; i < len; i++) {
    char ch = s[i];
    if (ch == ' ')
      continue;
    if (ch == '.') {
      if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
        return false;
      for (uint32_t k = 0; k < ne; k++)
        lab[(*n)++] = 52 + (int)(KILN_MAX_RANK - ne + k);
      i += 2;
      continue;
    }
    int l = ch >= 'a' && ch <= 'z' ? ch - 'a' : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A' : -1;
    if (l < 0 || *n >= KILN_MAX_RANK)
      return false;
    lab[(*n)++] = l;
  }
  return true;
}

static bool kcpu_ein_parse(const char *eq, const kiln_type *const *ins, uint32_t n_in,
                           uint32_t out_rank, kcpu_ein *p) {
  if (n_in == 0 || n_in > KCPU_EIN_MAXIN)
    return false;
  p->n_in = n_in;
  const char *arrow = strstr(eq, "->"), *lhs_end = arrow ? arrow : eq + strlen(eq);
  const char *s = eq;
  int count[KCPU_EIN_LABELS] = {0};
  uint32_t max_ell = 0;
  for (uint32_t j = 0; j < n_in; j++) {
    const char *c = memchr(s, ',', (size_t)(lhs_end - s));
    const char *end = c ? c : lhs_end;
    if ((j + 1 < n_in) != (c != NULL))
      return false;
    if (!kcpu_ein_term(s, (size_t)(end - s), ins[j]->rank, p->lab[j], &p->rank[j]) ||
        p->rank[j] != ins[j]->rank)
      return false;
    for (uint32_t d = 0; d < p->rank[j]; d++) {
      count[p->lab[j][d]]++;
      if (p->lab[j][d] >= 52 && (uint32_t)(52 + KILN_MAX_RANK - p->lab[j][d]) > max_ell)
        max_ell = (uint32_t)(52 + KILN_MAX_RANK - p->lab[j][d]);
    }
    s = end + 1;
  }
  uint32_t *n = &p->rank[n_in];
  if (arrow) {
    if (!kcpu_ein_term(arrow + 2, strlen(arrow + 2), out_rank, p->lab[n_in], n))
      return false;
  } else { /* implicit: ellipsis dims, then labels seen once, alphabetically */
    *n = 0;
    for (uint32_t k = 0; k < max_ell; k++)
      p->lab[n_in][(*n)++] = 52 + (int)(KILN_MAX_RANK - max_ell + k);
    for (int l = 0; l < 52; l++)
      if (count[l] == 1 && *n < KILN_MAX_RANK)
        p->lab[n_in][(*n)++] = l;
  }
  return *n == out_rank;
}

static bool kcpu_ein_types(const kiln_node *n, const kiln_type **ins, uint32_t *n_in) {
  *n_in = kcpu_n_inputs(n);
  if (*n_in == 0 || *n_in > KCPU_EIN_MAXIN)
    return false;
  for (uint32_t j = 0; j < *n_in; j++) {
    ins[j] = kcpu_n_in(n, j);
    if (!kcpu_m_plain(ins[j]))
      return false;
  }
  return true;
}

bool kcpu_supports_Einsum(const kiln_node *n) {
  const kiln_type *ins[KCPU_EIN_MAXIN], *y = kcpu_n_out(n, 0);
  uint32_t n_in;
  kcpu_ein p;
  return kcpu_ein_types(n, ins, &n_in) && kcpu_m_plain(y) && kcpu_m_numeric(y->elem) &&
         kcpu_n_all_elem(n, y->elem) &&
         kcpu_ein_parse(kiln_attrs_string_or(kiln_node_attrs(n), "equation", ""), ins, n_in,
                        y->rank, &p);
}

kiln_status kcpu_emit_Einsum(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *ins[KCPU_EIN_MAXIN], *y = kcpu_i_out_type(in, 0);
  uint32_t n_in = kcpu_i_inputs(in);
  if (n_in == 0 || n_in > KCPU_EIN_MAXIN)
    return kcpu_e_fail(in, "%u inputs (at most %d)", n_in, KCPU_EIN_MAXIN);
  for (uint32_t j = 0; j < n_in; j++)
    ins[j] = kcpu_i_in_type(in, j);
  kcpu_ein p;
  if (!kcpu_ein_parse(kiln_attrs_string_or(kiln_instr_attrs(in), "equation", ""), ins, n_in,
                      y->rank, &p))
    return kcpu_e_fail(in, "cannot parse the equation");
  /* labels: output ones in output order, then the summed ones */
  int order[KCPU_EIN_LABELS], pos[KCPU_EIN_LABELS];
  int64_t ldims[KCPU_EIN_LABELS];
  uint32_t nl = 0;
  for (int l = 0; l < KCPU_EIN_LABELS; l++) {
    pos[l] = -1;
    ldims[l] = 1;
  }
  for (uint32_t d = 0; d < p.rank[n_in]; d++) {
    int l = p.lab[n_in][d];
    if (pos[l] >= 0)
      return kcpu_e_fail(in, "output label repeated");
    pos[l] = (int)nl;
    order[nl++] = l;
    ldims[pos[l]] = y->dims[d];
  }
  uint32_t n_out = nl;
  for (uint32_t j = 0; j < n_in; j++)
    for (uint32_t d = 0; d < p.rank[j]; d++) {
      int l = p.lab[j][d];
      if (pos[l] < 0) {
        pos[l] = (int)nl;
        order[nl++] = l;
        ldims[pos[l]] = 1;
      }
      if (ins[j]->dims[d] != 1)
        ldims[pos[l]] = ins[j]->dims[d];
    }
  (void)order;
  int64_t st[KCPU_EIN_MAXIN * KCPU_EIN_LABELS] = {0};
  for (uint32_t j = 0; j < n_in; j++) {
    int64_t acc = 1;
    for (int d = (int)p.rank[j] - 1; d >= 0; d--) {
      if (ins[j]->dims[d] != 1)
        st[j * nl + (uint32_t)pos[p.lab[j][d]]] += acc;
      acc *= ins[j]->dims[d];
    }
  }
  if (nl > 32)
    return kcpu_e_fail(in, "%u labels (at most 32)", nl);
  LLVMValueRef args[] = {kcpu_i64(e, y->elem),
                         kcpu_i64(e, n_in),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         n_in > 1 ? kcpu_addr(e, kcpu_i_in(in, 1)) : kcpu_e_null(e),
                         n_in > 2 ? kcpu_addr(e, kcpu_i_in(in, 2)) : kcpu_e_null(e),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, nl),
                         kcpu_i64(e, n_out),
                         kcpu_i64_array(e, ldims, nl ? nl : 1),
                         kcpu_i64_array(e, st, nl ? n_in * nl : 1)};
  return kcpu_e_call(e, in, "kcpu_k_einsum", args, 10);
}

/* ---- QuantizeLinear, DequantizeLinear (any granularity, blocked too) ---- */
static bool kcpu_q_int(kiln_elem e) {
  return e == KILN_I8 || e == KILN_U8 || e == KILN_I16 || e == KILN_U16 || e == KILN_I32;
}

static bool kcpu_q_float(kiln_elem e) {
  return e == KILN_F32 || e == KILN_F64 || e == KILN_F16 || e == KILN_BF16;
}

/* mode 0 tensor, 1 axis, 2 blocked; false when the shapes do not fit. */
static bool kcpu_q_mode(const kiln_attrs *a, const kiln_type *x, const kiln_type *s, int64_t *mode,
                        int64_t *axis, int64_t *block) {
  *block = kiln_attrs_int_or(a, "block_size", 0);
  *axis = 0;
  if (s->rank == 0 || (kiln_type_numel(s) == 1 && *block == 0)) {
    *mode = 0;
    return true;
  }
  if (!kcpu_e_axis(kiln_attrs_int_or(a, "axis", 1), x->rank, axis))
    return false;
  if (*block > 0) {
    *mode = 2;
    if (s->rank != x->rank)
      return false;
    for (uint32_t d = 0; d < x->rank; d++)
      if ((int64_t)d == *axis ? (x->dims[d] + *block - 1) / *block > s->dims[d]
                              : s->dims[d] != x->dims[d])
        return false;
    return true;
  }
  *mode = 1;
  return s->rank == 1 && s->dims[0] == x->dims[*axis];
}

static bool kcpu_q_ok(const kiln_node *n, bool dequant) {
  const kiln_type *x = kcpu_n_in(n, 0), *s = kcpu_n_in(n, 1), *z = kcpu_n_in(n, 2),
                  *y = kcpu_n_out(n, 0);
  int64_t mode, axis, block;
  if (!x || !s || !y || x->quantized || s->quantized || y->quantized || (z && z->quantized) ||
      x->rank > 16 || !kcpu_q_float(s->elem) ||
      !kcpu_q_mode(kiln_node_attrs(n), x, s, &mode, &axis, &block))
    return false;
  if (z && (!kcpu_q_int(z->elem) || kiln_type_numel(z) != kiln_type_numel(s)))
    return false;
  return dequant ? kcpu_q_int(x->elem) && kcpu_q_float(y->elem)
                 : kcpu_q_float(x->elem) && kcpu_q_int(y->elem);
}

static kiln_status kcpu_q_emit(kcpu_emit *e, const kiln_instr *in, bool dequant) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *s = kcpu_i_in_type(in, 1),
                  *z = kcpu_i_in_type(in, 2), *y = kcpu_i_out_type(in, 0);
  int64_t mode, axis, block, one = 1;
  if (!kcpu_q_mode(kiln_instr_attrs(in), x, s, &mode, &axis, &block))
    return kcpu_e_fail(in, "scale shape does not fit the input");
  uint32_t r = x->rank;
  LLVMValueRef xd = r ? kcpu_i64_array(e, x->dims, r) : kcpu_i64_array(e, &one, 1);
  LLVMValueRef sd = mode == 2 ? kcpu_i64_array(e, s->dims, r) : xd;
  LLVMValueRef args[] = {kcpu_i64(e, dequant),
                         kcpu_i64(e, x->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_i64(e, s->elem),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_i64(e, z ? z->elem : KILN_U8),
                         kcpu_e_ptr(e, kcpu_i_in(in, 2)),
                         kcpu_i64(e, y->elem),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, kiln_type_numel(x)),
                         kcpu_i64(e, r ? r : 1),
                         xd,
                         sd,
                         kcpu_i64(e, mode),
                         kcpu_i64(e, axis),
                         kcpu_i64(e, block > 0 ? block : 1)};
  return kcpu_e_call(e, in, "kcpu_k_quant", args, 16);
}

bool kcpu_supports_QuantizeLinear(const kiln_node *n) {
  return kcpu_q_ok(n, false);
}
kiln_status kcpu_emit_QuantizeLinear(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_q_emit(e, in, false);
}
bool kcpu_supports_DequantizeLinear(const kiln_node *n) {
  return kcpu_q_ok(n, true);
}
kiln_status kcpu_emit_DequantizeLinear(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_q_emit(e, in, true);
}
