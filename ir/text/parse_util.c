/* ir/text/parse_util.c: the parser pieces both grammars share: positions
 * and messages ("FILE:LINE:COL: expected X, got Y"), names and strings,
 * numbers, types, attribute sets and constant data. Every helper returns
 * false after recording the first error in the parser. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_internal.h"

void kiln_text_parser_init(kiln_text_parser *p, const char *text, size_t len,
                           const char *filename) {
  memset(p, 0, sizeof *p);
  p->src = text ? text : "";
  p->len = text ? len : 0;
  p->line = 1;
  p->col = 1;
  p->filename = filename ? filename : "<input>";
  kiln_text_next(p);
}

void kiln_text_scratch_reset(kiln_text_parser *p) {
  for (size_t i = 0; i < p->n_scratch; i++)
    free(p->scratch[i]);
  p->n_scratch = 0;
}

void kiln_text_parser_fini(kiln_text_parser *p) {
  kiln_text_scratch_reset(p);
  free(p->scratch);
  p->scratch = NULL;
  p->cap_scratch = 0;
}

void *kiln_text_scratch(kiln_text_parser *p, size_t n) {
  if (p->n_scratch == p->cap_scratch) {
    size_t cap = p->cap_scratch ? p->cap_scratch * 2 : 16;
    void **s = realloc(p->scratch, cap * sizeof *s);
    if (!s)
      goto oom;
    p->scratch = s;
    p->cap_scratch = cap;
  }
  void *m = malloc(n ? n : 1);
  if (!m)
    goto oom;
  p->scratch[p->n_scratch++] = m;
  return m;
oom:
  if (!p->err)
    p->err = kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory while parsing", p->filename);
  return NULL;
}

bool kiln_text_error_at(kiln_text_parser *p, const kiln_text_token *at, kiln_code code,
                        const char *fmt, ...) {
  if (p->err)
    return false;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  p->err = kiln_status_make(code, "%s:%d:%d: %s", p->filename, at->line, at->col, msg);
  return false;
}

bool kiln_text_wrap_at(kiln_text_parser *p, const kiln_text_token *at, kiln_status s) {
  if (!s)
    return true;
  if (p->err) {
    kiln_status_free(s);
    return false;
  }
  p->err = kiln_status_make(kiln_status_code(s), "%s:%d:%d: %s", p->filename, at->line, at->col,
                            kiln_status_message(s));
  kiln_status_free(s);
  return false;
}

void kiln_text_describe(const kiln_text_token *t, char *buf, size_t n) {
  if (t->kind == KILN_TOK_EOF) {
    snprintf(buf, n, "end of file");
    return;
  }
  if (t->kind == KILN_TOK_ERROR && t->raw_len > 0 &&
      (t->raw[t->raw_len - 1] == '"' || t->raw[0] == '"' || memchr(t->raw, '"', t->raw_len))) {
    snprintf(buf, n, "unterminated string");
    return;
  }
  char body[48];
  size_t len = t->raw_len < 40 ? t->raw_len : 40;
  size_t j = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)t->raw[i];
    body[j++] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
  }
  body[j] = '\0';
  snprintf(buf, n, "'%s%s'", body, t->raw_len > 40 ? "..." : "");
}

bool kiln_text_expected(kiln_text_parser *p, const char *what) {
  char got[64];
  kiln_text_describe(&p->tok, got, sizeof got);
  return kiln_text_error_at(p, &p->tok, KILN_PARSE_ERROR, "expected %s, got %s", what, got);
}

bool kiln_text_is_punct(const kiln_text_parser *p, char c) {
  return p->tok.kind == KILN_TOK_PUNCT && p->tok.text[0] == c;
}

bool kiln_text_is_ident(const kiln_text_parser *p, const char *word) {
  return p->tok.kind == KILN_TOK_IDENT && p->tok.len == strlen(word) &&
         memcmp(p->tok.text, word, p->tok.len) == 0;
}

bool kiln_text_expect_punct(kiln_text_parser *p, char c) {
  if (!kiln_text_is_punct(p, c)) {
    char what[8];
    snprintf(what, sizeof what, "'%c'", c);
    return kiln_text_expected(p, what);
  }
  kiln_text_next(p);
  return true;
}

bool kiln_text_expect_ident(kiln_text_parser *p, const char *word) {
  if (!kiln_text_is_ident(p, word)) {
    char what[64];
    snprintf(what, sizeof what, "'%s'", word);
    return kiln_text_expected(p, what);
  }
  kiln_text_next(p);
  return true;
}

static int hex_digit(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Unescape the body of token t into scratch memory. */
static bool unescape(kiln_text_parser *p, const kiln_text_token *t, const char **out) {
  char *s = kiln_text_scratch(p, t->len + 1);
  if (!s)
    return false;
  size_t j = 0;
  for (size_t i = 0; i < t->len; i++) {
    char c = t->text[i];
    if (c != '\\') {
      if (c == '\0')
        return kiln_text_error_at(p, t, KILN_PARSE_ERROR, "NUL byte in string");
      s[j++] = c;
      continue;
    }
    char e = ++i < t->len ? t->text[i] : '\0';
    switch (e) {
    case '"':
    case '\\':
      s[j++] = e;
      break;
    case 'n':
      s[j++] = '\n';
      break;
    case 't':
      s[j++] = '\t';
      break;
    case 'x': {
      int hi = i + 1 < t->len ? hex_digit((unsigned char)t->text[i + 1]) : -1;
      int lo = i + 2 < t->len ? hex_digit((unsigned char)t->text[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        return kiln_text_error_at(p, t, KILN_PARSE_ERROR,
                                  "expected two hex digits after \\x in string");
      if (hi == 0 && lo == 0)
        return kiln_text_error_at(p, t, KILN_PARSE_ERROR, "NUL byte (\\x00) in string");
      s[j++] = (char)(hi * 16 + lo);
      i += 2;
      break;
    }
    default:
      return kiln_text_error_at(p, t, KILN_PARSE_ERROR,
                                "expected one of \\\" \\\\ \\n \\t \\xNN in string, got '\\%c'",
                                isprint((unsigned char)e) ? e : '?');
    }
  }
  s[j] = '\0';
  *out = s;
  return true;
}

bool kiln_text_expect_name(kiln_text_parser *p, char sigil, const char **out, kiln_text_token *at) {
  kiln_text_tok want = sigil == '%' ? KILN_TOK_LOCAL : KILN_TOK_GLOBAL;
  if (p->tok.kind != want)
    return kiln_text_expected(p, sigil == '%' ? "a %name" : "an @name");
  if (at)
    *at = p->tok;
  if (p->tok.quoted) {
    if (!unescape(p, &p->tok, out))
      return false;
    if (!**out)
      return kiln_text_error_at(p, &p->tok, KILN_PARSE_ERROR, "expected a name, got an empty one");
  } else {
    char *s = kiln_text_scratch(p, p->tok.len + 1);
    if (!s)
      return false;
    memcpy(s, p->tok.text, p->tok.len);
    s[p->tok.len] = '\0';
    *out = s;
  }
  kiln_text_next(p);
  return true;
}

bool kiln_text_expect_string(kiln_text_parser *p, const char **out) {
  if (p->tok.kind != KILN_TOK_STRING)
    return kiln_text_expected(p, "a string");
  if (!unescape(p, &p->tok, out))
    return false;
  kiln_text_next(p);
  return true;
}

/* ---- numbers ---- */

static bool number_is_int(const kiln_text_token *t) {
  return t->kind == KILN_TOK_NUMBER && !memchr(t->text, '.', t->len) &&
         !memchr(t->text, 'e', t->len) && !memchr(t->text, 'E', t->len) &&
         !memchr(t->text, 'n', t->len);
}

/* A NUMBER token, or the identifiers inf / nan. */
static bool is_numeric(const kiln_text_token *t) {
  if (t->kind == KILN_TOK_NUMBER)
    return true;
  return t->kind == KILN_TOK_IDENT && t->len == 3 &&
         (memcmp(t->text, "inf", 3) == 0 || memcmp(t->text, "nan", 3) == 0);
}

/* NUL-terminated copy of a token's text; false when it is too long. */
static bool token_cstr(kiln_text_parser *p, const kiln_text_token *t, char *buf, size_t n) {
  if (t->len >= n)
    return kiln_text_error_at(p, t, KILN_PARSE_ERROR, "number too long");
  memcpy(buf, t->text, t->len);
  buf[t->len] = '\0';
  return true;
}

static bool token_int(kiln_text_parser *p, const kiln_text_token *t, int64_t *out) {
  char buf[64];
  if (!token_cstr(p, t, buf, sizeof buf))
    return false;
  errno = 0;
  long long v = strtoll(buf, NULL, 10);
  if (errno == ERANGE)
    return kiln_text_error_at(p, t, KILN_PARSE_ERROR, "integer '%s' out of range", buf);
  *out = v;
  return true;
}

static bool token_uint(kiln_text_parser *p, const kiln_text_token *t, uint64_t *out) {
  char buf[64];
  if (!token_cstr(p, t, buf, sizeof buf))
    return false;
  if (buf[0] == '-')
    return kiln_text_error_at(p, t, KILN_PARSE_ERROR, "expected an unsigned integer, got '%s'",
                              buf);
  errno = 0;
  unsigned long long v = strtoull(buf, NULL, 10);
  if (errno == ERANGE)
    return kiln_text_error_at(p, t, KILN_PARSE_ERROR, "integer '%s' out of range", buf);
  *out = v;
  return true;
}

static bool token_double(kiln_text_parser *p, const kiln_text_token *t, double *out) {
  char buf[64];
  if (!token_cstr(p, t, buf, sizeof buf))
    return false;
  *out = strtod(buf, NULL);
  return true;
}

static bool token_float(kiln_text_parser *p, const kiln_text_token *t, float *out) {
  char buf[64];
  if (!token_cstr(p, t, buf, sizeof buf))
    return false;
  *out = strtof(buf, NULL);
  return true;
}

bool kiln_text_expect_int(kiln_text_parser *p, int64_t *out) {
  if (!number_is_int(&p->tok))
    return kiln_text_expected(p, "an integer");
  if (!token_int(p, &p->tok, out))
    return false;
  kiln_text_next(p);
  return true;
}

bool kiln_text_expect_uint(kiln_text_parser *p, uint64_t *out) {
  if (!number_is_int(&p->tok))
    return kiln_text_expected(p, "an unsigned integer");
  if (!token_uint(p, &p->tok, out))
    return false;
  kiln_text_next(p);
  return true;
}

/* ---- types ---- */

bool kiln_text_parse_type(kiln_text_parser *p, kiln_type *out) {
  kiln_text_token at = p->tok;
  char name[16];
  kiln_elem elem;
  bool quantized = false;
  if (p->tok.kind != KILN_TOK_IDENT || p->tok.len >= sizeof name)
    return kiln_text_expected(p, "a type");
  memcpy(name, p->tok.text, p->tok.len);
  name[p->tok.len] = '\0';
  if (!kiln_elem_from_name(name, &elem)) {
    size_t n = p->tok.len;
    if (n < 2 || name[n - 1] != 'q')
      return kiln_text_expected(p, "a type");
    name[n - 1] = '\0';
    if (!kiln_elem_from_name(name, &elem))
      return kiln_text_expected(p, "a type");
    quantized = true;
  }
  kiln_text_next(p);
  float scale = 0;
  int64_t zp = 0;
  if (quantized) {
    if (!kiln_text_expect_punct(p, '('))
      return false;
    if (!is_numeric(&p->tok))
      return kiln_text_expected(p, "a quantization scale");
    if (!token_float(p, &p->tok, &scale))
      return false;
    kiln_text_next(p);
    if (!kiln_text_expect_punct(p, ',') || !kiln_text_expect_int(p, &zp) ||
        !kiln_text_expect_punct(p, ')'))
      return false;
    if (zp < INT32_MIN || zp > INT32_MAX)
      return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "zero point out of range");
  }
  if (!kiln_text_expect_punct(p, '['))
    return false;
  int64_t dims[KILN_MAX_RANK];
  uint32_t rank = 0;
  if (!kiln_text_is_punct(p, ']')) {
    for (;;) {
      kiln_text_token dt = p->tok;
      int64_t d;
      if (!kiln_text_expect_int(p, &d))
        return false;
      if (rank == KILN_MAX_RANK)
        return kiln_text_error_at(p, &dt, KILN_PARSE_ERROR, "type has more than %d dimensions",
                                  KILN_MAX_RANK);
      dims[rank++] = d;
      if (!kiln_text_is_punct(p, ','))
        break;
      kiln_text_next(p);
    }
  }
  if (!kiln_text_expect_punct(p, ']'))
    return false;
  kiln_status s = quantized ? kiln_type_make_quantized(elem, rank, dims, scale, (int32_t)zp, out)
                            : kiln_type_make(elem, rank, dims, out);
  return kiln_text_wrap_at(p, &at, s);
}

/* ---- attributes ---- */

typedef struct num_list {
  int64_t *ints;
  double *floats;
  uint32_t n, cap;
  bool is_float;
} num_list;

static bool list_push(kiln_text_parser *p, num_list *l) {
  if (l->n == l->cap) {
    uint32_t cap = l->cap ? l->cap * 2 : 8;
    int64_t *ni = kiln_text_scratch(p, cap * sizeof *ni);
    double *nf = kiln_text_scratch(p, cap * sizeof *nf);
    if (!ni || !nf)
      return false;
    if (l->n) {
      memcpy(ni, l->ints, l->n * sizeof *ni);
      memcpy(nf, l->floats, l->n * sizeof *nf);
    }
    l->ints = ni;
    l->floats = nf;
    l->cap = cap;
  }
  const kiln_text_token *t = &p->tok;
  if (number_is_int(t)) {
    if (!token_int(p, t, &l->ints[l->n]))
      return false;
  } else {
    l->is_float = true;
    l->ints[l->n] = 0;
  }
  if (!token_double(p, t, &l->floats[l->n]))
    return false;
  l->n++;
  kiln_text_next(p);
  return true;
}

static bool parse_attr_value(kiln_text_parser *p, kiln_attr_desc *d) {
  const kiln_text_token *t = &p->tok;
  if (t->kind == KILN_TOK_STRING) {
    d->kind = KILN_ATTR_STRING;
    return kiln_text_expect_string(p, &d->s);
  }
  if (is_numeric(t)) {
    if (number_is_int(t)) {
      d->kind = KILN_ATTR_INT;
      if (!token_int(p, t, &d->i))
        return false;
    } else {
      d->kind = KILN_ATTR_FLOAT;
      if (!token_double(p, t, &d->f))
        return false;
    }
    kiln_text_next(p);
    return true;
  }
  if (t->kind == KILN_TOK_IDENT) {
    char name[16];
    if (t->len < sizeof name) {
      memcpy(name, t->text, t->len);
      name[t->len] = '\0';
      if (kiln_elem_from_name(name, &d->type)) {
        d->kind = KILN_ATTR_TYPE;
        kiln_text_next(p);
        return true;
      }
    }
    return kiln_text_expected(p, "an attribute value");
  }
  if (!kiln_text_is_punct(p, '['))
    return kiln_text_expected(p, "an attribute value");
  kiln_text_next(p);
  num_list l = {0};
  if (!kiln_text_is_punct(p, ']')) {
    for (;;) {
      if (!is_numeric(&p->tok))
        return kiln_text_expected(p, "a number");
      if (!list_push(p, &l))
        return false;
      if (!kiln_text_is_punct(p, ','))
        break;
      kiln_text_next(p);
    }
  }
  if (!kiln_text_expect_punct(p, ']'))
    return false;
  d->len = l.n;
  if (l.is_float) {
    d->kind = KILN_ATTR_FLOATS;
    d->floats = l.floats;
  } else {
    d->kind = KILN_ATTR_INTS;
    d->ints = l.ints;
  }
  return true;
}

bool kiln_text_parse_attrs(kiln_text_parser *p, kiln_attr_desc **out_descs, uint32_t *out_n) {
  *out_descs = NULL;
  *out_n = 0;
  if (!kiln_text_is_punct(p, '{'))
    return true;
  kiln_text_next(p);
  kiln_attr_desc *descs = NULL;
  uint32_t n = 0, cap = 0;
  if (!kiln_text_is_punct(p, '}')) {
    for (;;) {
      kiln_text_token at = p->tok;
      const char *name;
      if (p->tok.kind == KILN_TOK_IDENT) {
        char *s = kiln_text_scratch(p, p->tok.len + 1);
        if (!s)
          return false;
        memcpy(s, p->tok.text, p->tok.len);
        s[p->tok.len] = '\0';
        name = s;
        kiln_text_next(p);
      } else if (p->tok.kind == KILN_TOK_STRING) {
        if (!kiln_text_expect_string(p, &name))
          return false;
      } else {
        return kiln_text_expected(p, "an attribute name");
      }
      for (uint32_t i = 0; i < n; i++)
        if (strcmp(descs[i].name, name) == 0)
          return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "duplicate attribute '%s'", name);
      if (n == cap) {
        cap = cap ? cap * 2 : 8;
        kiln_attr_desc *nd = kiln_text_scratch(p, cap * sizeof *nd);
        if (!nd)
          return false;
        if (n)
          memcpy(nd, descs, n * sizeof *nd);
        descs = nd;
      }
      kiln_attr_desc *d = &descs[n];
      memset(d, 0, sizeof *d);
      d->name = name;
      if (!kiln_text_expect_punct(p, '=') || !parse_attr_value(p, d))
        return false;
      n++;
      if (!kiln_text_is_punct(p, ','))
        break;
      kiln_text_next(p);
    }
  }
  if (!kiln_text_expect_punct(p, '}'))
    return false;
  *out_descs = descs;
  *out_n = n;
  return true;
}

