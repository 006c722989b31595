/* tools/graphgen.h: random valid graph modules and matching random inputs,
 * for differential testing of backends and for round-trip tests of the IR.
 *
 * A generated module has one function "main", 2 to 20 nodes (chains and
 * diamonds) drawn from the node table, module inputs and random constants.
 * Values stay finite and inside every operator's domain when the inputs come
 * from kiln_graphgen_inputs (floats in [-2, 2], signed integers in [-4, 4],
 * unsigned integers in [0, 4], bools 0/1): the generator tracks a value range
 * for every tensor and inserts a Clip before a node whose domain would be
 * left (Log, Sqrt, a divisor...), and drops nodes that could overflow. */
#ifndef KILN_TOOLS_GRAPHGEN_H
#define KILN_TOOLS_GRAPHGEN_H

#include <stdint.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Build graph number `index` of the family `seed`. The same (seed, index)
 * always gives the same module (identical text form). Caller owns *out
 * (kiln_module_destroy). */
KILN_NODISCARD kiln_status kiln_graphgen(uint64_t seed, uint32_t index, kiln_module **out);

/* Random data for every input of m, in kiln_module_input order, named after
 * the inputs. *out is an array of *n tensors allocated with malloc; release
 * it with kiln_graphgen_inputs_free (which calls kiln_tensor_free on each and
 * kiln_free on the array). *out is NULL when m has no inputs. */
KILN_NODISCARD kiln_status kiln_graphgen_inputs(const kiln_module *m, uint64_t seed,
                                                kiln_tensor **out, uint32_t *n);
void kiln_graphgen_inputs_free(kiln_tensor *t, uint32_t n);

#ifdef __cplusplus
}
#endif
#endif
