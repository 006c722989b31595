/* plugins/opencl/ocl.h: the OpenCL backend's private declarations, shared
 * by its files (device query, code generation, program cache, executables).
 * Nothing here is visible outside the plugin. */
#ifndef KILN_OCL_H
#define KILN_OCL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdbool.h>
#include <stdint.h>

#include <kiln/instr.h>
#include <kiln/ir.h>
#include <kiln/ops.h>
#include <kiln/plugin.h>

#define OCL_NAME "opencl"

/* ---- errors (errors.c) ---- */
const char *ocl_err_name(cl_int err);
/* A status for a failed OpenCL call: "opencl: CALL failed with NAME (N) (WHAT)". */
kiln_status ocl_fail(cl_int err, const char *call, const char *fmt, ...) KILN_PRINTF(3, 4);

/* ---- a growable string (strbuf.c) ---- */
typedef struct ocl_sb {
  char *p;
  size_t n, cap;
  bool oom;
} ocl_sb;
void ocl_sb_printf(ocl_sb *b, const char *fmt, ...) KILN_PRINTF(2, 3);
void ocl_sb_free(ocl_sb *b);

/* ---- devices (device.c) ---- */
typedef struct ocl_device {
  cl_platform_id platform;
  cl_device_id id;
  char name[128], driver[128], version[128], kind[32];
  uint64_t mem_bytes, local_mem;
  size_t max_wg;
  bool fp64, fp16;
} ocl_device;

/* All devices of all platforms, enumerated once per process. *out is
 * static; n may be 0 (then *why says why, a static string). */
void ocl_devices(const ocl_device **out, uint32_t *n, const char **why);
/* The device a compile uses: opts->device when >= 0, else env
 * KILN_OPENCL_DEVICE, else 0. Fails with KILN_UNAVAILABLE when there is no
 * device and KILN_OUT_OF_RANGE for a bad index. */
kiln_status ocl_pick_device(const kiln_compile_options *opts, const ocl_device **out);
/* The device supports_node plans for (the default pick; NULL if none). */
const ocl_device *ocl_default_device(void);

/* ---- supports_node (supports.c) ---- */
bool ocl_supports_node(void *state, const kiln_node *node);
/* Element types this device stores and computes. */
bool ocl_elem_ok(const ocl_device *d, kiln_elem e);

/* ---- code generation (gen_common.c and gen_<family>.c) ---- */

/* Roots: the memory objects kernels address. 0 = activation arena,
 * 1 = weights, 2 + i = input i, 2 + n_in + j = output j, then the fault
 * record (OCL_FAULT_INTS ints, zeroed before each run): kernels that read
 * index values from a tensor claim it with atomic_cmpxchg on int 0 when one
 * is out of range and write site, value, bound and position after it
 * (kiln_fault in the prelude); the first fault wins. */
#define OCL_ROOT_ARENA 0u
#define OCL_ROOT_WEIGHTS 1u
/* claimed, site, value (lo, hi), bound (lo, hi), position (lo, hi) */
#define OCL_FAULT_INTS 8

typedef struct ocl_operand {
  const kiln_type *type; /* NULL = absent */
  uint32_t root;
  uint64_t offset; /* bytes inside the root */
} ocl_operand;

#define OCL_MAX_ARGS 80

/* One kernel launch of a compute instruction. */
typedef struct ocl_launch {
  char name[32];
  uint32_t n_args;
  uint32_t arg_root[OCL_MAX_ARGS];
  uint32_t dims;
  size_t global[3], local[3]; /* local[0] == 0: the driver chooses */
  bool empty;                 /* nothing to compute (zero elements) */
  bool checks;                /* the kernel may record a fault */
} ocl_launch;

typedef struct ocl_gen {
  ocl_sb *src;
  const ocl_device *dev;
  const kiln_instr *in;
  kiln_node_kind kind;
  const kiln_attrs *attrs;
  uint32_t n_ops, n_res;
  ocl_operand *ops; /* n_ops entries: results first */
  ocl_launch *launch;
  size_t wg; /* 1-D work-group size */
  uint32_t matmul_tile;
  uint32_t fault_root; /* the fault record's root */
  /* Set before ocl_gen_begin by a generator that checks index values: the
   * kernel then gets `__global int *pF` and a constant `site` (the
   * instruction's index) for kiln_fault(pF, site, value, bound, position). */
  bool checks;
} ocl_gen;

/* Generate the kernel for one instruction into g->src, filling g->launch.
 * Fails with KILN_UNIMPLEMENTED for what the backend cannot run. */
kiln_status ocl_gen_instr(ocl_gen *g);

