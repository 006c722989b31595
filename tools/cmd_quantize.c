/* tools/cmd_quantize.c: `kiln profile` (record every float value's range
 * on calibration inputs into a profile file) and `kiln quantize` (turn a
 * float model into its int8 QDQ form from a profile or from calibration
 * inputs, evaluate it against the float model on held-out inputs, fall
 * back to float node by node until a target holds, report what it cost
 * and which nodes the backend runs in integers, and write the model).
 * Nothing is written when a step fails. docs/quantization.md is the
 * user's guide. */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "quant.h"

#define QT_MAX_FILES 1024
#define QT_MAX_KEEP 64
/* Below about 30 dB a classifier's scores start to move visibly. */
#define QT_DEFAULT_SQNR 30.0

/* What both commands take: the model, calibration data and the backend. */
typedef struct qt_args {
  const char *file, *out, *profile, *report;
  const char *inputs[QT_MAX_FILES];
  uint32_t n_inputs;
  const char *eval_inputs[QT_MAX_FILES];
  uint32_t n_eval_inputs;
  uint64_t random, seed, eval;
  bool random_set;
  const char *keep[QT_MAX_KEEP];
  uint32_t n_keep;
  const char *require;
  double target_sqnr, max_top1_drop;
  quant_settings qs;
  tool_compile_args ca;
} qt_args;

static void profile_help(void) {
  printf("usage: kiln profile FILE --backend NAME -o PROFILE (--input NAME=PATH... |\n"
         "                    --random-inputs N) [options]\n\n"
         "Run FILE (.onnx or .kir) on calibration inputs and write the range of every f32\n"
         "value it computes to PROFILE, for kiln quantize. Two passes over the inputs: the\n"
         "minimum and maximum first, then a histogram of %d bins over [min(min,0),\n"
         "max(max,0)]. The profile records the model's fingerprint (a hash of its graph and\n"
         "weights) and where the data came from; docs/quantization.md has the format.\n\n"
         "  -o, --output PROFILE  the profile file to write (replaced only on success)\n"
         "  --input NAME=PATH     a calibration tensor for input NAME (.npy, or .pb); give\n"
         "                        it once per sample: the k-th file of each input forms\n"
         "                        sample k. NaN or infinite values are refused\n"
         "  --random-inputs N     N samples from a seeded generator instead (floats uniform\n"
         "                        in [-1, 1), integers 0 or 1)\n"
         "  --seed S              the generator's seed (default 1)\n"
         "%s"
         "  --help                this text\n",
         QUANT_BINS, tool_compile_args_help);
}

static void quantize_help(void) {
  printf("usage: kiln quantize FILE --backend NAME -o OUT (--profile P | --input NAME=PATH...\n"
         "                     | --random-inputs N) [options]\n\n"
         "Quantize FILE (.onnx or .kir) to int8 in the QDQ form: QuantizeLinear /\n"
         "DequantizeLinear on the activations around every Conv, MatMul and Gemm with\n"
         "constant weights, weights as s8 (symmetric), biases as int32 at scale x_scale *\n"
         "w_scale. The ranges come from a profile (kiln profile) or from calibration inputs\n"
         "given here. Then the quantized model is run beside the float one on held-out\n"
         "inputs, never the calibration ones, on BACKEND, and a report says per output the\n"
         "SQNR, cosine similarity, largest error over the output's range and top-1 / top-5\n"
         "agreement, and per node whether BACKEND runs it in integers or float and why, its\n"
         "isolated and cumulative SQNR and its share of the MACs.\n\n"
         "  -o, --output OUT      write the quantized model: .kir (text) or .onnx (opset 22,\n"
         "                        QDQ, loadable by ONNX Runtime)\n"
         "  --profile P           ranges from profile P; refused when P was made for a\n"
         "                        different model (fingerprint)\n"
         "  --input NAME=PATH     calibration tensors instead (as kiln profile)\n"
         "  --random-inputs N     N calibration samples from the seeded generator\n"
         "  --seed S              its seed (default 1)\n"
         "  --calibration C       how a range is chosen from the profile: minmax (default),\n"
         "                        percentile:P (clip the P%% tails' complement, e.g.\n"
         "                        percentile:99.99) or mse (the clip that minimizes the\n"
         "                        expected squared error over the histogram)\n"
         "  --per-tensor          one weight scale per tensor (default: per output channel)\n"
         "  --activations T       u8 (default) or s8 activations\n"
         "  --keep-float PATTERN  keep nodes whose name or kind matches PATTERN (a shell\n"
         "                        glob, e.g. 'Gemm' or 'layer4.*') in float; repeatable\n"
         "  --require-int8 KINDS  fail, writing nothing, unless BACKEND runs every node of\n"
         "                        these kinds (comma-separated, e.g. Conv,MatMul) in int8\n"
         "  --target-sqnr DB      fall back to float node by node, worst isolated SQNR first,\n"
         "                        until every output's SQNR is at least DB (default 30;\n"
         "                        off: keep every node that can be quantized)\n"
         "  --max-top1-drop PCT   likewise until top-1 agreement is at least 100 - PCT %%\n"
         "  --eval N              held-out samples from the generator (default 4; seed\n"
         "                        S + 1000003, never the calibration ones)\n"
         "  --eval-input NAME=PATH  held-out tensors from files instead (as --input)\n"
         "  --report FILE.json    also write the report as JSON\n"
         "%s"
         "  --help                this text\n\n"
         "Exit status 1 when a target cannot be met (the report says how close it came;\n"
         "nothing is written). docs/quantization.md explains the flow and the report.\n",
         tool_compile_args_help);
}

