/* onnx_save.h: private interface of the ONNX writer (onnx_save.c) to its
 * table of forms (onnx_save_forms.c): for each kiln node kind, the ONNX
 * operator that computes the same thing at the opset the writer targets,
 * its attributes, and the kiln attributes that ONNX takes as inputs. */
#ifndef KILN_ONNX_SAVE_H
#define KILN_ONNX_SAVE_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/ir.h"

/* The opset of the default domain that kiln writes, and the IR version
 * that goes with it (ONNX 1.17): kiln's kinds follow the operators of
 * opset 22 (node_kinds.def). A model with a kind that ONNX first defines
 * later (RMSNormalization 23, Swish 24) gets that later opset and its IR
 * version instead: the operators below keep their form up to 24. */
#define ONNX_SAVE_OPSET 22
#define ONNX_SAVE_IR_VERSION 10

/* How a kiln attribute becomes an ONNX input tensor. */
typedef enum onnx_save_in_form {
  ONNX_SAVE_I64S = 1,     /* int list -> i64 [n] */
  ONNX_SAVE_I64_SCALAR,   /* int -> i64 [] */
  ONNX_SAVE_I64_ONE,      /* int -> i64 [1] */
  ONNX_SAVE_F32S,         /* float list -> f32 [n] */
  ONNX_SAVE_SCALAR_X,     /* float -> [] of input 0's element type */
  ONNX_SAVE_SCALAR_DTYPE, /* float -> [] of the node's `dtype` (default f32) */
  /* OneHot's depth, int -> []: i64 when the values (kiln input 1) are i64,
   * else f32 (exact for any real depth). ONNX takes any numeric type; these
   * are the combinations ONNX Runtime implements. */
  ONNX_SAVE_DEPTH,
} onnx_save_in_form;

typedef struct onnx_save_move {
  const char *attr; /* the kiln attribute (NULL ends the list) */
  uint8_t pos;      /* its ONNX input position */
  uint8_t form;     /* onnx_save_in_form */
  bool required;    /* absent: an error (else the input is left out) */
} onnx_save_move;

typedef struct onnx_save_form {
  kiln_node_kind kind;
  const char *op_type; /* NULL: the kind's name */
  int32_t opset;       /* the first opset with this form; 0: ONNX_SAVE_OPSET */
  /* The ONNX attributes, "name:t" separated by spaces, t one of i (int),
   * f (float), s (string), I (ints), F (floats), S (strings: kiln joins a
   * list with ','), d (element type: kiln TYPE -> TensorProto.DataType).
   * t '-': a kiln attribute with no ONNX counterpart that is consumed
   * (written as an input, or implied by the form). Any other attribute of
   * the kiln node is an error naming it. */
  const char *attrs;
  /* Kiln attributes that ONNX takes as inputs. The node's own inputs fill
   * the remaining positions in order. */
  onnx_save_move moves[4];
} onnx_save_form;

/* The form of kind k; NULL when ONNX has none (the reason is
 * kiln_node_kind_no_onnx_reason(k), or the kind's row says so). */
const onnx_save_form *onnx_save_form_find(kiln_node_kind k);

#endif
