/* onnx_strip.c: a ModelProto's wire form without the raw_data of its main
 * graph's initializers. protobuf-c copies every bytes field while it
 * unpacks, so unpacking a model as it is holds its weights twice (the file
 * and the message) before the loader copies them a third time; unpacking
 * the stripped form holds none, and the loader reads each initializer's
 * bytes straight into its constant (onnx_tensor_fill). Only the fields on
 * the path ModelProto.graph (7) -> GraphProto.initializer (5) ->
 * TensorProto.raw_data (9) are looked into; every other byte is copied as
 * it is, so what protobuf-c reports about a malformed model stays the same
 * (anything this walk cannot read is left to protobuf-c unchanged). */
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

typedef struct strip_ctx {
  const uint8_t *base;
  uint8_t *out;
  size_t len;
  onnx_raw *raws;
  size_t n_raws, cap_raws;
} strip_ctx;

static bool rd_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (*p >= end)
      return false;
    uint8_t b = *(*p)++;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

static size_t wr_varint(uint8_t *dst, uint64_t v) {
  size_t n = 0;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    dst[n++] = (uint8_t)(b | (v ? 0x80 : 0));
  } while (v);
  return n;
}

static void put(strip_ctx *c, const uint8_t *p, size_t n) {
  memcpy(c->out + c->len, p, n);
  c->len += n;
}

/* level 0: ModelProto, 1: GraphProto, 2: TensorProto (initializer raw
 * record `raw`). */
static bool strip_msg(strip_ctx *c, const uint8_t *p, const uint8_t *end, int level, size_t raw) {
  while (p < end) {
    const uint8_t *start = p;
    uint64_t tag, len = 0;
    if (!rd_varint(&p, end, &tag))
      return false;
    uint32_t field = (uint32_t)(tag >> 3), wt = (uint32_t)(tag & 7);
    const uint8_t *tag_end = p, *payload = p;
    switch (wt) {
    case 0:
      if (!rd_varint(&p, end, &len))
        return false;
      break;
    case 1:
      if (end - p < 8)
        return false;
      p += 8;
      break;
    case 5:
      if (end - p < 4)
        return false;
      p += 4;
      break;
    case 2:
      if (!rd_varint(&p, end, &len) || len > (uint64_t)(end - p))
        return false;
      payload = p;
      p += len;
      break;
    default: /* groups and invalid wire types: protobuf-c's to judge */
      return false;
    }
    bool into = wt == 2 && ((level == 0 && field == 7) || (level == 1 && field == 5));
    if (level == 2 && wt == 2 && field == 9) {
      c->raws[raw].offset = (uint64_t)(payload - c->base);
      c->raws[raw].len = (size_t)len;
      continue;
    }
    if (!into) {
      put(c, start, (size_t)(p - start));
      continue;
    }
    size_t child_raw = 0;
    if (level == 1) {
      if (c->n_raws == c->cap_raws) {
        size_t nc = c->cap_raws ? c->cap_raws * 2 : 64;
        onnx_raw *r = realloc(c->raws, nc * sizeof *r);
        if (!r)
          return false;
        c->raws = r;
        c->cap_raws = nc;
      }
      child_raw = c->n_raws++;
      c->raws[child_raw] = (onnx_raw){.offset = UINT64_MAX};
    }
    /* The tag, then the child written 10 bytes on (room for any length
     * prefix), then moved back behind its actual prefix. */
    put(c, start, (size_t)(tag_end - start));
    size_t at = c->len;
    c->len += 10;
    if (!strip_msg(c, payload, payload + len, level + 1, child_raw))
      return false;
    size_t child = c->len - at - 10;
    uint8_t pre[10];
    size_t np = wr_varint(pre, child);
    memmove(c->out + at + np, c->out + at + 10, child);
    memcpy(c->out + at, pre, np);
    c->len = at + np + child;
  }
  return true;
}

bool onnx_strip_raw_data(const uint8_t *p, size_t n, uint8_t **out, size_t *out_len,
                         onnx_raw **raws, size_t *n_raws) {
  strip_ctx c = {.base = p};
  *out = NULL;
  *raws = NULL;
  *n_raws = 0;
  /* The stripped form is never longer than the input, plus the 10 spare
   * bytes of each open level while it is written. */
  c.out = malloc(n + 64);
  if (!c.out)
    return false;
  if (!strip_msg(&c, p, p + n, 0, 0)) {
    free(c.out);
    free(c.raws);
    return false;
  }
  *out = c.out;
  *out_len = c.len;
  *raws = c.raws;
  *n_raws = c.n_raws;
  return true;
}
