/* tools/quant.h: what `kiln profile` and `kiln quantize` share: sample
 * sets (calibration and held-out inputs), the value-range profile and its
 * file, the choice of quantization ranges, the rewrite of a float model
 * into its QDQ form, and the evaluation of a quantized model against the
 * float one. docs/quantization.md describes the flow and the formats. */
#ifndef KILN_TOOLS_QUANT_H
#define KILN_TOOLS_QUANT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/ir.h"
#include "kiln/kiln.h"

/* Histogram bins per value; fixed so that profiles made on different
 * machines or runs compare bin for bin. */
#define QUANT_BINS 2048
#define QUANT_PROFILE_VERSION 1

/* ---- sample sets (tools/quant_profile.c) ---- */

/* count samples, each one tensor per module input, in input order. */
typedef struct quant_samples {
  uint32_t count, n_inputs;
  char **names;   /* the inputs' names */
  kiln_tensor *t; /* [sample * n_inputs + input] */
  char *source;   /* where they came from, for the profile and the report */
} quant_samples;

void quant_samples_free(quant_samples *s);
/* count samples of m's inputs from a seeded generator: floats uniform in
 * [-1, 1), integers and bools 0 or 1 (as kiln run --random-inputs). */
kiln_status quant_samples_random(const kiln_module *m, uint32_t count, uint64_t seed,
                                 quant_samples *out);
/* Samples from files: paths[i] is "NAME=PATH" (.npy, or .pb); the k-th
 * file given for each input forms sample k, so every input needs the same
 * number of files. Shapes must match; non-finite values are refused,
 * naming the file and the element. */
kiln_status quant_samples_files(const kiln_module *m, const char *const *specs, uint32_t n,
                                quant_samples *out);

/* ---- running a model with every float value observed ---- */

/* A compiled copy of a function whose outputs are its own outputs plus
 * every f32 value named in `watch` (or, watch NULL, every f32 input and
 * node result). */
typedef struct quant_probe {
  kiln_executable *exe;
  uint32_t n_watch;
  char **watch;        /* value names, in output order after the model's */
  int32_t *out_index;  /* executable output index per watched value; -1:
                          a module input, read from the sample itself */
  int64_t *numel;      /* per watched value */
  uint32_t n_outputs;  /* the model's own outputs */
  void **buf;          /* per executable output, its last result */
  const void **in;     /* per executable input, the sample's tensor */
  int32_t *in_sample;  /* per executable input, its index in the samples */
  const quant_samples *last; /* the samples and index of the last run */
  uint32_t last_k;
} quant_probe;

kiln_status quant_probe_create(kiln_context *ctx, const kiln_module *m, const char *function,
                               const char *backend, const kiln_compile_options *opts,
                               const char *const *watch, uint32_t n_watch, quant_probe *out);
/* Run on sample k; then the watched values and outputs are in p->buf. */
kiln_status quant_probe_run(quant_probe *p, const quant_samples *s, uint32_t k);
void quant_probe_destroy(quant_probe *p);
/* The result for watched value i (f32, p->numel[i] entries). */
const float *quant_probe_value(const quant_probe *p, uint32_t i);

/* ---- the profile ---- */

typedef struct quant_range {
  char *name;
  double min, max;       /* over every sample; 0, 0 when count is 0 */
  uint64_t count;        /* finite values seen */
  uint64_t nonfinite;    /* NaN and infinities seen (not in min/max/hist) */
  double lo, hi;         /* the histogram's range: [min(min,0), max(max,0)] */
  uint64_t hist[QUANT_BINS];
} quant_range;

typedef struct quant_profile {
  char fingerprint[17]; /* 16 hex digits of the model's hash */
  char *model;          /* the model's path as given */
  char *source;         /* the calibration data's description */
  uint32_t samples;
  uint32_t n;
  quant_range *r;
} quant_profile;

void quant_profile_free(quant_profile *p);
/* A hash of f's module as it was loaded: its printed text and every
 * constant's bytes; any change to the graph or a weight changes it. */
kiln_status quant_fingerprint(const kiln_module *m, char out[17]);
/* Run the samples twice through the model on `backend`: min and max of
 * every f32 value first, then a histogram over [min(min,0), max(max,0)].
 * m is the model after quant_prepare (whose value names the rewrite
 * reads); fingerprint, that of the model as loaded, goes into the profile. */
kiln_status quant_profile_collect(kiln_context *ctx, const kiln_module *m, const char *function,
                                  const char *backend, const kiln_compile_options *opts,
                                  const quant_samples *s, const char *model_path,
                                  const char fingerprint[17], quant_profile *out);
