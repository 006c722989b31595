/* plugins/opencl/gen_common.c: what every kernel generator shares: OpenCL C
 * type names, the kernel header (one global pointer per operand at its
 * baked-in byte offset), index arithmetic with shapes as constants, the
 * `axis` attribute, and the table from instruction kind to generator (the
 * generators themselves are in gen_<family>.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ocl.h"

const char *ocl_ctype(kiln_elem e) {
  switch (e) {
  case KILN_F64:
    return "double";
  case KILN_F32:
    return "float";
  case KILN_I8:
    return "char";
  case KILN_U8:
  case KILN_BOOL:
    return "uchar";
  case KILN_I16:
    return "short";
  case KILN_U16:
  case KILN_F16:
  case KILN_BF16:
    return "ushort"; /* f16 / bf16: storage only, math in float */
  case KILN_I32:
    return "int";
  case KILN_U32:
    return "uint";
  case KILN_I64:
    return "long";
  case KILN_U64:
    return "ulong";
  default:
    return NULL;
  }
}

bool ocl_is_float(kiln_elem e) {
  return e == KILN_F32 || e == KILN_F64;
}

bool ocl_is_half(kiln_elem e) {
  return e == KILN_F16 || e == KILN_BF16;
}

kiln_elem ocl_math_elem(kiln_elem e) {
  return ocl_is_half(e) ? KILN_F32 : e;
}

const char *ocl_load_fn(kiln_elem e) {
  return e == KILN_F16 ? "kiln_h2f" : e == KILN_BF16 ? "kiln_bf2f" : "";
}

const char *ocl_store_fn(kiln_elem e) {
  return e == KILN_F16 ? "kiln_f2h" : e == KILN_BF16 ? "kiln_f2bf" : "";
}

/* The conversions mirror ir/types.c bit for bit (round to nearest even,
 * NaN payloads kept), so results match the interpreter exactly; the
 * built-in vstore_half leaves NaN payloads to the implementation. */
void ocl_gen_prelude(ocl_sb *b) {
  ocl_sb_printf(
      b, "float kiln_h2f(ushort h) {\n"
         "  uint s = (uint)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
         "  if (e == 0x1fu) return as_float(s | 0x7f800000u | (m << 13));\n"
         "  if (e == 0u) { float v = (float)m * 5.9604644775390625e-8f; return s ? -v : v; }\n"
         "  return as_float(s | ((e + 112u) << 23) | (m << 13));\n"
         "}\n"
         "ushort kiln_f2h(float f) {\n"
         "  uint u = as_uint(f), sg = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
         "  if (a >= 0x7f800000u)\n"
         "    return (ushort)(a > 0x7f800000u ? (sg | 0x7e00u | ((a >> 13) & 0x3ffu)) : (sg | "
         "0x7c00u));\n"
         "  if (a >= 0x477ff000u) return (ushort)(sg | 0x7c00u);\n"
         "  int ex = (int)(a >> 23) - 127;\n"
         "  if (ex < -14) {\n"
         "    if (ex < -25) return (ushort)sg;\n"
         "    uint m = (a & 0x7fffffu) | 0x800000u, sh = (uint)(-ex - 14 + 13);\n"
         "    uint q = m >> sh, r = m & ((1u << sh) - 1u), hf = 1u << (sh - 1u);\n"
         "    if (r > hf || (r == hf && (q & 1u))) q++;\n"
         "    return (ushort)(sg | q);\n"
         "  }\n"
         "  uint q = ((uint)(ex + 15) << 10) | ((a & 0x7fffffu) >> 13), r = a & 0x1fffu;\n"
         "  if (r > 0x1000u || (r == 0x1000u && (q & 1u))) q++;\n"
         "  return (ushort)(sg | q);\n"
         "}\n"
         "float kiln_bf2f(ushort h) { return as_float((uint)h << 16); }\n"
         "ushort kiln_f2bf(float f) {\n"
         "  uint u = as_uint(f);\n"
         "  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);\n"
         "  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
         "}\n"
         "void kiln_fault(__global int *f, int site, long v, long b, long at) {\n"
         "  if (atomic_cmpxchg((volatile __global int *)f, 0, 1) != 0) return;\n"
         "  f[1] = site; f[2] = (int)v; f[3] = (int)(v >> 32); f[4] = (int)b;\n"
         "  f[5] = (int)(b >> 32); f[6] = (int)at; f[7] = (int)(at >> 32);\n"
         "}\n");
}

