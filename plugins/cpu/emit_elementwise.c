/* plugins/cpu/emit_elementwise.c: the cpu plugin's elementwise kinds
 * (emit.h hooks). Each plain kind is the one-op body of a fused expression
 * (Add = "x0 x1 Add", Sum of 3 = "x0 x1 Add x2 Add"), so that unfused and
 * fused elementwise code come from one generator (emit_elementwise_loop.c).
 * Pow with mixed or integer types and Cast are calls to the kernel library
 * (kernels/elementwise.c). Where is in emit_movement.c. */
#include "cpu.h"
#include "emit_elementwise_ops.h"
#include "emit_util.h"

#include <string.h>

/* The body of a plain elementwise kind over n inputs. */
static bool ew_body_for(kiln_node_kind k, uint32_t n, kiln_fused_op *ops, uint32_t *n_ops) {
  uint32_t o = 0;
  if (n == 0 || n > 16)
    return false;
  const kiln_node_kind_info *info = kiln_node_kind_get_info(k);
  if ((info->flags & KILN_NK_UNARY) || k == KILN_NODE_Not || k == KILN_NODE_IsNaN ||
      k == KILN_NODE_BitwiseNot) {
    if (n != 1)
      return false;
    ops[o++] = (kiln_fused_op){.kind = KILN_FUSED_INPUT, .input = 0};
    ops[o++] = (kiln_fused_op){.kind = (int32_t)k};
    *n_ops = o;
    return true;
  }
  kiln_node_kind step = k;
  if (k == KILN_NODE_Sum || k == KILN_NODE_Mean)
    step = KILN_NODE_Add;
  ops[o++] = (kiln_fused_op){.kind = KILN_FUSED_INPUT, .input = 0};
  for (uint32_t j = 1; j < n; j++) {
    ops[o++] = (kiln_fused_op){.kind = KILN_FUSED_INPUT, .input = j};
    ops[o++] = (kiln_fused_op){.kind = (int32_t)step};
  }
  if (k == KILN_NODE_Mean && n > 1) {
    ops[o++] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = (double)n};
    ops[o++] = (kiln_fused_op){.kind = KILN_NODE_Div};
  }
  *n_ops = o;
  return true;
}

/* Same element type everywhere, no quantization, and a body the generator
 * handles for that type. */
static bool ew_node_ok(const kiln_node *n, kiln_node_kind k) {
  if (kiln_node_result_count(n) != 1)
    return false;
  const kiln_type *rt = kiln_value_type(kiln_node_result(n, 0));
  uint32_t ni = kiln_node_input_count(n);
  if (rt->quantized || ni == 0 || !kiln_node_input(n, 0))
    return false;
  kiln_elem el = kiln_value_type(kiln_node_input(n, 0))->elem;
  bool to_bool = k == KILN_NODE_Equal || k == KILN_NODE_Greater || k == KILN_NODE_GreaterOrEqual ||
                 k == KILN_NODE_Less || k == KILN_NODE_LessOrEqual || k == KILN_NODE_IsNaN;
  if (to_bool ? rt->elem != KILN_BOOL : rt->elem != el)
    return false;
  for (uint32_t i = 0; i < ni; i++) {
    const kiln_value *v = kiln_node_input(n, i);
    if (!v || kiln_value_type(v)->elem != el || kiln_value_type(v)->quantized)
      return false;
  }
  if (k == KILN_NODE_Gelu &&
      strcmp(kiln_attrs_string_or(kiln_node_attrs(n), "approximate", "none"), "none") != 0)
    return false;
  kiln_fused_op ops[64];
  uint32_t n_ops;
  if (k == KILN_NODE_FusedElementwise) {
    kiln_fused_op big[KILN_FUSED_MAX_OPS];
    kiln_status s = kiln_fused_parse(kiln_attrs_string_or(kiln_node_attrs(n), "body", ""), ni, big,
                                     KILN_FUSED_MAX_OPS, &n_ops);
    if (s) {
      kiln_status_free(s);
      return false;
    }
    return ni <= 16 && kcpu_ew_supported(el, big, n_ops);
  }
  return ew_body_for(k, ni, ops, &n_ops) && kcpu_ew_supported(el, ops, n_ops);
}

