/* tests/passes/test_mem.c: memory planning on the instruction IR: copy
 * elimination, in-place reuse, concat elimination, lifetime shrinking, the
 * static plan and its brute-force validator (on hand-built IRs and on
 * random graphs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

#define OK(expr)                                                                                   \
  do {                                                                                             \
    kiln_status s_ = (expr);                                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, kiln_status_message(s_));                           \
  } while (0)

static kiln_buffer *buf(kiln_ir *ir, kiln_buffer_kind k, const char *name, int64_t n, uint32_t io) {
  kiln_type t;
  OK(kiln_type_make(KILN_F32, 1, &n, &t));
  kiln_buffer *b = NULL;
  OK(kiln_ir_add_buffer(ir, k, name, &t, NULL, io, NULL, 0, &b));
  return b;
}

static kiln_instr *ins(kiln_ir *ir, kiln_instr_kind k, kiln_buffer *a, kiln_buffer *b) {
  kiln_buffer *ops[2] = {a, b};
  kiln_operand_dir d[2] = {kiln_instr_kind_node(k) >= 0 || k == KILN_INSTR_Copy ? KILN_OUT
                           : k == KILN_INSTR_Alloc                              ? KILN_OUT
                                                                                : KILN_IN,
                           KILN_IN};
  kiln_instr *out = NULL;
  OK(kiln_ir_add_instr(ir, k, ops, d, b ? 2 : 1, NULL, 0, NULL, &out));
  return out;
}

#define RELU kiln_instr_kind_for_node(KILN_NODE_Relu)
#define EXP kiln_instr_kind_for_node(KILN_NODE_Exp)
#define NEG kiln_instr_kind_for_node(KILN_NODE_Neg)

static uint32_t count_kind(const kiln_ir *ir, kiln_instr_kind k) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++)
    n += kiln_instr_get_kind(kiln_ir_instr(ir, i)) == k;
  return n;
}

/* x -> Relu -> a -> Exp -> b -> copy to out. */
START_TEST(inplace_then_copyelim) {
  kiln_ir *ir;
  OK(kiln_ir_create(NULL, "t", &ir));
  kiln_buffer *x = buf(ir, KILN_BUFFER_INPUT, "x", 16, 0);
  kiln_buffer *out = buf(ir, KILN_BUFFER_OUTPUT, "y", 16, 0);
  kiln_buffer *a = buf(ir, KILN_BUFFER_ACTIVATION, "a", 16, 0);
  kiln_buffer *b = buf(ir, KILN_BUFFER_ACTIVATION, "b", 16, 0);
  ins(ir, KILN_INSTR_Alloc, a, NULL);
  ins(ir, RELU, a, x);
  ins(ir, KILN_INSTR_Alloc, b, NULL);
  ins(ir, EXP, b, a);
  ins(ir, KILN_INSTR_Dealloc, a, NULL);
  ins(ir, KILN_INSTR_Copy, out, b);
  ins(ir, KILN_INSTR_Dealloc, b, NULL);
  OK(kiln_ir_verify(ir));

  uint32_t ch = 0;
  OK(kiln_pass_inplace(ir, NULL, &ch));
  ck_assert_uint_eq(ch, 1);
  /* Exp now writes into a (inout); b is gone. */
  kiln_instr *e = NULL;
  for (uint32_t i = 0; i < kiln_ir_instr_count(ir); i++)
    if (kiln_instr_get_kind(kiln_ir_instr(ir, i)) == EXP)
      e = kiln_ir_instr(ir, i);
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_eq(kiln_instr_operand(e, 0), a);
  ck_assert_int_eq(kiln_instr_operand_dir(e, 0), KILN_INOUT);
  ck_assert_ptr_eq(kiln_instr_operand(e, 1), a);
  OK(kiln_ir_verify(ir));

  ch = 0;
  OK(kiln_pass_copy_elim(ir, NULL, &ch));
  ck_assert_uint_eq(ch, 1);
  /* Relu writes the output directly; no copy, alloc or dealloc left. */
  ck_assert_uint_eq(kiln_ir_instr_count(ir), 2);
  ck_assert_uint_eq(count_kind(ir, KILN_INSTR_Copy), 0);
  ck_assert_ptr_eq(kiln_instr_operand(kiln_ir_instr(ir, 0), 0), out);
  ck_assert_ptr_eq(kiln_instr_operand(kiln_ir_instr(ir, 1), 0), out);
  OK(kiln_ir_verify(ir));
  kiln_ir_destroy(ir);
}
END_TEST

