/* plugins/opencl/exec.c: compile and run. compile maps the memory plan to
 * device memory (one buffer for the activation arena, one for all weights,
 * uploaded once, and one per input and output), generates one kernel per
 * compute instruction into ONE program built once, and binds every kernel
 * argument up front. run copies inputs in, enqueues every kernel on the
 * executable's in-order queue (so no events are needed between kernels),
 * and reads outputs back. When a kernel checks index values, the run also
 * zeroes the fault record first and reads it back with the outputs: a
 * recorded fault is the run's status. Runs of one executable from several threads are
 * serialized by a mutex: they share the arena, the io buffers and the
 * kernels' bound arguments. Compiled for profiling (KILN_COMPILE_PROFILE)
 * the queue has CL_QUEUE_PROFILING_ENABLE and each kernel an event, whose
 * start and end the run reads back; otherwise no event is made. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ocl.h"

typedef struct ocl_step {
  cl_kernel kernel;
  ocl_launch launch;
  uint32_t instr; /* the instruction it computes */
} ocl_step;

typedef struct ocl_exec {
  const kiln_ir *ir;
  const ocl_device *dev;
  cl_context ctx;
  cl_command_queue queue;
  cl_program program;
  uint32_t n_in, n_out, n_roots;
  cl_mem *roots; /* OCL_ROOT_* then inputs then outputs */
  size_t *root_bytes;
  uint32_t n_steps;
  ocl_step *steps;
  bool checks;                  /* some kernel may record a fault */
  cl_int fault[OCL_FAULT_INTS]; /* read back after a run */
  pthread_mutex_t mu;
  bool mu_ok;
  /* Profiling: one cl_event per step during a run, the last run's events
   * (kernels that ran, relative to the first one's enqueue) and the
   * compile's phases. */
  bool profiling;
  cl_event *cl_events;
  kiln_profile_event *events;
  uint32_t n_events;
  kiln_profile_phase phases[3];
} ocl_exec;

static uint64_t ocl_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ocl_destroy(void *executable) {
  ocl_exec *e = executable;
  if (!e)
    return;
  for (uint32_t i = 0; e->steps && i < e->n_steps; i++)
    if (e->steps[i].kernel)
      clReleaseKernel(e->steps[i].kernel);
  free(e->steps);
  for (uint32_t i = 0; e->roots && i < e->n_roots; i++)
    if (e->roots[i])
      clReleaseMemObject(e->roots[i]);
  free(e->roots);
  free(e->root_bytes);
  if (e->program)
    clReleaseProgram(e->program);
  if (e->queue)
    clReleaseCommandQueue(e->queue);
  if (e->ctx)
    clReleaseContext(e->ctx);
  if (e->mu_ok)
    pthread_mutex_destroy(&e->mu);
  free(e->cl_events);
  free(e->events);
  free(e);
}

/* Tile edge E (work groups of E x E items) for MatMul, Gemm and the tiled
 * Conv, from a small table keyed by device kind: GPUs want 256-item groups
 * to hide memory latency; PoCL on a CPU runs a group as loops on one core,
 * and there too 16 won (a 64x64x3x3 Conv on 56x56: 184 ms at 16, 355 ms
 * at 8, 607 ms direct); unknown kinds get a cautious 8. The edge shrinks until the
 * device's work-group limit and local memory (two E x (E+1) f64 tiles, the
 * MatMul's footprint; Conv checks its own) allow it. The edge is baked
 * into the generated source, so the program cache keys on it already. */
static uint32_t tile_for(const ocl_device *d) {
  static const struct {
    const char *kind;
    uint32_t edge;
  } table[] = {{"gpu", 16}, {"accelerator", 16}, {"cpu", 16}};
  uint32_t t = 8;
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    if (!strcmp(d->kind, table[i].kind))
      t = table[i].edge;
  while (t > 1 && ((size_t)t * t > d->max_wg || (uint64_t)2 * t * (t + 1) * 8 > d->local_mem))
    t /= 2;
  return t;
}

