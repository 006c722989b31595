/* examples/embed/main.c: embedding the kiln runtime in a C program, using
 * only the public header kiln/kiln.h: load a model in the .kir text form,
 * compile it for the interpreter, bind inputs read from .npy files by
 * name, run it twice and print the outputs.
 *
 *   usage: embed MODEL.kir NAME=INPUT.npy...
 *
 * Build it against an installed kiln with:
 *   cc main.c $(pkg-config --cflags --libs kiln) -o embed */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/kiln.h>

static int fail(kiln_status s) {
  fprintf(stderr, "embed: %s\n", kiln_status_message(s));
  kiln_status_free(s);
  return 1;
}

/* Everything the program owns, released in one place. */
typedef struct app {
  kiln_context *ctx;
  kiln_module *module;
  kiln_executable *exe;
  kiln_bindings *bindings;
  kiln_tensor inputs[16];
  int ninputs;
  float *outputs[16];
} app;

static void app_free(app *a) {
  for (int i = 0; i < 16; i++)
    free(a->outputs[i]);
  for (int i = 0; i < a->ninputs; i++)
    kiln_tensor_free(&a->inputs[i]);
  kiln_bindings_destroy(a->bindings);
  kiln_executable_destroy(a->exe); /* before its context */
  kiln_module_destroy(a->module);
  kiln_context_destroy(a->ctx);
}

static kiln_status app_setup(app *a, int argc, char **argv) {
  KILN_TRY(kiln_context_create(&a->ctx));
  KILN_TRY(kiln_module_load_text(argv[1], NULL, &a->module));
  KILN_TRY(kiln_compile(a->ctx, a->module, NULL, "interpreter", NULL, &a->exe));
  KILN_TRY(kiln_bindings_create(a->exe, &a->bindings));
  for (int i = 2; i < argc && a->ninputs < 16; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq)
      return kiln_status_make(KILN_INVALID_ARGUMENT, "'%s' is not NAME=FILE.npy", argv[i]);
    *eq = '\0';
    kiln_tensor *t = &a->inputs[a->ninputs++];
    KILN_TRY(kiln_tensor_read_npy(eq + 1, t));
    KILN_TRY(kiln_bind_input(a->bindings, argv[i], t->data, (size_t)kiln_type_bytes(&t->type)));
  }
  /* Outputs: this example prints f32 outputs only. */
  for (uint32_t i = 0; i < kiln_executable_output_count(a->exe) && i < 16; i++) {
    kiln_io_info io;
    kiln_executable_output(a->exe, i, &io);
    if (io.type.elem != KILN_F32)
      return kiln_status_make(KILN_UNIMPLEMENTED, "output '%s' is not f32", io.name);
    size_t bytes = (size_t)kiln_type_bytes(&io.type);
    a->outputs[i] = calloc(1, bytes ? bytes : 1);
    if (!a->outputs[i])
      return kiln_status_make(KILN_OUT_OF_MEMORY, "no memory for output '%s'", io.name);
    KILN_TRY(kiln_bind_output(a->bindings, io.name, a->outputs[i], bytes));
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: embed MODEL.kir NAME=INPUT.npy...\n");
    return 2;
  }
  app a;
  memset(&a, 0, sizeof a);
  kiln_status s = app_setup(&a, argc, argv);
  /* The same executable and bindings serve any number of runs. */
  for (int run = 1; run <= 2 && !s; run++) {
    s = kiln_run_bindings(a.exe, a.bindings);
    for (uint32_t i = 0; !s && i < kiln_executable_output_count(a.exe); i++) {
      kiln_io_info io;
      kiln_executable_output(a.exe, i, &io);
      printf("run %d: %s =", run, io.name);
      for (int64_t k = 0; k < kiln_type_numel(&io.type); k++)
        printf(" %.6f", (double)a.outputs[i][k]);
      printf("\n");
    }
  }
  app_free(&a);
  return s ? fail(s) : 0;
}
