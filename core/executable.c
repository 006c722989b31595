/* core/executable.c: what a compiled function offers its user: io
 * descriptions, kiln_run with positional buffers, named bindings with size
 * checks, the last run's profile (kiln_executable_profile) and
 * kiln_tensor_free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "partition.h"

void kiln_executable_destroy(kiln_executable *exe) {
  if (!exe)
    return;
  if (exe->plugin_exe && exe->plugin && exe->plugin->destroy)
    exe->plugin->destroy(exe->plugin_exe);
  kiln_part_exe_destroy(exe->part);
  free(exe->backend_label);
  kiln_ir_destroy(exe->ir);
  kiln_module_destroy(exe->module);
  for (uint32_t i = 0; exe->inputs && i < exe->input_count; i++)
    free(exe->inputs[i].name);
  for (uint32_t i = 0; exe->outputs && i < exe->output_count; i++)
    free(exe->outputs[i].name);
  free(exe->inputs);
  free(exe->outputs);
  free(exe->phases);
  free(exe);
}

kiln_status kiln_executable_profile(kiln_executable *exe, const kiln_profile **out) {
  if (!out || !exe)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_executable_profile: %s is NULL",
                            out ? "executable" : "out");
  *out = NULL;
  if (!exe->profiling)
    return kiln_status_make(KILN_FAILED_PRECONDITION,
                            "the executable was not compiled for profiling (set "
                            "KILN_COMPILE_PROFILE in kiln_compile_options.flags)");
  kiln_profile bp = {.struct_size = sizeof bp};
  /* A partitioned executable has no instructions of its own: its
   * regions' profiles are theirs (kiln_executable_region). */
  kiln_status (*hook)(void *, kiln_profile *) =
      exe->plugin ? KILN_PLUGIN_HOOK(exe->plugin, profile) : NULL;
  if (hook)
    KILN_TRY_CTX(hook(exe->plugin_exe, &bp), "backend '%s' profile", exe->plugin->name);
  uint32_t nb = bp.phases ? bp.phase_count : 0, nc = 3;
  kiln_profile_phase *ph = malloc((nc + nb) * sizeof *ph);
  if (!ph)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for a profile");
  memcpy(ph, exe->core_phases, sizeof exe->core_phases);
  if (nb)
    memcpy(ph + nc, bp.phases, nb * sizeof *ph);
  free(exe->phases);
  exe->phases = ph;
  exe->profile = (kiln_profile){.struct_size = sizeof exe->profile,
                                .event_count = bp.events ? bp.event_count : 0,
                                .events = bp.events,
                                .phase_count = nc + nb,
                                .phases = ph,
                                .run_ns = __atomic_load_n(&exe->run_ns, __ATOMIC_RELAXED)};
  *out = &exe->profile;
  return NULL;
}

uint32_t kiln_executable_input_count(const kiln_executable *exe) {
  return exe ? exe->input_count : 0;
}

uint32_t kiln_executable_output_count(const kiln_executable *exe) {
  return exe ? exe->output_count : 0;
}

static void exe_io(const kiln_exe_io *io, uint32_t n, uint32_t i, kiln_io_info *out) {
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  if (io && i < n) {
    out->name = io[i].name;
    out->type = io[i].type;
  }
}

void kiln_executable_input(const kiln_executable *exe, uint32_t i, kiln_io_info *out) {
  exe_io(exe ? exe->inputs : NULL, exe ? exe->input_count : 0, i, out);
}

void kiln_executable_output(const kiln_executable *exe, uint32_t i, kiln_io_info *out) {
  exe_io(exe ? exe->outputs : NULL, exe ? exe->output_count : 0, i, out);
}

static int32_t exe_find(const kiln_exe_io *io, uint32_t n, const char *name) {
  if (!io || !name)
    return -1;
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(io[i].name, name) == 0)
      return (int32_t)i;
  return -1;
}

int32_t kiln_executable_find_input(const kiln_executable *exe, const char *name) {
  return exe ? exe_find(exe->inputs, exe->input_count, name) : -1;
}

int32_t kiln_executable_find_output(const kiln_executable *exe, const char *name) {
  return exe ? exe_find(exe->outputs, exe->output_count, name) : -1;
}

const kiln_ir *kiln_executable_ir(const kiln_executable *exe) {
  return exe ? exe->ir : NULL;
}

const char *kiln_executable_backend(const kiln_executable *exe) {
  if (exe && exe->part)
    return exe->backend_label;
  return exe && exe->plugin ? exe->plugin->name : NULL;
}

kiln_status kiln_run(kiln_executable *exe, const void *const *inputs, void *const *outputs) {
  if (!exe)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_run: executable is NULL");
  if (exe->input_count && !inputs)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "kiln_run: inputs is NULL but the executable has %u inputs",
                            exe->input_count);
  if (exe->output_count && !outputs)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "kiln_run: outputs is NULL but the executable has %u outputs",
                            exe->output_count);
  /* An empty tensor has no bytes, so a NULL buffer is fine for it. */
  for (uint32_t i = 0; i < exe->input_count; i++)
    if (!inputs[i] && kiln_type_bytes(&exe->inputs[i].type) > 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_run: buffer of input %u '%s' is NULL", i,
                              exe->inputs[i].name);
  for (uint32_t i = 0; i < exe->output_count; i++)
    if (!outputs[i] && kiln_type_bytes(&exe->outputs[i].type) > 0)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_run: buffer of output %u '%s' is NULL",
                              i, exe->outputs[i].name);
  uint64_t t0 = exe->profiling ? kiln_core_now_ns() : 0;
  kiln_status s = exe->part ? kiln_part_run(exe, inputs, outputs)
                            : exe->plugin->run(exe->plugin_exe, inputs, outputs);
  if (exe->profiling) /* atomic: profiled runs may still be concurrent */
    __atomic_store_n(&exe->run_ns, kiln_core_now_ns() - t0, __ATOMIC_RELAXED);
  if (s)
    return kiln_status_wrap(s, "backend '%s' run failed", kiln_executable_backend(exe));
  return NULL;
}

