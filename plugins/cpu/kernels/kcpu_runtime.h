/* plugins/cpu/kernels/kcpu_runtime.h: the ABI of the cpu backend's kernel
 * library (thread pool and kcpu_k_* kernels). The library is plain C that
 * clang compiles to bitcode linked into every generated module, so it uses
 * no kiln types: only pointers, int64 sizes and small integer codes that the
 * emitters (plugins/cpu/emit_*.c) pass as constants.
 *
 * Determinism: every kernel partitions work statically and reduces in a
 * fixed order, so a given thread count always gives bit-identical results
 * (and the GEMM family gives the same bits for any thread count).
 *
 * `lanes` arguments are the target's f32 vector width (16, 8 or 4); they pick
 * register-blocking shapes only, never results. */
#ifndef KCPU_RUNTIME_H
#define KCPU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

struct kcpu_pool;

/* Marks a kernel compiled once, at build time, for the build host
 * (plugins/cpu/mknative.c) and linked into each JIT as it is, instead of
 * being optimized and compiled again with every model. For kernels that
 * gain nothing from a model's constants: fixed element types, shapes as
 * run-time sizes, big bodies (GEMM, convolution, pooling, the pool). The
 * others (element-type generic `elem` kernels, whose type switches fold
 * away once specialized) stay in each model's module. The mark is a
 * section name, which survives into the bitcode where the plugin reads it,
 * and noinline, so that clang never copies a prebuilt body into a caller
 * of its own file (which would then be compiled with every model). */
#define KCPU_PREBUILT __attribute__((section(".text.kcpu_prebuilt"), noinline))

/* ---- thread pool (runtime.c) ---- */
/* A pool of threads-1 workers; the caller of kcpu_parallel_for is the
 * remaining one. threads <= 1 gives a pool that runs everything inline.
 * Returns NULL when threads cannot be made (callers then run inline). */
struct kcpu_pool *kcpu_pool_create(int threads);
void kcpu_pool_destroy(struct kcpu_pool *p);      /* NULL accepted */
int kcpu_pool_threads(const struct kcpu_pool *p); /* NULL -> 1 */
/* Run fn over [0, n) in contiguous chunks: thread t's share [n*t/T,
 * n*(t+1)/T) cut into up to 4 near-equal chunks, each run by whichever
 * thread claims it first (a share's own thread, unless it runs late);
 * returns when all chunks are done. fn must compute the same for any cut
 * of [0, n) into ranges; it is never given an empty one. Not reentrant:
 * fn must not call kcpu_parallel_for on the same pool (nested calls run
 * inline). */
void kcpu_parallel_for(struct kcpu_pool *p, int64_t n,
                       void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);
/* 64-byte aligned scratch memory (NULL on failure) and its release. */
void *kcpu_alloc(int64_t bytes);
void kcpu_free(void *ptr);

/* ---- profiling timers (runtime.c) ----
 * Called only by code compiled for profiling. now: a monotonic clock in
 * ns. record: event `index` of `events` (an array of kiln_profile_event,
 * 24 bytes each: u32 instr, u32 thread, u64 start_ns, u64 dur_ns; the
 * first two are filled by the plugin) gets start t0 and duration now - t0
 * (absolute times; the plugin makes them relative to the run's start). */
int64_t kcpu_k_prof_now(void);
void kcpu_k_prof_record(void *events, int64_t index, int64_t t0);

/* ---- run-time faults (runtime.c) ----
 * A kernel that meets an index value outside its dimension records a fault
 * here and returns without touching memory through it. One record per run
 * (the caller zeroes it); the first fault wins, claimed by compare-exchange
 * so that workers of a parallel kernel may record concurrently. The
 * generated entry tests `claimed` after each checking kernel and returns
 * early; the plugin (or a bundle's caller) turns the record into a status.
 * The layout is part of the bundle ABI (NAME_fault in a bundle header). */
enum { KCPU_FAULT_NONE = 0, KCPU_FAULT_INDEX = 1 };
typedef struct kcpu_fault {
  int32_t claimed; /* 0, then 1 once a fault is recorded */
  int32_t code;    /* KCPU_FAULT_* */
  int64_t site;    /* instruction index */
  int64_t value;   /* the index as read from the tensor */
  int64_t bound;   /* the dimension it indexes: valid values are [-bound, bound) */
  int64_t at;      /* element position of the value in the index tensor */
} kcpu_fault;
/* Record an index fault (f may be NULL: nothing is recorded). Kept out of
 * line and cold: kernels call it only on the failing path. */