static kiln_status ew_emit_kind(kcpu_emit *e, const kiln_instr *in, kiln_node_kind k) {
  kiln_fused_op ops[64];
  uint32_t n_ops, n_in = kiln_instr_operand_count(in) - kiln_instr_result_count(in);
  if (!ew_body_for(k, n_in, ops, &n_ops))
    return kiln_status_make(KILN_INVALID_ARGUMENT, "cpu: %s with %u inputs", kiln_node_kind_name(k),
                            n_in);
  return kcpu_emit_elementwise(e, in, ops, n_ops);
}

#define KCPU_EW_KIND(K)                                                                            \
  bool kcpu_supports_##K(const kiln_node *n) {                                                     \
    return ew_node_ok(n, KILN_NODE_##K);                                                           \
  }                                                                                                \
  kiln_status kcpu_emit_##K(kcpu_emit *e, const kiln_instr *in) {                                  \
    return ew_emit_kind(e, in, KILN_NODE_##K);                                                     \
  }

KCPU_EW_KIND(Abs)
KCPU_EW_KIND(Ceil)
KCPU_EW_KIND(Cos)
KCPU_EW_KIND(Erf)
KCPU_EW_KIND(Exp)
KCPU_EW_KIND(Floor)
KCPU_EW_KIND(Log)
KCPU_EW_KIND(Neg)
KCPU_EW_KIND(Reciprocal)
KCPU_EW_KIND(Relu)
KCPU_EW_KIND(Round)
KCPU_EW_KIND(Sigmoid)
KCPU_EW_KIND(Sign)
KCPU_EW_KIND(Sin)
KCPU_EW_KIND(Softplus)
KCPU_EW_KIND(Softsign)
KCPU_EW_KIND(Sqrt)
KCPU_EW_KIND(Tan)
KCPU_EW_KIND(Atan)
KCPU_EW_KIND(Acos)
KCPU_EW_KIND(Asin)
KCPU_EW_KIND(Acosh)
KCPU_EW_KIND(Asinh)
KCPU_EW_KIND(Atanh)
KCPU_EW_KIND(Cosh)
KCPU_EW_KIND(Sinh)
KCPU_EW_KIND(Tanh)
KCPU_EW_KIND(Gelu)
KCPU_EW_KIND(Identity)
KCPU_EW_KIND(Add)
KCPU_EW_KIND(Sub)
KCPU_EW_KIND(Mul)
KCPU_EW_KIND(Div)
KCPU_EW_KIND(Max)
KCPU_EW_KIND(Min)
KCPU_EW_KIND(Sum)
KCPU_EW_KIND(Mean)
KCPU_EW_KIND(Equal)
KCPU_EW_KIND(Greater)
KCPU_EW_KIND(GreaterOrEqual)
KCPU_EW_KIND(Less)
KCPU_EW_KIND(LessOrEqual)
KCPU_EW_KIND(IsNaN)
KCPU_EW_KIND(And)
KCPU_EW_KIND(Or)
KCPU_EW_KIND(Xor)
KCPU_EW_KIND(Not)
KCPU_EW_KIND(BitwiseAnd)
KCPU_EW_KIND(BitwiseOr)
KCPU_EW_KIND(BitwiseXor)
KCPU_EW_KIND(BitwiseNot)

bool kcpu_supports_FusedElementwise(const kiln_node *n) {
  return ew_node_ok(n, KILN_NODE_FusedElementwise);
}

