/* passes/validate.c: brute-force check of a memory plan. Recomputes each
 * activation's lifetime directly from the instruction list (no shared
 * code with the planner beyond the liveness walk) and compares every pair. */
#include "kiln/passes.h"
#include "mem_live.h"

kiln_status kiln_pass_validate_plan(const kiln_ir *ir) {
  kiln_mem_live l;
  KILN_TRY(kiln_mem_live_compute(ir, &l));
  uint64_t arena = kiln_ir_activation_bytes(ir);
  kiln_status s = NULL;
  for (uint32_t a = 0; a < l.nbuf && !s; a++) {
    const kiln_buffer *ba = kiln_ir_buffer(ir, a);
    int64_t s1, e1, s2, e2;
    /* an activation no instruction mentions (one that in-place reuse or
     * concat elimination left behind) holds no bytes: the plan gives it
     * none, whatever its offset says */
    if (kiln_buffer_get_kind(ba) != KILN_BUFFER_ACTIVATION ||
        !kiln_mem_live_interval(&l, a, &s1, &e1))
      continue;
    uint64_t oa = kiln_buffer_offset(ba), sa = (uint64_t)kiln_type_bytes(kiln_buffer_type(ba));
    if (oa % 64 != 0)
      s = kiln_status_make(KILN_VERIFY_ERROR, "memory plan: '%s' at offset %llu is not 64-aligned",
                           kiln_buffer_name(ba), (unsigned long long)oa);
    else if (sa && oa + sa > arena)
      s = kiln_status_make(KILN_VERIFY_ERROR,
                           "memory plan: '%s' [%llu, %llu) lies outside the %llu-byte arena",
                           kiln_buffer_name(ba), (unsigned long long)oa,
                           (unsigned long long)(oa + sa), (unsigned long long)arena);
    if (s || sa == 0)
      continue;
    for (uint32_t b = a + 1; b < l.nbuf && !s; b++) {
      const kiln_buffer *bb = kiln_ir_buffer(ir, b);
      if (kiln_buffer_get_kind(bb) != KILN_BUFFER_ACTIVATION ||
          !kiln_mem_live_interval(&l, b, &s2, &e2) || e1 < s2 || e2 < s1)
        continue;
      uint64_t ob = kiln_buffer_offset(bb), sb = (uint64_t)kiln_type_bytes(kiln_buffer_type(bb));
      if (sb && oa < ob + sb && ob < oa + sa)
        s = kiln_status_make(KILN_VERIFY_ERROR,
                             "memory plan: '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap in "
                             "memory while both alive (instructions %lld-%lld and %lld-%lld)",
                             kiln_buffer_name(ba), (unsigned long long)oa,
                             (unsigned long long)(oa + sa), kiln_buffer_name(bb),
                             (unsigned long long)ob, (unsigned long long)(ob + sb), (long long)s1,
                             (long long)e1, (long long)s2, (long long)e2);
    }
  }
  kiln_mem_live_free(&l);
  return s;
}
