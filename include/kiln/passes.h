/* kiln/passes.h: the pass API that the compile driver and tools call.
 *
 * A pipeline is a comma-separated list of pass names, run left to right:
 *
 *   "dce,cse,fold*,simplify*8,dce,lower,plan"
 *
 * A step is NAME (run once), NAME* (repeat until the pass makes no change,
 * at most 16 runs) or NAME*N (same, at most N runs). Hitting the cap is not
 * an error: it is counted in the report (cap_hits) and noted on opts->log.
 * Graph passes work on every function of a module; instruction passes work
 * on a kiln_ir. When the first instruction step comes and no IR was given,
 * the manager runs kiln_irgen on the target function and hands the IR back.
 *
 *   kiln_pass_options o = kiln_pass_options_default();
 *   kiln_pass_target t = {.module = m};
 *   KILN_TRY(kiln_pass_run(&t, "dce,cse,fold*,simplify*,dce", &o, NULL));
 *
 * Every pass reports how many changes it made; the report sums them per
 * pass. Nothing here prints unless a FILE* is given in the options.
 *
 * Thread safety: passes change the module / IR they are given; the pass
 * table itself is static and read-only. */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/instr.h"
#include "kiln/ir.h"
#include "kiln/kiln.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_pass_level { KILN_PASS_GRAPH = 0, KILN_PASS_INSTR = 1 } kiln_pass_level;

#define KILN_PASS_DEFAULT_CAP 16

/* Evaluates value v of module m whose cone has only constants, writing a
 * tensor of v's type. The pass releases out->data and out->name with
 * kiln_free. The compile driver passes one that runs the interpreter
 * (kiln_evaluate_value). */
typedef kiln_status (*kiln_pass_evaluate_fn)(void *user, const kiln_module *m, const kiln_value *v,
                                             kiln_tensor *out);

/* Growth: none within a major. kiln_pass_options_default returns it by
 * value into the caller's struct, so a larger one would overrun an older
 * caller's: its size is frozen (core/plugin_abi.c), and new options come
 * in a new struct with a leading struct_size, taken by a new run function,
 * beside this one. The same holds for kiln_pass_target, kiln_pass_report
 * and kiln_mem_plan_report. */
typedef struct kiln_pass_options {
  /* fold: evaluator for nodes whose inputs are all constants. NULL: only
   * the kinds fold knows by itself fold (Shape, Size, reshapes, Concat,
   * Gather, Transpose, Identity of constants). */
  kiln_pass_evaluate_fn evaluate;
  void *evaluate_user;
  /* lower / fuse: what the backend runs natively. supports_node NULL means
   * "exactly the primitive set" (kiln_pass_node_is_primitive). */
  bool (*supports_node)(void *user, const kiln_node *n);
  bool (*keep_node)(void *user, const kiln_node *n);
  bool (*supports_fused)(void *user, const kiln_node *n, kiln_node_kind activation);
  void *backend_user;
  const char *backend_name; /* for messages; NULL = "primitive set" */

  bool verify;              /* verify after each pass (default true) */
  FILE *print_to;           /* where print_before / print_after go; NULL = nowhere */
  const char *print_before; /* a pass name or "all"; NULL = none */
  const char *print_after;  /* a pass name or "all"; NULL = none */
  uint32_t stop_after;      /* stop after this step (1-based); 0 = run all */
  FILE *log;                /* notes (fixed-point cap hit); NULL = none */
  uint64_t fold_max_bytes;  /* fold makes no constant larger than this; 0 = no limit */
} kiln_pass_options;

/* Defaults: verify on, everything else off / NULL. */
kiln_pass_options kiln_pass_options_default(void);

/* What a pipeline runs on. module: the graph (graph steps run on every
 * function). function: the one IRGen lowers (NULL = first). ir: in/out; when
 * NULL and an instruction step comes, it is made by kiln_irgen and the
 * caller then owns it (kiln_ir_destroy). */
typedef struct kiln_pass_target {
  kiln_module *module;
  const char *function;
  kiln_ir *ir;
} kiln_pass_target;

#define KILN_PASS_MAX_STATS 48

typedef struct kiln_pass_stat {
  const char *name; /* static */
  uint32_t runs;
  uint64_t changes;
  double ms;
} kiln_pass_stat;

typedef struct kiln_pass_report {
  kiln_pass_stat stats[KILN_PASS_MAX_STATS]; /* in order of first run */
  uint32_t stat_count;
  uint32_t steps_run;
  uint32_t cap_hits; /* fixed-point steps that stopped at their cap */
} kiln_pass_report;

