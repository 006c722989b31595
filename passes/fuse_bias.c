/* passes/fuse_bias.c: bias fusion. An Add of a per-column bias [N] (or of a
 * tensor of the product's own shape, a residual) to the only use of a
 * MatMul result y = A[..., M, K] x B[K, N] becomes a Gemm with that operand
 * as C, on [M', K] x [K, N] views of A and Y (Reshape is a view after
 * IRGen: nothing is copied). A GEMM adds C in its epilogue while the tile
 * is still in registers, so the Add's pass over the result goes away;
 * torch writes every Linear on a 3-D input as MatMul + Add. Likewise an Add
 * of a tensor of exactly a Conv result's type to the only use of that
 * result (a residual connection: ResNet, MobileNetV2, EfficientNet blocks)
 * becomes the Conv's fourth input, which the backend adds in the Conv's
 * epilogue before any activation (the fuseact pass, which runs after this
 * one, can then still fuse the Relu that follows). Only where the backend
 * says so: o->supports_fused(MatMul or Conv, KILN_NODE_Add), then
 * o->supports_node on the Gemm or Conv. Without the hook nothing changes. */
#include <stdlib.h>

#include "pass_util.h"

/* The Add's other operand as Gemm's C: [N] for a bias that varies along
 * the last axis only, [M', N] for one of y's own type; NULL otherwise. */
static kiln_status fb_operand_c(kiln_function *f, kiln_node *add, kiln_value *c,
                                const kiln_type *yt, int64_t rows, kiln_value **out) {
  *out = NULL;
  const kiln_type *ct = kiln_value_type(c);
  int64_t n = yt->dims[yt->rank - 1];
  int64_t dims[2];
  uint32_t rank;
  if (kiln_type_equal(ct, yt)) {
    dims[0] = rows;
    dims[1] = n;
    rank = 2;
  } else {
    if (ct->elem != yt->elem || ct->quantized || ct->rank == 0 || ct->rank > yt->rank ||
        ct->dims[ct->rank - 1] != n || kiln_type_numel(ct) != n)
      return NULL;
    dims[0] = n;
    rank = 1;
  }
  if (ct->rank == rank && ct->dims[0] == dims[0]) {
    *out = c;
    return NULL;
  }
  kiln_attr_desc shape = KILN_ATTR_IS("shape", dims, rank);
  return kiln_pass_emit(f, add, KILN_NODE_Reshape, &c, 1, &shape, 1, out);
}

/* Add(y, z) or Add(z, y) with y the only use of Conv cv's result and z of
 * y's exact type (no broadcasting): Conv(x, w, b, z) in the Add's place. */
static kiln_status fb_conv(kiln_function *f, kiln_node *add, const kiln_pass_options *o,
                           bool *done) {
  for (uint32_t i = 0; i < 2; i++) {
    kiln_value *y = kiln_node_input(add, i), *z = kiln_node_input(add, 1 - i);
    kiln_node *cv = y ? kiln_value_producer(y, NULL) : NULL;
    if (!cv || kiln_node_get_kind(cv) != KILN_NODE_Conv || kiln_value_use_count(y) != 1 || z == y ||
        kiln_node_input_count(cv) > 3 || kiln_attrs_find(kiln_node_attrs(cv), "activation") ||
        !kiln_type_equal(kiln_value_type(z), kiln_value_type(y)) ||
        !kiln_type_equal(kiln_value_type(kiln_node_result(add, 0)), kiln_value_type(y)) ||
        !o->supports_fused(o->backend_user, cv, KILN_NODE_Add))
      continue;
    kiln_attr_desc *d = NULL;
    uint32_t nd = 0;
    KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(cv), 0, &d, &nd));
    kiln_value *ins[4] = {kiln_node_input(cv, 0), kiln_node_input(cv, 1),
                          kiln_node_input_count(cv) > 2 ? kiln_node_input(cv, 2) : NULL, z};
    kiln_value *r = NULL;
    char nm[256];
    kiln_status s = kiln_pass_emit_named(f, add, kiln_pass_merged_name(cv, 1, nm, sizeof nm),
                                         KILN_NODE_Conv, ins, 4, d, nd, &r);
    free(d);
    KILN_TRY(s);
    kiln_node *rn = kiln_value_producer(r, NULL);
    if (o->supports_node && !o->supports_node(o->backend_user, rn)) {
      KILN_TRY(kiln_function_remove_node(f, rn));
      continue;
    }
    KILN_TRY(kiln_pass_replace_node(f, add, &r));
    /* cv comes before add in the snapshot and was visited already */
    KILN_TRY(kiln_function_remove_node(f, cv));
    *done = true;
    return NULL;
  }
  return NULL;
}

