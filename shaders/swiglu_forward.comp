#version 450
#extension GL_GOOGLE_include_directive : require
// swiglu_forward_body.glsl with fp32 activations (g, u, h).
#include "swiglu_forward_body.glsl"