static uint32_t root_arg(ocl_gen *g, uint32_t root) {
  ocl_launch *l = g->launch;
  for (uint32_t i = 0; i < l->n_args; i++)
    if (l->arg_root[i] == root)
      return i;
  l->arg_root[l->n_args] = root;
  return l->n_args++;
}

void ocl_gen_begin(ocl_gen *g) {
  ocl_launch *l = g->launch;
  l->n_args = 0;
  for (uint32_t i = 0; i < g->n_ops; i++)
    if (g->ops[i].type)
      root_arg(g, g->ops[i].root);
  uint32_t fault_arg = g->checks ? root_arg(g, g->fault_root) : 0;
  l->checks = g->checks;
  ocl_sb_printf(g->src, "\n/* instruction %u: %s */\n__kernel void %s(", kiln_instr_index(g->in),
                kiln_instr_kind_name(kiln_instr_get_kind(g->in)), l->name);
  for (uint32_t i = 0; i < l->n_args; i++)
    ocl_sb_printf(g->src, "%s__global uchar *a%u", i ? ", " : "", i);
  ocl_sb_printf(g->src, ") {\n");
  for (uint32_t i = 0; i < g->n_ops; i++) {
    const ocl_operand *o = &g->ops[i];
    if (!o->type)
      continue;
    ocl_sb_printf(g->src, "  __global %s *p%u = (__global %s *)(a%u + %llu);\n",
                  ocl_ctype(o->type->elem), i, ocl_ctype(o->type->elem), root_arg(g, o->root),
                  (unsigned long long)o->offset);
  }
  if (g->checks)
    ocl_sb_printf(g->src, "  __global int *pF = (__global int *)a%u;\n  const int site = %u;\n",
                  fault_arg, kiln_instr_index(g->in));
}

void ocl_gen_begin_1d(ocl_gen *g, int64_t n) {
  ocl_gen_begin(g);
  ocl_launch *l = g->launch;
  l->dims = 1;
  size_t wg = g->wg;
  l->global[0] = (size_t)((n + (int64_t)wg - 1) / (int64_t)wg) * wg;
  l->local[0] = wg;
  l->empty = n <= 0;
  ocl_sb_printf(g->src, "  long gid = get_global_id(0);\n  if (gid >= %lldL) return;\n",
                (long long)n);
}

void ocl_gen_end(ocl_gen *g) {
  ocl_sb_printf(g->src, "}\n");
}

void ocl_gen_unravel(ocl_gen *g, const char *var, const int64_t *dims, uint32_t rank,
                     const char *prefix) {
  if (!rank)
    return;
  ocl_sb_printf(g->src, "  long %s_r = %s;\n", prefix, var);
  for (uint32_t i = rank; i-- > 0;) {
    if (i == 0)
      ocl_sb_printf(g->src, "  long %s%u = %s_r;\n", prefix, i, prefix);
    else
      ocl_sb_printf(g->src, "  long %s%u = %s_r %% %lldL; %s_r /= %lldL;\n", prefix, i, prefix,
                    (long long)dims[i], prefix, (long long)dims[i]);
  }
}

void ocl_gen_bcast_index(ocl_gen *g, const kiln_type *in, uint32_t out_rank, const char *prefix) {
  int64_t st[KILN_MAX_RANK];
  kiln_type_strides(in, st);
  bool any = false;
  for (uint32_t i = 0; i < in->rank; i++) {
    if (in->dims[i] == 1)
      continue;
    uint32_t oc = out_rank - in->rank + i;
    ocl_sb_printf(g->src, "%s%s%u * %lldL", any ? " + " : "", prefix, oc, (long long)st[i]);
    any = true;
  }
  if (!any)
    ocl_sb_printf(g->src, "0");
}