void kcpu_fault_index(kcpu_fault *f, int64_t site, int64_t value, int64_t bound, int64_t at);

/* ---- GEMM (linalg_gemm.c) ---- */
/* Fused activations (kcpu_act.h). Relu, Clip, HardSigmoid and HardSwish
 * are applied in the micro-kernels' register epilogue; Swish over each
 * finished micro-tile, and GELU (the exact form) over each finished C
 * tile after the micro-kernels, both while the data is in cache. */
enum {
  KCPU_ACT_NONE = 0,
  KCPU_ACT_RELU = 1,
  KCPU_ACT_GELU = 2,
  KCPU_ACT_CLIP = 3,         /* a: min, b: max */
  KCPU_ACT_HARD_SIGMOID = 4, /* max(0, min(1, a x + b)) */
  KCPU_ACT_HARD_SWISH = 5,   /* x * HardSigmoid(x), a = 1/6, b = 1/2 */
  KCPU_ACT_SWISH = 6         /* x * sigmoid(a x) */
};

/* C[M,N] (=|+=) alpha * op(A)[M,K] * op(B)[K,N], then the epilogue in this
 * order: + bias_col[n], + bias_row[m], + res[m*ldr+n], activation.
 * op(A)(m,k) = trans_a ? A[k*lda+m] : A[m*lda+k] (same for B).
 * accumulate != 0 adds to the existing C. Any of bias_col, bias_row, res may
 * be NULL. */
void kcpu_k_sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                  int64_t trans_a, const float *B, int64_t ldb, int64_t trans_b, float *C,
                  int64_t ldc, int64_t accumulate, const float *bias_col, const float *bias_row,
                  const float *res, int64_t ldr, int64_t act, int64_t lanes,
                  struct kcpu_pool *pool);

/* Batched MatMul with broadcasting resolved by the emitter: for batch b,
 * C + b*M*N = (A + a_off[b]) [M,K] * (B + b_off[b]) [K,N], all row-major.
 * a_off / b_off are element offsets; NULL means b*M*K / b*K*N. */
void kcpu_k_matmul(int64_t batch, const int64_t *a_off, const int64_t *b_off, int64_t M, int64_t N,
                   int64_t K, const float *A, const float *B, float *C, int64_t lanes,
                   struct kcpu_pool *pool);

/* ONNX Gemm: Y[M,N] = alpha * op(A) * op(B) + beta * Cb, with Cb read at
 * Cb[m*c_rs + n*c_cs] (strides 0 broadcast; Cb NULL = no C). */
void kcpu_k_gemm(int64_t M, int64_t N, int64_t K, float alpha, float beta, const float *A,
                 int64_t trans_a, const float *B, int64_t trans_b, const float *Cb, int64_t c_rs,
                 int64_t c_cs, float *Y, int64_t lanes, struct kcpu_pool *pool);

/* ---- convolution and pooling (conv.c, pool.c) ---- */
/* 2-D convolution, NCHW f32 (1-D: H = KH = OH = 1). X [N,C,H,W],
 * Wt [M, C/group, KH, KW], bias [M] or NULL, Y [N,M,OH,OW]. pt/pl: leading
 * pads (trailing pads are implied by OH/OW). */
void kcpu_k_conv2d(const float *X, const float *Wt, const float *bias, float *Y, int64_t N,
                   int64_t C, int64_t H, int64_t W, int64_t M, int64_t OH, int64_t OW, int64_t KH,
                   int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                   int64_t pl, int64_t group, int64_t act, int64_t lanes, struct kcpu_pool *pool);

/* Pooling over [NC, H, W] f32 (1-D: H = KH = OH = 1). Windows are clipped to
 * the input; pb/pr are the trailing pads (AveragePool counts pad cells
 * inside [−pt, H+pb) when count_include_pad). mode 0 = max, 1 = average. */
void kcpu_k_pool2d(const float *X, float *Y, int64_t NC, int64_t H, int64_t W, int64_t OH,
                   int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t dh,
                   int64_t dw, int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t mode,
                   int64_t count_include_pad, struct kcpu_pool *pool);
