/* tools/quant_eval.c: what quantization cost, measured. Runs the float
 * model and the quantized one side by side on held-out samples and
 * compares, per f32 output, the signal-to-quantization-noise ratio, the
 * cosine similarity, the largest error relative to the output's range and
 * the agreement of the top-1 / top-5 classes (over the last axis), and per
 * quantized node the SQNR of its result: cumulative (in the quantized
 * model, every error before it included) and isolated (its own quantized
 * copy fed with the float input). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

double quant_sqnr_db(double signal, double noise) {
  if (noise <= 0)
    return INFINITY;
  if (signal <= 0)
    return -INFINITY;
  return 10.0 * log10(signal / noise);
}

void quant_metrics_free(quant_metrics *m) {
  if (!m)
    return;
  for (uint32_t i = 0; m->out && i < m->n; i++)
    free(m->out[i].name);
  free(m->out);
  memset(m, 0, sizeof *m);
}

typedef struct ev_acc {
  double ss, ee, sq, qq, maxe, lo, hi;
  bool seen;
} ev_acc;

static void ev_add(ev_acc *a, const float *r, const float *q, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double x = r[i], y = q[i], e = x - y;
    a->ss += x * x, a->ee += e * e, a->sq += x * y, a->qq += y * y;
    if (fabs(e) > a->maxe || isnan(e))
      a->maxe = isnan(e) ? INFINITY : fabs(e);
    if (!a->seen || x < a->lo)
      a->lo = x;
    if (!a->seen || x > a->hi)
      a->hi = x;
    a->seen = true;
  }
}

/* Top-1 and top-5 agreement over rows of length c: the float model's
 * class is the quantized model's first, or among its five first. */
static void ev_topk(const float *r, const float *q, int64_t rows, int64_t c, int64_t *t1,
                    int64_t *t5) {
  for (int64_t i = 0; i < rows; i++) {
    const float *a = r + i * c, *b = q + i * c;
    int64_t ar = 0, aq = 0;
    for (int64_t j = 1; j < c; j++) {
      if (a[j] > a[ar])
        ar = j;
      if (b[j] > b[aq])
        aq = j;
    }
    *t1 += ar == aq;
    int64_t above = 0; /* classes the quantized model ranks above ar */
    for (int64_t j = 0; j < c; j++)
      above += b[j] > b[ar] || (b[j] == b[ar] && j < ar);
    *t5 += above < 5;
  }
}

static int32_t ev_watch(const quant_probe *p, const char *name) {
  for (uint32_t i = 0; name && i < p->n_watch; i++)
    if (strcmp(p->watch[i], name) == 0)
      return (int32_t)i;
  return -1;
}

kiln_status quant_evaluate(quant_probe *fprobe, quant_probe *qprobe, const quant_samples *s,
                           quant_plan *plan, bool iso, quant_metrics *out) {
  memset(out, 0, sizeof *out);
  out->top1_pct = -1;
  if (s->count == 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "no held-out samples to evaluate on");
  /* the quantized model's own f32 outputs, found by name in the float one */
  uint32_t no = qprobe->n_outputs;
  int32_t *fo = calloc(no + 1, sizeof *fo);
  ev_acc *acc = calloc(no + plan->n * 2 + 1, sizeof *acc);
  out->out = calloc(no + 1, sizeof *out->out);
  if (!fo || !acc || !out->out) {
    free(fo), free(acc);
    quant_metrics_free(out);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory evaluating");
  }
  kiln_status st = NULL;
  for (uint32_t i = 0; i < no && !st; i++) {
    kiln_io_info io;
    kiln_executable_output(qprobe->exe, i, &io);
    fo[i] = -1;
    if (io.type.elem != KILN_F32)
      continue;
    fo[i] = kiln_executable_find_output(fprobe->exe, io.name);
    if (fo[i] < 0)
      continue;
    quant_output_metrics *m = &out->out[out->n++];
    if (!(m->name = strdup(io.name)))
      st = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory evaluating");
  }
  for (uint32_t k = 0; k < s->count && !st; k++) {
    st = quant_probe_run(fprobe, s, k);
    if (!st)
      st = quant_probe_run(qprobe, s, k);
    if (st) {
      st = kiln_status_wrap(st, "running held-out sample %u", k);
      break;
    }
    uint32_t j = 0;
    for (uint32_t i = 0; i < no; i++) {
      if (fo[i] < 0)
        continue;
      kiln_io_info io;
      kiln_executable_output(qprobe->exe, i, &io);
      const float *r = fprobe->buf[fo[i]], *q = qprobe->buf[i];
      int64_t n = kiln_type_numel(&io.type);
      ev_add(&acc[j], r, q, n);
      int64_t c = io.type.rank ? io.type.dims[io.type.rank - 1] : 0;
      if (c >= 2) {
        out->out[j].rows += n / c;
        ev_topk(r, q, n / c, c, &out->out[j].top1, &out->out[j].top5);
      }
      j++;
    }
    for (uint32_t i = 0; i < plan->n; i++) {
      quant_node *qn = &plan->nodes[i];
      if (qn->state != QUANT_QDQ)
        continue;
      int32_t a = ev_watch(fprobe, qn->out), b = ev_watch(qprobe, qn->qout);
      if (a >= 0 && b >= 0)
        ev_add(&acc[no + i], quant_probe_value(fprobe, (uint32_t)a),
               quant_probe_value(qprobe, (uint32_t)b), fprobe->numel[a]);
      char on[600];
      snprintf(on, sizeof on, "kiln.iso.%s", qn->name);
      int32_t c = iso ? kiln_executable_find_output(fprobe->exe, on) : -1;
      if (a >= 0 && c >= 0)
        ev_add(&acc[no + plan->n + i], quant_probe_value(fprobe, (uint32_t)a), fprobe->buf[c],
               fprobe->numel[a]);
    }
  }
  out->min_sqnr = INFINITY;
  int64_t rows = 0, t1 = 0;
  for (uint32_t j = 0; j < out->n && !st; j++) {
    quant_output_metrics *m = &out->out[j];
    ev_acc *a = &acc[j];
    m->sqnr = quant_sqnr_db(a->ss, a->ee);
    m->cosine = a->ss > 0 && a->qq > 0 ? a->sq / sqrt(a->ss * a->qq) : (a->ee == 0 ? 1 : 0);
    m->range = a->hi - a->lo;
    m->max_err = a->maxe;
    if (m->sqnr < out->min_sqnr)
      out->min_sqnr = m->sqnr;
    rows += m->rows, t1 += m->top1;
  }
  out->top1_pct = rows ? 100.0 * (double)t1 / (double)rows : -1;
  for (uint32_t i = 0; i < plan->n && !st; i++) {
    quant_node *qn = &plan->nodes[i];
    qn->cum_sqnr = NAN;
    if (qn->state == QUANT_QDQ && acc[no + i].seen)
      qn->cum_sqnr = quant_sqnr_db(acc[no + i].ss, acc[no + i].ee);
    if (iso) {
      qn->iso_sqnr = NAN;
      if (qn->state == QUANT_QDQ && acc[no + plan->n + i].seen)
        qn->iso_sqnr = quant_sqnr_db(acc[no + plan->n + i].ss, acc[no + plan->n + i].ee);
    }
  }
  free(fo), free(acc);
  if (st)
    quant_metrics_free(out);
  return st;
}
