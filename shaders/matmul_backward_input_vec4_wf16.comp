#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_backward_input_vec4_body.glsl reading an f16 weight.
#define B_F16
#include "matmul_backward_input_vec4_body.glsl"
