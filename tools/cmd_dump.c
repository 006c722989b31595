/* tools/cmd_dump.c: `kiln dump FILE [--dot]`: load a model (.kir text or
 * .onnx), verify it, and print it as text or as Graphviz DOT. With --dot
 * and --backend LIST the model is also compiled for that list and each
 * node is filled with the color of the list entry it was placed on
 * (docs/partitioning.md), with a legend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

static void dump_help(void) {
  printf("usage: kiln dump FILE [--dot [--backend LIST [options]]] [--dim NAME=VALUE]...\n\n"
         "Load FILE (.onnx by extension, otherwise the .kir text form), verify it\n"
         "and print it.\n\n"
         "  --dot              print Graphviz DOT instead of the text form\n"
         "                     (render with: kiln dump net.kir --dot | dot -Tsvg > net.svg)\n"
         "  --backend LIST     with --dot: compile for LIST (a backend, or a priority\n"
         "                     list A+B+...) and fill each node with the color of the\n"
         "                     list entry it runs on, with a legend; a node that the\n"
         "                     graph passes removed or merged before placement is\n"
         "                     left white. The other compile options below apply\n"
         "  --dim NAME=VALUE   give symbolic dimension NAME of an ONNX model a value\n"
         "                     (repeatable)\n"
         "  --help             this text\n\n"
         "compile options (with --dot --backend):\n%s",
         tool_compile_args_help);
}

/* Light fills that black labels read well on, one per list entry. */
static const char *const dump_palette[] = {"#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6",
                                           "#fb9a99", "#ffff99", "#8dd3c7", "#d9d9d9"};
#define DUMP_PALETTE_SIZE (sizeof dump_palette / sizeof *dump_palette)

/* Graph node name -> the list entry (placement) of its region. */
typedef struct dump_placed {
  const char *node;
  uint32_t entry;
} dump_placed;

typedef struct dump_colors {
  const char *placement[DUMP_PALETTE_SIZE * 4];
  const char *backend[DUMP_PALETTE_SIZE * 4];
  uint32_t entry_count;
  dump_placed *placed;
  uint32_t placed_count;
  char **owned; /* names made here, freed with placed */
  uint32_t owned_count;
  uint32_t whole;           /* UINT32_MAX, or the entry every node is on (one region) */
  const kiln_function *fn; /* the function compiled; others stay unfilled */
  bool unplaced;           /* some node of it is in no region */
} dump_colors;

static int dump_cmp_placed(const void *a, const void *b) {
  return strcmp(((const dump_placed *)a)->node, ((const dump_placed *)b)->node);
}

static int64_t dump_find(const dump_colors *c, const char *name) {
  dump_placed key = {name, 0};
  const dump_placed *hit = bsearch(&key, c->placed, c->placed_count, sizeof key, dump_cmp_placed);
  return hit ? (int64_t)hit->entry : -1;
}

/* The entry node n runs on, or -1. */
static int64_t dump_entry_of(const dump_colors *c, const kiln_node *n) {
  if (kiln_node_function(n) != c->fn)
    return -1;
  if (c->whole != UINT32_MAX)
    return c->whole;
  const char *name = kiln_node_name(n);
  return name ? dump_find(c, name) : -1;
}

static const char *dump_node_color(void *user, const kiln_node *n) {
  int64_t e = dump_entry_of(user, n);
  return e < 0 ? NULL : dump_palette[e % DUMP_PALETTE_SIZE];
}

/* The placement of every node: which list entry each region is on (the
 * entries numbered, and colored, in the order the list gives them), its
 * nodes by name. */
