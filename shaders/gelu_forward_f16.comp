#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_F16
// gelu_forward_body.glsl with f16 activations (x, y).
#include "gelu_forward_body.glsl"