static size_t wg_for(const ocl_device *d) {
  size_t wg = 1;
  while (wg * 2 <= d->max_wg && wg * 2 <= 256)
    wg *= 2;
  return wg;
}

/* Root and byte offset of a buffer (views folded into their base). */
static kiln_status locate(const ocl_exec *e, const uint64_t *weight_off, kiln_buffer *b,
                          ocl_operand *o) {
  const kiln_ir *ir = e->ir;
  uint64_t off = 0;
  uint32_t hops = 0, n = kiln_ir_buffer_count(ir);
  const char *name = kiln_buffer_name(b);
  o->type = kiln_buffer_type(b);
  while (kiln_buffer_get_kind(b) == KILN_BUFFER_VIEW) {
    off += kiln_buffer_offset(b);
    b = kiln_buffer_base(b);
    if (!b || ++hops > n)
      return kiln_status_make(KILN_VERIFY_ERROR,
                              "opencl: view %%%s has no base buffer or a cycle of views", name);
  }
  switch (kiln_buffer_get_kind(b)) {
  case KILN_BUFFER_ACTIVATION:
    o->root = OCL_ROOT_ARENA;
    off += kiln_buffer_offset(b);
    break;
  case KILN_BUFFER_WEIGHT:
    o->root = OCL_ROOT_WEIGHTS;
    off += weight_off[kiln_buffer_id(b)];
    break;
  case KILN_BUFFER_INPUT:
    o->root = 2 + kiln_buffer_io_index(b);
    break;
  default:
    o->root = 2 + e->n_in + kiln_buffer_io_index(b);
    break;
  }
  size_t es = kiln_elem_size(o->type->elem);
  if (es && off % es)
    return kiln_status_make(KILN_UNIMPLEMENTED,
                            "opencl: buffer %%%s sits at byte offset %llu, not aligned to its "
                            "%zu-byte elements",
                            name, (unsigned long long)off, es);
  o->offset = off;
  return NULL;
}

/* Generate the whole program source; fills e->steps' launches. */
static kiln_status generate(ocl_exec *e, const uint64_t *weight_off, ocl_sb *src) {
  const kiln_ir *ir = e->ir;
  uint32_t n = kiln_ir_instr_count(ir), max_ops = 1;
  for (uint32_t i = 0; i < n; i++)
    if (kiln_instr_operand_count(kiln_ir_instr(ir, i)) > max_ops)
      max_ops = kiln_instr_operand_count(kiln_ir_instr(ir, i));
  ocl_operand *ops = calloc(max_ops, sizeof *ops);
  e->steps = calloc(n ? n : 1, sizeof *e->steps);
  if (!ops || !e->steps) {
    free(ops);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "opencl: no memory to plan %s", kiln_ir_name(ir));
  }
  ocl_sb_printf(src, "/* kiln opencl: %s */\n", kiln_ir_name(ir));
  if (e->dev->fp64)
    ocl_sb_printf(src, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
  ocl_gen_prelude(src);
  kiln_status s = NULL;
  for (uint32_t i = 0; !s && i < n; i++) {
    const kiln_instr *in = kiln_ir_instr(ir, i);
    kiln_instr_kind k = kiln_instr_get_kind(in);
    int node = kiln_instr_kind_node(k);
    if (k != KILN_INSTR_Copy && node < 0)
      continue; /* alloc, dealloc, view: the plan already placed them */
    uint32_t nops = kiln_instr_operand_count(in);
    if (nops > OCL_MAX_ARGS) {
      s = kiln_status_make(KILN_UNIMPLEMENTED, "opencl: instruction %u has %u operands (max %d)", i,
                           nops, OCL_MAX_ARGS);
      break;
    }
    for (uint32_t j = 0; !s && j < nops; j++) {
      kiln_buffer *b = kiln_instr_operand(in, j);
      ops[j] = (ocl_operand){0};
      if (b)
        s = locate(e, weight_off, b, &ops[j]);
    }
    if (s)
      break;
    ocl_step *st = &e->steps[e->n_steps];
    ocl_gen g = {.src = src,
                 .dev = e->dev,
                 .in = in,
                 .kind = node >= 0 ? (kiln_node_kind)node : KILN_NODE_Identity,
                 .attrs = kiln_instr_attrs(in),
                 .n_ops = nops,
                 .n_res = node >= 0 ? kiln_instr_result_count(in) : 1,
                 .ops = ops,
                 .launch = &st->launch,
                 .wg = wg_for(e->dev),
                 .matmul_tile = tile_for(e->dev),
                 .fault_root = 2 + e->n_in + e->n_out};
    if (k == KILN_INSTR_Copy) {
      snprintf(st->launch.name, sizeof st->launch.name, "k%u", i);
      s = nops == 2 && ops[0].type && ops[1].type
              ? ocl_gen_copy(&g)
              : kiln_status_make(KILN_VERIFY_ERROR,
                                 "opencl: copy (instruction %u) needs 2 operands", i);
    } else {
      s = ocl_gen_instr(&g);
    }
    if (!s) {
      st->instr = i;
      e->checks |= st->launch.checks;
      e->n_steps++;
    }
  }
  free(ops);
  if (!s && src->oom)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "opencl: no memory for the generated source");
  return s;
}

