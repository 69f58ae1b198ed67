#version 450
#extension GL_GOOGLE_include_directive : require
// swiglu_backward_body.glsl with fp32 activations (g, u).
#include "swiglu_backward_body.glsl"
