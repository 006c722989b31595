/* ir/text/ir_parse.c: the instruction IR parser. Buffers are created in
 * the order they are declared (header lines, then alloc / view lines), so
 * printing a parsed IR gives back the same text. Weight data written in the
 * text is owned by the IR through the owning allocator (owner.c). */
#include <stdlib.h>
#include <string.h>

#include "text_internal.h"

/* Buffer names of the IR being parsed: open addressing, power-of-two. */
typedef struct sym {
  char *name;
  kiln_buffer *buf;
} sym;

typedef struct iparser {
  kiln_text_parser p;
  kiln_ir *ir;
  kiln_text_owner *owner;
  sym *syms;
  size_t n_syms, cap_syms;
  uint32_t n_inputs, n_outputs;
} iparser;

static size_t hash_name(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static sym *sym_slot(sym *tab, size_t cap, const char *name) {
  size_t i = hash_name(name) & (cap - 1);
  while (tab[i].name && strcmp(tab[i].name, name) != 0)
    i = (i + 1) & (cap - 1);
  return &tab[i];
}

static kiln_buffer *sym_find(const iparser *ip, const char *name) {
  if (!ip->cap_syms)
    return NULL;
  return sym_slot(ip->syms, ip->cap_syms, name)->buf;
}

static bool sym_add(iparser *ip, const char *name, kiln_buffer *b) {
  if ((ip->n_syms + 1) * 2 > ip->cap_syms) {
    size_t cap = ip->cap_syms ? ip->cap_syms * 2 : 64;
    sym *tab = calloc(cap, sizeof *tab);
    if (!tab)
      return false;
    for (size_t i = 0; i < ip->cap_syms; i++)
      if (ip->syms[i].name)
        *sym_slot(tab, cap, ip->syms[i].name) = ip->syms[i];
    free(ip->syms);
    ip->syms = tab;
    ip->cap_syms = cap;
  }
  char *copy = strdup(name);
  if (!copy)
    return false;
  sym *s = sym_slot(ip->syms, ip->cap_syms, name);
  s->name = copy;
  s->buf = b;
  ip->n_syms++;
  return true;
}

static void sym_free(iparser *ip) {
  for (size_t i = 0; i < ip->cap_syms; i++)
    free(ip->syms[i].name);
  free(ip->syms);
}

static bool oom(iparser *ip) {
  if (!ip->p.err)
    ip->p.err =
        kiln_status_make(KILN_OUT_OF_MEMORY, "%s: out of memory while parsing", ip->p.filename);
  return false;
}

/* A fresh buffer name, then its creation and registration. */
static bool new_buffer(iparser *ip, const kiln_text_token *at, const char *name,
                       kiln_buffer_kind kind, const kiln_type *t, const void *data,
                       uint32_t io_index, kiln_buffer *base, uint64_t offset, kiln_buffer **out) {
  kiln_buffer *b;
  if (!kiln_text_wrap_at(
          &ip->p, at, kiln_ir_add_buffer(ip->ir, kind, name, t, data, io_index, base, offset, &b)))
    return false;
  if (kind == KILN_BUFFER_ACTIVATION || kind == KILN_BUFFER_VIEW)
    kiln_buffer_set_offset(b, offset);
  if (!sym_add(ip, name, b))
    return oom(ip);
  if (out)
    *out = b;
  return true;
}

static bool expect_fresh_name(iparser *ip, const char **name, kiln_text_token *at) {
  if (!kiln_text_expect_name(&ip->p, '%', name, at))
    return false;
  if (sym_find(ip, *name))
    return kiln_text_error_at(&ip->p, at, KILN_PARSE_ERROR, "duplicate buffer %%%s", *name);
  return true;
}

static bool expect_buffer(iparser *ip, kiln_buffer **out) {
  kiln_text_token at;
  const char *name;
  if (!kiln_text_expect_name(&ip->p, '%', &name, &at))
    return false;
  *out = sym_find(ip, name);
  if (!*out)
    return kiln_text_error_at(&ip->p, &at, KILN_PARSE_ERROR, "undefined buffer %%%s", name);
  return true;
}

/* "@N": an arena offset. */
static bool expect_offset_at(iparser *ip, uint64_t *out) {
  kiln_text_parser *p = &ip->p;
  if (p->tok.kind != KILN_TOK_GLOBAL || p->tok.quoted || p->tok.len > 19)
    return kiln_text_expected(p, "an arena offset '@N'");
  uint64_t v = 0;
  for (size_t i = 0; i < p->tok.len; i++) {
    char c = p->tok.text[i];
    if (c < '0' || c > '9')
      return kiln_text_expected(p, "an arena offset '@N'");
    v = v * 10 + (uint64_t)(c - '0');
  }
  *out = v;
  kiln_text_next(p);
  return true;
}

/* "%base +N : T" after "view %v =" or "%v = view". */
static bool parse_view_tail(iparser *ip, const kiln_text_token *at, const char *name,
                            bool allow_no_base, kiln_buffer **out_view, kiln_buffer **out_base) {
  kiln_text_parser *p = &ip->p;
  kiln_buffer *base = NULL;
  uint64_t off = 0;
  kiln_type t;
  if (allow_no_base && kiln_text_is_ident(p, "_"))
    kiln_text_next(p);
  else if (!expect_buffer(ip, &base))
    return false;
  if (!kiln_text_expect_punct(p, '+') || !kiln_text_expect_uint(p, &off) ||
      !kiln_text_expect_punct(p, ':') || !kiln_text_parse_type(p, &t))
    return false;
  *out_base = base;
  return new_buffer(ip, at, name, KILN_BUFFER_VIEW, &t, NULL, 0, base, off, out_view);
}

/* weight / input / output / activation / view lines. */
static bool parse_header(iparser *ip, kiln_buffer_kind kind) {
  kiln_text_parser *p = &ip->p;
  kiln_text_token at;
  const char *name;
  kiln_type t;
  if (!expect_fresh_name(ip, &name, &at))
    return false;
  if (kind == KILN_BUFFER_VIEW) {
    kiln_buffer *v, *base;
    return kiln_text_expect_punct(p, '=') && parse_view_tail(ip, &at, name, true, &v, &base);
  }
  if (!kiln_text_expect_punct(p, ':') || !kiln_text_parse_type(p, &t))
    return false;
  switch (kind) {
  case KILN_BUFFER_WEIGHT: {
    void *owned = NULL;
    if (kiln_text_is_punct(p, '=')) {
      kiln_text_next(p);
      void *data;
      if (!kiln_text_parse_data(p, &t, &data))
        return false;
      size_t bytes = (size_t)kiln_type_bytes(&t);
      owned = kiln_text_owner_adopt_alloc(ip->owner, bytes);
      if (!owned) {
        free(data);
        return oom(ip);
      }
      if (bytes)
        memcpy(owned, data, bytes);
      free(data);
    }
    return new_buffer(ip, &at, name, kind, &t, owned, 0, NULL, 0, NULL);
  }
  case KILN_BUFFER_INPUT:
    return new_buffer(ip, &at, name, kind, &t, NULL, ip->n_inputs++, NULL, 0, NULL);
  case KILN_BUFFER_OUTPUT:
    return new_buffer(ip, &at, name, kind, &t, NULL, ip->n_outputs++, NULL, 0, NULL);
  default: {
    uint64_t off = 0;
    if (!expect_offset_at(ip, &off))
      return false;
    return new_buffer(ip, &at, name, kind, &t, NULL, 0, NULL, off, NULL);
  }
  }
}

static bool add_instr(iparser *ip, const kiln_text_token *at, kiln_instr_kind k,
                      kiln_buffer *const *ops, const kiln_operand_dir *dirs, uint32_t n,
                      const kiln_attr_desc *attrs, uint32_t na) {
  return kiln_text_wrap_at(&ip->p, at,
                           kiln_ir_add_instr(ip->ir, k, ops, dirs, n, attrs, na, NULL, NULL));
}

/* "%t = alloc T @N" or "%v = view %b +N : T". */
static bool parse_declaring(iparser *ip) {
  kiln_text_parser *p = &ip->p;
  kiln_text_token at;
  const char *name;
  if (!expect_fresh_name(ip, &name, &at) || !kiln_text_expect_punct(p, '='))
    return false;
  if (kiln_text_is_ident(p, "alloc")) {
    kiln_text_next(p);
    kiln_type t;
    uint64_t off = 0;
    kiln_buffer *b;
    kiln_operand_dir d = KILN_OUT;
    return kiln_text_parse_type(p, &t) && expect_offset_at(ip, &off) &&
           new_buffer(ip, &at, name, KILN_BUFFER_ACTIVATION, &t, NULL, 0, NULL, off, &b) &&
           add_instr(ip, &at, KILN_INSTR_Alloc, &b, &d, 1, NULL, 0);
  }
  if (kiln_text_is_ident(p, "view")) {
    kiln_text_next(p);
    kiln_buffer *ops[2];
    kiln_operand_dir dirs[2] = {KILN_OUT, KILN_IN};
    return parse_view_tail(ip, &at, name, false, &ops[0], &ops[1]) &&
           add_instr(ip, &at, KILN_INSTR_View, ops, dirs, 2, NULL, 0);
  }
  return kiln_text_expected(p, "'alloc' or 'view'");
}

#define MAX_OPERANDS 256

/* "Kind dir %a, dir _, ... {attrs}" and "dealloc %t". */
static bool parse_instr(iparser *ip) {
  kiln_text_parser *p = &ip->p;
  kiln_text_token at = p->tok;
  char kname[64];
  kiln_instr_kind k;
  if (p->tok.len >= sizeof kname)
    return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "unknown instruction '%.*s...'", 40,
                              p->tok.text);
  memcpy(kname, p->tok.text, p->tok.len);
  kname[p->tok.len] = '\0';
  if (!kiln_instr_kind_from_name(kname, &k))
    return kiln_text_error_at(p, &at, KILN_PARSE_ERROR, "unknown instruction '%s'", kname);
  kiln_text_next(p);
  kiln_buffer *ops[MAX_OPERANDS];
  kiln_operand_dir dirs[MAX_OPERANDS];
  uint32_t n = 0;
  if (k == KILN_INSTR_Dealloc && p->tok.kind == KILN_TOK_LOCAL) {
    dirs[0] = KILN_IN;
    return expect_buffer(ip, &ops[0]) && add_instr(ip, &at, k, ops, dirs, 1, NULL, 0);
  }
  while (kiln_text_is_ident(p, "in") || kiln_text_is_ident(p, "out") ||
         kiln_text_is_ident(p, "inout")) {
    if (n == MAX_OPERANDS)
      return kiln_text_error_at(p, &p->tok, KILN_PARSE_ERROR, "more than %d operands",
                                MAX_OPERANDS);
    dirs[n] = kiln_text_is_ident(p, "in")    ? KILN_IN
              : kiln_text_is_ident(p, "out") ? KILN_OUT
                                             : KILN_INOUT;
    kiln_text_next(p);
    if (kiln_text_is_ident(p, "_")) {
      ops[n] = NULL;
      kiln_text_next(p);
    } else if (p->tok.kind != KILN_TOK_LOCAL) {
      return kiln_text_expected(p, "a %buffer or '_'");
    } else if (!expect_buffer(ip, &ops[n])) {
      return false;
    }
    n++;
    if (!kiln_text_is_punct(p, ','))
      break;
    kiln_text_next(p);
    if (!(kiln_text_is_ident(p, "in") || kiln_text_is_ident(p, "out") ||
          kiln_text_is_ident(p, "inout")))
      return kiln_text_expected(p, "'in', 'out' or 'inout'");
  }
  kiln_attr_desc *attrs;
  uint32_t na;
  return kiln_text_parse_attrs(p, &attrs, &na) && add_instr(ip, &at, k, ops, dirs, n, attrs, na);
}

