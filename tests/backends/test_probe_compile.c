/* tests/backends/test_probe_compile.c: a backend's support answer and its
 * emitter agree. For every backend that loads (interpreter, cpu, opencl),
 * every node kind and every probe configuration of core/probe.h, a probe
 * node the backend declares supported must compile as a one-node module;
 * otherwise lowering has already been skipped and the user gets a hard
 * compile error. Probes that inference refuses are not declared by anyone
 * and are skipped. By default the interpreter compiles every accepted probe
 * (it generates no code) and the other backends the first accepted probe of
 * each kind (the cpu JITs each one, PoCL builds each one the first time:
 * every probe takes about 50 s on cpu and minutes on PoCL); `--all`
 * compiles every accepted probe everywhere, and `--backend NAME`
 * (repeatable) checks only the backends named.
 *
 * Exit status: 0 when every declared probe compiled, 1 when one did not
 * (each failure names backend, kind and probe), 77 (skip) when none of the
 * backends could be loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/probe.h"
#include "kiln/kiln.h"

typedef struct counts {
  uint32_t kinds_declared; /* kinds with at least one accepted probe */
  uint32_t compiled;       /* accepted probes that compiled */
  uint32_t not_tried;      /* accepted probes past the first of a kind (without --all) */
  uint32_t refused;        /* probes the backend does not declare */
  uint32_t no_inference;   /* probes inference refuses: skipped */
  uint32_t failed;         /* accepted probes that did not compile */
} counts;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Why a backend is not there: the loader's refusal of a plugin of that
 * name, if it recorded one. */
static void print_skip(const kiln_context *ctx, const char *name) {
  char want[64];
  snprintf(want, sizeof want, "kiln-%s", name);
  for (uint32_t i = 0; i < kiln_context_refused_count(ctx); i++) {
    const char *path, *reason;
    kiln_context_refused(ctx, i, &path, &reason);
    if (strstr(path, want)) {
      printf("SKIP %s: plugin refused (%s): %s\n", name, path, reason);
      return;
    }
  }
  printf("SKIP %s: no such plugin was found (not built here)\n", name);
}

static void check_backend(kiln_context *ctx, const kiln_plugin *p, const char *name, bool all,
                          counts *c) {
  for (int k = 0; k < (int)KILN_NODE_KIND_COUNT; k++) {
    kiln_node_kind kind = (kiln_node_kind)k;
    uint32_t nc = kiln_probe_config_count(kind);
    bool declared = false;
    for (uint32_t cfg = 0; cfg < nc; cfg++) {
      kiln_module *m = NULL;
      kiln_node *node = NULL;
      kiln_status s = kiln_probe_build(kind, cfg, &m, &node);
      if (s) {
        kiln_status_free(s);
        c->no_inference++;
        continue;
      }
      if (!p->supports_node(p->state, node)) {
        c->refused++;
        kiln_module_destroy(m);
        continue;
      }
      if (declared && !all) {
        c->not_tried++;
        kiln_module_destroy(m);
        continue;
      }
      if (!declared)
        c->kinds_declared++;
      declared = true;
      kiln_executable *exe = NULL;
      s = kiln_compile(ctx, m, NULL, name, NULL, &exe);
      if (s) {
        char probe[160];
        kiln_probe_describe(cfg, probe, sizeof probe);
        printf("FAIL %s: %s on probe %u (%s) is declared supported but does not compile: %s\n",
               name, kiln_node_kind_name(kind), cfg, probe, kiln_status_message(s));
        kiln_status_free(s);
        c->failed++;
      } else {
        c->compiled++;
      }
      kiln_executable_destroy(exe);
      kiln_module_destroy(m);
    }
  }
}

int main(int argc, char **argv) {
  bool all = false;
  const char *only[8];
  int n_only = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--all")) {
      all = true;
    } else if (!strcmp(argv[i], "--backend") && i + 1 < argc && n_only < 8) {
      only[n_only++] = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--all] [--backend NAME]...\n", argv[0]);
      return 2;
    }
  }
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(&ctx);
  if (s) {
    printf("FAIL: kiln_context_create: %s\n", kiln_status_message(s));
    kiln_status_free(s);
    return 1;
  }
  static const char *const backends[] = {"interpreter", "cpu", "opencl"};
  uint32_t tested = 0, failed = 0;
  for (size_t b = 0; b < sizeof backends / sizeof *backends; b++) {
    const char *name = backends[b];
    bool wanted = n_only == 0;
    for (int i = 0; i < n_only; i++)
      wanted = wanted || !strcmp(only[i], name);
    if (!wanted)
      continue;
    const kiln_plugin *p = kiln_context_find_backend(ctx, name);
    if (!p) {
      print_skip(ctx, name);
      continue;
    }
    if (p->device_count && p->device_count(p->state) == 0) {
      printf("SKIP %s: the plugin loaded but reports no device\n", name);
      continue;
    }
    counts c = {0};
    double t0 = now_s();
    check_backend(ctx, p, name, all || !strcmp(name, "interpreter"), &c);
    printf("%s: %u kinds declared; %u probes compiled, %u failed; %u accepted probes not "
           "compiled (first per kind only); %u not declared; %u skipped (inference refuses) "
           "[%.1f s]\n",
           name, c.kinds_declared, c.compiled, c.failed, c.not_tried, c.refused, c.no_inference,
           now_s() - t0);
    tested++;
    failed += c.failed;
  }
  kiln_context_destroy(ctx);
  if (!tested) {
    printf("SKIP: none of the backends could be loaded\n");
    return 77;
  }
  return failed ? 1 : 0;
}
