/* tests/cpu/bundle_fault/main.c: drives a bundle of gather.kir (no
 * libkiln): in-range indices (one negative) give the rows worked out by
 * hand, an index of 3 into 3 rows makes gather_run return 1 and
 * gather_run_fault report value 3, bound 3, element 1, and the next run is
 * clean again. Exit 0 when all of that holds.
 *   usage: bundle_fault WEIGHTS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gather.h"

static int fails;
#define EXPECT(c)                                                                                  \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);                                      \
      fails++;                                                                                     \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  FILE *f = fopen(argv[1], "rb");
  void *w = aligned_alloc(GATHER_ALIGN, GATHER_WEIGHTS_BYTES + GATHER_ALIGN);
  if (!f || !w || fread(w, 1, GATHER_WEIGHTS_BYTES, f) != GATHER_WEIGHTS_BYTES)
    return 2;
  fclose(f);
  void *act = aligned_alloc(GATHER_ALIGN, GATHER_ACTIVATIONS_BYTES + GATHER_ALIGN);
  int64_t idx[2] = {-1, 0};
  float y[4];
  const void *ins[1] = {idx};
  void *outs[1] = {y};
  gather_init(1);
  EXPECT(gather_run(w, act, ins, outs) == 0);
  EXPECT(y[0] == 5 && y[1] == 6 && y[2] == 1 && y[3] == 2);
  idx[1] = 3;
  EXPECT(gather_run(w, act, ins, outs) == 1);
  gather_fault fault;
  memset(&fault, 0x55, sizeof fault);
  EXPECT(gather_run_fault(w, act, ins, outs, &fault) == 1);
  EXPECT(fault.claimed == 1 && fault.code == 1);
  EXPECT(fault.value == 3 && fault.bound == 3 && fault.at == 1);
  EXPECT(fault.instruction >= 0);
  idx[1] = -3;
  EXPECT(gather_run_fault(w, act, ins, outs, &fault) == 0);
  EXPECT(fault.claimed == 0);
  EXPECT(y[0] == 5 && y[1] == 6 && y[2] == 1 && y[3] == 2);
  gather_fini();
  free(act);
  free(w);
  if (!fails)
    printf("ok\n");
  return fails ? 1 : 0;
}