static kiln_status make_buffers(ocl_exec *e, const uint64_t *weight_off, uint64_t weight_bytes) {
  const kiln_ir *ir = e->ir;
  cl_int err;
  e->n_roots = 3 + e->n_in + e->n_out; /* the last: the fault record */
  e->roots = calloc(e->n_roots, sizeof *e->roots);
  e->root_bytes = calloc(e->n_roots, sizeof *e->root_bytes);
  if (!e->roots || !e->root_bytes)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "opencl: no memory for buffer handles");
  e->root_bytes[OCL_ROOT_ARENA] = (size_t)kiln_ir_activation_bytes(ir);
  e->root_bytes[OCL_ROOT_WEIGHTS] = (size_t)weight_bytes;
  for (uint32_t i = 0; i < e->n_in; i++)
    e->root_bytes[2 + i] = (size_t)kiln_type_bytes(kiln_buffer_type(kiln_ir_input(ir, i)));
  for (uint32_t i = 0; i < e->n_out; i++)
    e->root_bytes[2 + e->n_in + i] =
        (size_t)kiln_type_bytes(kiln_buffer_type(kiln_ir_output(ir, i)));
  e->root_bytes[e->n_roots - 1] = e->checks ? sizeof e->fault : 0;
  for (uint32_t r = 0; r < e->n_roots; r++) {
    size_t bytes = e->root_bytes[r] ? e->root_bytes[r] : 64;
    e->roots[r] = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
      return ocl_fail(err, "clCreateBuffer", "%zu bytes for %s", bytes,
                      r == OCL_ROOT_ARENA       ? "the activation arena"
                      : r == OCL_ROOT_WEIGHTS   ? "the weights"
                      : r == e->n_roots - 1     ? "the fault record"
                                                : "an input or output");
  }
  /* Weights are uploaded once; blocking, so the module's data may move on. */
  for (uint32_t i = 0; i < kiln_ir_buffer_count(ir); i++) {
    kiln_buffer *b = kiln_ir_buffer(ir, i);
    if (kiln_buffer_get_kind(b) != KILN_BUFFER_WEIGHT)
      continue;
    size_t bytes = (size_t)kiln_type_bytes(kiln_buffer_type(b));
    if (!bytes || !kiln_buffer_data(b))
      continue;
    err = clEnqueueWriteBuffer(e->queue, e->roots[OCL_ROOT_WEIGHTS], CL_TRUE, weight_off[i], bytes,
                               kiln_buffer_data(b), 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return ocl_fail(err, "clEnqueueWriteBuffer", "uploading weight %%%s", kiln_buffer_name(b));
  }
  return NULL;
}

