/* ir/text/fmt.c: how values are spelled in the text form: names, strings,
 * numbers (shortest decimal that reads back bit-exact), types, attributes
 * and constant data. Both printers (graph and instruction IR) use these, so
 * the two forms spell everything the same way. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_internal.h"

bool kiln_text_name_is_bare(const char *s) {
  if (!*s)
    return false;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (!(isalnum(c) || c == '_' || c == '.' || c == '$' || c == '-'))
      return false;
  }
  return true;
}

void kiln_text_put_name(kiln_text_buf *b, char sigil, const char *name) {
  kiln_text_buf_putn(b, &sigil, 1);
  if (kiln_text_name_is_bare(name))
    kiln_text_buf_puts(b, name);
  else
    kiln_text_put_string(b, name);
}

void kiln_text_put_string(kiln_text_buf *b, const char *s) {
  kiln_text_buf_putn(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '"':
      kiln_text_buf_puts(b, "\\\"");
      break;
    case '\\':
      kiln_text_buf_puts(b, "\\\\");
      break;
    case '\n':
      kiln_text_buf_puts(b, "\\n");
      break;
    case '\t':
      kiln_text_buf_puts(b, "\\t");
      break;
    default:
      if (c < 0x20 || c >= 0x7f)
        kiln_text_buf_printf(b, "\\x%02x", c);
      else
        kiln_text_buf_putn(b, (const char *)&c, 1);
    }
  }
  kiln_text_buf_putn(b, "\"", 1);
}

/* inf / nan spelled the same way for every width. True when handled. */
static bool format_special(double v, char *buf) {
  if (isnan(v)) {
    strcpy(buf, "nan");
    return true;
  }
  if (isinf(v)) {
    strcpy(buf, v < 0 ? "-inf" : "inf");
    return true;
  }
  return false;
}

/* %g switches to an exponent when the decimal exponent reaches the
 * precision, so the shortest form of 10 is "1e+01". Integers up to 16
 * digits read better written out; more digits still read back exactly. */
static void prefer_plain(double v, char *buf) {
  const char *e = strchr(buf, 'e');
  if (!e)
    return;
  int x = atoi(e + 1);
  if (x >= 0 && x < 16)
    snprintf(buf, 40, "%.*g", x + 1, v);
}

/* Shortest %.Ng of a double that strtod reads back to the same bits. */
static void format_f64(double v, char *buf) {
  if (format_special(v, buf))
    return;
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, 40, "%.*g", prec, v);
    double back = strtod(buf, NULL);
    if (memcmp(&back, &v, sizeof v) == 0) {
      prefer_plain(v, buf);
      return;
    }
  }
}

static void format_f32(float v, char *buf) {
  if (format_special(v, buf))
    return;
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(buf, 40, "%.*g", prec, (double)v);
    float back = strtof(buf, NULL);
    if (memcmp(&back, &v, sizeof v) == 0) {
      prefer_plain((double)v, buf);
      return;
    }
  }
}

/* f16 / bf16: the shortest decimal whose float converts back to the bits. */
static void format_half(uint16_t h, bool bf16, char *buf) {
  float v = bf16 ? kiln_bf16_to_f32(h) : kiln_f16_to_f32(h);
  if (format_special(v, buf))
    return;
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(buf, 40, "%.*g", prec, (double)v);
    float back = strtof(buf, NULL);
    uint16_t hb = bf16 ? kiln_f32_to_bf16(back) : kiln_f32_to_f16(back);
    if (hb == h) {
      prefer_plain((double)v, buf);
      return;
    }
  }
}

void kiln_text_format_double(double v, char *buf) {
  format_f64(v, buf);
  if (!strpbrk(buf, ".eni"))
    strcat(buf, ".0");
}

void kiln_text_put_type(kiln_text_buf *b, const kiln_type *t) {
  char small[160];
  int n = kiln_type_format(t, small, sizeof small);
  if (n < 0) {
    kiln_text_buf_puts(b, "?");
    return;
  }
  kiln_text_buf_puts(b, small);
}

static bool attr_name_is_ident(const char *s) {
  if (!(isalpha((unsigned char)*s) || *s == '_'))
    return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_'))
      return false;
  return true;
}

