/* plugins/interpreter/elementwise_binary.c: elementwise kernels of two
 * broadcast inputs (arithmetic, logic, comparisons, BitShift, PRelu, the
 * Bitwise kinds; BitwiseNot, of one input, shares their bit-pattern rule).
 * The computing class is input 0's: double for floats, int64 for signed,
 * uint64 for unsigned and bool; comparisons store 0/1 into their bool
 * result. Signed arithmetic goes through uint64 so that overflow wraps
 * instead of being undefined. */
#include "kernel.h"

#include <kiln/ops_ref.h>

/* Each op returns false on an integer error (division by zero). `opt`
 * carries the kind's attribute (Mod's fmod, BitShift's direction). */
typedef double (*bin_f)(double a, double b, int opt);
typedef bool (*bin_i)(int64_t a, int64_t b, int opt, int64_t *r);
typedef bool (*bin_u)(uint64_t a, uint64_t b, int opt, uint64_t *r);

static kiln_status binary_run(const char *name, interp_tensor *outs, uint32_t n_outs,
                              const interp_tensor *ins, uint32_t n_ins, bin_f f, bin_i fi, bin_u fu,
                              int opt) {
  INTERP_ARITY(binary, 1, 2);
  interp_tensor *y = &outs[0];
  const interp_tensor *a = &ins[0], *b = &ins[1];
  int64_t n = interp_numel(y);
  interp_class c = interp_class_of(a->type.elem);
  /* bool reaches only logic kernels (no float or signed form) and Equal. */
  bool ok = c == INTERP_FLOAT    ? f != NULL
            : c == INTERP_SIGNED ? fi != NULL
            : c == INTERP_BOOL   ? (!f && !fi && fu)
                                 : fu != NULL;
  if (!ok)
    return interp_bad_elem(name, "input", a->type.elem);
  for (int64_t i = 0; i < n; i++) {
    int64_t ia = interp_broadcast_index(&y->type, &a->type, i);
    int64_t ib = interp_broadcast_index(&y->type, &b->type, i);
    if (c == INTERP_FLOAT) {
      interp_store_f(y, i, f(interp_load_f(a, ia), interp_load_f(b, ib), opt));
    } else if (c == INTERP_SIGNED) {
      int64_t r;
      if (!fi(interp_load_i(a, ia), interp_load_i(b, ib), opt, &r))
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "interpreter %s: integer division by zero at element %lld", name,
                                (long long)i);
      interp_store_i(y, i, r);
    } else {
      uint64_t r;
      if (!fu(interp_load_u(a, ia), interp_load_u(b, ib), opt, &r))
        return kiln_status_make(KILN_INVALID_ARGUMENT,
                                "interpreter %s: integer division by zero at element %lld", name,
                                (long long)i);
      interp_store_u(y, i, r);
    }
  }
  return NULL;
}

/* Defines f_/i_/u_ functions for one op from three expressions. */
#define BIN_FNS(name, fexpr, iexpr, uexpr)                                                         \
  static double f_##name(double a, double b, int opt) {                                            \
    (void)opt, (void)b;                                                                            \
    return (fexpr);                                                                                \
  }                                                                                                \
  static bool i_##name(int64_t a, int64_t b, int opt, int64_t *r) {                                \
    (void)opt, (void)b;                                                                            \
    *r = (iexpr);                                                                                  \
    return true;                                                                                   \
  }                                                                                                \
  static bool u_##name(uint64_t a, uint64_t b, int opt, uint64_t *r) {                             \
    (void)opt, (void)b;                                                                            \
    *r = (uexpr);                                                                                  \
    return true;                                                                                   \
  }

#define WRAP(op) ((int64_t)((uint64_t)a op(uint64_t) b))

BIN_FNS(Add, a + b, WRAP(+), a + b)
BIN_FNS(Sub, a - b, WRAP(-), a - b)
BIN_FNS(Mul, a *b, WRAP(*), a *b)
BIN_FNS(Equal, a == b, a == b, a == b)
BIN_FNS(Greater, a > b, a > b, a > b)
BIN_FNS(GreaterOrEqual, a >= b, a >= b, a >= b)
BIN_FNS(Less, a < b, a < b, a < b)
BIN_FNS(LessOrEqual, a <= b, a <= b, a <= b)
BIN_FNS(PRelu, a < 0 ? a * b : a, a < 0 ? WRAP(*) : a, a)

