/* kiln/kiln.h: the runtime API an embedding program uses.
 *
 *   kiln_context *ctx; kiln_module *m; kiln_executable *exe;
 *   KILN_TRY(kiln_context_create(&ctx));                  // finds plugins
 *   KILN_TRY(kiln_module_load_text("net.kir", NULL, &m)); // or kiln_onnx_load
 *   KILN_TRY(kiln_compile(ctx, m, NULL, "interpreter", NULL, &exe));
 *   const void *in[] = {x};  void *out[] = {y};
 *   KILN_TRY(kiln_run(exe, in, out));                      // as often as needed
 *   kiln_executable_destroy(exe); kiln_module_destroy(m); kiln_context_destroy(ctx);
 *
 * Lifetimes: an executable does not borrow the module: it holds its own
 * share of the module's constant data (immutable and shared, not copied;
 * see kiln/ir.h) and nothing else of it, so the module may be destroyed
 * right after compile. It does need its context: destroy executables
 * first.
 * Thread safety: contexts and modules are not thread-safe for changes;
 * kiln_run on one executable may be called from several threads at once,
 * each with its own buffers (or bindings). */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include "kiln/instr.h"
#include "kiln/ir.h"
#include "kiln/plugin.h"
#include "kiln/status.h"
#include "kiln/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_context kiln_context;
typedef struct kiln_executable kiln_executable;

/* Create a context and discover plugins: the build tree's plugin folder,
 * the installed plugin folder, then each folder in KILN_PLUGIN_PATH
 * (colon-separated). Refused plugins are recorded, not fatal. */
KILN_NODISCARD kiln_status kiln_context_create(kiln_context **out);
void kiln_context_destroy(kiln_context *ctx);

/* A backend as kiln_context_backend describes it. Growth: none within a
 * major (the caller owns the struct; its size is frozen in
 * core/plugin_abi.c); new fields come in a new struct with a leading
 * struct_size and a new function that fills it, beside these. */
typedef struct kiln_backend_info {
  const char *name, *version, *description, *path; /* owned by the context */
  uint32_t abi_major, abi_minor;
  uint32_t supported_kinds; /* node kinds with at least one supported probe */
  uint32_t device_count;
} kiln_backend_info;

uint32_t kiln_context_backend_count(const kiln_context *ctx);
KILN_NODISCARD kiln_status kiln_context_backend(const kiln_context *ctx, uint32_t i,
                                                kiln_backend_info *out);
/* The descriptor of a backend by name; NULL if none. Owned by the context. */
const kiln_plugin *kiln_context_find_backend(const kiln_context *ctx, const char *name);
/* Plugins that were found but refused: path and reason (owned by ctx). */
uint32_t kiln_context_refused_count(const kiln_context *ctx);
void kiln_context_refused(const kiln_context *ctx, uint32_t i, const char **out_path,
                          const char **out_reason);

/* Compile function `function` (NULL = the first) of module m for the named
 * backend. m is not changed. opts may be NULL. Caller owns *out.
 * `backend` may also be a priority list "A+B+..." whose entries may name a
 * device ("opencl:1"): each node goes to the first entry that runs it,
 * natively or after lowering, and the executable runs the regions so
 * formed, moving tensors between them (docs/partitioning.md). A failed run
 * of such an executable writes no output. */
KILN_NODISCARD kiln_status kiln_compile(kiln_context *ctx, const kiln_module *m,
                                        const char *function, const char *backend,
                                        const kiln_compile_options *opts, kiln_executable **out);
void kiln_executable_destroy(kiln_executable *exe); /* NULL accepted */
/* Like kiln_compile, for a caller that has no further use for the module:
 * it is taken over (destroyed by the call, whether it succeeds or not, and
 * *m set to NULL) and compiled in place instead of on a copy, so that a
 * weight a pass replaces (batch-norm folding) or the backend packs is freed
 * at once and a compile holds each weight about once at its peak. */
KILN_NODISCARD kiln_status kiln_compile_take(kiln_context *ctx, kiln_module **m,
                                             const char *function, const char *backend,
                                             const kiln_compile_options *opts,
                                             kiln_executable **out);

/* Compile like kiln_compile, then have the backend write an ahead-of-time
 * bundle named `name` into folder `dir` (created if missing) instead of
 * making an executable. UNIMPLEMENTED when the backend makes no bundles. */
KILN_NODISCARD kiln_status kiln_compile_bundle(kiln_context *ctx, const kiln_module *m,
                                               const char *function, const char *backend,
                                               const kiln_compile_options *opts, const char *dir,
                                               const char *name);

/* Growth of kiln_io_info and kiln_tensor: none within a major; new
 * fields come in a new struct beside them, with new functions. */
typedef struct kiln_io_info {
  const char *name; /* owned by the executable */
  kiln_type type;
} kiln_io_info;
uint32_t kiln_executable_input_count(const kiln_executable *exe);
uint32_t kiln_executable_output_count(const kiln_executable *exe);
void kiln_executable_input(const kiln_executable *exe, uint32_t i, kiln_io_info *out);
void kiln_executable_output(const kiln_executable *exe, uint32_t i, kiln_io_info *out);
/* Index of an input / output by name, or -1. */
int32_t kiln_executable_find_input(const kiln_executable *exe, const char *name);
int32_t kiln_executable_find_output(const kiln_executable *exe, const char *name);
/* The instruction IR the executable was compiled from (for --stats,
 * dumps). Owned by the executable. */
