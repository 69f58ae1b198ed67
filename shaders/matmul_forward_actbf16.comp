#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_forward_body.glsl with inp (the activation) and the result stored as bf16.
#define A_BF16
#define C_BF16
#include "matmul_forward_body.glsl"
