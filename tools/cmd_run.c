/* tools/cmd_run.c: `kiln run FILE --backend NAME --input NAME=PATH ...`:
 * compile a model, feed it tensors from .npy or .pb files, run it (repeatedly
 * for timing), and print or write its outputs. Output files are written
 * under a temporary name and renamed, so a failure never leaves a
 * half-written NAME.npy behind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "profile.h"

#define RUN_MAX_INPUTS 256

static void run_help(void) {
  printf("usage: kiln run FILE --backend NAME [--input NAME=PATH]... [options]\n\n"
         "Compile FILE (.onnx by extension, otherwise .kir), run it once (or --repeat\n"
         "times) on the given inputs and print or save its outputs.\n\n"
         "  --input NAME=PATH     tensor for input NAME, from a .npy file, or an ONNX\n"
         "                        TensorProto when PATH ends in .pb (repeatable; every\n"
         "                        input of the model is required). An ONNX model's\n"
         "                        symbolic dims (dynamic axes) not bound by --dim take\n"
         "                        their sizes from these arrays\n"
         "  --output-dir DIR      write each output to DIR/NAME.npy instead of printing\n"
         "  --pb                  with --output-dir, also write DIR/NAME.pb\n"
         "  --print               print outputs even when writing them\n"
         "  --repeat N            run N times and print min and median latency in ms\n"
         "  --random-inputs [SEED] make every input not given with --input from a\n"
         "                        seeded generator (SEED: a number, default 1): floats\n"
         "                        uniform in [-1, 1), integers 0 or 1 (valid as indices\n"
         "                        and masks), bools 0 or 1; each is named on stderr\n"
         "  --profile             compile with timers and print, after the runs, where the\n"
         "                        time went: compile phases, then per node kind and per\n"
         "                        instruction (with the model node it came from) calls,\n"
         "                        total and median time, share of the run's wall time and\n"
         "                        the rate achieved (GFLOP/s for MatMul, Gemm, Conv,\n"
         "                        ConvTranspose and recurrent kinds, GB/s of operand bytes\n"
         "                        for the others); with --repeat, over every run\n"
         "  --profile-json FILE   write the last run and the compile phases as a Chrome\n"
         "                        trace-event file (Perfetto, chrome://tracing); implies\n"
         "                        compiling with timers. See docs/profiling.md\n"
         "%s"
         "  --help                this text\n\n"
         "Printing shows each output's name, type and up to 64 values.\n",
         tool_compile_args_help);
}

typedef struct run_input {
  const char *name, *path;
} run_input;

static bool run_ends_with(const char *s, const char *suffix) {
  size_t ls = strlen(s), lx = strlen(suffix);
  return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

static void run_print_value(kiln_elem e, const void *data, int64_t i) {
  const unsigned char *p = data;
  switch (e) {
  case KILN_F64:
    printf("%g", ((const double *)data)[i]);
    break;
  case KILN_F32:
    printf("%g", (double)((const float *)data)[i]);
    break;
  case KILN_F16:
    printf("%g", (double)kiln_f16_to_f32(((const uint16_t *)data)[i]));
    break;
  case KILN_BF16:
    printf("%g", (double)kiln_bf16_to_f32(((const uint16_t *)data)[i]));
    break;
  case KILN_I8:
    printf("%d", ((const int8_t *)data)[i]);
    break;
  case KILN_U8:
    printf("%u", p[i]);
    break;
  case KILN_I16:
    printf("%d", ((const int16_t *)data)[i]);
    break;
  case KILN_U16:
    printf("%u", ((const uint16_t *)data)[i]);
    break;
  case KILN_I32:
    printf("%d", ((const int32_t *)data)[i]);
    break;
  case KILN_U32:
    printf("%u", ((const uint32_t *)data)[i]);
    break;
  case KILN_I64:
    printf("%lld", (long long)((const int64_t *)data)[i]);
    break;
  case KILN_U64:
    printf("%llu", (unsigned long long)((const uint64_t *)data)[i]);
    break;
  case KILN_BOOL:
    printf("%s", p[i] ? "true" : "false");
    break;
  default:
    printf("?");
  }
}

static void run_print(const kiln_io_info *io, const void *data) {
  char t[160];
  kiln_type_format(&io->type, t, sizeof t);
  int64_t n = kiln_type_numel(&io->type);
  printf("%s : %s = [", io->name, t);
  for (int64_t i = 0; i < n && i < 64; i++) {
    if (i)
      printf(", ");
    run_print_value(io->type.elem, data, i);
  }
  if (n > 64)
    printf(", ... (%lld values)", (long long)n);
  printf("]\n");
}

/* "a/b" is a legal output name but not a file name. */
static void run_file_name(const char *name, char *buf, size_t n) {
  snprintf(buf, n, "%s", name[0] ? name : "output");
  for (char *c = buf; *c; c++)
    if (*c == '/')
      *c = '_';
}

