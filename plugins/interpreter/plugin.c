/* plugins/interpreter/plugin.c: the interpreter backend's plugin entry.
 * compile resolves every buffer to (root memory, byte offset) and every
 * instruction to its kernel once; run allocates a fresh activation arena
 * (so concurrent runs never share one) and walks the instruction list.
 * Compiled for profiling, run times each step on the calling thread and
 * keeps the last run's events for the profile hook. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kiln/plugin.h>

#include "interp.h"

/* Where a buffer's bytes live: a root (weight, input, output, arena) plus
 * a byte offset, views already folded into their base. */
typedef struct interp_loc {
  kiln_buffer_kind root;
  uint32_t io_index;
  uint64_t offset;
  const void *weight;
} interp_loc;

typedef struct interp_step {
  kiln_instr_kind kind;
  uint32_t index;
  const char *result; /* name of the first result buffer, for messages */
  interp_kernel_fn kernel; /* compute instructions only */
  const kiln_attrs *attrs;
  uint32_t n_ops, n_results;
  uint32_t *ops; /* buffer ids; UINT32_MAX = absent */
  const kiln_type **types;
} interp_step;

typedef struct interp_exec {
  const kiln_ir *ir;
  uint32_t n_buffers, n_steps, max_ops;
  interp_loc *locs;
  interp_step *steps;
  uint64_t arena_bytes;
  bool profiling;
  pthread_mutex_t lock;         /* guards last_events */
  kiln_profile_event *last_events; /* the last run's, for interp_profile */
  uint32_t last_count;
  kiln_profile_event *given; /* what interp_profile handed out */
} interp_exec;

#define ABSENT UINT32_MAX

static bool interp_supports_node(void *state, const kiln_node *node) {
  (void)state;
  kiln_node_kind kind = kiln_node_get_kind(node);
  if (!interp_kernel_for(kind))
    return false;
  /* The reference runs models in the plain layout (so the layout pass
   * leaves them alone); its kernels of the blocked kinds serve the tests
   * and constant folding. */
  if (kind == KILN_NODE_BlockChannels || kind == KILN_NODE_UnblockChannels ||
      kind == KILN_NODE_BlockedConv)
    return false;
  for (uint32_t i = 0; i < kiln_node_input_count(node); i++) {
    const kiln_value *v = kiln_node_input(node, i);
    if (v && kiln_value_type(v)->quantized)
      return false; /* kernels compute on raw integers, not real values */
  }
  for (uint32_t i = 0; i < kiln_node_result_count(node); i++)
    if (kiln_value_type(kiln_node_result(node, i))->quantized)
      return false;
  const kiln_value *x = kiln_node_input_count(node) ? kiln_node_input(node, 0) : NULL;
  return !x || interp_elem_supported(kind, kiln_value_type(x)->elem);
}

static void interp_destroy(void *executable) {
  interp_exec *e = executable;
  if (!e)
    return;
  for (uint32_t i = 0; i < e->n_steps; i++) {
    free(e->steps[i].ops);
    free(e->steps[i].types);
  }
  free(e->steps);
  free(e->locs);
  free(e->last_events);
  free(e->given);
  pthread_mutex_destroy(&e->lock);
  free(e);
}

static kiln_status resolve_buffer(const kiln_ir *ir, kiln_buffer *b, interp_loc *loc) {
  uint64_t offset = 0;
  uint32_t hops = 0, n = kiln_ir_buffer_count(ir);
  const char *name = kiln_buffer_name(b);
  while (kiln_buffer_get_kind(b) == KILN_BUFFER_VIEW) {
    offset += kiln_buffer_offset(b);
    b = kiln_buffer_base(b);
    if (!b || ++hops > n)
      return kiln_status_make(
          KILN_VERIFY_ERROR, "interpreter: view %%%s has no base buffer or a cycle of views", name);
  }
  loc->root = kiln_buffer_get_kind(b);
  loc->io_index = kiln_buffer_io_index(b);
  loc->weight = kiln_buffer_data(b);
  loc->offset = offset + (loc->root == KILN_BUFFER_ACTIVATION ? kiln_buffer_offset(b) : 0);
  return NULL;
}

