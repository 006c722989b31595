/* passes/lower_rules.h: the lowering rule table (private to passes/). A
 * rule rewrites one node into simpler nodes inserted before it and returns
 * the values that replace its results. */
#ifndef KILN_PASS_LOWER_RULES_H
#define KILN_PASS_LOWER_RULES_H

#include "kiln/passes.h"

/* Builder state threaded through a rule: the first failure sticks and
 * every later helper call returns NULL, so rules read as straight-line
 * expressions and check ctx->s once at the end. */
typedef struct kiln_lower_ctx {
  kiln_function *f;
  kiln_node *n;   /* the node being lowered; new nodes go before it */
  kiln_elem elem; /* element type of scalar constants */
  kiln_status s;
} kiln_lower_ctx;

/* repl has room for the node's results; a rule fills each used one.
 * Returns false when the rule does not apply to this node (then the
 * node stays and, if the backend does not run it, lowering fails). */
typedef bool (*kiln_lower_rule)(kiln_lower_ctx *c, kiln_value **repl);

/* The rule for kind k, or NULL. */
kiln_lower_rule kiln_lower_rule_for(kiln_node_kind k);

#endif
