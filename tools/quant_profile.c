/* tools/quant_profile.c: the measuring half of quantization. Sample sets
 * (calibration or held-out inputs, from files or a seeded generator), a
 * compiled copy of a model that hands back every float value it computes
 * (the probe), the value-range profile made from it in two passes (min and
 * max first, then a histogram over that fixed range, so that no bin is
 * ever merged or rescaled), the profile's text file, the model fingerprint
 * that ties a profile to its model, and the choice of a clipping range
 * from a profile (minmax, percentile, mse). docs/quantization.md gives
 * the file format. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "quant.h"

static kiln_status quant_oom(const char *what) {
  return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory for %s", what);
}

/* ---------------------------------------------------------------- samples */

void quant_samples_free(quant_samples *s) {
  if (!s)
    return;
  for (uint64_t i = 0; s->t && i < (uint64_t)s->count * s->n_inputs; i++)
    kiln_tensor_free(&s->t[i]);
  for (uint32_t i = 0; s->names && i < s->n_inputs; i++)
    free(s->names[i]);
  free(s->t);
  free(s->names);
  free(s->source);
  memset(s, 0, sizeof *s);
}

static kiln_status quant_samples_alloc(const kiln_module *m, uint32_t count, quant_samples *out) {
  memset(out, 0, sizeof *out);
  out->n_inputs = kiln_module_input_count(m);
  out->count = count;
  out->names = calloc(out->n_inputs ? out->n_inputs : 1, sizeof *out->names);
  out->t = calloc((size_t)count * out->n_inputs + 1, sizeof *out->t);
  if (!out->names || !out->t) {
    quant_samples_free(out);
    return quant_oom("the samples");
  }
  for (uint32_t i = 0; i < out->n_inputs; i++)
    if (!(out->names[i] = strdup(kiln_value_name(kiln_module_input(m, i))))) {
      quant_samples_free(out);
      return quant_oom("the samples");
    }
  return NULL;
}

kiln_status quant_samples_random(const kiln_module *m, uint32_t count, uint64_t seed,
                                 quant_samples *out) {
  KILN_TRY(quant_samples_alloc(m, count, out));
  uint64_t state = seed;
  for (uint32_t k = 0; k < count; k++)
    for (uint32_t i = 0; i < out->n_inputs; i++) {
      const kiln_value *v = kiln_module_input(m, i);
      kiln_status s = tool_random_tensor(kiln_value_name(v), kiln_value_type(v), &state,
                                         &out->t[(size_t)k * out->n_inputs + i]);
      if (s) {
        quant_samples_free(out);
        return s;
      }
    }
  char buf[96];
  snprintf(buf, sizeof buf, "random-inputs %u seed %llu", count, (unsigned long long)seed);
  if (!(out->source = strdup(buf))) {
    quant_samples_free(out);
    return quant_oom("the samples");
  }
  return NULL;
}

/* The first element of t that is NaN or infinite, or -1. */
static int64_t quant_first_nonfinite(const kiln_tensor *t) {
  if (!kiln_elem_is_float(t->type.elem))
    return -1;
  int64_t n = kiln_type_numel(&t->type);
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(kiln_elem_load_f64(t->type.elem, t->data, i)))
      return i;
  return -1;
}

static kiln_status quant_read_tensor(const char *path, kiln_tensor *t) {
  size_t n = strlen(path);
  if (n > 3 && strcmp(path + n - 3, ".pb") == 0)
    return kiln_tensor_read_pb(path, t);
  return kiln_tensor_read_npy(path, t);
}