static kiln_status dump_place(const kiln_executable *exe, const char *list, char *list_copy,
                              dump_colors *c) {
  c->whole = UINT32_MAX;
  /* list_copy: a writable copy of list, cut at each '+' */
  for (char *p = list_copy; p;) {
    char *plus = strchr(p, '+');
    if (plus)
      *plus = '\0';
    if (c->entry_count == sizeof c->placement / sizeof *c->placement)
      return kiln_status_make(KILN_OUT_OF_RANGE, "backend list '%s': more entries than dump "
                                                 "can color",
                              list);
    c->placement[c->entry_count++] = p;
    p = plus ? plus + 1 : NULL;
  }
  uint32_t n = kiln_executable_region_count(exe), total = 0;
  kiln_region_info r = {.struct_size = sizeof r};
  for (uint32_t i = 0; i < n; i++) {
    KILN_TRY(kiln_executable_region(exe, i, &r));
    total += r.node_count;
  }
  c->placed = calloc(2 * (size_t)total + 1, sizeof *c->placed);
  c->owned = calloc((size_t)total + 1, sizeof *c->owned);
  if (!c->placed || !c->owned)
    return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory coloring the graph");
  bool whole = !tool_exe_partitioned(exe);
  for (uint32_t i = 0; i < n; i++) {
    r.struct_size = sizeof r;
    KILN_TRY(kiln_executable_region(exe, i, &r));
    uint32_t e = 0;
    while (e < c->entry_count && strcmp(c->placement[e], r.placement) != 0)
      e++;
    /* A one-backend executable reports its backend's name as placement:
     * "opencl" for the entry "opencl:1". */
    size_t bl = strlen(r.backend);
    if (whole && e == c->entry_count)
      for (e = 0; e < c->entry_count; e++)
        if (strncmp(c->placement[e], r.backend, bl) == 0 && c->placement[e][bl] == ':')
          break;
    if (e == c->entry_count)
      return kiln_status_make(KILN_INTERNAL, "region %u is on '%s', which is not an entry of '%s'",
                              i, r.placement, list);
    c->backend[e] = r.backend;
    if (whole)
      c->whole = e;
    for (uint32_t k = 0; k < r.node_count; k++) {
      const char *nm = r.nodes[k];
      if (!nm)
        continue;
      c->placed[c->placed_count++] = (dump_placed){nm, e};
      /* "conv2+1": node conv2 with one node merged into it (a folded batch
       * norm): conv2 itself is placed there too. */
      const char *plus = strrchr(nm, '+');
      if (plus && plus > nm && plus[1] && strspn(plus + 1, "0123456789") == strlen(plus + 1)) {
        char *base = strndup(nm, (size_t)(plus - nm));
        if (!base)
          return kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory coloring the graph");
        c->owned[c->owned_count++] = base;
        c->placed[c->placed_count++] = (dump_placed){base, e};
      }
    }
  }
  qsort(c->placed, c->placed_count, sizeof *c->placed, dump_cmp_placed);
  /* Graph passes run before placement (folding, fusion, dead code): a
   * node they removed or merged has no region under its own name. */
  for (uint32_t i = 0; i < kiln_function_node_count(c->fn); i++)
    c->unplaced |= dump_entry_of(c, kiln_function_node(c->fn, i)) < 0;
  return NULL;
}

/* The legend: one filled box per list entry, in a cluster of its own. */
static char *dump_legend(const dump_colors *c, const char *list) {
  size_t cap = 512 + strlen(list);
  for (uint32_t e = 0; e < c->entry_count; e++)
    cap += 160 + strlen(c->placement[e]) + (c->backend[e] ? strlen(c->backend[e]) : 0);
  char *s = malloc(cap);
  if (!s)
    return NULL;
  size_t used = 0;
  used += (size_t)snprintf(s + used, cap - used,
                           "  subgraph cluster_legend {\n    label=\"placement (--backend %s)\";\n"
                           "    fontname=\"monospace\";\n",
                           list);
  for (uint32_t e = 0; e < c->entry_count; e++) {
    /* An entry that got no region has no backend to name: say so. */
    const char *b = c->backend[e];
    bool plain = b && strcmp(c->placement[e], b) == 0;
    used += (size_t)snprintf(s + used, cap - used,
                             "    legend%u [shape=box, style=filled, fillcolor=\"%s\", "
                             "label=\"%s%s%s%s\"];\n",
                             e, dump_palette[e % DUMP_PALETTE_SIZE], c->placement[e],
                             plain ? "" : b ? " (" : "\\n(no nodes)", plain || !b ? "" : b,
                             plain || !b ? "" : ")");
  }
  if (c->unplaced)
    used += (size_t)snprintf(s + used, cap - used,
                             "    legend_none [shape=box, label=\"not placed as such\\n(removed "
                             "or merged by the graph passes)\"];\n");
  snprintf(s + used, cap - used, "  }\n");
  return s;
}