static int qt_parse_double(const char *cmd, const char *opt, const char *v, double *out) {
  char *end;
  errno = 0;
  double d = strtod(v ? v : "", &end);
  if (!v || !*v || *end || errno || !isfinite(d))
    return tool_usage_error(cmd, "%s wants a number, got '%s'", opt, v ? v : "");
  *out = d;
  return 0;
}

/* One option of either command: 1 consumed, 0 not one, else exit code. */
static int qt_arg(const char *cmd, bool quantize, int argc, char **argv, int *i, qt_args *a) {
  const char *v = NULL;
  int r;
  if ((r = tool_opt_value(argc, argv, i, "--output", &v)) != 0 ||
      (r = tool_opt_value(argc, argv, i, "-o", &v)) != 0) {
    if (r < 0)
      return tool_usage_error(cmd, "-o wants a file");
    a->out = v;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--input", &v)) != 0) {
    if (r < 0 || a->n_inputs == QT_MAX_FILES)
      return tool_usage_error(cmd, "--input wants NAME=PATH (at most %d)", QT_MAX_FILES);
    a->inputs[a->n_inputs++] = v;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--random-inputs", &v)) != 0) {
    if (r < 0 || !tool_parse_u64(v, &a->random) || a->random == 0 || a->random > 100000)
      return tool_usage_error(cmd, "--random-inputs wants a sample count from 1 to 100000");
    a->random_set = true;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--seed", &v)) != 0) {
    if (r < 0 || !tool_parse_u64(v, &a->seed))
      return tool_usage_error(cmd, "--seed wants a number");
    return 1;
  }
  if (!quantize)
    return tool_compile_arg(cmd, argc, argv, i, &a->ca);
  if ((r = tool_opt_value(argc, argv, i, "--profile", &v)) != 0) {
    if (r < 0)
      return tool_usage_error(cmd, "--profile wants a file");
    a->profile = v;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--report", &v)) != 0) {
    if (r < 0)
      return tool_usage_error(cmd, "--report wants a file");
    a->report = v;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--calibration", &v)) != 0) {
    if (r < 0)
      return tool_usage_error(cmd, "--calibration wants minmax, percentile:P or mse");
    if (strcmp(v, "minmax") == 0) {
      a->qs.calib = QUANT_MINMAX;
    } else if (strcmp(v, "mse") == 0) {
      a->qs.calib = QUANT_MSE;
    } else if (strncmp(v, "percentile:", 11) == 0) {
      if (qt_parse_double(cmd, "--calibration percentile:", v + 11, &a->qs.percentile))
        return KILN_EXIT_USAGE;
      if (!(a->qs.percentile > 50 && a->qs.percentile <= 100))
        return tool_usage_error(cmd, "percentile:P wants P in (50, 100], got %s", v + 11);
      a->qs.calib = QUANT_PERCENTILE;
    } else {
      return tool_usage_error(cmd, "--calibration '%s': expected minmax, percentile:P or mse",
                              v);
    }
    return 1;
  }
  if (strcmp(argv[*i], "--per-tensor") == 0) {
    a->qs.per_tensor = true;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--activations", &v)) != 0) {
    if (r < 0 || (strcmp(v, "u8") != 0 && strcmp(v, "s8") != 0))
      return tool_usage_error(cmd, "--activations wants u8 or s8");
    a->qs.act = strcmp(v, "u8") == 0 ? KILN_U8 : KILN_I8;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--keep-float", &v)) != 0) {
    if (r < 0 || a->n_keep == QT_MAX_KEEP)
      return tool_usage_error(cmd, "--keep-float wants a pattern (at most %d)", QT_MAX_KEEP);
    a->keep[a->n_keep++] = v;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--require-int8", &v)) != 0) {
    if (r < 0)
      return tool_usage_error(cmd, "--require-int8 wants kinds, e.g. Conv,MatMul");
    a->require = v;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--target-sqnr", &v)) != 0) {
    if (r >= 0 && strcmp(v, "off") == 0) {
      a->target_sqnr = -INFINITY;
      return 1;
    }
    if (r < 0 || qt_parse_double(cmd, "--target-sqnr", v, &a->target_sqnr))
      return KILN_EXIT_USAGE;
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--max-top1-drop", &v)) != 0) {
    if (r < 0 || qt_parse_double(cmd, "--max-top1-drop", v, &a->max_top1_drop))
      return KILN_EXIT_USAGE;
    if (a->max_top1_drop < 0 || a->max_top1_drop > 100)
      return tool_usage_error(cmd, "--max-top1-drop wants a percentage from 0 to 100");
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--eval", &v)) != 0) {
    if (r < 0 || !tool_parse_u64(v, &a->eval) || a->eval == 0 || a->eval > 100000)
      return tool_usage_error(cmd, "--eval wants a sample count from 1 to 100000");
    return 1;
  }
  if ((r = tool_opt_value(argc, argv, i, "--eval-input", &v)) != 0) {
    if (r < 0 || a->n_eval_inputs == QT_MAX_FILES)
      return tool_usage_error(cmd, "--eval-input wants NAME=PATH (at most %d)", QT_MAX_FILES);
    a->eval_inputs[a->n_eval_inputs++] = v;
    return 1;
  }
  return tool_compile_arg(cmd, argc, argv, i, &a->ca);
}

