#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_BF16
// residual_forward_body.glsl with bf16 activations (a, b, y).
#include "residual_forward_body.glsl"