static kiln_status plan_step(const kiln_instr *in, interp_step *st) {
  st->kind = kiln_instr_get_kind(in);
  st->index = kiln_instr_index(in);
  st->attrs = kiln_instr_attrs(in);
  st->n_ops = kiln_instr_operand_count(in);
  int node = kiln_instr_kind_node(st->kind);
  if (node >= 0) {
    st->kernel = interp_kernel_for((kiln_node_kind)node);
    if (!st->kernel)
      return kiln_status_make(KILN_UNIMPLEMENTED, "interpreter: no kernel for %s (instruction %u)",
                              kiln_instr_kind_name(st->kind), st->index);
    st->n_results = kiln_instr_result_count(in);
  }
  st->result = st->n_ops && kiln_instr_operand(in, 0) ? kiln_buffer_name(kiln_instr_operand(in, 0))
                                                      : "?";
  st->ops = calloc(st->n_ops ? st->n_ops : 1, sizeof *st->ops);
  st->types = calloc(st->n_ops ? st->n_ops : 1, sizeof *st->types);
  if (!st->ops || !st->types)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "interpreter: no memory to plan instruction %u",
                            st->index);
  for (uint32_t k = 0; k < st->n_ops; k++) {
    const kiln_buffer *b = kiln_instr_operand(in, k);
    st->ops[k] = b ? kiln_buffer_id(b) : ABSENT;
    st->types[k] = b ? kiln_buffer_type(b) : NULL;
  }
  if (st->kind == KILN_INSTR_Copy &&
      (st->n_ops < 2 || st->ops[0] == ABSENT || st->ops[1] == ABSENT))
    return kiln_status_make(KILN_VERIFY_ERROR,
                            "interpreter: copy (instruction %u) needs 2 operands", st->index);
  return NULL;
}

static kiln_status interp_compile(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                                  void **out) {
  (void)state;
  *out = NULL;
  interp_exec *e = calloc(1, sizeof *e);
  if (!e)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "interpreter: no memory for an executable");
  pthread_mutex_init(&e->lock, NULL);
  e->profiling = opts && KILN_STRUCT_HAS(opts, kiln_compile_options, flags) &&
                 (opts->flags & KILN_COMPILE_PROFILE);
  e->ir = ir;
  e->n_buffers = kiln_ir_buffer_count(ir);
  e->n_steps = kiln_ir_instr_count(ir);
  e->arena_bytes = kiln_ir_activation_bytes(ir);
  e->locs = calloc(e->n_buffers ? e->n_buffers : 1, sizeof *e->locs);
  e->steps = calloc(e->n_steps ? e->n_steps : 1, sizeof *e->steps);
  kiln_status s = NULL;
  if (!e->locs || !e->steps)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "interpreter: no memory to plan IR %s",
                         kiln_ir_name(ir));
  for (uint32_t i = 0; !s && i < e->n_buffers; i++)
    s = resolve_buffer(ir, kiln_ir_buffer(ir, i), &e->locs[i]);
  for (uint32_t i = 0; !s && i < e->n_steps; i++) {
    s = plan_step(kiln_ir_instr(ir, i), &e->steps[i]);
    if (e->steps[i].n_ops > e->max_ops)
      e->max_ops = e->steps[i].n_ops;
  }
  if (s) {
    interp_destroy(e);
    return kiln_status_wrap(s, "interpreter: compiling %s", kiln_ir_name(ir));
  }
  *out = e;
  return NULL;
}

typedef struct interp_frame {
  const interp_exec *e;
  char *arena;
  const void *const *inputs;
  void *const *outputs;
} interp_frame;

static void *buffer_address(const interp_frame *f, uint32_t id) {
  const interp_loc *l = &f->e->locs[id];
  char *base;
  switch (l->root) {
  case KILN_BUFFER_WEIGHT:
    base = (char *)(uintptr_t)l->weight;
    break;
  case KILN_BUFFER_INPUT:
    base = (char *)(uintptr_t)f->inputs[l->io_index];
    break;
  case KILN_BUFFER_OUTPUT:
    base = f->outputs[l->io_index];
    break;
  default:
    base = f->arena;
    break;
  }
  return base ? base + l->offset : NULL;
}

