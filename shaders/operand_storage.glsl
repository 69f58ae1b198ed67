// Storage types of a kernel's operands, by position: A the first operand read (an activation:
// x, dy), B the second (the weight, or the tables of embedding_forward), C the result. A wrapper
// .comp defines the 16-bit ones (A_F16 / A_BF16, B_F16 / B_BF16, C_F16 / C_BF16; f32 otherwise)
// and includes a body (matmul_*_body.glsl, embedding_forward_body.glsl). 16-bit operands are raw
// uint16_t patterns, widened to fp32 in registers and narrowed on store by storage16.glsl's
// conversions: compute and accumulation stay fp32. A body declares each buffer's element as A_T
// (vec4 groups: A_T4), reads it through A_LOAD(v) / A_LOAD4(v), likewise B, and writes C through
// C_STORE(f) / C_STORE4(v) (read back, to accumulate, through C_LOAD / C_LOAD4). The lowering
// picks the wrapper from the plan's tensor dtypes (runtime/kernels/kernel_variants.h).
#ifndef REMAT_OPERAND_STORAGE_GLSL
#define REMAT_OPERAND_STORAGE_GLSL

#if defined(A_F16) || defined(A_BF16) || defined(B_F16) || defined(B_BF16) || defined(C_F16) || \
    defined(C_BF16)
#include "storage16.glsl"
#endif

#if defined(A_BF16)
#define A_T uint16_t
#define A_T4 u16vec4
#define A_LOAD(v) bf16_to_f32(uint(v))
#define A_LOAD4(v) bf16_to_f32(uvec4(v))
#elif defined(A_F16)
#define A_T uint16_t
#define A_T4 u16vec4
#define A_LOAD(v) f16_to_f32(uint(v))
#define A_LOAD4(v) f16_to_f32(uvec4(v))
#else
#define A_T float
#define A_T4 vec4
#define A_LOAD(v) (v)
#define A_LOAD4(v) (v)
#endif

#if defined(B_BF16)
#define B_T uint16_t
#define B_T4 u16vec4
#define B_LOAD(v) bf16_to_f32(uint(v))
#define B_LOAD4(v) bf16_to_f32(uvec4(v))
#elif defined(B_F16)
#define B_T uint16_t
#define B_T4 u16vec4
#define B_LOAD(v) f16_to_f32(uint(v))
#define B_LOAD4(v) f16_to_f32(uvec4(v))
#else
#define B_T float
#define B_T4 vec4
#define B_LOAD(v) (v)
#define B_LOAD4(v) (v)
#endif

#if defined(C_BF16)
#define C_T uint16_t
#define C_T4 u16vec4
#define C_LOAD(v) bf16_to_f32(uint(v))
#define C_LOAD4(v) bf16_to_f32(uvec4(v))
#define C_STORE(f) uint16_t(f32_to_bf16(f))
#define C_STORE4(v) u16vec4(uvec4(f32_to_bf16((v).x), f32_to_bf16((v).y), f32_to_bf16((v).z), f32_to_bf16((v).w)))
#elif defined(C_F16)
#define C_T uint16_t
#define C_T4 u16vec4
#define C_LOAD(v) f16_to_f32(uint(v))
#define C_LOAD4(v) f16_to_f32(uvec4(v))
#define C_STORE(f) uint16_t(f32_to_f16(f))
#define C_STORE4(v) u16vec4(uvec4(f32_to_f16((v).x), f32_to_f16((v).y), f32_to_f16((v).z), f32_to_f16((v).w)))
#else
#define C_T float
#define C_T4 vec4
#define C_LOAD(v) (v)
#define C_LOAD4(v) (v)
#define C_STORE(f) (f)
#define C_STORE4(v) (v)
#endif

#endif  // REMAT_OPERAND_STORAGE_GLSL