static kiln_status make_kernels(ocl_exec *e) {
  cl_int err;
  for (uint32_t i = 0; i < e->n_steps; i++) {
    ocl_step *st = &e->steps[i];
    st->kernel = clCreateKernel(e->program, st->launch.name, &err);
    if (err != CL_SUCCESS)
      return ocl_fail(err, "clCreateKernel", "kernel %s", st->launch.name);
    for (uint32_t a = 0; a < st->launch.n_args; a++) {
      err = clSetKernelArg(st->kernel, a, sizeof(cl_mem), &e->roots[st->launch.arg_root[a]]);
      if (err != CL_SUCCESS)
        return ocl_fail(err, "clSetKernelArg", "kernel %s argument %u", st->launch.name, a);
    }
    size_t kmax = 0;
    if (clGetKernelWorkGroupInfo(st->kernel, e->dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                                 &kmax, NULL) != CL_SUCCESS)
      kmax = e->dev->max_wg;
    ocl_launch *l = &st->launch;
    if (l->dims == 1) {
      while (l->local[0] > 1 && l->local[0] > kmax)
        l->local[0] /= 2; /* a power of two, so it still divides global */
    } else if (l->local[0] * l->local[1] > kmax) {
      return kiln_status_make(KILN_UNIMPLEMENTED,
                              "opencl: kernel %s needs a %zux%zu work group, the device allows %zu",
                              l->name, l->local[0], l->local[1], kmax);
    }
  }
  return NULL;
}

kiln_status ocl_compile(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                        void **out) {
  (void)state;
  *out = NULL;
  const ocl_device *dev;
  KILN_TRY(ocl_pick_device(opts, &dev));
  ocl_exec *e = calloc(1, sizeof *e);
  uint32_t nb = kiln_ir_buffer_count(ir);
  uint64_t *weight_off = calloc(nb ? nb : 1, sizeof *weight_off);
  if (!e || !weight_off) {
    free(e);
    free(weight_off);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "opencl: no memory for an executable");
  }
  e->ir = ir;
  e->dev = dev;
  e->n_in = kiln_ir_input_count(ir);
  e->n_out = kiln_ir_output_count(ir);
  uint64_t wbytes = 0;
  for (uint32_t i = 0; i < nb; i++) {
    kiln_buffer *b = kiln_ir_buffer(ir, i);
    if (kiln_buffer_get_kind(b) != KILN_BUFFER_WEIGHT)
      continue;
    weight_off[i] = wbytes;
    wbytes += ((uint64_t)kiln_type_bytes(kiln_buffer_type(b)) + 63) & ~(uint64_t)63;
  }
  e->profiling = opts && KILN_STRUCT_HAS(opts, kiln_compile_options, flags) &&
                 (opts->flags & KILN_COMPILE_PROFILE);
  ocl_sb src = {0};
  uint64_t t0 = ocl_now_ns();
  kiln_status s = generate(e, weight_off, &src);
  uint64_t t1 = ocl_now_ns(), t2 = t1;
  cl_int err = CL_SUCCESS;
  if (!s) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform, 0};
    e->ctx = clCreateContext(props, 1, &dev->id, NULL, NULL, &err);
    if (err != CL_SUCCESS)
      s = ocl_fail(err, "clCreateContext", "device %s", dev->name);
  }
  if (!s) {
    e->queue = clCreateCommandQueue(e->ctx, dev->id,
                                    e->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS)
      s = ocl_fail(err, "clCreateCommandQueue", "device %s", dev->name);
  }
  if (!s && e->n_steps)
    s = ocl_program_build(e->ctx, dev, src.p, "", kiln_cache_enabled(opts), &e->program);
  t2 = ocl_now_ns();
  if (!s)
    s = make_buffers(e, weight_off, wbytes);
  if (!s)
    s = make_kernels(e);
  if (!s) {
    e->mu_ok = pthread_mutex_init(&e->mu, NULL) == 0;
    if (!e->mu_ok)
      s = kiln_status_make(KILN_INTERNAL, "opencl: pthread_mutex_init failed");
  }
  e->phases[0] = (kiln_profile_phase){"opencl: kernel source generation", t1 - t0};
  e->phases[1] = (kiln_profile_phase){"opencl: program build (or cache)", t2 - t1};
  e->phases[2] = (kiln_profile_phase){"opencl: buffers, weight upload, kernels", ocl_now_ns() - t2};
  if (!s && e->profiling) {
    e->cl_events = calloc(e->n_steps ? e->n_steps : 1, sizeof *e->cl_events);
    e->events = calloc(e->n_steps ? e->n_steps : 1, sizeof *e->events);
    if (!e->cl_events || !e->events)
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "opencl: no memory for profile events");
  }
  free(weight_off);
  ocl_sb_free(&src);
  if (s) {
    ocl_destroy(e);
    return kiln_status_wrap(s, "opencl: compiling %s for %s", kiln_ir_name(ir), dev->name);
  }
  kiln_plugin_log(OCL_NAME, KILN_LOG_INFO, "compiled %s: %u kernels on %s", kiln_ir_name(ir),
                  e->n_steps, dev->name);
  *out = e;
  return NULL;
}

