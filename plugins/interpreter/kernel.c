/* plugins/interpreter/kernel.c: the private helpers of kernel.h (error
 * messages and scratch memory shared by D1's kernel files). */
#include "kernel.h"

kiln_status interp_bad_elem(const char *kernel, const char *what, kiln_elem e) {
  return kiln_status_make(KILN_UNIMPLEMENTED,
                          "interpreter %s: %s of element type %s is not supported", kernel, what,
                          kiln_elem_name(e));
}

kiln_status interp_scratch(const char *kernel, int64_t n, size_t size, void **out) {
  *out = calloc(n > 0 ? (size_t)n : 1, size);
  if (!*out)
    return kiln_status_make(KILN_OUT_OF_MEMORY,
                            "interpreter %s: no memory for %lld scratch elements", kernel,
                            (long long)n);
  return NULL;
}

const interp_tensor *interp_opt(const interp_tensor *ins, uint32_t n_ins, uint32_t i) {
  return i < n_ins && ins[i].data ? &ins[i] : NULL;
}