kiln_status quant_profile_write(const char *path, const quant_profile *p);
kiln_status quant_profile_read(const char *path, quant_profile *out);
const quant_range *quant_profile_find(const quant_profile *p, const char *name);

/* ---- ranges ---- */

typedef enum quant_calib { QUANT_MINMAX, QUANT_PERCENTILE, QUANT_MSE } quant_calib;

typedef struct quant_settings {
  quant_calib calib;
  double percentile;     /* QUANT_PERCENTILE: e.g. 99.99 */
  bool per_tensor;       /* weights per tensor instead of per output channel */
  kiln_elem act;         /* KILN_U8 or KILN_I8 activations */
} quant_settings;

/* The clipping range [*lo, *hi] (containing 0) for a value's profile. */
void quant_choose_range(const quant_range *r, const quant_settings *s, double *lo, double *hi);
/* Scale and zero point for [lo, hi] in type act (u8 or i8). */
void quant_act_params(double lo, double hi, kiln_elem act, float *scale, int32_t *zp);

/* ---- the QDQ rewrite (tools/quant_rewrite.c) ---- */

/* What became of one candidate node (Conv, MatMul, Gemm). */
typedef enum quant_state {
  QUANT_QDQ = 0,       /* quantized in the QDQ form */
  QUANT_KEPT_FLOAT,    /* --keep-float matched it */
  QUANT_FALLBACK,      /* put back to float to meet the target */
  QUANT_UNSUPPORTED,   /* not a form the rewrite quantizes (why says what) */
} quant_state;

typedef struct quant_node {
  char *name;          /* the node's name in the float model */
  kiln_node_kind kind;
  char *out;           /* its (float) result value's name */
  char *qout;          /* in the QDQ model, the value that carries its
                          quantized result (its DequantizeLinear), or NULL */
  char *x;             /* its activation input's name */
  quant_state state;
  char why[160];       /* for the float states */
  double macs;
  bool int8;           /* the backend runs it as an integer kind */
  /* evaluation */
  double iso_sqnr, cum_sqnr;
} quant_node;

typedef struct quant_plan {
  uint32_t n;
  quant_node *nodes;
} quant_plan;

void quant_plan_free(quant_plan *p);
/* The graph clean-ups the compiler runs first (dce, cse, fold, simplify),
 * so that what is constant looks constant: exporters hand a shared zero
 * bias through Identity nodes, for one. Both kiln profile and kiln
 * quantize run it before anything else, so the values they name (some
 * made by the clean-ups) are the same. */
kiln_status quant_prepare(kiln_context *ctx, kiln_module *m);
/* The candidate nodes of function `function` of m, with their MACs and
 * whether each can be quantized; keep (may be NULL, n_keep patterns) are
 * fnmatch patterns on node names and kinds that stay float. */
kiln_status quant_plan_make(const kiln_module *m, const char *function,
                            const char *const *keep, uint32_t n_keep, quant_plan *out);
/* Build the QDQ module: the float function with Quantize/Dequantize pairs
 * on the inputs and results of the plan's QUANT_QDQ nodes, their weights
 * as s8 (per channel unless per_tensor), their biases as int32 at scale
 * x_scale * w_scale. iso: instead, keep the float graph whole and add, for
 * every QUANT_QDQ node, a quantized copy fed by the float input, whose
 * result is output "kiln.iso.NAME" (to measure each node alone). Caller
 * owns *out. */
kiln_status quant_rewrite(const kiln_module *m, const char *function, const quant_profile *p,
                          const quant_settings *s, quant_plan *plan, bool iso,
                          kiln_module **out);

/* ---- evaluation (tools/quant_eval.c) ---- */

typedef struct quant_output_metrics {
  char *name;
  double sqnr, cosine, max_err, range; /* max_err over range = relative */
  int64_t rows, top1, top5;            /* rows compared; 0 rows = not a score */
} quant_output_metrics;

typedef struct quant_metrics {
  uint32_t n;
  quant_output_metrics *out;
  double min_sqnr;   /* the worst output's */
  double top1_pct;   /* agreement over every scored output's rows, or -1 */
} quant_metrics;

void quant_metrics_free(quant_metrics *m);
/* Compare the quantized model (qprobe: outputs + each plan node's qout)
 * with the float one (fprobe: outputs + each plan node's out + iso
 * results when iso) on every sample; fills metrics and the plan nodes'
 * cum_sqnr (and iso_sqnr when iso). */
kiln_status quant_evaluate(quant_probe *fprobe, quant_probe *qprobe, const quant_samples *s,
                           quant_plan *plan, bool iso, quant_metrics *out);
double quant_sqnr_db(double signal, double noise);

#endif
