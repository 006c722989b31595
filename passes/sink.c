/* passes/sink.c: move Transpose and reshape-like nodes below elementwise
 * unary nodes: U(T(x)) -> T(U(x)). Elementwise ops commute with any data
 * movement, and moving the movement down brings transposes next to each
 * other (where simplify cancels them) and next to consumers that can absorb
 * them. Only fires when the movement node has no other user, so no work is
 * duplicated. */
#include <stdlib.h>

#include "pass_util.h"

static bool movable(kiln_node_kind k) {
  return k == KILN_NODE_Transpose || kiln_pass_is_reshape_like(k);
}

static kiln_status sink_node(kiln_function *f, kiln_node *n, bool *done) {
  *done = false;
  kiln_node_kind k = kiln_node_get_kind(n);
  const kiln_node_kind_info *ki = kiln_node_kind_get_info(k);
  if (!ki || !(ki->flags & KILN_NK_UNARY) || kiln_node_result_count(n) != 1)
    return NULL;
  kiln_value *tv = kiln_node_input(n, 0);
  kiln_node *t = kiln_value_producer(tv, NULL);
  if (!t || !movable(kiln_node_get_kind(t)) || kiln_value_use_count(tv) != 1)
    return NULL;
  kiln_value *x = kiln_node_input(t, 0), *u = NULL, *moved = NULL;
  kiln_attr_desc *ud, *td;
  uint32_t nu, nt;
  KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(n), 0, &ud, &nu));
  kiln_status s = kiln_pass_emit(f, n, k, &x, 1, ud, nu, &u);
  free(ud);
  KILN_TRY(s);
  KILN_TRY(kiln_pass_attrs_descs(kiln_node_attrs(t), 0, &td, &nt));
  s = kiln_pass_emit(f, n, kiln_node_get_kind(t), &u, 1, td, nt, &moved);
  free(td);
  KILN_TRY(s);
  KILN_TRY(kiln_pass_replace_node(f, n, &moved));
  KILN_TRY(kiln_function_remove_node(f, t));
  *done = true;
  return NULL;
}

/* sink_node with the node named in a failure. */
static kiln_status sink_one(kiln_function *f, kiln_node *n, const kiln_pass_options *o,
                            bool *done) {
  (void)o;
  kiln_status s = sink_node(f, n, done);
  if (s)
    s = kiln_status_wrap(s, "sink: node '%s' (%s)", kiln_node_name(n),
                         kiln_node_kind_name(kiln_node_get_kind(n)));
  return s;
}

kiln_status kiln_pass_sink(kiln_function *f, const kiln_pass_options *o, uint32_t *changes) {
  return kiln_pass_each_node(f, o, sink_one, changes);
}