kiln_status kcpu_emit_FusedElementwise(kcpu_emit *e, const kiln_instr *in) {
  kiln_fused_op ops[KILN_FUSED_MAX_OPS];
  uint32_t n_ops, n_in = kiln_instr_operand_count(in) - kiln_instr_result_count(in);
  KILN_TRY_CTX(kiln_fused_parse(kiln_attrs_string_or(kiln_instr_attrs(in), "body", ""), n_in, ops,
                                KILN_FUSED_MAX_OPS, &n_ops),
               "cpu FusedElementwise");
  return kcpu_emit_elementwise(e, in, ops, n_ops);
}

/* ---- Pow with mixed types ---- */
static bool kcpu_pow_mixed_ok(const kiln_node *n) {
  const kiln_type *a = kcpu_n_in(n, 0), *b = kcpu_n_in(n, 1), *y = kcpu_n_out(n, 0);
  return kcpu_e_plain(a) && kcpu_e_plain(b) && kcpu_e_plain(y) && kcpu_e_numeric(a->elem) &&
         kcpu_e_numeric(b->elem) && y->elem == a->elem && y->rank <= 16;
}

/* Strides of t broadcast to the output's rank (0 on size-1 dims). */
static void kcpu_pow_bstrides(const kiln_type *t, const kiln_type *y, int64_t *st) {
  int64_t acc = 1;
  for (int k = (int)y->rank - 1; k >= 0; k--) {
    int ik = k - (int)(y->rank - t->rank);
    int64_t d = ik >= 0 ? t->dims[ik] : 1;
    st[k] = d == 1 ? 0 : acc;
    acc *= d;
  }
}

