/* examples/bundle/main.c: run an ahead-of-time bundle made by
 * `kiln compile MODEL --backend cpu --bundle DIR --name model`: no libkiln,
 * just the bundle's object, libm and pthreads. Reads the weights file and
 * one input .npy (a tiny float32 reader below), runs, prints output 0.
 *   usage: bundle_example WEIGHTS INPUT.npy */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Read a whole file into 64-byte aligned memory. */
static void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = n >= 0 ? aligned_alloc(64, ((size_t)n + 64) & ~(size_t)63) : NULL;
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return p;
}

static int has_f4(const unsigned char *p, size_t n) {
  for (size_t i = 0; i + 3 <= n; i++)
    if (p[i] == '<' && p[i + 1] == 'f' && p[i + 2] == '4')
      return 1;
  return 0;
}

/* The data of a little-endian float32 .npy of `want` bytes (version 1-3). */
static const void *npy_data(const unsigned char *p, size_t size, size_t want) {
  if (size < 10 || memcmp(p, "\x93NUMPY", 6) != 0)
    return NULL;
  size_t hdr = p[6] == 1 ? (size_t)(p[8] | p[9] << 8) + 10
                         : (size_t)(p[8] | p[9] << 8 | p[10] << 16 | (uint32_t)p[11] << 24) + 12;
  if (hdr > size || size - hdr != want || !has_f4(p, hdr))
    return NULL;
  return p + hdr;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s WEIGHTS INPUT.npy\n", argv[0]);
    return 2;
  }
  size_t wsize = 0, isize = 0;
  void *weights = read_file(argv[1], &wsize);
  unsigned char *npy = read_file(argv[2], &isize);
  const void *x = npy ? npy_data(npy, isize, MODEL_INPUT0_BYTES) : NULL;
  if (!weights || wsize != MODEL_WEIGHTS_BYTES || !x) {
    fprintf(stderr, "bad weights (%s) or input (%s)\n", argv[1], argv[2]);
    return 1;
  }
  void *act = aligned_alloc(64, MODEL_ACTIVATIONS_BYTES + 64);
  float *y = malloc(MODEL_OUTPUT0_BYTES);
  const void *ins[MODEL_NUM_INPUTS] = {x};
  void *outs[MODEL_NUM_OUTPUTS] = {y};
  model_init(2);
  model_fault fault;
  int rc = model_run_fault(weights, act, ins, outs, &fault);
  model_fini();
  if (rc) { /* an index tensor held a value outside its dimension */
    fprintf(stderr, "instruction %lld: index %lld out of range for dimension %lld\n",
            fault.instruction, fault.value, fault.bound);
    return 1;
  }
  printf("%s :", MODEL_OUTPUT0_NAME);
  for (size_t i = 0; i < MODEL_OUTPUT0_BYTES / sizeof(float); i++)
    printf(" %.6g", y[i]);
  printf("\n");
  free(y);
  free(act);
  free(npy);
  free(weights);
  return 0;
}
