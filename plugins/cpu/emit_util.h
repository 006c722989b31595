/* plugins/cpu/emit_util.h: helpers shared by the per-kind emitters
 * (emit_*.c): operand access, messages naming the instruction,
 * kernel calls with constant arguments, shape arithmetic. Private to the
 * cpu plugin. */
#ifndef KCPU_EMIT_UTIL_H
#define KCPU_EMIT_UTIL_H

#include "emit.h"

/* Input i of a node / instruction (NULL when absent) and their types. */
const kiln_type *kcpu_n_in(const kiln_node *n, uint32_t i);
const kiln_type *kcpu_n_out(const kiln_node *n, uint32_t i);
uint32_t kcpu_n_inputs(const kiln_node *n);
const kiln_buffer *kcpu_i_in(const kiln_instr *in, uint32_t i);
const kiln_buffer *kcpu_i_out(const kiln_instr *in, uint32_t i);
uint32_t kcpu_i_inputs(const kiln_instr *in);
const kiln_type *kcpu_i_in_type(const kiln_instr *in, uint32_t i);
const kiln_type *kcpu_i_out_type(const kiln_instr *in, uint32_t i);

/* Every present input and result has element type `e` and no
 * quantization. */
bool kcpu_n_all_elem(const kiln_node *n, kiln_elem e);
/* No present input is quantized (the index and movement emitters take
 * any element type but no quantized tensor). */
bool kcpu_n_plain(const kiln_node *n);
/* A numeric element type (not bool); an index type (i32, i64); a present,
 * unquantized type. */
bool kcpu_e_numeric(kiln_elem e);
bool kcpu_e_index(kiln_elem e);
bool kcpu_e_plain(const kiln_type *t);

/* A failure naming the instruction's index and kind. */
kiln_status kcpu_e_fail(const kiln_instr *in, const char *fmt, ...) KILN_PRINTF(2, 3);

/* Address of a buffer, a null pointer for NULL. */
LLVMValueRef kcpu_e_ptr(kcpu_emit *e, const kiln_buffer *b);
LLVMValueRef kcpu_e_null(kcpu_emit *e);
/* Call kernel fn; wraps failures with the instruction. */
kiln_status kcpu_e_call(kcpu_emit *e, const kiln_instr *in, const char *fn, LLVMValueRef *args,
                        unsigned n);

/* The two trailing arguments of a kernel that checks index values: the
 * fault record and the instruction's index (as the site). Writes args[0],
 * args[1]; returns 2. */
unsigned kcpu_e_fault_args(kcpu_emit *e, const kiln_instr *in, LLVMValueRef *args);

/* Row-major element strides of t (KILN_MAX_RANK entries). */
void kcpu_e_strides(const kiln_type *t, int64_t *st);
/* Normalize a possibly negative axis; false when out of [−rank, rank). */
bool kcpu_e_axis(int64_t axis, uint32_t rank, int64_t *out);
int64_t kcpu_e_prod(const int64_t *dims, uint32_t from, uint32_t to);
/* An ints attribute: its entries and length (0 and NULL when absent). */
uint32_t kcpu_e_ints(const kiln_attrs *a, const char *name, const int64_t **out);

#endif
