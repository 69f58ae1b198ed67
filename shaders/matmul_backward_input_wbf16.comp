#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_backward_input_body.glsl reading a bf16 weight (dx of a frozen 16-bit base).
#define B_BF16
#include "matmul_backward_input_body.glsl"
