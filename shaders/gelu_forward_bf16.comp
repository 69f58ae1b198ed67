#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_BF16
// gelu_forward_body.glsl with bf16 activations (x, y).
#include "gelu_forward_body.glsl"