/* MaxPool over [NC, H, W] of u8 (sgn 0) or i8 (sgn 1), windows clipped to
 * the input (an empty one gives the type's least value); rows of at most
 * 4096 bytes, wider ones are left unwritten (the emitter declines them). */
void kcpu_k_pool2d_8(const uint8_t *X, uint8_t *Y, int64_t sgn, int64_t NC, int64_t H, int64_t W,
                     int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                     int64_t dh, int64_t dw, int64_t pt, int64_t pl, struct kcpu_pool *pool);

/* ---- channel-blocked layout (movement_blocked.c, conv_blocked*.c, pool.c) ----
 * The blocked form of a plain [N, C, S...] f32 tensor is [N, Cb, S..., 16],
 * Cb = ceil(C/16), channel c in block c/16, lane c%16 (conv_blocked.h). Lanes
 * past C are zero where these kernels write them; convolutions never read
 * them as data. S: the product of the spatial dimensions. */
void kcpu_k_block_channels(const float *X, float *Y, int64_t N, int64_t C, int64_t S,
                           struct kcpu_pool *pool);
void kcpu_k_unblock_channels(const float *X, float *Y, int64_t N, int64_t C, int64_t S,
                             struct kcpu_pool *pool);
/* 2-D convolution into a blocked Y [N, ceil(M/16), OH, OW, 16]: X blocked
 * [N, ceil(C/16), H, W, 16] (x_blocked = 1) or plain [N, C, H, W]
 * (x_blocked = 0); group 1, or (x_blocked = 1) depthwise (group = C = M)
 * or grouped as kcpu_convb_grouping (conv_blocked.h) allows; any other
 * grouping leaves Y unwritten (the emitter never asks for one).
 * Wpk: filters packed by kcpu_convb_pack (conv_blocked.h), or NULL: then
 * Wt [M, C/group, KH, KW] is packed into scratch at each call. bias [M] or
 * NULL; res: a residual in Y's layout or NULL, added after the bias and
 * before the activation (act, act_a, act_b as in kcpu_k_conv2d_ex). Lanes
 * of Y past M are written as zero. pt/pl: leading pads (>= 0), trailing
 * ones implied by OH/OW. */
void kcpu_k_conv2d_blocked(const float *X, int64_t x_blocked, const float *Wt, const float *Wpk,
                           const float *bias, const float *res, float *Y, int64_t N, int64_t C,
                           int64_t H, int64_t W, int64_t M, int64_t OH, int64_t OW, int64_t KH,
                           int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                           int64_t pl, int64_t group, int64_t act, float act_a, float act_b,
                           struct kcpu_pool *pool);
/* kcpu_k_conv2d_blocked's 3x3, stride 1, dilation 1, group 1 case from a
 * blocked X by Winograd's F(tile x tile, 3x3), tile 2 or 4
 * (conv_blocked_wino.c): Upk holds the transformed filters, the (tile +
 * 2)^2 positions xi = (tile + 2) i + j of G g G^T one after another, each
 * packed by kcpu_convb_pack as a 1x1 filter [M, C]
 * (kcpu_convb_packed_size(M, C, 1, 1, 0, 1) floats apart). Same bias,
 * residual, activation and padding rules. */
void kcpu_k_conv2d_blocked_wino(const float *X, const float *Upk, const float *bias,
                                const float *res, float *Y, int64_t N, int64_t C, int64_t H,
                                int64_t W, int64_t M, int64_t OH, int64_t OW, int64_t pt,
                                int64_t pl, int64_t tile, int64_t act, float act_a, float act_b,
                                struct kcpu_pool *pool);
/* kcpu_k_pool2d over blocked planes: X [NCb, H, W, 16], Y [NCb, OH, OW, 16]
 * (NCb = N * ceil(C/16)), every lane pooled on its own with
 * kcpu_k_pool2d's window rules. */
void kcpu_k_pool2d_blocked(const float *X, float *Y, int64_t NCb, int64_t H, int64_t W,
                           int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                           int64_t dh, int64_t dw, int64_t pt, int64_t pl, int64_t pb, int64_t pr,
                           int64_t mode, int64_t count_include_pad, struct kcpu_pool *pool);

