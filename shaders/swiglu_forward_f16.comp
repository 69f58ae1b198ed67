#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_F16
// swiglu_forward_body.glsl with f16 activations (g, u, h).
#include "swiglu_forward_body.glsl"