/* ---- bindings ---------------------------------------------------------- */

struct kiln_bindings {
  const kiln_executable *exe;
  const void **inputs;
  void **outputs;
  bool *in_bound, *out_bound;
};

kiln_status kiln_bindings_create(const kiln_executable *exe, kiln_bindings **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_bindings_create: out is NULL");
  *out = NULL;
  if (!exe)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_bindings_create: executable is NULL");
  kiln_bindings *b = calloc(1, sizeof *b);
  size_t ni = exe->input_count ? exe->input_count : 1;
  size_t no = exe->output_count ? exe->output_count : 1;
  if (b) {
    b->exe = exe;
    b->inputs = calloc(ni, sizeof *b->inputs);
    b->outputs = calloc(no, sizeof *b->outputs);
    b->in_bound = calloc(ni, sizeof *b->in_bound);
    b->out_bound = calloc(no, sizeof *b->out_bound);
  }
  if (!b || !b->inputs || !b->outputs || !b->in_bound || !b->out_bound) {
    kiln_bindings_destroy(b);
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory creating bindings");
  }
  *out = b;
  return NULL;
}

void kiln_bindings_destroy(kiln_bindings *b) {
  if (!b)
    return;
  free(b->inputs);
  free(b->outputs);
  free(b->in_bound);
  free(b->out_bound);
  free(b);
}

/* "x f32[1,3], y i64[2]" for messages. */
static void exe_list(const kiln_exe_io *io, uint32_t n, const bool *only_unbound, char *buf,
                     size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  bool first = true;
  for (uint32_t i = 0; i < n && used + 1 < size; i++) {
    if (only_unbound && only_unbound[i])
      continue;
    char t[160];
    kiln_type_format(&io[i].type, t, sizeof t);
    int w = snprintf(buf + used, size - used, "%s'%s' %s", first ? "" : ", ", io[i].name, t);
    if (w < 0)
      break;
    used += (size_t)w;
    first = false;
  }
  if (first)
    snprintf(buf, size, "none");
}

static kiln_status exe_bind(kiln_bindings *b, bool input, const char *name, void *data,
                            size_t bytes) {
  const char *what = input ? "input" : "output";
  if (!b || !name)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_bind_%s: %s is NULL", what,
                            b ? "name" : "bindings");
  const kiln_exe_io *io = input ? b->exe->inputs : b->exe->outputs;
  uint32_t n = input ? b->exe->input_count : b->exe->output_count;
  int32_t i = exe_find(io, n, name);
  if (i < 0) {
    char list[1024];
    exe_list(io, n, NULL, list, sizeof list);
    return kiln_status_make(KILN_NOT_FOUND, "the executable has no %s '%s' (its %ss: %s)", what,
                            name, what, list);
  }
  int64_t want = kiln_type_bytes(&io[i].type);
  if ((int64_t)bytes != want) {
    char t[160];
    kiln_type_format(&io[i].type, t, sizeof t);
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "%s '%s' is %s (%lld bytes) but the bound buffer has %zu bytes", what,
                            name, t, (long long)want, bytes);
  }
  if (!data && want > 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "buffer bound to %s '%s' is NULL", what, name);
  if (input) {
    b->inputs[i] = data;
    b->in_bound[i] = true;
  } else {
    b->outputs[i] = data;
    b->out_bound[i] = true;
  }
  return NULL;
}

kiln_status kiln_bind_input(kiln_bindings *b, const char *name, const void *data, size_t bytes) {
  /* exe_bind stores into const void ** for inputs; the cast only shares code. */
  return exe_bind(b, true, name, (void *)(uintptr_t)data, bytes);
}

kiln_status kiln_bind_output(kiln_bindings *b, const char *name, void *data, size_t bytes) {
  return exe_bind(b, false, name, data, bytes);
}

kiln_status kiln_run_bindings(kiln_executable *exe, const kiln_bindings *b) {
  if (!exe || !b)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_run_bindings: %s is NULL",
                            exe ? "bindings" : "executable");
  if (b->exe != exe)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "kiln_run_bindings: the bindings were made for another executable");
  bool missing_in = false, missing_out = false;
  for (uint32_t i = 0; i < exe->input_count; i++)
    missing_in |= !b->in_bound[i];
  for (uint32_t i = 0; i < exe->output_count; i++)
    missing_out |= !b->out_bound[i];
  if (missing_in || missing_out) {
    char li[1024] = "", lo[1024] = "";
    if (missing_in)
      exe_list(exe->inputs, exe->input_count, b->in_bound, li, sizeof li);
    if (missing_out)
      exe_list(exe->outputs, exe->output_count, b->out_bound, lo, sizeof lo);
    return kiln_status_make(
        KILN_FAILED_PRECONDITION, "unbound %s%s%s%s%s", missing_in ? "inputs: " : "", li,
        missing_in && missing_out ? "; unbound " : "", missing_out ? "outputs: " : "", lo);
  }
  return kiln_run(exe, b->inputs, b->outputs);
}

void kiln_tensor_free(kiln_tensor *t) {
  if (!t)
    return;
  kiln_free(t->data);
  kiln_free(t->name);
  memset(t, 0, sizeof *t);
}