/* ---- reductions and normalizations (reduce.c, norm.c) ---- */
enum {
  KCPU_RED_SUM = 0,
  KCPU_RED_MEAN = 1,
  KCPU_RED_MAX = 2,
  KCPU_RED_MIN = 3,
  KCPU_RED_PROD = 4,
  KCPU_RED_SUMSQ = 5,
  KCPU_RED_L1 = 6,
  KCPU_RED_L2 = 7,
  KCPU_RED_LOGSUM = 8,
  KCPU_RED_LOGSUMEXP = 9,
};
/* Element type codes shared by the type-generic kernels (same numbering
 * as kiln_elem). */
enum {
  KCPU_F64 = 0,
  KCPU_F32 = 1,
  KCPU_F16 = 2,
  KCPU_BF16 = 3,
  KCPU_I8 = 4,
  KCPU_U8 = 5,
  KCPU_I16 = 6,
  KCPU_U16 = 7,
  KCPU_I32 = 8,
  KCPU_U32 = 9,
  KCPU_I64 = 10,
  KCPU_U64 = 11,
  KCPU_BOOL = 12
};
/* Reduce x of shape dims[rank] (rank <= 16) over the dims whose bit is set
 * in red_mask into y (the kept dims, row-major). Types: f32, f64, i32, i64
 * (all ops), and i8, u8 for max/min. Returns 0, or -1 for an unsupported
 * (type, op). */
int kcpu_k_reduce(int64_t elem, int64_t op, const void *x, void *y, int64_t rank,
                  const int64_t *dims, int64_t red_mask);
/* ArgMax (is_max 1) / ArgMin over the middle dim of [outer, n, inner]; i64
 * indices. f32, f64, i32, i64, i8, u8. */
int kcpu_k_argminmax(int64_t elem, int64_t is_max, int64_t select_last, const void *x, int64_t *y,
                     int64_t outer, int64_t n, int64_t inner);
/* Softmax (log 0) / LogSoftmax (log 1) over the middle dim of
 * [outer, n, inner], f32. */
void kcpu_k_softmax(const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int64_t log,
                    struct kcpu_pool *pool);
/* LayerNormalization over rows of n: y = (x-mean)*rstd*scale + bias;
 * bias, mean_out, rstd_out may be NULL. scale/bias have n entries. */
void kcpu_k_layernorm(const float *x, const float *scale, const float *bias, float *y,
                      float *mean_out, float *rstd_out, int64_t rows, int64_t n, float eps,
                      struct kcpu_pool *pool);
/* RMSNormalization over rows of n: y = x / sqrt(mean(x^2) + eps) * scale;
 * scale has n entries. */
void kcpu_k_rmsnorm(const float *x, const float *scale, float *y, int64_t rows, int64_t n,
                    float eps, struct kcpu_pool *pool);
/* BatchNormalization (inference) on [N, C, inner]. */
void kcpu_k_batchnorm(const float *x, const float *scale, const float *bias, const float *mean,
                      const float *var, float *y, int64_t N, int64_t C, int64_t inner, float eps);

/* ---- data movement (movement.c; Gather: index.c; Cast: elementwise.c):
 * type-agnostic, elements of esize bytes */
/* dst[Σ i_d*dst_st[d]] = src[Σ i_d*src_st[d]] for every index of dims[rank]
 * (rank <= 16, strides in elements, may be 0 or negative). */
void kcpu_k_copy_strided(void *dst, const int64_t *dst_st, const void *src, const int64_t *src_st,
                         int64_t rank, const int64_t *dims, int64_t esize, struct kcpu_pool *pool);
/* Fill n elements with the esize-byte pattern at value. */
void kcpu_k_fill(void *dst, int64_t n, const void *value, int64_t esize);
/* Gather along an axis: data [outer, axis_n, inner], idx (i32 when
 * idx_is32, else i64; negatives count from the end) [nidx],
 * y [outer, nidx, inner]. The index kernels here and in the scatter
 * section report an index outside its dimension through fault/site
 * (kcpu_fault_index) and return. */
void kcpu_k_gather(const void *data, const void *idx, int64_t idx_is32, void *y, int64_t outer,
                   int64_t axis_n, int64_t inner, int64_t nidx, int64_t esize, kcpu_fault *fault,
                   int64_t site);
/* GatherElements: y[p] = data[p with p[axis] = idx[p]] for every position p
 * of idims[rank] (each idims[d] <= ddims[d] off the axis: the emitter
 * checks). idx_elem I32 or I64. */
void kcpu_k_gather_elements(const void *data, int64_t idx_elem, const void *idx, void *y,
                            int64_t rank, const int64_t *ddims, const int64_t *idims, int64_t axis,
                            int64_t esize, kcpu_fault *fault, int64_t site);
