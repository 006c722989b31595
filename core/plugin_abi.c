/* core/plugin_abi.c: freezes the released layouts of the public structs
 * (x86-64 / LP64 values) and the values of the instruction kinds. A change
 * that moves any member breaks the build here, which is the point: moving
 * a member is an ABI major bump, and growth is appended after the last
 * member of the latest minor (docs/plugins.md lists them). */
#include <stddef.h>

#include "kiln/kiln.h"
#include "kiln/passes.h"
#include "kiln/plugin.h"

#if defined(__x86_64__) || defined(__aarch64__) || defined(__LP64__)
/* kiln_plugin, ABI 1.0: everything through `init`. */
_Static_assert(offsetof(kiln_plugin, abi_major) == 0, "kiln_plugin ABI: abi_major moved");
_Static_assert(offsetof(kiln_plugin, abi_minor) == 4, "kiln_plugin ABI: abi_minor moved");
_Static_assert(offsetof(kiln_plugin, struct_size) == 8, "kiln_plugin ABI: struct_size moved");
_Static_assert(offsetof(kiln_plugin, reserved0) == 12, "kiln_plugin ABI: reserved0 moved");
_Static_assert(offsetof(kiln_plugin, name) == 16, "kiln_plugin ABI: name moved");
_Static_assert(offsetof(kiln_plugin, version) == 24, "kiln_plugin ABI: version moved");
_Static_assert(offsetof(kiln_plugin, description) == 32, "kiln_plugin ABI: description moved");
_Static_assert(offsetof(kiln_plugin, state) == 40, "kiln_plugin ABI: state moved");
_Static_assert(offsetof(kiln_plugin, supports_node) == 48, "kiln_plugin ABI: supports_node moved");
_Static_assert(offsetof(kiln_plugin, supports_quantized) == 56,
               "kiln_plugin ABI: supports_quantized moved");
_Static_assert(offsetof(kiln_plugin, keep_node) == 64, "kiln_plugin ABI: keep_node moved");
_Static_assert(offsetof(kiln_plugin, rewrite_graph) == 72, "kiln_plugin ABI: rewrite_graph moved");
/* 1.0's preferred_layout, never called, reserved since 1.1. */
_Static_assert(offsetof(kiln_plugin, reserved_layout) == 80,
               "kiln_plugin ABI: reserved_layout moved");
_Static_assert(sizeof(((kiln_plugin *)0)->reserved_layout) == sizeof(void (*)(void)),
               "kiln_plugin ABI: reserved_layout must keep the size of the hook it replaced");
_Static_assert(offsetof(kiln_plugin, supports_fused) == 88,
               "kiln_plugin ABI: supports_fused moved");
_Static_assert(offsetof(kiln_plugin, compile) == 96, "kiln_plugin ABI: compile moved");
_Static_assert(offsetof(kiln_plugin, run) == 104, "kiln_plugin ABI: run moved");
_Static_assert(offsetof(kiln_plugin, destroy) == 112, "kiln_plugin ABI: destroy moved");
_Static_assert(offsetof(kiln_plugin, device_count) == 120, "kiln_plugin ABI: device_count moved");
_Static_assert(offsetof(kiln_plugin, device_info) == 128, "kiln_plugin ABI: device_info moved");
_Static_assert(offsetof(kiln_plugin, init) == 136, "kiln_plugin ABI: init moved");
_Static_assert(KILN_PLUGIN_SIZE_1_0 == 144, "kiln_plugin ABI: the 1.0 layout is 144 bytes");
/* ABI 1.1: emit_bundle. */
_Static_assert(offsetof(kiln_plugin, emit_bundle) == 144, "kiln_plugin ABI: emit_bundle moved");
_Static_assert(KILN_PLUGIN_SIZE_1_1 == 152, "kiln_plugin ABI: the 1.1 layout is 152 bytes");
/* ABI 1.2: profile. */
_Static_assert(offsetof(kiln_plugin, profile) == 152, "kiln_plugin ABI: profile moved");
_Static_assert(KILN_PLUGIN_SIZE_1_2 == 160, "kiln_plugin ABI: the 1.2 layout is 160 bytes");
/* ABI 1.5: node_cost. */
_Static_assert(offsetof(kiln_plugin, node_cost) == 160, "kiln_plugin ABI: node_cost moved");
_Static_assert(KILN_PLUGIN_SIZE_1_5 == 168, "kiln_plugin ABI: the 1.5 layout is 168 bytes");
_Static_assert(sizeof(kiln_plugin) == KILN_PLUGIN_SIZE_1_5,
               "kiln_plugin ABI: size changed (append only, bump minor, add a "
               "KILN_PLUGIN_SIZE_1_N and a case in kiln_plugin_size_for_minor)");

