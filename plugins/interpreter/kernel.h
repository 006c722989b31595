/* plugins/interpreter/kernel.h: private shorthands for D1's kernel files
 * (argument checks and error messages), so every kernel reports a bad call
 * the same way. Not part of the kernel interface (interp.h). */
#ifndef KILN_INTERP_KERNEL_H
#define KILN_INTERP_KERNEL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"

/* Defines a kernel's signature. */
#define INTERP_KERNEL(name)                                                                        \
  kiln_status interp_##name(const kiln_attrs *attrs, interp_tensor *outs, uint32_t n_outs,         \
                            const interp_tensor *ins, uint32_t n_ins)

/* Fail unless at least `no` results and `ni` inputs are present. */
#define INTERP_ARITY(name, no, ni)                                                                 \
  do {                                                                                             \
    if (n_outs < (no) || n_ins < (ni))                                                             \
      return kiln_status_make(KILN_INVALID_ARGUMENT,                                               \
                              "interpreter %s: expected %u result(s) and %u input(s), got "        \
                              "%u and %u",                                                         \
                              #name, (unsigned)(no), (unsigned)(ni), n_outs, n_ins);               \
    for (uint32_t k_ = 0; k_ < (ni); k_++)                                                         \
      if (!ins[k_].data && interp_numel(&ins[k_]) > 0)                                             \
        return kiln_status_make(KILN_INVALID_ARGUMENT, "interpreter %s: input %u is absent",       \
                                #name, k_);                                                        \
  } while (0)

/* An UNIMPLEMENTED status naming the kernel and the element type. */
kiln_status interp_bad_elem(const char *kernel, const char *what, kiln_elem e);
/* A zeroed scratch array of n elements of `size` bytes (n may be 0). */
kiln_status interp_scratch(const char *kernel, int64_t n, size_t size, void **out);
/* The input's optional tensor: NULL when absent or past n_ins. */
const interp_tensor *interp_opt(const interp_tensor *ins, uint32_t n_ins, uint32_t i);

#endif