const kiln_ir *kiln_executable_ir(const kiln_executable *exe);
const char *kiln_executable_backend(const kiln_executable *exe);

/* Regions (docs/partitioning.md). A backend list ("vendor+cpu",
 * "opencl:0+opencl:1") compiles each region of nodes placed on one entry
 * of the list as an executable of its own; an executable of one backend
 * is one region, itself. Growth: appended at the end by a minor bump; the
 * caller sets struct_size to its sizeof and the library fills no more. */
typedef struct kiln_region_info {
  uint32_t struct_size;
  uint32_t node_count;      /* graph nodes placed in it (0 for a whole executable) */
  const char *const *nodes; /* their names (the model's node names) */
  const char *backend;      /* the plugin's name */
  const char *placement;    /* the list entry as written, e.g. "opencl:1" */
  int32_t device;           /* -1 = the backend's default */
  uint32_t level;           /* regions of one level run side by side */
  /* The region's own executable (its IR: kiln_executable_ir; its profile:
   * kiln_executable_profile). Owned by the executable asked. */
  kiln_executable *exe;
  uint64_t weight_bytes;     /* weights it holds */
  uint64_t activation_bytes; /* its activation arena */
  uint64_t bytes_in;         /* bytes it reads from other regions per run */
  uint64_t bytes_out;        /* bytes it hands on (to regions or outputs) per run */
  uint64_t last_run_ns;      /* compiled with KILN_COMPILE_PROFILE: its time in the last run */
} kiln_region_info;
uint32_t kiln_executable_region_count(const kiln_executable *exe);
/* Fill *out (its struct_size set by the caller) with region i; strings and
 * arrays are owned by exe. */
KILN_NODISCARD kiln_status kiln_executable_region(const kiln_executable *exe, uint32_t i,
                                                  kiln_region_info *out);

/* Run with buffers in input / output order, each exactly its type's size.
 * An index value out of range in a tensor (Gather, Scatter*, ...) fails the
 * run with KILN_OUT_OF_RANGE; outputs are then only partly written (except
 * for a partitioned executable, which writes them only on success). */
KILN_NODISCARD kiln_status kiln_run(kiln_executable *exe, const void *const *inputs,
                                    void *const *outputs);

/* The profile of the last kiln_run (or kiln_run_bindings) of an
 * executable compiled with KILN_COMPILE_PROFILE in kiln_compile_options.flags
 * (docs/profiling.md): the backend's per-instruction events (none when the
 * backend has no profile hook), the compile phases (the core's three,
 * "graph passes and lowering", "instructions and memory plan" and "backend
 * compile", then any the backend reports, which are parts of the last)
 * and run_ns, the run's wall time as the core measured it. *out is owned
 * by the executable and valid until its next run or destroy; call it when
 * no run of exe is in flight. FAILED_PRECONDITION when exe was compiled
 * without profiling. */
KILN_NODISCARD kiln_status kiln_executable_profile(kiln_executable *exe,
                                                   const kiln_profile **out);

/* Bindings: buffers attached by name, checked for size, then run. A
 * bindings object belongs to one thread at a time; buffers are borrowed. */
typedef struct kiln_bindings kiln_bindings;
KILN_NODISCARD kiln_status kiln_bindings_create(const kiln_executable *exe, kiln_bindings **out);
void kiln_bindings_destroy(kiln_bindings *b);
KILN_NODISCARD kiln_status kiln_bind_input(kiln_bindings *b, const char *name, const void *data,
                                           size_t bytes);
KILN_NODISCARD kiln_status kiln_bind_output(kiln_bindings *b, const char *name, void *data,
                                            size_t bytes);
/* Fails listing every unbound input/output with its type. */
KILN_NODISCARD kiln_status kiln_run_bindings(kiln_executable *exe, const kiln_bindings *b);

/* ------------------------------------------------------------------------
 * Tensors and tensor files. A kiln_tensor owns `data` (release with
 * kiln_tensor_free, which also frees name). */
typedef struct kiln_tensor {
  kiln_type type;
  void *data;
  char *name; /* may be NULL */
} kiln_tensor;
void kiln_tensor_free(kiln_tensor *t); /* frees data and name, zeroes t */

/* .npy (format 1.0-3.0, little-endian, C order; dtypes f8 f4 f2 i1 u1 i2
 * u2 i4 u4 i8 u8 b1; bf16 not representable and refused). */
KILN_NODISCARD kiln_status kiln_tensor_read_npy(const char *path, kiln_tensor *out);
KILN_NODISCARD kiln_status kiln_tensor_write_npy(const char *path, const kiln_tensor *t);
/* ONNX TensorProto (.pb), as in ONNX test data (loaders/onnx). */
KILN_NODISCARD kiln_status kiln_tensor_read_pb(const char *path, kiln_tensor *out);
KILN_NODISCARD kiln_status kiln_tensor_write_pb(const char *path, const kiln_tensor *t);