/* Activation-to-activation copy: b := a where a dies -> b renamed to a. */
START_TEST(copyelim_activation) {
  kiln_ir *ir;
  OK(kiln_ir_create(NULL, "t", &ir));
  kiln_buffer *x = buf(ir, KILN_BUFFER_INPUT, "x", 8, 0);
  kiln_buffer *out = buf(ir, KILN_BUFFER_OUTPUT, "y", 8, 0);
  kiln_buffer *a = buf(ir, KILN_BUFFER_ACTIVATION, "a", 8, 0);
  kiln_buffer *b = buf(ir, KILN_BUFFER_ACTIVATION, "b", 8, 0);
  ins(ir, KILN_INSTR_Alloc, a, NULL);
  ins(ir, RELU, a, x);
  ins(ir, KILN_INSTR_Alloc, b, NULL);
  ins(ir, KILN_INSTR_Copy, b, a);
  ins(ir, KILN_INSTR_Dealloc, a, NULL);
  ins(ir, EXP, out, b);
  ins(ir, KILN_INSTR_Dealloc, b, NULL);
  uint32_t ch = 0;
  OK(kiln_pass_copy_elim(ir, NULL, &ch));
  ck_assert_uint_eq(ch, 1);
  ck_assert_uint_eq(kiln_ir_instr_count(ir), 4); /* alloc a, relu, exp, dealloc a */
  ck_assert_int_eq(kiln_instr_get_kind(kiln_ir_instr(ir, 2)), EXP);
  ck_assert_ptr_eq(kiln_instr_operand(kiln_ir_instr(ir, 2), 1), a);
  ck_assert_ptr_eq(kiln_instr_operand(kiln_ir_instr(ir, 3), 0), a);
  OK(kiln_ir_verify(ir));
  kiln_ir_destroy(ir);
}
END_TEST

/* The output is a Reshape of the last activation (x -> Relu -> a [16] ->
 * copy to y [4, 4]): a becomes a view of y made before the Relu, which then
 * writes the caller's memory; no copy, alloc or dealloc is left, and the
 * plan needs no bytes. With a second reader of y after the copy it must
 * not fire. */