kiln_status quant_samples_files(const kiln_module *m, const char *const *specs, uint32_t n,
                                quant_samples *out) {
  memset(out, 0, sizeof *out);
  uint32_t ni = kiln_module_input_count(m);
  uint32_t *per = calloc(ni + 1, sizeof *per);
  if (!per)
    return quant_oom("the samples");
  kiln_status s = NULL;
  /* Count the files per input, checking the names first. */
  for (uint32_t j = 0; j < n && !s; j++) {
    const char *eq = strchr(specs[j], '=');
    if (!eq || eq == specs[j] || !eq[1]) {
      s = kiln_status_make(KILN_INVALID_ARGUMENT, "--input '%s': expected NAME=PATH", specs[j]);
      break;
    }
    uint32_t i = 0;
    while (i < ni && (strlen(kiln_value_name(kiln_module_input(m, i))) != (size_t)(eq - specs[j]) ||
                      strncmp(kiln_value_name(kiln_module_input(m, i)), specs[j],
                              (size_t)(eq - specs[j])) != 0))
      i++;
    if (i == ni)
      s = kiln_status_make(KILN_NOT_FOUND, "--input '%s': the model has no input '%.*s'", specs[j],
                           (int)(eq - specs[j]), specs[j]);
    else
      per[i]++;
  }
  uint32_t count = ni ? per[0] : 0;
  for (uint32_t i = 0; i < ni && !s; i++)
    if (per[i] != count)
      s = kiln_status_make(KILN_INVALID_ARGUMENT,
                           "every input needs the same number of files: '%s' has %u, '%s' has %u",
                           kiln_value_name(kiln_module_input(m, 0)), count,
                           kiln_value_name(kiln_module_input(m, i)), per[i]);
  if (!s && count == 0)
    s = kiln_status_make(KILN_INVALID_ARGUMENT, "no calibration samples: give each input's files "
                                                "with --input NAME=PATH, or --random-inputs N");
  if (!s)
    s = quant_samples_alloc(m, count, out);
  if (s) {
    free(per);
    return s;
  }
  memset(per, 0, (ni + 1) * sizeof *per);
  for (uint32_t j = 0; j < n && !s; j++) {
    const char *eq = strchr(specs[j], '=');
    uint32_t i = 0;
    while (strlen(out->names[i]) != (size_t)(eq - specs[j]) ||
           strncmp(out->names[i], specs[j], (size_t)(eq - specs[j])) != 0)
      i++;
    kiln_tensor *t = &out->t[(size_t)per[i]++ * ni + i];
    const kiln_type *want = kiln_value_type(kiln_module_input(m, i));
    s = quant_read_tensor(eq + 1, t);
    if (!s && (t->type.elem != want->elem || !kiln_type_same_shape(&t->type, want))) {
      char a[160], b[160];
      kiln_type_format(want, a, sizeof a);
      kiln_type_format(&t->type, b, sizeof b);
      s = kiln_status_make(KILN_INVALID_ARGUMENT, "input '%s' is %s but %s holds %s",
                           out->names[i], a, eq + 1, b);
    }
    int64_t bad = s ? -1 : quant_first_nonfinite(t);
    if (bad >= 0)
      s = kiln_status_make(KILN_INVALID_ARGUMENT,
                           "%s: element %lld is %g; calibration data must be finite", eq + 1,
                           (long long)bad, kiln_elem_load_f64(t->type.elem, t->data, bad));
  }
  free(per);
  char buf[64];
  snprintf(buf, sizeof buf, "files %u samples", count);
  if (!s && !(out->source = strdup(buf)))
    s = quant_oom("the samples");
  if (s)
    quant_samples_free(out);
  return s;
}

/* ------------------------------------------------------------------ probe */

void quant_probe_destroy(quant_probe *p) {
  if (!p)
    return;
  uint32_t no = p->exe ? kiln_executable_output_count(p->exe) : 0;
  for (uint32_t i = 0; p->buf && i < no; i++)
    free(p->buf[i]);
  for (uint32_t i = 0; p->watch && i < p->n_watch; i++)
    free(p->watch[i]);
  free(p->buf);
  free(p->watch);
  free(p->out_index);
  free(p->numel);
  free(p->in);
  free(p->in_sample);
  kiln_executable_destroy(p->exe);
  memset(p, 0, sizeof *p);
}

static bool quant_is_input(const kiln_value *v) {
  return kiln_value_get_kind(v) == KILN_VALUE_INPUT;
}

/* The watch list when none is given: every f32 result of f's nodes. */
static kiln_status quant_default_watch(const kiln_function *f, quant_probe *p) {
  uint32_t cap = 0;
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++)
    cap += kiln_node_result_count(kiln_function_node(f, i));
  p->watch = calloc(cap + 1, sizeof *p->watch);
  if (!p->watch)
    return quant_oom("the probe");
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++) {
    const kiln_node *n = kiln_function_node(f, i);
    for (uint32_t r = 0; r < kiln_node_result_count(n); r++) {
      const kiln_value *v = kiln_node_result(n, r);
      if (kiln_value_type(v)->elem != KILN_F32 || kiln_value_use_count(v) == 0)
        continue;
      if (!(p->watch[p->n_watch++] = strdup(kiln_value_name(v))))
        return quant_oom("the probe");
    }
  }
  return NULL;
}