static bool parse_body(iparser *ip) {
  kiln_text_parser *p = &ip->p;
  for (;;) {
    kiln_text_scratch_reset(p);
    if (p->tok.kind == KILN_TOK_EOF)
      return true;
    bool ok;
    if (p->tok.kind == KILN_TOK_LOCAL) {
      ok = parse_declaring(ip);
    } else if (p->tok.kind != KILN_TOK_IDENT) {
      ok = kiln_text_expected(p, "a declaration or an instruction");
    } else if (kiln_text_is_ident(p, "weight") || kiln_text_is_ident(p, "input") ||
               kiln_text_is_ident(p, "output") || kiln_text_is_ident(p, "activation")) {
      kiln_buffer_kind kind = kiln_text_is_ident(p, "weight")   ? KILN_BUFFER_WEIGHT
                              : kiln_text_is_ident(p, "input")  ? KILN_BUFFER_INPUT
                              : kiln_text_is_ident(p, "output") ? KILN_BUFFER_OUTPUT
                                                                : KILN_BUFFER_ACTIVATION;
      kiln_text_next(p);
      ok = parse_header(ip, kind);
    } else if (kiln_text_is_ident(p, "view")) {
      /* "view %v = ..." declares; "view out %v, in %b" is an instruction. */
      kiln_text_parser save = *p;
      kiln_text_next(p);
      if (p->tok.kind == KILN_TOK_LOCAL) {
        ok = parse_header(ip, KILN_BUFFER_VIEW);
      } else {
        *p = save;
        ok = parse_instr(ip);
      }
    } else {
      ok = parse_instr(ip);
    }
    if (!ok)
      return false;
  }
}

