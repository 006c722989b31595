/* plugins/cpu/emit_index.c: Gather, GatherElements, GatherND,
 * ScatterElements and ScatterND, any element type, as calls to
 * kernels/index.c. Every one passes the run's fault record, so an index
 * value out of range is a run-time status. GatherElements and GatherND run
 * natively rather than through the core's lowering to a flat Gather, which
 * would check only the flattened offset, not each index against its own
 * dimension. */
#include "emit_util.h"

#include <string.h>

static int64_t kcpu_esize(const kiln_type *t) {
  return (int64_t)kiln_elem_size(t->elem);
}

bool kcpu_supports_Gather(const kiln_node *n) {
  const kiln_type *i = kcpu_n_in(n, 1);
  return kcpu_n_plain(n) && i && (i->elem == KILN_I32 || i->elem == KILN_I64);
}
kiln_status kcpu_emit_Gather(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *x = kcpu_i_in_type(in, 0), *ix = kcpu_i_in_type(in, 1);
  int64_t ax;
  if (!kcpu_e_axis(kiln_attrs_int_or(kiln_instr_attrs(in), "axis", 0), x->rank, &ax))
    return kcpu_e_fail(in, "axis out of range");
  LLVMValueRef args[] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_i64(e, ix->elem == KILN_I32),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, kcpu_e_prod(x->dims, 0, (uint32_t)ax)),
                         kcpu_i64(e, x->dims[ax]),
                         kcpu_i64(e, kcpu_e_prod(x->dims, (uint32_t)ax + 1, x->rank)),
                         kcpu_i64(e, kiln_type_numel(ix)),
                         kcpu_i64(e, kcpu_esize(x)),
                         NULL,
                         NULL};
  kcpu_e_fault_args(e, in, args + 9);
  return kcpu_e_call(e, in, "kcpu_k_gather", args, 11);
}

bool kcpu_supports_GatherElements(const kiln_node *n) {
  const kiln_type *d = kcpu_n_in(n, 0), *i = kcpu_n_in(n, 1);
  int64_t ax;
  if (!kcpu_n_plain(n) || !d || !i || !kcpu_e_index(i->elem) || i->rank != d->rank ||
      d->rank < 1 || !kcpu_e_axis(kiln_attrs_int_or(kiln_node_attrs(n), "axis", 0), d->rank, &ax))
    return false;
  for (uint32_t k = 0; k < d->rank; k++)
    if (k != ax && i->dims[k] > d->dims[k])
      return false;
  return true;
}
kiln_status kcpu_emit_GatherElements(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *d = kcpu_i_in_type(in, 0), *i = kcpu_i_in_type(in, 1);
  int64_t ax;
  if (!kcpu_e_axis(kiln_attrs_int_or(kiln_instr_attrs(in), "axis", 0), d->rank, &ax) ||
      i->rank != d->rank)
    return kcpu_e_fail(in, "axis out of range, or indices of another rank than data");
  for (uint32_t k = 0; k < d->rank; k++)
    if (k != ax && i->dims[k] > d->dims[k])
      return kcpu_e_fail(in, "indices dimension %u is %lld, data's only %lld", k,
                         (long long)i->dims[k], (long long)d->dims[k]);
  LLVMValueRef args[11] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           kcpu_i64(e, i->elem),
                           kcpu_addr(e, kcpu_i_in(in, 1)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, d->rank),
                           kcpu_i64_array(e, d->dims, d->rank),
                           kcpu_i64_array(e, i->dims, i->rank),
                           kcpu_i64(e, ax),
                           kcpu_i64(e, kcpu_esize(d))};
  kcpu_e_fault_args(e, in, args + 9);
  return kcpu_e_call(e, in, "kcpu_k_gather_elements", args, 11);
}

/* GatherND: indices [b..., tuple..., k] address slices of data past its
 * first batch_dims + k dimensions. */
static bool kcpu_gather_nd_ok(const kiln_type *d, const kiln_type *i, int64_t bd) {
  if (!d || !i || i->rank < 1 || bd < 0 || bd >= (int64_t)i->rank || bd > (int64_t)d->rank)
    return false;
  int64_t k = i->dims[i->rank - 1];
  if (k < 1 || bd + k > (int64_t)d->rank)
    return false;
  for (int64_t b = 0; b < bd; b++)
    if (i->dims[b] != d->dims[b])
      return false;
  return true;
}
bool kcpu_supports_GatherND(const kiln_node *n) {
  const kiln_type *d = kcpu_n_in(n, 0), *i = kcpu_n_in(n, 1);
  return kcpu_n_plain(n) && i && kcpu_e_index(i->elem) &&
         kcpu_gather_nd_ok(d, i, kiln_attrs_int_or(kiln_node_attrs(n), "batch_dims", 0));
}
kiln_status kcpu_emit_GatherND(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *d = kcpu_i_in_type(in, 0), *i = kcpu_i_in_type(in, 1);
  int64_t bd = kiln_attrs_int_or(kiln_instr_attrs(in), "batch_dims", 0);
  if (!kcpu_gather_nd_ok(d, i, bd))
    return kcpu_e_fail(in, "batch_dims or index depth do not fit the data");
  int64_t k = i->dims[i->rank - 1];
  LLVMValueRef args[13] = {kcpu_addr(e, kcpu_i_in(in, 0)),
                           kcpu_i64(e, i->elem),
                           kcpu_addr(e, kcpu_i_in(in, 1)),
                           kcpu_addr(e, kcpu_i_out(in, 0)),
                           kcpu_i64(e, d->rank),
                           kcpu_i64_array(e, d->dims, d->rank),
                           kcpu_i64(e, bd),
                           kcpu_i64(e, k),
                           kcpu_i64(e, kcpu_e_prod(i->dims, 0, i->rank - 1)),
                           kcpu_i64(e, kcpu_e_prod(i->dims, (uint32_t)bd, i->rank - 1)),
                           kcpu_i64(e, kcpu_esize(d))};
  kcpu_e_fault_args(e, in, args + 11);
  return kcpu_e_call(e, in, "kcpu_k_gather_nd", args, 13);
}

