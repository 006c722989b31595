/* tests/passes/test_lower_total.c: lowering is total. For every node kind
 * in node_kinds.def there is at least one small graph here; each is lowered
 * with no backend predicate ("only primitives"), verified, checked to hold
 * only primitive nodes, and run on the interpreter next to the unlowered
 * graph on the same random inputs (rtol 1e-4). A kind with no case, or one
 * that neither lowers nor is primitive, fails naming the kind. Each case
 * prints whether its kind lowered or is primitive. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

typedef struct tcase_def {
  const char *kind; /* the kind under test */
  const char *decl; /* inputs and constants */
  const char *body; /* nodes and outputs */
  double lo, hi;    /* input range */
} tcase_def;

#define F23 "input %x : f32[2,3]\n"
#define U(k, lo, hi) {#k, F23, "  %y : f32[2,3] = " #k "(%x)\n  output %o = %y\n", lo, hi}
#define UA(k, a, lo, hi)                                                                           \
  {#k, F23, "  %y : f32[2,3] = " #k "(%x) {" a "}\n  output %o = %y\n", lo, hi}
#define B(k, t, o)                                                                                 \
  {#k, "input %a : " t "[2,3]\ninput %b : " t "[3]\n",                                             \
   "  %y : " o "[2,3] = " #k "(%a, %b)\n  output %o = %y\n", -2, 2}

static const tcase_def defs[] = {
    U(Abs, -2, 2),
    U(Acos, -0.95, 0.95),
    U(Acosh, 1.1, 3),
    U(Asin, -0.95, 0.95),
    U(Asinh, -3, 3),
    U(Atan, -3, 3),
    U(Atanh, -0.9, 0.9),
    U(Ceil, -3, 3),
    U(Cos, -3, 3),
    U(Cosh, -2, 2),
    U(Erf, -2, 2),
    U(Exp, -2, 2),
    U(Floor, -3, 3),
    U(Log, 0.2, 3),
    U(Neg, -2, 2),
    U(Reciprocal, 0.25, 2),
    U(Relu, -2, 2),
    U(Round, -3, 3),
    U(Sigmoid, -4, 4),
    U(Sign, -2, 2),
    U(Sin, -3, 3),
    U(Sinh, -2, 2),
    U(Softplus, -3, 3),
    U(Softplus, -120, 120),
    U(Softsign, -3, 3),
    U(Sqrt, 0.1, 3),
    U(Tan, -1.2, 1.2),
    U(Tanh, -3, 3),
    U(Elu, -2, 2),
    U(Selu, -2, 2),
    UA(Celu, "alpha = 2", -2, 2),
    UA(HardSigmoid, "alpha = 0.4", -3, 3),
    U(HardSwish, -4, 4),
    UA(LeakyRelu, "alpha = 0.2", -2, 2),
    UA(ThresholdedRelu, "alpha = 0.5", -2, 2),
    UA(Shrink, "bias = 0.3, lambd = 0.6", -2, 2),
    U(Gelu, -3, 3),
    UA(Gelu, "approximate = \"tanh\"", -3, 3),
    U(Identity, -2, 2),
    {"IsInf", "input %x : f32[2,3]\nconst %c : f32[3] = [inf, -inf, 1]\n",
     "  %s : f32[2,3] = Mul(%x, %c)\n  %y : bool[2,3] = IsInf(%s)\n  output %o = %y\n", 0.5, 2},
    {"IsInf", "input %x : f32[2,3]\nconst %c : f32[3] = [inf, -inf, 1]\n",
     "  %s : f32[2,3] = Mul(%x, %c)\n  %y : bool[2,3] = IsInf(%s) {detect_positive = 0}\n"
     "  output %o = %y\n",
     0.5, 2},
    {"IsNaN", "input %x : f32[2,3]\n",
     "  %l : f32[2,3] = Log(%x)\n  %y : bool[2,3] = IsNaN(%l)\n  output %o = %y\n", -2, 2},
    {"Not", "input %x : bool[2,3]\n", "  %y : bool[2,3] = Not(%x)\n  output %o = %y\n", 0, 1},
    {"Dropout", F23,
     "  %d : f32[2,3], %m : bool[2,3] = Dropout(%x)\n  output %o = %d\n"
     "  output %p = %m\n",
     -2, 2},
    {"Cast", F23, "  %y : i32[2,3] = Cast(%x) {to = i32}\n  output %o = %y\n", -5, 5},
    {"CastLike", "input %x : f32[2,3]\ninput %l : f64[1]\n",
     "  %y : f64[2,3] = CastLike(%x, %l)\n  output %o = %y\n", -2, 2},
    B(Add, "f32", "f32"),
    B(Sub, "f32", "f32"),
    B(Mul, "f32", "f32"),
    B(Max, "f32", "f32"),
    B(Min, "f32", "f32"),
    B(Equal, "i32", "bool"),
    B(Greater, "i32", "bool"),
    B(GreaterOrEqual, "i32", "bool"),
    B(Less, "i32", "bool"),
    B(LessOrEqual, "i32", "bool"),
    B(GreaterOrEqual, "f32", "bool"),
    B(And, "bool", "bool"),
    B(Or, "bool", "bool"),
    B(Xor, "bool", "bool"),
    {"Div", "input %a : f32[2,3]\ninput %b : f32[3]\n",
     "  %y : f32[2,3] = Div(%a, %b)\n  output %o = %y\n", 0.5, 2},
    {"Pow", "input %a : f32[2,3]\ninput %b : f32[3]\n",
     "  %y : f32[2,3] = Pow(%a, %b)\n  output %o = %y\n", 0.5, 2},
    {"Mod", "input %a : f32[2,3]\nconst %b : f32[3] = [0.7, -1.3, 2]\n",
     "  %y : f32[2,3] = Mod(%a, %b) {fmod = 1}\n  output %o = %y\n", -3, 3},
    {"BitShift", "input %u : u8[4]\nconst %s : u8[4] = [1, 2, 3, 0]\n",
     "  %y : u8[4] = BitShift(%u, %s) {direction = \"LEFT\"}\n  output %o = %y\n", 0, 30},
    {"PRelu", "input %x : f32[2,3]\nconst %s : f32[3] = [0.1, 0.5, 2]\n",
     "  %y : f32[2,3] = PRelu(%x, %s)\n  output %o = %y\n", -2, 2},
    {"Max", "input %a : f32[3]\ninput %b : f32[2,3]\ninput %c : f32[2,1]\n",
     "  %y : f32[2,3] = Max(%a, %b, %c)\n  output %o = %y\n", -2, 2},
    {"Min", "input %a : i32[3]\ninput %b : i32[2,3]\ninput %c : i32[2,1]\n",
     "  %y : i32[2,3] = Min(%a, %b, %c)\n  output %o = %y\n", -9, 9},
    {"Mean", "input %a : f32[3]\ninput %b : f32[2,3]\ninput %c : f32[2,1]\n",
     "  %y : f32[2,3] = Mean(%a, %b, %c)\n  output %o = %y\n", -2, 2},
    {"Sum", "input %a : f32[3]\ninput %b : f32[2,3]\n",
     "  %y : f32[2,3] = Sum(%a, %b)\n  output %o = %y\n", -2, 2},
    {"Where", "input %c : bool[2,3]\ninput %a : f32[2,3]\ninput %b : f32[3]\n",
     "  %y : f32[2,3] = Where(%c, %a, %b)\n  output %o = %y\n", -2, 2},
    {"Clip", "input %x : f32[2,3]\nconst %lo : f32[] = [-0.5]\nconst %hi : f32[] = [1]\n",
     "  %y : f32[2,3] = Clip(%x, %lo, %hi)\n  %z : f32[2,3] = Clip(%x, _, %hi)\n"
     "  output %o = %y\n  output %p = %z\n",
     -2, 2},
    {"ArgMax", F23, "  %y : i64[2,1] = ArgMax(%x) {axis = 1}\n  output %o = %y\n", -2, 2},
    {"ArgMin", F23, "  %y : i64[3] = ArgMin(%x) {axis = 0, keepdims = 0}\n  output %o = %y\n", -2,
     2},
    {"ArgMin", "input %x : i32[2,5]\n",
     "  %y : i64[2] = ArgMin(%x) {axis = 1, keepdims = 0, select_last_index = 1}\n"
     "  output %o = %y\n",
     -3, 3},
    {"ReduceL1", "input %x : f32[2,3,4]\n",
     "  %y : f32[2,1,4] = ReduceL1(%x) {axes = [1]}\n  output %o = %y\n", -2, 2},
    {"ReduceL2", "input %x : f32[2,3,4]\n",
     "  %y : f32[2] = ReduceL2(%x) {axes = [1, -1], keepdims = 0}\n  output %o = %y\n", -2, 2},
    {"ReduceLogSum", "input %x : f32[2,3,4]\n",
     "  %y : f32[1,1,1] = ReduceLogSum(%x)\n  output %o = %y\n", 0.2, 2},
    {"ReduceLogSumExp", "input %x : f32[2,3,4]\n",
     "  %y : f32[2,1,4] = ReduceLogSumExp(%x) {axes = [1]}\n  output %o = %y\n", -2, 2},
    {"ReduceMax", "input %x : f32[2,3,4]\n",
     "  %y : f32[2] = ReduceMax(%x) {axes = [1, -1], keepdims = 0}\n  output %o = %y\n", -2, 2},
    {"ReduceMean", "input %x : f32[2,3,4]\n",
     "  %y : f32[1,1,1] = ReduceMean(%x)\n  output %o = %y\n", -2, 2},
    {"ReduceMin", "input %x : f32[2,3,4]\n",
     "  %y : f32[2,1,4] = ReduceMin(%x) {axes = [1]}\n  output %o = %y\n", -2, 2},
    {"ReduceMin", "input %x : u8[2,3]\n",
     "  %y : u8[2] = ReduceMin(%x) {axes = [1], keepdims = 0}\n  output %o = %y\n", 0, 255},
    {"ReduceMin", "input %x : i32[2,3]\n",
     "  %y : i32[3] = ReduceMin(%x) {axes = [0], keepdims = 0}\n  output %o = %y\n", -99, 99},
    {"ReduceProd", "input %x : f32[2,3,4]\n",
     "  %y : f32[2] = ReduceProd(%x) {axes = [1, -1], keepdims = 0}\n  output %o = %y\n", -1.5,
     1.5},
    {"ReduceSum", "input %x : f32[2,3,4]\n",
     "  %y : f32[1,1,1] = ReduceSum(%x)\n  output %o = %y\n", -2, 2},
    {"ReduceSumSquare", "input %x : f32[2,3,4]\n",
     "  %y : f32[2,1,4] = ReduceSumSquare(%x) {axes = [1]}\n  output %o = %y\n", -2, 2},
    {"Softmax", F23, "  %y : f32[2,3] = Softmax(%x)\n  output %o = %y\n", -3, 3},
    {"LogSoftmax", F23, "  %y : f32[2,3] = LogSoftmax(%x) {axis = 0}\n  output %o = %y\n", -3, 3},
    {"Hardmax", F23, "  %y : f32[2,3] = Hardmax(%x)\n  output %o = %y\n", -3, 3},
    {"Hardmax", F23, "  %y : f32[2,3] = Hardmax(%x) {axis = 0}\n  output %o = %y\n", -3, 3},
    {"CumSum", F23, "  %y : f32[2,3] = CumSum(%x) {axis = 1}\n  output %o = %y\n", -2, 2},
    {"CumSum", F23,
     "  %y : f32[2,3] = CumSum(%x) {axis = 0, exclusive = 1, reverse = 1}\n  output %o = %y\n", -2,
     2},
    {"CumSum", "input %x : i32[5]\n",
     "  %y : i32[5] = CumSum(%x) {axis = 0, reverse = 1}\n  output %o = %y\n", -9, 9},
    {"TopK", F23,
     "  %v : f32[2,2], %i : i64[2,2] = TopK(%x) {axis = 1, k = 2}\n  output %o = %v\n"
     "  output %p = %i\n",
     -2, 2},
    {"BatchNormalization",
     "input %x : f32[2,3,2,2]\nconst %s : f32[3] = [1, 2, 0.5]\nconst %b : f32[3] = [0, 1, "
     "-1]\nconst %m : f32[3] = [0.5, -0.5, 0]\nconst %v : f32[3] = [1, 4, 0.25]\n",
     "  %y : f32[2,3,2,2] = BatchNormalization(%x, %s, %b, %m, %v)\n  output %o = %y\n", -2, 2},
    {"InstanceNormalization",
     "input %x : f32[2,3,4]\nconst %s : f32[3] = [1, 2, 0.5]\nconst %b : f32[3] = [0, 1, -1]\n",
     "  %y : f32[2,3,4] = InstanceNormalization(%x, %s, %b)\n  output %o = %y\n", -2, 2},
    {"LayerNormalization",
     "input %x : f32[2,3,4]\nconst %s : f32[4] = [1, 2, 0.5, 1]\nconst %b : f32[4] = [0, 1, -1, "
     "0]\n",
     "  %y : f32[2,3,4] = LayerNormalization(%x, %s, %b) {axis = -1}\n  output %o = %y\n", -2, 2},
    {"MeanVarianceNormalization", "input %x : f32[2,3,2,2]\n",
     "  %y : f32[2,3,2,2] = MeanVarianceNormalization(%x)\n  output %o = %y\n", -2, 2},
    {"LRN", "input %x : f32[1,4,2,3]\n",
     "  %y : f32[1,4,2,3] = LRN(%x) {alpha = 0.5, beta = 0.75, bias = 1.0, size = 3}\n"
     "  output %o = %y\n",
     -2, 2},
    {"LRN", "input %x : f32[2,5,3]\n",
     "  %y : f32[2,5,3] = LRN(%x) {alpha = 0.2, beta = 0.5, bias = 2.0, size = 2}\n"
     "  output %o = %y\n",
     -2, 2},
    /* a window far wider than the channels (cut to them, not 10^9 taps) */
    {"LRN", "input %x : f32[1,4,2,3]\n",
     "  %y : f32[1,4,2,3] = LRN(%x) {alpha = 0.5, beta = 0.75, bias = 1.0, size = 1000000001}\n"
     "  output %o = %y\n",
     -2, 2},
    {"LRN", "input %x : f32[2,1,3]\n",
     "  %y : f32[2,1,3] = LRN(%x) {alpha = 0.5, beta = 0.75, bias = 1.0, size = 4}\n"
     "  output %o = %y\n",
     -2, 2},
    {"MatMul", "input %a : f32[2,3]\ninput %b : f32[3,4]\n",
     "  %y : f32[2,4] = MatMul(%a, %b)\n  output %o = %y\n", -2, 2},
    {"Gemm", "input %a : f32[3,2]\ninput %b : f32[4,3]\ninput %c : f32[4]\n",
     "  %y : f32[2,4] = Gemm(%a, %b, %c) {alpha = 0.5, beta = 2, transA = 1, transB = 1}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Einsum", "input %a : f32[2,3,3]\n",
     "  %y : f32[2,3] = Einsum(%a) {equation = \"...ii->...i\"}\n  output %o = %y\n", -2, 2},
    {"Einsum", "input %a : f32[2,3,4]\ninput %b : f32[2,4,5]\n",
     "  %y : f32[2,3,5] = Einsum(%a, %b) {equation = \"bij, bjk -> bik\"}\n  output %o = %y\n", -2,
     2},
    {"Einsum", "input %a : f32[3,4]\n",
     "  %y : f32[4,3] = Einsum(%a) {equation = \"ij->ji\"}\n  output %o = %y\n", -2, 2},
    {"Einsum", "input %a : f32[3,4]\n",
     "  %y : f32[3] = Einsum(%a) {equation = \"ij->i\"}\n  output %o = %y\n", -2, 2},
    {"Einsum", "input %a : f32[5]\ninput %b : f32[5]\n",
     "  %y : f32[] = Einsum(%a, %b) {equation = \"i,i\"}\n  output %o = %y\n", -2, 2},
    {"Einsum", "input %a : f32[3,2]\ninput %b : f32[2,4]\n",
     "  %y : f32[3,4] = Einsum(%a, %b) {equation = \"ij,jk\"}\n  output %o = %y\n", -2, 2},
    {"Einsum", "input %a : f32[2,3]\ninput %b : f32[3,4]\n",
     "  %y : f32[2,4] = Einsum(%a, %b) {equation = \"ij,jk->ik\"}\n  output %o = %y\n", -2, 2},
    /* integer Einsum: the same primitives, in wrapping integer arithmetic */
    {"Einsum", "input %a : i64[2,3]\ninput %b : i64[3,4]\n",
     "  %y : i64[2,4] = Einsum(%a, %b) {equation = \"ij,jk->ik\"}\n  output %o = %y\n", -9, 9},
    {"Einsum", "input %a : i32[2,3,4]\n",
     "  %y : i32[2] = Einsum(%a) {equation = \"bij->b\"}\n  output %o = %y\n", -99, 99},
    {"Einsum", "input %a : i64[2,3,3]\n",
     "  %y : i64[2,3] = Einsum(%a) {equation = \"...ii->...i\"}\n  output %o = %y\n", -50, 50},
    {"Einsum", "input %a : i32[4]\ninput %b : i32[4]\n",
     "  %y : i32[] = Einsum(%a, %b) {equation = \"i,i->\"}\n  output %o = %y\n", -9, 9},
    {"Conv", "input %x : f32[1,2,5,5]\ninput %w : f32[4,2,3,3]\ninput %b : f32[4]\n",
     "  %y : f32[1,4,5,5] = Conv(%x, %w, %b) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Conv", "input %x : f32[1,4,5,5]\ninput %w : f32[6,2,3,3]\ninput %b : f32[6]\n",
     "  %y : f32[1,6,3,3] = Conv(%x, %w, %b) {group = 2, strides = [2, 2], pads = [1, 1, 1, 1]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Conv", "input %x : f32[1,3,5]\ninput %w : f32[3,1,3]\n",
     "  %y : f32[1,3,5] = Conv(%x, %w) {group = 3, auto_pad = \"SAME_UPPER\"}\n"
     "  output %o = %y\n",
     -2, 2},
    {"ConvTranspose", "input %x : f32[1,2,3,3]\ninput %w : f32[2,3,3,3]\ninput %b : f32[3]\n",
     "  %y : f32[1,3,7,7] = ConvTranspose(%x, %w, %b) {strides = [2, 2]}\n  output %o = %y\n", -2,
     2},
    {"AveragePool", "input %x : f32[1,2,4,4]\n",
     "  %y : f32[1,2,2,2] = AveragePool(%x) {kernel_shape = [2, 2], strides = [2, 2]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"AveragePool", "input %x : f32[1,2,4,4]\n",
     "  %y : f32[1,2,4,4] = AveragePool(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"AveragePool", "input %x : f32[1,2,4,4]\n",
     "  %y : f32[1,2,4,4] = AveragePool(%x) {count_include_pad = 1, kernel_shape = [3, 3], pads "
     "= [1, 1, 1, 1]}\n  output %o = %y\n",
     -2, 2},
    {"MaxPool", "input %x : f32[1,2,4,4]\n",
     "  %y : f32[1,2,2,2], %i : i64[1,2,2,2] = MaxPool(%x) {kernel_shape = [2, 2], strides = [2, "
     "2]}\n  output %o = %y\n  output %p = %i\n",
     -2, 2},
    {"GlobalAveragePool", "input %x : f32[1,2,3,3]\n",
     "  %y : f32[1,2,1,1] = GlobalAveragePool(%x)\n  output %o = %y\n", -2, 2},
    {"GlobalMaxPool", "input %x : f32[1,2,3,3]\n",
     "  %y : f32[1,2,1,1] = GlobalMaxPool(%x)\n  output %o = %y\n", -2, 2},
    {"Reshape", "input %x : f32[2,3,4]\n",
     "  %y : f32[2,12] = Reshape(%x) {shape = [0, -1]}\n  output %o = %y\n", -2, 2},
    {"Flatten", "input %x : f32[2,3,4]\n",
     "  %y : f32[6,4] = Flatten(%x) {axis = 2}\n  output %o = %y\n", -2, 2},
    {"Squeeze", "input %x : f32[2,1,3]\n", "  %y : f32[2,3] = Squeeze(%x)\n  output %o = %y\n", -2,
     2},
    {"Unsqueeze", F23, "  %y : f32[2,1,3,1] = Unsqueeze(%x) {axes = [1, -1]}\n  output %o = %y\n",
     -2, 2},
    {"Transpose", "input %x : f32[2,3,4]\n",
     "  %y : f32[4,3,2] = Transpose(%x)\n  output %o = %y\n", -2, 2},
    {"Expand", "input %x : f32[3]\n",
     "  %y : f32[2,3] = Expand(%x) {shape = [2, 3]}\n  output %o = %y\n", -2, 2},
    {"Tile", F23, "  %y : f32[4,9] = Tile(%x) {repeats = [2, 3]}\n  output %o = %y\n", -2, 2},
    {"Slice", F23,
     "  %y : f32[2,3] = Slice(%x) {axes = [1], ends = [-4], starts = [-1], steps = [-1]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Pad", F23,
     "  %y : f32[2,5] = Pad(%x) {mode = \"constant\", pads = [0, 1, 0, 1], value = 0.5}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Concat", "input %a : f32[2,3]\ninput %b : f32[2,2]\n",
     "  %y : f32[2,5] = Concat(%a, %b) {axis = 1}\n  output %o = %y\n", -2, 2},
    {"Split", "input %a : f32[2,3]\n",
     "  %s0 : f32[2,1], %s1 : f32[2,2] = Split(%a) {axis = 1, split = [1, 2]}\n"
     "  output %o = %s0\n  output %p = %s1\n",
     -2, 2},
    {"Split", "input %c : f32[4,3]\n",
     "  %h0 : f32[2,3], %h1 : f32[2,3] = Split(%c) {axis = 0, num_outputs = 2}\n"
     "  output %o = %h0\n  output %p = %h1\n",
     -2, 2},
    {"Gather", "input %d : f32[3,4]\nconst %i : i64[2,2] = [0, 1, 3, -1]\n",
     "  %y : f32[3,2,2] = Gather(%d, %i) {axis = 1}\n  output %o = %y\n", -2, 2},
    {"GatherElements", "input %d : f32[3,4]\nconst %i : i64[2,2] = [0, 1, 3, -1]\n",
     "  %y : f32[2,2] = GatherElements(%d, %i) {axis = 1}\n  output %o = %y\n", -2, 2},
    {"GatherElements", "input %d : f32[3,4]\nconst %i : i32[2,3] = [0, 1, 2, -1, 0, 2]\n",
     "  %y : f32[2,3] = GatherElements(%d, %i) {axis = 0}\n  output %o = %y\n", -2, 2},
    {"GatherND", "input %d : f32[3,4]\nconst %i : i64[2,2] = [0, 1, 2, -1]\n",
     "  %y : f32[2] = GatherND(%d, %i)\n  output %o = %y\n", -2, 2},
    {"GatherND", "input %d : f32[2,3,4]\nconst %i : i64[2,1] = [2, 0]\n",
     "  %y : f32[2,4] = GatherND(%d, %i) {batch_dims = 1}\n  output %o = %y\n", -2, 2},
    {"ScatterND", "input %d : f32[4,3]\ninput %u : f32[2,3]\nconst %i : i64[2,1] = [3, 1]\n",
     "  %y : f32[4,3] = ScatterND(%d, %i, %u)\n  output %o = %y\n", -2, 2},
    {"ScatterElements",
     "input %d : f32[2,3]\ninput %u : f32[2,2]\nconst %i : i64[2,2] = [0, 2, 1, 0]\n",
     "  %y : f32[2,3] = ScatterElements(%d, %i, %u) {axis = 1, reduction = \"add\"}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Shape", "input %x : f32[2,3,4]\n",
     "  %y : i64[1] = Shape(%x) {end = 2, start = 1}\n  output %o = %y\n", -2, 2},
    {"Size", "input %x : f32[2,3,4]\n", "  %y : i64[] = Size(%x)\n  output %o = %y\n", -2, 2},
    {"ConstantOfShape", "input %x : i32[2,3]\n",
     "  %c : i32[2,3] = ConstantOfShape() {dtype = i32, shape = [2, 3], value = 3.0}\n"
     "  %y : i32[2,3] = Add(%c, %x)\n  output %o = %y\n",
     -5, 5},
    {"EyeLike", "input %x : f32[3,4]\n",
     "  %e : f32[3,4] = EyeLike(%x) {k = 1}\n  %y : f32[3,4] = Add(%e, %x)\n  output %o = %y\n", -2,
     2},
    {"Range", "input %x : f32[5]\n",
     "  %r : f32[5] = Range() {delta = 2.0, dtype = f32, limit = 10.0, start = 0.5}\n"
     "  %y : f32[5] = Add(%r, %x)\n  output %o = %y\n",
     -2, 2},
    {"OneHot",
     "input %x : f32[1]\nconst %ind : i64[3] = [0, 3, -1]\nconst %v : f32[2] = [0.5, 2]\n",
     "  %h : f32[4,3] = OneHot(%ind, %v) {axis = 0, depth = 4}\n  %y : f32[4,3] = Add(%h, %x)\n"
     "  output %o = %y\n",
     -2, 2},
    {"OneHot", "input %ind : i32[2,3]\nconst %v : i64[2] = [-1, 7]\n",
     "  %h : i64[2,3,5] = OneHot(%ind, %v) {depth = 5}\n  output %o = %h\n", -5, 4},
    {"DepthToSpace", "input %x : f32[1,8,2,3]\n",
     "  %y : f32[1,2,4,6] = DepthToSpace(%x) {blocksize = 2, mode = \"DCR\"}\n  output %o = %y\n",
     -2, 2},
    {"DepthToSpace", "input %x : f32[1,8,2,3]\n",
     "  %y : f32[1,2,4,6] = DepthToSpace(%x) {blocksize = 2, mode = \"CRD\"}\n  output %o = %y\n",
     -2, 2},
    {"SpaceToDepth", "input %x : f32[1,2,4,6]\n",
     "  %y : f32[1,8,2,3] = SpaceToDepth(%x) {blocksize = 2}\n  output %o = %y\n", -2, 2},
    {"Resize", "input %x : f32[1,1,2,3]\n",
     "  %y : f32[1,1,4,6] = Resize(%x) {mode = \"nearest\", scales = [1.0, 1.0, 2.0, 2.0]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Resize", "input %x : f32[1,1,4,4]\n",
     "  %y : f32[1,1,3,3] = Resize(%x) {coordinate_transformation_mode = \"tf_crop_and_resize\", "
     "extrapolation_value = 10.0, mode = \"linear\", roi = [0.0, 0.0, 0.4, 0.6, 1.0, 1.0, 1.2, "
     "1.7], sizes = [1, 1, 3, 3]}\n  output %o = %y\n",
     -2, 2},
    {"Resize", "input %x : f32[1,2,3,4]\n",
     "  %y : f32[1,2,5,3] = Resize(%x) {mode = \"cubic\", exclude_outside = 1, axes = [2, 3], "
     "sizes = [5, 3]}\n  output %o = %y\n",
     -2, 2},
    {"Resize", "input %x : f32[1,2,3,4]\n",
     "  %y : f32[1,2,6,2] = Resize(%x) {mode = \"linear\", coordinate_transformation_mode = "
     "\"align_corners\", scales = [1.0, 1.0, 2.0, 0.5]}\n  output %o = %y\n",
     -2, 2},
    /* antialiased downsampling: the filter widens by 1/scale, so more taps */
    {"Resize", "input %x : f32[1,1,4,4]\n",
     "  %y : f32[1,1,2,2] = Resize(%x) {antialias = 1, mode = \"linear\", scales = [1.0, 1.0, "
     "0.6, 0.6]}\n  output %o = %y\n",
     -2, 2},
    {"Resize", "input %x : f32[1,1,4,4]\n",
     "  %y : f32[1,1,3,3] = Resize(%x) {antialias = 1, mode = \"cubic\", sizes = [1, 1, 3, 3]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Resize", "input %x : f32[2,7,3]\n",
     "  %y : f32[2,2,6] = Resize(%x) {antialias = 1, axes = [1, 2], exclude_outside = 1, mode = "
     "\"cubic\", scales = [0.35, 2.0]}\n  output %o = %y\n",
     -2, 2},
    {"Resize", "input %x : f32[1,9,5]\n",
     "  %y : f32[1,4,2] = Resize(%x) {antialias = 1, coordinate_transformation_mode = "
     "\"align_corners\", mode = \"linear\", sizes = [1, 4, 2]}\n  output %o = %y\n",
     -2, 2},
    {"Upsample", "input %x : f32[1,1,2,3]\n",
     "  %y : f32[1,1,4,9] = Upsample(%x) {mode = \"nearest\", scales = [1.0, 1.0, 2.0, 3.0]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Trilu", "input %m : f32[2,3,4]\n",
     "  %y : f32[2,3,4] = Trilu(%m) {k = -1, upper = 0}\n  output %o = %y\n", -2, 2},
    {"Trilu", "input %m : f32[3,3]\n", "  %y : f32[3,3] = Trilu(%m)\n  output %o = %y\n", -2, 2},
    {"ReverseSequence", "input %s : f32[4,2,3]\nconst %l : i64[2] = [4, 2]\n",
     "  %y : f32[4,2,3] = ReverseSequence(%s, %l) {batch_axis = 1, time_axis = 0}\n"
     "  output %o = %y\n",
     -2, 2},
    {"ReverseSequence", "input %s : f32[3,4]\nconst %l : i64[3] = [1, 3, 4]\n",
     "  %y : f32[3,4] = ReverseSequence(%s, %l) {batch_axis = 0, time_axis = 1}\n"
     "  output %o = %y\n",
     -2, 2},
    {"RNN",
     "input %x : f32[2,1,3]\ninput %W : f32[1,4,3]\ninput %R : f32[1,4,4]\ninput %B : f32[1,8]\n",
     "  %y : f32[2,1,1,4], %h : f32[1,1,4] = RNN(%x, %W, %R, %B) {hidden_size = 4}\n"
     "  output %o = %y\n  output %p = %h\n",
     -1, 1},
    {"GRU",
     "input %x : f32[2,1,3]\ninput %W : f32[1,12,3]\ninput %R : f32[1,12,4]\ninput %h0 : "
     "f32[1,1,4]\n",
     "  %y : f32[2,1,1,4], %h : f32[1,1,4] = GRU(%x, %W, %R, _, _, %h0) {hidden_size = 4, "
     "linear_before_reset = 1}\n  output %o = %y\n  output %p = %h\n",
     -1, 1},
    {"LSTM",
     "input %x : f32[2,1,3]\ninput %W : f32[1,16,3]\ninput %R : f32[1,16,4]\ninput %B : "
     "f32[1,32]\ninput %h0 : f32[1,1,4]\ninput %c0 : f32[1,1,4]\n",
     "  %y : f32[2,1,1,4], %h : f32[1,1,4], %c : f32[1,1,4] = LSTM(%x, %W, %R, %B, _, %h0, %c0) "
     "{hidden_size = 4}\n  output %o = %y\n  output %p = %h\n  output %q = %c\n",
     -1, 1},
    {"QuantizeLinear", "input %x : f32[2,3]\nconst %s : f32[] = [0.05]\nconst %z : u8[] = [128]\n",
     "  %y : u8[2,3] = QuantizeLinear(%x, %s, %z)\n  output %o = %y\n", -9, 9},
    {"QuantizeLinear",
     "input %x : f32[2,3]\nconst %s : f32[3] = [0.5, 0.25, 2]\nconst %z : "
     "i8[3] = [-3, 0, 5]\n",
     "  %y : i8[2,3] = QuantizeLinear(%x, %s, %z) {axis = 1}\n  output %o = %y\n", -60, 60},
    {"DequantizeLinear", "input %x : u8[2,3]\nconst %s : f32[] = [0.5]\nconst %z : u8[] = [128]\n",
     "  %y : f32[2,3] = DequantizeLinear(%x, %s, %z)\n  output %o = %y\n", 0, 255},
    {"DequantizeLinear", "input %x : i8[2,3]\nconst %s : f32[2] = [0.5, 3]\n",
     "  %y : f32[2,3] = DequantizeLinear(%x, %s) {axis = 0}\n  output %o = %y\n", -128, 127},
    /* blocked: one scale (and zero point) per block_size elements along axis */
    {"QuantizeLinear",
     "input %x : f32[3,4]\nconst %s : f32[3,2] = [0.5, 0.25, 1, 2, 0.125, 4]\n"
     "const %z : u8[3,2] = [128, 0, 10, 250, 100, 3]\n",
     "  %y : u8[3,4] = QuantizeLinear(%x, %s, %z) {axis = 1, block_size = 2}\n  output %o = %y\n",
     -40, 40},
    {"QuantizeLinear", "input %x : f32[5,2]\nconst %s : f32[2,2] = [0.5, 0.03, 2, 0.25]\n",
     "  %y : i16[5,2] = QuantizeLinear(%x, %s) {axis = 0, block_size = 3, output_dtype = i16}\n"
     "  output %o = %y\n",
     -300, 300},
    {"DequantizeLinear",
     "input %x : u8[1,4,3,2]\nconst %s : f32[1,2,3,2] = [0.5, 1, 2, 0.25, 3, 1.5, 0.125, 4, 1, "
     "2, 0.5, 8]\nconst %z : u8[1,2,3,2] = [0, 1, 2, 3, 4, 5, 200, 100, 50, 25, 128, 255]\n",
     "  %y : f32[1,4,3,2] = DequantizeLinear(%x, %s, %z) {axis = 1, block_size = 2}\n"
     "  output %o = %y\n",
     0, 255},
    {"DequantizeLinear", "input %x : i8[2,5]\nconst %s : f32[2,2] = [0.5, 3, 0.25, 2]\n",
     "  %y : f32[2,5] = DequantizeLinear(%x, %s) {axis = -1, block_size = 4}\n  output %o = %y\n",
     -128, 127},
    {"DynamicQuantizeLinear", F23,
     "  %y : u8[2,3], %s : f32[], %z : u8[] = DynamicQuantizeLinear(%x)\n  output %o = %y\n"
     "  output %p = %s\n  output %q = %z\n",
     -2, 2},
    {"DynamicQuantizeLinear", "input %x : f32[2,3,2]\n",
     "  %y : u8[2,3,2], %s : f32[], %z : u8[] = DynamicQuantizeLinear(%x)\n  output %o = %y\n"
     "  output %p = %s\n  output %q = %z\n",
     0.5, 3},
    {"DynamicQuantizeLinear", "input %x : f32[2,3]\nconst %k : f32[] = [0]\n",
     "  %m : f32[2,3] = Mul(%x, %k)\n  %y : u8[2,3], %s : f32[], %z : u8[] = "
     "DynamicQuantizeLinear(%m)\n  output %o = %y\n  output %p = %s\n  output %q = %z\n",
     -2, 2},
    {"MatMulInteger",
     "input %a : u8[2,3]\ninput %b : u8[3,4]\nconst %az : u8[] = [1]\nconst %bz : u8[] = [2]\n",
     "  %y : i32[2,4] = MatMulInteger(%a, %b, %az, %bz)\n  %z : i32[2,4] = MatMulInteger(%a, %b)\n"
     "  output %o = %y\n  output %p = %z\n",
     0, 255},
    {"ConvInteger",
     "input %x : u8[1,1,4,4]\ninput %w : u8[2,1,3,3]\nconst %xz : u8[] = [1]\nconst %wz : u8[] = "
     "[2]\n",
     "  %y : i32[1,2,2,2] = ConvInteger(%x, %w, %xz, %wz)\n  output %o = %y\n", 0, 255},
    {"QLinearMatMul",
     "input %a : u8[2,3]\ninput %b : u8[3,4]\nconst %az : u8[] = [1]\nconst %bz : u8[] = "
     "[2]\nconst %sa : f32[] = [0.25]\nconst %sb : f32[] = [0.5]\nconst %sy : f32[] = [2]\n"
     "const %yz : u8[] = [3]\n",
     "  %y : u8[2,4] = QLinearMatMul(%a, %sa, %az, %b, %sb, %bz, %sy, %yz)\n  output %o = %y\n", 0,
     40},
    {"QLinearConv",
     "input %x : u8[1,1,4,4]\ninput %w : u8[2,1,3,3]\nconst %xz : u8[] = [1]\nconst %wz : u8[] = "
     "[2]\nconst %sx : f32[] = [0.25]\nconst %sw : f32[] = [0.5]\nconst %sy : f32[] = [4]\n"
     "const %yz : u8[] = [3]\n",
     "  %y : u8[1,2,2,2] = QLinearConv(%x, %sx, %xz, %w, %sw, %wz, %sy, %yz)\n  output %o = %y\n",
     0, 20},
    {"NegativeLogLikelihoodLoss", "input %s : f32[3,5]\nconst %l : i64[3] = [0, 4, 2]\n",
     "  %y : f32[] = NegativeLogLikelihoodLoss(%s, %l) {reduction = \"mean\"}\n"
     "  output %o = %y\n",
     -2, 2},
    {"NegativeLogLikelihoodLoss",
     "input %s : f32[2,3,2]\nconst %l : i64[2,2] = [0, 2, 1, 2]\nconst %w : f32[3] = [0.5, 1, "
     "2]\n",
     "  %y : f32[2,2] = NegativeLogLikelihoodLoss(%s, %l, %w) {ignore_index = 1, reduction = "
     "\"none\"}\n  output %o = %y\n",
     -2, 2},
    {"NegativeLogLikelihoodLoss", "input %s : f32[3,4]\nconst %l : i32[3] = [0, -1, 3]\n",
     "  %y : f32[] = NegativeLogLikelihoodLoss(%s, %l) {ignore_index = -1, reduction = \"sum\"}\n"
     "  output %o = %y\n",
     -2, 2},
    {"NegativeLogLikelihoodLoss",
     "input %s : f32[2,3,2]\nconst %l : i64[2,2] = [0, 2, 1, 2]\nconst %w : f32[3] = [0.5, 1, "
     "2]\n",
     "  %y : f32[] = NegativeLogLikelihoodLoss(%s, %l, %w) {ignore_index = 2}\n  output %o = %y\n",
     -2, 2},
    {"SoftmaxCrossEntropyLoss",
     "input %s : f32[2,3,2]\nconst %l : i64[2,2] = [0, 2, 1, 2]\nconst %w : f32[3] = [0.5, 1, "
     "2]\n",
     "  %y : f32[2,2], %p : f32[2,3,2] = SoftmaxCrossEntropyLoss(%s, %l, %w) {reduction = "
     "\"none\"}\n  output %o = %y\n  output %q = %p\n",
     -2, 2},
    {"SoftmaxCrossEntropyLoss", "input %s : f32[3,5]\nconst %l : i64[3] = [0, 4, 2]\n",
     "  %y : f32[], %p : f32[3,5] = SoftmaxCrossEntropyLoss(%s, %l) {reduction = \"mean\"}\n"
     "  output %o = %y\n  output %q = %p\n",
     -2, 2},
    {"FusedElementwise", "input %x : f32[2,3]\ninput %b : f32[3]\n",
     "  %y : f32[2,3] = FusedElementwise(%x, %b) {body = \"x0 1.5 Mul 0.5 Add Tanh x1 Mul x0 Exp "
     "Max\"}\n  output %o = %y\n",
     -2, 2},
    {"FusedElementwise", "input %x : f32[2,3]\ninput %b : f32[3]\n",
     "  %y : f32[2,3] = FusedElementwise(%x, %b) {body = \"x1 Sigmoid 2 Pow Relu Gelu\"}\n"
     "  output %o = %y\n",
     -2, 2},
    {"RMSNormalization", "input %x : f32[2,3,4]\nconst %s : f32[4] = [1, 2, 0.5, 1]\n",
     "  %y : f32[2,3,4] = RMSNormalization(%x, %s) {axis = 1, epsilon = 0.01}\n"
     "  output %o = %y\n",
     -2, 2},
    B(BitwiseAnd, "i32", "i32"),
    B(BitwiseOr, "i32", "i32"),
    B(BitwiseXor, "i32", "i32"),
    {"BitwiseOr", "input %a : u8[2,3]\ninput %b : u8[3]\n",
     "  %y : u8[2,3] = BitwiseOr(%a, %b)\n  output %o = %y\n", 0, 255},
    {"BitwiseXor", "input %a : i8[2,3]\ninput %b : i8[3]\n",
     "  %y : i8[2,3] = BitwiseXor(%a, %b)\n  output %o = %y\n", -128, 127},
    {"BitwiseNot", "input %a : i16[2,3]\n", "  %y : i16[2,3] = BitwiseNot(%a)\n  output %o = %y\n",
     -999, 999},
    {"BitwiseNot", "input %a : u8[2,3]\n", "  %y : u8[2,3] = BitwiseNot(%a)\n  output %o = %y\n", 0,
     255},
    U(Mish, -4, 4),
    UA(Swish, "alpha = 0.7", -4, 4),
    {"LpNormalization", "input %x : f32[2,3]\n",
     "  %y : f32[2,3] = LpNormalization(%x) {axis = 0, p = 1}\n  output %o = %y\n", -2, 2},
    {"LpNormalization", "input %x : f32[2,3]\nconst %m : f32[3] = [1, 0, 1]\n",
     "  %z : f32[2,3] = Mul(%x, %m)\n  %y : f32[2,3] = LpNormalization(%z) {axis = 0}\n"
     "  output %o = %y\n",
     -2, 2},
    {"HannWindow", "input %x : f32[5]\n",
     "  %w : f32[5] = HannWindow() {size = 5}\n  %y : f32[5] = Add(%w, %x)\n  output %o = %y\n", -2,
     2},
    {"HammingWindow", "input %x : f32[6]\n",
     "  %w : f32[6] = HammingWindow() {periodic = 0, size = 6}\n  %y : f32[6] = Add(%w, %x)\n"
     "  output %o = %y\n",
     -2, 2},
    {"BlackmanWindow", "input %x : f64[4]\n",
     "  %w : f64[4] = BlackmanWindow() {output_datatype = f64, size = 4}\n"
     "  %y : f64[4] = Add(%w, %x)\n  output %o = %y\n",
     -2, 2},
    {"LpPool", "input %x : f32[1,2,4,4]\n",
     "  %y : f32[1,2,2,2] = LpPool(%x) {kernel_shape = [2, 2], strides = [2, 2]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"LpPool", "input %x : f32[1,2,5]\n",
     "  %y : f32[1,2,5] = LpPool(%x) {kernel_shape = [3], p = 3, pads = [1, 1]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"Det", "input %x : f32[2,3,3]\n", "  %y : f32[2] = Det(%x)\n  output %o = %y\n", -2, 2},
    {"ScaledDotProductAttention",
     "input %q : f32[1,3,2,4]\ninput %k : f32[1,2,5,4]\ninput %v : f32[1,2,5,3]\n"
     "input %m : f32[3,5]\n",
     "  %y : f32[1,3,2,3] = ScaledDotProductAttention(%q, %k, %v, %m) {out_perm = [0, 2, 1, 3], "
     "q_perm = [0, 2, 1, 3], scale = 0.7}\n  output %o = %y\n",
     -2, 2},
    {"ScaledDotProductAttention",
     "input %q : f32[2,1,3,4]\ninput %k : f32[2,1,4,5]\ninput %v : f32[2,1,5,2]\n"
     "const %m : bool[1,1,3,5] = [1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 1, 1, 1]\n",
     "  %y : f32[2,1,3,2] = ScaledDotProductAttention(%q, %k, %v, %m) {k_perm = [0, 1, 3, 2], "
     "mask_fill = -1000.0}\n  output %o = %y\n",
     -2, 2},
    /* Q, K, V taken from one [B, S, 3, H, D] tensor (the gathers) */
    {"ScaledDotProductAttention", "input %x : f32[2,5,3,2,4]\ninput %v : f32[2,2,3,5,3]\n",
     "  %y : f32[2,5,2,3] = ScaledDotProductAttention(%x, %x, %v) {k_gather = [2, 1], k_perm = "
     "[0, 2, 1, 3], out_perm = [0, 2, 1, 3], q_gather = [2, 0], q_perm = [0, 2, 1, 3], "
     "v_gather = [2, 2]}\n  output %o = %y\n",
     -2, 2},
    {"BlockChannels", "input %x : f32[2,5,3,2]\n",
     "  %y : f32[2,2,3,2,4] = BlockChannels(%x) {block = 4}\n  output %o = %y\n", -2, 2},
    {"UnblockChannels", "input %x : f32[1,2,3,4]\n",
     "  %y : f32[1,7,3] = UnblockChannels(%x) {channels = 7}\n  output %o = %y\n", -2, 2},
    {"BlockedConv", "input %x : f32[1,2,5,5,4]\ninput %w : f32[6,7,3,3]\ninput %b : f32[6]\n"
     "input %r : f32[1,2,3,3,4]\n",
     "  %y : f32[1,2,3,3,4] = BlockedConv(%x, %w, %b, %r) {activation = \"HardSigmoid\", "
     "activation_alpha = 0.3, activation_beta = 0.4, block = 4, strides = [2, 2], pads = [1, 1, 1, 1]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"BlockedConv", "input %x : f32[1,6,5,4]\ninput %w : f32[6,1,3,3]\n",
     "  %y : f32[1,2,5,4,4] = BlockedConv(%x, %w) {block = 4, group = 6, pads = [1, 0, 1, 2]}\n"
     "  output %o = %y\n",
     -2, 2},
    {"GroupNormalization",
     "input %x : f32[2,4,3]\nconst %s : f32[4] = [1, 2, 0.5, -1]\n"
     "const %b : f32[4] = [0, 1, -1, 0.5]\n",
     "  %y : f32[2,4,3] = GroupNormalization(%x, %s, %b) {epsilon = 0.01, num_groups = 2}\n"
     "  output %o = %y\n",
     -2, 2},
    {"CenterCropPad", "input %x : f32[5,2,3]\n",
     "  %y : f32[2,5,3] = CenterCropPad(%x) {axes = [0, 1], shape = [2, 5]}\n  output %o = %y\n",
     -2, 2},
    {"MaxUnpool",
     "input %x : f32[1,2,2,2]\nconst %i : i64[1,2,2,2] = [0, 3, 9, 14, 17, 23, 24, 31]\n",
     "  %y : f32[1,2,4,5] = MaxUnpool(%x, %i) {kernel_shape = [2, 2], output_shape = [1, 2, 4, 5], "
     "strides = [2, 2]}\n  output %o = %y\n",
     -2, 2},
    {"Col2Im", "input %x : f32[2,8,4]\n",
     "  %y : f32[2,2,3,3] = Col2Im(%x) {block_shape = [2, 2], image_shape = [3, 3], "
     "pads = [1, 0, 1, 0], strides = [2, 1]}\n  output %o = %y\n",
     -2, 2},
};
#define N_DEFS (int)(sizeof defs / sizeof defs[0])

/* (f16 and bf16 are decoded too, so half-precision cases are compared for
 * real rather than as NaN against NaN.) */
static double load(const void *p, kiln_elem e, int64_t i) {
  return kiln_elem_load_f64(e, p, i);
}

/* Compile m on the interpreter and run it; outputs are malloc'd into outs.
 * False (after a note) when the interpreter does not run a kind of m yet:
 * the comparison is then reported unsupported, not passed. */
static bool run_on_interpreter(const char *what, const kiln_module *m, void **ins, void **outs) {
  kiln_executable *exe = NULL;
  kiln_status s = kiln_compile(tp_context(), m, NULL, "interpreter", NULL, &exe);
  if (s && kiln_status_code(s) == KILN_UNIMPLEMENTED &&
      strstr(kiln_status_message(s), "backend 'interpreter' does not run it")) {
    fprintf(stderr, "lower total: %s: values unsupported (%s)\n", what, kiln_status_message(s));
    kiln_status_free(s);
    return false;
  }
  ck_assert_msg(!s, "%s: compile: %s", what, kiln_status_message(s));
  for (uint32_t i = 0; i < kiln_executable_output_count(exe); i++) {
    kiln_io_info io;
    kiln_executable_output(exe, i, &io);
    outs[i] = calloc(1, (size_t)kiln_type_bytes(&io.type) + 8);
  }
  s = kiln_run(exe, (const void *const *)ins, outs);
  ck_assert_msg(!s, "%s: run: %s", what, kiln_status_message(s));
  kiln_executable_destroy(exe);
  return true;
}

static void check_case(const tcase_def *d, uint32_t seed) {
  char text[4096], what[96];
  snprintf(text, sizeof text, "module @t\n%sfunc @main {\n%s}\n", d->decl, d->body);
  snprintf(what, sizeof what, "%s (case at seed %u)", d->kind, seed);
  kiln_module *orig = tp_parse(text), *low = NULL;
  ck_assert_ptr_null(kiln_module_clone(orig, &low));
  kiln_pass_options o = kiln_pass_options_default();
  o.verify = true;
  kiln_pass_target t = {.module = low};
  kiln_status s = kiln_pass_run(&t, "lower,dce", &o, NULL);
  ck_assert_msg(!s, "%s: neither primitive nor lowerable: %s", what, kiln_status_message(s));
  kiln_function *f = kiln_module_function(low, 0);
  char kinds[1024] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < kiln_function_node_count(f); i++) {
    const kiln_node *n = kiln_function_node(f, i);
    ck_assert_msg(kiln_pass_node_is_primitive(n), "%s: non-primitive %s left after lowering", what,
                  kiln_node_kind_name(kiln_node_get_kind(n)));
    if (used < sizeof kinds - 32)
      used += (size_t)snprintf(kinds + used, sizeof kinds - used, " %s",
                               kiln_node_kind_name(kiln_node_get_kind(n)));
  }
  kiln_node_kind k;
  ck_assert(kiln_node_kind_from_name(d->kind, &k));
  fprintf(stderr, "lower total: %-26s %s ->%s\n", d->kind,
          kiln_pass_has_lowering(k) ? "lowered  " : "primitive", kinds);
  s = kiln_module_verify(low);
  ck_assert_msg(!s, "%s: verify: %s", what, kiln_status_message(s));

  void *ins[16] = {0}, *o1[8] = {0}, *o2[8] = {0};
  uint32_t ni = kiln_module_input_count(orig);
  for (uint32_t i = 0; i < ni && i < 16; i++) {
    const kiln_type *ty = kiln_value_type(kiln_module_input(orig, i));
    int64_t n = kiln_type_numel(ty);
    ins[i] = calloc((size_t)n + 1, kiln_elem_size(ty->elem));
    for (int64_t j = 0; j < n; j++) {
      seed = seed * 1664525u + 1013904223u;
      double u = (double)(seed >> 8) / 16777216.0, v = d->lo + (d->hi - d->lo) * u;
      if (!kiln_elem_is_float(ty->elem))
        v = ty->elem == KILN_BOOL ? (u < 0.5 ? 0 : 1) : floor(d->lo + (d->hi - d->lo + 1) * u);
      kiln_elem_store_f64(ty->elem, ins[i], j, ty->elem == KILN_BOOL ? (double)(v >= 0.5) : v);
    }
  }
  bool ran = run_on_interpreter(what, orig, ins, o1);
  ck_assert_msg(!ran || run_on_interpreter(what, low, ins, o2),
                "%s: the interpreter runs the graph but not its lowered form", what);
  kiln_function *of = kiln_module_function(orig, 0);
  for (uint32_t oi = 0; ran && oi < kiln_function_output_count(of); oi++) {
    const kiln_type *ty = kiln_value_type(kiln_function_output_value(of, oi));
    for (int64_t j = 0; j < kiln_type_numel(ty); j++) {
      double a = load(o1[oi], ty->elem, j), b = load(o2[oi], ty->elem, j);
      bool same = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= 1e-4 + 1e-4 * fabs(a);
      ck_assert_msg(same, "%s: output %u[%lld]: %.9g vs lowered %.9g", what, oi, (long long)j, a,
                    b);
    }
    free(o1[oi]);
    free(o2[oi]);
  }
  for (uint32_t i = 0; i < ni && i < 16; i++)
    free(ins[i]);
  kiln_module_destroy(orig);
  kiln_module_destroy(low);
}

/* One test per node kind: every case for it must pass, and there must be
 * at least one. */
START_TEST(lowering_is_total) {
  kiln_node_kind k = (kiln_node_kind)_i;
  const char *name = kiln_node_kind_name(k);
  if (!tp_context()) {
    fprintf(stderr, "lower total %s: unsupported (no interpreter plugin)\n", name);
    return;
  }
  setenv("KILN_VERIFY_EACH_PASS", "1", 1);
  int found = 0;
  for (int i = 0; i < N_DEFS; i++)
    if (!strcmp(defs[i].kind, name)) {
      check_case(&defs[i], 1234u + (uint32_t)i * 7919u);
      found++;
    }
  ck_assert_msg(found > 0, "kind %s: no totality case (add one to test_lower_total.c)", name);
}
END_TEST

TCase *lower_total_tcase(void);
TCase *lower_total_tcase(void) {
  TCase *tc = tcase_create("lowering is total");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, lowering_is_total, 0, KILN_NODE_KIND_COUNT);
  return tc;
}