/* Run a pipeline. report may be NULL; when given it is zeroed first. A
 * failure names the step, the pass and the reason (a verifier failure
 * after a pass names the pass that broke the IR). */
KILN_NODISCARD kiln_status kiln_pass_run(kiln_pass_target *t, const char *pipeline,
                                         const kiln_pass_options *opts, kiln_pass_report *report);
/* Check a pipeline string without running it. */
KILN_NODISCARD kiln_status kiln_pass_parse_check(const char *pipeline);
/* The report as a table (pass, runs, changes, ms). */
void kiln_pass_report_print(const kiln_pass_report *r, FILE *f);

/* The pass table, for --help and tests. */
typedef struct kiln_pass_info {
  const char *name;
  kiln_pass_level level;
  const char *summary;
} kiln_pass_info;
uint32_t kiln_pass_count(void);
const kiln_pass_info *kiln_pass_get_info(uint32_t i);

/* ------------------------------------------------------------------------
 * Single passes. Graph passes change f in place and add the number of
 * changes they made to *changes (may be NULL). */
KILN_NODISCARD kiln_status kiln_pass_dce(kiln_function *f, const kiln_pass_options *o,
                                         uint32_t *changes);
KILN_NODISCARD kiln_status kiln_pass_cse(kiln_function *f, const kiln_pass_options *o,
                                         uint32_t *changes);
KILN_NODISCARD kiln_status kiln_pass_fold(kiln_function *f, const kiln_pass_options *o,
                                          uint32_t *changes);
KILN_NODISCARD kiln_status kiln_pass_simplify(kiln_function *f, const kiln_pass_options *o,
                                              uint32_t *changes);
KILN_NODISCARD kiln_status kiln_pass_sink(kiln_function *f, const kiln_pass_options *o,
                                          uint32_t *changes);
KILN_NODISCARD kiln_status kiln_pass_fold_bn(kiln_function *f, const kiln_pass_options *o,
                                             uint32_t *changes);
/* Conv with constant filters: the taps that read only padding for every
 * output are dropped (filters sliced, pads shrunk, same result size). */
KILN_NODISCARD kiln_status kiln_pass_trim_conv(kiln_function *f, const kiln_pass_options *o,
                                               uint32_t *changes);

/* Pattern recognition: chains of primitives that compute LayerNorm,
 * RMSNorm, Gelu (erf and tanh forms), Swish (x * sigmoid(x)) or Softmax
 * exactly become that one node, where o->supports_node (when set) accepts
 * it. A chain that starts like a norm but does not match is noted on
 * opts->log with the reason (docs/passes.md lists the forms). */
KILN_NODISCARD kiln_status kiln_pass_recognize(kiln_function *f, const kiln_pass_options *o,
                                               uint32_t *changes);

/* Elementwise fusion: trees of elementwise nodes (of the fused-body
 * language, kiln_fused_parse) whose members o->supports_fused(node,
 * KILN_NODE_FusedElementwise) accepts become FusedElementwise nodes that
 * o->supports_node accepts. Nothing happens without those hooks. */
KILN_NODISCARD kiln_status kiln_pass_fuse(kiln_function *f, const kiln_pass_options *o,
                                          uint32_t *changes);

/* Bias fusion: an Add of a per-column bias [N] (or of a tensor of the
 * product's shape) to the single use of a MatMul result with a 2-D B
 * becomes a Gemm with it as C on 2-D views (Reshape) of A and the result,
 * where o->supports_fused(MatMul node, KILN_NODE_Add) and then
 * o->supports_node(Gemm) accept it. */
KILN_NODISCARD kiln_status kiln_pass_fuse_bias(kiln_function *f, const kiln_pass_options *o,
                                               uint32_t *changes);

/* Channel-blocked layout (passes/layout.c, docs/passes.md): 2-D Convs
 * become BlockedConv nodes, and the channel-wise nodes around them
 * (elementwise, pools, global pools, Concat on channels) follow into the
 * blocked layout, where o->supports_node declares the blocked node; an
 * UnblockChannels stays only where a consumer needs the plain layout.
 * Nothing happens without that hook. */
KILN_NODISCARD kiln_status kiln_pass_layout(kiln_function *f, const kiln_pass_options *o,
                                            uint32_t *changes);
/* Activation fusion: a Relu / LeakyRelu / Sigmoid / Tanh / exact Gelu
 * applied to the single use of a Conv / MatMul / Gemm result (directly or
 * through a Reshape used once) becomes that node's
 * `activation` attribute (node_kinds.def), where o->supports_fused(node,
 * activation kind) and then o->supports_node(fused node) accept it. */