static int qt_parse(const char *cmd, bool quantize, int argc, char **argv, qt_args *a) {
  memset(a, 0, sizeof *a);
  a->seed = 1;
  a->eval = 4;
  a->target_sqnr = QT_DEFAULT_SQNR;
  a->max_top1_drop = -1;
  a->qs.act = KILN_U8;
  a->qs.calib = QUANT_MINMAX;
  tool_compile_args_init(&a->ca);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      if (quantize)
        quantize_help();
      else
        profile_help();
      return -1;
    }
    int r = qt_arg(cmd, quantize, argc, argv, &i, a);
    if (r == 1)
      continue;
    if (r != 0)
      return r;
    if (argv[i][0] == '-' && argv[i][1])
      return tool_usage_error(cmd, "unknown option '%s'", argv[i]);
    if (a->file)
      return tool_usage_error(cmd, "more than one FILE ('%s' and '%s')", a->file, argv[i]);
    a->file = argv[i];
  }
  if (!a->file)
    return tool_usage_error(cmd, "missing FILE");
  if (!a->ca.backend)
    return tool_usage_error(cmd, "missing --backend NAME (the backend that runs the model "
                                 "for measuring; see kiln backends)");
  if (!a->out)
    return tool_usage_error(cmd, "missing -o %s", quantize ? "OUT (.kir or .onnx)" : "PROFILE");
  bool calib = a->n_inputs || a->random_set;
  if (a->n_inputs && a->random_set)
    return tool_usage_error(cmd, "give calibration data with --input or --random-inputs, not "
                                 "both");
  if (quantize && a->profile && calib)
    return tool_usage_error(cmd, "--profile already holds the ranges; --input and "
                                 "--random-inputs make new ones: give one or the other");
  if (!calib && !(quantize && a->profile))
    return tool_usage_error(cmd, "no calibration data: give --input NAME=PATH (per sample)%s or "
                                 "--random-inputs N",
                            quantize ? ", --profile P" : "");
  if (quantize) {
    size_t n = strlen(a->out);
    bool kir = n > 4 && strcmp(a->out + n - 4, ".kir") == 0;
    bool onnx = n > 5 && strcmp(a->out + n - 5, ".onnx") == 0;
    if (!kir && !onnx)
      return tool_usage_error(cmd, "-o '%s': the quantized model is written as .kir or .onnx",
                              a->out);
  }
  return 0;
}

static kiln_status qt_calibration(const qt_args *a, const kiln_module *m, quant_samples *s) {
  if (a->n_inputs)
    return quant_samples_files(m, a->inputs, a->n_inputs, s);
  return quant_samples_random(m, (uint32_t)a->random, a->seed, s);
}