static kiln_status run_step(const interp_frame *f, const interp_step *st, interp_tensor *ts) {
  switch (st->kind) {
  case KILN_INSTR_Alloc:
  case KILN_INSTR_Dealloc:
  case KILN_INSTR_View: /* views are resolved at compile time */
    return NULL;
  case KILN_INSTR_Copy: {
    int64_t bytes = kiln_type_bytes(st->types[0]);
    void *dst = buffer_address(f, st->ops[0]);
    const void *src = buffer_address(f, st->ops[1]);
    if (bytes > 0 && dst != src)
      memmove(dst, src, (size_t)bytes);
    return NULL;
  }
  default:
    break;
  }
  for (uint32_t k = 0; k < st->n_ops; k++) {
    if (st->ops[k] == ABSENT) {
      ts[k] = (interp_tensor){0};
      continue;
    }
    ts[k].data = buffer_address(f, st->ops[k]);
    ts[k].type = *st->types[k];
  }
  uint32_t nr = st->n_results <= st->n_ops ? st->n_results : st->n_ops;
  return st->kernel(st->attrs, ts, nr, ts + nr, st->n_ops - nr);
}

static uint64_t interp_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool interp_step_costs(const interp_step *st) {
  return st->kind != KILN_INSTR_Alloc && st->kind != KILN_INSTR_Dealloc &&
         st->kind != KILN_INSTR_View;
}

static kiln_status interp_run(void *executable, const void *const *inputs, void *const *outputs) {
  interp_exec *e = executable;
  interp_frame f = {.e = e, .inputs = inputs, .outputs = outputs};
  if (e->arena_bytes) {
    f.arena = aligned_alloc(64, (size_t)((e->arena_bytes + 63) & ~(uint64_t)63));
    if (!f.arena)
      return kiln_status_make(KILN_OUT_OF_MEMORY,
                              "interpreter: no memory for a %llu-byte activation arena",
                              (unsigned long long)e->arena_bytes);
  }
  interp_tensor *ts = calloc(e->max_ops ? e->max_ops : 1, sizeof *ts);
  kiln_status s =
      ts ? NULL : kiln_status_make(KILN_OUT_OF_MEMORY, "interpreter: no memory for operands");
  kiln_profile_event *ev = NULL;
  uint32_t n_ev = 0;
  uint64_t base = 0;
  if (!s && e->profiling) {
    ev = malloc((e->n_steps ? e->n_steps : 1) * sizeof *ev);
    if (!ev)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "interpreter: no memory for profile events");
    base = interp_now_ns();
  }
  for (uint32_t i = 0; !s && i < e->n_steps; i++) {
    bool timed = ev && interp_step_costs(&e->steps[i]);
    uint64_t t0 = timed ? interp_now_ns() : 0;
    s = run_step(&f, &e->steps[i], ts);
    if (timed)
      ev[n_ev++] = (kiln_profile_event){.instr = e->steps[i].index,
                                        .start_ns = t0 - base,
                                        .dur_ns = interp_now_ns() - t0};
    if (s)
      s = kiln_status_wrap(s, "interpreter: instruction %u (%s -> '%s')", e->steps[i].index,
                           kiln_instr_kind_name(e->steps[i].kind), e->steps[i].result);
  }
  if (ev) {
    pthread_mutex_lock(&e->lock);
    free(e->last_events);
    e->last_events = ev;
    e->last_count = n_ev;
    pthread_mutex_unlock(&e->lock);
  }
  free(ts);
  free(f.arena);
  return s;
}

/* The last run's events, copied so that a run finishing meanwhile cannot
 * free what the caller reads. */
static kiln_status interp_profile(void *executable, kiln_profile *out) {
  interp_exec *e = executable;
  pthread_mutex_lock(&e->lock);
  kiln_profile_event *copy = malloc((e->last_count ? e->last_count : 1) * sizeof *copy);
  if (copy && e->last_count)
    memcpy(copy, e->last_events, e->last_count * sizeof *copy);
  uint32_t n = e->last_count;
  pthread_mutex_unlock(&e->lock);
  if (!copy)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "interpreter: no memory for a profile");
  free(e->given);
  e->given = copy;
  out->events = copy;
  out->event_count = n;
  return NULL;
}

/* The descriptor; KILN_PLUGIN_DEFINE exports the entry point that hands
 * it to the core. */
static const kiln_plugin interp_plugin = {
    KILN_PLUGIN_HEADER,
    .name = "interpreter",
    .version = "0.1.0",
    .description = "reference interpreter: plain C kernels for every node kind, the oracle",
    .supports_node = interp_supports_node,
    .compile = interp_compile,
    .run = interp_run,
    .destroy = interp_destroy,
    .profile = interp_profile,
};
KILN_PLUGIN_DEFINE(interp_plugin);
