/* tests/text/test_main.c: runs the text-form suites (printer, parser,
 * instruction IR text, DOT) and holds the helpers they share. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_test.h"

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t text_case_paths(char ***out) {
  *out = NULL;
  DIR *d = opendir(KILN_TEXT_CASES);
  if (!d)
    return 0;
  char **paths = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".kir") != 0)
      continue;
    char **np = realloc(paths, (n + 1) * sizeof *np);
    if (!np)
      break;
    paths = np;
    size_t plen = strlen(KILN_TEXT_CASES) + len + 2;
    paths[n] = malloc(plen);
    if (!paths[n])
      break;
    snprintf(paths[n], plen, "%s/%s", KILN_TEXT_CASES, e->d_name);
    n++;
  }
  closedir(d);
  qsort(paths, n, sizeof *paths, cmp_str);
  *out = paths;
  return n;
}

void text_free_paths(char **paths, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(paths[i]);
  free(paths);
}

char *text_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) {
    buf[n] = '\0';
    *len = (size_t)n;
  }
  return buf;
}

int main(void) {
  SRunner *sr = srunner_create(text_roundtrip_suite());
  srunner_add_suite(sr, text_error_suite());
  srunner_add_suite(sr, text_instr_suite());
  srunner_add_suite(sr, text_syntax_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