int kiln_cmd_profile(int argc, char **argv) {
  qt_args *a = malloc(sizeof *a);
  if (!a)
    return tool_fail(kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory"));
  int r = qt_parse("profile", false, argc, argv, a);
  if (r) {
    free(a);
    return r < 0 ? KILN_EXIT_OK : r;
  }
  kiln_context *ctx = NULL;
  kiln_module *m = NULL;
  quant_samples s = {0};
  quant_profile p = {0};
  double t0 = tool_now_ms();
  char fp[17] = "";
  kiln_status st = kiln_context_create(&ctx);
  if (!st)
    st = tool_load_module(a->file, &a->ca.dims, ctx, &m);
  if (!st)
    st = quant_fingerprint(m, fp);
  if (!st)
    st = quant_prepare(ctx, m);
  if (!st)
    st = qt_calibration(a, m, &s);
  if (!st)
    st = quant_profile_collect(ctx, m, a->ca.function, a->ca.backend, &a->ca.opts, &s, a->file,
                               fp, &p);
  if (!st)
    st = quant_profile_write(a->out, &p);
  if (!st) {
    uint32_t nonfinite = 0;
    for (uint32_t i = 0; i < p.n; i++)
      nonfinite += p.r[i].nonfinite > 0;
    printf("profiled %u values of %s over %u samples (%s) on %s in %.0f ms: wrote %s\n", p.n,
           a->file, p.samples, p.source, a->ca.backend, tool_now_ms() - t0, a->out);
    if (nonfinite)
      printf("note: %u values were NaN or infinite somewhere; their ranges leave those out\n",
             nonfinite);
  }
  quant_profile_free(&p);
  quant_samples_free(&s);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  free(a);
  return st ? tool_fail(st) : KILN_EXIT_OK;
}

/* ------------------------------------------------------------- quantize */

static const char *qt_state_name(const quant_node *q) {
  if (q->state == QUANT_QDQ)
    return q->int8 ? "int8" : "float";
  return "float";
}

static const char *qt_why(const quant_node *q, const char *backend, char *buf, size_t size) {
  if (q->state == QUANT_QDQ) {
    if (q->int8)
      return "";
    snprintf(buf, size, "quantized (QDQ), but %s runs it in float: no integer kernel for "
                        "this form", backend);
    return buf;
  }
  return q->why;
}

/* Which QDQ nodes the backend runs as integer kinds: compile the model
 * and look for QLinearConv / QLinearMatMul made from them (a fused node
 * is named after its first node, "conv" or "conv+1"). */
static kiln_status qt_mark_int8(kiln_context *ctx, const kiln_module *q, const qt_args *a,
                                quant_plan *plan) {
  kiln_executable *exe = NULL;
  KILN_TRY(kiln_compile(ctx, q, a->ca.function, a->ca.backend, &a->ca.opts, &exe));
  uint32_t nr = kiln_executable_region_count(exe);
  for (uint32_t ri = 0; ri < nr; ri++) {
    const kiln_ir *ir = NULL;
    if (nr == 1 && kiln_executable_ir(exe)) {
      ir = kiln_executable_ir(exe);
    } else {
      kiln_region_info info = {.struct_size = sizeof info};
      kiln_status s = kiln_executable_region(exe, ri, &info);
      if (s) {
        kiln_executable_destroy(exe);
        return s;
      }
      ir = info.exe ? kiln_executable_ir(info.exe) : NULL;
    }
    for (uint32_t i = 0; ir && i < kiln_ir_instr_count(ir); i++) {
      const kiln_instr *in = kiln_ir_instr(ir, i);
      int k = kiln_instr_kind_node(kiln_instr_get_kind(in));
      const char *nm = kiln_instr_name(in);
      if ((k != KILN_NODE_QLinearConv && k != KILN_NODE_QLinearMatMul) || !nm)
        continue;
      for (uint32_t j = 0; j < plan->n; j++) {
        size_t l = strlen(plan->nodes[j].name);
        if (strncmp(nm, plan->nodes[j].name, l) == 0 && (nm[l] == '\0' || nm[l] == '+'))
          plan->nodes[j].int8 = true;
      }
    }
  }
  kiln_executable_destroy(exe);
  return NULL;
}

static void qt_db(char *buf, size_t size, double v) {
  if (isnan(v))
    snprintf(buf, size, "-");
  else if (isinf(v))
    snprintf(buf, size, v > 0 ? "exact" : "-inf");
  else
    snprintf(buf, size, "%.1f", v);
}

static void qt_print(const qt_args *a, const quant_profile *p, const quant_samples *ev,
                     const quant_plan *plan, const quant_metrics *m, double total_macs) {
  static const char *calib[] = {"minmax", "percentile", "mse"};
  printf("calibration: %s (%u samples, profile fingerprint %s); ranges by %s", p->source,
         p->samples, p->fingerprint, calib[a->qs.calib]);
  if (a->qs.calib == QUANT_PERCENTILE)
    printf(":%g", a->qs.percentile);
  printf("; weights s8 %s; activations %s\n", a->qs.per_tensor ? "per tensor" : "per channel",
         a->qs.act == KILN_U8 ? "u8" : "s8");
  printf("held out: %s; measured on %s\n\n", ev->source, a->ca.backend);
  printf("%-24s %8s %9s %12s %7s %7s\n", "output", "SQNR dB", "cosine", "max err/rng", "top-1",
         "top-5");
  for (uint32_t i = 0; i < m->n; i++) {
    const quant_output_metrics *o = &m->out[i];
    char db[32], t1[16] = "-", t5[16] = "-";
    qt_db(db, sizeof db, o->sqnr);
    if (o->rows) {
      snprintf(t1, sizeof t1, "%.1f%%", 100.0 * (double)o->top1 / (double)o->rows);
      snprintf(t5, sizeof t5, "%.1f%%", 100.0 * (double)o->top5 / (double)o->rows);
    }
    printf("%-24s %8s %9.6f %12.6f %7s %7s\n", o->name, db, o->cosine,
           o->range > 0 ? o->max_err / o->range : o->max_err, t1, t5);
  }
  uint32_t n8 = 0;
  double macs8 = 0;
  int w = 20; /* the longest node name, within reason */
  for (uint32_t i = 0; i < plan->n; i++) {
    int l = (int)strlen(plan->nodes[i].name);
    w = l > w ? (l < 64 ? l : 64) : w;
  }
  printf("\n%-*s %-7s %-6s %7s %9s %9s  %s\n", w, "node", "kind", "runs", "MACs%", "isol dB",
         "cumul dB", "why float");
  for (uint32_t i = 0; i < plan->n; i++) {
    const quant_node *q = &plan->nodes[i];
    char iso[32], cum[32], why[256];
    qt_db(iso, sizeof iso, q->state == QUANT_QDQ || q->state == QUANT_FALLBACK ? q->iso_sqnr : NAN);
    qt_db(cum, sizeof cum, q->state == QUANT_QDQ ? q->cum_sqnr : NAN);
    printf("%-*s %-7s %-6s %6.1f%% %9s %9s  %s\n", w, q->name, kiln_node_kind_name(q->kind),
           qt_state_name(q), total_macs > 0 ? 100.0 * q->macs / total_macs : 0.0, iso, cum,
           qt_why(q, a->ca.backend, why, sizeof why));
    if (q->state == QUANT_QDQ && q->int8)
      n8++, macs8 += q->macs;
  }
  printf("\n%u of %u nodes run in int8 on %s (%.1f%% of the MACs)\n", n8, plan->n,
         a->ca.backend, total_macs > 0 ? 100.0 * macs8 / total_macs : 0.0);
}

/* JSON has no infinity: an exact match is written as null with "exact". */
static void qt_json_num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, "%.6g", v);
  else
    fputs("null", f);
}