/* Add the outputs that expose the watched values to clone c's function. */
static kiln_status quant_expose(kiln_function *f, quant_probe *p, char ***out_names) {
  kiln_module *m = kiln_function_module(f);
  char **names = calloc(p->n_watch + 1, sizeof *names);
  if (!names)
    return quant_oom("the probe");
  *out_names = names;
  for (uint32_t i = 0; i < p->n_watch; i++) {
    kiln_value *v = kiln_module_find_value(m, p->watch[i]);
    if (!v)
      return kiln_status_make(KILN_NOT_FOUND, "the model has no value '%s'", p->watch[i]);
    if (kiln_value_type(v)->elem != KILN_F32)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "value '%s' is not f32", p->watch[i]);
    if (quant_is_input(v))
      continue;
    /* an output already bound to v exposes it as it is */
    for (uint32_t o = 0; o < kiln_function_output_count(f) && !names[i]; o++)
      if (kiln_function_output_value(f, o) == v &&
          !(names[i] = strdup(kiln_function_output_name(f, o))))
        return quant_oom("the probe");
    if (names[i])
      continue;
    char buf[48];
    snprintf(buf, sizeof buf, "kiln.watch.%u", i);
    if (!(names[i] = strdup(buf)))
      return quant_oom("the probe");
    KILN_TRY(kiln_function_add_output(f, buf, v));
  }
  return NULL;
}

kiln_status quant_probe_create(kiln_context *ctx, const kiln_module *m, const char *function,
                               const char *backend, const kiln_compile_options *opts,
                               const char *const *watch, uint32_t n_watch, quant_probe *out) {
  memset(out, 0, sizeof *out);
  kiln_module *c = NULL;
  KILN_TRY(kiln_module_clone(m, &c));
  kiln_function *f = function ? kiln_module_find_function(c, function)
                              : (kiln_module_function_count(c) ? kiln_module_function(c, 0) : NULL);
  kiln_status s = NULL;
  char **outnames = NULL;
  if (!f)
    s = kiln_status_make(KILN_NOT_FOUND, "the model has no function '%s'",
                         function ? function : "(none)");
  if (!s) {
    out->n_outputs = kiln_function_output_count(f);
    if (watch) {
      out->watch = calloc(n_watch + 1, sizeof *out->watch);
      if (!out->watch)
        s = quant_oom("the probe");
      for (uint32_t i = 0; !s && i < n_watch; i++, out->n_watch++)
        if (!(out->watch[i] = strdup(watch[i])))
          s = quant_oom("the probe");
    } else {
      s = quant_default_watch(f, out);
    }
  }
  if (!s)
    s = quant_expose(f, out, &outnames);
  if (!s) {
    const char *fname = kiln_function_name(f);
    char *fn = strdup(fname);
    if (!fn)
      s = quant_oom("the probe");
    else
      s = kiln_compile_take(ctx, &c, fn, backend, opts, &out->exe);
    free(fn);
  }
  kiln_module_destroy(c);
  uint32_t no = s ? 0 : kiln_executable_output_count(out->exe);
  uint32_t ni = s ? 0 : kiln_executable_input_count(out->exe);
  if (!s) {
    out->out_index = calloc(out->n_watch + 1, sizeof *out->out_index);
    out->numel = calloc(out->n_watch + 1, sizeof *out->numel);
    out->buf = calloc(no + 1, sizeof *out->buf);
    out->in = calloc(ni + 1, sizeof *out->in);
    out->in_sample = calloc(ni + 1, sizeof *out->in_sample);
    if (!out->out_index || !out->numel || !out->buf || !out->in || !out->in_sample)
      s = quant_oom("the probe");
  }
  for (uint32_t i = 0; !s && i < no; i++) {
    kiln_io_info io;
    kiln_executable_output(out->exe, i, &io);
    int64_t bytes = kiln_type_bytes(&io.type);
    if (!(out->buf[i] = malloc(bytes > 0 ? (size_t)bytes : 1)))
      s = quant_oom("the probe's outputs");
  }
  for (uint32_t i = 0; !s && i < out->n_watch; i++) {
    const kiln_value *v = kiln_module_find_value(m, out->watch[i]);
    out->numel[i] = kiln_type_numel(kiln_value_type(v));
    out->out_index[i] = outnames[i] ? kiln_executable_find_output(out->exe, outnames[i]) : -1;
    if (outnames[i] && out->out_index[i] < 0)
      s = kiln_status_make(KILN_INTERNAL, "the compiled probe lost output '%s'", outnames[i]);
  }
  for (uint32_t i = 0; outnames && i < out->n_watch; i++)
    free(outnames[i]);
  free(outnames);
  if (s)
    quant_probe_destroy(out);
  return s;
}