START_TEST(copyelim_reshaped_output) {
  for (int second_reader = 0; second_reader < 2; second_reader++) {
    kiln_ir *ir;
    OK(kiln_ir_create(NULL, "t", &ir));
    kiln_buffer *x = buf(ir, KILN_BUFFER_INPUT, "x", 16, 0);
    kiln_type t2;
    int64_t d2[2] = {4, 4};
    OK(kiln_type_make(KILN_F32, 2, d2, &t2));
    kiln_buffer *out = NULL;
    OK(kiln_ir_add_buffer(ir, KILN_BUFFER_OUTPUT, "y", &t2, NULL, 0, NULL, 0, &out));
    kiln_buffer *o1 = second_reader ? buf(ir, KILN_BUFFER_OUTPUT, "y1", 16, 1) : NULL;
    kiln_buffer *a = buf(ir, KILN_BUFFER_ACTIVATION, "a", 16, 0);
    ins(ir, KILN_INSTR_Alloc, a, NULL);
    ins(ir, RELU, a, x);
    ins(ir, KILN_INSTR_Copy, out, a);
    ins(ir, KILN_INSTR_Dealloc, a, NULL);
    if (second_reader) {
      kiln_buffer *ops[2] = {o1, out};
      kiln_operand_dir d[2] = {KILN_OUT, KILN_IN};
      OK(kiln_ir_add_instr(ir, KILN_INSTR_Copy, ops, d, 2, NULL, 0, NULL, NULL));
    }
    OK(kiln_ir_verify(ir));
    uint32_t before = kiln_ir_instr_count(ir), ch = 0;
    OK(kiln_pass_copy_elim(ir, NULL, &ch));
    if (second_reader) {
      ck_assert_uint_eq(ch, 0);
      ck_assert_uint_eq(kiln_ir_instr_count(ir), before);
      kiln_ir_destroy(ir);
      continue;
    }
    ck_assert_uint_eq(ch, 1);
    ck_assert_uint_eq(kiln_ir_instr_count(ir), 2); /* view, relu */
    ck_assert_int_eq(kiln_instr_get_kind(kiln_ir_instr(ir, 0)), KILN_INSTR_View);
    ck_assert_int_eq(kiln_buffer_get_kind(a), KILN_BUFFER_VIEW);
    ck_assert_ptr_eq(kiln_buffer_base(a), out);
    ck_assert_ptr_eq(kiln_instr_operand(kiln_ir_instr(ir, 1), 0), a);
    OK(kiln_ir_verify(ir));
    OK(kiln_pass_plan_memory(ir, NULL));
    ck_assert_uint_eq(kiln_ir_activation_bytes(ir), 0);
    OK(kiln_pass_validate_plan(ir));
    kiln_ir_destroy(ir);
  }
}
END_TEST

/* Must not fire: the source is read after the copy; the in-place
 * candidate's input is also still needed. */
START_TEST(no_fire_when_source_lives) {
  kiln_ir *ir;
  OK(kiln_ir_create(NULL, "t", &ir));
  kiln_buffer *x = buf(ir, KILN_BUFFER_INPUT, "x", 8, 0);
  kiln_buffer *o0 = buf(ir, KILN_BUFFER_OUTPUT, "y0", 8, 0);
  kiln_buffer *o1 = buf(ir, KILN_BUFFER_OUTPUT, "y1", 8, 1);
  kiln_buffer *a = buf(ir, KILN_BUFFER_ACTIVATION, "a", 8, 0);
  kiln_buffer *b = buf(ir, KILN_BUFFER_ACTIVATION, "b", 8, 0);
  ins(ir, KILN_INSTR_Alloc, a, NULL);
  ins(ir, RELU, a, x);
  ins(ir, KILN_INSTR_Alloc, b, NULL);
  ins(ir, KILN_INSTR_Copy, b, a);
  ins(ir, EXP, o0, a);
  ins(ir, KILN_INSTR_Dealloc, a, NULL);
  ins(ir, NEG, o1, b);
  ins(ir, KILN_INSTR_Dealloc, b, NULL);
  uint32_t before = kiln_ir_instr_count(ir), ch = 0;
  OK(kiln_pass_copy_elim(ir, NULL, &ch));
  OK(kiln_pass_inplace(ir, NULL, &ch));
  ck_assert_uint_eq(ch, 0);
  ck_assert_uint_eq(kiln_ir_instr_count(ir), before);
  kiln_ir_destroy(ir);
}
END_TEST

/* Shrinking moves an early alloc down and a late dealloc up; the plan then
 * puts a and b (disjoint lifetimes) at the same offset. */