/* Entry names and backend names come from the list the user typed and
 * the plugins; neither may break out of a DOT string. */
static bool dump_dot_safe(const char *s) {
  for (; *s; s++)
    if (*s == '"' || *s == '\\' || *s == '\n')
      return false;
  return true;
}

static kiln_status dump_colored(kiln_context *ctx, const kiln_module *m, tool_compile_args *ca) {
  kiln_executable *exe = NULL;
  KILN_TRY(kiln_compile(ctx, m, ca->function, ca->backend, &ca->opts, &exe));
  dump_colors c;
  memset(&c, 0, sizeof c);
  c.fn = ca->function ? kiln_module_find_function(m, ca->function) : kiln_module_function(m, 0);
  char *list = strdup(ca->backend), *legend = NULL;
  kiln_status s = list ? dump_place(exe, ca->backend, list, &c)
                       : kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory");
  /* The compile accepted the list, so its entries name backends; still,
   * nothing typed may break out of a DOT string. */
  if (!s && !dump_dot_safe(ca->backend))
    s = kiln_status_make(KILN_INVALID_ARGUMENT, "backend list '%s' cannot be written in DOT",
                         ca->backend);
  for (uint32_t e = 0; !s && e < c.entry_count; e++)
    if (c.backend[e] && !dump_dot_safe(c.backend[e]))
      s = kiln_status_make(KILN_INVALID_ARGUMENT, "backend name '%s' cannot be written in DOT",
                           c.backend[e]);
  if (!s && !(legend = dump_legend(&c, ca->backend)))
    s = kiln_status_make(KILN_OUT_OF_MEMORY, "out of memory writing the legend");
  if (!s)
    s = kiln_module_write_dot_styled(m, stdout, dump_node_color, &c, legend);
  free(legend);
  free(list);
  for (uint32_t i = 0; i < c.owned_count; i++)
    free(c.owned[i]);
  free(c.owned);
  free(c.placed);
  kiln_executable_destroy(exe);
  return s;
}

int kiln_cmd_dump(int argc, char **argv) {
  const char *file = NULL;
  bool dot = false;
  tool_compile_args ca;
  tool_compile_args_init(&ca);
  bool compile_opts = false;
  for (int i = 1; i < argc; i++) {
    int r;
    bool dim = strncmp(argv[i], "--dim", 5) == 0 && (argv[i][5] == '\0' || argv[i][5] == '=');
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      dump_help();
      return KILN_EXIT_OK;
    } else if (strcmp(argv[i], "--dot") == 0) {
      dot = true;
    } else if ((r = tool_compile_arg("dump", argc, argv, &i, &ca)) != 0) {
      if (r != 1)
        return r;
      compile_opts |= !dim;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return tool_usage_error("dump", "unknown option '%s'", argv[i]);
    } else if (!file) {
      file = argv[i];
    } else {
      return tool_usage_error("dump", "more than one FILE ('%s' and '%s')", file, argv[i]);
    }
  }
  if (!file)
    return tool_usage_error("dump", "missing FILE");
  if (compile_opts && !dot)
    return tool_usage_error("dump", "--backend and the compile options need --dot");
  if (compile_opts && !ca.backend)
    return tool_usage_error("dump", "the compile options need --backend LIST");

  kiln_context *ctx = NULL;
  kiln_module *m = NULL;
  kiln_status s = kiln_context_create(&ctx);
  if (!s)
    s = tool_load_module(file, &ca.dims, ctx, &m);
  if (!s && dot && ca.backend) {
    s = dump_colored(ctx, m, &ca);
  } else if (!s && dot) {
    s = kiln_module_write_dot(m, stdout);
  } else if (!s) {
    char *text = NULL;
    s = kiln_module_print(m, &text);
    if (!s) {
      fputs(text, stdout);
      kiln_module_free_string(m, text);
    }
  }
  kiln_module_destroy(m);
  kiln_context_destroy(ctx);
  return s ? tool_fail(s) : KILN_EXIT_OK;
}