static kiln_status kcpu_pow_mixed_emit(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *a = kcpu_i_in_type(in, 0), *b = kcpu_i_in_type(in, 1),
                  *y = kcpu_i_out_type(in, 0);
  int64_t as[KILN_MAX_RANK], bs[KILN_MAX_RANK];
  kcpu_pow_bstrides(a, y, as);
  kcpu_pow_bstrides(b, y, bs);
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

/* Pow: the loop generator when base and exponent share a float type, the
 * generic kernel otherwise (integer powers, mixed types). */
bool kcpu_supports_Pow(const kiln_node *n) {
  return ew_node_ok(n, KILN_NODE_Pow) || kcpu_pow_mixed_ok(n);
}

kiln_status kcpu_emit_Pow(kcpu_emit *e, const kiln_instr *in) {
  const kiln_buffer *a = kiln_instr_operand(in, 1), *b = kiln_instr_operand(in, 2);
  kiln_elem ea = kiln_buffer_type(a)->elem, eb = b ? kiln_buffer_type(b)->elem : ea;
  kiln_fused_op ops[3] = {{.kind = KILN_FUSED_INPUT, .input = 0},
                          {.kind = KILN_FUSED_INPUT, .input = 1},
                          {.kind = KILN_NODE_Pow}};
  if (ea == eb && kcpu_ew_supported(ea, ops, 3))
    return ew_emit_kind(e, in, KILN_NODE_Pow);
  return kcpu_pow_mixed_emit(e, in);
}

/* Two-input kinds whose body op depends on an attribute (emit_elementwise_ops.h). */
static bool ew_attr_binary_ok(const kiln_node *n, int32_t op) {
  if (kiln_node_input_count(n) != 2 || kiln_node_result_count(n) != 1)
    return false;
  const kiln_type *y = kiln_value_type(kiln_node_result(n, 0));
  for (uint32_t i = 0; i < 2; i++) {
    const kiln_value *v = kiln_node_input(n, i);
    if (!v || kiln_value_type(v)->elem != y->elem || kiln_value_type(v)->quantized)
      return false;
  }
  kiln_fused_op ops[3] = {
      {.kind = KILN_FUSED_INPUT, .input = 0}, {.kind = KILN_FUSED_INPUT, .input = 1}, {.kind = op}};
  return !y->quantized && kcpu_ew_supported(y->elem, ops, 3);
}

static kiln_status ew_attr_binary_emit(kcpu_emit *e, const kiln_instr *in, int32_t op) {
  kiln_fused_op ops[3] = {
      {.kind = KILN_FUSED_INPUT, .input = 0}, {.kind = KILN_FUSED_INPUT, .input = 1}, {.kind = op}};
  return kcpu_emit_elementwise(e, in, ops, 3);
}

static int32_t ew_mod_op(const kiln_attrs *a) {
  return kiln_attrs_int_or(a, "fmod", 0) ? KCPU_EW_FMOD : KILN_NODE_Mod;
}

bool kcpu_supports_Mod(const kiln_node *n) {
  return ew_attr_binary_ok(n, ew_mod_op(kiln_node_attrs(n)));
}
kiln_status kcpu_emit_Mod(kcpu_emit *e, const kiln_instr *in) {
  return ew_attr_binary_emit(e, in, ew_mod_op(kiln_instr_attrs(in)));
}

/* -1 for a direction that is neither LEFT nor RIGHT. */
static int32_t ew_shift_op(const kiln_attrs *a) {
  const char *d = kiln_attrs_string_or(a, "direction", "");
  return !strcmp(d, "LEFT") ? KCPU_EW_SHL : !strcmp(d, "RIGHT") ? KCPU_EW_SHR : -1;
}

bool kcpu_supports_BitShift(const kiln_node *n) {
  int32_t op = ew_shift_op(kiln_node_attrs(n));
  return op >= 0 && ew_attr_binary_ok(n, op);
}
kiln_status kcpu_emit_BitShift(kcpu_emit *e, const kiln_instr *in) {
  int32_t op = ew_shift_op(kiln_instr_attrs(in));
  if (op < 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "cpu: instruction %u (BitShift): direction must be LEFT or RIGHT",
                            kiln_instr_index(in));
  return ew_attr_binary_emit(e, in, op);
}

/* HardSigmoid = min(1, max(0, alpha*x + beta)) as one loop: one rounding
 * for f16 / bf16 results instead of one per lowered step. */
static void ew_hardsigmoid_body(const kiln_attrs *a, kiln_fused_op *ops) {
  ops[0] = (kiln_fused_op){.kind = KILN_FUSED_INPUT, .input = 0};
  ops[1] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = kiln_attrs_float_or(a, "alpha", 0.2)};
  ops[2] = (kiln_fused_op){.kind = KILN_NODE_Mul};
  ops[3] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = kiln_attrs_float_or(a, "beta", 0.5)};
  ops[4] = (kiln_fused_op){.kind = KILN_NODE_Add};
  ops[5] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = 0.0};
  ops[6] = (kiln_fused_op){.kind = KILN_NODE_Max};
  ops[7] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = 1.0};
  ops[8] = (kiln_fused_op){.kind = KILN_NODE_Min};
}

bool kcpu_supports_HardSigmoid(const kiln_node *n) {
  kiln_fused_op ops[9];
  ew_hardsigmoid_body(kiln_node_attrs(n), ops);
  if (kiln_node_input_count(n) != 1 || kiln_node_result_count(n) != 1)
    return false;
  const kiln_type *x = kiln_value_type(kiln_node_input(n, 0));
  const kiln_type *y = kiln_value_type(kiln_node_result(n, 0));
  return !x->quantized && !y->quantized && x->elem == y->elem &&
         (x->elem == KILN_F32 || x->elem == KILN_F64 || x->elem == KILN_F16 ||
          x->elem == KILN_BF16) &&
         kcpu_ew_supported(x->elem, ops, 9);
}

kiln_status kcpu_emit_HardSigmoid(kcpu_emit *e, const kiln_instr *in) {
  kiln_fused_op ops[9];
  ew_hardsigmoid_body(kiln_instr_attrs(in), ops);
  return kcpu_emit_elementwise(e, in, ops, 9);
}

