/* passes/registry.c: every pass by name and level. Adding a pass is one row
 * here plus its file (docs/passes.md). */
#include "registry.h"

#include <string.h>

static kiln_status plan_pass(kiln_ir *ir, const kiln_pass_options *o, uint32_t *changes) {
  (void)o;
  kiln_mem_plan_report r;
  KILN_TRY(kiln_pass_plan_memory(ir, &r));
  if (changes)
    *changes += r.activations;
  return NULL;
}

static const kiln_pass_entry table[] = {
    {{"dce", KILN_PASS_GRAPH, "remove nodes whose results are unused"}, kiln_pass_dce, NULL},
    {{"cse", KILN_PASS_GRAPH, "merge nodes of the same kind, inputs and attributes"},
     kiln_pass_cse,
     NULL},
    {{"fold", KILN_PASS_GRAPH, "replace nodes whose inputs are constants by constants"},
     kiln_pass_fold,
     NULL},
    {{"simplify", KILN_PASS_GRAPH,
      "algebraic identities, transpose/reshape chains, Identity/Dropout removal, Einsum "
      "matrix products as MatMul"},
     kiln_pass_simplify,
     NULL},
    {{"sink", KILN_PASS_GRAPH, "move transposes and reshapes below elementwise unary nodes"},
     kiln_pass_sink,
     NULL},
    {{"bnfold", KILN_PASS_GRAPH, "fold BatchNormalization into a preceding Conv or MatMul+Add"},
     kiln_pass_fold_bn,
     NULL},
    {{"convtrim", KILN_PASS_GRAPH,
      "drop the Conv filter taps that read only padding (dilated layers on small maps)"},
     kiln_pass_trim_conv,
     NULL},
    {{"recognize", KILN_PASS_GRAPH,
      "rebuild LayerNorm/RMSNorm/Gelu/Swish/Softmax from the primitive chains exporters write"},
     kiln_pass_recognize,
     NULL},
    {{"fuseqdq", KILN_PASS_GRAPH,
      "turn DequantizeLinear -> Conv/MatMul -> QuantizeLinear into QLinearConv/QLinearMatMul, "
      "where the backend declares it"},
     kiln_pass_fuse_qdq,
     NULL},
    {{"fuseattn", KILN_PASS_GRAPH,
      "rebuild scaled dot-product attention (MatMul, Softmax, MatMul) as one node, head "
      "split and merge transposes absorbed, where the backend declares it"},
     kiln_pass_fuse_attention,
     NULL},
    {{"fuse", KILN_PASS_GRAPH,
      "elementwise trees into FusedElementwise nodes, where the backend declares it"},
     kiln_pass_fuse,
     NULL},
    {{"fusebias", KILN_PASS_GRAPH,
      "fold a bias or residual Add into the MatMul before it (as a Gemm), where the backend "
      "declares it"},
     kiln_pass_fuse_bias,
     NULL},
    {{"fuseact", KILN_PASS_GRAPH,
      "fold Relu/LeakyRelu/Sigmoid/Tanh into a preceding Conv/MatMul/Gemm, where the backend "
      "declares it"},
     kiln_pass_fuse_activation,
     NULL},
    {{"layout", KILN_PASS_GRAPH,
      "move convolution regions into the channel-blocked layout, where the backend declares "
      "it"},
     kiln_pass_layout,
     NULL},
    {{"lower", KILN_PASS_GRAPH, "rewrite nodes the backend does not run into primitives"},
     kiln_pass_lower,
     NULL},
    {{"copyelim", KILN_PASS_INSTR, "rename copies whose source dies at the copy"},
     NULL,
     kiln_pass_copy_elim},
    {{"inplace", KILN_PASS_INSTR, "write elementwise results into a dying input's buffer"},
     NULL,
     kiln_pass_inplace},
    {{"concatelim", KILN_PASS_INSTR,
      "inputs of a Concat that die there become views of its result, so their producers "
      "write it in place"},
     NULL,
     kiln_pass_concat_elim},
    {{"shrink", KILN_PASS_INSTR, "allocs as late and deallocs as early as possible"},
     NULL,
     kiln_pass_shrink_lifetimes},
    {{"plan", KILN_PASS_INSTR, "static memory plan: activation offsets in one arena"},
     NULL,
     plan_pass},
};

#define TABLE_N (sizeof table / sizeof table[0])

const kiln_pass_entry *kiln_pass_find(const char *name, size_t len) {
  for (size_t i = 0; i < TABLE_N; i++)
    if (strlen(table[i].info.name) == len && strncmp(table[i].info.name, name, len) == 0)
      return &table[i];
  return NULL;
}

int kiln_pass_entry_index(const kiln_pass_entry *e) {
  if (e < table || e >= table + TABLE_N)
    return -1;
  return (int)(e - table);
}

uint32_t kiln_pass_count(void) {
  return (uint32_t)TABLE_N;
}

const kiln_pass_info *kiln_pass_get_info(uint32_t i) {
  return i < TABLE_N ? &table[i].info : NULL;
}