/* ---- constant data ---- */

typedef struct byte_vec {
  unsigned char *p;
  size_t len, cap;
} byte_vec;

static bool bytes_push(kiln_text_parser *p, byte_vec *v, const void *src, size_t n) {
  if (v->len + n > v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 64;
    while (cap < v->len + n)
      cap *= 2;
    unsigned char *np = realloc(v->p, cap);
    if (!np) {
      if (!p->err)
        p->err = kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory while parsing data",
                                  p->filename);
      return false;
    }
    v->p = np;
    v->cap = cap;
  }
  memcpy(v->p + v->len, src, n);
  v->len += n;
  return true;
}

/* Convert the current token to one element of type e and append it. */
static bool push_elem(kiln_text_parser *p, kiln_elem e, byte_vec *v) {
  const kiln_text_token *t = &p->tok;
  if (kiln_elem_is_float(e)) {
    if (e == KILN_F64) {
      double d;
      return token_double(p, t, &d) && bytes_push(p, v, &d, sizeof d);
    }
    float f;
    if (!token_float(p, t, &f))
      return false;
    if (e == KILN_F32)
      return bytes_push(p, v, &f, sizeof f);
    uint16_t h = e == KILN_F16 ? kiln_f32_to_f16(f) : kiln_f32_to_bf16(f);
    return bytes_push(p, v, &h, sizeof h);
  }
  char got[64];
  kiln_text_describe(t, got, sizeof got);
  if (!number_is_int(t))
    return kiln_text_error_at(p, t, KILN_PARSE_ERROR, "expected an integer %s element, got %s",
                              kiln_elem_name(e), got);
  if (e == KILN_U64) {
    uint64_t u = 0;
    return token_uint(p, t, &u) && bytes_push(p, v, &u, sizeof u);
  }
  int64_t i;
  if (!token_int(p, t, &i))
    return false;
  int64_t lo, hi;
  switch (e) {
  case KILN_I8:
    lo = INT8_MIN, hi = INT8_MAX;
    break;
  case KILN_U8:
    lo = 0, hi = UINT8_MAX;
    break;
  case KILN_I16:
    lo = INT16_MIN, hi = INT16_MAX;
    break;
  case KILN_U16:
    lo = 0, hi = UINT16_MAX;
    break;
  case KILN_I32:
    lo = INT32_MIN, hi = INT32_MAX;
    break;
  case KILN_U32:
    lo = 0, hi = UINT32_MAX;
    break;
  case KILN_BOOL:
    lo = 0, hi = 1;
    break;
  default:
    lo = INT64_MIN, hi = INT64_MAX;
  }
  if (i < lo || i > hi)
    return kiln_text_error_at(p, t, KILN_PARSE_ERROR, "value %s out of range for %s", got,
                              kiln_elem_name(e));
  size_t es = kiln_elem_size(e);
  unsigned char le[8];
  uint64_t u = (uint64_t)i;
  for (size_t k = 0; k < es; k++)
    le[k] = (unsigned char)(u >> (8 * k));
  return bytes_push(p, v, le, es);
}

