#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_BF16
// dropout_forward_body.glsl with bf16 activations (x, y).
#include "dropout_forward_body.glsl"