/* The options struct is read by plugins too and grows by struct_size: its
 * released members stay where they are. */
_Static_assert(offsetof(kiln_compile_options, struct_size) == 0, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, threads) == 4, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, device) == 8, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, cpu) == 16, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, cpu_features) == 24, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, target) == 32, "compile options ABI");
/* ABI 1.2: flags. */
_Static_assert(offsetof(kiln_compile_options, flags) == 40, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, reserved1) == 44, "compile options ABI");
/* ABI 1.5: device_memory. */
_Static_assert(offsetof(kiln_compile_options, device_memory) == 48, "compile options ABI");
_Static_assert(sizeof(kiln_compile_options) == 56, "compile options ABI");
/* Region info grows by struct_size. */
_Static_assert(offsetof(kiln_region_info, last_run_ns) == 80, "region info ABI");

/* Profiles: events and phases are frozen; kiln_profile grows by struct_size. */
_Static_assert(sizeof(kiln_profile_event) == 24, "profile event ABI: add a new struct beside it");
_Static_assert(offsetof(kiln_profile_event, start_ns) == 8, "profile event ABI");
_Static_assert(offsetof(kiln_profile_event, dur_ns) == 16, "profile event ABI");
_Static_assert(sizeof(kiln_profile_phase) == 16, "profile phase ABI: add a new struct beside it");
_Static_assert(offsetof(kiln_profile, events) == 8, "profile ABI");
_Static_assert(offsetof(kiln_profile, phases) == 24, "profile ABI");
_Static_assert(offsetof(kiln_profile, run_ns) == 32, "profile ABI");
_Static_assert(sizeof(kiln_profile) == 40, "profile ABI");

/* Structs without struct_size keep their size for the whole major; they
 * grow by a new struct beside them (see each one's comment). */
_Static_assert(sizeof(kiln_device_info) == 168, "device info ABI: add a new struct beside it");
_Static_assert(sizeof(kiln_backend_info) == 48, "backend info ABI: add a new struct beside it");
_Static_assert(sizeof(kiln_onnx_options) == 48, "onnx options ABI: add a new struct beside it");
_Static_assert(sizeof(kiln_pass_options) == 112, "pass options ABI: add a new struct beside it");
_Static_assert(sizeof(kiln_pass_target) == 24, "pass target ABI: add a new struct beside it");
_Static_assert(sizeof(kiln_mem_plan_report) == 32,
               "memory plan report ABI: add a new struct beside it");
#endif

/* Instruction kinds: values written in instr_kinds.def, pinned here. The
 * compute kinds start at 4 for good (plugins compile kiln_instr_kind_for_node
 * in), so a memory instruction added later takes a value from
 * KILN_INSTR_MEMORY_RESERVED_FIRST up, never one below the compute range. */
_Static_assert(KILN_INSTR_Alloc == 0, "instruction kinds: Alloc is 0");
_Static_assert(KILN_INSTR_Dealloc == 1, "instruction kinds: Dealloc is 1");
_Static_assert(KILN_INSTR_Copy == 2, "instruction kinds: Copy is 2");
_Static_assert(KILN_INSTR_View == 3, "instruction kinds: View is 3");
_Static_assert(KILN_INSTR_COMPUTE_FIRST == 4, "instruction kinds: compute kinds start at 4");
_Static_assert(KILN_INSTR_KIND_COUNT == KILN_INSTR_COMPUTE_FIRST + KILN_NODE_KIND_COUNT,
               "instruction kinds: one compute kind per node kind, in node-kind order");
_Static_assert(KILN_INSTR_KIND_COUNT < KILN_INSTR_MEMORY_RESERVED_FIRST,
               "instruction kinds: the compute range reached the reserved memory values");
#define KILN_INSTR(name, value, flags)                                                             \
  _Static_assert((value) < KILN_INSTR_COMPUTE_FIRST || (value) >= KILN_INSTR_MEMORY_RESERVED_FIRST, \
                 "instruction kind " #name ": a memory kind inside the compute range");
#include "kiln/instr_kinds.def"
#undef KILN_INSTR

/* Two memory kinds with one value would be two case labels alike. */
__attribute__((unused)) static int kiln_instr_kinds_are_distinct(kiln_instr_kind k) {
  switch (k) {
#define KILN_INSTR(name, value, flags)                                                             \
  case KILN_INSTR_##name:                                                                          \
    return value;
#include "kiln/instr_kinds.def"
#undef KILN_INSTR
  default:
    return -1;
  }
}