#define BIN_KERNEL(name, has_f, has_i, has_u)                                                      \
  INTERP_KERNEL(name) {                                                                            \
    (void)attrs;                                                                                   \
    return binary_run(#name, outs, n_outs, ins, n_ins, (has_f) ? f_##name : NULL,                  \
                      (has_i) ? i_##name : NULL, (has_u) ? u_##name : NULL, 0);                    \
  }

BIN_KERNEL(Add, 1, 1, 1)
BIN_KERNEL(Sub, 1, 1, 1)
BIN_KERNEL(Mul, 1, 1, 1)
BIN_KERNEL(Greater, 1, 1, 1)
BIN_KERNEL(GreaterOrEqual, 1, 1, 1)
BIN_KERNEL(Less, 1, 1, 1)
BIN_KERNEL(LessOrEqual, 1, 1, 1)
BIN_KERNEL(PRelu, 1, 1, 1)

/* Equal also compares bools, which binary_run routes through the unsigned
 * form. */
INTERP_KERNEL(Equal) {
  (void)attrs;
  INTERP_ARITY(Equal, 1, 2);
  if (ins[0].type.elem == KILN_BOOL)
    return binary_run("Equal", outs, n_outs, ins, n_ins, NULL, NULL, u_Equal, 0);
  return binary_run("Equal", outs, n_outs, ins, n_ins, f_Equal, i_Equal, u_Equal, 0);
}

/* Logic: bool only. */
static bool u_And(uint64_t a, uint64_t b, int opt, uint64_t *r) {
  (void)opt;
  *r = a && b;
  return true;
}
static bool u_Or(uint64_t a, uint64_t b, int opt, uint64_t *r) {
  (void)opt;
  *r = a || b;
  return true;
}
static bool u_Xor(uint64_t a, uint64_t b, int opt, uint64_t *r) {
  (void)opt;
  *r = (a != 0) != (b != 0);
  return true;
}
#define LOGIC_KERNEL(name)                                                                         \
  INTERP_KERNEL(name) {                                                                            \
    (void)attrs;                                                                                   \
    INTERP_ARITY(name, 1, 2);                                                                      \
    if (ins[0].type.elem != KILN_BOOL)                                                             \
      return interp_bad_elem(#name, "input", ins[0].type.elem);                                    \
    return binary_run(#name, outs, n_outs, ins, n_ins, NULL, NULL, u_##name, 0);                   \
  }
LOGIC_KERNEL(And)
LOGIC_KERNEL(Or)
LOGIC_KERNEL(Xor)

/* Div: integers truncate toward zero (C semantics), INT64_MIN / -1 wraps. */
static double f_Div(double a, double b, int opt) {
  (void)opt;
  return a / b;
}
static bool i_Div(int64_t a, int64_t b, int opt, int64_t *r) {
  (void)opt;
  if (b == 0)
    return false;
  *r = (b == -1) ? (int64_t)(0 - (uint64_t)a) : a / b;
  return true;
}
static bool u_Div(uint64_t a, uint64_t b, int opt, uint64_t *r) {
  (void)opt;
  if (b == 0)
    return false;
  *r = a / b;
  return true;
}
BIN_KERNEL(Div, 1, 1, 1)

/* Mod: opt = fmod. fmod=1 is C's fmod/% (sign of the dividend); fmod=0 is
 * Python's (sign of the divisor). */
static double f_Mod(double a, double b, int fmod_) {
  double r = fmod(a, b);
  if (!fmod_ && r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}
static bool i_Mod(int64_t a, int64_t b, int fmod_, int64_t *r) {
  if (b == 0)
    return false;
  int64_t m = (b == -1) ? 0 : a % b;
  if (!fmod_ && m != 0 && ((m < 0) != (b < 0)))
    m += b;
  *r = m;
  return true;
}
static bool u_Mod(uint64_t a, uint64_t b, int fmod_, uint64_t *r) {
  (void)fmod_;
  if (b == 0)
    return false;
  *r = a % b;
  return true;
}
INTERP_KERNEL(Mod) {
  int fm = kiln_attrs_int_or(attrs, "fmod", 0) != 0;
  return binary_run("Mod", outs, n_outs, ins, n_ins, f_Mod, i_Mod, u_Mod, fm);
}

/* BitShift: unsigned only; shifting by the width or more gives 0. */
static bool u_BitShift(uint64_t a, uint64_t b, int left, uint64_t *r) {
  *r = b >= 64 ? 0 : left ? a << b : a >> b;
  return true;
}
INTERP_KERNEL(BitShift) {
  INTERP_ARITY(BitShift, 1, 2);
  const char *dir = kiln_attrs_string_or(attrs, "direction", "");
  bool left = strcmp(dir, "LEFT") == 0;
  if (!left && strcmp(dir, "RIGHT") != 0)
    return kiln_status_make(KILN_INVALID_ARGUMENT,
                            "interpreter BitShift: direction must be \"LEFT\" or \"RIGHT\", not "
                            "\"%s\"",
                            dir);
  if (interp_class_of(ins[0].type.elem) != INTERP_UNSIGNED)
    return interp_bad_elem("BitShift", "input", ins[0].type.elem);
  /* Narrow types: a left shift past the width leaves zeros after the
   * wrap-around store; a right shift sees zero-extended bits. */
  return binary_run("BitShift", outs, n_outs, ins, n_ins, NULL, NULL, u_BitShift, left);
}

/* Pow: the result has the base's type; the exponent may be any numeric
 * type. Integer ** integer is exact with wrap-around (kiln_ref_ipow, shared
 * with the cpu backend's kernels). */
INTERP_KERNEL(Pow) {
  (void)attrs;
  INTERP_ARITY(Pow, 1, 2);
  interp_tensor *y = &outs[0];
  const interp_tensor *a = &ins[0], *b = &ins[1];
  interp_class ca = interp_class_of(a->type.elem), cb = interp_class_of(b->type.elem);
  if (ca == INTERP_BOOL || cb == INTERP_BOOL)
    return interp_bad_elem("Pow", "input", KILN_BOOL);
  int64_t n = interp_numel(y);
  for (int64_t i = 0; i < n; i++) {
    int64_t ia = interp_broadcast_index(&y->type, &a->type, i);
    int64_t ib = interp_broadcast_index(&y->type, &b->type, i);
    if (ca != INTERP_FLOAT && cb != INTERP_FLOAT)
      interp_store_i(y, i, kiln_ref_ipow(interp_load_i(a, ia), interp_load_i(b, ib)));
    else
      interp_store_f(y, i, pow(interp_load_f(a, ia), interp_load_f(b, ib)));
  }
  return NULL;
}

/* The Bitwise kinds work on the bit pattern: signed values are
 * sign-extended to 64 bits and the store keeps the low bits. */
static uint64_t bit_pattern(const interp_tensor *t, int64_t i) {
  return interp_class_of(t->type.elem) == INTERP_SIGNED ? (uint64_t)interp_load_i(t, i)
                                                        : interp_load_u(t, i);
}

static kiln_status need_int(const char *name, const interp_tensor *x) {
  interp_class c = interp_class_of(x->type.elem);
  if (c != INTERP_SIGNED && c != INTERP_UNSIGNED)
    return interp_bad_elem(name, "input", x->type.elem);
  return NULL;
}

enum { BITWISE_AND, BITWISE_OR, BITWISE_XOR };

static kiln_status bitwise_run(const char *name, int op, interp_tensor *outs, uint32_t n_outs,
                               const interp_tensor *ins, uint32_t n_ins) {
  INTERP_ARITY(bitwise, 1, 2);
  KILN_TRY(need_int(name, &ins[0]));
  interp_tensor *y = &outs[0];
  int64_t n = interp_numel(y);
  for (int64_t i = 0; i < n; i++) {
    uint64_t a = bit_pattern(&ins[0], interp_broadcast_index(&y->type, &ins[0].type, i));
    uint64_t b = bit_pattern(&ins[1], interp_broadcast_index(&y->type, &ins[1].type, i));
    interp_store_u(y, i, op == BITWISE_AND ? a & b : op == BITWISE_OR ? a | b : a ^ b);
  }
  return NULL;
}

INTERP_KERNEL(BitwiseAnd) {
  (void)attrs;
  return bitwise_run("BitwiseAnd", BITWISE_AND, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(BitwiseOr) {
  (void)attrs;
  return bitwise_run("BitwiseOr", BITWISE_OR, outs, n_outs, ins, n_ins);
}
INTERP_KERNEL(BitwiseXor) {
  (void)attrs;
  return bitwise_run("BitwiseXor", BITWISE_XOR, outs, n_outs, ins, n_ins);
}

INTERP_KERNEL(BitwiseNot) {
  (void)attrs;
  INTERP_ARITY(BitwiseNot, 1, 1);
  KILN_TRY(need_int("BitwiseNot", &ins[0]));
  int64_t n = interp_numel(&outs[0]);
  for (int64_t i = 0; i < n; i++)
    interp_store_u(&outs[0], i, ~bit_pattern(&ins[0], i));
  return NULL;
}
