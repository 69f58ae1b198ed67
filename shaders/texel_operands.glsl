// The read operands of a texel-view matmul (matmul_*_texels_body.glsl): X (binding 0) is
// operand A and Y (binding 1) operand B of operand_storage.glsl's naming. f32, or f16 through an
// R16G16B16A16_SFLOAT view (the view widens it: no shader change), are read as textureBuffer;
// bf16 (A_BF16 / B_BF16 defined by the wrapper .comp) through an R16G16B16A16_UINT (or R16_UINT)
// view as utextureBuffer, widened by a shift (storage16.glsl). A_FETCH(t) / B_FETCH(t) give
// texel t as fp32.
#ifndef REMAT_TEXEL_OPERANDS_GLSL
#define REMAT_TEXEL_OPERANDS_GLSL
#extension GL_EXT_samplerless_texture_functions : require  // textureSize(X)

#if defined(A_BF16) || defined(B_BF16)
#include "storage16.glsl"
#endif

#if defined(A_BF16)
layout(binding = 0) uniform utextureBuffer X;
#define A_FETCH(t) bf16_to_f32(texelFetch(X, t))
#else
layout(binding = 0) uniform textureBuffer X;
#define A_FETCH(t) texelFetch(X, t)
#endif

#if defined(B_BF16)
layout(binding = 1) uniform utextureBuffer Y;
#define B_FETCH(t) bf16_to_f32(texelFetch(Y, t))
#else
layout(binding = 1) uniform textureBuffer Y;
#define B_FETCH(t) texelFetch(Y, t)
#endif

#endif  // REMAT_TEXEL_OPERANDS_GLSL