static kiln_status qt_write_report(const qt_args *a, const quant_profile *p,
                                   const quant_samples *ev, const quant_plan *plan,
                                   const quant_metrics *m, double total_macs) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", a->report);
  FILE *f = fopen(tmp, "w");
  if (!f)
    return kiln_status_make(KILN_IO_ERROR, "cannot write %s: %s", tmp, strerror(errno));
  static const char *calib[] = {"minmax", "percentile", "mse"};
  fputs("{\n  \"model\": ", f);
  tool_json_string(f, a->file);
  fputs(",\n  \"output\": ", f);
  tool_json_string(f, a->out);
  fputs(",\n  \"backend\": ", f);
  tool_json_string(f, a->ca.backend);
  fprintf(f, ",\n  \"fingerprint\": \"%s\",\n  \"calibration\": {\"source\": ", p->fingerprint);
  tool_json_string(f, p->source);
  fprintf(f, ", \"samples\": %u, \"method\": \"%s\", \"percentile\": ", p->samples,
          calib[a->qs.calib]);
  qt_json_num(f, a->qs.calib == QUANT_PERCENTILE ? a->qs.percentile : NAN);
  fprintf(f, ", \"weights\": \"%s\", \"activations\": \"%s\"},\n  \"held_out\": ",
          a->qs.per_tensor ? "per-tensor" : "per-channel", a->qs.act == KILN_U8 ? "u8" : "s8");
  tool_json_string(f, ev->source);
  fputs(",\n  \"outputs\": [", f);
  for (uint32_t i = 0; i < m->n; i++) {
    const quant_output_metrics *o = &m->out[i];
    fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
    tool_json_string(f, o->name);
    fputs(", \"sqnr_db\": ", f);
    qt_json_num(f, o->sqnr);
    fprintf(f, ", \"exact\": %s, \"cosine\": ", isinf(o->sqnr) && o->sqnr > 0 ? "true" : "false");
    qt_json_num(f, o->cosine);
    fputs(", \"max_error\": ", f);
    qt_json_num(f, o->max_err);
    fputs(", \"range\": ", f);
    qt_json_num(f, o->range);
    fprintf(f, ", \"rows\": %lld, \"top1\": %lld, \"top5\": %lld}", (long long)o->rows,
            (long long)o->top1, (long long)o->top5);
  }
  fputs("\n  ],\n  \"nodes\": [", f);
  for (uint32_t i = 0; i < plan->n; i++) {
    const quant_node *q = &plan->nodes[i];
    static const char *states[] = {"qdq", "kept-float", "fallback", "unsupported"};
    char why[256];
    fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
    tool_json_string(f, q->name);
    fprintf(f, ", \"kind\": \"%s\", \"state\": \"%s\", \"runs\": \"%s\", \"why\": ",
            kiln_node_kind_name(q->kind), states[q->state], qt_state_name(q));
    tool_json_string(f, qt_why(q, a->ca.backend, why, sizeof why));
    fputs(", \"macs\": ", f);
    qt_json_num(f, q->macs);
    fputs(", \"macs_share\": ", f);
    qt_json_num(f, total_macs > 0 ? q->macs / total_macs : 0);
    fputs(", \"isolated_sqnr_db\": ", f);
    qt_json_num(f, q->state == QUANT_QDQ || q->state == QUANT_FALLBACK ? q->iso_sqnr : NAN);
    fputs(", \"cumulative_sqnr_db\": ", f);
    qt_json_num(f, q->state == QUANT_QDQ ? q->cum_sqnr : NAN);
    fputs("}", f);
  }
  fputs("\n  ]\n}\n", f);
  bool bad = ferror(f) != 0;
  bad = fclose(f) != 0 || bad;
  if (bad || rename(tmp, a->report) != 0) {
    kiln_status s =
        kiln_status_make(KILN_IO_ERROR, "writing %s failed: %s", a->report, strerror(errno));
    remove(tmp);
    return s;
  }
  return NULL;
}

