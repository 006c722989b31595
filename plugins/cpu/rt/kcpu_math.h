/* plugins/cpu/rt/kcpu_math.h: float math functions for generated
 * elementwise loops. They are part of the kernel library bitcode; the code
 * generator calls them from scalar loop bodies and marks them always-inline,
 * so, being branch-free, they vectorize with the loop. Error bounds are in
 * docs/cpu.md and checked against libm by tests/cpu. */
#ifndef KCPU_MATH_H
#define KCPU_MATH_H

float kcpu_m_exp(float x);
float kcpu_m_log(float x);
float kcpu_m_tanh(float x);
float kcpu_m_sigmoid(float x);
float kcpu_m_silu(float x);
float kcpu_m_erf(float x);
float kcpu_m_sin(float x);
float kcpu_m_cos(float x);
float kcpu_m_tan(float x);
float kcpu_m_softplus(float x);
float kcpu_m_gelu(float x);

#endif