/* ---- Clip, HardSwish, Swish (f32) ----
 * Kept as nodes (each one loop, as its lowered form became once fused) so
 * that the fuseact pass, which runs after lowering, still sees them and can
 * move them into a Conv / MatMul / Gemm epilogue. */

/* Clip's body: x, then Max with the min and Min with the max where given.
 * Bounds are inputs of the loop (scalars, hoisted), except a max after an
 * absent min, which the loop cannot take as its third input: that one must
 * be a constant and becomes a number. *n_in: the inputs the body reads. */
static bool ew_clip_body(const kiln_value *const *b, const kiln_buffer *const *bb, uint32_t n,
                         kiln_fused_op *ops, uint32_t *n_ops, uint32_t *n_in) {
  uint32_t k = 0;
  ops[k++] = (kiln_fused_op){.kind = KILN_FUSED_INPUT, .input = 0};
  *n_in = 1;
  bool lo = n > 1 && (b ? b[1] != NULL : bb[1] != NULL);
  bool hi = n > 2 && (b ? b[2] != NULL : bb[2] != NULL);
  if (lo) {
    ops[k++] = (kiln_fused_op){.kind = KILN_FUSED_INPUT, .input = 1};
    ops[k++] = (kiln_fused_op){.kind = KILN_NODE_Max};
    *n_in = 2;
  }
  if (hi && lo) {
    ops[k++] = (kiln_fused_op){.kind = KILN_FUSED_INPUT, .input = 2};
    *n_in = 3;
  } else if (hi) {
    const kiln_type *t = b ? kiln_value_type(b[2]) : kiln_buffer_type(bb[2]);
    const void *d =
        b ? (kiln_value_get_kind(b[2]) == KILN_VALUE_CONSTANT ? kiln_value_data(b[2]) : NULL)
          : (kiln_buffer_get_kind(bb[2]) == KILN_BUFFER_WEIGHT ? kiln_buffer_data(bb[2]) : NULL);
    if (!d || t->elem != KILN_F32)
      return false;
    ops[k++] =
        (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = kiln_elem_load_f64(t->elem, d, 0)};
  }
  if (hi)
    ops[k++] = (kiln_fused_op){.kind = KILN_NODE_Min};
  if (!lo && !hi)
    ops[k++] = (kiln_fused_op){.kind = KILN_NODE_Identity};
  *n_ops = k;
  return true;
}

bool kcpu_supports_Clip(const kiln_node *n) {
  uint32_t n_in = kiln_node_input_count(n), used;
  if (n_in < 1 || n_in > 3 || kiln_node_result_count(n) != 1 || !kcpu_n_all_elem(n, KILN_F32))
    return false;
  const kiln_value *b[3] = {NULL, NULL, NULL};
  for (uint32_t i = 0; i < n_in; i++) {
    b[i] = kiln_node_input(n, i);
    /* a bound broadcasts into x's shape, never beyond it */
    if (i > 0 && b[i] &&
        (kiln_type_numel(kiln_value_type(b[i])) != 1 ||
         kiln_value_type(b[i])->rank > kiln_value_type(b[0])->rank))
      return false;
  }
  kiln_fused_op ops[6];
  uint32_t n_ops;
  return ew_clip_body(b, NULL, n_in, ops, &n_ops, &used) && kcpu_ew_supported(KILN_F32, ops, n_ops);
}

kiln_status kcpu_emit_Clip(kcpu_emit *e, const kiln_instr *in) {
  uint32_t n_in = kiln_instr_operand_count(in) - kiln_instr_result_count(in), used;
  const kiln_buffer *bb[3] = {NULL, NULL, NULL};
  for (uint32_t i = 0; i < n_in && i < 3; i++)
    bb[i] = kiln_instr_operand(in, kiln_instr_result_count(in) + i);
  kiln_fused_op ops[6];
  uint32_t n_ops;
  if (n_in < 1 || n_in > 3 || !ew_clip_body(NULL, bb, n_in, ops, &n_ops, &used))
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "cpu: instruction %u (Clip): a max after an absent min must be an f32 "
                            "constant",
                            kiln_instr_index(in));
  return kcpu_emit_elementwise_first(e, in, used, ops, n_ops);
}

