/* plugins/interpreter/elementwise_unary.c: elementwise kernels of one
 * input whose result has the input's element type (math functions and
 * activations, Mish and Swish included). Each kind is one double function,
 * plus an integer function where ONNX allows integer types; Mish and Swish
 * (floats only) loop on their own. */
#include "kernel.h"

typedef struct unary_params {
  double alpha, beta, gamma, bias, lambd;
  bool tanh_approx;
} unary_params;

typedef double (*unary_fn)(double x, const unary_params *p);
/* Integer form: x holds the element's bits (sign- or zero-extended). */
typedef uint64_t (*unary_int_fn)(uint64_t x, bool is_unsigned);

static kiln_status unary_run(const char *name, interp_tensor *outs, uint32_t n_outs,
                             const interp_tensor *ins, uint32_t n_ins, unary_fn f, unary_int_fn fi,
                             const unary_params *p) {
  INTERP_ARITY(unary, 1, 1);
  interp_tensor *y = &outs[0];
  const interp_tensor *x = &ins[0];
  int64_t n = interp_numel(y);
  interp_class c = interp_class_of(x->type.elem);
  if (c == INTERP_FLOAT) {
    for (int64_t i = 0; i < n; i++)
      interp_store_f(y, i, f(interp_load_f(x, i), p));
    return NULL;
  }
  if (!fi || c == INTERP_BOOL)
    return interp_bad_elem(name, "input", x->type.elem);
  for (int64_t i = 0; i < n; i++)
    interp_store_u(y, i, fi((uint64_t)interp_load_i(x, i), c == INTERP_UNSIGNED));
  return NULL;
}

/* A kernel of a float-only kind without attributes. */
#define UNARY_F(name, expr)                                                                        \
  static double f_##name(double x, const unary_params *p) {                                        \
    (void)p;                                                                                       \
    return (expr);                                                                                 \
  }                                                                                                \
  INTERP_KERNEL(name) {                                                                            \
    (void)attrs;                                                                                   \
    return unary_run(#name, outs, n_outs, ins, n_ins, f_##name, NULL, NULL);                       \
  }

UNARY_F(Acos, acos(x))
UNARY_F(Acosh, acosh(x))
UNARY_F(Asin, asin(x))
UNARY_F(Asinh, asinh(x))
UNARY_F(Atan, atan(x))
UNARY_F(Atanh, atanh(x))
UNARY_F(Ceil, ceil(x))
UNARY_F(Cos, cos(x))
UNARY_F(Cosh, cosh(x))
UNARY_F(Erf, erf(x))
UNARY_F(Exp, exp(x))
UNARY_F(Floor, floor(x))
UNARY_F(Log, log(x))
UNARY_F(Reciprocal, 1.0 / x)
UNARY_F(Round, nearbyint(x)) /* the default rounding mode: half to even */
UNARY_F(Sigmoid, x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)))
UNARY_F(Sin, sin(x))
UNARY_F(Sinh, sinh(x))
/* log1p(exp(x)) overflows for large x, where the result is x itself. */
UNARY_F(Softplus, x > 30.0 ? x + log1p(exp(-x)) : log1p(exp(x)))
UNARY_F(Softsign, x / (1.0 + fabs(x)))
UNARY_F(Sqrt, sqrt(x))
UNARY_F(Tan, tan(x))
UNARY_F(Tanh, tanh(x))
UNARY_F(HardSwish, x *fmax(0.0, fmin(1.0, x / 6.0 + 0.5)))

/* Float and integer kinds. Unsigned wrap-around is the integer rule. */
static double f_Abs(double x, const unary_params *p) {
  (void)p;
  return fabs(x);
}
static uint64_t i_Abs(uint64_t x, bool u) {
  return u || (int64_t)x >= 0 ? x : 0 - x;
}
INTERP_KERNEL(Abs) {
  (void)attrs;
  return unary_run("Abs", outs, n_outs, ins, n_ins, f_Abs, i_Abs, NULL);
}

