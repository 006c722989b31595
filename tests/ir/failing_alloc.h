/* tests/ir/failing_alloc.h: an allocator that fails its Nth allocation and
 * counts what is still live, for the out-of-memory walks. */
#ifndef KILN_TESTS_IR_FAILING_ALLOC_H
#define KILN_TESTS_IR_FAILING_ALLOC_H

#include <stdlib.h>

#include "kiln/ir.h"

typedef struct failing_alloc {
  long fail_at; /* 1-based index of the allocation that fails; 0 = never */
  long count;
  long live;
  size_t live_bytes;
  kiln_allocator a;
} failing_alloc;

static void *failing_alloc_fn(void *user, size_t size) {
  failing_alloc *f = user;
  if (++f->count == f->fail_at)
    return NULL;
  void *p = malloc(size);
  if (p) {
    f->live++;
    f->live_bytes += size;
  }
  return p;
}

static void failing_free_fn(void *user, void *p, size_t size) {
  failing_alloc *f = user;
  if (!p)
    return;
  f->live--;
  f->live_bytes -= size;
  free(p);
}

static inline void failing_alloc_init(failing_alloc *f, long fail_at) {
  f->fail_at = fail_at;
  f->count = 0;
  f->live = 0;
  f->live_bytes = 0;
  f->a.alloc = failing_alloc_fn;
  f->a.free = failing_free_fn;
  f->a.user = f;
}

/* Builds: inputs x, z; constant w; Add, Relu, Reshape, Conv-free chain of
 * 6 nodes; 2 outputs. Returns the first failure. */
static inline kiln_status failing_build(const kiln_allocator *al, kiln_module **out) {
  kiln_module *m;
  kiln_function *f;
  kiln_value *x, *z, *w;
  kiln_type t;
  int64_t d[] = {2, 3};
  float wd[6] = {1, -2, 3, -4, 5, -6};
  *out = NULL;
  KILN_TRY(kiln_type_make(KILN_F32, 2, d, &t));
  KILN_TRY(kiln_module_create(al, "oom", &m));
  *out = m;
  KILN_TRY(kiln_module_add_input(m, "x", &t, &x));
  KILN_TRY(kiln_module_add_input(m, "z", &t, &z));
  KILN_TRY(kiln_module_add_constant(m, "w", &t, wd, &w));
  KILN_TRY(kiln_module_add_function(m, "main", &f));
  kiln_node *n[6];
  kiln_value *xw[] = {x, w};
  KILN_TRY(kiln_function_add_node(f, KILN_NODE_Add, "add", xw, 2, NULL, 0, 0, &n[0]));
  kiln_value *v0 = kiln_node_result(n[0], 0);
  KILN_TRY(kiln_function_add_node(f, KILN_NODE_Relu, NULL, &v0, 1, NULL, 0, 0, &n[1]));
  kiln_value *v1 = kiln_node_result(n[1], 0);
  int64_t shape[] = {3, 2};
  kiln_attr_desc ra[] = {KILN_ATTR_IS("shape", shape, 2)};
  KILN_TRY(kiln_function_add_node(f, KILN_NODE_Reshape, "reshape", &v1, 1, ra, 1, 0, &n[2]));
  kiln_value *v2 = kiln_node_result(n[2], 0);
  kiln_attr_desc la[] = {KILN_ATTR_F("alpha", 0.25)};
  KILN_TRY(kiln_function_add_node(f, KILN_NODE_LeakyRelu, NULL, &v2, 1, la, 1, 0, &n[3]));
  kiln_value *v1z[] = {v1, z};
  KILN_TRY(kiln_function_add_node(f, KILN_NODE_Mul, "mul", v1z, 2, NULL, 0, 0, &n[4]));
  kiln_value *v4 = kiln_node_result(n[4], 0);
  KILN_TRY(kiln_function_add_node(f, KILN_NODE_Neg, NULL, &v4, 1, NULL, 0, 0, &n[5]));
  KILN_TRY(kiln_function_add_output(f, "y", kiln_node_result(n[3], 0)));
  KILN_TRY(kiln_function_add_output(f, "y2", kiln_node_result(n[5], 0)));
  return NULL;
}

#endif
