#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_backward_input_vec4_body.glsl with every operand f32.
#include "matmul_backward_input_vec4_body.glsl"
