/* core/plugin_abi.c: freezes the released layout of kiln_plugin (ABI 1.0,
 * x86-64 / LP64 values). A change that moves any member breaks the build
 * here, which is the point: moving a member is an ABI major bump, and
 * growth must be appended after `init`. */
#include <stddef.h>

#include "kiln/plugin.h"

#if defined(__x86_64__) || defined(__aarch64__) || defined(__LP64__)
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
_Static_assert(offsetof(kiln_plugin, preferred_layout) == 80,
               "kiln_plugin ABI: preferred_layout moved");
_Static_assert(offsetof(kiln_plugin, supports_fused) == 88,
               "kiln_plugin ABI: supports_fused moved");
_Static_assert(offsetof(kiln_plugin, compile) == 96, "kiln_plugin ABI: compile moved");
_Static_assert(offsetof(kiln_plugin, run) == 104, "kiln_plugin ABI: run moved");
_Static_assert(offsetof(kiln_plugin, destroy) == 112, "kiln_plugin ABI: destroy moved");
_Static_assert(offsetof(kiln_plugin, device_count) == 120, "kiln_plugin ABI: device_count moved");
_Static_assert(offsetof(kiln_plugin, device_info) == 128, "kiln_plugin ABI: device_info moved");
_Static_assert(offsetof(kiln_plugin, init) == 136, "kiln_plugin ABI: init moved");
_Static_assert(offsetof(kiln_plugin, emit_bundle) == 144, "kiln_plugin ABI: emit_bundle moved");
_Static_assert(sizeof(kiln_plugin) == 152,
               "kiln_plugin ABI: size changed (append only, bump minor)");

/* The options struct is read by plugins too; its released layout is frozen
 * the same way. */
_Static_assert(offsetof(kiln_compile_options, struct_size) == 0, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, threads) == 4, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, device) == 8, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, cpu) == 16, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, cpu_features) == 24, "compile options ABI");
_Static_assert(offsetof(kiln_compile_options, target) == 32, "compile options ABI");
_Static_assert(sizeof(kiln_compile_options) == 40, "compile options ABI");
_Static_assert(sizeof(kiln_device_info) == 168, "device info ABI");
#endif

/* ISO C forbids an empty translation unit when the asserts are skipped. */
typedef int kiln_plugin_abi_unused_;
