#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_F16
// dropout_forward_body.glsl with f16 activations (x, y).
#include "dropout_forward_body.glsl"