static int32_t quant_sample_input(const quant_samples *s, const char *name) {
  for (uint32_t i = 0; i < s->n_inputs; i++)
    if (strcmp(s->names[i], name) == 0)
      return (int32_t)i;
  return -1;
}

kiln_status quant_probe_run(quant_probe *p, const quant_samples *s, uint32_t k) {
  uint32_t ni = kiln_executable_input_count(p->exe);
  for (uint32_t i = 0; i < ni; i++) {
    kiln_io_info io;
    kiln_executable_input(p->exe, i, &io);
    int32_t j = quant_sample_input(s, io.name);
    if (j < 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "no sample data for input '%s'", io.name);
    p->in[i] = s->t[(size_t)k * s->n_inputs + (uint32_t)j].data;
  }
  p->last = s;
  p->last_k = k;
  return kiln_run(p->exe, p->in, p->buf);
}

const float *quant_probe_value(const quant_probe *p, uint32_t i) {
  if (p->out_index[i] >= 0)
    return p->buf[p->out_index[i]];
  int32_t j = quant_sample_input(p->last, p->watch[i]);
  return j < 0 ? NULL : p->last->t[(size_t)p->last_k * p->last->n_inputs + (uint32_t)j].data;
}

/* ------------------------------------------------------------ fingerprint */

typedef struct quant_hash {
  uint64_t h;
} quant_hash;

static void quant_hash_bytes(quant_hash *q, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    q->h ^= p[i];
    q->h *= 0x100000001b3ull; /* FNV-1a, 64-bit */
  }
}

static void quant_hash_str(quant_hash *q, const char *s) {
  quant_hash_bytes(q, s ? s : "", strlen(s ? s : "") + 1);
}

static void quant_hash_type(quant_hash *q, const kiln_type *t) {
  char buf[200];
  kiln_type_format(t, buf, sizeof buf);
  quant_hash_str(q, buf);
}

static void quant_hash_attrs(quant_hash *q, const kiln_attrs *a) {
  for (uint32_t i = 0; i < kiln_attrs_count(a); i++) {
    const kiln_attr *at = kiln_attrs_at(a, i);
    quant_hash_str(q, kiln_attr_name(at));
    kiln_attr_kind k = kiln_attr_get_kind(at);
    quant_hash_bytes(q, &k, sizeof k);
    switch (k) {
    case KILN_ATTR_INT: {
      int64_t v = kiln_attr_int(at);
      quant_hash_bytes(q, &v, sizeof v);
      break;
    }
    case KILN_ATTR_FLOAT: {
      double v = kiln_attr_float(at);
      quant_hash_bytes(q, &v, sizeof v);
      break;
    }
    case KILN_ATTR_STRING:
      quant_hash_str(q, kiln_attr_string(at));
      break;
    case KILN_ATTR_INTS:
      quant_hash_bytes(q, kiln_attr_ints(at), kiln_attr_len(at) * sizeof(int64_t));
      break;
    case KILN_ATTR_FLOATS:
      quant_hash_bytes(q, kiln_attr_floats(at), kiln_attr_len(at) * sizeof(double));
      break;
    case KILN_ATTR_TYPE: {
      kiln_elem e = kiln_attr_type(at);
      quant_hash_bytes(q, &e, sizeof e);
      break;
    }
    }
  }
}

