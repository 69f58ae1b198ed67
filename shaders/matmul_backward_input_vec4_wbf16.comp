#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_backward_input_vec4_body.glsl reading a bf16 weight.
#define B_BF16
#include "matmul_backward_input_vec4_body.glsl"
