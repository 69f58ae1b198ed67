#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_BF16
// swiglu_backward_body.glsl with bf16 activations (g, u).
#include "swiglu_backward_body.glsl"