static kiln_status run_write(const char *dir, const kiln_io_info *io, void *data, bool pb) {
  char base[512], final_path[4096], tmp[4200];
  run_file_name(io->name, base, sizeof base);
  kiln_tensor t = {io->type, data, NULL};
  for (int k = 0; k < (pb ? 2 : 1); k++) {
    const char *ext = k ? "pb" : "npy";
    snprintf(final_path, sizeof final_path, "%s/%s.%s", dir, base, ext);
    snprintf(tmp, sizeof tmp, "%s.tmp", final_path);
    kiln_status s = k ? kiln_tensor_write_pb(tmp, &t) : kiln_tensor_write_npy(tmp, &t);
    if (!s && rename(tmp, final_path) != 0)
      s = kiln_status_make(KILN_IO_ERROR, "%s: cannot rename from %s: %s", final_path, tmp,
                           strerror(errno));
    if (s) {
      remove(tmp);
      return kiln_status_wrap(s, "writing output '%s'", io->name);
    }
  }
  return NULL;
}

static int run_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* "x f32[1,3], y i64[2] (missing)": every expected input with its type,
 * marking those not given. Returns whether any is missing. */
static bool run_list_inputs(const kiln_executable *exe, const run_input *given, uint32_t ngiven,
                            bool mark, char *list, size_t size) {
  uint32_t n = kiln_executable_input_count(exe);
  size_t used = 0;
  bool missing = false;
  list[0] = '\0';
  for (uint32_t i = 0; i < n; i++) {
    kiln_io_info io;
    kiln_executable_input(exe, i, &io);
    bool have = false;
    for (uint32_t g = 0; g < ngiven; g++)
      have |= strcmp(given[g].name, io.name) == 0;
    missing |= !have;
    char t[160];
    kiln_type_format(&io.type, t, sizeof t);
    if (used + 1 < size) {
      int w = snprintf(list + used, size - used, "%s%s %s%s", i ? ", " : "", io.name, t,
                       have || !mark ? "" : " (missing)");
      if (w > 0)
        used += (size_t)w;
    }
  }
  if (n == 0)
    snprintf(list, size, "no inputs");
  return missing;
}

/* One error listing every expected input with its type. */
static kiln_status run_missing(const kiln_executable *exe, const run_input *given,
                               uint32_t ngiven) {
  char list[4096];
  if (!run_list_inputs(exe, given, ngiven, true, list, sizeof list))
    return NULL;
  return kiln_status_make(KILN_INVALID_ARGUMENT,
                          "missing inputs: the model expects %s; give each with --input "
                          "NAME=PATH, or make them with --random-inputs [SEED]",
                          list);
}

static kiln_status run_random_missing(const kiln_executable *exe, uint64_t seed,
                                      kiln_tensor *tensors) {
  uint64_t state = seed;
  for (uint32_t i = 0; i < kiln_executable_input_count(exe); i++) {
    if (tensors[i].data)
      continue;
    kiln_io_info io;
    kiln_executable_input(exe, i, &io);
    KILN_TRY(tool_random_tensor(io.name, &io.type, &state, &tensors[i]));
    char ty[160];
    kiln_type_format(&io.type, ty, sizeof ty);
    fprintf(stderr, "kiln run: input '%s' %s: random (seed %llu)\n", io.name, ty,
            (unsigned long long)seed);
  }
  return NULL;
}

