/* plugins/cpu/emit_attention.c: ScaledDotProductAttention in f32 as one
 * call to kcpu_k_attention (kernels/attention.c). The node's perms and
 * gathers become element strides and start offsets here, at compile time,
 * so the kernel reads Q, K, V (slices of one QKV projection, maybe) and
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

/* The gather attribute `name` ([axis, index]): the axis, or -1 when
 * absent. */
static int64_t kcpu_att_gather(const kiln_attrs *attrs, const char *name, int64_t *index) {
  const int64_t *g;
  *index = 0;
  if (kcpu_e_ints(attrs, name, &g) != 2)
    return -1;
  *index = g[1];
  return g[0];
}

/* Strides and sizes of Transpose(t, perm) in t's row-major storage, t
 * first taken at `index` on `axis` where axis >= 0 (*off: the element
 * that starts). */
static void kcpu_att_view(const kiln_type *t, const int64_t *perm, int64_t axis, int64_t index,
                          int64_t *st, int64_t *dims, int64_t *off) {
  int64_t rs[KILN_MAX_RANK], gs[4], gd[4];
  kcpu_e_strides(t, rs);
  *off = axis >= 0 ? index * rs[axis] : 0;
  for (int64_t j = 0, k = 0; j < (int64_t)t->rank && k < 4; j++)
    if (j != axis) {
      gs[k] = rs[j];
      gd[k++] = t->dims[j];
    }
  for (int j = 0; j < 4; j++) {
    st[j] = gs[perm[j]];
    dims[j] = gd[perm[j]];
  }
}

/* The address of operand i, `off` elements into its buffer. */
static LLVMValueRef kcpu_att_addr(kcpu_emit *e, const kiln_instr *in, uint32_t i, int64_t off) {
  LLVMValueRef p = kcpu_addr(e, kcpu_i_in(in, i));
  if (off == 0)
    return p;
  LLVMValueRef idx = kcpu_i64(e, off);
  return LLVMBuildInBoundsGEP2(kcpu_builder(e), LLVMFloatTypeInContext(kcpu_context(e)), p, &idx, 1,
                               "");
}

bool kcpu_supports_ScaledDotProductAttention(const kiln_node *n) {
  const kiln_type *q = kcpu_n_in(n, 0), *k = kcpu_n_in(n, 1), *v = kcpu_n_in(n, 2),
                  *m = kcpu_n_in(n, 3), *y = kcpu_n_out(n, 0);
  if (!q || !k || !v || !y || q->elem != KILN_F32 || k->elem != KILN_F32 ||
      v->elem != KILN_F32 || y->elem != KILN_F32 || q->quantized || k->quantized ||
      v->quantized || y->quantized)
    return false;
  if (m && (m->quantized || (m->elem != KILN_F32 && m->elem != KILN_BOOL)))
    return false;
  /* an empty key or head dimension: left to the lowering's exact semantics */
  for (uint32_t i = 0; i < q->rank; i++)
    if (q->dims[i] == 0)
      return false;
  for (uint32_t i = 0; i < k->rank; i++)
    if (k->dims[i] == 0)
      return false;
  return true;
}

kiln_status kcpu_emit_ScaledDotProductAttention(kcpu_emit *e, const kiln_instr *in) {
  const kiln_attrs *attrs = kiln_instr_attrs(in);
  const kiln_type *qt = kcpu_i_in_type(in, 0), *kt = kcpu_i_in_type(in, 1),
                  *vt = kcpu_i_in_type(in, 2), *yt = kcpu_i_out_type(in, 0);
  const kiln_buffer *mb = kcpu_i_inputs(in) > 3 ? kcpu_i_in(in, 3) : NULL;
  int64_t perm[4], st[20] = {0}, qd[4], kd[4], vd[4], od[4], off[3], gi, ga;
  kcpu_att_perm(attrs, "q_perm", perm);
  ga = kcpu_att_gather(attrs, "q_gather", &gi);
  kcpu_att_view(qt, perm, ga, gi, st, qd, &off[0]);
  kcpu_att_perm(attrs, "k_perm", perm);
  ga = kcpu_att_gather(attrs, "k_gather", &gi);
  kcpu_att_view(kt, perm, ga, gi, st + 4, kd, &off[1]);
  kcpu_att_perm(attrs, "v_perm", perm);
  ga = kcpu_att_gather(attrs, "v_gather", &gi);
  kcpu_att_view(vt, perm, ga, gi, st + 8, vd, &off[2]);
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
  LLVMValueRef args[] = {kcpu_att_addr(e, in, 0, off[0]),
                         kcpu_att_addr(e, in, 1, off[1]),
                         kcpu_att_addr(e, in, 2, off[2]),
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
