#version 450
#extension GL_GOOGLE_include_directive : require
// gelu_forward_body.glsl with fp32 activations (x, y).
#include "gelu_forward_body.glsl"