KILN_NODISCARD kiln_status kiln_pass_fuse_activation(kiln_function *f, const kiln_pass_options *o,
                                                     uint32_t *changes);

/* QDQ fusion: QuantizeLinear(Conv(DequantizeLinear(x), DequantizeLinear(w),
 * DequantizeLinear(int32 bias)?)) and QuantizeLinear(MatMul(
 * DequantizeLinear(a), DequantizeLinear(b))), a Relu allowed before the
 * Quantize, with constant weights, scales and zero points of the forms the
 * integer kinds take, become QLinearConv / QLinearMatMul, where
 * o->supports_node (when set) accepts them (docs/passes.md). */
KILN_NODISCARD kiln_status kiln_pass_fuse_qdq(kiln_function *f, const kiln_pass_options *o,
                                              uint32_t *changes);
/* The kinds whose result holds only values of their input 0, moved or
 * selected (MaxPool: a window's largest): they commute with any monotonic
 * map, so with Q(DQ(.)) of one scale and zero point. fuseqdq runs them on
 * integers between such a DQ and Q; a quantizer gives their result their
 * input's parameters. */
bool kiln_pass_qdq_passes_through(kiln_node_kind k);

/* Lowering: rewrite every node the backend (o->supports_node, else the
 * primitive set) does not run, by its rule, repeatedly, until every node is
 * run natively. A node with neither is an error naming the node, its kind,
 * its input types and the backend. */
KILN_NODISCARD kiln_status kiln_pass_lower(kiln_function *f, const kiln_pass_options *o,
                                           uint32_t *changes);
/* Is this node in the primitive set (docs/passes.md)? */
bool kiln_pass_node_is_primitive(const kiln_node *n);
/* Does kind k have a lowering rule? */
bool kiln_pass_has_lowering(kiln_node_kind k);

/* ------------------------------------------------------------------------
 * Memory planning on the instruction IR. */
KILN_NODISCARD kiln_status kiln_pass_copy_elim(kiln_ir *ir, const kiln_pass_options *o,
                                               uint32_t *changes);
KILN_NODISCARD kiln_status kiln_pass_inplace(kiln_ir *ir, const kiln_pass_options *o,
                                             uint32_t *changes);
/* Concat elimination: a Concat's inputs that die there and fill aligned
 * contiguous ranges of its result become views of those ranges, so their
 * producers write the result in place and the Concat is removed. */
KILN_NODISCARD kiln_status kiln_pass_concat_elim(kiln_ir *ir, const kiln_pass_options *o,
                                                 uint32_t *changes);
/* Allocs as late and deallocs as early as possible. */
KILN_NODISCARD kiln_status kiln_pass_shrink_lifetimes(kiln_ir *ir, const kiln_pass_options *o,
                                                      uint32_t *changes);

typedef struct kiln_mem_plan_report {
  uint64_t peak_bytes;   /* arena size chosen */
  uint64_t lower_bound;  /* max over points of the aligned live bytes */
  const char *heuristic; /* static name of the winner */
  uint32_t activations;
} kiln_mem_plan_report;

/* Static plan: every activation at a 64-byte aligned offset in one arena;
 * sets kiln_buffer_set_offset and kiln_ir_set_activation_bytes. report may
 * be NULL. */
KILN_NODISCARD kiln_status kiln_pass_plan_memory(kiln_ir *ir, kiln_mem_plan_report *report);
/* The lower bound of any plan of ir: the most (64-byte aligned) activation
 * bytes alive at one instruction. */
KILN_NODISCARD kiln_status kiln_pass_plan_lower_bound(const kiln_ir *ir, uint64_t *out);
/* Brute force: no two activations whose lifetimes overlap share a byte,
 * every offset is 64-aligned and inside the arena. Names the two buffers. */
KILN_NODISCARD kiln_status kiln_pass_validate_plan(const kiln_ir *ir);

/* Attention fusion: Softmax(scale(Q · Kᵀ) [+ mask | Where(mask, ., fill)])
 * · V on [B, H, S, D] operands becomes one ScaledDotProductAttention node
 * reading Q, K, V through the Transposes and Reshapes of the head split,
 * with a Transpose that is the product's only use as its out_perm, where
 * o->supports_node (when set) accepts it. A MatMul of a Softmax that does
 * not match is noted on opts->log with the reason (docs/passes.md). */
KILN_NODISCARD kiln_status kiln_pass_fuse_attention(kiln_function *f, const kiln_pass_options *o,
                                                    uint32_t *changes);

#ifdef __cplusplus
}
#endif
#endif