/* HardSwish = x * min(1, max(0, x/6 + 1/2)); Swish = x * sigmoid(alpha x):
 * bodies of one input read twice. */
static uint32_t ew_swish_body(kiln_node_kind k, const kiln_attrs *a, kiln_fused_op *ops) {
  uint32_t n = 0;
  ops[n++] = (kiln_fused_op){.kind = KILN_FUSED_INPUT, .input = 0};
  ops[n++] = (kiln_fused_op){.kind = KILN_FUSED_INPUT, .input = 0};
  if (k == KILN_NODE_HardSwish) {
    ops[n++] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = 1.0 / 6.0};
    ops[n++] = (kiln_fused_op){.kind = KILN_NODE_Mul};
    ops[n++] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = 0.5};
    ops[n++] = (kiln_fused_op){.kind = KILN_NODE_Add};
    ops[n++] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = 0.0};
    ops[n++] = (kiln_fused_op){.kind = KILN_NODE_Max};
    ops[n++] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = 1.0};
    ops[n++] = (kiln_fused_op){.kind = KILN_NODE_Min};
  } else {
    double alpha = kiln_attrs_float_or(a, "alpha", 1.0);
    if (alpha != 1.0) {
      ops[n++] = (kiln_fused_op){.kind = KILN_FUSED_CONST, .value = alpha};
      ops[n++] = (kiln_fused_op){.kind = KILN_NODE_Mul};
    }
    ops[n++] = (kiln_fused_op){.kind = KILN_NODE_Sigmoid};
  }
  ops[n++] = (kiln_fused_op){.kind = KILN_NODE_Mul};
  return n;
}

static bool ew_swish_ok(const kiln_node *n, kiln_node_kind k) {
  kiln_fused_op ops[12];
  uint32_t n_ops = ew_swish_body(k, kiln_node_attrs(n), ops);
  return kiln_node_input_count(n) == 1 && kiln_node_result_count(n) == 1 &&
         kcpu_n_all_elem(n, KILN_F32) && kcpu_ew_supported(KILN_F32, ops, n_ops);
}

static kiln_status ew_swish_emit(kcpu_emit *e, const kiln_instr *in, kiln_node_kind k) {
  kiln_fused_op ops[12];
  uint32_t n_ops = ew_swish_body(k, kiln_instr_attrs(in), ops);
  return kcpu_emit_elementwise(e, in, ops, n_ops);
}

bool kcpu_supports_HardSwish(const kiln_node *n) {
  return ew_swish_ok(n, KILN_NODE_HardSwish);
}
kiln_status kcpu_emit_HardSwish(kcpu_emit *e, const kiln_instr *in) {
  return ew_swish_emit(e, in, KILN_NODE_HardSwish);
}
bool kcpu_supports_Swish(const kiln_node *n) {
  return ew_swish_ok(n, KILN_NODE_Swish);
}
kiln_status kcpu_emit_Swish(kcpu_emit *e, const kiln_instr *in) {
  return ew_swish_emit(e, in, KILN_NODE_Swish);
}

/* ---- Cast ---- */
bool kcpu_supports_Cast(const kiln_node *n) {
  const kiln_type *x = kcpu_n_in(n, 0), *y = kcpu_n_out(n, 0);
  return x && y && !x->quantized && !y->quantized;
}
kiln_status kcpu_emit_Cast(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *y = kcpu_i_out_type(in, 0);
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)), kcpu_i64(e, x->elem),
                         kcpu_addr(e, kcpu_i_out(in, 0)), kcpu_i64(e, y->elem),
                         kcpu_i64(e, kiln_type_numel(y))};
  return kcpu_e_call(e, in, "kcpu_k_cast", args, 5);
}