static kiln_status qt_write_model(const char *path, const kiln_module *q) {
  size_t n = strlen(path);
  if (n > 5 && strcmp(path + n - 5, ".onnx") == 0)
    return kiln_onnx_save(q, NULL, path); /* written whole or not at all */
  char *text = NULL;
  KILN_TRY(kiln_module_print(q, &text));
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  kiln_status s = NULL;
  if (!f) {
    s = kiln_status_make(KILN_IO_ERROR, "cannot write %s: %s", tmp, strerror(errno));
  } else {
    bool bad = fputs(text, f) < 0;
    bad = fclose(f) != 0 || bad;
    if (bad || rename(tmp, path) != 0) {
      s = kiln_status_make(KILN_IO_ERROR, "writing %s failed: %s", path, strerror(errno));
      remove(tmp);
    }
  }
  kiln_module_free_string(q, text);
  return s;
}

/* Does the result meet the targets? */
static bool qt_met(const qt_args *a, const quant_metrics *m) {
  if (m->min_sqnr < a->target_sqnr)
    return false;
  if (a->max_top1_drop >= 0 && m->top1_pct >= 0 && m->top1_pct < 100.0 - a->max_top1_drop)
    return false;
  return true;
}

/* The QDQ node to put back to float next: the worst isolated SQNR. */
static quant_node *qt_worst(quant_plan *plan) {
  quant_node *w = NULL;
  for (uint32_t i = 0; i < plan->n; i++) {
    quant_node *q = &plan->nodes[i];
    if (q->state != QUANT_QDQ)
      continue;
    double v = isnan(q->iso_sqnr) ? -INFINITY : q->iso_sqnr;
    double wv = w ? (isnan(w->iso_sqnr) ? -INFINITY : w->iso_sqnr) : INFINITY;
    if (!w || v < wv)
      w = q;
  }
  return w;
}

/* The watch list of a probe: each QDQ node's float result (qout false)
 * or quantized result (qout true). */
