/* tests/graphgen/test_graphgen.c: checks of the random graph generator on a
 * fixed family of 200 graphs: validity, text round trip, determinism, and a
 * clean run on the interpreter with finite, bounded outputs. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/graphgen.h"

#ifndef N_GRAPHS
#define N_GRAPHS 200
#endif
#ifndef SEED
#define SEED 20240611u
#endif

static char *print_module(const kiln_module *m) {
  char *text = NULL;
  kiln_status s = kiln_module_print(m, &text);
  ck_assert_msg(s == NULL, "print: %s", kiln_status_message(s));
  char *copy = strdup(text);
  kiln_module_free_string(m, text);
  return copy;
}

static kiln_module *gen(uint64_t seed, uint32_t i) {
  kiln_module *m = NULL;
  kiln_status s = kiln_graphgen(seed, i, &m);
  ck_assert_msg(s == NULL, "graphgen %u: %s", i, kiln_status_message(s));
  return m;
}

START_TEST(graphs_verify_and_round_trip) {
  for (uint32_t i = 0; i < N_GRAPHS; i++) {
    kiln_module *m = gen(SEED, i);
    kiln_status s = kiln_module_verify(m);
    ck_assert_msg(s == NULL, "graph %u does not verify: %s", i, kiln_status_message(s));
    kiln_function *f = kiln_module_find_function(m, "main");
    ck_assert_ptr_nonnull(f);
    uint32_t nodes = kiln_function_node_count(f);
    ck_assert_msg(nodes >= 1 && nodes <= 40, "graph %u has %u nodes", i, nodes);
    ck_assert_uint_ge(kiln_function_output_count(f), 1);
    char *a = print_module(m);
    kiln_module *p = NULL;
    s = kiln_module_parse(a, strlen(a), "graphgen.kir", NULL, &p);
    ck_assert_msg(s == NULL, "graph %u does not parse back: %s\n%s", i, kiln_status_message(s), a);
    char *b = print_module(p);
    ck_assert_msg(strcmp(a, b) == 0, "graph %u: print/parse/print differs:\n%s\n---\n%s", i, a, b);
    free(a);
    free(b);
    kiln_module_destroy(p);
    kiln_module_destroy(m);
  }
}
END_TEST

START_TEST(same_seed_same_graph) {
  for (uint32_t i = 0; i < 20; i++) {
    kiln_module *m1 = gen(7, i), *m2 = gen(7, i);
    char *a = print_module(m1), *b = print_module(m2);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    kiln_module_destroy(m1);
    kiln_module_destroy(m2);
  }
}
END_TEST

START_TEST(other_seed_or_index_other_graph) {
  uint32_t same = 0;
  for (uint32_t i = 0; i < 20; i++) {
    kiln_module *m1 = gen(1, i), *m2 = gen(2, i), *m3 = gen(1, i + 1000);
    char *a = print_module(m1), *b = print_module(m2), *c = print_module(m3);
    /* The module name embeds seed and index: compare from the first line
     * break on, so that only the graphs themselves count. */
    same += strcmp(strchr(a, '\n'), strchr(b, '\n')) == 0;
    same += strcmp(strchr(a, '\n'), strchr(c, '\n')) == 0;
    free(a);
    free(b);
    free(c);
    kiln_module_destroy(m1);
    kiln_module_destroy(m2);
    kiln_module_destroy(m3);
  }
  ck_assert_msg(same == 0, "%u of 40 pairs of graphs were identical", same);
}
END_TEST

START_TEST(inputs_match_module) {
  kiln_module *m = gen(SEED, 3);
  kiln_tensor *t = NULL, *t2 = NULL;
  uint32_t n = 0, n2 = 0;
  kiln_status s = kiln_graphgen_inputs(m, 99, &t, &n);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_uint_eq(n, kiln_module_input_count(m));
  s = kiln_graphgen_inputs(m, 99, &t2, &n2);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  for (uint32_t i = 0; i < n; i++) {
    const kiln_value *v = kiln_module_input(m, i);
    ck_assert_str_eq(t[i].name, kiln_value_name(v));
    ck_assert(kiln_type_equal(&t[i].type, kiln_value_type(v)));
    size_t bytes = (size_t)kiln_type_bytes(&t[i].type);
    ck_assert(memcmp(t[i].data, t2[i].data, bytes) == 0);
    if (t[i].type.elem == KILN_F32)
      for (int64_t j = 0; j < kiln_type_numel(&t[i].type); j++) {
        float x = ((float *)t[i].data)[j];
        ck_assert(x >= -2.0f && x <= 2.0f);
      }
  }
  kiln_graphgen_inputs_free(t, n);
  kiln_graphgen_inputs_free(t2, n2);
  kiln_module_destroy(m);
}
END_TEST

