/* plugins/opencl/gen_rnn.c: RNN, GRU and LSTM, the recurrence stepped in order inside the kernel.
 */
#include "ocl.h"

bool ocl_rnn_ok(const kiln_node *n) {
  (void)n;
  return false; /* not yet written */
}

kiln_status ocl_gen_rnn(ocl_gen *g) {
  return ocl_gen_unsupported(g, "not yet written");
}