static kiln_status qt_watch(const quant_plan *plan, bool qout, const char ***out, uint32_t *n) {
  *n = 0;
  *out = calloc(plan->n + 1, sizeof **out);
  if (!*out)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
  for (uint32_t i = 0; i < plan->n; i++) {
    const quant_node *q = &plan->nodes[i];
    if (q->state != QUANT_QDQ || (qout && !q->qout))
      continue;
    bool dup = false; /* two nodes can share a value only through a bug; keep one */
    const char *v = qout ? q->qout : q->out;
    for (uint32_t j = 0; j < *n; j++)
      dup = dup || strcmp((*out)[j], v) == 0;
    if (!dup)
      (*out)[(*n)++] = v;
  }
  return NULL;
}

/* --require-int8: every node of the listed kinds runs in int8. */
static kiln_status qt_require(const qt_args *a, const quant_plan *plan) {
  if (!a->require)
    return NULL;
  char list[2048] = "";
  size_t len = 0;
  uint32_t bad = 0;
  char kinds[512];
  snprintf(kinds, sizeof kinds, "%s", a->require);
  for (char *save = NULL, *k = strtok_r(kinds, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
    kiln_node_kind kk;
    if (!kiln_node_kind_from_name(k, &kk))
      return kiln_status_make(KILN_INVALID_ARGUMENT, "--require-int8: '%s' is not a node kind",
                              k);
    for (uint32_t i = 0; i < plan->n; i++) {
      const quant_node *q = &plan->nodes[i];
      if (q->kind != kk || (q->state == QUANT_QDQ && q->int8))
        continue;
      char why[256];
      if (bad++ < 8 && len < sizeof list - 1)
        len += (size_t)snprintf(list + len, sizeof list - len, "\n  %s (%s): %s", q->name, k,
                                qt_why(q, a->ca.backend, why, sizeof why));
    }
  }
  if (bad)
    return kiln_status_make(KILN_FAILED_PRECONDITION,
                            "--require-int8 %s: %u node%s would not run in int8 on %s, so "
                            "nothing was written:%s%s",
                            a->require, bad, bad == 1 ? "" : "s", a->ca.backend, list,
                            bad > 8 ? "\n  ..." : "");
  return NULL;
}

typedef struct qt_state {
  kiln_context *ctx;
  kiln_module *m, *fmod, *qmod;
  quant_samples calib, ev;
  quant_profile prof;
  quant_plan plan;
  quant_probe fprobe, qprobe;
  quant_metrics metrics;
} qt_state;

static void qt_state_free(qt_state *q) {
  quant_metrics_free(&q->metrics);
  quant_probe_destroy(&q->fprobe);
  quant_probe_destroy(&q->qprobe);
  quant_plan_free(&q->plan);
  quant_profile_free(&q->prof);
  quant_samples_free(&q->calib);
  quant_samples_free(&q->ev);
  kiln_module_destroy(q->qmod);
  kiln_module_destroy(q->fmod);
  kiln_module_destroy(q->m);
  kiln_context_destroy(q->ctx);
}

/* Ranges: read (and check the fingerprint fp of the model as loaded) or
 * measure on the prepared model. */
static kiln_status qt_ranges(const qt_args *a, qt_state *q, const char fp[17]) {
  if (!a->profile) {
    KILN_TRY(qt_calibration(a, q->m, &q->calib));
    return quant_profile_collect(q->ctx, q->m, a->ca.function, a->ca.backend, &a->ca.opts,
                                 &q->calib, a->file, fp, &q->prof);
  }
  KILN_TRY(quant_profile_read(a->profile, &q->prof));
  if (strcmp(fp, q->prof.fingerprint) != 0)
    return kiln_status_make(KILN_FAILED_PRECONDITION,
                            "profile %s was made for a different model (%s, fingerprint %s); "
                            "%s has fingerprint %s. Make a new one with kiln profile %s",
                            a->profile, q->prof.model, q->prof.fingerprint, a->file, fp, a->file);
  return NULL;
}

/* One round: rewrite, compile the quantized probe, evaluate. */
static kiln_status qt_round(const qt_args *a, qt_state *q, bool iso) {
  kiln_module_destroy(q->qmod);
  q->qmod = NULL;
  quant_probe_destroy(&q->qprobe);
  quant_metrics_free(&q->metrics);
  KILN_TRY(quant_rewrite(q->m, a->ca.function, &q->prof, &a->qs, &q->plan, false, &q->qmod));
  const char **w = NULL;
  uint32_t nw = 0;
  KILN_TRY(qt_watch(&q->plan, true, &w, &nw));
  kiln_status s = quant_probe_create(q->ctx, q->qmod, a->ca.function, a->ca.backend, &a->ca.opts,
                                     w, nw, &q->qprobe);
  free(w);
  if (s)
    return kiln_status_wrap(s, "compiling the quantized model for measuring");
  return quant_evaluate(&q->fprobe, &q->qprobe, &q->ev, &q->plan, iso, &q->metrics);
}

static kiln_status qt_run(const qt_args *a, qt_state *q) {
  KILN_TRY(kiln_context_create(&q->ctx));
  KILN_TRY(tool_load_module(a->file, &a->ca.dims, q->ctx, &q->m));
  char fp[17];
  KILN_TRY(quant_fingerprint(q->m, fp));
  KILN_TRY(quant_prepare(q->ctx, q->m));
  KILN_TRY(qt_ranges(a, q, fp));
  if (a->n_eval_inputs)
    KILN_TRY(quant_samples_files(q->m, a->eval_inputs, a->n_eval_inputs, &q->ev));
  else
    KILN_TRY(quant_samples_random(q->m, (uint32_t)a->eval, a->seed + 1000003, &q->ev));
  KILN_TRY(quant_plan_make(q->m, a->ca.function, a->keep, a->n_keep, &q->plan));
  /* the float side: the model plus each node's quantized copy alone */
  KILN_TRY(quant_rewrite(q->m, a->ca.function, &q->prof, &a->qs, &q->plan, true, &q->fmod));
  const char **w = NULL;
  uint32_t nw = 0;
  KILN_TRY(qt_watch(&q->plan, false, &w, &nw));
  kiln_status s = quant_probe_create(q->ctx, q->fmod, a->ca.function, a->ca.backend, &a->ca.opts,
                                     w, nw, &q->fprobe);
  free(w);
  if (s)
    return kiln_status_wrap(s, "compiling the float model for measuring");
  KILN_TRY(qt_round(a, q, true));
  uint32_t fell = 0;
  while (!qt_met(a, &q->metrics)) {
    quant_node *worst = qt_worst(&q->plan);
    if (!worst)
      break;
    char db[32], was[32];
    qt_db(db, sizeof db, worst->iso_sqnr);
    qt_db(was, sizeof was, q->metrics.min_sqnr);
    worst->state = QUANT_FALLBACK;
    snprintf(worst->why, sizeof worst->why,
             "fell back to meet the target (isolated SQNR %s dB; output was %s dB)", db, was);
    fell++;
    KILN_TRY(qt_round(a, q, false));
    char now[32];
    qt_db(now, sizeof now, q->metrics.min_sqnr);
    printf("fallback %u: %s (%s, isolated %s dB) to float: output SQNR %s -> %s dB", fell,
           worst->name, kiln_node_kind_name(worst->kind), db, was, now);
    if (q->metrics.top1_pct >= 0)
      printf(", top-1 %.1f%%", q->metrics.top1_pct);
    printf("\n");
  }
  return qt_mark_int8(q->ctx, q->qmod, a, &q->plan);
}

int kiln_cmd_quantize(int argc, char **argv) {
  qt_args *a = malloc(sizeof *a);
  qt_state *q = calloc(1, sizeof *q);
  if (!a || !q) {
    free(a), free(q);
    return tool_fail(kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory"));
  }
  int r = qt_parse("quantize", true, argc, argv, a);
  if (r) {
    free(a), free(q);
    return r < 0 ? KILN_EXIT_OK : r;
  }
  double t0 = tool_now_ms();
  kiln_status s = qt_run(a, q);
  double total = 0;
  for (uint32_t i = 0; !s && i < q->plan.n; i++)
    total += q->plan.nodes[i].macs;
  if (!s) {
    printf("kiln quantize: %s on %s in %.0f ms\n", a->file, a->ca.backend, tool_now_ms() - t0);
    qt_print(a, &q->prof, &q->ev, &q->plan, &q->metrics, total);
  }
  bool met = !s && qt_met(a, &q->metrics);
  if (!s && !met) {
    char db[32];
    qt_db(db, sizeof db, q->metrics.min_sqnr);
    s = kiln_status_make(KILN_FAILED_PRECONDITION,
                         "the target does not hold even with every node in float (output SQNR "
                         "%s dB); nothing was written",
                         db);
  }
  if (!s)
    s = qt_require(a, &q->plan);
  if (!s)
    s = qt_write_model(a->out, q->qmod);
  if (!s && a->report)
    s = qt_write_report(a, &q->prof, &q->ev, &q->plan, &q->metrics, total);
  if (!s)
    printf("wrote %s%s%s\n", a->out, a->report ? " and " : "", a->report ? a->report : "");
  qt_state_free(q);
  free(q);
  free(a);
  return s ? tool_fail(s) : KILN_EXIT_OK;
}