static kiln_status run_given_inputs(const kiln_executable *exe, const run_input *given,
                                    uint32_t ngiven, kiln_tensor *tensors) {
  for (uint32_t g = 0; g < ngiven; g++) {
    int32_t idx = kiln_executable_find_input(exe, given[g].name);
    if (idx < 0) {
      char list[4096];
      run_list_inputs(exe, given, 0, false, list, sizeof list);
      return kiln_status_make(KILN_NOT_FOUND, "the model has no input '%s' (it expects: %s)",
                              given[g].name, list);
    }
    for (uint32_t h = 0; h < g; h++)
      if (strcmp(given[h].name, given[g].name) == 0)
        return kiln_status_make(KILN_INVALID_ARGUMENT, "input '%s' given twice", given[g].name);
    kiln_tensor *t = &tensors[idx];
    if (run_ends_with(given[g].path, ".pb"))
      KILN_TRY(kiln_tensor_read_pb(given[g].path, t));
    else
      KILN_TRY(kiln_tensor_read_npy(given[g].path, t));
    kiln_io_info io;
    kiln_executable_input(exe, (uint32_t)idx, &io);
    if (!kiln_type_same_shape(&t->type, &io.type)) {
      char want[160], have[160];
      kiln_type_format(&io.type, want, sizeof want);
      kiln_type_format(&t->type, have, sizeof have);
      return kiln_status_make(KILN_INVALID_ARGUMENT, "input '%s' is %s but %s holds %s", io.name,
                              want, given[g].path, have);
    }
  }
  return NULL;
}

/* The given inputs, then one error listing any that are missing. */
static kiln_status run_load_inputs(const kiln_executable *exe, const run_input *given,
                                   uint32_t ngiven, kiln_tensor *tensors) {
  KILN_TRY(run_given_inputs(exe, given, ngiven, tensors));
  return run_missing(exe, given, ngiven);
}

typedef struct run_args {
  tool_compile_args ca;
  const char *file, *output_dir;
  const char *profile_json;
  bool pb, print, random_inputs, profile;
  double load_ms;
  uint64_t repeat, seed;
  run_input inputs[RUN_MAX_INPUTS];
  uint32_t ninputs;
} run_args;

static const char *run_input_path(const run_args *a, const char *name) {
  for (uint32_t g = 0; g < a->ninputs; g++)
    if (strcmp(a->inputs[g].name, name) == 0)
      return a->inputs[g].path;
  return "?";
}

static kiln_status run_execute(kiln_executable *exe, const run_args *a) {
  uint32_t ni = kiln_executable_input_count(exe), no = kiln_executable_output_count(exe);
  kiln_tensor *tensors = calloc(ni ? ni : 1, sizeof *tensors);
  const void **in = calloc(ni ? ni : 1, sizeof *in);
  void **out = calloc(no ? no : 1, sizeof *out);
  double *times = calloc(a->repeat, sizeof *times);
  kiln_status s = NULL;
  if (!tensors || !in || !out || !times)
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory preparing the run");
  if (!s && a->random_inputs)
    s = run_given_inputs(exe, a->inputs, a->ninputs, tensors);
  if (!s && a->random_inputs)
    s = run_random_missing(exe, a->seed, tensors);
  if (!s && !a->random_inputs)
    s = run_load_inputs(exe, a->inputs, a->ninputs, tensors);
  for (uint32_t i = 0; i < ni && !s; i++)
    in[i] = tensors[i].data;
  for (uint32_t i = 0; i < no && !s; i++) {
    kiln_io_info io;
    kiln_executable_output(exe, i, &io);
    int64_t bytes = kiln_type_bytes(&io.type);
    out[i] = calloc(1, bytes > 0 ? (size_t)bytes : 1);
    if (!out[i])
      s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory for output '%s' (%lld bytes)",
                           io.name, (long long)bytes);
  }
  tool_profile *prof = NULL;
  if (!s && (a->profile || a->profile_json))
    s = tool_profile_create(exe, &prof);
  for (uint64_t r = 0; r < a->repeat && !s; r++) {
    double t0 = tool_now_ms();
    s = kiln_run(exe, in, out);
    times[r] = tool_now_ms() - t0;
    if (!s && prof)
      s = tool_profile_add_run(prof, exe);
  }
  if (!s && prof && a->profile_json)
    s = tool_profile_write_json(prof, a->profile_json, kiln_executable_backend(exe));
  if (!s && a->repeat > 1) {
    qsort(times, a->repeat, sizeof *times, run_cmp_double);
    double median = a->repeat % 2 ? times[a->repeat / 2]
                                  : (times[a->repeat / 2 - 1] + times[a->repeat / 2]) / 2;
    printf("latency over %llu runs: min %.3f ms, median %.3f ms\n", (unsigned long long)a->repeat,
           times[0], median);
  }
  /* The output folder is made when missing (one level, like the user
   * named it); any other failure to write says which file. */
  if (!s && a->output_dir && mkdir(a->output_dir, 0777) != 0 && errno != EEXIST)
    s = kiln_status_make(KILN_IO_ERROR, "cannot create output folder '%s': %s", a->output_dir,
                         strerror(errno));
  for (uint32_t i = 0; i < no && !s; i++) {
    kiln_io_info io;
    kiln_executable_output(exe, i, &io);
    if (!a->output_dir || a->print)
      run_print(&io, out[i]);
    if (a->output_dir)
      s = run_write(a->output_dir, &io, out[i], a->pb);
  }
  /* The table comes after the outputs, so that it is the last thing seen. */
  if (!s && prof && a->profile)
    s = tool_profile_print(stdout, prof, a->load_ms, kiln_executable_backend(exe));
  tool_profile_destroy(prof);
  for (uint32_t i = 0; tensors && i < ni; i++)
    kiln_tensor_free(&tensors[i]);
  for (uint32_t i = 0; out && i < no; i++)
    free(out[i]);
  free(tensors);
  free(in);
  free(out);
  free(times);
  return s;
}