/* ---- ScatterElements, ScatterND ---- */
static int kcpu_scatter_red(const kiln_attrs *a) {
  const char *r = kiln_attrs_string_or(a, "reduction", "none");
  return !strcmp(r, "none")  ? 0
         : !strcmp(r, "add") ? 1
         : !strcmp(r, "mul") ? 2
         : !strcmp(r, "max") ? 3
         : !strcmp(r, "min") ? 4
                             : -1;
}

static bool kcpu_scatter_ok(const kiln_node *n) {
  const kiln_type *d = kcpu_n_in(n, 0), *i = kcpu_n_in(n, 1), *u = kcpu_n_in(n, 2),
                  *y = kcpu_n_out(n, 0);
  int red = kcpu_scatter_red(kiln_node_attrs(n));
  return kcpu_e_plain(d) && kcpu_e_plain(i) && kcpu_e_plain(u) && kcpu_e_plain(y) &&
         kcpu_e_index(i->elem) && u->elem == d->elem && y->elem == d->elem && red >= 0 &&
         (red == 0 || kcpu_e_numeric(d->elem)) && d->rank <= 16;
}

bool kcpu_supports_ScatterElements(const kiln_node *n) {
  const kiln_type *d = kcpu_n_in(n, 0), *i = kcpu_n_in(n, 1);
  int64_t axis;
  return kcpu_scatter_ok(n) && i->rank == d->rank && d->rank >= 1 &&
         kcpu_e_axis(kiln_attrs_int_or(kiln_node_attrs(n), "axis", 0), d->rank, &axis);
}

kiln_status kcpu_emit_ScatterElements(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *d = kcpu_i_in_type(in, 0), *i = kcpu_i_in_type(in, 1);
  const kiln_attrs *a = kiln_instr_attrs(in);
  int64_t axis;
  if (!kcpu_e_axis(kiln_attrs_int_or(a, "axis", 0), d->rank, &axis))
    return kcpu_e_fail(in, "axis out of range");
  LLVMValueRef args[] = {kcpu_i64(e, d->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_i64(e, i->elem),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_addr(e, kcpu_i_in(in, 2)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, d->rank),
                         kcpu_i64_array(e, d->dims, d->rank),
                         kcpu_i64_array(e, i->dims, i->rank),
                         kcpu_i64(e, axis),
                         kcpu_i64(e, kcpu_scatter_red(a)),
                         NULL,
                         NULL};
  kcpu_e_fault_args(e, in, args + 11);
  return kcpu_e_call(e, in, "kcpu_k_scatter_elements", args, 13);
}

bool kcpu_supports_ScatterND(const kiln_node *n) {
  const kiln_type *d = kcpu_n_in(n, 0), *i = kcpu_n_in(n, 1);
  return kcpu_scatter_ok(n) && i->rank >= 1 && d->rank >= 1 &&
         i->dims[i->rank - 1] <= (int64_t)d->rank;
}

kiln_status kcpu_emit_ScatterND(kcpu_emit *e, const kiln_instr *in) {
  const kiln_type *d = kcpu_i_in_type(in, 0), *i = kcpu_i_in_type(in, 1);
  int64_t k = i->dims[i->rank - 1];
  LLVMValueRef args[] = {kcpu_i64(e, d->elem),
                         kcpu_addr(e, kcpu_i_in(in, 0)),
                         kcpu_i64(e, i->elem),
                         kcpu_addr(e, kcpu_i_in(in, 1)),
                         kcpu_addr(e, kcpu_i_in(in, 2)),
                         kcpu_addr(e, kcpu_i_out(in, 0)),
                         kcpu_i64(e, d->rank),
                         kcpu_i64_array(e, d->dims, d->rank),
                         kcpu_i64(e, kcpu_e_prod(i->dims, 0, i->rank - 1)),
                         kcpu_i64(e, k),
                         kcpu_i64(e, kcpu_scatter_red(kiln_instr_attrs(in))),
                         NULL,
                         NULL};
  kcpu_e_fault_args(e, in, args + 11);
  return kcpu_e_call(e, in, "kcpu_k_scatter_nd", args, 13);
}