static double f_Neg(double x, const unary_params *p) {
  (void)p;
  return -x;
}
static uint64_t i_Neg(uint64_t x, bool u) {
  (void)u;
  return 0 - x;
}
INTERP_KERNEL(Neg) {
  (void)attrs;
  return unary_run("Neg", outs, n_outs, ins, n_ins, f_Neg, i_Neg, NULL);
}

static double f_Sign(double x, const unary_params *p) {
  (void)p;
  return isnan(x) ? x : (x > 0) - (x < 0);
}
static uint64_t i_Sign(uint64_t x, bool u) {
  if (u)
    return x != 0;
  return (uint64_t)(int64_t)(((int64_t)x > 0) - ((int64_t)x < 0));
}
INTERP_KERNEL(Sign) {
  (void)attrs;
  return unary_run("Sign", outs, n_outs, ins, n_ins, f_Sign, i_Sign, NULL);
}

static double f_Relu(double x, const unary_params *p) {
  (void)p;
  return x < 0 ? 0.0 : x; /* keeps NaN */
}
static uint64_t i_Relu(uint64_t x, bool u) {
  return u || (int64_t)x >= 0 ? x : 0;
}
INTERP_KERNEL(Relu) {
  (void)attrs;
  return unary_run("Relu", outs, n_outs, ins, n_ins, f_Relu, i_Relu, NULL);
}

/* Activations with attributes (ONNX defaults). */
static double f_Elu(double x, const unary_params *p) {
  return x < 0 ? p->alpha * (exp(x) - 1.0) : x;
}
INTERP_KERNEL(Elu) {
  unary_params p = {.alpha = kiln_attrs_float_or(attrs, "alpha", 1.0)};
  return unary_run("Elu", outs, n_outs, ins, n_ins, f_Elu, NULL, &p);
}

static double f_Selu(double x, const unary_params *p) {
  return x > 0 ? p->gamma * x : p->gamma * (p->alpha * exp(x) - p->alpha);
}
INTERP_KERNEL(Selu) {
  unary_params p = {.alpha = kiln_attrs_float_or(attrs, "alpha", 1.67326319217681884765625),
                    .gamma = kiln_attrs_float_or(attrs, "gamma", 1.05070102214813232421875)};
  return unary_run("Selu", outs, n_outs, ins, n_ins, f_Selu, NULL, &p);
}

static double f_Celu(double x, const unary_params *p) {
  return fmax(0.0, x) + fmin(0.0, p->alpha * (exp(x / p->alpha) - 1.0));
}
INTERP_KERNEL(Celu) {
  unary_params p = {.alpha = kiln_attrs_float_or(attrs, "alpha", 1.0)};
  return unary_run("Celu", outs, n_outs, ins, n_ins, f_Celu, NULL, &p);
}

static double f_HardSigmoid(double x, const unary_params *p) {
  return fmax(0.0, fmin(1.0, p->alpha * x + p->beta));
}
INTERP_KERNEL(HardSigmoid) {
  unary_params p = {.alpha = kiln_attrs_float_or(attrs, "alpha", 0.2),
                    .beta = kiln_attrs_float_or(attrs, "beta", 0.5)};
  return unary_run("HardSigmoid", outs, n_outs, ins, n_ins, f_HardSigmoid, NULL, &p);
}

static double f_LeakyRelu(double x, const unary_params *p) {
  return x < 0 ? p->alpha * x : x;
}
INTERP_KERNEL(LeakyRelu) {
  unary_params p = {.alpha = kiln_attrs_float_or(attrs, "alpha", 0.01)};
  return unary_run("LeakyRelu", outs, n_outs, ins, n_ins, f_LeakyRelu, NULL, &p);
}

static double f_ThresholdedRelu(double x, const unary_params *p) {
  return x > p->alpha ? x : 0.0;
}
INTERP_KERNEL(ThresholdedRelu) {
  unary_params p = {.alpha = kiln_attrs_float_or(attrs, "alpha", 1.0)};
  return unary_run("ThresholdedRelu", outs, n_outs, ins, n_ins, f_ThresholdedRelu, NULL, &p);
}

