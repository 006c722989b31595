/* core/log.c: kiln_plugin_log, the logging host service for plugins.
 * The threshold comes from KILN_LOG_LEVEL (debug|info|warn|error, default
 * warn), read on every call so that tests and users can change it at run
 * time; logging is rare enough that the getenv does not matter. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kiln/plugin.h"

static kiln_log_level log_threshold(void) {
  const char *e = getenv("KILN_LOG_LEVEL");
  if (!e)
    return KILN_LOG_WARN;
  if (strcasecmp(e, "debug") == 0)
    return KILN_LOG_DEBUG;
  if (strcasecmp(e, "info") == 0)
    return KILN_LOG_INFO;
  if (strcasecmp(e, "error") == 0)
    return KILN_LOG_ERROR;
  return KILN_LOG_WARN;
}

static const char *log_level_name(kiln_log_level l) {
  switch (l) {
  case KILN_LOG_DEBUG:
    return "debug";
  case KILN_LOG_INFO:
    return "info";
  case KILN_LOG_WARN:
    return "warn";
  case KILN_LOG_ERROR:
    return "error";
  }
  return "?";
}

void kiln_plugin_log(const char *plugin, kiln_log_level level, const char *fmt, ...) {
  if ((int)level < (int)log_threshold() || !fmt)
    return;
  /* One buffer and one write, so lines from concurrent threads do not
   * interleave mid-line. */
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "kiln[%s] %s: ", plugin ? plugin : "?", log_level_name(level));
  if (n < 0 || (size_t)n >= sizeof buf)
    n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", buf);
}