/* GatherND: for each of `tuples` index tuples of length k, the slice of
 * data[ddims, rank] at (batch, tuple) copied to y; the batch of tuple t is
 * t / per_batch (per_batch: tuples per batch position). */
void kcpu_k_gather_nd(const void *data, int64_t idx_elem, const void *idx, void *y, int64_t rank,
                      const int64_t *ddims, int64_t batch_dims, int64_t k, int64_t tuples,
                      int64_t per_batch, int64_t esize, kcpu_fault *fault, int64_t site);
/* Where: y[i] = cond ? x : yv, each operand read with its own strides over
 * the output dims[rank] (broadcast = stride 0). */
void kcpu_k_where(void *y, const uint8_t *cond, const int64_t *c_st, const void *x,
                  const int64_t *x_st, const void *yv, const int64_t *y_st, int64_t rank,
                  const int64_t *dims, int64_t esize);
/* Cast n elements between element types (codes above); saturate applies to
 * float -> integer-free 8-bit float types only, so it is ignored here.
 * Returns -1 for an unsupported pair. */
int kcpu_k_cast(const void *x, int64_t from, void *y, int64_t to, int64_t n);
/* Pad in edge (mode 1) or reflect (mode 2) mode: output dims odims[rank],
 * input dims idims, leading pads pb (may be negative). */
void kcpu_k_pad_index(const void *x, void *y, int64_t rank, const int64_t *idims,
                      const int64_t *odims, const int64_t *pb, int64_t mode, int64_t esize);

/* ---- type-generic kernels (loss.c, conv_nd.c, linalg.c): elem codes above; they
 * run on the calling thread and accumulate in double (integers: wrapping
 * int64), trading speed for coverage. Functions returning int give -1 when
 * scratch memory is short. ---- */
/* red: 0 none (y [N, inner]), 1 sum, 2 mean (y scalar); targets equal to
 * ignore (when has_ignore) contribute nothing; one outside [0, C) is an
 * index fault (fault/site, as for kcpu_k_gather); y is then partly written. */
void kcpu_k_nll(int64_t xt, const void *x, int64_t tt, const void *target, int64_t wt,
                const void *weight, void *y, int64_t N, int64_t C, int64_t inner, int64_t red,
                int64_t has_ignore, int64_t ignore, kcpu_fault *fault, int64_t site);
/* log_softmax over C (into logp_out when not NULL), then the NLL above. */
int kcpu_k_sce(int64_t xt, const void *x, int64_t tt, const void *target, int64_t wt,
               const void *weight, void *y, void *logp_out, int64_t N, int64_t C, int64_t inner,
               int64_t red, int64_t has_ignore, int64_t ignore, kcpu_fault *fault, int64_t site);
/* N-D convolution: X [N,C,idims], W [M,C/group,kdims], B [M] or NULL,
 * Y [N,M,odims]; pb: leading pads. sp <= 8 spatial dims. */
void kcpu_k_convnd(int64_t elem, const void *X, const void *W, const void *B, void *Y, int64_t N,
                   int64_t C, int64_t M, int64_t group, int64_t sp, const int64_t *idims,
                   const int64_t *odims, const int64_t *kdims, const int64_t *strides,
                   const int64_t *dil, const int64_t *pb);
/* ConvTranspose: W [C, M/group, kdims]; output cell o = i*s - pb + k*dil. */
int kcpu_k_convtransposend(int64_t elem, const void *X, const void *W, const void *B, void *Y,
                           int64_t N, int64_t C, int64_t M, int64_t group, int64_t sp,
                           const int64_t *idims, const int64_t *odims, const int64_t *kdims,
                           const int64_t *strides, const int64_t *dil, const int64_t *pb);
/* N-D pooling over [NC, idims]: mode 0 max (Ind: flat input index of the
 * first max, spatial part column-major when col_major; may be NULL),
 * 1 average (divisor: cells inside the input, or inside [-pb, in+pe) with
 * count_include_pad). */
void kcpu_k_poolnd(int64_t elem, const void *X, void *Y, int64_t *Ind, int64_t NC, int64_t sp,
                   const int64_t *idims, const int64_t *odims, const int64_t *kdims,
                   const int64_t *strides, const int64_t *dil, const int64_t *pb, const int64_t *pe,
                   int64_t mode, int64_t count_include_pad, int64_t col_major);
