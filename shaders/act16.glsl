// How a kernel body stores activations. A wrapper .comp defines ACT_F16 or ACT_BF16 (or neither:
// fp32) before including its body; the body declares its activation buffers with ACT_T (ACT4_T
// for vec4 arrays) and goes through these macros: LOAD_ACT widens a stored element to fp32,
// STORE_ACT rounds an fp32 value to the storage type (nearest, ties to even; storage16.glsl).
// All arithmetic stays fp32, so a 16-bit variant computes the same floats as the fp32 kernel and
// differs only where values are rounded on their way to memory.
#ifndef REMAT_ACT16_GLSL
#define REMAT_ACT16_GLSL

#if defined(ACT_F16) || defined(ACT_BF16)
#include "storage16.glsl"
#define ACT_T uint16_t
#define ACT4_T u16vec4
#ifdef ACT_F16
#define ACT_WIDEN f16_to_f32
#define ACT_NARROW f32_to_f16
#else
#define ACT_WIDEN bf16_to_f32
#define ACT_NARROW f32_to_bf16
#endif
#define LOAD_ACT(v) ACT_WIDEN(uint(v))
#define LOAD_ACT4(v) ACT_WIDEN(uvec4(v))
#define STORE_ACT(v) uint16_t(ACT_NARROW(v))
#define STORE_ACT4(v) u16vec4(act_narrow4(v))
// 32-bit lanes: a function returning a 16-bit type would need the shaderInt16 feature.
uvec4 act_narrow4(vec4 v) {
  return uvec4(ACT_NARROW(v.x), ACT_NARROW(v.y), ACT_NARROW(v.z), ACT_NARROW(v.w));
}
#else
#define ACT_T float
#define ACT4_T vec4
#define LOAD_ACT(v) (v)
#define LOAD_ACT4(v) (v)
#define STORE_ACT(v) (v)
#define STORE_ACT4(v) (v)
#endif

#endif  // REMAT_ACT16_GLSL
