/* plugins/cpu/emit_attention.c: ScaledDotProductAttention in f32 as one
 * call to kcpu_k_attention (kernels/attention.c). The node's perms become
 * element strides here, at compile time, so the kernel reads Q, K, V and
 * writes the result in whatever layout the head split and merge left. */
#include "emit_util.h"

#include <math.h>

/* The perm attribute `name` (identity when absent). */
static void kcpu_att_perm(const kiln_attrs *attrs, const char *name, int64_t *perm) {
  const int64_t *p;
  uint32_t n = kcpu_e_ints(attrs, name, &p);
  for (int j = 0; j < 4; j++)
    perm[j] = n == 4 ? p[j] : j;
}

/* Strides and sizes of Transpose(t, perm) in t's row-major storage. */
static void kcpu_att_view(const kiln_type *t, const int64_t *perm, int64_t *st, int64_t *dims) {
  int64_t rs[KILN_MAX_RANK];
  kcpu_e_strides(t, rs);
  for (int j = 0; j < 4; j++) {
    st[j] = rs[perm[j]];
    dims[j] = t->dims[perm[j]];
  }
}

bool kcpu_supports_ScaledDotProductAttention(const kiln_node *n) {
  const kiln_type *q = kcpu_n_in(n, 0), *k = kcpu_n_in(n, 1), *v = kcpu_n_in(n, 2),
                  *m = kcpu_n_in(n, 3), *y = kcpu_n_out(n, 0);
  if (!q || !k || !v || !y || q->elem != KILN_F32 || k->elem != KILN_F32 ||
      v->elem != KILN_F32 || y->elem != KILN_F32 || q->quantized || k->quantized ||
      v->quantized || y->quantized || q->rank != 4 || k->rank != 4 || v->rank != 4)
    return false;
  if (m && (m->quantized || (m->elem != KILN_F32 && m->elem != KILN_BOOL)))
    return false;
  /* an empty key or head dimension: left to the lowering's exact semantics */
  for (uint32_t i = 0; i < 4; i++)
    if (k->dims[i] == 0 || q->dims[i] == 0)
      return false;
  return true;
}

kiln_status kcpu_emit_ScaledDotProductAttention(kcpu_emit *e, const kiln_instr *in) {
  const kiln_attrs *attrs = kiln_instr_attrs(in);
  const kiln_type *qt = kcpu_i_in_type(in, 0), *kt = kcpu_i_in_type(in, 1),
                  *vt = kcpu_i_in_type(in, 2), *yt = kcpu_i_out_type(in, 0);
  const kiln_buffer *mb = kcpu_i_inputs(in) > 3 ? kcpu_i_in(in, 3) : NULL;
  int64_t perm[4], st[20] = {0}, qd[4], kd[4], vd[4], od[4];
  kcpu_att_perm(attrs, "q_perm", perm);
  kcpu_att_view(qt, perm, st, qd);
  kcpu_att_perm(attrs, "k_perm", perm);
  kcpu_att_view(kt, perm, st + 4, kd);
  kcpu_att_perm(attrs, "v_perm", perm);
  kcpu_att_view(vt, perm, st + 8, vd);
  /* the result is Transpose(O, out_perm): O's axis out_perm[j] is result axis j */
  int64_t ys[KILN_MAX_RANK];
  kcpu_e_strides(yt, ys);
  kcpu_att_perm(attrs, "out_perm", perm);
  for (int j = 0; j < 4; j++)
    st[12 + perm[j]] = ys[j], od[perm[j]] = yt->dims[j];
  int64_t mask_kind = 0;
  if (mb) {
    const kiln_type *mt = kcpu_i_in_type(in, 3);
    int64_t mst[KILN_MAX_RANK], off = 4 - (int64_t)mt->rank;
    kcpu_e_strides(mt, mst);
    for (int64_t a = off; a < 4; a++)
      st[16 + a] = mt->dims[a - off] == 1 ? 0 : mst[a - off];
    mask_kind = mt->elem == KILN_BOOL ? 2 : 1;
  }
  if (od[2] != qd[2] || od[3] != vd[3] || kd[3] != qd[3] || vd[2] != kd[2])
    return kcpu_e_fail(in, "Q, K, V and the result do not agree in shape");
  int64_t sizes[6] = {qd[0], qd[1], qd[2], kd[2], qd[3], vd[3]};
  double scale = kiln_attrs_float_or(attrs, "scale", 1.0 / sqrt((double)qd[3]));
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_addr(e, kcpu_i_in(in, 2)),
                         mb ? kcpu_addr(e, mb) : kcpu_e_null(e),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64_array(e, sizes, 6),
                         kcpu_i64_array(e, st, 20),
                         kcpu_f32(e, (float)scale),
                         kcpu_i64(e, mask_kind),
                         kcpu_f32(e, (float)kiln_attrs_float_or(attrs, "mask_fill", -INFINITY)),
                         kcpu_pool(e)};
  return kcpu_e_call(e, in, "kcpu_k_attention", args, 11);
}