void ocl_gen_const(ocl_sb *b, double v, kiln_elem e) {
  const char *t = ocl_ctype(e);
  if (ocl_is_half(e)) { /* the stored bit pattern */
    uint16_t h = e == KILN_F16 ? kiln_f32_to_f16((float)v) : kiln_f32_to_bf16((float)v);
    ocl_sb_printf(b, "((ushort)0x%04x)", (unsigned)h);
    return;
  }
  if (isnan(v))
    ocl_sb_printf(b, "((%s)NAN)", t);
  else if (isinf(v))
    ocl_sb_printf(b, "((%s)(%sINFINITY))", t, v < 0 ? "-" : "");
  else if (e == KILN_F32 || e == KILN_F64)
    ocl_sb_printf(b, "((%s)%.17g)", t, v);
  else
    ocl_sb_printf(b, "((%s)%lld)", t, (long long)v);
}

kiln_status ocl_gen_unsupported(const ocl_gen *g, const char *why) {
  return kiln_status_make(KILN_UNIMPLEMENTED, "opencl: instruction %u (%s): %s",
                          kiln_instr_index(g->in), kiln_instr_kind_name(kiln_instr_get_kind(g->in)),
                          why);
}

bool ocl_attr_ints(const kiln_attrs *a, const char *name, uint32_t n, int64_t dflt, int64_t *out) {
  const kiln_attr *at = kiln_attrs_find(a, name);
  uint32_t len = at ? kiln_attr_len(at) : 0;
  const int64_t *v = at ? kiln_attr_ints(at) : NULL;
  if (len && len != n)
    return false;
  for (uint32_t i = 0; i < n; i++)
    out[i] = len && v ? v[i] : dflt;
  return true;
}

kiln_status ocl_gen_axis(ocl_gen *g, uint32_t rank, int64_t dflt, uint32_t *out) {
  int64_t a = kiln_attrs_int_or(g->attrs, "axis", dflt);
  if (a < 0)
    a += rank;
  if (a < 0 || a >= (int64_t)rank)
    return ocl_gen_unsupported(g, "axis out of range");
  *out = (uint32_t)a;
  return NULL;
}

typedef kiln_status (*ocl_gen_fn)(ocl_gen *g);

static ocl_gen_fn gen_for(kiln_node_kind k) {
  const kiln_node_kind_info *info = kiln_node_kind_get_info(k);
  switch (k) {
  case KILN_NODE_Max:
  case KILN_NODE_Min:
  case KILN_NODE_Sum:
  case KILN_NODE_Mean:
    return ocl_gen_variadic;
  case KILN_NODE_Identity:
  case KILN_NODE_Reshape:
  case KILN_NODE_Flatten:
  case KILN_NODE_Squeeze:
  case KILN_NODE_Unsqueeze:
    return ocl_gen_copy;
  case KILN_NODE_BitwiseAnd:
  case KILN_NODE_BitwiseOr:
  case KILN_NODE_BitwiseXor:
    return ocl_gen_binary;
  case KILN_NODE_BitwiseNot:
    return ocl_gen_unary;
  case KILN_NODE_Where:
    return ocl_gen_where;
  case KILN_NODE_Clip:
    return ocl_gen_clip;
  case KILN_NODE_FusedElementwise:
    return ocl_gen_fused;
  case KILN_NODE_MatMul:
    return ocl_gen_matmul;
  case KILN_NODE_Gemm:
    return ocl_gen_gemm;
  case KILN_NODE_Conv:
    return ocl_gen_conv;
  case KILN_NODE_MaxPool:
  case KILN_NODE_AveragePool:
    return ocl_gen_pool;
  case KILN_NODE_GlobalAveragePool:
  case KILN_NODE_GlobalMaxPool:
    return ocl_gen_global_pool;
  case KILN_NODE_ReduceSum:
  case KILN_NODE_ReduceMax:
  case KILN_NODE_ReduceMin:
  case KILN_NODE_ReduceProd:
  case KILN_NODE_ReduceMean:
  case KILN_NODE_ReduceL1:
  case KILN_NODE_ReduceL2:
  case KILN_NODE_ReduceLogSum:
  case KILN_NODE_ReduceLogSumExp:
  case KILN_NODE_ReduceSumSquare:
    return ocl_gen_reduce;
  case KILN_NODE_ArgMax:
  case KILN_NODE_ArgMin:
    return ocl_gen_argminmax;
  case KILN_NODE_Softmax:
  case KILN_NODE_LogSoftmax:
    return ocl_gen_softmax;
  case KILN_NODE_Transpose:
    return ocl_gen_transpose;
  case KILN_NODE_Expand:
    return ocl_gen_expand;
  case KILN_NODE_Tile:
    return ocl_gen_tile;
  case KILN_NODE_Slice:
    return ocl_gen_slice;
  case KILN_NODE_Concat:
    return ocl_gen_concat;
  case KILN_NODE_Split:
    return ocl_gen_split;
  case KILN_NODE_Gather:
    return ocl_gen_gather;
  case KILN_NODE_GatherElements:
    return ocl_gen_gather_elements;
  case KILN_NODE_GatherND:
    return ocl_gen_gather_nd;
  case KILN_NODE_Pad:
    return ocl_gen_pad;
  case KILN_NODE_Trilu:
    return ocl_gen_trilu;
  case KILN_NODE_CumSum:
    return ocl_gen_cumsum;
  case KILN_NODE_DepthToSpace:
  case KILN_NODE_SpaceToDepth:
    return ocl_gen_depth_space;
  case KILN_NODE_EyeLike:
    return ocl_gen_eyelike;
  case KILN_NODE_ConvTranspose:
    return ocl_gen_convtranspose;
  case KILN_NODE_Det:
    return ocl_gen_det;
  case KILN_NODE_ScatterND:
    return ocl_gen_scatter_nd;
  case KILN_NODE_ScatterElements:
    return ocl_gen_scatter_elements;
  case KILN_NODE_TopK:
    return ocl_gen_topk;
  case KILN_NODE_RNN:
  case KILN_NODE_GRU:
  case KILN_NODE_LSTM:
    return ocl_gen_rnn;
  default:
    break;
  }
  if (info && (info->flags & KILN_NK_UNARY))
    return ocl_gen_unary;
  if (info && (info->flags & KILN_NK_BINARY))
    return ocl_gen_binary;
  return NULL;
}