/* The whole file at path in memory (release with kiln_free), as every
 * reader above and the model loaders take it in. One zero byte follows the
 * data, not counted in *out_len, so a text file is also a string. Fails
 * with KILN_IO_ERROR naming the path and the reason. */
KILN_NODISCARD kiln_status kiln_file_read(const char *path, void **out_data, size_t *out_len);

/* ------------------------------------------------------------------------
 * ONNX models (loaders/onnx). */
/* Growth: none within a major (callers fill it, often on the stack; its
 * size is frozen in core/plugin_abi.c); new options come in a new struct
 * with a leading struct_size and new load functions that take it. */
typedef struct kiln_onnx_options {
  /* Symbolic dimension bindings (--dim NAME=VALUE). */
  const char *const *dim_names;
  const int64_t *dim_values;
  uint32_t dim_count;
  /* Values for graph inputs that the compiler needs at compile time (a
   * Reshape's shape fed as an input, say): such an input becomes a
   * constant when a value is given here; other inputs stay inputs. */
  const kiln_tensor *known_inputs;
  uint32_t known_input_count;
  /* Context for compile-time values computed by the graph (Shape ->
   * Gather -> Concat chains). May be NULL: such values are still evaluated
   * (kiln_evaluate_value), only a cone with quantized nodes needs it. */
  kiln_context *ctx;
} kiln_onnx_options;

/* Load an ONNX model file into a new module (caller owns *out). External
 * data is read relative to the model's folder. opts may be NULL. */
KILN_NODISCARD kiln_status kiln_onnx_load(const char *path, const kiln_onnx_options *opts,
                                          kiln_module **out);
KILN_NODISCARD kiln_status kiln_onnx_load_memory(const void *data, size_t size,
                                                 const char *base_dir, const char *name_for_errors,
                                                 const kiln_onnx_options *opts, kiln_module **out);

/* One named symbolic dimension (dim_param) of a graph input, as the model
 * declares it: what a --dim binding or an input of known shape fills. */
typedef struct kiln_onnx_symbolic_dim {
  const char *name;  /* the dim_param */
  const char *input; /* the graph input that has it */
  uint32_t axis;     /* which of that input's dims */
  uint32_t rank;     /* how many dims the input has */
} kiln_onnx_symbolic_dim;

/* The named symbolic dimensions of the graph inputs (initializers
 * excluded) of the ONNX model at path, in input order, then axis order; a
 * name appears once per place it is used. Reads the model's structure, not
 * its weights. On success *out is one allocation holding the records and
 * the strings they point to (the caller's, released with kiln_free; NULL
 * when *count is 0); both are NULL / 0 on failure. */
KILN_NODISCARD kiln_status kiln_onnx_symbolic_dims(const char *path, kiln_onnx_symbolic_dim **out,
                                                   uint32_t *count);

/* Write function `function` (NULL = the first) of module m as an ONNX
 * model (docs/onnx.md, "Saving"): default domain at opset 22 (23 or 24
 * when the function uses RMSNormalization or Swish, which ONNX defines
 * there), module inputs as graph inputs with static shapes, every module
 * constant as an initializer (raw_data), nodes in order as the ONNX
 * operator of each kind, attributes that ONNX takes as inputs (Reshape's
 * shape, Slice's starts ...) as initializers named "<result>.<attribute>",
 * and outputs by name. m is not changed. Fails, writing nothing, naming
 * the culprit: UNIMPLEMENTED for a node whose kind has no ONNX form (all
 * such nodes are listed, with kiln_node_kind_no_onnx_reason), an attribute
 * ONNX does not have (Conv's fused `activation`, say), Conv's residual
 * input, or a value of a quantized type; OUT_OF_RANGE for a model over
 * protobuf's 2 GiB (no external data is written); NOT_FOUND for an unknown
 * function. The file is written under a temporary name beside `path` and
 * renamed over it when complete: a failure (IO_ERROR naming the path, a
 * missing folder say) leaves no file behind and an existing one as it was. */
KILN_NODISCARD kiln_status kiln_onnx_save(const kiln_module *m, const char *function,
                                          const char *path);
/* The same model in memory: *out_data (malloc'd, *out_size bytes) is the
 * caller's, released with kiln_free; both are NULL / 0 on failure. */
KILN_NODISCARD kiln_status kiln_onnx_save_memory(const kiln_module *m, const char *function,
                                                 void **out_data, size_t *out_size);

/* Evaluate a value of a module whose inputs are all constants (the cone
 * feeding it has no module inputs) on the reference kernels linked into
 * libkiln: no plugin is loaded. ctx may be NULL; it is needed only for a
 * cone with quantized nodes, which is compiled for the interpreter backend
 * (lowered first). Used by constant folding and the ONNX loader. Caller
 * owns *out (kiln_tensor_free). */
KILN_NODISCARD kiln_status kiln_evaluate_value(kiln_context *ctx, const kiln_module *m,
                                               const kiln_value *v, kiln_tensor *out);

#ifdef __cplusplus
}
#endif
#endif
