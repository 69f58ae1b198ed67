#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_F16
// residual_forward_body.glsl with f16 activations (a, b, y).
#include "residual_forward_body.glsl"