bool kiln_text_parse_data(kiln_text_parser *p, const kiln_type *t, void **out) {
  *out = NULL;
  kiln_text_token at = p->tok;
  byte_vec v = {0};
  int64_t want_bytes = kiln_type_bytes(t);
  if (p->tok.kind == KILN_TOK_HEX) {
    if (p->tok.len % 2 != 0)
      return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "hex data has an odd number of digits");
    if ((int64_t)(p->tok.len / 2) != want_bytes)
      return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "expected %lld bytes of data, got %zu",
                                (long long)want_bytes, p->tok.len / 2);
    for (size_t i = 0; i < p->tok.len; i += 2) {
      int hi = hex_digit((unsigned char)p->tok.text[i]);
      int lo = hex_digit((unsigned char)p->tok.text[i + 1]);
      if (hi < 0 || lo < 0) {
        free(v.p);
        return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "expected hex digits in hex data");
      }
      unsigned char b = (unsigned char)(hi * 16 + lo);
      if (!bytes_push(p, &v, &b, 1)) {
        free(v.p);
        return false;
      }
    }
    kiln_text_next(p);
    *out = v.p;
    return true;
  }
  if (!kiln_text_is_punct(p, '['))
    return kiln_text_expected(p, "'[' or hex\"...\" data");
  kiln_text_next(p);
  int64_t count = 0;
  if (!kiln_text_is_punct(p, ']')) {
    for (;;) {
      if (!is_numeric(&p->tok) || !push_elem(p, t->elem, &v)) {
        free(v.p);
        return p->err ? false : kiln_text_expected(p, "a number");
      }
      count++;
      kiln_text_next(p);
      if (!kiln_text_is_punct(p, ','))
        break;
      kiln_text_next(p);
    }
  }
  if (!kiln_text_expect_punct(p, ']')) {
    free(v.p);
    return false;
  }
  if (count != kiln_type_numel(t)) {
    free(v.p);
    return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "expected %lld elements of data, got %lld",
                              (long long)kiln_type_numel(t), (long long)count);
  }
  *out = v.p;
  return true;
}
