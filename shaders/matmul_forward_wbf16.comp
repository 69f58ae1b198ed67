#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_forward_body.glsl reading a bf16 weight (a frozen base stored in 16 bits).
#define B_BF16
#include "matmul_forward_body.glsl"
