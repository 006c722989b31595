/* ir/text/text_internal.h: private plumbing shared by the .kir printers and
 * parsers (graph and instruction IR): a growable string, number and name
 * formatting, a lexer, and the parser helpers both grammars use. Not part of
 * the public API; only files in ir/text/ include it. */
#ifndef KILN_IR_TEXT_INTERNAL_H
#define KILN_IR_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/instr.h"
#include "kiln/ir.h"

/* Constants with more elements than this print as hex"..." bytes. */
#define KILN_TEXT_MAX_LIST 64

/* ---- growable string (malloc); `oom` sticks once an append fails ---- */
typedef struct kiln_text_buf {
  char *p;
  size_t len, cap;
  bool oom;
} kiln_text_buf;

void kiln_text_buf_puts(kiln_text_buf *b, const char *s);
void kiln_text_buf_putn(kiln_text_buf *b, const char *s, size_t n);
void kiln_text_buf_printf(kiln_text_buf *b, const char *fmt, ...) KILN_PRINTF(2, 3);
void kiln_text_buf_free(kiln_text_buf *b);

/* ---- formatting ---- */
/* True when a name can be written bare after '%' or '@'. */
bool kiln_text_name_is_bare(const char *s);
/* '%name', '%"we ird"' (sigil is '%' or '@'). */
void kiln_text_put_name(kiln_text_buf *b, char sigil, const char *name);
/* "..." with \" \\ \n \t \xNN escapes. */
void kiln_text_put_string(kiln_text_buf *b, const char *s);
/* Shortest decimal that reads back as the same double, always looking like
 * a float ("2.0", "1e+20", "inf", "-inf", "nan"). buf has >= 40 bytes. */
void kiln_text_format_double(double v, char *buf);
void kiln_text_put_type(kiln_text_buf *b, const kiln_type *t);
/* " {a = 1, b = [1.0]}" (leading space), nothing for an empty set. */
void kiln_text_put_attrs(kiln_text_buf *b, const kiln_attrs *a);
/* Constant data of type t: "[1, 2.5]" or hex"...". */
void kiln_text_put_data(kiln_text_buf *b, const kiln_type *t, const void *data);

/* ---- lexer ---- */
typedef enum kiln_text_tok {
  KILN_TOK_EOF = 0,
  KILN_TOK_IDENT,  /* [A-Za-z_][A-Za-z0-9_]* */
  KILN_TOK_NUMBER, /* -?digits[.digits][e[+-]digits], -inf, -nan */
  KILN_TOK_STRING, /* "..." (text = raw body between the quotes) */
  KILN_TOK_HEX,    /* hex"..." (text = body) */
  KILN_TOK_LOCAL,  /* %name or %"..." (text = name, raw when quoted) */
  KILN_TOK_GLOBAL, /* @name or @"..." */
  KILN_TOK_PUNCT,  /* one of : = , ( ) [ ] { } + */
  KILN_TOK_ERROR,  /* a character or string the lexer refuses */
} kiln_text_tok;

typedef struct kiln_text_token {
  kiln_text_tok kind;
  const char *text; /* the body (name, string contents), in the source */
  size_t len;
  const char *raw; /* the whole token as written, for messages */
  size_t raw_len;
  bool quoted; /* LOCAL / GLOBAL written as a quoted string */
  int line, col;
} kiln_text_token;

/* The parser state both grammars share: the source, the current token,
 * the first error, and scratch strings that live until the next reset. */
typedef struct kiln_text_parser {
  const char *src;
  size_t len, pos;
  int line, col;
  const char *filename;
  kiln_text_token tok;
  kiln_status err;
  void **scratch;
  size_t n_scratch, cap_scratch;
} kiln_text_parser;

void kiln_text_parser_init(kiln_text_parser *p, const char *text, size_t len, const char *filename);
/* Frees scratch strings; the error status stays (caller takes it). */
void kiln_text_parser_fini(kiln_text_parser *p);
void kiln_text_scratch_reset(kiln_text_parser *p);
/* Allocation that lives until the next scratch reset; NULL sets an error. */
void *kiln_text_scratch(kiln_text_parser *p, size_t n);

void kiln_text_next(kiln_text_parser *p);

/* Record "FILE:LINE:COL: <msg>" (first error wins). Returns false. */
bool kiln_text_error_at(kiln_text_parser *p, const kiln_text_token *at, kiln_code code,
                        const char *fmt, ...) KILN_PRINTF(4, 5);
/* "expected WHAT, got <current token>". Returns false. */
bool kiln_text_expected(kiln_text_parser *p, const char *what);
/* Record a status from the IR at a token's position (keeps its code). */
bool kiln_text_wrap_at(kiln_text_parser *p, const kiln_text_token *at, kiln_status s);
/* Describe a token for messages into buf ("'='", "end of file"). */
void kiln_text_describe(const kiln_text_token *t, char *buf, size_t n);

bool kiln_text_is_punct(const kiln_text_parser *p, char c);
bool kiln_text_is_ident(const kiln_text_parser *p, const char *word);
bool kiln_text_expect_punct(kiln_text_parser *p, char c);
bool kiln_text_expect_ident(kiln_text_parser *p, const char *word);
/* Expect a LOCAL (sigil '%') or GLOBAL ('@') token; *out is the unescaped
 * name in scratch memory. *at (may be NULL) receives the token. */
bool kiln_text_expect_name(kiln_text_parser *p, char sigil, const char **out, kiln_text_token *at);
/* A "..." string token, unescaped into scratch memory. */
bool kiln_text_expect_string(kiln_text_parser *p, const char **out);
bool kiln_text_expect_int(kiln_text_parser *p, int64_t *out);
bool kiln_text_expect_uint(kiln_text_parser *p, uint64_t *out);
bool kiln_text_parse_type(kiln_text_parser *p, kiln_type *out);
/* Parse "{...}" when present; *out_descs in scratch memory. */
bool kiln_text_parse_attrs(kiln_text_parser *p, kiln_attr_desc **out_descs, uint32_t *out_n);
/* Parse "[...]" or hex"..." for a constant of type t into a malloc'd
 * buffer of kiln_type_bytes(t) bytes (caller frees; NULL for 0 bytes). */
bool kiln_text_parse_data(kiln_text_parser *p, const kiln_type *t, void **out);

/* ---- an allocator that also owns extra blocks (weights of a parsed IR) ----
 * The IR borrows weight data; a parsed IR must own it. The wrapper forwards
 * to the caller's allocator, counts live blocks, and when the IR frees its
 * last block (kiln_ir_destroy) it frees the adopted blocks and itself. */
typedef struct kiln_text_owner kiln_text_owner;
kiln_text_owner *kiln_text_owner_create(const kiln_allocator *inner);
const kiln_allocator *kiln_text_owner_allocator(kiln_text_owner *o);
/* Allocate a block that dies with the owner. NULL on failure. */
void *kiln_text_owner_adopt_alloc(kiln_text_owner *o, size_t n);
/* From now on the owner dies when its live count drops to zero. */
void kiln_text_owner_arm(kiln_text_owner *o);
/* Free an owner that was never armed (creation of the IR failed). */
void kiln_text_owner_destroy(kiln_text_owner *o);

#endif
