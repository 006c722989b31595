/* ir/text/lex.c: the tokenizer of the .kir text form. The grammar does not
 * depend on line breaks; tokens only carry their line and column so that
 * every message can point at the place in the file. */
#include <ctype.h>
#include <string.h>

#include "text_internal.h"

static int peek(const kiln_text_parser *p, size_t ahead) {
  size_t i = p->pos + ahead;
  return i < p->len ? (unsigned char)p->src[i] : -1;
}

static void advance(kiln_text_parser *p) {
  if (p->pos >= p->len)
    return;
  if (p->src[p->pos] == '\n') {
    p->line++;
    p->col = 1;
  } else {
    p->col++;
  }
  p->pos++;
}

static bool is_name_char(int c) {
  return c >= 0 && (isalnum(c) || c == '_' || c == '.' || c == '$' || c == '-');
}

static bool is_ident_char(int c) {
  return c >= 0 && (isalnum(c) || c == '_');
}

static void skip_space(kiln_text_parser *p) {
  for (;;) {
    int c = peek(p, 0);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance(p);
    } else if (c == '#') {
      while (peek(p, 0) >= 0 && peek(p, 0) != '\n')
        advance(p);
    } else {
      return;
    }
  }
}

/* Scan the body of a "..." string starting at the opening quote; escapes
 * are kept raw (unescaped later). False when it is unterminated. */
static bool scan_string(kiln_text_parser *p, kiln_text_token *t) {
  advance(p); /* opening quote */
  t->text = p->src + p->pos;
  for (;;) {
    int c = peek(p, 0);
    if (c < 0 || c == '\n')
      return false;
    if (c == '"')
      break;
    if (c == '\\' && peek(p, 1) >= 0 && peek(p, 1) != '\n')
      advance(p);
    advance(p);
  }
  t->len = (size_t)(p->src + p->pos - t->text);
  advance(p); /* closing quote */
  return true;
}

static bool word_at(const kiln_text_parser *p, size_t ahead, const char *w) {
  size_t n = strlen(w);
  if (p->pos + ahead + n > p->len || memcmp(p->src + p->pos + ahead, w, n) != 0)
    return false;
  return !is_ident_char(peek(p, ahead + n));
}

static void scan_number(kiln_text_parser *p) {
  if (peek(p, 0) == '-')
    advance(p);
  if (word_at(p, 0, "inf") || word_at(p, 0, "nan")) {
    for (int i = 0; i < 3; i++)
      advance(p);
    return;
  }
  while (peek(p, 0) >= 0 && isdigit(peek(p, 0)))
    advance(p);
  if (peek(p, 0) == '.') {
    advance(p);
    while (peek(p, 0) >= 0 && isdigit(peek(p, 0)))
      advance(p);
  }
  int c = peek(p, 0);
  if (c == 'e' || c == 'E') {
    size_t k = 1;
    if (peek(p, k) == '+' || peek(p, k) == '-')
      k++;
    if (peek(p, k) >= 0 && isdigit(peek(p, k))) {
      while (k-- > 0)
        advance(p);
      while (peek(p, 0) >= 0 && isdigit(peek(p, 0)))
        advance(p);
    }
  }
}

void kiln_text_next(kiln_text_parser *p) {
  skip_space(p);
  kiln_text_token *t = &p->tok;
  memset(t, 0, sizeof *t);
  t->line = p->line;
  t->col = p->col;
  t->raw = p->src + p->pos;
  int c = peek(p, 0);
  if (c < 0) {
    t->kind = KILN_TOK_EOF;
    t->text = t->raw;
    return;
  }
  if (isalpha(c) || c == '_') {
    if (p->pos + 4 <= p->len && memcmp(t->raw, "hex\"", 4) == 0) {
      for (int i = 0; i < 3; i++)
        advance(p);
      t->kind = scan_string(p, t) ? KILN_TOK_HEX : KILN_TOK_ERROR;
      goto done;
    }
    t->kind = KILN_TOK_IDENT;
    t->text = t->raw;
    while (is_ident_char(peek(p, 0)))
      advance(p);
    t->len = (size_t)(p->src + p->pos - t->text);
    goto done;
  }
  int c1 = peek(p, 1);
  if (isdigit(c) ||
      (c == '-' && ((c1 >= 0 && isdigit(c1)) || word_at(p, 1, "inf") || word_at(p, 1, "nan")))) {
    t->kind = KILN_TOK_NUMBER;
    t->text = t->raw;
    scan_number(p);
    t->len = (size_t)(p->src + p->pos - t->text);
    goto done;
  }
  if (c == '%' || c == '@') {
    t->kind = c == '%' ? KILN_TOK_LOCAL : KILN_TOK_GLOBAL;
    advance(p);
    if (peek(p, 0) == '"') {
      t->quoted = true;
      if (!scan_string(p, t))
        t->kind = KILN_TOK_ERROR;
      goto done;
    }
    t->text = p->src + p->pos;
    while (is_name_char(peek(p, 0)))
      advance(p);
    t->len = (size_t)(p->src + p->pos - t->text);
    if (t->len == 0)
      t->kind = KILN_TOK_ERROR;
    goto done;
  }
  if (c == '"') {
    t->kind = scan_string(p, t) ? KILN_TOK_STRING : KILN_TOK_ERROR;
    goto done;
  }
  if (strchr(":=,()[]{}+", c)) {
    t->kind = KILN_TOK_PUNCT;
    t->text = t->raw;
    t->len = 1;
    advance(p);
    goto done;
  }
  t->kind = KILN_TOK_ERROR;
  t->text = t->raw;
  advance(p);
done:
  t->raw_len = (size_t)(p->src + p->pos - t->raw);
}
