/* plugins/cpu/bundle.c: ahead-of-time bundles (the emit_bundle hook). */
#include "cpu.h"

kiln_status kcpu_emit_bundle(void *state, const kiln_ir *ir, const kiln_compile_options *opts,
                             const char *dir, const char *name) {
  (void)state, (void)ir, (void)opts, (void)dir, (void)name;
  return kiln_status_make(KILN_UNIMPLEMENTED, "cpu: bundles are not written yet");
}