kiln_status kiln_ir_parse(const char *text, size_t len, const char *filename,
                          const kiln_allocator *alloc, kiln_ir **out) {
  if (!out)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_ir_parse: out is NULL");
  *out = NULL;
  if (!text && len)
    return kiln_status_make(KILN_INVALID_ARGUMENT, "kiln_ir_parse: text is NULL");
  iparser ip = {0};
  kiln_text_parser *p = &ip.p;
  kiln_text_parser_init(p, text, len, filename);
  kiln_text_token at;
  const char *name;
  uint64_t arena;
  bool ok = kiln_text_expect_ident(p, "ir") && kiln_text_expect_name(p, '@', &name, &at) &&
            kiln_text_expect_ident(p, "arena") && kiln_text_expect_uint(p, &arena);
  if (ok) {
    ip.owner = kiln_text_owner_create(alloc);
    if (!ip.owner) {
      ok = oom(&ip);
    } else {
      kiln_status s = kiln_ir_create(kiln_text_owner_allocator(ip.owner), name, &ip.ir);
      if (s) {
        kiln_text_owner_destroy(ip.owner);
        ok = kiln_text_wrap_at(p, &at, s);
      } else {
        kiln_text_owner_arm(ip.owner);
        kiln_ir_set_activation_bytes(ip.ir, arena);
        ok = parse_body(&ip);
      }
    }
  }
  kiln_text_parser_fini(p);
  sym_free(&ip);
  if (!ok) {
    kiln_ir_destroy(ip.ir); /* also frees the owner and the weights */
    return p->err
               ? p->err
               : kiln_status_make(KILN_INTERNAL, "%s: parse failed without a message", p->filename);
  }
  *out = ip.ir;
  return NULL;
}