kiln_status quant_fingerprint(const kiln_module *m, char out[17]) {
  quant_hash q = {0xcbf29ce484222325ull};
  for (uint32_t i = 0; i < kiln_module_input_count(m); i++) {
    const kiln_value *v = kiln_module_input(m, i);
    quant_hash_str(&q, kiln_value_name(v));
    quant_hash_type(&q, kiln_value_type(v));
  }
  for (uint32_t i = 0; i < kiln_module_constant_count(m); i++) {
    const kiln_value *v = kiln_module_constant(m, i);
    quant_hash_str(&q, kiln_value_name(v));
    quant_hash_type(&q, kiln_value_type(v));
    quant_hash_bytes(&q, kiln_value_data(v), (size_t)kiln_type_bytes(kiln_value_type(v)));
  }
  for (uint32_t fi = 0; fi < kiln_module_function_count(m); fi++) {
    const kiln_function *f = kiln_module_function(m, fi);
    quant_hash_str(&q, kiln_function_name(f));
    for (uint32_t i = 0; i < kiln_function_node_count(f); i++) {
      const kiln_node *n = kiln_function_node(f, i);
      quant_hash_str(&q, kiln_node_kind_name(kiln_node_get_kind(n)));
      for (uint32_t j = 0; j < kiln_node_input_count(n); j++) {
        const kiln_value *v = kiln_node_input(n, j);
        quant_hash_str(&q, v ? kiln_value_name(v) : "");
      }
      for (uint32_t j = 0; j < kiln_node_result_count(n); j++) {
        quant_hash_str(&q, kiln_value_name(kiln_node_result(n, j)));
        quant_hash_type(&q, kiln_value_type(kiln_node_result(n, j)));
      }
      quant_hash_attrs(&q, kiln_node_attrs(n));
    }
    for (uint32_t i = 0; i < kiln_function_output_count(f); i++) {
      quant_hash_str(&q, kiln_function_output_name(f, i));
      quant_hash_str(&q, kiln_value_name(kiln_function_output_value(f, i)));
    }
  }
  snprintf(out, 17, "%016llx", (unsigned long long)q.h);
  return NULL;
}

/* ---------------------------------------------------------------- profile */

void quant_profile_free(quant_profile *p) {
  if (!p)
    return;
  for (uint32_t i = 0; p->r && i < p->n; i++)
    free(p->r[i].name);
  free(p->r);
  free(p->model);
  free(p->source);
  memset(p, 0, sizeof *p);
}

const quant_range *quant_profile_find(const quant_profile *p, const char *name) {
  for (uint32_t i = 0; i < p->n; i++)
    if (strcmp(p->r[i].name, name) == 0)
      return &p->r[i];
  return NULL;
}

static void quant_range_see(quant_range *r, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double v = x[i];
    if (!isfinite(v)) {
      r->nonfinite++;
      continue;
    }
    if (r->count == 0 || v < r->min)
      r->min = v;
    if (r->count == 0 || v > r->max)
      r->max = v;
    r->count++;
  }
}

static void quant_range_bin(quant_range *r, const float *x, int64_t n) {
  double w = r->hi - r->lo;
  for (int64_t i = 0; i < n; i++) {
    double v = x[i];
    if (!isfinite(v))
      continue;
    int64_t b = w > 0 ? (int64_t)floor((v - r->lo) / w * QUANT_BINS) : 0;
    b = b < 0 ? 0 : b >= QUANT_BINS ? QUANT_BINS - 1 : b;
    r->hist[b]++;
  }
}

kiln_status quant_profile_collect(kiln_context *ctx, const kiln_module *m, const char *function,
                                  const char *backend, const kiln_compile_options *opts,
                                  const quant_samples *s, const char *model_path,
                                  const char fingerprint[17], quant_profile *out) {
  memset(out, 0, sizeof *out);
  if (s->count == 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "no calibration samples");
  quant_probe p;
  KILN_TRY(quant_probe_create(ctx, m, function, backend, opts, NULL, 0, &p));
  kiln_status st = NULL;
  memcpy(out->fingerprint, fingerprint, 17);
  /* the f32 inputs first, from the samples, then every watched value */
  uint32_t nf = 0;
  for (uint32_t i = 0; i < s->n_inputs; i++)
    nf += s->t[i].type.elem == KILN_F32;
  out->n = nf + p.n_watch;
  out->samples = s->count;
  out->r = calloc(out->n + 1, sizeof *out->r);
  out->model = strdup(model_path);
  out->source = strdup(s->source ? s->source : "");
  if (!st && (!out->r || !out->model || !out->source))
    st = quant_oom("the profile");
  uint32_t j = 0;
  for (uint32_t i = 0; !st && i < s->n_inputs; i++)
    if (s->t[i].type.elem == KILN_F32 && !(out->r[j++].name = strdup(s->names[i])))
      st = quant_oom("the profile");
  for (uint32_t i = 0; !st && i < p.n_watch; i++)
    if (!(out->r[nf + i].name = strdup(p.watch[i])))
      st = quant_oom("the profile");
  for (int pass = 0; pass < 2 && !st; pass++) {
    for (uint32_t k = 0; k < s->count && !st; k++) {
      st = quant_probe_run(&p, s, k);
      if (st) {
        st = kiln_status_wrap(st, "running calibration sample %u", k);
        break;
      }
      j = 0;
      for (uint32_t i = 0; i < s->n_inputs; i++) {
        const kiln_tensor *t = &s->t[(size_t)k * s->n_inputs + i];
        if (t->type.elem != KILN_F32)
          continue;
        if (pass == 0)
          quant_range_see(&out->r[j], t->data, kiln_type_numel(&t->type));
        else
          quant_range_bin(&out->r[j], t->data, kiln_type_numel(&t->type));
        j++;
      }
      for (uint32_t i = 0; i < p.n_watch; i++) {
        if (pass == 0)
          quant_range_see(&out->r[nf + i], quant_probe_value(&p, i), p.numel[i]);
        else
          quant_range_bin(&out->r[nf + i], quant_probe_value(&p, i), p.numel[i]);
      }
    }
    if (pass == 0)
      for (uint32_t i = 0; i < out->n; i++) {
        out->r[i].lo = out->r[i].min < 0 ? out->r[i].min : 0;
        out->r[i].hi = out->r[i].max > 0 ? out->r[i].max : 0;
      }
  }
  quant_probe_destroy(&p);
  if (st)
    quant_profile_free(out);
  return st;
}