/* Outputs must be finite and inside the generator's bound (1e6); an
 * unsigned result that wrapped around would show up as a huge value. */
static void check_output(uint32_t gi, const kiln_io_info *io, const void *data) {
  int64_t n = kiln_type_numel(&io->type);
  for (int64_t j = 0; j < n; j++) {
    double x;
    switch (io->type.elem) {
    case KILN_F32:
      x = ((const float *)data)[j];
      break;
    case KILN_F64:
      x = ((const double *)data)[j];
      break;
    case KILN_F16:
      x = kiln_f16_to_f32(((const uint16_t *)data)[j]);
      break;
    case KILN_BF16:
      x = kiln_bf16_to_f32(((const uint16_t *)data)[j]);
      break;
    case KILN_I8:
      x = ((const int8_t *)data)[j];
      break;
    case KILN_U8:
      x = ((const uint8_t *)data)[j];
      break;
    case KILN_I16:
      x = ((const int16_t *)data)[j];
      break;
    case KILN_U16:
      x = ((const uint16_t *)data)[j];
      break;
    case KILN_I32:
      x = ((const int32_t *)data)[j];
      break;
    case KILN_U32:
      x = ((const uint32_t *)data)[j];
      break;
    case KILN_I64:
      x = (double)((const int64_t *)data)[j];
      break;
    case KILN_U64:
      x = (double)((const uint64_t *)data)[j];
      break;
    case KILN_BOOL:
      x = ((const uint8_t *)data)[j];
      ck_assert(x == 0 || x == 1);
      break;
    default:
      ck_abort_msg("graph %u output %s has element type %d", gi, io->name, (int)io->type.elem);
      x = 0;
      break;
    }
    ck_assert_msg(isfinite(x) && fabs(x) <= 1.01e6, "graph %u output %s[%lld] = %g", gi, io->name,
                  (long long)j, x);
  }
}

/* One compiled and run graph: the executable and its output buffers. */
typedef struct graph_run {
  kiln_executable *exe;
  void *outs[64];
  uint32_t nout;
} graph_run;

static void graph_run_free(graph_run *r) {
  for (uint32_t j = 0; j < r->nout; j++)
    free(r->outs[j]);
  kiln_executable_destroy(r->exe);
  memset(r, 0, sizeof *r);
}

/* Compile graph gi (module m) for backend with opts and run it on the
 * generator's inputs for gi; on failure, print the module and return the
 * status. */
static kiln_status run_graph(kiln_context *ctx, const kiln_module *m, uint32_t gi,
                             const char *backend, const kiln_compile_options *opts,
                             graph_run *r) {
  memset(r, 0, sizeof *r);
  kiln_status s = kiln_compile(ctx, m, "main", backend, opts, &r->exe);
  if (s) {
    char *txt = print_module(m);
    fprintf(stderr, "graph %u on %s: compile: %s\n%s\n", gi, backend, kiln_status_message(s), txt);
    free(txt);
    return s;
  }
  kiln_tensor *in = NULL;
  uint32_t nin = 0;
  s = kiln_graphgen_inputs(m, gi, &in, &nin);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_uint_eq(nin, kiln_executable_input_count(r->exe));
  const void *ins[64] = {0};
  for (uint32_t j = 0; j < nin; j++) {
    kiln_io_info io;
    kiln_executable_input(r->exe, j, &io);
    int32_t k = -1;
    for (uint32_t q = 0; q < nin; q++)
      if (strcmp(in[q].name, io.name) == 0)
        k = (int32_t)q;
    ck_assert_int_ge(k, 0);
    ins[j] = in[k].data;
  }
  r->nout = kiln_executable_output_count(r->exe);
  ck_assert_uint_le(r->nout, 64);
  for (uint32_t j = 0; j < r->nout; j++) {
    kiln_io_info io;
    kiln_executable_output(r->exe, j, &io);
    r->outs[j] = calloc(1, (size_t)kiln_type_bytes(&io.type) + 1);
  }
  s = kiln_run(r->exe, ins, r->outs);
  if (s) {
    char *txt = print_module(m);
    fprintf(stderr, "graph %u on %s: run: %s\n%s\n", gi, backend, kiln_status_message(s), txt);
    free(txt);
  }
  kiln_graphgen_inputs_free(in, nin);
  return s;
}