static void put_attr_value(kiln_text_buf *b, const kiln_attr *a) {
  char num[48];
  switch (kiln_attr_get_kind(a)) {
  case KILN_ATTR_INT:
    kiln_text_buf_printf(b, "%" PRId64, kiln_attr_int(a));
    break;
  case KILN_ATTR_FLOAT:
    kiln_text_format_double(kiln_attr_float(a), num);
    kiln_text_buf_puts(b, num);
    break;
  case KILN_ATTR_STRING:
    kiln_text_put_string(b, kiln_attr_string(a));
    break;
  case KILN_ATTR_INTS: {
    const int64_t *v = kiln_attr_ints(a);
    kiln_text_buf_puts(b, "[");
    for (uint32_t i = 0; i < kiln_attr_len(a); i++)
      kiln_text_buf_printf(b, "%s%" PRId64, i ? ", " : "", v[i]);
    kiln_text_buf_puts(b, "]");
    break;
  }
  case KILN_ATTR_FLOATS: {
    const double *v = kiln_attr_floats(a);
    kiln_text_buf_puts(b, "[");
    for (uint32_t i = 0; i < kiln_attr_len(a); i++) {
      kiln_text_format_double(v[i], num);
      kiln_text_buf_printf(b, "%s%s", i ? ", " : "", num);
    }
    kiln_text_buf_puts(b, "]");
    break;
  }
  case KILN_ATTR_TYPE:
    kiln_text_buf_puts(b, kiln_elem_name(kiln_attr_type(a)));
    break;
  default:
    kiln_text_buf_puts(b, "?");
  }
}

void kiln_text_put_attrs(kiln_text_buf *b, const kiln_attrs *a) {
  uint32_t n = kiln_attrs_count(a);
  if (n == 0)
    return;
  kiln_text_buf_puts(b, " {");
  for (uint32_t i = 0; i < n; i++) {
    const kiln_attr *at = kiln_attrs_at(a, i);
    const char *name = kiln_attr_name(at);
    if (i)
      kiln_text_buf_puts(b, ", ");
    if (attr_name_is_ident(name))
      kiln_text_buf_puts(b, name);
    else
      kiln_text_put_string(b, name);
    kiln_text_buf_puts(b, " = ");
    put_attr_value(b, at);
  }
  kiln_text_buf_puts(b, "}");
}

/* One element of constant data, decimal. */
static void format_elem(kiln_elem e, const unsigned char *p, char *buf) {
  switch (e) {
  case KILN_F64: {
    double v;
    memcpy(&v, p, sizeof v);
    format_f64(v, buf);
    return;
  }
  case KILN_F32: {
    float v;
    memcpy(&v, p, sizeof v);
    format_f32(v, buf);
    return;
  }
  case KILN_F16:
  case KILN_BF16: {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    format_half(h, e == KILN_BF16, buf);
    return;
  }
  case KILN_I8:
    snprintf(buf, 40, "%d", (int)(int8_t)p[0]);
    return;
  case KILN_U8:
    snprintf(buf, 40, "%u", (unsigned)p[0]);
    return;
  case KILN_BOOL:
    strcpy(buf, p[0] ? "1" : "0");
    return;
  case KILN_I16: {
    int16_t v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, 40, "%d", (int)v);
    return;
  }
  case KILN_U16: {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, 40, "%u", (unsigned)v);
    return;
  }
  case KILN_I32: {
    int32_t v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, 40, "%" PRId32, v);
    return;
  }
  case KILN_U32: {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, 40, "%" PRIu32, v);
    return;
  }
  case KILN_I64: {
    int64_t v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, 40, "%" PRId64, v);
    return;
  }
  case KILN_U64: {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, 40, "%" PRIu64, v);
    return;
  }
  default:
    strcpy(buf, "?");
  }
}

void kiln_text_put_data(kiln_text_buf *b, const kiln_type *t, const void *data) {
  int64_t n = kiln_type_numel(t);
  size_t es = kiln_elem_size(t->elem);
  const unsigned char *p = data;
  if (n > KILN_TEXT_MAX_LIST) {
    static const char digits[] = "0123456789abcdef";
    int64_t bytes = kiln_type_bytes(t);
    kiln_text_buf_puts(b, "hex\"");
    for (int64_t i = 0; i < bytes; i++) {
      char two[2] = {digits[p[i] >> 4], digits[p[i] & 15]};
      kiln_text_buf_putn(b, two, 2);
    }
    kiln_text_buf_puts(b, "\"");
    return;
  }
  char num[48];
  kiln_text_buf_puts(b, "[");
  for (int64_t i = 0; i < n; i++) {
    format_elem(t->elem, p + (size_t)i * es, num);
    if (i)
      kiln_text_buf_puts(b, ", ");
    kiln_text_buf_puts(b, num);
  }
  kiln_text_buf_puts(b, "]");
}