/* kcpu_k_matmul's contract for any numeric type. */
void kcpu_k_matmul_any(int64_t elem, int64_t batch, const int64_t *a_off, const int64_t *b_off,
                       int64_t M, int64_t N, int64_t K, const void *A, const void *B, void *C);
/* Determinants of batch [n, n] matrices (partial pivoting, in double). */
int kcpu_k_det(int64_t elem, const void *x, void *y, int64_t batch, int64_t n);

/* ---- TopK (reduce.c), scatters (index.c), Pow with mixed types
 * (elementwise.c), quantization (quant.c), Einsum (linalg.c) ---- */
/* TopK over the middle dim of [outer, n, inner] into vals / idx
 * [outer, k, inner], sorted (largest or smallest first, ties: lower index
 * first). */
int kcpu_k_topk(int64_t elem, const void *x, void *vals, int64_t *idx, int64_t outer, int64_t n,
                int64_t inner, int64_t k, int64_t largest);
/* red: 0 none, 1 add, 2 mul, 3 max, 4 min; idx_elem I32 or I64; y may be
 * data (in place). An out-of-range index is a fault (see kcpu_k_gather);
 * updates before it have been applied. */
void kcpu_k_scatter_elements(int64_t elem, const void *data, int64_t idx_elem, const void *idx,
                             const void *upd, void *y, int64_t rank, const int64_t *ddims,
                             const int64_t *idims, int64_t axis, int64_t red, kcpu_fault *fault,
                             int64_t site);
void kcpu_k_scatter_nd(int64_t elem, const void *data, int64_t idx_elem, const void *idx,
                       const void *upd, void *y, int64_t rank, const int64_t *ddims, int64_t n_idx,
                       int64_t k, int64_t red, kcpu_fault *fault, int64_t site);
/* out (a's type) = a ** b over dims[rank] with broadcast strides. */
void kcpu_k_pow_mixed(int64_t at, const void *a, const int64_t *a_st, int64_t bt, const void *b,
                      const int64_t *b_st, void *out, int64_t rank, const int64_t *dims);
void kcpu_k_dynquant(const float *x, uint8_t *y, float *scale_out, uint8_t *zp_out, int64_t n);
/* QuantizeLinear (dequant 0: saturating, half-to-even) and
 * DequantizeLinear (1) over n elements of x [xdims, rank]; scale / zp
 * (zp may be NULL) indexed per tensor (mode 0), per axis (1) or blocked
 * along axis (2; their dims sdims). */
void kcpu_k_quant(int64_t dequant, int64_t xt, const void *x, int64_t st, const void *scale,
                  int64_t zt, const void *zp, int64_t yt, void *y, int64_t n, int64_t rank,
                  const int64_t *xdims, const int64_t *sdims, int64_t mode, int64_t axis,
                  int64_t block);
/* Einsum: labels [0, n_out) index y (row-major), the rest are summed;
 * st[j*n_lab + l] is input j's stride for label l. At most 3 inputs and
 * 32 labels. */
void kcpu_k_einsum(int64_t elem, int64_t n_in, const void *x0, const void *x1, const void *x2,
                   void *y, int64_t n_lab, int64_t n_out, const int64_t *ldims, const int64_t *st);

/* f32 Resize of the last two axes of [planes, IH, IW] to [planes, OH, OW],
 * separably: nth taps per output row (hidx, weights hw as double bits),
 * ntw per output column; every tap inside the input; IW at most
 * KCPU_RS2_MAX_W. */
#define KCPU_RS2_MAX_W 8192
void kcpu_k_resize2d_f32(const float *x, float *y, int64_t planes, int64_t IH, int64_t IW,
                         int64_t OH, int64_t OW, int64_t nth, int64_t ntw, const int64_t *hidx,
                         const int64_t *hw, const int64_t *widx, const int64_t *ww,
                         struct kcpu_pool *pool);
/* ---- resize.c ---- */
/* Resize by per-axis tap tables: for axis d and result index o, taps
 * t < ntaps[d] at toff[d] + o*ntaps[d] + t in tidx (input index, -1 =
 * outside: the cell is extrap) and tw (the bits of double weights).
 * nearest copies the one tap's element. */
