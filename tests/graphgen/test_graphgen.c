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

START_TEST(graphs_run_on_interpreter) {
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
  ck_assert_msg(kiln_context_find_backend(ctx, "interpreter"), "no interpreter plugin found");
  uint32_t failed = 0;
  for (uint32_t i = 0; i < N_GRAPHS; i++) {
    kiln_module *m = gen(SEED, i);
    kiln_executable *exe = NULL;
    s = kiln_compile(ctx, m, "main", "interpreter", NULL, &exe);
    if (s) {
      char *txt = print_module(m);
      fprintf(stderr, "graph %u: compile: %s\n%s\n", i, kiln_status_message(s), txt);
      free(txt);
      kiln_status_free(s);
      kiln_module_destroy(m);
      failed++;
      continue;
    }
    kiln_tensor *in = NULL;
    uint32_t nin = 0;
    s = kiln_graphgen_inputs(m, i, &in, &nin);
    ck_assert_msg(s == NULL, "%s", kiln_status_message(s));
    ck_assert_uint_eq(nin, kiln_executable_input_count(exe));
    const void *ins[64] = {0};
    void *outs[64] = {0};
    for (uint32_t j = 0; j < nin; j++) {
      kiln_io_info io;
      kiln_executable_input(exe, j, &io);
      int32_t k = -1;
      for (uint32_t q = 0; q < nin; q++)
        if (strcmp(in[q].name, io.name) == 0)
          k = (int32_t)q;
      ck_assert_int_ge(k, 0);
      ins[j] = in[k].data;
    }
    uint32_t nout = kiln_executable_output_count(exe);
    ck_assert_uint_le(nout, 64);
    for (uint32_t j = 0; j < nout; j++) {
      kiln_io_info io;
      kiln_executable_output(exe, j, &io);
      outs[j] = calloc(1, (size_t)kiln_type_bytes(&io.type) + 1);
    }
    s = kiln_run(exe, ins, outs);
    if (s) {
      char *txt = print_module(m);
      fprintf(stderr, "graph %u: run: %s\n%s\n", i, kiln_status_message(s), txt);
      free(txt);
      kiln_status_free(s);
      failed++;
    } else {
      for (uint32_t j = 0; j < nout; j++) {
        kiln_io_info io;
        kiln_executable_output(exe, j, &io);
        check_output(i, &io, outs[j]);
      }
    }
    for (uint32_t j = 0; j < nout; j++)
      free(outs[j]);
    kiln_graphgen_inputs_free(in, nin);
    kiln_executable_destroy(exe);
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
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