START_TEST(shrink_and_share) {
  kiln_ir *ir;
  OK(kiln_ir_create(NULL, "t", &ir));
  kiln_buffer *x = buf(ir, KILN_BUFFER_INPUT, "x", 32, 0);
  kiln_buffer *o0 = buf(ir, KILN_BUFFER_OUTPUT, "y0", 32, 0);
  kiln_buffer *o1 = buf(ir, KILN_BUFFER_OUTPUT, "y1", 32, 1);
  kiln_buffer *a = buf(ir, KILN_BUFFER_ACTIVATION, "a", 32, 0);
  kiln_buffer *b = buf(ir, KILN_BUFFER_ACTIVATION, "b", 32, 0);
  ins(ir, KILN_INSTR_Alloc, a, NULL);
  ins(ir, KILN_INSTR_Alloc, b, NULL);
  ins(ir, RELU, a, x);
  ins(ir, EXP, o0, a);
  ins(ir, RELU, b, x);
  ins(ir, NEG, o1, b);
  ins(ir, KILN_INSTR_Dealloc, a, NULL);
  ins(ir, KILN_INSTR_Dealloc, b, NULL);
  uint32_t ch = 0;
  OK(kiln_pass_shrink_lifetimes(ir, NULL, &ch));
  ck_assert_uint_eq(ch, 2); /* b's alloc down, a's dealloc up */
  /* alloc a, relu, exp, dealloc a, alloc b, relu, neg, dealloc b */
  ck_assert_int_eq(kiln_instr_get_kind(kiln_ir_instr(ir, 3)), KILN_INSTR_Dealloc);
  ck_assert_ptr_eq(kiln_instr_operand(kiln_ir_instr(ir, 3), 0), a);
  ck_assert_int_eq(kiln_instr_get_kind(kiln_ir_instr(ir, 4)), KILN_INSTR_Alloc);
  ck_assert_ptr_eq(kiln_instr_operand(kiln_ir_instr(ir, 4), 0), b);
  OK(kiln_ir_verify(ir));
  kiln_mem_plan_report r;
  OK(kiln_pass_plan_memory(ir, &r));
  ck_assert_uint_eq(r.activations, 2);
  ck_assert_uint_eq(r.peak_bytes, 128); /* 32 floats, shared */
  ck_assert_uint_eq(r.lower_bound, 128);
  ck_assert_uint_eq(kiln_buffer_offset(a), kiln_buffer_offset(b));
  ck_assert_uint_eq(kiln_ir_activation_bytes(ir), 128);
  OK(kiln_pass_validate_plan(ir));
  kiln_ir_destroy(ir);
}
END_TEST

/* The validator catches two live buffers placed on the same bytes. */
START_TEST(validator_catches_overlap) {
  kiln_ir *ir;
  OK(kiln_ir_create(NULL, "t", &ir));
  kiln_buffer *x = buf(ir, KILN_BUFFER_INPUT, "x", 10, 0);
  kiln_buffer *o = buf(ir, KILN_BUFFER_OUTPUT, "y", 10, 0);
  kiln_buffer *a = buf(ir, KILN_BUFFER_ACTIVATION, "a", 10, 0);
  kiln_buffer *b = buf(ir, KILN_BUFFER_ACTIVATION, "b", 10, 0);
  ins(ir, RELU, a, x);
  ins(ir, RELU, b, x);
  kiln_buffer *ops[3] = {o, a, b};
  kiln_operand_dir d[3] = {KILN_OUT, KILN_IN, KILN_IN};
  OK(kiln_ir_add_instr(ir, kiln_instr_kind_for_node(KILN_NODE_Add), ops, d, 3, NULL, 0, NULL,
                       NULL));
  OK(kiln_pass_plan_memory(ir, NULL));
  OK(kiln_pass_validate_plan(ir));
  ck_assert_uint_ne(kiln_buffer_offset(a), kiln_buffer_offset(b));
  ck_assert_uint_eq(kiln_ir_activation_bytes(ir), 128); /* 40 bytes -> 64 each */
  kiln_buffer_set_offset(b, kiln_buffer_offset(a));
  kiln_status s = kiln_pass_validate_plan(ir);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "'a'"));
  ck_assert_ptr_nonnull(strstr(kiln_status_message(s), "'b'"));
  kiln_status_free(s);
  kiln_buffer_set_offset(b, 32); /* misaligned */
  s = kiln_pass_validate_plan(ir);
  ck_assert_ptr_nonnull(s);
  kiln_status_free(s);
  kiln_ir_destroy(ir);
}
END_TEST

