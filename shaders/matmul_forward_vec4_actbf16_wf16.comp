#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_forward_vec4_body.glsl with inp (the activation) and the result stored as bf16, reading a
// f16 weight (a frozen base stored in 16 bits).
#define A_BF16
#define B_F16
#define C_BF16
#include "matmul_forward_vec4_body.glsl"