/* Names are written as the rest of a line, with backslash and newline
 * escaped, so that any ONNX name survives. */
static void quant_write_name(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '\\')
      fputs("\\\\", f);
    else if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
  fputc('\n', f);
}

kiln_status quant_profile_write(const char *path, const quant_profile *p) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 16);
  if (!tmp)
    return quant_oom("a file name");
  snprintf(tmp, n + 16, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    kiln_status s = kiln_status_make(KILN_IO_ERROR, "cannot write %s: %s", tmp, strerror(errno));
    free(tmp);
    return s;
  }
  fprintf(f, "kiln-profile %d\nfingerprint %s\nmodel ", QUANT_PROFILE_VERSION, p->fingerprint);
  quant_write_name(f, p->model);
  fputs("source ", f);
  quant_write_name(f, p->source);
  fprintf(f, "samples %u\nbins %d\nvalues %u\n", p->samples, QUANT_BINS, p->n);
  for (uint32_t i = 0; i < p->n; i++) {
    const quant_range *r = &p->r[i];
    fprintf(f, "value %.17g %.17g %llu %llu %.17g %.17g ", r->min, r->max,
            (unsigned long long)r->count, (unsigned long long)r->nonfinite, r->lo, r->hi);
    quant_write_name(f, r->name);
    fputs("hist", f);
    for (int b = 0; b < QUANT_BINS; b++)
      if (r->hist[b])
        fprintf(f, " %d:%llu", b, (unsigned long long)r->hist[b]);
    fputc('\n', f);
  }
  fprintf(f, "end %u\n", p->n);
  bool bad = ferror(f) != 0;
  bad = fclose(f) != 0 || bad;
  kiln_status s = NULL;
  if (bad)
    s = kiln_status_make(KILN_IO_ERROR, "writing %s failed: %s", tmp, strerror(errno));
  else if (rename(tmp, path) != 0)
    s = kiln_status_make(KILN_IO_ERROR, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
  if (s)
    remove(tmp);
  free(tmp);
  return s;
}

/* A line reader over the whole file held in memory. */
typedef struct quant_reader {
  const char *path;
  char *data;
  size_t len, pos;
  uint32_t line;
} quant_reader;

static kiln_status quant_bad(const quant_reader *r, const char *fmt, ...) KILN_PRINTF(2, 3);
static kiln_status quant_bad(const quant_reader *r, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kiln_status_make(KILN_INVALID_ARGUMENT, "%s:%u: %s", r->path, r->line, msg);
}

/* The next line (NUL-terminated in place), NULL at the end of the file. */
static char *quant_line(quant_reader *r) {
  if (r->pos >= r->len)
    return NULL;
  char *s = r->data + r->pos;
  char *nl = memchr(s, '\n', r->len - r->pos);
  if (!nl) /* a last line without newline: the file was cut */
    return NULL;
  *nl = '\0';
  r->pos = (size_t)(nl - r->data) + 1;
  r->line++;
  return s;
}

static char *quant_unescape(const char *s) {
  char *d = malloc(strlen(s) + 1), *o = d;
  if (!d)
    return NULL;
  for (; *s; s++) {
    if (*s == '\\' && s[1] == 'n')
      *o++ = '\n', s++;
    else if (*s == '\\' && s[1] == '\\')
      *o++ = '\\', s++;
    else
      *o++ = *s;
  }
  *o = '\0';
  return d;
}