/* Shared helpers (gen_common.c). */
const char *ocl_ctype(kiln_elem e);
bool ocl_is_float(kiln_elem e);
/* f16 and bf16 are stored as ushort bit patterns, loaded into float with
 * ocl_load_fn and rounded back (nearest even) with ocl_store_fn; both
 * return "" for other types, so "fn(x)" is always valid text. */
bool ocl_is_half(kiln_elem e);
kiln_elem ocl_math_elem(kiln_elem e); /* f32 for f16/bf16, else e */
const char *ocl_load_fn(kiln_elem e);
const char *ocl_store_fn(kiln_elem e);
/* The half conversion functions every program starts with. */
void ocl_gen_prelude(ocl_sb *b);
/* Kinds whose generators handle f16/bf16 operands. */
bool ocl_half_kind_ok(kiln_node_kind k);
/* Kernel header, one pointer pN per present operand, named by position. */
void ocl_gen_begin(ocl_gen *g);
/* The same, with a 1-D guard over n work items (gid). */
void ocl_gen_begin_1d(ocl_gen *g, int64_t n);
void ocl_gen_end(ocl_gen *g);
/* Declare long cD0.. = coordinates of flat `var` in dims. */
void ocl_gen_unravel(ocl_gen *g, const char *var, const int64_t *dims, uint32_t rank,
                     const char *prefix);
/* Write the flat index into `in` of broadcast coordinates (prefix) of a
 * result of rank out_rank. */
void ocl_gen_bcast_index(ocl_gen *g, const kiln_type *in, uint32_t out_rank, const char *prefix);
/* A double constant as OpenCL C text of type T (handles inf / nan). */
void ocl_gen_const(ocl_sb *b, double v, kiln_elem e);
kiln_status ocl_gen_unsupported(const ocl_gen *g, const char *why);
/* Register block edge (4, 2 or 1) along a result dimension of n cells for
 * work groups `edge` items wide: 4 or 2 only when the tile still has whole
 * rows of work, so small layers keep small tiles (tiled Conv, MatMul). */
uint32_t ocl_block_edge(int64_t n, uint32_t edge);
/* Attribute list of n ints into out (default dflt); false if wrong length. */
bool ocl_attr_ints(const kiln_attrs *a, const char *name, uint32_t n, int64_t dflt, int64_t *out);

/* The `axis` attribute (default dflt) made non-negative; fails when it is
 * outside [-rank, rank). */
kiln_status ocl_gen_axis(ocl_gen *g, uint32_t rank, int64_t dflt, uint32_t *out);

/* The generators, one file per op family (gen_<family>.c). A kind's *_ok,
 * where it has one, says whether the node's attributes and types are ones
 * its generator accepts (supports.c asks). */

/* gen_elementwise.c; ocl_gen_copy also serves the movement kinds that only
 * relabel the shape. */
kiln_status ocl_gen_unary(ocl_gen *g);
kiln_status ocl_gen_binary(ocl_gen *g);
kiln_status ocl_gen_variadic(ocl_gen *g);
kiln_status ocl_gen_where(ocl_gen *g);
kiln_status ocl_gen_clip(ocl_gen *g);
kiln_status ocl_gen_fused(ocl_gen *g);
kiln_status ocl_gen_copy(ocl_gen *g); /* flat copy: Copy, Reshape, Identity ... */
/* Whether a FusedElementwise body may hold kind k computed in el (the
 * generators ocl_gen_fused uses accept it). */
bool ocl_fused_kind_ok(kiln_node_kind k, kiln_elem el);

/* gen_linalg.c: MatMul, Gemm, Det */
kiln_status ocl_gen_matmul(ocl_gen *g);
kiln_status ocl_gen_gemm(ocl_gen *g);
kiln_status ocl_gen_det(ocl_gen *g);
bool ocl_det_ok(const kiln_node *n);

/* gen_pool.c: the pools, and the sliding-window geometry they share with
 * Conv. ocl_win_params decodes the window of X -> Y (kiln/ops.h), the
 * kernel extent from W's spatial dims, or from kernel_shape when w is NULL. */
kiln_status ocl_win_params(ocl_gen *g, const kiln_type *x, const kiln_type *y, const kiln_type *w,
                           kiln_window *p);
void ocl_win_loops(ocl_gen *g, const kiln_window *p);
void ocl_win_close(ocl_gen *g, const kiln_window *p);
kiln_status ocl_gen_pool(ocl_gen *g);
kiln_status ocl_gen_global_pool(ocl_gen *g);