void kcpu_k_resize(int64_t elem, const void *x, void *y, int64_t rank, const int64_t *idims,
                   const int64_t *odims, const int64_t *ntaps, const int64_t *toff,
                   const int64_t *tidx, const int64_t *tw, int64_t nearest, double extrap);

/* ---- rnn.c ---- */
/* RNN (gates 1), GRU (3), LSTM (4); dims = {S, B, I, H, D}; reverse: the
 * single direction runs backwards (D = 2 is forward then backward);
 * act[6] activation codes per direction in the kind's order and ab[12]
 * their alphas then betas (bits of doubles); lens (lens_elem I32/I64),
 * Bias, h0, c0, P and every result may be NULL. f32 with the default
 * activations and D <= 2 takes the GEMM + matrix-vector path (lanes as for
 * the GEMM; pool may be NULL), which reads Wpk and Rpk instead of W and R
 * when they are given (W or R is then not read and may be NULL):
 *   Wpk: per direction d, op(B)[k, n] = W[d][n][k] prepacked (gemm_impl.h)
 *        with unit kcpu_gemm_nr(lanes): D groups of (R = G*H, K = I);
 *   Rpk: per direction and gate (group d*G + g), the matrix (i, k) =
 *        R[d][g*H + i][k] prepacked with unit kcpu_rnn_unit(lanes): D*G
 *        groups of (R = H, K = H).
 * The other paths never read them. Returns -1 without scratch memory. */
int kcpu_k_rnn(int64_t elem, int64_t gates, const void *X, const void *W, const void *R,
               const float *Wpk, const float *Rpk, const void *Bias, int64_t lens_elem,
               const void *lens, const void *h0, const void *c0, const void *P, void *Y, void *Yh,
               void *Yc, const int64_t *dims, int64_t reverse, int64_t layout1, int64_t lbr,
               int64_t input_forget, double clip, const int64_t *act, const int64_t *ab,
               int64_t lanes, struct kcpu_pool *pool);
/* Hidden units per block of the recurrence product: two vectors. */
static inline int64_t kcpu_rnn_unit(int64_t lanes) {
  return lanes >= 16 ? 32 : lanes >= 8 ? 16 : 8;
}

/* ---- norm_generic.c (Gemm: linalg.c): f64 / f16 / bf16
 * LayerNormalization, BatchNormalization, Softmax and Gemm, in double ---- */
/* Rows of n; scale/bias have n entries; st: element type of mean_out and
 * inv_out (either may be NULL, like bias). */
void kcpu_k_layernorm_any(int64_t elem, const void *x, const void *scale, const void *bias, void *y,
                          int64_t st, void *mean_out, void *inv_out, int64_t rows, int64_t n,
                          double eps);
void kcpu_k_batchnorm_any(int64_t elem, const void *x, const void *scale, const void *bias,
                          const void *mean, const void *var, void *y, int64_t N, int64_t C,
                          int64_t inner, double eps);
void kcpu_k_softmax_any(int64_t elem, const void *x, void *y, int64_t outer, int64_t n,
                        int64_t inner, int64_t log_);
/* kcpu_k_gemm's contract for any float type. */
void kcpu_k_gemm_any(int64_t elem, int64_t M, int64_t N, int64_t K, double alpha, double beta,
                     const void *A, int64_t ta, const void *B, int64_t tb, const void *C,
                     int64_t c_rs, int64_t c_cs, void *Y);

/* Global pooling over [NC, n] f32 (pool.c): mode 0 max, 1 average. Each
 * y[i] takes x[i*n + j] into lane j % 16 of 16 partial results in order,
 * then combines the lanes 0 to 15 (as kcpu_k_reduce does); the average
 * divides by n. */
void kcpu_k_gpool(const float *X, float *Y, int64_t NC, int64_t n, int64_t mode,
                  struct kcpu_pool *pool);

/* ---- attention (attention.c) ----
 * softmax(scale * Q Kᵀ + mask) V. sizes: B, H, Sq, Sk, D, Dv. strides: 20
 * element strides in (B, H, S, D) order for q, k, v, o, then the mask (0
 * where it broadcasts). mask_kind 0: none; 1: f32, added; 2: bool (one byte
 * per element), true keeps the score, false puts `fill`. */
void kcpu_k_attention(const float *q, const float *k, const float *v, const void *mask, float *o,
                      const int64_t *sizes, const int64_t *strides, float scale,
                      int64_t mask_kind, float fill, struct kcpu_pool *pool);

#endif
