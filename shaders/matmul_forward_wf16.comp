#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_forward_body.glsl reading an f16 weight (a frozen base stored in 16 bits).
#define B_F16
#include "matmul_forward_body.glsl"