static int run_parse(int argc, char **argv, run_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    int r;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      run_help();
      return -1;
    } else if (strcmp(argv[i], "--pb") == 0) {
      a->pb = true;
    } else if (strcmp(argv[i], "--print") == 0) {
      a->print = true;
    } else if (strcmp(argv[i], "--profile") == 0) {
      a->profile = true;
    } else if ((r = tool_opt_value(argc, argv, &i, "--profile-json", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("run", "--profile-json needs a FILE");
      a->profile_json = v;
    } else if (strncmp(argv[i], "--random-inputs", 15) == 0 &&
               (argv[i][15] == '\0' || argv[i][15] == '=')) {
      /* The seed is optional: "--random-inputs=7", or a number next. */
      a->random_inputs = true;
      const char *v = argv[i][15] == '=' ? argv[i] + 16 : NULL;
      if (!v && i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9')
        v = argv[++i];
      if (v && !tool_parse_u64(v, &a->seed))
        return tool_usage_error("run", "--random-inputs wants a number as SEED, got '%s'", v);
    } else if ((r = tool_compile_arg("run", argc, argv, &i, &a->ca)) != 0) {
      if (r != 1)
        return r;
    } else if ((r = tool_opt_value(argc, argv, &i, "--input", &v)) != 0) {
      char *eq = r > 0 ? strchr(v, '=') : NULL;
      if (!eq || eq == v || !eq[1])
        return tool_usage_error("run", "--input wants NAME=PATH%s%s%s", r > 0 ? ", got '" : "",
                                r > 0 ? v : "", r > 0 ? "'" : "");
      if (a->ninputs == RUN_MAX_INPUTS)
        return tool_usage_error("run", "at most %d --input options", RUN_MAX_INPUTS);
      *eq = '\0';
      a->inputs[a->ninputs].name = v;
      a->inputs[a->ninputs].path = eq + 1;
      a->ninputs++;
    } else if ((r = tool_opt_value(argc, argv, &i, "--output-dir", &v)) != 0) {
      if (r < 0)
        return tool_usage_error("run", "--output-dir needs a folder");
      a->output_dir = v;
    } else if ((r = tool_opt_value(argc, argv, &i, "--repeat", &v)) != 0) {
      if (r < 0 || !tool_parse_u64(v, &a->repeat) || a->repeat < 1 || a->repeat > 1000000)
        return tool_usage_error("run", "--repeat wants a count from 1 to 1000000");
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return tool_usage_error("run", "unknown option '%s'", argv[i]);
    } else if (!a->file) {
      a->file = argv[i];
    } else {
      return tool_usage_error("run", "more than one FILE ('%s' and '%s')", a->file, argv[i]);
    }
  }
  if (!a->file)
    return tool_usage_error("run", "missing FILE");
  if (a->profile || a->profile_json)
    a->ca.opts.flags |= KILN_COMPILE_PROFILE;
  if (!a->ca.backend)
    return tool_usage_error("run", "missing --backend NAME");
  if (a->pb && !a->output_dir)
    return tool_usage_error("run", "--pb needs --output-dir");
  return 0;
}

/* Each symbolic dim of an ONNX model's inputs that no --dim binds takes
 * its size from the array given for that input, as ONNX Runtime sizes a
 * model exported with dynamic axes by what it is fed. The bindings go
 * after the --dim ones, naming strings in *sd (the caller frees it after
 * the load). An input given no array binds nothing (the load then says
 * what is unbound); an array of another rank is refused here. */
static kiln_status run_bind_dims(run_args *a, kiln_onnx_symbolic_dim **sd) {
  uint32_t n, explicit = a->ca.dims.count;
  KILN_TRY(kiln_onnx_symbolic_dims(a->file, sd, &n));
  kiln_type types[RUN_MAX_INPUTS];
  bool read[RUN_MAX_INPUTS] = {0};
  uint32_t from[64]; /* the use each inferred binding came from */
  for (uint32_t i = 0; i < n; i++) {
    const kiln_onnx_symbolic_dim *d = &(*sd)[i];
    uint32_t g = 0, b = 0;
    while (g < a->ninputs && strcmp(a->inputs[g].name, d->input) != 0)
      g++;
    while (b < explicit && strcmp(a->ca.dims.names[b], d->name) != 0)
      b++;
    if (g == a->ninputs || b < explicit)
      continue;
    if (!read[g]) {
      kiln_tensor t = {0};
      if (run_ends_with(a->inputs[g].path, ".pb"))
        KILN_TRY(kiln_tensor_read_pb(a->inputs[g].path, &t));
      else
        KILN_TRY(kiln_tensor_read_npy(a->inputs[g].path, &t));
      types[g] = t.type;
      read[g] = true;
      kiln_tensor_free(&t);
    }
    if (types[g].rank != d->rank) {
      char have[160];
      kiln_type_format(&types[g], have, sizeof have);
      return kiln_status_make(KILN_INVALID_ARGUMENT,
                              "input '%s' has %u dims in %s ('%s' is dim %u) but %s holds %s",
                              d->input, d->rank, a->file, d->name, d->axis, a->inputs[g].path,
                              have);
    }
    int64_t v = types[g].dims[d->axis];
    for (b = explicit; b < a->ca.dims.count; b++)
      if (strcmp(a->ca.dims.names[b], d->name) == 0)
        break;
    if (b < a->ca.dims.count) {
      if (a->ca.dims.values[b] != v) {
        const kiln_onnx_symbolic_dim *f = &(*sd)[from[b - explicit]];
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "symbolic dim '%s' is %lld in input '%s' (dim %u of %s) but %lld "
                                "in input '%s' (dim %u of %s); give arrays that agree, or bind "
                                "it with --dim %s=VALUE",
                                d->name, (long long)a->ca.dims.values[b], f->input, f->axis,
                                run_input_path(a, f->input), (long long)v, d->input, d->axis,
                                a->inputs[g].path, d->name);
      }
      continue;
    }
    if (a->ca.dims.count == 64)
      return kiln_status_make(KILN_OUT_OF_RANGE, "%s: more than 64 symbolic dims to bind",
                              a->file);
    from[a->ca.dims.count - explicit] = i;
    a->ca.dims.names[a->ca.dims.count] = d->name;
    a->ca.dims.values[a->ca.dims.count++] = v;
  }
  return NULL;
}