/* gen_conv.c: Conv (direct, and the choice of kernel) and ConvTranspose */
kiln_status ocl_gen_conv(ocl_gen *g);
kiln_status ocl_gen_convtranspose(ocl_gen *g);
bool ocl_convtranspose_ok(const kiln_node *n);

/* gen_conv_tiled.c: the fused `activation` epilogue of Conv, MatMul and
 * Gemm applied to `var` (false for an activation it does not know); the
 * local-memory tiled Conv (implicit GEMM) for window parameters already
 * resolved by gen_conv.c; and KILN_OPENCL_CONV (0 auto, 1 tiled, -1 direct). */
bool ocl_gen_activation(ocl_sb *b, const kiln_attrs *a, kiln_elem e, const char *var,
                        const char *indent);
kiln_status ocl_gen_conv_tiled(ocl_gen *g, const kiln_window *win, int64_t G);
int ocl_conv_tiling_mode(void);

/* gen_reduce.c: Reduce*, ArgMax / ArgMin, CumSum, TopK */
kiln_status ocl_gen_reduce(ocl_gen *g);
kiln_status ocl_gen_argminmax(ocl_gen *g);
kiln_status ocl_gen_cumsum(ocl_gen *g);
kiln_status ocl_gen_topk(ocl_gen *g);
bool ocl_topk_ok(const kiln_node *n);

/* gen_norm.c: Softmax, LogSoftmax */
kiln_status ocl_gen_softmax(ocl_gen *g);

/* gen_movement.c */
kiln_status ocl_gen_transpose(ocl_gen *g);
kiln_status ocl_gen_expand(ocl_gen *g);
kiln_status ocl_gen_tile(ocl_gen *g);
kiln_status ocl_gen_slice(ocl_gen *g);
kiln_status ocl_gen_concat(ocl_gen *g);
kiln_status ocl_gen_split(ocl_gen *g);
kiln_status ocl_gen_pad(ocl_gen *g);
kiln_status ocl_gen_trilu(ocl_gen *g);
kiln_status ocl_gen_depth_space(ocl_gen *g);

/* gen_index.c: Gather, GatherElements, GatherND, ScatterND, ScatterElements */
kiln_status ocl_gen_gather(ocl_gen *g);
kiln_status ocl_gen_gather_elements(ocl_gen *g);
kiln_status ocl_gen_gather_nd(ocl_gen *g);
/* GatherElements and GatherND: index types and shapes the generators take. */
bool ocl_gather_ok(const kiln_node *n);
kiln_status ocl_gen_scatter_nd(ocl_gen *g);
kiln_status ocl_gen_scatter_elements(ocl_gen *g);
bool ocl_scatter_ok(const kiln_node *n);

/* gen_generator.c: EyeLike */
kiln_status ocl_gen_eyelike(ocl_gen *g);

/* gen_rnn.c: RNN, GRU and LSTM */
kiln_status ocl_gen_rnn(ocl_gen *g);
bool ocl_rnn_ok(const kiln_node *n);

/* supports_fused (supports.c): elementwise fusion and Conv/MatMul/Gemm
 * activation epilogues. */
bool ocl_supports_fused(void *state, const kiln_node *node, kiln_node_kind activation);

/* Whether ocl_gen_instr has a generator for this kind at all. */
bool ocl_gen_has(kiln_node_kind k);

/* ---- programs and the cache (program.c, cache.c) ---- */
/* The host's compile cache (kiln_cache_*, backend OCL_NAME) holds the
 * program binaries, in files named KEY.clbin. */
#define OCL_CACHE_EXT "clbin"
/* The key of a program's entry: its source, the device's name, driver and
 * version, and the build options. */
void ocl_cache_key_of(const char *source, const ocl_device *d, const char *options,
                      kiln_cache_key *out);

/* Build one program for the device; with use_cache, load it from the cache
 * when an entry exists and store it after a build from source (false for
 * a compile whose options disable the cache: kiln_cache_enabled). */
kiln_status ocl_program_build(cl_context ctx, const ocl_device *d, const char *source,
                              const char *options, bool use_cache, cl_program *out);

/* Test hooks, exported: builds from source and cache hits since load. */
KILN_PLUGIN_EXPORT uint64_t kiln_opencl_source_builds(void);
KILN_PLUGIN_EXPORT uint64_t kiln_opencl_cache_hits(void);

/* ---- executables (exec.c) ---- */
kiln_status ocl_compile(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                        void **out);
kiln_status ocl_run(void *executable, const void *const *inputs, void *const *outputs);
void ocl_destroy(void *executable);
/* The profile hook: the last run's kernel times and the compile's phases. */
kiln_status ocl_profile(void *executable, kiln_profile *out);

#endif
