#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_F16
// gelu_backward_body.glsl with f16 activations (x).
#include "gelu_backward_body.glsl"
