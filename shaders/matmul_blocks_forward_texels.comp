#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_blocks_forward_body.glsl reading inp through an RGBA32F texel view (CPU drivers).
#define MATMUL_BLOCKS_TEXELS
#include "matmul_blocks_forward_body.glsl"
