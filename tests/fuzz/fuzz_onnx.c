/* tests/fuzz/fuzz_onnx.c: libFuzzer target: arbitrary bytes into the ONNX
 * loader, which must return an error or a module, never crash or hang.
 * Built only with -Dfuzz=true (clang). Seed corpus: tests/fuzz/corpus/. */
#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln_module *m = NULL;
  /* No folder: external data is refused, so the fuzzer cannot read files. */
  kiln_status s = kiln_onnx_load_memory(data, size, NULL, "fuzz.onnx", NULL, &m);
  kiln_status_free(s);
  kiln_module_destroy(m);
  return 0;
}
