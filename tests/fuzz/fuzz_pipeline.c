/* tests/fuzz/fuzz_pipeline.c: libFuzzer targets for the whole pipeline.
 * Arbitrary bytes are loaded (as ONNX, or as .kir text when built with
 * KILN_FUZZ_TEXT), verified, compiled for the backend named by
 * KILN_FUZZ_BACKEND, and run twice: once on zero-filled inputs and once
 * on seeded random inputs of exactly the declared sizes. kiln may refuse
 * the bytes at any step with a status; a crash, a sanitizer report, a
 * leak or a hang is a finding. Built only with -Dfuzz=true (clang).
 * Seed corpora: tests/fuzz/corpus/ (ONNX) and tests/fuzz/corpus_kir/. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

#ifndef KILN_FUZZ_BACKEND
#error "define KILN_FUZZ_BACKEND to the backend's name"
#endif

/* The harness, not kiln, skips models whose inputs, outputs or activation
 * arena are too large to run thousands of times a minute. */
#define FUZZ_MAX_IO_BYTES (4u << 20)
#define FUZZ_MAX_ARENA_BYTES (64u << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static kiln_context *fuzz_ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* Each pass is verified, so a pass that breaks an invariant is caught
   * where it happens, not as a crash in a later pass or backend. */
  setenv("KILN_VERIFY_EACH_PASS", "1", 1);
  /* Every input is a new model: a compile cache would only fill the disk
   * (and cache hits would hide the compiler from the fuzzer). */
  setenv("KILN_CACHE_DIR", "off", 1);
  kiln_status s = kiln_context_create(&fuzz_ctx);
  if (s || !kiln_context_find_backend(fuzz_ctx, KILN_FUZZ_BACKEND)) {
    /* Without the backend every input would be refused: say so once, loudly. */
    fprintf(stderr, "fuzz: no backend '%s': %s\n", KILN_FUZZ_BACKEND,
            s ? kiln_status_message(s) : "not found");
    kiln_status_free(s);
    __builtin_trap();
  }
  return 0;
}

/* splitmix64: a small seeded generator, so a finding reproduces. */
static uint64_t fuzz_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Values a model is likely to care about: small integers (indices, both
 * signs, some out of range), and floats around zero. */
static void fuzz_fill(void *buf, const kiln_type *t, uint64_t *state) {
  int64_t n = kiln_type_numel(t);
  size_t es = kiln_elem_size(t->elem);
  unsigned char *p = buf;
  for (int64_t i = 0; i < n; i++, p += es) {
    uint64_t r = fuzz_next(state);
    int64_t small = (int64_t)(r % 17) - 8;
    switch (t->elem) {
    case KILN_F32: {
      float v = (float)small * 0.37f;
      memcpy(p, &v, sizeof v);
      break;
    }
    case KILN_F64: {
      double v = (double)small * 0.37;
      memcpy(p, &v, sizeof v);
      break;
    }
    case KILN_BOOL:
      *p = (unsigned char)(r & 1);
      break;
    default:
      /* Integers of any width, and the raw bits of f16/bf16: the low
       * bytes of a small signed value. */
      memcpy(p, &small, es < sizeof small ? es : sizeof small);
      break;
    }
  }
}

static int64_t fuzz_io_bytes(const kiln_executable *exe, uint32_t count, bool inputs) {
  int64_t total = 0;
  for (uint32_t i = 0; i < count; i++) {
    kiln_io_info io;
    if (inputs)
      kiln_executable_input(exe, i, &io);
    else
      kiln_executable_output(exe, i, &io);
    int64_t b = kiln_type_bytes(&io.type);
    if (b < 0 || b > (int64_t)FUZZ_MAX_IO_BYTES)
      return -1;
    total += b;
    if (total > (int64_t)FUZZ_MAX_IO_BYTES)
      return -1;
  }
  return total;
}

static void fuzz_run(kiln_executable *exe, uint64_t seed) {
  uint32_t ni = kiln_executable_input_count(exe), no = kiln_executable_output_count(exe);
  if (fuzz_io_bytes(exe, ni, true) < 0 || fuzz_io_bytes(exe, no, false) < 0)
    return;
  const kiln_ir *ir = kiln_executable_ir(exe);
  if (ir && kiln_ir_activation_bytes(ir) > FUZZ_MAX_ARENA_BYTES)
    return;
  void **in = calloc(ni ? ni : 1, sizeof *in), **out = calloc(no ? no : 1, sizeof *out);
  bool ok = in && out;
  for (uint32_t i = 0; ok && i < ni; i++) {
    kiln_io_info io;
    kiln_executable_input(exe, i, &io);
    in[i] = calloc(1, (size_t)kiln_type_bytes(&io.type) + 1);
    ok = in[i] != NULL;
  }
  for (uint32_t i = 0; ok && i < no; i++) {
    kiln_io_info io;
    kiln_executable_output(exe, i, &io);
    out[i] = calloc(1, (size_t)kiln_type_bytes(&io.type) + 1);
    ok = out[i] != NULL;
  }
  if (ok) {
    kiln_status_free(kiln_run(exe, (const void *const *)in, out));
    uint64_t state = seed;
    for (uint32_t i = 0; i < ni; i++) {
      kiln_io_info io;
      kiln_executable_input(exe, i, &io);
      fuzz_fill(in[i], &io.type, &state);
    }
    kiln_status_free(kiln_run(exe, (const void *const *)in, out));
  }
  for (uint32_t i = 0; in && i < ni; i++)
    free(in[i]);
  for (uint32_t i = 0; out && i < no; i++)
    free(out[i]);
  free(in);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln_module *m = NULL;
#ifdef KILN_FUZZ_TEXT
  kiln_status s = kiln_module_parse((const char *)data, size, "fuzz.kir", NULL, &m);
#else
  /* No folder: external data is refused, so the fuzzer cannot read files. */
  kiln_status s = kiln_onnx_load_memory(data, size, NULL, "fuzz.onnx", NULL, &m);
#endif
  if (!s) {
    kiln_status_free(kiln_module_verify(m));
    kiln_executable *exe = NULL;
    kiln_status c = kiln_compile(fuzz_ctx, m, NULL, KILN_FUZZ_BACKEND, NULL, &exe);
    if (!c) {
      uint64_t seed = 1469598103934665603ull;
      for (size_t i = 0; i < size; i++)
        seed = (seed ^ data[i]) * 1099511628211ull;
      fuzz_run(exe, seed);
    }
    kiln_status_free(c);
    kiln_executable_destroy(exe);
  }
  kiln_status_free(s);
  kiln_module_destroy(m);
  return 0;
}