START_TEST(graphs_run_on_interpreter) {
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_msg(kiln_context_find_backend(ctx, "interpreter"), "no interpreter plugin found");
  uint32_t failed = 0;
  for (uint32_t i = 0; i < N_GRAPHS; i++) {
    kiln_module *m = gen(SEED, i);
    graph_run r;
    s = run_graph(ctx, m, i, "interpreter", NULL, &r);
    if (s) {
      kiln_status_free(s);
      failed++;
    } else {
      for (uint32_t j = 0; j < r.nout; j++) {
        kiln_io_info io;
        kiln_executable_output(r.exe, j, &io);
        check_output(i, &io, r.outs[j]);
      }
    }
    graph_run_free(&r);
    kiln_module_destroy(m);
  }
  kiln_context_destroy(ctx);
  ck_assert_msg(failed == 0, "%u of %u graphs failed to compile or run", failed, N_GRAPHS);
}
END_TEST

/* The family reaches what the generator promises: every element type, the
 * newer node kinds, zero-size tensors and ceil_mode pools, and no module
 * input of type bf16 (.npy cannot hold one). */
START_TEST(family_covers_types_and_kinds) {
  static const char *const want[] = {"f16[",
                                     "bf16[",
                                     "u8[",
                                     "u16[",
                                     "u32[",
                                     "u64[",
                                     "i8[",
                                     "i16[",
                                     "= Resize(",
                                     "= Einsum(",
                                     "= RNN(",
                                     "= GRU(",
                                     "= LSTM(",
                                     "= QuantizeLinear(",
                                     "= DequantizeLinear(",
                                     "= GatherElements(",
                                     "= GatherND(",
                                     "= ScatterElements(",
                                     "= ScatterND(",
                                     "= CumSum(",
                                     "= TopK(",
                                     "ceil_mode = 1",
                                     "BitShift("};
  size_t nw = sizeof want / sizeof *want;
  bool seen[sizeof want / sizeof *want] = {0};
  uint32_t empty = 0;
  for (uint32_t i = 0; i < 400; i++) {
    kiln_module *m = gen(SEED, i);
    char *a = print_module(m);
    for (size_t k = 0; k < nw; k++)
      seen[k] = seen[k] || strstr(a, want[k]) != NULL;
    for (uint32_t k = 0; k < kiln_module_input_count(m); k++) {
      const kiln_type *t = kiln_value_type(kiln_module_input(m, k));
      ck_assert_msg(t->elem != KILN_BF16, "graph %u: bf16 module input", i);
      empty += kiln_type_numel(t) == 0;
    }
    free(a);
    kiln_module_destroy(m);
  }
  for (size_t k = 0; k < nw; k++)
    ck_assert_msg(seen[k], "no graph of 400 has '%s'", want[k]);
  ck_assert_msg(empty > 0, "no graph of 400 has a zero-size input");
}
END_TEST

/* ---- partitioned runs (issue 17) ---------------------------------------- */

/* Outputs of a partitioned run against the interpreter's, by name, with
 * the tolerances of `kiln conformance --generate` (rtol 1e-3, atol 1e-5;
 * f16 / bf16 a few units in the last place; integers and bools exact). */
static bool outputs_agree(const graph_run *ref, const graph_run *got, char *msg, size_t msz) {
  if (got->nout != ref->nout) {
    snprintf(msg, msz, "%u outputs, the interpreter has %u", got->nout, ref->nout);
    return false;
  }
  for (uint32_t j = 0; j < ref->nout; j++) {
    kiln_io_info want, io;
    kiln_executable_output(ref->exe, j, &want);
    int32_t k = kiln_executable_find_output(got->exe, want.name);
    if (k < 0) {
      snprintf(msg, msz, "no output '%s'", want.name);
      return false;
    }
    kiln_executable_output(got->exe, (uint32_t)k, &io);
    if (!kiln_type_equal(&io.type, &want.type)) {
      snprintf(msg, msz, "output '%s' has another type than the interpreter's", want.name);
      return false;
    }
    kiln_elem e = io.type.elem;
    double rtol = e == KILN_F16 ? 1e-2 : e == KILN_BF16 ? 5e-2 : 1e-3;
    const void *a = got->outs[k], *b = ref->outs[j];
    for (int64_t i = 0; i < kiln_type_numel(&io.type); i++) {
      bool ok;
      double x = kiln_elem_load_f64(e, a, i), y = kiln_elem_load_f64(e, b, i);
      if (e == KILN_I64 || e == KILN_U64)
        ok = memcmp((const char *)a + 8 * i, (const char *)b + 8 * i, 8) == 0;
      else if (!kiln_elem_is_float(e))
        ok = x == y;
      else if (isnan(x) || isnan(y))
        ok = isnan(x) && isnan(y);
      else if (isinf(x) || isinf(y))
        ok = x == y;
      else
        ok = fabs(x - y) <= 1e-5 + rtol * fabs(y);
      if (!ok) {
        snprintf(msg, msz, "output '%s'[%lld] = %.9g, the interpreter says %.9g", want.name,
                 (long long)i, x, y);
        return false;
      }
    }
  }
  return true;
}

