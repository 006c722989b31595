/* tests/infer/harness.h: a compact way to state inference cases. Types are
 * written as text ("f32[2,3]", "_" = absent input), expected results as the
 * space-separated text of the result types. Each case records its kind so
 * that the coverage test can demand a valid and an invalid case per kind. */
#ifndef TESTS_INFER_HARNESS_H
#define TESTS_INFER_HARNESS_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include "kiln/ir.h"

extern bool infer_ok_seen[KILN_NODE_KIND_COUNT];
extern bool infer_err_seen[KILN_NODE_KIND_COUNT];

/* Run kind on `ins` with attrs; assert success and that the results print
 * as `want`. n_results 0 = default. */
void infer_ok(kiln_node_kind kind, const char *ins, const kiln_attr_desc *attrs, uint32_t n_attrs,
              uint32_t n_results, const char *want, int line);
/* Run kind; assert failure with `code` and a message containing `frag`. */
void infer_err(kiln_node_kind kind, const char *ins, const kiln_attr_desc *attrs, uint32_t n_attrs,
               uint32_t n_results, kiln_code code, const char *frag, int line);
/* Parse "f32[2,3] _ i64[]" into types / pointers (NULL for "_"). */
uint32_t infer_parse_types(const char *s, kiln_type *types, const kiln_type **ptrs);

/* The leading empty desc lets the attribute list be empty. */
#define OKN(kind, ins, nres, want, ...)                                                            \
  do {                                                                                             \
    kiln_attr_desc a_[] = {{.name = NULL}, __VA_ARGS__};                                           \
    infer_ok(KILN_NODE_##kind, ins, a_ + 1, (uint32_t)(sizeof a_ / sizeof a_[0]) - 1, nres, want,  \
             __LINE__);                                                                            \
  } while (0)
#define OK(kind, ins, want, ...) OKN(kind, ins, 0, want, __VA_ARGS__)
#define ERRN(kind, ins, nres, code, frag, ...)                                                     \
  do {                                                                                             \
    kiln_attr_desc a_[] = {{.name = NULL}, __VA_ARGS__};                                           \
    infer_err(KILN_NODE_##kind, ins, a_ + 1, (uint32_t)(sizeof a_ / sizeof a_[0]) - 1, nres, code, \
              frag, __LINE__);                                                                     \
  } while (0)
#define ERR(kind, ins, frag, ...) ERRN(kind, ins, 0, KILN_INVALID_ARGUMENT, frag, __VA_ARGS__)

#define LIST(...) ((const int64_t[]){__VA_ARGS__})
#define IS(name, ...)                                                                              \
  KILN_ATTR_IS(name, LIST(__VA_ARGS__), (uint32_t)(sizeof LIST(__VA_ARGS__) / sizeof(int64_t)))
#define FLIST(...) ((const double[]){__VA_ARGS__})
#define FS(name, ...)                                                                              \
  KILN_ATTR_FS(name, FLIST(__VA_ARGS__), (uint32_t)(sizeof FLIST(__VA_ARGS__) / sizeof(double)))

/* Case groups (one per file); each is also a Check test. */
void cases_elementwise(void);
void cases_reduce(void);
void cases_linalg(void);
void cases_movement(void);
void cases_other(void);

#endif
