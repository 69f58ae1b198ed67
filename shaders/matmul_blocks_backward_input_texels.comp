#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_blocks_backward_input_body.glsl reading dout through a texel view (CPU drivers).
#define MATMUL_BLOCKS_TEXELS
#include "matmul_blocks_backward_input_body.glsl"