/* A chain of N equal-size elementwise nodes needs two buffers at a time;
 * with in-place reuse, one. */
static void chain_peak(const char *pipeline, uint64_t max_peak) {
  char text[4096];
  int n = snprintf(text, sizeof text, "module @c\ninput %%x : f32[256]\nfunc @main {\n");
  const char *prev = "x";
  char names[10][8];
  for (int i = 0; i < 10; i++) {
    snprintf(names[i], sizeof names[i], "v%d", i);
    n += snprintf(text + n, sizeof text - (size_t)n, "  %%%s : f32[256] = %s(%%%s)\n", names[i],
                  i % 2 ? "Exp" : "Relu", prev);
    prev = names[i];
  }
  snprintf(text + n, sizeof text - (size_t)n, "  output %%y = %%%s\n}\n", prev);
  kiln_module *m = tp_parse(text);
  kiln_pass_target t = {.module = m};
  OK(kiln_pass_run(&t, pipeline, NULL, NULL));
  ck_assert_ptr_nonnull(t.ir);
  OK(kiln_pass_validate_plan(t.ir));
  ck_assert_msg(kiln_ir_activation_bytes(t.ir) <= max_peak, "%s: peak %llu > %llu", pipeline,
                (unsigned long long)kiln_ir_activation_bytes(t.ir), (unsigned long long)max_peak);
  kiln_ir_destroy(t.ir);
  kiln_module_destroy(m);
}

START_TEST(chain_two_buffers) {
  chain_peak("shrink,plan", 2 * 1024);
  chain_peak("copyelim,shrink,plan", 2 * 1024);
  chain_peak("inplace,copyelim,shrink,plan", 1024);
}
END_TEST

static kiln_buffer *named(const kiln_ir *ir, const char *name) {
  for (uint32_t i = 0; i < kiln_ir_buffer_count(ir); i++)
    if (strcmp(kiln_buffer_name(kiln_ir_buffer(ir, i)), name) == 0)
      return kiln_ir_buffer(ir, i);
  return NULL;
}

/* A module of inputs x : f32[ta] and z : f32[tb], through Relu and Exp into
 * a Concat along axis (result y : f32[tc]), then the lines `after`, run
 * through concatelim, shrink and plan: the planned IR (the module in *m). */
static kiln_ir *concat_ir(const char *ta, const char *tb, const char *tc, int64_t axis,
                          const char *after, kiln_module **m) {
  char text[1024];
  snprintf(text, sizeof text,
           "module @c\ninput %%x : f32[%s]\ninput %%z : f32[%s]\nfunc @main {\n"
           "  %%a : f32[%s] = Relu(%%x)\n  %%b : f32[%s] = Exp(%%z)\n"
           "  %%y : f32[%s] = Concat(%%a, %%b) {axis = %lld}\n%s}\n",
           ta, tb, ta, tb, tc, (long long)axis, after);
  *m = tp_parse(text);
  kiln_pass_target t = {.module = *m};
  OK(kiln_pass_run(&t, "concatelim,shrink,plan", NULL, NULL));
  ck_assert_ptr_nonnull(t.ir);
  OK(kiln_ir_verify(t.ir));
  OK(kiln_pass_validate_plan(t.ir));
  return t.ir;
}

#define CONCAT kiln_instr_kind_for_node(KILN_NODE_Concat)

/* The Concat instructions left after pipeline on the module in text, with
 * the plan validated; its arena size in *arena when not NULL. */
