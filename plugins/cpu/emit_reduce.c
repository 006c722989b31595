/* plugins/cpu/emit_reduce.c: reductions over any axes, ArgMax/ArgMin and
 * TopK, as calls to the kernel library (kernels/reduce.c). The supported
 * (element type, reduction) table mirrors kcpu_k_reduce's. */
#include "emit_util.h"

/* codes of kcpu_runtime.h (KCPU_RED_*) */
enum { RSUM, RMEAN, RMAX, RMIN, RPROD, RSUMSQ, RL1, RL2, RLOGSUM, RLOGSUMEXP };

static bool kcpu_red_type_ok(kiln_elem t, int op) {
  switch (t) {
  case KILN_F32:
  case KILN_F64:
  case KILN_F16: /* through f32 (kernels/reduce.c) */
  case KILN_BF16:
    return true;
  case KILN_BOOL:
    return op == RMAX || op == RMIN;
  case KILN_U64: /* through i64: only the ops whose low bits agree */
    return op == RSUM || op == RPROD || op == RSUMSQ;
  case KILN_I8: /* sum-like ops through i64 (kernels/reduce.c) */
  case KILN_U8:
  case KILN_I16:
  case KILN_U16:
  case KILN_U32:
  case KILN_I32:
  case KILN_I64:
    return op == RSUM || op == RMAX || op == RMIN || op == RPROD || op == RSUMSQ || op == RL1;
  default:
    return false;
  }
}

static bool kcpu_red_ok(const kiln_node *n, int op) {
  const kiln_type *x = kcpu_n_in(n, 0), *y = kcpu_n_out(n, 0);
  return x && y && !x->quantized && y->elem == x->elem && kcpu_red_type_ok(x->elem, op);
}

static kiln_status kcpu_red_emit(kcpu_emit *e, const kiln_instr *in, int op) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  const int64_t *axes;
  uint32_t na = kcpu_e_ints(a, "axes", &axes);
  int64_t mask = 0;
  for (uint32_t i = 0; i < na; i++) {
    int64_t ax;
    if (!kcpu_e_axis(axes[i], x->rank, &ax))
      return kcpu_e_fail(in, "axis %lld out of range", (long long)axes[i]);
    mask |= (int64_t)1 << ax;
  }
  if (na == 0) {
    if (kiln_attrs_int_or(a, "noop_with_empty_axes", 0)) {
      /* identity: a plain copy */
      LLVMBuildMemMove(kcpu_builder(e), kcpu_addr(e, kcpu_i_out(in, 0)), 1,
                       kcpu_addr(e, kcpu_i_in(in, 0)), 1, kcpu_i64(e, kiln_type_bytes(x)));
      return NULL;
    }
    mask = ((int64_t)1 << x->rank) - 1;
  }
  int64_t dims1 = 1;
  LLVMValueRef args[] = {kcpu_i64(e, x->elem),
                         kcpu_i64(e, op),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, x->rank ? x->rank : 1),
                         x->rank ? kcpu_i64_array(e, x->dims, x->rank)
                                 : kcpu_i64_array(e, &dims1, 1),
                         kcpu_i64(e, x->rank ? mask : 1)};
  return kcpu_e_call(e, in, "kcpu_k_reduce", args, 7);
}

#define KCPU_RED_KIND(K, OP)                                                                       \
  bool kcpu_supports_##K(const kiln_node *n) {                                                     \
    return kcpu_red_ok(n, OP);                                                                     \
  }                                                                                                \
  kiln_status kcpu_emit_##K(kcpu_emit *e, const kiln_instr *in) {                                  \
    return kcpu_red_emit(e, in, OP);                                                               \
  }

KCPU_RED_KIND(ReduceSum, RSUM)
KCPU_RED_KIND(ReduceMean, RMEAN)
KCPU_RED_KIND(ReduceMax, RMAX)
KCPU_RED_KIND(ReduceMin, RMIN)
KCPU_RED_KIND(ReduceProd, RPROD)
KCPU_RED_KIND(ReduceSumSquare, RSUMSQ)
KCPU_RED_KIND(ReduceL1, RL1)
KCPU_RED_KIND(ReduceL2, RL2)
KCPU_RED_KIND(ReduceLogSum, RLOGSUM)
KCPU_RED_KIND(ReduceLogSumExp, RLOGSUMEXP)

static bool kcpu_arg_ok(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0);
  if (!x || x->quantized || x->rank == 0)
    return false;
  return x->elem < KILN_ELEM_COUNT; /* other types: the generic kernel */
}

static kiln_status kcpu_arg_emit(kcpu_emit *e, const kiln_instr *in, int64_t is_max) {
  const kiln_type *x = kcpu_i_in_type(in, 0);
  const kiln_attrs *a = kiln_instr_attrs(in);
  int64_t ax;
  if (!kcpu_e_axis(kiln_attrs_int_or(a, "axis", 0), x->rank, &ax))
    return kcpu_e_fail(in, "axis out of range");
  LLVMValueRef args[] = {kcpu_i64(e, x->elem),
                         kcpu_i64(e, is_max),
                         kcpu_i64(e, kiln_attrs_int_or(a, "select_last_index", 0) != 0),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, kcpu_e_prod(x->dims, 0, (uint32_t)ax)),
                         kcpu_i64(e, x->dims[ax]),
                         kcpu_i64(e, kcpu_e_prod(x->dims, (uint32_t)ax + 1, x->rank))};
  return kcpu_e_call(e, in, "kcpu_k_argminmax", args, 8);
}

bool kcpu_supports_ArgMax(const kiln_node *n) {
  return kcpu_arg_ok(n);
}
kiln_status kcpu_emit_ArgMax(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_arg_emit(e, in, 1);
}
bool kcpu_supports_ArgMin(const kiln_node *n) {
  return kcpu_arg_ok(n);
}
kiln_status kcpu_emit_ArgMin(kcpu_emit *e, const kiln_instr *in) {
  return kcpu_arg_emit(e, in, 0);
}

/* ---- TopK ---- */
bool kcpu_supports_TopK(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *v = kcpu_n_out(n, 0), *i = kcpu_n_out(n, 1);
  int64_t axis;
  return kcpu_e_plain(x) && kcpu_e_plain(v) && kcpu_e_numeric(x->elem) && v->elem == x->elem &&
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