int kiln_cmd_run(int argc, char **argv) {
  run_args *a = calloc(1, sizeof *a);
  if (!a) {
    fprintf(stderr, "kiln: out of memory\n");
    return KILN_EXIT_FAIL;
  }
  tool_compile_args_init(&a->ca);
  a->repeat = 1;
  a->seed = 1;
  int r = run_parse(argc, argv, a);
  if (r != 0) {
    free(a);
    return r < 0 ? KILN_EXIT_OK : r;
  }
  kiln_context *ctx = NULL;
  kiln_module *m = NULL;
  kiln_executable *exe = NULL;
  kiln_status s = kiln_context_create(&ctx);
  double t0 = tool_now_ms();
  kiln_onnx_symbolic_dim *sd = NULL;
  if (!s && a->ninputs && run_ends_with(a->file, ".onnx"))
    s = run_bind_dims(a, &sd);
  if (!s)
    s = tool_load_module(a->file, &a->ca.dims, ctx, &m);
  a->ca.dims.count = 0; /* the bindings from the arrays name strings in sd */
  kiln_free(sd);
  a->load_ms = tool_now_ms() - t0;
  /* The module is not needed after: handing it over lets the compile free
   * each weight it replaces or packs at once (kiln_compile_take). */
  if (!s)
    s = kiln_compile_take(ctx, &m, a->ca.function, a->ca.backend, &a->ca.opts, &exe);
  if (!s)
    s = run_execute(exe, a);
  kiln_executable_destroy(exe);
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  free(a);
  return s ? tool_fail(s) : KILN_EXIT_OK;
}
