/* tools/cmd_backends.c: `kiln backends [--json]`: every backend found
 * (name, version, ABI, path, node kinds declared, devices) and every plugin
 * refused, with the reason. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static void backends_help(void) {
  printf("usage: kiln backends [--json]\n\n"
         "List the backend plugins kiln found and those it refused, with the reason.\n"
         "Search order: the build tree's plugin folder (and its subfolders), the\n"
         "install folder, then each folder of KILN_PLUGIN_PATH (colon-separated);\n"
         "KILN_PLUGIN_PATH_ONLY=1 searches only KILN_PLUGIN_PATH. The first plugin\n"
         "of a name wins; later ones are refused as duplicates.\n\n"
         "'kinds' is the number of node kinds for which the backend accepted a small\n"
         "probe node (support is declared per node, so a kind may be accepted for\n"
         "some types and shapes only; a kind no probe could be built for is not\n"
         "counted). Nodes a backend declines are lowered by kiln where it can.\n\n"
         "  --json   machine-readable output: {\"backends\": [...], \"refused\": [...]}\n"
         "  --help   this text\n");
}

static void json_string(const char *s) {
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\')
      printf("\\%c", *p);
    else if (*p == '\n')
      printf("\\n");
    else if (*p < 0x20)
      printf("\\u%04x", *p);
    else
      putchar(*p);
  }
  putchar('"');
}

static void backends_devices(const kiln_plugin *p, uint32_t n, bool json) {
  for (uint32_t d = 0; d < n; d++) {
    kiln_device_info di;
    memset(&di, 0, sizeof di);
    kiln_status (*device_info)(void *, uint32_t, kiln_device_info *) =
        KILN_PLUGIN_HOOK(p, device_info);
    kiln_status s = device_info ? device_info(p->state, d, &di) : NULL;
    if (s || !device_info) {
      snprintf(di.name, sizeof di.name, "(no details%s%s)", s ? ": " : "",
               s ? kiln_status_message(s) : "");
      kiln_status_free(s);
    }
    di.name[sizeof di.name - 1] = di.kind[sizeof di.kind - 1] = '\0';
    if (json) {
      printf("%s{\"index\": %u, \"name\": ", d ? ", " : "", d);
      json_string(di.name);
      printf(", \"kind\": ");
      json_string(di.kind);
      printf(", \"memory_bytes\": %llu}", (unsigned long long)di.memory_bytes);
    } else {
      printf("    device %u: %s (%s", d, di.name, di.kind[0] ? di.kind : "unknown kind");
      if (di.memory_bytes)
        printf(", %.1f MiB", (double)di.memory_bytes / (1024.0 * 1024.0));
      printf(")\n");
    }
  }
}

int kiln_cmd_backends(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      backends_help();
      return KILN_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (argv[i][0] == '-') {
      return tool_usage_error("backends", "unknown option '%s'", argv[i]);
    } else {
      return tool_usage_error("backends", "unexpected argument '%s'", argv[i]);
    }
  }
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  if (s)
    return tool_fail(s);
  uint32_t nb = kiln_context_backend_count(ctx), nr = kiln_context_refused_count(ctx);
  if (json)
    printf("{\"backends\": [");
  else
    printf("backends (%u):\n", nb);
  for (uint32_t i = 0; i < nb && !s; i++) {
    kiln_backend_info bi;
    s = kiln_context_backend(ctx, i, &bi);
    if (s)
      break;
    const kiln_plugin *p = kiln_context_find_backend(ctx, bi.name);
    if (json) {
      printf("%s\n  {\"name\": ", i ? "," : "");
      json_string(bi.name);
      printf(", \"version\": ");
      json_string(bi.version);
      printf(", \"abi\": \"%u.%u\", \"path\": ", bi.abi_major, bi.abi_minor);
      json_string(bi.path);
      printf(", \"description\": ");
      json_string(bi.description);
      printf(", \"kinds\": %u, \"node_kind_count\": %u, \"devices\": [", bi.supported_kinds,
             (unsigned)KILN_NODE_KIND_COUNT);
      backends_devices(p, bi.device_count, true);
      printf("]}");
    } else {
      printf("  %s %s (ABI %u.%u)%s%s\n", bi.name, bi.version, bi.abi_major, bi.abi_minor,
             bi.description[0] ? ": " : "", bi.description);
      printf("    path: %s\n", bi.path);
      printf("    kinds: %u of %u node kinds accepted on a probe node\n", bi.supported_kinds,
             (unsigned)KILN_NODE_KIND_COUNT);
      printf("    devices: %u\n", bi.device_count);
      backends_devices(p, bi.device_count, false);
    }
  }
  if (json)
    printf("%s], \"refused\": [", nb ? "\n" : "");
  else
    printf("refused (%u):\n", nr);
  for (uint32_t i = 0; i < nr; i++) {
    const char *path, *reason;
    kiln_context_refused(ctx, i, &path, &reason);
    if (json) {
      printf("%s\n  {\"path\": ", i ? "," : "");
      json_string(path);
      printf(", \"reason\": ");
      json_string(reason);
      printf("}");
    } else {
      printf("  %s\n    %s\n", path, reason);
    }
  }
  if (json)
    printf("%s]}\n", nr ? "\n" : "");
  kiln_context_destroy(ctx);
  return s ? tool_fail(s) : KILN_EXIT_OK;
}
