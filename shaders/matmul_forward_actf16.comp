#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_forward_body.glsl with inp (the activation) and the result stored as f16.
#define A_F16
#define C_F16
#include "matmul_forward_body.glsl"
