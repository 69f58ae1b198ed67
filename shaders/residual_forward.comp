#version 450
#extension GL_GOOGLE_include_directive : require
// residual_forward_body.glsl with fp32 activations (a, b, y).
#include "residual_forward_body.glsl"