/* What the placement made of one executable: its regions, whether both
 * entries got some, and no model node placed twice. */
typedef struct split_count {
  uint32_t graphs, multi, both, regions;
} split_count;

static void count_regions(uint32_t gi, const char *backend, const kiln_executable *exe,
                          split_count *c) {
  uint32_t n = kiln_executable_region_count(exe);
  ck_assert_uint_ge(n, 1);
  c->graphs++;
  c->regions += n;
  c->multi += n >= 2;
  if (n < 2)
    return;
  bool on_cpu = false, on_interp = false;
  const char *seen[256];
  uint32_t ns = 0;
  for (uint32_t r = 0; r < n; r++) {
    kiln_region_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    kiln_status s = kiln_executable_region(exe, r, &info);
    ck_assert_msg(s == NULL, "graph %u on %s: region %u: %s", gi, backend, r,
                  kiln_status_message(s));
    ck_assert_ptr_nonnull(info.exe);
    ck_assert_msg(info.node_count >= 1, "graph %u on %s: region %u is empty", gi, backend, r);
    on_cpu = on_cpu || strcmp(info.backend, "cpu") == 0;
    on_interp = on_interp || strcmp(info.backend, "interpreter") == 0;
    for (uint32_t k = 0; k < info.node_count; k++) {
      for (uint32_t q = 0; q < ns; q++)
        ck_assert_msg(strcmp(seen[q], info.nodes[k]) != 0,
                      "graph %u on %s: node %s placed in two regions", gi, backend,
                      info.nodes[k]);
      if (ns < 256)
        seen[ns++] = info.nodes[k];
    }
  }
  c->both += on_cpu && on_interp;
}

/* Bytes the placement counts against a device for the whole graph (each
 * node's results plus every weight once): half of it as the cpu's memory
 * leaves part of the graph on the cpu and pushes the rest on. */
static uint64_t graph_bytes(const kiln_module *m) {
  const kiln_function *f = kiln_module_find_function(m, "main");
  uint64_t b = 0;
  const kiln_value *consts[256];
  uint32_t nc = 0;
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++) {
    const kiln_node *n = kiln_function_node(f, i);
    for (uint32_t k = 0; k < kiln_node_result_count(n); k++)
      b += (uint64_t)kiln_type_bytes(kiln_value_type(kiln_node_result(n, k)));
    for (uint32_t k = 0; k < kiln_node_input_count(n); k++) {
      const kiln_value *v = kiln_node_input(n, k);
      if (!v || kiln_value_get_kind(v) != KILN_VALUE_CONSTANT)
        continue;
      bool again = false;
      for (uint32_t q = 0; q < nc && !again; q++)
        again = consts[q] == v;
      if (again)
        continue;
      if (nc < 256)
        consts[nc++] = v;
      b += (uint64_t)kiln_type_bytes(kiln_value_type(v));
    }
  }
  return b;
}

#ifndef PART_SEEDS
#define PART_SEEDS 1
#endif

/* Every graph, partitioned between cpu and the interpreter two ways, must
 * agree with the interpreter alone: (a) the cpu capped at half the graph's
 * bytes (--device-memory), so that the graph splits where the cap runs
 * out; (b) random placements (KILN_PARTITION_SEED). Most graphs must
 * really split, or the comparisons would prove nothing about partitions. */
