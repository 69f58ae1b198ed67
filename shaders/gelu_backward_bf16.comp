#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_BF16
// gelu_backward_body.glsl with bf16 activations (x).
#include "gelu_backward_body.glsl"