bool ocl_half_kind_ok(kiln_node_kind k) {
  const kiln_node_kind_info *info = kiln_node_kind_get_info(k);
  switch (k) {
  case KILN_NODE_Max:
  case KILN_NODE_Min:
  case KILN_NODE_Sum:
  case KILN_NODE_Mean:
  case KILN_NODE_Identity:
  case KILN_NODE_Reshape:
  case KILN_NODE_Flatten:
  case KILN_NODE_Squeeze:
  case KILN_NODE_Unsqueeze:
  case KILN_NODE_Where:
  case KILN_NODE_Clip:
  case KILN_NODE_Transpose:
  case KILN_NODE_Expand:
  case KILN_NODE_Tile:
  case KILN_NODE_Slice:
  case KILN_NODE_Concat:
  case KILN_NODE_Split:
  case KILN_NODE_Gather:
  case KILN_NODE_GatherElements:
  case KILN_NODE_GatherND:
  case KILN_NODE_Pad:
  case KILN_NODE_Trilu:
  case KILN_NODE_DepthToSpace:
  case KILN_NODE_SpaceToDepth:
    return true;
  default:
    return info && (info->flags & (KILN_NK_UNARY | KILN_NK_BINARY));
  }
}

bool ocl_gen_has(kiln_node_kind k) {
  return gen_for(k) != NULL;
}

kiln_status ocl_gen_instr(ocl_gen *g) {
  ocl_gen_fn fn = gen_for(g->kind);
  if (!fn)
    return ocl_gen_unsupported(g, "no OpenCL kernel generator for this kind");
  for (uint32_t i = 0; i < g->n_ops; i++) {
    if (g->ops[i].type && !ocl_ctype(g->ops[i].type->elem))
      return ocl_gen_unsupported(g, "an operand has an element type OpenCL kernels do not store");
    if (g->ops[i].type && ocl_is_half(g->ops[i].type->elem) && !ocl_half_kind_ok(g->kind))
      return ocl_gen_unsupported(g, "f16/bf16 operands are stored only for elementwise and "
                                    "data-movement kinds");
  }
  snprintf(g->launch->name, sizeof g->launch->name, "k%u", kiln_instr_index(g->in));
  return fn(g);
}

uint32_t ocl_block_edge(int64_t n, uint32_t edge) {
  if (n >= (int64_t)edge * 4)
    return 4;
  if (n >= (int64_t)edge * 2)
    return 2;
  return 1;
}