static double f_Gelu(double x, const unary_params *p) {
  if (p->tanh_approx)
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}
INTERP_KERNEL(Gelu) {
  const char *mode = kiln_attrs_string_or(attrs, "approximate", "none");
  unary_params p = {.tanh_approx = strcmp(mode, "tanh") == 0};
  if (!p.tanh_approx && strcmp(mode, "none") != 0)
    return kiln_status_make(
        KILN_INVALID_ARGUMENT,
        "interpreter Gelu: approximate must be \"none\" or \"tanh\", not \"%s\"", mode);
  return unary_run("Gelu", outs, n_outs, ins, n_ins, f_Gelu, NULL, &p);
}

/* The double function of a unary kind FusedElementwise may hold (the list
 * of kiln_fused_arity), exactly as its unfused kernel computes it, so that
 * fusing changes no result; Gelu is its exact form (the fuse pass leaves
 * approximate="tanh" unfused). Anything else is passed through. */
double interp_unary_scalar(kiln_node_kind k, double x) {
  static const unary_params exact = {0};
  switch (k) {
#define FUSED_UNARY(name)                                                                          \
  case KILN_NODE_##name:                                                                           \
    return f_##name(x, &exact);
    FUSED_UNARY(Abs)
    FUSED_UNARY(Ceil)
    FUSED_UNARY(Cos)
    FUSED_UNARY(Erf)
    FUSED_UNARY(Exp)
    FUSED_UNARY(Floor)
    FUSED_UNARY(Gelu)
    FUSED_UNARY(Log)
    FUSED_UNARY(Neg)
    FUSED_UNARY(Reciprocal)
    FUSED_UNARY(Relu)
    FUSED_UNARY(Round)
    FUSED_UNARY(Sigmoid)
    FUSED_UNARY(Sign)
    FUSED_UNARY(Sin)
    FUSED_UNARY(Softplus)
    FUSED_UNARY(Softsign)
    FUSED_UNARY(Sqrt)
    FUSED_UNARY(Tan)
    FUSED_UNARY(Tanh)
#undef FUSED_UNARY
  default:
    return x; /* Identity */
  }
}

/* Shrink accepts every numeric type; integers go through double, where the
 * small values it is used on are exact. */
static double f_Shrink(double x, const unary_params *p) {
  if (x < -p->lambd)
    return x + p->bias;
  if (x > p->lambd)
    return x - p->bias;
  return 0.0;
}
INTERP_KERNEL(Shrink) {
  unary_params p = {.bias = kiln_attrs_float_or(attrs, "bias", 0.0),
                    .lambd = kiln_attrs_float_or(attrs, "lambd", 0.5)};
  INTERP_ARITY(Shrink, 1, 1);
  if (interp_class_of(ins[0].type.elem) == INTERP_BOOL)
    return interp_bad_elem("Shrink", "input", ins[0].type.elem);
  int64_t n = interp_numel(&outs[0]);
  for (int64_t i = 0; i < n; i++)
    interp_store_f(&outs[0], i, f_Shrink(interp_load_f(&ins[0], i), &p));
  return NULL;
}

/* softplus without overflow: log1p(exp(x)) is x itself for large x. */
static double softplus(double x) {
  return x > 30.0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

INTERP_KERNEL(Mish) {
  (void)attrs;
  INTERP_ARITY(Mish, 1, 1);
  KILN_TRY(interp_need_float("Mish", &ins[0]));
  int64_t n = interp_numel(&outs[0]);
  for (int64_t i = 0; i < n; i++) {
    double x = interp_load_f(&ins[0], i);
    interp_store_f(&outs[0], i, x * tanh(softplus(x)));
  }
  return NULL;
}

INTERP_KERNEL(Swish) {
  INTERP_ARITY(Swish, 1, 1);
  KILN_TRY(interp_need_float("Swish", &ins[0]));
  double alpha = kiln_attrs_float_or(attrs, "alpha", 1.0);
  int64_t n = interp_numel(&outs[0]);
  for (int64_t i = 0; i < n; i++) {
    double x = interp_load_f(&ins[0], i);
    interp_store_f(&outs[0], i, x * sigmoid(alpha * x));
  }
  return NULL;
}