static uint32_t concats_after(const char *text, const char *pipeline, uint64_t *arena) {
  kiln_module *m = tp_parse(text);
  kiln_pass_target t = {.module = m};
  OK(kiln_pass_run(&t, pipeline, NULL, NULL));
  OK(kiln_pass_validate_plan(t.ir));
  uint32_t n = count_kind(t.ir, CONCAT);
  if (arena)
    *arena = kiln_ir_activation_bytes(t.ir);
  kiln_ir_destroy(t.ir);
  kiln_module_destroy(m);
  return n;
}

/* Both inputs die at the Concat and fill aligned ranges of its result:
 * they become views of it at byte offsets 0 and 64, the Concat goes, and
 * the arena holds the result alone. As a caller output the result takes
 * the views itself and the arena is empty. */
START_TEST(concatelim_fires) {
  kiln_module *m;
  kiln_ir *ir =
      concat_ir("1,16", "1,16", "1,32", 1, "  %w : f32[1,32] = Neg(%y)\n  output %o = %w\n", &m);
  ck_assert_uint_eq(count_kind(ir, CONCAT), 0);
  ck_assert_uint_eq(count_kind(ir, KILN_INSTR_View), 2);
  kiln_buffer *a = named(ir, "a"), *b = named(ir, "b"), *y = named(ir, "y");
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq(kiln_buffer_get_kind(a), KILN_BUFFER_VIEW);
  ck_assert_int_eq(kiln_buffer_get_kind(b), KILN_BUFFER_VIEW);
  ck_assert_ptr_eq(kiln_buffer_base(a), y);
  ck_assert_ptr_eq(kiln_buffer_base(b), y);
  ck_assert_uint_eq(kiln_buffer_offset(a), 0);
  ck_assert_uint_eq(kiln_buffer_offset(b), 64);
  ck_assert_uint_eq(kiln_ir_activation_bytes(ir), 128);
  kiln_ir_destroy(ir);
  kiln_module_destroy(m);
  /* a Reshape of the result after the Concat (a view of it) is no obstacle */
  ir = concat_ir("1,16", "1,16", "1,32", 1,
                 "  %r : f32[2,16] = Reshape(%y) {shape = [2, 16]}\n"
                 "  %w : f32[2,16] = Neg(%r)\n  output %o = %w\n",
                 &m);
  ck_assert_uint_eq(count_kind(ir, CONCAT), 0);
  ck_assert_ptr_eq(kiln_buffer_base(named(ir, "b")), named(ir, "y"));
  kiln_ir_destroy(ir);
  kiln_module_destroy(m);
  /* the 1 x 2 x 16 blocked form's shape: axis 1 of [1, Cb, S, 16] */
  ir = concat_ir("1,1,4,16", "1,2,4,16", "1,3,4,16", 1, "  output %o = %y\n", &m);
  ck_assert_uint_eq(count_kind(ir, CONCAT), 0);
  ck_assert_int_eq(kiln_buffer_get_kind(named(ir, "a")), KILN_BUFFER_VIEW);
  ck_assert_uint_eq(kiln_buffer_offset(named(ir, "b")), 256);
  ck_assert_int_eq(kiln_buffer_get_kind(kiln_buffer_base(named(ir, "b"))), KILN_BUFFER_OUTPUT);
  ck_assert_uint_eq(kiln_ir_activation_bytes(ir), 0);
  kiln_ir_destroy(ir);
  kiln_module_destroy(m);
}
END_TEST

/* In-place reuse leaves Selu's own result buffer unmentioned; concat
 * elimination then writes everything into the caller's output, so the
 * arena is empty and the left-over buffer, which holds no bytes, must not
 * fail the validator (a random partition of a generated graph found it). */