/* "KEY rest": rest, or NULL when the line is not that key. */
static const char *quant_key(const char *line, const char *key) {
  size_t n = strlen(key);
  return line && strncmp(line, key, n) == 0 && line[n] == ' ' ? line + n + 1 : NULL;
}

static kiln_status quant_expect(quant_reader *r, const char *key, const char **rest) {
  char *l = quant_line(r);
  if (!l)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s is truncated: it ends before the '%s' line (line %u)", r->path,
                            key, r->line + 1);
  if (!(*rest = quant_key(l, key)))
    return quant_bad(r, "expected '%s ...'", key);
  return NULL;
}

static kiln_status quant_read_u32(quant_reader *r, const char *key, uint32_t *v) {
  const char *rest;
  KILN_TRY(quant_expect(r, key, &rest));
  char *end;
  errno = 0;
  unsigned long long x = strtoull(rest, &end, 10);
  if (errno || *end || end == rest || x > UINT32_MAX)
    return quant_bad(r, "'%s' needs a count, got '%s'", key, rest);
  *v = (uint32_t)x;
  return NULL;
}

static kiln_status quant_read_hist(quant_reader *r, const char *rest, quant_range *q) {
  const char *p = rest;
  uint64_t total = 0;
  while (*p) {
    char *end;
    errno = 0;
    long b = strtol(p, &end, 10);
    if (errno || end == p || *end != ':' || b < 0 || b >= QUANT_BINS)
      return quant_bad(r, "bad histogram entry near '%.20s'", p);
    p = end + 1;
    unsigned long long c = strtoull(p, &end, 10);
    if (errno || end == p || (*end && *end != ' '))
      return quant_bad(r, "bad histogram entry near '%.20s'", p);
    q->hist[b] = c;
    total += c;
    p = *end ? end + 1 : end;
  }
  if (total != q->count)
    return quant_bad(r, "value '%s': its histogram holds %llu values, its count says %llu",
                     q->name, (unsigned long long)total, (unsigned long long)q->count);
  return NULL;
}

static kiln_status quant_read_value(quant_reader *r, quant_range *q) {
  const char *rest;
  KILN_TRY(quant_expect(r, "value", &rest));
  char *end = NULL;
  const char *p = rest;
  double d[6];
  for (int i = 0; i < 6; i++) {
    errno = 0;
    d[i] = (i == 2 || i == 3) ? (double)strtoull(p, &end, 10) : strtod(p, &end);
    if (errno || end == p || *end != ' ')
      return quant_bad(r, "a value line needs min max count nonfinite lo hi NAME");
    p = end + 1;
  }
  q->min = d[0], q->max = d[1], q->count = (uint64_t)d[2], q->nonfinite = (uint64_t)d[3];
  q->lo = d[4], q->hi = d[5];
  if (!*p)
    return quant_bad(r, "a value line needs a name");
  if (!(isfinite(q->lo) && isfinite(q->hi) && q->lo <= 0 && q->hi >= 0 && q->min <= q->max))
    return quant_bad(r, "value '%s' has an impossible range", p);
  if (!(q->name = quant_unescape(p)))
    return quant_oom("the profile");
  KILN_TRY(quant_expect(r, "hist", &rest));
  return quant_read_hist(r, rest, q);
}

