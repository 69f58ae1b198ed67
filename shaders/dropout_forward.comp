#version 450
#extension GL_GOOGLE_include_directive : require
// dropout_forward_body.glsl with fp32 activations (x, y).
#include "dropout_forward_body.glsl"