START_TEST(concatelim_empty_arena) {
  const char *text =
      "module @t\ninput %x0 : f32[1,2,4,4]\nconst %c4 : f32[4] = [0.25, 0.5, -1, 0.125]\n"
      "func @main {\n  %3 : f32[1,2,4] = MatMul(%x0, %c4)\n"
      "  %4 : f32[1,2,4] = Selu(%3) {alpha = 0.5625, gamma = 1.4375}\n"
      "  %5 : f32[1,2,4] = Concat(%4) {axis = -2}\n  output %y = %5\n}\n";
  uint64_t arena;
  ck_assert_uint_eq(concats_after(text, "copyelim,inplace,concatelim,shrink,plan", &arena), 0);
  ck_assert_uint_eq(arena, 0);
}
END_TEST

/* Near misses, each left as a Concat: a leading dim of 2 (the inputs
 * interleave in the result), an input read after the Concat, a second
 * input at an offset of 12 bytes, a result whose longer life would raise
 * the peak, the same input twice. */
START_TEST(concatelim_near_misses) {
  kiln_module *m;
  kiln_ir *ir = concat_ir("2,16", "2,16", "2,32", 1, "  output %o = %y\n", &m);
  ck_assert_uint_eq(count_kind(ir, CONCAT), 1);
  kiln_ir_destroy(ir);
  kiln_module_destroy(m);
  ir = concat_ir("1,16", "1,16", "1,32", 1,
                 "  output %o = %y\n  %n : f32[1,16] = Neg(%a)\n  output %p = %n\n", &m);
  ck_assert_uint_eq(count_kind(ir, CONCAT), 1);
  kiln_ir_destroy(ir);
  kiln_module_destroy(m);
  ir = concat_ir("1,3", "1,16", "1,19", 1, "  output %o = %y\n", &m);
  ck_assert_uint_eq(count_kind(ir, CONCAT), 1);
  kiln_ir_destroy(ir);
  kiln_module_destroy(m);
  /* a made before the program's peak (t1 and t2 alive at once), b after
   * it: the result, alive from a on, would raise that peak */
  const char *text =
      "module @c\ninput %x : f32[1,16]\ninput %z : f32[1,256]\ninput %u : f32[1,16]\n"
      "func @main {\n  %a : f32[1,16] = Relu(%x)\n  %t1 : f32[1,256] = Exp(%z)\n"
      "  %t2 : f32[1,256] = Neg(%t1)\n  output %o2 = %t2\n  %b : f32[1,16] = Relu(%u)\n"
      "  %y : f32[1,32] = Concat(%a, %b) {axis = 1}\n  %w : f32[1,32] = Neg(%y)\n"
      "  output %o = %w\n}\n";
  ck_assert_uint_eq(concats_after(text, "concatelim,shrink,plan", NULL), 1);
  text = "module @c\ninput %x : f32[1,16]\nfunc @main {\n  %a : f32[1,16] = Relu(%x)\n"
         "  %y : f32[1,32] = Concat(%a, %a) {axis = 1}\n  output %o = %y\n}\n";
  ck_assert_uint_eq(concats_after(text, "concatelim,shrink,plan", NULL), 1);
}
END_TEST

/* Random graphs of elementwise, Concat and Slice nodes over a few sizes,
 * through random subsets of the IR passes: the plan never overlaps, the
 * IR still verifies, and the peak is at least the lower bound. */
static uint32_t rng_state = 12345;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (rng_state >> 8) % n;
}