kiln_status quant_profile_read(const char *path, quant_profile *out) {
  memset(out, 0, sizeof *out);
  quant_reader r = {.path = path};
  void *data = NULL;
  KILN_TRY(kiln_file_read(path, &data, &r.len));
  r.data = data;
  kiln_status s = NULL;
  const char *rest = NULL;
  char *l = quant_line(&r);
  if (!l || strncmp(l, "kiln-profile ", 13) != 0) {
    s = kiln_status_make(KILN_INVALID_ARGUMENT, "%s is not a kiln profile (it does not begin "
                                                "with 'kiln-profile')", path);
  } else if (atoi(l + 13) != QUANT_PROFILE_VERSION) {
    s = kiln_status_make(KILN_INVALID_ARGUMENT,
                         "%s is a version %s profile; this kiln reads version %d", path, l + 13,
                         QUANT_PROFILE_VERSION);
  }
  if (!s && !(s = quant_expect(&r, "fingerprint", &rest))) {
    if (strlen(rest) != 16)
      s = quant_bad(&r, "a fingerprint is 16 hex digits");
    else
      memcpy(out->fingerprint, rest, 17);
  }
  if (!s && !(s = quant_expect(&r, "model", &rest)) && !(out->model = quant_unescape(rest)))
    s = quant_oom("the profile");
  if (!s && !(s = quant_expect(&r, "source", &rest)) && !(out->source = quant_unescape(rest)))
    s = quant_oom("the profile");
  uint32_t bins = 0, n = 0;
  if (!s)
    s = quant_read_u32(&r, "samples", &out->samples);
  if (!s)
    s = quant_read_u32(&r, "bins", &bins);
  if (!s && bins != QUANT_BINS)
    s = quant_bad(&r, "the profile has %u bins per value; this kiln uses %d", bins, QUANT_BINS);
  if (!s)
    s = quant_read_u32(&r, "values", &n);
  /* each value takes two lines of at least 10 bytes: a bound on n that
   * keeps a damaged count from allocating without limit */
  if (!s && (uint64_t)n * 20 > r.len)
    s = quant_bad(&r, "%u values cannot fit in a %zu-byte file", n, r.len);
  if (!s && !(out->r = calloc(n + 1, sizeof *out->r)))
    s = quant_oom("the profile");
  for (uint32_t i = 0; !s && i < n; i++, out->n++) {
    s = quant_read_value(&r, &out->r[i]);
    if (s && strstr(kiln_status_message(s), "truncated"))
      s = kiln_status_wrap(s, "%s holds %u of its %u values", path, i, n);
  }
  if (!s) {
    uint32_t e = 0;
    kiln_status se = quant_read_u32(&r, "end", &e);
    if (se || e != n) {
      kiln_status_free(se);
      s = kiln_status_make(KILN_INVALID_ARGUMENT,
                           "%s is truncated or damaged: no 'end %u' line after its values", path,
                           n);
    }
  }
  free(data);
  if (s)
    quant_profile_free(out);
  return s;
}

/* ----------------------------------------------------------------- ranges */

/* The edge of bin b (0..QUANT_BINS) of r's histogram. */
static double quant_edge(const quant_range *r, int b) {
  return r->lo + (r->hi - r->lo) * b / QUANT_BINS;
}

/* Expected squared error of quantizing r's histogram to [lo, hi] with 255
 * steps: uniform rounding noise inside, the clipped distance outside. */
static double quant_range_mse(const quant_range *r, double lo, double hi) {
  double step = (hi - lo) / 255.0, e = 0;
  for (int b = 0; b < QUANT_BINS; b++) {
    if (!r->hist[b])
      continue;
    double c = 0.5 * (quant_edge(r, b) + quant_edge(r, b + 1));
    double d = c < lo ? lo - c : c > hi ? c - hi : 0;
    e += (double)r->hist[b] * (d * d + step * step / 12.0);
  }
  return e;
}

void quant_choose_range(const quant_range *r, const quant_settings *s, double *lo, double *hi) {
  *lo = r->lo, *hi = r->hi;
  if (r->count == 0 || r->hi <= r->lo)
    return;
  if (s->calib == QUANT_PERCENTILE) {
    double tail = (1.0 - s->percentile / 100.0) * (double)r->count;
    uint64_t acc = 0;
    int b = 0;
    for (; b < QUANT_BINS && (double)(acc + r->hist[b]) <= tail; b++)
      acc += r->hist[b];
    double qlo = quant_edge(r, b);
    acc = 0;
    b = QUANT_BINS - 1;
    for (; b >= 0 && (double)(acc + r->hist[b]) <= tail; b--)
      acc += r->hist[b];
    double qhi = quant_edge(r, b + 1);
    *lo = qlo < 0 ? qlo : 0;
    *hi = qhi > 0 ? qhi : 0;
  } else if (s->calib == QUANT_MSE) {
    double best = quant_range_mse(r, r->lo, r->hi);
    for (int t = 1; t < 128; t++) {
      double a = t / 128.0, e = quant_range_mse(r, r->lo * a, r->hi * a);
      if (e < best)
        best = e, *lo = r->lo * a, *hi = r->hi * a;
    }
  }
}

void quant_act_params(double lo, double hi, kiln_elem act, float *scale, int32_t *zp) {
  double sc = (hi - lo) / 255.0;
  if (!(sc > 0) || !isfinite(sc))
    sc = 1.0; /* a value that is always 0: any scale represents it */
  float f = (float)sc;
  double z = act == KILN_U8 ? nearbyint(-lo / f) : nearbyint(-128.0 - lo / f);
  double zlo = act == KILN_U8 ? 0 : -128, zhi = act == KILN_U8 ? 255 : 127;
  *scale = f;
  *zp = (int32_t)(z < zlo ? zlo : z > zhi ? zhi : z);
}