START_TEST(graphs_run_partitioned) {
#ifndef KILN_TEST_HAVE_CPU
  fprintf(stderr, "graphs_run_partitioned: the cpu plugin is not built; nothing to pair the "
                  "interpreter with\n");
  return;
#else
  /* JIT-compiling 400 partitioned graphs under valgrind (the unit suite's
   * wrapper) would take most of an hour: the meson test
   * 'graphgen-partitioned', outside that suite, sets this. */
  if (!getenv("KILN_TEST_PARTITIONED")) {
    fprintf(stderr, "graphs_run_partitioned: skipped here (KILN_TEST_PARTITIONED unset); the "
                    "test 'graphgen-partitioned' runs it\n");
    return;
  }
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_msg(kiln_context_find_backend(ctx, "cpu"), "no cpu plugin found");
  split_count capped = {0}, random = {0};
  uint32_t failed = 0, small = 0;
  for (uint32_t i = 0; i < N_GRAPHS; i++) {
    kiln_module *m = gen(SEED, i);
    graph_run ref;
    s = run_graph(ctx, m, i, "interpreter", NULL, &ref);
    ck_assert_msg(s == NULL, "graph %u on the interpreter: %s", i, kiln_status_message(s));
    small += kiln_function_node_count(kiln_module_find_function(m, "main")) < 2;
    for (uint32_t mode = 0; mode <= PART_SEEDS; mode++) {
      /* mode 0: capped cpu; then random placements, seed = mode */
      char mem[64], seed[16], msg[512];
      const char *backend = mode ? "interpreter+cpu" : "cpu+interpreter";
      kiln_compile_options o;
      memset(&o, 0, sizeof o);
      o.struct_size = sizeof o;
      o.device = -1;
      if (mode == 0) {
        uint64_t half = graph_bytes(m) / 2;
        snprintf(mem, sizeof mem, "cpu=%llu", (unsigned long long)(half ? half : 1));
        o.device_memory = mem;
      } else {
        snprintf(seed, sizeof seed, "%u", mode);
        setenv("KILN_PARTITION_SEED", seed, 1);
      }
      graph_run got;
      s = run_graph(ctx, m, i, backend, &o, &got);
      unsetenv("KILN_PARTITION_SEED");
      const char *what = mode ? "random placement" : mem;
      if (s) {
        fprintf(stderr, "graph %u on %s (%s): %s\n", i, backend, what, kiln_status_message(s));
        kiln_status_free(s);
        failed++;
      } else if (!outputs_agree(&ref, &got, msg, sizeof msg)) {
        char *txt = print_module(m);
        fprintf(stderr, "graph %u on %s (%s, %u regions): %s\n%s\n", i, backend, what,
                kiln_executable_region_count(got.exe), msg, txt);
        free(txt);
        failed++;
      } else {
        count_regions(i, backend, got.exe, mode ? &random : &capped);
      }
      graph_run_free(&got);
    }
    graph_run_free(&ref);
    kiln_module_destroy(m);
  }
  kiln_context_destroy(ctx);
  fprintf(stderr,
          "partitioned: %u graphs (%u of one node); capped cpu: %u of %u split (%u on both "
          "backends, %u regions); random placements (%d seed): %u of %u split (%u on both, %u regions)\n",
          N_GRAPHS, small, capped.multi, capped.graphs, capped.both, capped.regions, PART_SEEDS,
          random.multi, random.graphs, random.both, random.regions);
  ck_assert_msg(failed == 0, "%u partitioned runs failed or disagreed with the interpreter",
                failed);
  /* Thresholds well below what the family gives (see the line above), far
   * above what a partitioner that never splits would give (0). */
  ck_assert_msg(capped.both * 2 >= capped.graphs, "only %u of %u capped graphs split",
                capped.both, capped.graphs);
  ck_assert_msg(random.both * 2 >= random.graphs, "only %u of %u random placements split",
                random.both, random.graphs);
#endif
}
END_TEST

int main(void) {
  Suite *su = suite_create("graphgen");
  TCase *tc = tcase_create("graphgen");
  tcase_set_timeout(tc, 280);
  tcase_add_test(tc, graphs_verify_and_round_trip);
  tcase_add_test(tc, same_seed_same_graph);
  tcase_add_test(tc, other_seed_or_index_other_graph);
  tcase_add_test(tc, inputs_match_module);
  tcase_add_test(tc, graphs_run_on_interpreter);
  tcase_add_test(tc, family_covers_types_and_kinds);
  tcase_add_test(tc, graphs_run_partitioned);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