static kiln_status fb_node(kiln_function *f, kiln_node *add, const kiln_pass_options *o,
                           bool *done) {
  if (kiln_node_get_kind(add) != KILN_NODE_Add || kiln_node_input_count(add) != 2)
    return NULL;
  KILN_TRY(fb_conv(f, add, o, done));
  if (*done)
    return NULL;
  for (uint32_t i = 0; i < 2; i++) {
    kiln_value *y = kiln_node_input(add, i), *c = kiln_node_input(add, 1 - i);
    kiln_node *mm = y ? kiln_value_producer(y, NULL) : NULL;
    if (!mm || kiln_node_get_kind(mm) != KILN_NODE_MatMul || kiln_value_use_count(y) != 1 ||
        c == y || kiln_attrs_find(kiln_node_attrs(mm), "activation"))
      continue;
    kiln_value *a = kiln_node_input(mm, 0), *b = kiln_node_input(mm, 1);
    const kiln_type *at = kiln_value_type(a), *bt = kiln_value_type(b),
                    *yt = kiln_value_type(y);
    if (at->rank < 2 || bt->rank != 2 ||
        !kiln_type_equal(kiln_value_type(kiln_node_result(add, 0)), yt) ||
        !o->supports_fused(o->backend_user, mm, KILN_NODE_Add))
      continue;
    int64_t k = at->dims[at->rank - 1], rows = kiln_type_numel(at) / (k ? k : 1);
    if (k == 0 || rows == 0)
      continue;
    kiln_value *cv = NULL, *a2 = a, *g = NULL, *r = NULL;
    KILN_TRY(fb_operand_c(f, add, c, yt, rows, &cv));
    if (!cv)
      continue;
    if (at->rank != 2) {
      int64_t ad[2] = {rows, k};
      kiln_attr_desc shape = KILN_ATTR_IS("shape", ad, 2);
      KILN_TRY(kiln_pass_emit(f, add, KILN_NODE_Reshape, &a, 1, &shape, 1, &a2));
    }
    kiln_value *ins[3] = {a2, b, cv};
    char nm[256];
    KILN_TRY(kiln_pass_emit_named(f, add, kiln_pass_merged_name(mm, 1, nm, sizeof nm),
                                  KILN_NODE_Gemm, ins, 3, NULL, 0, &g));
    kiln_node *gn = kiln_value_producer(g, NULL);
    if (o->supports_node && !o->supports_node(o->backend_user, gn)) {
      /* the views made for it are dead: dce takes them */
      KILN_TRY(kiln_function_remove_node(f, gn));
      continue;
    }
    r = g;
    if (yt->rank != 2) {
      kiln_attr_desc shape = KILN_ATTR_IS("shape", yt->dims, yt->rank);
      KILN_TRY(kiln_pass_emit(f, add, KILN_NODE_Reshape, &g, 1, &shape, 1, &r));
    }
    KILN_TRY(kiln_pass_replace_node(f, add, &r));
    /* mm comes before add in the snapshot and was visited already */
    KILN_TRY(kiln_function_remove_node(f, mm));
    *done = true;
    return NULL;
  }
  return NULL;
}

kiln_status kiln_pass_fuse_bias(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  if (!o || !o->supports_fused)
    return NULL;
  return kiln_pass_each_node(f, o, fb_node, changes);
}
