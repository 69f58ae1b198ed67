#version 450
#extension GL_GOOGLE_include_directive : require
// gelu_backward_body.glsl with fp32 activations (x).
#include "gelu_backward_body.glsl"