static kiln_status run_locked(ocl_exec *e, const void *const *inputs, void *const *outputs) {
  cl_int err;
  cl_mem fault = e->roots[e->n_roots - 1];
  if (e->checks) {
    static const cl_int zero[OCL_FAULT_INTS];
    err = clEnqueueWriteBuffer(e->queue, fault, CL_FALSE, 0, sizeof zero, zero, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return ocl_fail(err, "clEnqueueWriteBuffer", "clearing the fault record");
  }
  for (uint32_t i = 0; i < e->n_in; i++) {
    size_t bytes = e->root_bytes[2 + i];
    if (!bytes)
      continue;
    err = clEnqueueWriteBuffer(e->queue, e->roots[2 + i], CL_FALSE, 0, bytes, inputs[i], 0, NULL,
                               NULL);
    if (err != CL_SUCCESS)
      return ocl_fail(err, "clEnqueueWriteBuffer", "input %u (%s)", i,
                      kiln_buffer_name(kiln_ir_input(e->ir, i)));
  }
  for (uint32_t i = 0; i < e->n_steps; i++) {
    const ocl_launch *l = &e->steps[i].launch;
    if (l->empty)
      continue;
    err = clEnqueueNDRangeKernel(e->queue, e->steps[i].kernel, l->dims, NULL, l->global,
                                 l->local[0] ? l->local : NULL, 0, NULL,
                                 e->cl_events ? &e->cl_events[i] : NULL);
    if (err != CL_SUCCESS)
      return ocl_fail(err, "clEnqueueNDRangeKernel", "kernel %s", l->name);
  }
  for (uint32_t i = 0; i < e->n_out; i++) {
    size_t bytes = e->root_bytes[2 + e->n_in + i];
    if (!bytes)
      continue;
    err = clEnqueueReadBuffer(e->queue, e->roots[2 + e->n_in + i], CL_FALSE, 0, bytes, outputs[i],
                              0, NULL, NULL);
    if (err != CL_SUCCESS)
      return ocl_fail(err, "clEnqueueReadBuffer", "output %u (%s)", i,
                      kiln_buffer_name(kiln_ir_output(e->ir, i)));
  }
  if (e->checks) {
    err = clEnqueueReadBuffer(e->queue, fault, CL_FALSE, 0, sizeof e->fault, e->fault, 0, NULL,
                              NULL);
    if (err != CL_SUCCESS)
      return ocl_fail(err, "clEnqueueReadBuffer", "the fault record");
  }
  return NULL;
}

static int64_t fault_long(const cl_int *f, int at) {
  return (int64_t)(((uint64_t)(uint32_t)f[at + 1] << 32) | (uint32_t)f[at]);
}

/* The status for a recorded fault, naming the instruction by index, kind
 * and result (the graph value it computes). */
static kiln_status fault_status(const ocl_exec *e) {
  uint32_t site = (uint32_t)e->fault[1];
  const kiln_instr *in = site < kiln_ir_instr_count(e->ir) ? kiln_ir_instr(e->ir, site) : NULL;
  const kiln_buffer *res = in && kiln_instr_operand_count(in) ? kiln_instr_operand(in, 0) : NULL;
  return kiln_status_make(KILN_OUT_OF_RANGE,
                          "opencl: instruction %u (%s -> '%s'): index %lld out of range for "
                          "dimension %lld (element %lld of the indices)",
                          site, in ? kiln_instr_kind_name(kiln_instr_get_kind(in)) : "?",
                          res ? kiln_buffer_name(res) : "?", (long long)fault_long(e->fault, 2),
                          (long long)fault_long(e->fault, 4), (long long)fault_long(e->fault, 6));
}

/* Device times of the kernels that ran, relative to the first one's
 * enqueue (about when the run began; the device clock is not the host's),
 * and the events released. */
static kiln_status collect_events(ocl_exec *e) {
  kiln_status s = NULL;
  cl_ulong origin = 0;
  e->n_events = 0;
  for (uint32_t i = 0; i < e->n_steps; i++) {
    if (!e->cl_events[i])
      continue;
    cl_ulong q = 0, a = 0, b = 0;
    cl_int err = clGetEventProfilingInfo(e->cl_events[i], CL_PROFILING_COMMAND_QUEUED, sizeof q,
                                         &q, NULL);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(e->cl_events[i], CL_PROFILING_COMMAND_START, sizeof a, &a,
                                    NULL);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(e->cl_events[i], CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
    if (err != CL_SUCCESS && !s)
      s = ocl_fail(err, "clGetEventProfilingInfo", "kernel %s", e->steps[i].launch.name);
    clReleaseEvent(e->cl_events[i]);
    e->cl_events[i] = NULL;
    if (s)
      continue;
    if (e->n_events == 0 || q < origin)
      origin = q;
    e->events[e->n_events++] = (kiln_profile_event){
        .instr = e->steps[i].instr, .start_ns = a, .dur_ns = b > a ? b - a : 0};
  }
  for (uint32_t k = 0; k < e->n_events; k++)
    e->events[k].start_ns = e->events[k].start_ns > origin ? e->events[k].start_ns - origin : 0;
  return s;
}

kiln_status ocl_run(void *executable, const void *const *inputs, void *const *outputs) {
  ocl_exec *e = executable;
  pthread_mutex_lock(&e->mu);
  kiln_status s = run_locked(e, inputs, outputs);
  /* Always drain the queue: pending copies still point at caller memory. */
  cl_int err = clFinish(e->queue);
  if (!s && err != CL_SUCCESS)
    s = ocl_fail(err, "clFinish", "running %s", kiln_ir_name(e->ir));
  if (e->cl_events) {
    kiln_status ps = collect_events(e);
    if (!s)
      s = ps;
    else
      kiln_status_free(ps);
  }
  if (!s && e->checks && e->fault[0])
    s = fault_status(e);
  pthread_mutex_unlock(&e->mu);
  return s;
}

kiln_status ocl_profile(void *executable, kiln_profile *out) {
  ocl_exec *e = executable;
  out->events = e->events;
  out->event_count = e->events ? e->n_events : 0;
  out->phases = e->phases;
  out->phase_count = 3;
  return NULL;
}