static kiln_module *random_module(void) {
  kiln_module *m;
  kiln_function *f;
  OK(kiln_module_create(NULL, "r", &m));
  kiln_value *vals[64];
  uint32_t nv = 0;
  for (int i = 0; i < 2; i++) {
    int64_t d = 4 + 4 * (int64_t)rnd(8);
    kiln_type t;
    OK(kiln_type_make(KILN_F32, 1, &d, &t));
    char name[8];
    snprintf(name, sizeof name, "x%d", i);
    OK(kiln_module_add_input(m, name, &t, &vals[nv++]));
  }
  OK(kiln_module_add_function(m, "main", &f));
  uint32_t nodes = 5 + rnd(20);
  for (uint32_t i = 0; i < nodes && nv < 64; i++) {
    kiln_value *a = vals[rnd(nv)], *b = vals[rnd(nv)];
    kiln_node *n = NULL;
    uint32_t op = rnd(4);
    if (op == 0) {
      OK(kiln_function_add_node(f, KILN_NODE_Relu, NULL, &a, 1, NULL, 0, 0, &n));
    } else if (op == 1 && kiln_type_equal(kiln_value_type(a), kiln_value_type(b))) {
      kiln_value *in[2] = {a, b};
      OK(kiln_function_add_node(f, KILN_NODE_Add, NULL, in, 2, NULL, 0, 0, &n));
    } else if (op == 2 && kiln_value_type(a)->dims[0] + kiln_value_type(b)->dims[0] <= 128) {
      kiln_value *in[2] = {a, b};
      kiln_attr_desc ax = KILN_ATTR_I("axis", 0);
      OK(kiln_function_add_node(f, KILN_NODE_Concat, NULL, in, 2, &ax, 1, 0, &n));
    } else {
      int64_t st = 0, en = 1 + (int64_t)rnd((uint32_t)kiln_value_type(a)->dims[0]), axes = 0;
      kiln_attr_desc sa[3] = {KILN_ATTR_IS("starts", &st, 1), KILN_ATTR_IS("ends", &en, 1),
                              KILN_ATTR_IS("axes", &axes, 1)};
      OK(kiln_function_add_node(f, KILN_NODE_Slice, NULL, &a, 1, sa, 3, 0, &n));
    }
    if (n)
      vals[nv++] = kiln_node_result(n, 0);
  }
  uint32_t outs = 1 + rnd(3);
  for (uint32_t i = 0; i < outs; i++) {
    char name[8];
    snprintf(name, sizeof name, "y%u", i);
    OK(kiln_function_add_output(f, name, vals[nv - 1 - rnd(nv > 3 ? 3 : nv)]));
  }
  return m;
}

START_TEST(random_plans_never_overlap) {
  static const char *pipes[] = {"plan",
                                "shrink,plan",
                                "inplace,shrink,plan",
                                "copyelim,inplace,shrink,plan",
                                "copyelim,plan",
                                "copyelim,inplace,concatelim,shrink,plan",
                                "concatelim,plan"};
  rng_state = 777;
  for (int iter = 0; iter < 84; iter++) {
    kiln_module *m = random_module();
    const char *p = pipes[iter % 7];
    kiln_pass_target t = {.module = m};
    kiln_pass_report rep;
    kiln_status s = kiln_pass_run(&t, p, NULL, &rep);
    ck_assert_msg(!s, "iteration %d (%s): %s", iter, p, kiln_status_message(s));
    OK(kiln_pass_validate_plan(t.ir));
    kiln_mem_plan_report r;
    OK(kiln_pass_plan_memory(t.ir, &r));
    ck_assert_uint_ge(r.peak_bytes, r.lower_bound);
    ck_assert_uint_eq(r.peak_bytes % 64, 0);
    kiln_ir_destroy(t.ir);
    kiln_module_destroy(m);
  }
}
END_TEST

Suite *mem_suite(void) {
  Suite *s = suite_create("memory planning");
  TCase *tc = tcase_create("mem");
  tcase_add_test(tc, inplace_then_copyelim);
  tcase_add_test(tc, copyelim_activation);
  tcase_add_test(tc, copyelim_reshaped_output);
  tcase_add_test(tc, concatelim_fires);
  tcase_add_test(tc, concatelim_near_misses);
  tcase_add_test(tc, concatelim_empty_arena);
  tcase_add_test(tc, no_fire_when_source_lives);
  tcase_add_test(tc, shrink_and_share);
  tcase_add_test(tc, validator_catches_overlap);
  tcase_add_test(tc, chain_two_buffers);
  tcase_add_test(tc, random_plans_never_overlap);
  suite_add_tcase(s, tc);
  return s;
}
